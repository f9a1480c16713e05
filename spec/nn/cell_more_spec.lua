-- cell_more_spec.lua - the Cell methods of lua/cell/nn/cell_more.lua:
-- check_names, scopes, set_broadcast_flag, set_boost, update_cell_type,
-- parameters_broadcast_dict, set_inputs / get_inputs, cast_param and
-- auto_cast_inputs, each with its errors.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function two_layers()
  local Net = nn.Cell:extend("TwoLayers")
  function Net:init()
    self.fc1 = nn.Dense(3, 4)
    self.body = nn.SequentialCell { nn.Dense(4, 2), nn.ReLU() }
  end
  function Net:construct(x) return self.body(self.fc1(x)) end
  return Net()
end

describe("nn.Cell, the remaining MindSpore methods", function()
  it("check_names passes on distinct names and names the duplicate", function()
    local net = two_layers()
    net:check_names()
    net.fc1.weight.name = "body.0.weight" -- a collision made after the fact
    H.expect_error(function() net:check_names() end, "ValueError", "The value of body.0.weight is",
      "its name 'body.0.weight' already exists")
  end)

  it("generate_scope gives each sub-cell its Default/name-Class path and keeps a scope once set", function()
    local net = two_layers()
    assert.is_nil(net.fc1:get_scope())
    net:generate_scope()
    assert.is_nil(net:get_scope())
    assert.are.equal("Default/fc1-Dense", net.fc1:get_scope())
    assert.are.equal("Default/body-SequentialCell", net.body:get_scope())
    assert.are.equal("Default/body-SequentialCell/0-Dense", net.body[1]:get_scope())
    assert.are.equal("Default/body-SequentialCell/1-ReLU", net.body[2]:get_scope())
    net.body:generate_scope() -- the sub-cells keep their first scope
    assert.are.equal("Default/body-SequentialCell/0-Dense", net.body[1]:get_scope())
  end)

  it("set_broadcast_flag and set_boost record flags and return the cell", function()
    local net = two_layers()
    assert.are.equal(net, net:set_broadcast_flag())
    assert.is_true(net:get_flags().broadcast_flag)
    net:set_broadcast_flag(false)
    assert.is_false(net:get_flags().broadcast_flag)
    assert.are.equal(net, net:set_boost("less_bn"))
    assert.is_true(net.body[1]:get_flags().less_bn)
    H.expect_error(function() net:set_broadcast_flag(1) end, "TypeError", "mode must be a boolean")
    H.expect_error(function() net:set_boost("more_bn") end, "ValueError",
      "For 'set_boost', the argument 'boost_type' should be 'less_bn', but got more_bn")
  end)

  it("update_cell_type sets cell_type", function()
    local net = two_layers()
    assert.is_nil(net.cell_type)
    net:update_cell_type("quant")
    assert.are.equal("quant", net.cell_type)
    H.expect_error(function() net:update_cell_type(3) end, "TypeError", "cell_type must be a string")
  end)

  it("parameters_broadcast_dict maps names to the Parameters, nil when there are none", function()
    local net = two_layers()
    local d = net:parameters_broadcast_dict()
    assert.are.same({ "fc1.weight", "fc1.bias", "body.0.weight", "body.0.bias" }, d:keys())
    assert.are.equal(net.fc1.weight, d["fc1.weight"])
    assert.are.equal(0, #net:parameters_broadcast_dict(true):keys() - 4)
    assert.is_nil(net:parameters_broadcast_dict(false)) -- TwoLayers holds none itself
    assert.is_nil(nn.ReLU():parameters_broadcast_dict())
    net.fc1.bias.layerwise_parallel = true -- sliced per rank: not broadcast
    assert.are.same({ "fc1.weight", "body.0.weight", "body.0.bias" }, net:parameters_broadcast_dict():keys())
    H.expect_error(function() net:parameters_broadcast_dict("yes") end, "TypeError", "recurse must be a boolean")
  end)

  it("set_inputs records Tensors that get_inputs returns", function()
    local net = two_layers()
    assert.is_nil(net:get_inputs())
    local x = cell.zeros { 5, 3 }
    net:set_inputs(x)
    assert.are.equal(x, net:get_inputs()[1])
    assert.are.equal(1, #net:get_inputs())
    H.expect_error(function() net:set_inputs(x, "y") end, "TypeError", "set_inputs: input 2 must be a Tensor")
  end)

  it("cast_param and auto_cast_inputs follow to_float", function()
    local net = two_layers()
    local w = net.fc1.weight
    assert.are.equal(w, net:cast_param(w))
    local ins = { cell.ones { 2, 3 }, cell.tensor({ 1, 2 }, cell.int32) }
    assert.are.equal(ins, net:auto_cast_inputs(ins))
    net:to_float(cell.float16)
    local c = net:cast_param(w)
    assert.are.equal(cell.float16, c.dtype)
    assert.are.same(w:astype(cell.float16):totable(), c:totable())
    local out = net:auto_cast_inputs(ins)
    assert.are.equal(cell.float16, out[1].dtype)
    assert.are.equal(cell.int32, out[2].dtype)
    assert.are.equal(cell.float32, w.dtype) -- the master stays float32
    H.expect_error(function() net:cast_param("w") end, "TypeError", "cast_param: param must be a Parameter or Tensor")
    H.expect_error(function() two_layers():auto_cast_inputs(3) end, "TypeError", "inputs must be a sequence")
  end)
end)
