--- Parameter and ParameterTuple: named tensors a Cell trains, with MindSpore's rules for names and data.
--
--     local cell = require "cell"
--     local w = cell.Parameter(cell.ones({2, 3}), "w")
--     tostring(w)  --> Parameter (name=w, shape=(2, 3), dtype=Float32, requires_grad=true)
--     local y = w * 2                           -- a Parameter is a Tensor in every op
--     w:set_data(cell.zeros({2, 3}))            -- copied into w's own storage
--     local b = cell.Parameter(cell.initializer("normal", {3}), "b")  -- lazy until
--     b:init_data()                                                    -- this call
--
-- A Parameter is a tensor userdata with an attributes table (core._attach):
-- the same metatable as every tensor, so ops take it, with per-object fields
-- (name, has_init, ...) read before the tensor's methods and properties, and
-- this module's methods (set_data, clone, ...) after the fields. Made from a
-- Tensor, it holds a copy of its values (as MindSpore's Parameter does;
-- torch.nn.Parameter would share the storage) and is a leaf of its own.
--
-- `requires_grad` is the engine's flag, so `cell.grad(fn, nil, {p})` works.
-- The engine lets only floating-point tensors require grad; an integer or
-- bool Parameter keeps MindSpore's flag (default true) as a plain field.
--
-- Numbers follow the project's rule (identical under Lua 5.4 and LuaJIT): a
-- number without a fractional part is an integer, so Parameter(3) and
-- Parameter(3.0) are int64 0-D and Parameter(0.5) is float32 0-D.
--
-- set_data converts dtypes as MindSpore's implicit_conversion_seq allows:
-- the incoming dtype must not rank above the Parameter's in
--   bool < int8 < uint8 < int16 < int32 < int64 < float16 < float32 < float64 < bfloat16
-- (MindSpore 2.x's order with the dtypes cell has; bfloat16 was appended
-- after float64 there, so a float32 Parameter refuses bfloat16 data).
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local init_mod = require "cell.initializer"
local args = require "cell.util.args"

local Tensor = core.Tensor -- the engine's methods, for calls that a Parameter method shadows
local types = require "cell.util.types"
local type_name, shape_tuple = types.type_name, types.shape_str

local M = {}

local DEFAULT_NAME = "Parameter"
local NAME_MAX_LEN = 1024

--- Parameter methods: the attrs metatable's __index.
local P = {}
--- The metatable of every Parameter's attrs table; core's binding reads its
-- __index, __setattr and __tostring.
local AttrsMT = { __index = P, __name = "Parameter", __methods = P } -- __methods: for the REPL's completion
--- The metatable of a lazy Parameter's attrs (while has_init): the same,
-- but its __index is a function (below), which costs a call per read; a
-- Parameter gets AttrsMT back when its data is drawn.
local LazyAttrsMT = { __name = "Parameter", __methods = P }
local function is_attrs_mt(mt) return mt == AttrsMT or mt == LazyAttrsMT end

--- Tensor methods that read no values: a lazy Parameter stays lazy for them.
local READS_NO_VALUES = { size = true, dim = true, numel = true, nelement = true, ndimension = true, stride = true,
  is_contiguous = true, element_size = true, is_floating_point = true, data_ptr = true, register_hook = true,
  requires_grad_ = true, is_leaf = true }

--- A Parameter's fields and methods, then (nil) the Tensor's. A Tensor method
-- that reads values, called on a lazy Parameter, draws its data first
-- (init_data), as MindSpore's Tensor methods do (_init_check): its values
-- are never the NaN placeholder.
function LazyAttrsMT.__index(attrs, k)
  local v = P[k]
  if v ~= nil then return v end
  if type(k) == "string" and not READS_NO_VALUES[k] and type(Tensor[k]) == "function" then
    P.init_data(rawget(attrs, "data"))
  end
  return nil
end
--- The methods table, for the documentation lookup (cell.doc).
M.methods = P

--- Whether x is a Parameter.
function M.is_parameter(x)
  local a = core._attrs(x)
  return a ~= nil and is_attrs_mt(getmetatable(a))
end
local is_parameter = M.is_parameter

--- The attrs table of Parameter `self`, or a TypeError (a method called on
-- something else, or with a dot instead of a colon).
local function attrs_of(self, method, lvl)
  local a = core._attrs(self)
  if a == nil or not is_attrs_mt(getmetatable(a)) then
    raise(("TypeError: Parameter.%s: expected a Parameter (call it as p:%s(...)), got %s")
      :format(method, method, type_name(self)))
  end
  return a
