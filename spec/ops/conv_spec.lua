-- conv_spec.lua - conv2d, max_pool2d and avg_pool2d (src/ops/conv.c, pool.c,
-- src/autograd/rules_conv.c, src/lua/lconv.c): forward values and every
-- gradient against PyTorch 1.13 (spec/fixtures/gen_conv.py) in each float
-- dtype, the batch-chunking paths against per-sample results, edge shapes,
-- and every bad input.
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.conv_fixtures"

local ops = cell.ops
local f64 = cell.float64

-- Tolerances against the float64 fixtures, relative to max(1, |expected|):
-- the half types round inputs and outputs, and sums of up to ~30 products.
local tols = { { "float64", 1e-12 }, { "float32", 1e-5 }, { "float16", 5e-3 }, { "bfloat16", 3e-2 } }

local function tensor(v, dt) return cell.tensor(v, f64):astype(cell[dt]) end

--- x of a case: xt holds it transposed in its last two dimensions.
local function case_x(c, dt)
  if c.xt then
    local x = tensor(c.xt, dt):transpose(3, 4)
    assert(not x:is_contiguous())
    return x
  end
  return tensor(c.x, dt)
end

local function conv_opts(c)
  return { stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups }
end

local function pool_opts(c, avg)
  local o = { stride = c.stride, padding = c.padding }
  if avg then o.count_include_pad = c.count_include_pad end
  return o
end

