-- transforms_spec.lua - cell.dataset.transforms (lua/cell/dataset/transforms.lua,
-- src/io/data_ops.c): OneHot, TypeCast, Fill, RandomApply, RandomChoice and
-- Compose, called on one sample, with hand-computed values, and their errors.
local H = require "helpers"
local cell = H.cell
local T = cell.dataset.transforms

local function err(fn, ...) return H.caller_error("transforms_spec%.lua", fn, ...) end

describe("dataset.transforms", function()
  it("OneHot: 1-based class ids to one-hot rows, in the label's dtype", function()
    local t = T.OneHot(4)(cell.tensor({ 2, 4, 1 }, cell.int64))
    H.assert_values(t, { { 0, 1, 0, 0 }, { 0, 0, 0, 1 }, { 1, 0, 0, 0 } }, "int64")
    H.assert_values(T.OneHot(3, { index_base = 0 })(cell.tensor(0, cell.int32)), { 1, 0, 0 }, "int32")
    H.assert_values(T.OneHot(2, { dtype = cell.float32 })(cell.tensor({ 1 }, cell.uint8)), { { 1, 0 } }, "float32")
  end)

  it("OneHot with smoothing_rate: 1 - s + s / n at the class, s / n elsewhere", function()
    local t = T.OneHot(4, 0.2)(cell.tensor(3, cell.int64))
    assert.are.equal("float32", t.dtype.name)
    H.assert_close(t, { 0.05, 0.05, 0.85, 0.05 }, 1e-6)
  end)

  it("OneHot errors: a label out of range, a fraction, bad arguments", function()
    assert.are.equal("ValueError: OneHot: label 0 is out of range [1, 3] for 3 classes",
      err(function() local _ = T.OneHot(3)(cell.tensor(0, cell.int64)) end))
    assert.are.equal("TypeError: OneHot: a label must be an integer, but got 1.5",
      err(function() local _ = T.OneHot(3)(cell.tensor(1.5)) end))
    assert.are.equal("ValueError: OneHot: num_classes must be at least 1, but got 0",
      err(function() local _ = T.OneHot(0) end))
    assert.are.equal("ValueError: OneHot: smoothing_rate must be in [0, 1), but got 1",
      err(function() local _ = T.OneHot(3, 1) end))
  end)

  it("TypeCast converts as astype does; Fill fills", function()
    H.assert_values(T.TypeCast(cell.int32)(cell.tensor({ 1.7, -2.2 })), { 1, -2 }, "int32")
    H.assert_values(T.Fill(7)(cell.zeros({ 2, 2 }, cell.int64)), { { 7, 7 }, { 7, 7 } }, "int64")
    assert.are.equal("TypeError: TypeCast: data_type must be a dtype (cell.float32, ...), but got string",
      err(function() local _ = T.TypeCast("float32") end))
    assert.are.equal("TypeError: Fill: fill_value must be a number, but got nil", err(function() local _ = T.Fill() end))
  end)

  it("do not change the tensor they are called on", function()
    local x = cell.ones({ 3 })
    local _ = T.Fill(0)(x)
    H.assert_values(x, { 1, 1, 1 })
  end)

  it("RandomApply and RandomChoice draw from (seed, sample index)", function()
    local x = cell.ones({ 2 })
    H.assert_values(T.RandomApply({ T.Fill(5) }, 1)(x), { 5, 5 })
    H.assert_values(T.RandomApply({ T.Fill(5) }, 0)(x), { 1, 1 })
    local apply = T.RandomApply({ T.Fill(5), T.Fill(6) }, 0.5)
    local choice = T.RandomChoice({ T.Fill(2), T.Fill(3), T.Fill(4) })
    local core = require "cell.core"
    local applied, seen = 0, {}
    for i = 0, 299 do
      local a = core._data_apply(apply, x, 11, i):totable()[1]
      assert.is_true(a == 1 or a == 6) -- both run in order, or neither
      if a == 6 then applied = applied + 1 end
      local c = core._data_apply(choice, x, 11, i):totable()[1]
      seen[c] = (seen[c] or 0) + 1
      -- the same (seed, index) draws the same
      assert.are.equal(c, core._data_apply(choice, x, 11, i):totable()[1])
    end
    assert.is_true(applied > 110 and applied < 190, "applied " .. applied .. " of 300")
    for v = 2, 4 do assert.is_true((seen[v] or 0) > 60, "value " .. v .. " chosen " .. tostring(seen[v])) end
    assert.is_truthy(err(function() local _ = T.RandomApply({ function() end }) end)
      :find("^TypeError: RandomApply: transforms%[1%] must be a C transform"))
    assert.are.equal("ValueError: RandomApply: prob must be in [0, 1], but got 2",
      err(function() local _ = T.RandomApply({ T.Fill(1) }, 2) end))
  end)

  it("Compose runs its transforms in turn, Lua functions included", function()
    local c = T.Compose({ T.Fill(2), function(t) return t * 3 end, T.TypeCast(cell.int64) })
    H.assert_values(c(cell.zeros({ 2 })), { 6, 6 }, "int64")
    assert.are.equal("Compose(Fill, function, TypeCast)", tostring(c))
    assert.are.equal("TypeError: Compose: transforms[2] must be a transform or a function, but got number",
      err(function() local _ = T.Compose({ T.Fill(1), 3 }) end))
  end)
end)
