--- cell.nn.internal: what the files of the Cell implementation share and
-- users do not see: the private key of a cell's state, type names for error
-- messages, Python-style text for shapes and lists, and hook handles.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"

local M = {}

--- The key under which a cell keeps its state (raw, in the instance table).
-- No user code can form it, so no attribute name clashes with it.
M.S = setmetatable({}, { __tostring = function() return "<cell state>" end })

local S = M.S

--- The state of `self` when it is a cell, else nil.
function M.state(self)
  if type(self) ~= "table" then return nil end
  return rawget(self, S)
end

--- Whether `x` is a Cell instance.
function M.is_cell(x)
  return type(x) == "table" and rawget(x, S) ~= nil
end

--- The class name of a cell.
function M.class_name(c)
  local mt = getmetatable(c)
  local cls = mt and rawget(mt, "__class")
  return cls and rawget(cls, "name") or "Cell"
end

local cell_mod
local function cellm()
  cell_mod = cell_mod or require "cell"
  return cell_mod
end
M.cellm = cellm

local init = require "cell.initializer"

--- The type of `v` as error messages name it: Parameter, Tensor, a class
-- instance's class name (a cell's, ParameterTuple), or Lua's type name.
M.type_name = init.type_name

--- A shape as Python prints a tuple: (2, 3), (2,), ().
M.shape_str = init.shape_tuple

--- Whether two shapes (tables) are equal.
M.same_shape = init.same_shape

--- A list of strings as Python prints it: ['a', 'b'].
function M.str_list(list)
  local parts = {}
  for i = 1, #list do parts[i] = "'" .. tostring(list[i]) .. "'" end
  return "[" .. table.concat(parts, ", ") .. "]"
end

--- Whether `t` is a plain table (no metatable): an options table or a list.
function M.is_plain(t) return type(t) == "table" and getmetatable(t) == nil end

--- Whether `v` can be called: a function or a table with __call.
function M.is_callable(v)
  if type(v) == "function" then return true end
  local mt = type(v) == "table" and getmetatable(v)
  return mt and mt.__call ~= nil or false
end

--- A sequence with its count, as hooks receive their arguments.
function M.pack(...) return { n = select("#", ...), ... } end

M.unpack = table.unpack or unpack

--- Hook lists are arrays replaced on every change (copy on write), so a
-- loop running over one is never disturbed by a hook that registers or
-- removes another: the change takes effect from the next call.
local Handle = {}
Handle.__index = Handle

local next_id = 0

--- Add `entry` (a table; its `id` is set) to the list `owner[field]` and
-- return a handle whose remove() takes it out. `on_change(owner)` runs
-- after each change, when given.
function M.add_hook(owner, field, entry, on_change)
  next_id = next_id + 1
  entry.id = next_id
  local old = owner[field] or {}
  local new = {}
  for i = 1, #old do new[i] = old[i] end
  new[#new + 1] = entry
  owner[field] = new
  if on_change then on_change(owner) end
  return setmetatable({ id = next_id, owner = owner, field = field, on_change = on_change }, Handle)
end

--- Take the hook out of its list; removing twice does nothing.
function Handle:remove()
  local old = self.owner[self.field]
  if not old then return end
  local new = {}
  for i = 1, #old do
    if old[i].id ~= self.id then new[#new + 1] = old[i] end
  end
  if #new == #old then return end
  self.owner[self.field] = (#new > 0) and new or nil
  if self.on_change then self.on_change(self.owner) end
end

function Handle:__tostring() return "HookHandle(id=" .. self.id .. ")" end

--- Check that `fn` can be called, for every register_*hook.
function M.check_hook_fn(method, fn, lvl)
  if not M.is_callable(fn) then
    raise(("TypeError: %s: the hook must be a function, but got %s"):format(method, M.type_name(fn)))
  end
end

return M
