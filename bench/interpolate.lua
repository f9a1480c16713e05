--- interpolate.lua - cell.ops.interpolate, bilinear, 16x3x64x64 -> 128x128
-- in float32: the forward alone and forward + backward (the gradient of
-- the output's sum). Prints `cell_interpolate_bilinear_ms` and
-- `cell_interpolate_bilinear_fwd_bwd_ms`; the side-by-side is
-- bench/torch/interpolate.py. CELL_BENCH_THREADS, when set, is the thread
-- count.
local cell = require "cell"
local timing = dofile((arg and arg[0] or "bench/interpolate.lua"):gsub("interpolate%.lua$", "timing.lua"))

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end
local REPS, CALLS = 7, 10

cell.set_seed(1)
local x = cell.randn({ 16, 3, 64, 64 })
local opts = { size = { 128, 128 }, mode = "bilinear", align_corners = false }
local ops = cell.ops
local grad = cell.grad(function(t) return ops.interpolate(t, opts):sum() end)

local fwd = timing.bench_ms(function() return ops.interpolate(x, opts) end, REPS, CALLS)
local both = timing.bench_ms(function() return grad(x) end, REPS, CALLS)
print(string.format("cell_interpolate_bilinear_ms %.4f ms", fwd))
print(string.format("cell_interpolate_bilinear_fwd_bwd_ms %.4f ms", both))
