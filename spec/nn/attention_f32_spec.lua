-- attention_f32_spec.lua - the float32 form of
-- cell.ops.scaled_dot_product_attention for heads of at most 128 x 128
-- scores (float32 scores and weights, float32 gemms on the operands read
-- in place through their strides) against the float64 form on the same
-- values: random shapes (one to three leading dimensions, L and S on both
-- sides of the dense bound), strided views as nn.MultiheadAttention hands
-- them over, causal, bool and float masks that broadcast, rows with every
-- key masked, and dropout with the same seed. Output and the gradients of
-- query, key and value within float32 rounding of the float64 values.
local H = require "helpers"
local cell = H.cell
local sdpa = cell.ops.scaled_dot_product_attention

local f32, f64 = cell.float32, cell.float64

--- Largest |a - b| over the elements, relative to max(1, max |b|); NaN in
-- b must be NaN in a.
local function rel_err(a, b)
  local fa, fb = H.flatten(a:totable()), H.flatten(b:totable())
  assert.are.equal(#fb, #fa)
  local worst, scale = 0, 1
  for i = 1, #fb do
    if fb[i] == fb[i] and math.abs(fb[i]) > scale then scale = math.abs(fb[i]) end
  end
  for i = 1, #fb do
    if fb[i] ~= fb[i] then
      assert.is_true(fa[i] ~= fa[i], "NaN expected at " .. i)
    else
      local d = math.abs(fa[i] - fb[i])
      if d > worst then worst = d end
    end
  end
  return worst / scale
end

--- q, k, v of the given geometry; `strided` builds them as the
-- {N, H, T, hd} views of {N, T, H * hd} tensors that MultiheadAttention
-- passes (lead must then be {N, H}).
local function operands(lead, L, S, E, Ev, strided)
  local function make(T, D)
    if strided then
      local N, Hh = lead[1], lead[2]
      return cell.randn({ N, T, Hh * D }, f64):reshape({ N, T, Hh, D }):transpose(2, 3)
    end
    local shape = {}
    for i = 1, #lead do shape[i] = lead[i] end
    shape[#shape + 1] = T
    shape[#shape + 1] = D
    return cell.randn(shape, f64)
  end
  return make(L, E), make(S, E), make(S, Ev)
end

--- Output and the three gradients of sum(sdpa(q, k, v, o) * sens), the
-- generator at seed before the call.
local function run(q, k, v, o, sens, seed)
  cell.set_seed(seed)
  local out
  local g = cell.grad(function(a, b, c)
    out = sdpa(a, b, c, o)
    return (out * sens):sum()
  end, { 1, 2, 3 })(q, k, v)
  return out, g
end

local function compare(lead, L, S, E, Ev, opts)
  local q, k, v = operands(lead, L, S, E, Ev, opts.strided)
  -- float32 values, and the same values in float64
  local q32, k32, v32 = q:astype(f32), k:astype(f32), v:astype(f32)
  local q64, k64, v64 = q32:astype(f64), k32:astype(f64), v32:astype(f64)
  if opts.strided then -- keep the float32 operands strided views
    local function view(t32, T, D)
      return t32:transpose(2, 3):contiguous():reshape({ lead[1], T, lead[2] * D }):reshape({ lead[1], T, lead[2], D })
        :transpose(2, 3)
    end
    q32, k32, v32 = view(q32, L, E), view(k32, S, E), view(v32, S, Ev)
    if lead[2] > 1 and L > 1 then assert.is_false(q32:is_contiguous()) end
  end
  local oshape = {}
  for i = 1, #lead do oshape[i] = lead[i] end
  oshape[#oshape + 1] = L
  oshape[#oshape + 1] = Ev
  local sens64 = cell.randn(oshape, f64):astype(f32):astype(f64)
  local o32, o64 = { is_causal = opts.causal, dropout_p = opts.p }, { is_causal = opts.causal, dropout_p = opts.p }
  if opts.mask then
    o64.attn_mask = opts.mask
    o32.attn_mask = opts.mask.dtype == cell.bool and opts.mask or opts.mask:astype(f32)
    if opts.mask.dtype ~= cell.bool then o64.attn_mask = o32.attn_mask:astype(f64) end
  end
  local out32, g32 = run(q32, k32, v32, o32, sens64:astype(f32), 11)
  local out64, g64 = run(q64, k64, v64, o64, sens64, 11)
  assert.are.equal("float32", out32.dtype.name)
  local what = ("lead %s, L %d, S %d, E %d, Ev %d%s%s%s%s"):format(H.shape_str(lead), L, S, E, Ev,
    opts.causal and ", causal" or "", opts.mask and (", mask " .. opts.mask.dtype.name) or "",
    opts.p > 0 and (", dropout " .. opts.p) or "", opts.strided and ", strided" or "")
  local tol = 3e-5
  local e = rel_err(out32, out64)
  assert.is_true(e <= tol, ("%s: output off by %g"):format(what, e))
  for i, name in ipairs({ "query", "key", "value" }) do
    e = rel_err(g32[i], g64[i])
    assert.is_true(e <= tol, ("%s: grad %s off by %g"):format(what, name, e))
  end
end

describe("ops.scaled_dot_product_attention in float32", function()
  it("matches the float64 form over random shapes, masks, causal and dropout", function()
    math.randomseed(20261203)
    for _ = 1, 60 do
      local nl = math.random(1, 3)
      local lead = {}
      for i = 1, nl do lead[i] = math.random(1, 3) end
      local big = math.random() < 0.15
      local L = big and math.random(100, 140) or math.random(1, 40)
      local S = big and math.random(100, 140) or math.random(1, 40)
      local E, Ev = math.random(1, 20), math.random(1, 20)
      local opts = { causal = math.random() < 0.5, p = math.random() < 0.2 and 0.3 or 0 }
      local r = math.random()
      if r < 0.2 then -- bool mask {L, S}, some rows wholly masked
        opts.mask = cell.rand({ L, S }, f64):gt(0.3)
      elseif r < 0.4 then -- float mask broadcasting over the first lead dimension
        local ms = {}
        for i = 1, nl do ms[i] = i == 1 and 1 or lead[i] end
        ms[nl + 1], ms[nl + 2] = L, S
        opts.mask = cell.randn(ms, f64)
      end
      compare(lead, L, S, E, Ev, opts)
    end
  end)

  it("reads the strided {N, H, T, hd} views of MultiheadAttention in place", function()
    math.randomseed(7)
    for _ = 1, 10 do
      local lead = { math.random(1, 4), math.random(1, 4) }
      local L = math.random(1, 40)
      local E = math.random(1, 16)
      compare(lead, L, L, E, E, { causal = math.random() < 0.5, p = 0, strided = true })
    end
  end)

  it("keeps the heads layout of {..., H, T, hd} views of {..., T, H * hd}: output and gradients", function()
    math.randomseed(31)
    for trial = 1, 12 do
      local lead = { math.random(1, 3), math.random(1, 4) }
      if trial % 3 == 0 then table.insert(lead, 1, math.random(1, 2)) end -- {A, N, H, T, hd}
      local nl = #lead
      local Hh, L, S, E = lead[nl], math.random(1, 20), math.random(1, 20), math.random(1, 12)
      local function flat(T)
        local f = {}
        for i = 1, nl - 1 do f[i] = lead[i] end
        f[nl], f[nl + 1] = T, Hh * E
        return f
      end
      local function heads(t, T)
        local split = {}
        for i = 1, nl - 1 do split[i] = lead[i] end
        split[nl], split[nl + 1], split[nl + 2] = T, Hh, E
        return t:reshape(split):transpose(nl, nl + 1)
      end
      local bq, bk, bv = cell.randn(flat(L)), cell.randn(flat(S)), cell.randn(flat(S))
      local sens = cell.randn(heads(cell.zeros(flat(L)), L).shape)
      local opts = { is_causal = trial % 2 == 0 }
      local seen = {}
      -- the gradients reaching the heads views, as the kernel gives them (hooks see them before any copy)
      local function loss(a, b, c, contig)
        local q, k, v = heads(a, L), heads(b, S), heads(c, S)
        if contig then q, k, v = q:contiguous(), k:contiguous(), v:contiguous() end
        for i, t in ipairs({ q, k, v }) do t:register_hook(function(g) seen[i] = g end) end
        local out = sdpa(q, k, v, opts)
        seen.out = out
        return (out * sens):sum()
      end
      local g = cell.grad(function(a, b, c) return loss(a, b, c, false) end, { 1, 2, 3 })(bq, bk, bv)
      local out, hooked = seen.out, { seen[1], seen[2], seen[3] }
      local gc = cell.grad(function(a, b, c) return loss(a, b, c, true) end, { 1, 2, 3 })(bq, bk, bv)
      local outc = seen.out
      local what = ("lead %s, L %d, S %d, E %d"):format(H.shape_str(lead), L, S, E)
      assert.is_true(rel_err(out, outc) <= 1e-6, what .. ": output")
      for i = 1, 3 do assert.is_true(rel_err(g[i], gc[i]) <= 1e-6, what .. ": gradient " .. i) end
      -- contiguous operands give contiguous results; the views' come back in their layout
      assert.is_true(outc:is_contiguous() and seen[1]:is_contiguous() and seen[3]:is_contiguous(), what)
      local function back(t) return t:transpose(nl, nl + 1):is_contiguous() end
      assert.is_true(back(out), what .. ": output layout")
      for i = 1, 3 do assert.is_true(back(hooked[i]), what .. ": gradient layout " .. i) end
    end
  end)

  it("gives the same result whatever the thread count", function()
    local q, k, v = cell.randn({ 8, 4, 32, 16 }), cell.randn({ 8, 4, 32, 16 }), cell.randn({ 8, 4, 32, 16 })
    local sens = cell.randn({ 8, 4, 32, 16 })
    local prev = cell.get_num_threads()
    local res = {}
    for t = 1, 2 do
      cell.set_num_threads(t)
      local out, g = run(q, k, v, { is_causal = true }, sens, 1)
      res[t] = { out, g[1], g[2], g[3] }
    end
    cell.set_num_threads(prev)
    for i = 1, 4 do H.assert_close(res[2][i], res[1][i]:totable(), 0) end
  end)

  it("keeps a non-finite gradient's NaN where the row-wise form gives it", function()
    local q, k, v = cell.randn({ 1, 2, 5, 4 }), cell.randn({ 1, 2, 5, 4 }), cell.randn({ 1, 2, 5, 4 })
    local sens = cell.ones({ 1, 2, 5, 4 })
    local g64 = cell.grad(function(a) return (sdpa(a, k:astype(f64), v:astype(f64)) * sens:astype(f64) * math.huge)
      :sum() end)(q:astype(f64))
    local g32 = cell.grad(function(a) return (sdpa(a, k, v) * sens * math.huge):sum() end)(q)
    local a, b = H.flatten(g32:totable()), H.flatten(g64:totable())
    for i = 1, #b do assert.are.equal(b[i] ~= b[i], a[i] ~= a[i]) end
  end)
end)
