--- cell.nn.DistributedGradReducer: MindSpore's gradient all-reduce for
-- data-parallel training. Every rank computes gradients on its own shard of
-- the batch; the reducer sums them over the ranks (and divides by `degree`
-- when `mean`), so each rank's optimizer takes the same step.
--
--     comm.init()
--     local reducer = nn.DistributedGradReducer(net:trainable_params(), true)
--     local loss, grads = grad_fn(x, y)
--     optimizer(reducer(grads))
--
-- Gradients are fused: those of one dtype and device are packed into
-- buckets of up to `bucket_bytes` (4 MiB; parameters taken last to first,
-- the order backward finishes them), each all-reduced as one buffer with a
-- non-blocking all-reduce: on a GPU that NCCL serves, packed on the GPU and
-- all-reduced there by NCCL (queued on the GPU's stream); elsewhere packed
-- on the host and all-reduced by MPI_Iallreduce. Inside TrainOneStepCell
-- the reducer is armed before the backward pass: a hook on each parameter
-- (cell's tensor hooks run once a leaf's gradient is complete) packs the
-- gradient, and a bucket's all-reduce starts as soon as its last gradient is in, while backward
-- goes on with the earlier layers; the call then waits for them. Called on
-- its own, it packs and starts every bucket, then waits. Making one
-- broadcasts the parameters from rank 0 (unless the auto-parallel
-- context's parameter_broadcast is false), so every rank starts from the
-- same weights.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local Cell = require "cell.nn.cell"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local type_name = T.type_name

local M = {}

local Reducer = Cell:extend("DistributedGradReducer")
M.DistributedGradReducer = Reducer

local OPTIONS = { "mean", "degree", "fusion_type", "group", "bucket_bytes" }

--- DistributedGradReducer(parameters [, mean, degree, fusion_type = 1, group])
-- (or {mean =, degree =, group =, bucket_bytes = 4 MiB}). mean defaults to
-- the context's gradients_mean, degree to the group's size.
function Reducer:init(parameters, ...)
  local mean, degree, fusion_type, group, bucket_bytes =
    args_util.parse("DistributedGradReducer", OPTIONS, 3, select("#", ...), ...)
  Cell.init(self, { auto_prefix = false })
  local comm = require "cell.communication"
  local pc = require "cell.parallel_context"
  if type(parameters) ~= "table" then
    raise(("TypeError: For 'DistributedGradReducer', the 'parameters' must be a list of Parameters, but got %s.")
      :format(type_name(parameters)))
  end
  local params = {}
  for i = 1, #parameters do
    local p = parameters[i]
    if not core.is_tensor(p) then
      raise(("TypeError: For 'DistributedGradReducer', parameters[%d] must be a Parameter, but got %s.")
        :format(i, type_name(p)))
    end
    params[i] = p
  end
  if mean == nil then mean = pc.get("gradients_mean") end
  if type(mean) ~= "boolean" then
    raise(("TypeError: For 'DistributedGradReducer', the 'mean' must be a boolean, but got %s."):format(type_name(mean)))
  end
  local g = comm._group("DistributedGradReducer", group)
  if degree == nil then degree = g.size end
  if type(degree) ~= "number" or degree ~= math.floor(degree) or degree < 1 then
    raise(("ValueError: For 'DistributedGradReducer', the 'degree' must be a positive integer, but got %s.")
      :format(type(degree) == "number" and tostring(degree) or type_name(degree)))
  end
  if fusion_type ~= nil and type(fusion_type) ~= "number" then
    raise(("TypeError: For 'DistributedGradReducer', the 'fusion_type' must be an integer, but got %s.")
      :format(type_name(fusion_type)))
  end
  if bucket_bytes == nil then bucket_bytes = 4 * 1024 * 1024 end
  if type(bucket_bytes) ~= "number" or bucket_bytes < 1 then
    raise(("ValueError: For 'DistributedGradReducer', the 'bucket_bytes' must be a positive number, but got %s.")
      :format(tostring(bucket_bytes)))
  end
  local cfg = { params = params, mean = mean, degree = degree, group = group, bucket_bytes = bucket_bytes }
  cfg.plan = M._plan(params, bucket_bytes)
  cfg.bucket_of = {}
  for k, b in ipairs(cfg.plan) do
    for _, i in ipairs(b) do cfg.bucket_of[i] = k end
  end
  cfg.pass = { armed = false }
  self._reducer = function() return cfg end -- a function: not registered as parameters
  self.mean, self.degree = mean, degree
  if pc.get("parameter_broadcast") then M._broadcast_parameters(params, group) end
  -- hooks on the parameters that get gradients; an armed pass uses them
  local hooks = {}
  for i, p in ipairs(params) do
    if p.requires_grad then
      hooks[#hooks + 1] = p:register_hook(function(gr)
        if cfg.pass.armed then M._on_grad(cfg, i, gr) end
        return nil
      end)
    end
  end
  cfg.hooks = hooks
end

--- Every parameter set to rank 0's values, in place (no autograd record).
function M._broadcast_parameters(params, group)
  local comm = require "cell.communication"
  local prev = core.set_grad_enabled(false)
  local ok, err = pcall(function()
    for i = 1, #params do
      local p = params[i]
      comm.broadcast(p, 0, { group = group, out = p })
    end
  end)
  core.set_grad_enabled(prev)
  if not ok then error(err, 0) end
end

--- Buckets of indices into `ts` (tensors): same dtype and device, up to `limit`
-- bytes each (one tensor over the limit is a bucket alone), in the order
-- given by `order` (default 1..#ts).
local function buckets(ts, limit, order)
  local out, open = {}, {}
  if not order then
    order = {}
    for i = 1, #ts do order[i] = i end
  end
  for _, i in ipairs(order) do
    local t = ts[i]
    local key = t.dtype.name .. "@" .. t.device
    local b = open[key]
    local bytes = t:numel() * t.dtype.itemsize
    if b == nil or (b.bytes + bytes > limit and #b > 0) then
      b = { bytes = 0, dtype = t.dtype }
      open[key] = b
      out[#out + 1] = b
    end
    b[#b + 1] = i
    b.bytes = b.bytes + bytes
  end
  return out
end
M._buckets = buckets

--- The buckets of a parameter list: last parameter first.
function M._plan(params, limit)
  local order = {}
  for i = #params, 1, -1 do order[#order + 1] = i end
  return buckets(params, limit, order)
end

local WHAT = "DistributedGradReducer"

--- Whether the gradients `grads` go through NCCL: all on one device that
-- the NCCL transport serves (a GPU where cell.cuda has NCCL), in a dtype it takes.
local function on_nccl(X, grads)
  local d = grads[1].device
  for _, gr in ipairs(grads) do
    if gr.device ~= d or X.route(gr) ~= "nccl" then return false end
  end
  return true
end

--- Pack bucket k from grad(i) and start its all-reduce. On a GPU with
-- NCCL the bucket is packed on the device (the NCCL layer's pack: device
-- to device copies on the device's stream) and all-reduced there in place
-- (its iallreduce, queued on the same stream); elsewhere the gradients go
-- to the host, are packed there and all-reduced by MPI_Iallreduce.
local function start_bucket(cfg, k, grad)
  local comm = require "cell.communication"
  local X = require "cell.communication.transport"
  local g = comm._group(WHAT, cfg.group)
  local b = cfg.plan[k]
  local prev = core.set_grad_enabled(false)
  local ok, err = pcall(function()
    local grads = {}
    for j, i in ipairs(b) do grads[j] = grad(i) end
    if on_nccl(X, grads) then
      local parts, n = {}, 0
      for j, gr in ipairs(grads) do
        parts[j] = gr:is_contiguous() and gr or gr:contiguous()
        n = n + gr:numel()
      end
      local flat = X.new_buf({ device = true }, grads[1], { n })
      comm._agree(WHAT, g, X.header("all_reduce", flat, "sum", nil, "nccl"))
      local x = X.transport(WHAT, g, "nccl", flat)
      x.C.pack(flat, parts)
      cfg.pass.flats[k] = flat
      cfg.pass.reqs[k] = x.C.iallreduce(x.comm, flat, "sum")
      cfg.pass.device = cfg.pass.device + 1
      return
    end
    local parts = {}
    for j, gr in ipairs(grads) do
      if gr.device ~= "CPU" then gr = gr:move_to("CPU") end
      parts[j] = gr:reshape({ gr:numel() })
    end
    local flat = #parts == 1 and parts[1]:clone() or core.cat(parts, 1)
    comm._agree(WHAT, g, X.header("all_reduce", flat, "sum"))
    cfg.pass.flats[k] = flat
    cfg.pass.reqs[k] = comm._C().iallreduce(g.comm, flat, "sum")
  end)
  core.set_grad_enabled(prev)
  if not ok then error(err, 0) end
end

--- A fresh pass: any all-reduce still running (a pass that failed) is
-- waited for first.
local function new_pass(cfg, armed)
  local old = cfg.pass
  if old and old.reqs then
    for _, r in pairs(old.reqs) do r:wait() end
  end
  cfg.pass = { armed = armed, captured = {}, count = {}, flats = {}, reqs = {}, device = 0 }
end

--- A parameter's gradient is final (its hook ran during backward).
function M._on_grad(cfg, i, gr)
  local pass = cfg.pass
  local k = cfg.bucket_of[i]
  if pass.captured[i] ~= nil or pass.reqs[k] then return end
  pass.captured[i] = gr
  pass.count[k] = (pass.count[k] or 0) + 1
  if pass.count[k] == #cfg.plan[k] then
    start_bucket(cfg, k, function(j) return pass.captured[j] end)
    for j = 1, #cfg.plan[k] do pass.captured[cfg.plan[k][j]] = false end
  end
  -- MPI moves a non-blocking collective along inside its calls: test the
  -- running ones while backward goes on
  for _, r in pairs(pass.reqs) do r:test() end
end

--- Arm the reducer for the next backward pass (TrainOneStepCell does).
function Reducer:_arm()
  new_pass(self._reducer(), true)
end

--- construct(grads) -> the reduced gradients (new tensors, in the same
-- order, shapes and devices).
function Reducer:construct(grads)
  local cfg = self._reducer()
  if type(grads) ~= "table" or #grads ~= #cfg.params then
    raise(("ValueError: For 'DistributedGradReducer', expected %d gradients (one per parameter), but got %s.")
      :format(#cfg.params, type(grads) == "table" and tostring(#grads) or type_name(grads)))
  end
  for i = 1, #grads do
    local gr, p = grads[i], cfg.params[i]
    if not core.is_tensor(gr) then
      raise(("TypeError: For 'DistributedGradReducer', grads[%d] must be a Tensor, but got %s.")
        :format(i, type_name(gr)))
    end
    if gr.dtype ~= p.dtype or not T.same_shape(gr.shape, p.shape) then
      raise(("ValueError: For 'DistributedGradReducer', grads[%d] must be %s %s like its parameter, but got %s %s.")
        :format(i, p.dtype.name, T.shape_str(p.shape), gr.dtype.name, T.shape_str(gr.shape)))
    end
  end
  if not cfg.pass.armed then new_pass(cfg, false) end
  local pass = cfg.pass
  pass.armed = false
  local out = {}
  local early = 0
  for _ in pairs(pass.reqs) do early = early + 1 end
  cfg.last_overlapped = early
  local prev = core.set_grad_enabled(false)
  local ok, err = pcall(function()
    for k = 1, #cfg.plan do
      if not pass.reqs[k] then start_bucket(cfg, k, function(i) return grads[i] end) end
    end
    for k, b in ipairs(cfg.plan) do
      pass.reqs[k]:wait()
      local flat = pass.flats[k]
      if cfg.mean then flat:div_(cfg.degree) end
      local off = 1
      for _, i in ipairs(b) do
        local gr = grads[i]
        local n = gr:numel()
        local r = flat:narrow(1, off, n):reshape(gr.shape)
        if gr.device ~= r.device then
          local name, id = gr.device:match("^([^:]+):?(%d*)$")
          r = r:move_to(name, tonumber(id) or 0)
        end
        out[i] = r
        off = off + n
      end
    end
  end)
  core.set_grad_enabled(prev)
  pass.reqs = {}
  cfg.last_on_device = pass.device
  if not ok then error(err, 0) end
  return out
end

--- How many buckets the last call started during backward (hooks), how
-- many in all, and how many of them stayed on the device (NCCL): for
-- tests and tuning.
function Reducer:_overlap_stats()
  local cfg = self._reducer()
  return cfg.last_overlapped or 0, #cfg.plan, cfg.last_on_device or 0
end

function Reducer:__tostring()
  return ("DistributedGradReducer(mean=%s, degree=%d)"):format(tostring(self.mean), self.degree)
end

--- The reducer a training wrapper (TrainOneStepCell and its loss-scale
-- form) puts before its optimizer when data-parallel training is on
-- (cell.set_auto_parallel_context): the gradients of weights all-reduced
-- across ranks; nil otherwise.
function M._reducer_for(weights)
  local pc = require "cell.parallel_context"
  if not pc.distributed() then return nil end
  return Reducer(weights, pc.get("gradients_mean"), pc.get_auto_parallel_context("device_num"))
end

return M