describe("conv2d", function()
  for _, c in ipairs(fx.conv2d) do
    for _, t in ipairs(tols) do
      local dt, tol = t[1], t[2]
      it(c.name .. " (" .. dt .. "): output and gradients match PyTorch", function()
        local x, w, gy = case_x(c, dt), tensor(c.w, dt), tensor(c.gy, dt)
        local b = c.b and tensor(c.b, dt) or nil
        local opts = conv_opts(c)
        local y = ops.conv2d(x, w, b, opts)
        assert.are.equal(cell[dt], y.dtype)
        H.assert_close(y, c.y, tol, "y")
        local function loss(xx, ww, bb) return (ops.conv2d(xx, ww, bb, opts) * gy):sum() end
        local g = cell.grad(loss, b and { 1, 2, 3 } or { 1, 2 })(x, w, b)
        H.assert_close(g[1], c.gx, tol, "grad x")
        H.assert_close(g[2], c.gw, tol * 2, "grad w")
        if b then H.assert_close(g[3], c.gb, tol * 2, "grad b") end
        for k = 1, #g do assert.are.equal(cell[dt], g[k].dtype) end
      end)
    end
  end

  it("records Conv2dBackward", function()
    local c = fx.conv2d[1]
    local x = cell.tensor(c.x):requires_grad_(true)
    assert.are.equal("Conv2dBackward", ops.conv2d(x, cell.tensor(c.w)).grad_fn)
    assert.is_nil(ops.conv2d(cell.tensor(c.x), cell.tensor(c.w)).grad_fn)
  end)

  it("takes the options table in the bias position, and nil for no bias", function()
    local c = fx.conv2d[3] -- stride 2, padding 1, with a bias
    local x, w = cell.tensor(c.x, f64), cell.tensor(c.w, f64)
    local y0 = ops.conv2d(x, w, nil, conv_opts(c))
    local y1 = ops.conv2d(x, w, conv_opts(c))
    local yb = ops.conv2d(x, w, cell.tensor(c.b, f64), conv_opts(c))
    H.assert_close(y1, y0:totable(), 0)
    H.assert_close(yb - cell.tensor(c.b, f64):reshape({ 1, 3, 1, 1 }), y0:totable(), 1e-12)
    -- numbers for the pairs: stride = 2 is {2, 2}, padding = 1 is {1, 1, 1, 1}
    H.assert_close(ops.conv2d(x, w, { stride = 2, padding = 1 }), y0:totable(), 0)
    H.assert_close(ops.conv2d(x, w, { stride = { 2, 2 }, padding = { 1, 1 } }), y0:totable(), 0)
  end)

  it("defaults to stride 1, no padding, dilation 1, one group", function()
    local c = fx.conv2d[1]
    local x, w, b = cell.tensor(c.x, f64), cell.tensor(c.w, f64), cell.tensor(c.b, f64)
    H.assert_close(ops.conv2d(x, w, b), c.y, 1e-12)
    H.assert_close(ops.conv2d(x, w, b, {}), c.y, 1e-12)
  end)

  it("takes a non-contiguous weight", function()
    local c = fx.conv2d[1]
    local w = cell.tensor(c.w, f64):transpose(3, 4):contiguous():transpose(3, 4)
    assert.is_false(w:is_contiguous())
    H.assert_close(ops.conv2d(cell.tensor(c.x, f64), w, cell.tensor(c.b, f64)), c.y, 1e-12)
  end)

  it("gives each input only the gradient asked for", function()
    local c = fx.conv2d[1]
    local x, w, b = cell.tensor(c.x, f64), cell.tensor(c.w, f64), cell.tensor(c.b, f64)
    local gy = cell.tensor(c.gy, f64)
    local gw = cell.grad(function(ww) return (ops.conv2d(x, ww, b) * gy):sum() end)(w)
    H.assert_close(gw, c.gw, 1e-12)
    local gx = cell.grad(function(xx) return (ops.conv2d(xx, w, b) * gy):sum() end)(x)
    H.assert_close(gx, c.gx, 1e-12)
    local gb = cell.grad(function(bb) return (ops.conv2d(x, w, bb) * gy):sum() end)(b)
    H.assert_close(gb, c.gb, 1e-12)
  end)

  -- Batches are cut into chunks of samples for one gemm each (one sample
  -- writes NCHW directly): every cut must agree with sample-by-sample.
  for _, s in ipairs {
    { "LeNet's first layer, batch 9 (chunks of 5 and 4)", { 9, 1, 28, 28 }, { 6, 1, 5, 5 }, {} },
    { "LeNet's second layer, batch 64", { 64, 6, 14, 14 }, { 16, 6, 5, 5 }, {} },
    { "a grouped, strided, padded layer, batch 13", { 13, 4, 20, 18 }, { 6, 2, 3, 3 },
      { stride = 2, padding = { 1, 0, 2, 1 }, groups = 2 } },
  } do
    it("chunks the batch consistently: " .. s[1], function()
      cell.set_seed(3)
      local x, w = cell.randn(s[2], f64), cell.randn(s[3], f64)
      local b = cell.randn({ s[3][1] }, f64)
      local y = ops.conv2d(x, w, b, s[4])
      cell.set_seed(4)
      local gy = cell.randn(y.shape, f64)
      local function loss(xx, ww, bb) return (ops.conv2d(xx, ww, bb, s[4]) * gy):sum() end
      local g = cell.grad(loss, { 1, 2, 3 })(x, w, b)
      local gw, gb = cell.zeros(s[3], f64), cell.zeros({ s[3][1] }, f64)
      for i = 1, s[2][1] do
        local xi, gyi = x:narrow(1, i, 1), gy:narrow(1, i, 1)
        H.assert_close(ops.conv2d(xi, w, b, s[4]), y:narrow(1, i, 1):totable(), 1e-10)
        local function li(xx, ww, bb) return (ops.conv2d(xx, ww, bb, s[4]) * gyi):sum() end
        local gi = cell.grad(li, { 1, 2, 3 })(xi, w, b)
        H.assert_close(gi[1], g[1]:narrow(1, i, 1):totable(), 1e-10)
        gw = gw + gi[2]
        gb = gb + gi[3]
      end
      H.assert_close(g[2], gw:totable(), 1e-9)
      H.assert_close(g[3], gb:totable(), 1e-9)
    end)
  end

  it("computes float32 like float64 at LeNet's sizes", function()
    cell.set_seed(5)
    local x, w, b = cell.randn({ 16, 1, 28, 28 }, f64), cell.randn({ 6, 1, 5, 5 }, f64), cell.randn({ 6 }, f64)
    local y64 = ops.conv2d(x, w, b, { padding = 2 })
    local y32 = ops.conv2d(x:float(), w:float(), b:float(), { padding = 2 })
    H.assert_close(y32, y64:totable(), 1e-5)
  end)

  it("handles an empty batch and inputs without channels", function()
    local w = cell.ones({ 3, 2, 3, 3 })
    local y = ops.conv2d(cell.zeros({ 0, 2, 5, 5 }), w, cell.ones({ 3 }))
    H.assert_shape(y, { 0, 3, 3, 3 })
    local x = cell.zeros({ 0, 2, 5, 5 })
    local g = cell.grad(function(ww) return ops.conv2d(x, ww):sum() end)(w)
    H.assert_close(g, cell.zeros({ 3, 2, 3, 3 }):totable(), 0)
    -- no input channels: the output is the bias
    local yb = ops.conv2d(cell.zeros({ 2, 0, 4, 4 }), cell.zeros({ 3, 0, 2, 2 }), cell.tensor({ 1, 2, 3 }))
    H.assert_shape(yb, { 2, 3, 3, 3 })
    H.assert_close(yb[{ 2, 3 }], H.nest({ 3, 3 }, function() return 3 end), 0)
  end)

  it("refuses to backward through an input changed in place", function()
    local c = fx.conv2d[1]
    local x, w = cell.tensor(c.x, f64), cell.tensor(c.w, f64)
    H.expect_error(function()
      return cell.grad(function(ww)
        local y = ops.conv2d(x, ww)
        x:add_(1) -- x is saved for the weight's gradient
        return y:sum()
      end)(w)
    end, "RuntimeError", "Conv2dBackward", "modified in place")
  end)

  describe("errors", function()
    local x = cell.zeros({ 2, 3, 8, 8 })
    local w = cell.zeros({ 5, 3, 3, 3 })
    it("names both shapes when the channels do not match", function()
      H.expect_error(function() return ops.conv2d(x, cell.zeros({ 5, 4, 3, 3 })) end, "ValueError",
        "conv2d: input has 3 channels but weight expects 4 (groups 1): input (2, 3, 8, 8), weight (5, 4, 3, 3)")
      H.expect_error(function() return ops.conv2d(x, cell.zeros({ 6, 2, 3, 3 }), { groups = 3 }) end,
        "ValueError", "conv2d: input has 3 channels but weight expects 6 (groups 3): input (2, 3, 8, 8), weight (6, 2, 3, 3)")
    end)
    it("needs 4-D input and weight", function()
      H.expect_error(function() return ops.conv2d(cell.zeros({ 3, 8, 8 }), w) end, "ValueError",
        "conv2d: input must be 4-D (N, C, H, W), got input (3, 8, 8)")
      H.expect_error(function() return ops.conv2d(x, cell.zeros({ 5, 3, 3 })) end, "ValueError",
        "conv2d: weight must be 4-D", "got weight (5, 3, 3)")
    end)
    it("needs groups that divide the output channels", function()
      H.expect_error(function() return ops.conv2d(cell.zeros({ 2, 4, 8, 8 }), cell.zeros({ 5, 2, 3, 3 }), { groups = 2 }) end,
        "ValueError", "conv2d: groups 2 must divide the output channels 5 of weight (5, 2, 3, 3)")
      H.expect_error(function() return ops.conv2d(x, w, { groups = 0 }) end, "ValueError",
        "conv2d: groups must be at least 1, got 0")
    end)
    it("needs a bias with one value per output channel", function()
      H.expect_error(function() return ops.conv2d(x, w, cell.zeros({ 4 })) end, "ValueError",
        "conv2d: bias must have shape (5) to match weight (5, 3, 3, 3), got (4)")
      H.expect_error(function() return ops.conv2d(x, w, cell.zeros({ 1, 5 })) end, "ValueError",
        "got (1, 5)")
    end)
    it("needs one float dtype", function()
      H.expect_error(function() return ops.conv2d(x, w:double()) end, "TypeError",
        "conv2d: input is Float32 but weight is Float64")
      H.expect_error(function() return ops.conv2d(x, w, cell.zeros({ 5 }, cell.float16)) end, "TypeError",
        "conv2d: input is Float32 but bias is Float16")
      H.expect_error(function() return ops.conv2d(x:int(), w:int()) end, "TypeError",
        "conv2d: input must be a float tensor, got Int32")
    end)
    it("needs positive strides and dilations and non-negative padding", function()
      H.expect_error(function() return ops.conv2d(x, w, { stride = 0 }) end, "ValueError",
        "conv2d: stride must be at least 1, got (0, 0)")
      H.expect_error(function() return ops.conv2d(x, w, { stride = { 1, -2 } }) end, "ValueError",
        "got (1, -2)")
      H.expect_error(function() return ops.conv2d(x, w, { dilation = { 0, 1 } }) end, "ValueError",
        "conv2d: dilation must be at least 1, got (0, 1)")
      H.expect_error(function() return ops.conv2d(x, w, { padding = { 1, -1, 0, 0 } }) end, "ValueError",
        "conv2d: padding (top, bottom, left, right) must be non-negative, got (1, -1, 0, 0)")
      H.expect_error(function() return ops.conv2d(x, w, { stride = 2 ^ 31 }) end, "ValueError",
        "conv2d: stride must be at most 2^30")
    end)
    it("needs a kernel that fits the padded input", function()
      H.expect_error(function() return ops.conv2d(cell.zeros({ 1, 3, 4, 4 }), cell.zeros({ 2, 3, 5, 3 })) end,
        "ValueError", "conv2d: the kernel (5 x 3, dilation 1 x 1) is larger than the padded input (4 x 4)",
        "input (1, 3, 4, 4), weight (2, 3, 5, 3)")
      H.expect_error(function() return ops.conv2d(x, w, { dilation = 4 }) end, "ValueError",
        "the kernel (3 x 3, dilation 4 x 4) is larger than the padded input (8 x 8)")
      H.expect_error(function() return ops.conv2d(x, cell.zeros({ 5, 3, 0, 3 })) end, "ValueError",
        "conv2d: the kernel must be at least 1 x 1, got weight (5, 3, 0, 3)")
    end)
    it("checks the types of the arguments and options", function()
      H.expect_error(function() return ops.conv2d({ 1 }, w) end, "TypeError", "expected a Tensor")
      H.expect_error(function() return ops.conv2d(x, "w") end, "TypeError", "expected a Tensor")
      H.expect_error(function() return ops.conv2d(x, w, "b") end, "TypeError",
        "conv2d: expected a bias Tensor, nil or an options table, got string")
      H.expect_error(function() return ops.conv2d(x, w, nil, 3) end, "TypeError",
        "conv2d: expected an options table, got number")
      H.expect_error(function() return ops.conv2d(x, w, { strides = 2 }) end, "TypeError",
        "conv2d: unknown option 'strides' (the options are stride, padding, dilation, groups)")
      H.expect_error(function() return ops.conv2d(x, w, { stride = "2" }) end, "TypeError",
        "conv2d: stride must be an integer or a table of 2 integers, got string")
      H.expect_error(function() return ops.conv2d(x, w, { stride = 1.5 }) end, "TypeError",
        "conv2d: stride must hold integers, got 1.5")
      H.expect_error(function() return ops.conv2d(x, w, { padding = { 1, 2, 3 } }) end, "TypeError",
        "conv2d: padding must be an integer or a table of 2 or 4 integers, got a table of 3")
      H.expect_error(function() return ops.conv2d(x, w, { dilation = { 1, "a" } }) end, "TypeError",
        "conv2d: dilation must hold integers, got string")
      H.expect_error(function() return ops.conv2d(x, w, { groups = true }) end, "TypeError",
        "conv2d: groups must hold integers, got boolean")
      H.expect_error(function() return ops.conv2d(x, w, { stride = cell.ones({ 2 }) }) end, "TypeError",
        "got Tensor")
    end)
  end)
end)

