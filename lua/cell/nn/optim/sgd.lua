--- cell.nn.SGD: stochastic gradient descent with momentum, dampening,
-- Nesterov momentum and weight decay (MindSpore's nn.SGD, the same numbers
-- as torch.optim.SGD: the momentum buffer takes the first gradient as it
-- is). State: "accum.<name>" per parameter when momentum > 0.
--
--     nn.SGD(params [, learning_rate = 0.1, momentum = 0, dampening = 0,
--            weight_decay = 0, nesterov = false, loss_scale = 1])
--     nn.SGD(params, {learning_rate = 0.01, momentum = 0.9})
--
-- As MindSpore's SGD kernel does, weight_decay applies to every parameter
-- (no "beta"/"gamma" filter); loss_scale divides the gradients.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local O = require "cell.nn.optim.optimizer"

local K = O.K
local sgd_step = require("cell.ops_internal").sgd_step

local SGD = O.Optimizer:extend("SGD")

local NAMES = { "learning_rate", "momentum", "dampening", "weight_decay", "nesterov", "loss_scale" }
local ALIASES = { lr = "learning_rate" }

local function build(self, ...)
  local cls = "SGD"
  local a = O.arguments(cls, NAMES, ALIASES, ...)
  if a.learning_rate == nil then a.learning_rate = 0.1 end
  local momentum = a.momentum == nil and 0 or O.check_non_negative(cls, "momentum", a.momentum)
  local dampening = a.dampening == nil and 0 or O.check_non_negative(cls, "dampening", a.dampening)
  local nesterov = false
  if a.nesterov ~= nil then nesterov = O.check_bool(cls, "nesterov", a.nesterov) end
  if nesterov and (momentum <= 0 or dampening ~= 0) then
    O.fail("ValueError: For 'SGD', if 'nesterov' is true, 'momentum' must be > 0.0 and 'dampening' must equal "
      .. "to 0.0, but got 'momentum' %s, 'dampening' %s.", tostring(momentum), tostring(dampening))
  end
  local k = O.setup(self, cls, a, { decay_filter = false })
  k.momentum, k.dampening, k.nesterov = momentum, dampening, nesterov
  k.repr = { { "momentum", "momentum" }, { "dampening", "dampening" }, { "weight_decay", "weight_decay" },
    { "nesterov", "nesterov" } }
  if momentum > 0 then k.accum = O.state(self, k, "accum") end
end

function SGD:init(...) O.guard(build, self, ...) end

function SGD:_apply(grads, t)
  local k = rawget(self, K)
  local params, accum, wd, spec_of, now, labels = k.params, k.accum, k.wd, k.spec_of, k.lr_now, k.labels
  local mom, damp, nesterov, gs = k.momentum, k.dampening, k.nesterov, k.grad_scale
  local first = t == 1
  for i = 1, k.n do
    sgd_step(params[i], grads[i], accum and accum[i], now[spec_of[i]], mom, damp, wd[i], nesterov, first, gs,
      labels[i])
  end
end

return { SGD = SGD }
