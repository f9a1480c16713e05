-- nccl_ranks.lua - cell.communication on NCCL, one rank per GPU
-- (spec/cuda/nccl_cuda.lua starts it under mpirun where GPUs are): every
-- collective on every dtype NCCL has, on GPU tensors that stay on the GPU,
-- against values computed by hand; send and recv with their gradients
-- when there are 2 ranks or more; 20 steps of data-parallel training with
-- DistributedGradReducer on GPU tensors (each bucket packed on the GPU and
-- all-reduced by NCCL) leave the weights bit-identical on every rank and
-- close to one process training on the whole batches on the CPU. Prints
-- "nccl ok <rank>" when every check holds, else raises (and the job ends
-- on every rank).
local cell = require "cell"
local comm = cell.communication
local X = require "cell.communication.transport"

comm.init("nccl")
local R, N = comm.get_rank(), comm.get_group_size()
local dev = select(2, cell.get_device())
assert(cell.get_device() == "GPU", "init('nccl') makes a GPU the default device")
local function gpu(t) return t:move_to("GPU", dev) end
local function list(t) return t:move_to("CPU"):astype(cell.float64):tolist() end
local function same(want, got, what)
  local a, b = table.concat(want, ","), table.concat(got, ",")
  assert(a == b, ("%s: expected {%s}, got {%s}"):format(what, a, b))
end
local S = N * (N + 1) / 2
local function prod_of(f)
  local p = 1
  for r = 0, N - 1 do p = p * f(r) end
  return p
end

for _, dt in ipairs({ "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64" }) do
  local function input() return gpu(cell.tensor({ R + 1, 2 * (R + 1), 3 }, cell[dt])) end
  local t = input()
  assert(X.route(t) == "nccl", dt .. " goes through NCCL")
  local s = comm.all_reduce(t)
  assert(s.device == t.device, "the result stays on the GPU")
  same({ S, 2 * S, 3 * N }, list(s), dt .. " sum")
  same({ N, 2 * N, 3 }, list(comm.all_reduce(input(), "max")), dt .. " max")
  same({ 1, 2, 3 }, list(comm.all_reduce(input(), "min")), dt .. " min")
  same({ prod_of(function(r) return r + 1 end), prod_of(function(r) return 2 * (r + 1) end), 3 ^ N },
    list(comm.all_reduce(input(), "prod")), dt .. " prod")
  local u = input()
  comm.all_reduce(u, { out = u })
  same({ S, 2 * S, 3 * N }, list(u), dt .. " in place")
  local g = comm.all_gather(gpu(cell.tensor({ { R, R + 1 } }, cell[dt])))
  local want = {}
  for r = 0, N - 1 do want[#want + 1] = r; want[#want + 1] = r + 1 end
  same(want, list(g:reshape({ 2 * N })), dt .. " all_gather")
  local rows = {}
  for i = 1, N do rows[i] = { i, R } end
  same({ N * (R + 1), N * (N - 1) / 2 }, list(comm.reduce_scatter(gpu(cell.tensor(rows, cell[dt]))):reshape({ 2 })),
    dt .. " reduce_scatter")
  same({ N, 2 * N, 3 }, list(comm.broadcast(input(), N - 1)), dt .. " broadcast")
  local red = comm.reduce(input(), 0)
  same(R == 0 and { S, 2 * S, 3 * N } or { 0, 0, 0 }, list(red), dt .. " reduce")
end

-- mean: NCCL averages (ncclAvg)
same({ S / N, 2 * S / N, 3 }, list(comm.all_reduce(gpu(cell.tensor({ R + 1, 2 * (R + 1), 3 })), "mean")), "mean")
-- bool has no NCCL type: it goes through the host and MPI
local b = gpu(cell.tensor({ R == 0, true, false }, cell.bool))
assert(X.route(b) == "mpi", "bool goes through MPI")
local bl = comm.all_reduce(b):move_to("CPU"):tolist()
same({ "true", "true", "false" }, { tostring(bl[1]), tostring(bl[2]), tostring(bl[3]) }, "bool (logical or)")

if N >= 2 then
  -- rank 0 sends x to rank 1, whose loss is sum(recv * w), w = {1, 10}:
  -- rank 0's gradient comes back from rank 1 (MindSpore's Send/Receive rules)
  if R == 0 then
    local x = gpu(cell.tensor({ 1, 2 })):requires_grad_()
    local gx = cell.grad(function(a) return comm.send(a * 1, 1) end)(x)
    same({ 1, 10 }, list(gx), "send's backward")
  elseif R == 1 then
    local w = gpu(cell.tensor({ 1, 10 }))
    local tmpl = gpu(cell.zeros({ 2 })):requires_grad_()
    local loss = cell.value_and_grad(function(tm) return (comm.recv(tm, 0) * w):sum() end)(tmpl)
    same({ 21 }, { loss:item() }, "recv's value")
  end