local function pool_spec(name, cases, avg)
  local op = ops[name]
  describe(name, function()
    for _, c in ipairs(cases) do
      for _, t in ipairs(tols) do
        local dt, tol = t[1], t[2]
        it(c.name .. " (" .. dt .. "): output and gradient match PyTorch", function()
          local x, gy = case_x(c, dt), tensor(c.gy, dt)
          local opts = pool_opts(c, avg)
          local y = op(x, c.kernel, opts)
          assert.are.equal(cell[dt], y.dtype)
          H.assert_close(y, c.y, tol, "y")
          local g = cell.grad(function(xx) return (op(xx, c.kernel, opts) * gy):sum() end)(x)
          assert.are.equal(cell[dt], g.dtype)
          H.assert_close(g, c.gx, tol, "grad x")
        end)
      end
    end

    it("records " .. (avg and "AvgPool2dBackward" or "MaxPool2dBackward"), function()
      local x = cell.ones({ 1, 1, 4, 4 }):requires_grad_(true)
      assert.are.equal(avg and "AvgPool2dBackward" or "MaxPool2dBackward", op(x, 2).grad_fn)
    end)

    it("takes the kernel as a number or a pair, the stride defaulting to it", function()
      cell.set_seed(7)
      local x = cell.randn({ 2, 3, 9, 8 }, f64)
      local want = op(x, { 3, 3 }, { stride = { 3, 3 }, padding = { 0, 0, 0, 0 } }):totable()
      H.assert_close(op(x, 3), want, 0)
      H.assert_close(op(x, { 3, 3 }, {}), want, 0)
      H.assert_close(op(x, 3, { padding = 1 }), op(x, 3, { padding = { 1, 1 } }):totable(), 0)
    end)

    it("keeps large planes consistent with small ones", function()
      cell.set_seed(8)
      local x = cell.randn({ 3, 2, 64, 64 }, f64)
      local y = op(x, 3, { stride = 2, padding = 1 })
      for i = 1, 3 do
        H.assert_close(op(x:narrow(1, i, 1), 3, { stride = 2, padding = 1 }), y:narrow(1, i, 1):totable(), 0)
      end
    end)

    describe("errors", function()
      local x = cell.zeros({ 1, 2, 5, 5 })
      it("needs a 4-D float input", function()
        H.expect_error(function() return op(cell.zeros({ 2, 5, 5 }), 2) end, "ValueError",
          name .. ": input must be 4-D (N, C, H, W), got input (2, 5, 5)")
        H.expect_error(function() return op(x:long(), 2) end, "TypeError",
          name .. ": input must be a float tensor, got Int64")
      end)
      it("needs positive kernel sizes and strides", function()
        H.expect_error(function() return op(x, 0) end, "ValueError", name .. ": kernel size must be at least 1, got (0, 0)")
        H.expect_error(function() return op(x, { 2, -1 }) end, "ValueError", "got (2, -1)")
        H.expect_error(function() return op(x, 2, { stride = { 0, 1 } }) end, "ValueError",
          name .. ": stride must be at least 1, got (0, 1)")
      end)
      it("needs padding of at most half the kernel", function()
        H.expect_error(function() return op(x, 3, { padding = 2 }) end, "ValueError",
          name .. ": padding must be at most half the kernel size (top and bottom at most 1, left and right at most 1 for kernel 3 x 3), got (2, 2, 2, 2)")
        H.expect_error(function() return op(x, { 4, 2 }, { padding = { 2, 0, 0, 2 } }) end, "ValueError",
          "left and right at most 1 for kernel 4 x 2), got (2, 0, 0, 2)")
        H.expect_error(function() return op(x, 2, { padding = -1 }) end, "ValueError", "must be non-negative")
      end)
      it("needs a kernel that fits the padded input", function()
        H.expect_error(function() return op(x, { 6, 2 }) end, "ValueError",
          name .. ": the kernel (6 x 2) is larger than the padded input (5 x 5): input (1, 2, 5, 5)")
      end)
      it("checks the types of the arguments and options", function()
        H.expect_error(function() return op(x) end, "TypeError", name .. ": expected a kernel size")
        H.expect_error(function() return op(x, "2") end, "TypeError",
          name .. ": kernel size must be an integer or a table of 2 integers, got string")
        H.expect_error(function() return op(x, { 2, 2, 2 }) end, "TypeError", "got a table of 3")
        H.expect_error(function() return op(x, 2, { strides = 1 }) end, "TypeError",
          name .. ": unknown option 'strides'")
        H.expect_error(function() return op(x, 2, 2) end, "TypeError", name .. ": expected an options table, got number")
        if avg then
          H.expect_error(function() return op(x, 2, { count_include_pad = 0 }) end, "TypeError",
            "avg_pool2d: count_include_pad must be a boolean, got number")
        else
          H.expect_error(function() return op(x, 2, { count_include_pad = true }) end, "TypeError",
            "max_pool2d: unknown option 'count_include_pad' (the options are stride, padding, dilation, ceil_mode, "
            .. "return_indices)")
        end
      end)
    end)
  end)
