-- lr_cells_spec.lua - cell.nn's learning-rate cells (ExponentialDecayLR,
-- NaturalExpDecayLR, InverseDecayLR, CosineDecayLR, PolynomialDecayLR,
-- WarmUpLR) against MindSpore's formulas written out here, is_stair, the
-- global step as a Tensor, use as an optimizer's learning_rate, and errors.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function at(sched, s) return sched(cell.tensor(s, cell.int32)):item() end

local function near(a, b) assert.is_true(math.abs(a - b) <= 1e-6 * (1 + math.abs(b)), ("got %.9g, expected %.9g"):format(a, b)) end

describe("learning-rate cells", function()
  it("follow MindSpore's formulas", function()
    for s = 0, 12 do
      near(at(nn.ExponentialDecayLR(0.1, 0.9, 4), s), 0.1 * 0.9 ^ (s / 4))
      near(at(nn.ExponentialDecayLR(0.1, 0.9, 4, true), s), 0.1 * 0.9 ^ math.floor(s / 4))
      near(at(nn.NaturalExpDecayLR(0.1, 0.9, 4), s), 0.1 * math.exp(-0.9 * s / 4))
      near(at(nn.NaturalExpDecayLR(0.1, 0.9, 4, true), s), 0.1 * math.exp(-0.9 * math.floor(s / 4)))
      near(at(nn.InverseDecayLR(0.1, 0.5, 4), s), 0.1 / (1 + 0.5 * s / 4))
      near(at(nn.InverseDecayLR(0.1, 0.5, 4, true), s), 0.1 / (1 + 0.5 * math.floor(s / 4)))
      near(at(nn.CosineDecayLR(0.01, 0.1, 8), s), 0.01 + 0.5 * 0.09 * (1 + math.cos(math.pi * math.min(s, 8) / 8)))
      near(at(nn.PolynomialDecayLR(0.1, 0.01, 8, 2), s), 0.09 * (1 - math.min(s, 8) / 8) ^ 2 + 0.01)
      local d = 5 * math.max(math.ceil(s / 5), 1)
      near(at(nn.PolynomialDecayLR(0.1, 0.01, 5, 0.5, true), s), 0.09 * (1 - s / d) ^ 0.5 + 0.01)
      near(at(nn.WarmUpLR(0.1, 6), s), 0.1 * math.min(s, 6) / 6)
    end
  end)
  it("return a 0-D float32 Tensor and take a number too", function()
    local r = nn.WarmUpLR(0.1, 4)(cell.tensor({ 2 }, cell.int32))
    assert.are.equal(cell.float32, r.dtype)
    assert.are.equal(0, r.ndim)
    near(nn.WarmUpLR(0.1, 4)(3):item(), 0.075)
  end)
  it("drive an optimizer with the 0-based global step", function()
    local w = cell.Parameter(cell.tensor({ 1.0, 2.0 }, cell.float64), "w")
    local sched = nn.InverseDecayLR(0.5, 1.0, 1)
    local opt = nn.SGD({ w }, sched)
    assert.are.equal(sched, opt.learning_rate)
    local expect = { 1.0, 2.0 }
    for s = 0, 3 do
      near(opt:get_lr():item(), 0.5 / (1 + s))
      opt({ cell.tensor({ 1.0, -1.0 }, cell.float64) })
      expect[1], expect[2] = expect[1] - 0.5 / (1 + s), expect[2] + 0.5 / (1 + s)
    end
    near(w:totable()[1], expect[1])
    near(w:totable()[2], expect[2])
  end)
  it("raise on bad arguments", function()
    local cases = {
      { function() nn.ExponentialDecayLR(-0.1, 0.9, 4) end, "ValueError: For 'ExponentialDecayLR', the argument 'learning_rate' must be greater than 0, but got -0.1." },
      { function() nn.NaturalExpDecayLR(0.1, 0.9, 1.5) end, "TypeError: For 'NaturalExpDecayLR', the argument 'decay_steps' must be an integer, but got 1.5." },
      { function() nn.InverseDecayLR(0.1, 0.9, 4, 1) end, "TypeError: For 'InverseDecayLR', the argument 'is_stair' must be a boolean, but got number." },
      { function() nn.CosineDecayLR(0.2, 0.1, 4) end, "ValueError: For 'CosineDecayLR', the 'max_lr' must be greater than the 'min_lr'" },
      { function() nn.PolynomialDecayLR(0.1, 0.01, 0, 1) end, "ValueError: For 'PolynomialDecayLR', the argument 'decay_steps' must be greater than 0, but got 0." },
      { function() nn.PolynomialDecayLR(0.1, 0.01, 4, "x") end, "TypeError: For 'PolynomialDecayLR', the argument 'power' must be a number, but got string." },
      { function() nn.WarmUpLR(0.1, 4)(-1) end, "ValueError: For 'WarmUpLR', the global_step must be at least 0, but got -1." },
      { function() nn.WarmUpLR(0.1, 4)("x") end, "TypeError: For 'WarmUpLR', the global_step must be a Tensor or a number, but got string." },
      { function() nn.WarmUpLR(0.1, 4)(cell.zeros({ 2 })) end, "ValueError: For 'WarmUpLR', the global_step must hold one element" },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(c[1])
      assert.is_false(ok)
      assert.is_truthy(tostring(e):find(c[2], 1, true), "expected '" .. c[2] .. "', got '" .. tostring(e) .. "'")
    end
  end)
end)
