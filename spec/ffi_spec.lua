-- ffi_spec.lua - include/cell_ffi.h and lua/cell/ffi.lua: the FFI header
-- the binding carries matches the C build (struct layouts, enum values),
-- and under LuaJIT, zero-copy data access and the FFI inference path.
--
-- Under Lua 5.4 the LuaJIT-only parts cannot run (there is no ffi module);
-- the header checks run under both, with the struct layouts computed from
-- the header's text by the C layout rules instead of by ffi.sizeof.
local H = require "helpers"
local cell = H.cell
local core = cell.core

local is_luajit = type(jit) == "table" and pcall(require, "ffi")

--- The C build's view: {structs = {name = {size, fields}}, constants = {name = value}}.
local layout = core._ffi_layout()
local header = core._ffi_cdef()

--- Structs and enum constants declared in the header's text (comments and
-- preprocessor lines removed): structs[name] = list of {type, field};
-- constants[name] = value, implicit values counted as C does.
local function parse_header(text)
  text = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", " ")
  text = ("\n" .. text):gsub("\n[ \t]*#[^\n]*", "\n")
  local structs, constants = {}, {}
  for name, body in text:gmatch("typedef%s+struct%s+([%w_]+)%s*(%b{})") do
    local fields = {}
    for decl in body:sub(2, -2):gmatch("[^;]+") do
      local ty, field = decl:match("^%s*(.-)%s+([%w_]+)%s*$")
      if field then fields[#fields + 1] = { type = ty, name = field } end
    end
    structs[name] = fields
  end
  for body in text:gmatch("typedef%s+enum%s+[%w_]*%s*(%b{})") do
    local nxt = 0
    for item in body:sub(2, -2):gmatch("[^,]+") do
      local name, value = item:match("^%s*([%w_]+)%s*=%s*(%-?%d+)%s*$")
      if not name then name = item:match("^%s*([%w_]+)%s*$") end
      if name then
        if value then nxt = tonumber(value) end
        constants[name] = nxt
        nxt = nxt + 1
      end
    end
  end
  return structs, constants
end

-- Sizes (and alignments) of the scalar types a struct in the header may
-- use, on the LP64 ABI cell is built for.
local scalar_size = {
  ["char"] = 1, ["signed char"] = 1, ["unsigned char"] = 1, ["short"] = 2,
  ["unsigned short"] = 2, ["int"] = 4, ["unsigned"] = 4, ["unsigned int"] = 4,
  ["long"] = 8, ["unsigned long"] = 8, ["long long"] = 8, ["unsigned long long"] = 8,
  ["float"] = 4, ["double"] = 8, ["size_t"] = 8, ["int8_t"] = 1, ["uint8_t"] = 1,
  ["int16_t"] = 2, ["uint16_t"] = 2, ["int32_t"] = 4, ["uint32_t"] = 4, ["int64_t"] = 8,
  ["uint64_t"] = 8, ["cell_dtype"] = 4, ["cell_status"] = 4,
}

--- Offsets and size by the C rules (each field aligned to its size, the
-- struct padded to its largest alignment); nil for a type not listed.
local function c_layout(fields)
  local off, align, offsets = 0, 1, {}
  for _, f in ipairs(fields) do
    local ty = f.type
    local sz = ty:find("%*") and 8 or scalar_size[ty]
    if not sz then return nil, "no size known for field type '" .. ty .. "'" end
    off = math.ceil(off / sz) * sz
    offsets[f.name] = off
    off = off + sz
    if sz > align then align = sz end
  end
  return { size = math.ceil(off / align) * align, fields = offsets }
end

local structs, constants = parse_header(header)

describe("cell_ffi.h as built into the binding", function()
  it("is the header in the source tree, not a stale copy", function()
    local f = io.open("include/cell_ffi.h", "rb")
    if f then -- absent when the specs run from an installed tree
      local text = f:read("*a")
      f:close()
      assert.are.equal(text, header)
    end
    assert.truthy(header:find("typedef struct cell_alloc_stats", 1, true))
  end)

  it("declares only structs whose layout the C build reports, field by field", function()
    local n = 0
    for name, fields in pairs(structs) do
      n = n + 1
      local c = layout.structs[name]
      assert.is_table(c, "struct " .. name .. " is declared in cell_ffi.h but core._ffi_layout "
        .. "does not report it (add it to ffi_structs in src/lua/lembed.c)")
      local listed = {}
      for _, f in ipairs(fields) do
        listed[f.name] = true
        assert.is_number(c.fields[f.name], name .. "." .. f.name .. " is not reported by C")
      end
      for field in pairs(c.fields) do
        assert.is_true(listed[field] == true, name .. "." .. field .. " is reported by C but not declared")
      end
    end
    assert.is_true(n >= 1)
    for name in pairs(layout.structs) do assert.is_table(structs[name], name .. " not in the header") end
  end)

  it("has struct layouts that agree with the C rules applied to its text", function()
    for name, fields in pairs(structs) do
      local want = assert(c_layout(fields))
      local got = layout.structs[name]
      assert.are.equal(want.size, got.size, "sizeof(" .. name .. ")")
      for field, off in pairs(want.fields) do
        assert.are.equal(off, got.fields[field], "offsetof(" .. name .. ", " .. field .. ")")
      end
    end
  end)

  it("has every enum constant at the value the C build gives it, and no other", function()
    local n = 0
    for name, value in pairs(constants) do
      n = n + 1
      assert.are.equal(layout.constants[name], value, name)
    end
    for name in pairs(layout.constants) do
      assert.is_number(constants[name], name .. " is reported by C but not declared")
    end
    assert.is_true(n >= 60)
    -- And the engine's enums agree with the Lua layer's names.
    assert.are.equal(core.float32, cell.float32)
    assert.are.equal(layout.constants.CELL_DTYPE_COUNT, #H.all_dtypes)
  end)

  it("is plain declarations: no macro, include or function pointer once comments go", function()
    local text = header:gsub("/%*.-%*/", " ")
    for line in text:gmatch("[^\n]+") do
      if line:match("^%s*#") then
        assert.truthy(line:match("^%s*#ifndef CELL_FFI_H") or line:match("^%s*#define CELL_FFI_H%s*$")
          or line:match("^%s*#endif"), "preprocessor line: " .. line)
      end
    end
    assert.is_nil(text:find("(%*", 1, true), "a function pointer")
    assert.is_nil(text:find("__attribute__", 1, true))
  end)
end)

if not is_luajit then
  describe("cell.ffi under " .. _VERSION, function()
    it("is LuaJIT-only: the zero-copy and FFI-call checks below run under LuaJIT (make spec LUA=luajit); "
      .. "here require raises a clear error", function()
      local ok, err = pcall(require, "cell.ffi")
      assert.is_false(ok)
      assert.truthy(tostring(err):find("cell.ffi needs LuaJIT", 1, true), err)
      assert.is_nil(package.loaded["cell.ffi"])
      H.still_works()
    end)
  end)
  return
end

local ffi = require "ffi"
local F = require "cell.ffi"

describe("cell.ffi under LuaJIT", function()
  it("has ffi.sizeof and ffi.offsetof equal to the C build's for every struct", function()
    for name, c in pairs(layout.structs) do
      assert.are.equal(c.size, ffi.sizeof(name), "sizeof(" .. name .. ")")
      for field, off in pairs(c.fields) do
        assert.are.equal(off, ffi.offsetof(name, field), "offsetof(" .. name .. ", " .. field .. ")")
      end
    end
  end)

  it("sees every enum constant at the C build's value", function()
    for name, value in pairs(layout.constants) do
      assert.are.equal(value, tonumber(F.C[name]), name)
    end
  end)

  it("is bound to the engine cell.core runs, not a copy of it", function()
    for name, addr in pairs(core._ffi_symbols()) do
      if type(addr) == "userdata" then
        assert.is_true(ffi.cast("void *", F.C[name]) == ffi.cast("void *", addr), name)
      end
    end
    -- One allocator: a tensor made from Lua shows in the FFI's statistics.
    local before = F.alloc_stats().in_use
    local big = cell.zeros({ 1024, 64 })
    assert.is_true(F.alloc_stats().in_use >= before + 1024 * 64 * 4)
    big:free()
  end)

  describe("F.ptr", function()
    it("reads and writes a tensor's data in place, for every dtype", function()
      local samples = {
        float32 = 1.5, float64 = -2.25, int8 = -7, uint8 = 200, int32 = -70000,
        int64 = 5000000000, bool = true,
      }
      for name, v in pairs(samples) do
        local t = cell.zeros({ 2, 3 }, cell[name])
        local p = F.ptr(t)
        assert.are.equal(ffi.typeof(F.ctypes[name] .. " *"), ffi.typeof(p), name)
        p[4] = v -- row 2, column 2
        local got = t[2][2]
        if name == "int64" then got = tonumber(got) end
        assert.are.equal(v, got, name)
        t:fill_(name == "bool" and 1 or 3)
        local back = p[0]
        if name == "int64" then back = tonumber(back) end
        assert.are.equal(name == "bool" and true or 3, back, name)
      end
    end)

    it("gives float16 and bfloat16 as their bits", function()
      local h = cell.tensor({ 1, -2 }, cell.float16)
      assert.are.equal(0x3C00, F.ptr(h)[0])
      assert.are.equal(0xC000, F.ptr(h)[1])
      local b = cell.tensor({ 1 }, cell.bfloat16)
      assert.are.equal(0x3F80, F.ptr(b)[0])
    end)

    it("points at a view's first element, and strides as the view does", function()
      local t = cell.arange(0, 12):reshape({ 3, 4 })
      local v = t:narrow(2, 2, 2) -- columns 2..3
      local p = F.ptr(v)
      assert.are.equal(1, p[0])
      assert.are.equal(5, p[v:stride(1)])
      local tr = t:transpose(1, 2)
      assert.are.equal(4, F.ptr(tr)[tr:stride(2)])
    end)

    it("rejects what is not a tensor, and a freed tensor", function()
      H.expect_error(function() return F.ptr({}) end, "TypeError", "Tensor")
      local t = cell.zeros({ 2 })
      t:free()
      H.expect_error(function() return F.ptr(t) end, "RuntimeError", "freed")
    end)
  end)

  describe("the inference path through the FFI", function()
    local function mlp_module(x, w1, b1, w2, b2)
      return (x:matmul(w1:transpose(1, 2)) + b1):relu():matmul(w2:transpose(1, 2)) + b2
    end

    it("gives the same numbers as the module's ops (an MLP forward)", function()
      cell.set_seed(7)
      local x, w1, b1 = cell.randn({ 1, 20 }), cell.randn({ 16, 20 }), cell.randn({ 16 })
      local w2, b2 = cell.randn({ 4, 16 }), cell.randn({ 4 })
      local h = F.add(F.matmul(F.relu(F.add(F.matmul(x, F.transpose(w1, 1, 2)), b1)),
        F.transpose(w2, 1, 2)), b2)
      local y = F.tensor(h)
      H.assert_values(y, mlp_module(x, w1, b1, w2, b2):totable(), "float32")
      H.assert_shape(y, { 1, 4 })
    end)

    it("computes values checked by hand", function()
      local a = cell.tensor({ { 1, 2 }, { 3, 4 } })
      H.assert_values(F.tensor(F.matmul(a, a)), { { 7, 10 }, { 15, 22 } })
      H.assert_values(F.tensor(F.relu(F.sub(a, cell.tensor(2.5)))), { { 0, 0 }, { 0.5, 1.5 } })
      H.assert_values(F.tensor(F.mul(a, a)), { { 1, 4 }, { 9, 16 } })
      H.assert_values(F.tensor(F.contiguous(F.transpose(a, 1, 2))), { { 1, 3 }, { 2, 4 } })
    end)

    it("hands results to Lua without a copy", function()
      local h = F.add(cell.zeros({ 3 }), cell.ones({ 3 }))
      local t = F.tensor(h)
      F.ptr(h)[1] = 42
      H.assert_values(t, { 1, 42, 1 })
      F.free(h) -- t keeps the data alive
      H.assert_values(t, { 1, 42, 1 })
      H.expect_error(function() return F.tensor(nil) end, "TypeError", "handle")
    end)

    it("raises the engine's errors with their names, and keeps working", function()
      local a = cell.zeros({ 2, 2 })
      H.expect_error(function() return F.matmul(a, cell.zeros({ 3, 3 })) end, "ValueError",
        "matmul", "[2, 2]", "[3, 3]")
      H.expect_error(function() return F.add(a, cell.zeros({ 3 })) end, "ValueError", "[2, 2]", "[3]")
      H.expect_error(function() return F.transpose(a, 1, 3) end, "IndexError", "transpose")
      H.expect_error(function() return F.matmul(a, "x") end, "TypeError", "Tensor")
      H.expect_error(function() return F.matmul(cell.tensor({ true }), cell.tensor({ true })) end,
        "TypeError", "Bool")
      F.check(0)
      H.expect_error(function() F.check(F.C.CELL_ERR_INDEX) end, "IndexError")
    end)

    it("makes no OS allocation per step once warmed up", function()
      local x, w, b = cell.randn({ 1, 64 }), cell.randn({ 64, 32 }), cell.randn({ 32 })
      local function step()
        local h1 = F.matmul(x, w)
        local h2 = F.add(h1, b)
        local y = F.relu(h2)
        F.free(h1)
        F.free(h2)
        F.free(y)
      end
      for _ = 1, 50 do step() end
      -- tensors earlier specs left to the collector must not be freed mid-measure
      collectgarbage()
      collectgarbage()
      local before = F.alloc_stats()
      for _ = 1, 500 do step() end
      local after = F.alloc_stats()
      assert.are.equal(before.n_os, after.n_os)
      assert.are.equal(before.in_use, after.in_use)
    end)
  end)
end)
