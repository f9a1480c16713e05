-- stuck_rank.lua - rank 1 never joins the all-reduce (it waits on
-- something else); under CELL_COMM_TIMEOUT rank 0's call gives up and the
-- job ends (spec/mpi/launch_jobs.lua).
local cell = require "cell"
local comm = cell.communication
comm.init()
if comm.get_rank() == 1 then
  os.execute("sleep 60")
else
  comm.all_reduce(cell.ones({ 4 }))
end
print("rank " .. comm.get_rank() .. " should not get here")
