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

-- NCCL ----------------------------------------------------------------------------------------

M.NCCL_INSTALL = "`make cuda` where the CUDA toolkit and NCCL (nccl.h, libnccl) are installed"

--- The NCCL layer's functions (inside the GPU module cell.cuda, built
-- there where nccl.h is found), GPU or not; or nil and why not.
function M.nccl_open()
  if M.NF then return M.NF end
  local ok, cuda = pcall(require, "cell.cuda")
  if not ok then
    return nil, ("the GPU module cell.cuda did not load (%s); build it with %s"):format(
      tostring(cuda):match("^[^\n]*") or "", M.NCCL_INSTALL)
  end
  local path = package.searchpath and package.searchpath("cell.cuda", package.cpath)
  local f = path and package.loadlib(path, "luaopen_cell_comm_nccl")
  if not f then
    return nil, "cell.cuda was built without NCCL (nccl.h was not found); rebuild it with " .. M.NCCL_INSTALL
  end
  M.NF = f()
  return M.NF
end

--- The NCCL layer where a GPU is there to use it: its functions, or nil
-- and why not (no GPU: GPU tensors cannot exist then). Asked once.
function M.nccl_layer()
  if M.N ~= nil then return M.N or nil, M.N_why end
  local N, why = M.nccl_open()
  if N and not require("cell.cuda").is_available() then
    N, why = nil, "no CUDA device: " .. tostring(require("cell.cuda").unavailable_reason()) .. "; CPU tensors take 'mpi'"
  end
  M.N, M.N_why = N or false, why
  return N, why
end

--- The NCCL transport of group g on GPU `ordinal`: group rank 0 makes the
-- unique id, MPI broadcasts it over the group, every rank joins.
function M.nccl_comm(what, g, ordinal)
  local N, why = M.nccl_layer()
  if not N then raise(("RuntimeError: %s: NCCL is not available: %s"):format(what, why)) end
  local core = require "cell.core"
  local bytes = {}
  if g.rank == 0 then
    local id = N.unique_id()
    for i = 1, #id do bytes[i] = id:byte(i) end
  else
    for i = 1, N.ID_BYTES do bytes[i] = 0 end
  end
  -- on the host whatever the default device is (a GPU after init("nccl")): MPI moves it
  local t = require("cell.communication.transport").on_device("CPU", 0, core.tensor, bytes, core.uint8)
  M.C.bcast(g.comm, t, t, 0)
  local list = t:tolist()
  local chars = {}
  for i = 1, #list do chars[i] = string.char(list[i]) end
  local comm = N.comm_init(table.concat(chars), g.size, g.rank, ordinal)
  return { C = N, comm = comm, device = true, ordinal = ordinal }
end

--- State after init: rank, size, local_rank, world (a communicator),
-- groups[name] = {comm =, ranks = {world ranks}, rank =, size =}.
M.state = nil

function M.initialized()
  return M.state ~= nil and M.C ~= nil and M.C.initialized()
end

return M
