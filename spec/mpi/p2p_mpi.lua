-- p2p_mpi.lua - send and recv on every rank of `mpirun -np 2` (make
-- test-mpi; spec/mpi/launch_jobs.lua runs it on 3 ranks too): values,
-- tags, mismatches named, and the gradients MindSpore gives them -- the
-- backward of a send receives the gradient from the destination, the
-- backward of a recv sends it back -- against values worked out by hand.
-- Ranks form a chain 0 -> 1 -> ... -> N-1.
local cell = require "cell"
local comm = cell.communication

comm.init()
local R, N = comm.get_rank(), comm.get_group_size()
assert(N >= 2, "run under mpirun -np 2 (or more)")
local LAST = N - 1

local function assert_error(fn, text)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected an error: " .. text)
  assert.is_truthy(tostring(msg):find(text, 1, true), "expected '" .. text .. "' in: " .. tostring(msg))
end

describe("send and recv on " .. N .. " ranks", function()
  after_each(function() comm.barrier() end)

  it("pass a tensor down the chain: recv fills a template that does not record and returns it", function()
    local got
    if R > 0 then
      local tmpl = cell.full({ 2, 2 }, -1, cell.int32)
      got = comm.recv(tmpl, R - 1, { sr_tag = 5 })
      assert.is_true(rawequal(got, tmpl))
      assert.are.equal(cell.int32, got.dtype)
    else
      got = cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.int32)
    end
    if R < LAST then
      local p = comm.send(got + 10, R + 1, { sr_tag = 5 })
      -- MindSpore's Send gives a placeholder: a zero without dims, of the dtype sent
      assert.are.equal(0, p.ndim)
      assert.are.equal(cell.int32, p.dtype)
      assert.are.equal(0, p:item())
    end
    -- rank r holds the start plus 10 * r
    assert.are.same({ { 1 + 10 * R, 2 + 10 * R }, { 3 + 10 * R, 4 + 10 * R } }, got:tolist())
  end)

  it("receives in place with out =, on every dtype the chain passes", function()
    for _, dt in ipairs({ "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int64", "int16", "bool" }) do
      local v = dt == "bool" and { true, false, true } or { 1, 2, 3 }
      if R == 0 then
        comm.send(cell.tensor(v, cell[dt]), 1)
      elseif R == 1 then
        local into = cell.zeros({ 3 }, cell[dt])
        assert.is_true(rawequal(into, comm.recv(into, 0, { out = into })))
        assert.are.same(v, into:tolist())
      end
    end
  end)

  it("keeps messages of different tags apart", function()
    if R == 0 then
      comm.send(cell.tensor({ 1 }), 1, { sr_tag = 1 })
      comm.send(cell.tensor({ 2 }), 1, { sr_tag = 2 })
    elseif R == 1 then
      -- received in the other order: each tag has its own queue
      assert.are.same({ 2 }, comm.recv(cell.zeros({ 1 }), 0, { sr_tag = 2 }):tolist())
      assert.are.same({ 1 }, comm.recv(cell.zeros({ 1 }), 0, { sr_tag = 1 }):tolist())
    end
  end)

  it("names a receive template that does not match what is sent", function()
    if R == 0 then
      comm.send(cell.tensor({ 1, 2, 3 }), 1)
      comm.send(cell.tensor({ 1, 2 }, cell.int64), 1)
    elseif R == 1 then
      assert_error(function() comm.recv(cell.zeros({ 2 }), 0) end,
        "ValueError: recv: rank 0 sends float32 (3,), but this rank (1) receives into float32 (2,)")
      assert_error(function() comm.recv(cell.zeros({ 2 }), 0) end,
        "TypeError: recv: rank 0 sends int64 (2,), but this rank (1) receives into float32 (2,)")
    end
  end)

  it("checks its arguments before sending", function()
    assert_error(function() comm.send(cell.ones({ 1 }), R) end,
      ("ValueError: send: the peer must be another rank of the group (0..%d, not %d), but got %d"):format(LAST, R, R))
    assert_error(function() comm.recv(cell.ones({ 1 }), N) end,
      ("ValueError: recv: the peer must be another rank of the group (0..%d, not %d), but got %d"):format(LAST, R, N))
    assert_error(function() comm.send({ 1 }, 0) end, "TypeError: send: tensor must be a Tensor, but got table")
    assert_error(function() comm.recv(cell.ones({ 1 }), R == 0 and 1 or 0, { sr_tag = -1 }) end,
      "ValueError: recv: sr_tag must be an integer in 0..32766, but got -1")
    assert_error(function() comm.recv(cell.ones({ 2 }), R == 0 and 1 or 0, { out = cell.ones({ 3 }) }) end,
      "ValueError: recv: out must be float32 (2,), but got float32 (3,)")
  end)

  it("differentiates through the chain: send's backward receives, recv's backward sends back", function()
    -- rank 0: x = {1, 2, 3}; rank r (0 < r): h_r = recv(...) * (r + 1), sent on;
    -- the last rank's loss is sum(h * w), w = {1, 10, 100}. So
    -- d loss / d x = w * prod_{r=1..LAST} (r + 1) = w * N!, and every middle
    -- rank receives the gradient w * prod_{q > r} (q + 1) for its input.
    local w = cell.tensor({ 1, 10, 100 })
    local function fact(a, b)
      local p = 1
      for q = a, b do p = p * q end
      return p
    end
    if R == 0 then
      local x = cell.tensor({ 1, 2, 3 }):requires_grad_()
      local g = cell.grad(function(a) return comm.send(a * 1, 1) end)(x)
      local k = fact(2, N)
      assert.are.same({ k, 10 * k, 100 * k }, g:tolist())
    else
      local tmpl = cell.zeros({ 3 }):requires_grad_()
      local f = function(tm)
        local h = comm.recv(tm, R - 1) * (R + 1)
        if R < LAST then return comm.send(h, R + 1) end
        return (h * w):sum()
      end
      local loss, g = cell.value_and_grad(f)(tmpl)
      -- the template's own gradient: zeros (its values are never read), as in MindSpore;
      -- a template that records is not written (the values came in a new tensor)
      assert.are.same({ 0, 0, 0 }, g:tolist())
      assert.are.same({ 0, 0, 0 }, tmpl:tolist())
      if R == LAST then
        -- forward: x * N! reaches the last rank
        local k = fact(2, N)
        assert.are.same((cell.tensor({ 1, 2, 3 }) * k * w):sum():item(), loss:item())
      else
        assert.are.equal(0, loss:item()) -- the placeholder
      end
    end
  end)

  it("sends the gradient back in the template's dtype, and names a backward mismatch", function()
    if R == 0 then
      local x = cell.tensor({ 1, 2 }, cell.float64):requires_grad_()
      local g = cell.grad(function(a) return comm.send(a, 1, { sr_tag = 9 }) end)(x)
      assert.are.equal(cell.float64, g.dtype)
      assert.are.same({ 2, 2 }, g:tolist())
      -- a send whose destination gives back the wrong gradient shape
      local y = cell.tensor({ 1, 2 }):requires_grad_()
      assert_error(function() cell.grad(function(a) return comm.send(a, 1, { sr_tag = 8 }) end)(y) end,
        "ValueError: send (backward): rank 1 sends float32 (3,), but this rank (0) receives into float32 (2,)")
    elseif R == 1 then
      local tmpl = cell.zeros({ 2 }, cell.float64):requires_grad_()
      cell.grad(function(tm) return (comm.recv(tm, 0, { sr_tag = 9 }) * 2):sum() end)(tmpl)
      comm.recv(cell.zeros({ 2 }), 0, { sr_tag = 8 })
      -- what a wrong backward would send: taken by rank 0's check
      comm.send(cell.zeros({ 3 }), 0, { sr_tag = 8 })
    end
  end)

  it("records nothing for a template that does not require grad, and an int send", function()
    if R == 0 then
      local p = comm.send(cell.tensor({ 1, 2 }):requires_grad_():detach(), 1)
      assert.is_false(p.requires_grad)
    elseif R == 1 then
      local r = comm.recv(cell.zeros({ 2 }), 0)
      assert.is_false(r.requires_grad)
      assert.are.same({ 1, 2 }, r:tolist())
    end
  end)
end)
