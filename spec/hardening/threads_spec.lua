-- threads_spec.lua - cell.set_num_threads takes an integer in [1, 1024]
-- (CELL_MAX_THREADS): a huge count used to crash inside OpenMP, and 0,
-- negative, NaN or fractional counts were clamped or truncated silently.
local H = require "helpers"
local cell = require "cell"

local function fails_with(fn, text)
  local msg = H.expect_error(fn, (text:match("^(%a+):")))
  msg = msg:gsub("^[^:]*:%d+: ", "")
  assert.are.equal(text, msg)
end

local RANGE = "set_num_threads: n must be an integer in [1, 1024], but got "

describe("set_num_threads", function()
  local before
  before_each(function() before = cell.get_num_threads() end)
  after_each(function() cell.set_num_threads(before) end)

  local bad = {
    { 65536, "65536" }, { 1e9, "1000000000" }, { 1025, "1025" }, { 0, "0" }, { -1, "-1" },
    { 0 / 0, "nan" }, { 2.5, "2.5" }, { 1 / 0, "inf" }, { 2 ^ 63, "9.2233720368548e+18" },
  }
  for _, case in ipairs(bad) do
    it("refuses " .. case[2] .. " and keeps the count", function()
      fails_with(function() cell.set_num_threads(case[1]) end, "ValueError: " .. RANGE .. case[2])
      assert.are.equal(before, cell.get_num_threads())
    end)
  end

  it("refuses a value that is not a number", function()
    fails_with(function() cell.set_num_threads("4") end, "TypeError: " .. RANGE .. "string")
    fails_with(function() cell.set_num_threads() end, "TypeError: " .. RANGE .. "no value")
  end)

  it("takes 1 and 1024, and the kernels still run", function()
    for _, n in ipairs({ 1, 1024, 3 }) do
      cell.set_num_threads(n)
      assert.are.equal(n, cell.get_num_threads())
      local x = cell.rand({ 300, 300 })
      assert.is_true(math.abs((x + x):sum():item() - 2 * x:sum():item()) < 1)
    end
  end)
end)
