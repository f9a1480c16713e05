--- Calling a cell: `net(...)` runs the forward pre-hooks, construct (or
-- its custom bprop, recompute or backward-hook variants while gradients are
-- recorded), the forward hooks, and the backward pre-hooks, as MindSpore
-- 2.7's Cell.__call__ does. Also the hook registration methods and
-- `cell.kwargs`. Backward hooks stand on the engine's Lua nodes: the
-- tensors crossing the cell's boundary pass through identity "gates" whose
-- backward runs the hooks on the gradients (see `gate`).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local autograd = require "cell.autograd"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local R = require "cell.nn.registry"
local args_util = require "cell.util.args"

local S, pack, unpack, type_name, class_name = I.S, I.pack, I.unpack, T.type_name, T.class_name

local M = {}

--- Marks the keyword-argument tables made by cell.kwargs.
local KWARGS = { __name = "kwargs" }
KWARGS.__index = KWARGS

--- cell.kwargs{name = value, ...}: keyword arguments for a cell call,
-- passed last: net(x, cell.kwargs{scale = 2}).
function M.kwargs(t)
  if t == nil then t = {} end
  if type(t) ~= "table" or getmetatable(t) ~= nil then
    raise(("TypeError: kwargs: expected a plain table of name = value, but got %s"):format(type_name(t)))
  end
  return setmetatable(t, KWARGS)
end

--- Whether `t` was made by cell.kwargs.
function M.is_kwargs(t) return type(t) == "table" and getmetatable(t) == KWARGS end

