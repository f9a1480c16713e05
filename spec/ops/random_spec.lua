-- random_spec.lua - cell.ops.multinomial, bernoulli and normal (src/ops/
-- random.c, src/lua/lrandom.c) and cell.get_rng_state / set_rng_state
-- (src/core/rng.c). The distributions are checked by statistics that a
-- wrong sampler fails: chi-square tests at the 0.1% level and mean and
-- variance bounds of 4.5 standard errors, each from a fixed seed (so each
-- run draws the same numbers and the checks cannot flake). Then seeds
-- reproduce draws, saved states resume streams (dropout masks included),
-- results do not depend on the thread count, and every misuse is named.
local cell = require "cell"
local H = require "helpers"

local ops = cell.ops
local f64 = cell.float64

-- Pearson's statistic of observed counts against expected ones.
local function chi2(counts, expected)
  local s = 0
  for i = 1, #expected do
    local d = (counts[i] or 0) - expected[i]
    s = s + d * d / expected[i]
  end
  return s
end
-- The chi-square quantile 0.999 by degrees of freedom.
local CHI2_999 = { 10.83, 13.82, 16.27, 18.47, 20.52 }

local function counts_of(list, k)
  local c = {}
  for i = 1, k do c[i] = 0 end
  for _, v in ipairs(list) do c[v] = c[v] + 1 end
  return c
end

local function mean_var(list)
  local n, s, s2 = #list, 0, 0
  for _, v in ipairs(list) do s = s + v end
  local m = s / n
  for _, v in ipairs(list) do s2 = s2 + (v - m) ^ 2 end
  return m, s2 / (n - 1)
end