end

pool_spec("max_pool2d", fx.max_pool2d, false)
pool_spec("avg_pool2d", fx.avg_pool2d, true)

describe("max_pool2d with NaN", function()
  it("lets a NaN win its window, and sends the gradient there", function()
    local x = cell.tensor({ { { { 1, 0 / 0, 2, 3 }, { 4, 5, 6, 7 } } } }, f64)
    local y = ops.max_pool2d(x, 2)
    local v = y:totable()[1][1][1]
    assert.is_true(v[1] ~= v[1])
    assert.are.equal(7, v[2])
    local g = cell.grad(function(xx) return ops.max_pool2d(xx, 2):sum() end)(x)
    H.assert_close(g, { { { { 0, 1, 0, 0 }, { 0, 0, 0, 1 } } } }, 0)
  end)
end)

describe("avg_pool2d", function()
  it("divides by the whole window with the padding counted, by the real positions without", function()
    local x = cell.ones({ 1, 1, 2, 2 }, f64)
    H.assert_close(ops.avg_pool2d(x, 3, { stride = 1, padding = 1 }), { { { { 4 / 9, 4 / 9 }, { 4 / 9, 4 / 9 } } } }, 1e-12)
    H.assert_close(ops.avg_pool2d(x, 3, { stride = 1, padding = 1, count_include_pad = false }),
      { { { { 1, 1 }, { 1, 1 } } } }, 1e-12)
  end)
end)
