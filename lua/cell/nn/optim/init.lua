--- cell.nn's optimizers: Optimizer (the base), SGD, Momentum, Adam, AdamW, and (extra.lua)
-- RMSProp, Adagrad, Adadelta, AdaMax, Lamb, LARS, AdamWeightDecay, FTRL, ASGD, Rprop, Lion.
-- Each file returns its exports; cell.nn copies them (see cell.nn's module list).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local M = { Optimizer = require("cell.nn.optim.optimizer").Optimizer }
for _, name in ipairs { "cell.nn.optim.sgd", "cell.nn.optim.momentum", "cell.nn.optim.adam", "cell.nn.optim.extra" } do
  for k, v in pairs(require(name)) do if k ~= "KIND" then M[k] = v end end
end
return M
