--- cell.errors: the one way the library raises. `raise(msg)` raises `msg`
-- at the first stack frame outside the library's own Lua files, so the
-- "file:line: " in front of a message names the user's line however deep in
-- lua/cell/ the check sits. The binding's C functions position their errors
-- by the same rule (the prefix below is shared with them through the
-- registry), so an error from a C function that library code called also
-- blames the user's line. Messages start with MindSpore's exception name:
-- "TypeError: ReLU: x must be a Tensor, but got number".
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"
local types = require "cell.util.types"

local M = {}

local getinfo = debug.getinfo

--- The source prefix of the library's files ("@lua/cell/" in a checkout,
-- "@/usr/local/share/lua/5.4/cell/" when installed), found from this file's
-- own source; nil when the files were not loaded from disk.
local prefix = (getinfo(1, "S").source or ""):match("^(@.*[/\\]cell[/\\])errors%.lua$")
M.source_prefix = prefix
if prefix and debug.getregistry then debug.getregistry()["cell.source_prefix"] = prefix end

local plen = prefix and #prefix or 0

--- Whether a function's source (debug.getinfo's `source`) is a library file.
local function is_library(source)
  return prefix ~= nil and source ~= nil and source:sub(1, plen) == prefix
end
M.is_library = is_library

--- The level, counted as error() counts it from the function that calls
-- `user_level`, of the first Lua frame outside the library (0 when there is
-- none: the message then carries no position).
function M.user_level()
  local lvl = 2
  while true do
    local info = getinfo(lvl + 1, "S")
    if not info then return 0 end
    if info.what ~= "C" and info.what ~= "tail" and not is_library(info.source) then return lvl end
    lvl = lvl + 1
  end
end

--- Raise `msg` at the user's line (see above). Never returns.
local function raise(msg)
  local lvl = 2
  while true do
    local info = getinfo(lvl, "S")
    if not info then error(msg, 0) end
    if info.what ~= "C" and info.what ~= "tail" and not is_library(info.source) then error(msg, lvl) end
    lvl = lvl + 1
  end
end
M.raise = raise

--- raise(fmt:format(...)).
function M.raisef(fmt, ...) return raise(fmt:format(...)) end

--- An error message without the "file:line: " that error() put in front.
local function message(err)
  if type(err) ~= "string" then return err end
  return (err:gsub("^[^\n]-:%d+: ", "", 1))
end
M.message = message

--- Raise again an error the library caught with pcall: a message that
-- already blames a line outside the library passes unchanged (a user's
-- callback's own error keeps its line), one that names a library line or
-- none is raised again at the user's line; any other value passes unchanged.
function M.rethrow(err)
  if type(err) ~= "string" then error(err, 0) end
  local pos = err:match("^([^\n]-):%d+: ")
  if pos and not is_library("@" .. pos) and not (prefix == nil and pos:find("[/\\]cell[/\\]")) then error(err, 0) end
  return raise(message(err))
end

--- "TypeError: <fname>: <what> must be <must>, but got <type of v>".
function M.type_error(fname, what, must, v)
  return raise(("TypeError: %s: %s must be %s, but got %s"):format(fname, what, must, types.type_name(v)))
end

--- Check that `v` is a Tensor (argument `what` of `fname`); returns it.
function M.check_tensor(fname, what, v)
  if not core.is_tensor(v) then M.type_error(fname, what, "a Tensor", v) end
  return v
end

--- Check that `v` can be called (argument `what` of `fname`); returns it.
function M.check_callable(fname, what, v)
  if not types.is_callable(v) then M.type_error(fname, what, "a function", v) end
  return v
end

return M
