-- pooling_options_spec.lua - ceil_mode with explicit padding, MaxPool2d's
-- dilation and return_indices, for cell.ops.max_pool2d / avg_pool2d and
-- nn.MaxPool2d / nn.AvgPool2d (src/ops/pool.c, lua/cell/nn/pooling.lua):
-- outputs, 1-based indices and gradients against PyTorch 1.13
-- (spec/fixtures/gen_index.py) in float32 and float64, on contiguous and
-- transposed inputs, and the misuses.
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.index_fixtures"

local ops, nn = cell.ops, cell.nn
local tols = { { "float64", 1e-12 }, { "float32", 1e-5 } }

-- name = { max?, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override }
local CASES = {
  max_k3s2p1_ceil = { true, 3, 2, 1, 1, true },
  max_k2s2p1_ceil = { true, 2, 2, 1, 1, true },
  max_k3s2p1_d2 = { true, 3, 2, 1, 2, false },
  max_k2s1p1_d2_ceil = { true, 2, 2, 1, 2, true },
  max_k3s3_ceil = { true, 3, 3, 0, 1, true },
  avg_k3s2p1_ceil = { false, 3, 2, 1, 1, true, true },
  avg_k2s2p1_ceil = { false, 2, 2, 1, 1, true, true },
  avg_k3s2p1_ceil_exclude = { false, 3, 2, 1, 1, true, false },
  avg_k3s2p1_ceil_div5 = { false, 3, 2, 1, 1, true, true, 5 },
  avg_k3s3_ceil = { false, 3, 3, 0, 1, true, true },
}

local function input(dt, transposed)
  local x = cell.tensor(fx.pool_x, cell.float64):astype(cell[dt])
  if transposed then
    x = x:transpose(3, 4):contiguous():transpose(3, 4)
    assert(not x:is_contiguous())
  end
  return x
end

local function functional(p)
  if p[1] then
    return function(x)
      return ops.max_pool2d(x, p[2], { stride = p[3], padding = p[4], dilation = p[5], ceil_mode = p[6] })
    end
  end
  if p[8] then return nil end -- divisor_override is the layer's
  return function(x)
    return ops.avg_pool2d(x, p[2], { stride = p[3], padding = p[4], ceil_mode = p[6], count_include_pad = p[7] })
  end
end

local function layer(p)
  if p[1] then
    return nn.MaxPool2d { kernel_size = p[2], stride = p[3], pad_mode = "pad", padding = p[4], dilation = p[5],
      ceil_mode = p[6] }
  end
  return nn.AvgPool2d { kernel_size = p[2], stride = p[3], pad_mode = "pad", padding = p[4], ceil_mode = p[6],
    count_include_pad = p[7], divisor_override = p[8] }
end

