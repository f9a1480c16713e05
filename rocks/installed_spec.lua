-- installed_spec.lua - cell as a user gets it from LuaRocks: run by
-- rocks/check.sh with busted, from a temporary directory, with only the
-- rock tree's paths (`luarocks path`) and $CELL_TREE naming the tree.
-- Outside rocks/check.sh (CELL_TREE unset, e.g. `luarocks test -- this
-- file`) the checks that the files come from the tree are skipped and the
-- rest runs against whatever `require "cell"` finds.
local tree = os.getenv("CELL_TREE")

local function inside(p) return tree == nil or (p ~= nil and p:sub(1, #tree) == tree) end

describe("the installed rock", function()
  local cell = require "cell"

  it("loads cell, its Lua files and cell.core from the tree", function()
    assert.is_true(inside(package.searchpath("cell", package.path)), package.path)
    assert.is_true(inside(package.searchpath("cell.nn", package.path)), "cell.nn")
    assert.is_true(inside(package.searchpath("cell.core", package.cpath)), package.cpath)
    assert.is_string(cell.version)
  end)

  it("computes: tensors, autograd and a Dense layer", function()
    local x = cell.tensor({ { 1, 2 }, { 3, 4 } })
    assert.are.equal(10, x:sum():item())
    assert.are.same({ { 7, 10 }, { 15, 22 } }, x:matmul(x):totable())
    local w = cell.Parameter(cell.tensor({ 2, 3 }), "w")
    local g = cell.grad(function(v) return (v * v):sum() end, nil, { w })
    assert.are.same({ 4, 6 }, g(w)[1]:totable())
    cell.set_seed(1)
    local d = cell.nn.Dense(2, 3)
    assert.are.same({ 2, 3 }, d(x).shape)
  end)

  it("saves and loads a checkpoint", function()
    local path = os.tmpname() .. ".safetensors"
    local net = cell.nn.Dense(3, 2)
    cell.save_checkpoint(net, path)
    local back = cell.load_checkpoint(path)
    os.remove(path)
    assert.are.same(net.weight:totable(), back["weight"]:totable())
  end)

  it("raises MindSpore-style errors and keeps working", function()
    local ok, err = pcall(function() return cell.zeros({ 2 }) + cell.zeros({ 3 }) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("ValueError:", 1, true), err)
    assert.are.equal(2, cell.ones({ 2 }):sum():item())
  end)

  it("installs the reference that ?name reads, beside the Lua files", function()
    local doc = require "cell.doc"
    local dir = doc.find_reference()
    assert.is_string(dir, "no docs/reference installed with cell")
    assert.is_true(inside(dir), dir)
    local s = require("cell.repl").help("cell.nn.Dropout", { cell = cell })
    assert.truthy(s:find("^nn%.Dropout%(keep_prob%)\n"), s)
  end)

  it("installs the cell executable (cell-luajit under LuaJIT)", function()
    if not tree then return end
    -- the rock for LuaRocks' 5.1 tree is LuaJIT's, and installs cell-luajit
    local exe = tree .. (jit and "/bin/cell-luajit" or "/bin/cell")
    local p = io.popen("'" .. exe .. "' -e 'print((require \"cell\").ones({ 3 }):sum():item())' 2>&1")
    local out = p:read("*a")
    p:close()
    assert.truthy(out:match("^3%.?0?\n$"), out)
  end)
end)
