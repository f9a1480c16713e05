--- cell.repl: the Lua half of the `cell` REPL: how results print, what Tab completes, and `?name` help.
--
-- The executable (src/repl/main.c) reads lines, compiles and runs them, and
-- calls three functions of this module:
--
--     repl.format_results(...)  --> the text printed for a line's values
--     repl.complete("net:st")   --> { "net:state_dict", ... }  (Tab)
--     repl.help("cell.zeros")   --> "cell.zeros(shape [, dtype])\n  A tensor ..."
--     repl.traceback(msg, 2)    --> the message handler's text at the prompt:
--                                   the user's frames only (see below)
--     repl.install_globals()    --  help() and traceback() for the session
--
-- Printing. Several values print on one line, separated by tabs (as `print`
-- and lua.c do). A string prints as it is; any other value through
-- `repl.format`: a value with a `__tostring` (tensors, Parameters, cells,
-- OrderedDicts) through it, a plain table as a constructor - nested up to
-- `repl.max_depth` levels (deeper ones read `{...}`), at most
-- `repl.max_items` entries (then `... (N items)`), the sequence part first,
-- then the other keys sorted (numbers, then strings, then the rest), a
-- table that contains itself marked `<cycle>`, on one line when it fits in
-- `repl.width` columns and one entry per line otherwise. An error raised by
-- a `__tostring` inside a table shows in place as `<error in __tostring:
-- ...>`; one raised by a result's own `__tostring` propagates, and the REPL
-- reports it with its traceback.
--
-- Completion looks values up (loading lazy submodules such as `cell.nn`) but
-- calls no user function other than `__index` metamethods, and an error
-- there just gives no candidates. Names starting with `_` are offered only
-- once `_` is typed.
--
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"
local doc = require "cell.doc"

local M = {}

-- Lua's own, whatever the session does to the globals.
local select, type, tostring, pcall = select, type, tostring, pcall

--- Nesting levels of tables shown before `{...}`.
M.max_depth = 4
--- Entries of a table shown before `... (N items)`.
M.max_items = 20
--- Columns a table may take on one line.
M.width = 80

--- The globals of the REPL (captured once, so `_G = nil` does not break us).
local G = _G

local KEYWORDS = {}
for _, k in ipairs { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
  "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" } do
  KEYWORDS[k] = true
end

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil and not KEYWORDS[s]
end
M.is_identifier = is_identifier

-- Printing ---------------------------------------------------------------------------

--- tostring that cannot raise: an error in `__tostring` becomes text.
local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if not ok then return "<error in __tostring: " .. tostring(s) .. ">" end
  if type(s) ~= "string" then return "<__tostring returned a " .. type(s) .. ">" end
  return s
end

--- The `__tostring` of v's metatable, if it has one (a protected metatable
-- counts as having one: tostring is all we may use then).
local function has_tostring(v)
  local mt = getmetatable(v)
  if mt == nil then return false end
  if type(mt) ~= "table" then return true end
  return rawget(mt, "__tostring") ~= nil
end

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

