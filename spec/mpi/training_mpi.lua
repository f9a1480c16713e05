-- training_mpi.lua - data-parallel training on every rank of `mpirun -np 2`
-- (make test-mpi; launch_jobs.lua runs it on 3 ranks too): the reducer's
-- average equals one process's gradient on the whole batch; 20 steps of TrainOneStepCell and of Model leave the
-- weights bit-identical on all ranks and equal (float32 tolerance) to one
-- process training on the concatenated batches, computed here on each rank
-- with cell.communication out of the loop (stand_alone mode); sharding,
-- metrics over ranks, and checkpoints written by rank 0 only.
local cell = require "cell"
local comm = cell.communication
local nn = cell.nn
local B = require "cell.communication.backend"
local X = require "cell.communication.transport"

comm.init()
local R, N = comm.get_rank(), comm.get_group_size()

local function assert_error(fn, text)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error: " .. text)
  assert.is_truthy(tostring(msg):find(text, 1, true), "expected '" .. text .. "' in: " .. tostring(msg))
end

local Net = nn.Cell:extend("DDPNet")
function Net:init()
  self.fc1 = nn.Dense(6, 5)
  self.fc2 = nn.Dense(5, 3)
end
function Net:construct(x) return self.fc2(self.fc1(x):tanh()) end

--- The same data on every rank: 8 * N samples of 6 features, 3 classes.
local function data(steps)
  cell.set_seed(7)
  local x = cell.randn({ steps, 4 * N, 6 })
  local y = cell.randint(1, 4, { steps, 4 * N })
  return x, y
end

--- This rank's rows of a full batch (the interleaved shard).
local function shard(t)
  local pos = require("cell.dataset.batches").shard_positions(t.shape[1], N, R)
  return t:index_select(1, cell.tensor(pos, cell.int64))
end

--- Copies of net's weights, on the host.
local function weights(net)
  local out = {}
  for i, p in ipairs(net:trainable_params()) do out[i] = p:move_to("CPU"):clone() end
  return out
end

--- Every rank's copy of each weight, gathered: bit-identical across ranks?
local function same_on_all_ranks(ws)
  for _, w in ipairs(ws) do
    local all = comm.all_gather(w:reshape({ 1, w:numel() }))
    for r = 2, N do
      assert.is_true(all[r]:eq(all[1]):all():item(), "rank " .. (r - 1) .. " differs from rank 0")
    end
  end
end

local function close(a, b, tol)
  for i = 1, #a do
    local d = (a[i] - b[i]):abs():max():item()
    assert.is_true(d <= tol, ("weight %d differs by %g"):format(i, d))
  end
end

local train

--- Train `steps` steps of SGD with momentum; data-parallel when ddp;
-- with `device` (the CPU unless given) the default device, so the net,
-- the data and the optimizer's state are made there.
local function run(steps, ddp, via_model, device)
  if not device then return train(steps, ddp, via_model) end
  cell.set_device(device)
  local ok, w = pcall(train, steps, ddp, via_model)
  cell.set_device("CPU")
  if not ok then error(w, 0) end
  return w
end

function train(steps, ddp, via_model)
  cell.reset_auto_parallel_context()
  if ddp then cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true } end
  local x, y = data(steps)
  -- different initial weights per rank under ddp: the reducer's broadcast of rank 0's fixes that
  cell.set_seed(ddp and 100 + R or 100)
  local net = Net()
  local opt = nn.Momentum(net:trainable_params(), 0.1, 0.9)
  if via_model then
    local list = {}
    for s = 1, steps do
      local xs, ys = x[s], y[s]
      if ddp then xs, ys = shard(xs), shard(ys) end
      list[s] = { xs, ys }
    end
    local model = cell.train.Model(net, nn.CrossEntropyLoss(), opt)
    model:train(1, list, { progress = false })
  else
    local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), opt)
    if ddp then
      assert.is_truthy(step.grad_reducer)
      -- one bucket per gradient (each is over 16 bytes), to see them start one by one
      step.grad_reducer = nn.DistributedGradReducer(net:trainable_params(), { mean = true, bucket_bytes = 16 })
    else
      assert.is_nil(step.grad_reducer)
    end
    for s = 1, steps do
      local xs, ys = x[s], y[s]
      if ddp then xs, ys = shard(xs), shard(ys) end
      step(xs, ys)
      if ddp then
        -- each of the 4 buckets' all-reduce was started in backward, by the hooks
        local early, all, on_device = step.grad_reducer:_overlap_stats()
        assert.are.equal(4, all)
        assert.are.equal(4, early)
        -- on a device with NCCL every bucket stays there; elsewhere none does
        assert.are.equal(X.route(net:trainable_params()[1]) == "nccl" and 4 or 0, on_device)
      end
    end
  end
  cell.reset_auto_parallel_context()
  return weights(net), net
end