--- A hook's replacement arguments: a plain table is the sequence, any
-- other value is one argument.
local function as_args(r)
  if type(r) == "table" and getmetatable(r) == nil then
    local out = { n = r.n or #r }
    for i = 1, out.n do out[i] = r[i] end
    return out
  end
  return { n = 1, r }
end

--- The construct a call runs: the class's, without __index's walk through
-- the instance's tables, unless the instance shadows it (as Cell:__call).
local function construct_of(self, st)
  if st.attrs.construct == nil and st.cells.val.construct == nil and st.params.val.construct == nil
    and st.buffers.val.construct == nil then
    return getmetatable(self).construct
  end
  return self.construct
end

local function run_construct(self, args, kwargs)
  local construct = construct_of(self, rawget(self, S))
  if kwargs ~= nil then
    local a = { n = args.n + 1 }
    for i = 1, args.n do a[i] = args[i] end
    a[a.n] = kwargs
    return pack(construct(self, unpack(a, 1, a.n)))
  end
  return pack(construct(self, unpack(args, 1, args.n)))
end

--- The tensors of a packed list that require grad pass through one Lua
-- node: they are flattened and concatenated into one tensor, whose detached
-- copy gets a node whose backward calls fn(grads) -> grads (one entry per
-- list position, nil where no gradient), and the list's tensors are
-- replaced by views of it. So fn sees all the gradients of the list at
-- once, as MindSpore's cell hooks do. Returns the new list and whether a
-- gate was made.
local function gate(list, fn, who)
  local idx = {}
  for i = 1, list.n do
    local t = list[i]
    if core.is_tensor(t) and t.requires_grad then idx[#idx + 1] = i end
  end
  if #idx == 0 then return list, false end
  local flat, shapes, dtypes, sizes = {}, {}, {}, {}
  for k, i in ipairs(idx) do
    local t = list[i]
    flat[k] = t:reshape({ t:numel() })
    shapes[k], dtypes[k], sizes[k] = t.shape, t.dtype, t:numel()
  end
  local packed = #flat == 1 and flat[1] or core.cat(flat, 1)
  local gated = packed:stop_gradient()
  core._lua_node(gated, { packed }, function(g)
    local grads, off = { n = list.n }, 1
    for k, i in ipairs(idx) do
      grads[i] = g:narrow(1, off, sizes[k]):reshape(shapes[k]):astype(dtypes[k])
      off = off + sizes[k]
    end
    grads = fn(grads)
    local parts = {}
    for k, i in ipairs(idx) do
      local gi = grads[i]
      if gi == nil then
        gi = core.zeros(shapes[k], packed.dtype)
      elseif not core.is_tensor(gi) then
        error(("TypeError: %s: gradient %d must be a Tensor or nil, but got %s"):format(who, i, type_name(gi)), 0)
      elseif not T.same_shape(gi.shape, shapes[k]) then
        error(("ValueError: %s: gradient %d has shape %s but its tensor has shape %s")
          :format(who, i, T.shape_str(gi.shape), T.shape_str(shapes[k])), 0)
      end
      parts[k] = gi:reshape({ sizes[k] }):astype(packed.dtype)
    end
    return #parts == 1 and parts[1] or core.cat(parts, 1)
  end)
  local out, off = { n = list.n }, 1
  for i = 1, list.n do out[i] = list[i] end
  for k, i in ipairs(idx) do
    out[i] = gated:narrow(1, off, sizes[k]):reshape(shapes[k]):astype(dtypes[k])
    off = off + sizes[k]
  end
  return out, true
end

--- A hook's replacement gradients: a sequence, or one Tensor.
local function as_grads(r, n, what, lvl)
  if core.is_tensor(r) then return { n = 1, r } end
  if type(r) ~= "table" or getmetatable(r) ~= nil then
    raise(("TypeError: %s must return nil, a Tensor or a sequence of Tensors, but got %s")
      :format(what, type_name(r)))
  end
  local out = { n = n }
  for i = 1, n do out[i] = r[i] end
  return out
end

--- The output of construct as a packed list of tensors (one output, or a
-- sequence returned as one value), with the function that rebuilds it.
local function output_list(res)
  if res.n == 1 and core.is_tensor(res[1]) then
    return { n = 1, res[1] }, function(l) return { n = 1, l[1] } end
  end
  if res.n == 1 and type(res[1]) == "table" and getmetatable(res[1]) == nil then
    local seq = res[1]
    local l = { n = #seq }
    for i = 1, l.n do l[i] = seq[i] end
    return l, function(new)
      local copy = {}
      for k, v in pairs(seq) do copy[k] = v end
      for i = 1, new.n do copy[i] = new[i] end
      return { n = 1, copy }
    end
  end
  return res, function(l) return l end
end

--- construct with the cell's backward hooks: a gate on the inputs runs them
-- on the inputs' gradients, a gate on the outputs records the outputs'.
local function backward_hook_construct(self, st, args, kwargs)
  local ctx = { grad_output = { n = 0 } }
  local function run_hooks(grad_input)
    local hooks = st.bwd or {}
    for i = 1, #hooks do
      local r = hooks[i].fn(self, grad_input, ctx.grad_output)
      if r ~= nil then grad_input = as_grads(r, grad_input.n, "backward hook", 0) end
    end
    return grad_input
  end
  local who = class_name(self) .. " backward hook"
  local inner_args, gated = gate(args, run_hooks, who)
  local res = run_construct(self, inner_args, kwargs)
  local list, rebuild = output_list(res)
  local out = gate(list, function(grads)
    ctx.grad_output = grads
    if not gated then run_hooks({ n = args.n }) end
    return grads
  end, who)
  return rebuild(out)
end

--- The output through a gate whose backward runs the backward pre-hooks.
local function backward_pre_gate(self, st, res)
  local list, rebuild = output_list(res)
  local out = gate(list, function(grads)
    local hooks = st.bwd_pre or {}
    for i = 1, #hooks do
      local r = hooks[i].fn(self, grads)
      if r ~= nil then grads = as_grads(r, grads.n, "backward pre-hook", 0) end
    end
    return grads
  end, class_name(self) .. " backward pre-hook")
  return rebuild(out)
end

--- construct run without recording; its backward is self:bprop(inputs...,
-- out, dout), which returns one gradient per input (as several values or
-- one sequence).
local function custom_bprop(self, bprop, args, kwargs)
  local res = autograd.no_grad(run_construct, self, args, kwargs)
  local out = res[1]
  if res.n ~= 1 or not core.is_tensor(out) then
    error(("TypeError: %s: a cell with bprop must return one Tensor from construct"):format(class_name(self)), 0)
  end
  local inputs, positions = {}, {}
  for i = 1, args.n do
    if core.is_tensor(args[i]) then
      inputs[#inputs + 1] = args[i]
      positions[#positions + 1] = i
    end
  end
  autograd.node(out, inputs, function(dout)
    local call = { n = args.n + 2 }
    for i = 1, args.n do call[i] = args[i] end
    call[args.n + 1], call[args.n + 2] = out, dout
    local r = pack(bprop(self, unpack(call, 1, call.n)))
    if r.n == 1 and type(r[1]) == "table" and not core.is_tensor(r[1]) then r = pack(unpack(r[1])) end
    local grads = {}
    for k, i in ipairs(positions) do grads[k] = r[i] end
    return unpack(grads, 1, #positions)
  end)
  return res
end

local mixed_call, finish_call

--- The full call path (the fast path is in Cell.__call).
local function slow_call(self, st, ...)
  if st.lazy then -- MindSpore's _init_check: the cell's own lazy parameters get their values
    for _, p in R.each(st.params) do
      if p ~= nil and p.has_init then p:init_data() end
    end
    st.lazy = nil
    self:_refresh()
  end
  local args = pack(...)
  local kwargs
  if args.n > 0 and M.is_kwargs(args[args.n]) then
    kwargs = args[args.n]
    args[args.n] = nil
    args.n = args.n - 1
  end
  if st.mixed then
    -- a cell whose kernel computes in float32 from a low-precision input
    -- (keeps_low_input) keeps an input of its output's dtype under amp's O2
    local keep = st.mixed_out and st.mixed == core.float32 and getmetatable(self).keeps_low_input
    for i = 1, args.n do
      local a = args[i]
      if core.is_tensor(a) and a.dtype.is_floating_point and a.dtype ~= st.mixed
        and not (keep and a.dtype == st.mixed_out) then
        args[i] = a:astype(st.mixed)
      end
    end
  end
  local kw_view = kwargs
  local pre = st.fwd_pre
  if pre then
    local kw_hooked = false
    for i = 1, #pre do
      local h = pre[i]
      if h.kw then
        kw_hooked = true
        kw_view = kw_view or M.kwargs {}
        local na, nk = h.fn(self, args, kw_view)
        if na ~= nil then
          if type(na) ~= "table" or getmetatable(na) ~= nil or type(nk) ~= "table" then
            error(("RuntimeError: forward pre hook with kwargs must return nil or new_args, new_kwargs, "
              .. "but got %s, %s"):format(type_name(na), type_name(nk)), 0)
          end
          args = as_args(na)
          if getmetatable(nk) == nil then nk = M.kwargs(nk) end
          kw_view = nk
        end
      else
        local r = h.fn(self, args)
        if r ~= nil then args = as_args(r) end
      end
    end
    -- construct gets the kwargs the with_kwargs pre-hooks left (as
    -- MindSpore's construct(*args, **kwargs)): filled in place, replaced,
    -- or emptied (then none at all)
    if kw_hooked then kwargs = next(kw_view) ~= nil and kw_view or nil end
  end
  if st.mixed then return mixed_call(self, st, args, kwargs, kw_view) end
  return finish_call(self, st, args, kwargs, kw_view)
end

--- A cell under to_float: its Parameters read as cast copies while it runs
-- (st.pcast, a cache per call; the previous one is put back afterwards,
-- also when construct raises). Outputs cast to st.mixed_out when set
-- (cell.amp's cells whose result goes back to the surrounding precision).
function mixed_call(self, st, args, kwargs, kw_view)
  local saved = st.pcast
  st.pcast = {}
  local r = pack(pcall(finish_call, self, st, args, kwargs, kw_view))
  st.pcast = saved
  if not r[1] then error(r[2], 0) end
  local out_dt = st.mixed_out
  if out_dt then
    for i = 2, r.n do
      local a = r[i]
      if core.is_tensor(a) and a.dtype.is_floating_point and a.dtype ~= out_dt then r[i] = a:astype(out_dt) end
    end
  end
  return unpack(r, 2, r.n)
end

--- The forward hooks over one call's output (each may replace it).
local function run_fwd_hooks(self, fwd, args, kw_view, output)
  for i = 1, #fwd do
    local h = fwd[i]
    local r
    if h.kw then
      r = h.fn(self, args, kw_view or M.kwargs {}, output)
    else
      r = h.fn(self, args, output)
    end
    if r ~= nil then output = r end
  end
  return output
end

--- After construct: the forward hooks, then the backward pre-hooks' gate.
local function finish_res(self, st, args, kw_view, grad, res)
  local fwd = st.fwd
  if fwd then
    local output = run_fwd_hooks(self, fwd, args, kw_view, res.n == 1 and res[1] or res)
    if res.n == 1 then res[1] = output else res = as_args(output) end
  end
  if grad and st.bwd_pre then res = backward_pre_gate(self, st, res) end
  return unpack(res, 1, res.n)
end

--- finish_res for a plain construct's results, without packing the usual
-- single one into a table.
local function finish_plain(self, st, args, kw_view, ...)
  if select("#", ...) ~= 1 then return finish_res(self, st, args, kw_view, false, pack(...)) end
  local fwd = st.fwd
  if fwd then return (run_fwd_hooks(self, fwd, args, kw_view, (...))) end
  return (...)
end

function finish_call(self, st, args, kwargs, kw_view)
  local grad = core.is_grad_enabled()
  local bprop = getmetatable(self).bprop
  local res
  if grad and st.bwd then
    res = backward_hook_construct(self, st, args, kwargs)
  elseif grad and st.recompute then
    local weights = self:trainable_params()
    res = pack(autograd.recompute(function(...)
      local r = run_construct(self, pack(...), kwargs)
      return unpack(r, 1, r.n)
    end, args, weights))
  elseif grad and bprop then
    res = custom_bprop(self, bprop, args, kwargs)
  elseif kwargs == nil and not (grad and st.bwd_pre) then
    return finish_plain(self, st, args, kw_view, construct_of(self, st)(self, unpack(args, 1, args.n)))
  else
    res = run_construct(self, args, kwargs)
  end
  return finish_res(self, st, args, kw_view, grad, res)
end

function M.install(Cell)
  --- The forward computation; every subclass defines its own.
  function Cell:construct()
    raise(("NotImplementedError: %s has no construct method; define %s:construct(...)")
      :format(class_name(self), class_name(self)))
  end

  --- net(...): hooks and construct. With no hooks, no mixed precision, no
  -- recompute and no bprop, it is a call of construct.
  function Cell:__call(...)
    local st = rawget(self, S)
    if st.fast then
      local cls = getmetatable(self)
      if cls.bprop == nil then
        -- construct_of, written out: every plain call takes this path, and
        -- is spared one more Lua call
        if st.attrs.construct == nil and st.cells.val.construct == nil and st.params.val.construct == nil
          and st.buffers.val.construct == nil then
          return cls.construct(self, ...)
        end
        return self:construct(...)
      end
    elseif st.fwd and not (st.fwd_pre or st.bwd_pre or st.bwd or st.mixed or st.recompute or st.lazy)
      and getmetatable(self).bprop == nil then
      -- forward hooks only (the usual hooked cell): what slow_call and
      -- finish_call would do for it, construct called on the arguments as
      -- they came; a call ending in kwargs still goes the long way
      local args = pack(...)
      if args.n == 0 or not M.is_kwargs(args[args.n]) then
        return finish_plain(self, st, args, nil, construct_of(self, st)(self, ...))
      end
    end
    return slow_call(self, st, ...)
  end

  local function refresh(st)
    st.fast = not (st.fwd_pre or st.fwd or st.bwd_pre or st.bwd or st.mixed or st.recompute or st.lazy)
  end

  local HOOK_ARGS = { "with_kwargs" }
  local NO_ARGS = {}
  local RECOMPUTE_ARGS = { "mp_comm_recompute", "parallel_optimizer_comm_recompute", "recompute_slice_activation" }

  --- with_kwargs from what follows the hook: [with_kwargs] or {with_kwargs = }.
  local function with_kwargs_of(method, n, ...)
    local with_kwargs = args_util.parse("Cell." .. method, HOOK_ARGS, 3, n, ...)
    return with_kwargs -- (not a tail call: the levels count this frame)
  end

  local function register(self, method, field, fn, kw)
    I.check_hook_fn(method, fn, 3)
    if kw ~= nil and type(kw) ~= "boolean" then
      raise(("TypeError: %s: with_kwargs must be a boolean, but got %s"):format(method, type_name(kw)))
    end
    return I.add_hook(rawget(self, S), field, { fn = fn, kw = kw or false }, refresh)
  end

  --- register_forward_pre_hook(fn [, with_kwargs = false]) (or fn,
  -- {with_kwargs = }): fn(cell, args) -> nil or new args; with kwargs
  -- fn(cell, args, kwargs) -> nil or new_args, new_kwargs.
  function Cell:register_forward_pre_hook(fn, ...)
    local with_kwargs = with_kwargs_of("register_forward_pre_hook", select("#", ...), ...)
    local h = register(self, "register_forward_pre_hook", "fwd_pre", fn, with_kwargs)
    return h
  end

  --- register_forward_hook(fn [, with_kwargs = false]) (or fn, {with_kwargs
  -- = }): fn(cell, args, output), with kwargs fn(cell, args, kwargs,
  -- output); nil or a new output. As in MindSpore 2.7, a cell with a custom
  -- bprop ignores forward hooks.
  function Cell:register_forward_hook(fn, ...)
    local with_kwargs = with_kwargs_of("register_forward_hook", select("#", ...), ...)
    if getmetatable(self).bprop ~= nil then
      I.check_hook_fn("register_forward_hook", fn, 2)
      local h = I.add_hook({}, "ignored", { fn = fn })
      return h
    end
    local h = register(self, "register_forward_hook", "fwd", fn, with_kwargs)
    return h
  end

  --- register_backward_pre_hook(fn): fn(cell, grad_output) -> nil or new
  -- grad_output (one gradient per output).
  function Cell:register_backward_pre_hook(fn, ...)
    args_util.parse("Cell.register_backward_pre_hook", NO_ARGS, 2, select("#", ...), ...)
    local h = register(self, "register_backward_pre_hook", "bwd_pre", fn, nil)
    return h
  end

  --- register_backward_hook(fn): fn(cell, grad_input, grad_output) -> nil
  -- or new grad_input (one gradient per input; nil for an input that does
  -- not require grad).
  function Cell:register_backward_hook(fn, ...)
    args_util.parse("Cell.register_backward_hook", NO_ARGS, 2, select("#", ...), ...)
    local h = register(self, "register_backward_hook", "bwd", fn, nil)
    return h
  end

  --- recompute([{mp_comm_recompute = true, parallel_optimizer_comm_recompute
  -- = false, recompute_slice_activation = false}]): while gradients are
  -- recorded, the cell keeps none of its intermediate tensors and runs
  -- construct again in the backward pass. The options are MindSpore's
  -- (parallel training only): checked, and they change nothing here.
  function Cell:recompute(...)
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    if type(last) == "table" and getmetatable(last) == nil then
      for k in pairs(last) do -- MindSpore's recompute(**kwargs) names an unknown keyword a ValueError
        local known = false
        for _, name in ipairs(RECOMPUTE_ARGS) do known = known or k == name end
        if not known then
          raise(("ValueError: For 'recompute', keyword '%s' is not recognized! the key kwargs must be "
            .. "'mp_comm_recompute', 'parallel_optimizer_comm_recompute', 'recompute_slice_activation'")
            :format(tostring(k)))
        end
      end
    end
    local t = args_util.named("Cell.recompute", RECOMPUTE_ARGS, 2, select("#", ...), ...)
    for _, name in ipairs(RECOMPUTE_ARGS) do
      local v = t[name]
      if v ~= nil and type(v) ~= "boolean" then
        raise(("TypeError: Cell.recompute: %s must be a boolean, but got %s"):format(name, type_name(v)))
      end
    end
    local st = rawget(self, S)
    st.recompute = true
    refresh(st)
  end

  Cell._refresh = function(self) refresh(rawget(self, S)) end
end

return M
