--- cell.ffi: LuaJIT's FFI view of cell's engine.
-- Zero-copy access to a tensor's data (`F.ptr(t)` is a typed C pointer to
-- the very bytes the engine computes on) and direct FFI calls into the
-- engine's C inference path (`F.matmul`, `F.add`, `F.relu`, ... on tensor
-- handles, or `F.C.cell_op_matmul` itself), for LuaJIT hosts such as LÖVE,
-- Defold, Neovim and OpenResty.
--
-- The declarations come from include/cell_ffi.h, built into the binding
-- (`core._ffi_cdef`), so they are the ones this engine was compiled with;
-- the FFI spec checks every struct's size and offsets and every enum value
-- against the C build. The library bound is checked to be the engine that
-- `cell.core` runs (not a second copy of it).
--
--   local cell = require "cell"
--   local F = require "cell.ffi"
--   local t = cell.zeros({ 3 })
--   local p = F.ptr(t)           -- float *, zero-copy
--   p[0] = 1.5                   -- t[1] is now 1.5
--   local h = F.matmul(x, w)     -- a cell_tensor * (collected by ffi.gc)
--   local y = F.tensor(h)        -- a Lua tensor sharing h's data
--
-- Requires LuaJIT: under PUC Lua `require "cell.ffi"` raises an error
-- saying so.
local has_ffi, ffi = pcall(require, "ffi")
if not has_ffi then
  error("cell.ffi needs LuaJIT's ffi module, which " .. _VERSION .. " does not have "
    .. "(use the cell module itself there)", 2)
end

-- Only the engine's binding: cell.ffi sits beside cell, not above it, and
-- loads nothing of the Lua layer (a LuaJIT host may use it alone).
local core = require "cell.core"

local F = {}

--- The text ffi.cdef receives: cell_ffi.h without its preprocessor lines.
-- @treturn string
local function declarations()
  local text = core._ffi_cdef()
  if not text then
    error("cell.ffi: this build of cell.core carries no FFI declarations "
      .. "(built on a platform without ELF .incbin)", 3)
  end
  return (("\n" .. text):gsub("\n[ \t]*#[^\n]*", "\n"))
end

-- The binding's side door for F.tensor (src/lua/lembed.c): the only way
-- a handle becomes a Lua tensor, so that no value a plain script makes can.
local binding_declarations = "void cell_lua_ffi_give(cell_tensor *t);"

-- Declare once per process: ffi.cdef refuses to redefine a type.
if not pcall(ffi.typeof, "cell_alloc_stats") then
  ffi.cdef(declarations())
  ffi.cdef(binding_declarations)
end

local symbols = core._ffi_symbols()

--- Whether lib resolves the functions of syms to the addresses cell.core calls.
local function resolves(lib, syms)
  for name, addr in pairs(syms) do
    if type(addr) == "userdata" then
      local ok, fn = pcall(function() return lib[name] end)
      if not ok or ffi.cast("void *", fn) ~= ffi.cast("void *", addr) then return false end
    end
  end
  return true
end

