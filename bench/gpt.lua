--- gpt.lua - one training step (forward, backward, AdamW) of a tiny GPT:
-- vocabulary 40, context 32, width 64, 4 heads, 2 pre-norm Transformer
-- blocks (feed-forward 256, GELU, causal attention), batch 16, float32, as
-- examples/tiny_gpt.lua builds it; at 1 and 2 threads. Prints
-- `cell_train_step_gpt_t1_ms` and `cell_train_step_gpt_t2_ms`. The
-- side-by-side is bench/torch/gpt.py.
local cell = require "cell"
local nn = cell.nn

local V, T, D, H, L, B = 40, 32, 64, 4, 2, 16
local REPS, CALLS = 5, 20

package.path = "examples/lib/?.lua;" .. package.path
local lib = require "models"
local function GPT() return lib.TinyGPT(V, T, D, H, L) end
local function SeqLoss() return lib.SeqLoss(V) end

cell.set_seed(1)
local x = cell.randint(1, V + 1, { B, T })
local y = cell.randint(1, V + 1, { B, T })
local net = GPT()
local step = nn.TrainOneStepCell(nn.WithLossCell(net, SeqLoss()), nn.AdamW(net:trainable_params(), 1e-3))
step:set_train(true)

local timing = dofile((arg and arg[0] or "bench/x.lua"):gsub("[^/]*$", "") .. "timing.lua")
local prev = cell.get_num_threads()
for _, th in ipairs({ 1, 2 }) do
  cell.set_num_threads(th)
  print(("cell_train_step_gpt_t%d_ms %.4f ms"):format(th, timing.bench_ms(function() return step(x, y) end, REPS,
    CALLS)))
end
cell.set_num_threads(prev)
