-- metamethods_spec.lua - every metamethod of every userdata type the
-- binding defines checks its object (issue 10, item 3), and the metatables
-- are protected. `getmetatable(cell.ones{1}).__gc(cell.int64)` used to
-- crash and `__close(io.stdout)` to corrupt the heap. The metatables are
-- reached here through the debug library, as a hostile script would.
local H = require "helpers"
local cell = H.cell
local core = cell.core

--- The binding's metatables, with the word each error must name.
local function metatables()
  local reg = debug.getregistry()
  return {
    { name = "Tensor", mt = debug.getmetatable(cell.ones({ 1 })), expect = "expected a Tensor" },
    { name = "dtype", mt = debug.getmetatable(cell.int64), expect = "expected a dtype" },
    { name = "SafetensorsLoaded", mt = reg["cell.SafetensorsLoaded"], expect = "expected a safetensors load result" },
  }
end

--- Values that are not of the metatable's own type.
local function wrong_objects(kind)
  local t = cell.ones({ 2 })
  local list = {
    { "nil", nil }, { "0", 0 }, { "4096", 4096 }, { "-1.5", -1.5 }, { "a string", "x" },
    { "a table", {} }, { "a function", print }, { "true", true }, { "io.stdout", io.stdout },
    { "a coroutine", coroutine.create(print) }, { "a light userdata", t:data_ptr() },
    { "the state's own file", io.stderr },
  }
  if kind ~= "Tensor" then list[#list + 1] = { "a Tensor", t } end
  if kind ~= "dtype" then list[#list + 1] = { "a dtype", cell.float32 } end
  return list
end

describe("the binding's metatables", function()
  it("are protected: getmetatable gives a string and nothing reaches them from cell.core", function()
    local t = cell.ones({ 1 })
    assert.are.equal("Tensor", getmetatable(t))
    assert.are.equal("dtype", getmetatable(cell.float32))
    assert.are.equal("Tensor", getmetatable(cell.Parameter(cell.ones({ 1 }), "w")))
    assert.is_false(pcall(setmetatable, t, {}))
    assert.is_nil(core._tensor_mt)
    local mts = {}
    for _, m in ipairs(metatables()) do
      assert.is_table(m.mt, m.name)
      assert.is_not_nil(rawget(m.mt, "__metatable"), m.name)
      mts[m.mt] = m.name
    end
    for _, tbl in ipairs { core, core.nnops, core.Tensor, cell } do
      for k, v in pairs(tbl) do
        assert.is_nil(mts[v], "cell exposes the " .. tostring(mts[v]) .. " metatable as " .. tostring(k))
      end
    end
  end)

  it("leave the Lua layer working: Parameters, printing, type tests, the REPL's completion", function()
    local p = cell.Parameter(cell.tensor({ 1, 2 }), "w")
    assert.is_true(cell.is_parameter(p))
    assert.are.equal("w", p.name)
    p.requires_grad = false
    assert.is_false(p.requires_grad)
    assert.truthy(tostring(p):find("Parameter", 1, true))
    assert.are.equal("Float32", tostring(cell.float32))
    assert.are.equal("float32", cell.float32.name)
    assert.is_nil(cell.float32.no_such_field)
    assert.is_nil(cell.float32[1])
    assert.is_false(require("cell.class").is_instance(p, cell.OrderedDict))
    local repl = require "cell.repl"
    local words = repl.complete("x:res", { x = cell.ones({ 1 }) })
    assert.are.same({ "x:reshape" }, words)
    assert.are.same({ "d.name" }, repl.complete("d.na", { d = cell.float32 }))
    assert.truthy(repl.format(p):find("Parameter", 1, true))
  end)
end)

describe("every metamethod", function()
  for _, m in ipairs(metatables()) do
    it("of " .. m.name .. " raises a TypeError naming " .. m.name .. " for a wrong object", function()
      local n = 0
      for event, fn in pairs(m.mt) do
        if type(fn) == "function" then
          for _, w in ipairs(wrong_objects(m.name)) do
            local label = m.name .. "." .. event .. "(" .. w[1] .. ")"
            local arg_lists = { { w[2] }, { w[2], w[2] }, { w[2], "shape" }, { w[2], 1 }, { w[2], "x", 1 } }
            for _, args in ipairs(arg_lists) do
              -- (number, 1) is an arithmetic call with two numbers: still no Tensor in it
              n = n + 1
              local ok, err = pcall(fn, args[1], args[2], args[3])
              assert.is_false(ok, label .. " succeeded")
              assert.truthy(tostring(err):find("TypeError: ", 1, true), label .. ": " .. tostring(err))
              assert.truthy(tostring(err):find(m.expect, 1, true), label .. ": " .. tostring(err))
            end
          end
        end
      end
      assert.is_true(n >= 60, m.name .. ": " .. n .. " calls")
      -- what came through is intact, and the process keeps working
      assert.is_true(io.type(io.stdout) == "file")
      io.stdout:write("")
      assert.are.equal("Float32", tostring(cell.float32))
      H.still_works()
    end)
  end

  it("of a tensor's __gc and __close are harmless twice, and on a freed tensor", function()
    local mt = debug.getmetatable(cell.ones({ 1 }))
    for _, event in ipairs { "__gc", "__close" } do
      local t = cell.tensor({ 1, 2 })
      local v = t:reshape({ 2, 1 }) -- shares the storage
      mt[event](t)
      mt[event](t)
      assert.are.equal("Tensor(freed)", tostring(t))
      H.expect_error(function() return t:numel() end, "RuntimeError", "freed")
      H.assert_values(v, { { 1 }, { 2 } })
      local u = cell.ones({ 3 })
      u:free()
      mt[event](u)
      mt.__gc(u)
    end
    collectgarbage()
    collectgarbage()
    H.still_works()
  end)

  it("refuses a userdata of another kind given the tensor metatable", function()
    local mt = debug.getmetatable(cell.ones({ 1 }))
    local f = io.tmpfile()
    local file_mt = debug.getmetatable(f)
    debug.setmetatable(f, mt)
    local ok, err = pcall(function()
      assert.is_false(cell.is_tensor(f))
      H.expect_error(function() return mt.__gc(f) end, "TypeError", "Tensor")
      H.expect_error(function() return mt.__close(f) end, "TypeError", "Tensor")
      H.expect_error(function() return f:numel() end, "TypeError", "Tensor")
      H.expect_error(function() return f + 1 end, "TypeError", "Tensor")
      H.expect_error(function() return cell.ones({ 1 }):add(f) end, "TypeError")
    end)
    debug.setmetatable(f, file_mt)
    assert(ok, err)
    f:write("still a file")
    f:seek("set")
    assert.are.equal("still a file", f:read("*a"))
    f:close()
  end)
end)
