-- container_spec.lua - cell.nn.SequentialCell, CellList and CellDict:
-- MindSpore's member names ("0", "1", ...) with 1-based Lua access,
-- parameter names and state_dict keys inside a parent, append / extend /
-- insert / remove with renumbering, iteration, the chained construct, the
-- dict methods, and every error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("container_spec%.lua", fn, ...) end

--- A Dense layer with all weights `w` and bias `b` (so outputs are easy to compute).
local function dense(i, o, w, b)
  return nn.Dense(i, o, { weight_init = cell.full({ o, i }, w or 1), bias_init = cell.full({ o }, b or 0) })
end

local function names(net)
  local out = {}
  for name, p in net:parameters_and_names() do out[#out + 1] = name .. "=" .. p.name end
  return out
end

local Parent = nn.Cell:extend("Parent")
function Parent:init(c) self.layers = c end
function Parent:construct(x) return self.layers(x) end

describe("nn.SequentialCell", function()
  it("names its members '0', '1', ... and reads them 1-based", function()
    local a, r, b = dense(2, 3), nn.ReLU(), dense(3, 1)
    for _, seq in ipairs { nn.SequentialCell(a, r, b), nn.SequentialCell { a, r, b } } do
      assert.are.equal(3, seq:len())
      assert.are.equal(a, seq[1])
      assert.are.equal(r, seq[2])
      assert.are.equal(b, seq[-1])
      assert.are.equal(a, seq[-3])
      assert.are.equal(a, seq["0"])
      assert.is_nil(seq[4])
      assert.is_nil(seq[-4])
      assert.are.same({ "0", "1", "2" }, seq:name_cells():keys())
      assert.are.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, seq:state_dict():keys())
      assert.are.equal("2.weight", b.weight.name)
    end
  end)

  it("takes an OrderedDict and keeps its names", function()
    local seq = nn.SequentialCell(cell.OrderedDict { { "fc", dense(2, 2) }, { "act", nn.ReLU() } })
    assert.are.same({ "fc.weight", "fc.bias" }, seq:state_dict():keys())
    assert.are.equal(seq.fc, seq[1])
    assert.are.equal(seq.act, seq[2])
  end)

  it("chains its members in construct", function()
    local seq = nn.SequentialCell(dense(2, 3, 1, -2), nn.ReLU(), dense(3, 1, 2, 1))
    -- x = {1, 2}: 3 - 2 = 1 in each of 3 units; relu 1; 2 * 3 + 1 = 7
    -- x = {0, 1}: 1 - 2 = -1 -> relu 0 -> 1
    H.assert_close(seq(cell.tensor({ { 1, 2 }, { 0, 1 } })), { { 7 }, { 1 } })
    H.assert_close(nn.SequentialCell()(cell.tensor({ 5 })), { 5 })
  end)

  it("iterates with iter() and a for loop over 1..len()", function()
    local a, b = nn.ReLU(), nn.Tanh()
    local seq = nn.SequentialCell(a, b)
    local got = {}
    for i, c in seq:iter() do got[#got + 1] = { i, c } end
    assert.are.same({ { 1, a }, { 2, b } }, got)
    for i = 1, seq:len() do assert.are.equal(got[i][2], seq[i]) end
  end)

  it("prints its members by MindSpore name", function()
    assert.are.equal("SequentialCell(\n  (0): Dense(input_channels=2, output_channels=3, has_bias=true)\n"
      .. "  (1): ReLU()\n)", tostring(nn.SequentialCell(dense(2, 3), nn.ReLU())))
  end)

  it("gives checkpoint keys under the parent's attribute name", function()
    local net = Parent(nn.SequentialCell(dense(2, 3), nn.ReLU(), dense(3, 1)))
    assert.are.same({ "layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias" },
      net:state_dict():keys())
    assert.are.same({ "layers.0.weight=layers.0.weight", "layers.0.bias=layers.0.bias",
      "layers.2.weight=layers.2.weight", "layers.2.bias=layers.2.bias" }, names(net))
    local other = Parent(nn.SequentialCell(dense(2, 3, 0), nn.ReLU(), dense(3, 1, 0)))
    other:load_state_dict(net:state_dict())
    H.assert_close(other.layers[1].weight, net.layers[1].weight:totable())
  end)

  it("appends, extends, inserts and removes, renumbering and renaming", function()
    local seq = nn.SequentialCell(dense(1, 1))
    local net = Parent(seq)
    assert.are.equal(seq, seq:append(nn.ReLU()))
    seq:extend({ dense(1, 2), nn.Tanh() })
    assert.are.same({ "0", "1", "2", "3" }, seq:name_cells():keys())
    assert.are.same({ "layers.0.weight=layers.0.weight", "layers.0.bias=layers.0.bias",
      "layers.2.weight=layers.2.weight", "layers.2.bias=layers.2.bias" }, names(net))
    local first = dense(1, 1)
    seq:insert(1, first)
    assert.are.equal(first, seq[1])
    assert.are.same({ "layers.0.weight=layers.0.weight", "layers.0.bias=layers.0.bias",
      "layers.1.weight=layers.1.weight", "layers.1.bias=layers.1.bias",
      "layers.3.weight=layers.3.weight", "layers.3.bias=layers.3.bias" }, names(net))
    local tanh = seq[5]
    seq:insert(-1, nn.Sigmoid()) -- before the last, as Python's list.insert(-1, x)
    assert.are.equal(tanh, seq[6])
    assert.are.equal("Sigmoid", seq[5].cls_name)
    seq:insert(seq:len() + 1, nn.ReLU())
    assert.are.equal(7, seq:len())
    assert.are.equal(first, seq:remove(1))
    assert.are.equal("ReLU", seq:remove().cls_name)
    assert.are.same({ "0", "1", "2", "3", "4" }, seq:name_cells():keys())
    assert.are.same({ "layers.0.weight=layers.0.weight", "layers.0.bias=layers.0.bias",
      "layers.2.weight=layers.2.weight", "layers.2.bias=layers.2.bias" }, names(net))
    H.assert_shape(net(cell.ones({ 3, 1 })), { 3, 2 })
  end)

  it("replaces a member by position, and appends at len() + 1", function()
    local seq = nn.SequentialCell(dense(1, 1), nn.ReLU())
    local net = Parent(seq)
    local d = dense(1, 1)
    seq[2] = d
    assert.are.equal(d, seq[2])
    assert.are.equal("layers.1.weight", d.weight.name)
    seq[-1] = nn.Tanh()
    assert.are.equal("Tanh", seq[2].cls_name)
    seq[3] = nn.ReLU()
    assert.are.same({ "0", "1", "2" }, seq:name_cells():keys())
    seq.note = "plain attributes still work"
    assert.are.equal("plain attributes still work", seq.note)
  end)

  it("holds a small convolutional net whose loss falls under gradient descent", function()
    cell.set_seed(1)
    local net = nn.SequentialCell {
      nn.Conv2d(1, 4, 3, { has_bias = true }), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2, 2),
      nn.Flatten(), nn.Dropout { p = 0.1 }, nn.Dense(16, 3),
    }
    net:set_train()
    assert.are.same({ "0.weight", "0.bias", "1.moving_mean", "1.moving_variance", "1.gamma", "1.beta",
      "6.weight", "6.bias" }, net:state_dict():keys())
    local x = cell.randn({ 6, 1, 4, 4 })
    local y = cell.tensor({ 1, 2, 3, 1, 2, 3 }, cell.int64)
    local loss_fn = nn.CrossEntropyLoss()
    local params = net:trainable_params()
    assert.are.equal(6, #params)
    local step = cell.value_and_grad(function(a, b) return loss_fn(net(a), b) end, nil, params)
    local first, last
    for i = 1, 30 do
      local loss, grads = step(x, y)
      if i == 1 then first = loss:item() end
      last = loss:item()
      cell.no_grad(function()
        for k, p in ipairs(params) do p:set_data(p - grads[k] * 0.1) end
      end)
    end
    assert.is_true(last < first * 0.5, ("loss %g -> %g"):format(first, last))
    net:set_train(false)
    H.assert_shape(net(x), { 6, 3 })
  end)

  it("rejects what is not a cell and positions outside it", function()
    assert.are.equal("TypeError: For 'SequentialCell', each cell should be subclass of Cell, but got number.",
      err(function() local s = nn.SequentialCell(nn.ReLU(), 3) return s end))
    H.expect_error(function() nn.SequentialCell { nn.ReLU(), "x" } end, "TypeError", "but got string")
    H.expect_error(function() nn.SequentialCell("x") end, "TypeError", "must be a list or an OrderedDict")
    local seq = nn.SequentialCell(nn.ReLU(), nn.Tanh())
    assert.are.equal("IndexError: For 'SequentialCell', indices are 1-based (the first member, named \"0\", is [1]), "
      .. "but got 0.", err(function() local c = seq[0] return c end))
    H.expect_error(function() return seq[1.5] end, "TypeError", "the index must be an integer, but got 1.5")
    assert.are.equal("IndexError: For 'SequentialCell', the index must be in range [-2, -1] or [1, 2] (or 3 to "
      .. "append), but got 5.", err(function() seq[5] = nn.ReLU() end))
    H.expect_error(function() seq[1] = nil end, "TypeError", "use remove(1)")
    H.expect_error(function() seq[1] = 3 end, "TypeError", "subclass of Cell")
    H.expect_error(function() seq:append({}) end, "TypeError", "subclass of Cell, but got table")
    H.expect_error(function() seq:extend(nn.ReLU()) end, "TypeError", "should be a list of cells")
    H.expect_error(function() seq:insert(5, nn.ReLU()) end, "IndexError", "[1, 2] (or 3 to append)")
    H.expect_error(function() seq:insert("1", nn.ReLU()) end, "TypeError", "index must be an integer")
    H.expect_error(function() seq:remove(3) end, "IndexError", "in range [-2, -1] or [1, 2], but got 3")
    assert.are.equal(2, seq:len())
  end)
end)

describe("nn.CellList", function()
  it("holds cells named '0', '1', ... with no construct", function()
    local l = nn.CellList { dense(1, 2), nn.ReLU() }
    assert.are.equal(2, l:len())
    assert.are.equal("ReLU", l[2].cls_name)
    assert.are.same({ "0.weight", "0.bias" }, l:state_dict():keys())
    l:append(dense(2, 1))
    l:extend({ nn.Tanh() })
    assert.are.same({ "0", "1", "2", "3" }, l:name_cells():keys())
    assert.are.equal("2.weight", l[3].weight.name)
    H.expect_error(function() l(cell.ones({ 1 })) end, "NotImplementedError", "CellList")
    assert.are.equal(0, nn.CellList():len())
  end)

  it("serves as a parent's list of layers", function()
    local Net = nn.Cell:extend("Net")
    function Net:init()
      self.blocks = nn.CellList { dense(2, 2, 1), dense(2, 2, 2) }
    end
    function Net:construct(x)
      for _, b in self.blocks:iter() do x = b(x) end
      return x
    end
    local net = Net()
    assert.are.same({ "blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias" },
      net:state_dict():keys())
    -- {1, 1} -> {2, 2} -> {8, 8}
    H.assert_close(net(cell.tensor({ { 1, 1 } })), { { 8, 8 } })
    net.blocks:append(dense(2, 1))
    assert.are.equal("blocks.2.weight", net.blocks[3].weight.name)
    assert.are.equal(4, #net:trainable_params() - 2)
  end)

  it("keeps the members' names with auto_prefix = false", function()
    local d = dense(1, 1)
    local l = nn.CellList({ d }, { auto_prefix = false })
    assert.are.equal("weight", d.weight.name)
    l:insert(1, nn.ReLU())
    assert.are.equal("weight", d.weight.name)
    assert.are.same({ "1.weight", "1.bias" }, l:state_dict():keys())
  end)

  it("rejects bad arguments", function()
    assert.are.equal("TypeError: For 'CellList', the new cells wanted to append should be a list of cells, but got "
      .. "Dense.", err(function() local l = nn.CellList(dense(1, 1)) return l end))
    H.expect_error(function() nn.CellList { 1 } end, "TypeError", "For 'CellList', each cell should be subclass")
    H.expect_error(function() nn.CellList({}, 1) end, "TypeError", "options")
    H.expect_error(function() nn.CellList({}, { auto_prefix = 1 }) end, "TypeError", "'auto_prefix'")
  end)
end)

describe("nn.CellDict", function()
  it("keeps the order of a list of pairs or an OrderedDict, and sorts a plain table's names", function()
    local a, b = nn.ReLU(), dense(1, 1)
    assert.are.same({ "z", "a" }, nn.CellDict({ { "z", a }, { "a", b } }):keys())
    assert.are.same({ "z", "a" }, nn.CellDict(cell.OrderedDict { { "z", a }, { "a", b } }):keys())
    local d = nn.CellDict { z = a, a = b }
    assert.are.same({ "a", "z" }, d:keys())
    assert.are.same({ b, a }, d:values())
    assert.are.same({ "a.weight", "a.bias" }, d:state_dict():keys())
    assert.are.equal(a, d.z)
    assert.are.equal(b, d["a"])
    assert.are.equal(2, d:len())
    assert.is_true(d:contains("z"))
    assert.is_false(d:contains("q"))
    local seen = {}
    for k, v in d:items() do seen[#seen + 1] = { k, v } end
    assert.are.same({ { "a", b }, { "z", a } }, seen)
    assert.are.equal("CellDict(\n  (a): Dense(input_channels=1, output_channels=1, has_bias=true)\n"
      .. "  (z): ReLU()\n)", tostring(d))
  end)

  it("adds, replaces and removes members, with parameter names under the parent", function()
    local net = Parent(nn.CellDict({ { "fc", dense(1, 1) } }))
    local d = net.layers
    d["out"] = dense(1, 2)
    assert.are.equal("layers.out.weight", d.out.weight.name)
    d:update({ { "act", nn.ReLU() } })
    d:update(nn.CellDict { extra = nn.Tanh() })
    assert.are.same({ "fc", "out", "act", "extra" }, d:keys())
    d["out"] = nil
    assert.are.same({ "fc", "act", "extra" }, d:keys())
    assert.are.equal("Tanh", d:pop("extra").cls_name)
    assert.are.same({ "layers.fc.weight", "layers.fc.bias" }, net:state_dict():keys())
    d:clear()
    assert.are.equal(0, d:len())
    H.expect_error(function() d(cell.ones({ 1 })) end, "NotImplementedError", "CellDict")
  end)

  it("rejects bad keys and values", function()
    local d = nn.CellDict()
    assert.are.equal("TypeError: For 'CellDict', the type of key should be string, but got number.",
      err(function() d[1] = nn.ReLU() end))
    H.expect_error(function() d["a.b"] = nn.ReLU() end, "KeyError", "can not contain '.'")
    H.expect_error(function() d[""] = nn.ReLU() end, "KeyError", "empty")
    assert.are.equal("KeyError: For 'CellDict', the key can not be the name of an attribute or method of CellDict, "
      .. "but got 'keys'.", err(function() d["keys"] = nn.ReLU() end))
    H.expect_error(function() d:update({ { "a", 3 } }) end, "TypeError",
      "the type of cell should be Cell, but got number")
    H.expect_error(function() d:update({ { "a" } }) end, "ValueError", "element #1 has length 1; 2 is required")
    H.expect_error(function() d:update({ nn.ReLU() }) end, "TypeError", "element #1 should be a {name, cell} pair")
    H.expect_error(function() d:update(3) end, "TypeError", "CellDict.update()")
    H.expect_error(function() nn.CellDict { [1] = nn.ReLU(), a = nn.ReLU() } end, "TypeError")
    H.expect_error(function() d:pop("nope") end, "KeyError", "no member named nope")
    H.expect_error(function() nn.CellDict({}, "x") end, "TypeError", "options")
    d.note = 1
    assert.are.equal(1, d.note)
    assert.are.equal(0, d:len())
  end)
  it("#seq counts the members on Lua 5.4, as seq:len() does everywhere", function()
    if #setmetatable({}, { __len = function() return 1 end }) ~= 1 then return end -- LuaJIT
    local seq = nn.SequentialCell({ nn.Dense(2, 2), nn.ReLU() })
    assert.are.equal(2, #seq)
    seq:append(nn.Tanh())
    assert.are.equal(3, #seq)
    assert.are.equal(1, #nn.CellList({ nn.ReLU() }))
    local d = nn.CellDict(cell.OrderedDict({ { "a", nn.ReLU() }, { "b", nn.Tanh() } }))
    assert.are.equal(2, #d)
    local Sub = nn.SequentialCell:extend("SubSeq")
    assert.are.equal(1, #Sub({ nn.ReLU() }))
  end)
end)
