-- gemm_kernel_spec.lua - which kernel float32 products and convolutions run
-- on, and that the choice changes no result beyond rounding: cell's own
-- gemm (src/backend/sgemm.c, where OpenBLAS took the CPU for one without
-- vector kernels) against OpenBLAS's (CELL_SGEMM=openblas) and between its
-- two widths (CELL_SGEMM=avx2 / avx512), and the 16-lane convolutions
-- against the 8-lane ones (CELL_CONV_ISA=avx2), each in a process of its
-- own since the choice is made once.
local H = require "helpers"
local cell = H.cell

local function cpu_flag(name)
  local f = io.open("/proc/cpuinfo")
  if not f then return false end
  local s = f:read("*a")
  f:close()
  return s:find(" " .. name .. "[ \n]") ~= nil
end

-- Runs code in a fresh interpreter with the environment assignments env;
-- its standard output.
local function run(env, code)
  local f = os.tmpname()
  local h = io.open(f, "w")
  h:write(code)
  h:close()
  local out = H.run(('LUA_PATH=%q LUA_CPATH=%q %s %s %s'):format(package.path, package.cpath, env, H.LUA, f))
  os.remove(f)
  return out
end

-- The kernel's name, then the float32 values of products over several
-- layouts and of a conv2d forward and backward (16 and 32 output
-- channels), each to 9 significant digits (a float32's exact value).
local PROBE = [[
  local cell = require "cell"
  cell.set_seed(3)
  local out = { cell.gemm_kernel() }
  local function put(t)
    local v = t:astype(cell.float64):reshape({ -1 })
    local vals = v:tolist()
    for i = 1, #vals, 7 do out[#out + 1] = ("%.9g"):format(vals[i]) end
  end
  local a, b = cell.randn({ 70, 300 }), cell.randn({ 300, 90 })
  put(a:matmul(b))
  put(b:transpose(1, 2):matmul(a:transpose(1, 2)))
  put(cell.randn({ 20, 600 }):matmul(cell.randn({ 600, 300 })))
  for _, o in ipairs({ 16, 32 }) do
    local x = cell.randn({ 3, 5, 11, 9 })
    local w, bias = cell.randn({ o, 5, 3, 3 }), cell.randn({ o })
    local function f(xx, ww) return cell.ops.conv2d(xx, ww, bias, { padding = 1 }) end
    put(f(x, w))
    local g = cell.grad(function(xx, ww) return (f(xx, ww) * f(xx, ww)):sum() end, { 1, 2 })(x, w)
    local gx, gw = g[1], g[2]
    put(gx)
    put(gw)
  end
  io.write(table.concat(out, " "))
]]

local function fields(s)
  local t = {}
  for w in s:gmatch("%S+") do t[#t + 1] = w end
  return t
end

describe("float32 gemm kernel choice", function()
  it("names one of its kernels", function()
    local k = cell.gemm_kernel()
    assert.is_true(k == "openblas" or k == "cell-avx512" or k == "cell-avx2", k)
  end)

  it("CELL_SGEMM=openblas keeps OpenBLAS; cell's kernels agree with it to float32 rounding", function()
    local base = fields(run("CELL_SGEMM=openblas", PROBE))
    assert.are.equal("openblas", base[1])
    for _, isa in ipairs({ "avx2", "avx512" }) do
      local has = isa == "avx2" and cpu_flag("avx2") and cpu_flag("fma") or isa == "avx512" and cpu_flag("avx512f")
      local got = fields(run("CELL_SGEMM=" .. isa, PROBE))
      assert.are.equal(has and "cell-" .. isa or "openblas", got[1])
      assert.are.equal(#base, #got)
      for i = 2, #base do
        local x, y = tonumber(base[i]), tonumber(got[i])
        assert.is_true(math.abs(x - y) <= 1e-4 * (1 + math.abs(x)), isa .. " value " .. i .. ": " .. x .. " vs " .. y)
      end
    end
  end)

  it("gives the same bits at both widths, and the convolutions the same bits on 8 and 16 lanes", function()
    if not (cpu_flag("avx512f") and cpu_flag("avx2")) then return end
    local wide = run("CELL_SGEMM=avx512", PROBE)
    local narrow = run("CELL_SGEMM=avx2 CELL_CONV_ISA=avx2", PROBE)
    local a, b = fields(wide), fields(narrow)
    assert.are.equal("cell-avx512", a[1])
    assert.are.equal("cell-avx2", b[1])
    table.remove(a, 1)
    table.remove(b, 1)
    assert.are.same(b, a)
  end)
end)
