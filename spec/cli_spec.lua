-- cli_spec.lua - the `cell` executable (src/repl/), found at $CELL_BIN:
-- `cell script.lua a b` runs a script with its arg table, lines piped into
-- `cell` go through the REPL as typed lines do (values printed, `_`,
-- multi-line chunks, `?name`), and a failing script exits nonzero with its
-- message on stderr. What only a terminal shows (prompts, Tab, Ctrl-C,
-- history) is in repl_spec.lua.
local H = require "helpers"
local BIN = os.getenv("CELL_BIN") or "bin/cell"


local function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local run = H.run

local function script(text)
  local base = os.tmpname() -- made by the call (Lua 5.4): only its name is wanted
  os.remove(base)
  local path = base .. ".lua"
  write_file(path, text)
  return path
end

--- Pipe text into `cell` with no arguments.
local function repl(text)
  local input = script(text)
  local o, e, rc = run(quote(BIN) .. " < " .. quote(input))
  os.remove(input)
  return o, e, rc
end

local function has_line(text, line)
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do
    if l == line then return true end
  end
  return false
end

--- Whether some line of the REPL's output is exactly value (after any
-- prompt characters a REPL may echo).
local function has_value(text, value)
  for l in (text .. "\n"):gmatch("(.-)\r?\n") do
    local v = l:gsub("^[>%s]*", ""):gsub("%s*$", "")
    if v == value then return true end
  end
  return false
end