end

-- Checks ------------------------------------------------------------------------

--- A name as MindSpore keeps it: stripped; nil or empty -> "Parameter".
local function check_name(v, lvl)
  if v == nil then return DEFAULT_NAME end
  if type(v) ~= "string" then
    raise(("ValueError: The type of the Parameter's name should be 'string' or 'nil', but got %s.")
      :format(type_name(v)))
  end
  v = v:gsub("^%s+", ""):gsub("%s+$", "")
  if v == "" then return DEFAULT_NAME end
  if #v > NAME_MAX_LEN then
    raise(("ValueError: The length of the '%s' name should be less than %d."):format(v, NAME_MAX_LEN))
  end
  return v
end

local function check_requires_grad(v, lvl)
  if type(v) ~= "boolean" then
    raise(("TypeError: The argument 'requires_grad' must be bool type, got %s"):format(type_name(v)))
  end
end

--- Set the flag: the engine's for a floating-point Parameter, a field otherwise.
local function set_requires_grad(p, attrs, v)
  if p.dtype.is_floating_point then
    Tensor.requires_grad_(p, v)
    rawset(attrs, "requires_grad", nil)
  else
    rawset(attrs, "requires_grad", v)
  end
end

--- MindSpore's implicit conversion order (see the file comment).
local RANK = {}
for i, name in ipairs { "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64", "bfloat16" } do
  RANK[core[name]] = i
end

local INT_DTYPES = { [core.int8] = true, [core.uint8] = true, [core.int16] = true, [core.int32] = true, [core.int64] = true }

local function is_fractional(x) return x ~= math.floor(x) or x == math.huge or x == -math.huge end

local function conversion_error(current, incoming, lvl)
  raise(("TypeError: Incoming Parameter dtype can not be converted to current dtype implicitly. "
    .. "Current dtype is %s, and incoming is %s."):format(tostring(current), tostring(incoming)))
end

--- fn(...) with grad mode off, restoring it on error.
local function without_grad(fn, ...)
  local prev = core.set_grad_enabled(false)
  local ok, err = pcall(fn, ...)
  core.set_grad_enabled(prev)
  if not ok then error(err, 0) end
end

-- Construction -------------------------------------------------------------------

--- A lazy Parameter for InitTensor `it`: a zero-stride broadcast of one
-- scalar stands for the data (so no memory), until init_data swaps it. A
-- cell initialises its lazy parameters when it is called, and a Tensor
-- method that reads values (LazyAttrsMT.__index) or p:value() when it is
-- called on one, as MindSpore's _init_check does. An op that takes the
-- Parameter as an argument (cell.ops.add(p, 1), p + 1) does not: the
-- scalar is NaN for floating-point dtypes, so such values show as nan
-- rather than passing for zeros.
local function lazy_fill(it)
  local fill = it.dtype.is_floating_point and 0 / 0 or 0
  return core.full({}, fill, it.dtype):expand(it.shape)
end
local function attach_lazy(it, attrs)
  rawset(attrs, "has_init", true)
  setmetatable(attrs, LazyAttrsMT)
  rawset(attrs, "init_mode", it)
  return core._attach(lazy_fill(it), attrs)
end
--- A lazy Parameter p takes `data` as its storage and stops being lazy
-- (attach_lazy's inverse: has_init, init_mode and the metatable together).
local function swap_drawn(p, attrs, data)
  core._swap(p, data)
  rawset(attrs, "has_init", false)
  setmetatable(attrs, AttrsMT)
  rawset(attrs, "init_mode", nil)
end

--- The tensor (or InitTensor) behind `data`, for cell.Parameter; `adopt`
-- takes a Tensor itself instead of a copy.
local function tensor_of(data, lvl, adopt)
  if type(data) == "boolean" then raise("ValueError: Parameter data can not be a boolean") end
  if core.is_tensor(data) then
    local a = core._attrs(data)
    if a and rawget(a, "has_init") then return rawget(a, "init_mode") end -- a lazy Parameter
    if adopt and not a then return data end
    -- a copy, as MindSpore's Parameter takes one (data.asnumpy().copy()):
    -- writing to the Parameter leaves `data` alone, and the reverse
    local prev = core.set_grad_enabled(false)
    local ok, c = pcall(Tensor.clone, data)
    core.set_grad_enabled(prev)
    if not ok then rethrow(c) end
    return c
  end
  if type(data) == "number" then
    return core.tensor(data, is_fractional(data) and core.float32 or core.int64)
  end
  if init_mod.is_init_tensor(data) then return data end
  if type(data) == "table" and getmetatable(data) == nil then
    local ok, t = pcall(core.tensor, data)
    if not ok then rethrow(t) end
    return t
  end
  raise(("TypeError: The type of the argument 'data' must be in ['Tensor', 'number', 'table', "
    .. "'initializer'], but got %s."):format(type_name(data)))
end

local OPTIONS = { "name", "requires_grad", "layerwise_parallel", "parallel_optimizer" }

--- MindSpore's boolean fields of a Parameter (its parallel-training
-- settings, kept and cloned here, where nothing is sliced) and their
-- defaults; comm_fusion (1) is a non-negative integer.
local FLAGS = { layerwise_parallel = false, parallel_optimizer = true, sliced = false, is_init = false,
  requires_aggr = true, cache_enable = false }

