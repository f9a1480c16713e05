-- dense_spec.lua - cell.nn.Dense and the activation cells: MindSpore's
-- parameter names, shapes and default initialiser bounds, the forward
-- computation checked by hand, extend_repr, and bad input.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("dense_spec%.lua", fn, ...) end

describe("nn.Dense", function()
  it("has weight {out, in} and bias {out} with MindSpore's default bounds", function()
    cell.set_seed(3)
    local d = nn.Dense(16, 8)
    assert.are.same({ 8, 16 }, d.weight.shape)
    assert.are.same({ 8 }, d.bias.shape)
    assert.are.equal("weight", d.weight.name)
    assert.is_false(d.weight.has_init)
    -- HeUniform(sqrt(5)) on fan_in 16: bound = sqrt(6 / ((1 + 5) * 16)) = 0.25; bias: 1 / sqrt(16)
    assert.is_true(d.weight:abs():max():item() <= 0.25)
    assert.is_true(d.bias:abs():max():item() <= 0.25)
    assert.is_true(d.weight:abs():max():item() > 0.2)
  end)

  it("computes x W^T + b, on 2-D and higher inputs", function()
    local w = cell.tensor({ { 1, 2, 3 }, { 0, -1, 1 } })
    local d = nn.Dense(3, 2, w, cell.tensor({ 10, 20 }))
    H.assert_close(d(cell.tensor({ { 1, 1, 1 }, { 1, 0, 2 } })), { { 16, 20 }, { 17, 22 } })
    local y = d(cell.ones({ 4, 5, 3 }))
    assert.are.same({ 4, 5, 2 }, y.shape)
    H.assert_close(y[{ 2, 3 }], { 16, 20 })
    local nob = nn.Dense(3, 2, { weight_init = w, has_bias = false })
    H.assert_close(nob(cell.ones({ 1, 3 })), { { 6, 0 } })
    assert.is_nil(nob.bias)
  end)

  it("takes an activation by name or as a cell", function()
    local d = nn.Dense(2, 2, { weight_init = cell.tensor({ { 1, 0 }, { 0, -1 } }), bias_init = "zeros",
      activation = "relu" })
    H.assert_close(d(cell.tensor({ { 3, 3 } })), { { 3, 0 } })
    -- the activation is a sub-cell, so it is listed too, as in MindSpore
    assert.are.equal("Dense(\n  input_channels=2, output_channels=2, has_bias=true, activation=ReLU()\n"
      .. "  (activation): ReLU()\n)", tostring(d))
    local t = nn.Dense(2, 2, { activation = nn.Tanh() })
    assert.are.equal("Tanh()", tostring(t.activation))
  end)

  it("prints as MindSpore does", function()
    assert.are.equal("Dense(input_channels=3, output_channels=4, has_bias=true)", tostring(nn.Dense(3, 4)))
    assert.are.equal("Dense(input_channels=3, output_channels=4)", tostring(nn.Dense(3, 4, { has_bias = false })))
  end)

  it("rejects bad arguments and inputs, naming the layer and the shapes", function()
    H.expect_error(function() nn.Dense(0, 2) end, "ValueError", "For 'Dense', the 'in_channels' must be a positive integer")
    -- MindSpore's check_positive_int: a TypeError for what is not an integer, a ValueError for one below 1
    assert.are.equal("TypeError: For 'Dense', the 'in_channels' must be an integer, but got string.",
      err(function() local d = nn.Dense("a", 4) return d end))
    assert.are.equal("TypeError: For 'Dense', the 'in_channels' must be an integer, but got 2.5.",
      err(function() local d = nn.Dense(2.5, 4) return d end))
    assert.are.equal("TypeError: For 'Dense', the 'out_channels' must be an integer, but got table.",
      err(function() local d = nn.Dense(2, { 4 }) return d end))
    H.expect_error(function() nn.Dense(2, 1 / 0) end, "TypeError", "the 'out_channels' must be an integer, but got")
    H.expect_error(function() nn.Dense(2, nil) end, "TypeError", "the 'out_channels' must be an integer, but got nil")
    assert.are.equal("ValueError: For 'Dense', the 'out_channels' must be a positive integer, but got -3.",
      err(function() local d = nn.Dense(2, -3) return d end))
    H.expect_error(function() nn.Dense(2, 2, { has_bias = 1 }) end, "TypeError", "has_bias")
    H.expect_error(function() nn.Dense(2, 3, cell.ones({ 2, 2 })) end, "ValueError", "must be (3, 2), but got (2, 2)")
    H.expect_error(function() nn.Dense(2, 2, { activation = "nope" }) end, "KeyError", "Unknown activation 'nope'")
    H.expect_error(function() nn.Dense(2, 2, { activation = 3 }) end, "TypeError", "activation")
    local d = nn.Dense(3, 2)
    H.expect_error(function() d(cell.ones({ 4, 5 })) end, "ValueError",
      "For 'Dense', the last dimension of the input must be in_channels (3), but got an input of shape (4, 5)")
  end)
end)

describe("activation cells", function()
  it("apply their functions", function()
    local x = cell.tensor({ -1, 0, 2 })
    H.assert_close(nn.ReLU()(x), { 0, 0, 2 })
    H.assert_close(nn.Sigmoid()(x), { 1 / (1 + math.exp(1)), 0.5, 1 / (1 + math.exp(-2)) })
    H.assert_close(nn.Tanh()(x), { math.tanh(-1), 0, math.tanh(2) })
    assert.are.equal("ReLU()", tostring(nn.ReLU()))
  end)
end)
