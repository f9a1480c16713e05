--- small_ops.lua - the per-call cost of ops on tiny tensors, where the
-- binding's overhead (argument checks, userdata, the collector) is all
-- there is. Prints `lua_add_small X us/op` and `lua_add_inplace_small X us/op`.
-- Usage: lua5.4 bench/small_ops.lua [iterations]  (default 1e6)
local cell = require "cell"

local N = math.floor(tonumber(arg and arg[1]) or 1e6)
local REPS = 3

local a = cell.tensor({ 1, 2, 3, 4 })
local b = cell.tensor({ 0.5, 0.25, 0.125, 0.0625 })
assert(tostring(a.dtype) == "Float32")

--- Wall seconds for n calls of fn, as PyTorch's side is timed (os.clock
-- would add the CPU time of idle BLAS worker threads).
local function time(fn, n)
  collectgarbage()
  local t0 = cell.perf_counter()
  fn(n)
  return cell.perf_counter() - t0
end

--- Best of REPS timings after a warm-up, in microseconds per op.
local function bench(fn)
  fn(math.max(1, math.floor(N / 10)))
  local best = math.huge
  for _ = 1, REPS do
    best = math.min(best, time(fn, N))
  end
  return best / N * 1e6
end

local function add(n)
  local c
  for _ = 1, n do
    c = a + b
  end
  return c
end

local x = a:clone()
local function add_inplace(n)
  for _ = 1, n do
    x:add_(b)
  end
end

print(("lua_add_small %.3f us/op"):format(bench(add)))
print(("lua_add_inplace_small %.3f us/op"):format(bench(add_inplace)))
