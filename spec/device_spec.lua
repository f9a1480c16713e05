-- device_spec.lua - devices from Lua: Tensor:move_to, t.device,
-- cell.set_device / get_device, nn.Cell:move_to, mixed devices and a
-- declined kernel, the op named in device errors, backward rules on the
-- device (src/lua/ldevice.c, src/ops/device.c, the test device of
-- src/ops/testdev.c, which make test offers through CELL_TEST_DEVICE=1).
local H = require "helpers"
local cell = require "cell"
local core = require "cell.core"

describe("devices", function()
  local default_name, default_id
  setup(function()
    assert.is_function(core._register_test_device, "run under CELL_TEST_DEVICE=1 (make test)")
    core._register_test_device()
    default_name, default_id = cell.get_device()
  end)
  after_each(function() cell.set_device(default_name, default_id) end)

  it("moves a tensor to the test device and back with the same values", function()
    local t = cell.tensor({ { 1, 2 }, { 3, 4 } }):move_to("CPU")
    local d = t:move_to("TEST")
    assert.are.equal("TEST:0", d.device)
    assert.are.same({ { 1, 2 }, { 3, 4 } }, d:totable())
    local back = (d * 2):move_to("CPU")
    assert.are.equal("CPU", back.device)
    assert.are.same({ { 2, 4 }, { 6, 8 } }, back:totable())
    assert.are.equal(4, d[2][2])
    assert.are.equal(10, d:sum():item())
    assert.truthy(tostring(d):find("4.0000", 1, true))
  end)

  it("returns the tensor itself when it is on the device already", function()
    local t = cell.tensor({ 1, 2 })
    assert.are.equal(t, t:move_to(t.device:match("^[^:]+")))
  end)

  it("refuses inputs on two devices, naming both", function()
    local c = cell.tensor({ 1, 2 }):move_to("CPU")
    local d = c:move_to("TEST")
    H.expect_error(function() return c + d end, "ValueError", "tensors on different devices", "CPU", "TEST:0")
  end)

  it("names the op the caller called in the mixed-devices error, not its kernel", function()
    local c = cell.tensor({ { 1, 2 }, { 3, 4 } }):move_to("CPU")
    local d = c:move_to("TEST")
    local function msg(f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      return tostring(err)
    end
    assert.truthy(msg(function() return c + d end):find("ValueError: add: tensors on different devices: CPU and TEST:0", 1, true))
    assert.truthy(msg(function() return d - c end):find("ValueError: sub: tensors on different devices: TEST:0 and CPU", 1, true))
    assert.truthy(msg(function() return c:mul(d) end):find("ValueError: mul: tensors on different devices", 1, true))
    assert.truthy(msg(function() return c:add_(d) end):find("ValueError: add: tensors on different devices", 1, true))
    assert.truthy(msg(function() return c:matmul(d) end):find("ValueError: matmul: tensors on different devices", 1, true))
    assert.truthy(msg(function() return cell.ops.mse_loss(c, d) end):find("ValueError: mse_loss: tensors on different devices", 1, true))
    local x = cell.ones({ 1, 1, 3, 3 }):move_to("CPU")
    local w = cell.ones({ 1, 1, 2, 2 }):move_to("TEST")
    assert.truthy(msg(function() return cell.ops.conv2d(x, w) end):find("ValueError: conv2d: tensors on different devices: CPU and TEST:0", 1, true))
    -- the name does not stick to later ops
    assert.truthy(msg(function() return c:gather(1, cell.tensor({ { 1, 1 } }, cell.int64):move_to("TEST")) end)
      :find("ValueError: gather: tensors on different devices", 1, true))
  end)

  it("names the op in a declined kernel's error", function()
    local d = cell.ones({ 2, 2 }):move_to("TEST", 1)
    local ok, err = pcall(function() return d:matmul(d) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("NotImplementedError: matmul is not supported on device TEST:1", 1, true), tostring(err))
  end)

  it("raises NotImplementedError when the device declines a kernel", function()
    local d = cell.ones({ 2, 2 }):move_to("TEST", 1)
    assert.are.equal("TEST:1", d.device)
    H.expect_error(function() return d:matmul(d) end, "NotImplementedError", "is not supported on device TEST:1")
    assert.are.same({ { 2, 2 }, { 2, 2 } }, (d + d):totable())
  end)

  it("makes new tensors on the default device", function()
    cell.set_device("TEST")
    local name, id = cell.get_device()
    assert.are.equal("TEST", name)
    assert.are.equal(0, id)
    assert.are.equal("TEST:0", cell.zeros({ 2 }).device)
    assert.are.equal("TEST:0", cell.tensor({ 1, 2 }).device)
    assert.are.equal("TEST:0", cell.arange(0, 3).device)
    cell.set_device("CPU")
    assert.are.equal("CPU", cell.zeros({ 2 }).device)
  end)

  it("rejects unknown devices and bad arguments", function()
    H.expect_error(function() cell.set_device("NOPE") end, "ValueError", "NOPE")
    H.expect_error(function() cell.set_device(3) end, "TypeError", "device name")
    H.expect_error(function() cell.tensor({ 1 }):move_to("NOPE") end, "ValueError", "NOPE")
  end)

  it("loads the GPU module for set_device('GPU'), and says why when it cannot run", function()
    -- without cell.cuda built: the module is named; built but without a
    -- CUDA device: its own "no CUDA device" error
    local before = cell.zeros({ 1 }).device
    local ok, err = pcall(cell.set_device, "GPU")
    if ok then -- a machine with a GPU
      assert.are.equal("GPU", (cell.get_device()))
    else
      err = tostring(err)
      assert.is_truthy(err:find("RuntimeError: ", 1, true), err)
      assert.is_truthy(err:find("cell.cuda", 1, true) or err:find("no CUDA device", 1, true), err)
      assert.are.equal(before, cell.zeros({ 1 }).device) -- nothing changed
    end
  end)

  it("keeps gradients on the device of their tensors", function()
    local x = cell.tensor({ 1, 2, 3 }, cell.float64):move_to("TEST")
    local f = cell.value_and_grad(function(v) return (v * v):sum() end)
    local y, g = f(x)
    assert.are.equal(14, y:item())
    assert.are.equal("TEST:0", g.device)
    assert.are.same({ 2, 4, 6 }, g:totable())
  end)

  -- These backward rules were host loops over tensor memory; now they are
  -- kernels (cumsum_reverse, scatter_add_) and ops, the same on every
  -- device. Expected gradients by hand: loss = sum(f(x) * w).
  for _, dev in ipairs({ "CPU", "TEST" }) do
    local function on(t) return cell.tensor(t, cell.float64):move_to(dev) end
    local function grads(f, w, ...)
      local gs = cell.grad(function(...) return (f(...) * on(w)):sum() end, { 1, 2 })(...)
      assert.are.equal(2, #gs)
      for i, g in ipairs(gs) do
        assert.are.equal(dev == "CPU" and "CPU" or "TEST:0", g.device)
        gs[i] = g:totable()
      end
      return gs
    end

    it("cumsum's gradient is the reverse cumulative sum, on " .. dev, function()
      local g = cell.grad(function(x) return (x:cumsum(1) * on({ 1, 10, 100, 1000 })):sum() end)(on({ 1, 2, 3, 4 }))
      assert.are.same({ 1111, 1110, 1100, 1000 }, g:totable())
      local w = { { 1, 2, 3 }, { 4, 5, 6 } }
      g = cell.grad(function(x) return (x:cumsum(2) * on(w)):sum() end)(on({ { 0, 0, 0 }, { 0, 0, 0 } }))
      assert.are.same({ { 6, 5, 3 }, { 15, 11, 6 } }, g:totable())
      g = cell.grad(function(x) return (x:cumsum(1) * on(w)):sum() end)(on({ { 0, 0, 0 }, { 0, 0, 0 } }))
      assert.are.same({ { 5, 7, 9 }, { 4, 5, 6 } }, g:totable())
      local x32 = cell.tensor({ 1, 2, 3 }, cell.float32):move_to(dev)
      g = cell.grad(function(x) return x:cumsum(1):sum() end)(x32)
      assert.are.equal("Float32", tostring(g.dtype))
      assert.are.same({ 3, 2, 1 }, g:totable())
    end)

    it("gather and index_select add the gradient at repeated positions, on " .. dev, function()
      local i = cell.tensor({ { 1, 1, 3 }, { 2, 3, 2 } }, cell.int64):move_to(dev)
      local g = cell.grad(function(a) return (a:gather(2, i) * on({ { 1, 2, 3 }, { 4, 5, 6 } })):sum() end)(
        on({ { 0, 0, 0 }, { 0, 0, 0 } }))
      assert.are.same({ { 3, 0, 3 }, { 0, 10, 5 } }, g:totable())
      local j = cell.tensor({ 3, 1, 3 }, cell.int64):move_to(dev)
      g = cell.grad(function(a) return (a:index_select(1, j) * on({ { 1, 2 }, { 3, 4 }, { 5, 6 } })):sum() end)(
        on({ { 0, 0 }, { 0, 0 }, { 0, 0 } }))
      assert.are.same({ { 3, 4 }, { 0, 0 }, { 6, 8 } }, g:totable())
    end)

    it("scatter's gradients: overwritten positions and overwritten writes get 0, on " .. dev, function()
      -- row 1 writes src[1][1] then src[1][2] to position 1 (the last is
      -- kept); row 2 writes src[2][1] to 3 and src[2][2] to 2; src's third
      -- column is outside the index
      local i = cell.tensor({ { 1, 1 }, { 3, 2 } }, cell.int64):move_to(dev)
      local gs = grads(function(a, src) return a:scatter(2, i, src) end, { { 1, 2, 3 }, { 4, 5, 6 } },
        on({ { 0, 0, 0 }, { 0, 0, 0 } }), on({ { 7, 8, 9 }, { 10, 11, 12 } }))
      assert.are.same({ { 0, 2, 3 }, { 4, 0, 0 } }, gs[1])
      assert.are.same({ { 0, 1, 0 }, { 6, 5, 0 } }, gs[2])
    end)
  end

  it("moves a cell's parameters and buffers in place", function()
    local nn = cell.nn
    local net = nn.SequentialCell({ nn.Dense(3, 2), nn.BatchNorm1d(2) })
    local w = net[1].weight
    local before = w:move_to("CPU"):totable()
    net:move_to("TEST")
    assert.are.equal(w, net[1].weight)
    assert.are.equal("TEST:0", w.device)
    assert.is_true(w.requires_grad)
    for b in net:buffers() do assert.are.equal("TEST:0", b.device) end
    assert.are.same(before, w:move_to("CPU"):totable())
    local y = net(cell.ones({ 4, 3 }):move_to("TEST"))
    assert.are.equal("TEST:0", y.device)
    net:move_to("CPU")
    assert.are.equal("CPU", w.device)
  end)

  it("hands out device addresses as identities only", function()
    local d = cell.tensor({ 1, 2 }):move_to("TEST")
    assert.are.equal(d:data_ptr(), d:reshape({ 2 }):data_ptr())
    assert.are_not.equal(d:data_ptr(), d:move_to("CPU"):data_ptr())
  end)

  if jit then
    it("refuses an FFI pointer to device memory", function()
      local ffi_mod = require "cell.ffi"
      local d = cell.tensor({ 1, 2 }):move_to("TEST")
      H.expect_error(function() return ffi_mod.ptr(d) end, "RuntimeError", "TEST:0")
      assert.are.equal(2, ffi_mod.ptr(d:move_to("CPU"))[1])
    end)
  end
end)
