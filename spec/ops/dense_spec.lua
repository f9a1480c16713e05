-- dense_spec.lua - the fused linear op cell.ops.dense (src/ops/linear.c,
-- src/autograd/rules_linear.c, src/lua/lnn.c): over random shapes, with
-- transposed and sliced views of the input and the weight, its values and
-- gradients against the composition matmul(x, W^T) + b, and the
-- composition against an independent broadcast-multiply-and-sum; the
-- paths that fall back to the composition (mixed dtypes, a broadcasting
-- bias), second-order gradients, and every bad input.
local cell = require "cell"
local H = require "helpers"

local ops = cell.ops
local f32, f64 = cell.float32, cell.float64
local assert_close, expect_error = H.assert_close, H.expect_error

-- x {..., in} W {out, in}: y[..., o] = sum_i x[..., i] W[o, i], by
-- broadcasting (no matmul anywhere).
local function by_sum(x, w)
  local n = #x.shape
  local xs = {}
  for i = 1, n - 1 do xs[i] = x.shape[i] end
  xs[n], xs[n + 1] = 1, x.shape[n]
  return (x:reshape(xs) * w):sum(n + 1)
end

local function randn(shape, dt) return cell.randn(shape, dt or f32) end

-- A tensor of the given shape that is a view: the transpose of a
-- contiguous one, a slice of a wider one, or contiguous (kind 1..3).
local function view_of(shape, kind, dt)
  local n = #shape
  if kind == 1 and n >= 2 then
    local s = {}
    for i = 1, n do s[i] = shape[i] end
    s[n - 1], s[n] = shape[n], shape[n - 1]
    return randn(s, dt):transpose(n - 1, n)
  elseif kind == 2 then
    local s = {}
    for i = 1, n do s[i] = shape[i] end
    s[n] = shape[n] + 3
    return randn(s, dt):narrow(n, 2, shape[n])
  end
  return randn(shape, dt)
end

local function leaf(t) return t:stop_gradient():requires_grad_(true) end

