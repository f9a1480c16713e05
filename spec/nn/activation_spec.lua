-- activation_spec.lua - the activation cells GELU (MindSpore's tanh
-- approximation by default), SiLU, Softmax and LogSoftmax against PyTorch
-- fixtures (spec/fixtures/gen_layers.py), get_activation's names, and errors.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local A = require("fixtures.layers_fixtures").act

local function err(fn, ...) return H.caller_error("activation_spec%.lua", fn, ...) end

describe("activation cells", function()
  local x = cell.tensor(A.x)

  it("GELU uses the tanh approximation unless approximate = false", function()
    H.assert_close(nn.GELU()(x), A.gelu_tanh, 1e-5)
    H.assert_close(nn.GELU(false)(x), A.gelu_erf, 1e-5)
    H.assert_close(nn.GELU { approximate = false }(x), A.gelu_erf, 1e-5)
    assert.are.equal("GELU()", tostring(nn.GELU()))
    local g = cell.grad(function(a) return nn.GELU()(a):sum() end)(cell.tensor({ 0.0 }))
    H.assert_close(g, { 0.5 }, 1e-6)
    H.expect_error(function() nn.GELU("yes") end, "TypeError", "'approximate' must be a boolean")
  end)

  it("SiLU is x * sigmoid(x)", function()
    H.assert_close(nn.SiLU()(x), A.silu, 1e-5)
  end)

  describe("Softmax and LogSoftmax", function()
    it("check the axis", function()
      assert.are.equal(-1, nn.Softmax().axis)
      assert.are.equal(1, nn.LogSoftmax { axis = 1 }.axis)
      assert.are.equal("ValueError: For 'Softmax', the 'axis' is 1-based (or negative, -1 for the last), but got 0.",
        err(function() local s = nn.Softmax(0) return s end))
      H.expect_error(function() nn.LogSoftmax(1.5) end, "TypeError", "'axis' must be an integer")
      -- a value that is not a number is named by its type, not printed (a table's address)
      assert.are.equal("TypeError: For 'Softmax', the 'axis' must be an integer, but got table.",
        err(function() local s = nn.Softmax({ 1, 2 }) return s end))
      assert.are.equal("TypeError: For 'LogSoftmax', the 'axis' must be an integer, but got table.",
        err(function() local s = nn.LogSoftmax({ 1, 2 }) return s end))
      assert.are.equal("TypeError: For 'Softmax', the 'axis' must be an integer, but got Tensor.",
        err(function() local s = nn.Softmax { axis = cell.tensor(1) } return s end))
      assert.are.equal("TypeError: For 'LogSoftmax', the 'axis' must be an integer, but got 1.5.",
        err(function() local s = nn.LogSoftmax(1.5) return s end))
      H.expect_error(function() nn.Softmax(1 / 0) end, "TypeError", "'axis' must be an integer, but got")
      assert.are.equal("ValueError: For 'Softmax', the 'axis' (3) must be in range [-2, -1] or [1, 2] for an input "
        .. "of 2 dimensions.", err(function() local y = nn.Softmax(3)(x) return y end))
    end)

    it("normalise over the last axis by default, or the one given (1-based)", function()
      H.assert_close(nn.Softmax()(x), A.softmax_last, 1e-5)
      H.assert_close(nn.Softmax(1)(x), A.softmax_d1, 1e-5)
      H.assert_close(nn.Softmax(-2)(x), A.softmax_d1, 1e-5)
      H.assert_close(nn.LogSoftmax()(x), A.log_softmax_last, 1e-5)
    end)
  end)

  it("get_activation knows MindSpore's names", function()
    local get = require("cell.nn.activation").get_activation
    for name, cls in pairs { gelu = "GELU", silu = "SiLU", softmax = "Softmax", logsoftmax = "LogSoftmax",
      relu = "ReLU", sigmoid = "Sigmoid", tanh = "Tanh" } do
      assert.are.equal(cls, get(name).cls_name)
    end
    H.expect_error(function() get("swish") end, "KeyError", "Unknown activation 'swish'", "gelu", "logsoftmax")
    assert.are.equal("GELU", nn.Dense(2, 2, { activation = "gelu" }).activation.cls_name)
  end)
end)
