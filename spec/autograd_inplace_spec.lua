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
  ["an expanded view changed in place"] = "RuntimeError: mul_: more than one element of a Float64 tensor of "
    .. "shape [3, 4] refers to the same memory (an expanded view), so an in-place op would change it once per "
    .. "element; change a clone() of it",
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

describe("the history of a tensor changed in place", function()
  local x = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  local function inside(fn) return cell.grad(function(a) fn(a); return a:sum() end)(x) end

  it("moves onto the in-place op's node, and the version counts the writes", function()
    inside(function(a)
      local y = a * 1
      local v0 = y:_version()
      assert.are.equal(y, y:mul_(3)) -- in-place forms return the tensor
      assert.are.equal("MulBackward", y.grad_fn)
      assert.are.equal(v0 + 1, y:_version())
      y:sigmoid_()
      assert.are.equal("SigmoidBackward", y.grad_fn)
      assert.are.equal(v0 + 2, y:_version())
      assert.are.equal("CopyBackward", y:copy_(a).grad_fn)
      assert.are.equal("FillBackward", y:zero_().grad_fn)
      assert.is_true(y.requires_grad)
      assert.is_false(y:is_leaf())
    end)
  end)

  it("of a view: the base's becomes CopySlices, the views' AsStridedBackward", function()
    inside(function(a)
      local y = a * 1
      local row, col = y[1], y:select(2, 3)
      assert.are.equal("SelectBackward", col.grad_fn)
      row:add_(1)
      assert.are.equal("CopySlices", y.grad_fn)
      assert.are.equal("AsStridedBackward", row.grad_fn)
      assert.are.equal("AsStridedBackward", col.grad_fn) -- a sibling: its storage changed
      assert.are.equal(row:_version(), y:_version())
    end)
  end)

  it("setitem gives a tensor that needed no gradient a history", function()
    inside(function(a)
      local buf = cell.zeros({ 2, 3 })
      assert.is_false(buf.requires_grad)
      buf[2] = a[1] * 2
      assert.is_true(buf.requires_grad)
      assert.are.equal("CopySlices", buf.grad_fn)
      buf[1] = 5 -- a number: that part no longer depends on anything
      assert.are.equal("CopySlices", buf.grad_fn)
    end)
    local g = cell.grad(function(a)
      local buf = cell.zeros({ 2, 3 })
      buf[2] = a[1] * 2
      buf[{ 1, { 2, 3 } }] = a[{ 2, { 1, 2 } }]
      return (buf * buf):sum()
    end)(x)
    -- d/da of 4 a1^2 + a(2,1)^2 + a(2,2)^2
    H.assert_close(g, { { 8, 16, 24 }, { 8, 10, 0 } })
  end)

  it("records nothing when nothing involved requires grad, or under no_grad", function()
    local y = cell.ones({ 2, 3 })
    y[1]:mul_(2)
    assert.is_false(y.requires_grad)
    assert.is_nil(y.grad_fn)
    local w = cell.ones({ 2 }):requires_grad_(true)
    local z = w * 1
    cell.no_grad(function() z:mul_(3) end)
    assert.are.equal("MulBackward", z.grad_fn) -- the history before the unrecorded write
  end)

  it("keeps the in-place forms' own errors", function()
    inside(function(a)
      local y = a * 1
      H.expect_error(function() y:add_(cell.ones({ 1, 2, 3 })) end, "ValueError",
        "add_: the shape [1, 2, 3] of the operand cannot be broadcast to the shape [2, 3] of the tensor updated in place")
      H.expect_error(function() cell.zeros({ 2, 3 }, cell.int64):add_(y) end, "TypeError",
        "add_: result type Float32 cannot be stored in a Int64 tensor")
      H.expect_error(function() y:copy_(cell.ones({ 4 })) end, "ValueError",
        "copy_: shapes [2, 3] and [4] cannot be broadcast")
      assert.are.equal("MulBackward", y.grad_fn) -- a refused op leaves the history as it was
    end)
  end)

  it("refuses a view made under no_grad, changed while recording (ambiguous, as in PyTorch)", function()
    local w = cell.tensor({ 1, 2 }):requires_grad_(true)
    local y = w * 1
    local v = cell.no_grad(function() return y:narrow(1, 1, 1) end)
    assert.is_false(v.requires_grad)
    H.expect_error(function() v:mul_(2) end, "RuntimeError", "mul_: a Float32 tensor of shape [1] is a "
      .. "view made under no_grad, and changing it in place while gradients are recorded is ambiguous; "
      .. "make the view and the change both under no_grad, or both outside it")
    cell.no_grad(function() v:mul_(2) end)
    H.assert_close(y, { 2, 2 })
    assert.is_false(v.requires_grad) -- it never takes its base's history
  end)

  it("runs once per graph, as any graph", function()
    local w = cell.tensor({ 1, 2 }):requires_grad_(true)
    local y = w * 1
    y:narrow(1, 1, 1):mul_(3)
    local loss = y:sum()
    H.assert_close(cell.core._backward(loss, nil, { w })[1], { 3, 1 })
    H.expect_error(function() return cell.core._backward(loss, nil, { w }) end, "RuntimeError",
      "already used by a backward pass")
  end)

  it("agrees with the out-of-place program in every float dtype", function()
    for _, name in ipairs(H.float_dtypes) do
      local dt = cell[name]
      local a = x:astype(dt)
      local g_in = cell.grad(function(t)
        local y = t * 1
        y:narrow(2, 2, 2):mul_(t:narrow(2, 1, 2))
        y[1]:sigmoid_()
        return y:sum()
      end)(a)
      local g_out = cell.grad(function(t)
        local right = t:narrow(2, 2, 2) * t:narrow(2, 1, 2)
        local y = cell.cat({ t:narrow(2, 1, 1), right }, 2)
        return cell.cat({ y[{ { 1, 1 } }]:sigmoid(), y[{ { 2, 2 } }] }, 1):sum()
      end)(a)
      assert.are.equal(dt, g_in.dtype)
      H.assert_close(g_in, g_out:astype(cell.float64):totable(), H.tol[name])
    end
  end)
end)

