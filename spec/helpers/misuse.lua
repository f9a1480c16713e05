--- helpers.misuse: a seeded misuse fuzzer for cell's Lua API. It finds the
-- public functions, classes and methods by walking `cell` (cell.ops, cell.nn,
-- cell.init, cell.dataset, cell.train, the Tensor methods and operators, and
-- the methods of every object a constructor or function hands back), then
-- calls them with wrong types, nil, NaN, infinities, huge and negative
-- numbers, strings, tables, functions, and tensors of every dtype (0-D,
-- empty, non-contiguous, expanded, freed). Every call runs in pcall; an
-- error must be a string that starts, after the position error() puts in
-- front, with a MindSpore exception name, and that position must not be a
-- file of the library (errors blame the user's line).
--
-- Run in a process of its own (spec/hardening/misuse_spec.lua does), from a
-- scratch directory: a call that writes files writes them there.
--   CELL_MISUSE_SEED   the seed (default 1)
--   CELL_MISUSE_CALLS  how many calls (default 3000)
--   CELL_MISUSE_TRACE  a file that gets each call before it is made (to find
--                      the call that crashed or hung the process)
--   CELL_MISUSE_REPORT the file the summary and the failures go to
--   CELL_MISUSE_SKIP   more names to skip, comma-separated (cell.nn.Adam,...)
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local M = {}

local unpack = table.unpack or unpack

--- Functions not called, with the reason. Everything else reachable is.
M.SKIP = {
  ["cell.set_num_threads"] = "resizes the OpenMP pool of the whole process (its bounds have their own spec)",
  ["cell.repl"] = "reads the terminal",
  ["cell.ffi"] = "hands out raw pointers by design (LuaJIT FFI path)",
  ["cell.core"] = "the binding's internals, reached through the public names",
  ["cell.nnops"] = "the binding's internals, reached through cell.ops",
  ["cell.communication"] = "init starts MPI in the process and collectives wait for other ranks (spec/communication_spec.lua and spec/mpi/ pin its errors)",
  ["Tensor.data_ptr"] = "returns the raw address by design (LuaJIT FFI path)",
}

--- Exception names a message may start with.
local PATTERNS = { "^%u%a+Error: ", "^NotImplementedError", "^StopIteration" }

--- A deterministic generator (Park-Miller), the same under Lua 5.4 and
-- LuaJIT: r(n) is an integer in 1..n.
local function generator(seed)
  local s = math.floor(tonumber(seed) or 1) % 2147483646 + 1
  return function(n)
    s = (s * 16807) % 2147483647
    return s % n + 1
  end
end
M.generator = generator

--- Whether `msg` is a well-formed error: a string, with an exception name
-- after the optional "source:line: ", and a position outside the library.
-- Returns true, or false and the reason.
function M.check_message(msg, library_prefix)
  if type(msg) ~= "string" then return false, "the error is a " .. type(msg) .. ", not a string" end
  local pos, rest = msg:match("^([^\n]-:%d+): (.*)$")
  if not pos then rest = msg end
  local named = false
  for _, p in ipairs(PATTERNS) do
    if rest:find(p) then named = true end
  end
  if not named then
    if rest:find("%u%a+Error: ") then return false, "exception name not first" end
    return false, "no exception name"
  end
  if pos and library_prefix and ("@" .. pos):sub(1, #library_prefix) == library_prefix then
    return false, "blames a library file"
  end
  if pos and library_prefix and pos:find("/lua/cell/", 1, true) then return false, "blames a library file" end
  return true
end

-- --- values ---------------------------------------------------------------

local function values(cell)
  local dtypes = { cell.float32, cell.float64, cell.float16, cell.bfloat16, cell.int8, cell.uint8,
    cell.int32, cell.int64, cell.bool }
  local nan = 0 / 0
  local scalars = { nil, true, false, 0, 1, 2, 3, -1, -7, 0.5, -2.5, nan, math.huge, -math.huge,
    2 ^ 40 + 1, 2 ^ 53, 2 ^ 63, -2 ^ 63, 1e308, 1e-308, "", "a", "float32", "mean", "relu", "1", "x.y" }
  local nscalars = 27
  local tables = {
    function() return {} end,
    function() return { 1 } end,
    function() return { 2, 3 } end,
    function() return { -1 } end,
    function() return { "a" } end,
    function() return { nan } end,
    function() return { { 1 } } end,
    function() return { 1, 2, 3, 4, 5, 6, 7, 8, 9 } end,
    function() return { 2 ^ 62, 4 } end,
    function() return { x = 1 } end,
    function() return { true } end,
    function() return setmetatable({}, { __index = function() return 1 end }) end,
  }
  local function tensor(r)
    local dt = dtypes[r(#dtypes)]
    local k = r(10)
    local t
    if k == 1 then t = cell.zeros({}, dt)
    elseif k == 2 then t = cell.zeros({ 0 }, dt)
    elseif k == 3 then t = cell.zeros({ 2, 0 }, dt)
    elseif k == 4 then t = cell.ones({ 3, 2 }, dt):transpose(1, 2)
    elseif k == 5 then t = cell.ones({ 3 }, dt):expand({ 2, 3 })
    elseif k == 6 then t = cell.ones({ 4 }, dt)
    elseif k == 7 then t = cell.full({ 2, 3 }, nan):astype(dt)
    elseif k == 8 then t = cell.ones({ 1, 3, 4, 4 }, dt)
    elseif k == 9 then
      t = cell.ones({ 2 }, dt)
      t:free()
    else t = cell.arange(0, 6):reshape({ 2, 3 }):astype(dt)
    end
    return t
  end
  local others = {
    function() return cell.float32 end,
    function() return cell.int64 end,
    function() return function() end end,
    function(r) return function() return tensor(r) end end,
    function() return io.stdout end,
    function() return coroutine.create(function() end) end,
    function() return cell.Parameter(cell.ones({ 2, 3 }), "w") end,
    function() return cell.nn.Dense(3, 4) end,
  }
  return {
    dtypes = dtypes,
    tensor = tensor,
    --- A value for an argument: a tensor half the time, else anything.
    any = function(r)
      local k = r(10)
      if k <= 4 then return tensor(r) end
      if k <= 7 then return scalars[r(nscalars)] end
      if k <= 9 then return tables[r(#tables)]() end
      return others[r(#others)](r)
    end,
  }
end

-- --- targets ----------------------------------------------------------------

local function is_class(class, v) return class.is_class(v) end

--- The methods of an object: the functions of its metatable (a class's
-- members) and of a table __index, public names only, plus __call and
-- __tostring; not `init`, the constructor's body (the class call fuzzes it).
local function methods_of(obj)
  local mt = getmetatable(obj)
  if type(mt) ~= "table" then return {} end
  local found, names = {}, {}
  local function scan(t)
    if type(t) ~= "table" then return end
    for k, v in pairs(t) do
      if type(k) == "string" and type(v) == "function" and not found[k]
        and (k:sub(1, 1) ~= "_" or k == "__call" or k == "__tostring") and k ~= "init" then
        found[k] = v
        names[#names + 1] = k
      end
    end
  end
  scan(mt)
  if type(mt.__index) == "table" then scan(mt.__index) end
  table.sort(names)
  return names, found
end
M.methods_of = methods_of

--- Walk the API: functions (name, fn), classes (name, cls), by traversal.
local function walk(cell, class)
  local funcs, classes = {}, {}
  local seen = {}
  local function visit(prefix, t, depth)
    local keys = {}
    for k in pairs(t) do
      if type(k) == "string" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local name = prefix .. "." .. k
      local v = t[k]
      if k:sub(1, 1) == "_" or M.SKIP[name] then -- private, or skipped with a reason
      elseif is_class(class, v) then
        if not seen[v] then
          seen[v] = true
          classes[#classes + 1] = { name = name, cls = v }
        end
      elseif type(v) == "function" then
        if not seen[v] then
          seen[v] = true
          funcs[#funcs + 1] = { name = name, fn = v }
        end
      elseif type(v) == "table" and depth < 2 and not seen[v] and k ~= "Tensor" then
        seen[v] = true
        visit(name, v, depth + 1)
      end
    end
  end
  local _ = cell.nn.ReLU -- cell.nn loads its modules on first use
  local root = {}
  for k, v in pairs(cell) do root[k] = v end
  for _, k in ipairs { "ops", "nn", "dataset", "train" } do root[k] = cell[k] end
  visit("cell", root, 0)
  return funcs, classes
end
M.walk = walk

-- --- the run ------------------------------------------------------------------

--- Objects to construct classes and reach methods with: candidate argument
-- lists, tried in order until one constructs.
local function candidates(cell)
  local function net() return cell.nn.Dense(3, 4) end
  local function params() return net():trainable_params() end
  local function loss() return cell.nn.MSELoss() end
  return {
    function() return {} end,
    function() return { 3 } end,
    function() return { 3, 4 } end,
    function() return { 3, 4, 3 } end,
    function() return { { 3 } } end,
    function() return { params() } end,
    function() return { params(), 0.1 } end,
    function() return { params(), 0.1, 0.9 } end,
    function() return { net() } end,
    function() return { net(), loss() } end,
    function() return { net(), loss(), cell.nn.SGD(params(), 0.1) } end,
    function()
      local n = net()
      return { cell.nn.WithLossCell(n, loss()), cell.nn.SGD(n:trainable_params(), 0.1) }
    end,
    function() return { "normal", { 2, 3 } } end,
    function() return { cell.ones({ 2, 3 }) } end,
    function() return { cell.ones({ 4, 3 }), cell.ones({ 4, 4 }), 2 } end,
    function() return { {} } end,
    function() return { "ckpt", "." } end,
  }
end

--- A description of an argument list, for reports.
local function describe(args, n)
  local parts = {}
  for i = 1, n do
    local v = args[i]
    local s
    if type(v) == "string" then s = string.format("%q", v)
    elseif type(v) == "number" then s = v ~= v and "0/0" or tostring(v)
    elseif type(v) == "userdata" and require("cell").is_tensor(v) then
      local ok, d = pcall(function() return ("Tensor(%s, %s)"):format(table.concat(v.shape, "x"), tostring(v.dtype)) end)
      s = ok and d or "Tensor(freed)"
    elseif type(v) == "table" and getmetatable(v) == nil then
      local inner = {}
      for j = 1, math.min(#v, 4) do inner[j] = type(v[j]) == "number" and tostring(v[j]) or type(v[j]) end
      s = "{" .. table.concat(inner, ", ") .. (next(v) ~= nil and #v == 0 and "<fields>" or "") .. "}"
    else s = type(v) end
    parts[i] = s
  end
  return table.concat(parts, ", ")
end

--- Run `calls` calls with `seed`. Returns a summary table: calls, errors
-- (calls that raised), bad (well-formed? no: the list of failures, each
-- { what, msg, why }), raw (count), skipped (the SKIP table).
function M.run(opts)
  local cell = require "cell"
  local class = require "cell.class"
  local has_errors, errors = pcall(require, "cell.errors")
  local prefix = has_errors and errors.source_prefix or nil
  local r = generator(opts.seed or 1)
  local V = values(cell)
  local funcs, classes = walk(cell, class)
  local cands = candidates(cell)

  -- The makers: how to get a fresh instance of each class, by trying the
  -- candidate argument lists (and the objects functions return).
  local makers = {}
  local function try_maker(name, ctor)
    for _, c in ipairs(cands) do
      local args = c()
      local ok, obj = pcall(ctor, unpack(args, 1, 4))
      if ok and type(obj) == "table" and getmetatable(obj) ~= nil and #methods_of(obj) > 0 then
        makers[#makers + 1] = { name = name, make = function() return ctor(unpack(c(), 1, 4)) end }
        return
      end
    end
  end
  for _, c in ipairs(classes) do try_maker(c.name, c.cls) end
  for _, f in ipairs(funcs) do try_maker(f.name .. "()", f.fn) end
  makers[#makers + 1] = { name = "hook handle", make = function() return cell.ones({ 2 }):register_hook(function() end) end }
  makers[#makers + 1] = { name = "Parameter", make = function() return cell.Parameter(cell.ones({ 2, 3 }), "w") end,
    methods = function(p)
      local names, found = methods_of(cell.core._attrs(p))
      return names, found
    end }

  local tensor_methods = {}
  for k, v in pairs(cell.core.Tensor) do
    if type(k) == "string" and type(v) == "function" and k:sub(1, 1) ~= "_" and not M.SKIP["Tensor." .. k] then
      tensor_methods[#tensor_methods + 1] = k
    end
  end
  table.sort(tensor_methods)
  local operators = {
    ["+"] = function(a, b) return a + b end, ["-"] = function(a, b) return a - b end,
    ["*"] = function(a, b) return a * b end, ["/"] = function(a, b) return a / b end,
    ["^"] = function(a, b) return a ^ b end, ["unm"] = function(a) return -a end,
    ["[]"] = function(a, b) return a[b] end, ["[]="] = function(a, b, c) a[b] = c end,
    ["#"] = function(a) return #a end, ["tostring"] = function(a) return tostring(a) end,
  }
  local opnames = {}
  for k in pairs(operators) do opnames[#opnames + 1] = k end
  table.sort(opnames)

  local trace = opts.trace and assert(io.open(opts.trace, "w"))
  local stats = { calls = 0, errors = 0, raw = 0, failures = {}, seen = {}, kinds = {} }
  local function record(what, args, n, ok, msg)
    stats.calls = stats.calls + 1
    if ok then return end
    stats.errors = stats.errors + 1
    local good, why = M.check_message(msg, prefix)
    if good then return end
    stats.raw = stats.raw + 1
    stats.kinds[why] = (stats.kinds[why] or 0) + 1
    local key = what .. "|" .. why
    if not stats.seen[key] then
      stats.seen[key] = true
      stats.failures[#stats.failures + 1] = { what = what .. "(" .. describe(args, n) .. ")", msg = tostring(msg), why = why }
    end
  end

  local function call(what, fn, args, n)
    if M.SKIP[what] then return end
    if trace then
      trace:write(what, "(", describe(args, n), ")\n")
      trace:flush()
    end
    local ok, msg = pcall(fn, unpack(args, 1, n))
    record(what, args, n, ok, msg)
  end

  -- Plausible argument lists: the ones a target accepts are found on its
  -- first use, and half of its calls then spoil one argument of one of
  -- them, to reach the checks past the first argument.
  local function t23() return cell.arange(0, 6):reshape({ 2, 3 }):astype(cell.float32) end
  local plausible = {
    function() return {} end, function() return { 1 } end, function() return { 2 } end,
    function() return { 1, 2 } end, function() return { 3, 4 } end, function() return { 0.5 } end,
    function() return { t23() } end, function() return { t23(), t23() } end, function() return { { 2, 3 } } end,
    function() return { { 6 } } end, function() return { t23(), 1 } end, function() return { "relu" } end,
    function() return { cell.float64 } end, function() return { cell.tensor({ 1, 2 }, cell.int64) } end,
  }
  local works = {}
  local function random_args(first, key, fn)
    local ok_lists = works[key]
    if ok_lists == nil and key then
      ok_lists = {}
      for _, p in ipairs(plausible) do
        local args = p()
        local n = #args
        if first ~= nil then table.insert(args, 1, first); n = n + 1 end
        if trace then trace:write(key, "(plausible ", describe(args, n), ")\n"); trace:flush() end
        local ok = pcall(fn, unpack(args, 1, n))
        if ok then ok_lists[#ok_lists + 1] = p end
      end
      works[key] = ok_lists
    end
    if ok_lists and #ok_lists > 0 and r(2) == 1 then
      local args = ok_lists[r(#ok_lists)]()
      local n = #args
      local i = r(n + 1)
      args[i] = V.any(r)
      if i > n then n = i end
      if first ~= nil then table.insert(args, 1, first); n = n + 1 end
      return args, n
    end
    local n = r(5) - 1
    local args = {}
    for i = 1, n do args[i] = V.any(r) end
    if first ~= nil then
      table.insert(args, 1, first)
      n = n + 1
    end
    return args, n
  end

  for _ = 1, opts.calls or 3000 do
    local kind = r(10)
    if kind <= 3 then -- a function
      local f = funcs[r(#funcs)]
      local args, n = random_args(nil, f.name, f.fn)
      call(f.name, f.fn, args, n)
    elseif kind <= 5 then -- a tensor method or operator
      local t = V.tensor(r)
      if r(4) == 1 then
        local op = opnames[r(#opnames)]
        local args, n = random_args(t)
        call("Tensor " .. op, operators[op], args, n)
      else
        local m = tensor_methods[r(#tensor_methods)]
        local args, n = random_args(t, "Tensor:" .. m, cell.core.Tensor[m])
        call("Tensor:" .. m, cell.core.Tensor[m], args, n)
      end
    elseif kind <= 6 then -- a constructor
      local c = classes[r(#classes)]
      local args, n = random_args(nil, c.name, c.cls)
      call(c.name, c.cls, args, n)
    else -- a method of an instance
      local mk = makers[r(#makers)]
      local ok, obj = pcall(mk.make)
      if ok then
        local names, found
        if mk.methods then names, found = mk.methods(obj) else names, found = methods_of(obj) end
        if #names > 0 then
          local m = names[r(#names)]
          local args, n = random_args(obj, mk.name .. ":" .. m, found[m])
          call(mk.name .. ":" .. m, found[m], args, n)
        end
      else
        record("making " .. mk.name, {}, 0, false, obj)
      end
    end
  end
  if trace then trace:close() end
  stats.functions, stats.classes, stats.makers = #funcs, #classes, #makers
  return stats
end

--- The child process's entry: run with the settings from the environment
-- and write the report.
function M.main()
  for name in (os.getenv("CELL_MISUSE_SKIP") or ""):gmatch("[^,]+") do M.SKIP[name] = "CELL_MISUSE_SKIP" end
  local calls = tonumber(os.getenv("CELL_MISUSE_CALLS") or "") or 3000
  local seed = tonumber(os.getenv("CELL_MISUSE_SEED") or "") or 1
  local stats = M.run { seed = seed, calls = calls, trace = os.getenv("CELL_MISUSE_TRACE") }
  local out = assert(io.open(assert(os.getenv("CELL_MISUSE_REPORT"), "CELL_MISUSE_REPORT is not set"), "w"))
  out:write(("calls %d errors %d raw %d functions %d classes %d makers %d seed %d\n"):format(stats.calls,
    stats.errors, stats.raw, stats.functions, stats.classes, stats.makers, seed))
  for why, n in pairs(stats.kinds) do out:write(("KIND %s: %d\n"):format(why, n)) end
  for _, f in ipairs(stats.failures) do
    out:write(("FAIL %s\n  %s\n  -> %s\n"):format(f.what, f.why, (f.msg:gsub("\n", "\n     "))))
  end
  out:write("done\n")
  out:close()
end

return M