describe("multinomial", function()
  it("draws categories in proportion to their weights (chi-square, with replacement)", function()
    cell.set_seed(11)
    local w = { 0.1, 0.2, 0.3, 0.4 }
    local n = 20000
    local s = ops.multinomial(cell.tensor(w), n, true)
    assert.are.equal(cell.int64, s.dtype)
    H.assert_shape(s, { n })
    local c = counts_of(s:totable(), 4)
    local e = {}
    for i = 1, 4 do e[i] = w[i] * n end
    local stat = chi2(c, e)
    assert.is_true(stat < CHI2_999[3], "chi-square " .. stat)
  end)

  it("samples each row of a 2-D input from its own weights, unnormalised, never a zero one", function()
    cell.set_seed(12)
    local w = { { 5, 0, 5, 10 }, { 0, 1, 0, 0 }, { 3, 3, 3, 3 } }
    local n = 12000
    local s = ops.multinomial(cell.tensor(w, f64), n):totable()
    for r = 1, 3 do
      local total = 0
      for _, v in ipairs(w[r]) do total = total + v end
      local c = counts_of(s[r], 4)
      local e, obs, df = {}, {}, -1
      for i = 1, 4 do
        if w[r][i] == 0 then
          assert.are.equal(0, c[i], "row " .. r .. " drew category " .. i .. " of weight 0")
        else
          e[#e + 1] = w[r][i] / total * n
          obs[#obs + 1] = c[i]
          df = df + 1
        end
      end
      if df > 0 then
        local stat = chi2(obs, e)
        assert.is_true(stat < CHI2_999[df], "row " .. r .. ": chi-square " .. stat)
      end
    end
  end)

  it("draws without replacement: distinct indices, first and second draws as the urn model says", function()
    cell.set_seed(13)
    local w = { 0.1, 0.2, 0.3, 0.4 }
    local rows = 8000
    local p = cell.tensor(w):reshape({ 1, 4 }):expand({ rows, 4 })
    local s = ops.multinomial(p, 2, false):totable()
    local first, second = {}, {}
    for r = 1, rows do
      assert.are_not.equal(s[r][1], s[r][2])
      first[r], second[r] = s[r][1], s[r][2]
    end
    local e1, e2 = {}, {}
    for j = 1, 4 do
      e1[j] = w[j] * rows
      local q = 0
      for i = 1, 4 do
        if i ~= j then q = q + w[i] * w[j] / (1 - w[i]) end
      end
      e2[j] = q * rows
    end
    local s1, s2 = chi2(counts_of(first, 4), e1), chi2(counts_of(second, 4), e2)
    assert.is_true(s1 < CHI2_999[3], "first draw: chi-square " .. s1)
    assert.is_true(s2 < CHI2_999[3], "second draw: chi-square " .. s2)
    -- all k of k: a permutation, 1-based
    local perm = ops.multinomial(cell.tensor({ 1, 1, 1, 1, 1 }), 5, false):totable()
    table.sort(perm)
    assert.are.same({ 1, 2, 3, 4, 5 }, perm)
  end)

  it("is reproducible from a seed, and a seed option leaves the state's stream alone", function()
    local p = cell.tensor({ { 1, 2, 3 }, { 3, 2, 1 } })
    cell.set_seed(5)
    local a = ops.multinomial(p, 6):totable()
    local after_a = cell.rand(3):totable()
    cell.set_seed(5)
    assert.are.same(a, p:multinomial(6):totable())
    local s1 = ops.multinomial(p, 6, { seed = 99 }):totable()
    assert.are.same(after_a, cell.rand(3):totable())
    assert.are.same(s1, ops.multinomial(p, 6, { seed = 99, replacement = true }):totable())
    assert.are_not.same(s1, ops.multinomial(p, 6, { seed = 98 }):totable())
    assert.are.same(s1, ops.multinomial(p, 6, true, 99):totable()) -- MindSpore's positional form
  end)

  it("gives the same draws on 1 thread and on 2", function()
    local saved = cell.get_num_threads()
    local p = cell.rand({ 300, 100 }, f64)
    local out = {}
    for _, t in ipairs { 1, 2 } do
      cell.set_num_threads(t)
      cell.set_seed(21)
      out[t] = { ops.multinomial(p, 50, false):totable(), ops.multinomial(p, 700):totable() }
    end
    cell.set_num_threads(saved)
    assert.are.same(out[1], out[2])
  end)

  it("accepts non-contiguous probabilities and an empty batch", function()
    cell.set_seed(3)
    local p = cell.tensor({ { 0, 1 }, { 0, 0 }, { 1, 0 } }):transpose(1, 2) -- rows {0, 0, 1} and {1, 0, 0}
    assert.is_false(p:is_contiguous())
    assert.are.same({ { 3, 3 }, { 1, 1 } }, ops.multinomial(p, 2):totable())
    H.assert_shape(ops.multinomial(cell.zeros({ 0, 3 }), 4), { 0, 4 })
  end)

  it("names every misuse", function()
    local p = cell.tensor({ 0.5, 0.5 })
    H.expect_error(function() ops.multinomial(p, 3, false) end, "ValueError", "3 samples without replacement", "2 categories")
    H.expect_error(function() ops.multinomial(p, 0) end, "ValueError", "num_samples must be at least 1", "0")
    H.expect_error(function() ops.multinomial(cell.tensor({ 0.5, -0.1 }), 1) end, "ValueError", "row 1", "-0.1")
    H.expect_error(function() ops.multinomial(cell.tensor({ { 1, 1 }, { 0 / 0, 1 } }), 1) end, "ValueError", "row 2", "nan")
    H.expect_error(function() ops.multinomial(cell.tensor({ 1, math.huge }), 1) end, "ValueError", "inf")
    H.expect_error(function() ops.multinomial(cell.tensor({ { 1, 1 }, { 0, 0 } }), 1) end, "ValueError", "row 2", "sums to 0")
    H.expect_error(function() ops.multinomial(cell.tensor({ 1, 0, 0 }), 2, false) end, "ValueError", "1 categories of nonzero")
    H.expect_error(function() ops.multinomial(cell.zeros({ 2, 2, 2 }), 1) end, "ValueError", "1-D or 2-D", "[2, 2, 2]")
    H.expect_error(function() ops.multinomial(cell.zeros({ 2, 0 }), 1) end, "ValueError", "no category")
    H.expect_error(function() ops.multinomial(cell.tensor({ 1, 2 }, cell.int64), 1) end, "TypeError", "float", "Int64")
    H.expect_error(function() ops.multinomial(p, 1.5) end, "TypeError", "integer")
    H.expect_error(function() ops.multinomial(p, "2") end, "TypeError", "num_samples")
    H.expect_error(function() ops.multinomial(p, 1, { replacement = 1 }) end, "TypeError", "replacement must be a boolean")
    H.expect_error(function() ops.multinomial(p, 1, { seed = -1 }) end, "TypeError", "seed")
    H.expect_error(function() ops.multinomial(p, 1, true, 1.5) end, "TypeError", "seed", "1.5")
    H.expect_error(function() ops.multinomial(p, 1, { replace = true }) end, "TypeError", "unknown option 'replace'")
  end)
end)

describe("bernoulli", function()
  it("draws ones with the input's probabilities (mean bounds), in the input's dtype", function()
    cell.set_seed(31)
    local n = 20000
    local p = cell.cat({ cell.full({ n }, 0.3, f64), cell.full({ n }, 0.8, f64) })
    local s = ops.bernoulli(p)
    assert.are.equal(f64, s.dtype)
    local v = s:totable()
    for _, pr in ipairs { { 0, 0.3 }, { n, 0.8 } } do
      local sum = 0
      for i = 1, n do
        local x = v[pr[1] + i]
        assert.is_true(x == 0 or x == 1)
        sum = sum + x
      end
      local se = math.sqrt(pr[2] * (1 - pr[2]) / n)
      assert.is_true(math.abs(sum / n - pr[2]) < 4.5 * se, "mean " .. sum / n .. " for p = " .. pr[2])
    end
  end)

  it("takes p as a number or a Tensor broadcast to the input, for any dtype", function()
    cell.set_seed(32)
    local x = cell.zeros({ 4000, 2 }, cell.int32)
    local s = x:bernoulli(0.25)
    assert.are.equal(cell.int32, s.dtype)
    local m = s:double():mean():item()
    assert.is_true(math.abs(m - 0.25) < 4.5 * math.sqrt(0.25 * 0.75 / 8000), "mean " .. m)
    local b = ops.bernoulli(cell.zeros({ 3, 2 }, cell.bool), { p = cell.tensor({ 0, 1 }) })
    assert.are.equal(cell.bool, b.dtype)
    assert.are.same({ { false, true }, { false, true }, { false, true } }, b:totable())
    H.assert_close(ops.bernoulli(cell.ones({ 5 }), 0), { 0, 0, 0, 0, 0 }, 0)
    H.assert_close(ops.bernoulli(cell.zeros({ 5 }), { p = 1 }), { 1, 1, 1, 1, 1 }, 0)
    H.assert_shape(ops.bernoulli(cell.zeros({ 0, 3 })), { 0, 3 })
  end)

  it("is reproducible from a seed", function()
    local p = cell.full({ 50 }, 0.5)
    cell.set_seed(4)
    local a = ops.bernoulli(p):totable()
    cell.set_seed(4)
    assert.are.same(a, p:bernoulli():totable())
    local b8 = ops.bernoulli(p, { seed = 8 }):totable()
    assert.are.same(b8, ops.bernoulli(p, { seed = 8 }):totable())
    assert.are.same(b8, ops.bernoulli(p, { p = p, seed = 8 }):totable())
    assert.are.same(ops.bernoulli(p, 0.5, 8):totable(), ops.bernoulli(p, { p = 0.5, seed = 8 }):totable())
    assert.are_not.same(b8, ops.bernoulli(p, { seed = 9 }):totable())
  end)

  it("names every misuse", function()
    H.expect_error(function() ops.bernoulli(cell.tensor({ 0.5, 1.5 })) end, "ValueError", "[0, 1]", "1.5")
    H.expect_error(function() ops.bernoulli(cell.tensor({ 0 / 0 })) end, "ValueError", "[0, 1]")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), -0.5) end, "ValueError", "p must lie in [0, 1]", "-0.5")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), cell.tensor({ 1, 0 }, cell.int64)) end, "TypeError", "float")
    H.expect_error(function() ops.bernoulli(cell.tensor({ 1, 0 }, cell.int64)) end, "TypeError", "float")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), cell.zeros({ 2 })) end, "ValueError", "[2]", "[3]")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), cell.zeros({ 2, 3 })) end, "ValueError", "do not broadcast")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), { p = "half" }) end, "TypeError", "p must be a number or a Tensor")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), "half") end, "TypeError", "options table")
    H.expect_error(function() ops.bernoulli(cell.zeros({ 3 }), 0.5, "x") end, "TypeError", "seed")
  end)
