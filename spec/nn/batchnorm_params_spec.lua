-- batchnorm_params_spec.lua - BatchNorm's moving_mean and moving_variance
-- as MindSpore keeps them: Parameters with requires_grad = false, listed by
-- get_parameters, parameters_dict and parameters_and_names but not by
-- trainable_params; updated by the forward pass only (optimizers, to_float
-- and the device path leave them to it), and checkpoints written when they
-- were buffers still load. Numbers by hand: x = {{1, 2}, {3, 6}} has batch
-- means {2, 4} and unbiased variances {2, 8}, so one training call moves
-- the statistics to 0.1 * {2, 4} and 0.9 + 0.1 * {2, 8}.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local OrderedDict = require "cell.ordered_dict"

local X = { { 1, 2 }, { 3, 6 } }
local MEAN1, VAR1 = { 0.2, 0.4 }, { 1.1, 1.7 }

local function names_of(it)
  local out = {}
  for name in it do out[#out + 1] = name end
  return out
end

local Net = nn.Cell:extend("BNNet")
function Net:init(auto_prefix)
  nn.Cell.init(self, { auto_prefix = auto_prefix ~= false })
  self.dense = nn.Dense(2, 2, cell.tensor({ { 1, 0 }, { 0, 1 } }), cell.tensor({ 0, 0 }))
  self.bn = nn.BatchNorm1d(2)
end
function Net:construct(x) return self.bn(self.dense(x)) end

describe("BatchNorm's moving statistics", function()
  it("are Parameters without requires_grad in every parameter listing but trainable_params", function()
    for _, cls in ipairs({ "BatchNorm1d", "BatchNorm2d", "BatchNorm3d" }) do
      local bn = nn[cls](2)
      for _, f in ipairs({ "moving_mean", "moving_variance" }) do
        assert.is_true(cell.is_parameter(bn[f]), cls .. "." .. f)
        assert.is_false(bn[f].requires_grad)
        assert.are.equal(f, bn[f].name)
      end
      assert.is_true(bn.gamma.requires_grad)
    end
    local net = Net()
    local all = { "dense.weight", "dense.bias", "bn.moving_mean", "bn.moving_variance", "bn.gamma", "bn.beta" }
    assert.are.same(all, names_of(net:parameters_and_names()))
    assert.are.same(all, net:parameters_dict():keys())
    local got = {}
    for p in net:get_parameters() do got[#got + 1] = p.name end
    assert.are.same(all, got)
    local trainable = {}
    for _, p in ipairs(net:trainable_params()) do trainable[#trainable + 1] = p.name end
    assert.are.same({ "dense.weight", "dense.bias", "bn.gamma", "bn.beta" }, trainable)
    assert.are.same({ net.bn.moving_mean, net.bn.moving_variance }, net:untrainable_params())
    assert.are.same({}, names_of(net:named_buffers()))
  end)

  it("move in training by the forward pass alone; an optimizer step over trainable_params leaves them be", function()
    local net = Net()
    local loss_net = nn.WithLossCell(net, nn.MSELoss())
    local opt = nn.SGD(net:trainable_params(), 0.1)
    for _, p in ipairs(opt.parameters) do assert.is_true(p.requires_grad, p.name) end
    local step = nn.TrainOneStepCell(loss_net, opt)
    step:set_train()
    local gamma0 = net.bn.gamma:totable()
    step(cell.tensor(X), cell.tensor({ { 0, 1 }, { 1, 0 } }))
    H.assert_close(net.bn.moving_mean, MEAN1, 1e-6)
    H.assert_close(net.bn.moving_variance, VAR1, 1e-6)
    assert.are_not.same(gamma0, net.bn.gamma:totable())
    assert.is_false(net.bn.moving_mean.requires_grad)
    net:set_train(false)
    local before = net.bn.moving_mean:totable()
    net(cell.tensor(X))
    assert.are.same(before, net.bn.moving_mean:totable())
  end)

  it("are updated in the Parameters themselves under to_float, and stay float32", function()
    local bn = nn.BatchNorm1d(2):to_float(cell.float16)
    local mean = bn.moving_mean
    bn:set_train()
    bn(cell.tensor(X))
    assert.are.equal(mean, bn.moving_mean)
    assert.are.equal(cell.float32, bn.moving_mean.dtype)
    H.assert_close(bn.moving_mean, MEAN1, 1e-3)
    H.assert_close(bn.moving_variance, VAR1, 1e-3)
  end)

  it("round-trip through state_dict and checkpoints", function()
    local a = Net()
    a:set_train()
    a(cell.tensor(X))
    local b = Net()
    local r = b:load_state_dict(a:state_dict())
    assert.are.same({}, r.missing_keys)
    H.assert_close(b.bn.moving_variance, VAR1, 1e-6)
    local tmp = os.tmpname()
    os.remove(tmp)
    local path = tmp .. ".safetensors"
    cell.save_checkpoint(a, path)
    local c = Net()
    local not_loaded, ckpt_left = cell.load_param_into_net(c, cell.load_checkpoint(path), true)
    os.remove(path)
    assert.are.same({}, not_loaded)
    assert.are.same({}, ckpt_left)
    H.assert_close(c.bn.moving_mean, MEAN1, 1e-6)
    assert.is_true(cell.is_parameter(c.bn.moving_mean))
    assert.is_false(c.bn.moving_mean.requires_grad)
  end)

  it("load from checkpoints written when they were buffers (under their state_dict keys)", function()
    -- what save_checkpoint wrote then for a net whose BatchNorm sits under a
    -- cell without auto_prefix: Parameters by name, buffers by state_dict key
    local old = OrderedDict()
    old["weight"] = cell.tensor({ { 2, 0 }, { 0, 2 } })
    old["bias"] = cell.tensor({ 1, 1 })
    old["gamma"] = cell.tensor({ 3, 3 })
    old["beta"] = cell.tensor({ 0, 0 })
    old["bn.moving_mean"] = cell.tensor(MEAN1)
    old["bn.moving_variance"] = cell.tensor(VAR1)
    local tmp = os.tmpname()
    os.remove(tmp)
    local path = tmp .. ".safetensors"
    cell.save_checkpoint(old, path)
    local net = Net(false)
    assert.are.equal("moving_mean", net.bn.moving_mean.name)
    local not_loaded, ckpt_left = cell.load_param_into_net(net, cell.load_checkpoint(path), true)
    os.remove(path)
    assert.are.same({}, not_loaded)
    assert.are.same({}, ckpt_left)
    H.assert_close(net.bn.moving_mean, MEAN1, 1e-6)
    H.assert_close(net.bn.moving_variance, VAR1, 1e-6)
    H.assert_close(net.bn.gamma, { 3, 3 }, 0)
    -- and a state_dict of plain tensors (what state_dict gave for buffers)
    local sd = OrderedDict()
    for _, k in ipairs({ "dense.weight", "dense.bias", "bn.moving_mean", "bn.moving_variance", "bn.gamma", "bn.beta" }) do
      sd[k] = k == "dense.weight" and cell.ones({ 2, 2 }) or cell.ones({ 2 })
    end
    sd["bn.moving_mean"] = cell.tensor({ 5, 6 })
    local fresh = Net()
    local r = fresh:load_state_dict(sd)
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    H.assert_close(fresh.bn.moving_mean, { 5, 6 }, 0)
  end)

  it("move with the net to a device and are updated there", function()
    local core = cell.core
    assert.is_function(core._register_test_device, "run under CELL_TEST_DEVICE=1 (make test)")
    core._register_test_device()
    local bn = nn.BatchNorm1d(2)
    local mean = bn.moving_mean
    bn:move_to("TEST")
    assert.are.equal(mean, bn.moving_mean)
    assert.are.equal("TEST:0", bn.moving_mean.device)
    assert.is_false(bn.moving_mean.requires_grad)
    bn:set_train()
    bn(cell.tensor(X):move_to("TEST"))
    H.assert_close(bn.moving_mean:move_to("CPU"), MEAN1, 1e-6)
    H.assert_close(bn.moving_variance:move_to("CPU"), VAR1, 1e-6)
  end)
end)
