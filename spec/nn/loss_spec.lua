-- loss_spec.lua - the loss cells: MSELoss, L1Loss, CrossEntropyLoss,
-- SoftmaxCrossEntropyWithLogits, NLLLoss, BCEWithLogitsLoss. Reductions,
-- class weights, ignore_index, label smoothing, probability labels, 1-based
-- labels, against PyTorch fixtures (spec/fixtures/gen_layers.py); and every
-- argument and input error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local L = require("fixtures.layers_fixtures").loss

local function err(fn, ...) return H.caller_error("loss_spec%.lua", fn, ...) end
local function t(v, dtype) return cell.tensor(v, dtype) end
local function ids(v) return cell.tensor(v, cell.int64) end

local TOL = 1e-5

describe("loss cells", function()
  it("check reduction and keep it; print as MindSpore (no extra text)", function()
    for _, name in ipairs { "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss" } do
      assert.are.equal("mean", nn[name]().reduction)
      assert.are.equal(name .. "()", tostring(nn[name]()))
      assert.are.equal("sum", nn[name] { reduction = "sum" }.reduction)
      assert.are.equal("ValueError: For '" .. name .. "', the 'reduction' must be in ['mean', 'sum', 'none'], but "
        .. "got 'avg'.", err(function() local l = nn[name] { reduction = "avg" } return l end))
    end
    assert.are.equal("none", nn.SoftmaxCrossEntropyWithLogits().reduction)
    assert.are.equal("sum", nn.MSELoss("sum").reduction)
    assert.are.equal("sum", nn.BCEWithLogitsLoss("sum").reduction)
    assert.are.equal("sum", nn.CrossEntropyLoss(nil, nil, "sum").reduction)
    H.expect_error(function() nn.MSELoss(1) end, "ValueError", "got number")
    assert.are.same({}, nn.CrossEntropyLoss { weight = t({ 1, 2 }) }:state_dict():keys())
  end)

  describe("MSELoss and L1Loss", function()
    local x, y = t(L.mx), t(L.my)
    it("reduce by mean, sum or none, and broadcast the labels", function()
      for _, red in ipairs { "mean", "sum", "none" } do
        H.assert_close(nn.MSELoss(red)(x, y), L["mse_" .. red], TOL)
        H.assert_close(nn.L1Loss(red)(x, y), L["l1_" .. red], TOL)
      end
      H.assert_close(nn.MSELoss("none")(x, t(L.my3)), L.mse_bcast_none, TOL)
    end)
    it("name the layer and both shapes when they do not broadcast", function()
      assert.are.equal("ValueError: For 'MSELoss', the shapes of logits (2, 3) and labels (2, 2) can not broadcast.",
        err(function() local l = nn.MSELoss()(x, cell.ones({ 2, 2 })) return l end))
      H.expect_error(function() nn.L1Loss()(x, 1) end, "TypeError", "For 'L1Loss', the 'labels' must be a Tensor")
    end)
  end)

  describe("CrossEntropyLoss", function()
    local logits, labels = t(L.logits), ids(L.labels)
    it("takes 1-based class ids with each reduction", function()
      for _, red in ipairs { "mean", "sum", "none" } do
        H.assert_close(nn.CrossEntropyLoss { reduction = red }(logits, labels), L["ce_" .. red], TOL)
      end
      H.assert_close(nn.CrossEntropyLoss()(logits, cell.tensor(L.labels, cell.int32)), L.ce_mean, TOL)
    end)
    it("weights classes, ignores a label, smooths labels", function()
      H.assert_close(nn.CrossEntropyLoss { weight = t(L.weight) }(logits, labels), L.ce_weight_mean, TOL)
      H.assert_close(nn.CrossEntropyLoss { ignore_index = 2 }(logits, labels), L.ce_ignore2_mean, TOL)
      H.assert_close(nn.CrossEntropyLoss { label_smoothing = 0.1 }(logits, labels), L.ce_smooth_mean, TOL)
    end)
    it("takes class probabilities of the logits' shape", function()
      H.assert_close(nn.CrossEntropyLoss()(logits, t(L.probs)), L.ce_probs_mean, TOL)
    end)
    it("takes {N, C, d} logits with {N, d} labels", function()
      local l3, y3 = t(L.logits3), ids(L.labels3)
      H.assert_close(nn.CrossEntropyLoss { reduction = "none" }(l3, y3), L.ce_3d_none, TOL)
      H.assert_close(nn.CrossEntropyLoss()(l3, y3), L.ce_3d_mean, TOL)
    end)
    it("gives the gradient softmax - onehot (over N for the mean)", function()
      local g = cell.grad(function(a) return nn.CrossEntropyLoss()(a, ids({ 1 })) end)(t({ { 0, 0 } }))
      H.assert_close(g, { { -0.5, 0.5 } }, TOL)
    end)
    it("names the layer and both shapes for wrong labels", function()
      local ce = nn.CrossEntropyLoss()
      assert.are.equal("ValueError: For 'CrossEntropyLoss', class-id labels must be an integer Tensor of the logits' "
        .. "shape without the class dimension, (4,) for logits (4, 3), but got Int64 of shape (3,).",
        err(function() local l = ce(logits, ids({ 1, 2, 3 })) return l end))
      H.expect_error(function() ce(logits, cell.ones({ 4, 2 })) end, "ValueError",
        "probability labels must have the logits' shape (4, 3), but got (4, 2)")
      H.expect_error(function() ce(t({ 1, 2 }), ids({ 1 })) end, "ValueError",
        "class-id labels must be an integer Tensor of the logits' shape without the class dimension, () for logits "
        .. "(2,), but got Int64 of shape (1,)")
      H.expect_error(function() ce(t(1), ids(1)) end, "ValueError", "the logits must be {C}, {N, C} or {N, C, d...}",
        "()")
      H.expect_error(function() ce(logits, ids({ 1, 2, 3, 4 })) end, "IndexError", "4")
      H.expect_error(function() ce(logits, ids({ 0, 1, 1, 1 })) end, "IndexError", "0")
      H.expect_error(function() nn.CrossEntropyLoss { weight = t({ 1, 2 }) }(logits, labels) end, "ValueError",
        "'weight' must have one value per class, shape (3,), but got (2,)")
      H.expect_error(function() ce("x", labels) end, "TypeError", "'logits' must be a Tensor, but got string")
    end)
  end)

  -- Unbatched logits {C}: the class dimension is the first (MindSpore's and
  -- PyTorch's rule for ndim 1), the label a 0-D class id or {C} probabilities.
  -- Numbers from PyTorch 1.13 in float64, with 0-based class 2 for cell's 3:
  --   x = torch.tensor([0.5, -1.0, 2.0, 0.1, 0.3], dtype=torch.float64)
  --   w = torch.tensor([1, 2, 0.5, 1.5, 3], dtype=torch.float64)
  --   p = torch.tensor([0.1, 0.2, 0.3, 0.2, 0.2], dtype=torch.float64)
  --   F.cross_entropy(x, torch.tensor(2), reduction=r, weight=..., label_smoothing=...)
  --   F.cross_entropy(x, p, ...); F.nll_loss(x, torch.tensor(2), ...); ignore_index=2
  -- Each result has shape () whatever the reduction.
  describe("unbatched {C} logits (CrossEntropyLoss and NLLLoss)", function()
    local x = t({ 0.5, -1.0, 2.0, 0.1, 0.3 })
    local w = t({ 1, 2, 0.5, 1.5, 3 })
    local p = t({ 0.1, 0.2, 0.3, 0.2, 0.2 })
    local c = ids(3)
    -- {options, class-id result by reduction {mean, sum, none}, probabilities' result (the same for each)}
    local cases = {
      { {}, { 0.47322927861038616, 0.47322927861038616, 0.47322927861038616 }, 1.943229278610386 },
      { { weight = w }, { 0.47322927861038616, 0.23661463930519308, 0.23661463930519308 }, 3.6735053818460988 },
      { { label_smoothing = 0.1 }, { 0.6352292786103861, 0.6352292786103861, 0.6352292786103861 },
        1.9582292786103863 },
      { { weight = w, label_smoothing = 0.2 }, { 1.917450161198956, 0.958725080599478, 0.958725080599478 },
        3.7082376746322026 },
    }
    local reductions = { "mean", "sum", "none" }

    it("CrossEntropyLoss takes a 0-D class id or {C} probabilities, as PyTorch", function()
      for _, case in ipairs(cases) do
        for k, red in ipairs(reductions) do
          local o = { reduction = red, weight = case[1].weight, label_smoothing = case[1].label_smoothing }
          local what = red .. (o.weight and " weight" or "") .. (o.label_smoothing and " smoothing" or "")
          local y = nn.CrossEntropyLoss(o)(x, c)
          assert.are.same({}, y.shape, what)
          H.assert_close(y, case[2][k], TOL, what)
          H.assert_close(nn.CrossEntropyLoss(o)(x, p), case[3], TOL, what .. " probabilities")
        end
      end
      H.assert_close(nn.CrossEntropyLoss()(x, cell.tensor(3, cell.int32)), 0.47322927861038616, TOL)
      -- ignore_index: the mean over no sample is nan, the sum and none 0
      H.assert_close(nn.CrossEntropyLoss { ignore_index = 3 }(x, c), 0 / 0)
      H.assert_close(nn.CrossEntropyLoss { ignore_index = 3, reduction = "sum" }(x, c), 0)
      H.assert_close(nn.CrossEntropyLoss { ignore_index = 3, reduction = "none" }(x, c), 0)
      H.assert_close(nn.CrossEntropyLoss { ignore_index = 2 }(x, c), 0.47322927861038616, TOL)
    end)

    it("NLLLoss takes a 0-D class id, as PyTorch", function()
      for _, red in ipairs(reductions) do
        H.assert_close(nn.NLLLoss { reduction = red }(x, c), -2.0, TOL, red)
        H.assert_close(nn.NLLLoss { reduction = red, weight = w }(x, c), red == "mean" and -2.0 or -1.0, TOL, red)
      end
      H.assert_close(nn.NLLLoss { ignore_index = 3 }(x, c), 0 / 0)
      H.assert_close(nn.NLLLoss { ignore_index = 3, reduction = "sum" }(x, c), 0)
    end)

    it("gives the gradient softmax - onehot", function()
      local g = cell.grad(function(a) return nn.CrossEntropyLoss()(a, ids(1)) end)(t({ 0, 0 }))
      H.assert_close(g, { -0.5, 0.5 }, TOL)
    end)

    it("checks the labels and weight against the class dimension 1", function()
      assert.are.equal("ValueError: For 'CrossEntropyLoss', class-id labels must be an integer Tensor of the logits' "
        .. "shape without the class dimension, () for logits (5,), but got Int64 of shape (1,).",
        err(function() local l = nn.CrossEntropyLoss()(x, ids({ 3 })) return l end))
      H.expect_error(function() nn.CrossEntropyLoss()(x, t({ 0.5, 0.5 })) end, "ValueError",
        "probability labels must have the logits' shape (5,), but got (2,)")
      H.expect_error(function() nn.NLLLoss()(x, p) end, "TypeError",
        "For 'NLLLoss', the labels must be an integer Tensor of class ids (1 to C), but got Float32")
      H.expect_error(function() nn.NLLLoss { weight = t({ 1, 2 }) }(x, c) end, "ValueError",
        "For 'NLLLoss', the 'weight' must have one value per class, shape (5,), but got (2,)")
      H.expect_error(function() nn.CrossEntropyLoss()(x, ids(6)) end, "IndexError", "6")
      H.expect_error(function() nn.NLLLoss()(x, ids(0)) end, "IndexError", "0")
    end)
  end)

  describe("NLLLoss", function()
    local logp, labels = t(L.logp), ids(L.labels)
    it("takes log-probabilities and 1-based class ids, with class weights", function()
      H.assert_close(nn.NLLLoss()(logp, labels), L.nll_mean, TOL)
      H.assert_close(nn.NLLLoss(t(L.weight), nil, "sum")(logp, labels), L.nll_weight_sum, TOL)
      H.assert_close(nn.NLLLoss { weight = t(L.weight) }(logp, labels), L.nll_weight_mean, TOL)
    end)
    it("rejects probability labels", function()
      H.expect_error(function() nn.NLLLoss()(logp, cell.ones({ 4, 3 })) end, "TypeError",
        "For 'NLLLoss', the labels must be an integer Tensor of class ids (1 to C), but got Float32")
    end)
  end)

  describe("SoftmaxCrossEntropyWithLogits", function()
    local logits = t(L.logits)
    it("is per sample by default, with sparse ids or one-hot labels", function()
      H.assert_close(nn.SoftmaxCrossEntropyWithLogits { sparse = true }(logits, ids(L.labels)), L.ce_none, TOL)
      local onehot = {}
      for i, c in ipairs(L.labels) do
        onehot[i] = { 0, 0, 0 }
        onehot[i][c] = 1
      end
      H.assert_close(nn.SoftmaxCrossEntropyWithLogits()(logits, t(onehot)), L.ce_none, TOL)
      H.assert_close(nn.SoftmaxCrossEntropyWithLogits(true, "mean")(logits, ids(L.labels)), L.ce_mean, TOL)
    end)
    it("checks the labels against sparse", function()
      local sce = nn.SoftmaxCrossEntropyWithLogits(true)
      assert.are.equal("ValueError: For 'SoftmaxCrossEntropyWithLogits', with sparse = true the labels must be "
        .. "integer class ids of shape (4,), but got Float32 of shape (4, 3).",
        err(function() local l = sce(logits, cell.ones({ 4, 3 })) return l end))
      H.expect_error(function() nn.SoftmaxCrossEntropyWithLogits()(logits, ids(L.labels)) end, "ValueError",
        "with sparse = false the labels must have the logits' shape (4, 3), but got (4,)")
      H.expect_error(function() sce(t(L.logits3), ids(L.labels3)) end, "ValueError", "must be 2-D {N, C}")
    end)
  end)

  describe("BCEWithLogitsLoss", function()
    local x, y = t(L.mx), t(L.bt)
    it("reduces, and weights elements and positive classes", function()
      H.assert_close(nn.BCEWithLogitsLoss()(x, y), L.bce_mean, TOL)
      H.assert_close(nn.BCEWithLogitsLoss("none")(x, y), L.bce_none, TOL)
      H.assert_close(nn.BCEWithLogitsLoss { reduction = "sum", weight = t(L.bw), pos_weight = t(L.bp) }(x, y),
        L.bce_weight_pos_sum, TOL)
    end)
    it("names the layer and the shapes when they differ", function()
      assert.are.equal("ValueError: For 'BCEWithLogitsLoss', the logits and labels must have the same shape, but got "
        .. "(2, 3) and (3,).", err(function() local l = nn.BCEWithLogitsLoss()(x, t({ 1, 0, 1 })) return l end))
      H.expect_error(function() nn.BCEWithLogitsLoss { weight = t({ 1, 2 }) }(x, y) end, "ValueError",
        "the 'weight' of shape (2,) can not broadcast to the logits' shape (2, 3)")
    end)
  end)

  it("reject bad options", function()
    H.expect_error(function() nn.CrossEntropyLoss { weight = { 1, 2 } } end, "TypeError", "'weight' must be a Tensor")
    H.expect_error(function() nn.CrossEntropyLoss { weight = cell.ones({ 2, 2 }) } end, "ValueError",
      "'weight' must be a 1-D Tensor")
    H.expect_error(function() nn.CrossEntropyLoss { ignore_index = 1.5 } end, "TypeError", "'ignore_index'")
    H.expect_error(function() nn.CrossEntropyLoss { label_smoothing = 2 } end, "ValueError",
      "'label_smoothing' must be in range [0, 1], but got 2")
    H.expect_error(function() nn.NLLLoss { label_smoothing = 0.1 } end, "TypeError", "unexpected keyword argument 'label_smoothing'")
    H.expect_error(function() nn.BCEWithLogitsLoss { pos_weight = 2 } end, "TypeError", "'pos_weight' must be a Tensor")
    H.expect_error(function() nn.SoftmaxCrossEntropyWithLogits { sparse = 1 } end, "TypeError", "'sparse'")
  end)
end)
