-- autograd_spec.lua - the tape and cell.grad (src/autograd, lua/cell/autograd.lua):
-- a numerical gradient check (central differences in float64) over every
-- differentiable op the engine registers, front-door result shapes, and
-- the error paths.
local cell = require "cell"
local H = require "helpers"

local f64 = cell.float64
local unpack = table.unpack or unpack

--- A float64 tensor of the given shape with distinct, well-spread values.
local function input(shape, lo, hi, seed)
  cell.set_seed(seed or 1)
  lo, hi = lo or -1, hi or 1
  return cell.rand(shape, f64) * (hi - lo) + lo
end

--- sum(fn(inputs) * w) for a fixed weight w, so every output element counts.
local function scalarize(fn, args, weight)
  local out = fn(unpack(args))
  if weight == nil then
    cell.set_seed(99)
    weight = cell.rand(out.shape, f64) + 0.5
  end
  return (out * weight):sum(), weight
end

--- Central differences of the scalarized fn with respect to argument k.
local function numeric_grad(fn, args, k, weight, eps)
  local x = args[k]
  local flat = x:contiguous():view(-1)
  local base = x:contiguous()
  local g = cell.zeros({ flat:numel() }, f64)
  for j = 1, flat:numel() do
    local orig = flat[j]
    local trial = {}
    for i, a in ipairs(args) do trial[i] = a end
    local plus, minus = base:clone(), base:clone()
    plus:view(-1)[j] = orig + eps
    minus:view(-1)[j] = orig - eps
    trial[k] = plus
    local fp = scalarize(fn, trial, weight):item()
    trial[k] = minus
    local fm = scalarize(fn, trial, weight):item()
    g[j] = (fp - fm) / (2 * eps)
  end
  return g:reshape(x.shape)
end

