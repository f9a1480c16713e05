--- cell.communication.backend: finds the MPI layer (the C module
-- cell.comm_mpi, built only where MPI is installed) and keeps the process's
-- state: the world communicator, this rank, the groups by name.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise

local M = {}

--- The C module's name (a spec points it elsewhere to see the error of a
-- build without MPI).
M._module = "cell.comm_mpi"

M.INSTALL = "install Open MPI (on Debian or Ubuntu: `apt-get install libopenmpi-dev openmpi-bin`, "
  .. "or `make deps`), rebuild cell with `make`, and start the script with `mpirun -np N`"

--- The module from package.cpath, else from the build folder beside the
-- source tree this file is in (build/<lua>/cell/comm_mpi.so), as the
-- `cell` executable runs from there.
local function load()
  local ok, mod = pcall(require, M._module)
  if ok then return mod end
  local first = mod
  if M._module ~= "cell.comm_mpi" then return nil, first end
  local src = debug.getinfo(1, "S").source
  local root = src:match("^@(.*)lua/cell/communication/backend%.lua$")
  if root then
    local lua = jit and "luajit" or "lua5.4"
    local path = (root == "" and "./" or root) .. "build/" .. lua .. "/cell/comm_mpi.so"
    local f = package.loadlib(path, "luaopen_cell_comm_mpi")
    if f then
      mod = f()
      package.loaded[M._module] = mod
      return mod
    end
  end
  return nil, first
end

--- The C module, loaded once; a RuntimeError saying what to install when
-- this build has none.
function M.mpi(what)
  if M.C then return M.C end
  local mod, err = load()
  if not mod then
    local why = tostring(err):match("^[^\n]*") or ""
    raise(("RuntimeError: cell.communication.%s: this build of cell has no MPI layer (%s); %s")
      :format(what or "init", why, M.INSTALL))
  end
  M.C = mod
  return mod
end

--- State after init: rank, size, local_rank, world (a communicator),
-- groups[name] = {comm =, ranks = {world ranks}, rank =, size =}.
M.state = nil

function M.initialized()
  return M.state ~= nil and M.C ~= nil and M.C.initialized()
end

return M
