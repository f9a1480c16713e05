-- binary_simd_spec.lua - float32 and float64 add, sub, mul, div, maximum
-- and minimum in vector code (src/ops/binary.c, `omp simd`; issue 15). Over
-- sizes around the vector widths (1 to 33 and odd ones), every element
-- equals the value computed here in Lua (NaN taken by maximum and minimum
-- from either side), in place too; an output that partly overlaps its input
-- keeps the element loop's in-order result.
local cell = require "cell"

local f32, f64 = cell.float32, cell.float64

local function isnan(v) return v ~= v end

local function check(got, want, tol, what)
  assert.are.equal(#want, #got, what .. ": size")
  for i = 1, #want do
    local g, w = got[i], want[i]
    if isnan(w) then
      if not isnan(g) then error(("%s element %d: got %.9g, expected NaN"):format(what, i, g)) end
    elseif isnan(g) or math.abs(g - w) > tol * math.abs(w) then
      error(("%s element %d: got %.9g, expected %.9g"):format(what, i, g, w))
    end
  end
end

describe("binary ops in vector code", function()
  local sizes = { 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 1001 }
  for _, dt in ipairs({ f32, f64 }) do
    -- float32: within its rounding of the exact result; float64: exact or
    -- within its own rounding (Lua computes in double).
    local tol = dt == f32 and 1.2e-7 or 2.3e-16
    for _, n in ipairs(sizes) do
      it(("%s, %d elements"):format(dt, n), function()
        cell.set_seed(n)
        local a = cell.randn({ n }, dt)
        local b = cell.rand({ n }, dt) + 0.5 -- no zero divisor
        if n >= 8 then -- NaN in either operand, past the first vector
          a[n - 2] = 0 / 0
          b[n - 4] = 0 / 0
        end
        local av, bv = a:totable(), b:totable()
        local function want(fn)
          local r = {}
          for i = 1, n do r[i] = fn(av[i], bv[i]) end
          return r
        end
        local function mx(x, y) return (isnan(x) or isnan(y)) and 0 / 0 or math.max(x, y) end
        local function mn(x, y) return (isnan(x) or isnan(y)) and 0 / 0 or math.min(x, y) end
        check((a + b):totable(), want(function(x, y) return x + y end), tol, "add")
        check((a - b):totable(), want(function(x, y) return x - y end), tol, "sub")
        check((a * b):totable(), want(function(x, y) return x * y end), tol, "mul")
        check((a / b):totable(), want(function(x, y) return x / y end), tol, "div")
        check(a:maximum(b):totable(), want(mx), 0, "maximum")
        check(a:minimum(b):totable(), want(mn), 0, "minimum")
        local c = a:clone()
        c:add_(b)
        check(c:totable(), want(function(x, y) return x + y end), tol, "add_ in place")
        local d = a:clone()
        d:mul_(d)
        check(d:totable(), want(function(x) return x * x end), tol, "mul_ of itself")
      end)
    end
  end

  it("an output that partly overlaps an input runs in element order", function()
    -- t[2..40] += t[1..39]: each element adds the one just written, a
    -- running sum (a vector loop would add the old values instead)
    local t = cell.arange(1, 41, 1, f32)
    t[{ { 2, 40 } }]:add_(t[{ { 1, 39 } }])
    local want, s = {}, 0
    for i = 1, 40 do
      s = s + i
      want[i] = s
    end
    check(t:totable(), want, 0, "overlapping add_")
  end)
end)
