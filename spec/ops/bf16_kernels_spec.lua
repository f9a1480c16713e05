-- bf16_kernels_spec.lua - the bfloat16 kernels of mixed-precision training
-- (on AVX512-BF16 where cpuid has it, float32 elsewhere), each against a
-- float64 computation on the same rounded operands over random shapes:
-- conv2d forward and backward (odd sizes, strides, dilations, paddings,
-- with and without a bias, output planes that are and are not a multiple
-- of 32 positions, strided inputs), the gemm with a transposed B, ReLU's
-- gradient on the bits, the vectorised transcendentals, and the
-- arithmetic and column sums of the backward pass. A result
-- rounded once from a float32 sum is within half a bfloat16 step of the
-- exact value plus float32 accumulation (1e-5 of the sum of |a||b|).
local H = require "helpers"
local cell = H.cell
local bf, f64 = cell.bfloat16, cell.float64
local ULP = 2 ^ -8

local function excess(got, ref, mag)
  local bound = ref:abs() * ULP + mag * 1e-5 + 1e-30
  return ((got:astype(f64) - ref):abs() - bound):max():item()
end

local function conv(x, w, b, opts) return cell.ops.conv2d(x, w, b, opts) end

-- random geometries: {N, C, H, W, O, kh, kw, options}
local function geometries(rng_count)
  local list = {
    { 2, 3, 8, 8, 5, 3, 3, { padding = 1 } },       -- 64 positions: NCHW straight from the tiles
    { 3, 4, 9, 7, 6, 3, 3, { padding = 1 } },       -- 63 positions
    { 2, 5, 11, 10, 7, 3, 2, { stride = 2 } },
    { 1, 6, 12, 12, 9, 2, 3, { dilation = 2, padding = { 1, 0 } } },
    { 5, 7, 16, 16, 33, 3, 3, { padding = 1 } },    -- 256 positions, O past a tile of 8 rows, k of gW in blocks
    { 2, 9, 8, 8, 4, 1, 1 },                        -- k = 9: odd
  }
  for _ = 1, rng_count do
    local kh, kw = math.random(1, 3), math.random(1, 3)
    local h, w = math.random(kh, 13), math.random(kw, 13)
    list[#list + 1] = { math.random(1, 3), math.random(1, 9), h, w, math.random(1, 20), kh, kw,
      { stride = math.random(1, 2), padding = math.random(0, 1) } }
  end
  return list
end

local function describe_geom(s)
  return ("x %dx%dx%dx%d, w %dx%dx%dx%d"):format(s[1], s[2], s[3], s[4], s[5], s[2], s[6], s[7])
end

