-- matmul_strided_spec.lua - matmul and its backward (src/ops/linalg.c,
-- src/autograd/rules_binary.c) on operands the gemm backend reads through
-- strides: transposed and sliced views, batch dimensions that broadcast,
-- a 2-D right operand under a batched left one (whose weight gradient is
-- one product over all rows), 1-D operands; values and gradients over
-- random shapes against an independent broadcast-multiply-and-sum.
local cell = require "cell"
local H = require "helpers"

local f32, f64 = cell.float32, cell.float64
local assert_close = H.assert_close

-- a {..., m, k} b {..., k, n} (both at least 2-D): sum over k of
-- a[..., m, k, 1] * b[..., 1, k, n], batch dims broadcasting.
local function by_sum(a, b)
  local na, nb = #a.shape, #b.shape
  local as, bs = {}, {}
  for i = 1, na do as[i] = a.shape[i] end
  as[na + 1] = 1
  for i = 1, nb - 2 do bs[i] = b.shape[i] end
  bs[nb - 1], bs[nb], bs[nb + 1] = 1, b.shape[nb - 1], b.shape[nb]
  local p = a:reshape(as) * b:reshape(bs)
  return p:sum(#p.shape - 1)
end

-- A tensor of this shape: contiguous, the transpose of the last two
-- dimensions of a contiguous one, a slice of a wider one, or with its
-- first two dimensions swapped (kind 1..4).
local function view_of(shape, kind, dt)
  local n = #shape
  local s = {}
  for i = 1, n do s[i] = shape[i] end
  if kind == 2 and n >= 2 then
    s[n - 1], s[n] = shape[n], shape[n - 1]
    return cell.randn(s, dt):transpose(n - 1, n)
  elseif kind == 3 then
    s[n] = shape[n] + 2
    return cell.randn(s, dt):narrow(n, 2, shape[n])
  elseif kind == 4 and n >= 3 then
    s[1], s[2] = shape[2], shape[1]
    return cell.randn(s, dt):transpose(1, 2)
  end
  return cell.randn(shape, dt)
end

local function rand_dims(n, lo, hi)
  local d = {}
  for i = 1, n do d[i] = math.random(lo, hi) end
  return d
end

describe("matmul on strided operands", function()
  it("values and gradients over random shapes, views and broadcast batches", function()
    cell.set_seed(3)
    math.randomseed(5)
    for trial = 1, 60 do
      local dt = trial % 3 == 0 and f64 or f32
      local tol = dt == f64 and 1e-10 or 3e-5
      local m, k, n = math.random(1, 24), math.random(1, 24), math.random(1, 24)
      local batch = rand_dims(math.random(0, 2), 1, 4)
      local ash, bsh = {}, {}
      local shape_b = trial % 4 -- 0: b 2-D; 1: b's batch broadcast; else full batch
      for i, v in ipairs(batch) do
        ash[i] = v
        if shape_b == 1 then bsh[i] = (i % 2 == 1) and 1 or v
        elseif shape_b ~= 0 then bsh[i] = v end
      end
      ash[#ash + 1], ash[#ash + 2] = m, k
      bsh[#bsh + 1], bsh[#bsh + 2] = k, n
      local a = view_of(ash, math.random(1, 4), dt)
      local b = view_of(bsh, math.random(1, 4), dt)
      local y = a:matmul(b)
      local want = by_sum(a, b)
      assert.are.same(want.shape, y.shape, "trial " .. trial)
      assert_close(y, want:totable(), tol, "trial " .. trial)
      local r = cell.randn(y.shape, dt)
      local got = cell.grad(function(p, q) return (p:matmul(q) * r):sum() end, { 1, 2 })(a, b)
      local ref = cell.grad(function(p, q) return (by_sum(p, q) * r):sum() end, { 1, 2 })(a, b)
      for i = 1, 2 do
        assert.are.same(ref[i].shape, got[i].shape, "grad " .. i .. " trial " .. trial)
        assert_close(got[i], ref[i]:totable(), tol * 10, "grad " .. i .. " trial " .. trial)
      end
    end
  end)

  it("1-D operands on either side of a batched one", function()
    cell.set_seed(4)
    local a, v = cell.randn({ 3, 4, 5 }, f64):transpose(2, 3), cell.randn({ 4 }, f64)
    local got = cell.grad(function(p, q) return (p:matmul(q) * p:matmul(q)):sum() end, { 1, 2 })(a, v)
    local ref = cell.grad(function(p, q)
      local y = by_sum(p, q:reshape({ 4, 1 })):reshape({ 3, 5 })
      return (y * y):sum()
    end, { 1, 2 })(a, v)
    for i = 1, 2 do assert_close(got[i], ref[i]:totable(), 1e-10, "grad " .. i) end
    local u = cell.randn({ 5 }, f64)
    local got2 = cell.grad(function(p, q) return q:matmul(p):pow(2):sum() end, { 1, 2 })(a, u)
    local ref2 = cell.grad(function(p, q) return by_sum(q:reshape({ 1, 5 }), p):pow(2):sum() end, { 1, 2 })(a, u)
    for i = 1, 2 do assert_close(got2[i], ref2[i]:totable(), 1e-10, "grad " .. i) end
  end)

  it("is twice differentiable with a 2-D weight under a batched input", function()
    cell.set_seed(6)
    local a, w = cell.randn({ 2, 3, 4 }, f64), cell.randn({ 4, 5 }, f64):transpose(1, 2):transpose(1, 2)
    local function second(mm)
      local g1 = cell.grad(function(p, q) return mm(p, q):pow(2):sum() end, { 1, 2 })
      return cell.grad(function(p, q)
        local gs = g1(p, q)
        return (gs[1] * gs[1]):sum() + gs[2]:sum()
      end, { 1, 2 })(a, w)
    end
    local got = second(function(p, q) return p:matmul(q) end)
    local want = second(by_sum)
    for i = 1, 2 do assert_close(got[i], want[i]:totable(), 1e-9, "input " .. i) end
  end)
end)
