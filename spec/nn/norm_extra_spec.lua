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
