-- binary_vector_spec.lua - the vector loops of float add, sub, mul and div
-- (src/ops/binary.c) on contiguous runs of every length, a scalar
-- broadcast and in place: each element is the IEEE result of its own
-- operation, computed here in Lua's double on float32 values and rounded
-- to float32 (exact for + - * /), or in double for float64.
local cell = require "cell"

local OPS = {
  add = function(x, y) return x + y end,
  sub = function(x, y) return x - y end,
  mul = function(x, y) return x * y end,
  div = function(x, y) return x / y end,
}

local function values(n)
  local v = {}
  for i = 1, n do v[i] = (math.random() - 0.5) * 2 ^ math.random(-20, 20) end
  if n > 3 then v[2], v[3] = 0, -0.0 end
  return v
end

local function check(got, want, dt, what)
  local ref = cell.tensor(want, dt):totable() -- rounded once to dt
  local g = got:totable()
  assert.are.equal(#ref, #g, what)
  for i = 1, #ref do
    local a, b = g[i], ref[i]
    if not (a == b or (a ~= a and b ~= b)) then
      error(("%s: element %d: got %.9g, expected %.9g"):format(what, i, a, b))
    end
  end
end

describe("float binary ops on contiguous runs", function()
  it("give each element's own IEEE result at every length, broadcast and in place", function()
    math.randomseed(42)
    for _, dt in ipairs({ cell.float32, cell.float64 }) do
      for _ = 1, 40 do
        local n = math.random(1, 300)
        local av, bv = values(n), values(n)
        local a, b = cell.tensor(av, dt), cell.tensor(bv, dt)
        av, bv = a:totable(), b:totable() -- the stored values
        local s = bv[1]
        for name, f in pairs(OPS) do
          local want, wants = {}, {}
          for i = 1, n do
            want[i] = f(av[i], bv[i])
            wants[i] = f(av[i], s)
          end
          local what = ("%s %s n=%d"):format(dt.name, name, n)
          check(cell.ops[name](a, b), want, dt, what)
          check(cell.ops[name](a, cell.tensor(s, dt)), wants, dt, what .. " scalar")
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
end)
