--- sort_ops.lua - ordering ops on float32 tensors of 1e6 elements: sort of
-- 1000 rows of 1000 (and of one line of 1e6), topk (k = 10) of the rows,
-- logsumexp of the rows. Prints `cell_<op> X ms` lines, the side-by-side of
-- bench/torch/sort_ops.py (same shapes, wall clock, best of 5 after a
-- warm-up). CELL_BENCH_THREADS, when set, is the thread count.
-- Usage: lua5.4 bench/sort_ops.lua
local cell = require "cell"

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end

local REPS = 5

local function bench(fn)
  fn()
  local best = math.huge
  for _ = 1, REPS do
    collectgarbage()
    local t0 = cell.perf_counter()
    fn()
    best = math.min(best, cell.perf_counter() - t0)
  end
  return best * 1e3
end

cell.set_seed(0)
local m = cell.randn({ 1000, 1000 })
local v = cell.randn({ 1000000 })

print(("cell_sort_rows_1000x1000 %.3f ms"):format(bench(function() return m:sort(2) end)))
print(("cell_sort_1e6 %.3f ms"):format(bench(function() return v:sort(1) end)))
print(("cell_topk10_rows_1000x1000 %.3f ms"):format(bench(function() return m:topk(10, 2) end)))
print(("cell_logsumexp_rows_1000x1000 %.3f ms"):format(bench(function() return m:logsumexp(2) end)))
