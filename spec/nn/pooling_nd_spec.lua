-- pooling_nd_spec.lua - cell.ops.max_pool1d/3d, avg_pool1d/3d, the adaptive
-- poolings and the layers nn.MaxPool1d, AvgPool1d, MaxPool3d, AvgPool3d,
-- AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d (lua/cell/conv_ops.lua,
-- lua/cell/nn/pooling_nd.lua): outputs, indices and input gradients against
-- PyTorch 1.13 (spec/fixtures/gen_conv_nd.py), MindSpore's pad modes, and
-- every misuse.
local cell = require "cell"
local H = require "helpers"
local R = require "helpers.conv_nd_runner"
local nn = cell.nn
local ops = cell.ops

local function call_of(c)
  if c.op:find("^adaptive") then
    if c.idx then return function(a) return ops[c.op](a[1], c.output_size, true) end end
    return function(a) return ops[c.op](a[1], c.output_size) end
  end
  return function(a) return ops[c.op](a[1], c.kernel, c.opts) end
end

describe("cell.ops N-d pooling", function()
  for _, c in ipairs(R.fixtures.pool) do
    for _, d in ipairs(R.dtypes) do
      it(c.name .. " (" .. d[1] .. ")", function() R.check(c, d[1], d[2], { "x" }, call_of(c)) end)
    end
  end

  it("takes unbatched inputs", function()
    local x = cell.randn({ 2, 3, 4, 5 })
    H.assert_close(ops.max_pool3d(x, 2), ops.max_pool3d(x:unsqueeze(1), 2):squeeze(1):totable(), 0)
    H.assert_close(ops.adaptive_avg_pool2d(x:select(1, 1), 2),
      ops.adaptive_avg_pool2d(x:narrow(1, 1, 1), 2):squeeze(1):totable(), 1e-6)
  end)

  it("raises a clear error for each misuse", function()
    H.expect_error(function() ops.max_pool1d(cell.randn({ 3 }), 2) end, "ValueError", "2-D or 3-D")
    H.expect_error(function() ops.avg_pool3d(cell.randn({ 1, 2, 3 }), 2) end, "ValueError", "4-D or 5-D")
    H.expect_error(function() ops.max_pool1d(cell.randn({ 1, 2, 3 }), 5) end, "ValueError", "smaller than the kernel")
    H.expect_error(function() ops.max_pool1d(cell.randn({ 1, 2, 8 }), 3, { padding = 2 }) end, "ValueError",
      "at most half")
    H.expect_error(function() ops.avg_pool1d(cell.randn({ 1, 2, 8 }), 0) end, "ValueError", "kernel_size")
    H.expect_error(function() ops.avg_pool1d(cell.randn({ 1, 2, 8 }), 2, { stride = -1 }) end, "ValueError", "stride")
    H.expect_error(function() ops.adaptive_avg_pool2d(cell.randn({ 1, 2, 8 }), { 2, 2, 2 }) end, "ValueError",
      "output_size")
    H.expect_error(function() ops.adaptive_max_pool1d(cell.randn({ 1, 2, 8 }), 0) end, "ValueError", "output_size")
    H.expect_error(function() ops.adaptive_max_pool2d(cell.randn({ 8 }), 2) end, "ValueError", "3-D or 4-D")
    H.expect_error(function() ops.adaptive_avg_pool1d(cell.randn({ 1, 2, 8 }), 2 ^ 40) end, "ValueError", "too large")
    H.expect_error(function() ops.max_pool1d(cell.randn({ 1, 2, 8 }), 2, { ceil_mode = 1 }) end, "TypeError",
      "ceil_mode")
    H.expect_error(function() ops.max_pool1d(cell.randn({ 1, 2, 8 }), 2, "x") end, "TypeError", "options")
  end)
end)

