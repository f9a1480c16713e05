-- vision_spec.lua - cell.dataset.vision (lua/cell/dataset/vision.lua, the C
-- transforms of src/io/vision_*.c and the decoders of src/io/image.c):
-- each transform against PyTorch / numpy / Pillow references
-- (spec/fixtures/gen_vision.py) or by hand; determinism for a seed; errors.
local H = require "helpers"
local cell = H.cell
local vision = cell.dataset.vision
local FX = require "fixtures.vision_fixtures"

local IMAGES = "spec/fixtures/images"

local function dtype(name) return cell[name] end

--- The largest |a - b| over two nested tables of one shape.
local function max_diff(a, b)
  local fa, fb = H.flatten(a), H.flatten(b)
  assert(#fa == #fb, "sizes differ")
  local m = 0
  for i = 1, #fa do m = math.max(m, math.abs(fa[i] - fb[i])) end
  return m
end

describe("vision.Decode and read_image", function()
  for _, c in ipairs(FX.decode) do
    it("decodes " .. c.name .. " to RGB uint8 as Pillow does", function()
      local img = vision.read_image(IMAGES .. "/decode/" .. c.name)
      assert.are.equal("uint8", img.dtype.name)
      H.assert_shape(img, H.shape_of(c.output))
      H.assert_values(img, c.output)
    end)
  end

  it("Decode() turns file bytes (a uint8 tensor) into the image; decode_image takes a string", function()
    local f = assert(io.open(IMAGES .. "/decode/rgb.png", "rb"))
    local bytes = f:read("*a")
    f:close()
    local t = cell.tensor({ bytes:byte(1, -1) }, cell.uint8)
    local ref = FX.decode[1].output
    H.assert_values(vision.Decode()(t), ref)
    H.assert_values(vision.decode_image(bytes), ref)
  end)

  local BAD = {
    { "truncated.png", "RuntimeError", "corrupt PNG image" },
    { "header_only.png", "RuntimeError", "corrupt PNG image" },
    { "bad_crc.png", "RuntimeError", "corrupt PNG image" },
    { "truncated.jpg", "RuntimeError", "corrupt JPEG image" },
    { "truncated_scan.jpg", "RuntimeError", "corrupt JPEG image: Premature end of JPEG file" },
    { "garbage.jpg", "RuntimeError", "corrupt JPEG image" },
    { "text.png", "RuntimeError", "not a PNG or JPEG image" },
    { "empty.png", "RuntimeError", "the image is empty" },
    { "huge.png", "ValueError", "60000 x 60000 pixels" },
  }
  for _, b in ipairs(BAD) do
    it("names the file of a bad image: " .. b[1], function()
      local path = IMAGES .. "/bad/" .. b[1]
      H.expect_error(function() vision.read_image(path) end, b[2], "Decode: " .. path, b[3])
    end)
  end

  it("refuses a missing file, a folder and a wrong input", function()
    H.expect_error(function() vision.read_image(IMAGES .. "/nope.png") end, "ValueError", "nope.png")
    H.expect_error(function() vision.read_image(IMAGES) end, "ValueError", "not a regular file")
    H.expect_error(function() vision.Decode()(cell.zeros({ 2, 2 })) end, "TypeError", "Decode", "1-D uint8")
    H.expect_error(function() vision.read_image(3) end, "TypeError", "read_image", "path")
  end)
end)

describe("vision.Resize", function()
  for i, c in ipairs(FX.resize) do
    local what = ("%s %s to %s"):format(c.dtype, c.mode, type(c.size) == "table" and table.concat(c.size, "x") or c.size)
    it("matches F.interpolate (align_corners=False): " .. what .. " #" .. i, function()
      local x = cell.tensor(c.input, dtype(c.dtype))
      local y = vision.Resize(c.size, c.mode == "nearest" and vision.Inter.NEAREST or vision.Inter.LINEAR)(x)
      assert.are.equal(c.dtype, y.dtype.name)
      H.assert_shape(y, H.shape_of(c.output))
      if c.dtype == "uint8" and c.mode == "bilinear" then
        -- the float result rounded to nearest; a .5 tie may land either way
        assert.is_true(max_diff(y:totable(), c.output) <= 1)
      else
        H.assert_close(y, c.output, 1e-5)
      end
    end)
  end

  it("resizes the shorter edge for a single size, keeping the ratio (rounded down)", function()
    H.assert_shape(vision.Resize(4)(cell.zeros({ 6, 9, 3 }, cell.uint8)), { 4, 6, 3 })
    H.assert_shape(vision.Resize(5)(cell.zeros({ 9, 7 })), { 6, 5 })
    H.assert_shape(vision.Resize({ 2, 3 })(cell.zeros({ 9, 7, 1 })), { 2, 3, 1 })
  end)

  it("leaves a same-size image unchanged", function()
    local x = cell.tensor(H.pattern({ 3, 4, 2 }, 0, 200), cell.uint8)
    H.assert_values(vision.Resize({ 3, 4 })(x), x:totable())
  end)

  it("checks its arguments and the image", function()
    H.expect_error(function() vision.Resize(0) end, "ValueError", "Resize", "size must be positive")
    H.expect_error(function() vision.Resize("a") end, "TypeError", "Resize", "size")
    H.expect_error(function() vision.Resize(3, "area") end, "ValueError", "Resize",
      "interpolation must be vision.Inter.NEAREST, BILINEAR or BICUBIC, but got 'area'")
    H.expect_error(function() vision.Resize(3)(cell.zeros({ 2, 2, 2, 2 })) end, "ValueError",
      "Resize: the image must have shape <H, W> or <H, W, C>, but got (2, 2, 2, 2)")
    H.expect_error(function() vision.Resize(3)(cell.zeros({ 2, 2 }, cell.float16)) end, "TypeError", "Resize",
      "Float16")
  end)
end)

describe("vision.RandomCrop", function()
  for _, c in ipairs(FX.pad) do
    it(("pads as numpy.pad (%s, %s) when the crop is the padded size"):format(c.mode, table.concat(c.padding, ",")),
      function()
        local x = cell.tensor(c.input, cell.uint8)
        local sh = H.shape_of(c.output)
        local op = vision.RandomCrop({ sh[1], sh[2] }, { padding = c.padding, padding_mode = c.mode, fill_value = 7 })
        H.assert_values(op(x), c.output)
      end)
  end

  it("takes a window of the image at a random place, covering every place", function()
    local x = cell.arange(0, 20, 1, cell.float32):reshape({ 4, 5 })
    local seen = {}
    cell.set_seed(3)
    for _ = 1, 200 do
      local y = vision.RandomCrop({ 2, 3 })(x)
      H.assert_shape(y, { 2, 3 })
      local t = y:totable()
      local r, c = math.floor(t[1][1] / 5), t[1][1] % 5
      -- the window is the image's block at (r, c)
      for i = 1, 2 do
        for j = 1, 3 do assert.are.equal((r + i - 1) * 5 + c + j - 1, t[i][j]) end
      end
      seen[r * 10 + c] = true
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.are.equal(3 * 3, n)
  end)

  it("pads both sides by the shortfall with pad_if_needed", function()
    local x = cell.ones({ 2, 2, 1 }, cell.uint8)
    local y = vision.RandomCrop({ 6, 2 }, { pad_if_needed = true, fill_value = 9 })(x)
    H.assert_shape(y, { 6, 2, 1 })
    local sum = y:astype(cell.int64):sum():item()
    -- 4 ones of the image and 8 fills of 9: the padded image is 10 x 2 (4 rows above, 4 below)
    assert.are.equal(4 + 8 * 9, sum)
  end)

  it("fills each channel with its own value", function()
    local y = vision.RandomCrop(3, { padding = 1, fill_value = { 1, 2, 3 } })(cell.zeros({ 1, 1, 3 }, cell.uint8))
    H.assert_values(y, { { { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 } }, { { 1, 2, 3 }, { 0, 0, 0 }, { 1, 2, 3 } },
      { { 1, 2, 3 }, { 1, 2, 3 }, { 1, 2, 3 } } })
  end)

  it("is a named error when the crop does not fit", function()
    H.expect_error(function() vision.RandomCrop(5)(cell.zeros({ 4, 4, 3 })) end, "ValueError",
      "RandomCrop: the crop size (5, 5) is larger than the image size (4, 4)")
    H.expect_error(function() vision.RandomCrop(7, { padding = 1 })(cell.zeros({ 4, 4, 3 })) end, "ValueError",
      "larger than the padded image size (6, 6)")
    H.expect_error(function() vision.RandomCrop(2, { padding = -1 }) end, "ValueError", "padding must not be negative")
    H.expect_error(function() vision.RandomCrop(2, { padding_mode = "wrap" }) end, "ValueError", "padding_mode")
    H.expect_error(function() vision.RandomCrop(2, { padding = { 1, 2, 3 } }) end, "TypeError", "padding")
    H.expect_error(function() vision.RandomCrop(2, { fill = 1 }) end, "TypeError", "fill")
  end)
end)

describe("vision.RandomHorizontalFlip and RandomVerticalFlip", function()
  local img = { { { 1, 2 }, { 3, 4 }, { 5, 6 } }, { { 7, 8 }, { 9, 10 }, { 11, 12 } } } -- 2 x 3 x 2
  it("mirror with prob 1 and leave the image with prob 0", function()
    local x = cell.tensor(img, cell.uint8)
    H.assert_values(vision.RandomHorizontalFlip(1)(x),
      { { { 5, 6 }, { 3, 4 }, { 1, 2 } }, { { 11, 12 }, { 9, 10 }, { 7, 8 } } })
    H.assert_values(vision.RandomVerticalFlip(1)(x),
      { { { 7, 8 }, { 9, 10 }, { 11, 12 } }, { { 1, 2 }, { 3, 4 }, { 5, 6 } } })
    H.assert_values(vision.RandomHorizontalFlip(0)(x), img)
    H.assert_values(vision.RandomVerticalFlip({ prob = 0 })(x), img)
    -- the input is never changed
    H.assert_values(x, img)
  end)

  it("flip about half the time with the default prob 0.5", function()
    local x = cell.tensor({ { 1, 2 } }, cell.float32)
    cell.set_seed(11)
    local flips = 0
    for _ = 1, 400 do
      if vision.RandomHorizontalFlip()(x):totable()[1][1] == 2 then flips = flips + 1 end
    end
    assert.is_true(flips > 150 and flips < 250, "flips: " .. flips)
  end)

  it("check prob", function()
    H.expect_error(function() vision.RandomHorizontalFlip(1.5) end, "ValueError", "prob must be in [0, 1]")
    H.expect_error(function() vision.RandomVerticalFlip("x") end, "TypeError", "prob")
  end)
end)

describe("vision.RandomResizedCrop", function()
  it("is Resize of the whole image when scale and ratio allow only that", function()
    local x = cell.tensor(H.pattern({ 6, 8, 3 }, 0, 255), cell.uint8)
    local op = vision.RandomResizedCrop({ 3, 5 }, { scale = { 1, 1 }, ratio = { 8 / 6, 8 / 6 } })
    H.assert_values(op(x), vision.Resize({ 3, 5 })(x):totable())
  end)

  it("gives the size asked for, from windows inside the image", function()
    local x = cell.arange(0, 100, 1, cell.float32):reshape({ 10, 10 })
    cell.set_seed(5)
    for _ = 1, 30 do
      local y = vision.RandomResizedCrop(4, { interpolation = vision.Inter.NEAREST })(x)
      H.assert_shape(y, { 4, 4 })
      -- nearest picks image pixels: every value is one of the image's, rows increase down
      local t = y:totable()
      for i = 1, 4 do
        for j = 1, 4 do assert.is_true(t[i][j] >= 0 and t[i][j] < 100 and t[i][j] == math.floor(t[i][j])) end
      end
      assert.is_true(t[4][1] >= t[1][1])
    end
  end)

  it("falls back to the centre crop clamped to ratio", function()
    -- ratio 1 only, scale above 1: no attempt fits; the centre square of a 4 x 8 image
    local x = cell.arange(0, 32, 1, cell.float32):reshape({ 4, 8 })
    local y = vision.RandomResizedCrop(4, { scale = { 2, 3 }, ratio = { 1, 1 }, interpolation = "nearest" })(x)
    H.assert_values(y, x[{ {}, { 3, 6 } }]:totable())
  end)

  it("checks scale, ratio and max_attempts", function()
    H.expect_error(function() vision.RandomResizedCrop(4, { scale = { 0.5, 0.1 } }) end, "ValueError", "scale")
    H.expect_error(function() vision.RandomResizedCrop(4, { ratio = { 0, 1 } }) end, "ValueError", "ratio")
    H.expect_error(function() vision.RandomResizedCrop(4, { max_attempts = 0 }) end, "ValueError", "max_attempts")
  end)
end)

describe("vision.Normalize, ToTensor and HWC2CHW", function()
  it("Normalize subtracts and divides per channel, as float32", function()
    local x = cell.tensor({ { { 10, 20 }, { 30, 40 } } }, cell.uint8) -- 1 x 2 x 2 (HWC, 2 channels)
    local y = vision.Normalize({ 10, 20 }, { 2, 4 })(x)
    assert.are.equal("float32", y.dtype.name)
    H.assert_close(y, { { { 0, 0 }, { 10, 5 } } })
    -- CHW
    local z = vision.Normalize({ 1, 2 }, { 1, 2 }, false)(cell.tensor({ { { 1, 3 } }, { { 2, 6 } } }))
    H.assert_close(z, { { { 0, 2 } }, { { 0, 2 } } })
    -- one mean for a one-channel image
    H.assert_close(vision.Normalize(0.5, 0.25)(cell.tensor({ { 1, 0 } })), { { 2, -2 } })
  end)

  it("Normalize checks its arguments against the image", function()
    H.expect_error(function() vision.Normalize({ 1, 2, 3 }, { 1, 1, 1 })(cell.zeros({ 2, 2, 2 })) end, "ValueError",
      "Normalize", "has 2 channels", "mean and std have 3")
    H.expect_error(function() vision.Normalize({ 1 }, { 0 }) end, "ValueError", "std[1] must be positive")
    H.expect_error(function() vision.Normalize({ 1, 2 }, { 1 }) end, "ValueError", "same length")
  end)

  it("ToTensor makes CHW float32 in [0, 1]", function()
    local x = cell.tensor({ { { 0, 51 }, { 255, 102 } } }, cell.uint8) -- 1 x 2 x 2
    local y = vision.ToTensor()(x)
    assert.are.equal("float32", y.dtype.name)
    H.assert_close(y, { { { 0, 1 } }, { { 0.2, 0.4 } } })
    H.assert_shape(vision.ToTensor()(cell.zeros({ 3, 4 }, cell.uint8)), { 1, 3, 4 })
    assert.are.equal("float64", vision.ToTensor(cell.float64)(x).dtype.name)
    H.expect_error(function() vision.ToTensor(cell.int32) end, "TypeError", "ToTensor", "float")
  end)

  it("HWC2CHW transposes", function()
    local x = cell.tensor(H.pattern({ 2, 3, 4 }, 0, 99), cell.int32)
    H.assert_values(vision.HWC2CHW()(x), x:permute({ 3, 1, 2 }):totable())
    H.assert_values(vision.HWC2CHW()(cell.tensor({ { 1, 2 } })), { { 1, 2 } })
  end)
end)

describe("vision.Rescale", function()
  it("gives image * rescale + shift as float32, any shape and dtype kept otherwise", function()
    local x = cell.tensor({ { { 10, 20 }, { 30, 40 } }, { { 50, 60 }, { 70, 255 } } }, cell.uint8) -- 2 x 2 x 2
    local y = vision.Rescale(0.5, 1)(x)
    assert.are.equal("float32", y.dtype.name)
    H.assert_shape(y, { 2, 2, 2 })
    H.assert_values(y, { { { 6, 11 }, { 16, 21 } }, { { 26, 31 }, { 36, 128.5 } } })
    -- MindSpore's usual 1 / 255, and a negative shift, on {H, W} float64
    H.assert_close(vision.Rescale { rescale = 1 / 255, shift = 0 }(cell.tensor({ { 0, 51, 255 } }, cell.uint8)),
      { { 0, 0.2, 1 } })
    H.assert_values(vision.Rescale(2, { shift = -0.5 })(cell.tensor({ { 0.25, -1 } }, cell.float64)), { { 0, -2.5 } })
  end)

  it("checks its arguments and the image", function()
    H.expect_error(function() vision.Rescale(0.5) end, "TypeError", "Rescale() missing required argument 'shift'")
    H.expect_error(function() vision.Rescale() end, "TypeError", "missing required argument 'rescale'")
    H.expect_error(function() vision.Rescale("a", 0) end, "TypeError", "Rescale: rescale must be a number", "'a'")
    H.expect_error(function() vision.Rescale(1, 1e39) end, "ValueError", "shift must be within float32's range", "1e+39")
    H.expect_error(function() vision.Rescale(1, 0)(cell.zeros({ 4 })) end, "ValueError", "Rescale",
      "<H, W> or <H, W, C>", "(4,)")
    H.expect_error(function() vision.Rescale(1, 0)(cell.zeros({ 2, 2 }, cell.bool)) end, "TypeError", "Rescale", "Bool")
  end)
end)

describe("vision.CenterCrop", function()
  -- 5 x 5, values 1..25 row by row
  local function grid() return cell.arange(1, 26):reshape({ 5, 5 }):astype(cell.uint8) end

  it("cuts the window at the centre, top and left rounded down", function()
    local y = vision.CenterCrop(3)(grid())
    assert.are.equal("uint8", y.dtype.name)
    H.assert_values(y, { { 7, 8, 9 }, { 12, 13, 14 }, { 17, 18, 19 } })
    -- {h, w}: top (5 - 2) // 2 = 1, left (5 - 4) // 2 = 0
    H.assert_values(vision.CenterCrop({ 2, 4 })(grid()), { { 6, 7, 8, 9 }, { 11, 12, 13, 14 } })
    H.assert_values(vision.CenterCrop({ 4, 2 })(grid()), { { 2, 3 }, { 7, 8 }, { 12, 13 }, { 17, 18 } })
    H.assert_values(vision.CenterCrop(5)(grid()), grid():totable())
    -- HWC: every channel of a pixel moves together
    local rgb = cell.tensor({ { { 1, 2, 3 }, { 4, 5, 6 } }, { { 7, 8, 9 }, { 10, 11, 12 } } }, cell.float32)
    H.assert_values(vision.CenterCrop({ 1, 1 })(rgb), { { { 1, 2, 3 } } })
  end)

  it("pads a smaller image with zeros, (d + 1) // 2 before and d // 2 after, as MindSpore", function()
    local x = cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.float32)
    H.assert_values(vision.CenterCrop(5)(x), {
      { 0, 0, 0, 0, 0 },
      { 0, 0, 0, 0, 0 },
      { 0, 0, 1, 2, 0 },
      { 0, 0, 3, 4, 0 },
      { 0, 0, 0, 0, 0 },
    })
    -- padded in height only, cropped in width: left (2 - 1) // 2 = 0
    H.assert_values(vision.CenterCrop({ 3, 1 })(x), { { 0 }, { 1 }, { 3 } })
    local rgb = cell.full({ 1, 1, 3 }, 9, cell.uint8)
    H.assert_values(vision.CenterCrop({ 1, 2 })(rgb), { { { 0, 0, 0 }, { 9, 9, 9 } } })
  end)

  it("runs in a pipeline's C path", function()
    local imgs = cell.arange(1, 51):reshape({ 2, 5, 5 }):astype(cell.uint8)
    local d = cell.dataset.TensorDataset { imgs, column_names = { "image" } }
      :map(vision.CenterCrop(1), { input_columns = "image", num_parallel_workers = 2 })
    local got = {}
    for t in d:create_tuple_iterator() do got[#got + 1] = t:totable() end
    assert.are.same({ { { 13 } }, { { 38 } } }, got)
  end)

  it("checks the size and the padding", function()
    H.expect_error(function() vision.CenterCrop(0) end, "ValueError", "CenterCrop: size must be positive", "0")
    H.expect_error(function() vision.CenterCrop({ 2, 0 }) end, "ValueError", "CenterCrop: size must be positive")
    H.expect_error(function() vision.CenterCrop({ 2 }) end, "TypeError", "CenterCrop: size must be an integer")
    H.expect_error(function() vision.CenterCrop(2.5) end, "TypeError", "CenterCrop: size")
    -- MindSpore refuses padding of 3 times the image or more: 2 + 6 is too much, 2 + 5 is not
    H.expect_error(function() vision.CenterCrop(8)(cell.zeros({ 2, 2 })) end, "ValueError",
      "CenterCrop: the padding must be less than 3 times the image size", "(8, 8)", "(2, 2)")
    H.assert_shape(vision.CenterCrop(7)(cell.zeros({ 2, 2 })), { 7, 7 })
    H.expect_error(function() vision.CenterCrop(2)(cell.zeros({ 2, 2, 2, 2 })) end, "ValueError", "CenterCrop",
      "<H, W> or <H, W, C>")
  end)
end)

describe("vision.RandomRotation", function()
  for _, c in ipairs(FX.rotation) do
    it(("matches affine_grid + grid_sample at %g degrees (bilinear, %dx%d)"):format(c.degrees, #c.input,
      #c.input[1]), function()
      local x = cell.tensor(c.input, cell.float32)
      local y = vision.RandomRotation({ c.degrees, c.degrees }, { resample = vision.Inter.BILINEAR })(x)
      H.assert_close(y, c.output, 1e-5)
    end)
  end

  it("turns a quarter counter-clockwise exactly, and expands to hold the whole image", function()
    local x = cell.tensor({ { 1, 2 }, { 3, 4 } })
    H.assert_values(vision.RandomRotation({ 90, 90 })(x), { { 2, 4 }, { 1, 3 } })
    H.assert_values(vision.RandomRotation({ 180, 180 })(x), { { 4, 3 }, { 2, 1 } })
    local r = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    H.assert_values(vision.RandomRotation({ 90, 90 }, { expand = true })(r), { { 3, 6 }, { 2, 5 }, { 1, 4 } })
    H.assert_values(vision.RandomRotation({ -90, -90 }, { expand = true })(r), { { 4, 1 }, { 5, 2 }, { 6, 3 } })
  end)

  it("fills what comes from outside the image", function()
    local x = cell.ones({ 2, 4, 3 }, cell.uint8)
    local y = vision.RandomRotation({ 90, 90 }, { fill_value = { 7, 8, 9 } })(x):totable()
    -- the 2 x 4 image turned about its centre covers only the middle two columns
    assert.are.same({ 7, 8, 9 }, y[1][1])
    assert.are.same({ 1, 1, 1 }, y[1][2])
  end)

  it("draws angles within degrees", function()
    local x = cell.tensor({ { 0, 0, 0 }, { 0, 1, 0 }, { 0, 0, 0 } })
    -- any angle keeps the centre pixel where it is
    cell.set_seed(1)
    for _ = 1, 10 do assert.are.equal(1, vision.RandomRotation(45)(x):totable()[2][2]) end
    H.expect_error(function() vision.RandomRotation(-5) end, "ValueError", "degrees")
    H.expect_error(function() vision.RandomRotation({ 5, 1 }) end, "ValueError", "degrees")
    H.expect_error(function() vision.RandomRotation(5, { center = 1 }) end, "TypeError", "center")
  end)
end)

describe("vision.ColorJitter", function()
  local KEYS = { "brightness", "contrast", "saturation", "hue" }
  for i, c in ipairs(FX.jitter) do
    local parts = {}
    for _, k in ipairs(KEYS) do
      if c.factors[k] then parts[#parts + 1] = k .. "=" .. c.factors[k] end
    end
    it(("matches numpy/colorsys for %s on %s #%d"):format(table.concat(parts, " "), c.dtype, i), function()
      local o = {}
      for _, k in ipairs(KEYS) do
        if c.factors[k] then o[k] = { c.factors[k], c.factors[k] } end
      end
      local y = vision.ColorJitter(o)(cell.tensor(c.input, dtype(c.dtype)))
      if c.dtype == "uint8" then
        assert.is_true(max_diff(y:totable(), c.output) <= 1)
      else
        H.assert_close(y, c.output, 1e-5)
      end
    end)
  end

  it("maps single numbers to MindSpore's ranges and checks them", function()
    local x = cell.tensor(H.pattern({ 2, 2, 3 }, 0, 255), cell.uint8)
    H.assert_values(vision.ColorJitter()(x), x:totable())
    H.assert_values(vision.RandomColorAdjust()(x), x:totable())
    H.expect_error(function() vision.ColorJitter({ hue = 0.6 }) end, "ValueError", "hue")
    H.expect_error(function() vision.ColorJitter(-1) end, "ValueError", "brightness")
    H.expect_error(function() vision.ColorJitter({ contrast = { 2, 1 } }) end, "ValueError", "contrast")
    H.expect_error(function() vision.ColorJitter(0.5)(cell.zeros({ 2, 2, 2 })) end, "ValueError",
      "ColorJitter: the image must be RGB with shape <H, W, 3>")
  end)
end)

describe("vision transforms' randomness", function()
  local x = cell.tensor(H.pattern({ 8, 8, 3 }, 0, 255), cell.uint8)
  local ops = {
    vision.RandomCrop(5, { padding = 2 }), vision.RandomResizedCrop(4), vision.RandomRotation(30),
    vision.ColorJitter(0.5, 0.5, 0.5, 0.2), vision.RandomHorizontalFlip(),
  }
  it("repeats for a seed and differs between seeds", function()
    for _, op in ipairs(ops) do
      local function run(seed)
        cell.set_seed(seed)
        local out = {}
        for k = 1, 6 do out[k] = op(x):totable() end
        return out
      end
      local a, b, c = run(42), run(42), run(43)
      assert.are.same(a, b)
      assert.are_not.same(a, c)
    end
  end)

  it("runs in a pipeline the same whatever the number of workers", function()
    local imgs = cell.tensor(H.pattern({ 6, 8, 8, 3 }, 0, 255), cell.uint8)
    local function run(workers)
      cell.dataset.config.set_seed(7)
      local d = cell.dataset.TensorDataset { imgs, column_names = { "image" } }
      d = d:map(ops, { input_columns = "image", num_parallel_workers = workers })
      d = d:map(vision.ToTensor(), { input_columns = "image" })
      local out = {}
      for t in d:create_tuple_iterator() do out[#out + 1] = t:totable() end
      return out
    end
    local a = run(0)
    assert.are.equal(6, #a)
    assert.are.same(a, run(3))
    assert.are.same(a, run(1))
  end)
end)
