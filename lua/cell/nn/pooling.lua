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
-- last window must start inside the input or its top/left padding; the
-- kernels take it as an option) and MaxPool2d's dilation and
-- return_indices (1-based positions h * W + w + 1 in each input plane) and
-- AvgPool2d's count_include_pad and divisor_override mean what they mean in
-- PyTorch.
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

--- The padding of one spatial dimension of size n: before, after.
local function dim_pads(mode, n, k, s, p)
  if mode == "SAME" then
    local out = math.ceil(n / s)
    local total = math.max((out - 1) * s + k - n, 0)
    local before = math.floor(total / 2)
    return before, total - before
  end
  return p, p
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

--- Padding for this input: pads {t, b, l, r}; d: the dilation pair (or nil).
local function layer_pads(self, cls, x, d)
  local shape = x.shape
  local k, s, p = self._k, self._s, self._p
  local t, b = dim_pads(self.pad_mode, shape[3], k[1], s[1], p[1])
  local l, r = dim_pads(self.pad_mode, shape[4], k[2], s[2], p[2])
  local ek = { k[1], k[2] }
  if d then ek = { d[1] * (k[1] - 1) + 1, d[2] * (k[2] - 1) + 1 } end
  if shape[3] + t + b < ek[1] or shape[4] + l + r < ek[2] then
    raise(("ValueError: For '%s', the padded input (%d, %d) is smaller than the kernel_size %s; the input has "
      .. "shape %s."):format(cls, shape[3] + t + b, shape[4] + l + r, T.tuple_str(ek), T.shape_str(shape)))
  end
  return { t, b, l, r }
end

--- The size of each window of one dimension, clipped to the padded input
-- (what a count_include_pad average divides by), as a Lua list.
local window_sizes = require("cell.conv_ops")._window_sizes

local pool_repr = A.pool_repr

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
  self.dilation, self.return_indices, self.ceil_mode = dilation == nil and 1 or dilation, return_indices, ceil_mode
  self._d = d
end

--- The pooled input; with return_indices also the 1-based positions of
-- the maxima in each input plane (int64).
function MaxPool2d:construct(x)
  local x4, squeeze = as_4d("MaxPool2d", x, 2)
  local pads = layer_pads(self, "MaxPool2d", x4, self._d)
  local y, idx = ops.max_pool2d(x4, self._k, { stride = self._s, padding = pads, dilation = self._d,
    ceil_mode = self.ceil_mode, return_indices = self.return_indices })
  if squeeze then
    y = y:squeeze(1)
    if idx then idx = idx:squeeze(1) end
  end
  if self.return_indices then return y, idx end
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
  local pads = layer_pads(self, "AvgPool2d", x4)
  local k, s = self._k, self._s
  local ceil = self.ceil_mode
  -- with divisor_override: the window sums (each count_include_pad average
  -- times the window size it divided by) over the divisor
  local cip = self.divisor_override ~= nil or (self.pad_mode ~= "SAME" and self.count_include_pad)
  local y = ops.avg_pool2d(x4, k, { stride = s, padding = pads, ceil_mode = ceil, count_include_pad = cip })
  if self.divisor_override then
    local shape, ys = x4.shape, y.shape
    local fh = window_sizes(shape[3], k[1], s[1], pads[1], pads[2], ys[3])
    local fw = window_sizes(shape[4], k[2], s[2], pads[3], pads[4], ys[4])
    local full = core.tensor(fh, y.dtype):reshape({ #fh, 1 }) * core.tensor(fw, y.dtype):reshape({ 1, #fw })
    y = y * (full / self.divisor_override)
  end
  if squeeze then y = y:squeeze(1) end
  return y
end

AvgPool2d.extend_repr = pool_repr

return M
