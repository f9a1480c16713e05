--- conv_nd_runner.lua - runs the cases of spec/fixtures/conv_nd_fixtures.lua
-- (made by spec/fixtures/gen_conv_nd.py with PyTorch): builds each case's
-- inputs in a float dtype (x non-contiguous where the case holds xt), calls
-- the function, and checks the output, any indices and the gradients of
-- sum(y * gy) for x, w and b. Shared by spec/nn/conv_nd_spec.lua,
-- spec/nn/pooling_nd_spec.lua and spec/nn/resize_spec.lua.
local cell = require "cell"
local H = require "helpers"
local luassert = require "luassert"

local R = {}
R.fixtures = require "fixtures.conv_nd_fixtures"
R.dtypes = { { "float64", 1e-10 }, { "float32", 2e-5 } }

function R.tensor(v, dt) return cell.tensor(v, cell.float64):astype(cell[dt]) end

--- x of a case (a transposed view where the case holds xt).
function R.x(c, dt)
  if c.xt then
    local r = #H.shape_of(c.xt)
    local x = R.tensor(c.xt, dt):transpose(r - 1, r)
    assert(not x:is_contiguous())
    return x
  end
  return R.tensor(c.x, dt)
end

--- Check case c: call(args...) returns y [, idx]; args are the tensors
-- named by `names` (x first); grads of sum(y * gy) against c["g" .. name].
function R.check(c, dt, tol, names, call)
  local args = {}
  for i, n in ipairs(names) do args[i] = n == "x" and R.x(c, dt) or R.tensor(c[n], dt) end
  local y, idx = call(args)
  H.assert_close(y, c.y, tol, c.name .. " y")
  luassert.are.equal(cell[dt], y.dtype)
  if c.idx then H.assert_close(idx, c.idx, 0, c.name .. " indices") end
  local positions = {}
  for i = 1, #names do positions[i] = i end
  local gy = R.tensor(c.gy, dt)
  local g = cell.grad(function(...)
    local yy = call({ ... })
    return (yy * gy):sum()
  end, positions)((table.unpack or unpack)(args, 1, #names))
  if #names == 1 and cell.is_tensor(g) then g = { g } end
  for i, n in ipairs(names) do H.assert_close(g[i], c["g" .. n], tol, c.name .. " g" .. n) end
end

return R
