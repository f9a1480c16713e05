-- rng_spec.lua - the random generator belongs to the Lua state: one
-- stream per state, which rand, randn, randint, dropout and the
-- initializers all draw from and cell.set_seed restarts; other states (on
-- this thread or others) neither perturb it nor are perturbed by it.
local H = require "helpers"
local cell = H.cell

local LUA = H.LUA

local build_dir = H.build_dir
local STATES = build_dir() .. "/" .. LUA .. "/test_states"

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function values(t) return t:reshape({ -1 }):tolist() end

local function concat(a, b)
  local v = values(a)
  for _, x in ipairs(values(b)) do v[#v + 1] = x end
  return v
end

describe("the state's random stream", function()
  it("continues across calls and restarts with set_seed", function()
    cell.set_seed(123)
    local a, b = cell.rand({ 10 }, cell.float64), cell.rand({ 10 }, cell.float64)
    cell.set_seed(123)
    assert.are.same(concat(a, b), values(cell.rand({ 20 }, cell.float64)))
  end)

  it("is shared by the state's coroutines", function()
    cell.set_seed(7)
    local a = cell.randn({ 6 }, cell.float64)
    local b
    coroutine.wrap(function() b = cell.randn({ 6 }, cell.float64) end)()
    cell.set_seed(7)
    assert.are.same(concat(a, b), values(cell.randn({ 12 }, cell.float64)))
  end)

  it("is the one dropout draws its masks from", function()
    -- dropout of 8 elements takes 2 Philox blocks, as rand of 4 does.
    cell.set_seed(31)
    cell.ops.dropout(cell.ones({ 8 }), 0.5, true)
    local after = cell.rand({ 4 }, cell.float64)
    cell.set_seed(31)
    local whole = values(cell.rand({ 8 }, cell.float64))
    assert.are.same({ whole[5], whole[6], whole[7], whole[8] }, values(after))
  end)
end)

describe("tests/lua/test_states (Lua states alone, interleaved and on threads)", function()
  setup(function()
    local f = io.open(STATES, "rb")
    assert(f, STATES .. " is not built (run make)")
    f:close()
  end)

  it("draws the same numbers in each state whatever the others do", function()
    local env = "env -u LUA_PATH -u LUA_PATH_5_4 -u LUA_INIT -u LUA_INIT_5_4 CELL_LUA_DIR=lua "
    local out, err, rc = H.run(env .. quote(STATES))
    assert.are.equal(0, rc, out .. err)
    assert.falsy(out:find("FAIL", 1, true), out)
    for _, run in ipairs({ "interleaved", "threads" }) do
      for i = 1, 4 do
        local line = ("ok %s: state %d draws what it draws alone\n"):format(run, i)
        assert.truthy(out:find(line, 1, true), out)
      end
    end
    assert.truthy(out:find("ok alone: seeds give different streams\n", 1, true), out)
    assert.truthy(out:find("\n0 failed\n", 1, true), out)
  end)
end)