end
comm.barrier()

-- DistributedGradReducer on the GPU -------------------------------------------------------
local nn = cell.nn
local STEPS = 20
--- fn(...)'s one result, made with the CPU the default device.
local function on_cpu(fn, ...) return X.on_device("CPU", 0, fn, ...) end

local Net = nn.Cell:extend("NcclNet")
function Net:init()
  self.fc1 = nn.Dense(6, 5)
  self.fc2 = nn.Dense(5, 3)
end
function Net:construct(x) return self.fc2(self.fc1(x):tanh()) end

-- the same data on every rank (on the host): STEPS batches of 4 * N samples
local data = on_cpu(function()
  cell.set_seed(7)
  return { cell.randn({ STEPS, 4 * N, 6 }), cell.randint(1, 4, { STEPS, 4 * N }) }
end)
--- This rank's rows of a full batch (the interleaved shard), on the host.
local function shard(t)
  return on_cpu(function()
    local pos = require("cell.dataset.batches").shard_positions(t.shape[1], N, R)
    return t:index_select(1, cell.tensor(pos, cell.int64))
  end)
end

--- STEPS steps of Momentum; ddp: on this rank's GPU, data-parallel, with
-- different initial weights per rank (the reducer broadcasts rank 0's).
-- Returns the weights, on the host.
local function train(ddp)
  cell.reset_auto_parallel_context()
  if ddp then cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true } end
  local net = on_cpu(function()
    cell.set_seed(ddp and 100 + R or 100)
    return Net()
  end)
  if ddp then net:move_to("GPU", dev) end
  local opt = nn.Momentum(net:trainable_params(), 0.1, 0.9)
  local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), opt)
  if ddp then
    -- one bucket per gradient, so each starts in backward, by the hooks
    step.grad_reducer = nn.DistributedGradReducer(net:trainable_params(), { mean = true, bucket_bytes = 16 })
  else
    assert(step.grad_reducer == nil, "no reducer out of data-parallel mode")
  end
  for s = 1, STEPS do
    local x, y = data[1][s], data[2][s]
    if ddp then x, y = shard(x):move_to("GPU", dev), shard(y):move_to("GPU", dev) end
    step(x, y)
    if ddp then
      local early, all, on_device = step.grad_reducer:_overlap_stats()
      assert(all == 4 and early == 4 and on_device == 4, ("reducer step %d: %d buckets, %d started in backward, "
        .. "%d on the GPU (expected 4, 4, 4)"):format(s, all, early, on_device))
      assert(net:trainable_params()[1].device == "GPU:" .. dev, "the weights stay on the GPU")
    end
  end
  cell.reset_auto_parallel_context()
  local out = {}
  for i, p in ipairs(net:trainable_params()) do out[i] = p:move_to("CPU"):clone() end
  return out
end

local ddp = train(true)
local single = on_cpu(train, false)
for i, w in ipairs(ddp) do
  local all = comm.all_gather(w:reshape({ 1, w:numel() }))
  for r = 2, N do
    assert(all[r]:eq(all[1]):all():item(), ("reducer: weight %d differs between rank 0 and rank %d"):format(i, r - 1))
  end
  local d = (w - single[i]):abs():max():item()
  assert(d <= 1e-4, ("reducer: weight %d differs from one process on the CPU by %g"):format(i, d))
end
comm.barrier()
print("nccl ok " .. R)
