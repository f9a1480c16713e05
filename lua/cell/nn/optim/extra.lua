--- cell.nn's other optimizers, with MindSpore's names, argument orders,
-- defaults and state names: RMSProp, Adagrad, Adadelta, AdaMax (also
-- Adamax), Lamb, AdamWeightDecay, FTRL, ASGD, Rprop, and Lion (which
-- MindSpore lacks: the PyTorch community's, weight decay decoupled). Each
-- step runs one fused C kernel per parameter (cell.ops_internal.optim_step,
-- include/cell_optim.h lists the formulas). Parameter groups, weight_decay
-- (skipping "beta"/"gamma" parameters without groups), loss_scale where
-- MindSpore takes one, and every learning-rate form work as for nn.Adam.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local O = require "cell.nn.optim.optimizer"
local core = require "cell.core"

local K = O.K
local parameter = require "cell.parameter"
local Parameter, ParameterTuple = parameter.Parameter, parameter.ParameterTuple
local optim_step = require("cell.ops_internal").optim_step

-- cell_optim_kind (include/cell_optim.h)
local KIND = { RMSPROP = 1, ADAGRAD = 2, ADADELTA = 3, ADAMAX = 4, LAMB = 5, LARS = 6, ADAMWD = 7, FTRL = 8,
  ASGD = 9, RPROP = 10, AMSGRAD = 11, NESTEROV = 12, LION = 13 }

local ALIASES = { lr = "learning_rate" }

local function num(cls, a, name, default, check)
  local v = a[name]
  if v == nil then return default end
  return check(cls, name, v)
end

local function unit_closed(cls, name, v)
  O.check_number(cls, name, v)
  if v < 0 or v > 1 then
    O.fail("ValueError: For '%s', the argument '%s' must be in range of [0.0, 1.0], but got %s.", cls, name, tostring(v))
  end
  return v
end

local function pair(cls, name, v, default)
  if v == nil then return default[1], default[2] end
  if type(v) ~= "table" or #v ~= 2 or type(v[1]) ~= "number" or type(v[2]) ~= "number" then
    O.fail("TypeError: For '%s', the argument '%s' must be a list of two numbers.", cls, name)
  end
  return O.check_number(cls, name .. "[1]", v[1]), O.check_number(cls, name .. "[2]", v[2])
end

--- Each optimizer: its argument order (MindSpore's), the checked
-- hyper-parameters as k.h = {h1..h4}, k.flags, and its state prefixes.
local DEFS = {}

DEFS.RMSProp = {
  names = { "learning_rate", "decay", "momentum", "epsilon", "use_locking", "centered", "loss_scale", "weight_decay" },
  lr = 0.1, kind = KIND.RMSPROP,
  parse = function(cls, a, k)
    k.decay = num(cls, a, "decay", 0.9, O.check_non_negative)
    k.momentum = num(cls, a, "momentum", 0, O.check_non_negative)
    k.epsilon = num(cls, a, "epsilon", 1e-10, O.check_positive)
    if a.use_locking ~= nil then O.check_bool(cls, "use_locking", a.use_locking) end
    k.centered = a.centered ~= nil and O.check_bool(cls, "centered", a.centered) or false
    k.h = { k.decay, k.momentum, k.epsilon, 0 }
    k.flags = k.centered and 1 or 0
    k.repr = { { "decay", "decay" }, { "momentum", "momentum" }, { "epsilon", "epsilon" }, { "centered", "centered" },
      { "weight_decay", "weight_decay" } }
    return k.centered and { "mean_square", "moment", "mean_grad" } or { "mean_square", "moment" }
  end,
}

DEFS.Adagrad = {
  names = { "accum", "learning_rate", "update_slots", "loss_scale", "weight_decay" },
  lr = 0.001, kind = KIND.ADAGRAD,
  parse = function(cls, a, k)
    k.accum0 = num(cls, a, "accum", 0.1, O.check_non_negative)
    k.update_slots = true
    if a.update_slots ~= nil then k.update_slots = O.check_bool(cls, "update_slots", a.update_slots) end
    k.h, k.flags = { 0, 0, 0, 0 }, k.update_slots and 1 or 0
    k.repr = { { "accum", "accum0" }, { "update_slots", "update_slots" }, { "weight_decay", "weight_decay" } }
    return { "accum" }, { accum = k.accum0 }
  end,
}

DEFS.Adadelta = {
  names = { "learning_rate", "rho", "epsilon", "loss_scale", "weight_decay" },
  lr = 1.0, kind = KIND.ADADELTA,
  parse = function(cls, a, k)
    k.rho = num(cls, a, "rho", 0.9, unit_closed)
    k.epsilon = num(cls, a, "epsilon", 1e-6, O.check_non_negative)
    k.h, k.flags = { k.rho, k.epsilon, 0, 0 }, 0
    k.repr = { { "rho", "rho" }, { "epsilon", "epsilon" }, { "weight_decay", "weight_decay" } }
    return { "accum", "accum_update" }
  end,
}

local function betas(cls, a, k, d1, d2, deps)
  k.beta1 = num(cls, a, "beta1", d1, O.check_unit_open)
  k.beta2 = num(cls, a, "beta2", d2, O.check_unit_open)
  if deps then k.eps = num(cls, a, "eps", deps, O.check_positive) end
  k.h, k.flags = { k.beta1, k.beta2, k.eps or 0, 0 }, 0
  k.repr = { { "beta1", "beta1" }, { "beta2", "beta2" } }
  if deps then k.repr[3] = { "eps", "eps" } end
  k.repr[#k.repr + 1] = { "weight_decay", "weight_decay" }
end

DEFS.AdaMax = {
  names = { "learning_rate", "beta1", "beta2", "eps", "weight_decay", "loss_scale" },
  lr = 0.001, kind = KIND.ADAMAX,
  parse = function(cls, a, k)
    betas(cls, a, k, 0.9, 0.999, 1e-8)
    return { "moment1", "moment2" }
  end,
}

DEFS.Lamb = {
  names = { "learning_rate", "beta1", "beta2", "eps", "weight_decay" },
  required = true, kind = KIND.LAMB,
  parse = function(cls, a, k)
    betas(cls, a, k, 0.9, 0.999, 1e-6)
    return { "lamb_m", "lamb_v" }
  end,
}

DEFS.AdamWeightDecay = {
  names = { "learning_rate", "beta1", "beta2", "eps", "weight_decay" },
  lr = 1e-3, kind = KIND.ADAMWD,
  parse = function(cls, a, k)
    betas(cls, a, k, 0.9, 0.999, 1e-6)
    return { "adam_m", "adam_v" }
  end,
}

DEFS.FTRL = {
  names = { "initial_accum", "learning_rate", "lr_power", "l1", "l2", "use_locking", "loss_scale", "weight_decay" },
  lr = 0.001, kind = KIND.FTRL,
  parse = function(cls, a, k)
    k.initial_accum = num(cls, a, "initial_accum", 0.1, O.check_non_negative)
    k.lr_power = num(cls, a, "lr_power", -0.5, O.check_number)
    if k.lr_power > 0 then
      O.fail("ValueError: For '%s', the argument 'lr_power' must be at most 0.0, but got %s.", cls, tostring(k.lr_power))
    end
    k.l1 = num(cls, a, "l1", 0, O.check_non_negative)
    k.l2 = num(cls, a, "l2", 0, O.check_non_negative)
    if a.use_locking ~= nil then O.check_bool(cls, "use_locking", a.use_locking) end
    k.h, k.flags = { k.l1, k.l2, k.lr_power, 0 }, 0
    k.repr = { { "initial_accum", "initial_accum" }, { "lr_power", "lr_power" }, { "l1", "l1" }, { "l2", "l2" },
      { "weight_decay", "weight_decay" } }
    return { "moments", "linear" }, { moments = k.initial_accum }
  end,
}

DEFS.ASGD = {
  names = { "learning_rate", "lambd", "alpha", "t0", "weight_decay" },
  lr = 0.1, kind = KIND.ASGD,
  parse = function(cls, a, k)
    k.lambd = num(cls, a, "lambd", 1e-4, O.check_non_negative)
    k.alpha = num(cls, a, "alpha", 0.75, O.check_number)
    k.t0 = num(cls, a, "t0", 1e6, O.check_non_negative)
    k.h, k.flags = { k.lambd, k.alpha, k.t0, 0 }, 0
    k.repr = { { "lambd", "lambd" }, { "alpha", "alpha" }, { "t0", "t0" }, { "weight_decay", "weight_decay" } }
    return { "ax_" }
  end,
  -- MindSpore's per-parameter float32 scalars mu_<name> (1) and eta_<name>
  -- (0; the rate at step 1), as PyTorch's state mu and eta
  extra_state = function(self, k)
    local mu, eta = {}, {}
    for i, p in ipairs(k.params) do
      mu[i] = Parameter(core.ones({}, core.float32), "mu_" .. p.name, false)
      eta[i] = Parameter(core.zeros({}, core.float32), "eta_" .. p.name, false)
    end
    self.mu, self.eta = ParameterTuple(mu), ParameterTuple(eta)
    k.mu, k.eta = mu, eta
  end,
  -- eta and mu come from the state (the C step takes them with flags 1),
  -- then advance: eta = lr / (1 + lambd*lr*t)^alpha, mu = 1 / max(1, t - t0)
  apply = function(self, grads, t)
    local k = rawget(self, K)
    local item, fill_ = core.Tensor.item, core.Tensor.fill_
    local lambd, alpha, t0 = k.lambd, k.alpha, k.t0
    local ax = k.states[1]
    for i = 1, k.n do
      local lr = k.lr_now[k.spec_of[i]]
      if t == 1 then fill_(k.eta[i], lr) end
      optim_step(k.params[i], grads[i], ax[i], nil, nil, KIND.ASGD, lr, k.wd[i], k.grad_scale, lambd,
        item(k.eta[i]), item(k.mu[i]), 0, t, 1, k.labels[i])
      fill_(k.eta[i], lr / (1 + lambd * lr * t) ^ alpha)
      fill_(k.mu[i], 1 / math.max(1, t - t0))
    end
  end,
}

DEFS.Rprop = {
  names = { "learning_rate", "etas", "step_sizes", "weight_decay" },
  lr = 0.1, kind = KIND.RPROP,
  parse = function(cls, a, k)
    local em, ep = pair(cls, "etas", a.etas, { 0.5, 1.2 })
    if not (0 < em and em < 1 and 1 < ep) then
      O.fail("ValueError: For '%s', the argument 'etas' must satisfy 0 < etaminus < 1 < etaplus, but got (%s, %s).",
        cls, tostring(em), tostring(ep))
    end
    local smin, smax = pair(cls, "step_sizes", a.step_sizes, { 1e-6, 50 })
    if not (0 <= smin and smin <= smax) then
      O.fail("ValueError: For '%s', the argument 'step_sizes' must satisfy 0 <= min_step <= max_step, but got (%s, %s).",
        cls, tostring(smin), tostring(smax))
    end
    k.etas = ("(%s, %s)"):format(em, ep)
    k.step_sizes = ("(%s, %s)"):format(smin, smax)
    k.h, k.flags = { em, ep, smin, smax }, 0
    k.repr = { { "etas", "etas" }, { "step_sizes", "step_sizes" }, { "weight_decay", "weight_decay" } }
    return { "prev", "step_size" }
  end,
}

DEFS.Lion = {
  names = { "learning_rate", "beta1", "beta2", "weight_decay", "loss_scale" },
  lr = 1e-4, kind = KIND.LION,
  parse = function(cls, a, k)
    betas(cls, a, k, 0.9, 0.99, nil)
    return { "exp_avg" }
  end,
}

local function build(self, cls, ...)
  local d = DEFS[cls]
  local a = O.arguments(cls, d.names, ALIASES, ...)
  if a.learning_rate == nil then
    if d.required then O.fail("TypeError: %s() missing required argument 'learning_rate'.", cls) end
    a.learning_rate = d.lr
  end
  local hk = {}
  local prefixes, fills = d.parse(cls, a, hk)
  local k = O.setup(self, cls, a, { decay_filter = true })
  for key, v in pairs(hk) do k[key] = v end
  k.kind = d.kind
  k.states = {}
  for j, prefix in ipairs(prefixes) do
    local list = O.state(self, k, prefix)
    local fill = fills and fills[prefix]
    if fill and fill ~= 0 then
      for _, s in ipairs(list) do s:fill_(fill) end
    end
    k.states[j] = list
  end
  if d.extra_state then d.extra_state(self, k) end
end

local function apply(self, grads, t)
  local k = rawget(self, K)
  local params, wd, spec_of, now, labels, st = k.params, k.wd, k.spec_of, k.lr_now, k.labels, k.states
  local s1, s2, s3 = st[1], st[2], st[3]
  local h, kind, flags, gs = k.h, k.kind, k.flags, k.grad_scale
  for i = 1, k.n do
    optim_step(params[i], grads[i], s1 and s1[i], s2 and s2[i], s3 and s3[i], kind, now[spec_of[i]], wd[i], gs,
      h[1], h[2], h[3], h[4], t, flags, labels[i])
  end
end

local M = { KIND = KIND }
for cls in pairs(DEFS) do
  local C = O.Optimizer:extend(cls)
  local name = cls
  function C:init(...) O.guard(build, self, name, ...) end
  C._apply = DEFS[cls].apply or apply
  M[cls] = C
end
M.Adamax = M.AdaMax

-- LARS -------------------------------------------------------------------------

--- nn.LARS(optimizer [, epsilon = 1e-5, coefficient = 0.001, use_clip =
-- false, lars_filter]): scales each filtered parameter's gradient by its
-- layer's trust ratio before `optimizer` steps; takes over its weight decay.
-- use_clip clips the ratio to min(ratio / learning_rate, 1), MindSpore's
-- LARSUpdate clip.
local LARS = O.Optimizer:extend("LARS")
local LARS_NAMES = { "optimizer", "epsilon", "coefficient", "use_clip", "lars_filter" }
local args_util = require "cell.util.args"

local function default_filter(p)
  return not p.name:find("LayerNorm", 1, true) and not p.name:find("bias", 1, true)
end

local function build_lars(self, ...)
  local cls = "LARS"
  local a = args_util.named(cls, LARS_NAMES, 0, select("#", ...), ...)
  local opt = a.optimizer
  local ik = type(opt) == "table" and rawget(opt, K)
  if not ik then
    O.fail("TypeError: For 'LARS', the argument 'optimizer' must be an Optimizer, but got %s.",
      require("cell.util.types").type_name(opt))
  end
  if ik.lars then O.fail("ValueError: For 'LARS', the optimizer is already wrapped by a LARS.") end
  local eps = a.epsilon == nil and 1e-5 or O.check_non_negative(cls, "epsilon", a.epsilon)
  local coef = a.coefficient == nil and 0.001 or O.check_non_negative(cls, "coefficient", a.coefficient)
  local clip = a.use_clip ~= nil and O.check_bool(cls, "use_clip", a.use_clip) or false
  local filter = a.lars_filter or default_filter
  if not require("cell.util.types").is_callable(filter) then
    O.fail("TypeError: For 'LARS', the argument 'lars_filter' must be a function(param), but got %s.",
      require("cell.util.types").type_name(filter))
  end
  require("cell.nn.cell").init(self, { auto_prefix = false })
  local k = { cls = cls, inner = opt, ik = ik, epsilon = eps, coefficient = coef, use_clip = clip, wd = {}, flag = {},
    scratch = {} }
  for i, p in ipairs(ik.params) do
    k.wd[i] = ik.wd[i]
    ik.wd[i] = 0
    k.flag[i] = filter(p) and true or false
    if k.flag[i] then k.scratch[i] = core.zeros(p.shape, p.dtype) end
  end
  ik.lars = true
  k.n, k.params, k.labels, k.global_step = ik.n, ik.params, ik.labels, ik.global_step
  k.repr = { { "epsilon", "epsilon" }, { "coefficient", "coefficient" }, { "use_clip", "use_clip" } }
  k.default_lr = ik.default_lr
  rawset(self, K, k)
  self.opt = opt
end

function LARS:init(...) O.guard(build_lars, self, ...) end

local check_grads = require("cell.ops_internal").check_grads
local rethrow = require("cell.errors").rethrow

function LARS:construct(gradients)
  local k = rawget(self, K)
  if type(gradients) ~= "table" then
    require("cell.errors").raise(("TypeError: For 'LARS', the argument 'gradients' must be a list of Tensors "
      .. "(one per parameter), but got %s."):format(require("cell.util.types").type_name(gradients)))
  end
  if #gradients ~= k.n then
    require("cell.errors").raise(("ValueError: For 'LARS', got %d gradients for %d parameters."):format(#gradients, k.n))
  end
  gradients = O.grads_in(k.ik, gradients)
  local ok, err = pcall(check_grads, k.params, gradients, k.labels, k.n)
  if not ok then rethrow(err) end
  local out, gs, ik = {}, k.ik.grad_scale, k.ik
  -- use_clip: the trust ratio is min(trust / lr, 1), lr the wrapped
  -- optimizer's rate for the step it is about to take
  local t = k.use_clip and core.Tensor.item(ik.global_step) + 1
  for i = 1, k.n do
    if k.flag[i] then
      local lr = t and O.lr_at(ik.specs[ik.spec_of[i]], t) or 0
      ok, err = pcall(optim_step, k.params[i], gradients[i], k.scratch[i], nil, nil, KIND.LARS, lr, k.wd[i], gs,
        k.coefficient, k.epsilon, 0, 0, 1, k.use_clip and 1 or 0, k.labels[i])
      if not ok then rethrow(err) end
      out[i] = k.scratch[i]
    else
      out[i] = gradients[i]
    end
  end
  return k.inner(out)
end

function LARS:get_lr() return rawget(self, K).inner:get_lr() end
function LARS:get_step() return rawget(self, K).inner:get_step() end
function LARS:get_weight_decay()
  local k, out = rawget(self, K), {}
  for i = 1, k.n do out[i] = k.wd[i] end
  return out
end

M.LARS = LARS
return M
