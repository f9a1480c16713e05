-- class_spec.lua - cell.class: root classes, extend, construction and init,
-- super, inheritance of methods and metamethods (middleclass propagation),
-- custom __index/__newindex routing, is_instance/is_subclass_of, and the
-- exact error texts. Lua 5.4 / LuaJIT common subset (no __len, __pairs,
-- __close, integer division or bitwise metamethods).
local class = require "cell.class"

local H = require "helpers"

--- The message of the error fn(...) raises, checked to point at this spec.
local function err(fn, ...) return H.caller_error("class_spec%.lua", fn, ...) end

describe("cell.class", function()
  describe("root classes", function()
    it("have a name, no super, and print as 'class Name'", function()
      local Base = class("Base")
      assert.are.equal("Base", Base.name)
      assert.is_nil(Base.super)
      assert.are.equal("class Base", tostring(Base))
      assert.is_true(class.is_class(Base))
    end)

    it("class(name, parent) is parent:extend(name)", function()
      local Base = class("Base")
      local Sub = class("Sub", Base)
      assert.are.equal(Base, Sub.super)
      assert.is_true(Sub:is_subclass_of(Base))
    end)

    it("reject a non-string name and a non-class parent", function()
      assert.are.equal("TypeError: class: the class name must be a string, got number",
        err(function() local _ = class(42) end))
      assert.are.equal("TypeError: class: the class name must be a string, got nil",
        err(function() local _ = class() end))
      assert.are.equal("TypeError: class: the parent must be a class, got table",
        err(function() local _ = class("X", {}) end))
    end)
  end)

  describe("extend", function()
    it("makes a subclass with name, super and tostring", function()
      local Base = class("Base")
      local Sub = Base:extend("Sub")
      local Leaf = Sub:extend("Leaf")
      assert.are.equal("Sub", Sub.name)
      assert.are.equal(Base, Sub.super)
      assert.are.equal(Sub, Leaf.super)
      assert.are.equal(Base, Leaf.super.super)
      assert.are.equal("class Leaf", tostring(Leaf))
    end)

    it("requires a string name", function()
      local Base = class("Base")
      assert.are.equal("TypeError: extend: the class name must be a string, got number",
        err(function() local _ = Base:extend(1) end))
      assert.are.equal("TypeError: extend: the class name must be a string, got nil",
        err(function() local _ = Base:extend() end))
      assert.are.equal("TypeError: extend: the class name must be a string, got table",
        err(function() local _ = Base:extend({}) end))
    end)

    it("explains a call with a dot instead of a colon", function()
      local Base = class("Base")
      assert.are.equal("TypeError: extend: call it on a class, as Class:extend(name), got string",
        err(function() local _ = Base.extend("Sub") end))
    end)
  end)

  describe("construction", function()
    it("calls init with the arguments and returns the instance", function()
      local P = class("P")
      function P:init(x, y) self.x, self.y = x, y end
      local p = P(1, 2)
      assert.are.equal(1, p.x)
      assert.are.equal(2, p.y)
    end)

    it("works without init", function()
      local E = class("E")
      local e = E(1, 2)
      assert.are.equal("table", type(e))
      assert.is_nil(next(e))
    end)

    it("gives instances the class's instance metatable", function()
      local A = class("A")
      local B = A:extend("B")
      local a1, a2, b = A(), A(), B()
      assert.are.equal(getmetatable(a1), getmetatable(a2))
      assert.are_not.equal(getmetatable(a1), getmetatable(b))
      assert.are.equal(A, rawget(getmetatable(a1), "__class"))
      assert.are.equal(A, a1.__class)
      assert.are.equal(B, b.__class)
    end)

    it("finds an inherited init, also one defined after the subclass", function()
      local Base = class("Base")
      local Sub = Base:extend("Sub")
      function Base:init(v) self.v = v end
      assert.are.equal(7, Sub(7).v)
      local Late = Base:extend("Late")
      assert.are.equal(8, Late(8).v)
    end)

    it("lets an init call its parent's through super", function()
      local Base = class("Base")
      function Base:init(a) self.a = a end
      local Sub = Base:extend("Sub")
      function Sub:init(a, b)
        Sub.super.init(self, a)
        self.b = b
      end
      local s = Sub(1, 2)
      assert.are.equal(1, s.a)
      assert.are.equal(2, s.b)
    end)

    it("runs __prepare before init, with the same arguments", function()
      local log = {}
      local Base = class("Base")
      function Base:__prepare(...)
        rawset(self, "ready", true)
        log[#log + 1] = "prepare " .. table.concat({ ... }, ",")
      end
      local Sub = Base:extend("Sub")
      function Sub:init(a, b)   -- does not call Base.init: the base state is there anyway
        log[#log + 1] = "init " .. a .. "," .. b .. " ready=" .. tostring(self.ready)
      end
      Sub(1, 2)
      assert.are.same({ "prepare 1,2", "init 1,2 ready=true" }, log)
    end)
  end)

  describe("methods", function()
    it("are inherited through the chain and overridable", function()
      local A = class("A")
      function A:who() return "A" end
      function A:hello() return "hello from " .. self:who() end
      local B = A:extend("B")
      local C = B:extend("C")
      function C:who() return "C" end
      assert.are.equal("hello from A", B():hello())
      assert.are.equal("hello from C", C():hello())
      assert.are.equal("A", A():who())
    end)

    it("defined later on a parent reach existing subclasses, but not overrides", function()
      local A = class("A")
      local B = A:extend("B")
      local C = B:extend("C")
      function B:f() return "B" end
      function A:f() return "A" end     -- must not clobber B's own f (nor C's inherited one)
      function A:g() return "gA" end
      assert.are.equal("A", A():f())
      assert.are.equal("B", B():f())
      assert.are.equal("B", C():f())
      assert.are.equal("gA", C():g())
    end)

    it("removed from a subclass show the parent's again", function()
      local A = class("A")
      function A:f() return "A" end
      local B = A:extend("B")
      local C = B:extend("C")
      function B:f() return "B" end
      assert.are.equal("B", C():f())
      B.f = nil
      assert.are.equal("A", B():f())
      assert.are.equal("A", C():f())
      A.f = nil
      assert.is_nil(C().f)
    end)

    it("are readable from the class, data members too", function()
      local A = class("A")
      function A:f() return 1 end
      A.size = 3
      local B = A:extend("B")
      assert.are.equal(A.f, B.f)
      assert.are.equal(3, B.size)
      assert.are.equal(3, B().size)
      assert.is_nil(A.missing)
      assert.is_nil(A().missing)
    end)

    it("do not shadow instance fields", function()
      local A = class("A")
      A.x = "class"
      local a = A()
      a.x = "instance"
      assert.are.equal("instance", a.x)
      assert.are.equal("class", A().x)
    end)
  end)

  describe("metamethods", function()
    local function Vec()
      local V = class("V")
      function V:init(x) self.x = x end
      return V
    end

    it("__tostring is inherited by subclasses made before and after it is set", function()
      local V = Vec()
      local Before = V:extend("Before")
      V.__tostring = function(self) return "V(" .. self.x .. ")" end
      local After = V:extend("After")
      assert.are.equal("V(1)", tostring(V(1)))
      assert.are.equal("V(2)", tostring(Before(2)))
      assert.are.equal("V(3)", tostring(After(3)))
      assert.are.equal("V(4)", tostring(After:extend("Deeper")(4)))
    end)

    it("instances print as 'instance of class Name' by default", function()
      local A = class("A")
      local B = A:extend("B")
      assert.are.equal("instance of class A", tostring(A()))
      assert.are.equal("instance of class B", tostring(B()))
    end)

    it("a subclass's own metamethod is not replaced by a later parent one", function()
      local V = Vec()
      local S = V:extend("S")
      function S:__tostring() return "S" end
      function V:__tostring() return "V" end
      assert.are.equal("S", tostring(S(1)))
      assert.are.equal("V", tostring(V(1)))
      S.__tostring = nil
      assert.are.equal("V", tostring(S(1)))
    end)

    it("__call, __eq, __lt, __le, __add, __sub, __mul, __unm, __concat pass down", function()
      local V = Vec()
      local S = V:extend("S")
      V.__call = function(self, y) return self.x + y end
      V.__eq = function(a, b) return a.x == b.x end
      V.__lt = function(a, b) return a.x < b.x end
      V.__le = function(a, b) return a.x <= b.x end
      V.__add = function(a, b) return S(a.x + b.x) end
      V.__sub = function(a, b) return S(a.x - b.x) end
      V.__mul = function(a, b) return S(a.x * (type(b) == "number" and b or b.x)) end
      V.__unm = function(a) return S(-a.x) end
      V.__concat = function(a, b) return tostring(a.x) .. "|" .. tostring(b.x) end
      local T = S:extend("T")
      local a, b = S(2), T(3)
      assert.are.equal(12, a(10))
      assert.are.equal(13, b(10))
      assert.is_true(S(5) == T(5))
      assert.is_false(S(5) == T(6))
      assert.is_true(a < b)
      assert.is_true(a <= S(2))
      assert.are.equal(5, (a + b).x)
      assert.are.equal(-1, (a - b).x)
      assert.are.equal(8, (a * 4).x)
      assert.are.equal(-2, (-a).x)
      assert.are.equal("2|3", a .. b)
    end)
  end)

  describe("custom __index and __newindex", function()
    -- A miniature of nn.Cell's routing: attributes in a private registry,
    -- methods from the class when the registry has nothing.
    local function Routed()
      local R = class("R")
      function R:__prepare() rawset(self, "_attrs", {}) end
      R.__index = function(self, k) return rawget(self, "_attrs")[k] end
      R.__newindex = function(self, k, v) rawget(self, "_attrs")[k] = v end
      function R:names()
        local out = {}
        for k in pairs(rawget(self, "_attrs")) do out[#out + 1] = k end
        table.sort(out)
        return out
      end
      return R
    end

    it("route reads and writes, with methods as the fallback", function()
      local R = Routed()
      local r = R()
      r.a = 1
      r.b = 2
      assert.is_nil(rawget(r, "a"))
      assert.are.equal(1, r.a)
      assert.are.same({ "a", "b" }, r:names())
      assert.is_nil(r.nothing)
    end)

    it("see attributes before methods", function()
      local R = Routed()
      local r = R()
      r.names = "shadowed"
      assert.are.equal("shadowed", r.names)
      assert.are.same({ "names" }, R.names(r))
    end)

    it("are inherited by subclasses made before and after", function()
      local R = class("R")
      local Before = R:extend("Before")
      function R:__prepare() rawset(self, "_attrs", {}) end
      R.__index = function(self, k) return rawget(self, "_attrs")[k] end
      R.__newindex = function(self, k, v) rawget(self, "_attrs")[k] = "<" .. tostring(v) .. ">" end
      function R:m() return "m" end
      local After = Before:extend("After")
      for _, C in ipairs({ Before, After }) do
        local o = C()
        o.z = 1
        assert.is_nil(rawget(o, "z"))
        assert.are.equal("<1>", o.z)
        assert.are.equal("m", o:m())
      end
      assert.are.equal(R.__index, After.__index)
    end)

    it("run the subclass's init after the base state is set up", function()
      local R = Routed()
      local Net = R:extend("Net")
      function Net:init(n) self.n = n end
      local net = Net(4)
      assert.are.equal(4, net.n)
      assert.are.same({ "n" }, net:names())
    end)

    it("may be a table for __index", function()
      local A = class("A")
      A.__index = { extra = "from table" }
      function A:m() return "m" end
      local a = A()
      assert.are.equal("from table", a.extra)
      assert.are.equal("m", a:m())
    end)

    it("a subclass may override or drop the parent's __index", function()
      local R = Routed()
      local Plain = R:extend("Plain")
      function Plain:__prepare() end
      Plain.__index = nil        -- back to the parent's
      local Own = R:extend("Own")
      Own.__index = function(_, k) return "own " .. tostring(k) end
      local p = Plain()
      rawset(p, "_attrs", { q = 1 })
      assert.are.equal(1, p.q)
      assert.are.equal("own q", Own().q)
      R.__index = nil
      R.__newindex = nil
      local r = R()
      r.x = 1
      assert.are.equal(1, rawget(r, "x"))
      assert.are.same({}, r:names())
      assert.is_nil(r.q)
      assert.are.equal("own q", Own().q)
    end)

    it("reject values that are neither functions nor tables", function()
      local A = class("A")
      assert.are.equal("TypeError: class A: __index must be a function or a table, got string",
        err(function() A.__index = "x" end))
      assert.are.equal("TypeError: class A: __newindex must be a function or a table, got number",
        err(function() A.__newindex = 1 end))
    end)

    it("keep __class reserved", function()
      local A = class("A")
      assert.are.equal("TypeError: class A: __class is reserved for the instances' class",
        err(function() A.__class = 1 end))
    end)
  end)

  describe("is_instance and is_subclass_of", function()
    local A = class("A")
    local B = A:extend("B")
    local C = B:extend("C")
    local Other = class("Other")

    it("is_instance accepts the class and its ancestors", function()
      local c = C()
      assert.is_true(class.is_instance(c, C))
      assert.is_true(class.is_instance(c, B))
      assert.is_true(class.is_instance(c, A))
      assert.is_false(class.is_instance(c, Other))
      assert.is_false(class.is_instance(A(), B))
    end)

    it("is_instance is false for non-instances", function()
      assert.is_false(class.is_instance({}, A))
      assert.is_false(class.is_instance("s", A))
      assert.is_false(class.is_instance(1, A))
      assert.is_false(class.is_instance(nil, A))
      assert.is_false(class.is_instance(A, A))
      assert.is_false(class.is_instance(setmetatable({}, { __class = A }), A))
    end)

    it("is_subclass_of walks the chain and is not reflexive", function()
      assert.is_true(C:is_subclass_of(A))
      assert.is_true(C:is_subclass_of(B))
      assert.is_true(B:is_subclass_of(A))
      assert.is_false(A:is_subclass_of(B))
      assert.is_false(A:is_subclass_of(A))
      assert.is_false(C:is_subclass_of(Other))
    end)

    it("raise clear errors for non-classes", function()
      assert.are.equal("TypeError: is_instance: the class must be a class, got table",
        err(function() local _ = class.is_instance(A(), {}) end))
      assert.are.equal("TypeError: is_instance: the class must be a class, got nil",
        err(function() local _ = class.is_instance(A()) end))
      assert.are.equal("TypeError: is_subclass_of: the other class must be a class, got string",
        err(function() local _ = B:is_subclass_of("A") end))
      assert.are.equal(
        "TypeError: is_subclass_of: call it on a class, as Class:is_subclass_of(Other), got table",
        err(function() local _ = B.is_subclass_of(B(), A) end))
      assert.is_false(class.is_class({}))
      assert.is_false(class.is_class(A()))
    end)
  end)

  describe("instance methods named like class helpers", function()
    it("extend stays the class helper on classes and the method on instances", function()
      local List = class("List")
      function List:init() self.items = {} end
      function List:extend(items)
        for _, v in ipairs(items) do self.items[#self.items + 1] = v end
        return self
      end
      local Sub = List:extend("Sub")      -- the class helper
      function Sub:extend(items)          -- an override calling the parent's method
        List.extend(self, items)
        self.items[#self.items + 1] = "!"
        return self
      end
      assert.are.equal("class Sub", tostring(Sub))
      assert.are.equal(List, Sub.super)
      assert.are.same({ 1, 2 }, List():extend({ 1, 2 }).items)
      assert.are.same({ 1, "!" }, Sub():extend({ 1 }).items)
      local Leaf = Sub:extend("Leaf")
      assert.are.equal(Sub, Leaf.super)
      assert.are.same({ 3, "!" }, Leaf():extend({ 3 }).items)
    end)
  end)
end)
