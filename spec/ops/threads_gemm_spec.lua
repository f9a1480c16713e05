-- threads_gemm_spec.lua - matrix products split over threads by rows of
-- the result at multiples of the BLAS kernel's tile width (12, 16 or 48),
-- each part one single-threaded OpenBLAS call, and wide ones (too few rows
-- to split) computed as their transposes at every thread count
-- (src/backend/blas.c; issue 15). Over random shapes on both sides of the
-- bars (2^18 multiply-adds, two tiles of rows), with operands plain and transposed: matmul and dense, and their
-- gradients, at 2 threads are identical to 1 thread, bit for bit (OpenBLAS
-- rounds an element by its place in its kernel's tiles: on AMD Zen cuts at
-- multiples of 16 changed results), and agree with float64.
local cell = require "cell"
local H = require "helpers"
local T = require "helpers.threads"

local ops = cell.ops
local f32, f64 = cell.float32, cell.float64

--- The float32 sums of k products of about 1 round more as k grows (and
-- with the m or n rows summed in a weight gradient): the tolerance against
-- float64; 2 threads against 1 must be identical.
local function check(name, fn, args, gy, k)
  local tol = 2e-6 * math.max(k, 64)
  T.check(name, fn, args, gy, tol, 0)
end

local function rnd(lo, hi) return math.random(lo, hi) end

describe("matrix products split over threads", function()
  local cases = {
    { m = 512, k = 64, n = 192 }, -- a tiny GPT's projection: by rows
    { m = 40, k = 512, n = 768 }, -- wide: as its transpose
    { m = 300, k = 3, n = 200 }, -- below the bar (work < 2^18)
    { m = 63, k = 99, n = 61 }, -- under 96 rows and columns: one thread
    { m = 64, k = 512, n = 64 }, -- a weight gradient: one thread
    { m = 517, k = 64, n = 161 }, -- a last part of 229 rows (tiles of 12, then 8, 4, 1)
    { m = 97, k = 200, n = 40 }, -- 48 + 49 rows
    { m = 16, k = 128, n = 512 }, -- an LSTM's gates for a batch of 16: wide
    { m = 32, k = 144, n = 2048 }, -- 32 output channels (rows 24 + 8 at 2 threads): wide
    { m = 47, k = 60, n = 188 }, -- under four tiles of rows, four times the columns: wide
    { m = 40, k = 96, n = 150 }, -- under four tiles, fewer columns: by rows
  }
  math.randomseed(2615)
  for _ = 1, 4 do cases[#cases + 1] = { m = 2 * rnd(70, 400) + 1, k = rnd(9, 150), n = rnd(3, 260) } end
  for _ = 1, 3 do cases[#cases + 1] = { m = rnd(3, 120), k = rnd(9, 150), n = 2 * rnd(70, 500) + 1 } end

  for i, c in ipairs(cases) do
    it(("case %d: [%d x %d] @ [%d x %d]"):format(i, c.m, c.k, c.k, c.n), function()
      cell.set_seed(i)
      local a, b = cell.randn({ c.m, c.k }, f32), cell.randn({ c.k, c.n }, f32)
      local gy = cell.randn({ c.m, c.n }, f32)
      check("matmul", function(x, y) return x:matmul(y) end, { a, b }, gy, c.k)
      -- Transposed operands (BLAS's Trans layouts): views of the transposes.
      local at_, bt = cell.randn({ c.k, c.m }, f32):transpose(1, 2), cell.randn({ c.n, c.k }, f32):transpose(1, 2)
      check("matmul (transposed)", function(x, y) return x:matmul(y) end, { at_, bt }, gy, c.k)
      local w, bias = cell.randn({ c.n, c.k }, f32), cell.randn({ c.n }, f32)
      check("dense", function(x, ww, bb) return ops.dense(x, ww, bb) end, { a, w, bias }, gy,
        math.max(c.k, c.m))
    end)
  end

  it("float64 products split too", function()
    cell.set_seed(99)
    local a, b = cell.randn({ 333, 71 }, f64), cell.randn({ 71, 150 }, f64)
    local one = T.at(1, function() return a:matmul(b):totable() end)
    local two = T.at(2, function() return a:matmul(b):totable() end)
    H.assert_close(two, one, 0, "float64 matmul (2 threads)")
  end)
end)
