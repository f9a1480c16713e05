-- doc_examples.lua - run the examples of docs/reference/*.md and check their
-- shown results (spec/docs_examples_spec.lua). A ```lua block with lines of
-- the form `expr --> shown result` is turned into a chunk in which each such
-- line becomes a check: the expression is evaluated (a `print(...)` is
-- captured, a `local x = ...` checks x, a bare `--> r` line checks the line
-- above, a shown `SomeError: msg` expects that error, with `...` a wildcard)
-- and its value compared with what the page shows: numbers to the digits
-- shown (4 or more significant digits) or 1e-6 relative, `(about ...)`
-- loosely, tables and tensors element by element, a `(int64)`-style note
-- against the tensor's dtype, anything else against tostring. Each block runs
-- in a fresh environment (the page's prelude below, then the block) in this
-- process, the global state it may change (RNG, threads, device, grad mode,
-- dataset config, parallel context) put back afterwards; a block that writes
-- files runs in a subprocess (CELL_LUA) whose working directory is the
-- page's temporary one (made and removed by M.tmpdir), with "/tmp/" in its
-- strings turned into that directory.
--
--   M.pages(dir)             the reference pages (file names), sorted
--   M.blocks(dir, page)      the checked blocks: {start =, lines =, heading =}
--   M.check_exprs(blk)       the expressions of its checks (the text before -->)
--   M.run_block(dir, page, blk, tmp)   the results, one per check (tmp: the
--        page's temporary directory, for the blocks that write files):
--        {line =, status =, lhs =, exp =, actual =, note =}
-- status: PASS, PASSNOTE (a pass with a note: int/float display, an
-- annotation, a tensor shown as bare values), MANUAL (described in words,
-- for a reader: the value ran without error), FAIL, ERROR (the expression
-- raised), NOTREACHED (an earlier line raised), NOCOMPILE.
-- Plain Lua 5.1/LuaJIT/5.4: no math.type, table.pack or goto without a
-- fallback.
local M = {}

local pack = table.pack or function(...) return { n = select("#", ...), ... } end
local unpack = table.unpack or unpack
local function mtype(v)
  if math.type then return math.type(v) end
  if type(v) ~= "number" then return nil end
  if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return "integer" end
  return "float"
end

-- Locals every block sees, then the names each page's examples assume.
local BASE = [[
local cell = require "cell"
local nn, ops, amp, train, init = cell.nn, cell.ops, cell.amp, cell.train, cell.initializer
]]
M.preludes = {
  autograd = [[
net = nn.Dense(2, 3)
x = cell.ones({1, 2})
w = cell.Parameter(cell.ones({2}), "w")
]],
  -- `local F = require "cell.ffi"` of the page's first example (LuaJIT only)
  ffi = [[
if jit then F = require "cell.ffi" end
]],
  ["dataset-vision"] = [[
vision = cell.dataset.vision
]],
  dataset = [[
d = cell.dataset.TensorDataset{cell.zeros({10, 3}), cell.zeros({10}), column_names = {"x", "y"}}
]],
  -- the page's `net`: sub-cells fc1 = Dense(2, 3), fc2 = Dense(3, 1), a buffer `steps`
  ["nn-cell"] = [[
Net = nn.Cell:extend("Net")
function Net:init(a, b, c)
  self.fc1 = nn.Dense(a or 2, b or 3)
  self.fc2 = nn.Dense(b or 3, c or 1)
  self:register_buffer("steps", cell.zeros({1}))
end
function Net:construct(x) return self.fc2(self.fc1(x)) end
net = Net()
args = require "cell.util.args"
]],
  optim = [[
Net = nn.Cell:extend("Net")
function Net:init() self.fc1 = nn.Dense(2, 3); self.fc2 = nn.Dense(3, 1) end
function Net:construct(x) return self.fc2(self.fc1(x)) end
net = Net()
opt = nn.SGD(net:trainable_params(), 0.1)
]],
  train = [[
acc = cell.train.Accuracy()
acc:update(cell.tensor({{1, 0}, {0, 1}, {1, 0}, {0, 1}}), cell.tensor({1, 2, 1, 1}, cell.int64))
]],
}

local function readfile(p)
  local f = assert(io.open(p, "rb")); local s = f:read("*a"); f:close(); return s
end

-- A new empty directory (os.tmpname-based) and a function that removes it.
function M.tmpdir()
  local tmp = os.tmpname()
  os.remove(tmp)
  assert(os.execute('mkdir "' .. tmp .. '"'))
  return tmp, function() os.execute('rm -rf "' .. tmp .. '"') end
end

function M.pages(dir)
  local p = io.popen('ls "' .. dir .. '"')
  local out = {}
  for name in p:lines() do if name:match("%.md$") then out[#out + 1] = name end end
  p:close()
  table.sort(out)
  return out
end

-- The ```lua blocks of a page that have at least one `-->`.
function M.blocks(dir, page)
  local lines = {}
  for l in (readfile(dir .. "/" .. page) .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  local blocks, inblock, cur, heading = {}, false, nil, "(top)"
  for i, l in ipairs(lines) do
    if not inblock then
      local h = l:match("^###%s+(.*)")
      if h then heading = h end
      if l:match("^```lua%s*$") then inblock = true; cur = { start = i + 1, lines = {}, heading = heading } end
    elseif l:match("^```%s*$") then
      inblock = false
      -- a signature block (`rnn(x [, hx]) --> output, h_n`) is not an example
      local checked, signature = false, false
      for _, bl in ipairs(cur.lines) do
        if bl:find("-->", 1, true) then checked = true end
        if bl:find("[,", 1, true) then signature = true end
      end
      if checked and not signature then blocks[#blocks + 1] = cur end
    else
      cur.lines[#cur.lines + 1] = l
    end
  end
  return blocks
end

-- 1. the block as a chunk
local function compiles(s) return load(s, "=x", "t", {}) ~= nil end
local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end
--- Where the first `--` outside strings begins (a comment or an arrow), or nil.
local function comment_at(s)
  local i, q = 1, nil
  while i <= #s do
    local c = s:sub(i, i)
    if q then
      if c == "\\" then i = i + 1 elseif c == q then q = nil end
    elseif c == '"' or c == "'" then q = c
    elseif s:sub(i, i + 1) == "--" then return i end
    i = i + 1
  end
  return nil
end
local function strip_comment(s) -- drop a trailing -- comment outside strings
  local i = comment_at(s)
  return i and s:sub(1, i - 1) or s
end
local function split_arrow(s) -- lhs, expected: when the first -- outside strings is -->
  local i = comment_at(s)
  if i and s:sub(i, i + 2) == "-->" then return s:sub(1, i - 1), trim(s:sub(i + 3)) end
  return nil
end

local function transform(B)
  local lastcheck_at
  local out = {}
  local checks = {}
  local raw = {}
  for k, l in ipairs(B.lines) do raw[k] = l end

  for k, l in ipairs(raw) do
    local lhs, exp = split_arrow(l)
    local prevk = k - 1
    while prevk >= 1 and trim(raw[prevk]) == "" do prevk = prevk - 1 end
    if lhs and trim(lhs) == "" and prevk >= 1 and lastcheck_at == prevk then
      checks[#checks].exp = checks[#checks].exp .. "\n" .. exp
      out[k] = ""
      lastcheck_at = k
    elseif lhs then
      lastcheck_at = k
      local srcline = B.start + k - 1
      lhs = trim(lhs)
      local id = #checks + 1
      checks[id] = { line = srcline, exp = exp }
      local startk = k
      if lhs == "" then
        -- result of the previous line(s)
        local j = k - 1
        while j >= 1 and trim(raw[j]) == "" do j = j - 1 end
        local acc = trim(strip_comment(raw[j]))
        while j > 1 and not compiles("return " .. acc) and not compiles(acc) do
          j = j - 1; acc = trim(strip_comment(raw[j])) .. "\n" .. acc
        end
        lhs = acc
        for m = j, k - 1 do out[m] = "" end
        startk = j
      else
        -- an expression continued from previous lines?
        if not compiles("return " .. lhs) and not compiles(lhs) then
          local j, acc = k, lhs
          while j > 1 and not compiles("return " .. acc) and not compiles(acc) do
            j = j - 1; acc = trim(strip_comment(raw[j])) .. "\n" .. acc
          end
          if compiles("return " .. acc) or compiles(acc) then
            for m = j, k - 1 do out[m] = "" end
            lhs = acc
          end
        end
      end
      checks[id].lhs = lhs
      local pr = lhs:match("^print(%b())$")
      local pre, last = lhs:match("^(.*;)%s*([^;]-)$")
      if pr then
        checks[id].printed = true
        out[startk] = ("__check(%d, function() return __capture(function() print%s end) end)"):format(id, pr:gsub("%%", "%%%%"))
      elseif not compiles("return " .. lhs) and pre and compiles("return " .. last) and compiles(pre) then
        out[startk] = pre .. (" __check(%d, function() return %s\nend)"):format(id, last)
      elseif compiles("return " .. lhs) then
        out[startk] = ("__check(%d, function() return %s\nend)"):format(id, lhs)
      else
        local name = lhs:match("^local%s+([%a_][%w_, ]*)%s*=") or lhs:match("^([%a_][%w_%.]*)%s*=[^=]")
        if checks[id].exp:match("^%u%w*Error") then
          out[startk] = ("__check(%d, function() %s\nend)"):format(id, lhs)
        elseif name then
          out[startk] = lhs .. (" __check(%d, function() return %s end)"):format(id, name)
        else
          -- a statement: run it, report it for reading
          out[startk] = ("__check(%d, function() %s\nend, true)"):format(id, lhs)
        end
      end
    elseif out[k] == nil then
      local code = strip_comment(l)
      if trim(code) ~= "" and not compiles(code) and compiles("return " .. code) then
        out[k] = "__discard(" .. trim(code) .. ")"
      else
        out[k] = l
      end
    end
end
for k = 1, #raw do out[k] = out[k] or "" end

return BASE .. table.concat(out, "\n"), checks
end


-- 2. comparison
local cell = require "cell"
local function is_tensor(v) return cell.is_tensor(v) end
local function show(v, depth)
  depth = depth or 0
  if is_tensor(v) then
    local ok, tt = pcall(function() return v:totable() end)
    return (ok and show(tt, depth + 1) or "<tensor>") .. " (" .. tostring(v.dtype) .. ")"
  elseif type(v) == "table" and depth < 4 then
    local mt = getmetatable(v)
    if mt and mt.__tostring then return tostring(v) end
    local parts, n = {}, #v
    for i = 1, n do parts[#parts + 1] = show(v[i], depth + 1) end
    local keys = {}
    for key in pairs(v) do if not (mtype(key) == "integer" and key >= 1 and key <= n) then keys[#keys + 1] = key end end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, key in ipairs(keys) do parts[#parts + 1] = tostring(key) .. " = " .. show(v[key], depth + 1) end
    return "{" .. table.concat(parts, ", ") .. "}"
  elseif type(v) == "string" then return (("%q"):format(v):gsub("\\\n", "\\n"))
  elseif type(v) == "number" then
    if mtype(v) == "float" then return (("%.8g"):format(v):gsub("^(%-?%d+)$", "%1.0")) end
    return tostring(v)
  else
    local ok, s = pcall(tostring, v); return ok and s or "<?>"
  end
end

local DTYPES = {}
for _, n in ipairs { "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
  "float16", "bfloat16", "float32", "float64", "complex64", "complex128" } do DTYPES[n] = true end

-- split expected text at top-level commas
local function split_top(s)
  local parts, depth, q, start, i = {}, 0, nil, 1, 1
  while i <= #s do
    local c = s:sub(i, i)
    if q then
      if c == "\\" then i = i + 1 elseif c == q then q = nil end
    elseif c == '"' or c == "'" then q = c
    elseif c == "{" or c == "(" or c == "[" then depth = depth + 1
    elseif c == "}" or c == ")" or c == "]" then depth = depth - 1
    elseif c == "," and depth == 0 then parts[#parts + 1] = trim(s:sub(start, i - 1)); start = i + 1 end
    i = i + 1
  end
  parts[#parts + 1] = trim(s:sub(start))
  return parts
end

local NUM = {}
NUM.__index = NUM
local function numbox(text)
  local v = tonumber(text)
  local tol = 0
  local mant, ex = text:lower():match("^%-?([%d%.]+)e([-+]?%d+)$")
  mant = mant or text:match("^%-?([%d%.]+)$")
  ex = tonumber(ex) or 0
  if mant then
    local digits = mant:gsub("%.", ""):gsub("^0+", "")
    local decimals = #(mant:match("%.(%d*)$") or "")
    local sig = #(digits:gsub("0+$", ""))
    if sig >= 4 then tol = 0.5 * 10 ^ (ex - decimals) * 1.0001 end
  end
  return setmetatable({ v = v, text = text, tol = tol }, NUM)
end

-- turn one expected piece into a Lua value with boxed numbers
local function parse_piece(p)
  local segs, i, q, start = {}, 1, nil, 1
  local buf = {}
  -- replace numbers / nan / inf outside strings
  local function conv2(code)
    local res, pos = {}, 1
    -- tokenise manually
    local n = #code
    local k = 1
    while k <= n do
      local c = code:sub(k, k)
      local prev = k > 1 and code:sub(k - 1, k - 1) or " "
      local m = code:match("^%-?%d+%.?%d*[eE][-+]?%d+", k) or code:match("^%-?%d+%.?%d*", k)
      if m and not prev:match("[%w_%.]") then
        res[#res + 1] = "__n'" .. m .. "'"
        k = k + #m
      else
        local w = code:match("^[%a_][%w_]*", k)
        if w and not prev:match("[%w_]") then
          if w == "nan" then w = "__NAN" elseif w == "inf" then w = "__INF" end
          res[#res + 1] = w; k = k + #code:match("^[%a_][%w_]*", k)
        else
          res[#res + 1] = c; k = k + 1
        end
      end
    end
    return (table.concat(res):gsub("%-__INF", "__NINF"))
  end
  while i <= #p do
    local c = p:sub(i, i)
    if q then
      if c == "\\" then i = i + 1 elseif c == q then q = nil; buf[#buf + 1] = p:sub(start, i); start = i + 1 end
    elseif c == '"' or c == "'" then
      buf[#buf + 1] = conv2(p:sub(start, i - 1)); start = i; q = c
    end
    i = i + 1
  end
  buf[#buf + 1] = q and p:sub(start) or conv2(p:sub(start))
  local code = table.concat(buf)
  local env = { __n = numbox, __NAN = numbox("nan"), __INF = numbox("inf"), __NINF = numbox("-inf") }
  env.__NAN.v = 0 / 0; env.__INF.v = math.huge; env.__NINF.v = -math.huge
  local f = load("return " .. code, "=exp", "t", setmetatable(env, { __index = function(_, k) error("name " .. k) end }))
  if not f then return false end
  local ok, v = pcall(f)
  if not ok then return false end
  return true, v
end

local function numeq(a, box, loose)
  local e = box.v
  if type(a) ~= "number" then return false end
  if e ~= e then return a ~= a end
  if e == math.huge or e == -math.huge then return a == e end
  local tol = math.max(box.tol, 1e-6 * math.abs(e), 1e-12)
  if loose then tol = math.max(tol, 0.02 * math.abs(e) + 1e-6) end
  return math.abs(a - e) <= tol
end

local notes
local function valeq(a, e, loose, depth)
  depth = depth or 0
  if getmetatable(e) == NUM then
    if is_tensor(a) then
      local ok, tt = pcall(a.totable, a); if not ok then return false end
      if type(tt) == "table" then return false end
      a = tt
    end
    if type(a) == "number" and mtype(a) ~= (e.text:match("^%-?%d+$") and "integer" or "float") then
      notes[#notes + 1] = "int/float display"
    end
    return numeq(a, e, loose)
  elseif type(e) == "table" then
    if is_tensor(a) then
      local ok, tt = pcall(a.totable, a); if not ok then return false end
      a = tt
      if type(a) ~= "table" then return false end
    end
    if type(a) ~= "table" then return false end
    local ok, n = pcall(function() return #a end)
    if not ok then return false end
    if n ~= #e then return false end
    for k, ev in pairs(e) do
      if not valeq(a[k], ev, loose, depth + 1) then return false end
    end
    if depth == 0 then
      for k in pairs(a) do if e[k] == nil then return false end end
    end
    return true
  else
    if is_tensor(a) then
      local ok, tt = pcall(a.totable, a); if ok then a = tt end
    end
    return a == e
  end
end

local function compare(res, exp)
  notes = {}
  -- errors
  local ename, emsg = exp:match("^(%u%w*Error):%s*(.*)$")
  if not ename then ename = exp:match("^(%u%w*Error)$"); emsg = "" end
  if ename then
    if res.ok then return "FAIL", "no error" end
    local msg = tostring(res.err):gsub("^[^:\n]*:%d+: ", "")
    local want = ename .. (emsg ~= "" and (": " .. emsg) or "")
    -- '...' is a wildcard
    local pos, okall = 1, true
    for frag in (want .. "..."):gmatch("(.-)%.%.%.") do
      frag = trim(frag)
      if frag ~= "" then
        local s, e2 = msg:find(frag, pos, true)
        if not s then okall = false; break end
        pos = e2 + 1
      end
    end
    if okall then return "PASS" end
    return "FAIL", "error differs"
  end
  if not res.ok then return "ERROR" end
  local vals = res.vals
  -- exact tostring
  local unesc = exp:gsub("\\n", "\n")
  if vals.n >= 1 then
    local ok, s = pcall(tostring, vals[1])
    if ok and (s == exp or s == unesc) and vals.n == 1 then return "PASS" end
    local all = {}
    for i = 1, vals.n do local ok2, s2 = pcall(tostring, vals[i]); all[i] = ok2 and s2 or "?" end
    if table.concat(all, ", ") == exp then return "PASS" end
  end
  local pieces = split_top(exp)
  if #pieces ~= vals.n then
    if #pieces > vals.n then return "FAIL", "count" end
    notes[#notes + 1] = ("extra returns (%d shown of %d)"):format(#pieces, vals.n)
  end
  local manual = false
  for i, p in ipairs(pieces) do
    local a = vals[i]
    local ann
    local body, a1 = p:match("^(.-)%s*%(([%w_ %.%-%^/+=*,:]+)%)$")
    local loose = false
    if body and body ~= "" and DTYPES[a1:lower()] then ann = a1; p = body
    elseif body and body ~= "" and not p:match("^[%a_][%w_.:]*%b()$") then
      notes[#notes + 1] = "annotation: " .. a1
      if a1:find("about") then loose = true end
      p = body
    end
    if p:match("^[%a_][%w_]*$") and p ~= "true" and p ~= "false" and p ~= "nil" and p ~= "nan" and p ~= "inf" then
      if tostring(a) ~= p then return "FAIL" end
    else
      local ok, e = parse_piece(p)
      if not ok then
        local okk, s = pcall(tostring, a)
        if okk and s == p then -- fine
        else manual = true end
      else
        if not valeq(a, e, loose) then return "FAIL" end
      end
    end
    if is_tensor(a) then
      local dt = tostring(a.dtype)
      if ann then
        if dt:lower() ~= ann:lower() then return "FAIL", "dtype " .. dt end
      elseif dt ~= "Float32" and dt ~= "Bool" then
        notes[#notes + 1] = "dtype not shown: " .. dt
      end
    elseif ann and not (DTYPES[ann:lower()] and a ~= nil) then
      notes[#notes + 1] = "dtype ann on non-tensor"
    end
  end
  if manual then return "MANUAL" end
  return "PASS"
end


-- 3. running a block
local function trimmed(s) return (tostring(s):gsub("^%s+", ""):gsub("%s+$", "")) end

-- Run a transformed block in env; fills results (one per check).
local function exec(page, blk, chunk, checks, env)
  local results = {}
  local capbuf
  env.print = function(...)
    if not capbuf then return end -- a block's own prints: not ours to show
    local t = pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    capbuf[#capbuf + 1] = table.concat(t, "\t", 1, t.n)
  end
  env.__capture = function(fn)
    local saved = capbuf; capbuf = {}
    local ok, e = pcall(fn)
    local s = table.concat(capbuf, "\n"); capbuf = saved
    if not ok then error(e, 0) end
    return s
  end
  env.__discard = function() end
  local function emit(id, status, actual, note)
    local c = checks[id]
    results[id] = { line = c.line, status = status, lhs = c.lhs, exp = c.exp,
      actual = actual or "", note = note or "" }
  end
  env.__check = function(id, fn, stmt)
    local r = pack(xpcall(fn, function(e) return e end))
    local res = { ok = r[1] }
    if r[1] then res.vals = pack(unpack(r, 2, r.n)) else res.err = r[2] end
    local actual
    if res.ok then
      local parts = {}
      for i = 1, res.vals.n do parts[i] = show(res.vals[i]) end
      actual = table.concat(parts, ", ")
    else
      actual = "raised: " .. tostring(res.err)
    end
    if stmt then emit(id, res.ok and "MANUAL" or "ERROR", actual, "statement"); return end
    if checks[id].printed and res.ok then
      local norm = function(x) return trimmed((tostring(x):gsub("%s+", " "))) end
      if norm(res.vals[1]) == norm(checks[id].exp) then emit(id, "PASS", actual)
      else emit(id, "MANUAL", actual, "printed") end
      return
    end
    local ok, status, why = pcall(compare, res, checks[id].exp)
    if ok and status == "FAIL" and why == "count" and res.vals.n == 1 and is_tensor(res.vals[1]) then
      local ok2, st2 = pcall(compare, res, "{" .. checks[id].exp .. "}")
      if ok2 and st2 == "PASS" then status, why = "PASSNOTE", "bare values of a tensor" end
    end
    -- the checker itself failed: an error, not something to read
    if not ok then status, why = "ERROR", "compare raised: " .. tostring(status) end
    local note = why or ""
    if notes and #notes > 0 and status == "PASS" then status = "PASSNOTE"; note = table.concat(notes, "; ") end
    emit(id, status, actual, note)
  end
  local pre = M.preludes[page:gsub("%.md$", "")]
  if pre then
    local f = assert(load(BASE .. pre, "=prelude(" .. page .. ")", "t", env))
    local ok, err = pcall(f)
    if not ok then
      for id, c in ipairs(checks) do emit(id, "NOTREACHED", "", "page prelude raised: " .. tostring(err)) end
      return results
    end
  end
  local npre = select(2, BASE:gsub("\n", ""))
  local name = page .. "@" .. blk.start
  local f, cerr = load(chunk, "=" .. name, "t", env)
  if not f then
    for id in ipairs(checks) do emit(id, "NOCOMPILE", "", cerr) end
    return results
  end
  local ok, err = xpcall(f, function(e) return e end)
  if not ok then
    -- chunk line -> page line
    err = tostring(err):gsub("(" .. name:gsub("%p", "%%%0") .. ":)(%d+)", function(p, n)
      return page .. ":" .. (tonumber(n) - npre + blk.start - 1)
    end)
    for id in ipairs(checks) do
      if not results[id] then emit(id, "NOTREACHED", "", "an earlier line raised: " .. (err:match("[^\n]*"))) end
    end
  end
  for id in ipairs(checks) do
    if not results[id] then emit(id, "NOTREACHED", "", "never evaluated") end
  end
  return results
end

-- Global state a block may change, taken before and put back after it.
local function get_state()
  local c = cell.dataset.config
  return {
    rng = cell.get_rng_state(), threads = cell.get_num_threads(), device = cell.get_device(),
    grad = cell.is_grad_enabled(), mode = cell.get_auto_parallel_context("parallel_mode"),
    ds_seed = c.get_seed(), ds_workers = c.get_num_parallel_workers(), ds_prefetch = c.get_prefetch_size(),
  }
end
local function set_state(s)
  local c = cell.dataset.config
  cell.set_rng_state(s.rng)
  if cell.get_num_threads() ~= s.threads then cell.set_num_threads(s.threads) end
  if tostring(cell.get_device()) ~= tostring(s.device) then cell.set_device(s.device) end
  cell.set_grad_enabled(s.grad)
  if cell.get_auto_parallel_context("parallel_mode") ~= s.mode then cell.reset_auto_parallel_context() end
  c.set_seed(s.ds_seed); c.set_num_parallel_workers(s.ds_workers); c.set_prefetch_size(s.ds_prefetch)
end

-- A block that writes files (or opens what it wrote) runs in a subprocess.
local WRITES = { "save_checkpoint", "io%.open", "/tmp/", "%.safetensors", "%.ckpt", ":save%(", "export%(" }
function M.writes_files(blk)
  local src = table.concat(blk.lines, "\n")
  for _, p in ipairs(WRITES) do if src:find(p) then return true end end
  return false
end

local SEP = "\30" -- fields of a result line from the subprocess
local function in_process(page, blk, dir)
  local chunk, checks = transform(blk)
  local env = setmetatable({}, { __index = _G })
  local saved = get_state()
  local ok, results = pcall(exec, page, blk, chunk, checks, env)
  set_state(saved)
  if not ok then error(results, 0) end
  return results
end

local function abspaths(path, root)
  local out = {}
  for entry in path:gmatch("[^;]+") do
    if entry:sub(1, 1) ~= "/" then entry = root .. "/" .. entry end
    out[#out + 1] = entry
  end
  return table.concat(out, ";") .. ";;"
end

local function subprocess(page, blk, dir, tmp)
  local pwd = io.popen("pwd")
  local root = pwd:read("*l")
  pwd:close()
  local absdir = dir:sub(1, 1) == "/" and dir or root .. "/" .. dir
  local lua = os.getenv("CELL_LUA") or "lua5.4"
  local cmd = ('cd "%s" && LUA_PATH="%s" LUA_CPATH="%s" DOCEX="%s|%s|%d|%s" %s -e \'require("helpers.doc_examples").child()\' 2>&1')
    :format(tmp, abspaths(package.path, root), abspaths(package.cpath, root), absdir, page, blk.start, tmp, lua)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  local results = {}
  for l in out:gmatch("[^\n]+") do
    local f = {}
    for x in (l .. SEP):gmatch("(.-)" .. SEP) do f[#f + 1] = x end
    if f[1] == "R" then
      results[#results + 1] = { line = tonumber(f[2]), status = f[3], lhs = f[4]:gsub("\\n", "\n"),
        exp = f[5]:gsub("\\n", "\n"), actual = f[6], note = f[7] }
    end
  end
  if #results == 0 then
    results[1] = { line = blk.start, status = "ERROR", lhs = "(the block, in a subprocess)", exp = "",
      actual = out:sub(-600), note = "no results" }
  end
  return results
end

-- The subprocess' side: DOCEX="dir|page|start line|tmp dir" lua -e 'require("helpers.doc_examples").child()'
function M.child()
  local dir, page, start, tmp = os.getenv("DOCEX"):match("^(.-)|(.-)|(%d+)|(.*)$")
  start = tonumber(start)
  for _, blk in ipairs(M.blocks(dir, page)) do
    if blk.start == start then
      for i, l in ipairs(blk.lines) do blk.lines[i] = l:gsub('"/tmp/', '"' .. tmp .. '/') end
      local chunk, checks = transform(blk)
      local results = exec(page, blk, chunk, checks, setmetatable({}, { __index = _G }))
      for id in ipairs(checks) do
        local r = results[id] or { line = checks[id].line, status = "NOTREACHED", lhs = checks[id].lhs,
          exp = checks[id].exp, actual = "", note = "" }
        local clean = function(s) return (tostring(s):gsub(SEP, " "):gsub("\n", "\\n")) end
        io.write(table.concat({ "R", r.line, r.status, clean(r.lhs), clean(r.exp), clean(r.actual), clean(r.note) }, SEP), "\n")
      end
    end
  end
end

-- The page lines of a block's checks (its `-->` lines), without running it.
--- The expressions of a block's `-->` lines (the text before the arrow).
function M.check_exprs(blk)
  local _, checks = transform(blk)
  local out = {}
  for i, c in ipairs(checks) do out[i] = c.lhs end
  return out
end

function M.run_block(dir, page, blk, tmp)
  local results
  if M.writes_files(blk) then results = subprocess(page, blk, dir, tmp)
  else results = in_process(page, blk, dir) end
  return results
end

return M
