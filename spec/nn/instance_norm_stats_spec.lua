-- instance_norm_stats_spec.lua - nn.InstanceNorm1d/2d/3d's running
-- statistics (lua/cell/nn/normalization_extra.lua): Parameters moving_mean
-- (zeros) and moving_variance (ones), requires_grad = false, as MindSpore keeps them, updated in
-- training by MindSpore's documented rule running = momentum * running +
-- (1 - momentum) * observed (observed: the batch mean of each instance's
-- mean and unbiased variance) and never used for the output. Values by hand.
local cell = require "cell"
local nn = cell.nn

describe("InstanceNorm's running statistics", function()
  -- instances {1, 2, 3} (mean 2, unbiased variance 1) and {2, 4, 6} (mean
  -- 4, variance 4): observed mean 3, variance 2.5
  local x = cell.tensor({ { { 1, 2, 3 } }, { { 2, 4, 6 } } }, cell.float64)

  it("are Parameters moving_mean and moving_variance (not trainable), zeros and ones, in the state_dict", function()
    local m = nn.InstanceNorm2d(3, { dtype = cell.float64 })
    assert.are.same({ 0, 0, 0 }, m.moving_mean:totable())
    assert.are.same({ 1, 1, 1 }, m.moving_variance:totable())
    assert.are.equal(cell.float64, m.moving_variance.dtype)
    assert.are.same({ "moving_mean", "moving_variance", "gamma", "beta" }, m:state_dict():keys())
    assert.is_true(cell.is_parameter(m.moving_mean))
    assert.is_false(m.moving_mean.requires_grad)
    assert.are.same({ m.moving_mean, m.moving_variance }, m:untrainable_params())
    local trainable = 0
    for _ in pairs(m:trainable_params()) do trainable = trainable + 1 end
    assert.are.equal(2, trainable)
  end)

  it("move in training by momentum * running + (1 - momentum) * observed", function()
    local m = nn.InstanceNorm1d(1, { dtype = cell.float64 })
    m:set_train()
    m(x)
    assert.is_true(math.abs(m.moving_mean:item() - 0.9 * 3) < 1e-15)
    assert.is_true(math.abs(m.moving_variance:item() - (0.1 + 0.9 * 2.5)) < 1e-15)
    m(x)
    assert.is_true(math.abs(m.moving_mean:item() - (0.1 * 2.7 + 0.9 * 3)) < 1e-15)
    assert.is_true(math.abs(m.moving_variance:item() - (0.1 * 2.35 + 0.9 * 2.5)) < 1e-15)
    local m5 = nn.InstanceNorm1d(1, { momentum = 0.5, dtype = cell.float64 })
    m5:set_train()
    m5(x)
    assert.is_true(math.abs(m5.moving_mean:item() - 1.5) < 1e-15)
    assert.is_true(math.abs(m5.moving_variance:item() - 1.75) < 1e-15)
  end)

  it("stay in inference and never change the output or the gradient", function()
    local m = nn.InstanceNorm1d(1, { dtype = cell.float64 })
    local y_eval = m(x)
    assert.are.equal(0, m.moving_mean:item())
    assert.are.equal(1, m.moving_variance:item())
    m:set_train()
    local y_train = m(x)
    assert.are.equal(0, (y_eval - y_train):abs():max():item())
    local w = cell.tensor({ { { 1, -2, 0.5 } }, { { 3, 1, -1 } } }, cell.float64)
    local g_train = cell.grad(function(t) return (m(t) * w):sum() end)(x)
    m:set_train(false)
    local g_eval = cell.grad(function(t) return (m(t) * w):sum() end)(x)
    assert.are.equal(0, (g_train - g_eval):abs():max():item())
  end)

  it("track a float32 layer fed float64 and a 3-D layer with one element per instance", function()
    local m = nn.InstanceNorm3d(2)
    m:set_train()
    m(cell.ones({ 1, 2, 1, 1, 1 }, cell.float64) * 4)
    assert.are.equal(cell.float32, m.moving_mean.dtype)
    assert.is_true(math.abs(m.moving_mean:totable()[1] - 3.6) < 1e-6)
    assert.are.same({ 1, 1 }, m.moving_variance:totable()) -- one element: no variance to observe
  end)
end)
