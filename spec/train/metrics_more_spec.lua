-- metrics_more_spec.lua - cell.train's MindSpore metrics beyond Accuracy and
-- Loss: Precision, Recall, Fbeta/F1, TopKCategoricalAccuracy (Top1, Top5),
-- ConfusionMatrix, MAE, MSE; values counted by hand, the names Model's
-- metrics = {...} accepts, and bad input.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

local function err(fn, ...) return H.caller_error("metrics_more_spec%.lua", fn, ...) end

-- Five samples, three classes. Predicted (argmax): 1 2 3 1 2; labels: 1 2 2 3 2.
-- Per class: true positives 1 2 0, predicted 2 2 1, actual 1 3 1.
local function batch()
  local logits = cell.tensor({ { 0.9, 0.05, 0.05 }, { 0.2, 0.7, 0.1 }, { 0.1, 0.2, 0.7 }, { 0.6, 0.3, 0.1 },
    { 0.1, 0.8, 0.1 } })
  return logits, cell.tensor({ 1, 2, 2, 3, 2 }, cell.int64)
end

local function close(want, got, tol)
  if type(got) ~= "table" then got = { got } end
  if type(want) ~= "table" then want = { want } end
  assert.are.equal(#want, #got)
  for i = 1, #want do assert.is_true(math.abs(want[i] - got[i]) <= (tol or 1e-12), ("[%d] %s ~= %s"):format(i, want[i], got[i])) end
end

describe("train.Precision and train.Recall", function()
  it("give each class's value as a float64 Tensor and their mean with average = true", function()
    local p, r = train.Precision(), train.Recall()
    local x, y = batch()
    p:update(x, y)
    r:update(x, y)
    local pv = p:eval()
    assert.are.equal(cell.float64, pv.dtype)
    close({ 1 / 2, 1, 0 }, pv:tolist())
    close(0.5, p:eval(true))
    close({ 1, 2 / 3, 0 }, r:eval():tolist())
    close((1 + 2 / 3) / 3, r:eval(true))
  end)

  it("take one-hot labels, accumulate over updates and clear", function()
    local p = train.Precision()
    local x = batch()
    local onehot = cell.tensor({ { 1, 0, 0 }, { 0, 1, 0 }, { 0, 1, 0 }, { 0, 0, 1 }, { 0, 1, 0 } })
    p:update(x, onehot)
    p:update(cell.tensor({ { 0, 0, 1 } }), cell.tensor({ 3 }))  -- class 3: now 1 of 2
    close({ 1 / 2, 1, 1 / 2 }, p:eval():tolist())
    p:clear()
    assert.are.equal("RuntimeError: The 'Precision' can not be calculated, because the number of samples is 0.",
      err(function() p:eval() end))
  end)

  it("count multilabel 0/1 predictions per column", function()
    local r = train.Recall("multilabel")
    r:update(cell.tensor({ { 1, 0, 1 }, { 0, 1, 1 } }), cell.tensor({ { 1, 1, 0 }, { 1, 1, 1 } }))
    close({ 1 / 2, 1 / 2, 1 }, r:eval():tolist())
    local p = train.Precision { eval_type = "multilabel" }
    p:update(cell.tensor({ { 1, 0, 1 }, { 0, 1, 1 } }), cell.tensor({ { 1, 1, 0 }, { 1, 1, 1 } }))
    close({ 1, 1, 1 / 2 }, p:eval():tolist())
  end)

  it("name bad input", function()
    local p = train.Precision()
    assert.are.equal("ValueError: For 'Precision', the 'eval_type' must be 'classification' or 'multilabel', but got 'x'.",
      err(function() train.Precision("x") end))
    assert.are.equal("ValueError: For 'Precision.update', y must have shape (2,) (class ids) or (2, 3) (one-hot), but got (3,).",
      err(function() p:update(cell.zeros({ 2, 3 }), cell.ones({ 3 })) end))
    assert.are.equal("ValueError: For 'Precision.update', the labels must be class ids in [1, 3], but y[2] is 4.",
      err(function() p:update(cell.zeros({ 2, 3 }), cell.tensor({ 1, 4 })) end))
    assert.are.equal("TypeError: For 'Recall.update', y_pred and y must be Tensors, but got number and Tensor.",
      err(function() train.Recall():update(1, cell.ones({ 1 })) end))
    assert.are.equal("ValueError: For 'Recall.update', with eval_type 'multilabel' y_pred and y must hold 0 and 1, "
      .. "but got 0.5 and 1 at [1, 1].",
      err(function() train.Recall("multilabel"):update(cell.tensor({ { 0.5 } }), cell.tensor({ { 1 } })) end))
    p:update(cell.zeros({ 1, 3 }), cell.tensor({ 1 }))
    assert.are.equal("ValueError: For 'Precision.update', y_pred has 2 classes, but earlier batches had 3.",
      err(function() p:update(cell.zeros({ 1, 2 }), cell.tensor({ 1 })) end))
    assert.are.equal("TypeError: For 'Precision.eval', the 'average' must be a boolean, but got string.",
      err(function() p:eval("yes") end))
  end)
end)

describe("train.Fbeta and train.F1", function()
  it("give (1 + b^2) tp / (b^2 actual + predicted) per class", function()
    local x, y = batch()
    local f1, f2 = train.F1(), train.Fbeta(2)
    f1:update(x, y)
    f2:update(x, y)
    close({ 2 / 3, 4 / 5, 0 }, f1:eval():tolist())
    close((2 / 3 + 4 / 5) / 3, f1:eval(true))
    close({ 5 / 6, 10 / 14, 0 }, f2:eval():tolist())
    assert.are.equal("F1()", tostring(f1))
  end)

  it("names a bad beta", function()
    assert.are.equal("ValueError: For 'Fbeta', the 'beta' must be greater than 0, but got 0.",
      err(function() train.Fbeta(0) end))
    assert.are.equal("TypeError: For 'Fbeta', the 'beta' must be a finite number, but got nil.",
      err(function() train.Fbeta() end))
  end)
end)

describe("train.TopKCategoricalAccuracy", function()
  it("counts labels among the k highest scores; Top1 is accuracy", function()
    local x, y = batch()
    local k2, t1, t5 = train.TopKCategoricalAccuracy(2), train.Top1CategoricalAccuracy(), train.Top5CategoricalAccuracy()
    k2:update(x, y)
    t1:update(x, y)
    assert.are.equal(4 / 5, k2:eval())
    assert.are.equal(3 / 5, t1:eval())
    t5:update(cell.tensor({ { 1, 2, 3, 4, 5, 6 }, { 6, 5, 4, 3, 2, 1 } }), cell.tensor({ 1, 1 }))
    assert.are.equal(1 / 2, t5:eval())
    k2:clear()
    assert.are.equal("RuntimeError: The 'TopKCategoricalAccuracy' can not be calculated, because the number of samples is 0.",
      err(function() k2:eval() end))
  end)

  it("names bad input", function()
    assert.are.equal("ValueError: For 'TopKCategoricalAccuracy', the 'k' must be at least 1, but got 0.",
      err(function() train.TopKCategoricalAccuracy(0) end))
    assert.are.equal("ValueError: For 'Top5CategoricalAccuracy.update', y_pred has 3 classes, fewer than k = 5.",
      err(function() train.Top5CategoricalAccuracy():update(cell.zeros({ 1, 3 }), cell.tensor({ 1 })) end))
  end)
end)

describe("train.ConfusionMatrix", function()
  it("counts true class (rows) against predicted class (columns), normalized as asked", function()
    local x, y = batch()
    local cm = train.ConfusionMatrix(3)
    cm:update(x, y)
    assert.are.same({ { 1, 0, 0 }, { 0, 2, 1 }, { 1, 0, 0 } }, cm:eval():tolist())
    local t = train.ConfusionMatrix { num_classes = 3, normalize = "target" }
    t:update(x, y)
    local m = t:eval():tolist()
    close({ 1, 0, 0 }, m[1])
    close({ 0, 2 / 3, 1 / 3 }, m[2])
    close({ 1, 0, 0 }, m[3])
    local a = train.ConfusionMatrix(3, "all")
    a:update(x, y)
    assert.are.same({ 0.2, 0, 0 }, a:eval():tolist()[1])
    local p = train.ConfusionMatrix(3, "prediction")
    p:update(x, y)
    assert.are.same({ 0.5, 0, 0 }, p:eval():tolist()[1])
  end)

  it("thresholds probabilities of y's shape into two classes", function()
    local cm = train.ConfusionMatrix(2, "no_norm", 0.6)
    cm:update(cell.tensor({ 0.1, 0.7, 0.65, 0.3 }), cell.tensor({ 1, 2, 1, 1 }))
    assert.are.same({ { 2, 1 }, { 0, 1 } }, cm:eval():tolist())
  end)

  it("names bad input", function()
    assert.are.equal("ValueError: For 'ConfusionMatrix', the 'normalize' must be one of 'no_norm', 'target', "
      .. "'prediction', 'all', but got 'rows'.", err(function() train.ConfusionMatrix(2, "rows") end))
    assert.are.equal("ValueError: For 'ConfusionMatrix.update', class ids must be in [1, 2], but sample 1 has label 3 "
      .. "and prediction 1.", err(function() train.ConfusionMatrix(2):update(cell.tensor({ { 1, 0 } }), cell.tensor({ 3 })) end))
    assert.are.equal("ValueError: For 'ConfusionMatrix.update', y_pred has 3 classes in dimension 2, but num_classes is 2.",
      err(function() train.ConfusionMatrix(2):update(cell.zeros({ 1, 3 }), cell.tensor({ 1 })) end))
  end)
end)

describe("train.MAE and train.MSE", function()
  it("divide the summed error by the number of samples", function()
    local mae, mse = train.MAE(), train.MSE()
    local pred, target = cell.tensor({ { 1, 2 }, { 3, 4 } }), cell.tensor({ { 1.5, 2 }, { 2, 5 } })
    mae:update(pred, target)
    mse:update(pred, target)
    close(2.5 / 2, mae:eval())
    close(2.25 / 2, mse:eval())
    mae:update(cell.tensor({ 0, 0 }), cell.tensor({ { 1, -1 } }))  -- reshaped to y_pred's shape; 1 sample (y's)
    close(4.5 / 3, mae:eval())
    assert.are.equal("ValueError: For 'MSE.update', y must have as many elements as y_pred (2, 2), but got shape (3,).",
      err(function() mse:update(pred, cell.ones({ 3 })) end))
    mse:clear()
    assert.are.equal("RuntimeError: The 'MSE' can not be calculated, because the number of samples is 0.",
      err(function() mse:eval() end))
  end)
end)

