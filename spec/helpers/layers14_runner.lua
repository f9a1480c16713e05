--- layers14_runner.lua - runs the cases of spec/fixtures/layers14_fixtures.lua
-- (made by spec/fixtures/gen_layers14.py with PyTorch): builds the cell.nn
-- class with its options and the fixture's parameters, checks the output,
-- the buffers left behind and the gradients of sum(out * sens) for the
-- float arguments and the trainable parameters, in float64 and float32,
-- with contiguous and non-contiguous arguments.
local cell = require "cell"
local H = require "helpers"
local luassert = require "luassert"

local R = {}
local unpack = table.unpack or unpack

R.fixtures = require "fixtures.layers14_fixtures"

-- Leading positional arguments of the classes that have them.
local REQUIRED = {
  GroupNorm = { "num_groups", "num_channels" },
  InstanceNorm1d = { "num_features" }, InstanceNorm2d = { "num_features" }, InstanceNorm3d = { "num_features" },
  BatchNorm3d = { "num_features" }, RMSNorm = { "normalized_shape" },
}
local HAS_DTYPE = { GroupNorm = true, InstanceNorm1d = true, InstanceNorm2d = true, InstanceNorm3d = true,
  BatchNorm3d = true, RMSNorm = true }

--- A non-contiguous view holding t's values (every other element of its
-- last dimension of a doubled tensor).
local function strided(t)
  if t.ndim == 0 then return t end
  local n = t.ndim
  local s = t:unsqueeze(n + 1)
  local two = cell.cat({ s, s }, n + 1)
  local v = two:narrow(n + 1, 1, 1):squeeze(n + 1)
  if v:is_contiguous() then -- size-1 last dimension: transpose route
    v = cell.cat({ t, t }, n):narrow(n, 1, t.shape[n])
  end
  return v
end

local function build_cell(c, dt)
  local opts, pos = {}, {}
  for k, v in pairs(c.opts) do opts[k] = v end
  for i, k in ipairs(REQUIRED[c.ctor] or {}) do
    pos[i] = opts[k]
    opts[k] = nil
  end
  if HAS_DTYPE[c.ctor] then opts.dtype = dt end
  if c.group == "loss" and type(opts.weight) == "table" then opts.weight = cell.tensor(opts.weight, dt) end
  if c.ctor == "PReLU" and type(opts.w) == "table" then opts.w = cell.tensor(opts.w, dt) end
  if c.ctor == "PReLU" and opts.w == nil then opts.w = cell.tensor({ 0.25 }, dt) end
  pos[#pos + 1] = opts
  local net = cell.nn[c.ctor](unpack(pos))
  for k, v in pairs(c.params) do
    if c.ctor ~= "PReLU" then net[k]:set_data(cell.tensor(v, dt)) end
  end
  if c.train then net:set_train(true) end
  return net
end

--- Check one case in dtype dt within tol (non-contiguous arguments when nc).
function R.check(c, dt, tol, nc)
  local net = build_cell(c, dt)
  local args, slots = {}, {}
  for i, a in ipairs(c.args) do
    if a.num ~= nil then
      args[i] = a.num
    else
      local t = cell.tensor(a.value, a.dtype == "float64" and dt or cell.int64)
      if nc and a.dtype == "float64" then t = strided(t) end
      args[i] = t
      if a.grad then slots[#slots + 1] = i end
    end
  end
  local n = #c.args
  local function call_net(m, call)
    if c.pre_log_softmax then
      local a = {}
      for i = 1, n do a[i] = call[i] end
      a[1] = cell.ops.log_softmax(a[1], a[1].ndim)
      call = a
    end
    return m(unpack(call, 1, n))
  end
  local out = call_net(net, args)
  luassert.are.equal(dt, out.dtype)
  H.assert_close(out, c.out, tol, "output")
  if c.after then
    for k, v in pairs(c.after) do H.assert_close(net[k], v, tol, k .. " after the call") end
  end
  local sens = cell.tensor(c.sens, dt)
  local params = net:trainable_params()
  local names = {}
  for k in pairs(c.params) do names[#names + 1] = k end
  if #slots == 0 and #names == 0 then return end
  local net2 = build_cell(c, dt)
  local function loss(...)
    local vars, call = { ... }, {}
    for i = 1, n do call[i] = args[i] end
    for k, i in ipairs(slots) do call[i] = vars[k] end
    return (call_net(net2, call) * sens):sum()
  end
  local leaves = {}
  for k, i in ipairs(slots) do leaves[k] = args[i] end
  params = net2:trainable_params()
  local gi, gp
  if #slots > 0 then
    local g = cell.grad(loss, slots[1] and (function()
      local p = {}
      for k = 1, #slots do p[k] = k end
      return p
    end)(), params)(unpack(leaves))
    if #params == 0 then gi = g else gi, gp = g[1], g[2] end
  else
    gp = cell.grad(function() return loss() end, nil, params)()
  end
  for k, i in ipairs(slots) do
    luassert.are.equal(dt, gi[k].dtype)
    H.assert_close(gi[k], c.grads[i], tol, "gradient of argument " .. i)
  end
  for j, p in ipairs(params) do
    local key = p.name:match("([%w_]+)$")
    if c.pgrads[key] then H.assert_close(gp[j], c.pgrads[key], tol, "gradient of " .. key) end
  end
end

--- One `it` per case, dtype and layout of the given group.
function R.describe_cases(it, group)
  for _, c in ipairs(R.fixtures) do
    if c.group == group then
      it(c.name .. " (float64)", function() R.check(c, cell.float64, 1e-9) end)
      it(c.name .. " (float64, non-contiguous)", function() R.check(c, cell.float64, 1e-9, true) end)
      it(c.name .. " (float32)", function() R.check(c, cell.float32, 3e-4) end)
    end
  end
end

--- Central-difference check in float64 of sum(fn(...) * w) with respect to
-- every argument listed in `which` (all when nil): spec/helpers/gradcheck.lua.
R.gradcheck = require "helpers.gradcheck"

return R
