-- resample_spec.lua - cell.ops.interpolate, unfold and fold (src/ops/
-- interpolate.c, fold.c, src/autograd/rules_sample.c, src/lua/lresample.c):
-- outputs and input gradients against PyTorch 1.13 in float32 and float64
-- (spec/fixtures/gen_resample.py), from contiguous and non-contiguous
-- inputs, the half types against float64, zero-size inputs, fold and unfold
-- as each other's adjoint, and every misuse.
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.resample_fixtures"

local ops = cell.ops
local f64 = cell.float64

local function call(c, x)
  if c.op == "interpolate" then return ops.interpolate(x, c.opts) end
  if c.op == "unfold" then return ops.unfold(x, c.kernel_size, c.opts) end
  return ops.fold(x, c.output_size, c.kernel_size, c.opts)
end

local function label(c, i)
  local parts = {}
  for _, k in ipairs { "mode", "size", "scale_factor", "align_corners", "recompute_scale_factor",
    "stride", "padding", "dilation" } do
    local v = c.opts[k]
    if v ~= nil then
      if type(v) == "table" then v = "{" .. table.concat(v, ",") .. "}" end
      parts[#parts + 1] = k .. "=" .. tostring(v)
    end
  end
  return string.format("%s #%d (%s) %s", c.op, i, table.concat(c.shape, "x"), table.concat(parts, " "))
end

--- x of a case in dt, contiguous or as a transposed view of the same values.
local function input(c, dt, strided)
  local x = cell.tensor(c.x, f64):astype(dt)
  if strided then
    -- every other element of a tensor twice as long in a new last dimension
    local n = #c.shape
    x = cell.stack({ x, x * 0 }, n + 1):narrow(n + 1, 1, 1):squeeze(n + 1)
    assert(not x:is_contiguous())
  end
  return x
end

local function grad_of(c, x, sens)
  return cell.grad(function(t) return (call(c, t) * sens):sum() end)(x)
end

for i, c in ipairs(fx) do
  describe(label(c, i), function()
    for _, d in ipairs { { "float32", "32", 1e-5 }, { "float64", "64", 1e-10 } } do
      local dt, tag, tol = cell[d[1]], d[2], d[3]
      for _, strided in ipairs { false, true } do
        it(d[1] .. (strided and ", non-contiguous input" or ""), function()
          local x = input(c, dt, strided)
          local y = call(c, x)
          assert.are.equal(dt, y.dtype)
          H.assert_close(y, c["out" .. tag], tol, "output")
          local g = grad_of(c, x, cell.tensor(c.sens, f64):astype(dt))
          assert.are.equal(dt, g.dtype)
          H.assert_close(g, c["grad" .. tag], tol, "gradient")
        end)
      end
    end
    for _, d in ipairs { { "float16", 2e-2 }, { "bfloat16", 1e-1 } } do
      it(d[1] .. " agrees with float64", function()
        local y = call(c, input(c, cell[d[1]]))
        assert.are.equal(cell[d[1]], y.dtype)
        H.assert_close(y, c.out64, d[2], "output")
      end)
    end
  end)
end

describe("zero-size inputs", function()
  it("interpolate an empty batch and empty channels", function()
    for _, shape in ipairs { { 0, 3, 4, 5 }, { 2, 0, 4, 5 } } do
      for _, mode in ipairs { "nearest", "bilinear", "bicubic" } do
        local x = cell.zeros(shape, f64):requires_grad_(true)
        local y = ops.interpolate(x, { size = { 6, 7 }, mode = mode })
        H.assert_shape(y, { shape[1], shape[2], 6, 7 })
        local g = cell.grad(function(t) return ops.interpolate(t, { size = { 6, 7 }, mode = mode }):sum() end)(x)
        H.assert_shape(g, shape)
      end
    end
    local y = ops.interpolate(cell.zeros({ 0, 2, 3 }), { scale_factor = 2, mode = "linear" })
    H.assert_shape(y, { 0, 2, 6 })
  end)

  it("unfold and fold an empty batch", function()
    local x = cell.zeros({ 0, 3, 5, 5 }, f64):requires_grad_(true)
    local u = ops.unfold(x, 2)
    H.assert_shape(u, { 0, 12, 16 })
    H.assert_shape(cell.grad(function(t) return ops.unfold(t, 2):sum() end)(x), { 0, 3, 5, 5 })
    H.assert_shape(ops.fold(u, 5, 2), { 0, 3, 5, 5 })
    H.assert_shape(ops.unfold(cell.zeros({ 2, 0, 5, 5 }), 2), { 2, 0, 16 })
  end)
end)

describe("unfold and fold", function()
  it("are each other's adjoint: <unfold(x), y> = <x, fold(y)>", function()
    local o = { dilation = { 1, 2 }, padding = { 2, 1 }, stride = { 3, 2 } }
    local x = cell.randn({ 2, 3, 9, 8 }, f64)
    local u = ops.unfold(x, { 2, 3 }, o)
    local y = cell.randn(u.shape, f64)
    local lhs = (u * y):sum():item()
    local rhs = (x * ops.fold(y, { 9, 8 }, { 2, 3 }, o)):sum():item()
    assert.is_true(math.abs(lhs - rhs) <= 1e-10 * math.max(1, math.abs(lhs)), lhs .. " vs " .. rhs)
  end)

  it("fold(unfold(x)) with non-overlapping blocks is x", function()
    local x = cell.randn({ 2, 3, 6, 8 })
    H.assert_close(ops.fold(ops.unfold(x, 2, { stride = 2 }), { 6, 8 }, 2, { stride = 2 }), x:totable(), 0)
  end)

  it("gives gradients to unfold's input through fold's rule and back", function()
    local x = cell.randn({ 1, 2, 4, 4 }, f64)
    local g = cell.grad(function(t) return ops.fold(ops.unfold(t, 3, { padding = 1 }), 4, 3, { padding = 1 }):sum() end)(x)
    -- each pixel is covered by as many 3x3 windows as lie inside the padded input: its count
    local ones = cell.ones({ 1, 2, 4, 4 }, f64)
    local counts = ops.fold(ops.unfold(ones, 3, { padding = 1 }), 4, 3, { padding = 1 })
    H.assert_close(g, counts:totable(), 1e-12)
  end)
end)

describe("interpolate", function()
  it("keeps values on the integer grid when upsampling 2x with nearest", function()
    local x = cell.arange(6):reshape({ 1, 1, 2, 3 }):float()
    H.assert_close(ops.interpolate(x, { scale_factor = 2 }), {
      { { { 0, 0, 1, 1, 2, 2 }, { 0, 0, 1, 1, 2, 2 }, { 3, 3, 4, 4, 5, 5 }, { 3, 3, 4, 4, 5, 5 } } } }, 0)
  end)

  it("maps corners onto corners with align_corners", function()
    local x = cell.tensor({ { { { 1, 2 }, { 3, 4 } } } })
    H.assert_close(ops.interpolate(x, { size = 3, mode = "bilinear", align_corners = true }),
      { { { { 1, 1.5, 2 }, { 2, 2.5, 3 }, { 3, 3.5, 4 } } } }, 1e-6)
  end)
end)

describe("misuse", function()
  local x4 = cell.zeros({ 1, 2, 4, 4 })
  local x3 = cell.zeros({ 1, 2, 4 })
  it("interpolate", function()
    H.expect_error(function() ops.interpolate(x4, {}) end, "ValueError", "either size or scale_factor")
    H.expect_error(function() ops.interpolate(x4, { size = 2, scale_factor = 2 }) end, "ValueError", "only one of")
    H.expect_error(function() ops.interpolate(x4, { size = 2, mode = "trilinear" }) end, "ValueError", "mode must be", "trilinear")
    H.expect_error(function() ops.interpolate(x4, { size = 2, mode = "linear" }) end, "ValueError", "'linear'", "3-D")
    H.expect_error(function() ops.interpolate(x3, { size = 2, mode = "bilinear" }) end, "ValueError", "'bilinear'", "4-D")
    H.expect_error(function() ops.interpolate(x3, { size = 2, mode = "bicubic" }) end, "ValueError", "'bicubic'")
    H.expect_error(function() ops.interpolate(x4, { size = 2, align_corners = true }) end, "ValueError", "align_corners", "nearest")
    H.expect_error(function() ops.interpolate(x4, { size = 2, mode = "bilinear", align_corners = 1 }) end, "TypeError", "align_corners must be a boolean")
    H.expect_error(function() ops.interpolate(x4, { size = { 2, 3, 4 } }) end, "ValueError", "size", "table of 2")
    H.expect_error(function() ops.interpolate(x4, { size = 2.5 }) end, "TypeError", "integers")
    H.expect_error(function() ops.interpolate(x4, { size = 0 }) end, "ValueError", "positive", "0")
    H.expect_error(function() ops.interpolate(x4, { scale_factor = -1 }) end, "ValueError", "scale_factor must be positive")
    H.expect_error(function() ops.interpolate(x4, { scale_factor = 0 / 0 }) end, "ValueError", "scale_factor")
    H.expect_error(function() ops.interpolate(x4, { scale_factor = 0.1 }) end, "ValueError", "positive")
    H.expect_error(function() ops.interpolate(x4, { size = 2, recompute_scale_factor = true }) end, "ValueError", "recompute_scale_factor")
    H.expect_error(function() ops.interpolate(x4, { sizes = 2 }) end, "TypeError", "unknown option 'sizes'")
    H.expect_error(function() ops.interpolate(cell.zeros({ 2, 4 }), { size = 2 }) end, "ValueError", "3-D", "[2, 4]")
    H.expect_error(function() ops.interpolate(cell.zeros({ 1, 1, 2, 2 }, cell.int32), { size = 3 }) end, "TypeError", "float", "Int32")
    H.expect_error(function() ops.interpolate(cell.zeros({ 1, 1, 0, 2 }), { size = 3 }) end, "ValueError", "positive")
    H.expect_error(function() ops.interpolate(x4, 2) end, "TypeError", "options table")
  end)

  it("unfold", function()
    H.expect_error(function() ops.unfold(x3, 2) end, "ValueError", "4-D", "[1, 2, 4]")
    H.expect_error(function() ops.unfold(x4) end, "TypeError", "kernel_size")
    H.expect_error(function() ops.unfold(x4, 0) end, "ValueError", "kernel_size must be at least 1")
    H.expect_error(function() ops.unfold(x4, 2, { stride = 0 }) end, "ValueError", "stride must be at least 1")
    H.expect_error(function() ops.unfold(x4, 2, { dilation = { 1, 0 } }) end, "ValueError", "dilation")
    H.expect_error(function() ops.unfold(x4, 2, { padding = -1 }) end, "ValueError", "padding")
    H.expect_error(function() ops.unfold(x4, 5) end, "ValueError", "sliding blocks", "at least 1")
    H.expect_error(function() ops.unfold(x4, { 2, 2, 2 }) end, "ValueError", "kernel_size", "table of 2")
    H.expect_error(function() ops.unfold(x4, 2, { step = 1 }) end, "TypeError", "unknown option 'step'")
    H.expect_error(function() ops.unfold(cell.zeros({ 1, 1, 4, 4 }, cell.int64), 2) end, "TypeError", "float")
  end)

  it("fold", function()
    local cols = cell.zeros({ 1, 8, 9 })
    H.expect_error(function() ops.fold(x4, 4, 2) end, "ValueError", "3-D", "[1, 2, 4, 4]")
    H.expect_error(function() ops.fold(cols, 4) end, "TypeError", "kernel_size")
    H.expect_error(function() ops.fold(cols) end, "TypeError", "output_size")
    H.expect_error(function() ops.fold(cell.zeros({ 1, 7, 9 }), 4, 2) end, "ValueError", "divisible", "[1, 7, 9]")
    H.expect_error(function() ops.fold(cols, 5, 2) end, "ValueError", "16 sliding blocks", "[1, 8, 9]")
    H.expect_error(function() ops.fold(cols, 0, 2) end, "ValueError", "output_size must be at least 1")
    H.expect_error(function() ops.fold(cols, 1, 2) end, "ValueError", "sliding blocks", "at least 1")
    H.expect_error(function() ops.fold(cols, 4, 2, { stride = -2 }) end, "ValueError", "stride")
  end)
end)
