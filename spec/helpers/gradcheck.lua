--- gradcheck.lua - central-difference gradient check in float64, shared by
-- the specs: the gradient cell.grad gives for sum(fn(...) * w), w a fixed
-- random weight, against (f(x + e) - f(x - e)) / 2e for every element of
-- every argument listed in `which` (all when nil), e = 1e-6.
--   local gradcheck = require "helpers.gradcheck"
--   gradcheck(function(x, w) return ops.conv1d(x, w) end, { x, w }, nil, 1e-6)
local cell = require "cell"
local H = require "helpers"

local unpack = table.unpack or unpack

return function(fn, args, which, tol)
  local f64 = cell.float64
  if which == nil then
    which = {}
    for i = 1, #args do which[i] = i end
  end
  cell.set_seed(7)
  local out = fn(unpack(args))
  local w = cell.rand(out.shape, f64) + 0.5
  local function value(a) return (fn(unpack(a)) * w):sum():item() end
  local analytic = cell.grad(function(...) return (fn(...) * w):sum() end, which)(unpack(args))
  if #which == 1 and cell.is_tensor(analytic) then analytic = { analytic } end
  for n, k in ipairs(which) do
    local base = args[k]:contiguous()
    local num = {}
    for j = 1, base:numel() do
      local trial = {}
      for i, a in ipairs(args) do trial[i] = a end
      local plus, minus = base:clone(), base:clone()
      local orig = base:view(-1)[j]
      plus:view(-1)[j] = orig + 1e-6
      minus:view(-1)[j] = orig - 1e-6
      trial[k] = plus
      local fp = value(trial)
      trial[k] = minus
      num[j] = (fp - value(trial)) / 2e-6
    end
    H.assert_close(analytic[n]:reshape({ base:numel() }), num, tol or 1e-6, "gradcheck of argument " .. k)
  end
end
