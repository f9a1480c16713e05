-- cuda_gemm.lua - cell.cuda's sgemm and batched sgemm, the same sizes as
-- bench/cuda_gemm.c (cuBLAS called directly): median milliseconds per call
-- and GFLOP/s. Needs a GPU. Usage: cell bench/cuda_gemm.lua [n] [batch]
local cell = require "cell"
local cuda = require "cell.cuda"
if not cuda.is_available() then
  io.stderr:write("cuda_gemm.lua: no GPU: ", cuda.unavailable_reason(), "\n")
  os.exit(1)
end
local n = tonumber(arg and arg[1]) or 4096
local batch = tonumber(arg and arg[2]) or 8
local WARMUP, REPS = 3, 20

local function time(name, a, b, f, flops)
  local ms = {}
  for r = 1, WARMUP + REPS do
    cuda.synchronize()
    local t0 = cell.perf_counter()
    local c = f(a, b)
    cuda.synchronize()
    local t1 = cell.perf_counter()
    c = nil
    if r > WARMUP then ms[#ms + 1] = (t1 - t0) * 1e3 end
  end
  table.sort(ms)
  local med = ms[math.floor(#ms / 2) + 1]
  print(("cell.cuda %s: %.3f ms, %.0f GFLOP/s"):format(name, med, flops / (med * 1e6)))
end

local a, b = cell.zeros({ n, n }):move_to("GPU"), cell.zeros({ n, n }):move_to("GPU")
time(("sgemm n=%d batch=1"):format(n), a, b, function(x, y) return x:mm(y) end, 2 * n ^ 3)
local m = math.max(1, math.floor(n / 4))
local p, q = cell.zeros({ batch, m, m }):move_to("GPU"), cell.zeros({ batch, m, m }):move_to("GPU")
time(("sgemm_strided_batched n=%d batch=%d"):format(m, batch), p, q, function(x, y) return x:bmm(y) end,
  2 * m ^ 3 * batch)
local s = cuda.memory_stats()
print(("allocator: %d cudaMalloc calls, %d bytes reserved"):format(s.num_mallocs, s.reserved))
