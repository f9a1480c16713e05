--- MindSpore's functional front door to differentiation: cell.grad,
-- cell.value_and_grad, cell.ops.GradOperation, cell.no_grad. The engine
-- records the tape; these functions choose what to differentiate, run the
-- function with grad mode on, and shape the results as MindSpore does.
local check_callable = require("cell.errors").check_callable
local raise = require("cell.errors").raise
local core = require "cell.core"
local args_util = require "cell.util.args"
local same_tensor_shape = require("cell.util.types").same_tensor_shape
local shape_list = require("cell.util.types").shape_list

local M = {}
local unpack = table.unpack or unpack

local function pack(...) return { n = select("#", ...), ... } end

local set_grad_enabled = core.set_grad_enabled

--- The end of with_grad_mode: grad mode back to `prev`, then pcall's
-- results passed on (no table: this runs around every no_grad call).
local function restore_grad_mode(prev, ok, ...)
  set_grad_enabled(prev)
  if not ok then error((...), 0) end
  return ...
end

--- Run fn(...) with grad mode set to `on`, restoring it even on error.
local function with_grad_mode(on, fn, ...)
  local prev = set_grad_enabled(on)
  return restore_grad_mode(prev, pcall(fn, ...))
end

--- with_grad_mode for cell.no_grad / cell.enable_grad (`fname`), whose
-- `fn` is checked only when calling it failed: a value that cannot be
-- called fails at once, before running anything, so the check costs the
-- common path nothing and raises the same TypeError.
local function checked_restore(fname, fn, prev, ok, ...)
  set_grad_enabled(prev)
  if not ok then
    check_callable(fname, "fn", fn)
    error((...), 0)
  end
  return ...
end

--- cell.no_grad(fn, ...): fn(...) without recording anything.
function M.no_grad(fn, ...)
  local prev = set_grad_enabled(false)
  return checked_restore("no_grad", fn, prev, pcall(fn, ...))
end
--- cell.enable_grad(fn, ...): fn(...) with recording on.
function M.enable_grad(fn, ...)
  local prev = set_grad_enabled(true)
  return checked_restore("enable_grad", fn, prev, pcall(fn, ...))
end

--- The most inputs one Lua node takes here (the engine takes up to 65535;
-- a longer list is split so no call returns more values than LuaJIT's
-- unpack allows).
local NODE_MAX = 256

