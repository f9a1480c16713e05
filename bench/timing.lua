--- timing.lua - the timer the Lua benchmarks share: the best mean wall
-- time of fn() over `reps` runs of `calls` calls, after a warm-up, in
-- milliseconds (wall time, as PyTorch's side is timed; os.clock would add
-- the CPU time of idle BLAS worker threads). Loaded with dofile beside the
-- benchmark, so it needs no package path.
local cell = require "cell"

local M = {}

function M.bench_ms(fn, reps, calls)
  for _ = 1, 5 do fn() end
  local best = math.huge
  for _ = 1, reps do
    collectgarbage()
    local t0 = cell.perf_counter()
    for _ = 1, calls do fn() end
    best = math.min(best, (cell.perf_counter() - t0) / calls)
  end
  return best * 1e3
end

return M
