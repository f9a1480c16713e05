-- opdiff_spec.lua - the differential check of cell.ops against PyTorch 1.13
-- (spec/fixtures/gen_opdiff.py): elementwise, binary with broadcasting and
-- type promotion (tensors, 0-d tensors and Lua numbers), reductions with
-- dims and keepdim, argmax ties, sort stability, shape and index ops, linear
-- algebra, conversions and the nn ops, over float32/float64/int32/int64/
-- bool/uint8, 0-d, empty and non-contiguous inputs and special values; each
-- case checks the dtype, shape and values of every result (indices 1-based),
-- that cell refuses what PyTorch refuses, and float64 gradients. The cases
-- where cell differs on purpose are listed, with the reason, in the generator.
local cell = require "cell"
local fx = require "fixtures.opdiff_fixtures"
local run = require "helpers.opdiff_runner"

local function describe_arg(a)
  if type(a) ~= "table" then return tostring(a) end
  if a.__t then return a.dtype .. "[" .. table.concat(a.shape, ",") .. "]" .. (a.layout or "") end
  if a.__nil then return "nil" end
  if a.__dtype then return a.__dtype end
  return "{...}"
end

describe("cell.ops against PyTorch", function()
  it("has cases for every group of ops", function()
    local groups = {}
    for _, c in ipairs(fx.cases) do groups[c.group] = true end
    for _, g in ipairs { "unary", "unary_special", "binary", "binary_scalar", "binary_0d", "int_div",
                         "operator", "reduce", "argmax", "sort", "shape", "index", "linalg", "loss", "nn" } do
      assert.is_true(groups[g] ~= nil, "no case in group " .. g)
    end
    assert.is_true(#fx.cases > 2000)
  end)

  for i, c in ipairs(fx.cases) do
    local desc = {}
    for k = 1, c.n do desc[k] = describe_arg(c.args[k]) end
    local name = ("#%d %s: %s(%s)%s"):format(i, c.group, c.op, table.concat(desc, ", "),
      c.note and (" [" .. c.note .. "]") or "")
    it(name, function()
      local why = run(c)
      assert.is_nil(why, why)
    end)
  end

  it("a 0-d tensor of no higher category takes the other operand's dtype", function()
    local x = cell.tensor({ 1, 2 })
    assert.are.equal(cell.float32, (x * cell.tensor(2.5, cell.float64)).dtype)
    assert.are.equal(cell.int32, (cell.tensor({ 1, 2 }, cell.int32) + cell.tensor(3, cell.int64)).dtype)
    assert.are.equal(cell.float64, (cell.tensor({ 1, 2 }, cell.int32) + cell.tensor(3, cell.float64)).dtype)
    assert.are.equal(cell.float64, (cell.tensor(1, cell.float32) + cell.tensor(3, cell.float64)).dtype)
    local g = cell.grad(function(s) return (x * s):sum() end)(cell.tensor(2.5, cell.float64))
    assert.are.equal(cell.float64, g.dtype)
    assert.are.equal(3, g:item())
  end)
end)