--- M.node(out, inputs, fn): give `out` (a tensor no recorded op produced)
-- a backward node over any number of `inputs`: fn(grad_out) returns one
-- gradient (or nil) per input. Beyond NODE_MAX inputs per node, the rest
-- hang off a chain of link nodes: the first node computes every
-- gradient and hands the later ones down the chain, which the engine runs
-- after it (each link is an input of the node before it).
function M.node(out, inputs, fn)
  local n = #inputs
  if n <= NODE_MAX then return core._lua_node(out, inputs, fn) end
  local direct = NODE_MAX - 1
  local handed = {}
  local rest = {}
  for i = direct + 1, n do rest[#rest + 1] = inputs[i] end
  local link = core.zeros({})
  M.node(link, rest, function() return unpack(handed, 1, n - direct) end)
  local first = {}
  for i = 1, direct do first[i] = inputs[i] end
  first[NODE_MAX] = link
  return core._lua_node(out, first, function(g)
    local grads = pack(fn(g))
    handed = {}
    for i = direct + 1, n do handed[i - direct] = grads[i] end
    local r = {}
    for i = 1, direct do r[i] = grads[i] end
    r[NODE_MAX] = link.requires_grad and core.zeros({}) or nil
    return unpack(r, 1, NODE_MAX)
  end)
end

--- Run fn(args...) without keeping its intermediate tensors; the backward
-- pass runs it again to get them. Gradients flow to the Tensor arguments
-- that require grad and to `weights` (tensors fn reads without taking them
-- as arguments, such as a cell's parameters).
function M.recompute(fn, args, weights)
  local inputs, positions = {}, {}
  for i = 1, args.n do
    if core.is_tensor(args[i]) and args[i].requires_grad then
      inputs[#inputs + 1] = args[i]
      positions[#positions + 1] = i
    end
  end
  local nargs = #inputs
  for _, w in ipairs(weights or {}) do
    if w.requires_grad then inputs[#inputs + 1] = w end
  end
  if not core.is_grad_enabled() or #inputs == 0 then return fn(unpack(args, 1, args.n)) end
  local out = M.no_grad(fn, unpack(args, 1, args.n))
  if not core.is_tensor(out) then
    raise(("TypeError: checkpoint: the function must return a Tensor, got %s"):format(type(out)))
  end
  M.node(out, inputs, function(g)
    -- grad mode is on here only in a pass that creates a graph (a
    -- higher-order gradient): this pass records too, and differentiates the
    -- arguments themselves, so its gradients keep their history
    local create = core.is_grad_enabled()
    local again = { n = args.n }
    for i = 1, args.n do again[i] = args[i] end
    local targets = {}
    for k, i in ipairs(positions) do
      targets[k] = create and args[i] or args[i]:stop_gradient():requires_grad_(true)
      again[i] = targets[k]
    end
    for k = nargs + 1, #inputs do targets[k] = inputs[k] end
    local out2 = M.enable_grad(fn, unpack(again, 1, again.n))
    if not out2.requires_grad then return end
    return unpack(core._backward(out2, g, targets, create))
  end)
  return out
end

--- cell.checkpoint(fn, ...): fn(...) without keeping its intermediate
-- tensors; the backward pass runs fn again to get them (gradient
-- checkpointing, what Cell:recompute() uses). Gradients flow to the Tensor
-- arguments that require grad: pass the parameters fn uses as arguments.
-- fn must return one Tensor.
function M.checkpoint(fn, ...)
  check_callable("checkpoint", "fn", fn)
  return M.recompute(fn, pack(...), nil)
end

--- The positions to differentiate: nil, a number, or a list (1-based).
local function positions_of(grad_position)
  if grad_position == nil then return {}, false end
  if type(grad_position) == "number" then
    if grad_position < 1 or grad_position ~= math.floor(grad_position) then
      raise(("ValueError: grad_position must be a positive integer (1 is the first argument), got %s")
        :format(tostring(grad_position)))
    end
    return { grad_position }, true
  end
  if type(grad_position) ~= "table" then
    raise(("TypeError: grad_position must be a number, a table of numbers or nil, got %s")
      :format(type(grad_position)))
  end
  for _, p in ipairs(grad_position) do positions_of(p) end
  return grad_position, false
end

local function check_weights(weights)
  if weights == nil then return {} end
  if core.is_tensor(weights) then return { weights }, true end
  if type(weights) ~= "table" then
    raise(("TypeError: weights must be a list of Parameters, got %s"):format(type(weights)))
  end
  for i, w in ipairs(weights) do
    if not core.is_tensor(w) then
      raise(("TypeError: weights[%d] is a %s, not a Parameter"):format(i, type(w)))
    end
  end
  return weights
end

--- The outputs to differentiate: the first result with has_aux;
-- otherwise every result (a tuple), or the Tensors of a returned list.
local function outputs_of(res, has_aux)
  local out = res[1]
  if core.is_tensor(out) and (has_aux or res.n == 1) then return { out } end
  local outs
  if has_aux or (res.n <= 1 and type(out) ~= "table") then
    raise(("TypeError: grad: the function must return a Tensor%s, got %s")
      :format(has_aux and " first" or "", type(out)))
  end
  if res.n > 1 then
    outs = {}
    for i = 1, res.n do outs[i] = res[i] end
  else
    outs = out
  end
  if #outs == 0 then raise("TypeError: grad: the function returned an empty list; it must return a Tensor") end
  for i = 1, #outs do
    if not core.is_tensor(outs[i]) then
      raise(("TypeError: grad: output %d of the function is a %s; every output is differentiated, "
        .. "so each must be a Tensor (return other values with has_aux)"):format(i, type(outs[i])))
    end
  end
  return outs
end

--- "[2, 3]": a shape as the engine's messages write it.
local function bracketed(t) return shape_list(t.shape) end

--- One root for the backward pass and its sens (nil: ones, as MindSpore
-- attaches ones_like(output) when sens_param is false). Several outputs
-- (a tuple) are differentiated together: the root is the sum of each
-- output times its sens (ones without sens_param). nil when no output
-- requires grad.
local function combine(outs, sens)
  if #outs == 1 then
    if sens ~= nil and not core.is_tensor(sens) then
      raise(("TypeError: grad: the function returns one Tensor, so sens must be a Tensor, got %s")
        :format(type(sens)))
    end
    return outs[1].requires_grad and outs[1] or nil, sens
  end
  if sens ~= nil then
    if core.is_tensor(sens) or type(sens) ~= "table" or #sens ~= #outs then
      raise(("TypeError: grad: the function returns %d outputs, so sens must be a list of %d Tensors, got %s")
        :format(#outs, #outs, core.is_tensor(sens) and "a Tensor" or type(sens) == "table"
          and ("a list of " .. #sens) or type(sens)))
    end
    for i = 1, #outs do
      if not core.is_tensor(sens[i]) then
        raise(("TypeError: grad: sens %d is a %s, not a Tensor"):format(i, type(sens[i])))
      end
      if not same_tensor_shape(sens[i], outs[i]) then
        raise(("ValueError: grad: sens %d has shape %s but output %d has shape %s")
          :format(i, bracketed(sens[i]), i, bracketed(outs[i])))
      end
    end
  end
  local root
  for i = 1, #outs do
    local o = outs[i]
    if o.requires_grad then
      local part = (sens and o * sens[i] or o):sum()
      root = root and root + part or part
    end
  end
  return root, nil
end

--- How many differentiating functions are running their function: inside
-- one (depth > 0), a gradient is taken with create_graph, so the outer one
-- can differentiate it again (higher-order gradients, as MindSpore's
-- nested grad).
local depth = 0

--- fn(...) with recording on and depth one deeper, both restored even on
-- error; its results packed ({...; n = count}). One pcall, one table: this
-- runs on every step of a training loop.
local function deeper(fn, ...)
  depth = depth + 1
  local prev = core.set_grad_enabled(true)
  local res = pack(pcall(fn, ...))
  core.set_grad_enabled(prev)
  depth = depth - 1
  if not res[1] then error(res[2], 0) end
  local n = res.n
  for i = 2, n do res[i - 1] = res[i] end
  res[n] = nil
  res.n = n - 1
  return res
end

--- The differentiating function behind grad and value_and_grad. Options:
-- grad_position, weights, has_aux, sens_param (sens is the last argument).
local function differentiate(fn, opts, with_value)
  if type(fn) ~= "function" and not (type(fn) == "table" and getmetatable(fn)) then
    raise(("TypeError: grad: expected a function or a cell, got %s"):format(type(fn)))
  end
  local positions, single = positions_of(opts.grad_position)
  local weights, single_weight = check_weights(opts.weights)
  if #positions == 0 and #weights == 0 then
    raise("ValueError: grad: grad_position and weights cannot both be nil")
  end
  return function(...)
    if not core.is_grad_enabled() then
      raise("RuntimeError: grad: called inside no_grad, where nothing is recorded; "
        .. "call it outside the no_grad region")
    end
    local args = pack(...)
    local nested = depth > 0
    local sens
    if opts.sens_param then
      sens = args[args.n]
      if not core.is_tensor(sens) and (type(sens) ~= "table" or getmetatable(sens)) then
        raise("TypeError: grad: with sens_param the last argument must be the sens Tensor "
          .. "(a list of Tensors when the function returns several)")
      end
      args[args.n] = nil
      args.n = args.n - 1
    end
    local leaves = {}
    for k, p in ipairs(positions) do
      local x = args[p]
      if not core.is_tensor(x) then
        raise(("TypeError: grad: argument %d is a %s; only Tensor arguments can be differentiated")
          :format(p, type(x)))
      end
      if not x.dtype.is_floating_point then
        raise(("TypeError: grad: argument %d is a %s tensor; only floating-point tensors have "
          .. "gradients"):format(p, tostring(x.dtype)))
      end
      -- nested in another differentiation, an argument with a history is
      -- differentiated as it is, so the outer one sees through this gradient
      local leaf = (nested and x.requires_grad) and x or x:stop_gradient():requires_grad_(true)
      args[p] = leaf
      leaves[k] = leaf
    end
    local res = deeper(fn, unpack(args, 1, args.n))
    local out = res[1]
    local outs = outputs_of(res, opts.has_aux)
    local root
    if #outs == 1 then -- nothing to record: no grad-mode switch
      root, sens = combine(outs, sens)
    else
      root, sens = with_grad_mode(true, combine, outs, sens)
    end
    local targets = {}
    for _, t in ipairs(leaves) do targets[#targets + 1] = t end
    for _, w in ipairs(weights) do targets[#targets + 1] = w end
    local all
    if root then
      all = core._backward(root, sens, targets, nested)
    else -- nothing being differentiated reached the output: zeros, as MindSpore
      all = {}
      for k, t in ipairs(targets) do all[k] = core.zeros_like(t) end
    end
    local input_grads, weight_grads = {}, {}
    for k = 1, #leaves do input_grads[k] = all[k] end
    for k = 1, #weights do weight_grads[k] = all[#leaves + k] end
    local grads
    if #positions > 0 then
      grads = single and input_grads[1] or input_grads
      if #weights > 0 then grads = { grads, single_weight and weight_grads[1] or weight_grads } end
    else
      grads = single_weight and weight_grads[1] or weight_grads
    end
    local aux = opts.has_aux and { unpack(res, 2, res.n) } or nil
    if with_value then
      if opts.has_aux then return { out, unpack(aux) }, grads end
      return res.n > 1 and { unpack(res, 1, res.n) } or out, grads
    end
    if opts.has_aux then return grads, aux end -- MindSpore's (grads, (aux, ...))
    return grads
  end
end

local GRAD_OPTIONS = { "grad_position", "weights", "has_aux", "sens_param" }

--- Positional (grad_position, weights, has_aux), a trailing options table,
-- or both (cell.util.args). Positionally, grad_position defaults to 1
-- when weights are not given either; in a table, an absent grad_position
-- is nil (no inputs), as MindSpore's None.
local function options(fname, ...)
  local o, npos = args_util.named(fname, GRAD_OPTIONS, 3, select("#", ...), ...)
  if npos == select("#", ...) and o.grad_position == nil and o.weights == nil then o.grad_position = 1 end
  return o
end

--- cell.grad(fn, grad_position = 1, weights = nil, has_aux = false)
function M.grad(fn, ...)
  check_callable("grad", "fn", fn)
  return differentiate(fn, options("grad", ...), false)
end

--- cell.value_and_grad(fn, grad_position = 1, weights = nil, has_aux = false)
function M.value_and_grad(fn, ...)
  check_callable("value_and_grad", "fn", fn)
  return differentiate(fn, options("value_and_grad", ...), true)
end

local GRAD_OPERATION_OPTIONS = { "get_all", "get_by_list", "sens_param" }

--- cell.ops.GradOperation{get_all =, get_by_list =, sens_param =} (or
-- positionally, MindSpore's order; all false by default): called
-- on a function (or a cell) it returns its gradient function; with
-- get_by_list that function takes the weights first: GradOperation{get_by_list
-- = true}(net, weights)(x).
function M.GradOperation(...)
  local opts = args_util.named("GradOperation", GRAD_OPERATION_OPTIONS, 2, select("#", ...), ...)
  return function(fn, weights)
    check_callable("GradOperation", "fn", fn)
    return function(...)
      local n = select("#", ...)
      if opts.sens_param then n = n - 1 end
      local positions
      if opts.get_all then
        positions = {}
        for i = 1, n do positions[i] = i end
      elseif not opts.get_by_list then
        positions = 1
      end
      local g = differentiate(fn, {
        grad_position = positions,
        weights = opts.get_by_list and weights or nil,
        sens_param = opts.sens_param,
      }, false)
      return g(...)
    end
  end
end

return M
