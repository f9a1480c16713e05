--- train.lua - one training step (forward, backward, Adam) of the MLP
-- 784-256-10 and of the LeNet-5 (with batch norm) of examples/fashion_mnist.lua at batch 64,
-- through TrainOneStepCell(WithLossCell(net, CrossEntropyLoss), Adam) as
-- Model.train runs it; and what a steady-state step asks of the allocator.
-- Also an LSTM language model's step (vocab 64, hidden 128, T 32, batch 16).
-- Prints `cell_train_step_mlp_ms`, `cell_train_step_lenet_ms`, `cell_train_step_lstm_lm_ms`,
-- `cell_train_step_os_allocs` (allocations reaching the OS per step after
-- warm-up) and `cell_train_step_cache_allocs` (served from the cache).
-- The side-by-side is bench/torch/train.py. CELL_BENCH_THREADS, when set,
-- is the thread count.
local cell = require "cell"
local nn = cell.nn

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end
local REPS, CALLS = 5, 20

package.path = "examples/lib/?.lua;" .. package.path
local models = require "models"
local MLP, LeNet5 = models.MLP, models.LeNet5

cell.set_seed(1)
local x = cell.rand({ 64, 1, 28, 28 })
local y = cell.randint(1, 11, { 64 })

local function step_of(net)
  local opt = nn.Adam(net:trainable_params(), 1e-3)
  local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), opt)
  step:set_train(true)
  return function() return step(x, y) end
end

local timing = dofile((arg and arg[0] or "bench/x.lua"):gsub("[^/]*$", "") .. "timing.lua")
local function bench_ms(fn) return timing.bench_ms(fn, REPS, CALLS) end

local mlp_step, lenet_step = step_of(MLP()), step_of(LeNet5())
print(("cell_train_step_mlp_ms %.4f ms"):format(bench_ms(mlp_step)))
print(("cell_train_step_lenet_ms %.4f ms"):format(bench_ms(lenet_step)))

-- An LSTM language model (vocab 64, embedding and hidden 128, T 32, batch
-- 16): Embedding -> LSTM -> Dense over every step, cross-entropy, Adam.
local CharLM = nn.Cell:extend("BenchCharLM")
function CharLM:init()
  self.embed = nn.Embedding(64, 128)
  self.lstm = nn.LSTM(128, 128, { batch_first = true })
  self.head = nn.Dense(128, 64)
end
function CharLM:construct(ids) return self.head((self.lstm(self.embed(ids))):reshape({ -1, 128 })) end
do
  local ids, next_ids = cell.randint(1, 65, { 16, 32 }), cell.randint(1, 65, { 16 * 32 })
  local net = CharLM()
  local lm = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), nn.Adam(net:trainable_params(), 1e-3))
  lm:set_train(true)
  print(("cell_train_step_lstm_lm_ms %.4f ms"):format(bench_ms(function() return lm(ids, next_ids) end)))
end

-- Allocator traffic of steady-state steps: what reaches the OS, and what
-- the cache serves. The warm-up spans a full collection: the binding runs
-- one every 96 MB of tensors (src/lua/lcore.c), dozens of these steps,
-- and until the first the cache is still growing to the cycle's peak (20
-- steps of warm-up: 0.01-0.02 OS allocations a step over the next 50-200,
-- 60: 0).
for _ = 1, 60 do lenet_step() end
collectgarbage()
local before = cell.memory_stats()
local N = 50
for _ = 1, N do lenet_step() end
local after = cell.memory_stats()
print(("cell_train_step_os_allocs %.2f per step (target 0)"):format((after.os_allocations - before.os_allocations) / N))
print(("cell_train_step_cache_allocs %.1f per step"):format((after.allocations - before.allocations) / N))

-- One epoch of the demo's training (Model.train, shuffled batches of 64) on
-- Fashion-MNIST, when the data set is installed.
local ok, train_set = pcall(cell.dataset.FashionMNIST, nil, "train")
if ok then
  cell.set_seed(1)
  local net = LeNet5(10)
  local batches = cell.dataset.batches(train_set.images, train_set.labels, 64, { shuffle = true, seed = 1 })
  local model = cell.train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 1e-3))
  local t0 = cell.perf_counter()
  model:train(1, batches, { progress = false })
  print(("cell_lenet_epoch_s %.2f s"):format(cell.perf_counter() - t0))
else
  print("cell_lenet_epoch_s skipped (Fashion-MNIST not installed)")
end
