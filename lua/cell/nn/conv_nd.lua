--- cell.nn.Conv1d, Conv3d, Conv1dTranspose, Conv2dTranspose and
-- Conv3dTranspose: MindSpore 2.x's convolution layers beside Conv2d, on the
-- functions of cell.conv_ops (cell.ops.conv1d, conv3d, conv_transpose*d).
-- Parameter names and shapes as MindSpore: weight {out, in/group, k...}
-- for a convolution, {in, out/group, k...} for a transposed one; bias {out}.
-- pad_mode "same" (default; output ceil(n / stride), or n * stride for a
-- transposed convolution, the odd padding element after), "valid" or
-- "pad" (padding an int or one (before, after) pair per spatial dimension:
-- {left, right}; {top, bottom, left, right}; {head, tail, top, bottom,
-- left, right}).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local initializer = require "cell.initializer"
local Parameter = require("cell.parameter").Parameter
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local C = require "cell.conv_ops"

local M = {}

local OPTIONS = { "stride", "pad_mode", "padding", "dilation", "group", "has_bias", "weight_init", "bias_init",
  "data_format", "dtype" }
local T_OPTIONS = { "stride", "pad_mode", "padding", "output_padding", "dilation", "group", "has_bias",
  "weight_init", "bias_init", "dtype" }
local DIMS = { "L", "H, W", "D, H, W" }

local init_str = A.init_str

