--- cell.nn.Adam and cell.nn.AdamW: adaptive moment estimation with bias
-- correction, as torch.optim.Adam and torch.optim.AdamW compute it (eps
-- added after the bias correction). Adam's weight_decay is L2 (added to the
-- gradient); AdamW's is decoupled (param *= 1 - lr * weight_decay).
-- State: "moment1.<name>", "moment2.<name>" per parameter, and
-- "global_step" (the bias corrections' step).
--
--     nn.Adam(params [, learning_rate = 1e-3, beta1 = 0.9, beta2 = 0.999,
--             eps = 1e-8, weight_decay = 0, loss_scale = 1])
--     nn.AdamW(params [, learning_rate = 1e-3, beta1 = 0.9, beta2 = 0.999,
--              eps = 1e-8, weight_decay = 1e-2, loss_scale = 1])
--     nn.Adam(params, {learning_rate = 1e-2, weight_decay = 1e-4})
--
-- Adam also takes MindSpore's full positional order, recognised by a
-- boolean after eps: (params, learning_rate, beta1, beta2, eps, use_locking,
-- use_nesterov, weight_decay, loss_scale, use_amsgrad); use_locking is
-- accepted and ignored. use_amsgrad keeps the running maximum of moment2 in
-- "vhat.<name>" (torch.optim.Adam(amsgrad=True)); use_nesterov takes
-- beta1 * moment1 + (1 - beta1) * g as the numerator (MindSpore's ApplyAdam).
-- Without groups, weight decay skips "beta"/"gamma" parameters.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local O = require "cell.nn.optim.optimizer"
local args_util = require "cell.util.args"

local K = O.K
local adam_steps = require("cell.ops_internal").adam_steps
local optim_step = require("cell.ops_internal").optim_step

local NAMES = { "learning_rate", "beta1", "beta2", "eps", "weight_decay", "loss_scale" }
local MS_NAMES = { "learning_rate", "beta1", "beta2", "eps", "use_locking", "use_nesterov", "weight_decay",
  "loss_scale", "use_amsgrad" }
local ALIASES = { lr = "learning_rate" }

--- The shared constructor of Adam (decoupled false) and AdamW (true).
local function build(self, cls, decoupled, ...)
  local names = NAMES
  if cls == "Adam" then
    local n = select("#", ...)
    local last = n > 0 and (select(n, ...))
    local options = args_util.is_options(last) and (n > 1 or last.params ~= nil)
    -- options may use every MindSpore name; positionally, a boolean after eps means MindSpore's order
    if options or type((select(6, ...))) == "boolean" then names = MS_NAMES end
  end
  local a = O.arguments(cls, names, ALIASES, ...)
  if a.learning_rate == nil then a.learning_rate = 1e-3 end
  local beta1 = a.beta1 == nil and 0.9 or O.check_unit_open(cls, "beta1", a.beta1)
  local beta2 = a.beta2 == nil and 0.999 or O.check_unit_open(cls, "beta2", a.beta2)
  local eps = a.eps == nil and 1e-8 or O.check_positive(cls, "eps", a.eps)
  if a.weight_decay == nil and decoupled then a.weight_decay = 1e-2 end
  for _, flag in ipairs { "use_locking", "use_nesterov", "use_amsgrad" } do
    if a[flag] ~= nil then O.check_bool(cls, flag, a[flag]) end
  end
  if a.use_nesterov and a.use_amsgrad then
    O.fail("ValueError: For '%s', use_nesterov and use_amsgrad can not both be true.", cls)
  end
  local k = O.setup(self, cls, a, { decay_filter = true })
  k.beta1, k.beta2, k.eps, k.decoupled = beta1, beta2, eps, decoupled
  k.repr = { { "beta1", "beta1" }, { "beta2", "beta2" }, { "eps", "eps" }, { "weight_decay", "weight_decay" } }
  k.moment1 = O.state(self, k, "moment1")
  k.moment2 = O.state(self, k, "moment2")
  -- amsgrad and nesterov run the optim_step kernel (optim_extra.c)
  if a.use_amsgrad then
    k.use_amsgrad, k.vhat = true, O.state(self, k, "vhat")
    k.kind = require("cell.nn.optim.extra").KIND.AMSGRAD
  elseif a.use_nesterov then
    k.use_nesterov, k.kind = true, require("cell.nn.optim.extra").KIND.NESTEROV
  end
end

local function apply(self, grads, t)
  local k = rawget(self, K)
  local params, m1, m2, wd, spec_of, now, labels = k.params, k.moment1, k.moment2, k.wd, k.spec_of, k.lr_now,
      k.labels
  local b1, b2, eps, decoupled, gs = k.beta1, k.beta2, k.eps, k.decoupled, k.grad_scale
  if k.kind then
    local vhat, flags = k.vhat, decoupled and 2 or 0
    for i = 1, k.n do
      optim_step(params[i], grads[i], m1[i], m2[i], vhat and vhat[i], k.kind, now[spec_of[i]], wd[i], gs, b1, b2, eps,
        0, t, flags, labels[i])
    end
    return
  end
  -- one call for all: the small parameters' steps share the threads
  adam_steps(params, grads, m1, m2, now, spec_of, wd, labels, k.n, b1, b2, eps, t, decoupled, gs)
end

local Adam = O.Optimizer:extend("Adam")
function Adam:init(...) O.guard(build, self, "Adam", false, ...) end
Adam._apply = apply

local AdamW = O.Optimizer:extend("AdamW")
function AdamW:init(...) O.guard(build, self, "AdamW", true, ...) end
AdamW._apply = apply

return { Adam = Adam, AdamW = AdamW }
