-- attention_spec.lua - cell.ops.scaled_dot_product_attention (the fused
-- op: forward and backward against PyTorch's explicit softmax attention,
-- masks, causal, scale, dropout reproduced in the backward, float64
-- gradchecks, the memory its backward keeps) and nn.MultiheadAttention
-- against torch.nn.MultiheadAttention with the same weights
-- (spec/fixtures/gen_attention.py), and every misuse.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local ops = cell.ops
local FX = require "fixtures.attention_fixtures"
local LC = require "helpers.layer_case"

local f64 = cell.float64
local sdpa = ops.scaled_dot_product_attention

local function case_opts(c, dt)
  local o = { is_causal = c.causal, scale = c.scale }
  if c.mask then o.attn_mask = c.mask_bool and cell.tensor(c.mask, cell.bool) or cell.tensor(c.mask, dt) end
  return o
end

describe("ops.scaled_dot_product_attention", function()
  for _, c in ipairs(FX.sdpa) do
    for _, dn in ipairs({ "float64", "float32" }) do
      it("matches PyTorch (" .. c.name .. ", " .. dn .. "): output and gradients", function()
        local dt = cell[dn]
        local tol = dn == "float64" and 1e-10 or 2e-5
        local q, k, v = cell.tensor(c.q, dt), cell.tensor(c.k, dt), cell.tensor(c.v, dt)
        local o = case_opts(c, dt)
        local out = sdpa(q, k, v, o)
        assert.are.equal(dn, out.dtype.name)
        H.assert_close(out, c.out, tol, "output")
        local sens = cell.tensor(c.sens, dt)
        local g = cell.grad(function(a, b, d) return (sdpa(a, b, d, o) * sens):sum() end, { 1, 2, 3 })(q, k, v)
        H.assert_close(g[1], c.gq, tol, "grad query")
        H.assert_close(g[2], c.gk, tol, "grad key")
        H.assert_close(g[3], c.gv, tol, "grad value")
      end)
    end
  end

  it("records ScaledDotProductAttentionBackward", function()
    local q = cell.randn({ 1, 2, 3, 4 }):requires_grad_()
    local out = sdpa(q, q, q)
    assert.are.equal("ScaledDotProductAttentionBackward", out.grad_fn)
  end)

  it("takes its default scale 1/sqrt(E) and options positionally absent", function()
    local c = FX.sdpa[1]
    local q, k, v = cell.tensor(c.q, f64), cell.tensor(c.k, f64), cell.tensor(c.v, f64)
    H.assert_close(sdpa(q, k, v), c.out, 1e-10)
    H.assert_close(sdpa(q, k, v, { scale = 0.5 }), sdpa(q, k, v):totable(), 1e-12) -- E = 4
  end)

  it("gives the same result whatever the thread count", function()
    local q, k, v = cell.randn({ 4, 4, 70, 8 }), cell.randn({ 4, 4, 70, 8 }), cell.randn({ 4, 4, 70, 8 })
    local prev = cell.get_num_threads()
    cell.set_num_threads(1)
    local a = sdpa(q, k, v, { is_causal = true })
    cell.set_num_threads(2)
    local b = sdpa(q, k, v, { is_causal = true })
    cell.set_num_threads(prev)
    H.assert_close(a, b:totable(), 0)
  end)

  describe("dropout", function()
    it("zeroes weights at rate p, scales by 1/(1-p), and repeats with the seed", function()
      local T = 64
      local q, k = cell.zeros({ 1, 1, T, 4 }), cell.zeros({ 1, 1, T, 4 })
      -- uniform weights 1/T; v = T * identity picks each weight out
      local v = cell.eye(T):reshape({ 1, 1, T, T }) * T
      cell.set_seed(7)
      local a = sdpa(q, k, v, { dropout_p = 0.25 })
      cell.set_seed(7)
      local b = sdpa(q, k, v, { dropout_p = 0.25 })
      H.assert_close(a, b:totable(), 0)
      local zeros = (a:eq(0)):sum():item()
      local kept = (a:gt(0)):sum():item()
      assert.are.equal(T * T, zeros + kept)
      assert.is_true(math.abs(zeros / (T * T) - 0.25) < 0.05, "dropped fraction " .. zeros / (T * T))
      H.assert_close(a:max(), 1 / 0.75, 1e-6)
    end)

    it("drops the same weights in the backward (gradient of v = dropped weights' sums)", function()
      local T = 16
      local q, k = cell.zeros({ 1, 1, T, 4 }), cell.zeros({ 1, 1, T, 4 })
      local v = cell.randn({ 1, 1, T, 3 }, f64)
      cell.set_seed(3)
      local g = cell.grad(function(vv)
        local y = sdpa(q:astype(f64), k:astype(f64), vv, { dropout_p = 0.5 })
        return y:sum()
      end)(v)
      -- y = Z v with Z the dropped weights: dL/dv_j = sum_i Z_ij, the same for each column
      cell.set_seed(3)
      local eye = cell.eye(T, f64):reshape({ 1, 1, T, T }) * T
      local Z = sdpa(q:astype(f64), k:astype(f64), eye, { dropout_p = 0.5 }) / T
      local colsum = Z:sum(3):reshape({ T })
      for j = 1, 3 do H.assert_close(g:select(4, j):reshape({ T }), colsum:totable(), 1e-12) end
    end)
  end)

  it("passes float64 gradchecks (mask, causal, scale)", function()
    local function num_grad(fn, x, eps)
      local flat = x:reshape({ -1 }) -- a view: writing it changes x
      local out = {}
      for i = 1, flat.shape[1] do
        local old = flat[{ i }]:item()
        flat[{ i }] = old + eps
        local fp = fn():item()
        flat[{ i }] = old - eps
        local fm = fn():item()
        flat[{ i }] = old
        out[i] = (fp - fm) / (2 * eps)
      end
      return out
    end
    local q, k, v = cell.randn({ 2, 3, 4 }, f64), cell.randn({ 2, 5, 4 }, f64), cell.randn({ 2, 5, 3 }, f64)
    local mask = cell.randn({ 3, 5 }, f64)
    local w = cell.randn({ 2, 3, 3 }, f64)
    for _, o in ipairs({ { attn_mask = mask }, { is_causal = true, scale = 0.7 } }) do
      local function f() return (sdpa(q, k, v, o) * w):sum() end
      local g = cell.grad(function(a, b, c) return (sdpa(a, b, c, o) * w):sum() end, { 1, 2, 3 })(q, k, v)
      for i, x in ipairs({ q, k, v }) do
        H.assert_close(g[i]:reshape({ -1 }), num_grad(f, x, 1e-6), 1e-6, "input " .. i)
      end
    end
  end)

  it("keeps no L x S matrix per head alive for the backward", function()
    local T, E = 512, 8
    local q = cell.randn({ 1, 4, T, E }):requires_grad_()
    local k = cell.randn({ 1, 4, T, E }):requires_grad_()
    local v = cell.randn({ 1, 4, T, E }):requires_grad_()
    collectgarbage()
    local base = cell.memory_stats().in_use
    cell.reset_peak_memory()
    local out = sdpa(q, k, v, { is_causal = true })
    local kept = cell.memory_stats().in_use - base
    local fwd_peak = cell.memory_stats().peak - base
    local weights = 4 * T * T * 4 -- the float32 weights of the 4 heads: 4 MiB
    assert.is_true(kept < weights / 8, ("kept %d bytes after the forward"):format(kept))
    assert.is_true(fwd_peak < weights / 4, ("forward peak %d bytes"):format(fwd_peak))
    cell.reset_peak_memory()
    local g = cell.grad(function(a) return sdpa(a, k, v, { is_causal = true }):sum() end)(q)
    assert.are.same({ 1, 4, T, E }, g.shape)
    local bwd_peak = cell.memory_stats().peak - base
    assert.is_true(bwd_peak < weights / 2, ("backward peak %d bytes"):format(bwd_peak))
    out = nil
  end)

  describe("errors", function()
    local q, k, v = cell.randn({ 2, 3, 4 }), cell.randn({ 2, 5, 4 }), cell.randn({ 2, 5, 3 })
    it("TypeError for non-tensors, bad options and dtypes", function()
      H.expect_error(function() sdpa(q, k) end, "TypeError")
      H.expect_error(function() sdpa(q, k, v, { dropout = 0.1 }) end, "TypeError", "dropout")
      H.expect_error(function() sdpa(q, k, v, { is_causal = 1 }) end, "TypeError", "is_causal must be a boolean")
      H.expect_error(function() sdpa(q, k, v, { scale = "x" }) end, "TypeError", "scale must be a number")
      H.expect_error(function() sdpa(q, k, v, { attn_mask = {} }) end, "TypeError", "attn_mask must be a Tensor")
      H.expect_error(function() sdpa(q, k, v, { dropout_p = true }) end, "TypeError", "dropout_p must be a number")
      H.expect_error(function() sdpa(q:astype(f64), k, v) end, "TypeError", "must share a dtype")
      H.expect_error(function() sdpa(q:int(), k:int(), v:int()) end, "TypeError", "query")
      H.expect_error(function() sdpa(q, k, v, { attn_mask = cell.zeros({ 3, 5 }, cell.int32) }) end,
        "TypeError", "attn_mask must be bool or float")
    end)
    it("ValueError for shapes and dropout_p", function()
      H.expect_error(function() sdpa(cell.randn({ 4 }), cell.randn({ 4 }), cell.randn({ 4 })) end,
        "ValueError", "at least 2")
      H.expect_error(function() sdpa(q, cell.randn({ 2, 5, 6 }), v) end, "ValueError", "key's last dimension (6)")
      H.expect_error(function() sdpa(q, k, cell.randn({ 2, 4, 3 })) end, "ValueError", "value's sequence length (4)")
      H.expect_error(function() sdpa(q, cell.randn({ 3, 5, 4 }), v) end, "ValueError", "leading dimensions")
      H.expect_error(function() sdpa(q, k, v, { attn_mask = cell.zeros({ 4, 5 }) }) end, "ValueError",
        "does not broadcast")
      H.expect_error(function() sdpa(q, k, v, { dropout_p = 1 }) end, "ValueError", "dropout_p must lie in [0, 1)")
    end)
  end)
end)

