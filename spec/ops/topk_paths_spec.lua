-- topk_paths_spec.lua - topk's fast paths (src/ops/sort.c: the float
-- filter over 16-element blocks, the sorted keep array for small k, the
-- heap for larger k, the selection for k near the size) checked against
-- the stable sort on random shapes and k: ties, NaN, -0 / +0 and
-- infinities, float32 / float64 / int32, contiguous and strided lines,
-- largest and smallest.
local cell = require "cell"

local nan, inf = 0 / 0, math.huge

-- Random line contents: a mix of normal values, a few repeated values
-- (ties), NaN, infinities and signed zeros, by `kind`.
local function value(kind)
  local u = math.random()
  if kind == "ties" then return math.random(-3, 3) end
  if kind == "specials" then
    if u < 0.05 then return nan end
    if u < 0.08 then return inf end
    if u < 0.11 then return -inf end
    if u < 0.2 then return -0.0 end
    if u < 0.3 then return 0.0 end
  end
  return (math.random() - 0.5) * 8
end

local function random_matrix(rows, cols, kind)
  local t = {}
  for r = 1, rows do
    local row = {}
    for c = 1, cols do row[c] = value(kind) end
    t[r] = row
  end
  return t
end

-- a and b hold the same values, NaN matching NaN and -0 matching +0.
local function same_values(a, b, what)
  local ta, tb = a:reshape({ -1 }):totable(), b:reshape({ -1 }):totable()
  assert.are.equal(#tb, #ta, what .. ": element count")
  for i = 1, #ta do
    local x, y = ta[i], tb[i]
    if not ((x ~= x and y ~= y) or x == y) then
      error(("%s: element %d is %s, the sort gives %s"):format(what, i, tostring(x), tostring(y)))
    end
  end
end

local function same_indices(a, b, what)
  local ta, tb = a:reshape({ -1 }):totable(), b:reshape({ -1 }):totable()
  assert.are.equal(#tb, #ta, what .. ": index count")
  for i = 1, #ta do
    if ta[i] ~= tb[i] then
      error(("%s: index %d is %s, the stable sort gives %s"):format(what, i, tostring(ta[i]), tostring(tb[i])))
    end
  end
end

local function check(x, k, dim, largest, what)
  local tv, ti = x:topk(k, dim, largest)
  local sv, si = x:sort(dim, largest)
  same_indices(ti, si:narrow(dim, 1, k), what .. " indices")
  same_values(tv, sv:narrow(dim, 1, k), what .. " values")
end

describe("topk's fast paths agree with the stable sort", function()
  local kinds = { "normal", "ties", "specials" }
  local dtypes = { cell.float32, cell.float64, cell.int32 }

  it("on random shapes, k, dtypes and contents", function()
    math.randomseed(13)
    for trial = 1, 60 do
      local rows, cols = math.random(1, 6), math.random(1, 300)
      local kind = kinds[(trial - 1) % 3 + 1]
      local dt = dtypes[math.random(1, 3)]
      if dt == cell.int32 and kind == "specials" then kind = "ties" end
      local x = cell.tensor(random_matrix(rows, cols, kind), dt)
      local ks = { 1, math.random(1, cols), cols, math.min(cols, math.random(1, 40)) }
      for _, k in ipairs(ks) do
        for _, largest in ipairs { true, false } do
          local what = ("trial %d (%s, %s, %dx%d, k = %d, largest = %s)"):format(trial, kind, tostring(dt),
            rows, cols, k, tostring(largest))
          check(x, k, 2, largest, what .. " rows")
          if k <= rows then check(x, k, 1, largest, what .. " columns") end
          check(x:transpose(1, 2), k, 1, largest, what .. " strided lines")
        end
      end
    end
  end)

  it("on long lines where the block filter rejects most elements", function()
    cell.set_seed(21)
    for _, dt in ipairs { cell.float32, cell.float64 } do
      local x = cell.randn({ 4, 4099 }, dt)
      for _, k in ipairs { 1, 5, 16, 32, 33, 100, 512, 4099 } do
        check(x, k, 2, true, ("%s k = %d largest"):format(tostring(dt), k))
        check(x, k, 2, false, ("%s k = %d smallest"):format(tostring(dt), k))
      end
    end
  end)

  it("with NaN in the kept set, and NaN or infinities met late in the line", function()
    local row = {}
    for i = 1, 200 do row[i] = (i % 7) - 3 end
    row[150], row[180], row[199] = nan, inf, nan
    local x = cell.tensor({ row }, cell.float32)
    check(x, 3, 2, true, "largest")
    check(x, 3, 2, false, "smallest")
    local tv, ti = x:topk(3, 2)
    assert.are.same({ 150, 199, 180 }, ti[1]:totable())
    local first = tv:totable()[1][1]
    assert.is_true(first ~= first)
    local all_nan = {}
    for i = 1, 40 do all_nan[i] = nan end
    check(cell.tensor({ all_nan }), 5, 2, true, "all NaN largest")
    check(cell.tensor({ all_nan }), 5, 2, false, "all NaN smallest")
  end)

  it("with signed zeros as ties kept in position order", function()
    local row = {}
    for i = 1, 64 do row[i] = (i % 2 == 0) and 0.0 or -0.0 end
    local x = cell.tensor({ row }, cell.float64)
    local _, ti = x:topk(5, 2)
    assert.are.same({ 1, 2, 3, 4, 5 }, ti[1]:totable())
    local _, si = x:topk(5, 2, false)
    assert.are.same({ 1, 2, 3, 4, 5 }, si[1]:totable())
  end)
end)
