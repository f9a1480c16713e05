--- cell.save_checkpoint, cell.load_checkpoint and cell.load_param_into_net:
-- MindSpore 2.7's checkpoint functions with format = "safetensors", on
-- files that PyTorch and the Hugging Face tools read unchanged.
--
--     cell.save_checkpoint(net, "net.safetensors")
--     local params = cell.load_checkpoint("net.safetensors")   -- OrderedDict of Parameters
--     local param_not_load, ckpt_not_load = cell.load_param_into_net(net2, params)
--
-- Where cell departs from MindSpore, or MindSpore leaves a choice:
-- - Files are always safetensors (the engine writes them atomically: a
--   temporary file, fsync, rename). format = "ckpt", enc_key and crc_check
--   are refused, as MindSpore refuses enc_key for safetensors.
-- - A Cell saves its Parameters under their names (p.name), as MindSpore
--   does, and also its persistent buffers under their state_dict keys.
--   The order is the Cell's state_dict order, and a file lists
--   tensors in the order given, so load_checkpoint returns them in that
--   order (MindSpore sorts names on both sides).
-- - No metadata is written unless asked for ({metadata = {...}}):
--   MindSpore's {"format": "ms"} would make Hugging Face's loaders refuse
--   the file.
-- - As MindSpore, save_checkpoint appends ".safetensors" to a name that
--   does not end in "safetensors"; load_checkpoint tries that name too when
--   the one given does not exist, so a name round-trips either way.
-- - load_param_into_net returns param_not_load, ckpt_not_load as two
--   values. A shape mismatch is a RuntimeError naming the parameter and both
--   shapes, and a dtype mismatch that cannot convert one too, as
--   MindSpore's _update_param raises them. Buffers load like
--   Parameters, matched by state_dict key. BatchNorm's moving_mean and
--   moving_variance, buffers in earlier cell files, are also found under
--   their state_dict key when their name is not in the dict. Tensors matched by the
--   suffix rule (strict_load = false) also leave ckpt_not_load (MindSpore
--   keeps them listed).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local OrderedDict = require "cell.ordered_dict"
local parameter = require "cell.parameter"
local init_mod = require "cell.initializer"
local I = require "cell.nn.internal"
local args = require "cell.util.args"

local M = {}

local types = require "cell.util.types"
local type_name, shape_tuple, same_shape = types.type_name, types.shape_str, types.same_shape
local is_parameter, is_cell = parameter.is_parameter, I.is_cell
local odict_items = OrderedDict.items

local SUFFIX = "safetensors"

local function is_odict(x) return class.is_instance(x, OrderedDict) end
local function is_plain(x) return type(x) == "table" and getmetatable(x) == nil end

local function check_bool(fname, what, v, default, lvl)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the argument '%s' must be bool, but got %s."):format(fname, what, type_name(v)))
  end
  return v
end

local function check_func(fname, what, v, lvl)
  if v ~= nil and type(v) ~= "function" then
    raise(("TypeError: For '%s', the argument '%s' must be a function, but got %s.")
      :format(fname, what, type_name(v)))
  end
  return v
end

--- Options from a trailing table, from MindSpore's positional order, or
-- both (cell.util.args), as a table by name; errors at `lvl`.
local function options(fname, names, lvl, ...)
  local o = args.named(fname, names, lvl, select("#", ...), ...)
  return o
end