describe("the cell executable", function()
  it("exists at $CELL_BIN", function()
    local _, _, rc = run("test -x " .. quote(BIN))
    assert.are.equal(0, rc, BIN .. " is not an executable file (is the REPL built?)")
  end)

  it("runs a script with its arguments in arg and ...", function()
    local path = script([[
print(#arg, arg[1], arg[2])
print(arg[0] ~= nil and arg[0]:match("[^/]+$") or "no arg[0]")
print(select("#", ...), ...)
]])
    local o, e, rc = run(quote(BIN) .. " " .. quote(path) .. " a b")
    assert.are.equal(0, rc, e)
    assert.is_true(has_line(o, "2\ta\tb"), o)
    assert.is_true(has_line(o, path:match("[^/]+$")), o)
    assert.is_true(has_line(o, "2\ta\tb"), o)
    os.remove(path)
  end)

  it("scripts can require cell", function()
    local path = script([[
local cell = require "cell"
local t = cell.ones({ 2, 2 }) * 3
print(t:sum():item() == 12, tostring(t.dtype))
]])
    local o, e, rc = run(quote(BIN) .. " " .. quote(path))
    assert.are.equal(0, rc, e)
    assert.is_true(has_line(o, "true\tFloat32"), o .. e)
    os.remove(path)
  end)

  it("prints the value of an expression piped into it", function()
    local o, e, rc = repl("1+1\n")
    assert.are.equal(0, rc, e)
    assert.is_true(has_value(o, "2"), o)
  end)

  it("keeps globals from line to line", function()
    local o, e, rc = repl("x = 21\nx * 2\n")
    assert.are.equal(0, rc, e)
    assert.is_true(has_value(o, "42"), o)
  end)

  it("runs statements and prints several values", function()
    local o, e, rc = repl("print('hello')\n'a', 'b'\n")
    assert.are.equal(0, rc, e)
    assert.is_true(has_value(o, "hello"), o)
    assert.is_true(has_value(o, "a\tb"), o)
  end)

  it("prints a tensor with its MindSpore text", function()
    local o, e, rc = repl("c = require 'cell'\nc.ones({2})\n")
    assert.are.equal(0, rc, e)
    assert.is_truthy(o:find("Tensor(shape=[2], dtype=Float32, value=", 1, true), o .. e)
  end)

  it("reports an error on a line and goes on with the next", function()
    local o, e, rc = repl("error('boom')\n3 + 4\n")
    assert.is_truthy((o .. e):find("boom", 1, true), o .. e)
    assert.is_true(has_value(o, "7"), o .. e)
    assert.are.equal("number", type(rc))
  end)

  it("reports a cell error on a line with its exception name", function()
    local o, e = repl("c = require 'cell'\nc.ones({2}) + c.ones({3})\n5 * 5\n")
    assert.is_truthy((o .. e):find("ValueError:", 1, true), o .. e)
    assert.is_true(has_value(o, "25"), o .. e)
  end)

  it("prints tables readably and keeps the last result in _", function()
    local o, e, rc = repl("{1, 2, {a = 3}, b = 'x'}\n20 + 1\n_ * 2\n")
    assert.are.equal(0, rc, e)
    assert.is_true(has_value(o, '{1, 2, {a = 3}, b = "x"}'), o)
    assert.is_true(has_value(o, "42"), o)
  end)

  it("reads a chunk over several lines and accepts a leading =", function()
    local o, e, rc = repl("function f(x)\n  return x + 1\nend\nf(1)\n= 2 * 5\n")
    assert.are.equal(0, rc, e)
    assert.is_true(has_value(o, "2"), o)
    assert.is_true(has_value(o, "10"), o)
  end)

  it("prints nil only for an explicit nil", function()
    local o, e, rc = repl("x = nil\nprint('-')\nnil\n")
    assert.are.equal(0, rc, e)
    assert.are.equal("-\nnil\n", o)
  end)

  it("answers ?name with one-line documentation", function()
    local o, e, rc = repl("?cell.zeros\n?nosuch\n")
    assert.are.equal(0, rc, e)
    assert.is_true(has_line(o, "cell.zeros(shape [, dtype])"), o)
    assert.is_true(has_value(o, "nosuch: no such name (it is nil)"), o)
  end)

  it("reports an error in a result's __tostring with a traceback and goes on", function()
    local o, e = repl("setmetatable({}, {__tostring = function() error('oops') end})\n6 * 7\n")
    assert.is_truthy(e:find("error printing the result: stdin:1: oops", 1, true), e)
    assert.is_truthy(e:find("stack traceback:", 1, true), e)
    assert.is_true(has_value(o, "42"), o)
  end)

  it("exits 0 after a script that succeeds", function()
    local path = script("local x = 1\n")
    local _, e, rc = run(quote(BIN) .. " " .. quote(path))
    assert.are.equal(0, rc, e)
    os.remove(path)
  end)

  it("exits nonzero with the message on stderr when a script fails", function()
    local path = script("local x = 1\nerror('kaboom')\n")
    local o, e, rc = run(quote(BIN) .. " " .. quote(path))
    assert.are_not.equal(0, rc)
    assert.is_truthy(e:find("kaboom", 1, true), "stderr: " .. e .. " stdout: " .. o)
    os.remove(path)
  end)

  it("exits nonzero on a cell error in a script", function()
    local path = script("local cell = require 'cell'\nlocal t = cell.zeros({ -1 })\n")
    local _, e, rc = run(quote(BIN) .. " " .. quote(path))
    assert.are_not.equal(0, rc)
    assert.is_truthy(e:find("ValueError:", 1, true), e)
    os.remove(path)
  end)

  it("exits nonzero on a syntax error and on a missing script", function()
    local path = script("local = 1\n")
    local _, e, rc = run(quote(BIN) .. " " .. quote(path))
    assert.are_not.equal(0, rc)
    assert.is_true(#e > 0)
    os.remove(path)
    local _, _, rc2 = run(quote(BIN) .. " /nonexistent/dir/none.lua")
    assert.are_not.equal(0, rc2)
  end)

  it("passes os.exit's status through", function()
    local path = script("os.exit(3)\n")
    local _, _, rc = run(quote(BIN) .. " " .. quote(path))
    assert.are.equal(3, rc)
    os.remove(path)
  end)

  it("has cell loaded for -e, as the prompt has", function()
    local o, e, rc = run(quote(BIN) .. " -e 'print(cell.ones({ 2 }):sum():item() == 2)'")
    assert.are.equal(0, rc, e)
    assert.are.equal("true\n", o)
    -- a script still gets no global it did not ask for
    local path = script("print(cell)")
    o = run(quote(BIN) .. " " .. quote(path))
    os.remove(path)
    assert.are.equal("nil\n", o)
  end)

  it("shows the full traceback at the prompt with CELL_TRACEBACK=full", function()
    local text = "cell.nn.Dense(3, 4)(cell.ones({ 2 }))\n"
    local _, short = repl(text)
    assert.is_falsy(short:find("dense.lua", 1, true), short)
    assert.is_truthy(short:find("frames? in cell's files hidden"), short)
    local input = script(text)
    local _, full = run("CELL_TRACEBACK=full " .. quote(BIN) .. " < " .. quote(input))
    os.remove(input)
    assert.is_truthy(full:find("lua/cell/nn/dense.lua:%d+: in "), full)
  end)
end)
