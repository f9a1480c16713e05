-- bf16_threads_spec.lua - the bfloat16 kernels at 1 and at 2 threads: the
-- gemm cut into one block per thread (rows or columns, whichever side of C
-- is longer), a Dense layer's two gradient products in one fork, attention
-- over heads views (its results keep the heads layout), GELU around the
-- polynomial/tail boundary, max_pool2d and batch_norm on narrow inputs as
-- they lie. Each result is the same at 1 and 2 threads (an element sums in
-- the same order however the work is cut) and within bfloat16 tolerance of
-- float64 (half a step of the result plus float32 accumulation, 1e-5 of
-- the sum of |a||b|), or, for the pools and batch_norm, exactly float32's
-- result rounded once.
local H = require "helpers"
local T = require "helpers.threads"
local cell = H.cell

local bf, f64 = cell.bfloat16, cell.float64

local function excess(got, ref, bound)
  return ((got:astype(f64) - ref):abs() - ref:abs() * 2 ^ -8 - bound - 1e-30):max():item()
end

local function same(a, b, what)
  assert.are.equal(0, (a:astype(f64) - b:astype(f64)):abs():max():item(), what .. ": 1 and 2 threads differ")
end

local function rnd(shape) return cell.randn(shape):astype(bf) end

describe("bfloat16 gemm at 2 threads", function()
  it("cuts tall and wide products (any strides, edge tiles) as 1 thread computes them", function()
    cell.set_seed(41)
    math.randomseed(41)
    -- tall (rows split), wide (columns split), both past 2^20 multiply-adds
    local shapes = { { 300, 40, 100 }, { 40, 333, 90 }, { 129, 65, 131 } }
    for _ = 1, 3 do shapes[#shapes + 1] = { math.random(60, 260), math.random(20, 260), math.random(70, 200) } end
    for _, s in ipairs(shapes) do
      local m, n, k = s[1], s[2], s[3]
      for _, ta in ipairs({ false, true }) do
        for _, tb in ipairs({ false, true }) do
          local a = ta and rnd({ k, m }):transpose(1, 2) or rnd({ m, k })
          local b = tb and rnd({ n, k }):transpose(1, 2) or rnd({ k, n })
          if not ta and not tb then a = rnd({ m, 2 * k })[{ {}, { 1, 2 * k, 2 } }] end -- strided columns
          local one = T.at(1, function() return a:matmul(b) end)
          local two = T.at(2, function() return a:matmul(b) end)
          local what = ("%dx%dx%d ta=%s tb=%s"):format(m, n, k, tostring(ta), tostring(tb))
          same(one, two, what)
          local a64, b64 = a:astype(f64), b:astype(f64)
          local e = excess(two, a64:matmul(b64), a64:abs():matmul(b64:abs()) * 1e-5)
          assert.is_true(e <= 0, what .. ": past the bound by " .. e)
        end
      end
    end
  end)

  it("runs a Dense layer's input and weight gradients in one fork, as 1 thread does", function()
    cell.set_seed(42)
    for _, s in ipairs({ { 512, 64, 64 }, { 300, 256, 64 }, { 257, 64, 256 }, { 64, 8, 5 } }) do
      local m, din, dout = s[1], s[2], s[3]
      local x = rnd({ m, din })
      local xs = rnd({ din, m }):transpose(1, 2) -- a transposed input
      local w, b, gy = rnd({ dout, din }), rnd({ dout }), rnd({ m, dout })
      for _, xin in ipairs({ x, xs }) do
        local function grads()
          return cell.grad(function(xx, ww, bb) return (cell.ops.dense(xx, ww, bb) * gy):sum() end, { 1, 2, 3 })(xin, w, b)
        end
        local g1, g2 = T.at(1, grads), T.at(2, grads)
        local what = ("dense %dx%d->%d"):format(m, din, dout)
        for i = 1, 3 do
          assert.are.equal(bf, g2[i].dtype)
          same(g1[i], g2[i], what .. " grad " .. i)
        end
        local x64, w64, g64 = xin:astype(f64), w:astype(f64), gy:astype(f64)
        local e = excess(g2[1], g64:matmul(w64), g64:abs():matmul(w64:abs()) * 1e-5)
        assert.is_true(e <= 0, what .. " gx: past the bound by " .. e)
        e = excess(g2[2], g64:transpose(1, 2):matmul(x64), g64:abs():transpose(1, 2):matmul(x64:abs()) * 1e-5)
        assert.is_true(e <= 0, what .. " gw: past the bound by " .. e)
      end
    end
  end)
end)

describe("bfloat16 attention over heads views", function()
  it("keeps the heads layout in its results and gradients, as a contiguous copy computes them", function()
    cell.set_seed(43)
    math.randomseed(43)
    for _ = 1, 4 do
      local N, L, Hh, hd = math.random(1, 3), math.random(2, 24), math.random(2, 4), math.random(2, 16)
      local E = Hh * hd
      -- {N, L, E} projections split into heads: {N, H, L, hd} views
      local function heads(t) return t:reshape({ N, L, Hh, hd }):transpose(2, 3) end
      local q, k, v = heads(rnd({ N, L, E })), heads(rnd({ N, L, E })), heads(rnd({ N, L, E }))
      local gy = rnd({ N, Hh, L, hd })
      local causal = math.random() < 0.5
      local function run(qq, kk, vv)
        local out = cell.ops.scaled_dot_product_attention(qq, kk, vv, { is_causal = causal })
        local g = cell.grad(function(a, b2, c)
          return (cell.ops.scaled_dot_product_attention(a, b2, c, { is_causal = causal }) * gy):sum()
        end, { 1, 2, 3 })(qq, kk, vv)
        return out, g
      end
      for _, n in ipairs({ 1, 2 }) do
        local res = T.at(n, function()
          local o, gg = run(q, k, v)
          return { o, gg }
        end)
        local out, g = res[1], res[2]
        assert.is_true(out:transpose(2, 3):is_contiguous(), "the output keeps the heads layout")
        local ref, gref = run(q:contiguous(), k:contiguous(), v:contiguous())
        same(ref, out, "output")
        for i = 1, 3 do same(gref[i], g[i], "gradient " .. i) end
        -- against float64 attention within bfloat16 tolerance
        local q64, k64, v64 = q:astype(f64), k:astype(f64), v:astype(f64)
        local want = cell.ops.scaled_dot_product_attention(q64, k64, v64, { is_causal = causal })
        -- one rounding of a float32 result: half a step of the largest value
        local e = (out:astype(f64) - want):abs():max():item() / want:abs():max():item()
        assert.is_true(e <= 2 ^ -8 + 1e-4, "output off by " .. e)
      end
    end
  end)
end)

describe("bfloat16 GELU around its branch boundary", function()
  it("is within half a step of float64 on both sides of |x| = sqrt 2, strided too", function()
    local xs = {}
    for i = -400, 400 do xs[#xs + 1] = math.sqrt(2) * (1 + i / 40000) * (i % 2 == 0 and 1 or -1) end
    for i = 1, 200 do xs[#xs + 1] = (i - 100) / 17 end
    local x = cell.tensor(xs, f64):astype(bf)
    local strided = cell.stack({ x, x }, 2)[{ {}, 1 }]
    for _, src in ipairs({ x, strided }) do
      for _, n in ipairs({ 1, 2 }) do
        local y = T.at(n, function() return cell.ops.gelu(src) end)
        assert.are.equal(bf, y.dtype)
        local x64 = src:astype(f64)
        local ref = cell.ops.gelu(x64)
        local e = ((y:astype(f64) - ref):abs() - ref:abs() * 2 ^ -8 - x64:abs() * 2 ^ -23 - 1e-30):max():item()
        assert.is_true(e <= 0, "gelu past half a step by " .. e)
        local g = rnd(src.shape)
        local gx = T.at(n, function()
          return cell.grad(function(t) return cell.ops.gelu(t) end, 1, nil, false, true)(src, g)
        end)
        local phi = (x64 * (-0.5) * x64):exp() * 0.3989422804014327
        local Phi = (cell.ops.erf(x64 * 0.7071067811865476) + 1) * 0.5
        local gref = g:astype(f64) * (Phi + x64 * phi)
        e = ((gx:astype(f64) - gref):abs() - gref:abs() * 2 ^ -8 - g:astype(f64):abs() * 2 ^ -21 - 1e-30):max():item()
        assert.is_true(e <= 0, "gelu gradient past half a step by " .. e)
      end
    end
  end)
end)

describe("bfloat16 max_pool2d (on bfloat16 as it lies)", function()
  -- the maxima are inputs and a position's gradient one float32 sum
  -- rounded once: the float32 computation rounded, exactly
  it("selects and scatters as float32 does, 2 x 2 windows and others, strided, with NaN, at 1 and 2 threads", function()
    cell.set_seed(44)
    math.randomseed(44)
    local cases = { { k = 2 }, { k = 2, stride = 2, ceil_mode = true }, { k = 3, stride = 2, padding = 1 },
      { k = 3, stride = 1 }, { k = 2, dilation = 2 }, { k = { 2, 3 }, stride = { 2, 1 } } }
    for _, c in ipairs(cases) do
      for _ = 1, 2 do
        local N, C, Hh, W = math.random(1, 3), math.random(1, 4), math.random(5, 33), math.random(5, 33)
        local x = cell.randn({ N, C, Hh, W }):astype(bf)
        if math.random() < 0.5 then x = cell.randn({ N, C, W, Hh }):astype(bf):transpose(3, 4) end -- strided
        x[1][1][2][2] = 0 / 0
        x[N][C][Hh][W] = 1 / 0
        local opts = { stride = c.stride, padding = c.padding, dilation = c.dilation, ceil_mode = c.ceil_mode,
          return_indices = true }
        local y32, i32 = cell.ops.max_pool2d(x:astype(cell.float32), c.k, opts)
        local gy = cell.randn(y32.shape):astype(bf)
        local g32 = cell.grad(function(t) return (cell.ops.max_pool2d(t, c.k, opts) * gy:astype(cell.float32)):sum() end)(
          x:astype(cell.float32)):astype(bf)
        for _, n in ipairs({ 1, 2 }) do
          local r = T.at(n, function()
            local y, i = cell.ops.max_pool2d(x, c.k, opts)
            local g = cell.grad(function(t) return (cell.ops.max_pool2d(t, c.k, opts) * gy):sum() end)(x)
            return { y, i, g }
          end)
          local what = ("k %s %dx%dx%dx%d"):format(tostring(c.k), N, C, Hh, W)
          assert.are.equal(bf, r[1].dtype, what)
          assert.are.equal(bf, r[3].dtype, what)
          assert.is_true(r[2]:eq(i32):all():item(), what .. ": indices differ")
          local y, want = r[1]:astype(f64), y32:astype(f64)
          local eq = y:eq(want):logical_or(y:isnan():logical_and(want:isnan()))
          assert.is_true(eq:all():item(), what .. ": maxima differ")
          same(g32, r[3], what .. " gradient")
        end
      end
    end
  end)
end)

describe("batch_norm on bfloat16 and float16 inputs (float32 gamma and beta)", function()
  -- computed as float32's path on the widened input: its results rounded
  -- once, exactly (output, input gradient; gamma and beta gradients equal)
  it("gives float32's results rounded, training and not, at 1 and 2 threads", function()
    cell.set_seed(45)
    math.randomseed(45)
    local f32 = cell.float32
    for _, dt in ipairs({ bf, cell.float16 }) do
      for _, shp in ipairs({ { 4, 3, 5, 5 }, { 32, 8, 16, 16 }, { 3, 5, 7, 1 }, { 2, 4, 1, 9 } }) do
        for _, training in ipairs({ true, false }) do
          local C = shp[2]
          local x = cell.randn(shp):astype(dt)
          if math.random() < 0.5 then x = cell.randn({ shp[1], C, shp[4], shp[3] }):astype(dt):transpose(3, 4) end
          local w, b, gy = cell.rand({ C }) + 0.5, cell.randn({ C }), cell.randn(shp):astype(dt)
          local rm0, rv0 = cell.randn({ C }) * 0.1, cell.rand({ C }) + 0.5
          local opts = { training = training, momentum = 0.1, eps = 1e-5 }
          local function run(xx, g)
            local rm, rv = rm0:clone(), rv0:clone()
            local y = cell.ops.batch_norm(xx, rm, rv, w, b, opts)
            local grads = cell.grad(function(a, ww, bb)
              return (cell.ops.batch_norm(a, rm0:clone(), rv0:clone(), ww, bb, opts):astype(f32) * g:astype(f32)):sum()
            end, { 1, 2, 3 })(xx, w, b)
            return { y, grads[1], grads[2], grads[3], rm, rv }
          end
          local want = run(x:astype(f32), gy)
          for _, n in ipairs({ 1, 2 }) do
            local got = T.at(n, function() return run(x, gy) end)
            local what = ("%s %s training=%s, %d threads"):format(tostring(dt), H.shape_str(shp), tostring(training), n)
            assert.are.equal(dt, got[1].dtype, what)
            assert.are.equal(dt, got[2].dtype, what)
            same(want[1]:astype(dt), got[1], what .. " output")
            same(want[2]:astype(dt), got[2], what .. " input gradient")
            for i = 3, 6 do same(want[i], got[i], what .. " result " .. i) end
          end
        end
      end
    end
  end)
end)
