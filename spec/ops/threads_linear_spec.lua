-- threads_linear_spec.lua - the fused linear layer in one parallel region
-- (src/ops/linear.c; issue 15): when its products split over threads, the
-- forward runs each part of x W^T and adds the bias to it, and the backward
-- runs the parts of gx = g W, of gW = g^T x and blocks of the bias
-- gradient's columns, all in one fork. Over random odd shapes split by rows
-- and by columns (and some below the bars, which take the old path), 2-D
-- and 3-D inputs, a transposed input view, no bias, and only some of the
-- gradients wanted: at 2 threads the outputs and gradients agree with 1
-- thread (to rounding: a part may take OpenBLAS's small-matrix kernel where
-- the whole product does not) and with float64. A part skipped or written
-- at the wrong rows or columns fails here. From 512 rows the weight gradient
-- is summed over fixed runs of 256 rows (the last shorter), one run a
-- thread, the runs' products added in order: on cell's own float32 kernel
-- (cell.gemm_kernel() not "openblas"), whose bits do not depend on how a
-- product is cut, 2 threads give 1 thread's bits exactly.
local cell = require "cell"
local T = require "helpers.threads"

local ops = cell.ops
local f32 = cell.float32

local function rnd(lo, hi) return math.random(lo, hi) end

--- One tolerance for 2 threads against 1 and for float32 against float64:
-- the float32 sums of k products (or m rows in a weight gradient).
local function check(name, fn, args, gy, k)
  local tol = 2e-6 * math.max(k, 64)
  T.check(name, fn, args, gy, tol, tol)
end

describe("the fused linear layer in one parallel region", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  local cases = {
    { m = 512, k = 64, n = 64 }, -- a tiny GPT's projection: rows
    { m = 512, k = 64, n = 40 }, -- its head
    { m = 45, k = 301, n = 777 }, -- columns
    { m = 33, k = 17, n = 29 }, -- below every bar
  }
  math.randomseed(1577)
  for _ = 1, 4 do cases[#cases + 1] = { m = 2 * rnd(70, 400) + 1, k = 2 * rnd(20, 80) + 1, n = 2 * rnd(33, 130) + 1 } end
  for _ = 1, 2 do cases[#cases + 1] = { m = 2 * rnd(5, 40) + 1, k = 2 * rnd(20, 80) + 1, n = 2 * rnd(200, 400) + 1 } end
  cases[#cases + 1] = { m = 1100, k = 37, n = 50 } -- five runs of rows, the last of 76

  it("from 512 rows: the same bits at 2 threads as at 1 on cell's own kernel", function()
    if cell.gemm_kernel() == "openblas" then return end -- OpenBLAS's bits depend on the cut
    for i, c in ipairs({ { m = 512, k = 64, n = 64 }, { m = 1100, k = 37, n = 50 }, { m = 767, k = 256, n = 64 } }) do
      cell.set_seed(300 + i)
      local x, w, b = cell.randn({ c.m, c.k }, f32), cell.randn({ c.n, c.k }, f32), cell.randn({ c.n }, f32)
      local gy = cell.randn({ c.m, c.n }, f32)
      local function fn(xx, ww, bb) return ops.dense(xx, ww, bb) end
      local one, two = T.run_at(1, fn, { x, w, b }, gy), T.run_at(2, fn, { x, w, b }, gy)
      for r = 1, #one do assert.are.same(one[r], two[r], ("[%d x %d] -> %d, result %d"):format(c.m, c.k, c.n, r)) end
    end
  end)

  for i, c in ipairs(cases) do
    local tag = ("case %d: [%d x %d] -> %d"):format(i, c.m, c.k, c.n)

    it(tag .. ": dense and the gradients of x, weight and bias", function()
      cell.set_seed(i)
      local x, w, b = cell.randn({ c.m, c.k }, f32), cell.randn({ c.n, c.k }, f32), cell.randn({ c.n }, f32)
      local gy = cell.randn({ c.m, c.n }, f32)
      check("dense", function(xx, ww, bb) return ops.dense(xx, ww, bb) end, { x, w, b }, gy, math.max(c.k, c.m))
      check("dense, no bias", function(xx, ww) return ops.dense(xx, ww) end, { x, w }, gy, math.max(c.k, c.m))
    end)

    it(tag .. ": only the weight's and bias's gradients, and only the input's", function()
      cell.set_seed(100 + i)
      local x, w, b = cell.randn({ c.m, c.k }, f32), cell.randn({ c.n, c.k }, f32), cell.randn({ c.n }, f32)
      local gy = cell.randn({ c.m, c.n }, f32)
      check("dense (weight, bias)", function(ww, bb) return ops.dense(x, ww, bb) end, { w, b }, gy, math.max(c.k, c.m))
      check("dense (input)", function(xx) return ops.dense(xx, w, b) end, { x }, gy, c.n)
    end)

    it(tag .. ": a 3-D input and a transposed input view", function()
      cell.set_seed(200 + i)
      local w, b = cell.randn({ c.n, c.k }, f32), cell.randn({ c.n }, f32)
      if c.m % 3 == 0 then
        local x3 = cell.randn({ 3, c.m / 3, c.k }, f32)
        check("dense (3-D)", function(xx, ww, bb) return ops.dense(xx, ww, bb) end, { x3, w, b },
          cell.randn({ 3, c.m / 3, c.n }, f32), math.max(c.k, c.m))
      end
      local xt = cell.randn({ c.k, c.m }, f32):transpose(1, 2)
      check("dense (transposed input)", function(xx, ww, bb) return ops.dense(xx, ww, bb) end, { xt, w, b },
        cell.randn({ c.m, c.n }, f32), math.max(c.k, c.m))
    end)
  end
end)
