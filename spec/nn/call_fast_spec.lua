-- The short paths of a call (Cell.__call without hooks, Dense:construct
-- reading its fields from the cell's state, cell.no_grad without a table
-- per call) behave exactly as the general ones: whatever shadows or
-- replaces what they read directly is still seen.
local cell = require "cell"
local nn = cell.nn

describe("Cell.__call without hooks", function()
  it("calls the class's construct", function()
    local Twice = nn.Cell:extend("Twice")
    function Twice:construct(x) return x * 2 end
    assert.are.same({ 2, 4 }, Twice()(cell.tensor({ 1, 2 })):tolist())
  end)

  it("calls an instance's own construct when one shadows the class's", function()
    local Twice = nn.Cell:extend("Twice")
    function Twice:construct(x) return x * 2 end
    local net = Twice()
    net.construct = function(_, x) return x * 3 end
    assert.are.same({ 3, 6 }, net(cell.tensor({ 1, 2 })):tolist())
  end)

  it("passes every argument and returns every result, nils included", function()
    local Echo = nn.Cell:extend("Echo")
    function Echo:construct(...) return ... end
    local a, b, c, d = Echo()(1, nil, 3, nil)
    assert.are.same({ 1, nil, 3, nil }, { a, b, c, d })
    assert.are.equal(4, select("#", Echo()(1, nil, 3, nil)))
  end)
end)

