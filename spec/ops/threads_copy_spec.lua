-- threads_copy_spec.lua - strided iterations of short rows split over
-- threads from fewer elements (src/core/iter.c: each row of a strided
-- iteration weighs ITER_ROW_COST elements against the bar; issue 15). A
-- Transformer's heads merged, [B, H, T, dh] transposed to [B, T, H, dh] and
-- reshaped to [B, T, H * dh], is a copy of rows of dh elements: over random
-- odd shapes of 20K to 60K elements (below the old 64K-element bar, past
-- the new one) and a few below both, and the reverse split of heads, the
-- result at 2 threads equals the one at 1 bit for bit and every element is
-- where the transpose puts it: a range skipped, run twice or shifted shows
-- at the element.
local cell = require "cell"
local H = require "helpers"
local T = require "helpers.threads"

local f32, f64 = cell.float32, cell.float64

local function flat(t) return t:astype(f64):contiguous():reshape({ -1 }):totable() end

--- fn() at n threads, as a flat float64 table.
local function at(n, fn) return flat(T.at(n, fn)) end

local function rnd(lo, hi) return math.random(lo, hi) end

--- y = x transposed (dims 2 and 3 of 4) at 1 and 2 threads: equal to each
-- other and to x's element at the transposed index.
local function check(x, fn, what)
  local s = x.shape
  local one, two = at(1, fn), at(2, fn)
  local xs = flat(x)
  assert.are.equal(#xs, #one, what .. ": sizes")
  local i = 0
  -- y [s1, s3, s2, s4]: element (a, t, h, d) is x's (a, h, t, d)
  for a = 0, s[1] - 1 do
    for t = 0, s[3] - 1 do
      for h = 0, s[2] - 1 do
        for d = 0, s[4] - 1 do
          i = i + 1
          local e = xs[((a * s[2] + h) * s[3] + t) * s[4] + d + 1]
          if one[i] ~= two[i] then
            error(("%s element %d: %.9g at 1 thread, %.9g at 2"):format(what, i, one[i], two[i]))
          end
          if one[i] ~= e then error(("%s element %d: got %.9g, expected %.9g"):format(what, i, one[i], e)) end
        end
      end
    end
  end
end

describe("strided copies of short rows split over threads", function()
  local prev
  setup(function() prev = cell.get_num_threads() end)
  teardown(function() cell.set_num_threads(prev) end)

  math.randomseed(1533)
  local cases = { { 16, 4, 32, 16 } } -- a tiny GPT's heads: 32K floats in rows of 16
  for _ = 1, 5 do
    local dh = 2 * rnd(1, 8) + 1
    local b, h = 2 * rnd(2, 7) + 1, rnd(2, 5)
    local t = math.floor(rnd(20000, 60000) / (b * h * dh))
    if t % 2 == 0 then t = t + 1 end
    cases[#cases + 1] = { b, h, t, dh }
  end
  cases[#cases + 1] = { 3, 2, 17, 5 } -- below every bar

  for ci, s in ipairs(cases) do
    it(("case %d: heads %s merged and split"):format(ci, H.shape_str(s)), function()
      cell.set_seed(ci)
      local x = cell.randn(s, f32)
      check(x, function() return x:transpose(2, 3):reshape({ s[1], s[3], s[2] * s[4] }) end, "merge")
      -- the reverse: [B, T, H * dh] viewed as [B, T, H, dh], transposed back
      local y = cell.randn({ s[1], s[3], s[2], s[4] }, f32)
      local s2 = { s[1], s[3], s[2], s[4] }
      local yt = y:reshape(s2)
      check(yt, function() return yt:transpose(2, 3):contiguous() end, "split")
    end)
  end
end)