--- A string as a Lua literal, long ones cut.
local function quote(s)
  local cut = ""
  if #s > 200 then
    cut = ("...(%d bytes)"):format(#s)
    s = s:sub(1, 200)
  end
  s = s:gsub('[%c"\\]', function(c) return ESCAPES[c] or ("\\%03d"):format(c:byte()) end)
  return '"' .. s .. '"' .. cut
end

local TYPE_RANK = { number = 1, string = 2, boolean = 3 }

--- Sort keys: numbers by value, then strings, then booleans, then the rest
-- by their text (a stable order for a given session).
local function key_less(a, b)
  local ta, tb = type(a), type(b)
  local ra, rb = TYPE_RANK[ta] or 4, TYPE_RANK[tb] or 4
  if ra ~= rb then return ra < rb end
  if ta == "number" and tb == "number" then return a < b end
  if ta == "string" and tb == "string" then return a < b end
  return safe_tostring(a) < safe_tostring(b)
end

local format_value

--- The entries of table t: the sequence 1..n (by rawget), then the other
-- keys sorted. Returns the list of keys, n, and the total count.
local function table_keys(t)
  local n = 0
  while rawget(t, n + 1) ~= nil do n = n + 1 end
  local rest = {}
  for k in next, t do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then rest[#rest + 1] = k end
  end
  table.sort(rest, key_less)
  return rest, n, n + #rest
end

local function format_key(k)
  if is_identifier(k) then return k .. " = " end
  if type(k) == "string" then return "[" .. quote(k) .. "] = " end
  return "[" .. safe_tostring(k) .. "] = "
end

local function format_table(t, depth, path, indent)
  if path[t] then return "<cycle>" end
  local rest, n, total = table_keys(t)
  if total == 0 then return "{}" end
  if depth >= M.max_depth then return "{...}" end
  path[t] = true
  local inner = indent .. "  "
  -- parts[i] is an entry's text; keyed[i] whether it has a key
  local parts, keyed, shown = {}, {}, 0
  for i = 1, n do
    if shown >= M.max_items then break end
    shown = shown + 1
    parts[shown] = format_value(rawget(t, i), depth + 1, path, inner)
  end
  for i = 1, #rest do
    if shown >= M.max_items then break end
    local k = rest[i]
    shown = shown + 1
    parts[shown] = format_key(k) .. format_value(rawget(t, k), depth + 1, path, inner)
    keyed[shown] = true
  end
  path[t] = nil
  if total > shown then parts[shown + 1] = ("... (%d items)"):format(total) end
  local width, multiline = #indent, false
  for i = 1, #parts do
    width = width + #parts[i] + 2
    if parts[i]:find("\n", 1, true) then multiline = true end
  end
  if not multiline and width <= M.width then return "{" .. table.concat(parts, ", ") .. "}" end
  -- One entry per line, except that short sequence items fill lines.
  local lines, line = {}, nil
  for i = 1, #parts do
    local p = parts[i]
    local fill = not keyed[i] and not p:find("\n", 1, true)
    if fill and line and #line + #p + 2 <= M.width then
      line = line .. ", " .. p
    else
      if line then lines[#lines + 1] = line end
      line = inner .. p
    end
    if not fill then
      lines[#lines + 1] = line
      line = nil
    end
  end
  if line then lines[#lines + 1] = line end
  return "{\n" .. table.concat(lines, ",\n") .. "\n" .. indent .. "}"
end

function format_value(v, depth, path, indent)
  local tv = type(v)
  if tv == "string" then return quote(v) end
  if tv == "table" and not has_tostring(v) then return format_table(v, depth, path, indent) end
  -- a tensor's text has several lines: indent them like the entry
  return (safe_tostring(v):gsub("\n", "\n" .. indent))
end

--- The text of a value as the REPL prints it inside a table: strings
-- quoted, tables as constructors, the rest through tostring (errors shown).
function M.format(v)
  return format_value(v, 0, {}, "")
end

--- The line printed for a line's values: each formatted, tab-separated.
-- A string prints as it is; a value's own `__tostring` runs unprotected, so
-- its error reaches the REPL with a traceback.
function M.format_results(...)
  local n = select("#", ...)
  local parts = {}
  for i = 1, n do
    local v = select(i, ...)
    local tv = type(v)
    if tv == "string" then
      parts[i] = v
    elseif tv == "table" and not has_tostring(v) then
      parts[i] = M.format(v)
    else
      local s = tostring(v)
      if type(s) ~= "string" then error("'__tostring' must return a string", 0) end
      parts[i] = s
    end
  end
  return table.concat(parts, "\t")
end

-- Names and values -------------------------------------------------------------------------

--- t[k] without raising (an __index that fails reads nil).
local function get(t, k)
  local tt = type(t)
  if tt ~= "table" and tt ~= "userdata" and tt ~= "string" then return nil end
  local ok, v = pcall(function() return t[k] end)
  if ok then return v end
  return nil
end

--- The value a dotted name (`a.b.c`, `:` taken as `.`) refers to in env
-- (default: the globals), or nil.
function M.resolve(name, env)
  local v = env or G
  for part in (name .. "."):gmatch("([^.:]*)[.:]") do
    if not is_identifier(part) then return nil end
    v = get(v, part)
    if v == nil then return nil end
  end
  return v
end

-- Completion -------------------------------------------------------------------------------

local nn_internal, nn_registry, class_mod
local function cell_state(v)
  nn_internal = nn_internal or require "cell.nn.internal"
  return nn_internal.state(v)
end

--- Tensor properties the binding serves besides its methods.
local TENSOR_PROPERTIES = { "shape", "dtype", "ndim", "requires_grad", "grad_fn", "T" }
local DTYPE_PROPERTIES = { "name", "itemsize", "is_floating_point" }
--- Cell properties served by its __index before the registries.
local CELL_PROPERTIES = { "training", "requires_grad", "param_prefix", "cls_name" }

--- The submodules `cell` loads on first use.
local CELL_SUBMODULES = { "ops", "nn", "dataset", "train", "communication" }

--- The name under which table t is in package.loaded, if it is.
local module_name = doc._module_name

--- Calls add(name, value) for every member of v that completion offers.
-- methods: only what can be called with `:`.
local function members(v, methods, add)
  local tv = type(v)
  if tv == "string" then
    for k, f in pairs(string) do add(k, f) end
    return
  end
  if core.is_tensor(v) then
    local attrs = core._attrs(v)
    if attrs then
      for k, f in next, attrs do add(k, f) end
      local amt = getmetatable(attrs)
      -- its methods table (a Parameter's __index is a function over it)
      local idx = type(amt) == "table" and (rawget(amt, "__methods") or rawget(amt, "__index"))
      if type(idx) == "table" then
        for k, f in pairs(idx) do add(k, f) end
      end
    end
    for k, f in pairs(core.Tensor) do add(k, f) end
    if not methods then
      for _, k in ipairs(TENSOR_PROPERTIES) do add(k, true) end
    end
    return
  end
  if core.is_dtype(v) then
    if not methods then
      for _, k in ipairs(DTYPE_PROPERTIES) do add(k, true) end
    end
    return
  end
  if tv ~= "table" and tv ~= "userdata" then return end
  local st = tv == "table" and cell_state(v)
  if st then
    -- a Cell: its registries and attributes, then its class's methods
    -- (group 1, listed before the class's methods, group 2)
    if not methods then
      nn_registry = nn_registry or require "cell.nn.registry"
      for _, r in ipairs { st.params, st.buffers, st.cells } do
        for k, x in nn_registry.each(r) do add(k, x == nil and true or x, 1) end
      end
      for _, k in ipairs(CELL_PROPERTIES) do add(k, true, 1) end
    end
    for k, x in next, st.attrs do add(k, x, 1) end
    for k, x in next, getmetatable(v) do add(k, x, 2) end
    return
  end
  if tv == "table" then
    class_mod = class_mod or require "cell.class"
    if class_mod.is_class(v) then
      -- a class: its members, its own fields and the class helpers
      for k, x in next, rawget(v, "__instance") do add(k, x) end
      for _, k in ipairs { "name", "super" } do add(k, rawget(v, k) or true) end
      for _, k in ipairs { "extend", "is_subclass_of" } do add(k, get(v, k)) end
      return
    end
    local mt = getmetatable(v)
    if type(mt) == "table" and rawget(mt, "__class") ~= nil then
      -- a class instance (OrderedDict, ParameterTuple, ...): fields, class members
      for k, x in next, v do add(k, x) end
      for k, x in next, mt do add(k, x) end
      if not methods and class_mod.is_instance(v, require "cell.ordered_dict") then
        for _, k in ipairs(mt.keys(v)) do add(k, true) end
      end
      return
    end
  end
  local modname = tv == "table" and module_name(v)
  if modname then
    -- a module that loads names on first use (cell, cell.nn): load them
    get(v, "\0")
    if modname == "cell" then
      for _, k in ipairs(CELL_SUBMODULES) do
        if rawget(v, k) ~= nil or package.searchpath("cell." .. k, package.path) then add(k, true) end
      end
    end
  end
  -- any other table or userdata: its own keys, then its __index tables
  local seen = {}
  for _ = 1, 8 do
    if seen[v] then break end
    seen[v] = true
    if type(v) == "table" then
      for k, x in next, v do add(k, x) end
    end
    local mt = getmetatable(v)
    if type(mt) ~= "table" then break end
    v = rawget(mt, "__index")
    if type(v) ~= "table" then break end
  end
end

local function callable(x)
  if type(x) == "function" then return true end
  local mt = getmetatable(x)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

--- The completions of `text`, the word before the cursor: a global name
-- (of env, default the globals) or keyword, or `a.b.c` / `a.b:c` with a
-- partial last part. Sorted; on a cell (`net.`), its parameters, buffers,
-- sub-cells and attributes come first, then its class's methods.
function M.complete(text, env)
  local base, sep, partial = text:match("^(.-)([.:])([%w_]*)$")
  local out, seen, group = {}, {}, {}
  local hidden = text:match("[.:]?([%w_]*)$"):sub(1, 1) ~= "_"
  local function offer(prefix, k, x, methods, g)
    if type(k) ~= "string" or not is_identifier(k) or seen[k] then return end
    local p = partial or text
    if k:sub(1, #p) ~= p then return end
    if hidden and k:sub(1, 1) == "_" then return end
    if methods and not callable(x) then return end
    seen[k] = true
    out[#out + 1] = prefix .. k
    group[prefix .. k] = g or 1
  end
  if not sep then
    if not text:match("^[%a_][%w_]*$") and text ~= "" then return out end
    members(env or G, false, function(k, x) offer("", k, x, false) end)
    for k in pairs(KEYWORDS) do
      if k:sub(1, #text) == text and not seen[k] then
        seen[k] = true
        out[#out + 1] = k
      end
    end
  else
    local v = M.resolve(base, env)
    if v == nil or base:find(":", 1, true) then return out end
    local methods = sep == ":"
    members(v, methods, function(k, x, g) offer(base .. sep, k, x, methods, g) end)
  end
  table.sort(out, function(a, b)
    local ga, gb = group[a] or 1, group[b] or 1
    if ga ~= gb then return ga < gb end
    return a < b
  end)
  return out
end

-- Help -------------------------------------------------------------------------------------

local USAGE = "?name prints the signature and summary of a function, class or module, "
  .. "??name its whole reference entry, e.g. ?cell.tensor, ?cell.nn.Dense, ??net:state_dict"

--- The text `?text` prints: the signature and first sentence of what the
-- name refers to (in env, default the globals), from its reference entry
-- (docs/reference) or else from the source (see cell.doc), or why there is
-- none. `??name` (text starting with `?`) prints the whole entry. A name
-- with no value but a reference entry (`nn.Cell.bprop`, which a user
-- defines) prints the entry.
function M.help(text, env)
  local name = text:match("^%s*(.-)%s*$")
  local full = false
  if name:sub(1, 1) == "?" then
    full = true
    name = name:sub(2):match("^%s*(.-)$")
  end
  if name == "" then return USAGE end
  local ok = true
  for part in (name .. "."):gmatch("([^.:]*)[.:]") do
    if not is_identifier(part) then ok = false end
  end
  local colons = select(2, name:gsub(":", ""))
  if not ok or colons > 1 or (colons == 1 and not name:match(":[%w_]+$")) then
    return ("?%s: not a name; %s"):format(name, USAGE)
  end
  local v = M.resolve(name, env)
  local e = (v ~= nil and doc.entry_for_value(v)) or doc.entry(name)
  if e then return full and doc.entry_text(e) or doc.entry_summary(e) end
  if v == nil then return ("%s: no such name (it is nil)"):format(name) end
  return doc.describe(v, name)
end

-- help(), traceback() and short tracebacks --------------------------------------------

--- What `help()` prints.
M.HELP = [[
cell's interactive prompt: Lua 5.4 / LuaJIT with `cell` loaded.
  6 * 7                  an expression prints its value; _ holds the last one
  t = cell.ones({2, 3}); t.shape    statements, then a last expression, on one line
  ?name                  the documentation of a function, class or module (?cell.nn.Dense)
  help(x)                the same for a value, or a name as a string: help("cell.zeros")
  Tab                    completes names, fields (net.) and methods (t:)
  traceback()            the full traceback of the last error (the prompt hides
                         cell's own frames; CELL_TRACEBACK=full shows them always)
  Ctrl-C                 interrupts a computation or clears the line; Ctrl-D exits
Coming from PyTorch: gradients are functional (cell.grad, cell.value_and_grad),
an optimizer is called with the gradients (opt(grads)), comparisons are methods
(t:gt(0.5)), and dimensions and indices count from 1.]]

--- The name `help(v)` shows v under: where it is in the globals, in cell or
-- in one of cell's loaded submodules, else "value".
local function name_of(v)
  for k, x in next, G do
    if rawequal(x, v) and is_identifier(k) then return k end
  end
  local cellmod = package.loaded.cell
  if type(cellmod) == "table" then
    for k, x in next, cellmod do
      if rawequal(x, v) and is_identifier(k) then return "cell." .. k end
    end
    for sub, m in next, cellmod do
      if type(m) == "table" and is_identifier(sub) and package.loaded["cell." .. sub] == m then
        for k, x in next, m do
          if rawequal(x, v) and is_identifier(k) then return "cell." .. sub .. "." .. k end
        end
      end
    end
  end
  return "value"
end

--- help() prints how to use the prompt; help("name") what `?name` prints;
-- help(v) the documentation of the value v.
function M.help_command(...)
  if select("#", ...) == 0 then
    print(M.HELP)
    return
  end
  local v = ...
  if type(v) == "string" then
    print(M.help(v))
  elseif v == nil then
    print("help(nil): nothing to document; help() shows how to use the prompt")
  else
    print(doc.describe(v, name_of(v)))
  end
end

--- The last error's full traceback at the prompt (set by `traceback`).
M.last_traceback = nil

--- traceback() prints the full traceback of the last error at the prompt.
function M.traceback_command()
  print(M.last_traceback or "no error yet")
end

--- The directory of cell's Lua files (where this file is), e.g. "/x/lua/cell/".
local function library_dir()
  local src = debug.getinfo(1, "S").source
  if src:sub(1, 1) ~= "@" then return nil end
  return src:sub(2):match("^(.*[/\\])[^/\\]*$")
end
local LIBDIR = library_dir()

--- Whether a frame (debug.getinfo's table) runs one of cell's Lua files.
function M.is_library_frame(info)
  local src = info.source or ""
  return LIBDIR ~= nil and src:sub(1, 1) == "@" and src:sub(2, #LIBDIR + 1) == LIBDIR
end

--- The traceback line of a frame, as luaL_traceback writes it.
local function frame_line(info)
  local where = info.short_src .. ":" .. (info.currentline > 0 and (info.currentline .. ":") or "")
  local what
  if info.what == "main" then
    what = "in main chunk"
  elseif info.name then
    what = ("in function '%s'"):format(info.name)
  elseif info.what == "C" then
    what = "in ?"
  else
    what = ("in function <%s:%d>"):format(info.short_src, info.linedefined)
  end
  return "\t" .. where .. " " .. what
end

--- The REPL's message handler (src/repl/main.c calls it with the error
-- text, on the stack where the error happened, `level` frames above this
-- call): keeps the full traceback for traceback(), and returns the message
-- with a traceback of the user's own frames: cell's frames are left out
-- (counted in a last line) and so are C frames (CELL_TRACEBACK=full: the
-- full one).
function M.traceback(msg, level)
  level = (level or 1) + 1
  if type(msg) == "string" and (msg:find("attempt to compare %a+ with userdata$")
      or msg:find("attempt to compare userdata with %a+$")) then
    -- LuaJIT calls no __lt for a number and a Tensor
    msg = msg .. " (a Tensor? comparisons cannot give a Tensor in Lua: use t:lt(x), t:gt(x), t:le(x), t:ge(x))"
  end
  local full = debug.traceback(msg, level)
  M.last_traceback = full
  if os.getenv("CELL_TRACEBACK") == "full" then return full end
  local lines, hidden = {}, 0
  for l = level, level + 200 do
    local info = debug.getinfo(l, "Sln")
    if not info then break end
    if M.is_library_frame(info) then
      hidden = hidden + 1
    elseif info.what ~= "C" then
      lines[#lines + 1] = frame_line(info)
    end
  end
  local out = msg .. "\nstack traceback:"
  if #lines > 0 then out = out .. "\n" .. table.concat(lines, "\n") end
  if hidden > 0 then
    out = out .. ("\n\t(%d frame%s in cell's files hidden: traceback() shows all, or set CELL_TRACEBACK=full)")
      :format(hidden, hidden == 1 and "" or "s")
  end
  return out
end

--- Sets the REPL's globals help and traceback in env (default the
-- globals), unless the user has their own.
function M.install_globals(env)
  env = env or G
  if rawget(env, "help") == nil then rawset(env, "help", M.help_command) end
  if rawget(env, "traceback") == nil then rawset(env, "traceback", M.traceback_command) end
end

return M
