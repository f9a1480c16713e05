--- cell.class: single-inheritance classes whose metamethods pass down to subclasses (after middleclass).
--
--     local class = require "cell.class"
--     local Base = class("Base")           -- a root class
--     function Base:init(x) self.x = x end
--     Base.__tostring = function(self) return "Base(" .. self.x .. ")" end
--     local Sub = Base:extend("Sub")       -- Sub.super == Base, Sub.name == "Sub"
--     local s = Sub(1)                     -- runs Base.init; tostring(s) == "Base(1)"
--     class.is_instance(s, Base)           --> true
--     Sub:is_subclass_of(Base)             --> true
--
-- How it works, as in middleclass: every class keeps one flat table of
-- instance members (methods, data and metamethods), which is also the
-- metatable of its instances. A subclass starts with a copy of its parent's
-- members; assigning a member on a class stores it there and pushes it down
-- to every subclass that has not declared that member itself, whether the
-- subclass was made before or after the assignment. Assigning `nil` removes a
-- class's own declaration, and the parent's member shows through again.
-- So `__tostring`, `__call`, `__eq`, `__add`, ... work on every subclass, and a
-- method lookup on an instance is one table read.
--
-- Reading a member from a class (`Sub.init`) gives the instance member, so a
-- parent's method is called as `Sub.super.init(self, ...)`. `name` and
-- `super` are the class's own fields; `extend` and `is_subclass_of` are class
-- helpers (see `ClassMeta.__index` for a class that also has instance methods
-- with those names).
--
-- Custom attribute routing: a class may declare `__index` (a function
-- `(self, key)` or a table) and `__newindex` (a function or a table) for its
-- instances. The custom `__index` is consulted first and, when it returns
-- nil, the class's members are looked up, so methods keep working; it must
-- therefore return nil, not raise, for names it does not know. Both are
-- inherited like any member. A class may also declare `__prepare(self, ...)`,
-- run before `init` with the same arguments: a base class sets up state there
-- (with `rawset` when it routes `__newindex`) that subclasses' `init`s can
-- rely on without calling the parent's `init`.
--
-- Instances have one reserved member, `__class` (their class). Written in the
-- Lua subset shared by Lua 5.4 and LuaJIT 2.1.

local raise = require("cell.errors").raise
local class = {}

--- The metatable of every class table.
local ClassMeta = {}

--- Class-level helpers, reached as `Class:extend(...)` and so on.
local statics = {}

--- Members every root class starts with.
local DEFAULTS = {}

--- True when `x` is a class made by this module.
-- @param x any value
-- @treturn boolean
local function is_class(x)
  return type(x) == "table" and getmetatable(x) == ClassMeta
end

--- The member `k` of class `cls` as a user sees it (for `__index`, the
-- function or table the class declared, not the lookup function built from it).
local function member(cls, k)
  if k == "__index" then return rawget(cls, "__index_member") end
  if k == "__class" then return nil end
  return rawget(rawget(cls, "__instance"), k)
end

--- Custom `__index` functions that end with the members' lookup themselves
-- (they return rawget(getmetatable(self), k) when nothing else answers):
-- instances get them unwrapped, one call per read instead of two.
local complete_index = setmetatable({}, { __mode = "k" })

--- The `__index` that instances of a class get: the member table itself, or
-- the custom lookup with the members as the fallback.
local function index_for(dict, custom)
  if custom == nil then return dict end
  if complete_index[custom] then return custom end
  if type(custom) == "function" then
    return function(self, k)
      local v = custom(self, k)
      if v == nil then v = dict[k] end
      return v
    end
  end
  return function(_, k)
    local v = custom[k]
    if v == nil then v = dict[k] end
    return v
  end
end

--- Store member `k` in one class (no propagation).
local function set_member(cls, k, v)
  local dict = rawget(cls, "__instance")
  if k == "__index" then
    rawset(cls, "__index_member", v)
    dict.__index = index_for(dict, v)
  else
    dict[k] = v
  end
end

--- Store member `k` in `cls` and in every subclass below it that has not
-- declared `k` itself.
local function propagate(cls, k, v)
  set_member(cls, k, v)
  for sub in pairs(rawget(cls, "__subclasses")) do
    if not rawget(sub, "__declared")[k] then propagate(sub, k, v) end
  end
end

--- Declare (or, with nil, undeclare) member `k` on `cls`.
local function declare(cls, k, v)
  rawget(cls, "__declared")[k] = (v ~= nil) or nil
  if v == nil then
    local super = rawget(cls, "super")
    if super then v = member(super, k) else v = DEFAULTS[k] end
  end
  propagate(cls, k, v)
end

