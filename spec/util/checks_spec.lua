-- checks_spec.lua - cell.util.checks (lua/cell/util/checks.lua): the shared
-- integer and boolean checks and their messages, the wordings the dataset
-- modules, Cell, the learning-rate functions and the callbacks pin in their
-- own specs.
local H = require "helpers"
local cell = H.cell
local checks = require "cell.util.checks"

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "no error")
  return tostring(e):gsub("^[^:]*:%d+: ", "")
end

describe("cell.util.checks", function()
  it("int returns a finite integer at least lo", function()
    assert.are.equal(3, checks.int("f", "n", 3))
    assert.are.equal(-2, checks.int("f", "n", -2))
    assert.are.equal(1, checks.int("f", "n", 1, 1))
  end)

  it("int names a wrong number by its value and anything else by its type", function()
    assert.are.equal("TypeError: f: n must be an integer, but got 1.5", err(checks.int, "f", "n", 1.5))
    assert.are.equal("TypeError: f: n must be an integer, but got inf", err(checks.int, "f", "n", math.huge))
    assert.are.equal("TypeError: f: n must be an integer, but got string", err(checks.int, "f", "n", "3"))
    assert.are.equal("TypeError: f: n must be an integer, but got Tensor", err(checks.int, "f", "n", cell.ones({ 1 })))
    assert.are.equal("TypeError: f: n must be an integer, but got nil", err(checks.int, "f", "n", nil))
    assert.are.equal("ValueError: f: n must be at least 1, but got 0", err(checks.int, "f", "n", 0, 1))
  end)

  it("positive_int takes an integer of at least 1, in MindSpore's words", function()
    assert.are.equal(2, checks.positive_int("C", "n", 2))
    assert.are.equal("TypeError: For 'C', the 'n' must be an integer, but got 2.5.", err(checks.positive_int, "C", "n", 2.5))
    assert.are.equal("TypeError: For 'C', the 'n' must be an integer, but got -inf.",
      err(checks.positive_int, "C", "n", -math.huge))
    assert.are.equal("TypeError: For 'C', the 'n' must be an integer, but got string.",
      err(checks.positive_int, "C", "n", "2"))
    assert.are.equal("ValueError: For 'C', the 'n' must be a positive integer, but got 0.",
      err(checks.positive_int, "C", "n", 0))
  end)

  it("bool returns a boolean, the default for nil", function()
    assert.are.equal(false, checks.bool("f", "b", false, true))
    assert.are.equal(true, checks.bool("f", "b", nil, true))
    assert.is_nil(checks.bool("f", "b", nil))
    assert.are.equal("TypeError: f: b must be a boolean, but got number", err(checks.bool, "f", "b", 1))
    assert.are.equal("TypeError: f: b must be a boolean, but got Dense", err(checks.bool, "f", "b", cell.nn.Dense(1, 1)))
  end)
end)
