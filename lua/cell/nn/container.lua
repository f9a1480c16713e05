--- cell.nn.SequentialCell, CellList and CellDict: MindSpore 2.x's
-- containers of cells.
--
-- Members are sub-cells named as MindSpore names them, "0", "1", ... (or
-- the names of an OrderedDict / CellDict), so state_dict keys and
-- checkpoints read "0.weight" as MindSpore's and PyTorch's files do. Lua
-- access is 1-based: seq[1] is the member named "0", seq[-1] the last; a
-- position past the end reads nil (as a Lua table does), position 0 is an
-- IndexError. seq[seq:len() + 1] = c appends. Methods: append, extend,
-- insert (1-based, as table.insert), remove (returns the cell, as
-- table.remove), len and iter (`for i, c in seq:iter() do`). After insert
-- and remove the numbered members are numbered again from "0" and, with
-- auto_prefix, their parameters renamed to match, as MindSpore's CellList
-- does. `#seq` counts the members on Lua 5.4; LuaJIT takes no __len from
-- a table's metatable (`#seq` is 0 there), so portable code uses seq:len().
--
-- CellDict maps names to cells: d.name or d["name"] reads a member,
-- d["name"] = c adds or replaces one, d["name"] = nil removes it; keys,
-- values, items, update, pop, clear, len and contains as MindSpore's. A
-- plain Lua table of name = cell has no order, so update takes its names
-- sorted; pass a list of {name, cell} pairs or an OrderedDict to choose it.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local class = require "cell.class"
local OrderedDict = require "cell.ordered_dict"
local R = require "cell.nn.registry"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"

local S, is_cell, type_name, class_name = I.S, I.is_cell, T.type_name, T.class_name
local cell_index, cell_newindex = Cell.__index, Cell.__newindex

local M = {}