describe("pooling with ceil_mode, padding and dilation", function()
  for name, p in pairs(CASES) do
    local c = fx.pool[name]
    for _, tc in ipairs(tols) do
      local dt, tol = tc[1], tc[2]
      for _, transposed in ipairs { false, true } do
        local how = dt .. (transposed and " (transposed input)" or "")
        local fn = functional(p)
        if fn then
          it(name .. ": the op in " .. how, function()
            local x = input(dt, transposed)
            local y = fn(x)
            H.assert_shape(y, c.out_shape)
            H.assert_close(y, c.out, tol, "output")
            local g = cell.grad(function(t) return (fn(t) * cell.tensor(c.sens, cell.float64):astype(cell[dt])):sum() end)(x)
            H.assert_close(g, c.grad, tol, "gradient")
          end)
        end
        it(name .. ": the layer in " .. how, function()
          local pool = layer(p)
          local x = input(dt, transposed)
          local y = pool(x)
          H.assert_close(y, c.out, tol, "output")
          local g = cell.grad(function(t) return (pool(t) * cell.tensor(c.sens, cell.float64):astype(cell[dt])):sum() end)(x)
          H.assert_close(g, c.grad, tol, "gradient")
        end)
      end
    end
  end

  it("return_indices gives 1-based positions in each input plane", function()
    for _, name in ipairs { "max_k3s2p1_ceil", "max_k3s2p1_d2" } do
      local p, c = CASES[name], fx.pool[name]
      local x = input("float64")
      local y, idx = ops.max_pool2d(x, p[2], { stride = p[3], padding = p[4], dilation = p[5], ceil_mode = p[6],
        return_indices = true })
      H.assert_close(y, c.out, 1e-12)
      H.assert_values(idx, c.indices, "int64")
      local pool = nn.MaxPool2d { kernel_size = p[2], stride = p[3], pad_mode = "pad", padding = p[4],
        dilation = p[5], ceil_mode = p[6], return_indices = true }
      local ly, lidx = pool(x)
      H.assert_close(ly, c.out, 1e-12)
      H.assert_values(lidx, c.indices, "int64")
      -- a 3-D input: both outputs lose the batch dimension
      local y3, i3 = pool(x[1])
      H.assert_close(y3, c.out[1], 1e-12)
      H.assert_values(i3, c.indices[1], "int64")
      -- the indices pick the maxima out of the flattened planes
      local flat = x:reshape({ 2, 3, 56 })
      local picked = flat:gather(3, idx:reshape({ 2, 3, -1 })):reshape(idx.shape)
      H.assert_close(picked, c.out, 0)
    end
    local x = cell.ones({ 1, 1, 2, 2 }, cell.float64):requires_grad_(true)
    local _, idx = ops.max_pool2d(x, 2, { return_indices = true })
    assert.is_false(idx.requires_grad)
  end)

  it("ceil_mode keeps the last window inside the input or its padding", function()
    -- 5 wide, kernel 2, stride 2, padding 1: ceil((5 + 2 - 2) / 2) + 1 = 4 windows, but the
    -- 4th would start at 6 >= 5 + 1, so 3 (PyTorch's rule)
    local y = ops.max_pool2d(cell.ones({ 1, 1, 5, 5 }), 2, { stride = 2, padding = 1, ceil_mode = true })
    H.assert_shape(y, { 1, 1, 3, 3 })
    -- 6 wide, kernel 3, stride 2: ceil(3 / 2) + 1 = 3 windows, the last one clipped to 2 x 2
    local a = ops.avg_pool2d(cell.ones({ 1, 1, 6, 6 }), 3, { stride = 2, ceil_mode = true })
    H.assert_shape(a, { 1, 1, 3, 3 })
    -- it divides by its 2 x 2 positions, not 3 x 3
    H.assert_close(a[{ 1, 1, 3, 3 }], 1, 1e-6)
  end)

  it("rejects misuse with named errors", function()
    local x = cell.ones({ 1, 1, 5, 5 })
    H.expect_error(function() return ops.max_pool2d(x, 2, { dilation = 0 }) end, "ValueError", "max_pool2d", "dilation")
    H.expect_error(function() return ops.max_pool2d(x, 2, { ceil_mode = 1 }) end, "TypeError",
      "max_pool2d: ceil_mode must be a boolean, got number")
    H.expect_error(function() return ops.max_pool2d(x, 2, { return_indices = "yes" }) end, "TypeError",
      "max_pool2d: return_indices must be a boolean, got string")
    H.expect_error(function() return ops.avg_pool2d(x, 2, { ceil_mode = "x" }) end, "TypeError",
      "avg_pool2d: ceil_mode must be a boolean, got string")
    H.expect_error(function() return ops.avg_pool2d(x, 2, { dilation = 2 }) end, "TypeError",
      "avg_pool2d: unknown option 'dilation'")
    H.expect_error(function() return ops.max_pool2d(x, 3, { dilation = 3 }) end, "ValueError",
      "max_pool2d: the kernel (3 x 3, dilated 7 x 7) is larger than the padded input (5 x 5)")
    H.expect_error(function() return nn.MaxPool2d { kernel_size = 3, pad_mode = "pad", dilation = 3 }(x) end,
      "ValueError", "For 'MaxPool2d', the padded input (5, 5) is smaller than the kernel_size (7, 7)")
    H.expect_error(function() return nn.MaxPool2d { kernel_size = 2, dilation = 2 } end, "ValueError",
      "can not be set to non-default value when pad_mode is not 'pad'")
    H.expect_error(function() return nn.MaxPool2d { kernel_size = 2, pad_mode = "pad", dilation = 0 } end,
      "ValueError", "'dilation'")
  end)
end)
