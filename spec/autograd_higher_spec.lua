-- autograd_higher_spec.lua - higher-order gradients: the gradient of a
-- gradient (nested cell.grad, value_and_grad, GradOperation), checked
-- against PyTorch's torch.autograd.grad(create_graph=True)
-- (spec/fixtures/gen_higher.py) as Hessian-vector products for each
-- twice-differentiable rule, against central differences of the first
-- gradient in float64, and the NotImplementedError of the rules that are
-- not twice differentiable.
local cell = require "cell"
local H = require "helpers"

local FX = require "fixtures.higher_fixtures"
local unpack = table.unpack or unpack

--- The scalar functions of the fixture cases, with cell's ops (dims 1-based).
local function cases(t)
  local C, C32, C223 = t(FX.consts.C), t(FX.consts.C32), t(FX.consts.C223)
  local f = {}
  for _, name in ipairs({ "abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
    "tanh", "sigmoid", "relu", "silu", "gelu" }) do
    f["unary_" .. name] = function(x) return (x[name](x) * x * C):sum() end
  end
  for _, name in ipairs({ "add", "sub", "mul", "div", "pow", "maximum", "minimum" }) do
    f["binary_" .. name] = function(a, b)
      local y = a[name](a, b)
      return (y * y * C):sum()
    end
  end
  f.scalar = function(x) return ((2.0 / x) * (x - 1.5) * 3.0 + (1.0 - x):pow(3) / 2.0):sum() end
  f.sum_dim = function(x) return x:sum(2):pow(3):sum() end
  f.mean_dim = function(x) return x:mean(1):pow(3):sum() end
  f.sum_all = function(x) return x:sum():pow(3) end
  f.max_all = function(x) return x:max():pow(3) + (x * x:min()):sum() end
  f.max_dim = function(x)
    local mx = x:max(2)
    local mn = x:min(1)
    return mx:pow(3):sum() + mn:pow(2):sum()
  end
  f.var = function(x) return x:var(2, 1):pow(2):sum() + x:var({ 1, 2 }, 0) * 2.0 end
  f.std = function(x) return (x:std(2, 1) * x:sum(2)):sum() end
  f.norm = function(x) return x:norm(2, 2):pow(3):sum() + x:norm(3) * 2.0 + x:norm(1):pow(2) end
  f.matmul_tanh = function(a, b) return a:matmul(b):tanh():sum() end
  f.mm = function(a, b) return cell.ops.mm(a, b):pow(3):sum() end
  f.bmm = function(a, b) return cell.ops.bmm(a, b):sigmoid():sum() end
  f.dot = function(a, b) return cell.ops.dot(a, b):pow(3) end
  f.matmul_vec = function(v, m) return v:matmul(m):tanh():pow(2):sum() end
  f.matmul_batched = function(a, b) return a:matmul(b):tanh():sum() end
  f.reshape_transpose = function(x)
    return (x:reshape({ 3, 2 }):transpose(1, 2):permute(2, 1):pow(3) * C32):sum()
        + x:transpose(1, 2):contiguous():view({ 6 }):pow(3):sum()
  end
  f.narrow_select = function(x) return x:narrow(2, 2, 2):pow(3):sum() + x:select(1, 2):pow(3):sum() end
  f.expand = function(x)
    return (x:unsqueeze(1):expand({ 2, 2, 3 }):pow(3) * C223):sum() + x:unsqueeze(3):squeeze(3):pow(4):sum()
  end
  f.cat_stack = function(x)
    return cell.ops.cat({ x, x * x }, 1):pow(3):sum() + cell.ops.stack({ x, x:exp() }, 1):pow(2):sum()
  end
  f.clamp_where = function(x)
    return x:clamp(-0.5, 0.6):pow(3):sum() + cell.ops.where(x:gt(0), x * x, x:pow(3)):sum()
        + x:masked_fill(x:lt(-0.5), 0):pow(3):sum()
  end
  f.softmax = function(x) return (cell.ops.softmax(x, 2) * C):sum() + cell.ops.softmax(x, 1):pow(2):sum() end
  f.log_softmax = function(x)
    return (cell.ops.log_softmax(x, 2) * C):sum() + cell.ops.log_softmax(x, 1):pow(2):sum()
  end
  local XB, T = t(FX.mlp.x), t(FX.mlp.t)
  f.mlp = function(w1, b1, w2, b2)
    local h = (XB:matmul(w1) + b1):tanh()
    return (h:matmul(w2) + b2 - T):pow(2):mean()
  end
  return f
