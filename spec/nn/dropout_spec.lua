-- dropout_spec.lua - cell.nn.Dropout: MindSpore 2.x's p and deprecated
-- keep_prob and dtype, extend_repr, identity in inference, the drop rate, scaling
-- and seeding in training, and every error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("dropout_spec%.lua", fn, ...) end

describe("nn.Dropout", function()
  it("takes p (default 0.5) or the deprecated keep_prob, and prints the one it was given", function()
    assert.are.equal("Dropout(p=0.5)", tostring(nn.Dropout()))
    assert.are.equal("Dropout(p=0.2)", tostring(nn.Dropout { p = 0.2 }))
    assert.are.equal("Dropout(p=0.2)", tostring(nn.Dropout(nil, 0.2)))
    assert.are.equal("Dropout(keep_prob=0.8)", tostring(nn.Dropout(0.8)))
    assert.are.equal("Dropout(p=0.3)", tostring(nn.Dropout { keep_prob = 0.9, p = 0.3 }))
    assert.are.same({}, nn.Dropout():state_dict():keys())
  end)

  it("returns its input in inference mode (a new cell's mode)", function()
    local x = cell.ones({ 4, 4 })
    local d = nn.Dropout { p = 0.9 }
    assert.is_false(d.training)
    assert.are.equal(x, d(x))
    assert.are.equal(x, nn.Dropout { p = 0 }:set_train()(x))
    assert.are.equal(x, nn.Dropout(1.0):set_train()(x))
  end)

  describe("in training mode", function()

    it("drops about p of the elements and scales the rest by 1 / (1 - p)", function()
      cell.set_seed(11)
      local d = nn.Dropout { p = 0.25 }:set_train()
      local y = d(cell.ones({ 100, 100 }))
      local kept = y:ne(0):sum():item()
      assert.is_true(kept > 7200 and kept < 7800, "kept " .. kept)
      H.assert_close(y:max(), 1 / 0.75)
      H.assert_close(y:sum(), kept / 0.75, 1e-4)
      H.assert_close(nn.Dropout(0.5):set_train()(cell.full({ 10 }, 3)):max(), 6)
    end)

    it("draws from the seeded generator and stops at set_train(false)", function()
      local d = nn.Dropout():set_train()
      local x = cell.ones({ 64 })
      cell.set_seed(3)
      local a = d(x)
      cell.set_seed(3)
      local b = d(x)
      H.assert_close(a, b:totable(), 0)
      d:set_train(false)
      assert.are.equal(x, d(x))
    end)

    it("passes the gradient through the kept elements", function()
      cell.set_seed(4)
      local d = nn.Dropout { p = 0.5 }:set_train()
      local x = cell.ones({ 32 })
      cell.set_seed(4)
      local y = d(x)
      cell.set_seed(4)
      local g = cell.grad(function(a) return d(a):sum() end)(x)
      H.assert_close(g, y:totable())
    end)
  end)

  it("takes MindSpore's deprecated dtype, third, and ignores it (it must be a dtype)", function()
    -- MindSpore 2.x: Dropout(keep_prob=None, p=None, dtype=mstype.float32); dtype only warns
    assert.are.equal("Dropout(keep_prob=0.8)", tostring(nn.Dropout(0.8, nil, cell.float32)))
    assert.are.equal("Dropout(p=0.2)", tostring(nn.Dropout(nil, 0.2, cell.float16)))
    assert.are.equal("Dropout(p=0.2)", tostring(nn.Dropout { p = 0.2, dtype = cell.float64 }))
    assert.are.equal("Dropout(p=0.5)", tostring(nn.Dropout { dtype = cell.float32 }))
    assert.are.equal("Dropout(p=0.3)", tostring(nn.Dropout(nil, 0.3, { dtype = cell.float16 })))
    assert.is_nil(nn.Dropout { dtype = cell.float16 }.dtype)
    assert.are.same({}, nn.Dropout { dtype = cell.float16 }:state_dict():keys())
    -- the output keeps the input's dtype, whatever dtype says
    cell.set_seed(5)
    local d = nn.Dropout(nil, 0.5, cell.float16):set_train()
    local y = d(cell.ones({ 8 }, cell.float64))
    assert.are.equal(cell.float64, y.dtype)
    local x32 = cell.ones({ 8 })
    assert.are.equal(x32, nn.Dropout(nil, 0.5, cell.float16)(x32))
    assert.are.equal("TypeError: For 'Dropout', the 'dtype' must be a dtype (such as cell.float32), but got string.",
      err(function() local e = nn.Dropout(0.9, nil, "float32") return e end))
    H.expect_error(function() nn.Dropout { p = 0.1, dtype = 1 } end, "TypeError", "'dtype' must be a dtype", "number")
    H.expect_error(function() nn.Dropout(0.9, nil, cell.float32, 1) end, "TypeError",
      "takes at most 3 optional arguments, but 4 were given")
  end)

  it("rejects p outside [0, 1) and keep_prob outside (0, 1]", function()
    assert.are.equal("ValueError: For 'Dropout', the 'p' must be a number in range [0, 1), but got 1.",
      err(function() local d = nn.Dropout { p = 1 } return d end))
    H.expect_error(function() nn.Dropout { p = -0.1 } end, "ValueError", "[0, 1)", "-0.1")
    assert.are.equal("ValueError: For 'Dropout', the 'keep_prob' must be a number in range (0, 1], but got 0.",
      err(function() local d = nn.Dropout(0) return d end))
    H.expect_error(function() nn.Dropout { p = "a" } end, "TypeError", "'p' must be a number")
    H.expect_error(function() nn.Dropout(true) end, "TypeError", "'keep_prob' must be a number")
    H.expect_error(function() nn.Dropout { rate = 0.1 } end, "TypeError", "unexpected keyword argument 'rate'")
  end)
end)
