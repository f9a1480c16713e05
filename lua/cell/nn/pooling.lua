--- cell.nn.MaxPool2d and cell.nn.AvgPool2d: MindSpore 2.x's 2-D pooling
-- layers, on cell.ops.max_pool2d and cell.ops.avg_pool2d. Inputs are
-- {N, C, H, W} or {C, H, W}.
--
-- pad_mode (any case; extend_repr prints it upper-case, as MindSpore does):
-- "valid" (no padding), "same" (output ceil(H / stride), the odd padding
-- pixel at the bottom/right, as TensorFlow; an average then counts only the
-- input pixels) or "pad" (`padding` an int or {top_bottom, left_right}
-- pixels on each side; padding, ceil_mode and, for MaxPool2d, dilation and
-- return_indices belong to this mode). ceil_mode follows PyTorch's rule (a
-- last window must start inside the input or its top/left padding) and
-- AvgPool2d's count_include_pad and divisor_override mean what they mean in
-- PyTorch. MaxPool2d's dilation other than 1 and return_indices are not
-- implemented (NotImplementedError).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"

local M = {}

--- kernel_size or stride: an int, {n} (read as n) or {h, w}. Returns the
-- pair and the value extend_repr prints (an int or a pair).
local function size_arg(cls, what, v, lvl)
  if v == nil then v = 1 end
  if type(v) ~= "number" and not A.is_list(v) then
    raise(("TypeError: For '%s', the '%s' must be an integer or a list of integers, but got %s.")
      :format(cls, what, T.type_name(v)))
  end
  if type(v) == "table" and #v ~= 1 and #v ~= 2 then
    raise(("ValueError: For '%s', the '%s' must be an integer or a list of 1 or 2 integers, but got %d values.")
      :format(cls, what, #v))
  end
  local pair = A.int_tuple(cls, what, v, 2, lvl + 1, true)
  local shown = v
  if type(v) == "table" then shown = #v == 1 and v[1] or { v[1], v[2] } end
  return pair, shown
end

--- The common arguments of the two layers.
local function common(self, cls, kernel_size, stride, pad_mode, padding, data_format, lvl)
  self._k, self.kernel_size = size_arg(cls, "kernel_size", kernel_size, lvl + 1)
  self._s, self.stride = size_arg(cls, "stride", stride, lvl + 1)
  pad_mode = A.choice(cls, "pad_mode", pad_mode == nil and "valid" or pad_mode, { "valid", "same", "pad" }, lvl + 1,
    true)
  self.pad_mode = pad_mode:upper()
  self.format = A.choice(cls, "data_format", data_format == nil and "NCHW" or data_format, { "NCHW" }, lvl + 1)
  if padding == nil then padding = 0 end
  local p
  if type(padding) == "number" then
    A.nonneg_int(cls, "padding", padding, lvl + 1)
    p = { padding, padding }
  elseif A.is_list(padding) then
    if #padding ~= 1 and #padding ~= 2 then
      raise(("ValueError: For '%s', the 'padding' must be an integer or a list of 1 or 2 integers, but got %d "
        .. "values."):format(cls, #padding))
    end
    p = A.int_tuple(cls, "padding", padding, 2, lvl + 1, true, true)
  else
    raise(("TypeError: For '%s', the 'padding' must be an integer or a list of integers, but got %s.")
      :format(cls, T.type_name(padding)))
  end
  if self.pad_mode ~= "PAD" and (p[1] ~= 0 or p[2] ~= 0) then
    raise(("ValueError: For '%s', the 'padding' must be zero when 'pad_mode' is not 'pad', but got padding %s and "
      .. "pad_mode '%s'."):format(cls, A.int_or_tuple_str(padding), pad_mode))
  end
  for i = 1, 2 do
    if 2 * p[i] > self._k[i] then
      raise(("ValueError: For '%s', the padding %s must be at most half the kernel_size %s."):format(cls,
        T.tuple_str(p), T.tuple_str(self._k)))
    end
  end
  self.padding, self._p = padding, p
end

--- The padding of one spatial dimension of size n and the extra pixels
-- ceil_mode adds after it: before, after, extra.
local function dim_pads(mode, n, k, s, p, ceil)
  if mode == "SAME" then
    local out = math.ceil(n / s)
    local total = math.max((out - 1) * s + k - n, 0)
    local before = math.floor(total / 2)
    return before, total - before, 0
  end
  local padded = n + 2 * p
  if padded < k then return p, p, 0 end
  local out
  if ceil then
    out = math.ceil((padded - k) / s) + 1
    if (out - 1) * s >= n + p then out = out - 1 end
  else
    out = math.floor((padded - k) / s) + 1
  end
  return p, p, math.max(0, (out - 1) * s + k - padded)
end

--- The input as 4-D (and whether it was 3-D), or a ValueError naming the layer.
local function as_4d(cls, x, lvl)
  local shape = check_tensor(cls, "x", x).shape
  if #shape ~= 3 and #shape ~= 4 then
    raise(("ValueError: For '%s', the input must be 3-D (C, H, W) or 4-D (N, C, H, W), but got %s.")
      :format(cls, T.shape_str(shape)))
  end
  if #shape == 3 then x = x:unsqueeze(1) end
  return x, #shape == 3
end

--- Padding for this input: pads {t, b, l, r} without and with ceil_mode's
-- extra pixels, and the extras.
local function layer_pads(self, cls, x, lvl)
  local shape = x.shape
  local k, s, p = self._k, self._s, self._p
  local t, b, eh = dim_pads(self.pad_mode, shape[3], k[1], s[1], p[1], self.ceil_mode)
  local l, r, ew = dim_pads(self.pad_mode, shape[4], k[2], s[2], p[2], self.ceil_mode)
  if shape[3] + t + b < k[1] or shape[4] + l + r < k[2] then
    raise(("ValueError: For '%s', the padded input (%d, %d) is smaller than the kernel_size %s; the input has "
      .. "shape %s."):format(cls, shape[3] + t + b, shape[4] + l + r, T.tuple_str(k), T.shape_str(shape)))
  end
  return { t, b, l, r }, { t, b + eh, l, r + ew }, eh, ew
end

local function pool_repr(self)
  return ("kernel_size=%s, stride=%s, pad_mode=%s"):format(A.int_or_tuple_str(self.kernel_size),
    A.int_or_tuple_str(self.stride), self.pad_mode)
end

-- MaxPool2d ------------------------------------------------------------------

local MaxPool2d = Cell:extend("MaxPool2d")
M.MaxPool2d = MaxPool2d

local MAX_OPTIONS = { "kernel_size", "stride", "pad_mode", "padding", "dilation", "return_indices", "ceil_mode",
  "data_format" }

--- MaxPool2d([kernel_size = 1, stride = 1, pad_mode = "valid", padding = 0,
-- dilation = 1, return_indices = false, ceil_mode = false, data_format = "NCHW"])
-- or MaxPool2d{kernel_size = , ...}.
function MaxPool2d:init(...)
  local kernel_size, stride, pad_mode, padding, dilation, return_indices, ceil_mode, data_format =
    A.args("MaxPool2d", MAX_OPTIONS, select("#", ...), ...)
  common(self, "MaxPool2d", kernel_size, stride, pad_mode, padding, data_format, 3)
  local d = A.int_tuple("MaxPool2d", "dilation", dilation == nil and 1 or dilation, 2, 3, true)
  return_indices = A.bool("MaxPool2d", "return_indices", return_indices, false, 3)
  ceil_mode = A.bool("MaxPool2d", "ceil_mode", ceil_mode, false, 3)
  if self.pad_mode ~= "PAD" and (self._p[1] ~= 0 or d[1] ~= 1 or d[2] ~= 1 or return_indices or ceil_mode) then
    raise(("ValueError: For 'MaxPool2d', the parameter 'padding', 'dilation', 'return_indices', 'ceil_mode' can not "
      .. "be set to non-default value when pad_mode is not 'pad', but got pad_mode:%s."):format(self.pad_mode))
  end
  if d[1] ~= 1 or d[2] ~= 1 then
    raise("NotImplementedError: For 'MaxPool2d', a 'dilation' other than 1 is not supported.")
  end
  if return_indices then
    raise("NotImplementedError: For 'MaxPool2d', 'return_indices' = true is not supported.")
  end
  self.dilation, self.return_indices, self.ceil_mode = dilation == nil and 1 or dilation, return_indices, ceil_mode
end

function MaxPool2d:construct(x)
  local x4, squeeze = as_4d("MaxPool2d", x, 2)
  local _, pads = layer_pads(self, "MaxPool2d", x4, 2)
  local y = ops.max_pool2d(x4, self._k, { stride = self._s, padding = pads })
  if squeeze then y = y:squeeze(1) end
  return y
end

MaxPool2d.extend_repr = pool_repr

-- AvgPool2d ------------------------------------------------------------------

local AvgPool2d = Cell:extend("AvgPool2d")
M.AvgPool2d = AvgPool2d

local AVG_OPTIONS = { "kernel_size", "stride", "pad_mode", "padding", "ceil_mode", "count_include_pad",
  "divisor_override", "data_format" }

--- AvgPool2d([kernel_size = 1, stride = 1, pad_mode = "valid", padding = 0,
-- ceil_mode = false, count_include_pad = true, divisor_override = nil,
-- data_format = "NCHW"]) or AvgPool2d{kernel_size = , ...}.
function AvgPool2d:init(...)
  local kernel_size, stride, pad_mode, padding, ceil_mode, count_include_pad, divisor_override, data_format =
    A.args("AvgPool2d", AVG_OPTIONS, select("#", ...), ...)
  common(self, "AvgPool2d", kernel_size, stride, pad_mode, padding, data_format, 3)
  self.ceil_mode = A.bool("AvgPool2d", "ceil_mode", ceil_mode, false, 3)
  self.count_include_pad = A.bool("AvgPool2d", "count_include_pad", count_include_pad, true, 3)
  if divisor_override ~= nil then
    if type(divisor_override) ~= "number" then
      raise(("TypeError: For 'AvgPool2d', the 'divisor_override' must be an integer, but got %s.")
        :format(T.type_name(divisor_override)))
    end
    if divisor_override <= 0 or not T.is_int(divisor_override) then
      raise(("ValueError: For 'AvgPool2d', the 'divisor_override' must be > 0, but got %s.")
        :format(T.num_str(divisor_override)))
    end
  end
  self.divisor_override = divisor_override
end

function AvgPool2d:construct(x)
  local x4, squeeze = as_4d("AvgPool2d", x, 2)
  local pads, ext, eh, ew = layer_pads(self, "AvgPool2d", x4, 2)
  local k, s = self._k, self._s
  local y
  if self.divisor_override then
    y = ops.avg_pool2d(x4, k, { stride = s, padding = ext, count_include_pad = true }) *
      (k[1] * k[2] / self.divisor_override)
  elseif self.pad_mode == "SAME" or not self.count_include_pad then
    y = ops.avg_pool2d(x4, k, { stride = s, padding = ext, count_include_pad = false })
  elseif eh == 0 and ew == 0 then
    y = ops.avg_pool2d(x4, k, { stride = s, padding = pads, count_include_pad = true })
  else
    -- ceil_mode's extra pixels are not counted, the padding is: divide by the
    -- share of each window that lies inside the padded input
    local shape = x4.shape
    local inside = core.ones({ 1, 1, shape[3] + pads[1] + pads[2], shape[4] + pads[3] + pads[4] }, x4.dtype)
    local share = ops.avg_pool2d(inside, k, { stride = s, padding = { 0, eh, 0, ew }, count_include_pad = true })
    y = ops.avg_pool2d(x4, k, { stride = s, padding = ext, count_include_pad = true }) / share
  end
  if squeeze then y = y:squeeze(1) end
  return y
end

AvgPool2d.extend_repr = pool_repr

return M
