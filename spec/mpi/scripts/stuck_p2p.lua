-- stuck_p2p.lua - a pipeline whose ranks disagree on the tag: rank 0 sends
-- on tag 1, rank 1 waits on tag 2, so neither call can complete; under
-- CELL_COMM_TIMEOUT the first rank to give up ends the job
-- (spec/mpi/launch_jobs.lua).
local cell = require "cell"
local comm = cell.communication
comm.init()
if comm.get_rank() == 0 then
  -- 4 MB: past MPI's eager limit, so the send waits for a matching receive
  comm.send(cell.zeros({ 1024 * 1024 }), 1, { sr_tag = 1 })
else
  comm.recv(cell.zeros({ 1024 * 1024 }), 0, { sr_tag = 2 })
end
print("rank " .. comm.get_rank() .. " should not get here")
