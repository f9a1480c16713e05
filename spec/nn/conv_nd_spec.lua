-- conv_nd_spec.lua - cell.ops.conv1d/conv3d/conv_transpose1d/2d/3d and the
-- layers nn.Conv1d, Conv3d, Conv1dTranspose, Conv2dTranspose,
-- Conv3dTranspose (lua/cell/conv_ops.lua, lua/cell/nn/conv_nd.lua): outputs
-- and gradients against PyTorch 1.13 (spec/fixtures/gen_conv_nd.py) in
-- float32 and float64, MindSpore's pad modes and output shapes, float64
-- gradchecks, and every misuse.
local cell = require "cell"
local H = require "helpers"
local gradcheck = require "helpers.gradcheck"
local R = require "helpers.conv_nd_runner"
local nn = cell.nn
local ops = cell.ops
local f64 = cell.float64

describe("cell.ops N-d convolution", function()
  for _, c in ipairs(R.fixtures.conv) do
    for _, d in ipairs(R.dtypes) do
      it(c.name .. " (" .. d[1] .. ")", function()
        local names = c.b and { "x", "w", "b" } or { "x", "w" }
        R.check(c, d[1], d[2], names, function(a) return ops[c.op](a[1], a[2], a[3], c.opts) end)
      end)
    end
  end

  it("takes pad_mode 'same' and 'valid' too", function()
    local x, w = cell.randn({ 1, 2, 7 }), cell.randn({ 3, 2, 3 })
    H.assert_shape(ops.conv1d(x, w, { pad_mode = "same", stride = 2 }), { 1, 3, 4 })
    H.assert_shape(ops.conv1d(x, w, { pad_mode = "valid" }), { 1, 3, 5 })
    H.assert_shape(ops.conv3d(cell.randn({ 1, 1, 4, 5, 6 }), cell.randn({ 2, 1, 3, 3, 3 }), { pad_mode = "same" }),
      { 1, 2, 4, 5, 6 })
  end)

  it("passes float64 gradchecks on tiny sizes", function()
    local cases = {
      { function(a) return ops.conv3d(a[1], a[2], a[3], { stride = 2, padding = 1, dilation = { 1, 1, 2 } }) end,
        { { 1, 2, 3, 3, 4 }, { 2, 2, 2, 2, 2 }, { 2 } }, 2 },
      { function(a) return ops.conv_transpose3d(a[1], a[2], a[3], { stride = 2, output_padding = 1, padding = 1 }) end,
        { { 1, 2, 2, 2, 2 }, { 2, 1, 2, 2, 2 }, { 1 } }, 1 },
      { function(a) return ops.conv_transpose1d(a[1], a[2], a[3], { stride = 3, dilation = 2, groups = 2 }) end,
        { { 1, 2, 3 }, { 2, 1, 2 }, { 2 } }, 1 },
    }
    for _, c in ipairs(cases) do
      local args = {}
      for i, s in ipairs(c[2]) do args[i] = cell.randn(s, f64) end
      gradcheck(function(x, w, b) return c[1]({ x, w, b }) end, args)
    end
  end)

  it("raises a clear error for each misuse", function()
    local x, w = cell.randn({ 1, 4, 6 }), cell.randn({ 2, 2, 3 })
    H.expect_error(function() ops.conv1d(cell.randn({ 4, 6 }), w) end, "ValueError", "3-D", "(4, 6)")
    H.expect_error(function() ops.conv1d(x, cell.randn({ 2, 2, 3, 1 })) end, "ValueError", "weight must be 3-D")
    H.expect_error(function() ops.conv1d(x, w) end, "ValueError", "input channels 4")
    H.expect_error(function() ops.conv1d(x, cell.randn({ 3, 2, 3 }), { groups = 2 }) end, "ValueError",
      "divisible by groups")
    H.expect_error(function() ops.conv1d(x, w, { groups = 2, padding = -1 }) end, "ValueError", "padding")
    H.expect_error(function() ops.conv1d(x, w, { groups = 2, stride = 0 }) end, "ValueError", "stride")
    H.expect_error(function() ops.conv1d(x, w, { groups = 2, pad_mode = "full" }) end, "ValueError", "pad_mode")
    H.expect_error(function() ops.conv1d(x, cell.randn({ 2, 2, 9 }), { groups = 2 }) end, "ValueError",
      "smaller than the dilated kernel")
    H.expect_error(function() ops.conv3d(x, w) end, "ValueError", "5-D")
    H.expect_error(function() ops.conv1d("x", w) end, "TypeError", "Tensor")
    H.expect_error(function() ops.conv_transpose2d(cell.randn({ 1, 2, 3, 3 }), cell.randn({ 2, 1, 3, 3 }),
      { stride = 2, output_padding = 2 }) end, "ValueError", "output_padding")
    H.expect_error(function() ops.conv_transpose1d(cell.randn({ 1, 3, 3 }), cell.randn({ 2, 1, 3 })) end,
      "ValueError", "input channels 3")
    H.expect_error(function() ops.conv_transpose1d(cell.randn({ 1, 2, 1 }), cell.randn({ 2, 1, 1 }),
      { padding = 1 }) end, "ValueError", "not positive")
  end)
end)

