-- The normalisation layers of issue 14 against PyTorch
-- (spec/fixtures/gen_layers14.py), float64 gradchecks, the functional
-- forms, and the misuse errors.
local cell = require "cell"
local H = require "helpers"
local R = require "helpers.layers14_runner"
local nn, ops = cell.nn, cell.ops

describe("cell.nn normalisation layers of issue 14 against PyTorch", function()
  R.describe_cases(it, "norm")
end)

local function input(shape, seed)
  cell.set_seed(seed or 5)
  return cell.rand(shape, cell.float64) * 4 - 2
end

describe("the functional normalisations", function()
  it("group_norm passes a float64 gradcheck (input, weight, bias)", function()
    R.gradcheck(function(x, w, b) return ops.group_norm(x, 2, w, b, 1e-5) end,
      { input({ 2, 4, 3 }), input({ 4 }, 6), input({ 4 }, 7) })
  end)
  it("instance_norm passes a float64 gradcheck on a non-contiguous input", function()
    R.gradcheck(function(x, w) return ops.instance_norm(x, w) end,
      { input({ 3, 2, 2 }):transpose(1, 2), input({ 3 }, 6) })
  end)
  it("rms_norm passes a float64 gradcheck and returns rstd", function()
    R.gradcheck(function(x, g) return (ops.rms_norm(x, g, 1e-6)) end, { input({ 2, 3 }), input({ 3 }, 6) })
    local y, r = ops.rms_norm(cell.tensor({ { 3, 4 } }, cell.float64), cell.ones({ 2 }, cell.float64), 1e-12)
    H.assert_close(r, { { 1 / math.sqrt(12.5) } }, 1e-9)
    H.assert_close(y, { { 3 / math.sqrt(12.5), 4 / math.sqrt(12.5) } }, 1e-9)
  end)
  it("GroupNorm with affine = false keeps gamma and beta out of training", function()
    local g = nn.GroupNorm(2, 4, { affine = false })
    assert.are.equal(0, #g:trainable_params())
    local y = g(input({ 2, 4, 3 }):astype(cell.float32))
    H.assert_close(y:mean(), 0, 1e-5)
  end)
  it("RMSNorm without elementwise_affine has no parameters and uses the dtype's eps", function()
    local r = nn.RMSNorm(3, { elementwise_affine = false })
    assert.are.equal(0, #r:trainable_params())
    local y = r(cell.tensor({ { 1, 2, 2 } }, cell.float64))
    H.assert_close(y, { { 1 / math.sqrt(3), 2 / math.sqrt(3), 2 / math.sqrt(3) } }, 1e-9)
  end)
  it("BatchNorm3d normalises with its moving statistics in inference", function()
    local b = nn.BatchNorm3d(2)
    local x = input({ 1, 2, 2, 1, 2 }):astype(cell.float32)
    H.assert_close(b(x), x:totable(), 1e-4)
  end)
end)

describe("the normalisations refuse misuse", function()
  it("GroupNorm: channels not divisible by groups, a wrong input", function()
    H.expect_error(function() nn.GroupNorm(3, 4) end, "ValueError", "GroupNorm", "num_channels", "(4)", "(3)")
    H.expect_error(function() nn.GroupNorm(2, 4)(cell.ones({ 2, 3, 2 })) end, "ValueError", "GroupNorm", "(2, 3, 2)")
    H.expect_error(function() nn.GroupNorm(0, 4) end, "ValueError", "GroupNorm", "num_groups")
    H.expect_error(function() nn.GroupNorm(2, 4, { eps = 0 }) end, "ValueError", "GroupNorm", "eps")
  end)
  it("group_norm: a 1-D input, a wrong weight", function()
    H.expect_error(function() ops.group_norm(cell.ones({ 4 }), 2) end, "ValueError", "group_norm", "(4,)")
    H.expect_error(function() ops.group_norm(cell.ones({ 2, 4 }), 2, cell.ones({ 3 })) end, "ValueError",
      "group_norm", "weight", "(3,)")
    H.expect_error(function() ops.group_norm(cell.ones({ 2, 4 }, cell.int64), 2) end, "TypeError", "group_norm")
  end)
  it("InstanceNorm: the rank and channels", function()
    H.expect_error(function() nn.InstanceNorm2d(3)(cell.ones({ 2, 3, 4 })) end, "ValueError", "InstanceNorm2d",
      "(2, 3, 4)")
    H.expect_error(function() nn.InstanceNorm1d(3, { momentum = 2 }) end, "ValueError", "InstanceNorm1d", "momentum")
    H.expect_error(function() ops.instance_norm(cell.ones({ 2, 3 })) end, "ValueError", "instance_norm")
  end)
  it("BatchNorm3d: a 4-D input", function()
    H.expect_error(function() nn.BatchNorm3d(3)(cell.ones({ 2, 3, 2, 2 })) end, "ValueError", "BatchNorm3d",
      "(2, 3, 2, 2)")
  end)
  it("RMSNorm and rms_norm: shapes, eps and dtypes", function()
    H.expect_error(function() nn.RMSNorm("a") end, "TypeError", "RMSNorm", "normalized_shape")
    H.expect_error(function() nn.RMSNorm(4)(cell.ones({ 2, 3 })) end, "ValueError", "rms_norm", "(4,)", "(2, 3)")
    H.expect_error(function() ops.rms_norm(cell.ones({ 2 }), cell.ones({ 2 }), 0) end, "ValueError", "rms_norm",
      "epsilon")
    H.expect_error(function() ops.rms_norm(cell.ones({ 2 }), cell.ones({ 2 }, cell.float64)) end, "TypeError",
      "rms_norm", "Float32", "Float64")
  end)
end)
