--- fashion_mnist_ddp.lua - the LeNet-5 of examples/fashion_mnist.lua trained
-- data-parallel on several processes: each rank trains on its own shard of
-- the training set with a per-rank batch of 64 / ranks (so the global batch
-- is 64, as in the single-process example), gradients are averaged across
-- ranks after every backward pass, and every rank ends with the same
-- weights. Rank 0 shows the progress bar, evaluates on its shard of the
-- test set and reports the accuracy over all ranks, and writes the
-- checkpoint.
-- Run: mpirun -np 2 bin/cell examples/fashion_mnist_ddp.lua [epochs] [data dir] [checkpoint path] [train images]
-- (as root add --allow-run-as-root; on a machine with fewer cores than
-- ranks add --oversubscribe). Across machines: mpirun -np 4 --hostfile hosts ...
-- Alone (`bin/cell examples/fashion_mnist_ddp.lua`) it runs as a job of one rank.
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/lib/?.lua;" .. package.path
local cell = require "cell"
local data = require "data"
local nn, train, comm = cell.nn, cell.train, cell.communication

local epochs = tonumber(arg and arg[1]) or 2
local dir = arg and arg[2]
if dir == "" then dir = nil end
local path = arg and arg[3] or "build/demo/lenet_ddp.safetensors"
local limit = tonumber(arg and arg[4]) -- the first `limit` training images only (a quick run)

comm.init()
local rank, size = comm.get_rank(), comm.get_group_size()
cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true }
-- The machine's cores shared among its ranks (Open MPI says how many run here).
local here_ranks = tonumber(os.getenv("OMPI_COMM_WORLD_LOCAL_SIZE") or "") or size
cell.set_num_threads(math.max(1, math.floor(cell.get_num_threads() / here_ranks)))

local LeNet5 = require("models").LeNet5

cell.set_seed(1) -- the reducer broadcasts rank 0's weights anyway
local train_set, test_set, real = data.load(dir, limit)
local batch = math.max(1, math.floor(64 / size))
local batches = cell.dataset.batches(train_set.images, train_set.labels, batch,
  { shuffle = true, seed = 1, num_shards = size, shard_id = rank })
local net = LeNet5(10)
if rank == 0 then
  print(("%d ranks, %d samples per rank per step, %d steps per epoch"):format(size, batch, batches:len()))
end
local total = epochs * batches:len()
local lr = nn.cosine_decay_lr(0, 5e-3, total, 1, total)
local model = train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), lr), { "accuracy" })
local t0 = cell.perf_counter()
model:train(epochs, batches)
local secs = cell.perf_counter() - t0
local test_batches = cell.dataset.batches(test_set.images, test_set.labels, 1000,
  { num_shards = size, shard_id = rank })
local acc = model:eval(test_batches).accuracy -- summed over the ranks' shards
if rank == 0 then
  print(("%s on %d ranks: %d epochs in %.1f s, test accuracy %.2f%%"):format(real and "Fashion-MNIST" or "synthetic",
    size, epochs, secs, 100 * acc))
  os.execute("mkdir -p '" .. path:match("^(.*)/[^/]*$") .. "'")
  cell.save_checkpoint(net, path)
  print("saved " .. path)
end
-- every rank holds the same trainable weights: check the first one
local w = net:trainable_params()[1]
local all = comm.all_gather(w:reshape({ 1, w:numel() }))
for r = 2, size do assert(all[r]:eq(all[1]):all():item(), "rank " .. (r - 1) .. "'s weights differ from rank 0's") end
