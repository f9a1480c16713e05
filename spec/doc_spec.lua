-- doc_spec.lua - cell.doc, the documentation `?name` prints: the reference
-- entries of docs/reference (signature and first sentence, or the whole
-- entry), and for values with no entry LDoc comments read from source
-- files, the table of the engine's C functions (which must cover every one
-- of them), classes, modules and other values.
local cell = require "cell"
local core = require "cell.core"
local doc = require "cell.doc"

local function write_file(text)
  local base = os.tmpname() -- made by the call (Lua 5.4): only its name is wanted
  os.remove(base)
  local path = base .. ".lua"
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

local SOURCE = [[
#!/usr/bin/env lua
--- A module for the spec. It has two sentences.
-- And a second line.
local class = require "cell.class"
local M = {}

--- Add two numbers, the second
-- defaulting to one. More text here.
-- @param a a number
function M.add(a, b) return a + (b or 1) end

-- not an LDoc comment
function M.plain() end

function M.bare() end

--- Scale a value.
--
-- Details after a blank comment line.
function M:scale(x, ...) return x end

--- Keep 0.5 of the values, e.g. half of them. Then more.
function M.keep() end

local Thing = class("Thing")
M.Thing = Thing

--- Thing(size): make a thing.
function Thing:init(size) self.size = size end

return M
]]

