--- cell.ops_internal: the engine functions the library uses and users do
-- not see (cell.ops shows none of them): the optimizers' fused update
-- kernels and the check of a step's gradients. Specs reach them here.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"

local M = {}

--- sgd_step(param, grad, buf, lr, momentum, dampening, weight_decay,
-- nesterov, maximize, loss_scale): one SGD/Momentum update in place.
M.sgd_step = core.nnops._sgd_step

--- adam_step(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
-- weight_decay, step, amsgrad, loss_scale): one Adam update in place.
M.adam_step = core.nnops._adam_step

--- adam_steps(params, grads, exp_avgs, exp_avg_sqs, lrs, lr_of,
-- weight_decays, labels, n, beta1, beta2, eps, step, decoupled,
-- loss_scale): the Adam updates of params[1..n] in one call
-- (cell_optim_adam_steps), parameter i's learning rate lrs[lr_of[i]]; the
-- small ones run side by side on the threads.
M.adam_steps = core.nnops._adam_steps

--- optim_step(param, grad, s0, s1, s2, kind, lr, weight_decay, grad_scale,
-- h1, h2, h3, h4, step, flags [, label]): one step of the other optimizers
-- (cell_optim_step; kind as cell_optim_kind, see include/cell_optim.h).
M.optim_step = core.nnops._optim_step

--- check_grads(params, grads): the optimizers' check of a step's gradients.
M.check_grads = core.nnops._check_grads

return M
