-- args_spec.lua - cell.util.args (lua/cell/util/args.lua): the one parser
-- of optional arguments: positional, a trailing options table, or both;
-- which tables are options; unknown names, names given twice and too many
-- values as TypeErrors that point at the caller's line.
local H = require "helpers"
local args = require "cell.util.args"

local NAMES = { "prefix", "recurse", "flags", values = { "flags" }, aliases = { rec = "recurse" } }

--- A function with MindSpore-style optional arguments, as a method has them.
local function f(...)
  local a, b, c = args.parse("f", NAMES, 2, select("#", ...), ...)
  return { a, b, c }
end

local function err(fn, ...) return H.caller_error("args_spec%.lua", fn, ...) end

describe("cell.util.args", function()
  it("takes the values positionally, as one options table, or positional values then a table", function()
    assert.are.same({ "m.", false }, f("m.", false))
    assert.are.same({ "m.", false }, f({ prefix = "m.", recurse = false }))
    assert.are.same({ "m.", false }, f("m.", { recurse = false }))
    assert.are.same({ nil, false }, f(nil, { recurse = false }))
    assert.are.same({}, f())
    assert.are.same({}, f({}))
  end)

  it("takes a list as a value, and a plain table as a value where the name says so", function()
    assert.are.same({ { 1, 2 } }, f({ 1, 2 }))
    assert.are.same({ "m.", true, { x = 1 } }, f("m.", true, { x = 1 }))
    assert.are.same({ nil, nil, { x = 1 } }, f({ flags = { x = 1 } }))
    local obj = setmetatable({}, {})
    assert.are.same({ obj }, f(obj))
  end)

  it("asks value_if whether a plain table in a position is that argument's value", function()
    local names = { "callbacks", "verbose", value_if = { callbacks = function(t) return t.on_end ~= nil end } }
    local cb = { on_end = function() end }
    local function g(...) return { args.parse("g", names, 2, select("#", ...), ...) } end
    assert.are.same({ cb }, g(cb))
    assert.are.same({ nil, true }, g({ verbose = true }))
    assert.are.same({ cb, true }, g(cb, { verbose = true }))
  end)

  it("accepts aliases of option names", function()
    assert.are.same({ nil, false }, f({ rec = false }))
  end)

  it("names an unknown option, a name given twice and one value too many, at the caller's line", function()
    assert.are.equal("TypeError: f() got an unexpected keyword argument 'prepend'; the options are prefix, recurse, "
      .. "flags", err(function() f("m.", { prepend = true }) end))
    assert.are.equal("TypeError: f() got an unexpected keyword argument 'a'; the options are prefix, recurse, flags",
      err(function() f({ b = 1, a = 2 }) end))
    assert.are.equal("TypeError: f() got multiple values for argument 'prefix'", err(function() f("m.", { prefix = "x" }) end))
    assert.are.equal("TypeError: f() got multiple values for argument 'recurse'",
      err(function() f({ rec = true, recurse = false }) end))
    assert.are.equal("TypeError: f() takes at most 3 optional arguments, but 4 were given", err(function() f(1, 2, 3, 4) end))
    local function one(...)
      local a = args.parse("one", { "a" }, 2, select("#", ...), ...)
      return a -- (not a tail call: the level counts this frame)
    end
    assert.are.equal("TypeError: one() takes at most 1 optional argument, but 2 were given",
      err(function() one(1, 2) end))
    local function none(...)
      args.parse("none", {}, 2, select("#", ...), ...)
    end
    assert.are.equal("TypeError: none() takes no optional arguments, but 1 was given", err(function() none(1) end))
    assert.are.equal("TypeError: none() got an unexpected keyword argument 'x'; it takes no options",
      err(function() none({ x = 1 }) end))
  end)

  it("is_options and has_options say which tables are options", function()
    assert.is_true(args.is_options({}))
    assert.is_true(args.is_options({ a = 1 }))
    assert.is_false(args.is_options({ 1 }))
    assert.is_false(args.is_options(setmetatable({}, {})))
    assert.is_false(args.is_options("x"))
    assert.is_true(args.has_options(NAMES, 2, "m.", { recurse = true }))
    assert.is_false(args.has_options(NAMES, 3, "m.", true, { x = 1 }))
    assert.is_false(args.has_options(NAMES, 0))
  end)

  it("counts trailing nils as absent, as Lua callers mean them", function()
    local t, npos = args.named("g", NAMES, 0, 5, "p", nil, nil, nil, nil)
    assert.are.same({ prefix = "p" }, t)
    assert.are.equal(1, npos)
    local ok, msg = pcall(args.named, "g", NAMES, 0, 5, "p", 1, 2, 3, nil)
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("TypeError: g() takes at most 3 optional arguments, but 4 were given", 1, true), msg)
  end)

  it("named returns a table and the count of positional values; errors name the argument", function()
    local t, npos = args.named("g", NAMES, 0, 2, "p", { flags = 1 })
    assert.are.same({ prefix = "p", flags = 1 }, t)
    assert.are.equal(1, npos)
    local ok, msg = pcall(args.named, "g", NAMES, 0, 1, { bad = 1 })
    assert.is_false(ok)
    assert.are.equal("TypeError: g() got an unexpected keyword argument 'bad'; the options are prefix, recurse, flags",
      (tostring(msg):gsub("^[^:]*:%d+: ", "")))
  end)
end)
