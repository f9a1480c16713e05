--- cell.nn activations beyond activation.lua, as MindSpore 2.7 defines
-- them: LeakyReLU, ELU, SeLU, CELU, PReLU, Softplus, Softsign, Mish, ReLU6,
-- HSwish, HSigmoid, LogSigmoid, Hardtanh, Tanhshrink. Each but PReLU is
-- one fused kernel forward and backward (cell.ops.leaky_relu and friends);
-- PReLU learns its slope `w` (a Parameter named "a" as in MindSpore, one
-- value or one per channel).
-- Options positionally in MindSpore's order or as a table.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local Parameter = require("cell.parameter").Parameter
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"

local M = {}

local function plain(name, op)
  local C = Cell:extend(name)
  function C:construct(x) return ops[op](check_tensor(name, "x", x)) end
  M[name] = C
end
plain("SeLU", "selu")
plain("Softsign", "softsign")
plain("Mish", "mish")
plain("ReLU6", "relu6")
plain("HSwish", "hardswish")
plain("HSigmoid", "hardsigmoid")
plain("LogSigmoid", "logsigmoid")
plain("Tanhshrink", "tanhshrink")

--- LeakyReLU([alpha = 0.2]), ELU([alpha = 1.0]), CELU([alpha = 1.0]).
local function with_alpha(name, op, default, nonzero)
  local C = Cell:extend(name)
  function C:init(...)
    local alpha = A.args(name, { "alpha" }, select("#", ...), ...)
    self.alpha = A.number(name, "alpha", alpha, default, 3)
    if nonzero and self.alpha == 0 then
      raise(("ValueError: For '%s', the 'alpha' must not be 0, but got 0."):format(name))
    end
  end
  function C:construct(x) return ops[op](check_tensor(name, "x", x), self.alpha) end
  function C:extend_repr() return "alpha=" .. T.num_str(self.alpha) end
  M[name] = C
end
with_alpha("LeakyReLU", "leaky_relu", 0.2)
with_alpha("ELU", "elu", 1.0)
with_alpha("CELU", "celu", 1.0, true)

--- Hardtanh([min_val = -1.0, max_val = 1.0]).
local Hardtanh = Cell:extend("Hardtanh")
M.Hardtanh = Hardtanh
function Hardtanh:init(...)
  local lo, hi = A.args("Hardtanh", { "min_val", "max_val" }, select("#", ...), ...)
  self.min_val = A.number("Hardtanh", "min_val", lo, -1.0, 3)
  self.max_val = A.number("Hardtanh", "max_val", hi, 1.0, 3)
  if self.min_val > self.max_val then
    raise(("ValueError: For 'Hardtanh', the 'min_val' (%s) must not exceed the 'max_val' (%s).")
      :format(T.num_str(self.min_val), T.num_str(self.max_val)))
  end
end
function Hardtanh:construct(x)
  return ops.hardtanh(check_tensor("Hardtanh", "x", x), self.min_val, self.max_val)
end

--- Softplus([beta = 1, threshold = 20]).
local Softplus = Cell:extend("Softplus")
M.Softplus = Softplus
function Softplus:init(...)
  local beta, threshold = A.args("Softplus", { "beta", "threshold" }, select("#", ...), ...)
  self.beta = A.number("Softplus", "beta", beta, 1, 3)
  self.threshold = A.number("Softplus", "threshold", threshold, 20, 3)
  if self.beta == 0 then raise("ValueError: For 'Softplus', the 'beta' must not be 0, but got 0.") end
end
function Softplus:construct(x)
  return ops.softplus(check_tensor("Softplus", "x", x), self.beta, self.threshold)
end

--- PReLU([channel = 1, w = 0.25]): max(0, x) + w min(0, x) with w a
-- Parameter of `channel` values, one per channel (dimension 2 of x) or one
-- shared. w may be a number, a list of `channel` numbers or a Tensor.
local PReLU = Cell:extend("PReLU")
M.PReLU = PReLU
function PReLU:init(...)
  local channel, w = A.args("PReLU", { "channel", "w" }, select("#", ...), ...)
  channel = A.positive_int("PReLU", "channel", channel == nil and 1 or channel, 3)
  if w == nil then w = 0.25 end
  local t
  if type(w) == "number" then
    t = core.full({ channel }, w, core.float32)
  elseif A.is_list(w) and #w == channel then
    for i = 1, #w do
      if type(w[i]) ~= "number" then
        raise(("TypeError: For 'PReLU', the 'w' list must hold numbers, but got %s."):format(T.type_name(w[i])))
      end
    end
    t = core.tensor(w, core.float32)
  elseif core.is_tensor(w) then
    if not w.dtype.is_floating_point or w.numel and w:numel() ~= channel then
      raise(("ValueError: For 'PReLU', the 'w' Tensor must be float with %s values, but got %s of shape %s.")
        :format(string.format("%.17g", channel), tostring(w.dtype), T.shape_str(w.shape)))
    end
    t = w:reshape({ channel }):clone()
  else
    raise(("TypeError: For 'PReLU', the 'w' must be a float, a list of %s floats or a Tensor, but got %s.")
      :format(string.format("%.17g", channel), T.type_name(w)))
  end
  self.channel = channel
  self.w = Parameter(t, "a") -- MindSpore's name for it: checkpoints key it as <path>.a
end
function PReLU:construct(x)
  local shape = check_tensor("PReLU", "x", x).shape
  local c = self.channel
  if c > 1 and (#shape < 2 or shape[2] ~= c) then
    raise(("ValueError: For 'PReLU', the input must have channel (%d) values on dimension 2, but got shape %s.")
      :format(c, T.shape_str(shape)))
  end
  local w = self.w
  if w.dtype ~= x.dtype then w = w:astype(x.dtype) end
  return ops.prelu(x, w)
end

return M
