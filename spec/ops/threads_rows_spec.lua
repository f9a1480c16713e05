-- threads_rows_spec.lua - the row kernels a Transformer step runs split
-- over threads from the elementwise bar weighted by their measured cost
-- (src/ops/nn.h cell_nn_parallel_cost; issue 15): layer_norm (rows, and
-- the float32 weight and bias gradients summed over fixed runs of rows,
-- whose number depends on the rows alone, then added in run order),
-- softmax and
-- log_softmax, cross_entropy, the dense layer's bias gradient (columns),
-- and erf / GELU past CELL_ITER_COST_VM_HEAVY's lower bar. Over random
-- shapes (odd sizes, most past the bars, some below): the float32 outputs
-- and gradients at 2 threads equal those at 1 bit for bit (each row or
-- column is computed alone, in the same order, whichever thread takes it;
-- the dense layer's gx and gw are OpenBLAS's, whose blocking depends on its
-- thread count, so they agree to rounding), and agree with the same
-- computation in float64.
local cell = require "cell"

local ops = cell.ops
local f32 = cell.float32

local check = require("helpers.threads").check

local function rnd(lo, hi) return math.random(lo, hi) end

describe("row kernels split over threads", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  -- A tiny GPT's rows (512 of 64, of 40 classes), one past the 256-element
  -- load chunk, one below every bar, one past layer_norm's most runs of
  -- rows (32 runs of 32), then random odd shapes.
  local cases = { { rows = 512, d = 64, c = 40 }, { rows = 203, d = 301, c = 263 }, { rows = 7, d = 9, c = 5 },
    { rows = 2501, d = 17, c = 7 } }
  math.randomseed(1515)
  for _ = 1, 6 do
    cases[#cases + 1] = { rows = 2 * rnd(150, 550) + 1, d = 2 * rnd(8, 70) + 1, c = rnd(3, 90) }
  end

  for i, c in ipairs(cases) do
    local tag = ("case %d: %d rows of %d, %d classes"):format(i, c.rows, c.d, c.c)

    it(tag .. ": layer_norm and its gradients (x, weight, bias)", function()
      cell.set_seed(i)
      local x = cell.randn({ c.rows, c.d }, f32) * 2 + 0.5
      local w, b = cell.randn({ c.d }, f32), cell.randn({ c.d }, f32)
      check("layer_norm", function(xx, ww, bb) return ops.layer_norm(xx, 1, ww, bb, 1e-5) end, { x, w, b },
        cell.randn(x.shape, f32), 1e-4 * math.max(1, c.rows / 100))
      -- Two normalised dimensions: rows of d = 3 x (d) elements.
      local x3 = cell.randn({ c.rows, 3, c.d }, f32)
      local w3, b3 = cell.randn({ 3, c.d }, f32), cell.randn({ 3, c.d }, f32)
      check("layer_norm (2 dims)", function(xx, ww, bb) return ops.layer_norm(xx, 2, ww, bb, 1e-5) end,
        { x3, w3, b3 }, cell.randn(x3.shape, f32), 1e-4 * math.max(1, c.rows / 100))
    end)

    it(tag .. ": softmax and log_softmax and their gradients", function()
      cell.set_seed(100 + i)
      local x = cell.randn({ c.rows, c.d }, f32) * 3
      local gy = cell.randn(x.shape, f32)
      check("softmax", function(xx) return ops.softmax(xx, -1) end, { x }, gy, 1e-5)
      check("log_softmax", function(xx) return ops.log_softmax(xx, -1) end, { x }, gy, 1e-5)
      -- Over a middle dimension: strided rows.
      local x3 = cell.randn({ 3, c.d, math.floor(c.rows / 3) }, f32)
      check("softmax (dim 2)", function(xx) return ops.softmax(xx, 2) end, { x3 }, cell.randn(x3.shape, f32), 1e-5)
    end)

    it(tag .. ": cross_entropy and its gradient", function()
      cell.set_seed(200 + i)
      local x = cell.randn({ c.rows, c.c }, f32) * 2
      local t = cell.randint(1, c.c + 1, { c.rows })
      local wt = cell.rand({ c.c }, f32) + 0.5
      local gy = cell.randn({ c.rows }, f32)
      check("cross_entropy", function(xx) return ops.cross_entropy(xx, t, { reduction = "none" }) end, { x }, gy, 1e-5)
      check("cross_entropy (weight, label smoothing)", function(xx)
        return ops.cross_entropy(xx, t, { reduction = "none", weight = wt:astype(xx.dtype), label_smoothing = 0.1 })
      end, { x }, gy, 1e-5)
    end)

    it(tag .. ": dense and its gradients (the bias gradient by columns)", function()
      cell.set_seed(300 + i)
      local x = cell.randn({ c.rows, c.d }, f32)
      local n = 4 * c.c + 1
      local w, b = cell.randn({ n, c.d }, f32) * 0.2, cell.randn({ n }, f32)
      -- gx and gw are OpenBLAS's products (rounding may differ by thread
      -- count); the output and gb are exact.
      local tol2 = { 0, 1e-5, 1e-5 * c.rows / 50, 0 }
      check("dense", function(xx, ww, bb) return ops.dense(xx, ww, bb) end, { x, w, b },
        cell.randn({ c.rows, n }, f32), 1e-4 * math.max(1, c.rows / 100), tol2)
    end)
  end

  -- erf and GELU (and GELU's gradient) split from an eighth of the copy
  -- kernels' bar: lengths around it.
  for _, n in ipairs({ 8191, 8192, 12289, 40001 }) do
    it(("erf and gelu at %d elements"):format(n), function()
      cell.set_seed(n)
      local x = cell.randn({ n }, f32) * 3
      local gy = cell.randn({ n }, f32)
      check("erf", function(xx) return xx:erf() end, { x }, gy, 1e-5)
      check("gelu", function(xx) return ops.gelu(xx) end, { x }, gy, 1e-5)
    end)
  end
end)
