--- cell.nn.internal: what the files of the Cell implementation share and
-- users do not see: the private key of a cell's state and hook handles.
-- (Type names and shape text for messages are cell.util.types'.)
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local types = require "cell.util.types"

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

--- A sequence with its count, as hooks receive their arguments: Lua 5.4's
-- table.pack (in C: 250 ns against 430 for the Lua form, on every hooked
-- call), the same table built in Lua where there is none (LuaJIT).
M.pack = table.pack or function(...) return { n = select("#", ...), ... } end

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
  if not types.is_callable(fn) then
    raise(("TypeError: %s: the hook must be a function, but got %s"):format(method, types.type_name(fn)))
  end
end

return M