describe("Model's metrics by MindSpore name", function()
  it("accepts precision, recall, F1, top_k, mae and mse names, and eval prints them as a dict", function()
    cell.set_seed(3)
    local net = nn.Dense(2, 3)
    local model = train.Model(net, nn.CrossEntropyLoss(), nil,
      { "accuracy", "precision", "recall", "F1", "top_1_categorical_accuracy", "loss" })
    local x = cell.tensor({ { 1, 0 }, { 0, 1 }, { 1, 1 }, { -1, 0 } })
    local y = cell.tensor({ 1, 2, 3, 1 }, cell.int64)
    local res = model:eval({ { x, y } })
    assert.are.equal(res.accuracy, res.top_1_categorical_accuracy)
    assert.are.equal(3, res.precision:numel())
    local want = train.Precision()
    want:update(net(x), y)
    assert.are.same(want:eval():tolist(), res.precision:tolist())
    assert.is_truthy(tostring(res):find("^{'accuracy': [%d.e-]+, 'precision': array%(%[[%d.e-]+, [%d.e-]+, [%d.e-]+%]%), "),
      tostring(res))
    local reg = train.Model(net, nn.MSELoss(), nil, { "mae", "mse" })
    local r = reg:eval({ { x, cell.zeros({ 4, 3 }) } })
    local out = net(x)
    close(out:abs():sum():item() / 4, r.mae, 1e-6)
    close((out * out):sum():item() / 4, r.mse, 1e-6)
  end)

  it("names an unknown metric with the known ones", function()
    local net = nn.Dense(2, 3)
    local msg = err(function() train.Model(net, nn.MSELoss(), nil, { "bleu" }) end)
    assert.is_truthy(msg:find("^KeyError: Unknown metric 'bleu'; known: .*'precision'"), msg)
  end)
end)
