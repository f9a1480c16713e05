-- vision_bicubic_spec.lua - vision.Inter.BICUBIC (OpenCV's INTER_CUBIC,
-- a = -0.75; src/io/vision_geom.c) in Resize, RandomResizedCrop and
-- RandomRotation, against PyTorch's bicubic and a numpy implementation of
-- the kernel (spec/fixtures/gen_vision_bicubic.py).
local H = require "helpers"
local cell = H.cell
local vision = cell.dataset.vision
local FX = require "fixtures.vision_bicubic_fixtures"

local function max_diff(a, b)
  local fa, fb = H.flatten(a), H.flatten(b)
  assert(#fa == #fb, "sizes differ")
  local m = 0
  for i = 1, #fa do m = math.max(m, math.abs(fa[i] - fb[i])) end
  return m
end

describe("vision.Inter.BICUBIC", function()
  it("names bicubic, as CUBIC does, and the strings work too", function()
    assert.are.equal("bicubic", vision.Inter.BICUBIC)
    assert.are.equal(vision.Inter.BICUBIC, vision.Inter.CUBIC)
    local x = cell.arange(0, 20, 1, cell.float32):reshape({ 4, 5 })
    H.assert_values(vision.Resize({ 3, 7 }, "cubic")(x), vision.Resize({ 3, 7 }, vision.Inter.BICUBIC)(x):totable())
  end)

  for i, c in ipairs(FX.resize) do
    it(("Resize matches F.interpolate bicubic: %s to %dx%d #%d"):format(c.dtype, c.size[1], c.size[2], i), function()
      local x = cell.tensor(c.input, cell[c.dtype])
      local y = vision.Resize(c.size, vision.Inter.BICUBIC)(x)
      assert.are.equal(c.dtype, y.dtype.name)
      H.assert_shape(y, H.shape_of(c.output))
      if c.dtype == "uint8" then
        -- rounded to nearest and saturated (overshoot past 0 and 255 clips); a .5 tie may land either way
        assert.is_true(max_diff(y:totable(), c.output) <= 1)
      else
        H.assert_close(y, c.output, 1e-4)
      end
    end)
  end

  it("overshoots on float images (no clamping) and saturates uint8", function()
    local f = cell.tensor({ { 0, 0, 1, 1 } }, cell.float32)
    local y = vision.Resize({ 1, 8 }, vision.Inter.BICUBIC)(f):totable()[1]
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(y) do lo, hi = math.min(lo, v), math.max(hi, v) end
    assert.is_true(lo < 0 and hi > 1)
    local u = vision.Resize({ 1, 8 }, vision.Inter.BICUBIC)(cell.tensor({ { 0, 0, 255, 255 } }, cell.uint8))
    local t = u:totable()[1]
    assert.are.equal(0, t[1])
    assert.are.equal(255, t[8])
  end)

  it("keeps an image resized to its own size", function()
    local x = cell.tensor({ { 1, 5, 2 }, { 7, 3, 9 } }, cell.float32)
    H.assert_close(vision.Resize({ 2, 3 }, vision.Inter.BICUBIC)(x), x:totable(), 1e-6)
  end)

  for _, c in ipairs(FX.rotation) do
    it(("RandomRotation matches grid_sample bicubic at %g degrees (%dx%d)"):format(c.degrees, #c.input,
      #c.input[1]), function()
      local x = cell.tensor(c.input, cell.float32)
      local y = vision.RandomRotation({ c.degrees, c.degrees }, { resample = vision.Inter.BICUBIC })(x)
      H.assert_close(y, c.output, 1e-4)
    end)
  end

  it("RandomResizedCrop of the whole image is Resize bicubic", function()
    local x = cell.arange(0, 48, 1, cell.float32):reshape({ 6, 8 })
    local op = vision.RandomResizedCrop({ 3, 5 }, { scale = { 1, 1 }, ratio = { 8 / 6, 8 / 6 },
      interpolation = vision.Inter.BICUBIC })
    H.assert_values(op(x), vision.Resize({ 3, 5 }, vision.Inter.BICUBIC)(x):totable())
  end)

  it("refuses an unknown interpolation, naming it", function()
    H.expect_error(function() vision.RandomRotation(10, { resample = "lanczos" }) end, "ValueError",
      "RandomRotation", "interpolation", "'lanczos'")
  end)
end)
