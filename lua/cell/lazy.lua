--- cell.lazy: the require behind cell's lazily loaded submodules and
-- cell.nn's names, made so that a failed load (out of memory, any error)
-- can be tried again on the next use.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local M = {}

--- The value Lua 5.1 and LuaJIT's require leaves in package.loaded while
-- a module's body runs, and keeps there when the body raises (nil under
-- Lua 5.4, which leaves nothing): learnt by loading a module that fails.
local SENTINEL
do
  local probe = "cell.lazy (probe)"
  package.preload[probe] = function() error("probe", 0) end
  pcall(require, probe)
  SENTINEL = package.loaded[probe]
  package.preload[probe] = nil
  package.loaded[probe] = nil
end

--- The names whose package.loaded entry is the sentinel.
local function sentinels()
  local s = {}
  if SENTINEL == nil then return s end
  for k, v in pairs(package.loaded) do
    if rawequal(v, SENTINEL) then s[k] = true end
  end
  return s
end

--- The message of a failed load of `what`, beginning with an exception
-- name: the failure's own when it has one, MemoryError for Lua's "not
-- enough memory", else RuntimeError.
function M.message(what, err)
  local msg = tostring(err)
  local name, rest = msg:match("^(%u%a*Error): (.*)$")
  if not name then
    name = msg:find("not enough memory", 1, true) and "MemoryError" or "RuntimeError"
    rest = msg
  end
  return ("%s: %s: %s"):format(name, what, rest)
end

--- pcall(require, name), leaving nothing behind on failure: under Lua 5.1
-- and LuaJIT a module whose body raised keeps its sentinel in
-- package.loaded (as does each module it was loading), and every later
-- require of it fails with "loop or previous error loading module"; the
-- sentinels the failed call left are removed (those of modules loading
-- further up the stack stay). Lua 5.4 leaves none.
-- @string name the module
-- @treturn boolean ok
-- @return the module, or the error value
function M.require(name)
  local before = sentinels()
  local ok, mod = pcall(require, name)
  if not ok then
    for k in pairs(sentinels()) do
      if not before[k] then package.loaded[k] = nil end
    end
  end
  return ok, mod
end

return M
