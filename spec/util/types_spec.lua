-- types_spec.lua - cell.util.types (lua/cell/util/types.lua): how the
-- library's messages name values (type_name, class_name) and shapes
-- (shape_str, shape_list), and the predicates the argument checks share.
local H = require "helpers"
local cell = H.cell
local types = require "cell.util.types"

describe("cell.util.types", function()
  it("names a value's type as messages do", function()
    assert.are.equal("Tensor", types.type_name(cell.ones({ 2 })))
    assert.are.equal("Parameter", types.type_name(cell.Parameter(cell.ones({ 2 }), "w")))
    assert.are.equal("dtype", types.type_name(cell.float32))
    assert.are.equal("Dense", types.type_name(cell.nn.Dense(2, 3)))
    assert.are.equal("ParameterTuple", types.type_name(cell.ParameterTuple({})))
    assert.are.equal("HeUniform", types.type_name(cell.init.HeUniform()))
    assert.are.equal("table", types.type_name({}))
    assert.are.equal("string", types.type_name("x"))
    assert.are.equal("nil", types.type_name(nil))
    assert.are.equal("number", types.type_name(1))
  end)

  it("names a cell's class, Cell when it has none", function()
    assert.are.equal("Dense", types.class_name(cell.nn.Dense(2, 3)))
    assert.are.equal("Cell", types.class_name({}))
  end)

  it("prints shapes as Python's tuples and as lists", function()
    assert.are.equal("(2, 3)", types.shape_str({ 2, 3 }))
    assert.are.equal("(2,)", types.shape_str({ 2 }))
    assert.are.equal("()", types.shape_str({}))
    assert.are.equal("[2, 3]", types.shape_list({ 2, 3 }))
    assert.are.equal("[]", types.shape_list({}))
    assert.are.equal("['a', 'b']", types.str_list({ "a", "b" }))
  end)

  it("compares shapes", function()
    assert.is_true(types.same_shape({ 2, 3 }, { 2, 3 }))
    assert.is_false(types.same_shape({ 2, 3 }, { 3, 2 }))
    assert.is_false(types.same_shape({ 2 }, { 2, 1 }))
    assert.is_true(types.same_shape({}, {}))
    assert.is_true(types.same_tensor_shape(cell.ones({ 2, 3 }), cell.zeros({ 2, 3 })))
    assert.is_false(types.same_tensor_shape(cell.ones({ 2, 3 }), cell.zeros({ 3, 2 })))
    assert.is_false(types.same_tensor_shape(cell.ones({ 6 }), cell.zeros({ 2, 3 })))
  end)

  it("tells plain tables and callables", function()
    assert.is_true(types.is_plain({ a = 1 }))
    assert.is_false(types.is_plain(setmetatable({}, {})))
    assert.is_false(types.is_plain("x"))
    assert.is_true(types.is_callable(print))
    assert.is_true(types.is_callable(setmetatable({}, { __call = function() end })))
    assert.is_false(types.is_callable({}))
    assert.is_false(types.is_callable(cell.ones({ 1 })))
  end)

  it("is the one place that defines them", function()
    local p = io.popen("grep -rlE 'function ([A-Za-z_]+[.:])?(type_name|shape_str|shape_tuple|class_name|same_shape)\\(' lua/cell")
    local found = p:read("*a")
    p:close()
    assert.are.equal("lua/cell/util/types.lua\n", found)
  end)
end)