describe("data-parallel training on " .. N .. " ranks", function()
  after_each(function() cell.reset_auto_parallel_context() end)

  it("averages gradients to the full batch's gradient (DistributedGradReducer)", function()
    local x, y = data(1)
    cell.set_seed(3)
    local net = Net()
    local params = net:trainable_params()
    local loss_fn = nn.CrossEntropyLoss()
    local f = function(a, b) return loss_fn(net(a), b) end
    local full = select(2, cell.value_and_grad(f, nil, params)(x[1], y[1]))
    local reducer = nn.DistributedGradReducer(params, true)
    local _, local_grads = cell.value_and_grad(f, nil, params)(shard(x[1]), shard(y[1]))
    local avg = reducer(local_grads)
    assert.are.equal(#params, #avg)
    close(avg, full, 1e-6)
    same_on_all_ranks(avg)
    -- sum (mean = false) is N times the mean; several small buckets give the same
    local sum = nn.DistributedGradReducer(params, { mean = false, bucket_bytes = 64 })(local_grads)
    for i = 1, #sum do close({ sum[i] / N }, { avg[i] }, 1e-6) end
  end)

  it("fuses gradients of one dtype into buckets up to bucket_bytes", function()
    local b = require("cell.nn.distributed")._buckets({ cell.zeros({ 4 }), cell.zeros({ 4 }), cell.zeros({ 2 }, cell.float64),
      cell.zeros({ 8 }) }, 32)
    -- float32: 16 + 16 bytes fill one bucket, 32 more open a second; float64 apart
    assert.are.same({ { 1, 2 }, { 3 }, { 4 } }, { { b[1][1], b[1][2] }, { b[2][1] }, { b[3][1] } })
  end)

  it("trains 20 steps of TrainOneStepCell: same weights on every rank, equal to one process on the whole batch", function()
    local single = run(20, false)
    local ddp = run(20, true)
    same_on_all_ranks(ddp)
    close(ddp, single, 2e-5)
  end)

  it("trains on a device without NCCL through the host (the test device): same weights as on the CPU", function()
    pcall(cell.core._register_test_device) -- make test-mpi sets CELL_TEST_DEVICE
    local single = run(20, false)
    local ddp = run(20, true, false, "TEST")
    same_on_all_ranks(ddp)
    close(ddp, single, 2e-5)
  end)

  it("packs each bucket on the device and all-reduces it there where the device has NCCL (a stand-in on the test "
    .. "device)", function()
    pcall(cell.core._register_test_device) -- make test-mpi sets CELL_TEST_DEVICE
    -- a stand-in NCCL layer for the test device: the reducer's calls (pack,
    -- iallreduce) and broadcast, each checking that it is handed device tensors
    local calls = { pack = 0, iallreduce = 0, bcast = 0 }
    local world = B.state.world
    local function on_test(t, what)
      assert.are.equal("TEST:0", t.device, what .. " gets a tensor on the device")
      assert.is_true(t:is_contiguous(), what .. " gets a contiguous tensor")
    end
    local function via_host(t, f)
      local h = t:move_to("CPU")
      f(h)
      t:copy_(h:move_to("TEST"))
    end
    local fake = {
      ID_BYTES = 4,
      unique_id = function() return "abcd" end,
      comm_init = function(id, n, r, ordinal)
        assert.are.same({ "abcd", N, R }, { id, n, r })
        return { ordinal = ordinal }
      end,
      pack = function(dst, parts)
        calls.pack = calls.pack + 1
        on_test(dst, "pack")
        local off = 1
        for _, p in ipairs(parts) do
          on_test(p, "pack")
          dst:narrow(1, off, p:numel()):copy_(p:reshape({ p:numel() }))
          off = off + p:numel()
        end
        assert.are.equal(dst:numel() + 1, off)
      end,
      iallreduce = function(_, t, op)
        calls.iallreduce = calls.iallreduce + 1
        on_test(t, "iallreduce")
        assert.are.equal("sum", op)
        via_host(t, function(h) B.C.allreduce(world, h, h, op) end)
        return { wait = function() end, test = function() return true end }
      end,
      bcast = function(_, src, dst, root)
        calls.bcast = calls.bcast + 1
        on_test(src, "bcast")
        via_host(dst, function(h) B.C.bcast(world, src:move_to("CPU"), h, root) end)
      end,
    }
    local g = comm._group("spec")
    local saved = { B.N, B.N_why, X.nccl_device, g.nccl }
    B.N, B.N_why, X.nccl_device, g.nccl = fake, nil, "TEST", nil
    local ok, ddp = pcall(run, 20, true, false, "TEST")
    B.N, B.N_why, X.nccl_device, g.nccl = saved[1], saved[2], saved[3], saved[4]
    assert.is_true(ok, tostring(ddp))
    -- 4 parameters broadcast by each of the two reducers made (TrainOneStepCell's
    -- and the one of 16-byte buckets that replaces it), then 4 buckets a step
    assert.are.same({ pack = 80, iallreduce = 80, bcast = 8 }, calls)
    same_on_all_ranks(ddp)
    close(ddp, run(20, false), 2e-5)
  end)

  it("trains through cell.train.Model the same way", function()
    local single = run(20, false, true)
    local ddp = run(20, true, true)
    same_on_all_ranks(ddp)
    close(ddp, single, 2e-5)
  end)

  it("broadcasts rank 0's parameters when the reducer is made", function()
    cell.set_seed(50 + R)
    local net = Net()
    nn.DistributedGradReducer(net:trainable_params())
    same_on_all_ranks(weights(net))
  end)

  it("shards batches and data sets: disjoint, together the whole set, padded to equal counts", function()
    local n = 2 * N + 1
    local x = cell.arange(0, n, 1, cell.int64)
    local b = cell.dataset.batches(x, nil, 100, { num_shards = N, shard_id = R })
    assert.are.equal(math.ceil(n / N), b.n)
    local mine = b:each(1)():tolist()
    local all = comm.all_gather(cell.tensor(mine, cell.int64))
    local seen = {}
    for _, v in ipairs(all:tolist()) do seen[v] = true end
    for i = 0, n - 1 do assert.is_true(seen[i], "sample " .. i .. " in no shard") end
    -- shuffled: the same permutation on every rank, so still a partition
    local bs = cell.dataset.batches(x, nil, 100, { num_shards = N, shard_id = R, shuffle = true, seed = 4 })
    local got = comm.all_gather(bs:each(1)()):tolist()
    local count = {}
    for _, v in ipairs(got) do count[v] = (count[v] or 0) + 1 end
    for i = 0, n - 1 do assert.is_truthy(count[i], "sample " .. i .. " missing after shuffling") end
    local ds = cell.dataset.synthetic(10, { num_shards = N, shard_id = R })
    assert.are.equal(math.ceil(10 / N), ds.images.shape[1])
    -- every N-th sample from R + 1 (on 2 ranks: R + 1, R + 3, ..., R + 9), wrapping round
    local pos = {}
    for k = 0, math.ceil(10 / N) - 1 do pos[k + 1] = (R + k * N) % 10 + 1 end
    local whole = cell.dataset.synthetic(10)
    assert.is_true(ds.labels:eq(whole.labels:index_select(1, cell.tensor(pos, cell.int64))):all():item())
  end)

  it("averages metrics over the ranks in Model.eval", function()
    cell.set_auto_parallel_context { parallel_mode = "data_parallel" }
    -- rank 0 gets every sample right, the others none: accuracy 1/N over all
    local logits = cell.tensor({ { 5, 0 }, { 5, 0 } })
    local labels = cell.tensor({ R == 0 and 1 or 2, R == 0 and 1 or 2 }, cell.int64)
    local Id = nn.Cell:extend("Id")
    function Id:construct(x) return x end
    local model = cell.train.Model(Id(), nn.CrossEntropyLoss(), nil, { "accuracy", "loss" })
    local res = model:eval({ { logits, labels } })
    assert.is_true(math.abs(res.accuracy - 1 / N) < 1e-12)
    local l0 = nn.CrossEntropyLoss()(logits, cell.tensor({ 1, 1 }, cell.int64)):item()
    local l1 = nn.CrossEntropyLoss()(logits, cell.tensor({ 2, 2 }, cell.int64)):item()
    assert.is_true(math.abs(res.loss - (l0 + (N - 1) * l1) / N) < 1e-6)
  end)

  it("writes checkpoints on rank 0 only", function()
    local dir = os.getenv("CELL_MPI_TMP") or "build/mpi-test"
    dir = dir .. "/ckpt"
    if R == 0 then os.execute("rm -rf '" .. dir .. "'") end
    comm.barrier()
    cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true }
    local net = Net()
    local model = cell.train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1))
    local ck = cell.train.ModelCheckpoint { prefix = "r" .. R, directory = dir, save_checkpoint_steps = 1 }
    local x, y = data(1)
    model:train(1, { { shard(x[1]), shard(y[1]) } }, { callbacks = { ck }, progress = false })
    comm.barrier()
    local p = io.popen("ls '" .. dir .. "'")
    local files = p:read("*a")
    p:close()
    assert.are.equal("r0-1_1.safetensors\n", files)
  end)

  it("needs init before a reducer, and parameters as a list", function()
    assert_error(function() nn.DistributedGradReducer(5) end,
      "TypeError: For 'DistributedGradReducer', the 'parameters' must be a list of Parameters, but got number.")
    local net = Net()
    local red = nn.DistributedGradReducer(net:trainable_params())
    assert_error(function() red({ cell.zeros({ 1 }) }) end,
      "ValueError: For 'DistributedGradReducer', expected 4 gradients (one per parameter), but got 1.")
  end)
end)