--- Make a class named `name` below `super` (nil for a root class).
local function new_class(name, super)
  local dict = {}
  local cls = {
    name = name,
    super = super,
    __instance = dict,                              -- members; the instances' metatable
    __declared = {},                                -- keys this class declared itself
    __subclasses = setmetatable({}, { __mode = "k" }), -- direct subclasses (weak)
  }
  if super then
    for k, v in pairs(rawget(super, "__instance")) do
      if k ~= "__index" and k ~= "__class" then dict[k] = v end
    end
    cls.__index_member = rawget(super, "__index_member")
    rawget(super, "__subclasses")[cls] = true
  else
    for k, v in pairs(DEFAULTS) do dict[k] = v end
  end
  dict.__class = cls
  dict.__index = index_for(dict, cls.__index_member)
  return setmetatable(cls, ClassMeta)
end

--- Reading a class: class helpers, then instance members.
-- When a class also has an instance member named like a helper (a container
-- class with an `extend(items)` method, say), the read gives a function that
-- runs the helper when called on a class (`Sub:extend("Name")`) and that
-- class's instance method otherwise (`Parent.extend(self, items)`).
function ClassMeta.__index(cls, k)
  local s = statics[k]
  local m = member(cls, k)
  if s == nil then return m end
  if type(m) ~= "function" then return s end
  return function(self, ...)
    if is_class(self) then return s(self, ...) end
    return m(self, ...)
  end
end

--- Assigning to a class declares an instance member and passes it down.
function ClassMeta.__newindex(cls, k, v)
  if k == "__class" then
    raise("TypeError: class " .. rawget(cls, "name") .. ": __class is reserved for the instances' class")
  end
  if (k == "__index" or k == "__newindex") and v ~= nil
      and type(v) ~= "function" and type(v) ~= "table" then
    raise(("TypeError: class %s: %s must be a function or a table, got %s")
      :format(rawget(cls, "name"), k, type(v)))
  end
  declare(cls, k, v)
end

--- `Class(...)` makes an instance: runs `__prepare(self, ...)` and then
-- `init(self, ...)` when the class has them, and returns the instance.
function ClassMeta.__call(cls, ...)
  local dict = rawget(cls, "__instance")
  local obj = setmetatable({}, dict)
  local prepare = rawget(dict, "__prepare")
  if prepare then prepare(obj, ...) end
  local init = rawget(dict, "init")
  if init then init(obj, ...) end
  return obj
end

--- `tostring(Class)` is "class Name".
function ClassMeta.__tostring(cls)
  return "class " .. rawget(cls, "name")
end

--- An instance prints as "instance of class Name" until its class declares
-- `__tostring`.
function DEFAULTS.__tostring(self)
  return "instance of class " .. rawget(rawget(getmetatable(self), "__class"), "name")
end

--- Make a subclass.
-- @param name the class name (a string), used by `tostring`
-- @return the new class, whose `super` is `self`
function statics.extend(self, name)
  if not is_class(self) then
    raise(("TypeError: extend: call it on a class, as Class:extend(name), got %s"):format(type(self)))
  end
  if type(name) ~= "string" then
    raise(("TypeError: extend: the class name must be a string, got %s"):format(type(name)))
  end
  return new_class(name, self)
end

--- Whether `self` inherits from `other`, directly or further up. A class is
-- not a subclass of itself (as in middleclass); `class.is_instance` does
-- accept the class itself.
-- @param other a class
-- @treturn boolean
function statics.is_subclass_of(self, other)
  if not is_class(self) then
    raise(("TypeError: is_subclass_of: call it on a class, as Class:is_subclass_of(Other), got %s")
      :format(type(self)))
  end
  if not is_class(other) then
    raise(("TypeError: is_subclass_of: the other class must be a class, got %s"):format(type(other)))
  end
  local c = rawget(self, "super")
  while c do
    if c == other then return true end
    c = rawget(c, "super")
  end
  return false
end

--- Whether `obj` is an instance of `cls` or of a subclass of it.
-- @param obj any value
-- @param cls a class
-- @treturn boolean
function class.is_instance(obj, cls)
  if not is_class(cls) then
    raise(("TypeError: is_instance: the class must be a class, got %s"):format(type(cls)))
  end
  local mt = getmetatable(obj)
  if type(mt) ~= "table" then return false end
  local c = rawget(mt, "__class")
  if not is_class(c) or rawget(c, "__instance") ~= mt then return false end
  return c == cls or statics.is_subclass_of(c, cls)
end

--- Whether `x` is a class made by this module.
class.is_class = is_class

--- Mark `fn`, a function to declare as some class's `__index`, as one that
-- falls back to the instance's class members itself (see complete_index).
function class.complete_index(fn)
  complete_index[fn] = true
  return fn
end

--- `class(name [, parent])` makes a root class, or with `parent` the same as
-- `parent:extend(name)`.
return setmetatable(class, {
  __call = function(_, name, parent)
    if type(name) ~= "string" then
      raise(("TypeError: class: the class name must be a string, got %s"):format(type(name)))
    end
    if parent ~= nil and not is_class(parent) then
      raise(("TypeError: class: the parent must be a class, got %s"):format(type(parent)))
    end
    return new_class(name, parent)
  end,
})
