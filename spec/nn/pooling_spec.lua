-- pooling_spec.lua - cell.nn.MaxPool2d and AvgPool2d: MindSpore 2.x's
-- arguments and extend_repr, the pad modes (TensorFlow's "same"), ceil_mode,
-- count_include_pad and divisor_override against PyTorch fixtures
-- (spec/fixtures/gen_layers.py), 3-D inputs, and every error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local FX = require("fixtures.layers_fixtures").pool

local function err(fn, ...) return H.caller_error("pooling_spec%.lua", fn, ...) end

describe("nn.MaxPool2d and nn.AvgPool2d", function()
  it("have MindSpore's defaults and print MindSpore's text", function()
    assert.are.equal("MaxPool2d(kernel_size=1, stride=1, pad_mode=VALID)", tostring(nn.MaxPool2d()))
    assert.are.equal("MaxPool2d(kernel_size=2, stride=2, pad_mode=SAME)", tostring(nn.MaxPool2d(2, 2, "same")))
    assert.are.equal("AvgPool2d(kernel_size=(2, 3), stride=(1, 2), pad_mode=PAD)",
      tostring(nn.AvgPool2d { kernel_size = { 2, 3 }, stride = { 1, 2 }, pad_mode = "pad", padding = 1 }))
    assert.are.equal("kernel_size=3, stride=1, pad_mode=VALID", nn.AvgPool2d({ 3 }):extend_repr())
    assert.are.same({}, nn.MaxPool2d(2):state_dict():keys())
  end)

  describe("forward", function()
    local x = cell.tensor(FX.x)

    it("MaxPool2d: valid, same (the odd padding at the bottom/right) and pad with ceil_mode", function()
      H.assert_close(nn.MaxPool2d(2, 2)(x), FX.max_valid_k2s2)
      local same = nn.MaxPool2d(3, 2, "same")(x)
      H.assert_shape(same, { 2, 3, 3, 4 })
      H.assert_close(same, FX.max_same_k3s2)
      H.assert_close(nn.MaxPool2d { kernel_size = 3, stride = 2, pad_mode = "pad", padding = 1, ceil_mode = true }(x),
        FX.max_pad_k3s2p1_ceil)
      H.assert_close(nn.MaxPool2d { kernel_size = 3, stride = 1, pad_mode = "pad", padding = { 1, 0 } }(x),
        FX.max_pad_k3s1p_1_0)
    end)

    it("AvgPool2d: valid, same (counting only input pixels) and pad", function()
      H.assert_close(nn.AvgPool2d(2, 1)(x), FX.avg_valid_k2s1)
      H.assert_close(nn.AvgPool2d(3, 2, "same")(x), FX.avg_same_k3s2)
      local function pad(o)
        o.kernel_size, o.stride, o.pad_mode, o.padding = 3, 2, "pad", 1
        return nn.AvgPool2d(o)(x)
      end
      H.assert_close(pad {}, FX.avg_pad_k3s2p1)
      H.assert_close(pad { count_include_pad = false }, FX.avg_pad_k3s2p1_exclude)
      H.assert_close(pad { ceil_mode = true }, FX.avg_pad_k3s2p1_ceil)
      H.assert_close(pad { ceil_mode = true, count_include_pad = false }, FX.avg_pad_k3s2p1_ceil_exclude)
      H.assert_close(pad { divisor_override = 4 }, FX.avg_pad_k3s2p1_div4)
      H.assert_close(nn.AvgPool2d { kernel_size = 2, stride = 2, ceil_mode = true }(x), FX.avg_valid_k2s2_ceil)
    end)

    it("take a 3-D {C, H, W} input and give a 3-D output", function()
      local y = nn.MaxPool2d(2, 2)(x[1])
      H.assert_close(y, FX.max_valid_k2s2[1])
      H.assert_close(nn.AvgPool2d(3, 2, "same")(x[2]), FX.avg_same_k3s2[2])
    end)

    it("pass gradients back", function()
      local g = cell.grad(function(a) return nn.AvgPool2d(2, 2)(a):sum() end)(cell.ones({ 1, 1, 4, 4 }))
      H.assert_close(g, H.nest({ 1, 1, 4, 4 }, function() return 0.25 end))
    end)

    it("name the layer and the shape for a wrong input", function()
      local p = nn.MaxPool2d(2)
      assert.are.equal("ValueError: For 'MaxPool2d', the input must be 3-D (C, H, W) or 4-D (N, C, H, W), but got "
        .. "(2, 3).", err(function() local y = p(cell.ones({ 2, 3 })) return y end))
      H.expect_error(function() nn.AvgPool2d(4)(cell.ones({ 1, 1, 3, 8 })) end, "ValueError",
        "For 'AvgPool2d', the padded input (3, 8) is smaller than the kernel_size (4, 4)", "(1, 1, 3, 8)")
    end)
  end)

  it("reject bad arguments as MindSpore does", function()
    H.expect_error(function() nn.MaxPool2d(0) end, "ValueError", "For 'MaxPool2d', the 'kernel_size' must be a "
      .. "positive integer, but got 0.")
    H.expect_error(function() nn.MaxPool2d("2") end, "TypeError", "'kernel_size'", "string")
    H.expect_error(function() nn.AvgPool2d({ 1, 2, 3 }) end, "ValueError", "'kernel_size'", "3 values")
    H.expect_error(function() nn.AvgPool2d(2, { 0, 1 }) end, "ValueError", "'stride'")
    assert.are.equal("ValueError: For 'AvgPool2d', the 'pad_mode' must be one of ['valid', 'same', 'pad'], but got "
      .. "'full'.", err(function() local p = nn.AvgPool2d(2, 1, "full") return p end))
    assert.are.equal("ValueError: For 'AvgPool2d', the 'padding' must be zero when 'pad_mode' is not 'pad', but got "
      .. "padding 1 and pad_mode 'same'.", err(function() local p = nn.AvgPool2d(3, 1, "same", 1) return p end))
    assert.are.equal("ValueError: For 'MaxPool2d', the parameter 'padding', 'dilation', 'return_indices', "
      .. "'ceil_mode' can not be set to non-default value when pad_mode is not 'pad', but got pad_mode:VALID.",
      err(function() local p = nn.MaxPool2d { kernel_size = 2, ceil_mode = true } return p end))
    H.expect_error(function() nn.MaxPool2d { kernel_size = 3, pad_mode = "pad", padding = 2 } end, "ValueError",
      "the padding (2, 2) must be at most half the kernel_size (3, 3)")
    H.expect_error(function() nn.MaxPool2d { kernel_size = 3, pad_mode = "pad", padding = { 1, 1, 1 } } end,
      "ValueError", "'padding'", "1 or 2")
    H.expect_error(function() nn.MaxPool2d { kernel_size = 3, pad_mode = "pad", padding = -1 } end, "ValueError",
      "non-negative")
    H.expect_error(function() nn.MaxPool2d { kernel_size = 3, pad_mode = "pad", ceil_mode = 1 } end, "TypeError",
      "'ceil_mode' must be a boolean")
    H.expect_error(function() nn.AvgPool2d { count_include_pad = "no" } end, "TypeError", "'count_include_pad'")
    H.expect_error(function() nn.AvgPool2d { divisor_override = 0 } end, "ValueError",
      "'divisor_override' must be > 0, but got 0")
    H.expect_error(function() nn.AvgPool2d { divisor_override = "2" } end, "TypeError", "'divisor_override'")
    H.expect_error(function() nn.AvgPool2d { data_format = "NHWC" } end, "ValueError", "'data_format'")
    H.expect_error(function() nn.AvgPool2d { kernel = 2 } end, "TypeError", "unexpected keyword argument 'kernel'")
  end)
end)
