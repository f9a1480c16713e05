--- cell.communication: MindSpore's mindspore.communication on MPI, and on
-- NCCL for GPU tensors.
--
--     local comm = cell.communication
--     comm.init()                          -- under `mpirun -np 2 bin/cell script.lua`
--     local r, n = comm.get_rank(), comm.get_group_size()
--     local s = comm.all_reduce(cell.tensor({r + 1}))   -- {3} on both ranks
--
-- Ranks are ids counted from 0, as in MPI and MindSpore (not 1-based like
-- cell's indices). Collectives run on CPU tensors through MPI; a tensor on
-- another device goes through the host with the device's copies, except a
-- GPU tensor where cell.cuda was built with NCCL: that one stays on the GPU
-- and NCCL moves it (cell.communication.transport). Before each call the
-- ranks exchange a small header (op, dtype, shape, transport), so a rank
-- that calls another collective, or passes another shape or dtype, gets a
-- clear error instead of a hang or wrong numbers (set_check(false) turns
-- it off). send and recv are in cell.communication.p2p.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local B = require "cell.communication.backend"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local X = require "cell.communication.transport"

local type_name = T.type_name

local M = {}

--- The name of the group of every rank (MindSpore's GlobalComm.WORLD_COMM_GROUP).
M.WORLD_COMM_GROUP = "mpi_world_group"

--- The reduce ops (MindSpore's ReduceOp).
M.ReduceOp = { SUM = "sum", MAX = "max", MIN = "min", PROD = "prod", MEAN = "mean" }

-- lifecycle --------------------------------------------------------------------------------

--- init([backend_name]): start MPI (backend "mpi", the default), or MPI
-- and NCCL ("nccl": GPU tensors then go through NCCL, and GPU:<local rank>
-- becomes the default device unless a GPU is already). Idempotent.
function M.init(backend_name)
  if backend_name ~= nil and type(backend_name) ~= "string" then
    raise(("TypeError: init: backend_name must be a string, but got %s"):format(type_name(backend_name)))
  end
  local b = backend_name and backend_name:lower() or "mpi"
  if b == "hccl" then
    raise(("RuntimeError: init: the '%s' backend (Ascend) is not in cell; use 'mpi' (CPU tensors) or 'nccl' "
      .. "(GPU tensors)"):format(backend_name))
  end
  if b ~= "mpi" and b ~= "nccl" then
    raise(("ValueError: init: backend_name must be 'mpi' or 'nccl', but got '%s'"):format(backend_name))
  end
  if b == "nccl" then
    local N, why = B.nccl_layer()
    if not N then
      raise(("RuntimeError: init: the '%s' backend is not available: %s"):format(backend_name, why))
    end
  end
  M._init_mpi()
  if b == "nccl" and not tostring(core.get_device()):match("^GPU") then
    local n = require("cell.cuda").device_count()
    core.set_device("GPU", B.state.local_rank % n)
  end
end

function M._init_mpi()
  local C = B.mpi("init")
  if B.state and C.initialized() then return end
  if B.released then
    raise("RuntimeError: init: cell.communication was released in this process; MPI cannot start twice")
  end
  local ok, rank, size, local_rank = pcall(C.init)
  if not ok then raise(tostring(rank)) end
  local world = C.world()
  local ranks = {}
  for i = 1, size do ranks[i] = i - 1 end
  B.state = { rank = rank, size = size, local_rank = local_rank, world = world, groups = {} }
  B.state.groups[M.WORLD_COMM_GROUP] = { comm = world, ranks = ranks, rank = rank, size = size }
end

local function state(what)
  if not B.initialized() then
    if B.C == nil then B.mpi(what) end
    raise(("RuntimeError: %s: cell.communication is not initialized; call cell.communication.init() first")
      :format(what))
  end
  return B.state
end

local function group_of(what, group)
  local st = state(what)
  if group == nil then return st.groups[M.WORLD_COMM_GROUP] end
  if type(group) ~= "string" then
    raise(("TypeError: %s: group must be a group name (a string), but got %s"):format(what, type_name(group)))
  end
  local g = st.groups[group]
  if not g then
    raise(("ValueError: %s: no group named '%s' on rank %d (create_group makes one)"):format(what, group, st.rank))
  end
  return g
end

--- release(): end MPI in this process (MindSpore's release). Afterwards no
-- collective works and init cannot start MPI again.
function M.release()
  if not B.initialized() then return end
  B.C.finalize()
  B.state = nil
  B.released = true
end

--- get_rank([group]): this process's rank in the group, from 0.
function M.get_rank(group) return group_of("get_rank", group).rank end
--- get_group_size([group]): the number of ranks in the group.
function M.get_group_size(group) return group_of("get_group_size", group).size end
--- get_local_rank([group]): this process's rank among those on its machine, from 0.
function M.get_local_rank(group)
  group_of("get_local_rank", group)
  return B.state.local_rank
end
--- get_local_rank_size: not separate; is_initialized: whether init ran.
function M.is_initialized() return B.initialized() end

--- get_world_rank_from_group_rank(group, group_rank) and back: rank translation.
function M.get_world_rank_from_group_rank(group, group_rank)
  local g = group_of("get_world_rank_from_group_rank", group)
  local w = g.ranks[(tonumber(group_rank) or -1) + 1]
  if w == nil then
    raise(("ValueError: get_world_rank_from_group_rank: rank %s is not in group '%s' (0..%d)")
      :format(tostring(group_rank), group, g.size - 1))
  end
  return w
end

--- create_group(name, ranks): a group of the world ranks listed (0-based,
-- distinct, in the order that numbers the group's ranks). Every listed
-- rank calls it; other ranks do not.
function M.create_group(name, ranks)
  local st = state("create_group")
  if type(name) ~= "string" or name == "" then
    raise(("TypeError: create_group: group must be a non-empty string, but got %s"):format(type_name(name)))
  end
  if st.groups[name] then raise(("ValueError: create_group: the group '%s' exists already"):format(name)) end
  if type(ranks) ~= "table" or #ranks == 0 then
    raise(("TypeError: create_group: rank_ids must be a non-empty list of ranks, but got %s"):format(type_name(ranks)))
  end
  local seen, list, mine = {}, {}, nil
  for i = 1, #ranks do
    local r = ranks[i]
    if type(r) ~= "number" or r ~= math.floor(r) or r < 0 or r >= st.size then
      raise(("ValueError: create_group: rank_ids[%d] = %s is not a rank (0..%d)"):format(i, tostring(r), st.size - 1))
    end
    if seen[r] then raise(("ValueError: create_group: rank %d is listed twice"):format(r)) end
    seen[r] = true
    list[i] = r
    if r == st.rank then mine = i - 1 end
  end
  if mine == nil then
    raise(("ValueError: create_group: this rank (%d) is not in rank_ids; only the listed ranks call create_group")
      :format(st.rank))
  end
  local comm = B.C.group(st.world, list)
  st.groups[name] = { comm = comm, ranks = list, rank = mine, size = #list }
end

--- destroy_group(name): free a group made by create_group.
function M.destroy_group(name)
  local st = state("destroy_group")
  if name == M.WORLD_COMM_GROUP then raise("ValueError: destroy_group: the world group cannot be destroyed") end
  local g = group_of("destroy_group", name)
  B.C.free(g.comm)
  st.groups[name] = nil
end

--- set_check(on): whether collectives first compare op, dtype and shape
-- across ranks (on by default; one small all-gather per collective).
function M.set_check(on)
  if type(on) ~= "boolean" then
    raise(("TypeError: set_check: on must be a boolean, but got %s"):format(type_name(on)))
  end
  local old = X.check_headers
  X.check_headers = on
  return old
end

-- the collectives ---------------------------------------------------------------------------

local header, agree = X.header, X.agree
local route, transport, buf_of, new_buf = X.route, X.transport, X.buf_of, X.new_buf
local write_back, to_device_of = X.write_back, X.to_device_of
local RED = X.RED

local function check_tensor(what, t, name)
  if not core.is_tensor(t) then
    raise(("TypeError: %s: %s must be a Tensor, but got %s"):format(what, name or "tensor", type_name(t)))
  end
  return t
end

local function check_red(what, op)
  if op == nil then return "sum" end
  if type(op) ~= "string" or not RED[op:lower()] then
    raise(("ValueError: %s: op must be one of 'sum', 'mean', 'max', 'min', 'prod', but got %s")
      :format(what, type(op) == "string" and ("'" .. op .. "'") or type_name(op)))
  end
  return op:lower()
end

local function no_inplace_grad(what, t)
  if t.requires_grad and core.is_grad_enabled() then
    raise(("RuntimeError: %s: an in-place collective on a tensor that requires grad is not recorded; use the "
      .. "out-of-place form (no `out`), which is differentiable"):format(what))
  end
end

local function check_out(what, out, dtype, shape)
  check_tensor(what, out, "out")
  if out.dtype ~= dtype or not T.same_shape(out.shape, shape) then
    raise(("ValueError: %s: out must be %s %s, but got %s %s"):format(what, dtype.name, T.shape_str(shape),
      out.dtype.name, T.shape_str(out.shape)))
  end
  no_inplace_grad(what, out)
  return out
end

local function recording(t) return t.requires_grad and core.is_grad_enabled() end

local node = function(...) return require("cell.autograd").node(...) end

--- The op transport x runs for op: MPI has no mean, so a 'mean' runs as
-- 'sum' and finish_mean divides; NCCL averages itself (ncclAvg).
local function wire_op(x, op) return (op == "mean" and not x.device) and "sum" or op end

--- After a 'mean' ran as 'sum': divide the result by the group size,
-- outside autograd (the collective's own node carries the gradient).
local function finish_mean(x, g, op, h)
  if op ~= "mean" or x.device then return end
  local prev_ = core.set_grad_enabled(false)
  h:div_(g.size)
  core.set_grad_enabled(prev_)
end

--- op 'mean' needs a floating-point tensor; hint adds what to use instead.
local function check_mean(what, op, t, hint)
  if op == "mean" and not t.dtype.is_floating_point then
    raise(("TypeError: %s: op 'mean' needs a floating-point tensor, but got %s%s"):format(what, tostring(t.dtype), hint or ""))
  end
end

--- The result r of a reducing collective, moved back to t's device; when t
-- records, a node whose backward is backward(grad), or, for an op in
-- `unsupported`, one that raises (as MindSpore has no backward for it).
local function finish(what, t, r, op, supported, backward)
  r = to_device_of(t, r)
  if recording(t) then
    if not supported[op] then
      node(r, { t }, function()
        error(("RuntimeError: %s: the backward of op '%s' is not supported (as in MindSpore)"):format(what, op), 0)
      end)
    else
      node(r, { t }, backward)
    end
  end
  return r
end

local SUM_MEAN = { sum = true, mean = true }
local NOT_PROD = { sum = true, mean = true, max = true, min = true }

--- Agree on the call across the group, then its transport: x.C and x.comm
-- run it, t's buffers are buf_of(x, t).
local function start(what, g, t, op, root)
  local rt = route(t)
  if X.check_headers then agree(what, g, header(what, t, op, root, rt)) end
  return transport(what, g, rt, t)
end

local ALL_REDUCE = { "op", "group", "out" }

--- all_reduce(tensor [, op = "sum", group]) (or {op =, group =, out =}):
-- the elementwise reduction of tensor over the group's ranks, on every
-- rank. out = tensor reduces in place.
function M.all_reduce(t, ...)
  local op, group, out = args_util.parse("all_reduce", ALL_REDUCE, 2, select("#", ...), ...)
  check_tensor("all_reduce", t)
  op = check_red("all_reduce", op)
  local g = group_of("all_reduce", group)
  check_mean("all_reduce", op, t, " (use 'sum')")
  if out ~= nil then check_out("all_reduce", out, t.dtype, t.shape) end
  local x = start("all_reduce", g, t, op)
  local h = buf_of(x, t)
  local r = out ~= nil and buf_of(x, out) or new_buf(x, t, t.shape)
  x.C.allreduce(x.comm, h, r, wire_op(x, op))
  finish_mean(x, g, op, r)
  if out ~= nil then return write_back(out, r) end
  local a, b = t:detach(), r:detach()
  return finish("all_reduce", t, r, op, NOT_PROD, function(grad)
    local dx = M.all_reduce(grad, op == "mean" and "mean" or "sum", group)
    if op == "max" or op == "min" then
      local y = to_device_of(a, b)
      dx = dx * a:eq(y):astype(dx.dtype)
    end
    return dx
  end)
end

local GATHER = { "group", "out" }

--- all_gather(tensor [, group]) (or {group =, out =}): the ranks' tensors
-- concatenated along the first dimension, in rank order, on every rank.
function M.all_gather(t, ...)
  local group, out = args_util.parse("all_gather", GATHER, 2, select("#", ...), ...)
  check_tensor("all_gather", t)
  local g = group_of("all_gather", group)
  local shape = t.shape
  if #shape == 0 then shape = { 1 } end
  local oshape = {}
  for i, v in ipairs(shape) do oshape[i] = v end
  oshape[1] = shape[1] * g.size
  if out ~= nil then check_out("all_gather", out, t.dtype, oshape) end
  local x = start("all_gather", g, t)
  local r = out ~= nil and buf_of(x, out) or new_buf(x, t, oshape)
  x.C.allgather(x.comm, buf_of(x, t), r)
  if out ~= nil then return write_back(out, r) end
  r = to_device_of(t, r)
  if recording(t) then
    local ishape = t.shape
    node(r, { t }, function(grad)
      return M.reduce_scatter(grad, "sum", group):reshape(ishape)
    end)
  end
  return r
end

--- reduce_scatter(tensor [, op = "sum", group]) (or {op =, group =, out =}):
-- reduce over the ranks, then rank r keeps block r of the first dimension
-- (whose size must divide by the group size).
function M.reduce_scatter(t, ...)
  local op, group, out = args_util.parse("reduce_scatter", ALL_REDUCE, 2, select("#", ...), ...)
  check_tensor("reduce_scatter", t)
  op = check_red("reduce_scatter", op)
  local g = group_of("reduce_scatter", group)
  if t.ndim == 0 or t.shape[1] % g.size ~= 0 then
    raise(("ValueError: reduce_scatter: the first dimension of tensor %s must divide by the group size %d")
      :format(T.shape_str(t.shape), g.size))
  end
  check_mean("reduce_scatter", op, t)
  local oshape = {}
  for i, v in ipairs(t.shape) do oshape[i] = v end
  oshape[1] = oshape[1] / g.size
  if out ~= nil then check_out("reduce_scatter", out, t.dtype, oshape) end
  local x = start("reduce_scatter", g, t, op)
  local r = out ~= nil and buf_of(x, out) or new_buf(x, t, oshape)
  x.C.reduce_scatter(x.comm, buf_of(x, t), r, wire_op(x, op))
  finish_mean(x, g, op, r)
  if out ~= nil then return write_back(out, r) end
  return finish("reduce_scatter", t, r, op, SUM_MEAN, function(grad)
    local dx = M.all_gather(grad, group)
    if op == "mean" then dx = dx / g.size end
    return dx
  end)
end

local BCAST = { "group", "out" }

--- broadcast(tensor, src [, group]) (or {group =, out =}): the tensor of
-- rank src (a group rank, from 0) on every rank.
function M.broadcast(t, src, ...)
  local group, out = args_util.parse("broadcast", BCAST, 3, select("#", ...), ...)
  check_tensor("broadcast", t)
  local g = group_of("broadcast", group)
  if type(src) ~= "number" or src ~= math.floor(src) or src < 0 or src >= g.size then
    raise(("ValueError: broadcast: src must be a rank of the group (0..%d), but got %s")
      :format(g.size - 1, type(src) == "number" and tostring(src) or type_name(src)))
  end
  if out ~= nil then check_out("broadcast", out, t.dtype, t.shape) end
  local x = start("broadcast", g, t, nil, src)
  local r = out ~= nil and buf_of(x, out) or new_buf(x, t, t.shape)
  -- src's tensor goes out from src's own buffer (the transport copies it into r there)
  x.C.bcast(x.comm, buf_of(x, t), r, src)
  if out ~= nil then return write_back(out, r) end
  r = to_device_of(t, r)
  if recording(t) then
    -- The gradient of every rank's copy flows back to src's tensor.
    node(r, { t }, function(grad)
      return M.reduce(grad, src, "sum", group)
    end)
  end
  return r
end

local REDUCE = { "op", "group", "out" }

--- reduce(tensor, dst [, op = "sum", group]) (or {op =, group =, out =}):
-- the reduction over the ranks on rank dst; other ranks get zeros (in out
-- too, when given).
function M.reduce(t, dst, ...)
  local op, group, out = args_util.parse("reduce", REDUCE, 3, select("#", ...), ...)
  check_tensor("reduce", t)
  op = check_red("reduce", op)
  local g = group_of("reduce", group)
  if type(dst) ~= "number" or dst ~= math.floor(dst) or dst < 0 or dst >= g.size then
    raise(("ValueError: reduce: dst must be a rank of the group (0..%d), but got %s")
      :format(g.size - 1, type(dst) == "number" and tostring(dst) or type_name(dst)))
  end
  check_mean("reduce", op, t)
  if out ~= nil then check_out("reduce", out, t.dtype, t.shape) end
  local x = start("reduce", g, t, op, dst)
  local r = out ~= nil and buf_of(x, out) or new_buf(x, t, t.shape, true)
  x.C.reduce(x.comm, buf_of(x, t), r, wire_op(x, op), dst)
  if g.rank == dst then finish_mean(x, g, op, r) end
  if out ~= nil then
    -- MPI and NCCL leave a non-root's buffer as it was: out gets zeros there, as a new result does
    if g.rank ~= dst then r = new_buf(x, t, t.shape, true) end
    return write_back(out, r)
  end
  return finish("reduce", t, r, op, SUM_MEAN, function(grad)
    local dx = M.broadcast(grad, dst, group)
    if op == "mean" then dx = dx / g.size end
    return dx
  end)
end

--- barrier([group]): wait until every rank of the group reaches it.
function M.barrier(group)
  local g = group_of("barrier", group)
  agree("barrier", g, header("barrier"))
  B.C.barrier(g.comm)
end

-- point to point (cell.communication.p2p): send, recv
local P = require("cell.communication.p2p")
P._bind(group_of, check_tensor, check_out, recording, node)
M.send = P.send
M.recv = P.recv

--- The C layer, for cell.nn's gradient reducer (non-blocking all-reduce).
function M._C() return B.mpi("init") end
function M._group(what, group) return group_of(what, group) end
M._agree = agree
M._header = header

return M
