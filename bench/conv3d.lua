--- conv3d.lua - cell.ops.conv3d, 3x3x3 with padding 1, x {4, 16, 16, 32, 32},
-- w {32, 16, 3, 3, 3} and a bias, in float32: the forward alone and
-- forward + backward (the gradients of the output's sum for x, w and b).
-- Prints `cell_conv3d_ms` and `cell_conv3d_fwd_bwd_ms`; the side-by-side is
-- bench/torch/conv3d.py. CELL_BENCH_THREADS, when set, is the thread count.
local cell = require "cell"
local timing = dofile((arg and arg[0] or "bench/conv3d.lua"):gsub("conv3d%.lua$", "timing.lua"))

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end
local REPS, CALLS = 5, 2

cell.set_seed(1)
local x = cell.randn({ 4, 16, 16, 32, 32 })
local w = cell.randn({ 32, 16, 3, 3, 3 }) * 0.05
local b = cell.randn({ 32 })
local ops = cell.ops
local opts = { padding = 1 }
local grad = cell.grad(function(a, c, d) return ops.conv3d(a, c, d, opts):sum() end, { 1, 2, 3 })

local fwd = timing.bench_ms(function() return ops.conv3d(x, w, b, opts) end, REPS, CALLS)
local both = timing.bench_ms(function() return grad(x, w, b) end, REPS, CALLS)
print(string.format("cell_conv3d_ms %.4f ms", fwd))
print(string.format("cell_conv3d_fwd_bwd_ms %.4f ms", both))