--- The (name, cell) members in order, skipping names without a value.
local function members(self)
  local out = {}
  for name, c in R.each(rawget(self, S).cells) do
    if c ~= nil then out[#out + 1] = { name, c } end
  end
  return out
end

--- MindSpore's _get_prefix_and_index: the path a containing cell put before
-- the members' parameter names (from the first member with a parameter).
local function prefix_of(self)
  for _, e in ipairs(members(self)) do
    for rel, p in e[2]:parameters_and_names() do
      local suffix = e[1] .. "." .. rel
      local name = p.name
      if #name >= #suffix and name:sub(-#suffix) == suffix then return name:sub(1, #name - #suffix) end
      return ""
    end
  end
  return ""
end

local function check_cell(self, c, lvl)
  if not is_cell(c) then
    raise(("TypeError: For '%s', each cell should be subclass of Cell, but got %s."):format(class_name(self),
      c == nil and "nil" or type_name(c)))
  end
end

--- Add `c` under `name` (last), renaming its parameters under the prefix.
local function add(self, name, c, prefix)
  R.set(rawget(self, S).cells, name, c)
  if rawget(self, S).auto_prefix then c:update_parameters_name(prefix .. name .. ".") end
end

--- Store the list of {name, cell} again, numbered names renumbered from "0"
-- by position, and rename the parameters of the members whose name changed.
local function rebuild(self, list, prefix)
  local st = rawget(self, S)
  st.cells = R.new()
  for i, e in ipairs(list) do
    local name = e[1]
    if name == nil or name:match("^%d+$") then name = tostring(i - 1) end
    R.set(st.cells, name, e[2])
    if st.auto_prefix and (name ~= e[1] or e.new) then e[2]:update_parameters_name(prefix .. name .. ".") end
  end
end

--- A 1-based position of a container of n members (negative from the end)
-- as 1..n; nil when outside (or n + 1 when `append_ok`).
local function position(self, k, n, lvl, append_ok)
  if not T.is_int(k) then
    raise(("TypeError: For '%s', the index must be an integer, but got %s."):format(class_name(self), T.num_str(k)))
  end
  if k == 0 then
    raise(("IndexError: For '%s', indices are 1-based (the first member, named \"0\", is [1]), but got 0.")
      :format(class_name(self)))
  end
  if k < 0 then k = n + k + 1 end
  if k >= 1 and k <= n then return k end
  if append_ok and k == n + 1 then return k end
  return nil
end

local function range_error(self, k, n, lvl, extra)
  raise(("IndexError: For '%s', the index must be in range [%d, -1] or [1, %d]%s, but got %s.")
    :format(class_name(self), -n, n, extra or "", tostring(k)))
end

--- The list methods SequentialCell and CellList share.
local function install_list_methods(C)
  --- c[i]: the i-th member (1-based; nil past the end); other keys as a Cell.
  function C.__index(self, k)
    if type(k) ~= "number" then return cell_index(self, k) end
    local list = members(self)
    -- level 3: the class's lookup wraps this function (see cell.class)
    local i = position(self, k, #list, 3)
    return i and list[i][2] or nil
  end

  --- c[i] = cell replaces the i-th member (i = len + 1 appends); other keys as a Cell.
  function C.__newindex(self, k, v)
    if type(k) ~= "number" then return cell_newindex(self, k, v) end
    local list = members(self)
    local i = position(self, k, #list, 2, true)
    if i == nil then range_error(self, k, #list, 2, " (or " .. (#list + 1) .. " to append)") end
    if v == nil then
      raise(("TypeError: For '%s', a member can not be set to nil; use remove(%d) to take it out.")
        :format(class_name(self), k))
    end
    check_cell(self, v, 2)
    local prefix = prefix_of(self)
    if i == #list + 1 then return add(self, tostring(#list), v, prefix) end
    local name = list[i][1]
    R.set(rawget(self, S).cells, name, v)
    if rawget(self, S).auto_prefix then v:update_parameters_name(prefix .. name .. ".") end
  end

  --- The number of members; `#seq` too on Lua 5.4 (LuaJIT takes no __len
  -- from a table's metatable: there `#seq` is 0, use seq:len()).
  function C:len() return #members(self) end
  C.__len = C.len

  --- An iterator of (position, cell), for a generic `for`.
  function C:iter()
    local list, i = members(self), 0
    return function()
      i = i + 1
      local e = list[i]
      if e then return i, e[2] end
    end
  end

  --- Add a cell at the end; returns self.
  function C:append(c)
    check_cell(self, c, 2)
    add(self, tostring(#members(self)), c, prefix_of(self))
    return self
  end

  --- Add each cell of a list at the end; returns self.
  function C:extend(cells)
    if not A.is_list(cells) then
      raise(("TypeError: For '%s', the new cells wanted to append should be a list of cells, but got %s.")
        :format(class_name(self), type_name(cells)))
    end
    for i = 1, #cells do check_cell(self, cells[i], 2) end
    local prefix = prefix_of(self)
    for i = 1, #cells do add(self, tostring(#members(self)), cells[i], prefix) end
    return self
  end

  --- insert(i, cell): put the cell at position i (1-based, len + 1 appends,
  -- negative counts from the end as Python's list.insert does).
  function C:insert(index, c)
    local list = members(self)
    local n = #list
    local i = type(index) == "number" and position(self, index, n, 2, true) or nil
    if type(index) ~= "number" then
      raise(("TypeError: For '%s', the index must be an integer, but got %s."):format(class_name(self),
        type_name(index)))
    end
    if i == nil then range_error(self, index, n, 2, " (or " .. (n + 1) .. " to append)") end
    check_cell(self, c, 2)
    local prefix = prefix_of(self)
    table.insert(list, i, { nil, c, new = true })
    rebuild(self, list, prefix)
    return self
  end

  --- remove([i = len]): take out the i-th member and return it.
  function C:remove(index)
    local list = members(self)
    local n = #list
    if index == nil then index = n end
    if type(index) ~= "number" then
      raise(("TypeError: For '%s', the index must be an integer, but got %s."):format(class_name(self),
        type_name(index)))
    end
    local i = position(self, index, n, 2)
    if i == nil then range_error(self, index, n, 2) end
    local prefix = prefix_of(self)
    local e = table.remove(list, i)
    rebuild(self, list, prefix)
    return e[2]
  end
end

-- SequentialCell ----------------------------------------------------------------

local SequentialCell = Cell:extend("SequentialCell")
M.SequentialCell = SequentialCell
install_list_methods(SequentialCell)

--- SequentialCell(cell, cell, ...), SequentialCell{cell, cell, ...} or
-- SequentialCell(ordered_dict) (members named by its keys).
function SequentialCell:init(...)
  local n, first = select("#", ...), ...
  if n == 1 and class.is_instance(first, OrderedDict) then
    for name, c in OrderedDict.items(first) do
      check_cell(self, c, 3)
      add(self, name, c, "")
    end
    return
  end
  local list = { ... }
  if n == 1 and not is_cell(first) then
    if not A.is_list(first) then
      raise(("TypeError: For 'SequentialCell', the 'args[0]' must be a list or an OrderedDict, but got %s.")
        :format(type_name(first)))
    end
    list, n = first, #first
  end
  for i = 1, n do check_cell(self, list[i], 3) end
  for i = 1, n do add(self, tostring(i - 1), list[i], "") end
end

--- Each member's output is the next one's input.
function SequentialCell:construct(x)
  for _, c in R.each(rawget(self, S).cells) do
    if c ~= nil then x = c(x) end
  end
  return x
end

-- CellList -----------------------------------------------------------------------

local CellList = Cell:extend("CellList")
M.CellList = CellList
install_list_methods(CellList)

--- CellList([cells [, {auto_prefix = true}]]): a list of cells with no construct.
function CellList:init(cells, opts)
  if opts ~= nil then
    if type(opts) ~= "table" or getmetatable(opts) ~= nil then
      raise(("TypeError: For 'CellList', the options must be a table {auto_prefix = ...}, but got %s.")
        :format(type_name(opts)))
    end
    rawget(self, S).auto_prefix = A.bool("CellList", "auto_prefix", opts.auto_prefix, true, 3)
  end
  if cells == nil then return end
  if not A.is_list(cells) then
    raise(("TypeError: For 'CellList', the new cells wanted to append should be a list of cells, but got %s.")
      :format(type_name(cells)))
  end
  for i = 1, #cells do check_cell(self, cells[i], 3) end
  for i = 1, #cells do add(self, tostring(i - 1), cells[i], "") end
end

-- CellDict -----------------------------------------------------------------------

local CellDict = Cell:extend("CellDict")
M.CellDict = CellDict

local function check_key(self, key, lvl)
  if type(key) ~= "string" then
    raise(("TypeError: For 'CellDict', the type of key should be string, but got %s."):format(type_name(key)))
  end
  if key == "" then raise("KeyError: For 'CellDict', the key can not be an empty string.") end
  if key:find(".", 1, true) then
    raise(("KeyError: For 'CellDict', the key can not contain '.', but got '%s'."):format(key))
  end
  if self:hasattr(key) and not R.has(rawget(self, S).cells, key) then
    raise(("KeyError: For 'CellDict', the key can not be the name of an attribute or method of CellDict, but got "
      .. "'%s'."):format(key))
  end
end

local function dict_set(self, key, c, lvl)
  check_key(self, key, lvl + 1)
  if not is_cell(c) then
    raise(("TypeError: For 'CellDict', the type of cell should be Cell, but got %s.")
      :format(c == nil and "nil" or type_name(c)))
  end
  local prefix = prefix_of(self)
  add(self, key, c, prefix)
end

--- d[name] = cell adds or replaces a member, d[name] = nil removes one;
-- other values are plain attributes, as on any Cell.
function CellDict.__newindex(self, k, v)
  if type(k) == "string" and v == nil and R.has(rawget(self, S).cells, k) then
    R.remove(rawget(self, S).cells, k)
    return
  end
  if not is_cell(v) then return cell_newindex(self, k, v) end
  dict_set(self, k, v, 2)
end

--- The pairs of `cells` as {name, cell}: a list of pairs, an OrderedDict,
-- a CellDict, or a plain table of name = cell (names sorted).
local function pairs_of(cells, lvl)
  local out = {}
  if class.is_instance(cells, OrderedDict) then
    for k, v in OrderedDict.items(cells) do out[#out + 1] = { k, v } end
  elseif class.is_instance(cells, CellDict) then
    for _, e in ipairs(members(cells)) do out[#out + 1] = e end
  elseif type(cells) == "table" and getmetatable(cells) == nil and not is_cell(cells) then
    if rawget(cells, 1) ~= nil then
      for i, kv in ipairs(cells) do
        if type(kv) ~= "table" or is_cell(kv) or getmetatable(kv) ~= nil then
          raise(("TypeError: CellDict update sequence element #%d should be a {name, cell} pair, but got %s.")
            :format(i, type_name(kv)))
        end
        if #kv ~= 2 then
          raise(("ValueError: CellDict update sequence element #%d has length %d; 2 is required."):format(i, #kv))
        end
        out[#out + 1] = { kv[1], kv[2] }
      end
    else
      local keys = {}
      for k in pairs(cells) do
        if type(k) ~= "string" then
          raise(("TypeError: For 'CellDict', the type of key should be string, but got %s."):format(type_name(k)))
        end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      for _, k in ipairs(keys) do out[#out + 1] = { k, cells[k] } end
    end
  else
    raise(("TypeError: CellDict.update() should be called with a list of {name, cell} pairs, an OrderedDict, a "
      .. "CellDict or a table of name = cell, but got %s."):format(type_name(cells)))
  end
  return out
end

--- CellDict([cells [, {auto_prefix = true}]]).
function CellDict:init(cells, opts)
  if opts ~= nil then
    if type(opts) ~= "table" or getmetatable(opts) ~= nil then
      raise(("TypeError: For 'CellDict', the options must be a table {auto_prefix = ...}, but got %s.")
        :format(type_name(opts)))
    end
    rawget(self, S).auto_prefix = A.bool("CellDict", "auto_prefix", opts.auto_prefix, true, 3)
  end
  if cells ~= nil then
    for _, e in ipairs(pairs_of(cells, 3)) do dict_set(self, e[1], e[2], 3) end
  end
end

--- update(cells): add or replace the members of `cells` (see pairs_of).
function CellDict:update(cells)
  for _, e in ipairs(pairs_of(cells, 2)) do dict_set(self, e[1], e[2], 2) end
end

--- The member names, a sequence in order.
function CellDict:keys()
  local out = {}
  for i, e in ipairs(members(self)) do out[i] = e[1] end
  return out
end

--- The member cells, a sequence in order.
function CellDict:values()
  local out = {}
  for i, e in ipairs(members(self)) do out[i] = e[2] end
  return out
end

--- An iterator of (name, cell) in order, for a generic `for`.
function CellDict:items()
  local list, i = members(self), 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

--- The number of members; `#d` too on Lua 5.4 (d:len() under LuaJIT).
function CellDict:len() return #members(self) end
CellDict.__len = CellDict.len

--- Whether `key` names a member.
function CellDict:contains(key) return rawget(self, S).cells.val[key] ~= nil end

--- Remove the member `key` and return it (a KeyError when absent).
function CellDict:pop(key)
  local c = rawget(self, S).cells.val[key]
  if c == nil then raise(("KeyError: For 'CellDict', no member named %s."):format(tostring(key))) end
  R.remove(rawget(self, S).cells, key)
  return c
end

--- Remove every member.
function CellDict:clear()
  rawget(self, S).cells = R.new()
end

return M
