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