describe("nn.MultiheadAttention", function()
  local function build(ctor)
    return nn.MultiheadAttention(ctor.embed_dim, ctor.num_heads, { kdim = ctor.kdim, vdim = ctor.vdim,
      has_bias = ctor.has_bias, add_bias_kv = ctor.add_bias_kv, add_zero_attn = ctor.add_zero_attn,
      batch_first = ctor.batch_first, dtype = f64 })
  end

  for _, c in ipairs(FX.mha) do
    it("matches torch.nn.MultiheadAttention (" .. c.name .. ")", function()
      LC.check(build(c.ctor), c)
    end)
  end

  it("has MindSpore's parameter names", function()
    local names = {}
    for n in nn.MultiheadAttention(8, 2):parameters_and_names() do names[#names + 1] = n end
    assert.are.same({ "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias" }, names)
    names = {}
    for n in nn.MultiheadAttention(8, 2, { kdim = 4, vdim = 6, add_bias_kv = true }):parameters_and_names() do
      names[#names + 1] = n
    end
    assert.are.same({ "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k", "bias_v",
      "out_proj.weight", "out_proj.bias" }, names)
  end)

  it("gives the same output fused (need_weights false) and explicit, in training with dropout 0", function()
    local m = nn.MultiheadAttention(8, 4)
    local x = cell.randn({ 6, 2, 8 })
    local a, w = m(x, x, x, { is_causal = true })
    local b, none = m(x, x, x, { is_causal = true, need_weights = false })
    assert.is_nil(none)
    assert.are.same({ 2, 6, 6 }, w.shape)
    H.assert_close(a, b:totable(), 1e-5)
  end)

  it("applies dropout in training only", function()
    local m = nn.MultiheadAttention(8, 2, 0.5)
    local x = cell.randn({ 5, 2, 8 })
    local e1 = m(x, x, x, { need_weights = false })
    H.assert_close(m(x, x, x, { need_weights = false }), e1:totable(), 0)
    m:set_train(true)
    local t1 = m(x, x, x, { need_weights = false })
    local t2 = m(x, x, x, { need_weights = false })
    assert.is_true((t1 - t2):abs():max():item() > 0)
  end)

  describe("errors", function()
    it("in the constructor", function()
      H.expect_error(function() nn.MultiheadAttention(10, 3) end, "ValueError", "divisible")
      H.expect_error(function() nn.MultiheadAttention(0, 1) end, "ValueError", "embed_dim")
      H.expect_error(function() nn.MultiheadAttention(8, 2, 1.5) end, "ValueError", "dropout")
      H.expect_error(function() nn.MultiheadAttention(8, 2, { batch_first = 1 }) end, "TypeError", "batch_first")
      H.expect_error(function() nn.MultiheadAttention(8, 2, { heads = 1 }) end, "TypeError", "heads")
    end)
    it("in the forward", function()
      local m = nn.MultiheadAttention(8, 2)
      local x = cell.randn({ 5, 3, 8 })
      H.expect_error(function() m(x, x, cell.randn({ 5, 3, 7 })) end, "ValueError", "vdim")
      H.expect_error(function() m(cell.randn({ 8 }), x, x) end, "ValueError", "query must be 2-D")
      H.expect_error(function() m(x, cell.randn({ 5, 8 }), x) end, "ValueError", "same number of dimensions")
      H.expect_error(function() m(x, x, x, { key_padding_mask = cell.zeros({ 3, 4 }, cell.bool) }) end,
        "ValueError", "key_padding_mask must have shape (3, 5)")
      H.expect_error(function() m(x, x, x, { attn_mask = cell.zeros({ 5, 4 }) }) end, "ValueError",
        "attn_mask must have shape")
      H.expect_error(function() m(x, cell.randn({ 5, 2, 8 }), cell.randn({ 5, 2, 8 })) end, "ValueError",
        "batch size")
      H.expect_error(function() m(x, x, x, { mask = 1 }) end, "TypeError", "mask")
    end)
  end)
end)