end)

describe("normal", function()
  it("draws N(mean, stddev^2): mean, variance and the one-sigma mass", function()
    cell.set_seed(41)
    local n = 20000
    local s = ops.normal({ n }, 2, 3)
    assert.are.equal(cell.float32, s.dtype)
    local v = s:totable()
    local m, var = mean_var(v)
    assert.is_true(math.abs(m - 2) < 4.5 * 3 / math.sqrt(n), "mean " .. m)
    assert.is_true(math.abs(var - 9) < 4.5 * 9 * math.sqrt(2 / n), "variance " .. var)
    local inside = 0
    for _, x in ipairs(v) do
      if math.abs(x - 2) < 3 then inside = inside + 1 end
    end
    local q = 0.682689492
    assert.is_true(math.abs(inside / n - q) < 4.5 * math.sqrt(q * (1 - q) / n), "one-sigma mass " .. inside / n)
  end)

  it("broadcasts shape, mean and stddev Tensors (MindSpore's and PyTorch's forms)", function()
    cell.set_seed(42)
    local mean = cell.tensor({ 0, 10, 100 }, f64)
    local y = ops.normal({ 2, 1 }, mean, 0)
    assert.are.equal(f64, y.dtype)
    H.assert_close(y, { { 0, 10, 100 }, { 0, 10, 100 } }, 0)
    local z = ops.normal(mean, cell.tensor({ { 1 }, { 0 } }, f64))
    H.assert_shape(z, { 2, 3 })
    H.assert_close(z[2], { 0, 10, 100 }, 0)
    -- per-column means of many draws
    local big = ops.normal({ 8000, 1 }, cell.tensor({ -5, 5 }), cell.tensor({ 1, 2 }))
    H.assert_shape(big, { 8000, 2 })
    local cm = big:mean(1):totable()
    assert.is_true(math.abs(cm[1] + 5) < 4.5 / math.sqrt(8000), "column 1 mean " .. cm[1])
    assert.is_true(math.abs(cm[2] - 5) < 4.5 * 2 / math.sqrt(8000), "column 2 mean " .. cm[2])
    H.assert_shape(ops.normal(0, 1, { 2, 5 }), { 2, 5 })
    H.assert_shape(ops.normal({ 0, 4 }, 0, 1), { 0, 4 })
  end)

  it("is reproducible from a seed", function()
    cell.set_seed(6)
    local a = ops.normal({ 7 }, 0, 1):totable()
    cell.set_seed(6)
    assert.are.same(a, ops.normal({ 7 }, 0, 1):totable())
    assert.are.same(ops.normal({ 7 }, 0, 1, 3):totable(), ops.normal({ 7 }, 0, 1, 3):totable())
  end)

  it("names every misuse", function()
    H.expect_error(function() ops.normal({ 3 }, 0, -1) end, "ValueError", "stddev must be at least 0", "-1")
    H.expect_error(function() ops.normal({ 3 }, 0, cell.tensor({ 1, 0 / 0, 1 })) end, "ValueError", "stddev")
    H.expect_error(function() ops.normal({ 3 }, cell.zeros({ 2 }), 1) end, "ValueError", "[3]", "[2]")
    H.expect_error(function() ops.normal({ 3 }, cell.zeros({ 3 }, cell.int32), 1) end, "TypeError", "float", "Int32")
    H.expect_error(function() ops.normal({ 3 }, 0) end, "TypeError", "stddev")
    H.expect_error(function() ops.normal({ 3 }, "0", 1) end, "TypeError", "mean must be a number or a Tensor")
    H.expect_error(function() ops.normal({ 3 }, 0, 1, 0.5) end, "TypeError", "seed")
    H.expect_error(function() ops.normal({ -1 }, 0, 1) end, "ValueError")
    H.expect_error(function() ops.normal(0, 1, 5) end, "TypeError", "shape must be a table")
  end)
end)

