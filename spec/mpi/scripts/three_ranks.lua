-- three_ranks.lua - uneven splits on 3 ranks (spec/mpi/launch_jobs.lua):
-- 10 samples shard as 4 + 4 + 4 (padded), collectives over an odd count.
-- Prints "ok <rank>" when every check holds, else raises.
local cell = require "cell"
local comm = cell.communication
comm.init()
local R, N = comm.get_rank(), comm.get_group_size()
assert(N == 3, "run with -np 3")
local s = comm.all_reduce(cell.tensor({ R, 1 }, cell.int32))
assert(s[1] == 3 and s[2] == 3, "all_reduce over 3 ranks")
local g = comm.all_gather(cell.tensor({ R }))
assert(g[1] == 0 and g[2] == 1 and g[3] == 2, "all_gather order")
local rs = comm.reduce_scatter(cell.arange(0, 6, 1, cell.float64))
assert(rs:numel() == 2 and rs[1] == 3 * 2 * R and rs[2] == 3 * (2 * R + 1), "reduce_scatter over 3")
local b = cell.dataset.batches(cell.arange(0, 10, 1, cell.int64), nil, 3, { num_shards = 3, shard_id = R })
assert(b.n == 4 and b:len() == 2, "10 samples over 3 shards: 4 each, 2 batches of 3")
local all = comm.all_gather(cell.tensor({ b.n }, cell.int64))
assert(all:sum():item() == 12, "shards padded to equal counts")
if R ~= 1 then
  comm.create_group("pair", { 0, 2 })
  local p = comm.all_reduce(cell.tensor({ R }), "sum", "pair")
  assert(p[1] == 2 and comm.get_group_size("pair") == 2, "a group of ranks 0 and 2")
end
comm.barrier()
print("ok " .. R)
