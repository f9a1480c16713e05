--- layer_case.lua - runs a layer case of spec/fixtures/attention_fixtures.lua
-- (made by spec/fixtures/gen_attention.py with PyTorch): builds the cell,
-- copies PyTorch's parameters in by name, checks the output (and attention
-- weights), and the gradients of sum(out * sens) for every input and
-- parameter. Shared by spec/nn/attention_spec.lua and transformer_spec.lua.
local cell = require "cell"
local H = require "helpers"
local luassert = require "luassert"

local R = {}
local f64 = cell.float64

local function tensor(v)
  if type(v) == "table" and type(v[1]) == "table" or type(v) == "table" then
    local flat = H.flatten(v)
    if type(flat[1]) == "boolean" then return cell.tensor(v, cell.bool) end
  end
  return cell.tensor(v, f64)
end
R.tensor = tensor

--- The options table of a case (tensors made from their values).
function R.opts(c)
  local o = {}
  for k, v in pairs(c.opts) do
    if type(v) == "table" then o[k] = tensor(v) else o[k] = v end
  end
  return o
end

--- Copy the case's parameters into net by name; every name must match.
function R.load(net, params)
  local seen, n = {}, 0
  cell.no_grad(function()
    for name, p in net:parameters_and_names() do
      local v = params[name]
      luassert.is_not_nil(v, "PyTorch has no parameter " .. name)
      p:copy_(cell.tensor(v, f64))
      seen[name] = true
      n = n + 1
    end
  end)
  for name in pairs(params) do luassert.is_true(seen[name], "cell has no parameter " .. name) end
  return n
end

--- Run the case through net (built by the caller, float64) within tol.
local function by_name(pairs_list)
  local t = {}
  for _, e in ipairs(pairs_list) do t[e[1]] = e[2] end
  return t
end

function R.check(net, c, tol)
  tol = tol or 1e-9
  R.load(net, by_name(c.params))
  local gparams = by_name(c.gparams)
  net:set_train(true) -- dropout is 0 in every case; PyTorch ran in training mode
  local inputs = {}
  for i, v in ipairs(c.inputs) do inputs[i] = cell.tensor(v, f64) end
  local opts = R.opts(c)
  local params, names = {}, {}
  for name, p in net:parameters_and_names() do
    params[#params + 1] = p
    names[#names + 1] = name
  end
  local args = {}
  for i = 1, #inputs do args[i] = inputs[i] end
  args[#inputs + 1] = opts
  local out, w = net(table.unpack(args, 1, #inputs + 1))
  H.assert_close(out, c.out, tol, c.name .. ": output")
  if c.weights then H.assert_close(w, c.weights, tol, c.name .. ": attention weights") end
  local sens = cell.tensor(c.sens, f64)
  local pos = {}
  for i = 1, #inputs do pos[i] = i end
  local g = cell.grad(function(...)
    local args = { ... }
    args[#args + 1] = opts
    local y = net(table.unpack(args, 1, #inputs + 1))
    return (y * sens):sum()
  end, { grad_position = pos, weights = params })(table.unpack(inputs, 1, #inputs))
  local gin, gw = g[1], g[2]
  if cell.is_tensor(gin) then gin = { gin } end
  for i = 1, #inputs do H.assert_close(gin[i], c.ginputs[i], tol, c.name .. ": gradient of input " .. i) end
  for i, name in ipairs(names) do
    H.assert_close(gw[i], gparams[name], tol, c.name .. ": gradient of " .. name)
  end
end

return R
