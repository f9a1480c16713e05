--- models.lua - the model suite: one training step (forward, backward,
-- optimizer) of six networks, each at 1 and at 2 threads, written the same
-- way as bench/torch/models_bench.py (same shapes, parameter counts,
-- optimizers; data made in-process; warm-up; best mean wall time, the
-- thread counts taking turns):
--   mlp    MLP 784-256-10, batch 64, Adam
--   lenet  LeNet-5 with batch norm (examples/lib/models.lua), batch 64, Adam
--   cnn    CIFAR-size CNN: 3x32x32, conv3x3 16 and 32 channels, each with
--          BatchNorm, ReLU and 2x2 max-pool, Dense 2048-10; batch 32, Momentum
--   gpt    tiny GPT: vocab 40, T 32, d 64, 4 heads, 2 pre-norm blocks
--          (feed-forward 256, GELU), batch 16, AdamW
--   lstm   LSTM language model: vocab 64, embedding and hidden 128, T 32,
--          batch 16, Adam
--   infer  batch-1 inference of the MLP 784-256-10 (no recording), in us
-- Prints `cell_model_<name>_t<threads>_ms` (`_us` for infer),
-- `cell_model_<cnn|gpt>_scaling_t2_over_t1` and `cell_model_peak_rss_mib`.
-- Arguments name the models to run (default: all six);
-- CELL_BENCH_MODEL_THREADS (default "1 2") the thread counts.
local cell = require "cell"
local nn = cell.nn

local here = (arg and arg[0] or "bench/x.lua"):gsub("[^/]*$", "")
local timing = dofile(here .. "timing.lua")
local proc = dofile(here .. "proc.lua")
package.path = "examples/lib/?.lua;" .. package.path
local lib = require "models"

local REPS, CALLS = 5, 20

local function train_step(net, loss_fn, opt, x, y)
  local step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
  step:set_train(true)
  return function() return step(x, y) end
end

local builders = {}

function builders.mlp()
  local net = lib.MLP()
  return train_step(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 1e-3), cell.rand({ 64, 1, 28, 28 }),
    cell.randint(1, 11, { 64 }))
end

function builders.lenet()
  local net = lib.LeNet5()
  return train_step(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 1e-3), cell.rand({ 64, 1, 28, 28 }),
    cell.randint(1, 11, { 64 }))
end

function builders.cnn()
  local net = lib.CifarCNN()
  return train_step(net, nn.CrossEntropyLoss(), nn.Momentum(net:trainable_params(), 0.01, 0.9),
    cell.rand({ 32, 3, 32, 32 }), cell.randint(1, 11, { 32 }))
end

local V, T, D, H, L, B = 40, 32, 64, 4, 2, 16
local function GPT() return lib.TinyGPT(V, T, D, H, L) end
local function SeqLoss() return lib.SeqLoss(V) end

function builders.gpt()
  local net = GPT()
  return train_step(net, SeqLoss(), nn.AdamW(net:trainable_params(), 1e-3), cell.randint(1, V + 1, { B, T }),
    cell.randint(1, V + 1, { B, T }))
end

local CharLM = nn.Cell:extend("BenchModelCharLM")
function CharLM:init()
  self.embed = nn.Embedding(64, 128)
  self.lstm = nn.LSTM(128, 128, { batch_first = true })
  self.head = nn.Dense(128, 64)
end
function CharLM:construct(ids) return self.head((self.lstm(self.embed(ids))):reshape({ -1, 128 })) end

function builders.lstm()
  local net = CharLM()
  return train_step(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 1e-3),
    cell.randint(1, 65, { 16, 32 }), cell.randint(1, 65, { 16 * 32 }))
end

function builders.infer()
  local net = lib.MLP()
  net:set_train(false)
  local x = cell.rand({ 1, 784 })
  return function() return cell.no_grad(net, x) end
end

local ORDER = { "mlp", "lenet", "cnn", "gpt", "lstm", "infer" }
local wanted = {}
for i = 1, #(arg or {}) do
  if not builders[arg[i]] then error("models.lua: unknown model '" .. arg[i] .. "' (known: " .. table.concat(ORDER, " ")
    .. ")") end
  wanted[#wanted + 1] = arg[i]
end
if #wanted == 0 then wanted = ORDER end

local THREADS = {}
for th in (os.getenv("CELL_BENCH_MODEL_THREADS") or "1 2"):gmatch("%d+") do THREADS[#THREADS + 1] = tonumber(th) end

local prev = cell.get_num_threads()
for _, name in ipairs(wanted) do
  cell.set_seed(1)
  local fn = builders[name]()
  -- The thread counts take turns, a run of calls each (after bench_ms's
  -- warm-up at that count), REPS times; each keeps its best mean. Timed
  -- one after the other, a machine whose speed drifts (a shared VM's moves
  -- by a third within a minute) would put its drift into the scaling line;
  -- taking turns spreads it over both.
  local calls = name == "infer" and 2000 or CALLS
  local ms = {}
  for _, th in ipairs(THREADS) do ms[th] = math.huge end
  for _ = 1, REPS do
    for _, th in ipairs(THREADS) do
      cell.set_num_threads(th)
      ms[th] = math.min(ms[th], timing.bench_ms(fn, 1, calls))
    end
  end
  for _, th in ipairs(THREADS) do
    if name == "infer" then
      print(("cell_model_infer_t%d_us %.3f us"):format(th, ms[th] * 1e3))
    else
      print(("cell_model_%s_t%d_ms %.4f ms"):format(name, th, ms[th]))
    end
  end
  if (name == "cnn" or name == "gpt") and ms[1] and ms[2] then
    print(("cell_model_%s_scaling_t2_over_t1 %.3f x"):format(name, ms[2] / ms[1]))
  end
  -- The model is done with, as PyTorch's side drops each (its reference
  -- count frees the tensors at once): Lua frees them when it collects, and
  -- the allocator's cache goes back to the system. The peak RSS below is
  -- then the largest model's, not the sum of all six.
  fn = nil
  collectgarbage()
  collectgarbage()
  cell.empty_cache()
end
cell.set_num_threads(prev)
local peak = proc.status_mib("VmHWM")
if peak then print(("cell_model_peak_rss_mib %.1f MiB"):format(peak)) end