end

local function positions(n)
  local p = {}
  for i = 1, n do p[i] = i end
  return p
end

--- The first gradients of f at the inputs, and the gradient of
-- sum_j <grad_j, v_j>: a Hessian-vector product, through nested cell.grad.
local function hvp(f, inputs, vs)
  local pos = positions(#inputs)
  local g1 = cell.grad(f, pos)
  local outer = cell.grad(function(...)
    local gs = g1(...)
    local s = (gs[1] * vs[1]):sum()
    for j = 2, #gs do s = s + (gs[j] * vs[j]):sum() end
    return s
  end, pos)
  return g1(unpack(inputs)), outer(unpack(inputs))
end

local names = {}
for k in pairs(FX) do
  if k ~= "consts" and k ~= "scalar_chain" then names[#names + 1] = k end
end
table.sort(names)

describe("higher-order gradients", function()
  local dtypes = {
    { name = "float64", dtype = cell.float64, tol = 1e-9 },
    { name = "float32", dtype = cell.float32, tol = 2e-3 },
  }
  for _, d in ipairs(dtypes) do
    describe("against PyTorch's create_graph, " .. d.name, function()
      local function t(v) return cell.tensor(v, d.dtype) end
      local f = cases(t)
      for _, name in ipairs(names) do
        it(name .. ": the gradient and the gradient of the gradient (Hessian-vector product)", function()
          local fx = FX[name]
          assert(f[name], "no cell function for case " .. name)
          local inputs, vs = {}, {}
          for i, x in ipairs(fx.inputs) do
            inputs[i] = t(x)
            vs[i] = t(fx.v[i])
          end
          local g, h = hvp(f[name], inputs, vs)
          H.assert_close(f[name](unpack(inputs)), fx.value, d.tol, name .. " value")
          for i = 1, #inputs do
            H.assert_close(g[i], fx.grads[i], d.tol, name .. " grad " .. i)
            H.assert_close(h[i], fx.hvp[i], d.tol, name .. " hvp " .. i)
          end
        end)
      end
    end)
  end

  describe("against central differences of the first gradient, float64", function()
    local function t(v) return cell.tensor(v, cell.float64) end
    local f = cases(t)
    for _, name in ipairs(names) do
      it(name, function()
        local fx = FX[name]
        local inputs, vs, plus, minus = {}, {}, {}, {}
        local eps = 1e-6
        for i, x in ipairs(fx.inputs) do
          inputs[i] = t(x)
          vs[i] = t(fx.v[i])
          plus[i] = inputs[i] + vs[i] * eps
          minus[i] = inputs[i] - vs[i] * eps
        end
        local _, h = hvp(f[name], inputs, vs)
        local pos = positions(#inputs)
        local gp = cell.grad(f[name], pos)(unpack(plus))
        local gm = cell.grad(f[name], pos)(unpack(minus))
        for i = 1, #inputs do
          local num = (gp[i] - gm[i]) / (2 * eps)
          H.assert_close(h[i], num:totable(), 1e-6, name .. " input " .. i)
        end
      end)
    end
  end)

  describe("the functional API nested", function()
    local sc = FX.scalar_chain
    local function f(x) return x:sin() * x:pow(3) end
    local function x0() return cell.tensor(sc.x, cell.float64) end

    it("cell.grad(cell.grad(f)) and a third order", function()
      H.assert_close(cell.grad(f)(x0()), sc.d1, 1e-12)
      H.assert_close(cell.grad(cell.grad(f))(x0()), sc.d2, 1e-12)
      H.assert_close(cell.grad(cell.grad(cell.grad(f)))(x0()), sc.d3, 1e-12)
    end)

    it("value_and_grad of a gradient gives the first and the second derivative", function()
      local v, g = cell.value_and_grad(cell.grad(f))(x0())
      H.assert_close(v, sc.d1, 1e-12)
      H.assert_close(g, sc.d2, 1e-12)
    end)

    it("GradOperation nested", function()
      local G = cell.ops.GradOperation()
      H.assert_close(G(G(f))(x0()), sc.d2, 1e-12)
      local GA = cell.ops.GradOperation({ get_all = true })
      local inner = function(x, y) return GA(function(a, b) return a * a * b end)(x, y)[1] end
      -- d/dx 2xy = 2y, d/dy 2xy = 2x
      local gs = GA(inner)(cell.tensor(3.0, cell.float64), cell.tensor(5.0, cell.float64))
      H.assert_close(gs[1], 10.0, 1e-12)
      H.assert_close(gs[2], 6.0, 1e-12)
    end)

    it("with weights: Hessian-vector products of an MLP's loss for its parameters", function()
      local fx = FX.mlp
      local params, vs = {}, {}
      for i, x in ipairs(fx.inputs) do
        params[i] = cell.tensor(x, cell.float64):requires_grad_(true)
        vs[i] = cell.tensor(fx.v[i], cell.float64)
      end
      local XB, T = cell.tensor(fx.x, cell.float64), cell.tensor(fx.t, cell.float64)
      local function loss()
        local h = (XB:matmul(params[1]) + params[2]):tanh()
        return (h:matmul(params[3]) + params[4] - T):pow(2):mean()
      end
      local inner = cell.grad(loss, nil, params)
      local outer = cell.grad(function()
        local gs = inner()
        local s = (gs[1] * vs[1]):sum()
        for j = 2, #gs do s = s + (gs[j] * vs[j]):sum() end
        return s
      end, nil, params)
      local h = outer()
      for i = 1, #params do H.assert_close(h[i], fx.hvp[i], 1e-9, "parameter " .. i) end
    end)

    it("through checkpoint, which runs the function again in the backward pass", function()
      -- (x sin x)'' = 2 cos x - x sin x
      local g2 = cell.grad(cell.grad(function(x)
        return cell.checkpoint(function(y) return y:sin() * y end, x)
      end))(x0())
      H.assert_close(g2, 2 * math.cos(sc.x) - sc.x * math.sin(sc.x), 1e-12)
    end)

    it("a gradient taken alone carries no history; one taken inside another does", function()
      local x = cell.tensor({ 0.5, 1.5 }, cell.float64)
      local g = cell.grad(function(y) return y:pow(3):sum() end)(x)
      assert.is_false(g.requires_grad)
      local seen
      cell.grad(function(y)
        seen = cell.grad(function(z) return z:pow(3):sum() end)(y)
        return seen:sum()
      end)(x)
      assert.is_true(seen.requires_grad)
      H.assert_close(seen, { 0.75, 6.75 }, 1e-12)
    end)

    it("the inner gradient of a leaf the outer function does not differentiate", function()
      -- d/dw of (d/dx sum(w x^2)) . 1 = d/dw sum(2 w x) = 2 x
      local x = cell.tensor({ 1.0, -2.0 }, cell.float64)
      local w = cell.tensor({ 3.0, 0.5 }, cell.float64)
      local g = cell.grad(function(wv, xv)
        return cell.grad(function(a) return (wv * a * a):sum() end)(xv):sum()
      end)(w, x)
      H.assert_close(g, { 2.0, -4.0 }, 1e-12)
    end)
  end)

  describe("rules that are not twice differentiable", function()
    local x = cell.tensor({ 0.5, -1.5, 2.0 }, cell.float64)
    local function nested(f) return function() return cell.grad(function(y) return cell.grad(f)(y):sum() end)(x) end end

    it("raise NotImplementedError naming the rule when the outer pass reaches them", function()
      H.expect_error(nested(function(y) return y:cumsum(1):pow(2):sum() end), "NotImplementedError",
        "the gradient of CumsumBackward is not differentiable (higher-order gradient)")
      H.expect_error(nested(function(y) return y:prod():pow(2) end), "NotImplementedError",
        "the gradient of ProdBackward is not differentiable")
      -- gelu is twice differentiable, not three times
      H.expect_error(function()
        return cell.grad(cell.grad(cell.grad(function(y) return y:gelu() end)))(cell.tensor(0.3))
      end, "NotImplementedError", "the gradient of GeluBackwardBackward is not differentiable")
      H.expect_error(nested(function(y) return y:norm(math.huge):pow(2) end), "NotImplementedError",
        "the gradient of NormBackward is not differentiable")
    end)

    it("do not get in the way where their gradient does not depend on the input", function()
      -- d/dx sum(cumsum(x^2)) = 2 x (3, 2, 1): cumsum's rule sees a constant
      local g = nested(function(y) return (y * y):cumsum(1):sum() end)()
      H.assert_close(g, { 6.0, 4.0, 2.0 }, 1e-12)
    end)

    it("leave first-order gradients as they were", function()
      local g = cell.grad(function(y) return y:cumsum(1):pow(2):sum() + y:gelu():sum() end)(x)
      assert.are.same({ 3 }, g.shape)
      assert.is_false(g.requires_grad)
    end)
  end)
end)
