-- ordered_dict_spec.lua - cell.OrderedDict (API.md, Conventions: Ordered
-- dicts): construction, d[key] reads and writes in insertion order, removal
-- by nil, keys/values/items/len/contains/pop/get/update/copy, tostring,
-- keys named like methods, and the exact error texts.
local class = require "cell.class"
local OrderedDict = require "cell.ordered_dict"

local H = require "helpers"

--- The message of the error fn(...) raises, checked to point at this spec.
local function err(fn, ...) return H.caller_error("ordered_dict_spec%.lua", fn, ...) end

--- The {key, value} pairs of d, walked with d:items().
local function items(d)
  local out = {}
  for k, v in d:items() do out[#out + 1] = { k, v } end
  return out
end

describe("cell.OrderedDict", function()
  describe("construction", function()
    it("starts empty", function()
      local d = OrderedDict()
      assert.are.equal(0, d:len())
      assert.are.same({}, d:keys())
      assert.are.same({}, items(d))
      assert.is_true(class.is_instance(d, OrderedDict))
    end)

    it("takes a sequence of {key, value} pairs in order", function()
      local d = OrderedDict({ { "b", 1 }, { "a", 2 }, { 3, "three" }, { "b", 10 } })
      assert.are.same({ "b", "a", 3 }, d:keys())
      assert.are.same({ 10, 2, "three" }, d:values())
      assert.are.equal(3, d:len())
    end)

    it("takes another OrderedDict, copying it", function()
      local src = OrderedDict({ { "x", 1 }, { "y", 2 } })
      local d = OrderedDict(src)
      d.z = 3
      src.x = 100
      assert.are.same({ { "x", 1 }, { "y", 2 }, { "z", 3 } }, items(d))
      assert.are.same({ "x", "y" }, src:keys())
    end)

    it("treats a pair whose value is nil as an assignment of nil: skip or remove", function()
      local d = OrderedDict({ { "a", 1 }, { "b" }, { "c", 3 }, { "c", nil } })
      assert.are.same({ "a" }, d:keys())
    end)

    it("rejects anything but pairs, naming the problem", function()
      assert.are.equal("TypeError: OrderedDict: expected an OrderedDict or a sequence of {key, value} pairs, got number",
        err(function() local _ = OrderedDict(5) end))
      assert.are.equal("TypeError: OrderedDict: expected a sequence of {key, value} pairs, got a table with key 'a'",
        err(function() local _ = OrderedDict({ a = 1 }) end))
      assert.are.equal("TypeError: OrderedDict: item 2 must be a {key, value} pair, got string",
        err(function() local _ = OrderedDict({ { "a", 1 }, "b" }) end))
      assert.are.equal("TypeError: OrderedDict: item 1 has a nil key",
        err(function() local _ = OrderedDict({ { nil, 1 } }) end))
      assert.are.equal("TypeError: OrderedDict: item 1 has a NaN key",
        err(function() local _ = OrderedDict({ { 0 / 0, 1 } }) end))
    end)
  end)

  describe("d[key]", function()
    it("keeps insertion order; reassigning keeps the position", function()
      local d = OrderedDict()
      d.c = 1
      d.a = 2
      d["x.y"] = 3
      d[7] = 4
      d.a = 20
      assert.are.same({ { "c", 1 }, { "a", 20 }, { "x.y", 3 }, { 7, 4 } }, items(d))
      assert.are.equal(20, d.a)
      assert.are.equal(3, d["x.y"])
      assert.is_nil(d.missing)
    end)

    it("assigning nil removes; re-adding puts the key last", function()
      local d = OrderedDict({ { "a", 1 }, { "b", 2 }, { "c", 3 } })
      d.a = nil
      assert.is_nil(d.a)
      assert.is_false(d:contains("a"))
      assert.are.same({ "b", "c" }, d:keys())
      d.a = 4
      assert.are.same({ "b", "c", "a" }, d:keys())
      d.zzz = nil                     -- removing an absent key is a no-op
      d[nil] = nil
      assert.are.equal(3, d:len())
    end)

    it("stores false and keys of any type but nil and NaN", function()
      local t = {}
      local d = OrderedDict()
      d.f = false
      d[false] = "no"
      d[t] = "table"
      d[1.5] = "float"
      assert.is_false(d.f)
      assert.is_true(d:contains("f"))
      assert.are.equal("no", d[false])
      assert.are.equal("table", d[t])
      assert.are.equal("float", d[1.5])
      assert.are.same({ "f", false, t, 1.5 }, d:keys())
    end)

    it("rejects nil and NaN keys", function()
      local d = OrderedDict()
      assert.are.equal("TypeError: OrderedDict: a key must not be nil", err(function() d[nil] = 1 end))
      assert.are.equal("TypeError: OrderedDict: a key must not be NaN", err(function() d[0 / 0] = 1 end))
      assert.are.equal(0, d:len())
    end)

    it("keeps entries out of the instance table", function()
      local d = OrderedDict()
      d.a = 1
      assert.is_nil(rawget(d, "a"))
    end)

    it("stays ordered through many removals and additions", function()
      local d = OrderedDict()
      for i = 1, 200 do d["k" .. i] = i end
      for i = 1, 200 do
        if i % 3 ~= 0 then d["k" .. i] = nil end
      end
      for i = 201, 210 do d["k" .. i] = i end
      local want = {}
      for i = 3, 198, 3 do want[#want + 1] = "k" .. i end
      for i = 201, 210 do want[#want + 1] = "k" .. i end
      assert.are.same(want, d:keys())
      assert.are.equal(#want, d:len())
      for i = 1, #want do assert.are.equal(tonumber(want[i]:sub(2)), d[want[i]]) end
      for _, k in ipairs(want) do d[k] = nil end
      assert.are.same({}, d:keys())
      assert.are.equal(0, d:len())
      d.again = 1
      assert.are.same({ "again" }, d:keys())
    end)
  end)

  describe("methods", function()
    local function abc() return OrderedDict({ { "a", 1 }, { "b", 2 }, { "c", 3 } }) end

    it("keys and values are fresh sequences in order", function()
      local d = abc()
      local ks = d:keys()
      ks[1] = "changed"
      assert.are.same({ "a", "b", "c" }, d:keys())
      assert.are.same({ 1, 2, 3 }, d:values())
    end)

    it("items iterates key, value for a generic for", function()
      assert.are.same({ { "a", 1 }, { "b", 2 }, { "c", 3 } }, items(abc()))
    end)

    it("items skips keys removed meanwhile and sees changed values", function()
      local d = abc()
      local seen = {}
      for k, v in d:items() do
        seen[#seen + 1] = k .. "=" .. v
        if k == "a" then
          d.b = nil
          d.c = 30
          d.z = 26                    -- added meanwhile: not visited
        end
      end
      assert.are.same({ "a=1", "c=30" }, seen)
      assert.are.same({ "a", "c", "z" }, d:keys())
    end)

    it("len and contains", function()
      local d = abc()
      assert.are.equal(3, d:len())
      assert.is_true(d:contains("b"))
      assert.is_false(d:contains("q"))
      assert.is_false(d:contains(nil))
    end)

    it("pop removes and returns the value, or the default", function()
      local d = abc()
      assert.are.equal(2, d:pop("b"))
      assert.are.same({ "a", "c" }, d:keys())
      assert.are.equal("dflt", d:pop("b", "dflt"))
      assert.is_nil(d:pop("b", nil))
      assert.is_false(d:pop("b", false))
      assert.are.equal(2, d:len())
    end)

    it("pop of an absent key without a default is a KeyError", function()
      local d = abc()
      assert.are.equal("KeyError: 'x'", err(function() local _ = d:pop("x") end))
      assert.are.equal("KeyError: 5", err(function() local _ = d:pop(5) end))
      assert.are.equal("KeyError: 'it\\'s'", err(function() local _ = d:pop("it's") end))
      assert.are.equal("KeyError: nil", err(function() local _ = d:pop(nil) end))
      assert.are.equal(3, d:len())
    end)

    it("get returns the value or the default", function()
      local d = abc()
      d.f = false
      assert.are.equal(1, d:get("a"))
      assert.is_nil(d:get("q"))
      assert.are.equal(0, d:get("q", 0))
      assert.is_false(d:get("f", true))
    end)

    it("update assigns in order from an OrderedDict or a sequence of pairs", function()
      local d = abc()
      d:update(OrderedDict({ { "c", 30 }, { "d", 4 } }))
      d:update({ { "a", nil }, { "e", 5 }, { "b", 20 } })
      assert.are.same({ { "b", 20 }, { "c", 30 }, { "d", 4 }, { "e", 5 } }, items(d))
      d:update(d)
      assert.are.same({ "b", "c", "d", "e" }, d:keys())
    end)

    it("update checks its argument before changing anything", function()
      local d = abc()
      assert.are.equal("TypeError: update: item 2 must be a {key, value} pair, got number",
        err(function() d:update({ { "z", 26 }, 2 }) end))
      assert.are.equal("TypeError: update: expected an OrderedDict or a sequence of {key, value} pairs, got nil",
        err(function() d:update() end))
      assert.are.equal("TypeError: update: expected a sequence of {key, value} pairs, got a table with key 'k'",
        err(function() d:update({ k = 1 }) end))
      assert.are.same({ "a", "b", "c" }, d:keys())
    end)

    it("copy is shallow and independent", function()
      local inner = {}
      local d = abc()
      d.t = inner
      local c = d:copy()
      c.a = 100
      c.new = 1
      d.b = nil
      assert.are.same({ "a", "b", "c", "t", "new" }, c:keys())
      assert.are.equal(100, c.a)
      assert.are.equal(1, d.a)
      assert.are.equal(inner, c.t)
      assert.is_true(class.is_instance(c, OrderedDict))
    end)
  end)

  describe("keys named like methods", function()
    it("d['keys'] reads the entry; the class reaches the method", function()
      local d = OrderedDict()
      d["keys"] = 5
      d.len = "long"
      assert.are.equal(5, d["keys"])
      assert.are.equal(5, d.keys)
      assert.are.equal("long", d.len)
      assert.are.same({ "keys", "len" }, OrderedDict.keys(d))
      assert.are.equal(2, OrderedDict.len(d))
      assert.are.same({ { "keys", 5 }, { "len", "long" } }, items(d))   -- d:items() is untouched
      d.keys = nil
      assert.are.same({ "len" }, d:keys())
    end)

    it("a key named like a method is an ordinary entry from the constructor too", function()
      local d = OrderedDict({ { "pop", 1 }, { "init", 2 } })
      assert.are.equal(1, d.pop)
      assert.are.equal(2, d.init)
      assert.are.equal(1, OrderedDict.pop(d, "pop"))
      assert.are.equal("function", type(d.pop))
    end)
  end)

  describe("tostring", function()
    it("prints entries in order as a Lua-like table", function()
      local d = OrderedDict()
      assert.are.equal("OrderedDict({})", tostring(d))
      d.b = 1
      d.a = "s"
      d["x.y"] = true
      d[3] = false
      d["end"] = 2
      assert.are.equal('OrderedDict({b = 1, a = "s", ["x.y"] = true, [3] = false, ["end"] = 2})', tostring(d))
    end)

    it("nests, and shows a dictionary inside itself as OrderedDict({...})", function()
      local d = OrderedDict({ { "a", 1 } })
      d.inner = OrderedDict({ { "z", 26 } })
      d.self = d
      assert.are.equal("OrderedDict({a = 1, inner = OrderedDict({z = 26}), self = OrderedDict({...})})", tostring(d))
      assert.are.equal("OrderedDict({a = 1, inner = OrderedDict({z = 26}), self = OrderedDict({...})})", tostring(d))
    end)
  end)

  describe("subclasses", function()
    it("inherit the routing and methods, even when init skips the parent's", function()
      local Named = OrderedDict:extend("Named")
      function Named:init(name) rawset(self, "name", name) end
      local n = Named("params")
      n.w = 1
      n.b = 2
      assert.are.equal("params", n.name)
      assert.are.same({ "w", "b" }, n:keys())
      assert.are.equal("OrderedDict({w = 1, b = 2})", tostring(n))
      assert.is_true(class.is_instance(n, OrderedDict))
    end)
  end)
end)

describe("cell.OrderedDict", function()
  it("is the same class as cell.ordered_dict", function()
    local cell = require "cell"
    assert.are.equal(require "cell.ordered_dict", cell.OrderedDict)
    local d = cell.OrderedDict()
    d.b = 1
    d.a = 2
    assert.are.same({ "b", "a" }, d:keys())
  end)
  it("#d and pairs(d) on Lua 5.4 (LuaJIT takes neither from a table's metatable)", function()
    if #setmetatable({}, { __len = function() return 1 end }) ~= 1 then return end -- LuaJIT
    local d = OrderedDict({ { "x", 1 }, { "y", 2 }, { "z", 3 } })
    d.y = nil
    assert.are.equal(2, #d)
    local seen = {}
    for k, v in pairs(d) do seen[#seen + 1] = k .. "=" .. v end
    assert.are.same({ "x=1", "z=3" }, seen)
  end)
end)
