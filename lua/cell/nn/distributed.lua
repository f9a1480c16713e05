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
-- Gradients are fused: those of one dtype are packed into buckets of up to
-- `bucket_bytes` (4 MiB), each all-reduced as one buffer; the buckets' MPI
-- all-reduces are started together (non-blocking) and waited for at the
-- end. Making one broadcasts the parameters from rank 0 (unless the
-- auto-parallel context's parameter_broadcast is false), so every rank
-- starts from the same weights.
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
  self._reducer = function() return cfg end -- a function: not registered as parameters
  self.mean, self.degree = mean, degree
  if pc.get("parameter_broadcast") then M._broadcast_parameters(params, group) end
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

--- Buckets of gradient indices: same dtype, up to `limit` bytes each.
local function buckets(grads, limit)
  local out, open = {}, {}
  for i = 1, #grads do
    local gr = grads[i]
    local dt = gr.dtype.name
    local b = open[dt]
    local bytes = gr:numel() * gr.dtype.itemsize
    if b == nil or (b.bytes + bytes > limit and #b > 0) then
      b = { bytes = 0, dtype = gr.dtype }
      open[dt] = b
      out[#out + 1] = b
    end
    b[#b + 1] = i
    b.bytes = b.bytes + bytes
  end
  return out
end
M._buckets = buckets

--- construct(grads) -> the reduced gradients (new tensors, in the same
-- order, shapes and devices).
function Reducer:construct(grads)
  local cfg = self._reducer()
  if type(grads) ~= "table" or #grads ~= #cfg.params then
    raise(("ValueError: For 'DistributedGradReducer', expected %d gradients (one per parameter), but got %s.")
      :format(#cfg.params, type(grads) == "table" and tostring(#grads) or type_name(grads)))
  end
  for i = 1, #grads do
    if not core.is_tensor(grads[i]) then
      raise(("TypeError: For 'DistributedGradReducer', grads[%d] must be a Tensor, but got %s.")
        :format(i, type_name(grads[i])))
    end
  end
  local comm = require "cell.communication"
  local C = comm._C()
  local g = comm._group("DistributedGradReducer", cfg.group)
  local prev = core.set_grad_enabled(false)
  local out = {}
  local ok, err = pcall(function()
    local bs = buckets(grads, cfg.bucket_bytes)
    local flats, reqs = {}, {}
    for k, b in ipairs(bs) do
      local parts = {}
      for j, i in ipairs(b) do
        local gr = grads[i]
        if gr.device ~= "CPU" then gr = gr:move_to("CPU") end
        parts[j] = gr:reshape({ gr:numel() })
      end
      local flat = #parts == 1 and parts[1]:clone() or core.cat(parts, 1)
      comm._agree("DistributedGradReducer", g, comm._header("all_reduce", flat, "sum"))
      flats[k] = flat
      reqs[k] = C.iallreduce(g.comm, flat, "sum")
    end
    for k, b in ipairs(bs) do
      reqs[k]:wait()
      local flat = flats[k]
      if cfg.mean then flat:div_(cfg.degree) end
      local off = 1
      for _, i in ipairs(b) do
        local gr = grads[i]
        local n = gr:numel()
        local r = flat:narrow(1, off, n):reshape(gr.shape)
        if gr.device ~= "CPU" then
          local name, id = gr.device:match("^([^:]+):?(%d*)$")
          r = r:move_to(name, tonumber(id) or 0)
        end
        out[i] = r
        off = off + n
      end
    end
  end)
  core.set_grad_enabled(prev)
  if not ok then error(err, 0) end
  return out
end

function Reducer:__tostring()
  return ("DistributedGradReducer(mean=%s, degree=%d)"):format(tostring(self.mean), self.degree)
end

return M
