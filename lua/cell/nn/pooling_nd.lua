--- cell.nn.MaxPool1d, AvgPool1d, MaxPool3d, AvgPool3d and the adaptive
-- poolings (AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d) of MindSpore 2.x,
-- on the functions of cell.conv_ops. Inputs are {N, C, spatial} or
-- {C, spatial}. pad_mode "valid" (default), "same" (output
-- ceil(n / stride); an average counts only the input elements) or "pad"
-- (padding an int or one per spatial dimension; padding, ceil_mode,
-- dilation and return_indices belong to this mode, as MaxPool2d).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local C = require "cell.conv_ops"

local M = {}

local MAX_OPTIONS = { "kernel_size", "stride", "pad_mode", "padding", "dilation", "return_indices", "ceil_mode" }
local AVG_OPTIONS = { "kernel_size", "stride", "pad_mode", "padding", "ceil_mode", "count_include_pad",
  "divisor_override" }

local function named(names, ...)
  local o = {}
  for i, k in ipairs(names) do o[k] = select(i, ...) end
  return o
end

local function pool_common(self, cls, nd, o)
  self._k = A.int_tuple(cls, "kernel_size", o.kernel_size == nil and 1 or o.kernel_size, nd, 4, true)
  self._s = A.int_tuple(cls, "stride", o.stride == nil and 1 or o.stride, nd, 4, true)
  self.kernel_size, self.stride = o.kernel_size == nil and 1 or o.kernel_size, o.stride == nil and 1 or o.stride
  local pad_mode = A.choice(cls, "pad_mode", o.pad_mode == nil and "valid" or o.pad_mode, { "valid", "same", "pad" },
    4, true)
  self.pad_mode = pad_mode:upper()
  local padding = o.padding == nil and 0 or o.padding
  local p = A.int_tuple(cls, "padding", padding, nd, 4, true, true)
  local nonzero = false
  for i = 1, nd do if p[i] ~= 0 then nonzero = true end end
  if self.pad_mode ~= "PAD" and nonzero then
    raise(("ValueError: For '%s', the 'padding' must be zero when 'pad_mode' is not 'pad', but got padding %s and "
      .. "pad_mode '%s'."):format(cls, A.int_or_tuple_str(padding), pad_mode))
  end
  self.padding, self._p = padding, p
  self.ceil_mode = A.bool(cls, "ceil_mode", o.ceil_mode, false, 4)
end

local function layer_pads(self, x, nd)
  local pads = {}
  for i = 1, nd do
    if self.pad_mode == "SAME" then
      pads[2 * i - 1], pads[2 * i] = C._same_pad(x.shape[i + 2], self._k[i], self._s[i], 1)
    else
      pads[2 * i - 1], pads[2 * i] = self._p[i], self._p[i]
    end
  end
  return pads
end

local pool_repr = A.pool_repr

local function max_pool(cls, nd)
  local Layer = Cell:extend(cls)
  M[cls] = Layer
  function Layer:init(...)
    local o = named(MAX_OPTIONS, A.args(cls, MAX_OPTIONS, select("#", ...), ...))
    pool_common(self, cls, nd, o)
    self._d = A.int_tuple(cls, "dilation", o.dilation == nil and 1 or o.dilation, nd, 3, true)
    self.dilation = o.dilation == nil and 1 or o.dilation
    self.return_indices = A.bool(cls, "return_indices", o.return_indices, false, 3)
    local nondefault = self.return_indices or self.ceil_mode
    for i = 1, nd do if self._d[i] ~= 1 then nondefault = true end end
    if self.pad_mode ~= "PAD" and nondefault then
      raise(("ValueError: For '%s', the parameter 'dilation', 'return_indices', 'ceil_mode' can not be set to "
        .. "non-default value when pad_mode is not 'pad', but got pad_mode:%s."):format(cls, self.pad_mode))
    end
  end
  function Layer:construct(x)
    check_tensor(cls, "x", x)
    local xb, added = C._batched(cls, x, nd)
    local y, idx = C._max_pool_nd(cls, xb, nd, self._k, self._s, layer_pads(self, xb, nd), self._d, self.ceil_mode,
      self.return_indices)
    if added then
      y = y:squeeze(1)
      if idx then idx = idx:squeeze(1) end
    end
    if self.return_indices then return y, idx end
    return y
  end
  Layer.extend_repr = pool_repr
