--- cell.nn.Conv2d: the 2-D convolution layer of MindSpore 2.x, on
-- cell.ops.conv2d. Parameter names and shapes as MindSpore (weight
-- {out, in/group, kh, kw}, bias {out}); default initialisers HeUniform(sqrt(5))
-- for the weight and Uniform(1/sqrt(fan_in)) for the bias; pad_mode "same"
-- (output ceil(H/stride), the odd padding pixel at the bottom/right, as
-- MindSpore and TensorFlow do), "valid" or "pad" (explicit zero padding:
-- an int, {top_bottom, left_right} or {top, bottom, left, right}).
-- Only the NCHW layout exists here.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local initializer = require "cell.initializer"
local Parameter = require("cell.parameter").Parameter
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"

local Conv2d = Cell:extend("Conv2d")

local OPTIONS = { "stride", "pad_mode", "padding", "dilation", "group", "has_bias", "weight_init", "bias_init",
  "data_format", "dtype" }

--- The padding argument as {top, bottom, left, right}.
local function pads_of(padding, lvl)
  if type(padding) == "number" then
    A.nonneg_int("Conv2d", "padding", padding, lvl + 1)
    return { padding, padding, padding, padding }
  end
  if not A.is_list(padding) then
    raise(("TypeError: For 'Conv2d', the type of 'padding' must be an integer or a list of 2 or 4 integers, "
      .. "but got %s."):format(T.type_name(padding)))
  end
  if #padding ~= 2 and #padding ~= 4 then
    raise(("ValueError: For 'Conv2d', the 'padding' must be an integer or a list of 2 or 4 integers, but got %d "
      .. "values."):format(#padding))
  end
  for i = 1, #padding do A.nonneg_int("Conv2d", "padding", padding[i], lvl + 1) end
  if #padding == 2 then return { padding[1], padding[1], padding[2], padding[2] } end
  return { padding[1], padding[2], padding[3], padding[4] }
end

--- The text of an initializer argument as extend_repr prints it.
local init_str = A.init_str

--- Conv2d(in_channels, out_channels, kernel_size [, stride = 1, pad_mode = "same",
-- padding = 0, dilation = 1, group = 1, has_bias = false, weight_init, bias_init,
-- data_format = "NCHW", dtype = float32]), or the three and an options table.
function Conv2d:init(in_channels, out_channels, kernel_size, ...)
  local stride, pad_mode, padding, dilation, group, has_bias, weight_init, bias_init, data_format, dtype =
    A.args("Conv2d", OPTIONS, select("#", ...), ...)
  A.positive_int("Conv2d", "in_channels", in_channels, 3, true)
  A.positive_int("Conv2d", "out_channels", out_channels, 3, true)
  local k = A.int_tuple("Conv2d", "kernel_size", kernel_size, 2, 3)
  local s = A.int_tuple("Conv2d", "stride", stride == nil and 1 or stride, 2, 3)
  local d = A.int_tuple("Conv2d", "dilation", dilation == nil and 1 or dilation, 2, 3)
  pad_mode = A.choice("Conv2d", "pad_mode", pad_mode == nil and "same" or pad_mode, { "same", "valid", "pad" }, 3, true)
  if padding == nil then padding = 0 end
  local pads = pads_of(padding, 3)
  if pad_mode:lower() ~= "pad" and (pads[1] ~= 0 or pads[2] ~= 0 or pads[3] ~= 0 or pads[4] ~= 0) then
    raise(("ValueError: For 'Conv2d', the 'padding' must be zero when 'pad_mode' is not 'pad', but got padding %s "
      .. "and pad_mode '%s'."):format(A.int_or_tuple_str(padding), pad_mode))
  end
  group = A.positive_int("Conv2d", "group", group == nil and 1 or group, 3)
  if in_channels % group ~= 0 then
    raise(("ValueError: For 'Conv2d', the attr 'in_channels' must be divisible by attr 'group', but got "
      .. "'in_channels': %d and 'group': %d."):format(in_channels, group))
  end
  if out_channels % group ~= 0 then
    raise(("ValueError: For 'Conv2d', the 'out_channels' must be divisible by attr 'group', but got "
      .. "'out_channels': %d and 'group': %d."):format(out_channels, group))
  end
  has_bias = A.bool("Conv2d", "has_bias", has_bias, false, 3)
  data_format = A.choice("Conv2d", "data_format", data_format == nil and "NCHW" or data_format, { "NCHW" }, 3)
  dtype = A.float_dtype("Conv2d", dtype, 3)

  self.in_channels, self.out_channels, self.kernel_size, self.stride = in_channels, out_channels, k, s
  self.pad_mode, self.padding, self.dilation, self.group = pad_mode, padding, d, group
  self.has_bias, self.weight_init, self.bias_init, self.data_format = has_bias, weight_init, bias_init, data_format
  self._pads, self._mode = pads, pad_mode:lower()

  local shape = { out_channels, math.floor(in_channels / group), k[1], k[2] }
  if core.is_tensor(weight_init) and not T.same_shape(weight_init.shape, shape) then
    raise(("ValueError: For 'Conv2d', weight init shape error: the weight_init shape must be %s, but got %s.")
      :format(T.shape_str(shape), T.shape_str(weight_init.shape)))
  end
  local winit = weight_init
  if winit == nil then winit = initializer.HeUniform(math.sqrt(5)) end
  self.weight = Parameter(initializer.initializer(winit, shape, dtype):init_data(), "weight")
  if has_bias then
    local binit = bias_init
    if binit == nil then binit = initializer.Uniform(1 / math.sqrt(shape[2] * k[1] * k[2])) end
    if core.is_tensor(binit) and not T.same_shape(binit.shape, { out_channels }) then
      raise(("ValueError: For 'Conv2d', bias init shape error: the bias_init shape must be %s, but got %s.")
        :format(T.shape_str({ out_channels }), T.shape_str(binit.shape)))
    end
    self.bias = Parameter(initializer.initializer(binit, { out_channels }, dtype):init_data(), "bias")
  end
end

--- "same" padding of one spatial dimension: output ceil(n / s), the total
-- padding split with the extra pixel after (bottom or right).
local same_pads = require("cell.conv_ops")._same_pad

function Conv2d:construct(x)
  local shape = check_tensor("Conv2d", "x", x).shape
  if #shape ~= 4 or shape[2] ~= self.in_channels then
    raise(("ValueError: For 'Conv2d', the input must be 4-D {N, C, H, W} with C = in_channels (%d), but got %s.")
      :format(self.in_channels, T.shape_str(shape)))
  end
  local k, s, d = self.kernel_size, self.stride, self.dilation
  local pads
  if self._mode == "same" then
    local t, b = same_pads(shape[3], k[1], s[1], d[1])
    local l, r = same_pads(shape[4], k[2], s[2], d[2])
    pads = { t, b, l, r }
  elseif self._mode == "valid" then
    pads = { 0, 0, 0, 0 }
  else
    pads = self._pads
  end
  local eh, ew = (k[1] - 1) * d[1] + 1, (k[2] - 1) * d[2] + 1
  if shape[3] + pads[1] + pads[2] < eh or shape[4] + pads[3] + pads[4] < ew then
    raise(("ValueError: For 'Conv2d', the padded input (%d, %d) is smaller than the dilated kernel (%d, %d); "
      .. "the input has shape %s."):format(shape[3] + pads[1] + pads[2], shape[4] + pads[3] + pads[4], eh, ew,
        T.shape_str(shape)))
  end
  local y = ops.conv2d(x, self.weight, self.has_bias and self.bias or nil,
    { stride = s, padding = pads, dilation = d, groups = self.group })
  return y
end

function Conv2d:extend_repr()
  return ("input_channels=%d, output_channels=%d, kernel_size=%s, stride=%s, pad_mode=%s, padding=%s, "
    .. "dilation=%s, group=%d, has_bias=%s, weight_init=%s, bias_init=%s, format=%s")
    :format(self.in_channels, self.out_channels, T.tuple_str(self.kernel_size), T.tuple_str(self.stride),
      self.pad_mode, A.int_or_tuple_str(self.padding), T.tuple_str(self.dilation), self.group,
      tostring(self.has_bias), init_str(self.weight_init), init_str(self.bias_init), self.data_format)
end

return { Conv2d = Conv2d }
