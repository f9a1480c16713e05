--- cell.communication.transport: what the collectives and point to point
-- share: the header every rank exchanges before a call (op, dtype, shape,
-- transport), and the two transports under one set of calls.
--
-- MPI (cell.comm_mpi) moves CPU tensors; a tensor on another device goes
-- through the host with the device's copies. NCCL (the NCCL layer of the
-- GPU module, cell.cuda) moves GPU tensors where cell.cuda was built with
-- NCCL. Both C layers take the same calls -- allreduce(comm, src, dst, op),
-- allgather(comm, src, dst), reduce_scatter(comm, src, dst, op),
-- bcast(comm, src, dst, root), reduce(comm, src, dst, op, root), send(comm, t,
-- peer, tag), recv(comm, t, peer, tag) -- so the front end
-- (communication/init.lua, p2p.lua) is written once for both: it asks
-- route(t) for the transport's name, exchanges the header, then gets the
-- transport {C =, comm =, device =} of the group and calls C.<op>.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local B = require "cell.communication.backend"

local M = {}

M.check_headers = true

M.OPS = { "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "barrier", "send" }
local OP_ID = {}
for i, n in ipairs(M.OPS) do OP_ID[n] = i end
M.RED = { sum = 1, max = 2, min = 3, prod = 4, mean = 5 }
M.RED_NAME = { "sum", "max", "min", "prod", "mean" }
M.DTYPES = { "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool", "int16" }
local DT_ID = {}
for i, n in ipairs(M.DTYPES) do DT_ID[n] = i end
local MAXDIM = 8
--- The transports, as numbered in headers (field 15).
local ROUTE_ID = { mpi = 0, nccl = 1 }
local ROUTE_NAME = { [0] = "", [1] = " on GPU (NCCL)" }

--- The device NCCL serves ("GPU"; a spec points it at the test device,
-- with a stand-in for the NCCL layer, to run the device path without one).
M.nccl_device = "GPU"

--- The dtypes NCCL reduces and moves (the others go through MPI).
local NCCL_DTYPES = {
  float32 = true, float64 = true, float16 = true, bfloat16 = true, int8 = true, uint8 = true, int32 = true,
  int64 = true,
}

--- A device's name and index from t.device ("TEST:0" -> "TEST", 0).
function M.device_of(t)
  local d = t.device
  local name, id = d:match("^([^:]+):?(%d*)$")
  return name or d, tonumber(id) or 0
end

--- The transport's name for tensor t: "nccl" for a GPU tensor of a dtype
-- NCCL takes when the NCCL layer is there (init("nccl") loads it; a GPU
-- tensor loads it on first use), else "mpi".
function M.route(t)
  if t == nil then return "mpi" end
  local d = t.device
  if d == "CPU" or not NCCL_DTYPES[t.dtype.name] then return "mpi" end
  local name = M.device_of(t)
  if name ~= M.nccl_device then return "mpi" end
  if B.nccl_layer() then return "nccl" end
  return "mpi"
end

--- The header of a call: op, dtype, ndim, up to 8 dims, numel, reduce
-- op, root, transport.
function M.header(op, t, red, root, route)
  local h = { OP_ID[op], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, M.RED[red] or 0, root or -1, ROUTE_ID[route or "mpi"], 0 }
  if t then
    h[2] = DT_ID[t.dtype.name]
    h[3] = t.ndim
    local shape = t.shape
    for i = 1, math.min(#shape, MAXDIM) do h[3 + i] = shape[i] end
    h[12] = t:numel()
  end
  return h
end

function M.describe(h)
  if h[2] == 0 then return M.OPS[h[1]] or "?" end
  local dims = {}
  for i = 1, math.min(h[3], MAXDIM) do dims[i] = ("%d"):format(h[3 + i]) end
  if h[3] > MAXDIM then dims[#dims + 1] = "..." end
  local shape = "(" .. table.concat(dims, ", ") .. (h[3] == 1 and ",)" or ")")
  return ("%s of %s %s%s"):format(M.OPS[h[1]] or "?", M.DTYPES[h[2]] or "?", shape, ROUTE_NAME[h[15]] or "")
end

--- Compare the ranks' headers; the same error on every rank when they differ.
function M.agree(what, g, h)
  if not M.check_headers then return end
  local all = B.C.headers(g.comm, h, what)
  local first = all[1]
  for r = 2, #all do
    local o = all[r]
    for i = 1, #first do
      if o[i] ~= first[i] then
        local kind = "ValueError"
        if o[1] ~= first[1] then kind = "RuntimeError" elseif o[2] ~= first[2] then kind = "TypeError" end
        local extra = ""
        if o[1] ~= first[1] then
          extra = ""
        elseif o[13] ~= first[13] then
          extra = (" (op %s on rank 0, %s on rank %d)"):format(M.RED_NAME[first[13]] or "-", M.RED_NAME[o[13]] or "-",
            r - 1)
        elseif o[14] ~= first[14] then
          extra = (" (root %d on rank 0, %d on rank %d)"):format(first[14], o[14], r - 1)
        end
        raise(("%s: %s: the ranks of the group differ: rank 0 calls %s, rank %d calls %s%s")
          :format(kind, what, M.describe(first), r - 1, M.describe(o), extra))
      end
    end
  end
end

--- The MPI transport of group g.
local function mpi_of(g)
  if not g.mpi then g.mpi = { C = B.C, comm = g.comm, device = false } end
  return g.mpi
end

--- The transport named `route` for tensor t in group g. NCCL's
-- communicator of the group is made on first use (every rank of the group
-- gets here in the same call: the headers agreed on the route).
function M.transport(what, g, route, t)
  if route ~= "nccl" then return mpi_of(g) end
  local _, id = M.device_of(t)
  if g.nccl then
    if g.nccl.ordinal ~= id then
      raise(("ValueError: %s: the group's NCCL communicator is on GPU:%d, but this tensor is on %s; keep one GPU "
        .. "per rank"):format(what, g.nccl.ordinal, t.device))
    end
    return g.nccl
  end
  g.nccl = B.nccl_comm(what, g, id)
  return g.nccl
end

--- The host buffer of t: t itself when it is a contiguous CPU tensor,
-- else a contiguous CPU copy (through the device's copies).
function M.host(t)
  if t.device ~= "CPU" then return t:move_to("CPU") end
  if not t:is_contiguous() then return t:contiguous() end
  return t
end

--- t as a buffer of transport x: on the host for MPI, contiguous on its
-- device for NCCL.
function M.buf_of(x, t)
  if x.device then return t:is_contiguous() and t or t:contiguous() end
  return M.host(t)
end

--- fn(...) with the default device set to name:id, so the tensors it
-- makes are made there (the default may be a GPU after init("nccl"), or
-- the test device); the default is restored after, also on an error.
function M.on_device(name, id, fn, ...)
  local pn, pi = core.get_device()
  if pn == name and pi == id then return fn(...) end
  core.set_device(name, id)
  local ok, r = pcall(fn, ...)
  core.set_device(pn, pi)
  if not ok then error(r, 0) end
  return r
end

--- A new buffer of transport x for a result of `like`'s dtype, of `shape`
-- (zeros when zero): on the host for MPI, on like's device for NCCL.
function M.new_buf(x, like, shape, zero)
  local make = zero and core.zeros or core.empty
  if x.device then
    local name, id = M.device_of(like)
    return M.on_device(name, id, make, shape, like.dtype)
  end
  return M.on_device("CPU", 0, make, shape, like.dtype)
end

--- A result made on the host, moved to `like`'s device.
function M.to_device_of(like, h)
  if like.device == "CPU" or h.device == like.device then return h end
  local name, id = M.device_of(like)
  return h:move_to(name, id)
end

--- Write result h into t (in place), through the device when t is on one.
function M.write_back(t, h)
  if rawequal(t, h) then return t end
  h = M.to_device_of(t, h)
  local prev_ = core.set_grad_enabled(false)
  local ok, err = pcall(t.copy_, t, h)
  core.set_grad_enabled(prev_)
  if not ok then error(err, 0) end
  return t
end

return M