describe("Cell.__call with forward hooks only", function()
  it("gives hooks the arguments and output, takes a replacement, and keeps a shadowing construct", function()
    local Twice = nn.Cell:extend("Twice")
    function Twice:construct(x) return x * 2 end
    local net = Twice()
    net.construct = function(_, x) return x * 3 end
    local seen = {}
    net:register_forward_hook(function(c, args, out)
      seen[#seen + 1] = { c, args.n, args[1]:tolist(), out:tolist() }
    end)
    net:register_forward_hook(function(_, _, out) return out + 1 end)
    local x = cell.tensor({ 1, 2 })
    assert.are.same({ 4, 7 }, net(x):tolist())
    assert.are.same({ { net, 1, { 1, 2 }, { 3, 6 } } }, seen)
  end)

  it("passes nils and several results through, the hook seeing them as one list", function()
    local Echo = nn.Cell:extend("Echo")
    function Echo:construct(...) return ... end
    local net = Echo()
    local outs = {}
    net:register_forward_hook(function(_, args, out) outs[#outs + 1] = { args.n, type(out) == "table" and out.n or "single" } end)
    assert.are.equal(4, select("#", net(1, nil, 3, nil)))
    local a, b, c = net(1, nil, 3)
    assert.are.same({ 1, nil, 3 }, { a, b, c })
    assert.are.equal(7, net(7))
    assert.are.same({ { 4, 4 }, { 3, 3 }, { 1, "single" } }, outs)
  end)

  it("sends a call whose last argument is kwargs the general way (with_kwargs hooks see them)", function()
    local KW = nn.Cell:extend("KW")
    function KW:construct(x, kw) return x + (kw and kw.shift or 0) end
    local net = KW()
    local got
    net:register_forward_hook(function(_, _, kwargs, out)
      got = { kwargs.shift, out }
    end, { with_kwargs = true })
    assert.are.equal(12, net(2, cell.kwargs { shift = 10 }))
    assert.are.same({ 10, 12 }, got)
  end)
end)

describe("cell.no_grad", function()
  it("returns every result of fn, nils included, and restores grad mode", function()
    assert.is_true(cell.is_grad_enabled())
    assert.are.equal(3, select("#", cell.no_grad(function() return 1, nil, nil end)))
    local seen = cell.no_grad(function() return cell.is_grad_enabled() end)
    assert.is_false(seen)
    assert.is_true(cell.is_grad_enabled())
  end)

  it("raises fn's error unchanged and restores grad mode", function()
    local obj = {}
    local ok, err = pcall(cell.no_grad, function() error(obj) end)
    assert.is_false(ok)
    assert.are.equal(obj, err)
    assert.is_true(cell.is_grad_enabled())
    ok, err = pcall(cell.no_grad, function() error("boom", 0) end)
    assert.are.equal("boom", err)
  end)

  it("calls a callable table and rejects a value that cannot be called", function()
    local callable = setmetatable({}, { __call = function(_, x) return x + 1 end })
    assert.are.equal(3, cell.no_grad(callable, 2))
    local ok, err = pcall(cell.no_grad, {})
    assert.is_false(ok)
    assert.matches("TypeError: no_grad: fn must be a function, but got table", err, 1, true)
    assert.is_true(cell.is_grad_enabled())
    ok, err = pcall(cell.enable_grad, 5)
    assert.matches("TypeError: enable_grad: fn must be a function, but got number", err, 1, true)
  end)

  it("blames the caller's line for a value that cannot be called", function()
    local ok, err = pcall(function() return cell.no_grad(42) end)
    assert.is_false(ok)
    assert.matches("call_fast_spec.lua:%d+: TypeError: no_grad", err)
  end)
end)

describe("Dense:construct's fields", function()
  local x = cell.tensor({ { 1, 2 } })

  it("sees a replaced weight and bias", function()
    local d = nn.Dense(2, 1)
    d.weight = cell.Parameter(cell.tensor({ { 1, 1 } }), "weight")
    d.bias = cell.Parameter(cell.tensor({ 10 }), "bias")
    assert.are.same({ { 13 } }, d(x):tolist())
  end)

  it("sees has_bias and in_channels changed after construction", function()
    local d = nn.Dense(2, 1, { weight_init = cell.tensor({ { 1, 1 } }), bias_init = cell.tensor({ 10 }) })
    d.has_bias = false
    assert.are.same({ { 3 } }, d(x):tolist())
    d.in_channels = 3
    local ok, err = pcall(d, x)
    assert.is_false(ok)
    assert.matches("ValueError: For 'Dense', the last dimension of the input must be in_channels (3)", err, 1, true)
  end)

  it("applies an activation given as a string or a cell, and a replaced one", function()
    local d = nn.Dense(2, 1, { weight_init = cell.tensor({ { -1, -1 } }), has_bias = false, activation = "relu" })
    assert.are.same({ { 0 } }, d(x):tolist())
    d.activation = nn.Tanh()
    assert.is_true(d(x):tolist()[1][1] < -0.99)
    d.activation = nil
    assert.are.same({ { -3 } }, d(x):tolist())
  end)

  it("sees parameters cast under to_float", function()
    local d = nn.Dense(2, 1, { weight_init = cell.tensor({ { 1, 1 } }), bias_init = cell.tensor({ 10 }) })
    d:to_float(cell.float16)
    local y = d(x)
    assert.are.equal(cell.float16, y.dtype)
    assert.are.same({ { 13 } }, y:astype(cell.float32):tolist())
  end)

  it("rejects a non-tensor input by name", function()
    local ok, err = pcall(nn.Dense(2, 1), 7)
    assert.is_false(ok)
    assert.matches("TypeError: Dense: x must be a Tensor, but got number", err, 1, true)
  end)
end)

describe("Flatten:construct's fields", function()
  it("sees start_dim and end_dim changed after construction", function()
    local f = cell.nn.Flatten()
    local x = cell.zeros({ 2, 3, 4 })
    assert.are.same({ 2, 12 }, f(x).shape)
    f.start_dim = 1
    assert.are.same({ 24 }, f(x).shape)
    f.end_dim = 2
    assert.are.same({ 6, 4 }, f(x).shape)
  end)
end)

describe("Cell attribute reads", function()
  it("give instance values before class members and nil for unknown names", function()
    local C = cell.nn.Cell:extend("C")
    C.size = 1
    function C:hello() return "class" end
    local c = C()
    assert.are.equal(1, c.size)
    c.size = 2
    assert.are.equal(2, c.size)
    assert.are.equal("class", c:hello())
    assert.is_nil(c.nothing_here)
    local ok, err = pcall(function() return c.parameters end)
    assert.is_false(ok)
    assert.matches("AttributeError: 'C' object has no attribute 'parameters'", err, 1, true)
  end)
end)
