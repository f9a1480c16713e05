--- amp.lua - mixed precision against float32, side by side in one process:
-- one training step (forward, backward, Momentum) of a CIFAR-size CNN
-- (3x32x32 input, three conv-BN-ReLU-pool stages 32/64/128 channels, a
-- Dense head, batch 32) and of the tiny GPT of bench/gpt.lua (AdamW), each
-- in float32 and under cell.amp.build_train_network(..., "O2",
-- {cast_model_type = bfloat16}) (float32 master weights). The two runs
-- alternate, REPS rounds of CALLS steps, and the medians are compared.
-- Prints `cell_amp_cnn_f32_ms`, `cell_amp_cnn_bf16_ms`, `cell_amp_cnn_speedup`
-- and the same for `gpt`. CELL_BENCH_THREADS, when set, is the thread count;
-- CELL_AMP_DTYPE=float16 measures float16 instead; CELL_AMP_CLOCK=cpu
-- times with the process's CPU time (os.clock) instead of the wall clock,
-- steadier on a shared, loaded machine (one thread only: with more, CPU
-- time adds the threads' times up).
local cell = require "cell"
local nn, amp = cell.nn, cell.amp

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end
local REPS, CALLS = tonumber(os.getenv("CELL_AMP_REPS") or "") or 7, 5
local LOW = cell[os.getenv("CELL_AMP_DTYPE") or "bfloat16"]

local CNN = nn.Cell:extend("BenchCNN")
function CNN:init()
  local layers, cin = {}, 3
  for _, c in ipairs({ 32, 64, 128 }) do
    layers[#layers + 1] = nn.Conv2d(cin, c, 3, { pad_mode = "same" })
    layers[#layers + 1] = nn.BatchNorm2d(c)
    layers[#layers + 1] = nn.ReLU()
    layers[#layers + 1] = nn.MaxPool2d(2, 2)
    cin = c
  end
  self.features = nn.SequentialCell(layers)
  self.head = nn.Dense(128 * 4 * 4, 10)
end
function CNN:construct(x) return self.head(self.features(x):reshape({ x.shape[1], -1 })) end

local V, T, D, H, L, B = 40, 32, 64, 4, 2, 16
package.path = "examples/lib/?.lua;" .. package.path
local lib = require "models"
local function GPT() return lib.TinyGPT(V, T, D, H, L) end
local function SeqLoss() return lib.SeqLoss(V) end

local function cnn_step(level)
  cell.set_seed(1)
  local net = CNN()
  local step = amp.build_train_network(net, nn.Momentum(net:trainable_params(), 0.01, 0.9), nn.CrossEntropyLoss(),
    level, { cast_model_type = LOW, loss_scale_manager = amp.FixedLossScaleManager(1, false) })
  local x, y = cell.randn({ 32, 3, 32, 32 }), cell.randint(1, 11, { 32 })
  return function() return step(x, y) end
end

local function gpt_step(level)
  cell.set_seed(1)
  local net = GPT()
  local step = amp.build_train_network(net, nn.AdamW(net:trainable_params(), 1e-3), SeqLoss(), level,
    { cast_model_type = LOW, loss_scale_manager = amp.FixedLossScaleManager(1, false) })
  local x, y = cell.randint(1, V + 1, { B, T }), cell.randint(1, V + 1, { B, T })
  return function() return step(x, y) end
end

local clock = os.getenv("CELL_AMP_CLOCK") == "cpu" and os.clock or cell.perf_counter
local function round_ms(fn)
  local t0 = clock()
  for _ = 1, CALLS do fn() end
  return (clock() - t0) * 1000 / CALLS
end
local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

local lname = LOW == cell.bfloat16 and "bf16" or "f16"
for _, case in ipairs({ { "cnn", cnn_step }, { "gpt", gpt_step } }) do
  local f32, low = case[2]("O0"), case[2]("O2")
  f32(); low() -- warm-up
  local a, b = {}, {}
  for r = 1, REPS do
    if r % 2 == 1 then
      a[#a + 1] = round_ms(f32); b[#b + 1] = round_ms(low)
    else
      b[#b + 1] = round_ms(low); a[#a + 1] = round_ms(f32)
    end
  end
  local ma, mb = median(a), median(b)
  print(("cell_amp_%s_f32_ms %.4f ms"):format(case[1], ma))
  print(("cell_amp_%s_%s_ms %.4f ms"):format(case[1], lname, mb))
  print(("cell_amp_%s_speedup %.3f x"):format(case[1], ma / mb))
end
