-- conv3d_spec.lua - the C conv3d and conv_transpose3d (src/ops/conv3d.c,
-- src/autograd/rules_conv.c) behind cell.ops.conv3d / conv_transpose3d:
-- outputs and gradients against PyTorch 1.13 (spec/fixtures/gen_conv3d.py)
-- in float64 and float32, the half types, float64 gradchecks, random shapes
-- against the composition of 2-D convolutions the Lua layer used before
-- (kept here as the reference), and a named error for each bad input.
local cell = require "cell"
local core = require "cell.core"
local H = require "helpers"
local gradcheck = require "helpers.gradcheck"
local R = require "helpers.conv_nd_runner"
local ops = cell.ops
local nnops = core.nnops
local f64 = cell.float64
local fixtures = require "fixtures.conv3d_fixtures"

-- The reference: conv3d as one batched conv2d per kernel depth, and the
-- transposed convolution as zero insertion, padding and a stride-1 conv3d
-- with the flipped, in/out-swapped weight (the Lua layer's old path).
local Ref = {}

function Ref.conv3d(x, w, b, stride, pads, dil, groups)
  local list = { 0, 0, 0, 0, pads[1], pads[2] }
  local xp = (pads[1] ~= 0 or pads[2] ~= 0) and x:pad(list) or x
  local xs = x.shape
  local N, C, Dp, Hh, W = xs[1], xs[2], xp.shape[3], xs[4], xs[5]
  local kd = w.shape[3]
  local Do = math.floor((Dp - dil[1] * (kd - 1) - 1) / stride[1]) + 1
  local y
  for t = 0, kd - 1 do
    local idx = {}
    for o = 0, Do - 1 do idx[o + 1] = t * dil[1] + o * stride[1] + 1 end
    local x2 = xp:index_select(3, cell.tensor(idx, cell.int64)):permute({ 1, 3, 2, 4, 5 })
      :reshape({ N * Do, C, Hh, W })
    local part = ops.conv2d(x2, w:select(3, t + 1), t == 0 and b or nil, { stride = { stride[2], stride[3] },
      padding = { pads[3], pads[4], pads[5], pads[6] }, dilation = { dil[2], dil[3] }, groups = groups })
    y = y and y + part or part
  end
  local ys = y.shape
  return y:reshape({ N, Do, ys[2], ys[3], ys[4] }):permute({ 1, 3, 2, 4, 5 }):contiguous()
end

local function zero_insert(x, dim, s)
  local L = x.shape[dim]
  if s == 1 or L <= 1 then return x end
  local r = #x.shape
  local list = {}
  for _ = r + 1, dim + 2, -1 do
    list[#list + 1] = 0
    list[#list + 1] = 0
  end
  list[#list + 1] = 0
  list[#list + 1] = s - 1
  local shape = {}
  for i = 1, r do shape[i] = x.shape[i] end
  shape[dim] = L * s
  return x:unsqueeze(dim + 1):pad(list):reshape(shape):narrow(dim, 1, (L - 1) * s + 1)
end

function Ref.conv_transpose3d(x, w, b, stride, pads, opad, dil, groups)
  local ws = w.shape
  local cin_g, cout = ws[1] / groups, ws[2] * groups
  local wc = w:reshape({ groups, cin_g, ws[2], ws[3], ws[4], ws[5] }):transpose(2, 3)
    :reshape({ cout, cin_g, ws[3], ws[4], ws[5] }):flip({ 3, 4, 5 })
  local xz = x
  for i = 1, 3 do xz = zero_insert(xz, i + 2, stride[i]) end
  local list = {}
  for i = 3, 1, -1 do
    local full = dil[i] * (ws[i + 2] - 1)
    list[#list + 1] = full - pads[2 * i - 1]
    list[#list + 1] = full - pads[2 * i] + opad[i]
  end
  xz = xz:pad(list)
  return Ref.conv3d(xz, wc, b, { 1, 1, 1 }, { 0, 0, 0, 0, 0, 0 }, dil, groups)
end

describe("conv3d in C", function()
  for _, c in ipairs(fixtures.conv) do
    for _, d in ipairs(R.dtypes) do
      it(c.name .. " (" .. d[1] .. ")", function()
        local names = c.b and { "x", "w", "b" } or { "x", "w" }
        R.check(c, d[1], d[2], names, function(a) return ops.conv3d(a[1], a[2], a[3], c.opts) end)
      end)
    end
  end

  for _, c in ipairs(fixtures.convt) do
    for _, d in ipairs(R.dtypes) do
      it(c.name .. " (" .. d[1] .. ")", function()
        local names = c.b and { "x", "w", "b" } or { "x", "w" }
        R.check(c, d[1], d[2], names, function(a) return ops.conv_transpose3d(a[1], a[2], a[3], c.opts) end)
      end)
    end
  end

  it("records Conv3dBackward and ConvTranspose3dBackward", function()
    local x = cell.randn({ 1, 2, 3, 3, 3 }):requires_grad_()
    assert.are.equal("Conv3dBackward", nnops.conv3d(x, cell.randn({ 2, 2, 2, 2, 2 })).grad_fn)
    assert.are.equal("ConvTranspose3dBackward", nnops.conv_transpose3d(x, cell.randn({ 2, 1, 2, 2, 2 })).grad_fn)
    assert.is_nil(nnops.conv3d(cell.randn({ 1, 2, 3, 3, 3 }), cell.randn({ 2, 2, 2, 2, 2 })).grad_fn)
  end)

  it("passes float64 gradchecks with groups, dilation and output padding", function()
    local cases = {
      { function(a) return nnops.conv3d(a[1], a[2], a[3], { stride = { 1, 2, 1 }, padding = { 1, 0, 0, 1, 1, 0 },
          dilation = { 2, 1, 1 }, groups = 2 }) end, { { 2, 4, 4, 3, 3 }, { 2, 2, 2, 2, 2 }, { 2 } } },
      { function(a) return nnops.conv_transpose3d(a[1], a[2], a[3], { stride = { 2, 1, 2 }, padding = { 0, 1, 1 },
          output_padding = { 1, 0, 1 }, dilation = { 1, 2, 1 }, groups = 2 }) end,
        { { 1, 2, 2, 3, 2 }, { 2, 2, 2, 2, 2 }, { 4 } } },
    }
    for _, c in ipairs(cases) do
      local args = {}
      for i, s in ipairs(c[2]) do args[i] = cell.randn(s, f64) end
      gradcheck(function(x, w, b) return c[1]({ x, w, b }) end, args)
    end
  end)

  it("matches the composition of 2-D convolutions on random shapes, values and gradients", function()
    cell.set_seed(14)
    local rnd = math.random
    math.randomseed(14)
    local ran = 0
    for trial = 1, 24 do
      local groups = ({ 1, 1, 2, 3 })[rnd(4)]
      local cg, og = rnd(1, 3), rnd(1, 2)
      local C, O = cg * groups, og * groups
      local k, s, dl, sp, pads, opad = {}, {}, {}, {}, {}, {}
      for i = 1, 3 do
        k[i], s[i], dl[i] = rnd(1, 3), rnd(1, 3), rnd(1, 2)
        sp[i] = (k[i] - 1) * dl[i] + rnd(1, 5)
        pads[2 * i - 1], pads[2 * i] = rnd(0, 2), rnd(0, 2)
        opad[i] = rnd(0, s[i] - 1)
      end
      local N = trial == 1 and 7 or rnd(1, 3)
      if trial == 1 then sp = { 10, 10, 10 } end -- several chunks of samples
      local transposed = trial % 2 == 0
      local x = cell.randn({ N, C, sp[1], sp[2], sp[3] }, f64)
      if trial % 3 == 0 then x = cell.randn({ N, C, sp[1], sp[3], sp[2] }, f64):transpose(4, 5) end
      local w, b
      if transposed then
        w = cell.randn({ C, og, k[1], k[2], k[3] }, f64)
        b = trial % 4 == 0 and nil or cell.randn({ O }, f64)
      else
        w = cell.randn({ O, cg, k[1], k[2], k[3] }, f64)
        b = trial % 5 == 0 and nil or cell.randn({ O }, f64)
      end
      local what = ("trial %d: %s x %s w %s stride %s pads %s dil %s groups %d"):format(trial,
        transposed and "transposed" or "conv", H.shape_str(x.shape), H.shape_str(w.shape), table.concat(s, ","),
        table.concat(pads, ","), table.concat(dl, ","), groups)
      local function mine(xx, ww, bb)
        if transposed then
          return nnops.conv_transpose3d(xx, ww, bb, { stride = s, padding = pads, output_padding = opad,
            dilation = dl, groups = groups })
        end
        return nnops.conv3d(xx, ww, bb, { stride = s, padding = pads, dilation = dl, groups = groups })
      end
      local function ref(xx, ww, bb)
        if transposed then
          return Ref.conv_transpose3d(xx, ww, bb, s, pads, opad, dl, groups)
        end
        return Ref.conv3d(xx, ww, bb, s, pads, dl, groups)
      end
      local empty = false
      for i = 1, 3 do
        local xs = x.shape[i + 2]
        if transposed and (xs - 1) * s[i] - pads[2 * i - 1] - pads[2 * i] + dl[i] * (k[i] - 1) + opad[i] + 1 < 1 then
          empty = true
        end
      end
      if empty then H.expect_error(function() mine(x, w, b) end, "ValueError", "is not positive") end
      local ok = not empty and pcall(ref, x, w, b)
      if ok then
        ran = ran + 1
        local y, yr = mine(x, w, b), ref(x, w, b)
        H.assert_close(y, yr:totable(), 1e-10, what .. " y")
        local gy = cell.randn(y.shape, f64)
        local function grads(fn)
          if b then
            return cell.grad(function(a, c, d) return (fn(a, c, d) * gy):sum() end, { 1, 2, 3 })(x, w, b)
          end
          return cell.grad(function(a, c) return (fn(a, c) * gy):sum() end, { 1, 2 })(x, w)
        end
        local g, gr = grads(mine), grads(ref)
        for i = 1, #g do H.assert_close(g[i], gr[i]:totable(), 1e-9, what .. " grad " .. i) end
      end
    end
    assert.is_true(ran >= 16, "only " .. ran .. " of 24 random cases had a valid reference")
  end)

  it("takes a non-contiguous weight and computes the half types through float32", function()
    local x, w, b = cell.randn({ 2, 2, 3, 4, 4 }), cell.randn({ 3, 3, 2, 2, 2 }), cell.randn({ 3 })
    local wt = w:transpose(1, 2) -- {3, 3, ...} viewed in/out-swapped
    assert.is_false(wt:is_contiguous())
    local wx = cell.randn({ 2, 3, 3, 4, 4 })
    local want = nnops.conv3d(wx, wt:contiguous(), b, { padding = 1 })
    H.assert_close(nnops.conv3d(wx, wt, b, { padding = 1 }), want:totable(), 1e-6)
    assert.are.same({ 2, 3, 4, 5, 5 }, want.shape)
    for _, dt in ipairs({ "float16", "bfloat16" }) do
      local xh, wh, bh = x:astype(cell[dt]), cell.randn({ 3, 2, 2, 2, 2 }):astype(cell[dt]), b:astype(cell[dt])
      local y = nnops.conv3d(xh, wh, bh, { stride = 2 })
      assert.are.equal(cell[dt], y.dtype)
      local y32 = nnops.conv3d(xh:astype(cell.float32), wh:astype(cell.float32), bh:astype(cell.float32),
        { stride = 2 })
      H.assert_close(y:astype(cell.float32), y32:astype(cell[dt]):astype(cell.float32):totable(), 0)
      local t = nnops.conv_transpose3d(xh, cell.randn({ 2, 3, 2, 2, 2 }):astype(cell[dt]), bh, { stride = 2 })
      assert.are.equal(cell[dt], t.dtype)
      assert.are.same({ 2, 3, 6, 8, 8 }, t.shape)
    end
  end)

  it("handles an empty batch and zero channels", function()
    local y = nnops.conv3d(cell.randn({ 0, 2, 3, 3, 3 }), cell.randn({ 4, 2, 2, 2, 2 }))
    assert.are.same({ 0, 4, 2, 2, 2 }, y.shape)
    local b = cell.tensor({ 1.5, -2 })
    local z = nnops.conv3d(cell.randn({ 1, 0, 2, 2, 2 }), cell.randn({ 2, 0, 1, 1, 1 }), b)
    H.assert_close(z, { { { { { 1.5, 1.5 }, { 1.5, 1.5 } }, { { 1.5, 1.5 }, { 1.5, 1.5 } } },
      { { { -2, -2 }, { -2, -2 } }, { { -2, -2 }, { -2, -2 } } } } }, 0)
    local x = cell.randn({ 0, 2, 2, 2, 2 }):requires_grad_()
    local g = cell.grad(function(a) return nnops.conv_transpose3d(a, cell.randn({ 2, 3, 2, 2, 2 })):sum() end)(x)
    assert.are.same({ 0, 2, 2, 2, 2 }, g.shape)
  end)

  it("raises a named error for each bad input", function()
    local x, w = cell.randn({ 1, 2, 4, 4, 4 }), cell.randn({ 3, 2, 2, 2, 2 })
    H.expect_error(function() nnops.conv3d(cell.randn({ 2, 4, 4, 4 }), w) end, "ValueError",
      "conv3d: input must be 5-D", "(2, 4, 4, 4)")
    H.expect_error(function() nnops.conv3d(x, cell.randn({ 3, 2, 2, 2 })) end, "ValueError", "weight must be 5-D")
    H.expect_error(function() nnops.conv3d(x, cell.randn({ 3, 1, 2, 2, 2 })) end, "ValueError",
      "input has 2 channels but weight expects 1")
    H.expect_error(function() nnops.conv3d(x, w, { groups = 2 }) end, "ValueError", "groups 2 must divide")
    H.expect_error(function() nnops.conv3d(x, w, { groups = 0 }) end, "ValueError", "groups must be at least 1")
    H.expect_error(function() nnops.conv3d(x, cell.randn({ 3, 2, 5, 2, 2 })) end, "ValueError",
      "larger than the padded input", "(1, 2, 4, 4, 4)")
    H.expect_error(function() nnops.conv3d(x, w, { dilation = { 4, 1, 1 } }) end, "ValueError",
      "larger than the padded input")
    H.expect_error(function() nnops.conv3d(x, w, cell.randn({ 2 })) end, "ValueError", "bias must have shape (3)")
    H.expect_error(function() nnops.conv3d(x, w:astype(f64)) end, "TypeError", "input is Float32 but weight is Float64")
    H.expect_error(function() nnops.conv3d(x, w, cell.randn({ 3 }, f64)) end, "TypeError", "bias is Float64")
    H.expect_error(function() nnops.conv3d(x:astype(cell.int32), w:astype(cell.int32)) end, "TypeError",
      "must be a float tensor", "Int32")
    H.expect_error(function() nnops.conv3d(x, w, { stride = 0 }) end, "ValueError", "stride must be at least 1")
    H.expect_error(function() nnops.conv3d(x, w, { padding = -1 }) end, "ValueError", "padding", "non-negative")
    H.expect_error(function() nnops.conv3d(x, w, { padding = { 1, 1, 1, 1 } }) end, "TypeError",
      "padding must be an integer or a table of 3 or 6 integers, got a table of 4")
    H.expect_error(function() nnops.conv3d(x, w, { stride = { 1, 2 } }) end, "TypeError", "table of 3")
    H.expect_error(function() nnops.conv3d(x, w, { stride = 1.5 }) end, "TypeError", "stride must hold integers")
    H.expect_error(function() nnops.conv3d(x, w, { strides = 1 }) end, "TypeError", "unknown option 'strides'")
    H.expect_error(function() nnops.conv3d(x, w, { output_padding = 1 }) end, "TypeError", "unknown option 'output_padding'")
    H.expect_error(function() nnops.conv3d(x, w, "pad") end, "TypeError", "bias Tensor, nil or an options table")
    local wt = cell.randn({ 2, 3, 2, 2, 2 })
    H.expect_error(function() nnops.conv_transpose3d(x, wt, { stride = 2, output_padding = 2 }) end, "ValueError",
      "output_padding (2, 2, 2) must be smaller than the stride (2, 2, 2)")
    H.expect_error(function() nnops.conv_transpose3d(x, cell.randn({ 3, 3, 2, 2, 2 })) end, "ValueError",
      "input has 2 channels but weight")
    H.expect_error(function() nnops.conv_transpose3d(x, wt, { groups = 3 }) end, "ValueError", "groups 3 must divide")
    H.expect_error(function() nnops.conv_transpose3d(x, wt, cell.randn({ 2 })) end, "ValueError",
      "bias must have shape (3)")
    H.expect_error(function() nnops.conv_transpose3d(x, wt, { padding = { 3, 0, 0 } }) end, "ValueError",
      "output size -1 of spatial dimension 1 is not positive")
    H.expect_error(function() nnops.conv_transpose3d(x, wt, { stride = 2 ^ 31 }) end, "ValueError", "stride")
    H.expect_error(function() ops.conv3d(x, w, { padding = { 1, 2 } }) end, "ValueError", "padding")
    H.still_works()
  end)
end)
