-- communication_spec.lua - cell.communication in one process, without
-- mpirun (spec/mpi/ runs it on several ranks: make test-mpi): a build
-- without MPI says what to install, the backends that are not built say
-- so, and argument errors come before any MPI call. Also the
-- auto-parallel context and the sharding options, which need no MPI.
local cell = require "cell"
local B = require "cell.communication.backend"

local function assert_error(fn, text)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error: " .. text)
  assert.is_truthy(tostring(msg):find(text, 1, true), "expected '" .. text .. "' in: " .. tostring(msg))
end

describe("cell.communication without MPI", function()
  local saved_module, saved_C
  before_each(function()
    saved_module, saved_C = B._module, B.C
    B._module, B.C = "cell.comm_mpi_not_built", nil
  end)
  after_each(function()
    B._module, B.C = saved_module, saved_C
  end)

  it("init says what to install", function()
    assert_error(function() cell.communication.init() end,
      "RuntimeError: cell.communication.init: this build of cell has no MPI layer (module "
      .. "'cell.comm_mpi_not_built' not found:); install Open MPI (on Debian or Ubuntu: `apt-get install "
      .. "libopenmpi-dev openmpi-bin`, or `make deps`), rebuild cell with `make`, and start the script with "
      .. "`mpirun -np N`")
  end)

  it("so do the queries and collectives", function()
    assert_error(function() cell.communication.get_rank() end,
      "RuntimeError: cell.communication.get_rank: this build of cell has no MPI layer")
    assert_error(function() cell.communication.all_reduce(cell.ones({ 2 })) end,
      "RuntimeError: cell.communication.all_reduce: this build of cell has no MPI layer")
  end)

  it("nn.DistributedGradReducer too", function()
    assert_error(function() cell.nn.DistributedGradReducer({}) end,
      "RuntimeError: cell.communication.DistributedGradReducer: this build of cell has no MPI layer")
  end)
end)

describe("cell.communication before init", function()
  it("refuses 'nccl' where it cannot run, saying why, and unknown backends", function()
    local N, why = B.nccl_layer()
    if not N then
      assert_error(function() cell.communication.init("nccl") end,
        "RuntimeError: init: the 'nccl' backend is not available: " .. why)
    end
    assert_error(function() cell.communication.init("hccl") end,
      "RuntimeError: init: the 'hccl' backend (Ascend) is not in cell; use 'mpi' (CPU tensors) or 'nccl' (GPU tensors)")
    assert_error(function() cell.communication.init("gloo") end,
      "ValueError: init: backend_name must be 'mpi' or 'nccl', but got 'gloo'")
    assert_error(function() cell.communication.init(3) end,
      "TypeError: init: backend_name must be a string, but got number")
  end)

  it("says what to build for 'nccl' where the GPU module is missing", function()
    local saved = { N = B.N, N_why = B.N_why, NF = B.NF, cuda = package.loaded["cell.cuda"], cpath = package.cpath }
    B.N, B.N_why, B.NF, package.loaded["cell.cuda"], package.cpath = nil, nil, nil, nil, "./no-such-dir/?.so"
    local ok, err = pcall(cell.communication.init, "nccl")
    B.N, B.N_why, B.NF, package.loaded["cell.cuda"], package.cpath = saved.N, saved.N_why, saved.NF, saved.cuda,
      saved.cpath
    assert.is_false(ok)
    err = tostring(err)
    assert.is_truthy(err:find("RuntimeError: init: the 'nccl' backend is not available: the GPU module cell.cuda did "
      .. "not load (module 'cell.cuda' not found", 1, true), err)
    assert.is_truthy(err:find("; build it with `make cuda` where the CUDA toolkit and NCCL (nccl.h, libnccl) are "
      .. "installed", 1, true), err)
  end)

  it("routes CPU, TEST and non-NCCL dtypes through MPI", function()
    local X = require "cell.communication.transport"
    assert.are.equal("mpi", X.route(cell.ones({ 2 })))
    assert.are.equal("mpi", X.route(nil))
    local core = require "cell.core"
    if core._register_test_device then
      pcall(core._register_test_device)
      assert.are.equal("mpi", X.route(cell.ones({ 2 }):move_to("TEST")))
    end
  end)

  it("says init comes first", function()
    if not pcall(B.mpi) then return end -- a build without MPI: the test above covers it
    assert.is_false(cell.communication.is_initialized())
    assert_error(function() cell.communication.get_group_size() end,
      "RuntimeError: get_group_size: cell.communication is not initialized; call cell.communication.init() first")
    assert_error(function() cell.communication.barrier() end,
      "RuntimeError: barrier: cell.communication is not initialized")
  end)

  it("refuses a CELL_COMM_TIMEOUT that is not a number of seconds, before starting MPI", function()
    if not pcall(B.mpi) then return end -- a build without MPI: the tests above cover it
    local bin = os.getenv("CELL_BIN") or "bin/cell"
    local p = io.popen("CELL_COMM_TIMEOUT=soon " .. bin .. " -e 'print(pcall(require(\"cell\").communication.init))' 2>&1")
    local out = p:read("*a")
    p:close()
    assert.is_truthy(out:find("ValueError: init: CELL_COMM_TIMEOUT must be a number of seconds (0: no bound), but "
      .. "is 'soon'", 1, true), out)
  end)

  it("checks set_check's argument", function()
    assert_error(function() cell.communication.set_check("yes") end,
      "TypeError: set_check: on must be a boolean, but got string")
    assert.is_true(cell.communication.set_check(true))
  end)
end)

