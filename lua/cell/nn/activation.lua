--- cell.nn activations as cells: ReLU, Sigmoid, Tanh, GELU, SiLU, Softmax,
-- LogSoftmax; and get_activation, which makes one from its MindSpore name
-- ("relu", "gelu", "softmax", ...).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local ops = require "cell.ops"
local args = require "cell.util.args"
local T = require "cell.util.types"

local M = {}

local function define(name, method)
  local C = Cell:extend(name)
  C.construct = function(_, x) return check_tensor(name, "x", x)[method](x) end
  M[name] = C
  return C
end

define("ReLU", "relu")
define("Sigmoid", "sigmoid")
define("Tanh", "tanh")
define("SiLU", "silu")

local function check_bool(cls, what, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the '%s' must be a boolean, but got %s."):format(cls, what, type(v)))
  end
  return v
end

--- GELU([approximate = true]) or GELU{approximate = }: MindSpore's default
-- is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));
-- approximate = false is the exact x Phi(x).
local GELU = Cell:extend("GELU")
M.GELU = GELU
local GELU_ARGS = { "approximate" }
function GELU:init(...)
  local approximate = args.parse("GELU", GELU_ARGS, 3, select("#", ...), ...)
  self.approximate = check_bool("GELU", "approximate", approximate, true)
end
local GELU_C = math.sqrt(2 / math.pi)
function GELU:construct(x)
  check_tensor("GELU", "x", x)
  if not self.approximate then return x:gelu() end
  local inner = (x + x * x * x * 0.044715) * GELU_C
  return x * 0.5 * (inner:tanh() + 1)
end

--- Softmax and LogSoftmax over one axis (1-based, negative from the end;
-- default -1, the last): Softmax([axis = -1]) or Softmax{axis = }.
local SOFTMAX_ARGS = { "axis" }
local function define_softmax(name, op_name)
  local C = Cell:extend(name)
  function C:init(...)
    local axis = args.parse(name, SOFTMAX_ARGS, 3, select("#", ...), ...)
    if axis == nil then axis = -1 end
    if not T.is_int(axis) then -- a wrong number as itself, anything else by its type name
      raise(("TypeError: For '%s', the 'axis' must be an integer, but got %s.")
        :format(name, type(axis) == "number" and T.num_str(axis) or T.type_name(axis)))
    end
    if axis == 0 then
      raise(("ValueError: For '%s', the 'axis' is 1-based (or negative, -1 for the last), but got 0."):format(name))
    end
    self.axis = axis
  end
  function C:construct(x)
    local n = check_tensor(name, "x", x).ndim
    local a = self.axis < 0 and self.axis + n + 1 or self.axis
    if a < 1 or a > n then
      raise(("ValueError: For '%s', the 'axis' (%d) must be in range [%d, -1] or [1, %d] for an input of %d "
        .. "dimensions."):format(name, self.axis, -n, n, n))
    end
    local y = ops[op_name](x, self.axis)
    return y
  end
  M[name] = C
end
define_softmax("Softmax", "softmax")
define_softmax("LogSoftmax", "log_softmax")

local by_name = {
  relu = "ReLU", sigmoid = "Sigmoid", tanh = "Tanh", gelu = "GELU", silu = "SiLU", softmax = "Softmax",
  logsoftmax = "LogSoftmax",
}

--- The activation cell named `name` (MindSpore's lower-case names).
function M.get_activation(name, lvl)
  local cls = by_name[name]
  if not cls then
    local known = {}
    for k in pairs(by_name) do known[#known + 1] = k end
    table.sort(known)
    raise(("KeyError: Unknown activation '%s'; known: %s"):format(tostring(name), table.concat(known, ", ")))
  end
  return M[cls]()
end

return M