local function gradcheck(fn, args, opts)
  opts = opts or {}
  local positions = {}
  for i in ipairs(args) do
    if not (opts.skip and opts.skip[i]) then positions[#positions + 1] = i end
  end
  local _, weight = scalarize(fn, args)
  local analytic = cell.grad(function(...) return (fn(...) * weight):sum() end, positions)(
    unpack(args))
  for n, k in ipairs(positions) do
    local num = numeric_grad(fn, args, k, weight, opts.eps or 1e-6)
    H.assert_close(analytic[n], num:totable(), opts.tol or 1e-5)
  end
end

-- One entry per backward node the engine registers (core._backward_nodes):
-- the op, a builder of its arguments (float64 inputs, transposed or
-- broadcast where the op takes them), and which arguments are constants.
local T = function(t) return t:transpose(1, 2) end
local function r(shape, lo, hi, seed) return function() return input(shape, lo, hi, seed) end end
local function idx(t) return function() return cell.tensor(t, cell.int64) end end
local function mask(t) return function() return cell.tensor(t) end end
local I = { skip = { [2] = true } }
local cases = {
  AddBackward = { function(a, b) return a + b end, { r { 2, 3 }, r { 3 } } },
  SubBackward = { function(a, b) return a - b end, { r { 2, 1 }, r { 3 } } },
  MulBackward = { function(a, b) return T(a) * b end, { r { 3, 2 }, r { 2, 3 } } },
  DivBackward = { function(a, b) return a / b end, { r { 2, 3 }, r({ 2, 3 }, 1, 2) } },
  PowBackward = { function(a, b) return a ^ b end, { r({ 2, 3 }, 0.5, 2), r { 3 } } },
  MaximumBackward = { function(a, b) return a:maximum(b) end, { r { 2, 3 }, r { 3 } } },
  MinimumBackward = { function(a, b) return a:minimum(b) end, { r { 2, 3 }, r { 3 } } },
  MatMulBackward = { function(a, b) return a:matmul(T(b)) end, { r { 2, 4, 3 }, r { 5, 3 } } },
  BatchMatMulBackward = { function(a, b) return a:bmm(b) end, { r { 2, 2, 3 }, r { 2, 3, 4 } } },
  DotBackward = { function(a, b) return a:dot(b) end, { r { 4 }, r { 4 } } },
  AbsBackward = { function(a) return T(a):abs() end, { r { 3, 2 } } },
  NegBackward = { function(a) return -a end, { r { 2, 3 } } },
  ExpBackward = { function(a) return T(a):exp() end, { r { 3, 2 } } },
  LogBackward = { function(a) return a:log() end, { r({ 2, 3 }, 0.5, 2) } },
  Log1pBackward = { function(a) return a:log1p() end, { r({ 2, 3 }, 0, 1) } },
  SqrtBackward = { function(a) return a:sqrt() end, { r({ 2, 3 }, 0.5, 2) } },
  RsqrtBackward = { function(a) return a:rsqrt() end, { r({ 2, 3 }, 0.5, 2) } },
  SinBackward = { function(a) return a:sin() end, { r { 2, 3 } } },
  CosBackward = { function(a) return a:cos() end, { r { 2, 3 } } },
  TanhBackward = { function(a) return a:tanh() end, { r { 2, 3 } } },
  SigmoidBackward = { function(a) return a:sigmoid() end, { r { 2, 3 } } },
  ReluBackward = { function(a) return a:relu() end, { r { 2, 3 } } },
  GeluBackward = { function(a) return a:gelu() end, { r { 2, 3 } } },
  SiluBackward = { function(a) return a:silu() end, { r { 2, 3 } } },
  FloorBackward = { function(a) return a:floor() end, { r({ 2, 3 }, 0.1, 0.9) } },
  CeilBackward = { function(a) return a:ceil() end, { r({ 2, 3 }, 0.1, 0.9) } },
  RoundBackward = { function(a) return a:round() end, { r({ 2, 3 }, 0.1, 0.4) } },
  SignBackward = { function(a) return a:sign() end, { r({ 2, 3 }, 0.1, 0.9) } },
  SumBackward = { function(a) return T(a):sum(2) end, { r { 3, 4 } } },
  MeanBackward = { function(a) return a:mean({ 1, 3 }, true) end, { r { 2, 3, 2 } } },
  ProdBackward = { function(a) return a:prod(2) end, { r({ 2, 3 }, 0.5, 1.5) } },
  MaxBackward = { function(a) return a:max() end, { r { 2, 3 } } },
  MinBackward = { function(a) return T(a):min() end, { r { 2, 3 } } },
  ClampBackward = { function(a) return a:clamp(-0.5, 0.5) end, { r { 3, 4 } } },
  WhereBackward = { function(c, a, b) return cell.where(c, a, b) end,
    { mask { { true, false, true }, { false, true, false } }, r { 2, 3 }, r { 3 } }, { skip = { [1] = true } } },
  MaskedFillBackward = { function(a, m) return a:masked_fill(m, 0) end,
    { r { 2, 3 }, mask { true, false, false } }, I },
  MaxDimBackward = { function(a) return (a:max(2)) end, { r { 3, 4 } } },
  VarBackward = { function(a) return a:var(2, 1) end, { r { 3, 4 } } },
  NormBackward = { function(a) return T(a):norm(3, 1) end, { r { 3, 4 } } },
  CumsumBackward = { function(a) return T(a):cumsum(1) end, { r { 3, 4 } } },
  AstypeBackward = { function(a) return a:float():double() end, { r { 2, 3 } }, { tol = 1e-3, eps = 1e-3 } },
  CatBackward = { function(a, b) return cell.cat({ a, T(b) }, 2) end, { r { 2, 3 }, r { 2, 2 } } },
  CloneBackward = { function(a) return a:clone() end, { r { 2, 3 } } },
  ContiguousBackward = { function(a) return T(a):contiguous() end, { r { 2, 3 } } },
  ExpandBackward = { function(a) return a:expand({ 3, 2, 4 }) end, { r { 2, 1 } } },
  FlattenBackward = { function(a) return T(a):flatten() end, { r { 2, 3 } } },
  GatherBackward = { function(a, i) return a:gather(2, i) end,
    { r { 2, 3 }, idx { { 1, 1, 3 }, { 2, 3, 2 } } }, I },
  IndexSelectBackward = { function(a, i) return a:index_select(1, i) end, { r { 3, 2 }, idx { 3, 1, 3 } }, I },
  NarrowBackward = { function(a) return a:narrow(2, 2, 2) end, { r { 2, 4 } } },
  PadBackward = { function(a) return a:pad({ 1, 2, 0, 1 }, 0) end, { r { 2, 3 } } },
  PermuteBackward = { function(a) return a:permute(3, 1, 2) end, { r { 2, 3, 4 } } },
  RepeatInterleaveBackward = { function(a) return a:repeat_interleave(2, 1) end, { r { 2, 3 } } },
  ReshapeBackward = { function(a) return T(a):reshape({ 6 }) end, { r { 2, 3 } } },
  ScatterBackward = { function(a, i, s) return a:scatter(2, i, s) end,
    { r { 2, 3 }, idx { { 3, 1 }, { 2, 3 } }, r { 2, 2 } }, I },
  SelectBackward = { function(a) return a[2] end, { r { 3, 4 } } },
  SliceBackward = { function(a) return a[{ {}, { 1, 4, 2 } }] end, { r { 3, 4 } } },
  SqueezeBackward = { function(a) return a:squeeze() end, { r { 2, 1, 3 } } },
  StackBackward = { function(a, b) return cell.stack({ a, b }, 2) end, { r { 2, 3 }, r { 2, 3 } } },
  TileBackward = { function(a) return a:tile({ 2, 1, 2 }) end, { r { 2, 3 } } },
  TransposeBackward = { function(a) return T(a) end, { r { 2, 3 } } },
  UnsqueezeBackward = { function(a) return a:unsqueeze(2) end, { r { 2, 3 } } },
  ViewBackward = { function(a) return a:view({ 3, 2 }) end, { r { 2, 3 } } },
}

-- Cases of the other op families live beside this file, one module per
-- family (spec/helpers/cases_<family>.lua), each a function of the
-- builders here returning more entries of the same form.
local builders = { cell = cell, input = input, r = r, idx = idx, mask = mask, T = T, I = I }
for _, family in ipairs { "nn", "conv", "sort", "math", "index", "sample", "inplace", "attention", "act", "rnn" } do
  for name, c in pairs(require("helpers.cases_" .. family)(builders)) do
    assert(cases[name] == nil, "two gradient checks for " .. name)
    cases[name] = c
  end
end

describe("autograd", function()
  describe("gradcheck", function()
    it("covers every backward node the engine registers", function()
      for _, name in ipairs(cell.core._backward_nodes()) do
        assert.is_not_nil(cases[name], "no gradient check for " .. name)
      end
    end)
    for name, c in pairs(cases) do
      it(name, function()
        local args = {}
        for i, make in ipairs(c[2]) do args[i] = make(i) end
        -- the op under test is the one that produced the output
        local leafs = {}
        for i, a in ipairs(args) do
          leafs[i] = (c[3] and c[3].skip and c[3].skip[i]) and a or a:stop_gradient():requires_grad_(true)
        end
        assert.are.equal(name, c[1](unpack(leafs)).grad_fn)
        gradcheck(c[1], args, c[3])
      end)
      for _, lower in ipairs { { cell.float32, 1e-4 }, { cell.float16, 3e-2 }, { cell.bfloat16, 1e-1 } } do
        local dt, tol = lower[1], lower[2]
        it(name .. " in " .. tostring(dt) .. " agrees with float64", function()
          local args, low, positions = {}, {}, {}
          for i, make in ipairs(c[2]) do
            args[i] = make(i)
            local const = c[3] and c[3].skip and c[3].skip[i]
            low[i] = (const or not args[i].dtype.is_floating_point) and args[i] or args[i]:astype(dt)
            if not const then positions[#positions + 1] = i end
          end
          local function loss(...) return c[1](...):sum() end
          local g64 = cell.grad(loss, positions)(unpack(args))
          local glow = cell.grad(loss, positions)(unpack(low))
          for k = 1, #positions do
            assert.are.equal(dt, glow[k].dtype)
            H.assert_close(glow[k], g64[k]:totable(), tol)
          end
        end)
      end
    end
  end)

  describe("cell.grad", function()
    it("differentiates the first argument by default", function()
      local f = function(x, y) return (x * y):sum() end
      local g = cell.grad(f)(cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }))
      H.assert_close(g, { 3, 4 })
    end)
    it("returns a list for a list of positions, and {inputs, weights} with weights", function()
      local w = cell.tensor({ 2, 2 }):requires_grad_(true)
      local f = function(x, y) return (x * y * w):sum() end
      local gs = cell.grad(f, { 1, 2 })(cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }))
      H.assert_close(gs[1], { 6, 8 })
      H.assert_close(gs[2], { 2, 4 })
      local both = cell.grad(f, 1, { w })(cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }))
      H.assert_close(both[1], { 6, 8 })
      H.assert_close(both[2][1], { 3, 8 })
      local only_w = cell.grad(f, nil, { w })(cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }))
      H.assert_close(only_w[1], { 3, 8 })
    end)
    it("value_and_grad returns the value too, and has_aux passes extra results", function()
      local f = function(x) return (x * x):sum(), x * 10 end
      local v, g = cell.value_and_grad(f, 1, nil, true)(cell.tensor({ 1, 3 }))
      H.assert_close(v[1], 10)
      H.assert_close(v[2], { 10, 30 })
      H.assert_close(g, { 2, 6 })
    end)
    it("gives zeros for an input that does not contribute", function()
      local g = cell.grad(function(x, y) return x:sum() end, 2)(cell.ones({ 2 }), cell.ones({ 3 }))
      H.assert_close(g, { 0, 0, 0 })
    end)
    it("GradOperation with get_all and sens_param", function()
      local f = function(x, y) return x * y end
      local gs = cell.ops.GradOperation { get_all = true, sens_param = true }(f)(
        cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }), cell.tensor({ 1, 10 }))
      H.assert_close(gs[1], { 3, 40 })
      H.assert_close(gs[2], { 1, 20 })
    end)
    it("grad, value_and_grad and GradOperation take options positionally, as a table, or both", function()
      local w = cell.Parameter(cell.tensor({ 2, 3 }), "w")
      local f = function(x) return (x * w):sum(), x end
      local x = cell.tensor({ 1, 1 })
      H.assert_close(cell.grad(f, { grad_position = 1, has_aux = true })(x), { 2, 3 })
      H.assert_close(cell.grad(f, 1, { has_aux = true })(x), { 2, 3 })
      H.assert_close(cell.grad(f, { weights = { w }, has_aux = true })(x)[1], { 1, 1 })
      local gs = cell.grad(f, 1, { w }, true)(x)
      H.assert_close(gs[1], { 2, 3 })
      local _, g = cell.value_and_grad(f, { weights = { w }, has_aux = true })(x)
      H.assert_close(g[1], { 1, 1 })
      local g2 = cell.ops.GradOperation(true)(function(a, b) return (a * b):sum() end)(x, cell.tensor({ 4, 5 }))
      H.assert_close(g2[2], { 1, 1 })
      local msg = H.caller_error("autograd_spec%.lua", function() cell.grad(f, { position = 1 }) end)
      assert.are.equal("TypeError: grad() got an unexpected keyword argument 'position'; the options are "
        .. "grad_position, weights, has_aux, sens_param", msg)
      msg = H.caller_error("autograd_spec%.lua", function() cell.ops.GradOperation { all = true } end)
      assert.are.equal("TypeError: GradOperation() got an unexpected keyword argument 'all'; the options are "
        .. "get_all, get_by_list, sens_param", msg)
    end)
    it("no_grad records nothing, stop_gradient cuts the graph", function()
      local x = cell.ones({ 2 }):requires_grad_(true)
      local y = cell.no_grad(function() return x * 2 end)
      assert.is_false(y.requires_grad)
      assert.is_true((x * 2).requires_grad)
      assert.are.equal("MulBackward", (x * 2).grad_fn)
      assert.is_false((x * 2):stop_gradient().requires_grad)
      local g = cell.grad(function(a) return (a * a:stop_gradient()):sum() end)(cell.tensor({ 3 }))
      H.assert_close(g, { 3 })
    end)
    it("register_hook replaces the gradient, and its handle removes it", function()
      local f = function(x)
        local y = x * 2
        y:register_hook(function(g) return g * 10 end)
        return y:sum()
      end
      H.assert_close(cell.grad(f)(cell.ones({ 2 })), { 20, 20 })
      local seen
      local f2 = function(x)
        local y = x * 3
        local h = y:register_hook(function(g) seen = true end)
        h:remove()
        return y:sum()
      end
      H.assert_close(cell.grad(f2)(cell.ones({ 2 })), { 3, 3 })
      assert.is_nil(seen)
    end)
  end)

  describe("errors", function()
    it("a sens whose shape is not the output's", function()
      H.expect_error(function()
        return cell.grad(function(x) return x * 2 end, { grad_position = 1, sens_param = true })(
          cell.ones({ 2, 3 }), cell.ones({ 3 }))
      end, "ValueError", "sens has shape [3] but the output has shape [2, 3]")
    end)
    it("a non-differentiable input", function()
      H.expect_error(function() return cell.grad(function(x) return x end)(cell.ones({ 2 }, cell.int64)) end,
        "TypeError", "Int64", "floating-point")
      H.expect_error(function() return cell.grad(function(x) return x end)("a") end,
        "TypeError", "argument 1", "string")
      H.expect_error(function() return cell.ones({ 2 }, cell.int32):requires_grad_(true) end,
        "TypeError", "floating-point")
    end)
    it("an in-place change to a saved tensor", function()
      H.expect_error(function()
        return cell.grad(function(x)
          local y = x * 1
          local z = y * y
          y:stop_gradient():add_(1) -- the same storage, through an alias
          return z:sum()
        end)(cell.ones({ 2 }))
      end, "RuntimeError", "MulBackward", "modified in place")
    end)
    it("an in-place op on a leaf that requires grad, while recording", function()
      local w = cell.ones({ 2 }):requires_grad_(true)
      H.expect_error(function() return w:add_(1) end, "RuntimeError", "add_: a leaf Variable that "
        .. "requires grad is being used in an in-place operation", "no_grad")
      H.expect_error(function() return w:narrow(1, 1, 1):fill_(0) end, "RuntimeError", "fill_: a view of "
        .. "a leaf Variable that requires grad is being used in an in-place operation")
      assert.are.equal("FillBackward", (w * 2):fill_(0).grad_fn) -- not a leaf: recorded
      cell.no_grad(function() w:add_(1) end) -- an optimizer step
      H.assert_close(w, { 2, 2 })
    end)
    it("an error inside a hook propagates, and the next grad works", function()
      local ok, err = pcall(cell.grad(function(x)
        local y = x * 2
        y:register_hook(function() error("boom in hook") end)
        return y:sum()
      end), cell.ones({ 2 }))
      assert.is_false(ok)
      assert.truthy(tostring(err):find("boom in hook", 1, true))
      assert.is_true(cell.is_grad_enabled())
      H.assert_close(cell.grad(function(x) return (x * 5):sum() end)(cell.ones({ 2 })), { 5, 5 })
    end)
    it("a hook made in a coroutine that is gone still runs and is freed", function()
      local x = cell.ones({ 2 }):requires_grad_(true)
      local y
      local co = coroutine.wrap(function()
        y = x * 2
        y:register_hook(function(g) return g * 3 end)
      end)
      co()
      co = nil
      collectgarbage()
      collectgarbage()
      H.assert_close(cell.core._backward(y:sum(), nil, { x })[1], { 6, 6 })
      y = nil
      collectgarbage()
    end)
    it("a hook that returns something other than a Tensor", function()
      H.expect_error(function()
        return cell.grad(function(x)
          local y = x * 2
          y:register_hook(function() return "no" end)
          return y:sum()
        end)(cell.ones({ 2 }))
      end, "TypeError", "hook", "string")
    end)
    it("a hook that returns a gradient of another shape is said as such (PyTorch: the hook "
      .. "'has changed the size of value')", function()
      local msg = "a tensor hook returned a gradient of shape [3] for a tensor of shape [2]; "
        .. "a hook may change the gradient's values, not its shape"
      -- on a tensor in the graph (it was a reshape error from MulBackward's rule)
      H.expect_error(function()
        return cell.grad(function(x)
          local y = x * 2
          y:register_hook(function() return cell.ones({ 3 }) end)
          return y:sum()
        end)(cell.ones({ 2 }))
      end, "RuntimeError", msg)
      -- on a leaf (the wrong shape came back as its gradient)
      local w = cell.ones({ 2 }):requires_grad_(true)
      w:register_hook(function() return cell.ones({ 3 }) end)
      H.expect_error(function() return cell.grad(function(a) return (a * 2):sum() end, nil, { w })(w) end,
        "RuntimeError", msg)
      -- a shape that would broadcast is refused too
      H.expect_error(function()
        return cell.grad(function(x)
          local y = x * 2
          y:register_hook(function() return cell.ones({ 1, 2 }) end)
          return y:sum()
        end)(cell.ones({ 2 }))
      end, "RuntimeError", "a tensor hook returned a gradient of shape [1, 2] for a tensor of shape [2]")
      H.assert_close(cell.grad(function(x) return (x * 5):sum() end)(cell.ones({ 2 })), { 5, 5 })
    end)
    it("grad inside no_grad, and a graph used twice", function()
      H.expect_error(function()
        return cell.no_grad(function() return cell.grad(function(x) return x:sum() end)(cell.ones({ 2 })) end)
      end, "RuntimeError", "no_grad")
      local x = cell.ones({ 2 }):requires_grad_(true)
      local y = (x * x):sum()
      cell.core._backward(y, nil, { x })
      H.expect_error(function() return cell.core._backward(y, nil, { x }) end,
        "RuntimeError", "already used")
    end)
  end)

  describe("Lua nodes and checkpointing", function()
    it("a backward rule written in Lua", function()
      local function cube(x) -- y = x^3 with a hand-written rule
        local y = cell.no_grad(function() return x * x * x end)
        return cell.core._lua_node(y, { x }, function(g) return g * x * x * 3 end)
      end
      H.assert_close(cell.grad(function(x) return cube(x):sum() end)(cell.tensor({ 1, 2 })), { 3, 12 })
    end)
    it("an error in a Lua rule propagates, and the next grad works", function()
      local f = function(x)
        local y = cell.no_grad(function() return x * 2 end)
        return cell.core._lua_node(y, { x }, function() error("rule failed") end):sum()
      end
      local ok, err = pcall(cell.grad(f), cell.ones({ 2 }))
      assert.is_false(ok)
      assert.truthy(tostring(err):find("rule failed", 1, true))
      H.assert_close(cell.grad(function(x) return (x * 3):sum() end)(cell.ones({ 2 })), { 3, 3 })
    end)
    it("backward passes nest to any depth, sharing a parameter's accumulator", function()
      -- y = x * w, whose rule recomputes it with a pass of its own, through
      -- `depth - 1` more such layers: each inner pass reaches w's
      -- accumulator while every outer pass is still accumulating into it.
      local function layer(depth, x, w)
        local y = cell.no_grad(function() return x * w end)
        return cell.core._lua_node(y, { x, w }, function(g)
          return unpack(cell.enable_grad(function()
            local xd = x:stop_gradient():requires_grad_(true)
            local out = depth > 1 and layer(depth - 1, xd, w) or xd * w
            return cell.core._backward(out, g, { xd, w })
          end))
        end)
      end
      local x = cell.tensor({ 1, 2 }):requires_grad_(true)
      local w = cell.tensor({ 3, 4 }):requires_grad_(true)
      for _, depth in ipairs({ 1, 3, 6 }) do
        -- loss = sum(x * w) + sum(w * w): w's gradient comes by two paths
        local loss = layer(depth, x, w):sum() + (w * w):sum()
        local g = cell.core._backward(loss, nil, { x, w })
        H.assert_close(g[1], { 3, 4 })
        H.assert_close(g[2], { 1 + 6, 2 + 8 })
      end
    end)
    it("a Lua node takes more than four inputs", function()
      local ins = {}
      for i = 1, 7 do ins[i] = cell.tensor({ i }):requires_grad_(true) end
      local y = cell.no_grad(function() return cell.zeros({ 1 }) end)
      cell.core._lua_node(y, ins, function(g)
        local r = {}
        for i = 1, 7 do r[i] = g * i end
        return unpack(r, 1, 7)
      end)
      local g = cell.core._backward((y * 2):sum(), nil, ins)
      for i = 1, 7 do H.assert_close(g[i], { 2 * i }) end
    end)
    it("a wrong-shaped gradient from a Lua rule is a ValueError", function()
      local f = function(x)
        local y = cell.no_grad(function() return x * 2 end)
        return cell.core._lua_node(y, { x }, function() return cell.ones({ 5 }) end):sum()
      end
      H.expect_error(function() return cell.grad(f)(cell.ones({ 2 })) end, "ValueError", "[5]", "[2]")
    end)
    local function chain(x, w)
      for _ = 1, 10 do x = (x:matmul(w)):tanh() end
      return x
    end
    it("checkpoint gives the same gradients", function()
      local x, w = input({ 8, 32 }, -1, 1, 3), input({ 32, 32 }, -0.3, 0.3, 4)
      local plain = cell.grad(function(a, b) return chain(a, b):sum() end, { 1, 2 })(x, w)
      local ck = cell.grad(function(a, b) return cell.checkpoint(chain, a, b):sum() end, { 1, 2 })(x, w)
      H.assert_close(ck[1], plain[1]:totable(), 1e-12)
      H.assert_close(ck[2], plain[2]:totable(), 1e-12)
    end)
    it("checkpoint keeps less memory alive on a deep chain", function()
      local x, w = input({ 256, 256 }, -1, 1, 5), input({ 256, 256 }, -0.05, 0.05, 6)
      local function deep(a, b)
        for _ = 1, 4 do a = cell.checkpoint(chain, a, b) end
        return a:sum()
      end
      local function plain(a, b)
        for _ = 1, 4 do a = chain(a, b) end
        return a:sum()
      end
      local function live_after_forward(f)
        collectgarbage()
        local base = cell.memory_stats().in_use
        local a = x:stop_gradient():requires_grad_(true)
        local out = cell.enable_grad(f, a, w:stop_gradient():requires_grad_(true))
        collectgarbage() -- what is left is what the graph keeps
        local live = cell.memory_stats().in_use - base
        cell.core._backward(out, nil, { a })
        return live
      end
      local with_ck, without = live_after_forward(deep), live_after_forward(plain)
      -- 40 saved 256x256 float64 activations (and their matmul inputs)
      -- without; only the 4 segment outputs with checkpointing.
      assert.is_true(with_ck * 4 < without, ("%d vs %d bytes"):format(with_ck, without))
    end)
  end)

  it("the graph of a training loop is freed each step", function()
    local w = cell.randn({ 64, 64 }):requires_grad_(true)
    local x = cell.randn({ 8, 64 })
    local vg = cell.value_and_grad(function(a) return (a:matmul(w) * 2):sum() end, 1, { w })
    vg(x)
    local base = cell.memory_stats().in_use
    for _ = 1, 200 do vg(x) end
    collectgarbage()
    collectgarbage()
    assert.is_true(cell.memory_stats().in_use - base < 1024 * 1024)
  end)
end)

return { cases = cases }
