--- cell.util.types: how the library's messages name values and shapes, in
-- one place: the type name of a value, a shape as Python prints it, a
-- cell's class name, and the small predicates the argument checks share.
-- (cell.util.args is the argument parser; cell.errors raises.)
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"

local M = {}

--- The type of `v` as messages name it: Tensor (or Parameter, for an
-- attributed tensor whose attrs say so), dtype, a class instance's class
-- name (a cell's, ParameterTuple, an initializer's), or Lua's type name.
function M.type_name(v)
  if core.is_tensor(v) then -- an attributed tensor's kind is its attrs metatable's __name
    local a = core._attrs(v)
    local mt = a and getmetatable(a)
    return type(mt) == "table" and rawget(mt, "__name") or "Tensor"
  end
  if core.is_dtype(v) then return "dtype" end
  if type(v) == "table" then
    local mt = getmetatable(v)
    local c = type(mt) == "table" and rawget(mt, "__class") or nil
    if type(c) == "table" and type(rawget(c, "name")) == "string" then return rawget(c, "name") end
  end
  return type(v)
end

--- The class name of a cell (an instance of a class), "Cell" when it has none.
function M.class_name(c)
  local mt = getmetatable(c)
  local cls = type(mt) == "table" and rawget(mt, "__class")
  return type(cls) == "table" and rawget(cls, "name") or "Cell"
end

--- A shape (a list of sizes) as Python prints a tuple: (2, 3), (2,), ().
function M.shape_str(shape)
  if #shape == 1 then return "(" .. tostring(shape[1]) .. ",)" end
  local parts = {}
  for i = 1, #shape do parts[i] = tostring(shape[i]) end
  return "(" .. table.concat(parts, ", ") .. ")"
end

--- Whether `v` is a finite integral number.
function M.is_int(v) return type(v) == "number" and v == math.floor(v) and v > -math.huge and v < math.huge end
local is_int = M.is_int

--- Whether `v` is a finite number (not NaN, not infinite).
function M.is_finite(v) return type(v) == "number" and v == v and v > -math.huge and v < math.huge end

--- A number as Python's repr prints it (the shortest text that reads back
-- to the same number; integers without a fraction).
function M.num_str(v)
  if type(v) ~= "number" then return tostring(v) end
  if is_int(v) and math.abs(v) < 1e15 then return ("%d"):format(v) end
  for p = 14, 17 do
    local s = ("%." .. p .. "g"):format(v)
    if tonumber(s) == v then return s end
  end
  return tostring(v)
end

--- A list of numbers as a Python tuple: (4, 4), (2,), (0.5, 1).
function M.tuple_str(list)
  if #list == 1 then return "(" .. M.num_str(list[1]) .. ",)" end
  local parts = {}
  for i = 1, #list do parts[i] = M.num_str(list[i]) end
  return "(" .. table.concat(parts, ", ") .. ")"
end

--- A shape as a list: [2, 3].
function M.shape_list(shape)
  local parts = {}
  for i = 1, #shape do parts[i] = tostring(shape[i]) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

--- Whether two shapes (lists of sizes) are equal.
function M.same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

--- Whether tensors a and b have one shape (without making shape tables).
M.same_tensor_shape = core._same_shape

--- A list of strings as Python prints it: ['a', 'b'].
function M.str_list(list)
  local parts = {}
  for i = 1, #list do parts[i] = "'" .. tostring(list[i]) .. "'" end
  return "[" .. table.concat(parts, ", ") .. "]"
end

--- Whether `t` is a plain table (no metatable): an options table or a list.
function M.is_plain(t) return type(t) == "table" and getmetatable(t) == nil end

--- Whether `v` can be called: a function, or a table or userdata whose
-- metatable has __call.
function M.is_callable(v)
  if type(v) == "function" then return true end
  local mt = (type(v) == "table" or type(v) == "userdata") and getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

return M
