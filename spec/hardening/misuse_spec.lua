-- misuse_spec.lua - the seeded misuse fuzzer (spec/helpers/misuse.lua) in a
-- process of its own, from a scratch directory: every public function and
-- method called with wrong arguments must raise an error whose message
-- starts (after the user's "file:line: ") with a MindSpore exception name,
-- and never crash or hang the process. CELL_MISUSE_SEED picks the seed,
-- CELL_MISUSE_CALLS the number of calls (a few thousand by default;
-- CELL_MISUSE_CALLS=1000000 for a long run). Also: errors raised inside the
-- library blame the user's line, not lua/cell/.
local H = require "helpers"
local misuse = require "helpers.misuse"
local cell = require "cell"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

--- A search path with its relative entries made absolute (the child runs
-- in another directory).
local function absolute(paths, cwd)
  local out = {}
  for entry in (paths or ""):gmatch("[^;]+") do
    if entry:sub(1, 1) ~= "/" and entry ~= "" then entry = cwd .. "/" .. entry end
    out[#out + 1] = entry
  end
  return table.concat(out, ";") .. ";;"
end

describe("the misuse fuzzer", function()
  local cwd = os.getenv("PWD") or io.popen("pwd"):read("*l")
  local lua = os.getenv("CELL_LUA") or (jit and "luajit" or "lua5.4")
  local calls = os.getenv("CELL_MISUSE_CALLS") or "3000"
  local seed = os.getenv("CELL_MISUSE_SEED") or "1"

  -- Run the driver in a child process; returns its exit status and report.
  local function run_child(dir, extra_env)
    local report = dir .. "/report.txt"
    local cmd = table.concat({
      "cd", sh_quote(dir), "&&",
      "LUA_PATH=" .. sh_quote(absolute(package.path, cwd)),
      "LUA_CPATH=" .. sh_quote(absolute(package.cpath, cwd)),
      "CELL_MISUSE_CALLS=" .. sh_quote(calls), "CELL_MISUSE_SEED=" .. sh_quote(seed),
      "CELL_MISUSE_REPORT=" .. sh_quote(report), extra_env or "",
      -- about 0.15 ms a call here, ten times that under the sanitizers
      "timeout " .. math.floor(600 + (tonumber(calls) or 0) * 0.005), sh_quote(lua), "-e", sh_quote('require("helpers.misuse").main()'),
      ">" .. sh_quote(dir .. "/out.txt"), "2>&1",
    }, " ")
    local ok, how, code = os.execute(cmd)
    if type(ok) == "number" then code = ok / 256 end -- LuaJIT / Lua 5.1 return the status
    if ok == true then code = 0 end
    return code, read(report) or ""
  end

  it("calls every public function and method with wrong arguments and gets named errors", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. sh_quote(dir)))
    local code, report = run_child(dir)
    if code ~= 0 or not report:find("\ndone\n", 1, true) then
      -- Crashed or hung: run again with a trace to name the last call.
      local trace = dir .. "/trace.txt"
      run_child(dir, "CELL_MISUSE_TRACE=" .. sh_quote(trace))
      local t = read(trace) or ""
      local last = t:match("([^\n]*)\n$") or "?"
      error(("the fuzzer's process died (status %s, seed %s) at: %s\n%s"):format(tostring(code), seed, last,
        (read(dir .. "/out.txt") or ""):sub(-2000)))
    end
    os.execute("rm -rf " .. sh_quote(dir))
    local n = tonumber(report:match("^calls (%d+)"))
    local raw = tonumber(report:match(" raw (%d+)"))
    assert.are.equal(tonumber(calls), n, report)
    -- it reached the API: many functions, classes and objects with methods
    assert.is_true(tonumber(report:match(" functions (%d+)")) > 150, report)
    assert.is_true(tonumber(report:match(" classes (%d+)")) > 40, report)
    assert.is_true(tonumber(report:match(" makers (%d+)")) > 30, report)
    assert.are.equal(0, raw, "seed " .. seed .. ": calls whose error is not a named exception:\n" .. report)
  end)

  it("walks the API by traversal, so new functions are covered", function()
    local funcs, classes = misuse.walk(cell, require "cell.class")
    local reached = {} -- by value: a function reachable under two names is called under one
    for _, f in ipairs(funcs) do reached[f.fn] = true end
    for _, c in ipairs(classes) do reached[c.cls] = true end
    for _, want in ipairs { "zeros", "ops.add", "nn.ReLU", "nn.get_activation", "init.XavierNormal",
      "enable_grad", "checkpoint", "save_checkpoint", "dataset.batches", "train.Model", "OrderedDict", "nn.SGD" } do
      local v = cell
      for part in want:gmatch("[^.]+") do v = v[part] end
      assert.is_true(reached[v], "cell." .. want .. " is not reached")
    end
    -- skipped names each carry a reason
    for name, why in pairs(misuse.SKIP) do
      assert.are.equal("string", type(why), name)
      assert.is_true(#why > 10, name)
    end
  end)

  it("tells a well-formed message from a raw one", function()
    local prefix = require("cell.errors").source_prefix
    assert.is_true(misuse.check_message("x.lua:3: TypeError: f: bad", prefix))
    assert.is_true(misuse.check_message("NotImplementedError: construct", prefix))
    assert.is_false(misuse.check_message("x.lua:3: attempt to index a nil value", prefix))
    assert.is_false(misuse.check_message("bad argument #1 to 'f' (TypeError: x)", prefix))
    assert.is_true(misuse.check_message("x.lua:3: TypeError: f: x must be a Tensor (bad argument #2)", prefix))
    assert.is_false(misuse.check_message({}, prefix))
    assert.is_false(misuse.check_message("lua/cell/nn/loss.lua:131: IndexError: x", prefix))
  end)

  it("is deterministic for a seed", function()
    local a, b = misuse.generator(7), misuse.generator(7)
    for _ = 1, 100 do assert.are.equal(a(1000), b(1000)) end
  end)
end)

describe("errors from wrong arguments", function()
  -- { call, the message's start after the position }
  local cases = {
    { function() return cell.nn.ReLU()(5) end, "TypeError: ReLU: x must be a Tensor, but got number" },
    { function() return cell.ops.float(nil) end, "TypeError: float: self must be a Tensor, but got nil" },
    { function() return cell.enable_grad(5) end, "TypeError: enable_grad: fn must be a function, but got number" },
    { function() return cell.no_grad() end, "TypeError: no_grad: fn must be a function, but got nil" },
    { function() return cell.checkpoint(nil) end, "TypeError: checkpoint: fn must be a function, but got nil" },
    { function() return cell.ones({ 2 }):reshape({ "a" }) end,
      "TypeError: reshape: shape must hold integers, but got string at position 1 (bad argument #1)" },
    { function() return cell.ones({ 2 }):register_hook(5) end,
      "TypeError: register_hook: the hook must be a function, but got number (bad argument #1)" },
    { function() return cell.init.XavierNormal()(nil) end, "TypeError: " },
    { function() return cell.nn.get_activation(1, 0.5) end, "KeyError: Unknown activation '1'" },
    { function() return cell.ones({ 2 }):sum({ 1, "x" }) end,
      "TypeError: sum: dim must hold integers, but got string at position 2 (bad argument #1)" },
    { function() return cell.zeros("a") end, "TypeError: zeros: unknown dtype 'a' (bad argument #1)" },
    { function() return cell.nn.Adam(function() return cell.ones({ 1 }) end) end, "TypeError: For 'Adam'" },
    { function() return cell.ones({ 5 }):split(setmetatable({}, { __index = function() return 1 end })) end,
      "ValueError: split" },
  }
  for i, c in ipairs(cases) do
    it("case " .. i .. ": " .. c[2], function()
      local ok, msg = pcall(c[1])
      assert.is_false(ok)
      local rest = msg:match("^[^\n]-:%d+: (.*)$") or msg
      assert.are.equal(c[2], rest:sub(1, #c[2]), msg)
      H.still_works()
    end)
  end
end)

describe("errors raised inside the library", function()
  local this = debug.getinfo(1, "S").short_src

  -- The message's position: this spec file and the line of the call (not
  -- a tail call, which leaves no line to blame).
  local function blames(fn, line)
    local ok, msg = pcall(fn)
    assert.is_false(ok)
    assert.are.equal(this .. ":" .. line .. ":", msg:match("^([^\n]-:%d+:)"), msg)
    assert.is_nil(msg:find("lua/cell/", 1, true), msg)
    return msg
  end

  it("blame the user's line, from Lua checks deep in a cell call", function()
    local loss = cell.nn.CrossEntropyLoss()
    local here = debug.getinfo(1, "l").currentline + 1
    blames(function() local y = loss(cell.ones({ 2, 3 }), cell.ones({ 5 })) return y end, here)
  end)

  it("blame the user's line, from C functions that library code called", function()
    local emb = cell.nn.Embedding(5, 2) -- the engine's embedding op checks the ids
    local here = debug.getinfo(1, "l").currentline + 1
    local msg = blames(function() local y = emb(cell.tensor({ 7 }, cell.int64)) return y end, here)
    assert.truthy(msg:find("IndexError: embedding: id 7 is out of range", 1, true), msg)
  end)

  it("blame the user's line from a C function called directly", function()
    local here = debug.getinfo(1, "l").currentline + 1
    blames(function() local y = cell.ones({ 2 }):reshape({ "a" }) return y end, here)
  end)

  it("keep the line of an error the user's own callback raised", function()
    local here = debug.getinfo(1, "l").currentline + 1
    local function bad() error("ValueError: mine") end
    local ok, msg = pcall(cell.no_grad, bad)
    assert.is_false(ok)
    assert.truthy(msg:find(this .. ":" .. here .. ": ValueError: mine", 1, true), msg)
  end)
end)
