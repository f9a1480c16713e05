--- einsum.lua - cell.ops.einsum on batched contractions, float32, best mean
-- wall time of a few rounds after a warm-up. Prints
--   cell_einsum_bmm_ms X ms        'bij,bjk->bik'      b=32, 128 x 128 x 128
--   cell_einsum_attention_ms X ms  'bhqd,bhkd->bhqk'   b=8, h=8, q=k=128, d=64
-- and the same contractions through bmm directly (what einsum lowers to).
-- The side-by-side is bench/torch/einsum.py. CELL_BENCH_THREADS, when set,
-- is the thread count. Usage: lua5.4 bench/einsum.lua [rounds] (default 20)
local cell = require "cell"

local threads = tonumber(os.getenv("CELL_BENCH_THREADS") or "")
if threads and threads > 0 then cell.set_num_threads(math.floor(threads)) end
local ROUNDS = math.floor(tonumber(arg and arg[1]) or 20)
local einsum = cell.ops.einsum

cell.set_seed(1)
local a, b = cell.randn({ 32, 128, 128 }), cell.randn({ 32, 128, 128 })
local q, k = cell.randn({ 8, 8, 128, 64 }), cell.randn({ 8, 8, 128, 64 })

local function best_ms(fn)
  fn()
  local best = math.huge
  for _ = 1, 3 do
    collectgarbage()
    local t0 = cell.perf_counter()
    for _ = 1, ROUNDS do fn() end
    best = math.min(best, (cell.perf_counter() - t0) / ROUNDS)
  end
  return best * 1e3
end

print(("cell_einsum_bmm_ms %.3f ms"):format(best_ms(function() return einsum("bij,bjk->bik", a, b) end)))
print(("cell_bmm_ms %.3f ms"):format(best_ms(function() return a:bmm(b) end)))
print(("cell_einsum_attention_ms %.3f ms"):format(best_ms(function() return einsum("bhqd,bhkd->bhqk", q, k) end)))
local q3, k3 = q:reshape({ 64, 128, 64 }), k:reshape({ 64, 128, 64 }):transpose(2, 3)
print(("cell_attention_bmm_ms %.3f ms"):format(best_ms(function() return q3:bmm(k3) end)))
