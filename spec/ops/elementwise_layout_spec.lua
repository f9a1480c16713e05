-- Binary ops give the same values whatever the operands' layout: the flat
-- loop that takes small operands of one contiguous layout, and the strided
-- iterator that takes everything else (views, broadcasts, size-1
-- dimensions with any stride, in-place updates, promotions, bool results).
local cell = require "cell"

-- element-wise reference over nested lists
local function zip(a, b, f)
  if type(a) ~= "table" then return f(a, b) end
  local out = {}
  for i = 1, #a do out[i] = zip(a[i], b[i], f) end
  return out
end

local function close(x, y)
  if type(x) ~= "table" then
    if type(x) == "boolean" then return x == y end
    return math.abs(x - y) <= 1e-5 * (1 + math.abs(y))
  end
  for i = 1, #x do if not close(x[i], y[i]) then return false end end
  return #x == #y
end

describe("binary ops over operand layouts", function()
  cell.set_seed(7)
  local add = function(p, q) return p + q end
  local mul = function(p, q) return p * q end
  local lt = function(p, q) return p < q end

  it("contiguous operands of one shape, small and past the thread bar", function()
    for _, shape in ipairs({ { 4 }, { 2, 3 }, { 1, 5, 1 }, { 260, 260 } }) do
      local a, b = cell.rand(shape), cell.rand(shape)
      local al, bl = a:tolist(), b:tolist()
      assert.is_true(close((a + b):tolist(), zip(al, bl, add)))
      assert.is_true(close((a * b):tolist(), zip(al, bl, mul)))
      assert.is_true(close((a:lt(b)):tolist(), zip(al, bl, lt)))
    end
  end)

  it("a transposed view beside a contiguous operand", function()
    local a = cell.rand({ 3, 4 })
    local b = cell.rand({ 4, 3 }):transpose(1, 2)
    assert.are.same({ 3, 4 }, b.shape)
    assert.is_false(b:is_contiguous())
    assert.is_true(close((a + b):tolist(), zip(a:tolist(), b:tolist(), add)))
    assert.is_true(close((b * a):tolist(), zip(b:tolist(), a:tolist(), mul)))
  end)

  it("broadcast operands", function()
    local a, b = cell.rand({ 3, 4 }), cell.rand({ 4 })
    local r = (a + b):tolist()
    local al, bl = a:tolist(), b:tolist()
    for i = 1, 3 do for j = 1, 4 do assert.is_true(close(r[i][j], al[i][j] + bl[j])) end end
  end)

  it("mixed dtypes promote, and in-place updates write through a view", function()
    local a = cell.tensor({ 1, 2, 3 }, cell.int32)
    local b = cell.tensor({ 0.5, 0.25, 0.125 })
    local r = a + b
    assert.are.equal(cell.float32, r.dtype)
    assert.is_true(close(r:tolist(), { 1.5, 2.25, 3.125 }))
    local base = cell.zeros({ 2, 3 })
    local col = base:transpose(1, 2) -- {3, 2}, not contiguous
    col:add_(cell.ones({ 3, 2 }))
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, base:tolist())
    local row = cell.zeros({ 4 })
    row:mul_(cell.tensor({ 1, 2, 3, 4 }))
    row:add_(cell.tensor({ 1, 2, 3, 4 }))
    assert.are.same({ 1, 2, 3, 4 }, row:tolist())
  end)

  it("empty operands", function()
    local r = cell.zeros({ 0, 3 }) + cell.zeros({ 0, 3 })
    assert.are.same({ 0, 3 }, r.shape)
  end)
end)