describe("get_rng_state / set_rng_state", function()
  -- a draw of every kind that uses the generator
  local function draws()
    local x = cell.ones({ 64 })
    return {
      cell.rand(5):totable(), cell.randn(5):totable(), cell.randint(0, 100, { 5 }):totable(),
      ops.dropout(x, 0.5):totable(), ops.multinomial(cell.tensor({ 1, 2, 3 }), 5):totable(),
      ops.bernoulli(cell.full({ 5 }, 0.5)):totable(), ops.normal({ 5 }, 0, 1):totable(),
    }
  end

  it("returns the state as a 1-D uint8 Tensor", function()
    local s = cell.get_rng_state()
    assert.is_true(cell.is_tensor(s))
    assert.are.equal(cell.uint8, s.dtype)
    H.assert_shape(s, { 24 })
  end)

  it("restores a state: the draws after it repeat exactly", function()
    cell.set_seed(77)
    draws()
    local s = cell.get_rng_state()
    local a, a2 = draws(), draws()
    cell.set_rng_state(s)
    assert.are.same(a, draws())
    assert.are.same(a2, draws())
  end)

  it("resumes a run as if uninterrupted, across a reseed and dropout masks", function()
    cell.set_seed(123)
    local first = draws()
    local rest = { draws(), draws() }
    cell.set_seed(123)
    assert.are.same(first, draws())
    local saved = cell.get_rng_state():clone()
    cell.set_seed(999) -- a new process would start elsewhere
    draws()
    cell.set_rng_state(saved)
    assert.are.same(rest, { draws(), draws() })
  end)

  it("restores the dropout mask that the backward pass regenerates", function()
    cell.set_seed(8)
    local x = cell.ones({ 32 }, f64)
    local s = cell.get_rng_state()
    local g1 = cell.grad(function(t) return ops.dropout(t, 0.5):sum() end)(x)
    cell.set_rng_state(s)
    local y = ops.dropout(x, 0.5)
    H.assert_close(g1, y:totable(), 0)
  end)

  it("names a malformed state and leaves the generator as it was", function()
    cell.set_seed(55)
    local good = cell.get_rng_state()
    local expect = cell.rand(3):totable()
    cell.set_rng_state(good)
    H.expect_error(function() cell.set_rng_state() end, "TypeError", "uint8 Tensor", "no value")
    H.expect_error(function() cell.set_rng_state({ 1, 2 }) end, "TypeError", "uint8 Tensor")
    H.expect_error(function() cell.set_rng_state(good:float()) end, "TypeError", "uint8", "Float32")
    H.expect_error(function() cell.set_rng_state(good[{ { 1, 20 } }]) end, "ValueError", "24 bytes", "[20]")
    H.expect_error(function() cell.set_rng_state(good:reshape({ 4, 6 })) end, "ValueError", "1-D", "[4, 6]")
    H.expect_error(function() cell.set_rng_state(cell.zeros({ 24 }, cell.uint8)) end, "ValueError", "not a generator state")
    assert.are.same(expect, cell.rand(3):totable())
  end)
end)
