-- forged_tensor_spec.lua - no value a plain script makes becomes a tensor
-- pointer (issue 10, item 2). core._ffi_tensor used to take any number (or
-- light userdata) as a cell_tensor *: `_ffi_tensor(4096)` crashed, and
-- `_ffi_tensor(t:data_ptr())` read and wrote through a tensor's data as if
-- it were a tensor header. Now a handle reaches Lua only through cell.ffi
-- (F.tensor calls a C function through the FFI, which a script without the
-- FFI cannot), and light userdata never pass for tensors, not even with
-- the tensor metatable forced onto them through the debug library.
local H = require "helpers"
local cell = H.cell
local core = cell.core

local is_luajit = type(jit) == "table"

describe("core._ffi_tensor", function()
  it("refuses every value as a handle: numbers, strings, light userdata, tensors", function()
    local t = cell.tensor({ 1, 2, 3 })
    local values = {
      4096, 0, -1, 2 ^ 40, 0.5, math.huge, "4096", true, {},
      t:data_ptr(), core._ffi_handle(t), t,
    }
    for name, addr in pairs(core._ffi_symbols()) do
      if type(addr) == "userdata" then values[#values + 1] = addr end
      assert.is_string(name)
    end
    for _, v in ipairs(values) do
      H.expect_error(function() return core._ffi_tensor(v) end, "TypeError", "takes no argument", "F.tensor")
    end
    H.expect_error(function() return core._ffi_tensor(0 / 0) end, "TypeError", "takes no argument")
    -- t itself is untouched
    H.assert_values(t, { 1, 2, 3 })
  end)

  it("has nothing to hand over unless cell.ffi handed it a handle", function()
    H.expect_error(function() return core._ffi_tensor() end, "ValueError", "no tensor handle", "F.tensor")
    H.expect_error(function() return core._ffi_tensor() end, "ValueError", "no tensor handle")
  end)

  if is_luajit then
    it("refuses LuaJIT's 64-bit cdata literals, which need no ffi module", function()
      local addr = assert(loadstring("return 4096ULL"))()
      assert.are.equal("cdata", type(addr))
      H.expect_error(function() return core._ffi_tensor(addr) end, "TypeError", "takes no argument", "cdata")
      local neg = assert(loadstring("return -1LL"))()
      H.expect_error(function() return core._ffi_tensor(neg) end, "TypeError", "takes no argument")
    end)
  end
end)

describe("light userdata", function()
  it("are not tensors: t:data_ptr() and _ffi_handle give addresses for information only", function()
    local t = cell.tensor({ 1, 2, 3 })
    for _, p in ipairs { t:data_ptr(), core._ffi_handle(t) } do
      assert.are.equal("userdata", type(p))
      assert.is_false(cell.is_tensor(p))
      H.expect_error(function() return cell.core.Tensor.numel(p) end, "TypeError", "Tensor")
      H.expect_error(function() return t:add(p) end, "TypeError")
      H.expect_error(function() return cell.cat({ p, t }) end, "TypeError")
    end
  end)

  it("do not pass for tensors even with the tensor metatable (debug.setmetatable)", function()
    local t = cell.tensor({ 1, 2, 3 })
    local p = t:data_ptr()
    local mt = debug.getmetatable(t)
    local before = debug.getmetatable(p)
    debug.setmetatable(p, mt)
    local ok, err = pcall(function()
      assert.is_false(cell.is_tensor(p))
      H.expect_error(function() return p:numel() end, "TypeError", "Tensor")
      H.expect_error(function() return p.shape end, "TypeError", "Tensor")
      H.expect_error(function() return p + 1 end, "TypeError", "Tensor")
      H.expect_error(function() return t + p end, "TypeError")
      H.expect_error(function() return tostring(p) end, "TypeError", "Tensor")
      H.expect_error(function() return mt.__gc(p) end, "TypeError", "Tensor")
      H.expect_error(function() return cell.stack({ p, p }) end, "TypeError")
      H.expect_error(function() return t:copy_(p) end, "TypeError")
      -- nor where a hook or a backward rule hands a value back to the engine
      H.expect_error(function()
        return cell.grad(function(a)
          local y = a * 2
          y:register_hook(function() return p end)
          return y:sum()
        end)(cell.ones({ 2 }))
      end, "TypeError", "hook", "Tensor")
    end)
    debug.setmetatable(p, before)
    assert(ok, err)
    H.assert_values(t, { 1, 2, 3 })
  end)
end)

describe("every function of cell.core, core.nnops and the tensor methods", function()
  -- Functions with process-wide effects a sweep must not trigger.
  local skip = { _interrupt = true, set_num_threads = true, set_seed = true, set_grad_enabled = true }

  local function sweep(label, forged)
    local calls = 0
    local tables = { core = core, nnops = core.nnops, Tensor = core.Tensor }
    for tname, tbl in pairs(tables) do
      for name, fn in pairs(tbl) do
        if type(fn) == "function" and not skip[name] then
          local t = cell.tensor({ { 1, 2 }, { 3, 4 } })
          for _, args in ipairs { { forged }, { t, forged }, { forged, t }, { t, t, forged } } do
            calls = calls + 1
            local n = #args
            -- no crash; the result, if any, is not a tensor made from the forged value
            local ok, r = pcall(fn, args[1], args[2], args[3])
            if ok and cell.is_tensor(r) and n == 1 then
              assert.is_true(r:numel() >= 0, tname .. "." .. name)
            end
          end
          assert.is_true(cell.is_tensor(t), tname .. "." .. name)
        end
      end
    end
    assert.is_true(calls > 400, label)
    H.still_works()
  end

  it("takes a number in any argument without treating it as a pointer", function()
    sweep("numbers", 4096)
  end)

  it("takes a light userdata given the tensor metatable without treating it as a tensor", function()
    local t = cell.tensor({ 1, 2, 3 })
    local p = t:data_ptr()
    local before = debug.getmetatable(p)
    debug.setmetatable(p, debug.getmetatable(t))
    local ok, err = pcall(sweep, "light userdata", p)
    debug.setmetatable(p, before)
    assert(ok, err)
  end)
end)

if is_luajit and pcall(require, "ffi") then
  describe("cell.ffi's hand-over (LuaJIT)", function()
    local ffi = require "ffi"
    local F = require "cell.ffi"

    it("F.tensor takes only a non-NULL cell_tensor *", function()
      H.expect_error(function() return F.tensor(ffi.cast("void *", 4096)) end, "TypeError", "cell_tensor *")
      H.expect_error(function() return F.tensor(ffi.new("int64_t[1]", 4096)) end, "TypeError", "cell_tensor *")
      H.expect_error(function() return F.tensor(ffi.cast("cell_tensor *", nil)) end, "TypeError", "non-NULL")
      H.expect_error(function() return F.tensor(4096) end, "TypeError", "handle")
      local h = F.add(cell.ones({ 2 }), cell.ones({ 2 }))
      H.assert_values(F.tensor(h), { 2, 2 })
    end)

    it("parks a reference of its own, taken once", function()
      local h = F.mul(cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }))
      F.binding.cell_lua_ffi_give(h)
      F.free(h) -- the slot still holds the tensor
      collectgarbage()
      local t = core._ffi_tensor()
      H.assert_values(t, { 3, 8 })
      H.expect_error(function() return core._ffi_tensor() end, "ValueError", "no tensor handle")
      -- a hand-over never completed is released by the next one
      local a = F.add(cell.zeros({ 1 }), cell.ones({ 1 }))
      local before = F.alloc_stats().in_use
      F.binding.cell_lua_ffi_give(a)
      F.free(a)
      F.binding.cell_lua_ffi_give(nil)
      assert.is_true(F.alloc_stats().in_use < before)
      H.expect_error(function() return core._ffi_tensor() end, "ValueError", "no tensor handle")
    end)
  end)
end