local function check_flag(key, v)
  if type(v) ~= "boolean" then
    raise(("TypeError: The argument `%s` must be bool type, but got %s."):format(key, type_name(v)))
  end
end

--- A Parameter of `data`; `adopt`: a Tensor is taken itself, not copied.
local function new_parameter(data, adopt, ...)
  local name, requires_grad, layerwise, par_opt = args.parse("Parameter", OPTIONS, 2, select("#", ...), ...)
  if requires_grad == nil then requires_grad = true end
  check_requires_grad(requires_grad, 3)
  local attrs = setmetatable({ name = check_name(name, 3), has_init = false, comm_fusion = 1 }, AttrsMT)
  for k, v in pairs(FLAGS) do attrs[k] = v end
  if layerwise ~= nil then
    check_flag("layerwise_parallel", layerwise)
    attrs.layerwise_parallel = layerwise
  end
  if par_opt ~= nil then
    check_flag("parallel_optimizer", par_opt)
    attrs.parallel_optimizer = par_opt
  end
  local t = tensor_of(data, 3, adopt)
  local p
  if init_mod.is_init_tensor(t) then
    p = attach_lazy(t, attrs)
  else
    p = core._attach(t, attrs)
  end
  rawset(attrs, "data", p)
  set_requires_grad(p, attrs, requires_grad)
  return p
end

