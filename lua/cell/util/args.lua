--- cell.util.args: the one parser of optional arguments, for every function
-- of cell that has MindSpore keyword defaults. They come positionally, in
-- MindSpore's order, or as a trailing options table, or both (positional
-- first, then the table for the rest):
--
--     net:parameters_and_names("m.", false)
--     net:parameters_and_names{name_prefix = "m.", expand = false}
--     net:parameters_and_names("m.", {expand = false})
--
-- The last argument is an options table when it is a plain table (no
-- metatable) with no sequence part, and the argument in its position does
-- not itself take such a table (`names.values` lists those, as Cell.init's
-- `flags`; `names.value_if[name](t)` says it for one table, as for a
-- callback object among Model.train's callbacks): a list {1, 2} is a
-- value, {stride = 2} is options. Unknown option names, a name given
-- twice (positionally and in the table) and more positional values than
-- there are names are TypeErrors in Python's words, naming the function
-- and the argument.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local M = {}

local unpack = table.unpack or unpack

--- Per names list: known[name] = position, and the options as text.
local cache = setmetatable({}, { __mode = "k" })

local function info_of(names)
  local info = cache[names]
  if info then return info end
  local known, values = {}, {}
  for i = 1, #names do known[names[i]] = i end
  for _, k in ipairs(names.values or {}) do values[k] = true end
  info = { known = known, values = values, text = table.concat(names, ", ") }
  cache[names] = info
  return info
end

--- Whether `t` may be an options table: a plain table with no sequence part.
function M.is_options(t)
  return type(t) == "table" and getmetatable(t) == nil and rawget(t, 1) == nil
end

--- Whether the last of the n values in `...` is options for `names`.
function M.has_options(names, n, ...)
  if n == 0 then return false end
  local last = (select(n, ...))
  if not M.is_options(last) then return false end
  local at = names[n]
  if at == nil then return true end
  if info_of(names).values[at] then return false end
  local test = names.value_if and names.value_if[at]
  return not (test and test(last))
end

--- The arguments as a table keyed by name (absent ones nil), and the
-- number of values given positionally. `fname` names the function in
-- errors ("Cell.state_dict", "Dense"); `names` lists the argument names in
-- positional order, with optional fields `values` (names whose plain-table
-- value is not options) and `aliases` (other accepted option name -> name);
-- errors are raised at the user's line (cell.errors.raise finds it); `lvl`
-- is accepted for the callers written before that and not used. Trailing
-- nils count as absent, as a Lua caller means them (f(a, nil) is f(a)).
function M.named(fname, names, lvl, n, ...)
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  local info = info_of(names)
  local out = {}
  local npos = n
  local opts
  if M.has_options(names, n, ...) then
    opts = (select(n, ...))
    npos = n - 1
  end
  if npos > #names then
    local given = npos == 1 and "1 was given" or (npos .. " were given")
    if #names == 0 then
      raise(("TypeError: %s() takes no optional arguments, but %s"):format(fname, given))
    end
    raise(("TypeError: %s() takes at most %d optional argument%s, but %s")
      :format(fname, #names, #names == 1 and "" or "s", given))
  end
  for i = 1, npos do out[names[i]] = (select(i, ...)) end
  if opts then
    local bad = {}
    for k in pairs(opts) do
      local key = names.aliases and names.aliases[k] or k
      if not info.known[key] then bad[#bad + 1] = tostring(k) end
    end
    if #bad > 0 then
      table.sort(bad)
      local known = #names == 0 and "it takes no options" or ("the options are " .. info.text)
      raise(("TypeError: %s() got an unexpected keyword argument '%s'; %s"):format(fname, bad[1], known))
    end
    for k, v in pairs(opts) do
      local key = names.aliases and names.aliases[k] or k
      if info.known[key] <= npos or (k ~= key and opts[key] ~= nil) then
        raise(("TypeError: %s() got multiple values for argument '%s'"):format(fname, key))
      end
      out[key] = v
    end
  end
  return out, npos
end

--- The arguments in the order of `names` (see M.named).
function M.parse(fname, names, lvl, n, ...)
  local t = M.named(fname, names, lvl, n, ...)
  local list = {}
  for i = 1, #names do list[i] = t[names[i]] end
  return unpack(list, 1, #names)
end

return M
