--- autograd.lua - the cost of the tape: a 784-256-10 MLP at batch 64 in
-- float32 (relu, mean softmax cross-entropy), forward alone (under
-- cell.no_grad) and forward + backward (cell.value_and_grad over the
-- weights); then many value_and_grad steps on a tiny function, for the
-- per-step overhead and for memory that a step might leave behind.
-- Prints `cell_mlp_forward_ms X ms`, `cell_mlp_fwd_bwd_ms X ms`,
-- `cell_mlp_backward_over_forward X x` (= (fwd_bwd - fwd) / fwd),
-- `cell_vg_small_rss_after_1k X MiB`, `cell_vg_small_rss_after_100k X MiB`
-- (VmRSS, the current resident size) and `cell_vg_small_us X us/step`.
-- The side-by-side is bench/torch/autograd.py (same MLP, same clock).
-- Usage: lua5.4 bench/autograd.lua [small steps]  (default 1e5)
-- CELL_BENCH_THREADS, when set, is the thread count of the matmuls.
local cell = require "cell"

local STEPS = math.floor(tonumber(arg and arg[1]) or 1e5)
local REPS, CALLS = 7, 20 -- best of REPS means over CALLS calls each

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end

local proc = dofile((arg and arg[0] or "bench/autograd.lua"):gsub("[^/]*$", "") .. "proc.lua")
--- VmRSS (current resident size) of this process in MiB, or nil off Linux.
local function rss_mib() return proc.status_mib("VmRSS") end

local timing = dofile((arg and arg[0] or "bench/x.lua"):gsub("[^/]*$", "") .. "timing.lua")
local function bench_ms(fn) return timing.bench_ms(fn, REPS, CALLS) end

-- --- the MLP -------------------------------------------------------------------
local B, D, H, K = 64, 784, 256, 10
cell.set_seed(1)
local W1 = (cell.randn({ D, H }) * (1 / math.sqrt(D))):requires_grad_(true)
local b1 = cell.zeros({ H }):requires_grad_(true)
local W2 = (cell.randn({ H, K }) * (1 / math.sqrt(H))):requires_grad_(true)
local b2 = cell.zeros({ K }):requires_grad_(true)
local x = cell.randn({ B, D })
local labels = cell.randint(1, K + 1, { B }):reshape({ B, 1 })
assert(tostring(x.dtype) == "Float32" and tostring(labels.dtype) == "Int64")

local function loss_fn(inp, y)
  local logits = (inp:matmul(W1) + b1):relu():matmul(W2) + b2
  local m = logits:max(2, true)
  local shifted = logits - m
  local logp = shifted - shifted:exp():sum(2, true):log()
  return -logp:gather(2, y):mean()
end

local vg = cell.value_and_grad(loss_fn, nil, { W1, b1, W2, b2 })
local loss0 = cell.no_grad(loss_fn, x, labels):item()
local loss1, grads = vg(x, labels)
assert(math.abs(loss0 - loss1:item()) < 1e-5 and #grads == 4, "forward and value_and_grad disagree")

local fwd = bench_ms(function() return cell.no_grad(loss_fn, x, labels) end)
local fwd_bwd = bench_ms(function() return vg(x, labels) end)
print(("cell_mlp_forward_ms %.4f ms"):format(fwd))
print(("cell_mlp_fwd_bwd_ms %.4f ms"):format(fwd_bwd))
print(("cell_mlp_backward_over_forward %.3f x"):format((fwd_bwd - fwd) / fwd))

-- --- many small steps ----------------------------------------------------------
local w = cell.rand({ 16 }):requires_grad_(true)
local xs = cell.rand({ 16 })
local small = cell.value_and_grad(function(a) return (a * w):sum() end, nil, { w })
collectgarbage()
local t0 = cell.perf_counter()
local rss_1k
for i = 1, STEPS do
  small(xs)
  if i == 1000 then rss_1k = rss_mib() end
end
local dt = cell.perf_counter() - t0
local rss_end = rss_mib()
if rss_1k and rss_end then
  print(("cell_vg_small_rss_after_1k %.1f MiB"):format(rss_1k))
  print(("cell_vg_small_rss_after_100k %.1f MiB"):format(rss_end))
else
  print("cell_vg_small_rss: /proc/self/status not available, skipped")
end
print(("cell_vg_small_us %.3f us/step"):format(dt / STEPS * 1e6))
