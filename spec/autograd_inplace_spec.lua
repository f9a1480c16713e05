-- autograd_inplace_spec.lua - in-place ops while gradients are recorded
-- (src/autograd/inplace.c): programs of in-place ops on results, on views
-- of them and through setitem, checked against PyTorch
-- (spec/fixtures/gen_inplace.py); the refusals with their messages; the
-- history a changed tensor and its views report; and the sens that
-- cell.grad, value_and_grad and GradOperation attach to a non-scalar or
-- tuple output (lua/cell/autograd.lua).
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.inplace_fixtures"

local f64 = cell.float64
local unpack = H.unpack

--- Run a fixture program's steps with cell (the step language is
-- described in gen_inplace.py); env maps names to tensors.
local function run(case, env, dt)
  local function val(x)
    if type(x) == "string" then return env[x] end
    return x
  end
  for _, st in ipairs(case.steps) do
    local op = st[1]
    if op == "mul" or op == "add" or op == "sub" or op == "div" then
      env[st[2]] = env[st[3]][op](env[st[3]], val(st[4]))
    elseif op == "exp" or op == "sigmoid" or op == "relu" or op == "tanh" or op == "clone" then
      env[st[2]] = env[st[3]][op](env[st[3]])
    elseif op == "zeros" then
      env[st[2]] = cell.zeros(st[3], dt)
    elseif op == "narrow" then
      env[st[2]] = env[st[3]]:narrow(st[4], st[5], st[6])
    elseif op == "select" then
      env[st[2]] = env[st[3]]:select(st[4], st[5])
    elseif op == "transpose" then
      env[st[2]] = env[st[3]]:transpose(st[4], st[5])
    elseif op == "view" or op == "reshape" or op == "expand" then
      env[st[2]] = env[st[3]][op](env[st[3]], st[4])
    elseif op == "index" then
      env[st[2]] = env[st[3]][st[4]]
    elseif op == "setitem" then
      env[st[2]][st[3]] = val(st[4])
    elseif op == "fill_" then
      env[st[2]]:fill_(st[3])
    elseif op:sub(-1) == "_" then
      local t = env[st[2]]
      t[op](t, val(st[3]))
    else
      error("unknown step " .. op)
    end
  end
  return env[case.out]
end

--- The gradients of sum(out * sens) for the case's inputs, in dtype dt,
-- and the program's result.
local function differentiate(case, dt)
  local args, positions = {}, {}
  for k, inp in ipairs(case.inputs) do
    args[k] = cell.tensor(inp.value, dt)
    positions[k] = k
  end
  local result
  local sens = case.sens and cell.tensor(case.sens, dt) or 1
  local g = cell.grad(function(...)
    local env, vals = {}, { ... }
    for k, inp in ipairs(case.inputs) do env[inp.name] = vals[k] end
    local out = run(case, env, dt)
    result = out:stop_gradient():clone()
    return (out * sens):sum()
  end, positions)(unpack(args))
  return g, result
end

--- cell's own message for each case PyTorch refuses too.
local saved_changed = function(shape, node, now, was)
  return ("RuntimeError: grad: a Float64 tensor of shape %s that %s saved for the backward pass was "
    .. "modified in place afterwards: it is at version %d, %s saved it at version %d; compute it "
    .. "again, or change a clone() of it instead"):format(shape, node, now, node, was)
end
local refusals = {
  ["exp's result changed in place"] = saved_changed("[3, 4]", "ExpBackward", 1, 0),
  ["sigmoid_'s result changed in place again"] = saved_changed("[3, 4]", "SigmoidBackward", 2, 1),
  ["a saved tensor changed through a view"] = saved_changed("[3, 4]", "MulBackward", 1, 0),
  ["sigmoid_'s result changed through another view"] = saved_changed("[6]", "SigmoidBackward", 2, 1),
  ["mul_ by a view of its own base"] = saved_changed("[3, 1]", "MulBackward", 1, 0),
  ["a leaf changed in place"] = "RuntimeError: add_: a leaf Variable that requires grad is being used "
    .. "in an in-place operation (a Float64 tensor of shape [3, 4]); change it under no_grad, or "
    .. "change a clone() of it",
  ["a view of a leaf changed in place"] = "RuntimeError: fill_: a view of a leaf Variable that "
    .. "requires grad is being used in an in-place operation (a Float64 tensor of shape [4]); change "
    .. "it under no_grad, or change a clone() of it",
  ["an expanded view changed in place"] = "RuntimeError: mul_: a Float64 tensor of shape [3, 4] has "
    .. "elements that share memory (an expanded view), so an in-place op on it cannot be "
    .. "differentiated; change a clone() of it",
}

describe("in-place ops while recording", function()
  describe("agree with PyTorch", function()
    for _, case in ipairs(fx) do
      if not case.raises then
        for _, dt in ipairs { { f64, 1e-10 }, { cell.float32, 1e-4 } } do
          it(case.name .. " (" .. tostring(dt[1]) .. ")", function()
            local g, result = differentiate(case, dt[1])
            H.assert_close(result, case.value, dt[2], "the program's result")
            for k, inp in ipairs(case.inputs) do
              H.assert_close(g[k], case.grads[k], dt[2], "the gradient of " .. inp.name)
            end
          end)
        end
      end
    end
  end)

  describe("refuse what PyTorch refuses", function()
    for _, case in ipairs(fx) do
      if case.raises then
        it(case.name, function()
          local ok, err = pcall(differentiate, case, f64)
          assert.is_false(ok, "PyTorch refuses this: " .. case.torch_error)
          local msg = tostring(err):gsub("^[^:]*:%d+: ", "")
          assert.are.equal(refusals[case.name], msg)
          assert.is_true(cell.is_grad_enabled())
        end)
      end
    end
  end)
end)
