--- cell.nn.Dense: the fully connected layer, y = x W^T + b, with
-- MindSpore's parameter names, shapes ({out, in} and {out}), default
-- initialisers (HeUniform(sqrt(5)) for the weight, Uniform(1/sqrt(in)) for
-- the bias) and extend_repr text. The parameters are made with their values
-- at once (not lazily), so they can be read before the first call.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local is_tensor = core.is_tensor
local dense = core.nnops.dense
local initializer = require "cell.initializer"
local Parameter = require("cell.parameter").Parameter
local I = require "cell.nn.internal"
local S = I.S
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"

local Dense = Cell:extend("Dense")

local OPTIONS = { "weight_init", "bias_init", "has_bias", "activation", "dtype" }

--- Dense(in_channels, out_channels [, weight_init, bias_init, has_bias = true,
-- activation, dtype = float32]) or Dense(in, out, {weight_init = , ...}).
function Dense:init(in_channels, out_channels, ...)
  local weight_init, bias_init, has_bias, activation, dtype = A.args("Dense", OPTIONS, select("#", ...), ...)
  -- MindSpore's check_positive_int: TypeError for a non-integer (a string,
  -- 2.5), ValueError for an integer below 1
  A.positive_int("Dense", "in_channels", in_channels, 3, true)
  A.positive_int("Dense", "out_channels", out_channels, 3, true)
  if has_bias == nil then has_bias = true end
  if type(has_bias) ~= "boolean" then
    raise(("TypeError: For 'Dense', the 'has_bias' must be a boolean, but got %s."):format(T.type_name(has_bias)))
  end
  dtype = dtype or core.float32
  self.in_channels, self.out_channels, self.has_bias = in_channels, out_channels, has_bias
  if weight_init == nil then weight_init = initializer.HeUniform(math.sqrt(5)) end
  if core.is_tensor(weight_init) and not T.same_shape(weight_init.shape, { out_channels, in_channels }) then
    raise(("ValueError: For 'Dense', weight init shape error: the weight_init shape must be %s, but got %s.")
      :format(T.shape_str({ out_channels, in_channels }), T.shape_str(weight_init.shape)))
  end
  self.weight = Parameter(initializer.initializer(weight_init, { out_channels, in_channels }, dtype):init_data(),
    "weight")
  if has_bias then
    if bias_init == nil then bias_init = initializer.Uniform(1 / math.sqrt(in_channels)) end
    if core.is_tensor(bias_init) and not T.same_shape(bias_init.shape, { out_channels }) then
      raise(("ValueError: For 'Dense', bias init shape error: the bias_init shape must be %s, but got %s.")
        :format(T.shape_str({ out_channels }), T.shape_str(bias_init.shape)))
    end
    self.bias = Parameter(initializer.initializer(bias_init, { out_channels }, dtype):init_data(), "bias")
  end
  if type(activation) == "string" then
    local act = require("cell.nn.activation").get_activation(activation, 4)
    activation = act
  end
  if activation ~= nil and not I.is_cell(activation) then
    raise(("TypeError: For 'Dense', the 'activation' must be a string or a Cell, but got %s.")
      :format(T.type_name(activation)))
  end
  self.activation = activation
end

-- Dense:construct reads its fields from the cell's state directly (one
-- rawget instead of a trip through Cell.__index per field), falling back
-- to self.<field> wherever __index could answer differently: a field not
-- where Dense:init put it, parameters cast under to_float, a class member.
local function field(self, st, k)
  local v = st.attrs[k]
  if v ~= nil then return v end
  v = st.cells.val[k]
  if v ~= nil then return v end
  local cls = getmetatable(self)
  local hints = cls.__hints
  if cls[k] == nil and st.params.val[k] == nil and st.buffers.val[k] == nil
    and not (type(hints) == "table" and hints[k]) then
    return nil
  end
  return self[k]
end

local function param(self, st, k)
  local v = st.params.val[k]
  if v == nil or st.pcast ~= nil then return self[k] end
  return v
end

function Dense:construct(x)
  if not is_tensor(x) then check_tensor("Dense", "x", x) end
  local st = rawget(self, S)
  local attrs = st.attrs -- (a plain attribute lives there; else __index finds it)
  local in_channels = attrs.in_channels
  if in_channels == nil then in_channels = self.in_channels end
  local shape = x.shape
  local n = #shape
  if n == 0 or shape[n] ~= in_channels then
    raise(("ValueError: For 'Dense', the last dimension of the input must be in_channels (%d), but got an input "
      .. "of shape %s."):format(in_channels, T.shape_str(shape)))
  end
  -- one fused op: x W^T + b as one gemm over all leading dimensions
  local has_bias = attrs.has_bias
  if has_bias == nil then has_bias = self.has_bias end
  local y = dense(x, param(self, st, "weight"), has_bias and param(self, st, "bias") or nil)
  local activation = field(self, st, "activation")
  if activation then y = activation(y) end
  return y
end

function Dense:extend_repr()
  local s = ("input_channels=%d, output_channels=%d"):format(self.in_channels, self.out_channels)
  if self.has_bias then s = s .. ", has_bias=true" end
  if self.activation then s = s .. ", activation=" .. tostring(self.activation) end
  return s
end

return { Dense = Dense }
