-- bf16_gpt_kernels_spec.lua - the bfloat16 paths of a Transformer's
-- training step under mixed precision, each against a float64 computation
-- on the same rounded operands over random shapes: the fused dense layer
-- (forward with its bias added before the one rounding, and the three
-- gradients; odd sizes on both sides of the gemm's packing bound, strided
-- inputs), scaled dot-product attention (heads of at most 128 x 128
-- scores computed in float32: output and the gradients of query, key and
-- value; masks, causal, the strided {N, H, T, hd} views of
-- MultiheadAttention, and heads past the bound on the general path), and
-- GELU's gradient in float32 arithmetic. A result rounded once from a
-- float32 computation is within half a bfloat16 step of the exact value
-- plus the float32 sums' error.
local H = require "helpers"
local cell = H.cell
local bf, f32, f64 = cell.bfloat16, cell.float32, cell.float64
local HALF = 2 ^ -8 -- half a bfloat16 step, relative

--- A bfloat16 tensor of the shape and its values in float64.
local function pair(shape, scale)
  local t = (cell.randn(shape) * (scale or 1)):astype(bf)
  return t, t:astype(f64)
end

--- Largest excess of |got - ref| over half a step of ref plus slack.
local function excess(got, ref, slack)
  local bound = ref:abs() * HALF + slack + 1e-30
  return ((got:astype(f64) - ref):abs() - bound):max():item()
end