describe("nn N-d convolution layers", function()
  for _, c in ipairs(R.fixtures.layers) do
    for _, d in ipairs(R.dtypes) do
      it(c.name .. " (" .. d[1] .. ")", function()
        local o = {}
        for k, v in pairs(c.opts) do o[k] = v end
        o.weight_init = R.tensor(c.w, d[1])
        if c.b then o.bias_init = R.tensor(c.b, d[1]) end
        o.dtype = cell[d[1]]
        local layer = nn[c.cls](c.in_channels, c.out_channels, c.kernel_size, o)
        local x = R.x(c, d[1])
        local y = layer(x)
        H.assert_close(y, c.y, d[2], c.name .. " y")
        local gy = R.tensor(c.gy, d[1])
        local params = layer:trainable_params()
        local g = cell.grad(function(a) return (layer(a) * gy):sum() end, 1, params)(x)
        H.assert_close(g[1], c.gx, d[2], "gx")
        H.assert_close(g[2][1], c.gw, d[2], "gw")
        if c.b then H.assert_close(g[2][2], c.gb, d[2], "gb") end
      end)
    end
  end

  it("has MindSpore's parameter names, shapes and output shapes", function()
    local c = nn.Conv2dTranspose(4, 6, 3, { group = 2, has_bias = true })
    assert.are.same({ "weight", "bias" }, c:state_dict():keys())
    H.assert_shape(c.weight, { 4, 3, 3, 3 })
    H.assert_shape(c(cell.randn({ 1, 4, 5, 7 })), { 1, 6, 5, 7 })
    H.assert_shape(nn.Conv2dTranspose(4, 6, 3, { stride = 2 })(cell.randn({ 1, 4, 5, 7 })), { 1, 6, 10, 14 })
    H.assert_shape(nn.Conv2dTranspose(4, 6, 3, { stride = 2, pad_mode = "valid" })(cell.randn({ 1, 4, 5, 7 })),
      { 1, 6, 11, 15 })
    H.assert_shape(nn.Conv1d(3, 5, 3, { stride = 2 })(cell.randn({ 2, 3, 9 })), { 2, 5, 5 })
    H.assert_shape(nn.Conv3d(1, 2, 3)(cell.randn({ 1, 1, 4, 5, 6 })).weight or nn.Conv3d(1, 2, 3).weight,
      { 2, 1, 3, 3, 3 })
    H.assert_shape(nn.Conv3dTranspose(2, 4, 2, { stride = 2, group = 2 }).weight, { 2, 2, 2, 2, 2 })
    local depthwise = nn.Conv1d(4, 4, 3, { group = 4 })
    H.assert_shape(depthwise.weight, { 4, 1, 3 })
    assert.are.equal("input_channels=2, output_channels=4, kernel_size=(3, 3), stride=(2, 2), pad_mode=pad, "
      .. "padding=1, output_padding=1, dilation=(1, 1), group=1, has_bias=false, weight_init=zeros, bias_init=nil",
      nn.Conv2dTranspose(2, 4, 3, { stride = 2, pad_mode = "pad", padding = 1, output_padding = 1,
        weight_init = "zeros" }):extend_repr())
  end)

  it("raises a clear error for each misuse", function()
    H.expect_error(function() nn.Conv1d(3, 4, 3, { group = 2 }) end, "ValueError", "in_channels", "group")
    H.expect_error(function() nn.Conv3d(4, 3, 3, { group = 2 }) end, "ValueError", "out_channels", "group")
    H.expect_error(function() nn.Conv1d(2, 2, 3, { pad_mode = "full" }) end, "ValueError", "pad_mode")
    H.expect_error(function() nn.Conv1d(2, 2, 3, { padding = 1 }) end, "ValueError", "pad_mode")
    H.expect_error(function() nn.Conv3d(2, 2, 3, { pad_mode = "pad", padding = { 1, 1 } }) end, "ValueError",
      "6 integers")
    H.expect_error(function() nn.Conv1d(2, 2, 3, { pad_mode = "pad", padding = -1 }) end, "ValueError", "padding")
    H.expect_error(function() nn.Conv1d(2, 2, -3) end, "ValueError", "kernel_size")
    H.expect_error(function() nn.Conv2dTranspose(2, 2, 3, { stride = 2, output_padding = 2 }) end, "ValueError",
      "output_padding")
    H.expect_error(function() nn.Conv2dTranspose(2, 2, 3, { output_padding = 1 }) end, "ValueError",
      "output_padding")
    H.expect_error(function() nn.Conv1d(2, 2, 3)(cell.randn({ 1, 2, 3, 4 })) end, "ValueError", "3-D")
    H.expect_error(function() nn.Conv3d(2, 2, 3)(cell.randn({ 1, 3, 4, 4, 4 })) end, "ValueError", "in_channels (2)")
    H.expect_error(function() nn.Conv1d(2, 2, 3, { weight_init = cell.zeros({ 2, 2, 2 }) }) end, "ValueError",
      "weight_init shape")
  end)
end)
