-- collectives_mpi.lua - cell.communication's collectives, run on every rank
-- of `mpirun -np 2` (make test-mpi; launch_jobs.lua runs it on 3 ranks
-- too): each op on every dtype against values computed by hand from the
-- ranks' inputs, in place and out of place, and
-- the backward rules. Rank r contributes values made from r, so the
-- expected results are sums and extremes of small integers.
local H = require "helpers"
local cell = require "cell"
local comm = cell.communication

comm.init()
local R, N = comm.get_rank(), comm.get_group_size()
assert(N >= 2, "run under mpirun -np 2 (or more)")

--- fn() raises an error whose message holds `text` (after any "file:line: ").
local function assert_error(fn, text)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error: " .. text)
  assert.is_truthy(tostring(msg):find(text, 1, true), "expected '" .. text .. "' in: " .. tostring(msg))
end

local function list(t) return t:astype(cell.float64):tolist() end

-- per rank r: {r + 1, 2 * (r + 1), 3}; sums over r = 0..N-1
local function input(dt) return cell.tensor({ R + 1, 2 * (R + 1), 3 }, cell[dt]) end
local S = N * (N + 1) / 2 -- sum of r + 1
local function prod_of(f)
  local p = 1
  for r = 0, N - 1 do p = p * f(r) end
  return p
end

