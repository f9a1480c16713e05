--- fixture_runner.lua - runs the cases of spec/fixtures/nn_fixtures.lua
-- (made by spec/fixtures/gen_nn.py with PyTorch) against cell.ops: builds
-- each argument from its descriptor, checks the output, the running
-- statistics left behind (batch_norm) and the gradients of sum(out * sens)
-- for the arguments the fixture marks. Shared by spec/ops/nn_ops_spec.lua and
-- spec/ops/nn_ops_loss_spec.lua.
local cell = require "cell"
local H = require "helpers"
local luassert = require "luassert"

local R = {}
local unpack = table.unpack or unpack

R.fixtures = require "fixtures.nn_fixtures"

--- The value a descriptor stands for; float tensors in dtype dt.
local function build(d, dt)
  if d.kind == "tensor" then
    local t = cell.tensor(d.value, cell[d.dtype])
    if d.dtype == "float64" and dt ~= cell.float64 then t = t:astype(dt) end
    return t
  elseif d.kind == "opts" then
    local o = {}
    for k, v in pairs(d.value) do o[k] = build(v, dt) end
    return o
  elseif d.kind == "nil" then
    return nil
  end
  return d.value
end

--- The differentiable tensors of a case, as a flat list of slots
-- {arg = i} or {arg = i, key = k}, in a fixed order.
local function grad_slots(c)
  local slots = {}
  for i, d in ipairs(c.args) do
    if d.kind == "tensor" and d.grad then slots[#slots + 1] = { arg = i } end
    if d.kind == "opts" then
      local keys = {}
      for k, v in pairs(d.value) do
        if v.kind == "tensor" and v.grad then keys[#keys + 1] = k end
      end
      table.sort(keys)
      for _, k in ipairs(keys) do slots[#slots + 1] = { arg = i, key = k } end
    end
  end
  return slots
end

--- The cases whose op is one of the names in ops (a set).
function R.cases(ops)
  local out = {}
  for _, c in ipairs(R.fixtures) do
    if ops[c.op] then out[#out + 1] = c end
  end
  return out
end

--- Check one case in dtype dt within tol.
function R.check(c, dt, tol)
  local n = #c.args
  local args = {}
  for i, d in ipairs(c.args) do args[i] = build(d, dt) end
  local op = assert(cell.ops[c.op], "cell.ops." .. c.op .. " is missing")
  local out = op(unpack(args, 1, n))
  luassert.are.equal(dt, out.dtype)
  H.assert_close(out, c.out, tol, "output")
  if c.after then
    for i, v in ipairs(c.after) do
      if v then H.assert_close(args[i], v, tol, "argument " .. i .. " after the call") end
    end
  end
  local slots = grad_slots(c)
  if #slots == 0 then return end
  local sens = cell.tensor(c.sens, dt)
  local leaves, positions = {}, {}
  for k, s in ipairs(slots) do
    leaves[k] = s.key and args[s.arg][s.key] or args[s.arg]
    positions[k] = k
  end
  local function loss(...)
    local vars, call, copied = { ... }, {}, {}
    for i = 1, n do call[i] = args[i] end
    for k, s in ipairs(slots) do
      if s.key then
        if not copied[s.arg] then -- an options table: a copy holding the variables
          local o = {}
          for key, v in pairs(args[s.arg]) do o[key] = v end
          call[s.arg], copied[s.arg] = o, true
        end
        call[s.arg][s.key] = vars[k]
      else
        call[s.arg] = vars[k]
      end
    end
    return (op(unpack(call, 1, n)) * sens):sum()
  end
  local grads = cell.grad(loss, positions)(unpack(leaves))
  for k, s in ipairs(slots) do
    local want = s.key and c.grads[s.arg][s.key] or c.grads[s.arg]
    luassert.are.equal(dt, grads[k].dtype)
    H.assert_close(grads[k], want, tol, "gradient of " .. (s.key or ("argument " .. s.arg)))
  end
end

--- One `it` per case and dtype (busted's `it` is passed in: the spec
-- file's environment has it, this module's does not).
function R.describe_cases(it, ops)
  for _, c in ipairs(R.cases(ops)) do
    it(c.name .. " (float64)", function() R.check(c, cell.float64, 1e-10) end)
    it(c.name .. " (float32)", function() R.check(c, cell.float32, 2e-4) end)
  end
end

return R
