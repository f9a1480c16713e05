-- pool3d_spec.lua - the C max_pool3d and avg_pool3d (src/ops/pool3d.c,
-- src/autograd/rules_conv.c) behind cell.ops.max_pool3d / avg_pool3d:
-- random shapes and options against the separable composition of 2-D pools
-- the Lua layer used before (kept here as the reference): values, indices
-- and gradients; NaN windows; the half types; a named error for each bad
-- input. PyTorch's values are checked in spec/nn/pooling_nd_spec.lua.
local cell = require "cell"
local core = require "cell.core"
local H = require "helpers"
local ops = cell.ops
local nnops = core.nnops
local f64 = cell.float64

-- The reference: pool H and W with the 2-D kernel over {N, C * D, H, W},
-- then D with a 1 x kd pool over the depth columns.
local Ref = {}

function Ref.max(x, k, s, pads, dil, ceil)
  local N, C, D, Hh, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4], x.shape[5]
  local y1, i1 = ops.max_pool2d(x:reshape({ N, C * D, Hh, W }), { k[2], k[3] }, { stride = { s[2], s[3] },
    padding = { pads[3], pads[4], pads[5], pads[6] }, dilation = { dil[2], dil[3] }, ceil_mode = ceil,
    return_indices = true })
  local Ho, Wo = y1.shape[3], y1.shape[4]
  local t = y1:reshape({ N, C, D, Ho * Wo }):transpose(3, 4):reshape({ N, C * Ho * Wo, 1, D })
  local y2, i2 = ops.max_pool2d(t, { 1, k[1] }, { stride = { 1, s[1] }, padding = { 0, 0, pads[1], pads[2] },
    dilation = { 1, dil[1] }, ceil_mode = ceil, return_indices = true })
  local Do = y2.shape[4]
  local y = y2:reshape({ N, C, Ho * Wo, Do }):transpose(3, 4):reshape({ N, C, Do, Ho, Wo })
  local dsel = i2:reshape({ N, C, Ho * Wo, Do })
  local planes = i1:reshape({ N, C, D, Ho * Wo }):transpose(3, 4):contiguous()
  local idx = planes:gather(4, dsel) + (dsel - 1) * (Hh * W)
  return y, idx:transpose(3, 4):reshape({ N, C, Do, Ho, Wo })
end

function Ref.avg(x, k, s, pads, ceil, cip)
  local N, C, D, Hh, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4], x.shape[5]
  local y1 = ops.avg_pool2d(x:reshape({ N, C * D, Hh, W }), { k[2], k[3] }, { stride = { s[2], s[3] },
    padding = { pads[3], pads[4], pads[5], pads[6] }, ceil_mode = ceil, count_include_pad = cip })
  local Ho, Wo = y1.shape[3], y1.shape[4]
  local t = y1:reshape({ N, C, D, Ho * Wo }):transpose(3, 4):reshape({ N, C * Ho * Wo, 1, D })
  local y2 = ops.avg_pool2d(t, { 1, k[1] }, { stride = { 1, s[1] }, padding = { 0, 0, pads[1], pads[2] },
    ceil_mode = ceil, count_include_pad = cip })
  local Do = y2.shape[4]
  return y2:reshape({ N, C, Ho * Wo, Do }):transpose(3, 4):reshape({ N, C, Do, Ho, Wo })
end

