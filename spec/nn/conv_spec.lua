-- conv_spec.lua - cell.nn.Conv2d: MindSpore's parameter names, shapes and
-- default initialiser bounds, extend_repr, state_dict keys, the three pad
-- modes against PyTorch fixtures (spec/fixtures/gen_layers.py), gradients,
-- and every argument and input error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local FX = require("fixtures.layers_fixtures").conv

local function err(fn, ...) return H.caller_error("conv_spec%.lua", fn, ...) end

local function t(v) return cell.tensor(v) end

describe("nn.Conv2d", function()
  it("has weight {out, in/group, kh, kw} and an optional bias {out} with MindSpore's default bounds", function()
    cell.set_seed(7)
    local c = nn.Conv2d(4, 6, 3, { group = 2, has_bias = true })
    assert.are.same({ 6, 2, 3, 3 }, c.weight.shape)
    assert.are.same({ 6 }, c.bias.shape)
    assert.are.equal("weight", c.weight.name)
    assert.are.equal("bias", c.bias.name)
    -- fan_in = 2 * 3 * 3 = 18: HeUniform(sqrt(5)) bound sqrt(6 / (6 * 18)) = 1 / sqrt(18); bias bound 1 / sqrt(18)
    local bound = 1 / math.sqrt(18)
    local wmax = c.weight:abs():max():item()
    assert.is_true(wmax <= bound and wmax > 0.8 * bound)
    assert.is_true(c.bias:abs():max():item() <= bound)
    local k = nn.Conv2d(3, 2, { 2, 5 })
    assert.are.same({ 2, 3, 2, 5 }, k.weight.shape)
    assert.is_nil(k.bias)
    assert.is_false(k.has_bias)
  end)

  it("takes initializers by name, object, number or Tensor, and a dtype", function()
    local c = nn.Conv2d(2, 3, 1, { weight_init = "ones", bias_init = 0.5, has_bias = true, dtype = cell.float64 })
    H.assert_values(c.weight, H.nest({ 3, 2, 1, 1 }, function() return 1 end), "float64")
    H.assert_values(c.bias, { 0.5, 0.5, 0.5 })
    local w = cell.full({ 3, 2, 1, 1 }, 2)
    assert.are.same({ 2 }, H.flatten(nn.Conv2d(2, 3, 1, { weight_init = w }).weight:max():totable()))
    local n = nn.Conv2d(2, 3, 1, { weight_init = cell.init.Constant(3) })
    assert.are.equal(3, n.weight:min():item())
  end)

  it("lists its parameters in state_dict as MindSpore names them", function()
    assert.are.same({ "weight", "bias" }, nn.Conv2d(1, 1, 1, { has_bias = true }):state_dict():keys())
    assert.are.same({ "weight" }, nn.Conv2d(1, 1, 1):state_dict():keys())
    local Net = nn.Cell:extend("Net")
    function Net:init() self.conv1 = nn.Conv2d(1, 2, 3, { has_bias = true }) end
    local net = Net()
    assert.are.same({ "conv1.weight", "conv1.bias" }, net:state_dict():keys())
    assert.are.equal("conv1.weight", net.conv1.weight.name)
  end)

  it("prints MindSpore's extend_repr text", function()
    assert.are.equal("Conv2d(input_channels=120, output_channels=240, kernel_size=(4, 4), stride=(1, 1), "
      .. "pad_mode=same, padding=0, dilation=(1, 1), group=1, has_bias=false, weight_init=normal, bias_init=nil, "
      .. "format=NCHW)", tostring(nn.Conv2d(120, 240, 4, { has_bias = false, weight_init = "normal" })))
    local c = nn.Conv2d(4, 6, { 3, 2 }, 2, "pad", { 1, 0, 2, 1 }, 2, 2, true, "zeros", 0.5)
    assert.are.equal("input_channels=4, output_channels=6, kernel_size=(3, 2), stride=(2, 2), pad_mode=pad, "
      .. "padding=(1, 0, 2, 1), dilation=(2, 2), group=2, has_bias=true, weight_init=zeros, bias_init=0.5, "
      .. "format=NCHW", c:extend_repr())
    local w = nn.Conv2d(1, 1, 1, { weight_init = cell.zeros({ 1, 1, 1, 1 }) })
    assert.truthy(w:extend_repr():find("weight_init=Tensor(shape=(1, 1, 1, 1), dtype=Float32)", 1, true))
  end)

  describe("forward", function()
    local x = t(FX.x)

    it("pads 'same' as MindSpore (output ceil(H / stride), the odd pixel at the bottom/right)", function()
      local c = nn.Conv2d(4, 6, 3, { group = 2, has_bias = true, weight_init = t(FX.wg), bias_init = t(FX.b6) })
      local y = c(x)
      H.assert_shape(y, { 2, 6, 5, 6 })
      H.assert_close(y, FX.same_s1, 1e-5)
      local c2 = nn.Conv2d(4, 6, 3, { stride = 2, group = 2, has_bias = true, weight_init = t(FX.wg),
        bias_init = t(FX.b6) })
      local y2 = c2(x)
      H.assert_shape(y2, { 2, 6, 3, 3 })
      H.assert_close(y2, FX.same_s2, 1e-5)
    end)

    it("computes 'valid' with dilation and no bias", function()
      local c = nn.Conv2d(4, 3, 3, { pad_mode = "valid", dilation = 2, weight_init = t(FX.w1) })
      H.assert_close(c(x), FX.valid_d2, 1e-5)
    end)

    it("pads 'pad' by {top, bottom, left, right}, and by {top_bottom, left_right} or one number", function()
      local c = nn.Conv2d(4, 3, 3, { pad_mode = "pad", padding = { 1, 0, 2, 1 }, stride = { 2, 1 },
        has_bias = true, weight_init = t(FX.w1), bias_init = t(FX.b3) })
      H.assert_close(c(x), FX.pad4, 1e-5)
      local two = nn.Conv2d(4, 3, 3, { pad_mode = "PAD", padding = { 1, 2 }, weight_init = t(FX.w1) })
      local four = nn.Conv2d(4, 3, 3, { pad_mode = "pad", padding = { 1, 1, 2, 2 }, weight_init = t(FX.w1) })
      H.assert_close(two(x), four(x):totable(), 1e-6)
      local one = nn.Conv2d(4, 3, 3, { pad_mode = "pad", padding = 1, weight_init = t(FX.w1) })
      local same = nn.Conv2d(4, 3, 3, { weight_init = t(FX.w1) })
      H.assert_close(one(x), same(x):totable(), 1e-6)
    end)

    it("passes gradients to the input, the weight and the bias", function()
      local c = nn.Conv2d(4, 6, 3, { group = 2, has_bias = true, weight_init = t(FX.wg), bias_init = t(FX.b6) })
      local g = cell.grad(function(a) return c(a):sum() end, 1, c:trainable_params())(x)
      local gx, gw = g[1], g[2]
      H.assert_shape(gx, { 2, 4, 5, 6 })
      H.assert_shape(gw[1], { 6, 2, 3, 3 })
      -- d(sum)/d(bias_o) = N * H_out * W_out = 2 * 5 * 6
      H.assert_close(gw[2], { 60, 60, 60, 60, 60, 60 })
    end)
  end)

  describe("errors", function()
    it("rejects bad channel counts, sizes, modes and flags", function()
      assert.are.equal("ValueError: For 'Conv2d', the 'in_channels' must be a positive integer, but got 0.",
        err(function() local c = nn.Conv2d(0, 2, 3) return c end))
      assert.are.equal("TypeError: For 'Conv2d', the 'out_channels' must be an integer, but got string.",
        err(function() local c = nn.Conv2d(1, "2", 3) return c end))
      H.expect_error(function() nn.Conv2d(1, 2, { 1, 2, 3 }) end, "ValueError", "'kernel_size'", "3 values")
      H.expect_error(function() nn.Conv2d(1, 2, 0) end, "ValueError", "'kernel_size' must be a positive integer")
      H.expect_error(function() nn.Conv2d(1, 2, 3, { stride = 1.5 }) end, "ValueError", "'stride'", "1.5")
      assert.are.equal("ValueError: For 'Conv2d', the 'pad_mode' must be one of ['same', 'valid', 'pad'], but got "
        .. "'full'.", err(function() local c = nn.Conv2d(1, 2, 3, { pad_mode = "full" }) return c end))
      assert.are.equal("ValueError: For 'Conv2d', the 'padding' must be zero when 'pad_mode' is not 'pad', but got "
        .. "padding 1 and pad_mode 'same'.", err(function() local c = nn.Conv2d(1, 2, 3, { padding = 1 }) return c end))
      H.expect_error(function() nn.Conv2d(1, 2, 3, { pad_mode = "pad", padding = { 1, 2, 3 } }) end, "ValueError",
        "'padding'", "2 or 4")
      H.expect_error(function() nn.Conv2d(1, 2, 3, { pad_mode = "pad", padding = -1 }) end, "ValueError",
        "non-negative")
      H.expect_error(function() nn.Conv2d(1, 2, 3, { pad_mode = "pad", padding = "1" }) end, "TypeError", "padding")
      assert.are.equal("ValueError: For 'Conv2d', the attr 'in_channels' must be divisible by attr 'group', but got "
        .. "'in_channels': 3 and 'group': 2.", err(function() local c = nn.Conv2d(3, 4, 1, { group = 2 }) return c end))
      H.expect_error(function() nn.Conv2d(4, 3, 1, { group = 2 }) end, "ValueError", "'out_channels' must be divisible")
      H.expect_error(function() nn.Conv2d(1, 1, 1, { has_bias = 1 }) end, "TypeError", "'has_bias' must be a boolean")
      H.expect_error(function() nn.Conv2d(1, 1, 1, { data_format = "NHWC" }) end, "ValueError", "'data_format'",
        "'NHWC'")
      H.expect_error(function() nn.Conv2d(1, 1, 1, { dtype = cell.int32 }) end, "TypeError", "'dtype'", "Int32")
      H.expect_error(function() nn.Conv2d(1, 1, 1, { strides = 2 }) end, "TypeError", "unexpected keyword argument 'strides'")
      H.expect_error(function() nn.Conv2d(1, 2, 3, { weight_init = cell.ones({ 2, 1, 3 }) }) end, "ValueError",
        "must be (2, 1, 3, 3), but got (2, 1, 3)")
      H.expect_error(function() nn.Conv2d(1, 2, 3, { has_bias = true, bias_init = cell.ones({ 3 }) }) end,
        "ValueError", "bias_init shape must be (2,), but got (3,)")
    end)

    it("names the layer and both shapes for a wrong input", function()
      local c = nn.Conv2d(3, 2, 3)
      assert.are.equal("ValueError: For 'Conv2d', the input must be 4-D {N, C, H, W} with C = in_channels (3), but "
        .. "got (2, 4, 8, 8).", err(function() local y = c(cell.ones({ 2, 4, 8, 8 })) return y end))
      H.expect_error(function() c(cell.ones({ 3, 8, 8 })) end, "ValueError", "4-D", "(3, 8, 8)")
      local v = nn.Conv2d(3, 2, 5, { pad_mode = "valid" })
      H.expect_error(function() v(cell.ones({ 1, 3, 4, 8 })) end, "ValueError",
        "the padded input (4, 8) is smaller than the dilated kernel (5, 5)", "(1, 3, 4, 8)")
    end)
  end)
end)