describe("ops.dense", function()
  it("matches matmul(x, W^T) + b and a broadcast sum over random shapes and views", function()
    cell.set_seed(11)
    math.randomseed(7)
    for trial = 1, 40 do
      local dt = trial % 4 == 0 and f64 or f32
      local tol = dt == f64 and 1e-10 or 2e-5
      local nd = math.random(1, 4)
      local shape = {}
      for i = 1, nd - 1 do shape[i] = math.random(1, 5) end
      local inn, out = math.random(1, 40), math.random(1, 40)
      shape[nd] = inn
      local x = view_of(shape, math.random(1, 3), dt)
      local w = trial % 3 == 0 and randn({ inn, out }, dt):transpose(1, 2) or view_of({ out, inn }, math.random(2, 3), dt)
      local b = trial % 5 ~= 0 and randn({ out }, dt) or nil
      local y = ops.dense(x, w, b)
      local want = x:matmul(w:transpose(1, 2))
      if b then want = want + b end
      local ref = by_sum(x, w)
      if b then ref = ref + b end
      assert.are.same(want.shape, y.shape)
      assert_close(y, want:totable(), tol, "trial " .. trial)
      assert_close(y, ref:totable(), tol * 5, "trial " .. trial .. " (sum)")
      assert.are.equal(dt, y.dtype)

      -- gradients of <y, r> against the composition's
      local r = randn(y.shape, dt)
      local pos = b and { 1, 2, 3 } or { 1, 2 }
      local got = cell.grad(function(a, m, c) return (ops.dense(a, m, c) * r):sum() end, pos)(x, w, b)
      local want_g = cell.grad(function(a, m, c)
        local y2 = by_sum(a, m)
        if c then y2 = y2 + c end
        return (y2 * r):sum()
      end, pos)(x, w, b)
      for i = 1, #pos do
        assert.are.same(want_g[i].shape, got[i].shape)
        assert_close(got[i], want_g[i]:totable(), tol * 10, "grad " .. i .. " trial " .. trial)
      end
    end
  end)

  it("records one DenseBackward node; gradients only for what requires grad", function()
    local x, w, b = randn({ 3, 4 }), leaf(randn({ 2, 4 })), randn({ 2 })
    local y = ops.dense(x, w, b)
    assert.are.equal("DenseBackward", y.grad_fn)
    local gw = cell.grad(function(m) return ops.dense(x, m, b):sum() end)(w)
    assert_close(gw, { x:sum(1):totable(), x:sum(1):totable() }, 1e-5)
    assert.is_false(ops.dense(x, w:stop_gradient(), b).requires_grad)
  end)

  it("by hand: 1-D input, no bias, and an empty batch", function()
    local x = cell.tensor({ 1, 2 }, f64)
    local w = cell.tensor({ { 1, 0 }, { 0, 1 }, { 2, 3 } }, f64)
    assert_close(ops.dense(x, w), { 1, 2, 8 }, 0)
    assert_close(ops.dense(x, w, cell.tensor({ 1, 1, 1 }, f64)), { 2, 3, 9 }, 0)
    local e = ops.dense(cell.zeros({ 0, 2 }), cell.ones({ 3, 2 }), cell.ones({ 3 }))
    H.assert_shape(e, { 0, 3 })
    local z = ops.dense(cell.zeros({ 2, 0 }), cell.ones({ 3, 0 }), cell.ones({ 3 }))
    assert_close(z, { { 1, 1, 1 }, { 1, 1, 1 } }, 0)
    local gs = cell.grad(function(a, m, c) return ops.dense(a, m, c):sum() end, { 1, 2, 3 })(
      cell.zeros({ 0, 2 }), cell.ones({ 3, 2 }), cell.ones({ 3 }))
    H.assert_shape(gs[1], { 0, 2 })
    assert_close(gs[2], { { 0, 0 }, { 0, 0 }, { 0, 0 } }, 0)
    assert_close(gs[3], { 0, 0, 0 }, 0)
  end)

  it("falls back to the composition for mixed dtypes and broadcasting biases", function()
    local x64 = randn({ 2, 3 }, f64)
    local w32 = randn({ 4, 3 })
    local y = ops.dense(x64, w32)
    assert.are.equal(f64, y.dtype)
    assert_close(y, x64:matmul(w32:astype(f64):transpose(1, 2)):totable(), 1e-6)
    local w = randn({ 4, 3 })
    local x = randn({ 2, 3 })
    assert_close(ops.dense(x, w, cell.tensor(2.0)), (x:matmul(w:transpose(1, 2)) + 2):totable(), 1e-6)
    assert_close(ops.dense(x, w, cell.ones({ 2, 1 })), (x:matmul(w:transpose(1, 2)) + 1):totable(), 1e-6)
  end)

  it("is twice differentiable", function()
    local x, w, b = randn({ 3, 4 }, f64), randn({ 2, 4 }, f64), randn({ 2 }, f64)
    local function f(a, m, c) return ops.dense(a, m, c):pow(2):sum() end
    local function g(a, m, c) return (by_sum(a, m) + c):pow(2):sum() end
    local function second(fn)
      local g1 = cell.grad(fn, { 1, 2, 3 })
      return cell.grad(function(a, m, c)
        local gs = g1(a, m, c)
        return gs[1]:sum() + (gs[2] * gs[2]):sum() + gs[3]:sum()
      end, { 1, 2, 3 })(x, w, b)
    end
    local got, want = second(f), second(g)
    for i = 1, 3 do assert_close(got[i], want[i]:totable(), 1e-10, "input " .. i) end
  end)

  it("names the offending shapes", function()
    expect_error(function() ops.dense(randn({ 2, 3 }), randn({ 3 })) end, "ValueError", "dense",
      "weight must be 2-D", "[3]")
    expect_error(function() ops.dense(randn({ 2, 3 }), randn({ 4, 5 })) end, "ValueError", "dense",
      "[2, 3]", "[4, 5]", "must be 5")
    expect_error(function() ops.dense(cell.tensor(1.0), randn({ 4, 1 })) end, "ValueError", "dense", "[]")
    expect_error(function() ops.dense(randn({ 2, 3 }), randn({ 4, 3 }), randn({ 3 })) end, "ValueError")
    expect_error(function() ops.dense(randn({ 2, 3 }), randn({ 4, 3 }), 1) end, "TypeError", "dense", "bias")
    expect_error(function() ops.dense(randn({ 2, 3 }), "w") end, "TypeError")
  end)
end)
