-- binary_vector_spec.lua - the vector loops of float32 and float64 add,
-- sub, mul, div, maximum and minimum (src/ops/binary.c, `omp simd`; issue
-- 15). Each element is the IEEE result of its own operation, computed here
-- in Lua's double and rounded once to the dtype (exact for + - * /): over
-- sizes around the vector widths (1 to 33, odd ones, long tails) with NaN,
-- infinities and signed zeros in either operand; over random lengths with
-- a scalar broadcast, in place and a strided operand (the element loop, the
-- same values); and an output that partly overlaps its input keeps the
-- element loop's in-order result.
local cell = require "cell"

local f32, f64 = cell.float32, cell.float64

local function isnan(v) return v ~= v end

local OPS = {
  add = function(x, y) return x + y end,
  sub = function(x, y) return x - y end,
  mul = function(x, y) return x * y end,
  div = function(x, y) return x / y end,
}
-- NaN taken from either side
local function mx(x, y) return (isnan(x) or isnan(y)) and 0 / 0 or math.max(x, y) end
local function mn(x, y) return (isnan(x) or isnan(y)) and 0 / 0 or math.min(x, y) end

-- got (a tensor) holds want (a Lua table) rounded once to dt, element for
-- element; NaN matches NaN, and 0 matches -0.
local function check(got, want, dt, what)
  local ref = cell.tensor(want, dt):totable()
  local g = got:totable()
  assert.are.equal(#ref, #g, what .. ": size")
  for i = 1, #ref do
    local a, b = g[i], ref[i]
    if not (a == b or (isnan(a) and isnan(b))) then
      error(("%s: element %d: got %.9g, expected %.9g"):format(what, i, a, b))
    end
  end
end

local function elementwise(av, bv, f)
  local r = {}
  for i = 1, #av do r[i] = f(av[i], bv[i]) end
  return r
end

describe("float binary ops in vector code", function()
  local sizes = { 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 1001 }
  for _, dt in ipairs({ f32, f64 }) do
    for _, n in ipairs(sizes) do
      it(("%s, %d elements, NaN and infinities past the first vector"):format(dt, n), function()
        cell.set_seed(n)
        local a = cell.randn({ n }, dt)
        local b = cell.rand({ n }, dt) + 0.5 -- no zero divisor
        if n >= 8 then
          a[n - 2] = 0 / 0
          b[n - 4] = 0 / 0
          a[n - 5] = math.huge
          a[n - 6], b[n - 6] = math.huge, -math.huge -- inf + -inf, inf / -inf: NaN
          a[n - 7] = -0.0
        end
        local av, bv = a:totable(), b:totable()
        for name, f in pairs(OPS) do
          check(cell.ops[name](a, b), elementwise(av, bv, f), dt, name)
        end
        check(a:maximum(b), elementwise(av, bv, mx), dt, "maximum")
        check(a:minimum(b), elementwise(av, bv, mn), dt, "minimum")
        local c = a:clone()
        c:add_(b)
        check(c, elementwise(av, bv, OPS.add), dt, "add_ in place")
        local d = a:clone()
        d:mul_(d)
        check(d, elementwise(av, av, OPS.mul), dt, "mul_ of itself")
      end)
    end
  end

  it("give each element's own result at random lengths, broadcast, in place and strided", function()
    local function values(n)
      local v = {}
      for i = 1, n do v[i] = (math.random() - 0.5) * 2 ^ math.random(-20, 20) end
      if n > 3 then v[2], v[3] = 0, -0.0 end
      return v
    end
    math.randomseed(42)
    for _, dt in ipairs({ f32, f64 }) do
      for _ = 1, 40 do
        local n = math.random(1, 300)
        local a, b = cell.tensor(values(n), dt), cell.tensor(values(n), dt)
        local av, bv = a:totable(), b:totable() -- the stored values
        local s = bv[1]
        local sv = {}
        for i = 1, n do sv[i] = s end
        for name, f in pairs(OPS) do
          local want = elementwise(av, bv, f)
          local what = ("%s %s n=%d"):format(dt.name, name, n)
          check(cell.ops[name](a, b), want, dt, what)
          check(cell.ops[name](a, cell.tensor(s, dt)), elementwise(av, sv, f), dt, what .. " scalar")
          local c = a:clone()
          c[name .. "_"](c, b)
          check(c, want, dt, what .. " in place")
          -- a strided operand takes the element-by-element loop: same values
          local wide = cell.stack({ b, b }, 2)
          check(cell.ops[name](a, wide:select(2, 1)), want, dt, what .. " strided")
        end
      end
    end
  end)

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
    check(t, want, f32, "overlapping add_")
  end)
end)
