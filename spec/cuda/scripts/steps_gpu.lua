--- steps_gpu.lua - tests/gpu_check.sh's figures: one training step
-- (forward, backward, optimizer) of LeNet-5 (Adam), the CIFAR-size CNN
-- (examples/lib/models.lua, as bench/models.lua; Momentum) and the tiny GPT (AdamW) on the CPU and on
-- the GPU, at the benchmarks' batch sizes (64, 32, 16) and at 512; prints
-- `cuda_step_<model>_b<batch>_<cpu|gpu>_ms` (best of 5 means of 10 steps,
-- each timed to a host read of the loss, which waits for the GPU) and
-- the GPU's speed-up, then whether steady-state steps call cudaMalloc.
-- Run (from the repository root, LUA_PATH / LUA_CPATH as tests/gpu_check.sh sets them):
--   lua5.4 spec/cuda/scripts/steps_gpu.lua   (needs a GPU; exit 3 without)
package.path = "examples/lib/?.lua;" .. package.path
local cell = require "cell"
local cuda = require "cell.cuda"
local lib = require "models"
local nn = cell.nn

if not cuda.is_available() then
  print("steps_gpu: no GPU: " .. tostring(cuda.unavailable_reason()))
  os.exit(3)
end

local models = {
  { "lenet", 64, function(b)
    local net = lib.LeNet5(10)
    return net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 1e-3), cell.rand { b, 1, 28, 28 },
      cell.randint(1, 11, { b })
  end },
  { "cnn", 32, function(b)
    local net = lib.CifarCNN()
    return net, nn.CrossEntropyLoss(), nn.Momentum(net:trainable_params(), 0.01, 0.9), cell.rand { b, 3, 32, 32 },
      cell.randint(1, 11, { b })
  end },
  { "gpt", 16, function(b)
    local net = lib.TinyGPT(40, 32, 64, 4, 2)
    return net, lib.SeqLoss(40), nn.AdamW(net:trainable_params(), 1e-3), cell.randint(1, 41, { b, 32 }),
      cell.randint(1, 41, { b, 32 })
  end },
}

local function step_ms(name, batch, make, dev)
  cell.set_seed(1)
  local net, loss_fn, opt, x, y = make(batch)
  local step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
  step:move_to(dev)
  step:set_train(true)
  x, y = x:move_to(dev), y:move_to(dev)
  for _ = 1, 3 do step(x, y):item() end
  local best = math.huge
  for _ = 1, 5 do
    local t0 = cell.perf_counter()
    local l
    for _ = 1, 10 do l = step(x, y) end
    l:item()
    best = math.min(best, (cell.perf_counter() - t0) * 1000 / 10)
  end
  local mallocs
  if dev == "GPU" then
    cuda.synchronize()
    local before = cuda.memory_stats().num_mallocs
    for _ = 1, 10 do step(x, y) end
    cuda.synchronize()
    mallocs = cuda.memory_stats().num_mallocs - before
  end
  return best, mallocs
end

for _, m in ipairs(models) do
  for _, batch in ipairs { m[2], 512 } do
    local cpu = step_ms(m[1], batch, m[3], "CPU")
    local gpu, mallocs = step_ms(m[1], batch, m[3], "GPU")
    print(("cuda_step_%s_b%d_cpu_ms %.3f ms"):format(m[1], batch, cpu))
    print(("cuda_step_%s_b%d_gpu_ms %.3f ms (%.1fx the CPU's speed; cudaMalloc calls in 10 steady steps: %d)"):format(
      m[1], batch, gpu, cpu / gpu, mallocs))
  end
end
