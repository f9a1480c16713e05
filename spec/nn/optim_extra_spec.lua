-- optim_extra_spec.lua - cell.nn's optimizers of issue 14 (RMSProp, Adagrad,
-- Adadelta, AdaMax, Lamb, LARS, AdamWeightDecay, FTRL, ASGD, Rprop, Lion,
-- Adam's use_amsgrad and use_nesterov) and their fused kernel
-- (cell.ops_internal.optim_step): six-step trajectories with weight decay
-- against torch.optim or the documented formulas
-- (spec/fixtures/gen_optim14.py), float32 too, state names, resumption from
-- state_dict, groups, loss_scale, schedules, and bad arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local OI = require "cell.ops_internal"
local FX = require "fixtures.optim14_fixtures"

local function params(dtype)
  dtype = dtype or cell.float64
  return cell.Parameter(cell.tensor(FX.init.w, dtype), "w"), cell.Parameter(cell.tensor(FX.init.b, dtype), "b")
end

local function grads_at(t, dtype)
  dtype = dtype or cell.float64
  return { cell.tensor(FX.grads[t].w, dtype), cell.tensor(FX.grads[t].b, dtype) }
end

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

local function make(c, ps)
  if c.cls == "LARS" then
    local o = copy(c.opts)
    return nn.LARS(nn.Momentum(ps, o.learning_rate, o.momentum, o.weight_decay))
  end
  return nn[c.cls](ps, copy(c.opts))
end

local function close(actual, expected, tol, what)
  local a = actual:astype(cell.float64):totable()
  local function walk(x, y, path)
    if type(y) == "table" then
      for i = 1, #y do walk(x[i], y[i], path .. "[" .. i .. "]") end
    else
      local d = math.abs(x - y)
      if d > tol * (1 + math.abs(y)) then
        error(("%s%s: got %.17g, expected %.17g"):format(what, path, x, y), 0)
      end
    end
  end
  walk(a, expected, "")
end

