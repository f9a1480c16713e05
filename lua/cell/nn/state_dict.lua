--- Cell:state_dict and Cell:load_state_dict as MindSpore 2.6 defines them,
-- with their four hook kinds and the extra-state protocol.
--
-- Keys come in registration order: a cell's parameters, then its persistent
-- buffers, then its extra state (`_extra_state`, when the class defines
-- get_extra_state), then each sub-cell's keys under "name.". Values are the
-- Parameters and buffers themselves (references; as in MindSpore 2.6,
-- `keep_vars` is checked but changes nothing). The result is an OrderedDict
-- whose `_metadata` field (a raw field, not an entry) maps each cell's path
-- to its metadata table. Loading copies values into the existing tensors,
-- so Parameters keep their identity.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local OrderedDict = require "cell.ordered_dict"
local R = require "cell.nn.registry"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args = require "cell.util.args"

local S, type_name, class_name = I.S, T.type_name, T.class_name

local M = {}

local EXTRA = "_extra_state"

local odict_set, odict_get = OrderedDict.__newindex, OrderedDict.get
local odict_put, odict_snapshot, odict_from = OrderedDict._put, OrderedDict._snapshot, OrderedDict._from
local odict_view = OrderedDict._view
local find, sub = string.find, string.sub

--- A string as Python's repr prints it: in single quotes, or in double
-- quotes when it holds a single quote and no double one.
local function py_str(s)
  s = tostring(s)
  local q = "'"
  if s:find("'", 1, true) and not s:find('"', 1, true) then q = '"' end
  s = s:gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub("\r", "\\r"):gsub("\t", "\\t")
  if q == "'" then s = s:gsub("'", "\\'") end
  return q .. s .. q
end

--- A list of strings as Python's repr prints it: ['a', 'b'].
local function py_list(list)
  local parts = {}
  for i = 1, #list do parts[i] = py_str(list[i]) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

--- What load_state_dict returns: the missing and unexpected keys.
local Incompatible = {}
Incompatible.__index = Incompatible
function Incompatible.__tostring(r)
  if #r.missing_keys == 0 and #r.unexpected_keys == 0 then return "<All keys matched successfully>" end
  return ("_IncompatibleKeys(missing_keys=%s, unexpected_keys=%s)")
    :format(py_list(r.missing_keys), py_list(r.unexpected_keys))
end

local function is_odict(d) return class.is_instance(d, OrderedDict) end

