--- cell.nn activations as cells: ReLU, Sigmoid, Tanh; and get_activation,
-- which makes one from its MindSpore name ("relu", ...).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local Cell = require "cell.nn.cell"

local M = {}

local function define(name, method)
  local C = Cell:extend(name)
  C.construct = function(_, x) return x[method](x) end
  M[name] = C
  return C
end

define("ReLU", "relu")
define("Sigmoid", "sigmoid")
define("Tanh", "tanh")

local by_name = { relu = "ReLU", sigmoid = "Sigmoid", tanh = "Tanh" }

--- The activation cell named `name` (MindSpore's lower-case names).
function M.get_activation(name, lvl)
  local cls = by_name[name]
  if not cls then
    local known = {}
    for k in pairs(by_name) do known[#known + 1] = k end
    table.sort(known)
    error(("KeyError: Unknown activation '%s'; known: %s"):format(tostring(name), table.concat(known, ", ")),
      (lvl or 1) + 1)
  end
  return M[cls]()
end

return M
