-- opdiff_spec.lua - the differential check of cell.ops against PyTorch 1.13
-- (spec/fixtures/gen_opdiff.py): elementwise, binary with broadcasting and
-- type promotion (tensors, 0-d tensors and Lua numbers), reductions with
-- dims and keepdim, argmax ties, sort stability, shape and index ops, linear
-- algebra, conversions and the nn ops, over float32/float64/int32/int64/
-- bool/uint8, 0-d, empty and non-contiguous inputs and special values; each
-- case checks the dtype, shape and values of every result (indices 1-based),
-- that cell refuses what PyTorch refuses, and float64 gradients. The cases
-- where cell differs on purpose are listed, with the reason, in the generator.
local cell = require "cell"
local fx = require "fixtures.opdiff_fixtures"
local run = require "helpers.opdiff_runner"
local H = require "helpers"

local function describe_arg(a)
  if type(a) ~= "table" then return tostring(a) end
  if a.__t then return a.dtype .. "[" .. table.concat(a.shape, ",") .. "]" .. (a.layout or "") end
  if a.__nil then return "nil" end
  if a.__dtype then return a.__dtype end
  return "{...}"
end

describe("cell.ops against PyTorch", function()
  it("has cases for every group of ops", function()
    local groups = {}
    for _, c in ipairs(fx.cases) do groups[c.group] = true end
    for _, g in ipairs { "unary", "unary_special", "binary", "binary_scalar", "binary_0d", "int_div",
                         "operator", "reduce", "argmax", "sort", "shape", "index", "linalg", "loss", "nn" } do
      assert.is_true(groups[g] ~= nil, "no case in group " .. g)
    end
    assert.is_true(#fx.cases > 2000)
  end)

  for i, c in ipairs(fx.cases) do
    local desc = {}
    for k = 1, c.n do desc[k] = describe_arg(c.args[k]) end
    local name = ("#%d %s: %s(%s)%s"):format(i, c.group, c.op, table.concat(desc, ", "),
      c.note and (" [" .. c.note .. "]") or "")
    it(name, function()
      local why = run(c)
      assert.is_nil(why, why)
    end)
  end

  it("pins the errors of the options the differential check added", function()
    local x = cell.tensor({ 1.5, -2 })
    H.expect_error(function() return x:div(2, "round") end, "ValueError",
      'div: rounding_mode must be nil, "floor" or "trunc", got round')
    H.expect_error(function() return x:div(2, { rounding_mode = 1 }) end, "ValueError", "rounding_mode", "number")
    H.expect_error(function() return cell.tensor({ 7 }, cell.int32):div(cell.tensor({ 0 }, cell.int32), "trunc") end,
      "ValueError", "integer division by zero")
    H.expect_error(function() return x:round(1.5) end, "TypeError", "expected an integer, got 1.5")
    H.expect_error(function() return x:norm("abc") end, "ValueError", "norm: the only string order is 'fro', but got 'abc'")
    local img = cell.ones({ 1, 1, 4, 4 })
    H.expect_error(function() return cell.ops.interpolate(img, { size = 2, mode = "area", align_corners = true }) end,
      "ValueError", "option 'align_corners' is not meaningful with mode 'area'")
    H.expect_error(function() return cell.ops.interpolate(img, { mode = "area" }) end,
      "ValueError", "either size or scale_factor must be given")
    H.expect_error(function() return cell.ops.interpolate(cell.ones({ 4 }), { size = 2, mode = "area" }) end,
      "ValueError", "mode 'area' wants a 3-D, 4-D or 5-D input, got shape [4]")
    H.expect_error(function() return cell.ops.interpolate(img, { scale_factor = 0.1, mode = "area" }) end,
      "ValueError", "output sizes must be positive, got 0")
  end)

  it("gather with a Tensor first (MindSpore's ops.gather) checks its axis", function()
    local x, i = cell.ones({ 2, 3 }), cell.tensor({ 1 }, cell.int64)
    H.expect_error(function() return cell.ops.gather(x, i, 3) end, "IndexError", "gather: axis 3 is out of range for a 2-D tensor")
    H.expect_error(function() return cell.ops.gather(x, i, 1.5) end, "TypeError", "gather: axis must be an integer, got 1.5")
    H.expect_error(function() return cell.ops.gather(x, cell.tensor({ 3 }, cell.int64), 1) end, "IndexError")
    H.assert_values(cell.ops.gather(cell.tensor({ 10, 20, 30 }), cell.tensor({ { 3, 1 } }, cell.int64)), { { 30, 10 } }, "float32")
  end)

  it("masked_fill takes a 0-d Tensor value, not a larger one", function()
    H.expect_error(function() return cell.ones({ 2 }):masked_fill(cell.tensor({ true, false }), cell.ones({ 2 })) end,
      "ValueError", "masked_fill: the value must be a number or a 0-d Tensor, got a Tensor of shape [2]")
  end)

  it("pad's modes refuse what they cannot make", function()
    local x = cell.ones({ 2, 3 })
    H.expect_error(function() return x:pad({ 1, 1 }, "mirror") end, "ValueError",
      "pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', but got 'mirror'")
    H.expect_error(function() return x:pad({ 3, 0 }, "reflect") end, "ValueError",
      "For 'pad', the reflection padding (3, 0) must be less than the input size 3 of dimension 2")
    H.expect_error(function() return x:pad({ 4, 0 }, "circular") end, "ValueError",
      "For 'pad', the circular padding (4, 0) must be at most the input size 3 of dimension 2")
    H.expect_error(function() return x:pad({ -1, 0 }, "replicate") end, "ValueError",
      "For 'pad', the padding must be non-negative in mode 'replicate', but got (-1, 0)")
    H.expect_error(function() return x:pad({ 1, 0 }, { mode = "reflect", value = 2 }) end, "ValueError",
      "pad: a value is only used in mode 'constant', but mode is 'reflect'")
    H.expect_error(function() return x:pad({ 1, 0, 1, 0, 1, 0 }, "reflect") end, "ValueError",
      "pad: pads must be (before, after) pairs for at most the 2 dimensions of the input, but got 6 numbers")
  end)

  it("add and sub check alpha, cumsum its dtype", function()
    local x = cell.ones({ 2 })
    H.expect_error(function() return x:add(x, { alpha = "2" }) end, "TypeError", "add: alpha must be a number, got string")
    H.expect_error(function() return x:sub(x, { alfa = 2 }) end, "TypeError", "alfa")
    H.expect_error(function() return x:cumsum(1, 7) end, "TypeError", "expected a dtype")
  end)

  it("scatter refuses PyTorch's reduce rather than ignoring it", function()
    H.expect_error(function()
      return cell.zeros({ 3 }):scatter(1, cell.tensor({ 1, 1 }, cell.int64), cell.ones({ 2 }), "add")
    end, "NotImplementedError", "scatter: reduce (add) is not supported")
  end)

  it("var and std refuse an unbiased that is not a boolean", function()
    H.expect_error(function() return cell.ones({ 3 }):var { unbiased = 1 } end, "TypeError",
      "var: unbiased must be a boolean, got number")
  end)

  it("clamp with min above max gives max, and its gradient is zero", function()
    local x = cell.tensor({ -1, 0.5, 3 }, cell.float64)
    H.assert_values(x:clamp(2, 1), { 1, 1, 1 }, "float64")
    H.assert_values(cell.grad(function(v) return v:clamp(2, 1):sum() end)(x), { 0, 0, 0 }, "float64")
  end)

  it("a 0-d tensor of no higher category takes the other operand's dtype", function()
    local x = cell.tensor({ 1, 2 })
    assert.are.equal(cell.float32, (x * cell.tensor(2.5, cell.float64)).dtype)
    assert.are.equal(cell.int32, (cell.tensor({ 1, 2 }, cell.int32) + cell.tensor(3, cell.int64)).dtype)
    assert.are.equal(cell.float64, (cell.tensor({ 1, 2 }, cell.int32) + cell.tensor(3, cell.float64)).dtype)
    assert.are.equal(cell.float64, (cell.tensor(1, cell.float32) + cell.tensor(3, cell.float64)).dtype)
    local g = cell.grad(function(s) return (x * s):sum() end)(cell.tensor(2.5, cell.float64))
    assert.are.equal(cell.float64, g.dtype)
    assert.are.equal(3, g:item())
  end)
end)
