--- cell.nn.Upsample, PixelShuffle, PixelUnshuffle, Identity, Unflatten and
-- the padding layers (ZeroPad2d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d)
-- of MindSpore 2.x. Padding tuples list the last dimension first, as
-- MindSpore's and PyTorch's: {left, right}, {left, right, top, bottom},
-- {left, right, top, bottom, front, back}.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local C = require "cell.conv_ops"

local M = {}

-- Upsample -----------------------------------------------------------------------------

local Upsample = Cell:extend("Upsample")
M.Upsample = Upsample
local UP_OPTIONS = { "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor" }

--- Upsample([size, scale_factor, mode = "nearest", align_corners, recompute_scale_factor])
-- or Upsample{size =, ...}: cell.ops.interpolate as a cell.
function Upsample:init(...)
  local size, scale_factor, mode, align_corners, recompute = A.args("Upsample", UP_OPTIONS, select("#", ...), ...)
  if size == nil and scale_factor == nil then
    raise("ValueError: For 'Upsample', either 'size' or 'scale_factor' must be given, but got neither.")
  end
  if size ~= nil and scale_factor ~= nil then
    raise("ValueError: For 'Upsample', only one of 'size' and 'scale_factor' can be given, but got both.")
  end
  self.size, self.scale_factor = size, scale_factor
  self.mode = A.choice("Upsample", "mode", mode == nil and "nearest" or mode,
    { "nearest", "linear", "bilinear", "bicubic" }, 3)
  self.align_corners = align_corners
  if align_corners ~= nil then A.bool("Upsample", "align_corners", align_corners, false, 3) end
  self.recompute_scale_factor = recompute
end

function Upsample:construct(x)
  check_tensor("Upsample", "x", x)
  return core.nnops.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
    align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor })
end

function Upsample:extend_repr()
  local s = self.size ~= nil and ("size=" .. A.int_or_tuple_str(self.size))
    or ("scale_factor=" .. A.int_or_tuple_str(self.scale_factor))
  return s .. ", mode=" .. self.mode
end

-- PixelShuffle, PixelUnshuffle ----------------------------------------------------------

local PixelShuffle = Cell:extend("PixelShuffle")
M.PixelShuffle = PixelShuffle
function PixelShuffle:init(upscale_factor)
  self.upscale_factor = A.positive_int("PixelShuffle", "upscale_factor", upscale_factor, 3)
end
function PixelShuffle:construct(x) return C.pixel_shuffle(check_tensor("PixelShuffle", "x", x), self.upscale_factor) end
function PixelShuffle:extend_repr() return "upscale_factor=" .. self.upscale_factor end

local PixelUnshuffle = Cell:extend("PixelUnshuffle")
M.PixelUnshuffle = PixelUnshuffle
function PixelUnshuffle:init(downscale_factor)
  self.downscale_factor = A.positive_int("PixelUnshuffle", "downscale_factor", downscale_factor, 3)
end
function PixelUnshuffle:construct(x)
  return C.pixel_unshuffle(check_tensor("PixelUnshuffle", "x", x), self.downscale_factor)
end
function PixelUnshuffle:extend_repr() return "downscale_factor=" .. self.downscale_factor end

-- Identity, Unflatten ---------------------------------------------------------------

local Identity = Cell:extend("Identity")
M.Identity = Identity
--- Identity(): returns its input.
function Identity:init() end
function Identity:construct(x) return x end

local Unflatten = Cell:extend("Unflatten")
M.Unflatten = Unflatten
--- Unflatten(axis, unflattened_size): dimension axis (1-based; negative from
-- the end) becomes the dimensions unflattened_size (one of them may be -1).
function Unflatten:init(axis, unflattened_size)
  if type(axis) ~= "number" or not T.is_int(axis) or axis == 0 or math.abs(axis) > 2 ^ 31 then
    raise(("TypeError: For 'Unflatten', the 'axis' must be a non-zero integer (1-based), but got %s.")
      :format(type(axis) == "number" and T.num_str(axis) or T.type_name(axis)))
  end
  if not A.is_list(unflattened_size) or #unflattened_size == 0 then
    raise(("TypeError: For 'Unflatten', the 'unflattened_size' must be a non-empty list of integers, but got %s.")
      :format(T.type_name(unflattened_size)))
  end
  local free = 0
  for i = 1, #unflattened_size do
    local v = unflattened_size[i]
    if type(v) ~= "number" or not T.is_int(v) or (v < 1 and v ~= -1) then
      raise(("ValueError: For 'Unflatten', the 'unflattened_size' must hold positive integers or one -1, but got %s.")
        :format(T.tuple_str(unflattened_size)))
    end
    if v == -1 then free = free + 1 end
  end
  if free > 1 then
    raise(("ValueError: For 'Unflatten', only one entry of 'unflattened_size' can be -1, but got %s.")
      :format(T.tuple_str(unflattened_size)))
  end
  self.axis, self.unflattened_size = axis, unflattened_size
end

