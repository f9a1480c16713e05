-- nccl_cuda.lua - the NCCL layer of cell.cuda (make test-cuda). Where
-- cell.cuda was built with NCCL it loads and offers the MPI module's calls
-- (one front end, cell.communication.transport, drives both) and checks
-- its arguments before any NCCL call. With GPUs, spec/cuda/scripts/
-- nccl_ranks.lua runs under mpirun, one rank per GPU (up to 2); without,
-- init("nccl") says why and the GPU run is skipped, with a printed line.
local cell = require "cell"
local cuda = require "cell.cuda"
local B = require "cell.communication.backend"

local function assert_error(fn, text)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error: " .. text)
  assert.is_truthy(tostring(msg):find(text, 1, true), "expected '" .. text .. "' in: " .. tostring(msg))
end

local N, why = B.nccl_open()

describe("cell.communication's NCCL layer", function()
  if not N then
    it("is not in this build of cell.cuda, and init('nccl') says so", function()
      print("\nnccl: not built: " .. why)
      assert.is_truthy(why:find("cell.cuda was built without NCCL", 1, true), why)
      assert_error(function() cell.communication.init("nccl") end,
        "RuntimeError: init: the 'nccl' backend is not available: cell.cuda was built without NCCL")
    end)
    return
  end

  it("offers the MPI module's calls, so one front end drives both", function()
    local mpi_ok, M = pcall(B.mpi)
    for _, name in ipairs({ "allreduce", "allgather", "reduce_scatter", "bcast", "reduce", "send", "recv" }) do
      assert.are.equal("function", type(N[name]), name)
      if mpi_ok then assert.are.equal("function", type(M[name]), name) end
    end
    assert.are.equal(128, N.ID_BYTES)
    assert.is_true(N.version() >= 20000, tostring(N.version())) -- NCCL 2.x: major * 10000 + minor * 100 + patch
  end)

  it("checks its arguments before any NCCL call", function()
    assert_error(function() N.allreduce({}, cell.ones({ 1 }), cell.ones({ 1 }), "sum") end,
      "TypeError: all_reduce: argument #1 must be an NCCL communicator")
    assert_error(function() N.send(nil, cell.ones({ 1 }), 1, 0) end,
      "TypeError: send: argument #1 must be an NCCL communicator")
    assert_error(function() N.comm_init("short", 1, 0, 0) end,
      "ValueError: init: an NCCL unique id has 128 bytes, but got 5")
    assert_error(function() N.comm_init(("\0"):rep(128), 2, 2, 0) end, "ValueError: init: rank 2 of 2 ranks")
  end)

  it("offers DistributedGradReducer's calls (pack, iallreduce), which check their arguments too", function()
    assert.are.equal("function", type(N.pack))
    assert.are.equal("function", type(N.iallreduce))
    assert_error(function() N.iallreduce({}, cell.ones({ 1 }), "sum") end,
      "TypeError: all_reduce: argument #1 must be an NCCL communicator")
    assert_error(function() N.pack(cell.ones({ 2 }), { cell.ones({ 1 }) }) end,
      "ValueError: DistributedGradReducer: argument #1 is on CPU; the NCCL layer takes GPU tensors")
    assert_error(function() N.pack(5, {}) end, "TypeError: DistributedGradReducer: argument #1 must be a Tensor")
  end)

  if not cuda.is_available() then
    it("is skipped on GPUs: no GPU", function()
      assert_error(function() cell.communication.init("nccl") end,
        "RuntimeError: init: the 'nccl' backend is not available: no CUDA device: " .. cuda.unavailable_reason())
      print(("\nnccl: skipped the GPU run (spec/cuda/scripts/nccl_ranks.lua under mpirun: every collective on 8 "
        .. "dtypes, send/recv and their gradients, 20 steps of DistributedGradReducer on the GPU): no GPU (%s)")
        :format(cuda.unavailable_reason()))
    end)
  else
    it("runs every collective and send/recv on GPU tensors under mpirun, one rank per GPU", function()
      local np = math.min(cuda.device_count(), 2)
      local root = (io.popen("id -u"):read("*l") or "") == "0"
      local mpirun = os.getenv("MPIRUN") or ("mpirun --oversubscribe" .. (root and " --allow-run-as-root" or ""))
      local bin = os.getenv("CELL_BIN") or "bin/cell"
      local p = io.popen(("timeout 300 %s -np %d %s spec/cuda/scripts/nccl_ranks.lua 2>&1; echo \"<rc=$?>\"")
        :format(mpirun, np, bin))
      local out = p:read("*a")
      p:close()
      assert.is_truthy(out:find("<rc=0>", 1, true), out)
      for r = 0, np - 1 do assert.is_truthy(out:find("nccl ok " .. r, 1, true), out) end
    end)
  end
end)
