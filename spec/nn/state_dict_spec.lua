-- state_dict_spec.lua - Cell:state_dict and Cell:load_state_dict as
-- MindSpore 2.6 defines them: key order, prefix, keep_vars, argument
-- checks, _metadata, extra state, the four hook kinds, strict and
-- non-strict loading, incompatible keys and the aggregated RuntimeError.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local OrderedDict = cell.OrderedDict

local function err(fn, ...) return H.caller_error("state_dict_spec%.lua", fn, ...) end

local Leaf = nn.Cell:extend("Leaf")
function Leaf:init(n)
  self.weight = cell.Parameter(cell.arange(1, n + 1):float(), "weight")
  self:register_buffer("running", cell.zeros({ n }))
  self:register_buffer("scratch", cell.zeros({ n }), false)
  self.bias = cell.Parameter(cell.zeros({ n }), "bias")
end

local Net = nn.Cell:extend("Net")
function Net:init()
  self.scale = cell.Parameter(cell.ones({ 1 }), "scale")
  self.first = Leaf(2)
  self:register_buffer("steps", cell.zeros({}, cell.int64))
  self.block = nn.Cell()
  self.block.inner = Leaf(3)
end

describe("state_dict", function()
  it("lists parameters, then persistent buffers, then sub-cells, in registration order", function()
    local net = Net()
    assert.are.same({ "scale", "steps", "first.weight", "first.bias", "first.running",
      "block.inner.weight", "block.inner.bias", "block.inner.running" }, net:state_dict():keys())
    assert.are.equal(net.first.weight, net:state_dict()["first.weight"])
  end)

  it("takes prefix and keep_vars as options or positionally, and a destination", function()
    local net = Leaf(1)
    assert.are.same({ "m.weight", "m.bias", "m.running" }, net:state_dict { prefix = "m." }:keys())
    local d = OrderedDict { { "x", 1 } }
    local got = net:state_dict(d, "p.", true)
    assert.are.equal(d, got)
    assert.are.same({ "x", "p.weight", "p.bias", "p.running" }, d:keys())
    assert.are.equal(net.weight, net:state_dict { keep_vars = true }.weight)
  end)

  it("checks its argument types", function()
    local net = Leaf(1)
    assert.are.equal("TypeError: The type of destination must be OrderedDict, but got table",
      err(function() net:state_dict({}, "") end))
    assert.are.equal("TypeError: The type of prefix must be string, but got number",
      err(function() net:state_dict { prefix = 1 } end))
    assert.are.equal("TypeError: The type of keep_vars must be bool, but got string",
      err(function() net:state_dict { keep_vars = "y" } end))
  end)

  it("calls a sub-cell's own state_dict when its class overrides it", function()
    local Custom = nn.Cell:extend("Custom")
    function Custom:init() self.w = cell.Parameter(cell.ones({ 1 }), "w") end
    function Custom:state_dict(opts)
      opts.destination[opts.prefix .. "note"] = cell.tensor({ 42 })
      return nn.Cell.state_dict(self, opts)
    end
    local net = nn.Cell()
    net.child = Custom()
    net.leaf = Leaf(1)
    assert.are.same({ "child.note", "child.w", "leaf.weight", "leaf.bias", "leaf.running" }, net:state_dict():keys())
  end)

  it("records metadata per cell path in _metadata", function()
    local md = rawget(Net():state_dict(), "_metadata")
    assert.are.same({ "", "first", "block", "block.inner" }, md:keys())
  end)

  it("stores extra state when the class defines get_extra_state", function()
    local Extra = nn.Cell:extend("Extra")
    function Extra:init() self.w = cell.Parameter(cell.ones({ 1 }), "w"); self.count = 7 end
    function Extra:get_extra_state() return { count = self.count } end
    function Extra:set_extra_state(s) self.count = s.count end
    local top = nn.Cell()
    top.e = Extra()
    local sd = top:state_dict()
    assert.are.same({ "e.w", "e._extra_state" }, sd:keys())
    assert.are.same({ count = 7 }, sd["e._extra_state"])
    local fresh = nn.Cell()
    fresh.e = Extra()
    fresh.e.count = 0
    fresh:load_state_dict(sd)
    assert.are.equal(7, fresh.e.count)
    -- a strict load of a dict without it misses the key
    sd["e._extra_state"] = nil
    H.expect_error(function() fresh:load_state_dict(sd) end, "RuntimeError", 'Missing key(s) in state_dict: "e._extra_state"')
    -- the base methods refuse to be called
    H.expect_error(function() nn.Cell():get_extra_state() end, "RuntimeError", "should never be called")
  end)

  it("runs pre-hooks before and post-hooks after, with MindSpore's signatures", function()
    local net = Leaf(1)
    local calls = {}
    net:register_state_dict_pre_hook(function(c, prefix, keep_vars)
      calls[#calls + 1] = { "pre", c, prefix, keep_vars }
    end)
    local h = net:register_state_dict_post_hook(function(c, sd, prefix, md)
      calls[#calls + 1] = { "post", c, prefix, type(md) }
      sd[prefix .. "added"] = 1
    end)
    local sd = net:state_dict { prefix = "q." }
    assert.are.same({ "pre", net, "q.", false }, calls[1])
    assert.are.same({ "post", net, "q.", "table" }, calls[2])
    assert.are.equal(1, sd["q.added"])
    h:remove()
    assert.is_false(net:state_dict():contains("added"))
    net:register_state_dict_post_hook(function() return 1 end)
    H.expect_error(function() net:state_dict() end, "RuntimeError", "state_dict post-hook must return nil")
  end)
end)

describe("load_state_dict", function()
  it("round-trips and keeps the Parameters' identity", function()
    local src, dst = Net(), Net()
    src.first.weight:set_data(cell.tensor({ 10, 20 }))
    src.block.inner.running:fill_(5)
    local w = dst.first.weight
    local ptr = w:data_ptr()
    local r = dst:load_state_dict(src:state_dict())
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    assert.are.equal("<All keys matched successfully>", tostring(r))
    assert.are.equal(w, dst.first.weight)
    assert.are.equal(ptr, w:data_ptr())
    assert.are.same({ 10, 20 }, w:totable())
    assert.are.same({ 5, 5, 5 }, dst.block.inner.running:totable())
    assert.is_true(w.requires_grad)
  end)

  it("takes a key naming one of the cell's own tensors as expected, dots and all", function()
    local net = nn.Cell()
    net.pt = cell.ParameterTuple { cell.Parameter(cell.zeros({ 2 }), "layer.w") }
    net.sub = Leaf(1)
    local sd = net:state_dict()
    assert.are.same({ "layer.w", "sub.weight", "sub.bias", "sub.running" }, sd:keys())
    sd["layer.w"] = cell.tensor({ 3, 4 })
    local r = net:load_state_dict(sd)
    assert.are.same({}, r.unexpected_keys)
    assert.are.same({ 3, 4 }, net["layer.w"]:totable())
    sd["layer.x"] = cell.ones({ 1 })
    H.expect_error(function() net:load_state_dict(sd) end, "RuntimeError", 'Unexpected key(s) in state_dict: "layer.x"')
  end)

  it("hands a sub-cell that overrides _load_from_state_dict an OrderedDict of its keys, and loads below it", function()
    local Custom = nn.Cell:extend("CustomLoad")
    function Custom:init()
      self.w = cell.Parameter(cell.zeros({ 1 }), "w")
      self.leaf = Leaf(1)
    end
    local seen
    function Custom:_load_from_state_dict(sd, prefix, md, strict, missing, unexpected, errors)
      seen = { require("cell.class").is_instance(sd, OrderedDict), prefix, sd:keys() }
      sd[prefix .. "w"] = cell.tensor({ 9 }) -- what the base method then loads
      nn.Cell._load_from_state_dict(self, sd, prefix, md, strict, missing, unexpected, errors)
    end
    local net = nn.Cell()
    net.c = Custom()
    net.other = Leaf(1)
    local sd = net:state_dict()
    sd["c.leaf.stray"] = cell.ones({ 1 })
    sd["c.stray"] = cell.ones({ 1 })
    sd["other.bias"] = nil -- a removed entry: the dict has a hole
    sd["other.bias"] = cell.tensor({ 5 })
    sd["c.leaf.weight"] = cell.tensor({ 4 })
    local r = net:load_state_dict(sd, false)
    assert.are.same({ true, "c.", { "c.w", "c.leaf.weight", "c.leaf.bias", "c.leaf.running", "c.leaf.stray",
      "c.stray" } }, seen)
    assert.are.same({ 9 }, net.c.w:totable())
    assert.are.same({ 4 }, net.c.leaf.weight:totable())
    assert.are.same({ 5 }, net.other.bias:totable())
    assert.are.same({}, r.missing_keys)
    -- a parent's unexpected keys come before its sub-cells' (depth first, in key order)
    assert.are.same({ "c.stray", "c.leaf.stray" }, r.unexpected_keys)
  end)

  it("converts dtypes into the model's", function()
    local net = Leaf(2)
    net:load_state_dict({ weight = cell.tensor({ 3, 4 }, cell.float64), bias = cell.tensor({ 1, 1 }, cell.int32),
      running = cell.ones({ 2 }) })
    assert.are.equal(cell.float32, net.weight.dtype)
    assert.are.same({ 3, 4 }, net.weight:totable())
  end)

  it("strict loading reports missing, unexpected and mismatched keys in one RuntimeError", function()
    local net = Net()
    local sd = net:state_dict()
    sd["first.bias"] = nil
    sd["block.inner.weight"] = cell.ones({ 5 })
    sd["first.nothing"] = cell.ones({ 1 })
    sd["ghost.w"] = cell.ones({ 1 })
    sd["scale"] = "not a tensor"
    local msg = err(function() net:load_state_dict(sd) end)
    assert.are.equal(table.concat({
      "RuntimeError: Error(s) in loading state_dict for Net:",
      '\tMissing key(s) in state_dict: "first.bias". ',
      '\tUnexpected key(s) in state_dict: "ghost.w", "first.nothing". ',
      '\tWhile copying the parameter named "scale", expected Tensor or Tensor-like object from checkpoint '
        .. "but received string",
      "\tsize mismatch for block.inner.weight: copying a param with shape (5,) from checkpoint, the shape in "
        .. "current model is (3,).",
    }, "\n"), msg)
  end)

  it("non-strict loading returns the missing and unexpected keys and loads the rest", function()
    local net = Leaf(2)
    local r = net:load_state_dict({ weight = cell.tensor({ 7, 8 }), extra = cell.ones({ 1 }) }, false)
    assert.are.same({ "bias", "running" }, r.missing_keys)
    assert.are.same({ "extra" }, r.unexpected_keys)
    assert.are.equal("_IncompatibleKeys(missing_keys=['bias', 'running'], unexpected_keys=['extra'])", tostring(r))
    assert.are.same({ 7, 8 }, net.weight:totable())
    local r2 = net:load_state_dict({ weight = cell.ones({ 2 }) }, { strict = false })
    assert.are.same({ "bias", "running" }, r2.missing_keys)
    -- a size mismatch is an error even when not strict
    H.expect_error(function() net:load_state_dict({ weight = cell.ones({ 3 }) }, false) end,
      "RuntimeError", "size mismatch for weight")
  end)

  it("a nil parameter or sub-cell is skipped, and so are the keys under its name (as MindSpore)", function()
    local net = Net()
    local sd = net:state_dict()
    net.first = nil
    net.scale = nil
    local r = net:load_state_dict(sd, false)
    assert.are.same({}, r.missing_keys)
    assert.are.same({ "scale" }, r.unexpected_keys)
  end)

  it("runs load pre-hooks and post-hooks with MindSpore's signatures", function()
    local net = Net()
    local seen = {}
    net.first:register_load_state_dict_pre_hook(function(c, sd, prefix, md, strict, missing, unexpected, errors)
      seen.pre = { c == net.first, prefix, type(md), strict, type(missing), type(unexpected), type(errors) }
      sd[prefix .. "weight"] = cell.tensor({ 42, 42 })
    end)
    net:register_load_state_dict_post_hook(function(c, inc)
      seen.post = c == net
      for i = #inc.unexpected_keys, 1, -1 do table.remove(inc.unexpected_keys, i) end
    end)
    local sd = net:state_dict()
    sd.junk = cell.ones({ 1 })
    net:load_state_dict(sd) -- the post-hook cleared the unexpected key, so strict passes
    assert.are.same({ true, "first.", "table", true, "table", "table", "table" }, seen.pre)
    assert.is_true(seen.post)
    assert.are.same({ 42, 42 }, net.first.weight:totable())
    net:register_load_state_dict_post_hook(function() return 1 end)
    H.expect_error(function() net:load_state_dict(net:state_dict()) end, "RuntimeError", "not expected to return new values")
  end)

  it("checks its arguments", function()
    local net = Leaf(1)
    assert.are.equal("TypeError: Expected state_dict to be dict-like, got number.",
      err(function() net:load_state_dict(3) end))
    assert.are.equal("TypeError: load_state_dict: strict must be a boolean, but got string",
      err(function() net:load_state_dict({}, "no") end))
    H.expect_error(function() net:load_state_dict({ [1] = cell.ones({ 1 }) }) end, "TypeError", "keys must be strings")
    for _, m in ipairs { "register_state_dict_pre_hook", "register_state_dict_post_hook",
      "register_load_state_dict_pre_hook", "register_load_state_dict_post_hook" } do
      assert.are.equal("TypeError: " .. m .. ": the hook must be a function, but got string",
        err(function() net[m](net, "x") end))
    end
  end)

  it("loads into lazily initialised parameters", function()
    local Lazy = nn.Cell:extend("Lazy")
    function Lazy:init() self.w = cell.Parameter(cell.initializer("normal", { 2 }), "w") end
    local net = Lazy()
    assert.is_true(net.w.has_init)
    net:load_state_dict({ w = cell.tensor({ 1, 2 }) })
    assert.is_false(net.w.has_init)
    assert.are.same({ 1, 2 }, net.w:totable())
  end)
end)
