-- threads_spec.lua - conv2d (both lowerings), max_pool2d, avg_pool2d and
-- batch_norm split over threads (src/ops/conv.c, conv_direct.c, pool.c,
-- norm.c; issue 15). Over random shapes, some past the bars where the
-- kernels go parallel and some below: the float32 outputs and gradients at
-- 2 threads equal those at 1 bit for bit (cell's own kernels: direct
-- convolution, pooling, batch_norm; im2col's gemms are OpenBLAS's, whose
-- blocking depends on its thread count, so there they agree to rounding),
-- and agree with the same computation in float64 (separate code).
local cell = require "cell"
local H = require "helpers"

local ops = cell.ops
local f32 = cell.float32

local check = require("helpers.threads").check

local function rnd(lo, hi) return math.random(lo, hi) end

describe("kernels split over threads", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  -- A fixed CIFAR-size case (past every parallel bar), then random shapes.
  local cases = { { n = 8, c = 16, o = 32, h = 32, w = 32, k = 3, s = 1, p = 1, g = 1 } }
  math.randomseed(15)
  for _ = 1, 8 do
    local g = ({ 1, 1, 2 })[rnd(1, 3)]
    cases[#cases + 1] = { n = rnd(1, 12), c = g * rnd(1, 12), o = g * rnd(1, 20), h = rnd(5, 36),
      w = rnd(5, 36), k = ({ 1, 3, 5 })[rnd(1, 3)], s = rnd(1, 2), p = rnd(0, 2), g = g }
  end
  -- One sample of a few large planes: batch_norm's float32 passes split over
  -- the (sample, channel) rows, here 5 rows past the bar.
  cases[#cases + 1] = { n = 1, c = 5, o = 2, h = 131, w = 133, k = 3, s = 1, p = 1, g = 1 }

  for i, c in ipairs(cases) do
    local tag = ("case %d: N %d C %d O %d %dx%d k %d stride %d pad %d groups %d"):format(i, c.n, c.c,
      c.o, c.h, c.w, c.k, c.s, c.p, c.g)
    local function input(seed)
      cell.set_seed(seed)
      return cell.randn({ c.n, c.c, c.h, c.w }, f32)
    end

    it(tag .. ": conv2d and its gradients", function()
      if c.h + 2 * c.p < c.k or c.w + 2 * c.p < c.k then return end
      local x = input(i)
      local w = cell.randn({ c.o, c.c / c.g, c.k, c.k }, f32)
      local b = cell.randn({ c.o }, f32)
      local opts = { stride = c.s, padding = c.p, groups = c.g }
      local y = ops.conv2d(x, w, b, opts)
      -- stride 1: the direct kernels; else im2col and OpenBLAS. The weight
      -- gradient (result 3) sums N x OH x OW products in float32, each
      -- about 1, with as much cancellation: its bound grows with their count.
      local gw_tol = math.max(1e-4, 1e-7 * c.n * y.shape[3] * y.shape[4])
      check("conv2d", function(xx, ww, bb) return ops.conv2d(xx, ww, bb, opts) end, { x, w, b },
        cell.randn(y.shape, f32), { 2e-5, 2e-5, gw_tol, gw_tol }, c.s == 1 and 0 or 1e-5)
    end)

    it(tag .. ": max_pool2d and avg_pool2d and their gradients", function()
      local k = c.k > 1 and c.k or 2
      if c.h < k or c.w < k then return end
      local opts = { stride = c.s, padding = math.min(c.p, math.floor(k / 2)) }
      local x = input(100 + i)
      local y = ops.max_pool2d(x, k, opts)
      local gy = cell.randn(y.shape, f32)
      check("max_pool2d", function(xx) return ops.max_pool2d(xx, k, opts) end, { x }, gy, 1e-6)
      check("avg_pool2d", function(xx) return ops.avg_pool2d(xx, k, opts) end, { x }, gy, 1e-6)
    end)

    it(tag .. ": batch_norm (training) and its gradients", function()
      local x = input(200 + i) * 3 + 1
      if c.n * c.h * c.w < 2 then return end
      local w, b = cell.randn({ c.c }, f32), cell.randn({ c.c }, f32)
      local function bn(xx, ww, bb)
        return ops.batch_norm(xx, nil, nil, ww, bb, { training = true, eps = 1e-5 })
      end
      check("batch_norm", bn, { x, w, b }, cell.randn(x.shape, f32), 2e-4)
    end)
  end
end)

-- src/lua/ompenv/ompenv.c and src/repl/main.c: OpenMP's idle workers spin
-- briefly, then sleep (GOMP_SPINCOUNT=10000) unless the environment chose a policy.
describe("OpenMP's wait policy", function()
  local lua = os.getenv("CELL_LUA") or H.LUA
  local bin = os.getenv("CELL_BIN") or "bin/cell"
  local show = "print(os.getenv('OMP_WAIT_POLICY'), os.getenv('GOMP_SPINCOUNT'))"
  local function run(envs, cmd)
    local out, err, rc = H.run("env " .. envs .. " OMP_DISPLAY_ENV=verbose " .. cmd)
    assert.are.equal(0, rc, err)
    local spin -- GCC's libgomp reports its spin count; the executable's first run prints one too
    for v in err:gmatch("GOMP_SPINCOUNT = '(%d+)'") do spin = v end
    return out:gsub("%s+$", ""), spin
  end
  for _, host in ipairs({ { "require 'cell' (" .. lua .. ")", lua .. " -e \"require 'cell'; " .. show .. "\"" },
    { "the cell executable", bin .. " -e \"" .. show .. "\"" } }) do
    it(host[1] .. ": a short spin by default, the user's choice otherwise", function()
      local out, spin = run("-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT", host[2])
      assert.are.equal("nil\t10000", out)
      if spin then assert.are.equal("10000", spin) end
      out, spin = run("-u GOMP_SPINCOUNT OMP_WAIT_POLICY=active", host[2])
      assert.are.equal("active\tnil", out)
      if spin then assert.are_not.equal("0", spin) end
      out, spin = run("-u OMP_WAIT_POLICY GOMP_SPINCOUNT=7", host[2])
      assert.are.equal("nil\t7", out)
      if spin then assert.are.equal("7", spin) end
    end)
  end
end)