describe("ops.dense in bfloat16", function()
  it("rounds x W^T + b once and gives the three gradients within half a step", function()
    math.randomseed(1812)
    cell.set_seed(1812)
    for case = 1, 40 do
      local m, k, n = math.random(1, 70), math.random(1, 70), math.random(1, 70)
      if case % 4 == 0 then m, k, n = math.random(100, 300), math.random(30, 130), math.random(30, 130) end
      local lead = case % 3 == 0 and { 2, math.ceil(m / 2) } or { m }
      local xs = {}
      for i = 1, #lead do xs[i] = lead[i] end
      xs[#xs + 1] = k
      local x, x64 = pair(xs)
      if case % 5 == 0 then -- a transposed view (strided rows)
        local t = cell.randn({ k, lead[1] }):astype(bf)
        if #lead == 1 then x, x64 = t.T, t.T:astype(f64) end
      end
      local w, w64 = pair({ n, k })
      local b, b64 = pair({ n })
      local ys = {}
      for i = 1, #lead do ys[i] = lead[i] end
      ys[#ys + 1] = n
      local sens, sens64 = pair(ys)
      local y
      local g = cell.grad(function(a, c, d)
        y = cell.ops.dense(a, c, d)
        return (y * sens):sum()
      end, { 1, 2, 3 })(x, w, b)
      local y64
      local g64 = cell.grad(function(a, c, d)
        y64 = cell.ops.dense(a, c, d)
        return (y64 * sens64):sum()
      end, { 1, 2, 3 })(x64, w64, b64)
      local what = ("case %d: x %s, w %s"):format(case, H.shape_str(x.shape), H.shape_str(w.shape))
      assert.are.equal(bf, y.dtype, what)
      -- float32 sums: 1e-6 of the sum of |x||w| (k terms at most)
      local mag = cell.ops.dense(x64:abs(), w64:abs(), b64:abs())
      local e0 = excess(y, y64, mag * 1e-6)
      assert.is_true(e0 <= 0, ("%s: output past half a step by %g"):format(what, e0))
      local gmag = { (sens64:abs():reshape({ -1, n }):matmul(w64:abs())):max():item(),
        (sens64:abs():reshape({ -1, n }).T:matmul(x64:abs():reshape({ -1, k }))):max():item(),
        sens64:abs():reshape({ -1, n }):sum(1):max():item() }
      for i, name in ipairs({ "x", "weight", "bias" }) do
        assert.are.equal(bf, g[i].dtype, what)
        local e = excess(g[i], g64[i], gmag[i] * 1e-6)
        assert.is_true(e <= 0, ("%s: grad %s past half a step by %g"):format(what, name, e))
      end
    end
  end)
end)

describe("ops.scaled_dot_product_attention in bfloat16", function()
  local sdpa = cell.ops.scaled_dot_product_attention

  --- Output and gradients of sum(sdpa(q, k, v, o) * sens).
  local function run(q, k, v, o, sens)
    local out
    local g = cell.grad(function(a, b, c)
      out = sdpa(a, b, c, o)
      return (out * sens):sum()
    end, { 1, 2, 3 })(q, k, v)
    return out, g
  end

  --- max |a - b| over max(1, max |b|).
  local function rel_err(a, b)
    local d = (a:astype(f64) - b):abs():max():item()
    local s = b:abs():max():item()
    return d / (s > 1 and s or 1)
  end

  local function compare(lead, L, S, E, Ev, opts)
    local function make(T, D)
      if opts.strided then -- {N, H, T, D} views of {N, T, H * D}
        return cell.randn({ lead[1], T, lead[2] * D }):astype(bf):reshape({ lead[1], T, lead[2], D }):transpose(2, 3)
      end
      local shape = {}
      for i = 1, #lead do shape[i] = lead[i] end
      shape[#shape + 1], shape[#shape + 2] = T, D
      return cell.randn(shape):astype(bf)
    end
    local q, k, v = make(L, E), make(S, E), make(S, Ev)
    local oshape = {}
    for i = 1, #lead do oshape[i] = lead[i] end
    oshape[#oshape + 1], oshape[#oshape + 2] = L, Ev
    local sens = cell.randn(oshape):astype(bf)
    local o, o64 = { is_causal = opts.causal }, { is_causal = opts.causal }
    if opts.mask then
      o.attn_mask = opts.mask
      o64.attn_mask = opts.mask.dtype == cell.bool and opts.mask or opts.mask:astype(f64)
    end
    local out, g = run(q, k, v, o, sens)
    local out64, g64 = run(q:astype(f64), k:astype(f64), v:astype(f64), o64, sens:astype(f64))
    local what = ("lead %s, L %d, S %d, E %d, Ev %d%s%s%s"):format(H.shape_str(lead), L, S, E, Ev,
      opts.causal and ", causal" or "", opts.mask and (", mask " .. opts.mask.dtype.name) or "",
      opts.strided and ", strided" or "")
    assert.are.equal(bf, out.dtype, what)
    -- one rounding of a float32 result: half a step of the largest value
    local tol = 2 ^ -8 + 1e-4
    local e = rel_err(out, out64)
    assert.is_true(e <= tol, ("%s: output off by %g"):format(what, e))
    -- the backward's D_i = dO_i . O_i reads the saved output, itself
    -- rounded to bfloat16 (as the float64 path read it): a few steps more
    local gtol = 2 ^ -6
    for i, name in ipairs({ "query", "key", "value" }) do
      assert.are.equal(bf, g[i].dtype, what)
      e = rel_err(g[i], g64[i])
      assert.is_true(e <= (i == 3 and tol or gtol), ("%s: grad %s off by %g"):format(what, name, e))
    end
  end

  it("matches the float64 form over random shapes, masks and causal", function()
    math.randomseed(20261204)
    cell.set_seed(3)
    for _ = 1, 40 do
      local nl = math.random(1, 3)
      local lead = {}
      for i = 1, nl do lead[i] = math.random(1, 3) end
      local big = math.random() < 0.1 -- past 128 x 128: the general path
      local L = big and math.random(129, 140) or math.random(1, 40)
      local S = big and math.random(129, 140) or math.random(1, 40)
      local E, Ev = math.random(1, 20), math.random(1, 20)
      local opts = { causal = math.random() < 0.5 }
      local r = math.random()
      if r < 0.2 then
        opts.mask = cell.rand({ L, S }):gt(0.3)
      elseif r < 0.4 then
        opts.mask = cell.randn({ L, S }):astype(bf)
      end
      if not (opts.mask and opts.mask.dtype == cell.bool) then
        compare(lead, L, S, E, Ev, opts)
      else -- a row with every key masked gives NaN in both; keep one key per row
        for i = 1, L do opts.mask[i][1] = true end
        compare(lead, L, S, E, Ev, opts)
      end
    end
  end)

  it("takes the strided {N, H, T, hd} views of MultiheadAttention", function()
    math.randomseed(77)
    cell.set_seed(4)
    for _ = 1, 8 do
      local lead = { math.random(1, 4), math.random(1, 4) }
      local L, E = math.random(1, 40), math.random(1, 16)
      compare(lead, L, L, E, E, { causal = math.random() < 0.5, strided = true })
    end
  end)
end)

describe("GELU's gradient in bfloat16", function()
  it("is within half a step of float64's (plus float32 evaluation)", function()
    cell.set_seed(26)
    local x = (cell.randn({ 4001 }) * 4):astype(bf)
    local strided = (cell.randn({ 3000 }) * 3):astype(bf)[{ { 1, 3000, 3 } }]
    for _, src in ipairs({ x, strided }) do
      local g = cell.randn(src.shape):astype(bf)
      local gx = cell.grad(function(t) return cell.ops.gelu(t) end, 1, nil, false, true)(src, g)
      assert.are.equal(bf, gx.dtype)
      local x64, g64 = src:astype(f64), g:astype(f64)
      local phi = (x64 * (-0.5) * x64):exp() * 0.3989422804014327
      local Phi = (cell.ops.erf(x64 * 0.7071067811865476) + 1) * 0.5
      local ref = g64 * (Phi + x64 * phi)
      -- float32 terms of up to |Phi| + |x phi| <= 1.2 cancel near x = -0.75
      local e = excess(gx, ref, g64:abs() * 2 ^ -21)
      assert.is_true(e <= 0, "past half a step by " .. e)
    end
  end)
end)
