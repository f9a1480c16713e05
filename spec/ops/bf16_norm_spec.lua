-- bf16_norm_spec.lua - layer_norm's bfloat16 rows (src/ops/norm_lowp.c:
-- float32 sums and arithmetic, each output rounded once) against a float64
-- computation on the same rounded operands over random shapes (odd rows,
-- one to three normalised dimensions, strided inputs, weight and bias in
-- float32, bfloat16 or absent), forward and the three gradients; the same
-- results at 1 and 2 threads; LayerNorm under amp's O2 taking its bfloat16
-- input as it is; and the bfloat16 gemm's split over two threads giving
-- the products of one.
local H = require "helpers"
local TH = require "helpers.threads"
local cell = H.cell
local nn, amp = cell.nn, cell.amp
local bf, f32, f64 = cell.bfloat16, cell.float32, cell.float64
local HALF = 2 ^ -8 -- half a bfloat16 step, relative
local F32 = 2 ^ -16 -- float32 sums and products, with room (relative to the terms' size)

local function pair(shape, scale, shift)
  local t = (cell.randn(shape) * (scale or 1) + (shift or 0)):astype(bf)
  return t, t:astype(f64)
end

--- Largest excess of |got - ref| over half a step of ref plus slack.
local function excess(got, ref, slack)
  local bound = ref:abs() * HALF + slack + 1e-30
  return ((got:astype(f64) - ref):abs() - bound):max():item()
end

--- A random case: x of 1 to 3 leading and k trailing dimensions (some odd),
-- a strided view every third case; weight and bias of a dtype or absent.
local function case_of(case)
  local k = case % 3 + 1
  local trail, lead = {}, {}
  for i = 1, k do trail[i] = math.random(1, k == 1 and 200 or 9) end
  for i = 1, case % 2 + 1 do lead[i] = math.random(1, 13) end
  local shape = {}
  for _, v in ipairs(lead) do shape[#shape + 1] = v end
  for _, v in ipairs(trail) do shape[#shape + 1] = v end
  local x, x64 = pair(shape, 1 + case % 4, case % 5 - 2)
  if case % 3 == 0 then -- every other element of a wider tensor: strided rows
    local wide = shape[#shape]
    local s2 = {}
    for i, v in ipairs(shape) do s2[i] = v end
    s2[#s2] = 2 * wide
    local big = (cell.randn(s2) * 2):astype(bf)
    local idx = {}
    for i = 1, #s2 - 1 do idx[i] = {} end
    idx[#s2] = { 1, 2 * wide, 2 }
    x = big[idx]
    x64 = x:astype(f64)
  end
  local wdt = ({ f32, bf, false })[case % 3 + 1]
  local w, w64, b, b64
  if wdt then
    w = (cell.randn(trail) * 0.5 + 1):astype(wdt)
    b = (cell.randn(trail) * 0.3):astype(wdt)
    w64, b64 = w:astype(f64), b:astype(f64)
  end
  return x, x64, k, w, w64, b, b64
end

describe("layer_norm in bfloat16", function()
  it("matches float64 on the rounded operands, forward and the three gradients", function()
    math.randomseed(2718)
    cell.set_seed(2718)
    for case = 1, 36 do
      local x, x64, k, w, w64, b, b64 = case_of(case)
      local sens, sens64 = pair(x.shape)
      local args, args64, idx = { x }, { x64 }, { 1 }
      if w then
        args, args64, idx = { x, w, b }, { x64, w64, b64 }, { 1, 2, 3 }
      end
      local y, y64
      local g = cell.grad(function(a, c, d)
        y = cell.ops.layer_norm(a, k, c, d, 1e-5)
        return (y * sens):sum()
      end, idx)(H.unpack(args))
      local g64 = cell.grad(function(a, c, d)
        y64 = cell.ops.layer_norm(a, k, c, d, 1e-5)
        return (y64 * sens64):sum()
      end, idx)(H.unpack(args64))
      if cell.is_tensor(g) then g, g64 = { g }, { g64 } end
      assert.are.equal(bf, y.dtype)
      assert.are.equal(bf, g[1].dtype)
      local where = ("case %d, shape %s"):format(case, H.shape_str(x.shape))
      -- y = xhat w + b: float32 terms of up to |xhat w| + |b|
      local xh = cell.ops.layer_norm(x64, k, nil, nil, 1e-5)
      local mag = w and (xh * w64):abs() + b64:abs() or xh:abs()
      assert.is_true(excess(y, y64, mag * F32) <= 0, "forward, " .. where)
      -- gx = rstd (g w - mean(g w) - xhat mean(g w xhat)): terms of up to
      -- rstd (|g w| + max |g w| (1 + |xhat|)), rstd from x's spread
      local gw = w and sens64 * w64 or sens64
      local dims = {}
      for i = x.ndim - k + 1, x.ndim do dims[#dims + 1] = i end
      local var = x64:var(dims, 0, true)
      local rstd = (var + 1e-5):rsqrt()
      local gmax = gw:abs():amax(dims, true)
      local gmag = rstd * (gw:abs() + gmax * (xh:abs() + 1)) * 4
      assert.is_true(excess(g[1], g64[1], gmag * F32) <= 0, "gradient of x, " .. where)
      if w then
        -- column sums over the rows: |g| |xhat| and |g| summed, in float32 terms
        local lead = {}
        for i = 1, x.ndim - k do lead[i] = i end
        for j, term in ipairs({ (sens64 * xh):abs(), sens64:abs() }) do
          local got, ref = g[j + 1], g64[j + 1]
          assert.are.equal(w.dtype, got.dtype)
          local slack = term:sum(lead) * F32
          if w.dtype == bf then slack = slack + ref:abs() * HALF end
          local e = ((got:astype(f64) - ref):abs() - slack - 1e-30):max():item()
          assert.is_true(e <= 0, (j == 1 and "weight" or "bias") .. " gradient, " .. where .. ": " .. e)
        end
      end
    end
  end)

  it("gives the same results at 1 and at 2 threads (rows and column sums split)", function()
    cell.set_seed(31)
    local x = (cell.randn({ 300, 72 }) * 2):astype(bf)
    local w, b = cell.randn({ 72 }) + 1, cell.randn({ 72 })
    local gy = cell.randn({ 300, 72 }):astype(bf)
    local fn = function(a, c, d) return cell.ops.layer_norm(a, 1, c, d) end
    local r1 = TH.run_at(1, fn, { x, w, b }, gy)
    local r2 = TH.run_at(2, fn, { x, w, b }, gy)
    assert.are.same(r1, r2)
  end)

  it("keeps NaN and infinities of a row to that row", function()
    local x = cell.tensor({ { 1, 2, 3, 4 }, { 1, 0 / 0, 3, 4 }, { 1, 1 / 0, 3, 4 } }):astype(bf)
    local y = cell.ops.layer_norm(x, 1):astype(f64):totable()
    for j = 1, 4 do
      assert.is_true(y[2][j] ~= y[2][j])
      assert.is_true(y[3][j] ~= y[3][j])
    end
    local ref = cell.ops.layer_norm(cell.tensor({ { 1, 2, 3, 4 } }, f64), 1):totable()[1]
    for j = 1, 4 do assert.is_true(math.abs(y[1][j] - ref[j]) <= math.abs(ref[j]) * HALF + 1e-6) end
  end)
end)

describe("LayerNorm under amp O2 (bfloat16)", function()
  it("takes the bfloat16 input as it is and matches the cast-to-float32 path within a step", function()
    cell.set_seed(7)
    local ln = nn.LayerNorm({ 24 })
    ln.gamma:set_data(cell.randn({ 24 }) * 0.5 + 1)
    ln.beta:set_data(cell.randn({ 24 }) * 0.2)
    local net = nn.SequentialCell({ nn.Dense(16, 24), ln })
    amp.auto_mixed_precision(net, "O2", bf)
    local x = cell.randn({ 10, 16 })
    local y
    local grads = cell.grad(function(a)
      y = net(a)
      return y:astype(f32):sum()
    end, nil, net:trainable_params())(x)
    assert.are.equal(f32, y.dtype) -- O2 hands the network's output back in float32 (bfloat16 values)
    assert.is_true(y:astype(bf):astype(f32):eq(y):all():item())
    for _, gr in ipairs(grads) do assert.are.equal(f32, gr.dtype) end
    -- the reference: the Dense output (bfloat16) cast to float32, normalised
    -- in float32, rounded to bfloat16
    local h = net[1](x)
    assert.are.equal(bf, h.dtype)
    local ref = cell.ops.layer_norm(h:astype(f64), 1, ln.gamma:astype(f64), ln.beta:astype(f64), ln.epsilon)
    local xh = cell.ops.layer_norm(h:astype(f64), 1, nil, nil, ln.epsilon)
    local mag = (xh * ln.gamma:astype(f64)):abs() + ln.beta:astype(f64):abs()
    assert.is_true(excess(y, ref, mag * F32) <= 0)
    -- gamma's gradient: sum over rows of xhat (the loss's gradient is 1)
    local ggamma = grads[#grads - 1]
    local gref = xh:sum(1)
    local e = ((ggamma:astype(f64) - gref):abs() - xh:abs():sum(1) * F32 - 1e-30):max():item()
    assert.is_true(e <= 0, "gamma's gradient off by " .. e)
  end)

  it("casts to float32 when gamma applies to fewer axes than are normalised", function()
    cell.set_seed(8)
    local ln = nn.LayerNorm({ 6 }, -2, -1)
    amp.auto_mixed_precision(ln, "O2", bf)
    local x = cell.randn({ 3, 4, 6 }):astype(bf)
    local y = ln(x)
    assert.are.equal(f32, y.dtype) -- the network's own output comes back in float32 under O2
    local ref = cell.ops.layer_norm(x:astype(f64), 2)
    assert.is_true(excess(y, ref, ref:abs() * F32 + 1e-6) <= 0)
  end)
end)

describe("the bfloat16 gemm on two threads", function()
  it("gives the products of one thread, bit for bit (packing and tiles split)", function()
    cell.set_seed(9)
    for _, s in ipairs({ { 512, 64, 64 }, { 97, 130, 75 }, { 64, 64, 700 }, { 300, 33, 129 } }) do
      local a, b = cell.randn({ s[1], s[3] }):astype(bf), cell.randn({ s[3], s[2] }):astype(bf)
      local p1 = TH.at(1, function() return a:matmul(b):astype(f64):totable() end)
      local p2 = TH.at(2, function() return a:matmul(b):astype(f64):totable() end)
      assert.are.same(p1, p2)
      local t1 = TH.at(1, function() return a.T:matmul(a):astype(f64):totable() end)
      local t2 = TH.at(2, function() return a.T:matmul(a):astype(f64):totable() end)
      assert.are.same(t1, t2)
    end
  end)
end)

describe("bfloat16 dense and attention on two threads", function()
  it("give the results and gradients of one thread (bias sums and widened heads split)", function()
    cell.set_seed(10)
    local x = cell.randn({ 600, 40 }):astype(bf)
    local w, b = cell.randn({ 130, 40 }):astype(bf), cell.randn({ 130 }):astype(bf)
    local gy = cell.randn({ 600, 130 }):astype(bf)
    local dense = function(a, c, d) return cell.ops.dense(a, c, d) end
    assert.are.same(TH.run_at(1, dense, { x, w, b }, gy), TH.run_at(2, dense, { x, w, b }, gy))
    -- {N, T, H, hd} transposed to {N, H, T, hd}: strided heads
    local q = cell.randn({ 16, 32, 4, 16 }):astype(bf):transpose(2, 3)
    local k = cell.randn({ 16, 32, 4, 16 }):astype(bf):transpose(2, 3)
    local v = cell.randn({ 16, 32, 4, 16 }):astype(bf):transpose(2, 3)
    local go = cell.randn({ 16, 4, 32, 16 }):astype(bf)
    local attn = function(a, c, d) return cell.ops.scaled_dot_product_attention(a, c, d, { is_causal = true }) end
    assert.are.same(TH.run_at(1, attn, { q, k, v }, go), TH.run_at(2, attn, { q, k, v }, go))
  end)
end)
