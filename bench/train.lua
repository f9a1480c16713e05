--- train.lua - one training step (forward, backward, Adam) of the MLP
-- 784-256-10 and of the LeNet-5 of examples/fashion_mnist.lua at batch 64,
-- through TrainOneStepCell(WithLossCell(net, CrossEntropyLoss), Adam) as
-- Model.train runs it; and what a steady-state step asks of the allocator.
-- Prints `cell_train_step_mlp_ms`, `cell_train_step_lenet_ms`,
-- `cell_train_step_os_allocs` (allocations reaching the OS per step after
-- warm-up) and `cell_train_step_cache_allocs` (served from the cache).
-- The side-by-side is bench/torch/train.py. CELL_BENCH_THREADS, when set,
-- is the thread count.
local cell = require "cell"
local nn = cell.nn

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end
local REPS, CALLS = 5, 20

local MLP = nn.Cell:extend("MLP")
function MLP:init()
  self.flatten = nn.Flatten()
  self.fc1 = nn.Dense(784, 256)
  self.fc2 = nn.Dense(256, 10)
end
function MLP:construct(x) return self.fc2(self.fc1(self.flatten(x)):relu()) end

local LeNet5 = nn.Cell:extend("LeNet5")
function LeNet5:init()
  self.conv1 = nn.Conv2d(1, 6, 5, { pad_mode = "same" })
  self.conv2 = nn.Conv2d(6, 16, 5, { pad_mode = "valid" })
  self.pool = nn.MaxPool2d(2, 2)
  self.flatten = nn.Flatten()
  self.fc1 = nn.Dense(400, 120)
  self.fc2 = nn.Dense(120, 84)
  self.fc3 = nn.Dense(84, 10)
end
function LeNet5:construct(x)
  x = self.pool(self.conv1(x):relu())
  x = self.pool(self.conv2(x):relu())
  x = self.flatten(x)
  return self.fc3(self.fc2(self.fc1(x):relu()):relu())
end

cell.set_seed(1)
local x = cell.rand({ 64, 1, 28, 28 })
local y = cell.randint(1, 11, { 64 })

local function step_of(net)
  local opt = nn.Adam(net:trainable_params(), 1e-3)
  local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), opt)
  step:set_train(true)
  return function() return step(x, y) end
end

local function bench_ms(fn)
  for _ = 1, 5 do fn() end
  local best = math.huge
  for _ = 1, REPS do
    collectgarbage()
    local t0 = cell.perf_counter()
    for _ = 1, CALLS do fn() end
    best = math.min(best, (cell.perf_counter() - t0) / CALLS)
  end
  return best * 1e3
end

local mlp_step, lenet_step = step_of(MLP()), step_of(LeNet5())
print(("cell_train_step_mlp_ms %.4f ms"):format(bench_ms(mlp_step)))
print(("cell_train_step_lenet_ms %.4f ms"):format(bench_ms(lenet_step)))

-- Allocator traffic of steady-state steps: what reaches the OS, and what
-- the cache serves.
for _ = 1, 20 do lenet_step() end
collectgarbage()
local before = cell.memory_stats()
local N = 50
for _ = 1, N do lenet_step() end
local after = cell.memory_stats()
print(("cell_train_step_os_allocs %.2f per step (target 0)"):format((after.os_allocations - before.os_allocations) / N))
print(("cell_train_step_cache_allocs %.1f per step"):format((after.allocations - before.allocations) / N))
