-- layer_norm_f32_spec.lua - layer_norm's float32 fast path (src/ops/norm.c:
-- the forward's rows, the input's gradient per row and the weight and bias
-- gradients per block of columns on float32 vectors, in double, without
-- the generic path's conversion buffers). Over random shapes (rows of 1 to
-- 150 elements, most not a multiple of the 4- and 8-wide vectors, so the
-- scalar tails run), one or two normalised dimensions, inputs and output
-- gradients read through strided views (a transpose, a narrowed slice),
-- with and without weight and bias, and each gradient asked for alone (the
-- column kernel with only one of its sums): the float32 results and
-- gradients agree with the same computation in float64.
local cell = require "cell"
local H = require "helpers"

local ops = cell.ops
local f32, f64 = cell.float32, cell.float64

local function rnd(lo, hi) return math.random(lo, hi) end

-- A float32 tensor of the given shape {rows, d} read through a layout
-- other than the contiguous one: "t" a transpose of a {d, rows} tensor,
-- "n" a narrowed slice of a wider one; "c" contiguous.
local function make(rows, d, layout, shift)
  if layout == "t" then return (cell.randn({ d, rows }) + shift):transpose(1, 2) end
  if layout == "n" then return (cell.randn({ rows, d + 3 }) + shift):narrow(2, 2, d) end
  return cell.randn({ rows, d }) + shift
end

-- layer_norm over the last k dimensions of x viewed as {rows / a, a, d / b}
-- etc.: k = 1 normalises rows of d; k = 2 normalises {2, d / 2} blocks.
local function run(x, w, b, gy, k, shape, idx)
  local function fn(xx, ww, bb)
    return ops.layer_norm(xx:reshape(shape), k, ww, bb, 1e-5)
  end
  local args = { x, w, b }
  local out = fn(x, w, b)
  local g = cell.grad(function(xx, ww, bb) return (fn(xx, ww, bb) * gy):sum() end, idx)(x, w, b)
  if cell.is_tensor(g) then g = { g } end
  local r = { out:astype(f64):totable() }
  for _, t in ipairs(g) do r[#r + 1] = t:astype(f64):totable() end
  return r, args
end

describe("layer_norm float32 fast path", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  math.randomseed(4242)
  local cases = { { rows = 512, d = 64, k = 1, layout = "c", grads = { 1, 2, 3 } },
    { rows = 3, d = 1, k = 1, layout = "c", grads = { 1, 2, 3 } },
    { rows = 5, d = 3, k = 1, layout = "t", grads = { 1 } },
    { rows = 9, d = 7, k = 1, layout = "n", grads = { 2 } },
    { rows = 11, d = 12, k = 2, layout = "c", grads = { 3 } } }
  local layouts = { "c", "t", "n" }
  local gsets = { { 1, 2, 3 }, { 1 }, { 2 }, { 3 }, { 2, 3 } }
  for _ = 1, 8 do
    local d = rnd(1, 150)
    local k = 1
    if d % 2 == 0 and rnd(0, 2) == 0 then k = 2 end
    cases[#cases + 1] = { rows = rnd(1, 300), d = d, k = k, layout = layouts[rnd(1, 3)], grads = gsets[rnd(1, 5)],
      none = rnd(0, 3) == 0, threads = rnd(1, 2) }
  end

  for i, c in ipairs(cases) do
    local tag = ("case %d: %d rows of %d (%s, k %d, grads %s%s)"):format(i, c.rows, c.d, c.layout, c.k,
      table.concat(c.grads, ","), c.none and ", no weight or bias" or "")
    it(tag, function()
      cell.set_seed(100 + i)
      cell.set_num_threads(c.threads or 1)
      local x = make(c.rows, c.d, c.layout, 3) -- a mean away from 0: the centring matters
      local gy = make(c.rows, c.d, c.layout == "c" and "t" or "c", 0)
      local norm = c.k == 1 and { c.d } or { 2, c.d / 2 }
      local shape = c.k == 1 and { c.rows, c.d } or { c.rows, 2, c.d / 2 }
      local w, b = cell.randn(norm) * 0.5 + 1, cell.randn(norm) * 0.5
      local idx = c.grads
      if c.none then w, b, idx = nil, nil, { 1 } end
      gy = gy:reshape(shape)
      local got = run(x, w, b, gy, c.k, shape, idx)
      local ref = run(x:astype(f64), w and w:astype(f64), b and b:astype(f64), gy:astype(f64), c.k, shape, idx)
      -- the output and the input's gradient are O(1) per element; the
      -- weight and bias gradients are sums over the rows
      local tols = { 2e-5 }
      for j, a in ipairs(idx) do tols[j + 1] = a == 1 and 5e-5 or 2e-5 * math.sqrt(c.rows) end
      for j = 1, #ref do
        H.assert_close(got[j], ref[j], tols[j], tag .. " result " .. j)
      end
      cell.set_num_threads(prev)
    end)
  end

  it("keeps float32 and its statistics in double", function()
    local x = cell.tensor({ { 1e4 + 1, 1e4 + 3 }, { -2, 2 } }, f32)
    local y = ops.layer_norm(x, 1, nil, nil, 0)
    H.assert_close(y, { { -1, 1 }, { -1, 1 } }, 1e-6)
    assert.are.equal(f32, y.dtype)
  end)
end)
