-- The activations of issue 14 against PyTorch (spec/fixtures/gen_layers14.py),
-- float64 gradchecks, the functional forms, and the misuse errors.
local cell = require "cell"
local H = require "helpers"
local R = require "helpers.layers14_runner"
local nn, ops = cell.nn, cell.ops

describe("cell.nn activations of issue 14 against PyTorch", function()
  R.describe_cases(it, "act")
end)

--- A float64 input of the given shape in (lo, hi), its values at least
-- 0.05 away from the kinks in `kinks`.
local function away(shape, lo, hi, kinks)
  cell.set_seed(3)
  local x = cell.rand(shape, cell.float64) * (hi - lo) + lo
  local flat = x:view(-1)
  for j = 1, x:numel() do
    for _, k in ipairs(kinks or {}) do
      if math.abs(flat[j] - k) < 0.05 then flat[j] = k + 0.1 end
    end
  end
  return x
end

describe("the fused activations", function()
  describe("pass a float64 gradcheck", function()
    local cases = {
      { "leaky_relu", function(x) return ops.leaky_relu(x, 0.1) end, { 0 } },
      { "elu", function(x) return ops.elu(x, 0.6) end, { 0 } },
      { "selu", ops.selu, { 0 } },
      { "celu", function(x) return ops.celu(x, 1.7) end, { 0 } },
      { "softsign", ops.softsign, { 0 } },
      { "mish", ops.mish },
      { "relu6", ops.relu6, { 0, 6 } },
      { "hardswish", ops.hardswish, { -3, 3 } },
      { "hardsigmoid", ops.hardsigmoid, { -3, 3 } },
      { "logsigmoid", ops.logsigmoid },
      { "tanhshrink", ops.tanhshrink },
      { "hardtanh", function(x) return ops.hardtanh(x, -0.5, 1.5) end, { -0.5, 1.5 } },
      { "gelu tanh", function(x) return ops.gelu(x, "tanh") end },
      { "gelu none", function(x) return ops.gelu(x, { approximate = "none" }) end },
      { "prelu", function(x, w) return ops.prelu(x, w) end, { 0 } },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        local x = away({ 2, 3, 2 }, -7, 8, c[3])
        if c[1] == "prelu" then
          R.gradcheck(c[2], { x, cell.tensor({ 0.1, -0.3, 0.5 }, cell.float64) })
        else
          R.gradcheck(c[2], { x:transpose(1, 3) })
        end
      end)
    end
  end)

  it("keep the dtype and shape of a float16 input", function()
    local y = ops.mish(cell.ones({ 2, 3 }, cell.float16))
    assert.are.equal(cell.float16, y.dtype)
    H.assert_shape(y, { 2, 3 })
  end)

  it("take their numbers positionally or in a table", function()
    local x = cell.tensor({ -2, 0.5, 3 }, cell.float64)
    H.assert_close(ops.leaky_relu(x), { -0.4, 0.5, 3 })
    H.assert_close(ops.leaky_relu(x, { alpha = 0.5 }), { -1, 0.5, 3 })
    H.assert_close(ops.hardtanh(x, { max_val = 2 }), { -1, 0.5, 2 })
    H.assert_close(ops.relu6(x * 3), { 0, 1.5, 6 })
    H.assert_close(nn.ReLU6()(x * 3), { 0, 1.5, 6 })
  end)

  it("GELU's cell and ops.gelu agree on both forms", function()
    local x = cell.tensor({ -1.5, 0.25, 2 }, cell.float64)
    H.assert_close(nn.GELU()(x), ops.gelu(x, "tanh"):totable(), 1e-12)
    H.assert_close(nn.GELU(false)(x), ops.gelu(x):totable(), 1e-12)
  end)

  it("PReLU keeps its slope as the attribute w, a Parameter named a (MindSpore's), one per channel", function()
    local p = nn.PReLU(3)
    local ps = p:trainable_params()
    assert.are.equal(1, #ps)
    assert.are.equal("a", ps[1].name)
    H.assert_close(p.w, { 0.25, 0.25, 0.25 })
  end)
end)

describe("the activations refuse misuse", function()
  it("with a TypeError for an integer tensor", function()
    H.expect_error(function() ops.elu(cell.tensor({ 1, 2 }, cell.int64)) end, "TypeError", "elu", "Int64")
  end)
  it("with a TypeError for a non-number alpha", function()
    H.expect_error(function() ops.leaky_relu(cell.ones({ 2 }), "x") end, "TypeError", "leaky_relu", "alpha")
    H.expect_error(function() nn.ELU("x") end, "TypeError", "ELU", "alpha")
  end)
  it("with a ValueError for CELU's alpha 0 and min_val > max_val", function()
    H.expect_error(function() nn.CELU(0) end, "ValueError", "CELU", "alpha")
    H.expect_error(function() ops.celu(cell.ones({ 2 }), 0) end, "ValueError", "celu", "alpha")
    H.expect_error(function() nn.Hardtanh(2, 1) end, "ValueError", "Hardtanh", "min_val")
    H.expect_error(function() ops.hardtanh(cell.ones({ 2 }), 2, 1) end, "ValueError", "hardtanh", "min_val")
  end)
  it("with a ValueError for an unknown GELU approximation", function()
    H.expect_error(function() ops.gelu(cell.ones({ 2 }), "fast") end, "ValueError", "gelu", "'fast'")
  end)
  it("with errors for PReLU's channels and w", function()
    H.expect_error(function() nn.PReLU(0) end, "ValueError", "PReLU", "channel")
    H.expect_error(function() nn.PReLU(2, "a") end, "TypeError", "PReLU", "'w'")
    H.expect_error(function() nn.PReLU(3)(cell.ones({ 2, 4 })) end, "ValueError", "PReLU", "(3)", "(2, 4)")
    H.expect_error(function() nn.Softplus(0) end, "ValueError", "Softplus", "beta")
  end)
end)
