--- cell.nn.Momentum: gradient descent with momentum (MindSpore's
-- nn.Momentum, its ApplyMomentum kernel):
--   moments = momentum * moments + gradient
--   param -= lr * (use_nesterov and gradient + momentum * moments or moments)
-- State: "moments.<name>" per parameter.
--
--     nn.Momentum(params, learning_rate, momentum [, weight_decay = 0,
--                 loss_scale = 1, use_nesterov = false])
--     nn.Momentum(params, {learning_rate = 0.1, momentum = 0.9, nesterov = true})
--
-- learning_rate and momentum are required. A boolean in the fifth
-- position is taken as use_nesterov, so (params, lr, momentum,
-- weight_decay, nesterov) works too; `nesterov` is an option alias.
-- Without groups, weight decay skips "beta"/"gamma" parameters.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local O = require "cell.nn.optim.optimizer"

local K = O.K
local sgd_step = require("cell.ops_internal").sgd_step

local Momentum = O.Optimizer:extend("Momentum")

local NAMES = { "learning_rate", "momentum", "weight_decay", "loss_scale", "use_nesterov" }
local ALIASES = { lr = "learning_rate", nesterov = "use_nesterov" }

local function build(self, ...)
  local cls = "Momentum"
  local a = O.arguments(cls, NAMES, ALIASES, ...)
  if a._positional and type(a.loss_scale) == "boolean" and a.use_nesterov == nil then
    a.use_nesterov, a.loss_scale = a.loss_scale, nil
  end
  if a.learning_rate == nil then O.fail("TypeError: Momentum() missing required argument 'learning_rate'.") end
  if a.momentum == nil then O.fail("TypeError: Momentum() missing required argument 'momentum'.") end
  local momentum = O.check_non_negative(cls, "momentum", a.momentum)
  local nesterov = false
  if a.use_nesterov ~= nil then nesterov = O.check_bool(cls, "use_nesterov", a.use_nesterov) end
  local k = O.setup(self, cls, a, { decay_filter = true })
  k.momentum, k.nesterov = momentum, nesterov
  k.repr = { { "momentum", "momentum" }, { "weight_decay", "weight_decay" }, { "use_nesterov", "nesterov" } }
  k.moments = O.state(self, k, "moments")
end

function Momentum:init(...) O.guard(build, self, ...) end

function Momentum:_apply(grads, t)
  local k = rawget(self, K)
  local params, moments, wd, spec_of, now, labels = k.params, k.moments, k.wd, k.spec_of, k.lr_now, k.labels
  local mom, nesterov, gs = k.momentum, k.nesterov, k.grad_scale
  local _ = t
  for i = 1, k.n do
    -- ApplyMomentum is the SGD kernel with no dampening; moments start at
    -- zero, so the first step needs no special case. With momentum 0 the
    -- moments are not touched (they stay zero).
    sgd_step(params[i], grads[i], moments[i], now[spec_of[i]], mom, 0, wd[i], nesterov, false, gs, labels[i])
  end
end

return { Momentum = Momentum }
