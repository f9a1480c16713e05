--- cell.nn.Cell: MindSpore's building block of networks, as a Lua class.
--
-- An instance is a proxy: its user-visible members live in the ordered
-- registries of its state (parameters, buffers, sub-cells) and in a table of
-- plain attributes, so every assignment reaches `__newindex`, which routes it
-- by MindSpore 2.6's rules (see API.md, "Attribute routing"), and every read
-- goes through `__index`: properties, parameters, buffers, sub-cells, plain
-- attributes, then the class. This file holds the state, the routing, the
-- insert/register methods, naming and traversal, flags and printing; the
-- call path and its hooks are in call.lua, state_dict in state_dict.lua.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local OrderedDict = require "cell.ordered_dict"
local R = require "cell.nn.registry"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args = require "cell.util.args"
local parameter = require "cell.parameter"

local S, type_name = I.S, T.type_name
local is_cell, class_name = I.is_cell, T.class_name

local Cell = class("Cell")

--- Global buffer-registration hooks (the one piece of global state).
local global = {}

local is_param = parameter.is_parameter

local check_bool = require("cell.util.checks").bool
local is_ptuple = parameter.is_parameter_tuple

--- A plain Lua table (no metatable) that is a non-empty list of Parameters.
local function is_param_list(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil or v[1] == nil then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  if n ~= #v then return false end
  for i = 1, #v do
    if not is_param(v[i]) then return false end
  end
  return true
end

--- Reading a property of a cell (before the registries).
local getters = {
  training = function(st) return st.training end,
  requires_grad = function(st) return st.requires_grad end,
  param_prefix = function(st) return st.param_prefix end,
  cls_name = function(_, self) return class_name(self) end,
}

--- The state every cell starts with, before any `init` runs.
function Cell:__prepare()
  rawset(self, S, {
    params = R.new(), buffers = R.new(), cells = R.new(), attrs = {},
    non_persistent = {}, exist_names = {}, exist_objs = {}, id = 1,
    auto_prefix = true, param_prefix = "", training = false, requires_grad = false,
    flags = {}, fast = true,
  })
end

local INIT_ARGS = { "auto_prefix", "flags", values = { "flags" } }

--- nn.Cell.init(self, {auto_prefix = , flags = }) or (self, auto_prefix, flags).
function Cell:init(...)
  local auto_prefix, flags = args.parse("Cell.init", INIT_ARGS, 2, select("#", ...), ...)
  if auto_prefix == nil then auto_prefix = true end
  if type(auto_prefix) ~= "boolean" then
    raise(("TypeError: Cell: auto_prefix must be a boolean, but got %s"):format(type_name(auto_prefix)))
  end
  rawget(self, S).auto_prefix = auto_prefix
  if flags ~= nil then self:add_flags(flags) end
end

--- PyTorch habits that are no member of a Cell, and what to use instead:
-- reading one raises "AttributeError: 'Dense' object has no attribute
-- 'eval': use net:set_train(false) ...". A subclass may declare its own
-- `__hints` (the optimizers do). Other unknown names read nil.
Cell.__hints = {
  parameters = "use net:trainable_params() (the parameters to train) or net:get_parameters() (all of them)",
  named_parameters = "use net:parameters_and_names()",
  eval = "use net:set_train(false)",
  train = "use net:set_train(true) (or set_train() to go back to training)",
  zero_grad = "not needed: cell computes gradients functionally (cell.grad / cell.value_and_grad), "
    .. "nothing accumulates between steps",
  forward = "call the cell, net(x); its computation is its construct method",
}

--- The first frame outside cell's own Lua files (the user's line), as a
-- level for error() called from the function one level below.
local LIBDIR = (debug.getinfo(1, "S").source:match("^@(.*[/\\])nn[/\\][^/\\]*$"))
local function user_level()
  for level = 3, 30 do
    local info = debug.getinfo(level, "S")
    if not info then break end
    local src = info.source or ""
    if info.what ~= "C" and not (LIBDIR and src:sub(2, #LIBDIR + 1) == LIBDIR and src:sub(1, 1) == "@") then
      return level - 1
    end
  end
  return 2
end

local function attribute_hint(self, k)
  local hints = rawget(getmetatable(self), "__hints")
  local h = type(k) == "string" and type(hints) == "table" and hints[k]
  if h then
    error(("AttributeError: '%s' object has no attribute '%s': %s"):format(class_name(self), k, h), user_level())
  end
end

-- (complete: it answers class members itself, so instances call it
-- directly, not through the class's generic member fallback)
Cell.__index = class.complete_index(function(self, k)
  local st = rawget(self, S)
  local g = getters[k]
  if g then return g(st, self) end
  local v = st.params.val[k]
  if v ~= nil then
    -- under to_float, during a call: the parameter cast to the cell's dtype
    -- (once per call; the cast is differentiable, so gradients reach v)
    local pc = st.pcast
    if pc == nil then return v end
    local c = pc[v]
    if c == nil then
      c = v
      if v.dtype.is_floating_point and v.dtype ~= st.mixed then c = v:astype(st.mixed) end
      pc[v] = c
    end
    return c
  end
  v = st.buffers.val[k]
  if v ~= nil then return v end
  v = st.cells.val[k]
  if v ~= nil then return v end
  v = st.attrs[k]
  if v ~= nil then return v end
  -- a class member (what the class's own lookup would find next), else a
  -- PyTorch habit is an error that says what to use
  local cls = getmetatable(self)
  v = rawget(cls, k)
  if v ~= nil then return v end
  local hints = rawget(cls, "__hints")
  if type(hints) == "table" and type(k) == "string" and hints[k] then attribute_hint(self, k) end
  return nil
end)

--- Whether `name` is any member of the cell: a property, a registered name
-- (with or without a value), a plain attribute or a class member.
local function has_attr(self, st, name)
  return getters[name] ~= nil or R.has(st.params, name) or R.has(st.buffers, name)
    or R.has(st.cells, name) or st.attrs[name] ~= nil or getmetatable(self)[name] ~= nil
end

local function insert_param(self, st, name, param, check_dot, lvl)
  if type(name) ~= "string" then
    raise(("TypeError: For 'insert_param_to_cell', the argument 'param_name' must be a string, but got %s.")
      :format(type_name(name)))
  end
  if name == "" then
    raise("KeyError: For 'insert_param_to_cell', the argument 'param_name' should not be None.")
  end
  if check_dot and name:find(".", 1, true) then
    raise(("KeyError: For 'insert_param_to_cell', the argument 'param_name' should not contain '.', but got '%s'.")
      :format(name))
  end
  if has_attr(self, st, name) and not R.has(st.params, name) then
    raise(("KeyError: For 'insert_param_to_cell', the %s parameter already exists in the network. "
      .. "Cannot insert another parameter with the same name."):format(name))
  end
  if param ~= nil and not is_param(param) then
    raise(("TypeError: For 'insert_param_to_cell', the argument 'param' must be 'Parameter' if not None, "
      .. "but got %s."):format(type_name(param)))
  end
  if param ~= nil then
    if param.has_init then -- initialised at the next call
      st.lazy = true
      st.fast = false
    end
    if param.name == "Parameter" then param.name = name end
    for other, q in R.each(st.params) do
      if other ~= name and q ~= nil and q ~= param and q.name == param.name then
        raise(("ValueError: The value %s , its name '%s' already exists. Please set a unique name for the "
          .. "parameter."):format(tostring(param), param.name))
      end
    end
  end
  R.set(st.params, name, param)
end

local function insert_child(self, st, name, child, lvl)
  if type(name) ~= "string" then
    raise(("TypeError: For 'insert_child_to_cell', the type of parameter 'child_name' must be str, but got %s.")
      :format(type_name(name)))
  end
  if name == "" or name:find(".", 1, true) then
    raise(("KeyError: For 'insert_child_to_cell', the parameter 'child_name' can not be None and can not "
      .. "contain '.', but got '%s'."):format(name))
  end
  if has_attr(self, st, name) and not R.has(st.cells, name) then
    raise(("KeyError: For 'insert_child_to_cell', the %s child cell already exists in the network. "
      .. "Cannot insert another Cell with the same name."):format(name))
  end
  if child ~= nil and not is_cell(child) then
    raise(("TypeError: For 'insert_child_to_cell', the argument 'child_cell' must be 'Cell' if not None, "
      .. "but got %s."):format(type_name(child)))
  end
  R.set(st.cells, name, child)
end

local INSERT_PARAM_ARGS = { "check_name_contain_dot" }

--- insert_param_to_cell(param_name, param [, check_name_contain_dot = true]):
-- add a parameter under `name`; a default-named Parameter takes the name.
function Cell:insert_param_to_cell(param_name, param, ...)
  local check_name_contain_dot = args.parse("Cell.insert_param_to_cell", INSERT_PARAM_ARGS, 2, select("#", ...), ...)
  check_name_contain_dot = check_bool("insert_param_to_cell", "check_name_contain_dot", check_name_contain_dot, true)
  insert_param(self, rawget(self, S), param_name, param, check_name_contain_dot, 3)
end

--- Add a sub-cell under `name`.
function Cell:insert_child_to_cell(child_name, child_cell)
  insert_child(self, rawget(self, S), child_name, child_cell, 3)
end

--- Give an unnamed Parameter of a list or tuple the name Parameter$N.
local function name_member(st, p)
  if p.name == "Parameter" then
    p.name = "Parameter$" .. st.id
    st.id = st.id + 1
  end
end

local function set_param_tuple(self, st, name, pt, lvl)
  local names, seen = {}, {}
  for i = 1, #pt do
    local p = pt[i]
    if not seen[p] then
      seen[p] = true
      name_member(st, p)
      insert_param(self, st, p.name, p, false, lvl + 1)
      if names[p.name] then
        raise(("ValueError: The value %s , its name '%s' already exists. Please set a unique name for the "
          .. "parameter."):format(tostring(p), p.name))
      end
      names[p.name] = true
    end
  end
  R.remove(st.params, name)
  st.attrs[name] = pt
end

local function set_param_list(st, name, list, lvl)
  for i = 1, #list do
    local p = list[i]
    if not st.exist_objs[p] then
      st.exist_objs[p] = true
      name_member(st, p)
      if st.exist_names[p.name] then
        raise(("ValueError: The value %s , its name '%s' already exists. Please set a unique name for the "
          .. "parameter."):format(tostring(p), p.name))
      end
      st.exist_names[p.name] = true
    end
  end
  st.attrs[name] = list
end

--- Assignment of anything that is not a Parameter, ParameterTuple,
-- Parameter list or Cell (rules 4 to 6).
local function set_object(st, name, v, lvl)
  if R.has(st.params, name) then
    if v == nil then return R.set(st.params, name, nil) end
    if core.is_tensor(v) then
      local p = st.params.val[name]
      if p == nil then
        raise(("TypeError: Parameter '%s' has no value (it was set to nil); assign a Parameter to it")
          :format(name))
      end
      p:set_data(v)
      return
    end
    raise(("TypeError: Parameter '%s' already exists in network, can not assign this type: '%s' as a parameter.")
      :format(name, type_name(v)))
  end
  if R.has(st.cells, name) then
    if v == nil then return R.set(st.cells, name, nil) end
    raise(("TypeError: Sub cell '%s' already exists in network, can not assign this type: '%s' as a cell.")
      :format(name, type_name(v)))
  end
  if R.has(st.buffers, name) then
    if v == nil or core.is_tensor(v) then return R.set(st.buffers, name, v) end
    raise(("TypeError: Buffer '%s' already exists in network, can not assign this type: '%s' as a buffer.")
      :format(name, type_name(v)))
  end
  st.attrs[name] = v
end

local setters = {
  training = function(st, v, lvl)
    if type(v) ~= "boolean" then
      raise(("TypeError: Cell.training must be a boolean, but got %s"):format(type_name(v)))
    end
    st.training = v
  end,
  requires_grad = function(st, v, lvl)
    if type(v) ~= "boolean" then
      raise(("TypeError: Cell.requires_grad must be a boolean, but got %s"):format(type_name(v)))
    end
    st.requires_grad = v
  end,
}

--- The routing of `self.name = value`.
local function set_attr(self, name, v, lvl)
  local st = rawget(self, S)
  if type(name) ~= "string" then
    raise(("TypeError: a cell's attribute name must be a string, but got %s"):format(type_name(name)))
  end
  local set = setters[name]
  if set then
    set(st, v, lvl + 1)
    return
  end
  if getters[name] then
    raise(("AttributeError: %s.%s is read-only"):format(class_name(self), name))
  end
  if is_param(v) then
    if st.attrs[name] ~= nil then st.attrs[name] = nil end
    insert_param(self, st, name, v, true, lvl + 1)
  elseif is_ptuple(v) then
    set_param_tuple(self, st, name, v, lvl + 1)
  elseif is_param_list(v) then
    set_param_list(st, name, v, lvl + 1)
  elseif is_cell(v) then
    if st.attrs[name] ~= nil then st.attrs[name] = nil end
    insert_child(self, st, name, v, lvl + 1)
    if st.auto_prefix then v:update_parameters_name(name .. ".") end
  else
    set_object(st, name, v, lvl + 1)
  end
end

function Cell.__newindex(self, name, v) set_attr(self, name, v, 3) end

--- Remove a member of any kind; adding it again puts it last.
function Cell:delattr(name)
  local st = rawget(self, S)
  if R.remove(st.params, name) then return end
  if R.remove(st.buffers, name) then
    st.non_persistent[name] = nil
    return
  end
  if R.remove(st.cells, name) then return end
  if st.attrs[name] ~= nil then
    st.attrs[name] = nil
    return
  end
  raise(("AttributeError: '%s' object has no attribute '%s'"):format(class_name(self), tostring(name)))
end

--- Whether the cell has a member `name` (what Python's hasattr says).
function Cell:hasattr(name) return has_attr(self, rawget(self, S), name) end

-- Buffers --------------------------------------------------------------------

local BUFFER_ARGS = { "persistent" }

--- register_buffer(name, tensor [, persistent = true]); the third argument
-- may also be {persistent = }.
function Cell:register_buffer(name, tensor, ...)
  local st = rawget(self, S)
  local persistent = args.parse("Cell.register_buffer", BUFFER_ARGS, 2, select("#", ...), ...)
  if persistent == nil then persistent = true end
  if type(name) ~= "string" then
    raise(("TypeError: buffer name should be a string. But got this type: %s"):format(type_name(name)))
  end
  if name:find(".", 1, true) then raise('KeyError: buffer name can\'t contain "."') end
  if name == "" then raise('KeyError: buffer name can\'t be empty string ""') end
  if has_attr(self, st, name) and not R.has(st.buffers, name) then
    raise(("KeyError: attribute '%s' already exists"):format(name))
  end
  if tensor ~= nil and not core.is_tensor(tensor) then
    raise(("TypeError: cannot assign '%s' object to buffer '%s' (cell Tensor or nil required)")
      :format(type_name(tensor), name))
  end
  if type(persistent) ~= "boolean" then
    raise(("TypeError: register_buffer: persistent must be a boolean, but got %s"):format(type_name(persistent)))
  end
  local hooks = global.buffer_hooks
  if hooks then
    for i = 1, #hooks do
      local out = hooks[i].fn(self, name, tensor)
      if out ~= nil then tensor = out end
    end
  end
  R.set(st.buffers, name, tensor)
  st.non_persistent[name] = (not persistent) or nil
end

--- cell.nn.register_cell_buffer_registration_hook(fn): fn(cell, name,
-- tensor) runs on every register_buffer and may return a replacement.
function Cell.register_cell_buffer_registration_hook(fn)
  I.check_hook_fn("register_cell_buffer_registration_hook", fn, 2)
  return I.add_hook(global, "buffer_hooks", { fn = fn })
end

--- The sub-cell at the dotted path `target` ("" is the cell itself).
function Cell:get_sub_cell(target)
  if type(target) ~= "string" then
    raise(("TypeError: get_sub_cell: target must be a string, but got %s"):format(type_name(target)))
  end
  if target == "" then return self end
  local c = self
  for item in (target .. "."):gmatch("([^.]*)%.") do
    if not has_attr(c, rawget(c, S), item) then
      raise(("AttributeError: %s has no attribute `%s`"):format(class_name(c), item))
    end
    c = c[item]
    if not is_cell(c) then raise(("AttributeError: `%s` is not an nn.Cell"):format(item)) end
  end
  return c
end

--- The buffer at the dotted path `target`.
function Cell:get_buffer(target)
  if type(target) ~= "string" then
    raise(("TypeError: get_buffer: target must be a string, but got %s"):format(type_name(target)))
  end
  local path, name = target:match("^(.*)%.([^.]*)$")
  if not path then path, name = "", target end
  local ok, c = pcall(self.get_sub_cell, self, path)
  if not ok then rethrow(c) end
  local st = rawget(c, S)
  if not has_attr(c, st, name) then
    raise(("AttributeError: %s has no attribute `%s`"):format(class_name(c), name))
  end
  if not R.has(st.buffers, name) then raise(("AttributeError: `%s` is not a buffer"):format(name)) end
  return st.buffers.val[name]
end

-- Options ----------------------------------------------------------------------

--- Positional arguments, or a trailing options table with the named
-- fields (cell.util.args); `fname` is the method's name.
local function args_or_options(fname, names, n, ...)
  local v = { args.parse("Cell." .. fname, names, 3, n, ...) } -- not a tail call: the levels count this frame
  return I.unpack(v, 1, #names)
end

local PREFIX_ARGS = { "name_prefix" }
local PREFIX_EXPAND_ARGS = { "name_prefix", "expand" }
local EXPAND_ARGS = { "expand" }
local RECURSE_ARGS = { "recurse" }
local NAMED_BUFFERS_ARGS = { "prefix", "recurse", "remove_duplicate" }
local UPDATE_NAME_ARGS = { "prefix", "recurse" }

local function check_str(fname, what, v)
  if v == nil then return "" end
  if type(v) ~= "string" then
    raise(("TypeError: %s: %s must be a string, but got %s"):format(fname, what, type_name(v)))
  end
  return v
end

local function list_iter(list)
  local i = 0
  return function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end
end

-- Traversal ----------------------------------------------------------------

--- (prefix, cell) for the cell and every sub-cell below it, depth first,
-- each cell once.
local function walk_cells(c, prefix, seen, out)
  if seen[c] then return out end
  seen[c] = true
  out[#out + 1] = { prefix, c }
  for name, sub in R.each(rawget(c, S).cells) do
    if sub ~= nil then
      walk_cells(sub, prefix ~= "" and (prefix .. "." .. name) or name, seen, out)
    end
  end
  return out
end

--- The cells of `cells_and_names`'s `cells` argument (cells already seen:
-- a set {[c] = true} or a list {c1, c2}) as a new set.
local function seen_cells(cells)
  local seen = {}
  if cells == nil then return seen end
  if type(cells) ~= "table" or getmetatable(cells) ~= nil then
    raise(("TypeError: cells_and_names: cells must be a set or a list of Cells, but got %s"):format(type_name(cells)))
  end
  for k, v in pairs(cells) do
    local c = is_cell(k) and k or v
    if not is_cell(c) then
      raise(("TypeError: cells_and_names: cells must be a set or a list of Cells, but it holds %s")
        :format(type_name(c)))
    end
    seen[c] = true
  end
  return seen
end

local CELLS_ARGS = { "cells", "name_prefix",
  value_if = { cells = function(t) local k = next(t); return k ~= nil and type(k) ~= "string" end } }

--- cells_and_names([name_prefix]) or MindSpore's cells_and_names(cells,
-- name_prefix): iterator of (name, cell) over the cell itself (named by
-- the prefix, "" by default) and all cells below it, skipping the cells in
-- `cells` (a set or list of cells already seen).
function Cell:cells_and_names(...)
  local n = select("#", ...)
  local cells, prefix
  if n > 0 and type((...)) == "string" then
    prefix = args_or_options("cells_and_names", PREFIX_ARGS, n, ...)
  else
    cells, prefix = args_or_options("cells_and_names", CELLS_ARGS, n, ...)
  end
  prefix = check_str("cells_and_names", "name_prefix", prefix)
  return list_iter(walk_cells(self, prefix, seen_cells(cells), {}))
end

--- The list of {name, param} pairs parameters_and_names yields.
local function param_pairs(self, prefix, expand)
  local cells = expand and walk_cells(self, prefix, {}, {}) or { { prefix, self } }
  local seen, out = {}, {}
  for _, e in ipairs(cells) do
    local cprefix = e[1]
    for name, p in R.each(rawget(e[2], S).params) do
      if p ~= nil and not seen[p] then
        seen[p] = true
        out[#out + 1] = { cprefix ~= "" and (cprefix .. "." .. name) or name, p }
      end
    end
  end
  return out
end

--- parameters_and_names([name_prefix = "", expand = true]): iterator of
-- (name, Parameter); a shared Parameter is yielded once.
function Cell:parameters_and_names(...)
  local prefix, expand = args_or_options("parameters_and_names", PREFIX_EXPAND_ARGS, select("#", ...), ...)
  prefix = check_str("parameters_and_names", "name_prefix", prefix)
  expand = check_bool("parameters_and_names", "expand", expand, true)
  return list_iter(param_pairs(self, prefix, expand))
end

--- get_parameters([expand = true]): iterator of Parameters.
function Cell:get_parameters(...)
  local expand = args_or_options("get_parameters", EXPAND_ARGS, select("#", ...), ...)
  expand = check_bool("get_parameters", "expand", expand, true)
  local list, i = param_pairs(self, "", expand), 0
  return function()
    i = i + 1
    return list[i] and list[i][2]
  end
end

local function params_where(self, fname, want, ...)
  local recurse = args_or_options(fname, RECURSE_ARGS, select("#", ...), ...)
  recurse = check_bool(fname, "recurse", recurse, true)
  local out = {}
  for _, e in ipairs(param_pairs(self, "", recurse)) do
    if e[2].requires_grad == want then out[#out + 1] = e[2] end
  end
  return out
end

--- trainable_params([recurse = true]): the Parameters that require grad (a list).
function Cell:trainable_params(...) return params_where(self, "trainable_params", true, ...) end

--- untrainable_params([recurse = true]): those that do not (a list).
function Cell:untrainable_params(...) return params_where(self, "untrainable_params", false, ...) end

--- parameters_dict([recurse = true]): OrderedDict from parameter name to Parameter.
function Cell:parameters_dict(...)
  local recurse = args_or_options("parameters_dict", RECURSE_ARGS, select("#", ...), ...)
  recurse = check_bool("parameters_dict", "recurse", recurse, true)
  local d = OrderedDict()
  for _, e in ipairs(param_pairs(self, "", recurse)) do d[e[2].name] = e[2] end
  return d
end

--- name_cells(): OrderedDict of the direct sub-cells (each object once).
function Cell:name_cells()
  local d, seen = OrderedDict(), {}
  for name, c in R.each(rawget(self, S).cells) do
    if c ~= nil and not seen[c] then
      seen[c] = true
      d[name] = c
    end
  end
  return d
end

--- cells(): iterator over the direct sub-cells.
function Cell:cells()
  local list, i = {}, 0
  for _, c in OrderedDict.items(self:name_cells()) do list[#list + 1] = c end
  return function()
    i = i + 1
    return list[i]
  end
end

local function named_members(self, fname, field, prefix, recurse, remove_duplicate)
  prefix = check_str(fname, "prefix", prefix)
  recurse = check_bool(fname, "recurse", recurse, true)
  remove_duplicate = check_bool(fname, "remove_duplicate", remove_duplicate, true)
  local cells = recurse and walk_cells(self, prefix, {}, {}) or { { prefix, self } }
  local seen, out = {}, {}
  for _, e in ipairs(cells) do
    for name, v in R.each(rawget(e[2], S)[field]) do
      if v ~= nil and not seen[v] then
        if remove_duplicate then seen[v] = true end
        out[#out + 1] = { e[1] ~= "" and (e[1] .. "." .. name) or name, v }
      end
    end
  end
  return list_iter(out)
end

--- named_buffers([prefix = "", recurse = true, remove_duplicate = true]):
-- iterator of (name, Tensor).
function Cell:named_buffers(...)
  local prefix, recurse, dup = args_or_options("named_buffers", NAMED_BUFFERS_ARGS, select("#", ...), ...)
  return named_members(self, "named_buffers", "buffers", prefix, recurse, dup)
end

--- buffers([recurse = true]): iterator of Tensors.
function Cell:buffers(...)
  local recurse = args_or_options("buffers", RECURSE_ARGS, select("#", ...), ...)
  local it = named_members(self, "buffers", "buffers", "", recurse, true)
  return function()
    local _, b = it()
    return b
  end
end

local INIT_DATA_ARGS = { "auto_parallel_mode" }

--- Give every lazily initialised Parameter of the cell and its sub-cells
-- its values (p:init_data()). Returns a table mapping each Parameter to
-- itself, as MindSpore returns the original-to-initialised mapping (here
-- a Parameter keeps its identity when initialised). `auto_parallel_mode`
-- ([false] or {auto_parallel_mode = }) is checked and changes nothing here.
function Cell:init_parameters_data(...)
  local auto_parallel = args_or_options("init_parameters_data", INIT_DATA_ARGS, select("#", ...), ...)
  check_bool("init_parameters_data", "auto_parallel_mode", auto_parallel, false)
  local done = {}
  for _, e in ipairs(param_pairs(self, "", true)) do
    local p = e[2]
    if p.has_init then p:init_data() end
    done[p] = p
  end
  for _, w in ipairs(walk_cells(self, "", {}, {})) do
    local st = rawget(w[2], S)
    if st.lazy then
      st.lazy = nil
      w[2]:_refresh()
    end
  end
  return done
end

-- Naming -------------------------------------------------------------------

--- Rename every parameter (of sub-cells too when `recurse`) to `prefix`
-- followed by its path in this cell.
function Cell:update_parameters_name(...)
  local prefix, recurse = args_or_options("update_parameters_name", UPDATE_NAME_ARGS, select("#", ...), ...)
  prefix = check_str("update_parameters_name", "prefix", prefix)
  if prefix ~= "" and not prefix:match("^[%w_./%-]+$") then
    raise(("ValueError: update_parameters_name: the prefix '%s' may hold only letters, digits, '_', '-', '.' and '/'")
      :format(prefix))
  end
  recurse = check_bool("update_parameters_name", "recurse", recurse, true)
  for _, e in ipairs(param_pairs(self, "", recurse)) do e[2].name = prefix .. e[1] end
  return self
end

--- Set `param_prefix` of every sub-cell to its path below this cell.
function Cell:update_cell_prefix()
  for _, e in ipairs(walk_cells(self, "", {}, {})) do rawget(e[2], S).param_prefix = e[1] end
end

-- Modes and flags ----------------------------------------------------------------

local MODE_ARGS = { "mode" }
local REQUIRES_GRAD_ARGS = { "requires_grad" }

--- set_train([mode = true]): this cell and all below it; returns self. As
-- MindSpore's add_flags_recursive(training = mode), it records `training`
-- in each cell's flags too (get_flags().training).
function Cell:set_train(...)
  local mode = args_or_options("set_train", MODE_ARGS, select("#", ...), ...)
  mode = check_bool("set_train", "mode", mode, true)
  for _, e in ipairs(walk_cells(self, "", {}, {})) do
    local st = rawget(e[2], S)
    st.training = mode
    st.flags.training = mode
  end
  return self
end

--- set_grad([requires_grad = true]): the cell's gradient flag; returns self.
function Cell:set_grad(...)
  local requires_grad = args_or_options("set_grad", REQUIRES_GRAD_ARGS, select("#", ...), ...)
  rawget(self, S).requires_grad = check_bool("set_grad", "requires_grad", requires_grad, true)
  return self
end

--- apply(fn): fn(cell) on every sub-cell (depth first), then on self; returns self.
function Cell:apply(fn)
  if type(fn) ~= "function" then
    raise(("TypeError: apply: fn must be a function, but got %s"):format(type_name(fn)))
  end
  for c in self:cells() do c:apply(fn) end
  fn(self)
  return self
end

local function add_flags(self, flags, lvl)
  if type(flags) ~= "table" or getmetatable(flags) ~= nil then
    raise(("TypeError: add_flags: flags must be a table of name = value, but got %s"):format(type_name(flags)))
  end
  local st = rawget(self, S)
  for k, v in pairs(flags) do
    if type(k) ~= "string" then
      raise(("TypeError: add_flags: flag names must be strings, but got %s"):format(type_name(k)))
    end
    st.flags[k] = v
    -- as MindSpore's __dict__.update: `training` and `requires_grad` take
    -- the value; the other properties (cls_name, param_prefix) keep theirs
    local set = setters[k]
    if set then
      set(st, v, lvl + 1)
    elseif not getters[k] then
      st.attrs[k] = v
    end
  end
end

--- add_flags{name = value, ...}: flags are also readable as attributes.
function Cell:add_flags(flags)
  add_flags(self, flags, 3)
  return self
end

--- add_flags_recursive{...}: add_flags on this cell and all below it.
function Cell:add_flags_recursive(flags)
  for _, e in ipairs(walk_cells(self, "", {}, {})) do add_flags(e[2], flags, 3) end
  return self
end

--- get_flags(): a copy of the flags table.
function Cell:get_flags()
  local out = {}
  for k, v in pairs(rawget(self, S).flags) do out[k] = v end
  return out
end

--- move_to(device [, device_id]): every parameter and buffer of this cell
-- and of the cells below it moved to the device ("CPU", "TEST", ...), in
-- place: a Parameter keeps its identity (optimizers holding it see the
-- moved tensor) and its requires_grad; a buffer is replaced in its cell.
-- Optimizer state is not moved here (it is made on the parameters' device
-- at the first step). Returns self.
function Cell:move_to(device, device_id)
  if type(device) ~= "string" then
    error(("TypeError: move_to: expected a device name (a string), but got %s"):format(type_name(device)), 2)
  end
  local seen = {}
  for _, e in ipairs(walk_cells(self, "", {}, {})) do
    local st = rawget(e[2], S)
    for _, p in R.each(st.params) do
      if p ~= nil and not seen[p] then
        seen[p] = true
        local m = p:move_to(device, device_id)
        if m ~= p then core._swap(p, m) end
      end
    end
    for name, b in R.each(st.buffers) do
      if b ~= nil then R.set(st.buffers, name, b:move_to(device, device_id)) end
    end
  end
  return self
end

local float_dtypes = { float16 = true, bfloat16 = true, float32 = true }

--- to_float(dtype): this cell and every cell below it compute in dtype
-- (float16, bfloat16 or float32): when called, their floating-point
-- inputs are cast to dtype, and so are their floating-point Parameters
-- as construct reads them (the float32 Parameters stay the masters: the
-- cast is differentiable, gradients come back in the Parameter's dtype).
function Cell:to_float(dst_type)
  if not (core.is_dtype(dst_type) and float_dtypes[dst_type.name]) then
    raise(("ValueError: For 'to_float', the argument 'dst_type' must be float32, float16 or bfloat16, "
      .. "but got %s."):format(core.is_dtype(dst_type) and tostring(dst_type) or type_name(dst_type)))
  end
  local flag = ({ float16 = "fp16", bfloat16 = "bf16", float32 = "fp32" })[dst_type.name]
  for _, e in ipairs(walk_cells(self, "", {}, {})) do
    local st = rawget(e[2], S)
    st.mixed = dst_type
    st.fast = false
    st.flags.fp16, st.flags.bf16, st.flags.fp32 = nil, nil, nil
    st.flags[flag] = true
  end
  return self
end

--- cast_inputs(inputs, dtype): the sequence with every Tensor (nested
-- sequences too, integer Tensors included, as MindSpore's) cast to dtype.
function Cell:cast_inputs(inputs, dst_type)
  if type(inputs) ~= "table" or core.is_tensor(inputs) then
    raise(("TypeError: cast_inputs: inputs must be a sequence, but got %s"):format(type_name(inputs)))
  end
  if not core.is_dtype(dst_type) then
    raise(("TypeError: cast_inputs: dst_type must be a dtype, but got %s"):format(type_name(dst_type)))
  end
  local function cast(v)
    if core.is_tensor(v) then return v:astype(dst_type) end
    if type(v) == "table" and getmetatable(v) == nil then
      local out = { n = v.n }
      for i = 1, v.n or #v do out[i] = cast(v[i]) end
      return out
    end
    return v
  end
  return cast(inputs)
end

-- Printing -------------------------------------------------------------------

--- Extra text inside the cell's parentheses; override in subclasses.
function Cell:extend_repr() return "" end

local function add_indent(s, n)
  local pad = string.rep(" ", n)
  return (s:gsub("\n", "\n" .. pad))
end

--- MindSpore 2.6's layout: Name(extra) on one line, or one line per
-- extra-text line and per sub-cell, indented.
function Cell:__tostring()
  local lines = {}
  local extra = self:extend_repr()
  if type(extra) ~= "string" then
    raise(("TypeError: %s:extend_repr must return a string, but got %s"):format(class_name(self), type_name(extra)))
  end
  local n_extra = 0
  if extra ~= "" then
    for line in (extra .. "\n"):gmatch("(.-)\n") do
      lines[#lines + 1] = line
      n_extra = n_extra + 1
    end
  end
  local children = 0
  for name, c in R.each(rawget(self, S).cells) do
    lines[#lines + 1] = "(" .. name .. "): " .. add_indent(c == nil and "nil" or tostring(c), 2)
    children = children + 1
  end
  local s = class_name(self) .. "("
  if #lines > 0 then
    if n_extra == 1 and children == 0 then
      s = s .. lines[1]
    else
      s = s .. "\n  " .. table.concat(lines, "\n  ") .. "\n"
    end
  end
  return s .. ")"
end

Cell._global = global

require("cell.nn.call").install(Cell)
require("cell.nn.state_dict").install(Cell)
require("cell.nn.cell_more").install(Cell)

--- summary(input_shape [, dtype, print]): the table of the cell's sub-cells,
-- output shapes and parameter counts (see cell.nn.summary).
function Cell:summary(...) return require("cell.nn.summary").summary(self, ...) end

return Cell
