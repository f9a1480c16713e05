-- pytorch_habits_spec.lua - what a user coming from PyTorch types first, and
-- the errors that answer it: comparisons of tensors (Lua's < and > cannot
-- give a tensor), t:backward(), net:parameters(), net:eval(),
-- opt:zero_grad(), opt:step(). Each error names what to use instead and
-- points at the user's line (this file).
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("pytorch_habits_spec%.lua", fn, ...) end

local LT = "TypeError: '<' and '>' cannot compare Tensors in Lua (a comparison must give a boolean): "
  .. "for t < x use t:lt(x), for t > x use t:gt(x) (x a number or a Tensor)"
local LE = "TypeError: '<=' and '>=' cannot compare Tensors in Lua (a comparison must give a boolean): "
  .. "for t <= x use t:le(x), for t >= x use t:ge(x) (x a number or a Tensor)"

describe("comparing tensors with < > <= >=", function()
  local t, u = cell.ones({ 3 }), cell.zeros({ 3 })

  it("says which method does it, for two tensors", function()
    assert.are.equal(LT, err(function() return t < u end))
    assert.are.equal(LT, err(function() return t > u end))
    assert.are.equal(LE, err(function() return t <= u end))
    assert.are.equal(LE, err(function() return t >= u end))
  end)

  it("says so for a number on either side (Lua 5.4; LuaJIT does not call __lt then)", function()
    if jit then
      local ok, msg = pcall(function() return t > 0.5 end)
      assert.is_false(ok)
      assert.is_truthy(msg:find("attempt to compare number with userdata", 1, true), msg)
      return
    end
    assert.are.equal(LT, err(function() return t > 0.5 end))
    assert.are.equal(LT, err(function() return 0.5 < t end))
    assert.are.equal(LE, err(function() return t <= 1 end))
    assert.are.equal(LE, err(function() return 1 >= t end))
  end)

  it("the methods it names give the tensors", function()
    local r = cell.tensor({ 0.2, 0.7, 0.5 })
    assert.are.same({ false, true, false }, r:gt(0.5):totable())
    assert.are.same({ true, false, false }, r:lt(0.5):totable())
    assert.are.same({ true, false, true }, r:le(0.5):totable())
    assert.are.same({ false, true, true }, r:ge(0.5):totable())
  end)
end)

describe("PyTorch's methods", function()
  it("t:backward() says gradients are functional", function()
    local t = cell.ones({ 2 })
    assert.are.equal("AttributeError: 'Tensor' object has no attribute 'backward': "
      .. "cell computes gradients functionally, use cell.grad / cell.value_and_grad",
      err(function() t:backward() end))
    local p = cell.Parameter(cell.ones({ 2 }), "w")
    assert.are.equal("AttributeError: 'Parameter' object has no attribute 'backward': "
      .. "cell computes gradients functionally, use cell.grad / cell.value_and_grad",
      err(function() p:backward() end))
  end)

  it("net:parameters(), named_parameters(), eval(), train(), zero_grad(), forward() name the cell's way", function()
    local net = nn.Dense(2, 3)
    assert.are.equal("AttributeError: 'Dense' object has no attribute 'parameters': use net:trainable_params() "
      .. "(the parameters to train) or net:get_parameters() (all of them)", err(function() net:parameters() end))
    assert.are.equal("AttributeError: 'Dense' object has no attribute 'named_parameters': use "
      .. "net:parameters_and_names()", err(function() net:named_parameters() end))
    assert.are.equal("AttributeError: 'Dense' object has no attribute 'eval': use net:set_train(false)",
      err(function() net:eval() end))
    assert.are.equal("AttributeError: 'Dense' object has no attribute 'train': use net:set_train(true) "
      .. "(or set_train() to go back to training)", err(function() net:train() end))
    assert.are.equal("AttributeError: 'Dense' object has no attribute 'zero_grad': not needed: cell computes "
      .. "gradients functionally (cell.grad / cell.value_and_grad), nothing accumulates between steps",
      err(function() net:zero_grad() end))
    assert.are.equal("AttributeError: 'Dense' object has no attribute 'forward': call the cell, net(x); its "
      .. "computation is its construct method", err(function() net:forward(cell.ones({ 2 })) end))
    -- containers route their reads through the same lookup
    local seq = nn.SequentialCell({ net })
    assert.are.equal("AttributeError: 'SequentialCell' object has no attribute 'eval': use net:set_train(false)",
      err(function() seq:eval() end))
  end)

  it("opt:zero_grad() and opt:step() say to call the optimizer with the gradients", function()
    local net = nn.Dense(2, 3)
    local opt = nn.Adam(net:trainable_params())
    assert.are.equal("AttributeError: 'Adam' object has no attribute 'zero_grad': not needed: gradients do not "
      .. "accumulate in cell; compute them with cell.grad / cell.value_and_grad and call opt(grads)",
      err(function() opt:zero_grad() end))
    assert.are.equal("AttributeError: 'SGD' object has no attribute 'step': call opt(grads) with the gradients of "
      .. "the parameters (from cell.grad / cell.value_and_grad)",
      err(function() nn.SGD(net:trainable_params(), 0.1):step() end))
  end)

  it("leaves the cell's own members and other unknown names alone", function()
    local net = nn.Dense(2, 3)
    assert.is_nil(net.no_such_thing)
    assert.is_nil(cell.ones({ 2 }).no_such_thing)
    -- a name the user sets is theirs
    net.eval = 1
    assert.are.equal(1, net.eval)
    local opt = nn.SGD(net:trainable_params(), 0.1)
    assert.is_truthy(opt.parameters)
    net:set_train(false)
    assert.is_false(net.training)
  end)
end)
