-- lowp_gemm_spec.lua - float16/bfloat16 matmul, bmm, Dense and conv2d on
-- the low-precision gemm backends (AVX512-BF16 where cpuid has it, float32
-- conversion elsewhere; CELL_BF16_ISA=0 forces the second): against a
-- float64 product of the same rounded operands, with any strides and edge
-- tiles. The error allowed is half a unit in the last place of the result's
-- dtype plus float32 accumulation (1e-5 of the sum of |a||b|).
local H = require "helpers"
local cell = H.cell

local EPS = { [cell.bfloat16] = 2 ^ -8, [cell.float16] = 2 ^ -11 }

local function check(got, a, b, dt, what)
  local a64, b64 = a:astype(cell.float64), b:astype(cell.float64)
  local ref = a64:matmul(b64)
  local bound = ref:abs() * EPS[dt] + a64:abs():matmul(b64:abs()) * 1e-5 + 1e-30
  local excess = ((got:astype(cell.float64) - ref):abs() - bound):max():item()
  assert.is_true(excess <= 0, what .. ": error past the bound by " .. excess)
end

local function has_bf16_isa()
  local f = io.open("/proc/cpuinfo")
  if not f then return false end
  local s = f:read("*a")
  f:close()
  return s:find("avx512_bf16", 1, true) ~= nil
end

describe("low-precision gemm", function()
  it("picks the bfloat16 kernel by cpuid and float32 conversion for float16", function()
    local bf = cell.core._gemm_backend(cell.bfloat16, 64, 64, 64)
    local native = has_bf16_isa() and os.getenv("CELL_BF16_ISA") ~= "0"
    assert.are.equal(native and "bf16-avx512" or "lowp", bf)
    assert.are.equal("lowp", cell.core._gemm_backend(cell.float16, 64, 64, 64))
    assert.are.equal("cpu", cell.core._gemm_backend(cell.bfloat16, 4, 4, 4)) -- too small to pack
  end)

  it("matmul: edge tiles, odd k, transposed and strided operands", function()
    cell.set_seed(11)
    for _, dt in ipairs({ cell.bfloat16, cell.float16 }) do
      for _, s in ipairs({ { 9, 33, 7 }, { 64, 70, 129 }, { 8, 32, 64 }, { 100, 3, 300 }, { 1, 50, 80 }, { 50, 1, 80 } }) do
        local m, n, k = s[1], s[2], s[3]
        local a, b = cell.randn({ m, k }):astype(dt), cell.randn({ k, n }):astype(dt)
        local what = ("%s %dx%dx%d"):format(tostring(dt), m, n, k)
        check(a:matmul(b), a, b, dt, what)
        local at, bt = a:transpose(1, 2):contiguous():transpose(1, 2), b:transpose(1, 2):contiguous():transpose(1, 2)
        check(at:matmul(bt), a, b, dt, what .. " transposed")
        local wide = cell.randn({ m, 2 * k }):astype(dt)[{ {}, { 1, 2 * k, 2 } }] -- column stride 2
        check(wide:matmul(b), wide, b, dt, what .. " strided")
      end
    end
  end)

  it("bmm, Dense and conv2d in bfloat16 agree with float32 on the rounded operands", function()
    cell.set_seed(12)
    local bf = cell.bfloat16
    local a, b = cell.randn({ 3, 20, 40 }):astype(bf), cell.randn({ 3, 40, 24 }):astype(bf)
    local c = a:bmm(b)
    for i = 1, 3 do check(c[i], a[i], b[i], bf, "bmm " .. i) end
    local x = cell.randn({ 2, 8, 10, 10 }):astype(bf)
    local w = cell.randn({ 16, 8, 3, 3 }):astype(bf)
    local y = cell.ops.conv2d(x, w)
    local y32 = cell.ops.conv2d(x:astype(cell.float32), w:astype(cell.float32))
    -- each output is rounded once from a float32 sum: within half a bfloat16
    -- step of float32's, 2^-8 of its magnitude
    local function close(a, b, what)
      local excess = ((a:astype(cell.float32) - b):abs() - b:abs() * 2 ^ -8 - 1e-6):max():item()
      assert.is_true(excess <= 0, what .. ": past the bound by " .. excess)
    end
    close(y, y32, "conv2d")
    -- with a bias, stride 2 and padding (the bias is added before the rounding)
    local bias = cell.randn({ 16 }):astype(bf)
    local opts = { stride = 2, padding = 1 }
    y = cell.ops.conv2d(x, w, bias, opts)
    y32 = cell.ops.conv2d(x:astype(cell.float32), w:astype(cell.float32), bias:astype(cell.float32), opts)
    assert.are.equal(bf, y.dtype)
    close(y, y32, "conv2d with bias, stride 2, padding 1")
  end)

  it("gives the same products with CELL_BF16_ISA=0 (the float32-conversion path)", function()
    local code = [[
      local cell = require "cell"
      cell.set_seed(5)
      local a, b = cell.randn({ 37, 45 }):astype(cell.bfloat16), cell.randn({ 45, 29 }):astype(cell.bfloat16)
      io.write(cell.core._gemm_backend(cell.bfloat16, 64, 64, 64), " ")
      io.write(("%.9g"):format(a:matmul(b):astype(cell.float64):abs():sum():item()))
    ]]
    local f = os.tmpname()
    local h = io.open(f, "w")
    h:write(code)
    h:close()
    local env = ('LUA_PATH=%q LUA_CPATH=%q '):format(package.path, package.cpath)
    local out0 = H.run(env .. "CELL_BF16_ISA=0 " .. H.LUA .. " " .. f)
    local out1 = H.run(env .. H.LUA .. " " .. f)
    os.remove(f)
    assert.are.equal("lowp", out0:match("^(%S+)"))
    local s0, s1 = tonumber(out0:match(" (%S+)$")), tonumber(out1:match(" (%S+)$"))
    -- both round float32 sums once; the sums differ only in accumulation order
    assert.is_true(math.abs(s0 - s1) <= 1e-3 * s0, out0 .. " vs " .. out1)
  end)
end)