--- The library holding syms: the running executable's own symbols (the
-- engine linked into it and exported, as in the `cell` executable) or the
-- file syms.library names (libcell.so for the engine, cell.core's file for
-- the binding's side door).
local function bind(syms, what)
  if resolves(ffi.C, syms) then return ffi.C end
  local tried = { "the executable's own symbols" }
  if syms.library and syms.library ~= symbols.executable then
    local ok, lib = pcall(ffi.load, syms.library)
    if ok and resolves(lib, syms) then return lib end
    tried[#tried + 1] = syms.library
  end
  error("RuntimeError: cell.ffi: cannot bind the " .. what .. "'s C functions (tried "
    .. table.concat(tried, ", ") .. "); a host that links cell in must export its "
    .. "symbols (link with -Wl,-E)", 3)
end

--- The C library namespace: every function of cell_ffi.h (`F.C.cell_tensor_numel(h)`).
F.C = bind(symbols, "engine")
local C = F.C
--- The binding's C side door (cell_lua_ffi_give): cell.core's, not the
-- engine's, so not in F.C unless both are linked into the executable.
F.binding = bind(symbols.binding, "binding")
local B = F.binding

--- The C element type of each dtype, by its Lua name.
F.ctypes = {
  float32 = "float", float64 = "double", float16 = "uint16_t", bfloat16 = "uint16_t",
  int8 = "int8_t", uint8 = "uint8_t", int16 = "int16_t", int32 = "int32_t", int64 = "int64_t", bool = "bool",
}
local dtype_enum = {
  float32 = C.CELL_DTYPE_F32, float64 = C.CELL_DTYPE_F64, float16 = C.CELL_DTYPE_F16,
  bfloat16 = C.CELL_DTYPE_BF16, int8 = C.CELL_DTYPE_I8, uint8 = C.CELL_DTYPE_U8,
  int32 = C.CELL_DTYPE_I32, int64 = C.CELL_DTYPE_I64, bool = C.CELL_DTYPE_BOOL,
  int16 = C.CELL_DTYPE_I16,
}
local ptr_types = {} -- by the dtype's enum value
for name, ct in pairs(F.ctypes) do ptr_types[tonumber(dtype_enum[name])] = ffi.typeof(ct .. " *") end

local tensor_ptr = ffi.typeof("cell_tensor *")
local box = ffi.new("cell_tensor *[1]")

--- Raise the engine's last error, "ValueError: ...", if status is not CELL_OK.
-- @param status a cell_status returned by an F.C call
-- @int[opt=2] level the error level, as error's
function F.check(status, level)
  if status ~= 0 then
    error(ffi.string(C.cell_status_name(status)) .. ": " .. ffi.string(C.cell_last_error()),
      (level or 1) + 1)
  end
end
local check = F.check

--- The tensor's handle, a `cell_tensor *` borrowed from t: valid while t is
-- alive. A handle passes through unchanged.
function F.handle(t)
  if type(t) == "cdata" then return t end
  if not core.is_tensor(t) then
    error("TypeError: expected a Tensor or a tensor handle, got " .. type(t), 3)
  end
  return ffi.cast(tensor_ptr, core._ffi_handle(t))
end
local handle = F.handle

--- A typed pointer to t's first element (`float *` for float32, ...),
-- zero-copy: reads see the engine's values, writes are seen by every op and
-- by t. Index from 0; for a non-contiguous view, step by t:stride(d). The
-- pointer does not keep t alive: keep t referenced while using it.
-- float16/bfloat16 read as their raw uint16_t bits.
-- A tensor on another device than the CPU is a RuntimeError: its memory is
-- the device's (t:move_to("CPU") gives a host copy).
function F.ptr(t)
  local h = handle(t)
  if C.cell_tensor_device(h) ~= 0 then
    error(("RuntimeError: ffi.ptr: the tensor is on device %s, which the host cannot read; "
      .. "move_to(\"CPU\") first"):format(ffi.string(C.cell_device_name(C.cell_tensor_device(h)))), 2)
  end
  return ffi.cast(ptr_types[tonumber(C.cell_tensor_dtype(h))], C.cell_tensor_data_ptr(h))
end

--- Take ownership of a new reference: released when the handle is collected.
local function own(h) return ffi.gc(h, C.cell_tensor_release) end

--- A Lua tensor for a handle; it holds a reference of its own, so the handle
-- may be released (or collected) afterwards. Shares the data, no copy.
function F.tensor(h)
  if type(h) ~= "cdata" or not ffi.istype(tensor_ptr, h) or h == nil then
    error("TypeError: expected a non-NULL tensor handle (a cell_tensor *), got "
      .. (type(h) == "cdata" and tostring(ffi.typeof(h)) .. " " or "") .. tostring(h), 2)
  end
  B.cell_lua_ffi_give(h)
  return core._ffi_tensor()
end

--- Release a handle now rather than at collection.
function F.free(h)
  C.cell_tensor_release(ffi.gc(h, nil))
end

local binops = {
  add = C.CELL_OP_ADD, sub = C.CELL_OP_SUB, mul = C.CELL_OP_MUL, div = C.CELL_OP_DIV,
  pow = C.CELL_OP_POW, maximum = C.CELL_OP_MAXIMUM, minimum = C.CELL_OP_MINIMUM,
}
local unops = {
  abs = C.CELL_OP_ABS, neg = C.CELL_OP_NEG, exp = C.CELL_OP_EXP, log = C.CELL_OP_LOG,
  sqrt = C.CELL_OP_SQRT, tanh = C.CELL_OP_TANH, sigmoid = C.CELL_OP_SIGMOID,
  relu = C.CELL_OP_RELU, gelu = C.CELL_OP_GELU, silu = C.CELL_OP_SILU,
}

--- The inference path: each takes tensors or handles and returns a new
-- handle (collected by ffi.gc; `F.free` releases it at once; `F.tensor`
-- makes it a Lua tensor). Errors are raised as the engine reports them.
function F.matmul(a, b)
  check(C.cell_op_matmul(handle(a), handle(b), box), 2)
  return own(box[0])
end

for name, op in pairs(binops) do
  F[name] = function(a, b)
    check(C.cell_op_binary(op, handle(a), handle(b), box), 2)
    return own(box[0])
  end
end
for name, op in pairs(unops) do
  F[name] = function(a)
    check(C.cell_op_unary(op, handle(a), box), 2)
    return own(box[0])
  end
end

--- Swap dimensions d1 and d2 (1-based, as everywhere in the Lua API): a view.
function F.transpose(a, d1, d2)
  check(C.cell_tensor_transpose(handle(a), d1 - 1, d2 - 1, box), 2)
  return own(box[0])
end

--- a itself (another reference) when contiguous, else a contiguous copy.
function F.contiguous(a)
  check(C.cell_tensor_contiguous(handle(a), box), 2)
  return own(box[0])
end

--- The allocator's statistics (`cell_alloc_get_stats`) as numbers.
function F.alloc_stats()
  local s = ffi.new("cell_alloc_stats")
  C.cell_alloc_get_stats(s)
  return {
    in_use = tonumber(s.in_use), peak = tonumber(s.peak), cached = tonumber(s.cached),
    n_alloc = tonumber(s.n_alloc), n_os = tonumber(s.n_os),
  }
end

--- The declarations given to ffi.cdef, for inspection.
F.declarations = declarations

return F