describe("nn N-d pooling layers", function()
  local x1 = cell.tensor({ { { 1, 5, 2, 8, 3, 0, 7 } } })

  it("MaxPool1d and AvgPool1d follow MindSpore's pad modes", function()
    H.assert_close(nn.MaxPool1d(2, 2)(x1), { { { 5, 8, 3 } } }, 0)
    H.assert_close(nn.MaxPool1d(2, 2, "same")(x1), { { { 5, 8, 3, 7 } } }, 0)
    H.assert_close(nn.AvgPool1d(2, 2, "same")(x1), { { { 3, 5, 1.5, 7 } } }, 1e-6)
    H.assert_close(nn.AvgPool1d { kernel_size = 3, stride = 2, pad_mode = "pad", padding = 1 }(x1),
      { { { 2, 5, 11 / 3, 7 / 3 } } }, 1e-6)
    H.assert_close(nn.AvgPool1d { kernel_size = 3, stride = 2, pad_mode = "pad", padding = 1,
      count_include_pad = false }(x1), { { { 3, 5, 11 / 3, 3.5 } } }, 1e-6)
    local y, i = nn.MaxPool1d { kernel_size = 3, stride = 2, pad_mode = "pad", padding = 1, return_indices = true }(x1)
    H.assert_close(y, { { { 5, 8, 8, 7 } } }, 0)
    H.assert_close(i, { { { 2, 4, 4, 7 } } }, 0)
    H.assert_shape(nn.MaxPool1d(3, 1)(cell.randn({ 2, 7 })), { 2, 5 })
  end)

  for _, c in ipairs(R.fixtures.pool) do
    if c.op == "max_pool3d" or c.op == "avg_pool3d" then
      it("the layer matches " .. c.name, function()
        local o = { kernel_size = c.kernel, stride = c.opts.stride or c.kernel, pad_mode = "pad",
          padding = c.opts.padding, ceil_mode = c.opts.ceil_mode }
        local cls = c.op == "max_pool3d" and "MaxPool3d" or "AvgPool3d"
        if cls == "MaxPool3d" then
          o.dilation, o.return_indices = c.opts.dilation, true
        else
          o.count_include_pad, o.divisor_override = c.opts.count_include_pad, c.opts.divisor_override
        end
        local layer = nn[cls](o)
        R.check(c, "float64", 1e-10, { "x" }, function(a) return layer(a[1]) end)
      end)
    end
  end

  it("MaxPool3d and AvgPool3d pad 'same'", function()
    local x = cell.randn({ 1, 2, 5, 6, 7 }, cell.float64)
    local y = nn.MaxPool3d(3, 2, "same")(x)
    H.assert_shape(y, { 1, 2, 3, 3, 4 })
    -- same: pads {1, 1} for 5, {0, 1} for 6 ... with -inf, so equal to explicit -inf padding
    local xp = x:pad({ 1, 1, 0, 1, 1, 1 }, -math.huge)
    H.assert_close(y, ops.max_pool3d(xp, 3, { stride = 2 }):totable(), 0)
    local a = nn.AvgPool3d(2, 2, "same")(x)
    H.assert_shape(a, { 1, 2, 3, 3, 4 })
    H.assert_close(a:select(3, 3):select(3, 1):select(3, 4), x:narrow(3, 5, 1):narrow(4, 1, 2):narrow(5, 7, 1)
      :mean({ 3, 4, 5 }):totable(), 1e-12)
  end)

  for _, c in ipairs(R.fixtures.pool) do
    if c.op:find("^adaptive") then
      it("the layer matches " .. c.name, function()
        local cls = ({ adaptive_avg_pool1d = "AdaptiveAvgPool1d", adaptive_avg_pool2d = "AdaptiveAvgPool2d",
          adaptive_avg_pool3d = "AdaptiveAvgPool3d", adaptive_max_pool1d = "AdaptiveMaxPool1d",
          adaptive_max_pool2d = "AdaptiveMaxPool2d" })[c.op]
        local layer = nn[cls](c.output_size, c.idx and true or nil)
        R.check(c, "float64", 1e-10, { "x" }, function(a) return layer(a[1]) end)
      end)
    end
  end

  it("AdaptiveAvgPool2d keeps a dimension given as false (MindSpore's None)", function()
    H.assert_shape(nn.AdaptiveAvgPool2d({ false, 2 })(cell.randn({ 1, 3, 5, 6 })), { 1, 3, 5, 2 })
    assert.are.equal("output_size=(3, 4), return_indices=false", nn.AdaptiveMaxPool2d({ 3, 4 }):extend_repr())
  end)

  it("raises a clear error for each misuse", function()
    H.expect_error(function() nn.MaxPool1d(2, 1, "full") end, "ValueError", "pad_mode")
    H.expect_error(function() nn.MaxPool1d(2, 1, "valid", 1) end, "ValueError", "padding")
    H.expect_error(function() nn.MaxPool3d { kernel_size = 2, dilation = 2 } end, "ValueError", "pad_mode")
    H.expect_error(function() nn.MaxPool3d(-2) end, "ValueError", "kernel_size")
    H.expect_error(function() nn.AvgPool3d { kernel_size = 2, divisor_override = 0 } end, "ValueError",
      "divisor_override")
    H.expect_error(function() nn.AvgPool3d(2)(cell.randn({ 2, 3 })) end, "ValueError", "4-D or 5-D")
    H.expect_error(function() nn.AdaptiveAvgPool3d({ 1, 2 }) end, "ValueError", "output_size")
    H.expect_error(function() nn.AdaptiveMaxPool1d(-1) end, "ValueError", "output_size")
    H.expect_error(function() nn.AdaptiveMaxPool2d() end, "TypeError", "output_size")
  end)
end)