describe("the sens of a non-scalar or tuple output", function()
  local x = cell.tensor({ 1, 2, 3 })

  it("is ones, as MindSpore's sens_param = false", function()
    H.assert_close(cell.grad(function(a) return a * a end)(x), { 2, 4, 6 })
    local v, g = cell.value_and_grad(function(a) return a:reshape({ 3, 1 }) * a end)(x)
    H.assert_shape(v, { 3, 3 })
    H.assert_close(g, { 12, 12, 12 }) -- d/da_k of sum_ij a_i a_j = 2 sum(a)
    H.assert_close(cell.ops.GradOperation()(function(a) return a * 2 end)(x), { 2, 2, 2 })
  end)

  it("is ones for each output of a tuple (several results or a list)", function()
    H.assert_close(cell.grad(function(a) return a * a, a:sum() * 2 end)(x), { 4, 6, 8 })
    H.assert_close(cell.grad(function(a) return { a * a, a * 3 } end)(x), { 5, 7, 9 })
    local v, g = cell.value_and_grad(function(a) return a * a, a * 3 end)(x)
    H.assert_close(v[1], { 1, 4, 9 })
    H.assert_close(v[2], { 3, 6, 9 })
    H.assert_close(g, { 5, 7, 9 })
    local both = cell.ops.GradOperation{ get_all = true }(function(a, b) return a * b, a end)(x, x * 2)
    H.assert_close(both[1], { 3, 5, 7 })
    H.assert_close(both[2], { 1, 2, 3 })
    -- an output that does not depend on the inputs adds nothing
    H.assert_close(cell.grad(function(a) return a * 2, cell.ones({ 2 }) end)(x), { 2, 2, 2 })
  end)

  it("with sens_param: one sens per output", function()
    local sens = cell.tensor({ 1, 0, 2 })
    H.assert_close(cell.grad(function(a) return a * a end, { grad_position = 1, sens_param = true })(x, sens),
      { 2, 0, 12 })
    local g = cell.ops.GradOperation{ sens_param = true }(function(a) return a * a, a * 3 end)(
      x, { sens, cell.full({ 3 }, 2) })
    H.assert_close(g, { 8, 6, 18 })
    local v, g2 = cell.value_and_grad(function(a) return a * a, a end, { grad_position = 1, sens_param = true })(
      x, { sens, sens })
    H.assert_close(v[2], { 1, 2, 3 })
    H.assert_close(g2, { 3, 0, 14 })
  end)

  it("has_aux differentiates the first result only", function()
    local g, aux = cell.grad(function(a) return a * a, a * 100 end, 1, nil, true)(x)
    H.assert_close(g, { 2, 4, 6 })
    -- MindSpore returns (grads, aux): the other results as one sequence
    assert.are.equal(1, #aux)
    H.assert_close(aux[1], { 100, 200, 300 })
    local _, two = cell.grad(function(a) return a:sum(), a * 2, a * 3 end, 1, nil, true)(x)
    assert.are.equal(2, #two)
    H.assert_close(two[2], { 3, 6, 9 })
  end)

  describe("errors", function()
    local df = cell.grad(function(a) return a * a, a end, { grad_position = 1, sens_param = true })
    it("a sens that does not match the outputs", function()
      H.expect_error(function() return df(x, sens) end, "TypeError",
        "with sens_param the last argument must be the sens Tensor")
      H.expect_error(function() return df(x, x) end, "TypeError",
        "grad: the function returns 2 outputs, so sens must be a list of 2 Tensors, got a Tensor")
      H.expect_error(function() return df(x, { x }) end, "TypeError",
        "grad: the function returns 2 outputs, so sens must be a list of 2 Tensors, got a list of 1")
      H.expect_error(function() return df(x, { x, 1 }) end, "TypeError", "grad: sens 2 is a number, not a Tensor")
      H.expect_error(function() return df(x, { x, cell.ones({ 2 }) }) end, "ValueError",
        "grad: sens 2 has shape [2] but output 2 has shape [3]")
      H.expect_error(function()
        return cell.grad(function(a) return a * a end, { grad_position = 1, sens_param = true })(x, { x })
      end, "TypeError", "grad: the function returns one Tensor, so sens must be a Tensor, got table")
    end)
    it("an output that is not a Tensor", function()
      H.expect_error(function() return cell.grad(function(a) return a * a, "note" end)(x) end, "TypeError",
        "grad: output 2 of the function is a string; every output is differentiated, so each must be a "
        .. "Tensor (return other values with has_aux)")
      H.expect_error(function() return cell.grad(function() return {} end)(x) end, "TypeError",
        "grad: the function returned an empty list; it must return a Tensor")
      H.expect_error(function() return cell.grad(function() return 3 end)(x) end, "TypeError",
        "grad: the function must return a Tensor, got number")
    end)
  end)
end)