describe("cell.communication on " .. N .. " ranks", function()
  it("numbers the ranks from 0", function()
    assert.is_true(R >= 0 and R < N)
    assert.are.equal(R, comm.get_rank(comm.WORLD_COMM_GROUP))
    assert.is_true(comm.get_local_rank() >= 0)
    assert.are.equal(N, cell.get_auto_parallel_context("device_num"))
  end)

  for _, dt in ipairs(H.all_dtypes) do
    if dt ~= "bool" then
      it("all_reduce sum, max, min and prod on " .. dt, function()
        assert.are.same({ S, 2 * S, 3 * N }, list(comm.all_reduce(input(dt))))
        assert.are.same({ N, 2 * N, 3 }, list(comm.all_reduce(input(dt), "max")))
        assert.are.same({ 1, 2, 3 }, list(comm.all_reduce(input(dt), { op = "min" })))
        local p = comm.all_reduce(input(dt), "prod")
        assert.are.same({ prod_of(function(r) return r + 1 end), prod_of(function(r) return 2 * (r + 1) end), 3 ^ N },
          list(p))
        assert.are.equal(cell[dt], p.dtype)
      end)

      it("all_reduce in place (out = tensor) on " .. dt, function()
        local t = input(dt)
        local r = comm.all_reduce(t, { op = "sum", out = t })
        assert.is_true(rawequal(r, t))
        assert.are.same({ S, 2 * S, 3 * N }, list(t))
      end)

      it("all_gather, reduce_scatter, broadcast and reduce on " .. dt, function()
        local g = comm.all_gather(cell.tensor({ { R, R + 1 } }, cell[dt]))
        local want = {}
        for r = 0, N - 1 do want[r + 1] = { r, r + 1 } end
        assert.are.same(want, list(g))
        local rows = {}
        for i = 1, N do rows[i] = { i, R } end
        local rs = comm.reduce_scatter(cell.tensor(rows, cell[dt]))
        assert.are.same({ { N * (R + 1), N * (N - 1) / 2 } }, list(rs))
        assert.are.same({ 1, 2, 3 }, list(comm.broadcast(input(dt), 0)))
        assert.are.same({ N, 2 * N, 3 }, list(comm.broadcast(input(dt), N - 1)))
        local red = comm.reduce(input(dt), 0)
        if R == 0 then assert.are.same({ S, 2 * S, 3 * N }, list(red)) else assert.are.same({ 0, 0, 0 }, list(red)) end
      end)

      it("all_gather, reduce_scatter, broadcast and reduce in place (out =) on " .. dt, function()
        local into = cell.zeros({ N, 2 }, cell[dt])
        local g = comm.all_gather(cell.tensor({ { R, R + 1 } }, cell[dt]), { out = into })
        assert.is_true(rawequal(g, into))
        local want = {}
        for r = 0, N - 1 do want[r + 1] = { r, r + 1 } end
        assert.are.same(want, list(into))
        local rows = {}
        for i = 1, N do rows[i] = { i, R } end
        local block = cell.zeros({ 1, 2 }, cell[dt])
        assert.is_true(rawequal(block, comm.reduce_scatter(cell.tensor(rows, cell[dt]), { out = block })))
        assert.are.same({ { N * (R + 1), N * (N - 1) / 2 } }, list(block))
        local t = input(dt)
        assert.is_true(rawequal(t, comm.broadcast(t, N - 1, { out = t })))
        assert.are.same({ N, 2 * N, 3 }, list(t))
        local u = input(dt)
        assert.is_true(rawequal(u, comm.reduce(u, 0, { op = "max", out = u })))
        -- the root gets the reduction; the others' out is set to zeros
        assert.are.same(R == 0 and { N, 2 * N, 3 } or { 0, 0, 0 }, list(u))
      end)
    end
  end

  it("moves bool through every collective (or for sum and max, and for min and prod)", function()
    local mine = cell.tensor({ { R == 0, true, false } }, cell.bool)
    assert.are.same({ { true, true, false } }, comm.reduce_scatter(mine:expand({ N, 3 }):contiguous(), "max")
      :narrow(1, 1, 1):tolist())
    assert.are.same({ { true, true, false } }, comm.broadcast(mine, 0):tolist())
    local r = comm.reduce(mine, 0, "prod")
    assert.are.same(R == 0 and { { N == 1, true, false } } or { { false, false, false } }, r:tolist())
  end)

  it("reduces bool as logical or (sum, max) and and (prod, min)", function()
    local t = cell.tensor({ R == 0, true, false }, cell.bool)
    assert.are.same({ true, true, false }, comm.all_reduce(t, "sum"):tolist())
    assert.are.same({ false, true, false }, comm.all_reduce(t, "min"):tolist())
    assert.are.same({ { R == 0, true, false } }, comm.all_gather(t:reshape({ 1, 3 })):narrow(1, R + 1, 1):tolist())
  end)

  it("rounds float16 and bfloat16 sums to their own precision (to nearest, ties to even)", function()
    -- float16 has 11 significant bits: 2048 + 1 is a tie between 2048 and 2050
    local h = comm.all_reduce(cell.tensor({ R == 0 and 2048 or 1, 0.25 }, cell.float16))
    local b = comm.all_reduce(cell.tensor({ R == 0 and 256 or 1, 2 ^ -20 }, cell.bfloat16))
    if N == 2 then
      assert.are.same({ 2048, 0.5 }, list(h))
      -- bfloat16 has 8: 256 + 1 is a tie between 256 and 258
      assert.are.same({ 256, 2 ^ -19 }, list(b))
      local h3 = comm.all_reduce(cell.tensor({ R == 0 and 2048 or 3 }, cell.float16))
      assert.are.same({ 2052 }, list(h3)) -- 2051 ties to 2052 (even)
      -- subnormals: 2^-24 is float16's smallest; 2^-24 + 2 * 2^-24 = 3 * 2^-24
      local h4 = comm.all_reduce(cell.tensor({ 2 ^ -24 * (R + 1) }, cell.float16))
      assert.are.same({ 3 * 2 ^ -24 }, list(h4))
    end
  end)

  it("takes the mean of float tensors, and refuses it on integers", function()
    assert.are.same({ S / N, 2 * S / N, 3 }, list(comm.all_reduce(input("float64"), "mean")))
    assert_error(function() comm.all_reduce(input("int32"), "mean") end,
      "TypeError: all_reduce: op 'mean' needs a floating-point tensor, but got Int32 (use 'sum')")
  end)

  it("moves non-contiguous tensors and views through a copy", function()
    local t = cell.tensor({ { 1, 2 }, { 3, 4 } }):transpose(1, 2)
    assert.are.same({ { N, 3 * N }, { 2 * N, 4 * N } }, list(comm.all_reduce(t)))
  end)

  it("sizes buffers by what cell.core gave when MPI loaded, not by a patched Tensor table", function()
    local T = require("cell.core").Tensor
    local numel, ptr = T.numel, T.data_ptr
    T.numel = function() return 1e6 end
    T.data_ptr = function() return nil end
    local ok, r = pcall(function()
      local t = cell.tensor({ 1, 2 })
      require("cell.comm_mpi").allreduce(require("cell.communication.backend").state.world, t, t, "sum")
      return t:tolist()
    end)
    T.numel, T.data_ptr = numel, ptr
    assert.is_true(ok, tostring(r))
    assert.are.same({ N, 2 * N }, r)
  end)

  it("sends and receives between rank 0 and rank 1 (more in p2p_mpi.lua)", function()
    if R == 0 then
      comm.send(cell.tensor({ 7, 8 }, cell.int32), 1, { sr_tag = 3 })
    elseif R == 1 then
      assert.are.same({ 7, 8 }, comm.recv(cell.zeros({ 2 }, cell.int32), 0, { sr_tag = 3 }):tolist())
    end
    comm.barrier()
  end)

  it("detects tensors of other shapes or dtypes on other ranks, on every rank", function()
    assert_error(function() comm.all_reduce(cell.zeros({ 2, R + 2 })) end,
      "ValueError: all_reduce: the ranks of the group differ: rank 0 calls all_reduce of float32 (2, 2), "
      .. "rank 1 calls all_reduce of float32 (2, 3)")
    assert_error(function() comm.all_reduce(cell.zeros({ 2 }, R == 0 and cell.float32 or cell.int64)) end,
      "TypeError: all_reduce: the ranks of the group differ: rank 0 calls all_reduce of float32 (2,), "
      .. "rank 1 calls all_reduce of int64 (2,)")
    assert_error(function() comm.broadcast(cell.zeros({ 2 }), R) end,
      "ValueError: broadcast: the ranks of the group differ: rank 0 calls broadcast of float32 (2,), "
      .. "rank 1 calls broadcast of float32 (2,) (root 0 on rank 0, 1 on rank 1)")
    assert_error(function()
      if R == 0 then comm.barrier() else comm.all_reduce(cell.zeros({ 1 })) end
    end, "RuntimeError: " .. (R == 0 and "barrier" or "all_reduce") .. ": the ranks of the group differ: rank 0 calls barrier, rank 1 calls all_reduce of "
      .. "float32 (1,)")
  end)

  it("gives the backward of all_reduce(sum) as all_reduce(sum)", function()
    local x = cell.tensor({ 1, 2 }):requires_grad_()
    -- loss = sum_i w_r[i] * (sum_r x_r)[i], w_r = (r + 1) * {1, 3}: dloss/dx = sum_r w_r
    local g = cell.grad(function(a) return (comm.all_reduce(a) * cell.tensor({ R + 1, 3 * (R + 1) })):sum() end)(x)
    assert.are.same({ S, 3 * S }, g:tolist())
  end)

  it("gives the backward of all_reduce(max) to the ranks holding the max", function()
    local x = cell.tensor({ R, -R }):requires_grad_()
    local g = cell.grad(function(a) return comm.all_reduce(a, "max"):sum() end)(x)
    -- every rank's sens is 1, summed over ranks: N at the max, 0 elsewhere
    assert.are.same({ R == N - 1 and N or 0, R == 0 and N or 0 }, g:tolist())
  end)

  it("gives the backward of all_gather as reduce_scatter(sum) and the reverse", function()
    local x = cell.tensor({ { 1, 2 } }):requires_grad_()
    local w = cell.arange(1, 2 * N + 1):reshape({ N, 2 }) * (R + 1)
    local g = cell.grad(function(a) return (comm.all_gather(a) * w):sum() end)(x)
    -- d/dx_r = sum over ranks q of w_q's row r = S * row r of arange
    assert.are.same({ { S * (2 * R + 1), S * (2 * R + 2) } }, g:tolist())
    local y = cell.ones({ N, 2 }):requires_grad_()
    local g2 = cell.grad(function(a) return (comm.reduce_scatter(a) * (R + 1)):sum() end)(y)
    local want = {}
    for q = 0, N - 1 do want[q + 1] = { q + 1, q + 1 } end
    assert.are.same(want, g2:tolist())
  end)

  it("gives the backward of broadcast to the root only, summed", function()
    local x = cell.tensor({ 1, 2 }):requires_grad_()
    local g = cell.grad(function(a) return (comm.broadcast(a, 0) * (R + 1)):sum() end)(x)
    if R == 0 then assert.are.same({ S, S }, g:tolist()) else assert.are.same({ 0, 0 }, g:tolist()) end
  end)

  it("gives the backward of the mean reductions divided by the group size", function()
    local x = cell.tensor({ 1, 2 }):requires_grad_()
    local g = cell.grad(function(a) return comm.all_reduce(a, "mean"):sum() end)(x)
    assert.are.same({ 1, 1 }, g:tolist()) -- N ranks each give 1/N
    local y = cell.ones({ N, 2 }):requires_grad_()
    local g2 = cell.grad(function(a) return comm.reduce_scatter(a, "mean"):sum() end)(y)
    assert.are.same(cell.full({ N, 2 }, 1 / N):tolist(), g2:tolist()) -- each block feeds one rank's mean
    local g3 = cell.grad(function(a) return comm.reduce(a, 0, "mean"):sum() end)(x)
    assert.are.same(cell.full({ 2 }, 1 / N):tolist(), g3:tolist()) -- root's gradient broadcast, over N
  end)

  it("raises at backward for the reductions MindSpore does not differentiate", function()
    local x = cell.tensor({ 1, 2 }):requires_grad_()
    local y = cell.ones({ N, 2 }):requires_grad_()
    assert_error(function() cell.grad(function(a) return comm.all_reduce(a, "prod"):sum() end)(x) end,
      "RuntimeError: all_reduce: the backward of op 'prod' is not supported (as in MindSpore)")
    assert_error(function() cell.grad(function(a) return comm.reduce_scatter(a, "max"):sum() end)(y) end,
      "RuntimeError: reduce_scatter: the backward of op 'max' is not supported (as in MindSpore)")
    assert_error(function() cell.grad(function(a) return comm.reduce(a, 0, "min"):sum() end)(x) end,
      "RuntimeError: reduce: the backward of op 'min' is not supported (as in MindSpore)")
    assert_error(function() comm.reduce(cell.tensor({ 1 }, cell.int64), 0, "mean") end,
      "TypeError: reduce: op 'mean' needs a floating-point tensor, but got Int64")
  end)

  it("refuses an in-place collective on a tensor that requires grad", function()
    local x = cell.tensor({ 1 }):requires_grad_()
    assert_error(function() comm.all_reduce(x, { out = x }) end,
      "RuntimeError: all_reduce: an in-place collective on a tensor that requires grad is not recorded; use the "
      .. "out-of-place form (no `out`), which is differentiable")
  end)

  it("makes groups of some ranks and destroys them", function()
    if R == 0 then
      comm.create_group("solo0", { 0 })
      assert.are.equal(1, comm.get_group_size("solo0"))
      assert.are.same({ 5 }, comm.all_reduce(cell.tensor({ 5 }), "sum", "solo0"):tolist())
      comm.destroy_group("solo0")
      assert_error(function() comm.get_rank("solo0") end,
        "ValueError: get_rank: no group named 'solo0' on rank 0 (create_group makes one)")
    end
    local rev = {}
    for r = N - 1, 0, -1 do rev[#rev + 1] = r end
    comm.create_group("reversed", rev)
    assert.are.equal(N - 1 - R, comm.get_rank("reversed"))
    assert.are.equal(R, comm.get_world_rank_from_group_rank("reversed", N - 1 - R))
    assert.are.same({ N - 1 }, comm.broadcast(cell.tensor({ R }), 0, "reversed"):tolist())
    comm.destroy_group("reversed")
  end)

  it("makes its host buffers on the host when the default device is another (the test device)", function()
    local core = require "cell.core"
    pcall(core._register_test_device) -- make test-mpi sets CELL_TEST_DEVICE
    cell.set_device("TEST")
    local ok, err = pcall(function()
      local s = comm.all_reduce(cell.tensor({ R + 1, 1 }))
      assert.are.equal("TEST:0", s.device)
      assert.are.same({ S, N }, list(s:move_to("CPU")))
      local c = comm.all_reduce(cell.tensor({ R + 1 }):move_to("CPU"), "max")
      assert.are.equal("CPU", c.device)
      assert.are.same({ N }, list(c))
      local g = comm.all_gather(cell.tensor({ { R } }))
      local want = {}
      for r = 0, N - 1 do want[r + 1] = { r } end
      assert.are.same(want, list(g:move_to("CPU")))
      local red = comm.reduce(cell.tensor({ R + 1 }), 0)
      assert.are.same({ R == 0 and S or 0 }, list(red:move_to("CPU")))
      local rs = comm.reduce_scatter(cell.ones({ N, 2 }))
      assert.are.same({ { N, N } }, list(rs:move_to("CPU")))
      assert.are.same({ 1 }, list(comm.broadcast(cell.tensor({ R + 1 }), 0):move_to("CPU")))
      if R == 0 then
        comm.send(cell.tensor({ 4, 5 }), 1, { sr_tag = 9 })
      elseif R == 1 then
        assert.are.same({ 4, 5 }, list(comm.recv(cell.zeros({ 2 }), 0, { sr_tag = 9 }):move_to("CPU")))
      end
      comm.barrier()
    end)
    cell.set_device("CPU")
    assert.is_true(ok, tostring(err))
  end)

  it("goes through the host for tensors on another device", function()
    local core = require "cell.core"
    if core._register_test_device then
      pcall(core._register_test_device)
      local t = cell.tensor({ R + 1, 1 }):move_to("TEST")
      local s = comm.all_reduce(t)
      assert.are.equal("TEST:0", s.device)
      assert.are.same({ S, N }, s:move_to("CPU"):tolist())
      local u = cell.tensor({ R }):move_to("TEST")
      comm.all_reduce(u, { out = u })
      assert.are.same({ N * (N - 1) / 2 }, u:move_to("CPU"):tolist())
    end
  end)
end)
