-- The losses of issue 14 against PyTorch (spec/fixtures/gen_layers14.py;
-- FocalLoss and DiceLoss written out from MindSpore's definitions), float64
-- gradchecks (CTC included), and the misuse errors.
local cell = require "cell"
local H = require "helpers"
local R = require "helpers.layers14_runner"
local nn, ops = cell.nn, cell.ops

describe("cell.nn losses of issue 14 against PyTorch", function()
  R.describe_cases(it, "loss")
end)

local function input(shape, lo, hi, seed)
  cell.set_seed(seed or 5)
  return cell.rand(shape, cell.float64) * (hi - lo) + lo
end

describe("the losses pass float64 gradchecks", function()
  local x, y = input({ 3, 4 }, -2, 2, 1), input({ 3, 4 }, -2, 2, 2)
  local p, q = input({ 3, 4 }, 0.1, 0.9, 3), input({ 3, 4 }, 0.1, 0.9, 4)
  local checks = {
    { "SmoothL1Loss", function(a, b) return nn.SmoothL1Loss{ beta = 0.3 }(a, b) end, { x, y } },
    { "HuberLoss", function(a, b) return nn.HuberLoss{ delta = 0.4, reduction = "sum" }(a, b) end, { x, y } },
    { "KLDivLoss", function(a, b) return nn.KLDivLoss{ reduction = "batchmean" }(a, b) end, { x, p } },
    { "KLDivLoss log_target", function(a, b) return nn.KLDivLoss{ log_target = true }(a, b) end, { x, y } },
    { "BCELoss", function(a, b) return nn.BCELoss()(a, b) end, { p, q } },
    { "CosineEmbeddingLoss", function(a, b)
      return nn.CosineEmbeddingLoss{ margin = -0.5, reduction = "none" }(a, b, cell.tensor({ 1, -1, -1 }))
    end, { x, y } },
    { "MarginRankingLoss", function(a, b)
      return nn.MarginRankingLoss{ margin = 0.3 }(a, b, (a * 0 + 1):stop_gradient())
    end, { x, y } },
    { "TripletMarginLoss", function(a, b, c) return nn.TripletMarginLoss{ p = 3 }(a, b, c, 2.0) end, { x, y, p } },
    { "MultiMarginLoss", function(a) return nn.MultiMarginLoss{ p = 2 }(a, cell.tensor({ 2, 1, 4 }, cell.int64)) end,
      { x } },
    { "MultiLabelSoftMarginLoss", function(a, b) return nn.MultiLabelSoftMarginLoss()(a, b) end, { x, q } },
    { "PoissonNLLLoss", function(a, b) return nn.PoissonNLLLoss{ log_input = false, full = true }(a, b) end,
      { p, y + 3 } },
    { "GaussianNLLLoss", function(a, b, v) return nn.GaussianNLLLoss{ full = true }(a, b, v) end, { x, y, p } },
    { "FocalLoss", function(a) return nn.FocalLoss{ gamma = 1.5 }(a, cell.tensor({ { 2 }, { 1 }, { 3 } })) end,
      { input({ 3, 4 }, -2, 2, 6) } },
    { "DiceLoss", function(a, b) return nn.DiceLoss()(a, b) end, { p, q } },
    { "CTCLoss (tiny, unnormalised log_probs)", function(lp)
      return nn.CTCLoss{ blank = 2, reduction = "sum" }(lp, cell.tensor({ { 1, 3 }, { 3, 1 } }, cell.int64), { 4, 3 }, { 2, 1 })
    end, { input({ 4, 2, 3 }, -2, 0, 7) } },
    { "CTCLoss through log_softmax, repeated labels", function(z)
      return nn.CTCLoss()(ops.log_softmax(z, 3), cell.tensor({ 2, 2, 3 }, cell.int64), { 5 }, { 3 })
    end, { input({ 5, 1, 3 }, -1, 1, 8) } },
  }
  for _, c in ipairs(checks) do
    it(c[1], function() R.gradcheck(c[2], c[3], nil, 1e-5) end)
  end
end)

describe("CTCLoss", function()
  it("gives infinity for an impossible alignment, 0 with zero_infinity", function()
    local lp = ops.log_softmax(input({ 2, 1, 3 }, -1, 1), 3)
    local l = nn.CTCLoss{ reduction = "none" }(lp, cell.tensor({ { 2, 2 } }, cell.int64), { 2 }, { 2 })
    assert.are.equal(math.huge, l:item())
    local z = nn.CTCLoss{ reduction = "none", zero_infinity = true }(lp, cell.tensor({ { 2, 2 } }, cell.int64), { 2 }, { 2 })
    assert.are.equal(0, z:item())
  end)
  it("sums to the probability of every alignment (by hand, T = 2, one label)", function()
    -- label 2, blank 1: paths (2,2), (1,2), (2,1)
    local pr = { { 0.2, 0.5, 0.3 }, { 0.6, 0.1, 0.3 } }
    local lp = cell.tensor({ { pr[1] }, { pr[2] } }, cell.float64):log()
    local want = -math.log(pr[1][2] * pr[2][2] + pr[1][1] * pr[2][2] + pr[1][2] * pr[2][1])
    H.assert_close(nn.CTCLoss{ reduction = "sum" }(lp, cell.tensor({ { 2 } }, cell.int64), { 2 }, { 1 }), want, 1e-12)
  end)
end)

describe("the losses refuse misuse", function()
  local x = cell.ones({ 2, 3 })
  it("with a ValueError for shapes that differ", function()
    H.expect_error(function() nn.HuberLoss()(x, cell.ones({ 3, 2 })) end, "ValueError", "HuberLoss", "(2, 3)", "(3, 2)")
    H.expect_error(function() nn.BCELoss()(x, cell.ones({ 3 })) end, "ValueError", "BCELoss")
    H.expect_error(function() nn.GaussianNLLLoss()(x, x, cell.ones({ 4 })) end, "ValueError", "GaussianNLLLoss", "var")
  end)
  it("with a ValueError for a bad reduction or option", function()
    H.expect_error(function() nn.SmoothL1Loss{ reduction = "avg" } end, "ValueError", "SmoothL1Loss", "reduction")
    H.expect_error(function() nn.KLDivLoss{ reduction = "avg" } end, "ValueError", "KLDivLoss", "reduction")
    H.expect_error(function() nn.SmoothL1Loss{ beta = 0 } end, "ValueError", "SmoothL1Loss", "beta")
    H.expect_error(function() nn.MultiMarginLoss{ p = 3 } end, "ValueError", "MultiMarginLoss", "'p'")
    H.expect_error(function() nn.CosineEmbeddingLoss{ margin = 2 } end, "ValueError", "CosineEmbeddingLoss", "margin")
    H.expect_error(function() nn.DiceLoss(0) end, "ValueError", "DiceLoss", "smooth")
  end)
  it("with a TypeError for an unknown option or a non-tensor", function()
    H.expect_error(function() nn.HuberLoss{ delt = 1 } end, "TypeError", "HuberLoss", "delt")
    H.expect_error(function() nn.HuberLoss()(x, 1) end, "TypeError", "HuberLoss", "labels")
    H.expect_error(function() nn.BCELoss()(cell.ones({ 2 }, cell.int64), cell.ones({ 2 }, cell.int64)) end,
      "TypeError", "BCELoss", "logits")
  end)
  it("MultiMarginLoss and FocalLoss: label shapes", function()
    H.expect_error(function() nn.MultiMarginLoss()(x, cell.ones({ 3 }, cell.int64)) end, "ValueError",
      "MultiMarginLoss", "(2, 3)", "(3,)")
    H.expect_error(function() nn.FocalLoss()(x, cell.ones({ 2, 2 }, cell.int64)) end, "ValueError", "FocalLoss",
      "(2, 2)")
  end)
  it("CTCLoss: lengths, targets and blank out of range", function()
    local lp = ops.log_softmax(input({ 3, 2, 4 }, -1, 1), 3):astype(cell.float32)
    local tg = cell.tensor({ { 2, 3 }, { 3, 4 } }, cell.int64)
    H.expect_error(function() nn.CTCLoss()(lp, tg, { 4, 3 }, { 2, 2 }) end, "ValueError", "ctc_loss",
      "input_lengths[1] = 4", "[0, 3]")
    H.expect_error(function() nn.CTCLoss()(lp, tg, { 3, 3 }, { 3, 2 }) end, "ValueError", "ctc_loss",
      "target_lengths[1] = 3")
    H.expect_error(function() nn.CTCLoss()(lp, cell.tensor({ { 1, 3 }, { 3, 4 } }, cell.int64), { 3, 3 }, { 2, 2 }) end,
      "IndexError", "ctc_loss", "target 1", "blank (1)")
    H.expect_error(function() nn.CTCLoss()(lp, cell.tensor({ { 5, 3 }, { 3, 4 } }, cell.int64), { 3, 3 }, { 2, 2 }) end,
      "IndexError", "ctc_loss", "target 5", "[1, 4]")
    H.expect_error(function() nn.CTCLoss{ blank = 5 }(lp, tg, { 3, 3 }, { 2, 2 }) end, "ValueError", "ctc_loss",
      "blank (5)")
    H.expect_error(function() nn.CTCLoss()(lp:sum(1), tg, { 3, 3 }, { 2, 2 }) end, "ValueError", "ctc_loss", "3-D")
    H.expect_error(function() nn.CTCLoss()(lp, tg, { 3 }, { 2, 2 }) end, "ValueError", "ctc_loss", "N = 2")
    H.expect_error(function() nn.CTCLoss()(lp, cell.tensor({ 2, 3, 4 }, cell.int64), { 3, 3 }, { 2, 2 }) end, "ValueError",
      "ctc_loss", "sum(target_lengths) = 4", "got 3")
    H.expect_error(function() nn.CTCLoss()(lp, tg:astype(cell.float32), { 3, 3 }, { 2, 2 }) end, "TypeError",
      "ctc_loss", "targets")
    H.expect_error(function() nn.CTCLoss()(lp, tg, { 3, 1.5 }, { 2, 2 }) end, "TypeError", "ctc_loss",
      "input_lengths")
    H.expect_error(function() nn.CTCLoss{ blank = 0 } end, "ValueError", "CTCLoss", "blank")
  end)
end)
