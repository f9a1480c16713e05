-- threads_ew_spec.lua - elementwise kernels split over threads (the strided
-- iterator, src/core/iter.c; issue 15). Past its bar (CELL_ITER_GRAIN, 64K
-- elements) an iteration is cut into equal ranges of the flat index, which
-- may begin and end inside a row. Over random shapes (one long row, many
-- short rows, odd sizes, transposed and sliced inputs, broadcasting), the
-- float32 results at 2 threads equal those at 1 bit for bit, and every
-- element equals the value computed here in Lua from the inputs: a range
-- skipped, run twice or shifted by a wrong offset shows at the element. The
-- optimizer steps' vector loops (src/ops/optim.c) are checked the same way.
local cell = require "cell"
local H = require "helpers"
local T = require "helpers.threads"

local ops = cell.ops
local f32, f64 = cell.float32, cell.float64

local function flat(t) return t:astype(f64):contiguous():reshape({ -1 }):totable() end

--- fn() at n threads, its results (a list of tensors) as flat float64 tables.
local function at(n, fn)
  local r = {}
  for k, t in ipairs(T.at(n, fn)) do r[k] = flat(t) end
  return r
end

--- The results of fn at 1 and 2 threads agree bit for bit and with want(k,
-- i) (the expected element i of result k) within tol (relative).
local function check(name, fn, want, tol)
  local one, two = at(1, fn), at(2, fn)
  for k = 1, #one do
    local a, b = one[k], two[k]
    assert.are.equal(#a, #b, name .. " result " .. k .. ": sizes")
    for i = 1, #a do
      if a[i] ~= b[i] and not (a[i] ~= a[i] and b[i] ~= b[i]) then
        error(("%s result %d element %d: %.9g at 1 thread, %.9g at 2"):format(name, k, i, a[i], b[i]))
      end
      local e = want(k, i)
      if math.abs(a[i] - e) > tol * (1 + math.abs(e)) then
        error(("%s result %d element %d (of %d): got %.9g, expected %.9g"):format(name, k, i, #a, a[i], e))
      end
    end
  end
end

local function rnd(lo, hi) return math.random(lo, hi) end
local function odd(lo, hi) return 2 * rnd(math.floor(lo / 2), math.floor(hi / 2)) + 1 end

describe("elementwise kernels split over threads", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  math.randomseed(1515)
  -- shape: the logical shape; make(seed) a float32 tensor of that shape,
  -- maybe a strided view.
  local cases = {
    { what = "one long row", shape = { 1, odd(66001, 99001) } },
    { what = "one row of exactly the bar", shape = { 65536 } },
    { what = "many short rows", shape = { rnd(6600, 9000), rnd(10, 13) } },
    { what = "odd rows", shape = { odd(201, 301), odd(331, 451) } },
    { what = "three dimensions", shape = { rnd(2, 3), odd(151, 201), odd(221, 301) } },
    { what = "transposed", shape = { odd(261, 301), odd(261, 331) }, view = "t" },
    { what = "sliced columns", shape = { odd(401, 451), odd(165, 211) }, view = "s" },
    { what = "below the bar", shape = { rnd(3, 9), odd(101, 901) } },
  }

  for ci, c in ipairs(cases) do
    local function make(seed)
      cell.set_seed(seed)
      local s = c.shape
      if c.view == "t" then return cell.randn({ s[2], s[1] }, f32):transpose(1, 2) end
      if c.view == "s" then return cell.randn({ s[1], 2 * s[2] }, f32)[{ {}, { 1, 2 * s[2], 2 } }] end
      return cell.randn(s, f32)
    end
    local tag = ("case %d (%s, %s)"):format(ci, c.what, H.shape_str(c.shape))

    it(tag .. ": relu and its gradient, exp, sigmoid", function()
      local x = make(ci)
      local gy = make(100 + ci)
      assert.are.same(c.shape, x.shape)
      local xs, gs = flat(x), flat(gy)
      check("relu", function()
        local g = cell.grad(function(v) return (ops.relu(v) * gy):sum() end)(x)
        return { ops.relu(x), g }
      end, function(k, i)
        if k == 1 then return xs[i] > 0 and xs[i] or 0 end
        return xs[i] > 0 and gs[i] or 0
      end, 0)
      check("exp", function() return { ops.exp(x), ops.sigmoid(x) } end, function(k, i)
        if k == 1 then return math.exp(xs[i]) end
        return 1 / (1 + math.exp(-xs[i]))
      end, 1e-6)
    end)

    it(tag .. ": add and mul, broadcast rows and columns, and a cast", function()
      local x, y = make(200 + ci), make(300 + ci)
      local nd = #c.shape
      local last = c.shape[nd]
      cell.set_seed(400 + ci)
      local row = cell.randn({ last }, f32) -- broadcast along every leading dimension
      local xs, ys, rs = flat(x), flat(y), flat(row)
      -- within float32's rounding of the exact sum or product
      check("add", function() return { x + y, x * y, x + row, (x * 3):astype(f64) } end, function(k, i)
        if k == 1 then return xs[i] + ys[i] end
        if k == 2 then return xs[i] * ys[i] end
        if k == 3 then return xs[i] + rs[(i - 1) % last + 1] end
        return xs[i] * 3
      end, 1.2e-7)
    end)

    it(tag .. ": a Momentum step and an Adam step", function()
      local x0, g0 = make(500 + ci), make(600 + ci)
      local xs, gs = flat(x0), flat(g0)
      local lr, mom = 0.1, 0.9
      check("momentum", function()
        local w = cell.Parameter(x0:contiguous():clone(), "w")
        local opt = cell.nn.Momentum({ w }, lr, mom)
        opt({ g0 })
        opt({ g0 })
        return { w }
      end, function(_, i)
        -- first step: buf = g, w -= lr g; second: buf = mom g + g
        return xs[i] - lr * gs[i] - lr * (mom * gs[i] + gs[i])
      end, 1e-5)
      check("adam", function()
        local w = cell.Parameter(x0:contiguous():clone(), "w")
        local opt = cell.nn.Adam({ w }, { learning_rate = 0.01 })
        opt({ g0 })
        return { w }
      end, function(_, i)
        -- one step from zero moments: m_hat = g, v_hat = g^2
        return xs[i] - 0.01 * gs[i] / (math.abs(gs[i]) + 1e-8)
      end, 1e-5)
    end)

    -- The vector loops of src/ops/optim.c, one per setting of the flags.
    it(tag .. ": Momentum (Nesterov, weight decay), Adam (weight decay) and AdamW", function()
      local x0, g0 = make(700 + ci), make(800 + ci)
      local xs, gs = flat(x0), flat(g0)
      local lr, mom, wd = 0.1, 0.9, 0.05
      local function param() return cell.Parameter(x0:contiguous():clone(), "w") end
      check("nesterov", function()
        local w = param()
        local opt = cell.nn.Momentum({ w }, { learning_rate = lr, momentum = mom, weight_decay = wd,
          use_nesterov = true })
        opt({ g0 })
        opt({ g0 })
        return { w }
      end, function(_, i)
        local d = gs[i] + wd * xs[i]
        local b = d
        local p = xs[i] - lr * (d + mom * b)
        d = gs[i] + wd * p
        b = mom * b + d
        return p - lr * (d + mom * b)
      end, 1e-5)
      check("adam weight decay", function()
        local w = param()
        cell.nn.Adam({ w }, { learning_rate = 0.01, weight_decay = wd })({ g0 })
        local w2 = param()
        cell.nn.AdamW({ w2 }, { learning_rate = 0.01, weight_decay = wd })({ g0 })
        return { w, w2 }
      end, function(k, i)
        if k == 1 then
          local g = gs[i] + wd * xs[i]
          return xs[i] - 0.01 * g / (math.abs(g) + 1e-8)
        end
        return xs[i] * (1 - 0.01 * wd) - 0.01 * gs[i] / (math.abs(gs[i]) + 1e-8)
      end, 1e-5)
    end)
  end
end)