end

local function avg_pool(cls, nd)
  local Layer = Cell:extend(cls)
  M[cls] = Layer
  function Layer:init(...)
    local o = named(AVG_OPTIONS, A.args(cls, AVG_OPTIONS, select("#", ...), ...))
    pool_common(self, cls, nd, o)
    self.count_include_pad = A.bool(cls, "count_include_pad", o.count_include_pad, true, 3)
    local dv = o.divisor_override
    if dv ~= nil then
      if type(dv) ~= "number" then
        raise(("TypeError: For '%s', the 'divisor_override' must be an integer, but got %s.")
          :format(cls, T.type_name(dv)))
      end
      if dv <= 0 or not T.is_int(dv) then
        raise(("ValueError: For '%s', the 'divisor_override' must be > 0, but got %s."):format(cls, T.num_str(dv)))
      end
    end
    self.divisor_override = dv
  end
  function Layer:construct(x)
    check_tensor(cls, "x", x)
    local xb, added = C._batched(cls, x, nd)
    local cip = self.pad_mode ~= "SAME" and self.count_include_pad
    local y = C._avg_pool_nd(cls, xb, nd, self._k, self._s, layer_pads(self, xb, nd), self.ceil_mode, cip,
      self.divisor_override)
    if added then y = y:squeeze(1) end
    return y
  end
  Layer.extend_repr = pool_repr
end

max_pool("MaxPool1d", 1)
max_pool("MaxPool3d", 3)
avg_pool("AvgPool1d", 1)
avg_pool("AvgPool3d", 3)

local FN = { avg = { "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d" },
  max = { "adaptive_max_pool1d", "adaptive_max_pool2d" } }

local function adaptive(cls, kind, nd)
  local Layer = Cell:extend(cls)
  M[cls] = Layer
  local fn = C[FN[kind][nd]]
  function Layer:init(output_size, return_indices)
    if output_size == nil then
      raise(("TypeError: For '%s', the 'output_size' must be an integer or a list of %d integers, but got nil.")
        :format(cls, nd))
    end
    if type(output_size) == "table" then
      if not A.is_list(output_size) or #output_size ~= nd then
        raise(("ValueError: For '%s', the 'output_size' must be an integer or a list of %d integers, but got %s.")
          :format(cls, nd, T.type_name(output_size)))
      end
      for i = 1, nd do
        if output_size[i] ~= false then A.positive_int(cls, "output_size", output_size[i], 3) end
      end
    else
      A.positive_int(cls, "output_size", output_size, 3)
    end
    self.output_size = output_size
    if kind == "max" then self.return_indices = A.bool(cls, "return_indices", return_indices, false, 3) end
  end
  function Layer:construct(x)
    check_tensor(cls, "x", x)
    if kind == "max" then return fn(x, self.output_size, self.return_indices) end
    return fn(x, self.output_size)
  end
  function Layer:extend_repr()
    local s = "output_size=" .. A.int_or_tuple_str(self.output_size)
    if kind == "max" then s = s .. ", return_indices=" .. tostring(self.return_indices) end
    return s
  end
end

adaptive("AdaptiveAvgPool1d", "avg", 1)
adaptive("AdaptiveAvgPool2d", "avg", 2)
adaptive("AdaptiveAvgPool3d", "avg", 3)
adaptive("AdaptiveMaxPool1d", "max", 1)
adaptive("AdaptiveMaxPool2d", "max", 2)

return M