--- cell.Parameter(data [, name [, requires_grad]]), cell.Parameter(data,
-- {name =, requires_grad =}) or cell.Parameter{data =, name =, requires_grad =}
-- (`default_input`, MindSpore's name, for `data`). `data`: a Tensor (its values copied), a number,
-- a nested table, or an initializer from cell.initializer (lazy: no data
-- until init_data()). `requires_grad` defaults to true.
function M.Parameter(data, ...)
  if select("#", ...) == 0 and type(data) == "table" and getmetatable(data) == nil and data[1] == nil
      and (data.data ~= nil or data.default_input ~= nil) then
    -- cell.Parameter{data = t, name = "w", requires_grad = false}: the whole call as one table
    local opts, value = {}, data.data
    if value == nil then value = data.default_input end
    if data.data ~= nil and data.default_input ~= nil then
      raise("TypeError: Parameter: give the data once, as data or as default_input")
    end
    for k, v in pairs(data) do
      if k ~= "data" and k ~= "default_input" then opts[k] = v end
    end
    return new_parameter(value, false, opts)
  end
  return new_parameter(data, false, ...)
end

--- Parameter(t, ...) that takes the Tensor `t` itself rather than a copy,
-- for cell's own callers that made `t` and keep no other reference to it
-- (load_checkpoint: no second copy of a whole checkpoint in memory).
function M._adopt(t, ...) return new_parameter(t, true, ...) end

-- Attributes ------------------------------------------------------------------------

--- Fields a user cannot assign (shape, dtype, ... are the tensor's own).
local READ_ONLY = {
  data = true, has_init = true, init_mode = true, shape = true, dtype = true, ndim = true, T = true,
  grad_fn = true,
}

--- p.key = value: name and requires_grad are checked, the tensor's own
-- properties are read-only, anything else is a per-object field. Runs
-- under the binding's __newindex, so the assignment is 3 levels up.
function AttrsMT.__setattr(self, key, value)
  local attrs = core._attrs(self)
  if key == "name" then
    rawset(attrs, "name", check_name(value, 4))
  elseif key == "requires_grad" then
    check_requires_grad(value, 4)
    set_requires_grad(self, attrs, value)
  elseif READ_ONLY[key] then
    raise(("AttributeError: the attribute '%s' of a Parameter is read-only"):format(key))
  elseif FLAGS[key] ~= nil then
    check_flag(key, value)
    rawset(attrs, key, value)
  elseif key == "comm_fusion" then
    if type(value) ~= "number" or value ~= math.floor(value) or value < 0 or value == math.huge then
      raise(("ValueError: The 'comm_fusion' must be a non-negative integer, but got %s."):format(tostring(value)))
    end
    rawset(attrs, key, value)
  else
    rawset(attrs, key, value)
  end
end

--- "Parameter (name=w, shape=(2, 3), dtype=Float32, requires_grad=true)"
function AttrsMT.__tostring(self)
  return ("Parameter (name=%s, shape=%s, dtype=%s, requires_grad=%s)")
    :format(self.name, shape_tuple(self.shape), tostring(self.dtype), tostring(self.requires_grad))
end

LazyAttrsMT.__setattr, LazyAttrsMT.__tostring = AttrsMT.__setattr, AttrsMT.__tostring

local REQUIRES_GRAD_ARGS = { "requires_grad" }
local SET_DATA_ARGS = { "slice_shape" }
local INIT_DATA_ARGS = { "layout", "set_sliced" }
local CLONE_ARGS = { "init" }
local TUPLE_CLONE_ARGS = { "prefix", "init" }
local NO_ARGS = {}

--- p:requires_grad_([requires_grad = true]) -> p, with the checks of
-- p.requires_grad = v.
function P.requires_grad_(self, ...)
  local attrs = attrs_of(self, "requires_grad_", 3)
  local v = args.parse("Parameter.requires_grad_", REQUIRES_GRAD_ARGS, 2, select("#", ...), ...)
  if v == nil then v = true end
  check_requires_grad(v, 3)
  set_requires_grad(self, attrs, v)
  return self
end

-- Data -------------------------------------------------------------------------------

--- set_data with errors at level `lvl`; `from_ckpt` lets a lazy Parameter
-- take an initialized Tensor (MindSpore's Parameter.from_ckpt).
local function set_data(self, attrs, data, lvl, from_ckpt, slice_shape)
  local dtype = self.dtype
  local kind = type(data)
  if kind == "number" or kind == "boolean" then
    if kind == "number" and INT_DTYPES[dtype] and is_fractional(data) then
      conversion_error(dtype, core.float32, lvl + 1)
    end
    data = core.tensor(data, dtype)
  elseif core.is_tensor(data) then
    local a = core._attrs(data)
    if a and rawget(a, "has_init") then data = rawget(a, "init_mode") end -- a lazy Parameter
  elseif not init_mod.is_init_tensor(data) then
    raise(("TypeError: Parameter data must be a Tensor or a number, but got %s."):format(type_name(data)))
  end
  if rawget(attrs, "has_init") and not from_ckpt and not init_mod.is_init_tensor(data) then
    -- MindSpore refuses it too (_set_data_check_input_valid), in words that
    -- have the two sides the wrong way round
    raise(("TypeError: For 'set_data', the Parameter '%s' is not initialized yet (its data is an initializer), "
      .. "but the argument 'data' is an initialized Tensor. Call init_data() on the Parameter first, or pass an "
      .. "initializer to replace its recipe."):format(tostring(rawget(attrs, "name"))))
  end
  local shape = self.shape
  local reshaped = not types.same_shape(shape, data.shape)
  if reshaped and not slice_shape then
    raise(("ValueError: Can not change the shape of Parameter which has been initialized. "
      .. "Current shape is %s, and incoming is %s."):format(shape_tuple(shape), shape_tuple(data.shape)))
  end
  if data.dtype ~= dtype and RANK[dtype] < RANK[data.dtype] then conversion_error(dtype, data.dtype, lvl + 1) end
  if slice_shape ~= nil then rawset(attrs, "sliced", slice_shape) end -- as MindSpore's self.sliced = slice_shape
  if init_mod.is_init_tensor(data) then
    if rawget(attrs, "has_init") then -- both lazy: keep the new recipe (and its shape)
      local it = init_mod.retype(data, dtype)
      rawset(attrs, "init_mode", it)
      if reshaped then core._swap(self, lazy_fill(it)) end
      return self
    end
    data = data:init_data()
  end
  if rawget(attrs, "has_init") or reshaped then -- materialise (or take the new shape), in storage of its own
    local fresh = core.empty(data.shape, dtype)
    if data.device ~= fresh.device then data = data:move_to(fresh.device) end
    without_grad(Tensor.copy_, fresh, data)
    swap_drawn(self, attrs, fresh)
    return self
  end
  if data.device ~= self.device then data = data:move_to(self.device) end -- a checkpoint's CPU tensor
  if Tensor.data_ptr(data) == Tensor.data_ptr(self) then data = Tensor.clone(data) end -- overlapping views
  without_grad(Tensor.copy_, self, data)
  return self
end

--- p:set_data(data [, slice_shape = false]) -> p. `data` (a Tensor, a
-- number, or an initializer) must have p's shape and a dtype that converts
-- to p's implicitly; its values are copied into p's storage (identity and
-- storage stay). A lazy p (data still an initializer) takes only an
-- initializer, which becomes its new recipe: a Tensor or a number is a
-- TypeError, as in MindSpore (call p:init_data() first). slice_shape =
-- true skips the shape check, as MindSpore's does for a parallel slice: p
-- takes data's shape (in new storage; views of the old data keep it), and
-- p.sliced is set to slice_shape.
function P.set_data(self, data, ...)
  local attrs = attrs_of(self, "set_data", 3)
  local slice_shape = args.parse("Parameter.set_data", SET_DATA_ARGS, 2, select("#", ...), ...)
  if slice_shape ~= nil and type(slice_shape) ~= "boolean" then
    raise(("TypeError: Parameter.set_data: slice_shape must be a boolean, but got %s"):format(type_name(slice_shape)))
  end
  local p = set_data(self, attrs, data, 3, false, slice_shape) -- not a tail call: the caller's frame must stay for errors
  return p
end

--- set_data for a checkpoint's values: a lazy Parameter takes them too
-- (MindSpore's from_ckpt), for load_param_into_net.
function M._set_data_from_checkpoint(p, data)
  local attrs = attrs_of(p, "set_data", 3)
  local out = set_data(p, attrs, data, 3, true)
  return out
end

--- p:init_data([layout = nil, set_sliced = false]) -> p: draw a lazy
-- Parameter's data (no-op otherwise). layout (parallel) is not supported.
function P.init_data(self, ...)
  local attrs = attrs_of(self, "init_data", 3)
  local layout, set_sliced = args.parse("Parameter.init_data", INIT_DATA_ARGS, 2, select("#", ...), ...)
  if layout ~= nil then
    error("NotImplementedError: Parameter.init_data: layout (parallel slices) is not supported", 2)
  end
  if set_sliced ~= nil and type(set_sliced) ~= "boolean" then
    error(("TypeError: Parameter.init_data: set_sliced must be a boolean, but got %s"):format(type_name(set_sliced)), 2)
  end
  if not rawget(attrs, "has_init") then return self end
  swap_drawn(self, attrs, rawget(attrs, "init_mode"):init_data())
  return self
end

--- p:value() -> a plain Tensor with p's current value: a view of p, so
-- gradients flow back to p.
function P.value(self)
  local attrs = attrs_of(self, "value", 3)
  if rawget(attrs, "has_init") then P.init_data(self) end -- a value, not the placeholder
  return Tensor.expand(self, self.shape)
end

--- clone with errors at level `lvl`.
local function clone(self, attrs, init, lvl)
  if init == nil then init = "same" end
  local it
  if init ~= "same" then -- a Tensor keeps its dtype, for set_data's conversion rule
    local dtype = self.dtype
    if core.is_tensor(init) then dtype = nil end
    it = init_mod.make(init, self.shape, dtype, lvl + 1)
  end
  local new = setmetatable({}, AttrsMT)
  for k, v in pairs(attrs) do
    if k ~= "data" then rawset(new, k, v) end
  end
  local x
  if rawget(attrs, "has_init") then
    x = attach_lazy(rawget(attrs, "init_mode"), new)
  elseif it then
    x = core._attach(core.empty(self.shape, self.dtype), new)
  else
    local copy
    without_grad(function() copy = Tensor.clone(self) end)
    x = core._attach(copy, new)
  end
  rawset(new, "data", x)
  set_requires_grad(x, new, self.requires_grad)
  if it then set_data(x, new, it, lvl + 1) end
  return x
end

--- p:clone([init = "same"]) -> a new Parameter with p's name and
-- requires_grad: a copy of p's data ("same"; a lazy p gives a lazy clone
-- with the same recipe), or p's shape and dtype filled from `init` (an
-- initializer name, a number, a Tensor or an initializer object).
function P.clone(self, ...)
  local attrs = attrs_of(self, "clone", 3)
  local init = args.parse("Parameter.clone", CLONE_ARGS, 2, select("#", ...), ...)
  local x = clone(self, attrs, init, 3)
  return x
end

--- p:copy() -> p:clone("same").
function P.copy(self, ...)
  local attrs = attrs_of(self, "copy", 3)
  args.parse("Parameter.copy", NO_ARGS, 2, select("#", ...), ...)
  local x = clone(self, attrs, "same", 3)
  return x
end

-- ParameterTuple -----------------------------------------------------------------------

--- A sequence of Parameters with unique names: `#pt`, `pt[i]`, `ipairs(pt)`.
local ParameterTuple = class("ParameterTuple")
M.ParameterTuple = ParameterTuple

--- ParameterTuple(list) or ParameterTuple(iterator): the same Parameter may
-- appear twice; two Parameters may not share a name.
function ParameterTuple:init(items, state, control)
  local list = {}
  if type(items) == "function" then
    for v in items, state, control do
      if not is_parameter(v) then -- stop at once: the iterator may never end
        raise(("TypeError: For ParameterTuple initialization, ParameterTuple input should be 'Parameter' "
          .. "collection, but the iterator gave a %s."):format(type_name(v)))
      end
      list[#list + 1] = v
    end
  elseif type(items) == "table" and not class.is_instance(items, init_mod.InitTensor) then
    for i = 1, #items do list[i] = items[i] end
  else
    raise(("TypeError: For ParameterTuple initialization, ParameterTuple input should be 'Parameter' "
      .. "collection, but got a %s."):format(type_name(items)))
  end
  local seen, names = {}, {}
  for i, x in ipairs(list) do
    if not is_parameter(x) then
      raise(("TypeError: For ParameterTuple initialization, ParameterTuple input should be 'Parameter' "
        .. "collection, but got a %s."):format(type_name(x)))
    end
    if not seen[x] then
      if names[x.name] then
        raise(("ValueError: The value %s , its name '%s' already exists. Please set a unique name for the "
          .. "parameter."):format(tostring(x), x.name))
      end
      names[x.name] = true
      seen[x] = true
    end
    rawset(self, i, x)
  end
end

--- A ParameterTuple is immutable: no new entries.
function ParameterTuple:__newindex(key)
  raise(("TypeError: 'ParameterTuple' object does not support item assignment (key %s)"):format(tostring(key)))
end

--- As Python prints a tuple: (Parameter (...), Parameter (...)).
function ParameterTuple:__tostring()
  local parts = {}
  for i = 1, #self do parts[i] = tostring(self[i]) end
  if #parts == 1 then return "(" .. parts[1] .. ",)" end
  return "(" .. table.concat(parts, ", ") .. ")"
end

local PREFIX_RE = "^\\w+[0-9a-zA-Z_./-]*$"

--- pt:clone(prefix [, init = "same"]) or pt:clone{prefix =, init =} -> a
-- ParameterTuple of clones named prefix .. "." .. name. `prefix` must be word characters, then word
-- characters, dots, slashes or hyphens (MindSpore's check_str_by_regular).
-- A Parameter that appears twice is cloned once and appears twice (MindSpore
-- clones it twice, and then refuses the two clones' equal names).
function ParameterTuple:clone(...)
  local prefix, init = args.parse("ParameterTuple.clone", TUPLE_CLONE_ARGS, 2, select("#", ...), ...)
  if type(prefix) ~= "string" or not prefix:find("^[%w_][%w_%./%-]*$") then
    raise(("ValueError: The prefix %s is illegal, it must match the regular expression '%s'.")
      :format(type(prefix) == "string" and ("'" .. prefix .. "'") or ("of type " .. type_name(prefix)),
        PREFIX_RE))
  end
  local new, done = {}, {}
  for i = 1, #self do
    local p = self[i]
    local x = done[p]
    if not x then
      x = clone(p, core._attrs(p), init, 3)
      rawset(core._attrs(x), "name", check_name(prefix .. "." .. x.name, 3))
      done[p] = x
    end
    new[i] = x
  end
  local pt = ParameterTuple(new)
  return pt
end

--- Whether x is a ParameterTuple.
function M.is_parameter_tuple(x) return class.is_instance(x, ParameterTuple) end

return M
