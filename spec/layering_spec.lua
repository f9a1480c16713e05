-- layering_spec.lua - the Lua layer's modules point one way: none below
-- `cell` requires `cell` itself (they require cell.core, cell.parameter,
-- ... directly), so loading any of them loads no cycle through
-- lua/cell/init.lua; and cell.ops shows none of the engine's `_` names.
-- cell.ffi and cell.doc require only what they use too; the REPL alone
-- sits above cell (it is the program that loads cell).
local H = require "helpers"
local cell = H.cell

local LUA = os.getenv("CELL_LUA") or "lua5.4"
local ABOVE = { ["lua/cell/repl.lua"] = true }

local function lua_files()
  local p = io.popen("find lua/cell -name '*.lua' | sort")
  local list = {}
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  return list
end

describe("the Lua layer", function()
  it("has no module below cell that requires cell", function()
    local files = lua_files()
    assert.is_true(#files > 30)
    local bad = {}
    for _, path in ipairs(files) do
      if not ABOVE[path] and path ~= "lua/cell/init.lua" then
        local f = assert(io.open(path, "rb"))
        local n = 0
        for line in f:lines() do
          n = n + 1
          local code = line:gsub("%-%-.*$", "")
          if code:find("require%s*%(?%s*[\"']cell[\"']") or code:find("cellm%(") then
            bad[#bad + 1] = path .. ":" .. n .. ": " .. line
          end
        end
        f:close()
      end
    end
    assert.are.same({}, bad)
  end)

  it("loads each submodule on its own without loading cell", function()
    for _, m in ipairs { "cell.ops", "cell.nn", "cell.train", "cell.dataset", "cell.parameter",
      "cell.serialization", "cell.nn.optim" } do
      local code = ("local m = require \"%s\"; local _ = m.Dense; "
        .. "io.write(package.loaded.cell == nil and \"clean\" or \"loaded cell\")"):format(m)
      local out, err, rc = H.run(LUA .. " -e '" .. code .. "'")
      assert.are.equal(0, rc, m .. ": " .. err)
      assert.are.equal("clean", out, m)
    end
  end)

  it("loads cell.doc, and cell.ffi under LuaJIT, without loading cell", function()
    local mods = { "cell.doc" }
    if LUA:find("luajit", 1, true) then mods[2] = "cell.ffi" end
    for _, m in ipairs(mods) do
      local code = ("local m = require \"%s\"; "
        .. "io.write(package.loaded.cell == nil and \"clean\" or \"loaded cell\")"):format(m)
      local out, err, rc = H.run(LUA .. " -e '" .. code .. "'")
      assert.are.equal(0, rc, m .. ": " .. err)
      assert.are.equal("clean", out, m)
    end
    -- without cell, the doc still finds the engine's functions by value
    local code = "local core = require 'cell.core'; local doc = require 'cell.doc'; "
      .. "local e = doc.entry_for_value(core.zeros); "
      .. "io.write(e and e.name or 'none', ' ', tostring(package.loaded.cell == nil))"
    local out, err, rc = H.run(LUA .. " -e \"" .. code .. "\"")
    assert.are.equal(0, rc, err)
    assert.are.equal("cell.zeros true", out)
  end)

  it("keeps lazy loading: cell's submodules load on first use", function()
    local code = "local cell = require 'cell'; "
      .. "io.write(tostring(rawget(cell, 'nn') == nil and package.loaded['cell.nn'] == nil), ' ', "
      .. "tostring(cell.nn.Dense ~= nil), ' ', tostring(rawget(cell, 'nn') ~= nil))"
    local out, err, rc = H.run(LUA .. " -e \"" .. code .. "\"")
    assert.are.equal(0, rc, err)
    assert.are.equal("true true true", out)
  end)

  it("shows no `_` name in cell.ops; the library's own are in cell.ops_internal", function()
    for name in pairs(cell.ops) do
      assert.are_not.equal("_", name:sub(1, 1), "cell.ops." .. name)
    end
    assert.is_nil(cell.ops._sgd_step)
    local OI = require "cell.ops_internal"
    for _, k in ipairs { "sgd_step", "adam_step", "check_grads" } do
      assert.are.equal("function", type(OI[k]), k)
    end
    -- one SGD step without momentum: p <- p - lr * g
    local p = cell.tensor({ 1, 2 }, cell.float64)
    OI.sgd_step(p, cell.tensor({ 0.5, -1 }, cell.float64), nil, 0.1, 0, 0, 0, false, false, 1)
    H.assert_close(p, { 0.95, 2.1 }, 1e-12)
  end)
end)
