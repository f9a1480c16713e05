-- tensor_dim_options_spec.lua - the named-option form of the Tensor methods
-- that take one dimension (lua/cell/tensor.lua), as the reductions have it:
-- {dim =} or MindSpore's {axis =}, with the methods' other options, giving
-- what the positional form gives; unknown options and a dimension given
-- twice are TypeErrors.
local H = require "helpers"
local cell = H.cell

local function err(fn)
  local msg = H.caller_error("tensor_dim_options_spec%.lua", fn)
  H.still_works()
  return msg
end

local function x() return cell.tensor({ { 1, 5, 3 }, { 4, 2, 6 } }) end

describe("Tensor methods of one dimension", function()
  it("take {dim =} or {axis =} as they take the dimension positionally", function()
    local t = x()
    H.assert_values(t:cumsum { dim = 2 }, { { 1, 6, 9 }, { 4, 6, 12 } }, "float32")
    H.assert_values(t:cumsum { axis = 1 }, { { 1, 5, 3 }, { 5, 7, 9 } }, "float32")
    H.assert_values(t:cumprod { dim = -1 }, { { 1, 5, 15 }, { 4, 8, 48 } }, "float32")
    H.assert_close(t:softmax { dim = 1 }, t:softmax(1):totable(), 0)
    H.assert_close(t:log_softmax { axis = 1 }, t:log_softmax(1):totable(), 0)
    H.assert_close(t:softmax {}, t:softmax():totable(), 0) -- no dim: the default
    assert.are.same({ 1, 2, 3 }, t:unsqueeze { dim = 1 }.shape)
    assert.are.same({ 2, 3, 1 }, t:expand_dims { axis = -1 }.shape)
    assert.are.same({ 2, 3 }, t:unsqueeze(2):squeeze { dim = 2 }.shape)
    assert.are.same({ 2, 3 }, cell.zeros({ 2, 1, 3 }):squeeze { axis = 2 }.shape)
    assert.are.same({ 6 }, t:flatten { start_dim = 1 }.shape)
    assert.are.same({ 2, 12 }, cell.zeros({ 2, 3, 4 }):flatten { start_dim = 2, end_dim = 3 }.shape)
  end)

  it("pass their other options on: cumsum and cumprod's dtype", function()
    local t = x()
    local s = t:cumsum { dim = 2, dtype = cell.float64 }
    assert.are.equal(cell.float64, s.dtype)
    H.assert_values(s, { { 1, 6, 9 }, { 4, 6, 12 } }, "float64")
    assert.are.equal(cell.float64, t:int():cumprod { axis = 1, dtype = cell.float64 }.dtype)
  end)

  it("split and chunk take the options after their first argument", function()
    local t = x()
    local parts = t:split(1, { dim = 2 })
    assert.are.equal(3, #parts)
    H.assert_values(parts[2], { { 5 }, { 2 } }, "float32")
    local halves = t:chunk(2, { axis = 1 })
    assert.are.equal(2, #halves)
    H.assert_values(halves[2], { { 4, 2, 6 } }, "float32")
    assert.are.equal(2, #t:split({ 1, 2 }, { dim = 2 }))
  end)

  it("reject unknown options and a dimension given both ways", function()
    local t = x()
    assert.are.equal("TypeError: cumsum: unexpected option 'keepdim' (the options are dim or axis, dtype)",
      err(function() t:cumsum { dim = 1, keepdim = true } end))
    assert.are.equal("TypeError: unsqueeze: unexpected option 'dims' (the options are dim or axis)",
      err(function() t:unsqueeze { dims = 1 } end))
    assert.are.equal("TypeError: softmax: give the dimension once, as dim or axis",
      err(function() t:softmax { dim = 1, axis = 1 } end))
    assert.are.equal("TypeError: flatten: unexpected option 'dim' (the options are start_dim, end_dim)",
      err(function() t:flatten { dim = 1 } end))
    assert.is_truthy(err(function() t:unsqueeze { dim = 9 } end):find("^IndexError: "))
  end)
end)

describe("the functions of one dimension", function()
  it("cell.cat, cell.stack and cell.ops.softmax / log_softmax take {dim =} or {axis =}", function()
    local a, b = cell.tensor({ { 1, 2 } }), cell.tensor({ { 3, 4 } })
    H.assert_values(cell.cat({ a, b }, { dim = 2 }), { { 1, 2, 3, 4 } }, "float32")
    H.assert_values(cell.ops.concat({ a, b }, { axis = 1 }), { { 1, 2 }, { 3, 4 } }, "float32")
    assert.are.same({ 1, 2, 2 }, cell.stack({ a, b }, { dim = 2 }).shape)
    assert.are.same({ 1, 2, 2 }, cell.ops.stack({ a, b }, { axis = -1 }).shape)
    local x = cell.tensor({ { 1, 5 }, { 4, 2 } })
    H.assert_close(cell.ops.softmax(x, { dim = 1 }), cell.ops.softmax(x, 1):totable(), 0)
    H.assert_close(cell.ops.log_softmax(x, { axis = 1 }), cell.ops.log_softmax(x, 1):totable(), 0)
    assert.are.equal("TypeError: cat: unexpected option 'keepdim' (the options are dim or axis)",
      err(function() cell.cat({ a, b }, { keepdim = true }) end))
  end)

  it("repeat_interleave takes {dim =} after repeats", function()
    H.assert_values(cell.tensor({ { 1, 5 } }):repeat_interleave(2, { dim = 2 }), { { 1, 1, 5, 5 } }, "float32")
  end)
end)

describe("Tensor:unbind", function()
  it("gives the slices along a dimension (1 by default) as a sequence of views", function()
    local t = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local rows = t:unbind()
    assert.are.equal(2, #rows)
    H.assert_values(rows[2], { 4, 5, 6 }, "float32")
    local cols = t:unbind { dim = -1 }
    assert.are.equal(3, #cols)
    H.assert_values(cols[3], { 3, 6 }, "float32")
    H.assert_values(cell.ops.unbind(t, 2)[1], { 1, 4 }, "float32")
    assert.is_truthy(err(function() t:unbind(3) end):find("^IndexError: "))
    assert.are.equal("TypeError: unbind: unexpected option 'axes' (the options are dim or axis)",
      err(function() t:unbind { axes = 1 } end))
  end)
end)
