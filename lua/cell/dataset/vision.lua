--- cell.dataset.vision: image transforms as MindSpore's
-- mindspore.dataset.vision, and the ImageFolderDataset reader.
--
--     local vision = cell.dataset.vision
--     ds = ds:map({ vision.RandomCrop(28, {padding = 4}), vision.RandomHorizontalFlip(),
--                   vision.ToTensor() }, {input_columns = "image"})
--     vision.Resize(32)(img)    -- any transform, on one image
--
-- Images are HWC ({H, W, C} or {H, W}), uint8 or float, as MindSpore's.
-- Every transform is a C transform (src/io/vision_*.c): a pipeline runs
-- it on its worker threads, and a random one draws from the sample's own
-- stream of (seed, sample), so a seeded pipeline augments the same way for
-- any number of workers. Called directly on a tensor, a random transform
-- draws from cell.set_seed's generator.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name

local M = {}

--- Interpolation modes (MindSpore's Inter): values are also accepted as
-- the strings "nearest", "bilinear" ("linear"), "bicubic" ("cubic").
-- BICUBIC is OpenCV's INTER_CUBIC (a = -0.75), what MindSpore's C++ ops use.
M.Inter = { NEAREST = "nearest", LINEAR = "bilinear", BILINEAR = "bilinear", CUBIC = "bicubic",
  BICUBIC = "bicubic" }
--- Padding modes (MindSpore's Border), or the strings themselves.
M.Border = { CONSTANT = "constant", EDGE = "edge", REFLECT = "reflect", SYMMETRIC = "symmetric" }

local INTER = { nearest = 0, bilinear = 1, linear = 1, bicubic = 2, cubic = 2 }
local BORDER = { constant = 0, edge = 1, reflect = 2, symmetric = 3 }

local is_int = require("cell.util.types").is_int
local FLT_MAX = 3.4028234663852886e38 -- float32's largest finite value

local function show(v)
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  if type(v) == "string" then return "'" .. v .. "'" end
  return type_name(v)
end

--- A size: n (an int, MindSpore's "square" or "shorter edge") or {h, w};
-- returns h, w (w nil for a single int).
local function check_size(fname, v, what)
  what = what or "size"
  if is_int(v) then
    if v < 1 then raise(("ValueError: %s: %s must be positive, but got %s"):format(fname, what, show(v))) end
    return v, nil
  end
  if type(v) == "table" and getmetatable(v) == nil and #v == 2 and is_int(v[1]) and is_int(v[2]) then
    if v[1] < 1 or v[2] < 1 then
      raise(("ValueError: %s: %s must be positive, but got {%d, %d}"):format(fname, what, v[1], v[2]))
    end
    return v[1], v[2]
  end
  raise(("TypeError: %s: %s must be an integer or a list of two integers {height, width}, but got %s")
    :format(fname, what, show(v)))
end

local function check_inter(fname, v, default)
  if v == nil then v = default end
  local k = type(v) == "string" and INTER[v:lower()]
  if not k then
    raise(("ValueError: %s: interpolation must be vision.Inter.NEAREST, BILINEAR or BICUBIC, but got %s")
      :format(fname, show(v)))
  end
  return k
end

local function check_number(fname, what, v)
  if type(v) ~= "number" or v ~= v then
    raise(("TypeError: %s: %s must be a number, but got %s"):format(fname, what, show(v)))
  end
  return v
end

--- A (min, max) range: a pair {lo, hi}, or a number turned into one by `one`.
local function check_range(fname, what, v, one)
  if type(v) == "number" then return one(check_number(fname, what, v)) end
  if type(v) == "table" and getmetatable(v) == nil and #v == 2 then
    local lo, hi = check_number(fname, what, v[1]), check_number(fname, what, v[2])
    if lo > hi then
      raise(("ValueError: %s: %s must be (min, max) with min <= max, but got {%s, %s}"):format(fname, what,
        tostring(lo), tostring(hi)))
    end
    return { lo, hi }
  end
  raise(("TypeError: %s: %s must be a number or a list {min, max}, but got %s"):format(fname, what, show(v)))
end

--- A fill value: one number for every channel, or {r, g, b}.
local function check_fill(fname, v)
  if v == nil then return { 0, 0, 0 } end
  if type(v) == "number" then
    check_number(fname, "fill_value", v)
    return { v, v, v }
  end
  if type(v) == "table" and getmetatable(v) == nil and #v == 3 then
    for i = 1, 3 do check_number(fname, "fill_value", v[i]) end
    return { v[1], v[2], v[3] }
  end
  raise(("TypeError: %s: fill_value must be a number or a list of three {r, g, b}, but got %s")
    :format(fname, show(v)))
end

local function check_bool(fname, what, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then raise(("TypeError: %s: %s must be a boolean, but got %s"):format(fname, what, show(v))) end
  return v
end

--- Decode(): the bytes of a PNG or JPEG file (a 1-D uint8 tensor) to an
-- RGB image {H, W, 3} uint8.
function M.Decode(...)
  local o = args_util.named("Decode", { "to_pil" }, 2, select("#", ...), ...)
  if o.to_pil then raise("NotImplementedError: Decode: to_pil (cell has no PIL images)") end
  return core._vision_decode()
end

--- Resize(size [, interpolation = Inter.LINEAR]): to {h, w}, or the
-- shorter edge to size (the other edge keeps the aspect ratio, rounded down).
function M.Resize(size, ...)
  local o = args_util.named("Resize", { "interpolation" }, 2, select("#", ...), ...)
  local h, w = check_size("Resize", size)
  return core._vision_resize(h, w or 0, check_inter("Resize", o.interpolation, "bilinear"))
end

--- Padding: n (all sides), {lr, tb} or {left, top, right, bottom}.
local function check_padding(fname, v)
  if v == nil then return { 0, 0, 0, 0 } end
  local p
  if is_int(v) then
    p = { v, v, v, v }
  elseif type(v) == "table" and getmetatable(v) == nil and (#v == 2 or #v == 4) then
    for i = 1, #v do
      if not is_int(v[i]) then
        raise(("TypeError: %s: padding[%d] must be an integer, but got %s"):format(fname, i, show(v[i])))
      end
    end
    p = #v == 2 and { v[1], v[2], v[1], v[2] } or { v[1], v[2], v[3], v[4] }
  else
    raise(("TypeError: %s: padding must be an integer or a list of 2 or 4 integers, but got %s"):format(fname,
      show(v)))
  end
  for i = 1, 4 do
    if p[i] < 0 then raise(("ValueError: %s: padding must not be negative, but got %d"):format(fname, p[i])) end
  end
  return p
end

local CROP_OPTIONS = { "padding", "pad_if_needed", "fill_value", "padding_mode" }

--- RandomCrop(size [, padding, pad_if_needed = false, fill_value = 0,
-- padding_mode = Border.CONSTANT]): a size window at a random place, after
-- padding (n, {lr, tb} or {left, top, right, bottom}).
function M.RandomCrop(size, ...)
  local fname = "RandomCrop"
  local o = args_util.named(fname, CROP_OPTIONS, 2, select("#", ...), ...)
  local h, w = check_size(fname, size)
  local mode = o.padding_mode or "constant"
  local m = type(mode) == "string" and BORDER[mode:lower()]
  if not m then
    raise(("ValueError: %s: padding_mode must be a vision.Border (CONSTANT, EDGE, REFLECT, SYMMETRIC), but got %s")
      :format(fname, show(mode)))
  end
  return core._vision_random_crop(h, w or h, check_padding(fname, o.padding),
    check_bool(fname, "pad_if_needed", o.pad_if_needed, false), check_fill(fname, o.fill_value), m)
end

local function check_prob(fname, v)
  if v == nil then return 0.5 end
  check_number(fname, "prob", v)
  if v < 0 or v > 1 then raise(("ValueError: %s: prob must be in [0, 1], but got %s"):format(fname, show(v))) end
  return v
end

--- RandomHorizontalFlip([prob = 0.5]): mirror left-right with probability prob.
function M.RandomHorizontalFlip(...)
  local o = args_util.named("RandomHorizontalFlip", { "prob" }, 2, select("#", ...), ...)
  return core._vision_random_flip(false, check_prob("RandomHorizontalFlip", o.prob))
end

--- RandomVerticalFlip([prob = 0.5]): mirror top-bottom with probability prob.
function M.RandomVerticalFlip(...)
  local o = args_util.named("RandomVerticalFlip", { "prob" }, 2, select("#", ...), ...)
  return core._vision_random_flip(true, check_prob("RandomVerticalFlip", o.prob))
end

local RRC_OPTIONS = { "scale", "ratio", "interpolation", "max_attempts" }

--- RandomResizedCrop(size [, scale = {0.08, 1}, ratio = {3/4, 4/3},
-- interpolation = Inter.BILINEAR, max_attempts = 10]).
function M.RandomResizedCrop(size, ...)
  local fname = "RandomResizedCrop"
  local o = args_util.named(fname, RRC_OPTIONS, 2, select("#", ...), ...)
  local h, w = check_size(fname, size)
  local function pair(what, v, d)
    if v == nil then return d end
    if type(v) ~= "table" or getmetatable(v) ~= nil or #v ~= 2 then
      raise(("TypeError: %s: %s must be a list {min, max}, but got %s"):format(fname, what, show(v)))
    end
    return check_range(fname, what, v)
  end
  local scale = pair("scale", o.scale, { 0.08, 1.0 })
  local ratio = pair("ratio", o.ratio, { 3 / 4, 4 / 3 })
  if scale[1] < 0 then raise(("ValueError: %s: scale must not be negative, but got {%s, %s}"):format(fname,
    tostring(scale[1]), tostring(scale[2]))) end
  if ratio[1] <= 0 then raise(("ValueError: %s: ratio must be positive, but got {%s, %s}"):format(fname,
    tostring(ratio[1]), tostring(ratio[2]))) end
  local attempts = o.max_attempts
  if attempts == nil then attempts = 10 end
  if not is_int(attempts) or attempts < 1 then
    raise(("ValueError: %s: max_attempts must be a positive integer, but got %s"):format(fname, show(attempts)))
  end
  return core._vision_random_resized_crop(h, w or h, scale, ratio, check_inter(fname, o.interpolation, "bilinear"),
    attempts)
end

--- A list of numbers (or one number).
local function num_list(fname, what, v)
  if type(v) == "number" then return { check_number(fname, what, v) } end
  if type(v) ~= "table" or getmetatable(v) ~= nil or #v == 0 then
    raise(("TypeError: %s: %s must be a list of numbers, but got %s"):format(fname, what, show(v)))
  end
  local out = {}
  for i = 1, #v do out[i] = check_number(fname, what, v[i]) end
  return out
end

--- Normalize(mean, std [, is_hwc = true]): (x - mean[c]) / std[c] per
-- channel, as float32; mean and std in the image's scale (0..255 for uint8).
function M.Normalize(mean, std, ...)
  local fname = "Normalize"
  local o = args_util.named(fname, { "is_hwc" }, 3, select("#", ...), ...)
  local m, s = num_list(fname, "mean", mean), num_list(fname, "std", std)
  if #m ~= #s then
    raise(("ValueError: %s: mean and std must have the same length, but got %d and %d"):format(fname, #m, #s))
  end
  for i = 1, #s do
    if not (s[i] > 0) then raise(("ValueError: %s: std[%d] must be positive, but got %s"):format(fname, i, show(s[i]))) end
  end
  return core._vision_normalize(m, s, check_bool(fname, "is_hwc", o.is_hwc, true))
end

--- HWC2CHW(): {H, W, C} to {C, H, W}.
function M.HWC2CHW() return core._vision_hwc2chw() end

local ROT_OPTIONS = { "resample", "expand", "center", "fill_value" }

--- RandomRotation(degrees [, resample = Inter.NEAREST, expand = false,
-- center = nil, fill_value = 0]): counter-clockwise by an angle uniform in
-- (-degrees, degrees) or {min, max}, about center {x, y} (pixels, 0-based;
-- default the image's centre).
function M.RandomRotation(degrees, ...)
  local fname = "RandomRotation"
  local o = args_util.named(fname, ROT_OPTIONS, 2, select("#", ...), ...)
  local d = check_range(fname, "degrees", degrees, function(v)
    if v < 0 then raise(("ValueError: %s: a single degrees value must not be negative, but got %s"):format(fname,
      show(v))) end
    return { -v, v }
  end)
  local center = o.center
  if center ~= nil then
    if type(center) ~= "table" or getmetatable(center) ~= nil or #center ~= 2 then
      raise(("TypeError: %s: center must be a list {x, y}, but got %s"):format(fname, show(center)))
    end
    center = { check_number(fname, "center", center[1]), check_number(fname, "center", center[2]) }
  end
  return core._vision_random_rotation(d[1], d[2], check_inter(fname, o.resample, "nearest"),
    check_bool(fname, "expand", o.expand, false), center, check_fill(fname, o.fill_value))
end

local CJ_OPTIONS = { "brightness", "contrast", "saturation", "hue" }

--- ColorJitter([brightness = 0, contrast = 0, saturation = 0, hue = 0])
-- (MindSpore's RandomColorAdjust, whose defaults are {1, 1} and {0, 0}):
-- a number f gives factors in [max(0, 1 - f), 1 + f] (hue: [-f, f], f <=
-- 0.5); a pair {min, max} gives them directly.
local function color_adjust(fname, o, defaults)
  local r = {}
  for i, what in ipairs(CJ_OPTIONS) do
    local v = o[what]
    if v == nil then v = defaults[i] end
    r[i] = check_range(fname, what, v, function(f)
      if f < 0 then raise(("ValueError: %s: %s must not be negative, but got %s"):format(fname, what, show(f))) end
      if what == "hue" then
        if f > 0.5 then raise(("ValueError: %s: hue must be in [0, 0.5], but got %s"):format(fname, show(f))) end
        return { -f, f }
      end
      return { math.max(0, 1 - f), 1 + f }
    end)
    if what == "hue" and (r[i][1] < -0.5 or r[i][2] > 0.5) then
      raise(("ValueError: %s: hue must lie in [-0.5, 0.5], but got {%s, %s}"):format(fname, tostring(r[i][1]),
        tostring(r[i][2])))
    elseif what ~= "hue" and r[i][1] < 0 then
      raise(("ValueError: %s: %s must not be negative, but got {%s, %s}"):format(fname, what, tostring(r[i][1]),
        tostring(r[i][2])))
    end
  end
  return core._vision_color_jitter(r[1], r[2], r[3], r[4])
end

function M.ColorJitter(...)
  local o = args_util.named("ColorJitter", CJ_OPTIONS, 1, select("#", ...), ...)
  return color_adjust("ColorJitter", o, { 0, 0, 0, 0 })
end

--- RandomColorAdjust([brightness = {1, 1}, contrast = {1, 1}, saturation = {1, 1}, hue = {0, 0}]).
function M.RandomColorAdjust(...)
  local o = args_util.named("RandomColorAdjust", CJ_OPTIONS, 1, select("#", ...), ...)
  return color_adjust("RandomColorAdjust", o, { { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 } })
end

--- ToTensor([output_type = cell.float32]): {H, W, C} (or {H, W}) to
-- {C, H, W}, divided by 255.
function M.ToTensor(...)
  local o = args_util.named("ToTensor", { "output_type" }, 1, select("#", ...), ...)
  local dt = o.output_type
  if dt ~= nil and not core.is_dtype(dt) then
    raise(("TypeError: ToTensor: output_type must be a dtype, but got %s"):format(show(dt)))
  end
  return core._vision_to_tensor(dt)
end

--- Rescale(rescale, shift) (or {rescale =, shift =}): x * rescale + shift
-- as float32, as MindSpore's (both required; numbers in float32's range).
function M.Rescale(...)
  local fname = "Rescale"
  local o = args_util.named(fname, { "rescale", "shift" }, 2, select("#", ...), ...)
  for _, what in ipairs { "rescale", "shift" } do
    if o[what] == nil then raise(("TypeError: %s() missing required argument '%s'"):format(fname, what)) end
    check_number(fname, what, o[what])
    if not (o[what] >= -FLT_MAX and o[what] <= FLT_MAX) then
      raise(("ValueError: %s: %s must be within float32's range [-3.4028235e+38, 3.4028235e+38], but got %s")
        :format(fname, what, show(o[what])))
    end
  end
  return core._vision_rescale(o.rescale, o.shift)
end

--- CenterCrop(size): the size window (n or {h, w}) at the image's centre
-- (top (H - h) // 2, left (W - w) // 2); an image smaller than the window
-- is padded with zeros first, ceil(d / 2) before and floor(d / 2) after, as
-- MindSpore's.
function M.CenterCrop(size)
  local h, w = check_size("CenterCrop", size)
  return core._vision_center_crop(h, w or h)
end

--- read_image(path): a PNG or JPEG file as {H, W, 3} uint8 RGB.
function M.read_image(path)
  if type(path) ~= "string" then
    raise(("TypeError: read_image: path must be a string, but got %s"):format(show(path)))
  end
  return core._image_load(path)
end

--- decode_image(bytes): PNG or JPEG bytes (a string or a 1-D uint8 tensor)
-- as {H, W, 3} uint8 RGB.
function M.decode_image(bytes) return core._image_decode(bytes) end

M.ImageFolderDataset = require("cell.dataset.image_folder").ImageFolderDataset

return M
