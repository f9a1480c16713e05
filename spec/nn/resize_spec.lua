-- resize_spec.lua - cell.ops.pixel_shuffle/pixel_unshuffle and the layers
-- nn.Upsample, PixelShuffle, PixelUnshuffle, Identity, Unflatten, ZeroPad2d,
-- ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d (lua/cell/nn/resize.lua):
-- outputs and gradients against PyTorch 1.13 (spec/fixtures/gen_conv_nd.py)
-- and every misuse.
local cell = require "cell"
local H = require "helpers"
local R = require "helpers.conv_nd_runner"
local nn = cell.nn
local ops = cell.ops

--- The layer a padding case stands for.
local function pad_layer(c)
  local nd = math.floor(#c.pads / 2)
  if c.mode == "constant" then return nn["ConstantPad" .. nd .. "d"](c.pads, c.value) end
  if c.mode == "reflect" then return nn["ReflectionPad" .. nd .. "d"](c.pads) end
  return nil
end

describe("resizing", function()
  for _, c in ipairs(R.fixtures.resize) do
    for _, d in ipairs(R.dtypes) do
      if c.op ~= "pad" then
        it(c.name .. " (" .. d[1] .. ")", function()
          R.check(c, d[1], d[2], { "x" }, function(a) return ops[c.op](a[1], c.factor) end)
          local cls = c.op == "pixel_shuffle" and nn.PixelShuffle or nn.PixelUnshuffle
          R.check(c, d[1], d[2], { "x" }, function(a) return cls(c.factor)(a[1]) end)
        end)
      elseif pad_layer(c) then
        it(c.name .. " (" .. d[1] .. ")", function()
          local layer = pad_layer(c)
          R.check(c, d[1], d[2], { "x" }, function(a) return layer(a[1]) end)
        end)
      else
        it(c.name .. " through the padding modes of conv_ops (" .. d[1] .. ")", function()
          local C = require "cell.conv_ops"
          local nd = math.floor(#c.pads / 2)
          local pads = {}
          for i = 1, nd do
            local src = nd - i + 1
            pads[2 * i - 1], pads[2 * i] = c.pads[2 * src - 1], c.pads[2 * src]
          end
          R.check(c, d[1], d[2], { "x" }, function(a) return C._pad_mode("pad", a[1], nd, pads, c.mode) end)
        end)
      end
    end
  end

  it("ZeroPad2d pads with zeros, {left, right, top, bottom}", function()
    local y = nn.ZeroPad2d({ 1, 0, 0, 1 })(cell.tensor({ { { 1, 2 }, { 3, 4 } } }))
    H.assert_close(y, { { { 0, 1, 2 }, { 0, 3, 4 }, { 0, 0, 0 } } }, 0)
    H.assert_shape(nn.ZeroPad2d(2)(cell.randn({ 1, 1, 2, 3 })), { 1, 1, 6, 7 })
    assert.are.equal("padding=(1, 0, 0, 1)", nn.ZeroPad2d({ 1, 0, 0, 1 }):extend_repr())
  end)

  it("Upsample is cell.ops.interpolate as a cell", function()
    local x = cell.randn({ 1, 2, 3, 4 })
    H.assert_close(nn.Upsample { scale_factor = 2 }(x), ops.interpolate(x, { scale_factor = 2 }):totable(), 0)
    local up = nn.Upsample { size = { 5, 7 }, mode = "bilinear", align_corners = true }
    H.assert_close(up(x), ops.interpolate(x, { size = { 5, 7 }, mode = "bilinear", align_corners = true }):totable(),
      1e-6)
    H.assert_shape(up(x), { 1, 2, 5, 7 })
    assert.are.equal("size=(5, 7), mode=bilinear", up:extend_repr())
  end)

  it("Identity returns its input; Unflatten splits one axis", function()
    local x = cell.randn({ 2, 12 })
    assert.are.equal(x, nn.Identity()(x))
    H.assert_shape(nn.Unflatten(2, { 3, 4 })(x), { 2, 3, 4 })
    H.assert_shape(nn.Unflatten(-1, { 2, -1, 3 })(x), { 2, 2, 2, 3 })
    H.assert_close(nn.Unflatten(2, { 3, 4 })(x):reshape({ 2, 12 }), x:totable(), 0)
    assert.are.equal("axis=2, unflattened_size=(3, 4)", nn.Unflatten(2, { 3, 4 }):extend_repr())
  end)

  it("raises a clear error for each misuse", function()
    H.expect_error(function() ops.pixel_shuffle(cell.randn({ 1, 6, 2, 2 }), 2) end, "ValueError", "divisible")
    H.expect_error(function() ops.pixel_shuffle(cell.randn({ 4, 2 }), 2) end, "ValueError", "at least 3")
    H.expect_error(function() ops.pixel_unshuffle(cell.randn({ 1, 1, 3, 4 }), 2) end, "ValueError", "divisible")
    H.expect_error(function() nn.PixelShuffle(0) end, "ValueError", "upscale_factor")
    H.expect_error(function() nn.PixelUnshuffle(-1) end, "ValueError", "downscale_factor")
    H.expect_error(function() nn.ReflectionPad1d(3)(cell.randn({ 1, 1, 3 })) end, "ValueError", "less than")
    H.expect_error(function() nn.ReflectionPad2d({ 1, -1, 0, 0 }) end, "ValueError", "non-negative")
    H.expect_error(function() nn.ConstantPad2d({ 1, 1 }, 0) end, "ValueError", "4 integers")
    H.expect_error(function() nn.ConstantPad1d(1) end, "TypeError", "value")
    H.expect_error(function() nn.ConstantPad3d(1, 0)(cell.randn({ 2, 2, 2 })) end, "ValueError", "at least 4")
    H.expect_error(function() nn.ZeroPad2d("x") end, "TypeError", "padding")
    H.expect_error(function() nn.Upsample() end, "ValueError", "size")
    H.expect_error(function() nn.Upsample { size = 2, scale_factor = 2 } end, "ValueError", "only one")
    H.expect_error(function() nn.Upsample { size = 2, mode = "area" } end, "ValueError", "mode")
    H.expect_error(function() nn.Unflatten(2, { 5, 4 })(cell.randn({ 2, 12 })) end, "ValueError", "product")
    H.expect_error(function() nn.Unflatten(4, { 3, 4 })(cell.randn({ 2, 12 })) end, "IndexError", "axis")
    H.expect_error(function() nn.Unflatten(2, { -1, -1 }) end, "ValueError", "-1")
    H.expect_error(function() nn.Unflatten(2, { 0, 3 }) end, "ValueError", "unflattened_size")
    H.expect_error(function() nn.Unflatten(1e300, { 3 }) end, "TypeError", "axis")
    H.expect_error(function() nn.ConstantPad1d(1e300, 0) end, "ValueError", "out of range")
  end)
end)
