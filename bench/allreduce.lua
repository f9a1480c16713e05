--- allreduce.lua - cell.communication.all_reduce (sum, float32) on 1 KB to
-- 16 MB, against MPI_Allreduce called on the same tensor's buffer through
-- the MPI module with nothing around it (cell.comm_mpi's allreduce: one C
-- call). Rows, on rank 0: `<variant> <bytes> <us per call> <GB/s>`:
--   mpi_raw      MPI_Allreduce on the buffer (in place)
--   cell_inplace all_reduce(t, {out = t}): argument checks and the header all-gather
--   cell_nocheck the same with set_check(false)
--   cell_new     all_reduce(t): a new result tensor per call
-- The last column is the time over mpi_raw's. Each row is the best of
-- CELL_BENCH_ROUNDS (5) rounds, the variants taking turns.
-- Run: mpirun -np 2 bin/cell bench/allreduce.lua (make bench-mpi).
local cell = require "cell"
local comm = cell.communication
comm.init()
local rank = comm.get_rank()
local C = require("cell.communication.backend").mpi()
local world = require("cell.communication.backend").state.world
local wtime = C.wtime

--- Microseconds per call of fn, over `iters` calls, after a barrier.
local function time(iters, fn)
  comm.barrier()
  local t0 = wtime()
  for _ = 1, iters do fn() end
  return (wtime() - t0) / iters * 1e6
end

local ROUNDS = tonumber(os.getenv("CELL_BENCH_ROUNDS") or "5")

-- The variants run in turns, ROUNDS times, and each keeps its best round:
-- on a shared machine the load drifts, and the best round is the one the
-- other jobs disturbed least (all variants get the same chances).
local bytes = 1024
while bytes <= 16 * 1024 * 1024 do
  local t = cell.ones({ bytes / 4 })
  local iters = bytes <= 65536 and 500 or bytes <= 1048576 and 50 or 5
  local variants = {
    { "mpi_raw", function() C.allreduce(world, t, t, "sum") end },
    { "cell_inplace", function() comm.all_reduce(t, { out = t }) end },
    { "cell_nocheck", function() comm.all_reduce(t, { out = t }) end, nocheck = true },
    { "cell_new", function() comm.all_reduce(t) end },
  }
  for _, v in ipairs(variants) do
    comm.set_check(not v.nocheck)
    for _ = 1, 3 do v[2]() end
  end
  local best = {}
  for _ = 1, ROUNDS do
    for i, v in ipairs(variants) do
      comm.set_check(not v.nocheck)
      local us = time(iters, v[2])
      if not best[i] or us < best[i] then best[i] = us end
    end
  end
  comm.set_check(true)
  if rank == 0 then
    for i, v in ipairs(variants) do
      print(("%-12s %9d %10.2f %8.3f  %+6.1f%%"):format(v[1], bytes, best[i], bytes / best[i] / 1e3,
        (best[i] / best[1] - 1) * 100))
    end
  end
  bytes = bytes * 4
end
