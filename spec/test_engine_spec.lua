-- test_engine_spec.lua - the C test binary (tests/test_engine.c) runs one
-- suite by name: `test_engine io` runs only the io suite, `--list` lists
-- the suites, an unknown name is an error with exit status 2.
local H = require "helpers"

local build_dir = H.build_dir
local BIN = build_dir() .. "/test_engine"

describe("the C test binary", function()
  local have = io.open(BIN, "rb")
  if have then have:close() end

  it("is built by make test", function()
    assert.is_truthy(have, BIN .. " exists")
  end)

  it("lists its suites, one a line", function()
    local out, err, rc = H.run(BIN .. " --list")
    assert.are.equal(0, rc, err)
    local names = {}
    for name in out:gmatch("[^\n]+") do names[#names + 1] = name end
    assert.is_true(#names >= 10)
    local set = {}
    for _, n in ipairs(names) do set[n] = true end
    for _, n in ipairs { "engine", "io", "conv", "optim", "capi" } do assert.is_true(set[n], n) end
  end)

  it("runs only the named suite", function()
    local all_out = H.run(BIN .. " --list")
    local io_out, err, rc = H.run(BIN .. " io")
    assert.are.equal(0, rc, err)
    local passed, failed = io_out:match("(%d+) passed, (%d+) failed")
    assert.are.equal("0", failed)
    local two = H.run(BIN .. " io rng")
    local passed2 = two:match("(%d+) passed")
    assert.is_true(tonumber(passed) > 0)
    assert.is_true(tonumber(passed2) > tonumber(passed), "io and rng run more checks than io alone")
    assert.is_truthy(all_out:find("rng", 1, true))
  end)

  it("refuses an unknown suite with exit status 2", function()
    local out, err, rc = H.run(BIN .. " no_such_suite")
    assert.are.equal(2, rc)
    assert.are.equal("", out)
    assert.is_truthy(err:find("unknown suite 'no_such_suite'", 1, true), err)
  end)
end)
