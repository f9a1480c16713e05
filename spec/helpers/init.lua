--- Shared helpers for cell's specs: closeness checks against nested tables,
-- error expectations, a reference broadcasting evaluator and fixtures.
-- Required as `require "helpers"` (the spec LUA_PATH has spec/?/init.lua).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local luassert = require "luassert"
local cell = require "cell"

local H = {}
H.cell = cell

local unpack = table.unpack or unpack

--- Tolerances by dtype for results computed in that dtype (relative to
-- max(1, |expected|)).
H.tol = {
  float32 = 1e-5, float64 = 1e-12, float16 = 2e-3, bfloat16 = 1.6e-2,
  int8 = 0, uint8 = 0, int32 = 0, int64 = 0, bool = 0,
}

H.float_dtypes = { "float32", "float64", "float16", "bfloat16" }
H.int_dtypes = { "int8", "uint8", "int32", "int64" }
H.all_dtypes = { "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool", "int16" }

--- Shape of a nested table (from its first elements); a number has shape {}.
function H.shape_of(v)
  local shape = {}
  while type(v) == "table" do
    shape[#shape + 1] = #v
    v = v[1]
    if v == nil then break end
  end
  return shape
end

--- Row-major list of the leaves of a nested table (or of a single value).
function H.flatten(v, out)
  out = out or {}
  if type(v) ~= "table" then
    out[#out + 1] = v
    return out
  end
  for i = 1, #v do H.flatten(v[i], out) end
  return out
end

local function numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end
H.numel = numel

--- Nested table of the given shape from a row-major list (or a function of
-- the 0-based flat position k).
function H.nest(shape, flat)
  local k = 0
  local function build(d)
    if d > #shape then
      k = k + 1
      if type(flat) == "function" then return flat(k - 1) end
      return flat[k]
    end
    local t = {}
    for i = 1, shape[d] do t[i] = build(d + 1) end
    return t
  end
  if #shape == 0 then
    if type(flat) == "function" then return flat(0) end
    return flat[1]
  end
  return build(1)
end

function H.shape_str(shape)
  local parts = {}
  for i = 1, #shape do parts[i] = tostring(shape[i]) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end
H.same_shape = same_shape

local function index_str(k, shape)
  -- the 1-based multi-index of the 0-based flat position k
  local idx = {}
  for d = #shape, 1, -1 do
    local n = shape[d]
    idx[d] = k % n + 1
    k = (k - k % n) / n
  end
  return "[" .. table.concat(idx, ", ") .. "]"
end

local function fmt(v)
  if type(v) == "number" then return string.format("%.9g", v) end
  return tostring(v)
end

--- Compare got (a Tensor, a number or a boolean) with expected (a number,
-- a boolean or a nested table). Checks the shape exactly and every element
-- within tol * max(1, |expected|); tol defaults to the tensor's dtype
-- tolerance. Booleans and integers compare exactly when tol is 0.
function H.assert_close(got, expected, tol, what)
  what = what and (what .. ": ") or ""
  local gshape, gflat
  if cell.is_tensor(got) then
    gshape = got.shape
    gflat = H.flatten(got:totable())
    if tol == nil then tol = H.tol[got.dtype.name] end
  else
    gshape, gflat = H.shape_of(got), H.flatten(got)
  end
  tol = tol or 1e-5
  local eshape, eflat = H.shape_of(expected), H.flatten(expected)
  luassert.is_true(same_shape(gshape, eshape),
    what .. "shape: expected " .. H.shape_str(eshape) .. ", got " .. H.shape_str(gshape))
  for k = 1, #eflat do
    local e, g = eflat[k], gflat[k]
    local ok
    if type(e) == "boolean" or type(g) == "boolean" then
      ok = e == g
    elseif type(e) ~= "number" or type(g) ~= "number" then
      ok = false
    elseif e ~= e then
      ok = g ~= g
    elseif e == math.huge or e == -math.huge then
      ok = g == e
    else
      local scale = math.abs(e)
      if scale < 1 then scale = 1 end
      ok = math.abs(g - e) <= tol * scale
    end
    if not ok then
      luassert.is_true(false, string.format("%sat %s (shape %s): expected %s, got %s (tol %g)", what,
        index_str(k - 1, eshape), H.shape_str(eshape), fmt(e), fmt(g), tol))
    end
  end
  return true
end

--- Exact comparison (shape, values and, when given, the dtype name).
function H.assert_values(got, expected, dtype_name, what)
  if dtype_name then
    luassert.are.equal(dtype_name, got.dtype.name, (what or "") .. " dtype")
  end
  return H.assert_close(got, expected, 0, what)
end

function H.assert_shape(t, shape, what)
  luassert.is_true(same_shape(t.shape, shape),
    (what and what .. ": " or "") .. "shape: expected " .. H.shape_str(shape) .. ", got " .. H.shape_str(t.shape))
end

--- A quick op that must work after any error: the engine and the binding
-- are still usable.
function H.still_works()
  local a = cell.tensor({ 1, 2, 3 })
  local s = (a * 2 + 1):sum():item()
  luassert.are.equal(15, s, "an op after the error")
  local m = cell.ones({ 2, 2 }):matmul(cell.ones({ 2, 2 }))
  luassert.are.equal(2, m[{ 1, 1 }]:item(), "a matmul after the error")
end

--- Run fn (with the extra arguments), expect a Lua error whose message
-- holds `name .. ":"` and every word (plain find); then check that the
-- process keeps working. Returns the message.
function H.expect_error(fn, name, ...)
  local words = { ... }
  local ok, msg = pcall(fn)
  luassert.is_false(ok, "expected a " .. name .. " but the call succeeded")
  luassert.are.equal("string", type(msg), "the error value is a string")
  luassert.is_truthy(string.find(msg, name .. ":", 1, true),
    "expected '" .. name .. ":' in the message: " .. msg)
  for _, w in ipairs(words) do
    luassert.is_truthy(string.find(msg, w, 1, true),
      "expected '" .. tostring(w) .. "' in the message: " .. msg)
  end
  H.still_works()
  return msg
end

--- Broadcast two shapes as NumPy does (nil when they do not broadcast).
function H.broadcast_shape(a, b)
  local n = math.max(#a, #b)
  local out = {}
  for i = 1, n do
    local sa = a[#a - n + i] or 1
    local sb = b[#b - n + i] or 1
    if sa ~= sb and sa ~= 1 and sb ~= 1 then return nil end
    out[i] = sa == 1 and sb or sa
  end
  return out
end

--- Reference broadcasting binary op on nested tables (or numbers): fn(x, y)
-- on every pair; computed in Lua, independent of the engine.
function H.ref_binary(a, b, fn)
  local as, bs = H.shape_of(a), H.shape_of(b)
  local af, bf = H.flatten(a), H.flatten(b)
  local os = assert(H.broadcast_shape(as, bs), "shapes do not broadcast")
  local n = #os
  local function offset(shape, idx)
    local off, mul = 0, 1
    for d = #shape, 1, -1 do
      local i = idx[n - #shape + d]
      if shape[d] == 1 then i = 0 end
      off = off + i * mul
      mul = mul * shape[d]
    end
    return off
  end
  return H.nest(os, function(k)
    local idx = {}
    for d = n, 1, -1 do
      idx[d] = k % os[d]
      k = (k - k % os[d]) / os[d]
    end
    return fn(af[offset(as, idx) + 1], bf[offset(bs, idx) + 1])
  end)
end

--- Apply fn to every leaf of a nested table.
function H.map(v, fn)
  if type(v) ~= "table" then return fn(v) end
  local out = {}
  for i = 1, #v do out[i] = H.map(v[i], fn) end
  return out
end

--- A nested table of shape filled by a deterministic pattern of small
-- integers in [lo, hi] (exact in every dtype, including uint8 and bool).
function H.pattern(shape, lo, hi, mul)
  mul = mul or 7
  local span = hi - lo + 1
  return H.nest(shape, function(k) return lo + (k * mul + 3) % span end)
end

--- The message of the error fn(...) raises, without its "file:line: "
-- prefix, which must name the spec file `file` (errors raised at the
-- caller's line, not inside the module). Calls under test must not be tail
-- calls, or the caller's line is lost.
function H.caller_error(file, fn, ...)
  local ok, msg = pcall(fn, ...)
  luassert.is_false(ok, "expected an error")
  luassert.are.equal("string", type(msg))
  luassert.is_truthy(msg:find(file .. ":%d+: "), "error should point at the caller: " .. msg)
  return (msg:gsub("^.-:%d+: ", "", 1))
end

--- Run a shell command line; returns stdout, stderr and the exit status
-- (portable between Lua 5.4 and LuaJIT, whose os.execute and
-- io.popen():close() differ).
function H.run(cmdline)
  local function q(x) return "'" .. tostring(x):gsub("'", "'\\''") .. "'" end
  local out, err = os.tmpname(), os.tmpname()
  local p = io.popen("(" .. cmdline .. ") >" .. q(out) .. " 2>" .. q(err) .. "; echo $?")
  local rc = tonumber(p:read("*a"):match("(%d+)%s*$"))
  p:close()
  local function slurp(path)
    local f = io.open(path, "rb")
    local text = f and f:read("*a") or ""
    if f then f:close() end
    os.remove(path)
    return text
  end
  return slurp(out), slurp(err), rc
end

--- The host Lua the specs run under, as the build names its folders.
H.LUA = (type(jit) == "table") and "luajit" or "lua5.4"

--- The build folder the specs run against: the one holding cell/core.so.
function H.build_dir()
  local so = package.searchpath("cell.core", package.cpath)
  local dir = so and so:match("^(.-)/[^/]+/cell/core%.so$")
  return dir or "build"
end

--- Names in a folder (ls -A), as a sorted list.
function H.listing(dir)
  local p = io.popen("ls -A '" .. tostring(dir):gsub("'", "'\\''") .. "'")
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  table.sort(out)
  return out
end

--- The fixtures generated by spec/fixtures/gen_ops.py.
function H.fixtures()
  return require "fixtures.ops_fixtures"
end

--- Transpose a nested 2-D table.
function H.transpose2(m)
  local out = {}
  for j = 1, #m[1] do
    out[j] = {}
    for i = 1, #m do out[j][i] = m[i][j] end
  end
  return out
end

H.unpack = unpack

return H
