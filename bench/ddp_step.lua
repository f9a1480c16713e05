--- ddp_step.lua - weak scaling of the LeNet-5 training step: every rank
-- trains on its own batch of 64 (random images), one OpenMP thread per
-- rank, data-parallel (gradients all-reduced) when there is more than one
-- rank. Rank 0 prints `ddp_step <ranks> <ms per step> <samples/s over all ranks>`;
-- weak-scaling efficiency = (ms per step on 1 rank) / (ms per step on N).
-- Run: mpirun -np 1 bin/cell bench/ddp_step.lua; mpirun -np 2 bin/cell bench/ddp_step.lua
package.path = "examples/lib/?.lua;" .. package.path
local cell = require "cell"
local nn, comm = cell.nn, cell.communication
comm.init()
local rank, size = comm.get_rank(), comm.get_group_size()
cell.set_num_threads(tonumber(os.getenv("CELL_BENCH_THREADS") or "1"))
cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true }
local steps = tonumber(arg and arg[1]) or 10
cell.set_seed(rank + 1)
local net = require("models").LeNet5(10)
local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), nn.Momentum(net:trainable_params(), 0.01, 0.9))
local x = cell.rand({ 64, 1, 28, 28 })
local y = cell.randint(1, 11, { 64 })
for _ = 1, 3 do step(x, y) end
-- the best of 3 rounds (the machine may be shared)
local ms
for _ = 1, 3 do
  comm.barrier()
  local t0 = cell.perf_counter()
  for _ = 1, steps do step(x, y) end
  comm.barrier()
  local r = (cell.perf_counter() - t0) / steps * 1e3
  if not ms or r < ms then ms = r end
end
if rank == 0 then print(("ddp_step %d %.2f %.0f"):format(size, ms, 64 * size / ms * 1e3)) end
