--- cell.dataset.transforms: transforms of any data, as MindSpore's
-- mindspore.dataset.transforms: Compose, TypeCast, OneHot, Fill,
-- RandomApply, RandomChoice.
--
--     ds = ds:map(transforms.TypeCast(cell.float32), {input_columns = "image"})
--     ds = ds:map(transforms.OneHot(10), {input_columns = "label"})
--
-- All but Compose are C transforms: a pipeline runs them on its worker
-- threads. Each is also callable on one sample: transforms.OneHot(3)(t).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local pipeline = require "cell.dataset.pipeline"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name

local M = {}

--- TypeCast(dtype): the sample converted to dtype.
function M.TypeCast(dtype)
  if not core.is_dtype(dtype) then
    raise(("TypeError: TypeCast: data_type must be a dtype (cell.float32, ...), but got %s"):format(type_name(dtype)))
  end
  return core._data_typecast(dtype)
end

local ONEHOT_OPTIONS = { "smoothing_rate", "dtype", "index_base" }

--- OneHot(num_classes [, smoothing_rate = 0] [, {dtype =, index_base = 1}]):
-- class ids (1-based, as every class index in cell) to one-hot vectors on
-- a new last dimension. The result keeps the label's dtype (float32 when
-- smoothing); smoothing puts 1 - s + s / n at the class and s / n elsewhere.
function M.OneHot(num_classes, ...)
  local o = args_util.named("OneHot", ONEHOT_OPTIONS, 2, select("#", ...), ...)
  pipeline.check_int("OneHot", "num_classes", num_classes, 1)
  local s = o.smoothing_rate
  if s == nil then s = 0 end
  if type(s) ~= "number" then
    raise(("TypeError: OneHot: smoothing_rate must be a number, but got %s"):format(type_name(s)))
  end
  local base = o.index_base
  if base == nil then base = 1 end
  pipeline.check_int("OneHot", "index_base", base)
  if o.dtype ~= nil and not core.is_dtype(o.dtype) then
    raise(("TypeError: OneHot: dtype must be a dtype, but got %s"):format(type_name(o.dtype)))
  end
  return core._data_onehot(num_classes, base, s, o.dtype)
end

--- Fill(fill_value): every element of the sample set to fill_value.
function M.Fill(fill_value)
  if type(fill_value) ~= "number" then
    raise(("TypeError: Fill: fill_value must be a number, but got %s"):format(type_name(fill_value)))
  end
  return core._data_fill(fill_value)
end

local c_list
function c_list(fname, transforms)
  if type(transforms) ~= "table" or getmetatable(transforms) ~= nil or #transforms == 0 then
    raise(("TypeError: %s: transforms must be a non-empty list of transforms, but got %s")
      :format(fname, type_name(transforms)))
  end
  local list = {}
  for i = 1, #transforms do
    local t = transforms[i]
    if class.is_instance(t, M.Compose) then
      -- one transform that runs them all (a RandomApply of probability 1)
      list[#list + 1] = core._data_random_apply(c_list(fname, t.transforms), 1)
    else
      list[#list + 1] = t
    end
  end
  for i, t in ipairs(list) do
    if not core._data_is_transform(t) then
      raise(("TypeError: %s: transforms[%d] must be a C transform (cell.dataset.transforms, cell.dataset.vision), "
        .. "but got %s"):format(fname, i, type_name(t)))
    end
  end
  return list
end

--- RandomApply(transforms [, prob = 0.5]): the transforms in order with
-- probability prob, else the sample unchanged (per sample, from its seed).
function M.RandomApply(transforms, prob)
  if prob == nil then prob = 0.5 end
  if type(prob) ~= "number" then
    raise(("TypeError: RandomApply: prob must be a number, but got %s"):format(type_name(prob)))
  end
  return core._data_random_apply(c_list("RandomApply", transforms), prob)
end

--- RandomChoice(transforms): one of the transforms, chosen per sample.
function M.RandomChoice(transforms)
  return core._data_random_choice(c_list("RandomChoice", transforms))
end

local Compose = class("Compose")
M.Compose = Compose

--- Compose(transforms): the transforms in order, as one. map flattens it
-- (its C transforms still run on the workers); called on values, it
-- applies each in turn.
function Compose:init(transforms)
  if type(transforms) ~= "table" or getmetatable(transforms) ~= nil or #transforms == 0 then
    raise(("TypeError: Compose: transforms must be a non-empty list of transforms, but got %s")
      :format(type_name(transforms)))
  end
  local list = {}
  for i = 1, #transforms do
    local t = transforms[i]
    local ok = core._data_is_transform(t) or type(t) == "function" or
        (type(t) == "table" and getmetatable(t) and getmetatable(t).__call)
    if not ok then
      raise(("TypeError: Compose: transforms[%d] must be a transform or a function, but got %s")
        :format(i, type_name(t)))
    end
    list[i] = t
  end
  self.transforms = list
end

local unpack = table.unpack or unpack

function Compose:__call(...)
  local vals = { n = select("#", ...), ... }
  for _, t in ipairs(self.transforms) do
    vals = { n = 0, t(unpack(vals, 1, vals.n)) }
    vals.n = #vals
  end
  return unpack(vals, 1, vals.n)
end

function Compose:__tostring()
  local names = {}
  for i, t in ipairs(self.transforms) do names[i] = core._data_is_transform(t) or type_name(t) end
  return "Compose(" .. table.concat(names, ", ") .. ")"
end

return M
