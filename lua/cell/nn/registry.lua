--- cell.nn.registry: the ordered registries of a cell (parameters, buffers,
-- sub-cells). A name can be present with no value (MindSpore's `None`), so
-- presence (`pos`) and value (`val`) are kept apart; reads of `val[name]`
-- are one table lookup, which the cell's `__index` relies on.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local R = {}

local HOLE = {}

--- A new empty registry.
function R.new()
  return { keys = {}, n = 0, pos = {}, val = {}, holes = 0 }
end

--- Set `name` to `v` (nil keeps the name with no value). A new name goes
-- last; an existing one keeps its place.
function R.set(r, name, v)
  if r.pos[name] == nil then
    r.n = r.n + 1
    r.keys[r.n] = name
    r.pos[name] = r.n
  end
  r.val[name] = v
end

--- Whether `name` is present (with or without a value).
function R.has(r, name) return r.pos[name] ~= nil end

local function compact(r)
  local keys, j = r.keys, 0
  for i = 1, r.n do
    local k = keys[i]
    if k ~= HOLE then
      j = j + 1
      keys[j] = k
      r.pos[k] = j
    end
  end
  for i = j + 1, r.n do keys[i] = nil end
  r.n, r.holes = j, 0
end

--- Remove `name`; returns whether it was present.
function R.remove(r, name)
  local i = r.pos[name]
  if i == nil then return false end
  r.keys[i] = HOLE
  r.pos[name], r.val[name] = nil, nil
  r.holes = r.holes + 1
  if r.holes * 2 > r.n then compact(r) end
  return true
end

--- The names in order and their count: the live array when none was
-- removed since the last compaction (to read, not to change), else a new one.
function R.names(r)
  if r.holes == 0 then return r.keys, r.n end
  local out, j, keys = {}, 0, r.keys
  for i = 1, r.n do
    local k = keys[i]
    if k ~= HOLE then
      j = j + 1
      out[j] = k
    end
  end
  return out, j
end

--- Iterator over (name, value) in order; value may be nil.
function R.each(r)
  local i, keys = 0, r.keys
  return function()
    while true do
      i = i + 1
      if i > r.n then return nil end
      local k = keys[i]
      if k ~= HOLE then return k, r.val[k] end
    end
  end
end

--- The number of names present.
function R.len(r) return r.n - r.holes end

return R
