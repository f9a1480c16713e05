-- device_spec.lua - devices from Lua: Tensor:move_to, t.device,
-- cell.set_device / get_device, nn.Cell:move_to, mixed devices and a
-- declined kernel (src/lua/ldevice.c, src/backend/device.c, the test
-- device of src/backend/testdev.c, which make test offers through
-- CELL_TEST_DEVICE=1).
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

  it("keeps gradients on the device of their tensors", function()
    local x = cell.tensor({ 1, 2, 3 }, cell.float64):move_to("TEST")
    local f = cell.value_and_grad(function(v) return (v * v):sum() end)
    local y, g = f(x)
    assert.are.equal(14, y:item())
    assert.are.equal("TEST:0", g.device)
    assert.are.same({ 2, 4, 6 }, g:totable())
  end)

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