describe("the auto-parallel context", function()
  after_each(function() cell.reset_auto_parallel_context() end)

  it("defaults to stand_alone on one rank", function()
    assert.are.equal("stand_alone", cell.get_auto_parallel_context("parallel_mode"))
    assert.is_false(cell.get_auto_parallel_context("gradients_mean"))
    assert.are.equal(1, cell.get_auto_parallel_context("device_num"))
    assert.are.equal(0, cell.get_auto_parallel_context("global_rank"))
  end)

  it("is set and reset", function()
    cell.set_auto_parallel_context { parallel_mode = "data_parallel", gradients_mean = true, device_num = 4 }
    assert.are.equal("data_parallel", cell.get_auto_parallel_context("parallel_mode"))
    assert.is_true(cell.get_auto_parallel_context("gradients_mean"))
    assert.are.equal(4, cell.get_auto_parallel_context("device_num"))
    cell.reset_auto_parallel_context()
    assert.are.equal("stand_alone", cell.get_auto_parallel_context("parallel_mode"))
  end)

  it("does not make TrainOneStepCell reduce without cell.communication", function()
    cell.set_auto_parallel_context { parallel_mode = "data_parallel" }
    local net = cell.nn.Dense(2, 1)
    local step = cell.nn.TrainOneStepCell(cell.nn.WithLossCell(net, cell.nn.MSELoss()),
      cell.nn.SGD(net:trainable_params(), 0.1))
    assert.is_nil(step.grad_reducer)
  end)

  it("names bad options", function()
    assert_error(function() cell.set_auto_parallel_context { parallel_mode = "model_parallel" } end,
      "ValueError: set_auto_parallel_context: parallel_mode must be 'stand_alone' or 'data_parallel', but got "
      .. "'model_parallel'")
    assert_error(function() cell.set_auto_parallel_context { parallel_mode = "semi_auto_parallel" } end,
      "NotImplementedError: set_auto_parallel_context: parallel_mode 'semi_auto_parallel' is not built; "
      .. "'data_parallel' is")
    assert_error(function() cell.set_auto_parallel_context { gradients_mean = 1 } end,
      "TypeError: set_auto_parallel_context: gradients_mean must be a boolean, but got number")
    assert_error(function() cell.set_auto_parallel_context { device_num = -1 } end,
      "TypeError: set_auto_parallel_context: device_num must be a non-negative integer, but got -1")
    assert_error(function() cell.set_auto_parallel_context { pipeline_stages = 2 } end,
      "ValueError: set_auto_parallel_context: unknown option 'pipeline_stages'")
    assert_error(function() cell.set_auto_parallel_context("data_parallel") end,
      "TypeError: set_auto_parallel_context: expected a table of options, but got string")
    assert_error(function() cell.get_auto_parallel_context("nope") end,
      "ValueError: get_auto_parallel_context: unknown option 'nope'")
    -- a refused call changes nothing
    assert.are.equal("stand_alone", cell.get_auto_parallel_context("parallel_mode"))
  end)
end)

describe("sharding", function()
  local batches = require "cell.dataset.batches"

  it("deals every num_shards-th sample from shard_id, padding to equal counts", function()
    assert.are.same({ 1, 3, 5, 7, 9 }, batches.shard_positions(10, 2, 0))
    assert.are.same({ 2, 4, 6, 8, 10 }, batches.shard_positions(10, 2, 1))
    assert.are.same({ 3, 6, 9, 2 }, batches.shard_positions(10, 3, 2)) -- 12 wraps to 2
    assert.are.same({}, batches.shard_positions(0, 3, 2))
  end)

  it("gives batches of the shard only", function()
    local x = cell.arange(0, 7, 1, cell.int64)
    local b = cell.dataset.batches(x, x * 10, 2, { num_shards = 2, shard_id = 1 })
    assert.are.equal(4, b.n)
    assert.are.equal(2, b:len())
    local it = b:each(1)
    local xb, yb = it()
    assert.are.same({ 1, 3 }, xb:tolist())
    assert.are.same({ 10, 30 }, yb:tolist())
    assert.are.same({ 5, 0 }, it():tolist()) -- 7 samples: the shard wraps round to sample 0
  end)

  it("checks num_shards and shard_id", function()
    local x = cell.zeros({ 4 })
    assert_error(function() cell.dataset.batches(x, nil, 2, { num_shards = 2 }) end,
      "ValueError: batches: num_shards and shard_id go together, but only num_shards was given")
    assert_error(function() cell.dataset.batches(x, nil, 2, { num_shards = 2, shard_id = 2 }) end,
      "ValueError: batches: shard_id must be in [0, 2) (shards count from 0), but got 2")
    assert_error(function() cell.dataset.batches(x, nil, 2, { num_shards = 0, shard_id = 0 }) end,
      "ValueError: batches: num_shards must be positive, but got 0")
    assert_error(function() cell.dataset.batches(x, nil, 2, { num_shards = 1.5, shard_id = 0 }) end,
      "TypeError: batches: num_shards must be an integer, but got 1.5")
    assert_error(function() cell.dataset.synthetic(4, { num_shards = 2, shard_id = -1 }) end,
      "ValueError: synthetic: shard_id must be in [0, 2) (shards count from 0), but got -1")
    assert_error(function() cell.dataset.FashionMNIST("/nonexistent", { shard_id = 0 }) end,
      "ValueError: FashionMNIST: num_shards and shard_id go together, but only shard_id was given")
  end)

  it("shards the data sets", function()
    local whole = cell.dataset.synthetic(6)
    local part = cell.dataset.synthetic(6, { num_shards = 3, shard_id = 1 })
    assert.are.same({ 2, 1, 28, 28 }, part.images.shape)
    assert.are.same({ whole.labels[2], whole.labels[5] }, part.labels:tolist())
  end)
end)
