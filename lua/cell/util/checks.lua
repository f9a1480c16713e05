--- cell.util.checks: the argument checks that several modules share, each
-- in one wording: "TypeError: <fname>: <what> must be ..., but got <value>"
-- (the dataset modules', Cell's: int, bool) or MindSpore's "For '<cls>',
-- the '<what>' must be ..." (positive_int: the learning-rate functions,
-- the callbacks). A wrong number shows as itself, anything else by its
-- type name (cell.util.types.type_name). Errors are raised at the user's
-- line (cell.errors.raise).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local T = require "cell.util.types"

local M = {}

--- How a wrong value is named: a number as itself, else its type name.
function M.show(v)
  if type(v) == "number" then return tostring(v) end
  return T.type_name(v)
end

--- v, a finite integer (at least lo when lo is given): a TypeError for a
-- value that is not one, a ValueError below lo.
function M.int(fname, what, v, lo)
  if not T.is_int(v) then
    raise(("TypeError: %s: %s must be an integer, but got %s"):format(fname, what, M.show(v)))
  end
  if lo and v < lo then raise(("ValueError: %s: %s must be at least %d, but got %d"):format(fname, what, lo, v)) end
  return v
end

--- v, a positive integer, in MindSpore's words: "TypeError: For 'cls', the
-- 'what' must be an integer, but got ..." for anything else than a finite
-- integer, a ValueError for one below 1.
function M.positive_int(cls, what, v)
  if not T.is_int(v) then
    raise(("TypeError: For '%s', the '%s' must be an integer, but got %s."):format(cls, what, M.show(v)))
  end
  if v <= 0 then
    raise(("ValueError: For '%s', the '%s' must be a positive integer, but got %s."):format(cls, what, tostring(v)))
  end
  return v
end

--- v, a boolean, or default when v is nil; a TypeError otherwise.
function M.bool(fname, what, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    raise(("TypeError: %s: %s must be a boolean, but got %s"):format(fname, what, T.type_name(v)))
  end
  return v
end

return M
