--- cell.dataset.rows: what the pipeline's nodes share: rows (a Lua list
-- of one tensor per column), their checks and stacking, seeds and the
-- deterministic shuffles. Internal to cell.dataset.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local synthetic = require "cell.dataset.synthetic"
local type_name = require("cell.util.types").type_name

local M = {}

--- A seed below 2^48 from the config seed, a node's depth and an epoch
-- (exact in doubles and in Lua 5.4 integers alike).
function M.mix(seed, depth, epoch)
  return (seed % 4294967296 * 1000003 + depth * 7919 + epoch * 104729) % 281474976710656
end

--- A generator of integers in [0, 2^31 - 1) (Park and Miller's).
function M.generator(seed) return synthetic.generator(seed) end

--- A permutation of 1..n from seed (Fisher-Yates).
function M.permutation(n, seed)
  local rand = M.generator(seed)
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do
    local j = rand() % i + 1
    p[i], p[j] = p[j], p[i]
  end
  return p
end

--- MindSpore's shuffle with a buffer: the first buffer_size items fill the
-- buffer; each later item takes the place of a random one, which comes
-- out; at the end the buffer empties in random order. `nxt` gives items
-- (nil at the end); returns an iterator of the shuffled items.
function M.buffer_shuffle(nxt, buffer_size, seed)
  local rand = M.generator(seed)
  local buf, n, ended = {}, 0, false
  return function()
    while not ended and n < buffer_size do
      local v = nxt()
      if v == nil then
        ended = true
      else
        n = n + 1
        buf[n] = v
      end
    end
    if n == 0 then return nil end
    local j = rand() % n + 1
    local out = buf[j]
    if not ended then
      local v = nxt()
      if v == nil then
        ended = true
        buf[j] = buf[n]
        buf[n] = nil
        n = n - 1
      else
        buf[j] = v
      end
    else
      buf[j] = buf[n]
      buf[n] = nil
      n = n - 1
    end
    return out
  end
end

--- A list shuffled as buffer_shuffle shuffles it.
function M.buffer_shuffle_list(list, buffer_size, seed)
  local i = 0
  local it = M.buffer_shuffle(function()
    i = i + 1
    return list[i]
  end, buffer_size, seed)
  local out = {}
  for v in it do out[#out + 1] = v end
  return out
end

local math_type = math.type -- Lua 5.4; LuaJIT's numbers have no integer subtype

--- Whether the number v is an integer for to_tensor: a Lua integer (3, not
-- 3.0) where Lua has the subtype; under LuaJIT, a whole number of a double's
-- exact range.
local function integer_valued(v)
  if math_type then return math_type(v) == "integer" end
  return v == math.floor(v) and v > -9007199254740992 and v < 9007199254740992
end

--- A column value as a tensor: tensors as they are, a boolean as a bool
-- tensor, an integer as int64 (MindSpore's Python int), a float (3.0 too)
-- as float32, a table of numbers through cell.tensor. Anything else is a
-- TypeError naming the sample and column.
function M.to_tensor(v, what, sample, col)
  if core.is_tensor(v) then return v end
  local t = type(v)
  if t == "number" then
    if integer_valued(v) then return core.tensor(v, core.int64) end
    return core.tensor(v, core.float32)
  end
  if t == "boolean" then return core.tensor(v, core.bool) end
  if t == "table" and getmetatable(v) == nil then
    local ok, r = pcall(core.tensor, v)
    if ok then return r end
  end
  raise(("TypeError: %s: sample %d column '%s' is %s, not a Tensor (or a number, a boolean, a table of numbers)")
    :format(what, sample, col, type_name(v)))
end

local shape_text = require("cell.util.types").shape_str
M.shape_text = shape_text

local function same_layout(a, b)
  if a.dtype ~= b.dtype then return false end
  local sa, sb = a.shape, b.shape
  if #sa ~= #sb then return false end
  for d = 1, #sa do
    if sa[d] ~= sb[d] then return false end
  end
  return true
end

--- One column's values list[1..#list] (of rows first .. in the stream,
-- for messages; column `name`) stacked on a new dimension 1; a ValueError
-- names the first sample whose dtype or shape differs from the others.
function M.stack_column(list, name, first, what)
  what = what or "batch"
  -- the odd one out: the first unlike sample 1, or sample 1 when 2 and 3 agree against it
  local ref = 1
  if #list >= 3 and not same_layout(list[1], list[2]) and same_layout(list[2], list[3]) then ref = 2 end
  for i = 1, #list do
    local t, r = list[i], list[ref]
    if not same_layout(t, r) then
      if t.dtype ~= r.dtype then
        raise(("ValueError: %s: sample %d column '%s' has dtype %s, expected %s")
          :format(what, first + i - 1, name, tostring(t.dtype), tostring(r.dtype)))
      end
      raise(("ValueError: %s: sample %d column '%s' has shape %s, expected %s")
        :format(what, first + i - 1, name, shape_text(t.shape), shape_text(r.shape)))
    end
  end
  return core.stack(list, 1)
end

--- The rows rows[1..#rows] (positions first .. in the stream, for
-- messages) stacked column by column on a new dimension 1.
function M.stack(rows, names, first)
  local out = {}
  for c = 1, #names do
    local list = {}
    for i = 1, #rows do list[i] = rows[i][c] end
    out[c] = M.stack_column(list, names[c], first)
  end
  return out
end

--- An error's text with the exception name kept in front: "ValueError:
-- map: sample 3: ..." from "ValueError: ..." (RuntimeError when the text
-- has none); the "file:line: " position a Lua error carries is dropped.
function M.rewrap(msg, where)
  msg = tostring(msg)
  msg = msg:gsub("^[^\n]-:%d+: ", "", 1)
  local name, rest = msg:match("^(%u%a*Error): (.*)$")
  if not name then
    name, rest = msg:match("^(%u%a*Interrupt): (.*)$")
  end
  if not name then name, rest = "RuntimeError", msg end
  return name .. ": " .. where .. ": " .. rest
end

local unpack = table.unpack or unpack

--- The __call of a loader or data set, so `for a, b in loader do` walks
-- its next epoch (what obj:each() gives) with ncols values a step. A loop
-- starts a new epoch (also after one left with break): its first call
-- has no control value.
function M.loop_call(obj, control, ncols)
  local it = rawget(obj, "_loop")
  if control == nil or it == nil then
    it = obj:each()
    rawset(obj, "_loop", it)
  end
  local out = { it() }
  if out[1] == nil then rawset(obj, "_loop", nil) end
  return unpack(out, 1, ncols)
end

return M
