-- lazy_load_spec.lua - cell's submodules and cell.nn's names load on first
-- use; a load that fails once (out of memory, any error) must be tried
-- again on the next use (issue 10, item 11). cell.nn used to mark itself
-- loaded before loading, so after one failure `cell.nn.ReLU` stayed nil
-- for the life of the state.
--
-- Failures are injected through package.preload and package.searchers
-- (package.loaders in LuaJIT), and everything touched is put back.
local H = require "helpers"
local cell = H.cell

local searchers = package.searchers or package.loaders

--- Run fn with cell.<key> (and the listed modules) unloaded, then put the
-- state back as it was, whatever fn did.
local function with_fresh(key, modules, fn)
  local names = { "cell." .. key }
  for _, m in ipairs(modules) do names[#names + 1] = m end
  local saved_loaded, saved_preload = {}, {}
  for _, m in ipairs(names) do
    saved_loaded[m] = package.loaded[m]
    saved_preload[m] = package.preload[m]
    package.loaded[m] = nil
  end
  local saved = rawget(cell, key)
  local n_searchers = #searchers
  rawset(cell, key, nil)
  local ok, err = pcall(fn)
  while #searchers > n_searchers do table.remove(searchers, 1) end
  for _, m in ipairs(names) do
    package.loaded[m] = saved_loaded[m]
    package.preload[m] = saved_preload[m]
  end
  rawset(cell, key, saved)
  assert(ok, err)
end

--- A loader that fails the first `times` times it is asked for, then
-- lets the normal searchers find the file.
local function fail_times(times, message)
  local n = 0
  return function(name)
    n = n + 1
    if n <= times then error(message, 0) end
    return nil
  end, function() return n end
end

describe("cell's lazily loaded submodules", function()
  it("try again after cell.nn failed to load", function()
    with_fresh("nn", {}, function()
      package.preload["cell.nn"] = function() error("injected failure", 0) end
      H.expect_error(function() return cell.nn end, "RuntimeError", "cell.nn is not available", "injected failure")
      H.expect_error(function() return cell.nn.ReLU end, "RuntimeError", "cell.nn is not available")
      package.preload["cell.nn"] = nil
      local relu = cell.nn.ReLU
      assert.is_not_nil(relu)
      H.assert_values(relu()(cell.tensor({ -1, 2 })), { 0, 2 })
    end)
  end)

  it("report Lua's out-of-memory error as a MemoryError, and try again", function()
    with_fresh("nn", {}, function()
      package.preload["cell.nn"] = function() error("not enough memory", 0) end
      H.expect_error(function() return cell.nn end, "MemoryError", "cell.nn is not available")
      package.preload["cell.nn"] = nil
      assert.is_not_nil(cell.nn.Dense)
    end)
  end)

  it("keep an exception name the failure already has", function()
    with_fresh("nn", {}, function()
      package.preload["cell.nn"] = function() error("ValueError: bad", 0) end
      local msg = H.expect_error(function() return cell.nn end, "ValueError", "cell.nn is not available", "bad")
      assert.is_nil(msg:find("RuntimeError", 1, true))
      package.preload["cell.nn"] = nil
      assert.is_table(cell.nn)
    end)
  end)

  it("try again after a module that cell.train loads failed inside it", function()
    with_fresh("train", { "cell.train.metrics" }, function()
      package.preload["cell.train.metrics"] = function() error("not enough memory", 0) end
      H.expect_error(function() return cell.train end, "MemoryError", "cell.train is not available")
      H.expect_error(function() return cell.train.Model end, "MemoryError", "cell.train is not available")
      package.preload["cell.train.metrics"] = nil
      assert.is_not_nil(cell.train.Model)
      assert.is_table(package.loaded["cell.train.metrics"])
    end)
  end)
end)

describe("cell.nn's lazily loaded names", function()
  it("load after a module failed once (out of memory)", function()
    with_fresh("nn", { "cell.nn.activation" }, function()
      local searcher, count = fail_times(1, "not enough memory")
      table.insert(searchers, 1, function(name)
        if name == "cell.nn.activation" then return searcher(name) end
        return nil
      end)
      local nn = cell.nn
      H.expect_error(function() return nn.ReLU end, "MemoryError", "cell.nn.activation")
      assert.are.equal(1, count())
      -- the next use tries again, and every name is there
      local relu = nn.ReLU
      assert.is_not_nil(relu, "nn.ReLU after a failed load")
      assert.are.equal(2, count())
      H.assert_values(relu()(cell.tensor({ -3, 0.5 })), { 0, 0.5 })
      assert.is_not_nil(nn.Dense)
      assert.is_not_nil(nn.MSELoss)
      assert.is_nil(nn.NoSuchName)
    end)
  end)

  it("load after the last module failed, keeping what the others gave", function()
    with_fresh("nn", { "cell.nn.loss" }, function()
      local nn = cell.nn
      package.preload["cell.nn.loss"] = function() error("disk on fire", 0) end
      H.expect_error(function() return nn.MSELoss end, "RuntimeError", "cell.nn.loss", "disk on fire")
      assert.is_not_nil(rawget(nn, "Dense"), "the modules before the failing one were copied")
      assert.is_nil(rawget(nn, "MSELoss"))
      H.expect_error(function() return nn.MSELoss end, "RuntimeError", "disk on fire")
      package.preload["cell.nn.loss"] = nil
      local loss = nn.MSELoss()
      H.assert_values(loss(cell.tensor({ 1, 2 }), cell.tensor({ 1, 4 })), 2)
    end)
  end)

  it("load once: a name that is missing after a good load is nil, with no reload", function()
    with_fresh("nn", {}, function()
      local nn = cell.nn
      assert.is_not_nil(nn.ReLU)
      local searcher, count = fail_times(0, "unused")
      table.insert(searchers, 1, searcher)
      assert.is_nil(nn.NoSuchName)
      assert.is_nil(nn.AnotherMissingName)
      assert.are.equal(0, count())
    end)
  end)
end)