local names = {}
for name in pairs(FX.cases) do names[#names + 1] = name end
table.sort(names)

describe("optimizers of issue 14: trajectories", function()
  for _, name in ipairs(names) do
    local c = FX.cases[name]
    it(name .. " in float64 follows the reference for six steps", function()
      local w, b = params()
      local opt = make(c, { w, b })
      for t = 1, #FX.grads do
        assert.is_true(opt(grads_at(t)))
        close(w, c.after[t].w, c.tol, name .. " step " .. t .. " w")
        close(b, c.after[t].b, c.tol, name .. " step " .. t .. " b")
      end
    end)
    it(name .. " in float32 stays near the reference", function()
      local w, b = params(cell.float32)
      local opt = make(c, { w, b })
      for t = 1, #FX.grads do opt(grads_at(t, cell.float32)) end
      close(w, c.after[#FX.grads].w, 2e-4, name .. " w")
    end)
    it(name .. " resumes exactly from its state_dict", function()
      local w, b = params()
      local opt = make(c, { w, b })
      for t = 1, 3 do opt(grads_at(t)) end
      local sd = opt:state_dict()
      local w2, b2 = params()
      local opt2 = make(c, { w2, b2 })
      opt2:load_state_dict(sd)
      for t = 4, #FX.grads do opt2(grads_at(t)) end
      close(w2, c.after[#FX.grads].w, c.tol, name .. " resumed w")
    end)
  end
end)

describe("optimizers of issue 14: state, options", function()
  local function keys(opt)
    local out = {}
    for _, k in ipairs(opt:state_dict():keys()) do
      if k ~= "w" and k ~= "b" then out[#out + 1] = k end
    end
    table.sort(out)
    return table.concat(out, " ")
  end
  it("name their state as MindSpore does", function()
    local cases = {
      { nn.RMSProp, {}, "global_step learning_rate mean_square.b mean_square.w moment.b moment.w" },
      { nn.RMSProp, { centered = true }, "global_step learning_rate mean_grad.b mean_grad.w mean_square.b mean_square.w moment.b moment.w" },
      { nn.Adagrad, {}, "accum.b accum.w global_step learning_rate" },
      { nn.Adadelta, {}, "accum.b accum.w accum_update.b accum_update.w global_step learning_rate" },
      { nn.AdaMax, {}, "global_step learning_rate moment1.b moment1.w moment2.b moment2.w" },
      { nn.Lamb, { learning_rate = 0.1 }, "global_step lamb_m.b lamb_m.w lamb_v.b lamb_v.w learning_rate" },
      { nn.AdamWeightDecay, {}, "adam_m.b adam_m.w adam_v.b adam_v.w global_step learning_rate" },
      { nn.FTRL, {}, "global_step learning_rate linear.b linear.w moments.b moments.w" },
      { nn.ASGD, {}, "ax_.b ax_.w eta_b eta_w global_step learning_rate mu_b mu_w" },
      { nn.Rprop, {}, "global_step learning_rate prev.b prev.w step_size.b step_size.w" },
      { nn.Lion, {}, "exp_avg.b exp_avg.w global_step learning_rate" },
      { nn.Adam, { use_amsgrad = true }, "global_step learning_rate moment1.b moment1.w moment2.b moment2.w vhat.b vhat.w" },
    }
    for _, c in ipairs(cases) do
      local w, b = params()
      local got = keys(c[1]({ w, b }, c[2]))
      assert.are.equal(c[3], got)
    end
  end)
  it("use MindSpore's defaults", function()
    local w, b = params()
    assert.are.equal("RMSProp<learning_rate=0.1, decay=0.9, momentum=0, epsilon=1e-10, centered=false, weight_decay=0>",
      "RMSProp<" .. nn.RMSProp({ w, b }):extend_repr() .. ">")
    assert.are.equal("learning_rate=0.001, accum=0.1, update_slots=true, weight_decay=0", nn.Adagrad({ w, b }):extend_repr())
    assert.are.equal("learning_rate=0.5, rho=0.9, epsilon=1e-06, weight_decay=0", nn.Adadelta({ w, b }, 0.5):extend_repr())
    assert.are.equal("learning_rate=0.001, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0", nn.AdaMax({ w, b }):extend_repr())
    assert.are.equal("learning_rate=0.0001, beta1=0.9, beta2=0.99, weight_decay=0", nn.Lion({ w, b }):extend_repr())
    assert.are.equal("learning_rate=0.1, lambd=0.0001, alpha=0.75, t0=1000000, weight_decay=0",
      (nn.ASGD({ w, b }):extend_repr():gsub("1e%+06", "1000000"):gsub("1000000%.0", "1000000")))
    assert.are.equal(nn.AdaMax, nn.Adamax)
  end)
  it("Adagrad and FTRL start their accumulators at accum / initial_accum", function()
    local w, b = params()
    local opt = nn.Adagrad({ w, b }, { accum = 0.25 })
    assert.are.equal(0.25, opt:state_dict()["accum.w"]:totable()[1][1])
    local f = nn.FTRL({ w, b }, 0.5)
    assert.are.equal(0.5, f:state_dict()["moments.b"]:totable()[1])
  end)
  it("take MindSpore's positional orders", function()
    local w, b = params()
    local c = FX.cases.ftrl
    -- FTRL(params, initial_accum, learning_rate, lr_power, l1, l2, use_locking, loss_scale, weight_decay)
    local opt = nn.FTRL({ w, b }, 0.1, 0.1, -0.5, 0.01, 0.02, false, 1.0, 0.01)
    for t = 1, #FX.grads do opt(grads_at(t)) end
    close(w, c.after[#FX.grads].w, c.tol, "ftrl positional")
  end)
  it("divide the gradients by loss_scale", function()
    local c = FX.cases.rmsprop
    local w, b = params()
    local o = copy(c.opts)
    o.loss_scale = 8
    local opt = nn.RMSProp({ w, b }, o)
    for t = 1, #FX.grads do
      local g = grads_at(t)
      opt({ g[1] * 8, g[2] * 8 })
    end
    close(w, c.after[#FX.grads].w, c.tol, "loss_scale")
  end)
  it("apply group rates and group weight decay", function()
    local c = FX.cases.adadelta
    local w, b = params()
    local w2 = cell.Parameter(cell.tensor(FX.init.w, cell.float64), "w2")
    local opt = nn.Adadelta({ { params = { w, b }, weight_decay = 0.01 }, { params = { w2 }, lr = 0.0, weight_decay = 0 } },
      { learning_rate = 1.0, rho = 0.9, epsilon = 1e-6 })
    for t = 1, #FX.grads do
      local g = grads_at(t)
      opt({ g[1], g[2], g[1] })
    end
    close(w, c.after[#FX.grads].w, c.tol, "group w")
    close(w2, FX.init.w, 0, "frozen group")
  end)
  it("take a per-step list and a schedule cell as", function()
    local w, b = params()
    local opt = nn.Lion({ w, b }, { learning_rate = { 0.01, 0.01, 0.01, 0.01, 0.01, 0.01 }, weight_decay = 0.01 })
    for t = 1, #FX.grads do opt(grads_at(t)) end
    close(w, FX.cases.lion.after[#FX.grads].w, 1e-9, "list")
    local w2, b2 = params()
    local opt2 = nn.Lion({ w2, b2 }, { learning_rate = nn.ExponentialDecayLR(0.01, 1.0, 1), weight_decay = 0.01 })
    for t = 1, #FX.grads do opt2(grads_at(t)) end
    close(w2, FX.cases.lion.after[#FX.grads].w, 1e-9, "schedule")
  end)
  it("LARS leaves parameters its filter rejects to the inner optimizer without decay", function()
    local w, b = params()
    local opt = nn.LARS(nn.SGD({ w, b }, 0.1, 0, 0, 0.5), { lars_filter = function(p) return p.name ~= "b" end })
    opt(grads_at(1))
    local expect = {}
    for i, v in ipairs(FX.init.b) do expect[i] = v - 0.1 * FX.grads[1].b[i] end
    close(b, expect, 1e-12, "unfiltered b")
    assert.are.same({ 0.5, 0.5 }, opt:get_weight_decay())
    assert.are.equal(1, opt:get_step())
  end)
end)

describe("optimizers of issue 14: errors", function()
  local w, b = params()
  local cases = {
    { function() nn.RMSProp({ w }, { epsilon = 0 }) end, "ValueError: For 'RMSProp', the argument 'epsilon' must be greater than 0.0, but got 0." },
    { function() nn.RMSProp({ w }, { centered = 1 }) end, "TypeError: For 'RMSProp', the argument 'centered' must be a boolean, but got number." },
    { function() nn.Adagrad({ w }, { accum = -1 }) end, "ValueError: For 'Adagrad', the argument 'accum' must be at least 0.0, but got -1." },
    { function() nn.Adadelta({ w }, { rho = 2 }) end, "ValueError: For 'Adadelta', the argument 'rho' must be in range of [0.0, 1.0], but got 2." },
    { function() nn.AdaMax({ w }, { beta1 = 1 }) end, "ValueError: For 'AdaMax', the argument 'beta1' must be in range of (0.0, 1.0), but got 1." },
    { function() nn.Lamb({ w }) end, "TypeError: Lamb() missing required argument 'learning_rate'." },
    { function() nn.FTRL({ w }, { lr_power = 0.5 }) end, "ValueError: For 'FTRL', the argument 'lr_power' must be at most 0.0, but got 0.5." },
    { function() nn.Rprop({ w }, { etas = { 2, 3 } }) end, "ValueError: For 'Rprop', the argument 'etas' must satisfy 0 < etaminus < 1 < etaplus, but got (2, 3)." },
    { function() nn.Rprop({ w }, { step_sizes = 3 }) end, "TypeError: For 'Rprop', the argument 'step_sizes' must be a list of two numbers." },
    { function() nn.Lion({ w }, { beta2 = -1 }) end, "ValueError: For 'Lion', the argument 'beta2' must be in range of (0.0, 1.0), but got -1." },
    { function() nn.ASGD({ w }, { loss_scale = 2 }) end, "TypeError: ASGD() got an unexpected keyword argument 'loss_scale'" },
    { function() nn.LARS(5) end, "TypeError: For 'LARS', the argument 'optimizer' must be an Optimizer, but got number." },
    { function() nn.LARS(nn.SGD({ b }), { use_clip = 1 }) end, "TypeError: For 'LARS', the argument 'use_clip'" },
    { function() nn.LARS(nn.SGD({ b }), { lars_filter = 3 }) end, "TypeError: For 'LARS', the argument 'lars_filter' must be a function(param), but got number." },
    { function() nn.Lion({ w })({ cell.ones({ 2 }, cell.float64) }) end, "ValueError: For 'Lion', parameter 'w' (gradients[1]): the gradient has shape [2] but the parameter has shape [3, 4]" },
    { function() nn.LARS(nn.SGD({ b }))("x") end, "TypeError: For 'LARS', the argument 'gradients' must be a list of Tensors" },
    { function() OI.optim_step(w, w, nil, nil, nil, 99, 0.1, 0, 1, 0, 0, 0, 0, 1, 0) end, "ValueError: optim_step: unknown kind 99" },
    { function() OI.optim_step(w, w, nil, nil, nil, 1, 0.1, 0, 1, 0.9, 0, 1e-8, 0, 1, 0) end, "ValueError: rmsprop_step: the state s0 is NULL" },
    { function() OI.optim_step(w, w, w, w, nil, 1, 0.1, 0, 1, 0.9, 0, 1e-8, 0, 1, 0) end, "ValueError: rmsprop_step: the state s0 shares storage with the parameter" },
    { function() local s = cell.zeros({ 3, 4 }, cell.float64); OI.optim_step(w, w, s, s, nil, 3, 0.1, 0, 1, 0.9, 1e-6, 0, 0, 1, 0) end, "ValueError: adadelta_step: states s0 and s1 share storage" },
    { function() OI.optim_step(w, w, cell.zeros({ 3, 4 }, cell.float64), nil, nil, 13, 0.1, 0, 1, 0.9, 0.99, 0, 0, 0, 0) end, "ValueError: lion_step: step must be >= 1" },
    { function() OI.optim_step(w, w, cell.zeros({ 3, 4 }, cell.float64), cell.zeros({ 3, 4 }, cell.float64), nil, 8, 0, 0, 1, 0, 0, -0.5, 0, 1, 0) end, "ValueError: ftrl_step: lr must be > 0, got 0" },
    { function() OI.optim_step(w, w, cell.zeros({ 3, 4 }, cell.float64), cell.zeros({ 3, 4 }, cell.float64), nil, 4, 0.1, 0, 1, 1.5, 0.9, 0, 0, 1, 0) end, "ValueError: adamax_step: beta1 must be in [0, 1), got 1.5" },
    { function() OI.optim_step(cell.ones({ 2 }, cell.int32), cell.ones({ 2 }, cell.int32), nil, nil, nil, 13, 0.1, 0, 1, 0.9, 0.9, 0, 0, 1, 0) end, "TypeError: lion_step: the parameter is a Int32 tensor" },
  }
  for i, c in ipairs(cases) do
    it("raises " .. c[2]:match("^(%a+)") .. " (" .. i .. ")", function()
      local ok, e = pcall(c[1])
      assert.is_false(ok)
      e = tostring(e)
      assert.is_truthy(e:find(c[2], 1, true), "expected '" .. c[2] .. "', got '" .. e .. "'")
    end)
  end
end)
