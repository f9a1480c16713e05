--- cell.ops: the functional forms of the tensor methods (MindSpore's
-- `ops.add(x, y)` is `cell.ops.add(x, y)` and `x:add(y)`).
local core = require "cell.core"

local ops = {}
for name, fn in pairs(core.Tensor) do
  if type(fn) == "function" and name:sub(1, 1) ~= "_" then ops[name] = fn end
end
for _, name in ipairs { "cat", "stack", "where", "zeros", "ones", "full", "arange", "eye", "empty", "zeros_like",
  "ones_like", "full_like", "linspace", "rand", "randn", "randint" } do
  ops[name] = core[name]
end
for name, fn in pairs(core.nnops) do
  if name:sub(1, 1) ~= "_" then ops[name] = fn end -- the library's own are in cell.ops_internal
end
ops.concat = core.cat
--- MindSpore's other names for the same functions (mindspore.ops.equal is ops.eq, ...).
for alias, name in pairs { equal = "eq", not_equal = "ne", less = "lt", less_equal = "le", greater = "gt",
  greater_equal = "ge", cast = "astype", swapaxes = "transpose", swapdims = "transpose", clip = "clamp",
  floor_div = "floor_divide", floor_mod = "remainder" } do
  ops[alias] = ops[name]
end
for name, fn in pairs(require "cell.ops_extra") do ops[name] = fn end -- group_norm, rms_norm, prelu, ...
local index_ops = require "cell.index_ops" -- einsum, meshgrid, one_hot, addmm, outer
for _, name in ipairs(index_ops.functions) do ops[name] = index_ops[name] end
local conv_ops = require "cell.conv_ops" -- conv1d/3d, conv_transpose*, N-d and adaptive pooling, pixel_shuffle
for _, name in ipairs(conv_ops.functions) do ops[name] = conv_ops[name] end
ops.GradOperation = require("cell.autograd").GradOperation
ops.stop_gradient = core.Tensor.stop_gradient
for name, fn in pairs(require "cell.ops.clip") do ops[name] = fn end

return ops