describe("cell.doc", function()
  local path, mod
  setup(function()
    path = write_file(SOURCE)
    mod = assert(loadfile(path))()
    -- these cases are about values with no reference entry: read none
    doc.reference_dir = "/nonexistent/reference"
    doc.reload()
  end)
  teardown(function()
    os.remove(path)
    doc.reference_dir = nil
    doc.reload()
  end)

  describe("comments in source files", function()
    it("reads the first sentence of the --- comment above a line", function()
      local info = debug.getinfo(mod.add, "S")
      assert.are.equal("Add two numbers, the second defaulting to one.", doc.comment_above(path, info.linedefined))
      info = debug.getinfo(mod.scale, "S")
      assert.are.equal("Scale a value.", doc.comment_above(path, info.linedefined))
    end)

    it("does not end the sentence at an abbreviation or a decimal", function()
      local info = debug.getinfo(mod.keep, "S")
      assert.are.equal("Keep 0.5 of the values, e.g. half of them.", doc.comment_above(path, info.linedefined))
    end)

    it("gives nil without an LDoc comment, a file or a line", function()
      assert.is_nil(doc.comment_above(path, debug.getinfo(mod.plain, "S").linedefined))
      assert.is_nil(doc.comment_above(path, debug.getinfo(mod.bare, "S").linedefined))
      assert.is_nil(doc.comment_above("/nonexistent/file.lua", 3))
      assert.is_nil(doc.comment_above(nil, 3))
    end)

    it("reads a file's header comment, after a #! line", function()
      assert.are.equal("A module for the spec.", doc.header(path))
      assert.is_nil(doc.header("/nonexistent/file.lua"))
    end)
  end)

  describe("describe", function()
    it("documents a Lua function with its parameters", function()
      assert.are.equal("m.add(a, b)\n  Add two numbers, the second defaulting to one.", doc.describe(mod.add, "m.add"))
    end)

    it("leaves out the receiver when the name is written with ':'", function()
      assert.are.equal("m:scale(x, ...)\n  Scale a value.", doc.describe(mod.scale, "m:scale"))
      assert.are.equal("m.scale(self, x, ...)\n  Scale a value.", doc.describe(mod.scale, "m.scale"))
    end)

    it("says where an undocumented function is defined", function()
      local s = doc.describe(mod.bare, "m.bare")
      assert.is_truthy(s:find("^m%.bare%(%)\n  No documentation comment %(defined at .*:%d+%)%.$"), s)
      local f = assert(load("return function(x) end", "=stdin"))()
      assert.are.equal("f(x)\n  Defined in this session (stdin:1), with no documentation.", doc.describe(f, "f"))
    end)

    it("documents the engine's C functions from its table", function()
      assert.are.equal("cell.zeros" .. doc.C["cell.zeros"][1] .. "\n  " .. doc.C["cell.zeros"][2],
        doc.describe(cell.zeros, "cell.zeros"))
      local t = cell.ones({ 2 })
      local s = doc.describe(t.sum, "t:sum")
      assert.is_truthy(s:find("^Tensor:sum%("), s)
      -- the same function reached as cell.ops.sum
      assert.are.equal(s, doc.describe(cell.ops.sum, "cell.ops.sum"))
    end)

    it("describes an in-place method from its out-of-place form", function()
      local s = doc.describe(core.Tensor.add_, "t:add_")
      assert.is_truthy(s:find("^Tensor:add_%(other%)\n  In place: elementwise t %+ other"), s)
      assert.is_truthy(s:find("Changes t and returns it.", 1, true), s)
    end)

    it("says so for a C function that is not cell's", function()
      local s = doc.describe(print, "print")
      assert.is_truthy(s:find("^print%(%.%.%.%)\n  A C function %(not cell's%)"), s)
    end)

    it("documents a class from its header or its init", function()
      assert.are.equal("class m.Thing(size)\n  Thing(size): make a thing.", doc.describe(mod.Thing, "m.Thing"))
      local s = doc.describe(cell.nn.Dense, "cell.nn.Dense")
      assert.is_truthy(s:find("^class cell%.nn%.Dense%(in_channels, out_channels"), s)
      assert.is_truthy(s:find("\n  cell%.nn%.Dense: the fully connected layer"), s)
    end)

    it("documents a module from its header", function()
      local s = doc.describe(cell.nn, "cell.nn")
      assert.is_truthy(s:find("^module cell%.nn\n  cell%.nn: "), s)
    end)

    it("describes instances, tensors, Parameters, dtypes and plain values", function()
      local net = cell.nn.Dense(2, 3)
      assert.is_truthy(doc.describe(net, "net"):find("^net: an instance of Dense\n  cell%.nn%.Dense: "))
      assert.is_truthy(doc.describe(cell.ones({ 2, 3 }), "t")
        :find("^t: a Tensor of shape %[2, 3%] and dtype Float32\n  An n%-dimensional array"))
      assert.is_truthy(doc.describe(net.weight, "net.weight")
        :find("^net%.weight: a Parameter named 'weight' of shape %[3, 2%] and dtype Float32"))
      assert.are.equal("cell.float64: the dtype Float64 (8 bytes per element, floating point)",
        doc.describe(cell.float64, "cell.float64"))
      assert.are.equal('v: a string, "hi"', doc.describe("hi", "v"))
      assert.are.equal("n: a number, 3", doc.describe(3, "n"))
      assert.are.equal("t: a table with 2 entries", doc.describe({ 1, 2 }, "t"))
      assert.are.equal("t: a table with 1 entry", doc.describe({ 1 }, "t"))
      assert.is_truthy(doc.describe(cell.Tensor, "cell.Tensor"):find("^cell%.Tensor: the table of tensor methods\n"))
    end)
  end)

  describe("the table of C functions", function()
    --- The canonical names of the engine's C functions: cell.<f> for the
    -- module functions, Tensor:<m> for the methods.
    local function c_functions()
      local names = {}
      for k, v in pairs(core) do
        if type(v) == "function" and k:sub(1, 1) ~= "_" and debug.getinfo(v, "S").what == "C" then
          names[#names + 1] = "cell." .. k
        end
      end
      for k, v in pairs(core.Tensor) do
        if type(v) == "function" and k:sub(1, 1) ~= "_" and debug.getinfo(v, "S").what == "C"
            and doc.c_name(v) == "Tensor:" .. k then
          names[#names + 1] = "Tensor:" .. k
        end
      end
      table.sort(names)
      return names
    end

    it("has a line for every C function of cell.core and every C tensor method", function()
      local missing = {}
      for _, name in ipairs(c_functions()) do
        local e = doc.C[name] or doc.C[name:match("^(Tensor:.+)_$") or ""]
        if not e then missing[#missing + 1] = name end
      end
      assert.are.same({}, missing, "add these to the table M.C in lua/cell/doc.lua: " .. table.concat(missing, ", "))
    end)

    it("names only functions that exist, each with a signature and a sentence", function()
      for name, e in pairs(doc.C) do
        assert.are.equal("string", type(e[1]), name)
        assert.is_truthy(e[2]:find("^[%u%d].*[%.%)]$"), name .. ": " .. e[2])
        if name:match("^cell%.[%w_]+$") then
          assert.are.equal("function", type(core[name:sub(6)]), name)
        elseif name:match("^Tensor:") then
          assert.are.equal("function", type(core.Tensor[name:sub(8)]), name)
        end
      end
    end)
  end)
end)

describe("cell.doc with the reference", function()
  setup(function()
    doc.reference_dir = nil
    doc.reload()
  end)

  it("prints the real signature of a class from its entry, not (...)", function()
    local s = doc.describe(cell.nn.Dropout, "cell.nn.Dropout")
    local want = "nn.Dropout(keep_prob)\nnn.Dropout{p = 0.5}\nnn.Dropout{keep_prob =}\n  "
    assert.are.equal(want, s:sub(1, #want))
    for _, name in ipairs { "Adam", "CrossEntropyLoss" } do
      s = doc.describe(cell.nn[name], "cell.nn." .. name)
      assert.is_truthy(s:find("^nn%." .. name .. "%(params") or s:find("^nn%." .. name .. "%(%[weight"), s)
      assert.is_falsy(s:find("(...)", 1, true), s)
    end
    assert.is_truthy(doc.describe(cell.nn.Adam, "x"):find("learning_rate = 1e-3", 1, true))
  end)

  it("ends the summary at the end of the first sentence", function()
    local s = doc.describe(cell.nn.Dropout, "cell.nn.Dropout")
    local want = "\n  Randomly zeroes elements in training mode, with probability p, and scales the kept "
      .. "ones by 1 / (1 - p); in inference mode it returns its input."
    assert.are.equal(want, s:sub(-#want))
  end)

  it("finds a method's entry through its value, under any name", function()
    local net = cell.nn.Dense(2, 3)
    assert.is_truthy(doc.describe(net.state_dict, "net:state_dict"):find("^nn%.Cell:state_dict%("))
    assert.are.equal(doc.describe(cell.ones({ 1 }).sum, "t:sum"), doc.describe(cell.ops.sum, "cell.ops.sum"))
    assert.is_truthy(doc.describe(cell.ops.sum, "cell.ops.sum"):find("^Tensor:sum%("))
  end)

  it("describes an instance by its class's entry", function()
    assert.are.equal("net: an instance of Dense\n  The fully connected layer, y = x W^T + b, on inputs whose last "
      .. "dimension is in_channels.", doc.describe(cell.nn.Dense(2, 3), "net"))
  end)

  it("finds entries by name, cell.nn.X as nn.X and ':' as '.'", function()
    for _, name in ipairs { "nn.Cell:bprop", "nn.Cell.bprop", "cell.nn.Cell.bprop", "cell.nn.Cell:bprop" } do
      local e = doc.entry(name)
      assert.is_truthy(e, name)
      assert.are.equal("nn.Cell:bprop", e.name)
    end
    assert.is_nil(doc.entry("cell.nosuch"))
  end)

  it("gives the whole entry as plain text", function()
    local s = doc.entry_text(doc.entry("nn.Dropout"))
    assert.is_truthy(s:find("^nn%.Dropout%(keep_prob%)\n"), s)
    assert.is_truthy(s:find("\n  drop with probability p, pass the options table: nn.Dropout{p = 0.1}.", 1, true)
      or s:find("nn.Dropout{p = 0.1}", 1, true), s)
    assert.is_falsy(s:find("```", 1, true), s)
    assert.is_truthy(s:find("%(nn%-layers%.md%)$"), s)
  end)

  if pcall(require, "cell.ffi") then
    it("documents cell.ffi's functions under LuaJIT", function()
      local F = require "cell.ffi"
      assert.is_truthy(doc.describe(F.ptr, "F.ptr"):find("^cell%.ffi%.ptr%(t%)\n  A typed pointer"))
    end)
  end

  it("keeps the fallbacks for values with no entry", function()
    assert.is_truthy(doc.describe(print, "print"):find("^print%(%.%.%.%)\n  A C function %(not cell's%)"))
    assert.are.equal("n: a number, 3", doc.describe(3, "n"))
  end)
end)
