-- metrics_spec.lua - cell.train.Accuracy and cell.train.Loss: values
-- counted by hand, class ids and one-hot labels, accumulation and clear,
-- and bad input.
local H = require "helpers"
local cell = H.cell
local train = cell.train

local function err(fn, ...) return H.caller_error("metrics_spec%.lua", fn, ...) end

describe("train.Accuracy", function()
  it("counts rows whose argmax is the 1-based label, over several updates", function()
    local acc = train.Accuracy()
    local logits = cell.tensor({ { 0.1, 0.7, 0.2 }, { 0.9, 0.05, 0.05 }, { 0.2, 0.3, 0.5 }, { 0.3, 0.3, 0.4 } })
    acc:update(logits, cell.tensor({ 2, 1, 1, 3 }, cell.int64)) -- 3 of 4
    assert.are.equal(0.75, acc:eval())
    acc:update(cell.tensor({ { 1, 0 }, { 0, 1 } }), cell.tensor({ { 0, 1 }, { 0, 1 } })) -- one-hot: 1 of 2
    assert.are.equal(4 / 6, acc:eval())
    acc:update(cell.tensor({ { 5, 1 } }), cell.tensor({ 1 }, cell.int32))
    assert.are.equal(5 / 7, acc:eval())
    acc:clear()
    acc:update(cell.tensor({ { 1, 2 } }), cell.tensor({ 2.0 }))
    assert.are.equal(1, acc:eval())
    assert.are.equal("Accuracy()", tostring(acc))
  end)

  it("names bad input", function()
    local acc = train.Accuracy()
    assert.are.equal("RuntimeError: The 'Accuracy' can not be calculated, because the number of samples is 0.",
      err(function() acc:eval() end))
    assert.are.equal("ValueError: For 'Accuracy.update', y must have shape (3,) (class ids) or (3, 2) (one-hot), but got (2,).",
      err(function() acc:update(cell.ones({ 3, 2 }), cell.ones({ 2 })) end))
    assert.are.equal("ValueError: For 'Accuracy.update', y_pred must have shape (N, C, ...), but got (3,).",
      err(function() acc:update(cell.ones({ 3 }), cell.ones({ 3 })) end))
    assert.are.equal("TypeError: For 'Accuracy.update', y_pred and y must be Tensors, but got table and Tensor.",
      err(function() acc:update({ 1 }, cell.ones({ 3 })) end))
    assert.are.equal("ValueError: For 'Accuracy', the 'eval_type' must be 'classification' or 'multilabel', but got 'x'.",
      err(function() train.Accuracy("x") end))
  end)

  it("with eval_type 'multilabel' counts a sample correct when all its 0/1 predictions equal its labels", function()
    local acc = train.Accuracy("multilabel")
    assert.are.equal("multilabel", acc.eval_type)
    -- rows 1 and 3 match exactly; row 2 differs in its last label
    acc:update(cell.tensor({ { 1, 0, 1 }, { 0, 1, 1 }, { 1, 1, 0 } }),
      cell.tensor({ { 1, 0, 1 }, { 0, 1, 0 }, { 1, 1, 0 } }, cell.int64))
    assert.are.equal(2 / 3, acc:eval())
    acc:update(cell.tensor({ { 0, 0, 0 } }), cell.tensor({ { 0, 0, 0 } }))
    assert.are.equal(3 / 4, acc:eval())
    acc:clear()
    assert.are.equal("RuntimeError: The 'Accuracy' can not be calculated, because the number of samples is 0.",
      err(function() acc:eval() end))
    -- (N, C, L), as MindSpore's swapaxes(1, -1): each (n, l) is a sample of C labels
    local nd = train.Accuracy { eval_type = "multilabel" }
    nd:update(cell.tensor({ { { 1, 0 }, { 0, 1 } }, { { 1, 1 }, { 0, 0 } } }),
      cell.tensor({ { { 1, 0 }, { 0, 0 } }, { { 1, 1 }, { 0, 0 } } }))
    assert.are.equal(3 / 4, nd:eval())
    -- MindSpore's _check_value: values other than 0 and 1 are refused, not thresholded
    assert.are.equal("ValueError: For 'Accuracy.update', with eval_type 'multilabel' y_pred and y must hold 0 and 1, "
      .. "but got 0.5 and 1 at [1, 2].", err(function() acc:update(cell.tensor({ { 1, 0.5 } }), cell.tensor({ { 1, 1 } })) end))
    assert.are.equal("ValueError: For 'Accuracy.update', with eval_type 'multilabel' y_pred and y must hold 0 and 1, "
      .. "but got 1 and 2 at [2, 2].",
      err(function() acc:update(cell.tensor({ { 1, 0 }, { 0, 1 } }), cell.tensor({ { 1, 0 }, { 0, 2 } })) end))
    assert.are.equal("ValueError: For 'Accuracy.update', with eval_type 'multilabel' y_pred and y must have one shape "
      .. "(N, C, ...), but got (1, 2) and (1,).", err(function() acc:update(cell.tensor({ { 1, 0 } }), cell.tensor({ 1 })) end))
  end)
end)

describe("train.Loss", function()
  it("averages the batch losses (a 1-D loss counts as its mean)", function()
    local l = train.Loss()
    l:update(cell.tensor(0.5))
    l:update(cell.tensor({ 1, 2 }))
    l:update(2)
    assert.are.equal((0.5 + 1.5 + 2) / 3, l:eval())
    assert.is_true(train.Loss.is_loss_metric)
    l:clear()
    assert.are.equal("RuntimeError: The 'Loss' can not be calculated, because the number of samples is 0.",
      err(function() l:eval() end))
    assert.are.equal("ValueError: For 'Loss.update', the loss must be 0-D or 1-D, but got shape (2, 2).",
      err(function() l:update(cell.ones({ 2, 2 })) end))
    assert.are.equal("TypeError: For 'Loss.update', the loss must be a Tensor or a number, but got string.",
      err(function() l:update("x") end))
  end)
end)