describe("bfloat16 kernels", function()
  it("conv2d forward agrees with float64 on the rounded operands", function()
    cell.set_seed(21)
    math.randomseed(21)
    for _, s in ipairs(geometries(8)) do
      local x = cell.randn({ s[1], s[2], s[3], s[4] }):astype(bf)
      local w = cell.randn({ s[5], s[2], s[6], s[7] }):astype(bf)
      local b = cell.randn({ s[5] }):astype(bf)
      local x64, w64, b64 = x:astype(f64), w:astype(f64), b:astype(f64)
      local mag = conv(x64:abs(), w64:abs(), b64:abs(), s[8])
      local y = conv(x, w, b, s[8])
      assert.are.equal(bf, y.dtype)
      local e = excess(y, conv(x64, w64, b64, s[8]), mag)
      assert.is_true(e <= 0, describe_geom(s) .. " with bias: past the bound by " .. e)
      e = excess(conv(x, w, nil, s[8]), conv(x64, w64, nil, s[8]), mag)
      assert.is_true(e <= 0, describe_geom(s) .. ": past the bound by " .. e)
    end
    -- a strided (non-contiguous) input
    local wide = cell.randn({ 2, 3, 8, 16 }):astype(bf)[{ {}, {}, {}, { 1, 16, 2 } }]
    local w = cell.randn({ 4, 3, 3, 3 }):astype(bf)
    local e = excess(conv(wide, w, nil, { padding = 1 }), conv(wide:astype(f64), w:astype(f64), nil, { padding = 1 }),
      conv(wide:astype(f64):abs(), w:astype(f64):abs(), nil, { padding = 1 }))
    assert.is_true(e <= 0, "strided input: past the bound by " .. e)
  end)

  it("conv2d backward: the gradients of x, w and b agree with float64", function()
    cell.set_seed(22)
    math.randomseed(22)
    for _, s in ipairs(geometries(8)) do
      local opts = s[8]
      local x = cell.randn({ s[1], s[2], s[3], s[4] }):astype(bf)
      local w = cell.randn({ s[5], s[2], s[6], s[7] }):astype(bf)
      local b = cell.randn({ s[5] }):astype(bf)
      local sens = cell.randn(conv(x, w, b, opts).shape):astype(bf)
      local function f(xx, ww, bb) return conv(xx, ww, bb, opts) end
      local df = cell.grad(f, { 1, 2, 3 }, nil, false, true)
      local got = df(x, w, b, sens)
      local ref = df(x:astype(f64), w:astype(f64), b:astype(f64), sens:astype(f64))
      local mag = df(x:astype(f64):abs(), w:astype(f64):abs(), b:astype(f64), sens:astype(f64):abs())
      for i, name in ipairs({ "x", "w", "b" }) do
        assert.are.equal(bf, got[i].dtype)
        local e = excess(got[i], ref[i], mag[i])
        assert.is_true(e <= 0, describe_geom(s) .. ": the gradient of " .. name .. " past the bound by " .. e)
      end
    end
  end)

  it("matmul with A or B stored transposed, odd k, over random shapes", function()
    cell.set_seed(23)
    math.randomseed(23)
    for _ = 1, 12 do
      local m, n, k = math.random(1, 70), math.random(1, 90), math.random(33, 301)
      local at = cell.randn({ k, m }):astype(bf)
      local bt = cell.randn({ n, k }):astype(bf) -- B = bt^T: row stride 1
      for _, a in ipairs({ at:transpose(1, 2):contiguous(), at:transpose(1, 2) }) do
        local got = a:matmul(bt:transpose(1, 2))
        local a64, b64 = a:astype(f64), bt:astype(f64):transpose(1, 2)
        local e = excess(got, a64:matmul(b64), a64:abs():matmul(b64:abs()))
        assert.is_true(e <= 0, ("%dx%dx%d: past the bound by %g"):format(m, n, k, e))
      end
    end
  end)

  it("add, sub, mul, div and column sums round once from float32", function()
    cell.set_seed(26)
    local a, b = cell.randn({ 67, 45 }):astype(bf), cell.randn({ 67, 45 }):astype(bf)
    local a64, b64 = a:astype(f64), b:astype(f64)
    local s = cell.tensor(1.5, bf)
    for _, op in ipairs({ "add", "sub", "mul", "div" }) do
      local cases = {
        { cell.ops[op](a, b), cell.ops[op](a64, b64), "contiguous" },
        { cell.ops[op](a, s), cell.ops[op](a64, 1.5), "scalar" },
        { cell.ops[op](a:transpose(1, 2), b:transpose(1, 2)), cell.ops[op](a64:transpose(1, 2), b64:transpose(1, 2)), "strided" },
      }
      for _, c in ipairs(cases) do
        assert.are.equal(bf, c[1].dtype)
        local e = ((c[1]:astype(f64) - c[2]):abs() - c[2]:abs() * ULP * (1 + 2 ^ -15)):max():item()
        assert.is_true(e <= 0, op .. " " .. c[3] .. ": past half a step by " .. e)
      end
    end
    -- a sum over the rows (a bias gradient): each column's float64 sum, rounded once
    local sums = a:sum(1)
    local e = ((sums:astype(f64) - a64:sum(1)):abs() - a64:sum(1):abs() * ULP - a64:abs():sum(1) * 1e-6):max():item()
    assert.is_true(e <= 0, "column sums: past the bound by " .. e)
  end)

  it("ReLU's gradient keeps the gradient exactly where x > 0 (zeros, infinities and NaN included)", function()
    cell.set_seed(24)
    for _, dt in ipairs({ bf, cell.float16 }) do
      local x = cell.randn({ 1037 })
      x[1], x[2], x[3], x[4], x[5] = 0, -0.0, 1 / 0, -1 / 0, 0 / 0
      x[6], x[7] = 1e-40, -1e-40 -- subnormal in bfloat16 (flushed to zero in float16)
      x = x:astype(dt)
      local g = cell.randn({ 1037 }):astype(dt)
      local gx = cell.grad(function(t) return cell.ops.relu(t) end, 1, nil, false, true)(x, g)
      local want = g:astype(f64) * x:astype(f64):gt(0):astype(f64)
      assert.are.equal(0, (gx:astype(f64) - want):abs():max():item(), tostring(dt))
      assert.are.equal(dt, gx.dtype)
    end
  end)

  it("exp, log, tanh, erf, sigmoid, silu and gelu are within half a step of float64 (and float32's evaluation)", function()
    cell.set_seed(25)
    local x = (cell.randn({ 3001 }) * 4):astype(bf)
    x[1], x[2], x[3], x[4], x[5] = 1 / 0, -1 / 0, 0 / 0, 0, 80
    local strided = cell.randn({ 2000 }):astype(bf)[{ { 1, 2000, 2 } }]
    for _, op in ipairs({ "exp", "log", "tanh", "erf", "sigmoid", "silu", "gelu" }) do
      for _, src in ipairs({ x, strided }) do
        local a = op == "log" and src:abs() or src
        local got = cell.ops[op](a)
        assert.are.equal(bf, got.dtype)
        got = got:astype(f64)
        local ref = cell.ops[op](a:astype(f64))
        local fin = ref:isfinite()
        -- plus float32 evaluation: gelu's 1 + erf cancels in the left tail
        local err = (got - ref):abs() - ref:abs() * ULP - a:astype(f64):abs() * 2 ^ -23 - 1e-30
        err = cell.ops.where(fin, err, cell.zeros_like(err)):max():item()
        assert.is_true(err <= 0, op .. ": past half a step by " .. err)
        -- the non-finite results are the same infinities and NaN
        local same = cell.ops.where(fin, cell.ones(ref.shape, cell.bool), got:eq(ref):logical_or(got:isnan():logical_and(ref:isnan())))
        assert.is_true(same:all():item(), op .. ": non-finite results differ")
      end
    end
  end)
end)
