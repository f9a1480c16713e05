-- vmath_spec.lua - the float32 transcendentals computed by the vector code
-- of src/ops/vmath*.c (exp, log, tanh, erf, sigmoid, silu, gelu; softmax,
-- log_softmax, cross_entropy, the tanh GELU, attention's softmax and the
-- gradients of GELU, SiLU, erf, softmax, log_softmax and attention) against the same values in float64,
-- which stays on libm: an independent reference. Inputs sweep the whole
-- float32 range (subnormals, the extremes, both signs) plus NaN, +-inf and
-- +-0. The elementwise ops are within 1 ulp of the float64 value rounded
-- (measured 0.5: the vector code computes in float64 to about 1e-10;
-- tests/test_vmath.c checks each CPU path over a million values), GELU
-- within 3 ulp where x > -1.4142 and 6 below (it computes in float32
-- arithmetic: src/ops/vmath_gelu_impl.h; its reference is
-- x erfc(-x / sqrt 2) / 2, since float64's own cancels in the left tail);
-- the reductions and values within 2e-6 relative of the float64
-- result (float32 rounding of inputs, sums and the stored result), the
-- gradients within 1e-5 of their largest magnitude. Random shapes and dims
-- check that every size takes the same path; strided views the same values
-- as contiguous ones.
local cell = require "cell"

local INF, NAN = math.huge, 0 / 0

--- The float32 ulp at |r| (2^-149 below the normal range).
local function ulp32(r)
  r = math.abs(r)
  if r < 2 ^ -126 then return 2 ^ -149 end
  local e = math.floor(math.log(r, 2))
  if 2 ^ e > r then e = e - 1 elseif 2 ^ (e + 1) <= r then e = e + 1 end
  return 2 ^ (e - 23)
end

--- float32 values across the range: every 8th binade's mantissa steps and
-- both signs, the subnormals, the edges of exp's range, and the specials.
local function sweep()
  local v = {}
  for e = -149, 127, 3 do
    for _, m in ipairs({ 1, 1.1, 1.37, 1.5, 1.999 }) do
      local x = m * 2 ^ e
      v[#v + 1] = x
      v[#v + 1] = -x
    end
  end
  for x = -12, 12, 0.0625 do v[#v + 1] = x end
  for _, x in ipairs({ 0, -0.0, INF, -INF, NAN, 2 ^ -149, -(2 ^ -149), 2 ^ -126, 88.72283, 88.72284, 89,
    -87.33654, -103.97208, -104, -110, 0.01, -0.01, 3.92, -3.92, 20, -20, 1e-30, -1e-30 }) do
    v[#v + 1] = x
  end
  return v
end

local function is_nan(x) return x ~= x end

--- |got - want| in float32 ulps of want; NaN matches NaN, infinities and
-- zeros must match exactly (the sign of zero too).
local function ulp_err(got, want)
  if is_nan(want) then return is_nan(got) and 0 or math.huge end
  local w32 = cell.tensor({ want }, cell.float64):float():totable()[1]
  if math.abs(w32) == INF or math.abs(got) == INF then return got == w32 and 0 or math.huge end
  if got == 0 and w32 == 0 then return (1 / got == 1 / w32) and 0 or math.huge end
  return math.abs(got - want) / ulp32(want)
end

describe("vector transcendentals in float32", function()
  local xs = sweep()
  local x32 = cell.tensor(xs, cell.float32)
  local x64 = x32:double() -- the same values, exactly
  for _, name in ipairs({ "exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu" }) do
    local bound = name == "gelu" and "3 ulp (6 in the left tail)" or "1 ulp"
    it(name .. " is within " .. bound .. " of float64 over the float32 range and the specials", function()
      local got, want = cell.ops[name](x32):totable(), cell.ops[name](x64):totable()
      local worst, at = 0, nil -- in units of the bound
      for k = 1, #want do
        local e = ulp_err(got[k], want[k])
        if name == "gelu" then e = e / (xs[k] < -1.4142 and 6 or 3) end
        if not (e <= worst) then worst, at = e, k end
      end
      assert.is_true(worst <= 1, ("%s: %g of %s at x = %.9g (got %.9g, float64 %.17g)"):format(name, worst, bound,
        at and x64:totable()[at] or 0, at and got[at] or 0, at and want[at] or 0))
    end)
  end

  it("float64 gelu and its gradient keep their digits in the left tail", function()
    -- x erfc(-x / sqrt 2) / 2 and erfc(-x / sqrt 2) / 2 + x exp(-x^2 / 2) / sqrt(2 pi), by Python's
    -- math.erfc: the form x (1 + erf(x / sqrt 2)) / 2 gave -0 at -10 and the gradient 10% off. (x / sqrt 2
    -- rounded once magnifies into erfc's value by 2 (x / sqrt 2)^2: 1e-14 at -10, hence the bound.)
    local x = cell.tensor({ -10, -30, -5, 3 }, cell.float64)
    local want_y = { -7.619853024160593e-23, -1.4720141781446293e-196, -1.4332578593959731e-06, 2.99595030590511 }
    local want_g = { -7.618400096464813e-22, -4.416031690708494e-195, -7.146946001792295e-06, 1.011945647204184 }
    local y, g = cell.value_and_grad(function(t) return cell.ops.gelu(t):sum() end)(x)
    local yv = cell.ops.gelu(x):totable()
    for k = 1, 4 do
      assert.is_true(math.abs(yv[k] - want_y[k]) <= 1e-12 * math.abs(want_y[k]), ("gelu(%g) = %.17g"):format(
        x:totable()[k], yv[k]))
      assert.is_true(math.abs(g:totable()[k] - want_g[k]) <= 1e-12 * math.abs(want_g[k]),
        ("gelu'(%g) = %.17g"):format(x:totable()[k], g:totable()[k]))
    end
    assert.is_true(y:item() < 3)
  end)

  it("agrees on a strided view and in place with the contiguous result", function()
    local m = cell.tensor({ { -3, 0.5, 7 }, { 1e-3, -80, 30 } }, cell.float32)
    local t = m:transpose(1, 2)
    for _, name in ipairs({ "exp", "tanh", "erf", "sigmoid", "silu", "gelu" }) do
      assert.are.same(cell.ops[name](t:contiguous()):totable(), cell.ops[name](t):totable(), name)
    end
    local c = m:clone()
    c:exp_()
    assert.are.same(m:exp():totable(), c:totable())
  end)

  it("gives what libm gives at the special values", function()
    local s = cell.tensor({ INF, -INF, 0, -0.0, NAN, -1 }, cell.float32)
    local e, l, t = s:exp():totable(), s:log():totable(), s:tanh():totable()
    assert.are.same({ INF, 0, 1, 1 }, { e[1], e[2], e[3], e[4] })
    assert.is_true(is_nan(e[5]))
    assert.are.equal(INF, l[1])
    assert.is_true(is_nan(l[2]) and is_nan(l[5]) and is_nan(l[6]))
    assert.are.same({ -INF, -INF }, { l[3], l[4] })
    assert.are.same({ 1, -1, 0 }, { t[1], t[2], t[3] })
    assert.are.equal(-INF, 1 / t[4]) -- tanh(-0) = -0
    local sg = s:sigmoid():totable()
    assert.are.same({ 1, 0, 0.5 }, { sg[1], sg[2], sg[3] })
  end)
end)

--- max |a - b| / (|b| + floor) over two equal-shaped tensors' values.
local function max_rel(a, b, floor_)
  local av, bv = a:reshape({ -1 }):totable(), b:reshape({ -1 }):totable()
  assert.are.equal(#bv, #av)
  local worst = 0
  for k = 1, #bv do
    local d
    if is_nan(bv[k]) then d = is_nan(av[k]) and 0 or math.huge
    elseif math.abs(bv[k]) == INF then d = av[k] == bv[k] and 0 or math.huge
    else d = math.abs(av[k] - bv[k]) / (math.abs(bv[k]) + floor_) end
    if not (d <= worst) then worst = d end
  end
  return worst
end

--- max |a - b| over max |b|: for gradients, which the float32 inputs of
-- their formulas (the output y of tanh, sigmoid, softmax) leave with
-- absolute, not relative, errors where they cancel.
local function max_scaled(a, b)
  local av, bv = a:reshape({ -1 }):totable(), b:reshape({ -1 }):totable()
  local d, m = 0, 0
  for k = 1, #bv do
    d = math.max(d, math.abs(av[k] - bv[k]))
    m = math.max(m, math.abs(bv[k]))
  end
  return m > 0 and d / m or d
end

--- The value and the gradient (of sum(fn(x) w), w a fixed random tensor)
-- of fn at x in float32 and at the same values in float64.
local function both(fn, x32)
  local w = cell.randn(x32.shape)
  local g32 = cell.grad(function(t) return (fn(t) * w:float()):sum() end)
  local g64 = cell.grad(function(t) return (fn(t) * w):sum() end)
  local x64 = x32:double()
  return fn(x32), fn(x64), g32(x32), g64(x64)
end

describe("float32 softmax, cross_entropy and activation gradients", function()
  cell.set_seed(15)

  it("softmax and log_softmax match float64, short and long rows, with large and -inf logits", function()
    for _, len in ipairs({ 5, 40, 300 }) do
      local x = (cell.randn({ 6, len }) * 30):float()
      x[1][1] = -INF
      x[2][2] = 85
      for _, op in ipairs({ cell.ops.softmax, cell.ops.log_softmax }) do
        local y32, y64, g32, g64 = both(function(t) return op(t, -1) end, x)
        assert.is_true(max_rel(y32, y64:float(), 1e-30) <= 2e-6)
        assert.is_true(max_scaled(g32, g64) <= 1e-5)
      end
    end
  end)

  it("cross_entropy matches float64, value and gradient", function()
    local x = (cell.randn({ 16, 40 }) * 8):float()
    local y = cell.randint(1, 41, { 16 })
    local fn = function(t) return cell.ops.cross_entropy(t, y) end
    local l32, l64, g32, g64 = both(fn, x)
    assert.is_true(max_rel(l32, l64:float(), 0) <= 2e-6)
    assert.is_true(max_scaled(g32, g64) <= 1e-5)
    local fs = function(t) return cell.ops.cross_entropy(t, y, { label_smoothing = 0.1 }) end
    l32, l64, g32, g64 = both(fs, x)
    assert.is_true(max_rel(l32, l64:float(), 0) <= 2e-6)
    assert.is_true(max_scaled(g32, g64) <= 1e-5)
  end)

  it("GELU (exact and tanh), SiLU, sigmoid, tanh and erf: value and gradient over [-30, 30]", function()
    local x = cell.linspace(-30, 30, 2401):float()
    local fns = {
      gelu = function(t) return cell.ops.gelu(t) end,
      gelu_tanh = function(t) return cell.ops.gelu(t, "tanh") end,
      silu = function(t) return t:silu() end,
      sigmoid = function(t) return t:sigmoid() end,
      tanh = function(t) return t:tanh() end,
      erf = function(t) return t:erf() end,
    }
    for name, fn in pairs(fns) do
      local y32, y64, g32, g64 = both(fn, x)
      -- values of order 1: relative, with an absolute floor of 1e-6 at their zeros and tails
      assert.is_true(max_rel(y32, y64:float(), 1e-6) <= 2e-6, name)
      assert.is_true(max_scaled(g32, g64) <= 1e-5, name .. " gradient")
    end
  end)

  it("scaled_dot_product_attention (its softmax's exps) matches float64, value and gradients", function()
    local q, k, v = cell.randn({ 2, 3, 70, 8 }):float(), cell.randn({ 2, 3, 70, 8 }):float(),
      cell.randn({ 2, 3, 70, 8 }):float()
    local function att(a, b, c) return cell.ops.scaled_dot_product_attention(a, b, c, { is_causal = true }) end
    local w = cell.randn({ 2, 3, 70, 8 })
    local g32 = cell.grad(function(a, b, c) return (att(a, b, c) * w:float()):sum() end, { 1, 2, 3 })
    local g64 = cell.grad(function(a, b, c) return (att(a, b, c) * w):sum() end, { 1, 2, 3 })
    assert.is_true(max_scaled(att(q, k, v), att(q:double(), k:double(), v:double())) <= 2e-6)
    local a32, a64 = g32(q, k, v), g64(q:double(), k:double(), v:double())
    for i = 1, 3 do assert.is_true(max_scaled(a32[i], a64[i]) <= 1e-5, "gradient " .. i) end
  end)

  it("takes the same path for every shape: random shapes and dims", function()
    math.randomseed(15)
    for _ = 1, 12 do
      local nd = math.random(1, 4)
      local shape = {}
      for d = 1, nd do shape[d] = math.random(1, 9) end
      local dim = math.random(1, nd)
      -- of order 1: a row peaked on one logit has gradients that all cancel
      local x = (cell.randn(shape) * 2):float()
      for _, op in ipairs({ cell.ops.softmax, cell.ops.log_softmax }) do
        local y32, y64, g32, g64 = both(function(t) return op(t, dim) end, x)
        assert.is_true(max_rel(y32, y64:float(), 1e-30) <= 2e-6)
        local e = max_scaled(g32, g64)
        assert.is_true(e <= 1e-5, ("%g off, shape %s, dim %d"):format(e, table.concat(shape, "x"), dim))
      end
      local y32, y64 = both(function(t) return cell.ops.gelu(t, "tanh") end, x)
      assert.is_true(max_rel(y32, y64:float(), 1e-6) <= 2e-6)
    end
  end)
end)
