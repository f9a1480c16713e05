-- wrap_spec.lua - nn.WithLossCell and nn.TrainOneStepCell: the loss they
-- compute, one step against value_and_grad plus the optimizer done by
-- hand, sens, non-scalar losses, return_grad, training modes, a tiny model
-- trained to a loss drop, and bad arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("wrap_spec%.lua", fn, ...) end

local function mse(out, y) return ((out - y) ^ 2):mean() end

local function dense(w, b)
  return nn.Dense(#w[1], #w, cell.tensor(w, cell.float64), cell.tensor(b, cell.float64), true, nil, cell.float64)
end

describe("nn.WithLossCell", function()
  it("is loss_fn(backbone(data), label), with a function or a loss cell", function()
    local net = dense({ { 1, 2 } }, { 0.5 })
    local x, y = cell.tensor({ { 1, 1 }, { 2, 0 } }, cell.float64), cell.tensor({ { 3 }, { 1 } }, cell.float64)
    -- outputs 3.5 and 2.5: squared errors 0.25 and 2.25
    H.assert_close(nn.WithLossCell(net, mse)(x, y), 1.25, 1e-15)
    H.assert_close(nn.WithLossCell(net, nn.MSELoss())(x, y), 1.25, 1e-15)
    local wl = nn.WithLossCell(net, nn.MSELoss())
    assert.are.equal(net, wl:backbone_network())
    assert.are.equal("weight", net.weight.name) -- auto_prefix is off, as in MindSpore
    assert.are.same({ "weight", "bias" }, { wl:trainable_params()[1].name, wl:trainable_params()[2].name })
  end)

  it("names bad arguments", function()
    assert.are.equal("TypeError: For 'WithLossCell', the 'backbone' must be a Cell, but got function.",
      err(function() nn.WithLossCell(mse, mse) end))
    assert.are.equal("TypeError: For 'WithLossCell', the 'loss_fn' must be a Cell or a function, but got number.",
      err(function() nn.WithLossCell(nn.Dense(2, 1), 3) end))
  end)
end)

describe("nn.TrainOneStepCell", function()
  local X = { { 1, 2 }, { -1, 0.5 }, { 0.25, -2 } }
  local Y = { { 1 }, { 0 }, { -1 } }

  it("returns the loss and applies the optimizer to the gradients of the loss", function()
    local a, b = dense({ { 0.5, -0.25 } }, { 0.1 }), dense({ { 0.5, -0.25 } }, { 0.1 })
    local x, y = cell.tensor(X, cell.float64), cell.tensor(Y, cell.float64)
    local step = nn.TrainOneStepCell(nn.WithLossCell(a, mse), nn.Momentum(a:trainable_params(), 0.1, 0.9))
    local opt_b = nn.Momentum(b:trainable_params(), 0.1, 0.9)
    local vg = cell.value_and_grad(function() return mse(b(x), y) end, nil, b:trainable_params())
    for _ = 1, 3 do
      local loss_a = step(x, y)
      local loss_b, grads = vg()
      opt_b(grads)
      H.assert_close(loss_a, loss_b:item(), 1e-15)
      H.assert_close(a.weight, b.weight:totable(), 1e-15)
      H.assert_close(a.bias, b.bias:totable(), 1e-15)
    end
  end)

  it("puts the network in training mode and holds the optimizer's state", function()
    local net = nn.Dense(2, 1)
    assert.is_false(net.training)
    local opt = nn.Adam(net:trainable_params())
    local step = nn.TrainOneStepCell(nn.WithLossCell(net, mse), opt)
    assert.is_true(net.training)
    assert.is_true(opt.training)
    assert.are.equal(opt, step.optimizer)
    assert.are.equal(2, #step.weights)
    local names = {}
    for name in step:parameters_and_names() do names[#names + 1] = name end
    assert.are.same({ "network._backbone.weight", "network._backbone.bias", "optimizer.global_step",
      "optimizer.learning_rate", "optimizer.moment1.weight", "optimizer.moment1.bias", "optimizer.moment2.weight", "optimizer.moment2.bias" }, names)
    assert.are.equal("moment1.weight", opt["moment1.weight"].name)
  end)

  it("scales the gradients by sens, and differentiates a non-scalar loss as its sum", function()
    local a, b = dense({ { 0.5, -0.25 } }, { 0.1 }), dense({ { 0.5, -0.25 } }, { 0.1 })
    local x, y = cell.tensor(X, cell.float64), cell.tensor(Y, cell.float64)
    local sa = nn.TrainOneStepCell(nn.WithLossCell(a, mse), nn.SGD(a:trainable_params(), 0.05), 4)
    local sb = nn.TrainOneStepCell(nn.WithLossCell(b, mse), nn.SGD(b:trainable_params(), 0.2), { sens = 1 })
    sa(x, y)
    sb(x, y)
    H.assert_close(a.weight, b.weight:totable(), 1e-15)
    -- a loss of shape {3, 1}: its gradient is that of its sum, and it is returned whole
    local c, d = dense({ { 0.5, -0.25 } }, { 0.1 }), dense({ { 0.5, -0.25 } }, { 0.1 })
    local per_row = function(out, t) return (out - t) ^ 2 end
    local sc = nn.TrainOneStepCell(nn.WithLossCell(c, per_row), nn.SGD(c:trainable_params(), 0.1))
    local sd = nn.TrainOneStepCell(nn.WithLossCell(d, function(out, t) return per_row(out, t):sum() end),
      nn.SGD(d:trainable_params(), 0.1))
    local loss = sc(x, y)
    assert.are.same({ 3, 1 }, loss.shape)
    H.assert_close(loss:sum(), sd(x, y):item(), 1e-15)
    H.assert_close(c.weight, d.weight:totable(), 1e-15)
  end)

  it("with return_grad, returns the loss and an OrderedDict of parameter name -> gradient", function()
    local a, b = dense({ { 0.5, -0.25 } }, { 0.1 }), dense({ { 0.5, -0.25 } }, { 0.1 })
    local x, y = cell.tensor(X, cell.float64), cell.tensor(Y, cell.float64)
    -- positional after sens, and as an option; the optimizer (with weight decay) must not change the gradients
    local sa = nn.TrainOneStepCell(nn.WithLossCell(a, mse), nn.SGD(a:trainable_params(), 0.1, 0.9, 0, 0.01), 2, true)
    assert.is_true(sa.return_grad)
    local opt_b = nn.SGD(b:trainable_params(), 0.1, 0.9, 0, 0.01)
    local vg = cell.value_and_grad(function() return mse(b(x), y) end, nil, b:trainable_params())
    for _ = 1, 2 do
      local loss, grads = sa(x, y)
      local loss_b, gb = vg()
      for i = 1, #gb do gb[i] = gb[i] * 2 end -- sens = 2 scales the gradients the optimizer gets
      opt_b(gb)
      H.assert_close(loss, loss_b:item(), 1e-15)
      assert.are.equal(cell.OrderedDict, getmetatable(grads).__class)
      assert.are.same({ "weight", "bias" }, grads:keys())
      H.assert_close(grads.weight, gb[1]:totable(), 1e-15)
      H.assert_close(grads.bias, gb[2]:totable(), 1e-15)
      H.assert_close(a.weight, b.weight:totable(), 1e-15)
    end
    -- the names are the parameters' names, in the optimizer's order
    local net = nn.SequentialCell { nn.Dense(2, 3), nn.ReLU(), nn.Dense(3, 1) }
    local params = net:trainable_params()
    local sb = nn.TrainOneStepCell(nn.WithLossCell(net, mse), nn.SGD({ params[3], params[4], params[1], params[2] }),
      { return_grad = true })
    local _, grads = sb(cell.ones({ 4, 2 }), cell.zeros({ 4, 1 }))
    assert.are.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, { params[1].name, params[2].name,
      params[3].name, params[4].name })
    assert.are.same({ "2.weight", "2.bias", "0.weight", "0.bias" }, grads:keys())
    assert.are.same({ 1, 3 }, grads["2.weight"].shape)
    assert.are.same({ 3 }, grads["0.bias"].shape)
    -- without it, one value: the loss
    local sc = nn.TrainOneStepCell(nn.WithLossCell(net, mse), nn.SGD(params), { sens = 1, return_grad = false })
    assert.is_false(sc.return_grad)
    assert.are.equal(1, select("#", sc(cell.ones({ 4, 2 }), cell.zeros({ 4, 1 }))))
    assert.is_false(nn.TrainOneStepCell(nn.WithLossCell(net, mse), nn.SGD(params)).return_grad)
  end)

  it("trains a small regression until the loss has dropped", function()
    cell.set_seed(7)
    local x = cell.randn({ 64, 3 })
    local y = x:matmul(cell.tensor({ { 1.5 }, { -2 }, { 0.5 } })) + 0.25
    local net = nn.Dense(3, 1)
    local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.Adam(net:trainable_params(), 0.05))
    local first = step(x, y):item()
    local last
    for _ = 1, 300 do last = step(x, y):item() end
    assert.is_true(first > 0.5, "initial loss " .. first)
    assert.is_true(last < 1e-3 * first, ("loss %g -> %g"):format(first, last))
    H.assert_close(net.weight, { { 1.5, -2, 0.5 } }, 2e-2)
  end)

  it("names bad arguments", function()
    local net = nn.Dense(2, 1)
    local opt = nn.SGD(net:trainable_params())
    assert.are.equal("TypeError: For 'TrainOneStepCell', the 'network' must be a Cell, but got function.",
      err(function() nn.TrainOneStepCell(mse, opt) end))
    assert.are.equal("TypeError: For 'TrainOneStepCell', the 'optimizer' must be an optimizer (nn.Optimizer), but got Dense.",
      err(function() nn.TrainOneStepCell(net, net) end))
    assert.are.equal("TypeError: For 'TrainOneStepCell', the 'sens' must be a finite number, but got string.",
      err(function() nn.TrainOneStepCell(net, opt, "x") end))
    assert.are.equal("TypeError: For 'TrainOneStepCell', the 'return_grad' must be a boolean, but got number.",
      err(function() nn.TrainOneStepCell(net, opt, 1, 1) end))
    H.expect_error(function() nn.TrainOneStepCell(net, opt, { return_grad = "yes" }) end, "TypeError",
      "'return_grad' must be a boolean, but got string")
    H.expect_error(function() nn.TrainOneStepCell(net, opt, 1, true, 3) end, "TypeError",
      "takes at most 2 optional arguments, but 3 were given")
    local Odd = nn.Cell:extend("Odd")
    function Odd:construct() return 3 end
    local odd = nn.TrainOneStepCell(Odd(), opt)
    H.expect_error(function() odd(cell.ones({ 1, 2 })) end, "TypeError",
      "For 'TrainOneStepCell', the network must return the loss as a Tensor, but got number.")
  end)
end)
