--- cell.nn.Optimizer: the base of cell's optimizers, as MindSpore's
-- nn.Optimizer. An optimizer is a Cell: `opt(gradients)` applies one step
-- to its parameters in place and returns true.
--
--     local opt = nn.Adam(net:trainable_params(), {learning_rate = 1e-3})
--     local loss, grads = cell.value_and_grad(loss_fn, nil, net:trainable_params())(x, y)
--     opt(grads)
--
-- `params` is a list of Parameters (or a ParameterTuple, or an iterator
-- such as net:get_parameters()), or a list of parameter groups
-- {{params = {...}, lr = ..., weight_decay = ...}, ..., {order_params = ...}}
-- as MindSpore accepts. Without groups, the optimizers that decay weights
-- through the gradient (Momentum, Adam, AdamW) skip parameters whose names
-- contain "beta" or "gamma" (normalisation shifts and scales), as
-- MindSpore's decay filter does; SGD decays every parameter, as its
-- MindSpore kernel does. A group's weight_decay applies to all its members.
--
-- `learning_rate` is a number, a list (one rate per step, from the
-- schedules in cell.nn: the last one holds after the end), a 0-D or 1-D
-- Tensor, or a function(step) -> rate, where `step` counts from 1 (the
-- step about to be taken, so fn(step) == list[step] for the same
-- schedule; MindSpore's LearningRateSchedule receives the 0-based count).
-- `opt.learning_rate` shows it: a fixed rate as MindSpore's 0-D float32
-- Parameter "learning_rate" (p:set_data(x) changes the rate), a list or a
-- function as given; with group rates, a list of one per group
-- ("learning_rate_group_<g>"). Assigning `opt.learning_rate = v` (any form
-- the constructor takes) sets the rate of every parameter from the next
-- step on; opt:get_lr() is the rate of the step about to be taken.
--
-- State, as MindSpore names it: the parameters themselves (a ParameterTuple
-- registered under their own names), "global_step" (int32 {1}, the steps
-- taken), a fixed rate's Parameter ("learning_rate", or with group rates
-- "learning_rate_group_<g>"; a per-step list or a function follows
-- global_step and is not state) and each optimizer's moments
-- ("accum.<name>", "moments.<name>", "moment1.<name>", ...), all
-- zero-filled at construction, so opt:state_dict() / opt:load_state_dict(sd)
-- (and save_checkpoint / load_checkpoint) save and resume training exactly. Every step runs a fused C kernel per parameter
-- (cell.ops_internal's sgd_step, adam_step) and makes no tensors.
--
-- A custom optimizer extends Optimizer, calls
-- `nn.Optimizer.init(self, learning_rate, params, weight_decay, loss_scale)`
-- in its init and defines `_apply(gradients, step)`, which updates
-- self.parameters (self:get_lr() gives this step's rate as a Tensor, or
-- one per group with group rates); construct checks
-- the gradients, calls it and advances global_step.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local Cell = require "cell.nn.cell"
local I = require "cell.nn.internal"
local R = require "cell.nn.registry"
local T = require "cell.util.types"
local parameter = require "cell.parameter"
local args_util = require "cell.util.args"

local Tensor = core.Tensor
local copy_ = Tensor.copy_
local type_name = T.type_name
local Parameter, ParameterTuple = parameter.Parameter, parameter.ParameterTuple
local is_parameter = parameter.is_parameter

local M = {}

local Optimizer = Cell:extend("Optimizer")
M.Optimizer = Optimizer

--- Whether v is an optimizer (an instance of nn.Optimizer or a subclass).
function M.is_optimizer(v) return I.is_cell(v) and require("cell.class").is_instance(v, Optimizer) end

--- PyTorch's optimizer habits, answered with what to use (see Cell.__hints).
do
  local hints = {}
  for k, v in pairs(Cell.__hints) do hints[k] = v end
  hints.zero_grad = "not needed: gradients do not accumulate in cell; compute them with cell.grad / "
    .. "cell.value_and_grad and call opt(grads)"
  hints.step = "call opt(grads) with the gradients of the parameters (from cell.grad / cell.value_and_grad)"
  Optimizer.__hints = hints
end

--- The private key of an optimizer's step state, kept raw in the instance
-- (no attribute name can reach it).
local K = setmetatable({}, { __tostring = function() return "<optimizer state>" end })
M.K = K

-- Checks -------------------------------------------------------------------------
-- Construction errors are raised without a position (level 0) inside
-- M.guard, which raises them again at the caller's line.

local fail = require("cell.errors").raisef -- raise(fmt:format(...))
M.fail = fail

local is_plain = T.is_plain

local is_callable = T.is_callable

local finite = T.is_finite

--- The message without the "file:line: " that error() put in front.
local strip = require("cell.errors").message
M.strip = strip

--- fn(...) with its errors raised again at the line that called the
-- constructor (guard <- init <- the class's __call <- that line).
function M.guard(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then rethrow(err) end
end

function M.check_number(cls, name, v)
  if type(v) ~= "number" then
    fail("TypeError: For '%s', the argument '%s' must be a number, but got %s.", cls, name, type_name(v))
  end
  if not finite(v) then fail("ValueError: For '%s', the argument '%s' must be finite, but got %s.", cls, name, tostring(v)) end
  return v
end

function M.check_non_negative(cls, name, v)
  M.check_number(cls, name, v)
  if v < 0 then fail("ValueError: For '%s', the argument '%s' must be at least 0.0, but got %s.", cls, name, tostring(v)) end
  return v
end

function M.check_positive(cls, name, v)
  M.check_number(cls, name, v)
  if v <= 0 then fail("ValueError: For '%s', the argument '%s' must be greater than 0.0, but got %s.", cls, name, tostring(v)) end
  return v
end

--- v in the open interval (0, 1), as MindSpore checks beta1 and beta2.
function M.check_unit_open(cls, name, v)
  M.check_number(cls, name, v)
  if not (v > 0 and v < 1) then
    fail("ValueError: For '%s', the argument '%s' must be in range of (0.0, 1.0), but got %s.", cls, name, tostring(v))
  end
  return v
end

function M.check_bool(cls, name, v)
  if type(v) ~= "boolean" then
    fail("TypeError: For '%s', the argument '%s' must be a boolean, but got %s.", cls, name, type_name(v))
  end
  return v
end

-- Arguments ----------------------------------------------------------------------

--- The names lists cell.util.args reads, per optimizer: after params
-- (positional params) and with it (everything in one table).
local lists = setmetatable({}, { __mode = "k" })

local function lists_of(names, aliases)
  local l = lists[names]
  if l then return l end
  local full = { "params", aliases = aliases }
  for i = 1, #names do full[i + 1] = names[i] end
  local rest = { aliases = aliases }
  for i = 1, #names do rest[i] = names[i] end
  l = { full = full, rest = rest }
  lists[names] = l
  return l
end

--- The constructor arguments as a table: a.params and a[name] for each of
-- `names`, from (params, v1, v2, ...) in the order of `names`, from
-- (params, {name = v, ...}), from (params, v1, {name = v, ...}) or from
-- ({params = ..., name = v, ...}) (cell.util.args). `aliases` maps other
-- accepted option names to names. a._positional: no options table.
function M.arguments(cls, names, aliases, ...)
  local n, p1 = select("#", ...), ...
  local l = lists_of(names, aliases)
  if n == 1 and args_util.is_options(p1) and p1.params ~= nil then
    local a = args_util.named(cls, l.full, 0, 1, p1)
    a._positional = false
    return a
  end
  local rest = n > 0 and n - 1 or 0
  local last = rest > 0 and (select(n, ...))
  if args_util.is_options(last) and last.params ~= nil then
    fail("TypeError: %s() got multiple values for argument 'params'", cls)
  end
  local a, npos = args_util.named(cls, l.rest, 0, rest, select(2, ...))
  a.params = p1
  a._positional = npos == rest
  return a
end

-- Learning rates -------------------------------------------------------------------

--- A learning-rate spec: {value = v} (fixed), {list = l, n = #l} (per step)
-- or {fn = f} (a function of the 1-based step).
local copy_spec

local function parse_lr(cls, v, what)
  -- a learning-rate cell (cell.nn.lr_schedule) gets MindSpore's 0-based global step
  if type(v) == "table" and select(2, pcall(function() return v._lr_schedule end)) == true then
    return { fn = function(t) return v:_rate(t - 1) end, cell = v }
  end
  if core.is_tensor(v) then
    if v.ndim == 0 then
      v = v:item()
    elseif v.ndim == 1 then
      v = v:astype(core.float64):totable()
    else
      fail("ValueError: For '%s', if '%s' is a Tensor, its dimension must be 0 or 1, but got %d.", cls, what, v.ndim)
    end
  end
  if type(v) == "number" then
    if not finite(v) or v < 0 then
      fail("ValueError: For '%s', the '%s' must be a finite number >= 0.0, but got %s.", cls, what, tostring(v))
    end
    return { value = v }
  end
  if is_plain(v) then
    local n = #v
    if n == 0 then fail("ValueError: For '%s', the '%s' list must not be empty.", cls, what) end
    local list = {}
    for i = 1, n do
      local x = v[i]
      if type(x) ~= "number" then
        fail("TypeError: For '%s', %s[%d] must be a number, but got %s.", cls, what, i, type_name(x))
      end
      if not finite(x) or x < 0 then
        fail("ValueError: For '%s', %s[%d] must be a finite number >= 0.0, but got %s.", cls, what, i, tostring(x))
      end
      list[i] = x
    end
    return { list = list, n = n }
  end
  if is_callable(v) then return { fn = v } end
  fail("TypeError: For '%s', the '%s' must be a number, a list of numbers, a Tensor or a function(step), but got %s.",
    cls, what, type_name(v))
end

--- The rate of `spec` at step t (1-based), or nil and the bad value when a
-- function returned something that is not a rate.
local function lr_at(spec, t)
  local p = spec.param
  if p then
    -- the value the steps use is the exact number given; when the
    -- Parameter was changed (p:set_data(x)), its new value
    local now = Tensor.item(p)
    if now ~= spec.seen then spec.value, spec.seen = now, now end
    return spec.value
  end
  local v = spec.value
  if v ~= nil then return v end
  local list = spec.list
  if list then
    v = list[t]
    if v == nil then v = list[spec.n] end
    return v
  end
  v = spec.fn(t)
  if type(v) ~= "number" or not finite(v) or v < 0 then return nil, v end
  return v
end
M.lr_at = lr_at -- for wrappers (nn.LARS) that need the rate of the step about to be taken

local function lr_str(spec)
  if spec.param then lr_at(spec, 1) end
  if spec.value ~= nil then return tostring(spec.value) end
  if spec.list then return ("list[%d]"):format(spec.n) end
  return "function"
end

--- A fresh spec with the same rates (a group's own copy of the default).
copy_spec = function(spec)
  if spec.param then
    lr_at(spec, 1)
    return { value = spec.value }
  end
  local out = {}
  for key, v in pairs(spec) do out[key] = v end
  return out
end

-- Parameters ------------------------------------------------------------------------

--- A list from a list, a ParameterTuple or an iterator.
local function collect(cls, v, what)
  if v == nil then fail("ValueError: For '%s', the argument '%s' can not be nil.", cls, what) end
  local out = {}
  if type(v) == "function" then
    for x in v do
      if not is_parameter(x) and not is_plain(x) then -- stop at once: the iterator may never end
        fail("TypeError: For '%s', the iterator '%s' must give Parameters or parameter groups, but gave %s.",
          cls, what, type_name(x))
      end
      out[#out + 1] = x
    end
    return out
  end
  if is_plain(v) or parameter.is_parameter_tuple(v) then
    for i = 1, #v do out[i] = v[i] end
    return out
  end
  fail("TypeError: For '%s', the argument '%s' must be a list of Parameters or of parameter groups, but got %s.",
    cls, what, type_name(v))
end

local GROUP_KEYS = { params = true, lr = true, weight_decay = true, order_params = true, grad_centralization = true }
local GROUP_KEYS_STR = "['params', 'lr', 'weight_decay', 'order_params', 'grad_centralization']"

local HALF = { float16 = true, bfloat16 = true }

--- Check one Parameter of the optimizer.
local function check_param(cls, p, seen, names)
  if seen[p] or names[p.name] then
    fail("RuntimeError: For '%s', the %s parameter already exists, it does not support repeated setting. "
      .. "Please check whether the optimizer parameter has been set multiple times.", cls, p.name)
  end
  if not HALF[p.dtype.name] and p.dtype ~= core.float32 and p.dtype ~= core.float64 then
    fail("TypeError: For '%s', the parameter '%s' is %s; optimizers update float32, float64, float16 and "
      .. "bfloat16 parameters.", cls, p.name, tostring(p.dtype))
  end
  seen[p] = true
  names[p.name] = true
end

--- Unnamed Parameters (MindSpore's default name) get distinct names, so
-- their state can be named after them.
local function name_default(list, start)
  local n = start
  for _, p in ipairs(list) do
    if p.name == "Parameter" then
      n = n + 1
      p.name = "Parameter$" .. n
    end
  end
  return n
end

--- Fill k.params, k.wd, k.spec_of and k.specs from `params`.
local function parse_params(k, cls, params, default_lr, default_wd, decay_filter)
  local list = collect(cls, params, "params")
  if #list == 0 then fail("ValueError: For '%s', the argument 'params' must not be empty.", cls) end
  local grouped = not is_parameter(list[1])
  for i, x in ipairs(list) do
    if grouped and not is_plain(x) or not grouped and not is_parameter(x) then
      fail("TypeError: For '%s', all elements of the argument 'params' must be Parameters or parameter groups "
        .. "(tables with a 'params' list), but element %d is %s.", cls, i, type_name(x))
    end
  end
  local ps, wd, spec_of = {}, {}, {}
  local specs = { default_lr }
  local group_specs = {} -- one per group of parameters, for group_lr
  local seen, names = {}, {}
  k.grouped = grouped
  if not grouped then
    name_default(list, 0)
    for i, p in ipairs(list) do
      check_param(cls, p, seen, names)
      ps[i], spec_of[i] = p, 1
      local skip = decay_filter and (p.name:find("beta", 1, true) or p.name:find("gamma", 1, true))
      wd[i] = skip and 0 or default_wd
    end
  else
    local order
    local unnamed = 0
    for gi, g in ipairs(list) do
      for key in pairs(g) do
        if not GROUP_KEYS[key] then
          fail("KeyError: For '%s', the key in group params must be one of %s, but got '%s' in group %d.",
            cls, GROUP_KEYS_STR, tostring(key), gi)
        end
      end
      if g.order_params ~= nil then
        if next(g, nil) ~= "order_params" or next(g, "order_params") ~= nil then
          fail("ValueError: For '%s', the order params group should only include the 'order_params' key "
            .. "(group %d).", cls, gi)
        end
        order = collect(cls, g.order_params, "order_params")
      else
        local members = collect(cls, g.params, ("params of group %d"):format(gi))
        if #members == 0 then fail("ValueError: For '%s', the 'params' of group %d must not be empty.", cls, gi) end
        for i, p in ipairs(members) do
          if not is_parameter(p) then
            fail("TypeError: For '%s', the element in group parameters must be Parameter type, but got %s at "
              .. "index %d of group %d.", cls, type_name(p), i, gi)
          end
        end
        local spec
        if g.lr ~= nil then
          spec = parse_lr(cls, g.lr, ("lr of group %d"):format(gi))
          k.group_lr = true
        else
          spec = copy_spec(default_lr)
        end
        group_specs[#group_specs + 1] = spec
        spec = #group_specs
        local gwd = default_wd
        if g.weight_decay ~= nil then gwd = M.check_non_negative(cls, ("weight_decay of group %d"):format(gi), g.weight_decay) end
        if g.grad_centralization ~= nil then
          M.check_bool(cls, ("grad_centralization of group %d"):format(gi), g.grad_centralization)
          if g.grad_centralization then
            fail("NotImplementedError: For '%s', grad_centralization is not supported (group %d).", cls, gi)
          end
        end
        unnamed = name_default(members, unnamed)
        for _, p in ipairs(members) do
          check_param(cls, p, seen, names)
          local n = #ps + 1
          ps[n], wd[n], spec_of[n] = p, gwd, spec
        end
      end
    end
    if #ps == 0 then fail("ValueError: For '%s', the parameter groups hold no parameters.", cls) end
    if order then
      if #order ~= #ps then
        fail("ValueError: For '%s', the length of order parameters must be the same as the length of group "
          .. "parameters, but got order parameters' length %d, group parameters' length %d.", cls, #order, #ps)
      end
      local at = {}
      for i, p in ipairs(ps) do at[p] = i end
      local nps, nwd, nspec = {}, {}, {}
      for i, p in ipairs(order) do
        local j = at[p]
        if j == nil then
          fail("ValueError: For '%s', order_params[%d] (%s) is not in any parameter group.", cls, i,
            is_parameter(p) and p.name or type_name(p))
        end
        at[p] = nil
        nps[i], nwd[i], nspec[i] = ps[j], wd[j], spec_of[j]
      end
      ps, wd, spec_of = nps, nwd, nspec
    end
  end
  if k.group_lr then
    specs = group_specs
  elseif grouped then
    for i = 1, #spec_of do spec_of[i] = 1 end
  end
  k.params, k.wd, k.spec_of, k.specs, k.n = ps, wd, spec_of, specs, #ps
  k.default_lr = default_lr
end

-- The learning_rate attribute --------------------------------------------------------------

--- What `opt.learning_rate` shows of a spec: a fixed rate as a 0-D float32
-- Parameter (MindSpore's; p:set_data(x) changes the rate), a per-step list
-- as the list, a function as the function.
local function public(spec)
  if spec.param then return spec.param end
  return spec.list or spec.cell or spec.fn
end

--- Give each fixed rate its Parameter, register those Parameters in the
-- optimizer (so state_dict and save_checkpoint keep them beside global_step
-- and the moments, as MindSpore's checkpoints hold "learning_rate"), and
-- set the `learning_rate` attribute: one value, or with group rates a list
-- of one per group. A per-step list or a function is not state: its rate
-- follows global_step.
local function publish(self, k)
  local st = rawget(self, I.S)
  local mine = k.lr_names or {}
  k.lr_names = mine
  local function register(name, spec)
    if spec.param == nil then
      if mine[name] then R.remove(st.params, name) end
      mine[name] = nil
      return
    end
    if R.has(st.params, name) and not mine[name] then
      fail("ValueError: For '%s', a parameter is named '%s', the name of the optimizer's learning-rate Parameter; "
        .. "give it another name.", k.cls, name)
    end
    mine[name] = true
    R.set(st.params, name, spec.param)
  end
  for j, spec in ipairs(k.specs) do
    if spec.value ~= nil and not spec.param then
      local name = k.group_lr and ("learning_rate_group_" .. j) or "learning_rate"
      spec.param = Parameter(core.tensor(spec.value, core.float32), name, false)
      spec.seen = Tensor.item(spec.param)
    end
  end
  if k.group_lr then
    local list = {}
    for j, spec in ipairs(k.specs) do
      list[j] = public(spec)
      register("learning_rate_group_" .. j, spec)
    end
    st.attrs.learning_rate = list
  else
    register("learning_rate", k.specs[1])
    -- a registered Parameter is read before the attributes
    st.attrs.learning_rate = k.specs[1].param == nil and public(k.specs[1]) or nil
  end
end

--- opt.learning_rate = v: v as the constructor takes it (a number, a
-- per-step list, a Tensor or a function of the step) becomes the rate of
-- every parameter (of every group) from the next step on.
local function set_learning_rate(self, k, v)
  local ok, spec = pcall(parse_lr, k.cls, v, "learning_rate")
  if not ok then raise(strip(spec)) end
  k.default_lr = spec
  if k.group_lr then
    for j = 1, #k.specs do k.specs[j] = copy_spec(spec) end
  else
    k.specs[1] = spec
  end
  publish(self, k)
end

local cell_newindex = Cell.__newindex

--- Assignments to an optimizer: `learning_rate` changes the rate (see
-- set_learning_rate); anything else is routed as in any Cell.
function Optimizer.__newindex(self, name, v)
  local k = rawget(self, K)
  if name == "learning_rate" and k ~= nil then
    set_learning_rate(self, k, v)
    return
  end
  return cell_newindex(self, name, v) -- a tail call: the levels of its errors stay the user's
end

-- Construction --------------------------------------------------------------------------

--- Set up the base state from the checked arguments (a.params,
-- a.learning_rate, a.weight_decay, a.loss_scale); returns k. Called by each
-- optimizer's init inside M.guard. opts.decay_filter: skip "beta"/"gamma"
-- parameters when not grouped.
function M.setup(self, cls, a, opts)
  Cell.init(self, { auto_prefix = false })
  local loss_scale = a.loss_scale
  if loss_scale == nil then loss_scale = 1 end
  M.check_positive(cls, "loss_scale", loss_scale)
  local wd = a.weight_decay
  if wd == nil then wd = 0 end
  M.check_non_negative(cls, "weight_decay", wd)
  local default_lr = parse_lr(cls, a.learning_rate, "learning_rate")
  local k = { cls = cls, loss_scale = loss_scale, grad_scale = 1 / loss_scale, weight_decay = wd, lr_now = {} }
  parse_params(k, cls, a.params, default_lr, wd, opts and opts.decay_filter)
  local labels = {}
  for i, p in ipairs(k.params) do labels[i] = ("For '%s', parameter '%s' (gradients[%d])"):format(cls, p.name, i) end
  k.labels = labels
  self.parameters = ParameterTuple(k.params)
  -- float16/bfloat16 parameters: the step updates a float32 master copy
  -- (so the state is float32 too) and writes it back rounded (M.grads_in,
  -- M.write_back); k.params holds the masters, k.half the parameters
  local prev = core.set_grad_enabled(false)
  for i, p in ipairs(k.params) do
    if HALF[p.dtype.name] then
      k.half, k.half_version = k.half or {}, k.half_version or {}
      k.half[i] = p
      k.half_version[i] = p:_version()
      k.params[i] = Parameter(p:astype(core.float32), p.name, p.requires_grad)
    end
  end
  core.set_grad_enabled(prev)
  k.global_step = Parameter(core.zeros({ 1 }, core.int32), "global_step", false)
  self.global_step = k.global_step
  rawset(self, K, k)
  publish(self, k)
  return k
end

--- The gradients as the step takes them: those of float16/bfloat16
-- parameters cast to float32 (a new list; the caller's is not changed).
function M.grads_in(k, gradients)
  local half = k.half
  if half == nil then return gradients end
  -- a parameter written since the last step (a checkpoint loaded into it,
  -- set_data, ...): its master takes the new value
  local prev = core.set_grad_enabled(false)
  for i, p in pairs(half) do
    if p:_version() ~= k.half_version[i] then
      copy_(k.params[i], p)
      k.half_version[i] = p:_version()
    end
  end
  core.set_grad_enabled(prev)
  local out = {}
  for i = 1, #gradients do
    local g = gradients[i]
    if half[i] and core.is_tensor(g) and g.dtype ~= core.float32 and g.dtype.is_floating_point then
      g = g:astype(core.float32)
    end
    out[i] = g
  end
  return out
end

--- After a step: each float16/bfloat16 parameter takes its float32 master's
-- value (rounded to nearest).
function M.write_back(k)
  local half = k.half
  if half == nil then return end
  local prev = core.set_grad_enabled(false)
  for i, p in pairs(half) do
    copy_(p, k.params[i])
    k.half_version[i] = p:_version()
  end
  core.set_grad_enabled(prev)
end

--- Zero-filled state tensors, one per parameter, named prefix.<name> and
-- registered under those names (a ParameterTuple attribute `prefix`).
function M.state(self, k, prefix)
  local list = {}
  for i, p in ipairs(k.params) do
    list[i] = Parameter(core.zeros(p.shape, p.dtype), prefix .. "." .. p.name, false)
  end
  self[prefix] = ParameterTuple(list)
  return list
end

local BASE_ARGS = { "weight_decay", "loss_scale" }

--- Optimizer(learning_rate, params [, weight_decay = 0, loss_scale = 1]) (or a
-- trailing {weight_decay =, loss_scale =}),
-- MindSpore's base-class order, for custom optimizers (see the file comment).
function Optimizer:init(learning_rate, params, ...)
  M.guard(function(...)
    local cls = T.class_name(self)
    local a = args_util.named(cls, BASE_ARGS, 0, select("#", ...), ...)
    a.learning_rate, a.params = learning_rate, params
    M.setup(self, cls, a, { decay_filter = true })
  end, ...)
end

-- Stepping ---------------------------------------------------------------------------------

local function state_of(self, method)
  local k = rawget(self, K)
  if k == nil then
    raise(("RuntimeError: %s.%s: the optimizer was not set up; call nn.Optimizer.init(self, learning_rate, "
      .. "params, ...) in its init"):format(T.class_name(self), method))
  end
  return k
end

--- Update the parameters for step `step` (1-based); each optimizer defines it.
function Optimizer:_apply()
  error(("NotImplementedError: %s has no _apply(gradients, step) method"):format(T.class_name(self)), 0)
end

local item, fill_, check_grads = Tensor.item, Tensor.fill_, require("cell.ops_internal").check_grads

--- opt(gradients): one step. `gradients` is a list of Tensors matching the
-- parameters, as cell.grad returns for them; returns true.
function Optimizer:construct(gradients)
  local k = state_of(self, "construct")
  local n = k.n
  if type(gradients) ~= "table" then
    raise(("TypeError: For '%s', the argument 'gradients' must be a list of Tensors (one per parameter), but got %s.")
      :format(k.cls, type_name(gradients)))
  end
  if #gradients ~= n then
    raise(("ValueError: For '%s', got %d gradients for %d parameters."):format(k.cls, #gradients, n))
  end
  -- all of them before any update, so a bad list changes nothing
  gradients = M.grads_in(k, gradients)
  local ok, err = pcall(check_grads, k.params, gradients, k.labels, n)
  if not ok then rethrow(err) end
  local t = item(k.global_step) + 1
  local specs, now = k.specs, k.lr_now
  for j = 1, #specs do
    local v, bad = lr_at(specs[j], t)
    if v == nil then
      raise(("ValueError: For '%s', the learning-rate function returned %s at step %d; it must return a finite "
        .. "number >= 0."):format(k.cls, type(bad) == "number" and tostring(bad) or type_name(bad), t))
    end
    now[j] = v
  end
  ok, err = pcall(self._apply, self, gradients, t)
  if not ok then rethrow(err) end
  M.write_back(k)
  fill_(k.global_step, t)
  return true
end

--- The learning rate of the step about to be taken, as a Tensor (a 0-D
-- float32 one: for a fixed rate the `learning_rate` Parameter itself); with
-- group rates a list of them, one per group. Unlike MindSpore's, it does
-- not advance global_step (opt(gradients) does).
function Optimizer:get_lr()
  local k = state_of(self, "get_lr")
  local t = item(k.global_step) + 1
  local function at(spec)
    local v, bad = lr_at(spec, t)
    if v == nil then
      raise(("ValueError: For '%s', the learning-rate function returned %s at step %d; it must return a finite "
        .. "number >= 0."):format(k.cls, tostring(bad), t))
    end
    if spec.param then return spec.param end
    return core.tensor(v, core.float32)
  end
  if not k.group_lr then return at(k.specs[1]) end
  local out = {}
  for j = 1, #k.specs do out[j] = at(k.specs[j]) end
  return out
end

--- What holds the learning rate of `param` (a Parameter, or a list of
-- them, then a list): the `learning_rate` Parameter of its group (a fixed
-- rate), or its per-step list or function, as opt.learning_rate shows it.
function Optimizer:get_lr_parameter(param)
  local k = state_of(self, "get_lr_parameter")
  local function one(p)
    if not is_parameter(p) then
      raise(("TypeError: For 'get_lr_parameter', the 'param' must be a Parameter or a list of them, but got %s.")
        :format(type_name(p)))
    end
    for i = 1, k.n do
      if k.params[i] == p or k.half and k.half[i] == p then return public(k.specs[k.spec_of[i]]) end
    end
    raise(("ValueError: For 'get_lr_parameter', the parameter %s is not in the optimizer."):format(p.name))
  end
  if is_plain(param) then
    local out = {}
    for i = 1, #param do out[i] = one(param[i]) end
    return out
  end
  return one(param)
end

--- Weight decay of each parameter, after the decay filter and groups.
function Optimizer:get_weight_decay()
  local k = state_of(self, "get_weight_decay")
  local out = {}
  for i = 1, k.n do out[i] = k.wd[i] end
  return out
end

--- The step the next opt(...) takes is number global_step + 1.
function Optimizer:get_step()
  return item(state_of(self, "get_step").global_step)
end

--- "learning_rate=0.1, ..." for tostring: the rate and the hyper-parameters
-- each optimizer lists in k.repr.
function Optimizer:extend_repr()
  local k = rawget(self, K)
  if k == nil then return "" end
  local parts = { "learning_rate=" .. lr_str(k.default_lr) }
  for _, e in ipairs(k.repr or {}) do parts[#parts + 1] = e[1] .. "=" .. tostring(k[e[2]]) end
  return table.concat(parts, ", ")
end

M.lr_at = lr_at

return M
