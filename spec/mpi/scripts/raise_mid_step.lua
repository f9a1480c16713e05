-- raise_mid_step.lua - rank 1 raises in its third training step while
-- rank 0 goes on into the gradient all-reduce (spec/mpi/launch_jobs.lua).
local cell = require "cell"
local nn = cell.nn
local comm = cell.communication
comm.init()
cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true }
local R = comm.get_rank()
local net = nn.Dense(4, 2)
local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net:trainable_params(), 0.1))
for s = 1, 10 do
  if R == 1 and s == 3 then error("ValueError: boom in step 3 on rank 1") end
  step(cell.ones({ 2, 4 }), cell.zeros({ 2, 2 }))
  print(("rank %d finished step %d"):format(R, s))
end
print("rank " .. R .. " should not get here")