--- padding as {b1, a1, ..., bn, an}: an int or a list of 2n.
local function layer_pads(cls, padding, nd)
  if type(padding) == "number" then
    A.nonneg_int(cls, "padding", padding, 3)
    local p = {}
    for i = 1, 2 * nd do p[i] = padding end
    return p
  end
  if not A.is_list(padding) then
    raise(("TypeError: For '%s', the type of 'padding' must be an integer or a list of %d integers, but got %s.")
      :format(cls, 2 * nd, T.type_name(padding)))
  end
  if #padding ~= 2 * nd then
    raise(("ValueError: For '%s', the 'padding' must be an integer or a list of %d integers, but got %d values.")
      :format(cls, 2 * nd, #padding))
  end
  local p = {}
  for i = 1, 2 * nd do p[i] = A.nonneg_int(cls, "padding", padding[i], 3) end
  return p
end

local function make(cls, nd, transposed)
  local Layer = Cell:extend(cls)
  M[cls] = Layer
  local names = transposed and T_OPTIONS or OPTIONS

  function Layer:init(in_channels, out_channels, kernel_size, ...)
    local v = { A.args(cls, names, select("#", ...), ...) }
    local o = {}
    for i, k in ipairs(names) do o[k] = v[i] end
    A.positive_int(cls, "in_channels", in_channels, 3, true)
    A.positive_int(cls, "out_channels", out_channels, 3, true)
    local k = A.int_tuple(cls, "kernel_size", kernel_size, nd, 3)
    local s = A.int_tuple(cls, "stride", o.stride == nil and 1 or o.stride, nd, 3)
    local d = A.int_tuple(cls, "dilation", o.dilation == nil and 1 or o.dilation, nd, 3)
    local pad_mode = A.choice(cls, "pad_mode", o.pad_mode == nil and "same" or o.pad_mode,
      { "same", "valid", "pad" }, 3, true)
    local padding = o.padding == nil and 0 or o.padding
    local pads = layer_pads(cls, padding, nd)
    local nonzero = false
    for i = 1, 2 * nd do if pads[i] ~= 0 then nonzero = true end end
    if pad_mode:lower() ~= "pad" and nonzero then
      raise(("ValueError: For '%s', the 'padding' must be zero when 'pad_mode' is not 'pad', but got padding %s "
        .. "and pad_mode '%s'."):format(cls, A.int_or_tuple_str(padding), pad_mode))
    end
    local group = A.positive_int(cls, "group", o.group == nil and 1 or o.group, 3)
    if in_channels % group ~= 0 then
      raise(("ValueError: For '%s', the attr 'in_channels' must be divisible by attr 'group', but got "
        .. "'in_channels': %d and 'group': %d."):format(cls, in_channels, group))
    end
    if out_channels % group ~= 0 then
      raise(("ValueError: For '%s', the 'out_channels' must be divisible by attr 'group', but got "
        .. "'out_channels': %d and 'group': %d."):format(cls, out_channels, group))
    end
    if transposed then
      self._op = A.int_tuple(cls, "output_padding", o.output_padding == nil and 0 or o.output_padding, nd, 3,
        false, true)
      for i = 1, nd do
        if self._op[i] >= s[i] then
          raise(("ValueError: For '%s', the 'output_padding' %s must be smaller than the 'stride' %s.")
            :format(cls, T.tuple_str(self._op), T.tuple_str(s)))
        end
      end
      self.output_padding = o.output_padding == nil and 0 or o.output_padding
    end
    local has_bias = A.bool(cls, "has_bias", o.has_bias, false, 3)
    if not transposed then
      self.data_format = A.choice(cls, "data_format", o.data_format == nil and (nd == 3 and "NCDHW" or "NCW")
        or o.data_format, { nd == 3 and "NCDHW" or "NCW" }, 3)
    end
    local dtype = A.float_dtype(cls, o.dtype, 3)
    self.in_channels, self.out_channels, self.kernel_size, self.stride = in_channels, out_channels, k, s
    self.pad_mode, self.padding, self.dilation, self.group = pad_mode, padding, d, group
    self.has_bias, self.weight_init, self.bias_init = has_bias, o.weight_init, o.bias_init
    self._pads, self._mode = pads, pad_mode:lower()

    local shape
    if transposed then
      shape = { in_channels, math.floor(out_channels / group) }
    else
      shape = { out_channels, math.floor(in_channels / group) }
    end
    local fan_in = shape[2]
    for i = 1, nd do
      shape[i + 2] = k[i]
      fan_in = fan_in * k[i]
    end
    if core.is_tensor(o.weight_init) and not T.same_shape(o.weight_init.shape, shape) then
      raise(("ValueError: For '%s', weight init shape error: the weight_init shape must be %s, but got %s.")
        :format(cls, T.shape_str(shape), T.shape_str(o.weight_init.shape)))
    end
    local winit = o.weight_init
    if winit == nil then winit = initializer.HeUniform(math.sqrt(5)) end
    self.weight = Parameter(initializer.initializer(winit, shape, dtype):init_data(), "weight")
    if has_bias then
      local binit = o.bias_init
      if binit == nil then binit = initializer.Uniform(1 / math.sqrt(fan_in)) end
      if core.is_tensor(binit) and not T.same_shape(binit.shape, { out_channels }) then
        raise(("ValueError: For '%s', bias init shape error: the bias_init shape must be %s, but got %s.")
          :format(cls, T.shape_str({ out_channels }), T.shape_str(binit.shape)))
      end
      self.bias = Parameter(initializer.initializer(binit, { out_channels }, dtype):init_data(), "bias")
    end
  end

  function Layer:construct(x)
    local shape = check_tensor(cls, "x", x).shape
    if #shape ~= nd + 2 or shape[2] ~= self.in_channels then
      raise(("ValueError: For '%s', the input must be %d-D {N, C, %s} with C = in_channels (%d), but got %s.")
        :format(cls, nd + 2, DIMS[nd], self.in_channels, T.shape_str(shape)))
    end
    local k, s, d = self.kernel_size, self.stride, self.dilation
    local pads = {}
    local b = self.has_bias and self.bias or nil
    if transposed then
      for i = 1, nd do
        if self._mode == "same" then
          local total = d[i] * (k[i] - 1) + 1 - s[i]
          local before = math.floor(total / 2)
          pads[2 * i - 1], pads[2 * i] = before, total - before
        elseif self._mode == "valid" then
          pads[2 * i - 1], pads[2 * i] = 0, 0
        else
          pads[2 * i - 1], pads[2 * i] = self._pads[2 * i - 1], self._pads[2 * i]
        end
      end
      return C._conv_transpose_nd(cls, x, self.weight, b, nd, s, pads, self._op, d, self.group)
    end
    for i = 1, nd do
      if self._mode == "same" then
        pads[2 * i - 1], pads[2 * i] = C._same_pad(shape[i + 2], k[i], s[i], d[i])
      elseif self._mode == "valid" then
        pads[2 * i - 1], pads[2 * i] = 0, 0
      else
        pads[2 * i - 1], pads[2 * i] = self._pads[2 * i - 1], self._pads[2 * i]
      end
    end
    return C._conv_nd(cls, x, self.weight, b, nd, s, pads, d, self.group)
  end

  function Layer:extend_repr()
    local text = ("input_channels=%d, output_channels=%d, kernel_size=%s, stride=%s, pad_mode=%s, padding=%s, ")
      :format(self.in_channels, self.out_channels, T.tuple_str(self.kernel_size), T.tuple_str(self.stride),
        self.pad_mode, A.int_or_tuple_str(self.padding))
    if transposed then text = text .. ("output_padding=%s, "):format(A.int_or_tuple_str(self.output_padding)) end
    return text .. ("dilation=%s, group=%d, has_bias=%s, weight_init=%s, bias_init=%s")
      :format(T.tuple_str(self.dilation), self.group, tostring(self.has_bias), init_str(self.weight_init),
        init_str(self.bias_init))
  end
end

make("Conv1d", 1, false)
make("Conv3d", 3, false)
make("Conv1dTranspose", 1, true)
make("Conv2dTranspose", 2, true)
make("Conv3dTranspose", 3, true)

return M