function M.install(Cell)
  --- Extra state to store under `_extra_state`; define it (with
  -- set_extra_state) in a subclass that has state beyond its tensors.
  function Cell:get_extra_state()
    raise("RuntimeError: Reached a code path in Cell.get_extra_state() that should never be called.")
  end

  --- Receives what get_extra_state returned, when loading.
  function Cell:set_extra_state()
    raise("RuntimeError: Reached a code path in Cell.set_extra_state() that should never be called.")
  end

  local base_get, base_set = Cell.get_extra_state, Cell.set_extra_state

  --- The four hook kinds, registered as register_<kind>(hook) -> handle:
  -- state_dict_pre_hook: hook(cell, prefix, keep_vars), before a cell's state is saved;
  -- state_dict_post_hook: hook(cell, state_dict, prefix, local_metadata), after; it
  --   may change state_dict in place and must return nil;
  -- load_state_dict_pre_hook: hook(cell, state_dict, prefix, local_metadata, strict,
  --   missing_keys, unexpected_keys, error_msgs), before a cell's tensors are loaded;
  -- load_state_dict_post_hook: hook(cell, incompatible_keys), after the cell and its
  --   sub-cells are loaded; it may change the key lists in place and must return nil.
  local NO_ARGS = {}
  local hook_fields = {
    register_state_dict_pre_hook = "sd_pre",
    register_state_dict_post_hook = "sd_post",
    register_load_state_dict_pre_hook = "load_pre",
    register_load_state_dict_post_hook = "load_post",
  }
  for method, field in pairs(hook_fields) do
    Cell[method] = function(self, hook, ...)
      args.parse("Cell." .. method, NO_ARGS, 2, select("#", ...), ...)
      I.check_hook_fn(method, hook, 2)
      local h = I.add_hook(rawget(self, S), field, { fn = hook })
      return h
    end
  end

  --- Put this cell's own state (not its sub-cells') into `destination`.
  function Cell:_save_to_state_dict(destination, prefix)
    local st = rawget(self, S)
    for name, p in R.each(st.params) do
      if p ~= nil then odict_put(destination, prefix .. name, p) end
    end
    local np = st.non_persistent
    for name, b in R.each(st.buffers) do
      if b ~= nil and not np[name] then odict_put(destination, prefix .. name, b) end
    end
    if getmetatable(self).get_extra_state ~= base_get then
      odict_set(destination, prefix .. EXTRA, self:get_extra_state())
    end
  end

  local save
  function save(self, destination, prefix, keep_vars)
    local st = rawget(self, S)
    local metadata = rawget(destination, "_metadata")
    local local_metadata = {}
    if metadata ~= nil then odict_set(metadata, prefix:sub(1, -2), local_metadata) end
    local pre = st.sd_pre
    if pre then
      for i = 1, #pre do pre[i].fn(self, prefix, keep_vars) end
    end
    self:_save_to_state_dict(destination, prefix, keep_vars)
    for name, c in R.each(st.cells) do
      if c ~= nil then
        -- a sub-cell whose class keeps Cell's state_dict is saved directly
        -- (its checks and argument parsing hold for these arguments); one
        -- that overrides it gets the call, as PyTorch's recursion makes
        if c.state_dict == Cell.state_dict then
          save(c, destination, prefix .. name .. ".", keep_vars)
        else
          c:state_dict { destination = destination, prefix = prefix .. name .. ".", keep_vars = keep_vars }
        end
      end
    end
    local post = st.sd_post
    if post then
      for i = 1, #post do
        if post[i].fn(self, destination, prefix, local_metadata) ~= nil then
          error("RuntimeError: state_dict post-hook must return nil", 0)
        end
      end
    end
    return destination
  end

  local STATE_DICT_ARGS = { "destination", "prefix", "keep_vars" }

  --- state_dict{destination = , prefix = "", keep_vars = false}, or the
  -- same positionally: an OrderedDict of the cell's whole state.
  function Cell:state_dict(...)
    local destination, prefix, keep_vars = args.parse("Cell.state_dict", STATE_DICT_ARGS, 2, select("#", ...), ...)
    if prefix == nil then prefix = "" end
    if keep_vars == nil then keep_vars = false end
    if destination ~= nil and not is_odict(destination) then
      raise(("TypeError: The type of destination must be OrderedDict, but got %s"):format(type_name(destination)))
    end
    if type(prefix) ~= "string" then
      raise(("TypeError: The type of prefix must be string, but got %s"):format(type_name(prefix)))
    end
    if type(keep_vars) ~= "boolean" then
      raise(("TypeError: The type of keep_vars must be bool, but got %s"):format(type_name(keep_vars)))
    end
    if destination == nil then
      destination = OrderedDict()
      rawset(destination, "_metadata", OrderedDict())
    end
    return save(self, destination, prefix, keep_vars)
  end

  --- Copy `input` into `t` (a Parameter or buffer), converting its dtype
  -- (the caller turns recording off); returns the error text on failure.
  local function copy_into(t, input)
    if t.has_init then t:init_data() end
    t:copy_(input)
  end
  local function assign(t, input)
    local ok, err = pcall(copy_into, t, input)
    if not ok then return tostring(require("cell.errors").message(err)) end
  end

  local same_shape = T.same_tensor_shape

  --- The tensors of registry r (not nil, their names not in skip) appended
  -- to names (n of them so far) and local_state; the new count.
  local function gather(r, skip, names, local_state, n)
    local rk, rn = R.names(r)
    local rv = r.val
    for i = 1, rn do
      local name = rk[i]
      local t = rv[name]
      if t ~= nil and not (skip and skip[name]) then
        n = n + 1
        names[n], local_state[name] = name, t
      end
    end
    return n
  end

  --- Load `self`'s own tensors from `state_dict` (keys with `prefix`),
  -- adding to the three lists (Cell:_load_from_state_dict, below). With
  -- want_groups, also the keys below a path component after the prefix,
  -- component -> list of keys, and the table of values by key: what
  -- load_state_dict hands each sub-cell, found in the same pass over the
  -- keys as the strict check's (one pass over a 1,000-entry dict at the
  -- root instead of three).
  local function load_own(self, state_dict, keys, nkeys, vals, prefix, local_metadata, strict, missing_keys,
                          unexpected_keys, error_msgs, want_groups, prefixed)
    local st = rawget(self, S)
    local pre = st.load_pre
    if pre then -- (the caller gave state_dict, an OrderedDict, for them)
      for i = 1, #pre do
        pre[i].fn(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
      end
      keys, nkeys, vals = odict_view(state_dict) -- as the hooks left it
      prefixed = false
    end
    local local_state, names = {}, {}
    local nn = gather(st.params, nil, names, local_state, 0)
    nn = gather(st.buffers, st.non_persistent, names, local_state, nn)
    local own = {} -- the full keys of this cell's tensors
    local prev = core.set_grad_enabled(false) -- copies into leaves that require grad
    for i = 1, nn do
      local name = names[i]
      local t, key = local_state[name], prefix .. name
      own[key] = true
      local input = vals[key] -- values are never nil: nil is absent
      if input ~= nil then
        if not core.is_tensor(input) then
          error_msgs[#error_msgs + 1] = ('While copying the parameter named "%s", expected Tensor or '
            .. "Tensor-like object from checkpoint but received %s"):format(key, type_name(input))
        elseif not same_shape(input, t) then
          error_msgs[#error_msgs + 1] = ("size mismatch for %s: copying a param with shape %s from checkpoint, "
            .. "the shape in current model is %s."):format(key, T.shape_str(input.shape), T.shape_str(t.shape))
        else
          local err = assign(t, input)
          if err then
            error_msgs[#error_msgs + 1] = ('While copy the parameter named "%s", whose shape in the model are %s '
              .. "and whose shape in the checkpoint are %s, an exception occurred : %s.")
              :format(key, T.shape_str(t.shape), T.shape_str(input.shape), err)
          end
        end
      elseif strict then
        missing_keys[#missing_keys + 1] = key
      end
    end
    core.set_grad_enabled(prev)
    local extra_key = prefix .. EXTRA
    if getmetatable(self).set_extra_state ~= base_set then
      local extra = vals[extra_key]
      if extra ~= nil then
        self:set_extra_state(extra)
      elseif strict then
        missing_keys[#missing_keys + 1] = extra_key
      end
    elseif strict and vals[extra_key] ~= nil then
      unexpected_keys[#unexpected_keys + 1] = extra_key
    end
    if not (strict or want_groups) then return end
    -- a key is, through its first component, a sub-cell's, or this cell's
    -- own tensor (whose name may hold dots, as ParameterTuple members' and
    -- optimizer moments' do); either way it is expected
    local n, cells = #prefix, st.cells.pos
    local groups = want_groups and {} or nil
    for i = 1, nkeys do
      local key = keys[i]
      if key ~= extra_key and (prefixed or type(key) == "string" and (n == 0 or find(key, prefix, 1, true) == 1)) then
        local dot = find(key, ".", n + 1, true)
        local head = dot and sub(key, n + 1, dot - 1)
        if head and groups then
          local g = groups[head]
          if not g then
            g = {}
            groups[head] = g
          end
          g[#g + 1] = key
        end
        if strict and not (head and cells[head] ~= nil) and not own[key] then
          unexpected_keys[#unexpected_keys + 1] = key
        end
      end
    end
    return groups, vals
  end

  --- Load this cell's own tensors from `state_dict` (keys with `prefix`),
  -- adding to the three lists; sub-cells are load_state_dict's business.
  function Cell:_load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
    local keys, nkeys, vals = odict_view(state_dict)
    load_own(self, state_dict, keys, nkeys, vals, prefix, local_metadata, strict, missing_keys, unexpected_keys,
      error_msgs, false)
  end
  local base_load = Cell._load_from_state_dict

  --- The entries of `sd` (an OrderedDict) split by their first path
  -- component after `prefix`: component -> list of keys; and the values.
  local function by_child(sd, prefix)
    local groups, n = {}, #prefix
    local keys, nkeys, vals = odict_view(sd)
    for i = 1, nkeys do
      local k = keys[i]
      local dot = type(k) == "string" and find(k, ".", n + 1, true)
      if dot then
        local head = sub(k, n + 1, dot - 1)
        local g = groups[head]
        if not g then
          g = {}
          groups[head] = g
        end
        g[#g + 1] = k
      end
    end
    return groups, vals
  end

  local LOAD_ARGS = { "strict" }

  --- load_state_dict(state_dict [, strict = true]) (or {strict = }): copy
  -- tensors into this cell and its sub-cells. Returns {missing_keys,
  -- unexpected_keys}; with strict, any of them is an error, and so is a
  -- size mismatch or a bad value with or without strict, all reported in
  -- one RuntimeError.
  function Cell:load_state_dict(state_dict, ...)
    local strict = args.parse("Cell.load_state_dict", LOAD_ARGS, 2, select("#", ...), ...)
    if strict == nil then strict = true end
    if type(strict) ~= "boolean" then
      raise(("TypeError: load_state_dict: strict must be a boolean, but got %s"):format(type_name(strict)))
    end
    local sd, metadata
    if is_odict(state_dict) then
      sd = odict_from(odict_snapshot(state_dict))
      metadata = rawget(state_dict, "_metadata")
    elseif type(state_dict) == "table" and getmetatable(state_dict) == nil then
      local keys = {}
      for k in pairs(state_dict) do
        if type(k) ~= "string" then
          raise(("TypeError: load_state_dict: state_dict keys must be strings, but got %s"):format(type_name(k)))
        end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      sd = odict_from(keys, state_dict)
    else
      raise(("TypeError: Expected state_dict to be dict-like, got %s."):format(type_name(state_dict)))
    end
    if metadata ~= nil then rawset(sd, "_metadata", metadata) end
    local missing, unexpected, errors = {}, {}, {}
    local incompatible = setmetatable({ missing_keys = missing, unexpected_keys = unexpected }, Incompatible)
    -- c's part of the dict: the keys keys[1..nkeys] and their values in
    -- vals, and local_sd, an OrderedDict of them, made only when c's own
    -- _load_from_state_dict or its hooks are to see one
    local function load(c, local_sd, keys, nkeys, vals, prefix)
      local md = metadata and odict_get(metadata, prefix:sub(1, -2)) or {}
      local st = rawget(c, S)
      local parent = st.cells.n - st.cells.holes > 0
      local prefixed = local_sd == nil -- the parent's split: strings under prefix
      local custom = c._load_from_state_dict ~= base_load
      if (custom or st.load_pre) and not local_sd then local_sd = odict_from(keys, vals, nkeys) end
      local groups
      if not custom then -- the keys split in the same pass as the strict check's
        groups, vals = load_own(c, local_sd, keys, nkeys, vals, prefix, md, true, missing, unexpected, errors, parent,
          prefixed)
      else
        c:_load_from_state_dict(local_sd, prefix, md, true, missing, unexpected, errors)
        if parent then groups, vals = by_child(local_sd, prefix) end
      end
      local ck, cn = R.names(st.cells)
      local cv = st.cells.val
      for i = 1, cn do
        local name = ck[i]
        local child = cv[name]
        if child ~= nil then
          local g = groups[name] or {}
          load(child, nil, g, #g, vals, prefix .. name .. ".")
        end
      end
      local post = st.load_post
      if post then
        for i = 1, #post do
          if post[i].fn(c, incompatible) ~= nil then
            error("RuntimeError: Hooks registered with register_load_state_dict_post_hook are not expected to "
              .. "return new values; if incompatible_keys need to be modified, it should be done in place.", 0)
          end
        end
      end
    end
    local keys, nkeys, vals = odict_view(sd)
    load(self, sd, keys, nkeys, vals, "")
    if strict then
      local function quoted(list)
        local q = {}
        for i = 1, #list do q[i] = '"' .. list[i] .. '"' end
        return table.concat(q, ", ")
      end
      if #unexpected > 0 then
        table.insert(errors, 1, ("Unexpected key(s) in state_dict: %s. "):format(quoted(unexpected)))
      end
      if #missing > 0 then
        table.insert(errors, 1, ("Missing key(s) in state_dict: %s. "):format(quoted(missing)))
      end
    end
    if #errors > 0 then
      raise(("RuntimeError: Error(s) in loading state_dict for %s:\n\t%s")
        :format(class_name(self), table.concat(errors, "\n\t")))
    end
    return incompatible
  end
end

return M
