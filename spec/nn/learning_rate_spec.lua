-- learning_rate_spec.lua - cell.nn's dynamic learning rates against
-- MindSpore's documented examples and its formulas evaluated here by hand,
-- and their argument checks.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("learning_rate_spec%.lua", fn, ...) end

--- Exact equality of two lists of numbers, with a readable failure.
local function same(expected, got)
  assert.are.equal(#expected, #got, "length")
  for i = 1, #expected do
    assert.are.equal(expected[i], got[i], ("element %d: expected %.17g, got %.17g"):format(i, expected[i], got[i]))
  end
end

describe("learning-rate schedules", function()
  it("give MindSpore's documented examples", function()
    same({ 0.1, 0.1, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01 }, nn.piecewise_constant_lr({ 2, 5, 10 }, { 0.1, 0.05, 0.01 }))
    same({ 0.1, 0.1, 0.09000000000000001, 0.09000000000000001, 0.08100000000000002, 0.08100000000000002 },
      nn.exponential_decay_lr(0.1, 0.9, 6, 2, 1))
    same({ 0.1, 0.1, 0.1, 0.1, 0.016529888822158657, 0.016529888822158657 },
      nn.natural_exp_decay_lr(0.1, 0.9, 6, 2, 2, true))
    same({ 0.1, 0.06666666666666667, 0.05, 0.04, 0.03333333333333333, 0.028571428571428574 },
      nn.inverse_decay_lr(0.1, 0.5, 6, 1, 1, true))
    same({ 0.1, 0.1, 0.05500000000000001, 0.05500000000000001, 0.01, 0.01 }, nn.cosine_decay_lr(0.01, 0.1, 6, 2, 2))
    same({ 0.1, 0.1, 0.07363961030678928, 0.07363961030678928, 0.01, 0.01 }, nn.polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0.5))
    same({ 0.0, 0.0, 0.05, 0.05, 0.1, 0.1 }, nn.warmup_lr(0.1, 6, 2, 2))
  end)

  it("follow the formulas step by step (epoch = floor((step - 1) / step_per_epoch))", function()
    local total, per, decay = 23, 3, 4
    local cos, expo, stair, nat, inv, poly, polyu, warm =
      nn.cosine_decay_lr(0.002, 0.3, total, per, decay),
      nn.exponential_decay_lr(0.2, 0.7, total, per, decay),
      nn.exponential_decay_lr(0.2, 0.7, total, per, decay, true),
      nn.natural_exp_decay_lr(0.2, 0.3, total, per, decay),
      nn.inverse_decay_lr(0.2, 0.3, total, per, decay),
      nn.polynomial_decay_lr(0.2, 0.01, total, per, decay, 2),
      nn.polynomial_decay_lr(0.2, 0.01, total, per, decay, 2, true),
      nn.warmup_lr(0.2, total, per, decay)
    for step = 1, total do
      local e = math.floor((step - 1) / per)
      local ce = math.min(e, decay)
      H.assert_close(cos[step], 0.002 + 0.5 * (0.3 - 0.002) * (1 + math.cos(math.pi * ce / decay)), 1e-15)
      H.assert_close(expo[step], 0.2 * 0.7 ^ (e / decay), 1e-15)
      H.assert_close(stair[step], 0.2 * 0.7 ^ math.floor(e / decay), 1e-15)
      H.assert_close(nat[step], 0.2 * math.exp(-0.3 * e), 1e-15)
      H.assert_close(inv[step], 0.2 / (1 + 0.3 * e / decay), 1e-15)
      H.assert_close(poly[step], (0.2 - 0.01) * (1 - ce / decay) ^ 2 + 0.01, 1e-15)
      local d = decay * math.max(math.ceil(e / decay), 1)
      H.assert_close(polyu[step], (0.2 - 0.01) * (1 - e / d) ^ 2 + 0.01, 1e-15)
      H.assert_close(warm[step], 0.2 * ce / decay, 1e-15)
    end
    assert.are.equal(total, #cos)
  end)

  it("take one options table too", function()
    same(nn.cosine_decay_lr(0.01, 0.1, 6, 2, 2),
      nn.cosine_decay_lr { min_lr = 0.01, max_lr = 0.1, total_step = 6, step_per_epoch = 2, decay_epoch = 2 })
    same(nn.exponential_decay_lr(0.1, 0.9, 6, 2, 1, true), nn.exponential_decay_lr { learning_rate = 0.1, decay_rate = 0.9,
      total_step = 6, step_per_epoch = 2, decay_epoch = 1, is_stair = true })
    same(nn.piecewise_constant_lr({ 2, 5 }, { 0.1, 0.05 }), nn.piecewise_constant_lr { milestone = { 2, 5 }, learning_rates = { 0.1, 0.05 } })
  end)

  it("drive an optimizer, one rate per step", function()
    local w = cell.Parameter(cell.zeros({ 1 }, cell.float64), "w")
    local lrs = nn.cosine_decay_lr(0.01, 0.1, 4, 1, 3)
    local opt = nn.SGD({ w }, lrs)
    local g = { cell.ones({ 1 }, cell.float64) }
    local sum = 0
    for step = 1, 6 do
      H.assert_close(opt:get_lr(), lrs[math.min(step, 4)], 1e-7)
      sum = sum + lrs[math.min(step, 4)]
      opt(g)
    end
    H.assert_close(w, { -sum }, 1e-15)
  end)

  it("name bad arguments", function()
    local cases = {
      { function() nn.cosine_decay_lr(0.1, 0.01, 6, 2, 2) end, "ValueError: For 'cosine_decay_lr', the 'max_lr' should be greater than the 'min_lr', but got 'max_lr' value: 0.01, 'min_lr' value: 0.1." },
      { function() nn.cosine_decay_lr(-1, 0.1, 6, 2, 2) end, "ValueError: For 'cosine_decay_lr', the 'min_lr' must be non-negative, but got -1." },
      { function() nn.cosine_decay_lr("a", 0.1, 6, 2, 2) end, "TypeError: For 'cosine_decay_lr', the 'min_lr' must be a number, but got string." },
      { function() nn.cosine_decay_lr(0.01, 0.1, 6.5, 2, 2) end, "TypeError: For 'cosine_decay_lr', the 'total_step' must be an integer, but got 6.5." },
      { function() nn.cosine_decay_lr(0.01, 0.1, 6, 0, 2) end, "ValueError: For 'cosine_decay_lr', the 'step_per_epoch' must be a positive integer, but got 0." },
      { function() nn.piecewise_constant_lr({ 2, 5 }, { 0.1 }) end, "ValueError: For 'piecewise_constant_lr', the size of 'milestone' must be same with the size of 'learning_rates', but got 'milestone' size: 2, 'learning_rates' size: 1." },
      { function() nn.piecewise_constant_lr({ 5, 2 }, { 0.1, 0.2 }) end, "ValueError: For 'piecewise_constant_lr', the value of milestone[2] must be greater than milestone[1], but got milestone[2]: 2, milestone[1]: 5." },
      { function() nn.piecewise_constant_lr({ 0 }, { 0.1 }) end, "ValueError: For 'piecewise_constant_lr', the 'milestone[1]' must be a positive integer, but got 0." },
      { function() nn.piecewise_constant_lr({ 2 }, { "x" }) end, "TypeError: For 'piecewise_constant_lr', the 'learning_rates[1]' must be a number, but got string." },
      { function() nn.piecewise_constant_lr(2, { 0.1 }) end, "TypeError: For 'piecewise_constant_lr', the 'milestone' must be a list, but got number." },
      { function() nn.exponential_decay_lr(0.1, 0, 6, 2, 1) end, "ValueError: For 'exponential_decay_lr', the 'decay_rate' must be positive, but got 0." },
      { function() nn.exponential_decay_lr(0.1, 0.9, 6, 2, 1, "yes") end, "TypeError: For 'exponential_decay_lr', the 'is_stair' must be a boolean, but got string." },
      { function() nn.natural_exp_decay_lr(0, 0.9, 6, 2, 1) end, "ValueError: For 'natural_exp_decay_lr', the 'learning_rate' must be positive, but got 0." },
      { function() nn.inverse_decay_lr(0.1, 0.9, 6, 2, -1) end, "ValueError: For 'inverse_decay_lr', the 'decay_epoch' must be a positive integer, but got -1." },
      { function() nn.polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0) end, "ValueError: For 'polynomial_decay_lr', the 'power' must be positive, but got 0." },
      { function() nn.warmup_lr(0.1, 6, 2, 1 / 0) end, "TypeError: For 'warmup_lr', the 'warmup_epoch' must be an integer, but got inf." },
    }
    for _, c in ipairs(cases) do
      local msg = err(c[1])
      assert.are.equal(c[2], msg)
    end
    H.still_works()
  end)
end)