describe("3-D pooling in C", function()
  it("matches the separable composition of 2-D pools on random shapes, values, indices and gradients", function()
    cell.set_seed(3)
    math.randomseed(3)
    local rnd, ran = math.random, 0
    for trial = 1, 30 do
      local k, s, dil, pads, sp = {}, {}, {}, {}, {}
      for i = 1, 3 do
        k[i], s[i], dil[i] = rnd(1, 3), rnd(1, 3), rnd(1, 2)
        pads[2 * i - 1], pads[2 * i] = rnd(0, math.floor(k[i] / 2)), rnd(0, math.floor(k[i] / 2))
        sp[i] = (k[i] - 1) * dil[i] + rnd(1, 5)
      end
      local ceil, cip = trial % 3 == 0, trial % 2 == 0
      local N, C = rnd(1, 2), rnd(1, 3)
      -- float64 normals: no ties, so both sides pick the same maximum
      local x = cell.randn({ N, C, sp[1], sp[2], sp[3] }, f64)
      if trial % 4 == 0 then x = x:transpose(4, 5):contiguous():transpose(4, 5) end
      local what = ("trial %d: x %s k %s s %s pads %s dil %s ceil %s cip %s"):format(trial, H.shape_str(x.shape),
        table.concat(k, ","), table.concat(s, ","), table.concat(pads, ","), table.concat(dil, ","), tostring(ceil),
        tostring(cip))
      local okm, ym, im = pcall(Ref.max, x, k, s, pads, dil, ceil)
      if okm then
        ran = ran + 1
        local y, idx = nnops.max_pool3d(x, k, { stride = s, padding = pads, dilation = dil, ceil_mode = ceil,
          return_indices = true })
        H.assert_close(y, ym:totable(), 0, what .. " max")
        H.assert_close(idx, im:totable(), 0, what .. " indices")
        local gy = cell.randn(y.shape, f64)
        local g = cell.grad(function(a) return (nnops.max_pool3d(a, k, { stride = s, padding = pads, dilation = dil,
          ceil_mode = ceil }) * gy):sum() end)(x)
        local gr = cell.grad(function(a) return (Ref.max(a, k, s, pads, dil, ceil) * gy):sum() end)(x)
        H.assert_close(g, gr:totable(), 1e-12, what .. " max grad")
      end
      local oka, ya = pcall(Ref.avg, x, k, s, pads, ceil, cip)
      if oka then
        local y = nnops.avg_pool3d(x, k, { stride = s, padding = pads, ceil_mode = ceil, count_include_pad = cip })
        H.assert_close(y, ya:totable(), 1e-12, what .. " avg")
        local gy = cell.randn(y.shape, f64)
        local g = cell.grad(function(a) return (nnops.avg_pool3d(a, k, { stride = s, padding = pads, ceil_mode = ceil,
          count_include_pad = cip }) * gy):sum() end)(x)
        local gr = cell.grad(function(a) return (Ref.avg(a, k, s, pads, ceil, cip) * gy):sum() end)(x)
        H.assert_close(g, gr:totable(), 1e-12, what .. " avg grad")
      end
    end
    assert.is_true(ran >= 20, "only " .. ran .. " of 30 random cases had a valid reference")
  end)

  it("records MaxPool3dBackward and AvgPool3dBackward", function()
    local x = cell.randn({ 1, 1, 4, 4, 4 }):requires_grad_()
    assert.are.equal("MaxPool3dBackward", nnops.max_pool3d(x, 2).grad_fn)
    assert.are.equal("AvgPool3dBackward", nnops.avg_pool3d(x, 2).grad_fn)
  end)

  it("lets a NaN win its window, and computes the half types through float32", function()
    local x = cell.tensor({ 1, 2, 3, 4, 5, 6, 7, 8 }):reshape({ 1, 1, 2, 2, 2 })
    x = x:masked_fill(cell.tensor({ 0, 0, 0, 0, 0, 1, 0, 0 }):reshape({ 1, 1, 2, 2, 2 }):astype(cell.bool), 0 / 0)
    local y, idx = nnops.max_pool3d(x, 2, { return_indices = true })
    assert.is_true(y:item() ~= y:item())
    assert.are.equal(6, idx:item())
    for _, dt in ipairs({ "float16", "bfloat16" }) do
      local xh = cell.randn({ 2, 2, 4, 5, 3 }):astype(cell[dt])
      local m = nnops.max_pool3d(xh, { 2, 3, 2 }, { stride = 1, padding = { 1, 1, 0 } })
      local a = nnops.avg_pool3d(xh, { 2, 3, 2 }, { stride = 1, padding = { 1, 1, 0 } })
      assert.are.equal(cell[dt], m.dtype)
      assert.are.equal(cell[dt], a.dtype)
      local x32 = xh:astype(cell.float32)
      H.assert_close(m:astype(cell.float32), nnops.max_pool3d(x32, { 2, 3, 2 }, { stride = 1,
        padding = { 1, 1, 0 } }):totable(), 0)
      H.assert_close(a:astype(cell.float32), nnops.avg_pool3d(x32, { 2, 3, 2 }, { stride = 1,
        padding = { 1, 1, 0 } }):astype(cell[dt]):astype(cell.float32):totable(), 0)
    end
  end)

  it("raises a named error for each bad input", function()
    local x = cell.randn({ 1, 2, 4, 4, 4 })
    H.expect_error(function() nnops.max_pool3d(cell.randn({ 2, 4, 4, 4 }), 2) end, "ValueError",
      "max_pool3d: input must be 5-D", "(2, 4, 4, 4)")
    H.expect_error(function() nnops.avg_pool3d(x, 0) end, "ValueError", "kernel size must be at least 1")
    H.expect_error(function() nnops.avg_pool3d(x, 2, { stride = { 1, 0, 1 } }) end, "ValueError", "stride")
    H.expect_error(function() nnops.max_pool3d(x, 2, { padding = 2 }) end, "ValueError", "at most half the kernel")
    H.expect_error(function() nnops.max_pool3d(x, 2, { padding = -1 }) end, "ValueError", "non-negative")
    H.expect_error(function() nnops.max_pool3d(x, { 5, 2, 2 }) end, "ValueError", "larger than the padded input",
      "(1, 2, 4, 4, 4)")
    H.expect_error(function() nnops.max_pool3d(x, 2, { dilation = { 1, 4, 1 } }) end, "ValueError",
      "larger than the padded input")
    H.expect_error(function() nnops.max_pool3d(x:astype(cell.int32), 2) end, "TypeError", "float tensor", "Int32")
    H.expect_error(function() nnops.max_pool3d(x) end, "TypeError", "expected a kernel size")
    H.expect_error(function() nnops.max_pool3d(x, { 2, 2 }) end, "TypeError", "table of 3")
    H.expect_error(function() nnops.avg_pool3d(x, 2, { dilation = 1 }) end, "TypeError", "unknown option 'dilation'")
    H.expect_error(function() nnops.avg_pool3d(x, 2, { ceil_mode = 1 }) end, "TypeError", "ceil_mode must be a boolean")
    H.expect_error(function() ops.max_pool3d(x, 2, { padding = { 1, 2 } }) end, "ValueError", "padding")
    H.still_works()
  end)
end)