--- Values of a dict-like table in a fixed order: an OrderedDict's, or a
-- plain table's with its keys sorted (strings before other keys).
local function dict_pairs(d)
  local list = {}
  if is_odict(d) then
    for k, v in odict_items(d) do list[#list + 1] = { k, v } end
    return list
  end
  for k, v in pairs(d) do list[#list + 1] = { k, v } end
  table.sort(list, function(a, b)
    local ta, tb = type(a[1]) == "string", type(b[1]) == "string"
    if ta ~= tb then return ta end
    if ta then return a[1] < b[1] end
    return tostring(a[1]) < tostring(b[1])
  end)
  return list
end

-- save_checkpoint -----------------------------------------------------------------

--- The (name, tensor) pairs a Cell saves: its Parameters by name and its
-- persistent buffers by key, in state_dict order; each object once.
local function cell_entries(net)
  net:init_parameters_data()
  local out, seen = {}, {}
  for key, v in odict_items(net:state_dict()) do
    if core.is_tensor(v) and not seen[v] then
      seen[v] = true
      out[#out + 1] = { is_parameter(v) and v.name or key, v }
    end
  end
  return out
end

local function list_entries(list, lvl)
  local out = {}
  for i = 1, #list do
    local e = list[i]
    if is_parameter(e) then
      out[#out + 1] = { e.name, e }
    elseif is_plain(e) and e.name ~= nil and e.data ~= nil then
      if type(e.name) ~= "string" then
        raise(("TypeError: For save_checkpoint, when save_obj is a list of dict items, the name in dict "
          .. "should be string, but got %s."):format(type_name(e.name)))
      end
      if not core.is_tensor(e.data) then
        raise(("TypeError: For save_checkpoint, when save_obj is a list of dict items, the data in dict "
          .. "should be a Parameter or Tensor, but got %s."):format(type_name(e.data)))
      end
      out[#out + 1] = { e.name, e.data }
    else
      raise(("TypeError: For save_checkpoint, when save_obj is a list, its items should be Parameters "
        .. "or {name = ..., data = ...} tables, but item %d is %s."):format(i, type_name(e)))
    end
  end
  return out
end

local function dict_entries(d, lvl)
  local out = {}
  for _, kv in ipairs(dict_pairs(d)) do
    local k, v = kv[1], kv[2]
    if type(k) ~= "string" or not core.is_tensor(v) then
      raise(("TypeError: For save_checkpoint, when save_obj is made up by dict, the key should be str and "
        .. "value should be Parameter or Tensor, but got the type of key is %s and the type of value is %s.")
        :format(type_name(k), type_name(v)))
    end
    out[#out + 1] = { k, v }
  end
  return out
end

local function append_entries(out, append, lvl)
  if append == nil then return end
  if not (is_plain(append) or is_odict(append)) then
    raise(("TypeError: For 'save_checkpoint', the argument 'append_dict' must be dict, but got %s.")
      :format(type_name(append)))
  end
  for _, kv in ipairs(dict_pairs(append)) do
    local k, v = kv[1], kv[2]
    local t
    if type(k) == "string" and core.is_tensor(v) then
      t = v
    elseif type(k) == "string" and (type(v) == "number" or type(v) == "boolean") then
      t = core.tensor(v, type(v) == "boolean" and core.bool
        or (v == math.floor(v) and v > -math.huge and v < math.huge) and core.int64 or core.float32)
    else
      raise(("TypeError: For 'save_checkpoint', the type of dict 'append_info' must be key: string, value: "
        .. "number, boolean, Parameter or Tensor (safetensors holds tensors; put strings in 'metadata'), "
        .. "but got key: %s, value: %s"):format(type_name(k), type_name(v)))
    end
    out[#out + 1] = { k, t }
  end
end

local function check_metadata(md, lvl)
  if md == nil then return nil end
  if not is_plain(md) then
    raise(("TypeError: For 'save_checkpoint', the option 'metadata' must be a table of strings, but got %s.")
      :format(type_name(md)))
  end
  for k, v in pairs(md) do
    if type(k) ~= "string" or type(v) ~= "string" then
      raise(("TypeError: For 'save_checkpoint', 'metadata' maps strings to strings, but got key: %s, value: %s")
        :format(type_name(k), type_name(v)))
    end
  end
  return md
end

local SAVE_OPTIONS = { "integrated_save", "async_save", "append_dict", "enc_key", "enc_mode", "choice_func",
  "crc_check", "format", "metadata", values = { "append_dict", "metadata" } }

--- save_checkpoint(save_obj, ckpt_file_name [, options]): write a Cell's
-- Parameters and persistent buffers, a list of Parameters (or of
-- {name =, data =} tables), or a dict (an OrderedDict such as
-- load_checkpoint returns, or a plain table, saved in key order) to a
-- safetensors file (a ParameterTuple counts as a list). Options (a table,
-- or MindSpore's positional order):
-- integrated_save (no model parallelism here: ignored), async_save
-- (saved at once: the file is complete on return), append_dict (extra
-- numbers, booleans or tensors), choice_func(name) -> whether to save it,
-- format ("safetensors"), metadata (strings into "__metadata__").
function M.save_checkpoint(save_obj, ckpt_file_name, ...)
  local o = options("save_checkpoint", SAVE_OPTIONS, 3, ...)
  local kind = is_cell(save_obj) and "cell" or is_odict(save_obj) and "dict"
    or parameter.is_parameter_tuple(save_obj) and "list"
    or is_plain(save_obj) and ((next(save_obj) == nil or save_obj[1] ~= nil) and "list" or "dict")
  if not kind then
    raise(("TypeError: For 'save_checkpoint', the parameter 'save_obj' must be nn.Cell, list or dict, but got %s.")
      :format(type_name(save_obj)))
  end
  if type(ckpt_file_name) ~= "string" then
    raise(("TypeError: For 'save_checkpoint', the parameter %s for checkpoint file name is invalid,'ckpt_file_name' "
      .. "must be string, but got %s."):format(tostring(ckpt_file_name), type_name(ckpt_file_name)))
  end
  check_bool("save_checkpoint", "integrated_save", o.integrated_save, true, 3)
  local async = o.async_save
  if async ~= nil and type(async) ~= "boolean" and async ~= "thread" and async ~= "process" then
    raise(("TypeError: For 'save_checkpoint', the parameter 'async_save' must be bool or 'thread' or 'process', "
      .. "but got %s."):format(type_name(async)))
  end
  local format = o.format
  if format == nil then format = SUFFIX end
  if format ~= SUFFIX then
    raise(("ValueError: For 'save_checkpoint', cell writes safetensors files only, so the format must be "
      .. "'safetensors', but got %s."):format(tostring(format)))
  end
  if o.enc_key ~= nil then
    raise("ValueError: For 'save_checkpoint', when format is 'safetensors', the parameter 'enc_key' must be set "
      .. "to default value 'nil'.")
  end
  if check_bool("save_checkpoint", "crc_check", o.crc_check, false, 3) then
    raise("NotImplementedError: For 'save_checkpoint', crc_check is not supported for safetensors files.")
  end
  local choose = check_func("save_checkpoint", "choice_func", o.choice_func, 3)
  local metadata = check_metadata(o.metadata, 3)
  local entries
  if kind == "cell" then
    entries = cell_entries(save_obj)
  elseif kind == "list" then
    entries = list_entries(save_obj, 3)
  else
    entries = dict_entries(save_obj, 3)
  end
  if choose then -- choice_func picks among the object's tensors; append_dict's all go in
    local kept = {}
    for _, e in ipairs(entries) do
      if choose(e[1]) then kept[#kept + 1] = e end
    end
    entries = kept
  end
  append_entries(entries, o.append_dict, 3)
  local names, tensors = {}, {}
  for _, e in ipairs(entries) do
    if is_parameter(e[2]) and e[2].has_init then e[2]:init_data() end
    names[#names + 1] = e[1]
    tensors[#tensors + 1] = e[2]
  end
  local path = ckpt_file_name
  if path:sub(-#SUFFIX) ~= SUFFIX then path = path .. "." .. SUFFIX end
  local ok, err = pcall(core.safetensors_save, path, names, tensors, metadata)
  if not ok then rethrow(err) end
end

-- load_checkpoint ----------------------------------------------------------------------

-- (stat, not open: opening a FIFO would wait for a writer forever)
local function exists(path) return core.file_kind(path) ~= nil end

--- A prefix option: nil, a string, or a non-empty list of non-empty strings.
local function check_prefix(v, lvl)
  if v == nil then return nil end
  if type(v) == "string" then v = { v } end
  if not is_plain(v) then
    raise(("TypeError: For 'load_checkpoint', the type of 'specify_prefix' or 'filter_prefix' must be string, "
      .. "list[string] or tuple[string], but got %s."):format(type_name(v)))
  end
  if #v == 0 then
    raise("ValueError: For 'load_checkpoint', the argument 'specify_prefix' or 'filter_prefix' can't be empty when "
      .. "'specify_prefix' or 'filter_prefix' is list or tuple.")
  end
  for i, p in ipairs(v) do
    if type(p) ~= "string" then
      raise(("TypeError: For 'load_checkpoint', when 'specify_prefix' or 'filter_prefix' is list or tuple, the "
        .. "element in it must be string, but got %s at index %d."):format(type_name(p), i))
    end
    if p == "" then
      raise("ValueError: For 'load_checkpoint', the value of 'specify_prefix' or 'filter_prefix' can't include ''.")
    end
  end
  return v
end

local function starts_with_any(s, prefixes)
  for _, p in ipairs(prefixes) do
    if s:sub(1, #p) == p then return true end
  end
  return false
end

--- MindSpore's _whether_load_param.
local function wanted(name, specify, filter)
  if specify and not starts_with_any(name, specify) then return false end
  if filter and starts_with_any(name, filter) then return false end
  return true
end

local load_into -- load_param_into_net's body, defined below

local LOAD_OPTIONS = { "net", "strict_load", "filter_prefix", "dec_key", "dec_mode", "specify_prefix",
  "choice_func", "crc_check", "remove_redundancy", "format" }

--- load_checkpoint(ckpt_file_name [, net [, strict_load [, filter_prefix ...]]])
-- or load_checkpoint(ckpt_file_name, {net =, strict_load =, filter_prefix =,
-- specify_prefix =, choice_func =}) -> OrderedDict name -> Parameter, in
-- the file's order. With a net, the Parameters are also loaded into it
-- (load_param_into_net). specify_prefix / filter_prefix (a string or a
-- list) keep / drop names starting with them and then override
-- choice_func(name) -> whether to load it. An empty result is a ValueError.
function M.load_checkpoint(ckpt_file_name, ...)
  local o = options("load_checkpoint", LOAD_OPTIONS, 3, ...)
  if type(ckpt_file_name) ~= "string" then
    raise(("TypeError: For 'load_checkpoint', the argument 'ckpt_file_name' must be string, but got %s.")
      :format(type_name(ckpt_file_name)))
  end
  local specify = check_prefix(o.specify_prefix, 3)
  local filter = check_prefix(o.filter_prefix, 3)
  local choose = check_func("load_checkpoint", "choice_func", o.choice_func, 3)
  local strict = check_bool("load_checkpoint", "strict_load", o.strict_load, false, 3)
  if o.format ~= nil and o.format ~= SUFFIX then
    raise(("ValueError: For 'load_checkpoint', cell reads safetensors files only, so the format must be "
      .. "'safetensors', but got %s."):format(tostring(o.format)))
  end
  if o.dec_key ~= nil then
    raise("ValueError: For 'load_checkpoint', when format is 'safetensors', the parameter 'dec_key' must be set "
      .. "to default value 'nil'.")
  end
  if check_bool("load_checkpoint", "crc_check", o.crc_check, false, 3) then
    raise("NotImplementedError: For 'load_checkpoint', crc_check is not supported for safetensors files.")
  end
  if o.net ~= nil and not is_cell(o.net) then
    raise(("TypeError: For 'load_param_into_net', the argument 'net' should be a Cell, but got %s.")
      :format(type_name(o.net)))
  end
  local path = ckpt_file_name
  if not exists(path) and exists(path .. "." .. SUFFIX) then path = path .. "." .. SUFFIX end
  local ok, names, tensors = pcall(core.safetensors_load, path)
  if not ok then rethrow(names) end
  local dict = OrderedDict()
  local use_choice = choose and not specify and not filter
  for i, name in ipairs(names) do
    if wanted(name, specify, filter) and (not use_choice or choose(name)) then
      dict[name] = parameter._adopt(tensors[i], name) -- the file's tensors, not copied again
    end
  end
  if OrderedDict.len(dict) == 0 then -- (a tensor may be named "len")
    raise("ValueError: The loaded parameter dict is empty after filter or specify, please check whether "
      .. "'filter_prefix' or 'specify_prefix' are set correctly.")
  end
  if o.net ~= nil then load_into(o.net, dict, strict, 3) end
  return dict
end

-- load_param_into_net ------------------------------------------------------------------

local FLOATS = { [core.float16] = true, [core.float32] = true, [core.float64] = true, [core.bfloat16] = true }
local INTS = { [core.int8] = true, [core.int16] = true, [core.int32] = true, [core.int64] = true } -- MindSpore's int_type: no uint8

--- Copy `new` (a Tensor or Parameter) into target t = {name =, tensor =,
-- param =}: MindSpore's _update_param.
local function update(t, new, strict, lvl)
  local dst = t.tensor
  if not same_shape(dst.shape, new.shape) then
    -- MindSpore's _special_process_par: (12, 2048, 1, 1) loads into (12, 2048).
    local extra_ones = #new.shape > #dst.shape
    for i = #dst.shape + 1, #new.shape do
      if new.shape[i] ~= 1 then extra_ones = false end
    end
    for i = 1, #dst.shape do
      if extra_ones and new.shape[i] ~= dst.shape[i] then extra_ones = false end
    end
    if not extra_ones then
      raise(("RuntimeError: For 'load_param_into_net', %s in the argument 'net' should have the same shape as %s in "
        .. "the argument 'parameter_dict'. But got its shape %s in the argument 'net' and shape %s in the argument "
        .. "'parameter_dict'.May you need to check whether the checkpoint you loaded is correct or the batch size "
        .. "and so on in the 'net' and 'parameter_dict' are same."):format(t.name, t.name, shape_tuple(dst.shape),
        shape_tuple(new.shape)))
    end
    new = core.Tensor.reshape(new, dst.shape)
  end
  if new.dtype ~= dst.dtype then
    local a, b = dst.dtype, new.dtype
    if not strict and ((FLOATS[a] and FLOATS[b]) or (INTS[a] and INTS[b])) then
      new = core.Tensor.astype(new, a)
    else
      raise(("RuntimeError: For 'load_param_into_net', %s in the argument 'net' should have the same type as %s in "
        .. "the argument 'parameter_dict'. but got its type %s in the argument 'net' and type %s in the argument "
        .. "'parameter_dict'.May you need to check whether the checkpoint you loaded is correct.")
        :format(t.name, t.name, tostring(a), tostring(b)))
    end
  end
  if t.param then
    parameter._set_data_from_checkpoint(dst, new) -- a lazy Parameter takes it too, as MindSpore's from_ckpt
  else
    local prev = core.set_grad_enabled(false)
    local ok, err = pcall(core.Tensor.copy_, dst, new)
    core.set_grad_enabled(prev)
    if not ok then rethrow(err) end
  end
end

--- What a net loads into: its Parameters by name, then its persistent
-- buffers by state_dict key (each object once), as save_checkpoint writes.
local function targets_of(net)
  local list, seen = {}, {}
  for _, p in net:parameters_and_names() do
    if not seen[p] then
      seen[p] = true
      list[#list + 1] = { name = p.name, tensor = p, param = true }
    end
  end
  for key, v in odict_items(net:state_dict()) do
    if core.is_tensor(v) and not is_parameter(v) and not seen[v] then
      seen[v] = true
      list[#list + 1] = { name = key, tensor = v, param = false }
    end
  end
  return list
end

local function remove_value(list, v)
  for i = 1, #list do
    if list[i] == v then
      table.remove(list, i)
      return
    end
  end
end

--- MindSpore's _load_dismatch_prefix_params: find a prefix such that the
-- dict has prefix .. name for a name not loaded, and load every such name.
local function load_with_prefix(targets, values, keys, not_load, ckpt_not_load, strict, lvl)
  local prefix_name = ""
  local longest_name = not_load[1]
  while prefix_name ~= longest_name and #not_load > 0 do
    prefix_name = longest_name
    for _, net_name in ipairs(not_load) do
      for _, dict_name in ipairs(keys) do
        if #dict_name >= #net_name and dict_name:sub(#dict_name - #net_name + 1) == net_name then
          prefix_name = dict_name:sub(1, #dict_name - #net_name)
          break
        end
      end
      if prefix_name ~= longest_name then break end
    end
    if prefix_name ~= longest_name then
      local loaded = 0
      for _, t in ipairs(targets) do
        local new_name = prefix_name .. t.name
        local pending = false
        for _, n in ipairs(not_load) do
          if n == t.name then pending = true end
        end
        local v = pending and values[new_name]
        if v then
          update(t, v, strict, lvl + 1)
          remove_value(not_load, t.name)
          remove_value(ckpt_not_load, new_name)
          loaded = loaded + 1
        end
      end
      if loaded == 0 then break end
    end
  end
end

--- load_param_into_net(net, parameter_dict [, strict_load = false]) ->
-- param_not_load, ckpt_not_load (lists of names). Each of the net's
-- Parameters whose name is in parameter_dict (an OrderedDict or a plain
-- table of Parameters or Tensors) gets a copy of its values (the
-- Parameter keeps its identity); persistent buffers load by state_dict
-- key. Without strict_load, float data converts between float dtypes and
-- integer data between int8/int32/int64, and names not found are tried
-- with the prefix that makes some dict name end with them.
--- The Parameters that were buffers in earlier cell files (BatchNorm's).
local OLD_BUFFER_NAMES = { moving_mean = true, moving_variance = true }

--- load_param_into_net with errors at level lvl (the user's call).
function load_into(net, parameter_dict, strict_load, lvl)
  if not is_cell(net) then
    raise(("TypeError: For 'load_param_into_net', the argument 'net' should be a Cell, but got %s.")
      :format(type_name(net)))
  end
  if not (is_odict(parameter_dict) or is_plain(parameter_dict)) then
    raise(("TypeError: For 'load_param_into_net', the argument 'parameter_dict' should be a dict, but got %s.")
      :format(type_name(parameter_dict)))
  end
  local strict = check_bool("load_param_into_net", "strict_load", strict_load, false, lvl + 1)
  local values, keys = {}, {}
  for _, kv in ipairs(dict_pairs(parameter_dict)) do
    local k, v = kv[1], kv[2]
    if type(k) ~= "string" or not core.is_tensor(v) then
      raise(("TypeError: For 'parameter_dict', the element in the argument 'parameter_dict' should be a 'str' and "
        .. "'Parameter' , but got %s and %s."):format(type_name(k), type_name(v)))
    end
    keys[#keys + 1] = k
    values[k] = v
  end
  net:init_parameters_data()
  local targets = targets_of(net)
  local param_not_load, ckpt_not_load = {}, {}
  for i = 1, #keys do ckpt_not_load[i] = keys[i] end
  for _, t in ipairs(targets) do
    local v = values[t.name]
    if v ~= nil then
      update(t, v, strict, lvl + 1)
      remove_value(ckpt_not_load, t.name)
    else
      param_not_load[#param_not_load + 1] = t.name
    end
  end
  if #param_not_load > 0 then
    -- files from before BatchNorm's moving statistics were Parameters hold
    -- them under their state_dict key (as buffers), which differs from the
    -- Parameter's name under a parent without auto_prefix
    local key_of = {}
    for key, v in odict_items(net:state_dict()) do
      if core.is_tensor(v) and key_of[v] == nil then key_of[v] = key end
    end
    for _, t in ipairs(targets) do
      local key = key_of[t.tensor]
      if t.param and key ~= nil and key ~= t.name and values[key] ~= nil and values[t.name] == nil then
        local pending = false
        for _, n in ipairs(param_not_load) do
          if n == t.name then pending = true end
        end
        if pending and OLD_BUFFER_NAMES[t.name:match("[^.]*$")] then
          update(t, values[key], strict, lvl + 1)
          remove_value(param_not_load, t.name)
          remove_value(ckpt_not_load, key)
        end
      end
    end
  end
  if #param_not_load > 0 and not strict then
    load_with_prefix(targets, values, keys, param_not_load, ckpt_not_load, strict, lvl + 1)
  end
  return param_not_load, ckpt_not_load
end

local LOAD_INTO_OPTIONS = { "strict_load", "remove_redundancy" }

--- load_param_into_net(net, parameter_dict [, strict_load = false,
-- remove_redundancy = false]) (or a trailing {strict_load =, ...}) ->
-- param_not_load, ckpt_not_load (lists of names). Each of the net's
-- Parameters whose name is in parameter_dict (an OrderedDict or a plain
-- table of Parameters or Tensors) gets a copy of its values (the
-- Parameter keeps its identity); persistent buffers load by state_dict
-- key. Without strict_load, float data converts between float dtypes and
-- integer data between int8/int32/int64, and names not found are tried
-- with the prefix that makes some dict name end with them.
function M.load_param_into_net(net, parameter_dict, ...)
  local o = options("load_param_into_net", LOAD_INTO_OPTIONS, 3, ...)
  local strict_load = o.strict_load
  -- remove_redundancy (parallel training's de-duplication): checked, changes nothing here
  check_bool("load_param_into_net", "remove_redundancy", o.remove_redundancy, false, 3)
  local param_not_load, ckpt_not_load = load_into(net, parameter_dict, strict_load, 3)
  return param_not_load, ckpt_not_load
end

return M
