-- linear_bias_spec.lua - the fused linear layer's bias written into the
-- output first and the product added to it by BLAS (beta = 1; src/ops/
-- linear.c, src/backend/blas.c cell_blas_gemm_acc), where one BLAS gemm
-- call takes the product. Over random shapes on both sides of the BLAS
-- bar and of the thread split (so the portable kernel's and the fused
-- 2-thread path's bias additions run too), inputs and weights read through
-- transposed and sliced views, contiguous and strided biases (a column of
-- a matrix), float32 and float64, at 1 and 2 threads: the outputs and the
-- gradients agree with the same layer computed in float64 from the same
-- values, and the bias lands on every row exactly once.
local cell = require "cell"
local H = require "helpers"

local ops = cell.ops
local f32, f64 = cell.float32, cell.float64

local function rnd(lo, hi) return math.random(lo, hi) end

-- A {rows, cols} tensor: contiguous (1), the transpose of a {cols, rows}
-- one (2) or a slice of a wider one (3).
local function view(rows, cols, kind, dt)
  if kind == 2 then return cell.randn({ cols, rows }, dt):transpose(1, 2) end
  if kind == 3 then return cell.randn({ rows, cols + 5 }, dt):narrow(2, 3, cols) end
  return cell.randn({ rows, cols }, dt)
end

local function run(x, w, b, gy)
  local y = ops.dense(x, w, b)
  local g = cell.grad(function(a, m, c) return (ops.dense(a, m, c) * gy):sum() end, { 1, 2, 3 })(x, w, b)
  return { y:astype(f64):totable(), g[1]:astype(f64):totable(), g[2]:astype(f64):totable(),
    g[3]:astype(f64):totable() }
end

describe("dense: the bias under the BLAS product", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  math.randomseed(1517)
  -- a tiny GPT's layers (512 rows of 64 in, 192 / 64 / 256 / 40 out), one
  -- below the BLAS bar, two rows, then random shapes
  local cases = { { m = 512, k = 64, n = 192 }, { m = 512, k = 256, n = 64 }, { m = 512, k = 64, n = 40 },
    { m = 3, k = 4, n = 5 }, { m = 2, k = 70, n = 90 } }
  for _ = 1, 10 do cases[#cases + 1] = { m = rnd(2, 400), k = rnd(1, 120), n = rnd(2, 150) } end

  for i, c in ipairs(cases) do
    for _, th in ipairs({ 1, 2 }) do
      local dt = (i + th) % 4 == 0 and f64 or f32
      local xk, wk, strided = (i + th) % 3 + 1, (i * 2 + th) % 3 + 1, (i + th) % 2 == 0
      local tag = ("case %d: [%d, %d] x [%d, %d]^T, %s, %d thread(s), x view %d, W view %d, %s bias"):format(i,
        c.m, c.k, c.n, c.k, dt.name, th, xk, wk, strided and "strided" or "contiguous")
      it(tag, function()
        cell.set_seed(40 + i)
        cell.set_num_threads(th)
        local x, w = view(c.m, c.k, xk, dt), view(c.n, c.k, wk, dt)
        local b = strided and cell.randn({ c.n, 2 }, dt):select(2, 1) or cell.randn({ c.n }, dt) + 3
        local gy = cell.randn({ c.m, c.n }, dt)
        local got = run(x, w, b, gy)
        cell.set_num_threads(1)
        local ref = run(x:astype(f64), w:astype(f64), b:astype(f64), gy:astype(f64))
        local tol = dt == f64 and 1e-12 or 1e-5 * math.sqrt(c.k + 1)
        local gtol = dt == f64 and 1e-12 or 1e-5 * math.sqrt(c.m + c.n + 1)
        H.assert_close(got[1], ref[1], tol, tag .. ": output")
        for j = 2, 4 do H.assert_close(got[j], ref[j], gtol, tag .. ": gradient " .. (j - 1)) end
      end)
    end
  end

  it("adds the bias once to every row (zero weights)", function()
    for _, th in ipairs({ 1, 2 }) do
      cell.set_num_threads(th)
      local x = cell.randn({ 300, 64 })
      local b = cell.arange(1, 97):astype(f32)
      local y = ops.dense(x, cell.zeros({ 96, 64 }), b)
      local want = {}
      for r = 1, 300 do want[r] = b:totable() end
      H.assert_close(y, want, 0, th .. " thread(s)")
    end
    cell.set_num_threads(prev)
  end)
end)
