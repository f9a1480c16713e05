--- lenet_gpu.lua - tests/gpu_check.sh's training check: the LeNet-5 of
-- examples/fashion_mnist.lua (examples/lib/models.lua: convolutions, batch
-- norm, ReLU, max pooling, Dense layers) trained with Adam for EPOCHS
-- epochs on Fashion-MNIST (a synthetic stand-in when the data set is not
-- installed), once on the CPU and once on the GPU, from the same initial
-- weights and batch order. Prints each run's test accuracy and epoch time;
-- exits 0 when the GPU's accuracy is within TOL percentage points of the
-- CPU's, 1 when not, 3 without a GPU.
-- Run (from the repository root, LUA_PATH / LUA_CPATH as tests/gpu_check.sh sets them):
--   lua5.4 spec/cuda/scripts/lenet_gpu.lua [epochs] [data dir]
package.path = "examples/lib/?.lua;" .. package.path
local cell = require "cell"
local cuda = require "cell.cuda"
local data = require "data"
local models = require "models"
local nn = cell.nn

local EPOCHS = tonumber(arg and arg[1]) or 2
local DIR = arg and arg[2]
local TOL = 1.0
if not cuda.is_available() then
  print("lenet_gpu: no GPU: " .. tostring(cuda.unavailable_reason()))
  os.exit(3)
end

local train_set, test_set, real = data.load(DIR)

-- Accuracy of net (on device) over the test set, in batches of 1000.
local function accuracy(net, device)
  net:set_train(false)
  local correct, total = 0, 0
  for x, y in cell.dataset.batches(test_set.images, test_set.labels, 1000):each() do
    local pred = cell.no_grad(net, x:move_to(device)):argmax(2)
    correct = correct + pred:eq(y:move_to(device):astype(cell.int64)):sum():item()
    total = total + y:numel()
  end
  net:set_train(true)
  return 100 * correct / total
end

local function run(device)
  cell.set_seed(1)
  local net = models.LeNet5(10)
  local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), nn.Adam(net:trainable_params(), 2e-3))
  step:move_to(device) -- the network's parameters and buffers and the optimizer's state
  step:set_train(true)
  local batches = cell.dataset.batches(train_set.images, train_set.labels, 64, { shuffle = true, seed = 1 })
  local t0, loss = cell.perf_counter(), nil
  for epoch = 1, EPOCHS do
    for x, y in batches:each(epoch) do loss = step(x:move_to(device), y:move_to(device)) end
  end
  local last = loss:item() -- waits for the device
  local secs = (cell.perf_counter() - t0) / EPOCHS
  local acc = accuracy(net, device)
  -- The running statistics moved: batch norm's update ran on the device.
  local rm = net.bn1.moving_mean or net.bn1.running_mean
  print(("%-4s %s: %d epochs, %.2f s an epoch, last loss %.4f, test accuracy %.2f%%%s"):format(device,
    real and "Fashion-MNIST" or "synthetic", EPOCHS, secs, last, acc,
    rm and (", bn1 running mean[1] %.5f"):format(rm:move_to("CPU"):totable()[1]) or ""))
  return acc
end

local cpu = run("CPU")
local gpu = run("GPU")
local ok = math.abs(gpu - cpu) <= TOL
print(("lenet_gpu: GPU %.2f%% vs CPU %.2f%% (tolerance %.1f points): %s"):format(gpu, cpu, TOL, ok and "ok" or "FAILED"))
os.exit(ok and 0 or 1)
