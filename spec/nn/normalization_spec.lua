-- normalization_spec.lua - cell.nn.BatchNorm1d, BatchNorm2d and LayerNorm:
-- MindSpore's parameter and buffer names (state_dict keys), initialisers,
-- extend_repr, training against inference (the running statistics'
-- update with MindSpore's momentum) and LayerNorm's axes, against PyTorch
-- fixtures (spec/fixtures/gen_layers.py), and every error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local FX = require "fixtures.layers_fixtures"

local function err(fn, ...) return H.caller_error("normalization_spec%.lua", fn, ...) end

describe("nn.BatchNorm1d and nn.BatchNorm2d", function()
  it("have MindSpore's four Parameters: moving_mean, moving_variance (not trainable), gamma, beta", function()
    local bn = nn.BatchNorm2d(3)
    assert.are.same({ "moving_mean", "moving_variance", "gamma", "beta" }, bn:state_dict():keys())
    H.assert_close(bn.gamma, { 1, 1, 1 })
    H.assert_close(bn.beta, { 0, 0, 0 })
    H.assert_close(bn.moving_mean, { 0, 0, 0 })
    H.assert_close(bn.moving_variance, { 1, 1, 1 })
    assert.is_true(cell.is_parameter(bn.moving_mean))
    assert.is_false(bn.moving_mean.requires_grad)
    assert.are.same({ bn.gamma, bn.beta }, bn:trainable_params())
    assert.are.same({ bn.moving_mean, bn.moving_variance }, bn:untrainable_params())
    assert.is_nil(bn:named_buffers()())
    local fixed = nn.BatchNorm1d(2, { affine = false })
    assert.are.same({}, fixed:trainable_params())
    assert.are.same({ "moving_mean", "moving_variance", "gamma", "beta" }, fixed:state_dict():keys())
  end)

  it("take initializers for all four tensors", function()
    local bn = nn.BatchNorm1d(2, { gamma_init = 2, beta_init = cell.tensor({ 1, -1 }), moving_mean_init = "ones",
      moving_var_init = cell.init.Constant(4), dtype = cell.float64 })
    H.assert_values(bn.gamma, { 2, 2 }, "float64")
    H.assert_values(bn.beta, { 1, -1 }, "float64")
    H.assert_values(bn.moving_mean, { 1, 1 }, "float64")
    H.assert_values(bn.moving_variance, { 4, 4 }, "float64")
  end)

  it("print MindSpore's extend_repr text, the four Parameters with their names under the parent", function()
    assert.are.equal("BatchNorm2d(num_features=3, eps=1e-05, momentum=0.9, gamma=Parameter (name=gamma, shape=(3,), "
      .. "dtype=Float32, requires_grad=true), beta=Parameter (name=beta, shape=(3,), dtype=Float32, "
      .. "requires_grad=true), moving_mean=Parameter (name=moving_mean, shape=(3,), dtype=Float32, "
      .. "requires_grad=false), moving_variance=Parameter (name=moving_variance, shape=(3,), dtype=Float32, "
      .. "requires_grad=false))", tostring(nn.BatchNorm2d(3)))
    local Net = nn.Cell:extend("Net")
    function Net:init() self.bn1 = nn.BatchNorm1d(2, 1e-3, 0.99) end
    local s = Net().bn1:extend_repr()
    assert.truthy(s:find("^num_features=2, eps=0.001, momentum=0.99, gamma=Parameter %(name=bn1.gamma,"))
    assert.truthy(s:find("moving_variance=Parameter (name=bn1.moving_variance, shape=(2,), dtype=Float32, "
      .. "requires_grad=false)", 1, true))
    local net = Net()
    local keys = net:state_dict():keys()
    assert.are.same({ "bn1.moving_mean", "bn1.moving_variance", "bn1.gamma", "bn1.beta" }, keys)
    local names = {}
    for name in net:parameters_and_names() do names[#names + 1] = name end
    assert.are.same(keys, names)
  end)

  describe("forward", function()

    local function make(cls, f)
      return cls(3, { momentum = 0.8, gamma_init = cell.tensor(f.gamma), beta_init = cell.tensor(f.beta),
        moving_mean_init = cell.tensor(f.mean0), moving_var_init = cell.tensor(f.var0) })
    end

    for _, case in ipairs { { "BatchNorm1d", "x2" }, { "BatchNorm1d", "x3" }, { "BatchNorm2d", "x4" } } do
      local cls, key = case[1], case[2]
      local f = FX.batch_norm[key]

      it(cls .. " on " .. #H.shape_of(f.x) .. "-D input: batch statistics and the update in training", function()
        local bn = make(nn[cls], f):set_train()
        H.assert_close(bn(cell.tensor(f.x)), f.train, 1e-5)
        -- running = momentum * running + (1 - momentum) * batch, the unbiased variance
        H.assert_close(bn.moving_mean, f.mean1, 1e-5)
        H.assert_close(bn.moving_variance, f.var1, 1e-5)
        assert.are.same({ "moving_mean", "moving_variance", "gamma", "beta" }, bn:state_dict():keys())
      end)

      it(cls .. " on " .. #H.shape_of(f.x) .. "-D input: the running statistics in inference", function()
        local bn = make(nn[cls], f)
        H.assert_close(bn(cell.tensor(f.x)), f.eval, 1e-5)
        H.assert_close(bn.moving_mean, f.mean0)
        H.assert_close(bn.moving_variance, f.var0)
      end)
    end

    it("follow use_batch_statistics whatever the mode", function()
      local f = FX.batch_norm.x2
      local always = nn.BatchNorm1d(3, { momentum = 0.8, use_batch_statistics = true,
        gamma_init = cell.tensor(f.gamma), beta_init = cell.tensor(f.beta),
        moving_mean_init = cell.tensor(f.mean0), moving_var_init = cell.tensor(f.var0) })
      H.assert_close(always(cell.tensor(f.x)), f.train, 1e-5)
      local never = nn.BatchNorm1d(3, { use_batch_statistics = false,
        gamma_init = cell.tensor(f.gamma), beta_init = cell.tensor(f.beta),
        moving_mean_init = cell.tensor(f.mean0), moving_var_init = cell.tensor(f.var0) }):set_train()
      H.assert_close(never(cell.tensor(f.x)), f.eval, 1e-5)
      H.assert_close(never.moving_mean, f.mean0)
    end)

    it("pass gradients to gamma and beta", function()
      local bn = nn.BatchNorm1d(2):set_train()
      local x = cell.tensor({ { 1, 2 }, { 3, 6 } })
      local g = cell.grad(function(a) return bn(a):sum() end, nil, bn:trainable_params())(x)
      -- sum of normalised values is 0 per channel; d/d(beta) = N = 2
      H.assert_close(g[1], { 0, 0 }, 1e-5)
      H.assert_close(g[2], { 2, 2 })
    end)

    it("name the layer and both shapes for a wrong input", function()
      local bn = nn.BatchNorm2d(3)
      assert.are.equal("ValueError: For 'BatchNorm2d', the input must be 4-D {N, C, H, W} with C = num_features (3), "
        .. "but got (2, 4, 8, 8).", err(function() local y = bn(cell.ones({ 2, 4, 8, 8 })) return y end))
      H.expect_error(function() nn.BatchNorm1d(3)(cell.ones({ 2, 3, 4, 5 })) end, "ValueError",
        "2-D {N, C} or 3-D {N, C, L} with C = num_features (3)", "(2, 3, 4, 5)")
      H.expect_error(function() nn.BatchNorm1d(3):set_train()(cell.ones({ 1, 3 })) end, "ValueError",
        "expected more than 1 value per channel when training", "(1, 3)")
    end)
  end)

  it("reject bad arguments as MindSpore does", function()
    assert.are.equal("ValueError: For 'BatchNorm2d', the 'num_features' must be at least 1, but got 0.",
      err(function() local b = nn.BatchNorm2d(0) return b end))
    H.expect_error(function() nn.BatchNorm1d(2.5) end, "TypeError", "'num_features' must be an integer, but got 2.5")
    assert.are.equal("ValueError: For 'BatchNorm1d', the 'momentum' must be a number in range [0, 1], but got 1.5.",
      err(function() local b = nn.BatchNorm1d(2, { momentum = 1.5 }) return b end))
    H.expect_error(function() nn.BatchNorm1d(2, 0) end, "ValueError", "'eps' must be greater than 0")
    H.expect_error(function() nn.BatchNorm1d(2, "a") end, "TypeError", "'eps' must be a number")
    H.expect_error(function() nn.BatchNorm1d(2, { affine = "yes" }) end, "TypeError", "'affine' must be a boolean")
    H.expect_error(function() nn.BatchNorm1d(2, { use_batch_statistics = 1 }) end, "ValueError",
      "'use_batch_statistics' must be a boolean value or nil")
    H.expect_error(function() nn.BatchNorm2d(2, { data_format = "NHWC" }) end, "ValueError", "'data_format'")
    H.expect_error(function() nn.BatchNorm2d(2, { gamma_init = cell.ones({ 3 }) }) end, "ValueError",
      "'gamma_init' shape must be (2,), but got (3,)")
    H.expect_error(function() nn.BatchNorm2d(2, { moving_var_init = cell.ones({ 1 }) }) end, "ValueError",
      "'moving_var_init'")
    H.expect_error(function() nn.BatchNorm2d(2, { epsilon = 1 }) end, "TypeError", "unexpected keyword argument 'epsilon'")
  end)
end)

describe("nn.LayerNorm", function()
  local L = FX.layer_norm

  it("has gamma and beta of normalized_shape and MindSpore's extend_repr (with gamma's '=')", function()
    local ln = nn.LayerNorm({ 3, 4 }, 2, 2)
    assert.are.same({ "gamma", "beta" }, ln:state_dict():keys())
    assert.are.same({ 3, 4 }, ln.gamma.shape)
    H.assert_close(ln.beta, { { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } })
    assert.are.equal("LayerNorm(normalized_shape=(4,), begin_norm_axis=-1, begin_params_axis=-1, gamma=Parameter "
      .. "(name=gamma, shape=(4,), dtype=Float32, requires_grad=true), beta=Parameter (name=beta, shape=(4,), "
      .. "dtype=Float32, requires_grad=true))", tostring(nn.LayerNorm({ 4 })))
    assert.are.equal(1e-7, nn.LayerNorm({ 4 }).epsilon)
  end)

  describe("forward", function()
    local x = cell.tensor(L.x)

    it("normalises the last axis by default", function()
      local ln = nn.LayerNorm({ 4 }, { gamma_init = cell.tensor(L.g4), beta_init = cell.tensor(L.b4) })
      H.assert_close(ln(x), L.last, 1e-5)
    end)

    it("normalises from begin_norm_axis (1-based) with params from begin_params_axis", function()
      local ln = nn.LayerNorm({ 3, 4 }, 2, 2, cell.tensor(L.g34), cell.tensor(L.b34))
      H.assert_close(ln(x), L.from2, 1e-5)
      local neg = nn.LayerNorm({ 3, 4 }, { begin_norm_axis = -2, begin_params_axis = -2,
        gamma_init = cell.tensor(L.g34), beta_init = cell.tensor(L.b34) })
      H.assert_close(neg(x), L.from2, 1e-5)
      local mixed = nn.LayerNorm({ 4 }, { begin_norm_axis = 2, gamma_init = cell.tensor(L.g4),
        beta_init = cell.tensor(L.b4) })
      H.assert_close(mixed(x), L.norm2_params_last, 1e-5)
    end)

    it("passes gradients to gamma and beta", function()
      local ln = nn.LayerNorm({ 2 })
      local g = cell.grad(function(a) return ln(a):sum() end, nil, ln:trainable_params())(cell.tensor({ { 1, 3 } }))
      H.assert_close(g[1], { -1, 1 }, 1e-4)
      H.assert_close(g[2], { 1, 1 })
    end)

    it("names the layer and the shapes for a wrong input", function()
      local ln = nn.LayerNorm({ 4 })
      assert.are.equal("ValueError: For 'LayerNorm', the input's dimensions from begin_params_axis (-1) must be "
        .. "normalized_shape (4,), but got an input of shape (2, 3).",
        err(function() local y = ln(cell.ones({ 2, 3 })) return y end))
      H.expect_error(function() nn.LayerNorm({ 4 }, 3)(cell.ones({ 4 })) end, "ValueError",
        "begin_norm_axis (3) and begin_params_axis (-1) must be axes of the input", "(4,)")
    end)
  end)

  it("rejects bad arguments", function()
    assert.are.equal("TypeError: For 'LayerNorm', the type of 'normalized_shape' must be a list of integers, but got "
      .. "string.", err(function() local l = nn.LayerNorm("4") return l end))
    H.expect_error(function() nn.LayerNorm({ 0 }) end, "ValueError", "'normalized_shape' must be a positive integer")
    H.expect_error(function() nn.LayerNorm({ 4 }, 0) end, "ValueError", "'begin_norm_axis' is 1-based")
    H.expect_error(function() nn.LayerNorm({ 4 }, -1, 1.5) end, "TypeError", "'begin_params_axis'")
    H.expect_error(function() nn.LayerNorm({ 4 }, { epsilon = 0 }) end, "ValueError", "'epsilon' must be greater")
    H.expect_error(function() nn.LayerNorm({ 4 }, { gamma_init = cell.ones({ 3 }) }) end, "ValueError",
      "'gamma_init' shape must be (4,), but got (3,)")
    H.expect_error(function() nn.LayerNorm({ 4 }, { eps = 1 }) end, "TypeError", "unexpected keyword argument 'eps'")
  end)
end)
