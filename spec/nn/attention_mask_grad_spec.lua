-- attention_mask_grad_spec.lua - the gradient of a float attn_mask through
-- the fused cell.ops.scaled_dot_product_attention (src/ops/attention.c's
-- mask pass, src/autograd/rules_attention.c): against the same attention
-- written with differentiable ops (softmax(scale q k^T + mask) v) and
-- against central finite differences in float64, for masks that broadcast
-- over batch, heads and rows, with is_causal, through
-- nn.MultiheadAttention's fused path (need_weights = false) against its
-- explicit one, and with dropout (each row of the gradient sums to zero).
local cell = require "cell"
local nn, ops = cell.nn, cell.ops

local f64 = cell.float64
local sdpa = ops.scaled_dot_product_attention

local function max_gap(a, b)
  return (a - b):abs():max():item()
end

-- the reference: explicit scores, softmax and weighted values
local function explicit(q, k, v, mask, causal)
  local E = q.shape[#q.shape]
  local s = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(E)) + mask
  if causal then
    local L, S = q.shape[#q.shape - 1], k.shape[#k.shape - 1]
    s = s + cell.full({ L, S }, -math.huge, f64):triu(1)
  end
  return ops.softmax(s, -1):matmul(v)
end

local CASES = {
  { "a full {N, H, L, S} mask", { 2, 2, 3, 4 }, { 2, 2, 3, 4 } },
  { "an {L, S} mask shared by every batch and head", { 2, 2, 3, 4 }, { 3, 4 } },
  { "an {N, 1, 1, S} key-padding style mask", { 2, 3, 5, 4 }, { 2, 1, 1, 5 } },
  { "an {H, 1, S} mask broadcasting over rows", { 2, 3, 4, 4 }, { 3, 1, 4 } },
}

describe("scaled_dot_product_attention's float attn_mask gradient", function()
  for _, c in ipairs(CASES) do
    for _, causal in ipairs({ false, true }) do
      it("matches the explicit attention for " .. c[1] .. (causal and ", causal" or ""), function()
        cell.set_seed(11)
        local qs = c[2]
        local N, H, L, E = qs[1], qs[2], qs[3], qs[4]
        local S = c[3][#c[3]]
        local q = cell.randn({ N, H, L, E }, f64)
        local k, v = cell.randn({ N, H, S, E }, f64), cell.randn({ N, H, S, E }, f64)
        local mask = cell.randn(c[3], f64)
        local w = cell.randn({ N, H, L, E }, f64)
        local opts = function(m) return { attn_mask = m, is_causal = causal } end
        local g = cell.grad(function(a, b, d, m) return (sdpa(a, b, d, opts(m)) * w):sum() end, { 1, 2, 3, 4 })(q, k, v, mask)
        local r = cell.grad(function(a, b, d, m) return (explicit(a, b, d, m, causal) * w):sum() end, { 1, 2, 3, 4 })(q, k, v, mask)
        assert.are.same(c[3], g[4].shape)
        assert.is_true(g[4]:abs():max():item() > 1e-3, "the mask gradient is not zero")
        for i, name in ipairs({ "query", "key", "value", "mask" }) do
          assert.is_true(max_gap(g[i], r[i]) < 1e-10, name .. " gradient: gap " .. max_gap(g[i], r[i]))
        end
      end)
    end
  end

  it("matches central finite differences", function()
    cell.set_seed(12)
    local q, k, v = cell.randn({ 1, 2, 3, 3 }, f64), cell.randn({ 1, 2, 4, 3 }, f64), cell.randn({ 1, 2, 4, 3 }, f64)
    local w = cell.randn({ 1, 2, 3, 3 }, f64)
    local mask = cell.randn({ 3, 4 }, f64)
    local function f(m) return (sdpa(q, k, v, { attn_mask = m }) * w):sum() end
    local g = cell.grad(f)(mask):totable()
    local base = mask:totable()
    local h = 1e-6
    for i = 1, 3 do
      for j = 1, 4 do
        local up, down = {}, {}
        for a = 1, 3 do
          up[a], down[a] = {}, {}
          for b = 1, 4 do up[a][b], down[a][b] = base[a][b], base[a][b] end
        end
        up[i][j], down[i][j] = base[i][j] + h, base[i][j] - h
        local fd = (f(cell.tensor(up, f64)):item() - f(cell.tensor(down, f64)):item()) / (2 * h)
        assert.is_true(math.abs(fd - g[i][j]) < 1e-7, ("mask[%d][%d]: %.12g vs %.12g"):format(i, j, g[i][j], fd))
      end
    end
  end)

  it("leaves a bool mask without a gradient and a mask that needs none alone", function()
    cell.set_seed(13)
    local q = cell.randn({ 1, 1, 2, 2 }, f64)
    local bm = cell.tensor({ { true, false }, { true, true } }, cell.bool)
    local g = cell.grad(function(a) return sdpa(a, a, a, { attn_mask = bm }):sum() end)(q)
    assert.are.same({ 1, 1, 2, 2 }, g.shape)
    local fm = cell.zeros({ 2, 2 }, f64)
    local gq = cell.grad(function(a) return sdpa(a, a, a, { attn_mask = fm }):sum() end)(q)
    local gr = cell.grad(function(a) return explicit(a, a, a, fm, false):sum() end)(q)
    assert.is_true(max_gap(gq, gr) < 1e-12)
  end)

  it("with dropout: each row of the mask gradient sums to zero", function()
    cell.set_seed(14)
    local q, k, v = cell.randn({ 2, 2, 4, 3 }, f64), cell.randn({ 2, 2, 6, 3 }, f64), cell.randn({ 2, 2, 6, 3 }, f64)
    local mask = cell.randn({ 2, 2, 4, 6 }, f64)
    local w = cell.randn({ 2, 2, 4, 3 }, f64)
    local g = cell.grad(function(m) return (sdpa(q, k, v, { attn_mask = m, dropout_p = 0.3 }) * w):sum() end)(mask)
    assert.is_true(g:abs():max():item() > 1e-3)
    assert.is_true(g:sum(4):abs():max():item() < 1e-12)
  end)
end)

describe("nn.MultiheadAttention's float attn_mask gradient", function()
  it("is the same through the fused path (need_weights = false) as through the explicit one", function()
    cell.set_seed(15)
    local mha = nn.MultiheadAttention(6, 2, { dtype = f64, batch_first = true })
    local x = cell.randn({ 2, 3, 6 }, f64)
    local mask = cell.randn({ 3, 3 }, f64)
    local kpm = cell.randn({ 2, 3 }, f64)
    local function loss(need)
      return function(m, p)
        local out = mha(x, x, x, { attn_mask = m, key_padding_mask = p, need_weights = need })
        return (out * out):sum()
      end
    end
    local fused = cell.grad(loss(false), { 1, 2 })(mask, kpm)
    local plain = cell.grad(loss(true), { 1, 2 })(mask, kpm)
    assert.is_true(fused[1]:abs():max():item() > 1e-4)
    assert.is_true(max_gap(fused[1], plain[1]) < 1e-10, "attn_mask")
    assert.is_true(max_gap(fused[2], plain[2]) < 1e-10, "key_padding_mask")
  end)
end)