function Unflatten:construct(x)
  local shape = check_tensor("Unflatten", "x", x).shape
  local r = #shape
  local ax = self.axis < 0 and r + 1 + self.axis or self.axis
  if ax < 1 or ax > r then
    raise(("IndexError: For 'Unflatten', the 'axis' %s is out of range for an input of shape %s.")
      :format(T.num_str(self.axis), T.shape_str(shape)))
  end
  local out = {}
  for i = 1, ax - 1 do out[#out + 1] = shape[i] end
  local prod, free = 1, nil
  for i = 1, #self.unflattened_size do
    local v = self.unflattened_size[i]
    out[#out + 1] = v
    if v == -1 then free = #out else prod = prod * v end
  end
  if free then
    if shape[ax] % prod ~= 0 then
      raise(("ValueError: For 'Unflatten', the size %d of axis %d is not divisible by %d (unflattened_size %s).")
        :format(shape[ax], ax, prod, T.tuple_str(self.unflattened_size)))
    end
    out[free] = shape[ax] / prod
  elseif prod ~= shape[ax] then
    raise(("ValueError: For 'Unflatten', the product of unflattened_size %s (%d) must equal the size %d of axis %d.")
      :format(T.tuple_str(self.unflattened_size), prod, shape[ax], ax))
  end
  for i = ax + 1, r do out[#out + 1] = shape[i] end
  return x:reshape(out)
end

function Unflatten:extend_repr()
  return ("axis=%s, unflattened_size=%s"):format(T.num_str(self.axis), T.tuple_str(self.unflattened_size))
end

-- Padding -------------------------------------------------------------------------------

--- A padding layer over the last nd dimensions; mode "constant" or "reflect".
local function pad_layer(cls, nd, mode, has_value, zero)
  local Layer = Cell:extend(cls)
  M[cls] = Layer
  function Layer:init(padding, value)
    local p = {}
    if type(padding) == "number" then
      if not T.is_int(padding) then
        raise(("TypeError: For '%s', the 'padding' must be an integer or a list of %d integers, but got %s.")
          :format(cls, 2 * nd, T.num_str(padding)))
      end
      for i = 1, 2 * nd do p[i] = padding end
    elseif A.is_list(padding) then
      if #padding ~= 2 * nd then
        raise(("ValueError: For '%s', the 'padding' must be an integer or a list of %d integers, but got %d values.")
          :format(cls, 2 * nd, #padding))
      end
      for i = 1, 2 * nd do
        if type(padding[i]) ~= "number" or not T.is_int(padding[i]) then
          raise(("TypeError: For '%s', the 'padding' must hold integers, but got %s."):format(cls,
            tostring(padding[i])))
        end
        p[i] = padding[i]
      end
    else
      raise(("TypeError: For '%s', the 'padding' must be an integer or a list of %d integers, but got %s.")
        :format(cls, 2 * nd, T.type_name(padding)))
    end
    for i = 1, 2 * nd do
      if math.abs(p[i]) > 2 ^ 31 then
        raise(("ValueError: For '%s', the 'padding' %s is out of range."):format(cls, A.int_or_tuple_str(padding)))
      end
    end
    if mode == "reflect" then
      for i = 1, 2 * nd do
        if p[i] < 0 then
          raise(("ValueError: For '%s', the 'padding' must be non-negative, but got %s."):format(cls,
            A.int_or_tuple_str(padding)))
        end
      end
    end
    if has_value then
      self.value = A.number(cls, "value", value, nil, 3)
      if self.value == nil then
        raise(("TypeError: For '%s', the 'value' must be a number, but got nil."):format(cls))
      end
    elseif zero then
      self.value = 0
    end
    self.padding, self._p = padding, p
  end
  function Layer:construct(x)
    local shape = check_tensor(cls, "x", x).shape
    if #shape < nd + 1 then
      raise(("ValueError: For '%s', the input must have at least %d dimensions, but got %s.")
        :format(cls, nd + 1, T.shape_str(shape)))
    end
    -- self._p lists the last dimension first; _pad_mode takes dimension order
    local pads = {}
    for i = 1, nd do
      local src = nd - i + 1
      pads[2 * i - 1], pads[2 * i] = self._p[2 * src - 1], self._p[2 * src]
    end
    return C._pad_mode(cls, x, nd, pads, mode, self.value)
  end
  function Layer:extend_repr()
    local s = "padding=" .. A.int_or_tuple_str(self.padding)
    if has_value then s = s .. ", value=" .. T.num_str(self.value) end
    return s
  end
end

pad_layer("ZeroPad2d", 2, "constant", false, true)
pad_layer("ConstantPad1d", 1, "constant", true)
pad_layer("ConstantPad2d", 2, "constant", true)
pad_layer("ConstantPad3d", 3, "constant", true)
pad_layer("ReflectionPad1d", 1, "reflect")
pad_layer("ReflectionPad2d", 2, "reflect")
pad_layer("ReflectionPad3d", 3, "reflect")

return M
