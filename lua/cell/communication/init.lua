--- cell.communication: MindSpore's mindspore.communication on MPI.
--
--     local comm = cell.communication
--     comm.init()                          -- under `mpirun -np 2 bin/cell script.lua`
--     local r, n = comm.get_rank(), comm.get_group_size()
--     local s = comm.all_reduce(cell.tensor({r + 1}))   -- {3} on both ranks
--
-- Ranks are ids counted from 0, as in MPI and MindSpore (not 1-based like
-- cell's indices). Collectives run on CPU tensors through MPI; a tensor on
-- another device goes through the host with the device's copies. Before
-- each collective the ranks exchange a small header (op, dtype, shape), so
-- a rank that calls another collective, or passes another shape or dtype,
-- gets a clear error instead of a hang or wrong numbers (set_check(false)
-- turns it off). NCCL (GPU tensors) is not in this build.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local B = require "cell.communication.backend"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local type_name = T.type_name

local M = {}

--- The name of the group of every rank (MindSpore's GlobalComm.WORLD_COMM_GROUP).
M.WORLD_COMM_GROUP = "mpi_world_group"

--- The reduce ops (MindSpore's ReduceOp).
M.ReduceOp = { SUM = "sum", MAX = "max", MIN = "min", PROD = "prod", MEAN = "mean" }

local check_headers = true

-- lifecycle --------------------------------------------------------------------------------

--- init([backend_name]): start MPI (backend "mpi", the default; "nccl" is
-- not in this build). Idempotent.
function M.init(backend_name)
  if backend_name ~= nil and type(backend_name) ~= "string" then
    raise(("TypeError: init: backend_name must be a string, but got %s"):format(type_name(backend_name)))
  end
  local b = backend_name and backend_name:lower() or "mpi"
  if b == "nccl" or b == "hccl" then
    raise(("RuntimeError: init: the '%s' backend is not available: cell has no GPU module yet, so only 'mpi' "
      .. "(CPU tensors) is built"):format(backend_name))
  end
  if b ~= "mpi" then
    raise(("ValueError: init: backend_name must be 'mpi' (or 'nccl', not yet built), but got '%s'"):format(backend_name))
  end
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
  local old = check_headers
  check_headers = on
  return old
end

-- the collectives ---------------------------------------------------------------------------

local OPS = { "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "barrier", "send" }
local OP_ID = {}
for i, n in ipairs(OPS) do OP_ID[n] = i end
local RED = { sum = 1, max = 2, min = 3, prod = 4, mean = 5 }
local RED_NAME = { "sum", "max", "min", "prod", "mean" }
local DTYPES = { "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool", "int16" }
local DT_ID = {}
for i, n in ipairs(DTYPES) do DT_ID[n] = i end
local MAXDIM = 8

local function header(op, t, red, root)
  local h = { OP_ID[op], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, RED[red] or 0, root or -1, 0, 0 }
  if t then
    h[2] = DT_ID[t.dtype.name]
    h[3] = t.ndim
    local shape = t.shape
    for i = 1, math.min(#shape, MAXDIM) do h[3 + i] = shape[i] end
    h[12] = t:numel()
  end
  return h
end

local function describe(h)
  if h[2] == 0 then return OPS[h[1]] or "?" end
  local dims = {}
  for i = 1, math.min(h[3], MAXDIM) do dims[i] = ("%d"):format(h[3 + i]) end
  if h[3] > MAXDIM then dims[#dims + 1] = "..." end
  local shape = "(" .. table.concat(dims, ", ") .. (h[3] == 1 and ",)" or ")")
  return ("%s of %s %s"):format(OPS[h[1]] or "?", DTYPES[h[2]] or "?", shape)
end

--- Compare the ranks' headers; the same error on every rank when they differ.
local function agree(what, g, h)
  if not check_headers then return end
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
          extra = (" (op %s on rank 0, %s on rank %d)"):format(RED_NAME[first[13]] or "-", RED_NAME[o[13]] or "-", r - 1)
        elseif o[14] ~= first[14] then
          extra = (" (root %d on rank 0, %d on rank %d)"):format(first[14], o[14], r - 1)
        end
        raise(("%s: %s: the ranks of the group differ: rank 0 calls %s, rank %d calls %s%s")
          :format(kind, what, describe(first), r - 1, describe(o), extra))
      end
    end
  end
end

local function check_tensor(what, t, name)
  if not core.is_tensor(t) then
    raise(("TypeError: %s: %s must be a Tensor, but got %s"):format(what, name or "tensor", type_name(t)))
  end
  return t
end

--- A device's name and index from t.device ("TEST:0" -> "TEST", 0).
local function device_of(t)
  local d = t.device
  local name, id = d:match("^([^:]+):?(%d*)$")
  return name or d, tonumber(id) or 0
end

--- The host buffer of t: t itself when it is a contiguous CPU tensor,
-- else a contiguous CPU copy (through the device's copies).
local function host(t)
  if t.device ~= "CPU" then return t:move_to("CPU") end
  if not t:is_contiguous() then return t:contiguous() end
  return t
end

--- Write host result h into t (in place), through the device when t is on one.
local function write_back(t, h)
  if rawequal(t, h) then return t end
  if t.device ~= "CPU" then
    local name, id = device_of(t)
    h = h:move_to(name, id)
  end
  local prev_ = core.set_grad_enabled(false)
  local ok, err = pcall(t.copy_, t, h)
  core.set_grad_enabled(prev_)
  if not ok then error(err, 0) end
  return t
end

--- A result made on the host, moved to `like`'s device.
local function to_device_of(like, h)
  if like.device == "CPU" then return h end
  local name, id = device_of(like)
  return h:move_to(name, id)
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

--- A 'mean' reduction runs as 'sum': the wire op of op.
local function wire_op(op) return op == "mean" and "sum" or op end

--- After a 'mean' ran as 'sum': divide the host result by the group size,
-- outside autograd (the collective's own node carries the gradient).
local function finish_mean(g, op, h)
  if op ~= "mean" then return end
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

--- all_reduce on host buffers: src -> dst (may be the same), op incl. mean.
local function raw_all_reduce(g, src, dst, op)
  B.C.allreduce(g.comm, src, dst, wire_op(op))
  finish_mean(g, op, dst)
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
  agree("all_reduce", g, header("all_reduce", t, op))
  local h = host(t)
  if out ~= nil then
    local ho = host(out)
    raw_all_reduce(g, h, ho, op)
    return write_back(out, ho)
  end
  local r = core.empty(t.shape, t.dtype)
  raw_all_reduce(g, h, r, op)
  local x, y = t:detach(), r:detach()
  return finish("all_reduce", t, r, op, NOT_PROD, function(grad)
    local dx = M.all_reduce(grad, op == "mean" and "mean" or "sum", group)
    if op == "max" or op == "min" then dx = dx * x:eq(y):astype(dx.dtype) end
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
  agree("all_gather", g, header("all_gather", t))
  local h = host(t)
  if out ~= nil then
    local ho = host(out)
    B.C.allgather(g.comm, h, ho)
    return write_back(out, ho)
  end
  local r = core.empty(oshape, t.dtype)
  B.C.allgather(g.comm, h, r)
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
  agree("reduce_scatter", g, header("reduce_scatter", t, op))
  local h = host(t)
  local ho = out ~= nil and host(out) or core.empty(oshape, t.dtype)
  B.C.reduce_scatter(g.comm, h, ho, wire_op(op))
  finish_mean(g, op, ho)
  if out ~= nil then return write_back(out, ho) end
  return finish("reduce_scatter", t, ho, op, SUM_MEAN, function(grad)
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
  agree("broadcast", g, header("broadcast", t, nil, src))
  if out ~= nil then
    local ho = host(out)
    if g.rank == src and not rawequal(out, t) then
      local prev_ = core.set_grad_enabled(false)
      ho:copy_(host(t))
      core.set_grad_enabled(prev_)
    end
    B.C.bcast(g.comm, ho, src)
    return write_back(out, ho)
  end
  local r = core.empty(t.shape, t.dtype)
  if g.rank == src then
    local prev_ = core.set_grad_enabled(false)
    r:copy_(host(t))
    core.set_grad_enabled(prev_)
  end
  B.C.bcast(g.comm, r, src)
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
-- the reduction over the ranks on rank dst; other ranks get zeros.
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
  agree("reduce", g, header("reduce", t, op, dst))
  local h = host(t)
  local ho = out ~= nil and host(out) or core.zeros(t.shape, t.dtype)
  B.C.reduce(g.comm, h, ho, wire_op(op), dst)
  if g.rank == dst then finish_mean(g, op, ho) end
  if out ~= nil then return write_back(out, ho) end
  return finish("reduce", t, ho, op, SUM_MEAN, function(grad)
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

local P2P = { "group", "sr_tag" }

local function peer(what, g, p)
  if type(p) ~= "number" or p ~= math.floor(p) or p < 0 or p >= g.size or p == g.rank then
    raise(("ValueError: %s: the peer must be another rank of the group (0..%d, not %d), but got %s")
      :format(what, g.size - 1, g.rank, type(p) == "number" and tostring(p) or type_name(p)))
  end
  return p
end

local function tag_of(what, tag)
  if tag == nil then return 0 end
  if type(tag) ~= "number" or tag ~= math.floor(tag) or tag < 0 or tag > 32766 then
    raise(("ValueError: %s: sr_tag must be an integer in 0..32766, but got %s"):format(what, tostring(tag)))
  end
  return tag
end

--- send(tensor, dst [, group, sr_tag = 0]): send tensor to rank dst, which
-- calls recv with a tensor of the same dtype and shape.
function M.send(t, dst, ...)
  local group, tag = args_util.parse("send", P2P, 3, select("#", ...), ...)
  check_tensor("send", t)
  local g = group_of("send", group)
  dst = peer("send", g, dst)
  tag = tag_of("send", tag)
  if check_headers then B.C.send_header(g.comm, header("send", t), dst, tag) end
  B.C.send(g.comm, host(t), dst, tag)
end

--- recv(tensor, src [, group, sr_tag = 0]): receive into tensor (in place)
-- what rank src sends; returns tensor.
function M.recv(t, src, ...)
  local group, tag = args_util.parse("recv", P2P, 3, select("#", ...), ...)
  check_tensor("recv", t)
  local g = group_of("recv", group)
  src = peer("recv", g, src)
  tag = tag_of("recv", tag)
  no_inplace_grad("recv", t)
  if check_headers then
    local theirs = B.C.recv_header(g.comm, src, tag)
    local mine = header("send", t)
    for i = 2, 12 do
      if theirs[i] ~= mine[i] then
        -- take the message off the channel, so later receives stay in step
        local n, dt = theirs[12], DTYPES[theirs[2]]
        if dt and n >= 0 then B.C.recv(g.comm, core.empty({ n }, core[dt]), src, tag) end
        raise(("%s: recv: rank %d sends %s, but this rank (%d) receives into %s"):format(
          theirs[2] ~= mine[2] and "TypeError" or "ValueError", src, describe(theirs):gsub("^send of ", ""),
          g.rank, (describe(mine):gsub("^send of ", ""))))
      end
    end
  end
  local h = host(t)
  B.C.recv(g.comm, h, src, tag)
  return write_back(t, h)
end

--- The C layer, for cell.nn's gradient reducer (non-blocking all-reduce).
function M._C() return B.mpi("init") end
function M._group(what, group) return group_of(what, group) end
M._agree = agree
M._header = header

return M
