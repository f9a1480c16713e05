-- nccl_ranks.lua - cell.communication on NCCL, one rank per GPU
-- (spec/cuda/nccl_cuda.lua starts it under mpirun where GPUs are): every
-- collective on every dtype NCCL has, on GPU tensors that stay on the GPU,
-- against values computed by hand; send and recv with their gradients
-- when there are 2 ranks or more. Prints "nccl ok <rank>" when every check
-- holds, else raises (and the job ends on every rank).
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
print("nccl ok " .. R)
