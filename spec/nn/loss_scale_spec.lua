-- loss_scale_spec.lua - nn.TrainOneStepWithLossScaleCell and the loss-scale
-- update cells: a step against the hand-computed SGD update, a step whose
-- scaled loss overflows (skipped, scale divided), the growth after
-- scale_window good steps, a fixed scale, and bad arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("loss_scale_spec%.lua", fn, ...) end

-- Dense 1 -> 1 with w = 2, b = 0; x = 1, y = 0: MSE loss 4, d/dw = d/db = 4
local function setup(lr)
  local net = nn.Dense(1, 1, cell.tensor({ { 2 } }), cell.tensor({ 0 }))
  local opt = nn.SGD(net:trainable_params(), lr or 0.1)
  return net, opt, nn.WithLossCell(net, nn.MSELoss())
end
local x, y = cell.tensor({ { 1 } }), cell.tensor({ { 0 } })

describe("nn.TrainOneStepWithLossScaleCell", function()
  it("takes the unscaled gradients' step (fixed scale): w = 2 - 0.1 * 4", function()
    local net, opt, wl = setup()
    local step = nn.TrainOneStepWithLossScaleCell(wl, opt, cell.tensor(1024))
    local loss, overflow, scale = step(x, y)
    H.assert_close(loss, 4, 0)
    assert.is_false(overflow)
    H.assert_close(scale, 1024, 0)
    H.assert_close(net.weight, { { 1.6 } }, 1e-6)
    H.assert_close(net.bias, { -0.4 }, 1e-6)
    assert.are.equal(1, opt:get_step())
  end)

  it("skips the step when the scaled gradients overflow, and the dynamic scale comes down", function()
    local net, opt, wl = setup()
    local update = nn.DynamicLossScaleUpdateCell(2 ^ 127, 2, 1000)
    local step = nn.TrainOneStepWithLossScaleCell(wl, opt, update)
    -- loss * 2^127 = 2^129 and then 2^128: infinite in float32; 2^127 is not
    local loss, overflow, scale = step(x, y)
    assert.is_true(overflow)
    H.assert_close(loss, 4, 0)
    H.assert_close(scale, 2 ^ 127, 0)
    H.assert_close(net.weight, { { 2 } }, 0) -- unchanged
    assert.are.equal(0, opt:get_step())
    H.assert_close(step.scale_sense, 2 ^ 126, 0)
    _, overflow, scale = step(x, y)
    assert.is_true(overflow)
    H.assert_close(scale, 2 ^ 126, 0)
    _, overflow, scale = step(x, y)
    assert.is_false(overflow)
    H.assert_close(scale, 2 ^ 125, 0)
    H.assert_close(net.weight, { { 1.6 } }, 1e-6)
    assert.are.equal(1, opt:get_step())
  end)

  it("grows the scale after scale_window steps without overflow", function()
    local _, opt, wl = setup(0)
    local step = nn.TrainOneStepWithLossScaleCell(wl, opt, nn.DynamicLossScaleUpdateCell(4, 2, 2))
    local used = {}
    for i = 1, 5 do
      local _, overflow, scale = step(x, y)
      assert.is_false(overflow)
      used[i] = scale:item()
    end
    -- MindSpore's rule: grow when cur_iter - last_overflow_iter >= scale_window
    assert.are.same({ 4, 4, 8, 8, 16 }, used)
    H.assert_close(step.scale_sense, 16, 0)
  end)

  it("never goes below 1, and a fixed update cell keeps the scale but still skips", function()
    local u = nn.DynamicLossScaleUpdateCell(1.5, 2, 10)
    local p = cell.Parameter(cell.tensor(1.5), "s", false)
    assert.is_true(u(p, true))
    H.assert_close(p, 1, 0)
    local net, opt, wl = setup()
    local step = nn.TrainOneStepWithLossScaleCell(wl, opt, nn.FixedLossScaleUpdateCell(2 ^ 127))
    local _, overflow, scale = step(x, y)
    assert.is_true(overflow)
    H.assert_close(scale, 2 ^ 127, 0)
    H.assert_close(step.scale_sense, 2 ^ 127, 0)
    H.assert_close(net.weight, { { 2 } }, 0)
    step:set_sense_scale(8)
    _, overflow = step(x, y)
    assert.is_false(overflow)
    H.assert_close(net.weight, { { 1.6 } }, 1e-6)
  end)

  it("gives the same parameters as TrainOneStepCell when nothing overflows", function()
    cell.set_seed(7)
    local a = nn.Dense(3, 2)
    local b = nn.Dense(3, 2, a.weight:clone(), a.bias:clone())
    local xs, ys = cell.randn({ 4, 3 }), cell.randn({ 4, 2 })
    local s1 = nn.TrainOneStepCell(nn.WithLossCell(a, nn.MSELoss()), nn.Momentum(a:trainable_params(), 0.1, 0.9))
    local s2 = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(b, nn.MSELoss()),
      nn.Momentum(b:trainable_params(), 0.1, 0.9), nn.DynamicLossScaleUpdateCell(2 ^ 10, 2, 2))
    for _ = 1, 3 do
      s1(xs, ys)
      s2(xs, ys)
    end
    H.assert_close(b.weight, a.weight:tolist(), 1e-6)
    H.assert_close(b.bias, a.bias:tolist(), 1e-6)
  end)

  it("names bad arguments", function()
    local _, opt, wl = setup()
    assert.are.equal("TypeError: For 'TrainOneStepWithLossScaleCell', the 'scale_sense' must be a Cell (a loss-scale "
      .. "update cell), a Tensor or a number, but got string.",
      err(function() nn.TrainOneStepWithLossScaleCell(wl, opt, "big") end))
    assert.are.equal("ValueError: For 'TrainOneStepWithLossScaleCell', the 'scale_sense' must be a finite number > 0, "
      .. "but got -1.", err(function() nn.TrainOneStepWithLossScaleCell(wl, opt, -1) end))
    assert.are.equal("ValueError: For 'TrainOneStepWithLossScaleCell', the 'scale_sense' Tensor must have one "
      .. "element, but got shape (2,).",
      err(function() nn.TrainOneStepWithLossScaleCell(wl, opt, cell.ones({ 2 })) end))
    assert.are.equal("TypeError: For 'TrainOneStepWithLossScaleCell', the 'optimizer' must be an optimizer "
      .. "(nn.Optimizer), but got number.", err(function() nn.TrainOneStepWithLossScaleCell(wl, 1, 2) end))
    assert.are.equal("ValueError: For 'DynamicLossScaleUpdateCell', the 'scale_window' must be an integer >= 1, "
      .. "but got 0.", err(function() nn.DynamicLossScaleUpdateCell(2, 2, 0) end))
    assert.are.equal("ValueError: For 'DynamicLossScaleUpdateCell', the 'scale_factor' must be a finite number "
      .. ">= 1, but got 0.5.", err(function() nn.DynamicLossScaleUpdateCell(2, 0.5, 10) end))
    assert.are.equal("ValueError: For 'FixedLossScaleUpdateCell', the 'loss_scale_value' must be a finite number "
      .. "> 0, but got 0.", err(function() nn.FixedLossScaleUpdateCell(0) end))
    assert.are.equal("TypeError: For 'DynamicLossScaleUpdateCell', the 'overflow' must be a boolean or a "
      .. "one-element Tensor, but got string.",
      err(function() nn.DynamicLossScaleUpdateCell(2, 2, 2)(cell.Parameter(cell.tensor(2), "s"), "no") end))
    local BadNet = nn.Cell:extend("BadNet")
    function BadNet:construct() return { 1 } end
    local bad = nn.TrainOneStepWithLossScaleCell(BadNet(), opt, 2)
    assert.are.equal("TypeError: For 'TrainOneStepWithLossScaleCell', the network must return the loss as a "
      .. "Tensor, but got table.", (select(2, pcall(bad, x)):gsub("^.-:%d+: ", "")))
  end)
end)
