--- cell.ops.clip_by_global_norm, clip_by_norm and clip_by_value: MindSpore's
-- clipping functions. Everything is computed with tensor ops (the norms and
-- the scale stay tensors, never numbers read back), so they run on any
-- device and are differentiable, as MindSpore's functional forms are.
local core = require "cell.core"
local E = require "cell.errors"

local M = {}

local function is_list(v) return type(v) == "table" and not core.is_tensor(v) end

--- The tensors of a list argument, checked: each a floating-point Tensor.
local function check_list(fname, x, allow_tensor)
  if allow_tensor and core.is_tensor(x) then x = { x } end
  if not is_list(x) then
    E.type_error(fname, "x", allow_tensor and "a Tensor or a list of Tensors" or "a list of Tensors", x)
  end
  local n = #x
  if n == 0 then E.raise(("ValueError: %s: x must hold at least one Tensor"):format(fname)) end
  for i = 1, n do
    local t = x[i]
    if not core.is_tensor(t) then E.type_error(fname, ("x[%d]"):format(i), "a Tensor", t) end
    if not t.dtype.is_floating_point then
      E.raise(("TypeError: %s: x[%d] must be a floating-point Tensor, but got %s")
        :format(fname, i, tostring(t.dtype)))
    end
  end
  return x, n
end

--- A finite number (argument what of fname), > 0 or >= 0.
local function check_number(fname, what, v, strict)
  if type(v) ~= "number" then E.type_error(fname, what, "a number", v) end
  if v ~= v or v == math.huge or v == -math.huge then
    E.raise(("ValueError: %s: %s must be finite, but got %s"):format(fname, what, tostring(v)))
  end
  if (strict and v <= 0) or (not strict and v < 0) then
    E.raise(("ValueError: %s: %s must be %s 0, but got %s")
      :format(fname, what, strict and "greater than" or "at least", tostring(v)))
  end
  return v
end

--- Each tensor of list x times the 0-d scale s, in its own dtype.
local function scaled(x, n, s)
  local out = {}
  for i = 1, n do
    local si = s.dtype == x[i].dtype and s or s:astype(x[i].dtype)
    out[i] = x[i] * si
  end
  return out
end

--- The norm of all the elements of x[1..n] together (p-norm; math.huge:
-- the largest absolute value), a 0-d float tensor.
local function total_norm(x, n, p)
  local norms = {}
  local dt = x[1].dtype
  for i = 1, n do
    local t = x[i]:norm(p)
    if t.dtype ~= dt then t = t:astype(dt) end
    norms[i] = t
  end
  if n == 1 then return norms[1] end
  return core.stack(norms, 1):norm(p)
end

--- cell.ops.clip_by_global_norm(x, clip_norm = 1.0 [, use_norm]): the
-- tensors of list x scaled by clip_norm / max(global_norm, clip_norm),
-- where global_norm is the 2-norm of all their elements together (or
-- use_norm, a number or a 0-d Tensor, when given).
function M.clip_by_global_norm(x, clip_norm, use_norm)
  local fname = "clip_by_global_norm"
  local n
  x, n = check_list(fname, x, false)
  if clip_norm == nil then clip_norm = 1.0 end
  check_number(fname, "clip_norm", clip_norm, true)
  local norm
  if use_norm == nil then
    norm = total_norm(x, n, 2)
  elseif core.is_tensor(use_norm) then
    if use_norm:numel() ~= 1 or not use_norm.dtype.is_floating_point then
      E.raise(("TypeError: %s: use_norm must be a number or a one-element floating-point Tensor, "
        .. "but got a %s Tensor of shape %s"):format(fname, tostring(use_norm.dtype),
        require("cell.util.types").shape_list(use_norm.shape)))
    end
    norm = use_norm:reshape({})
  else
    check_number(fname, "use_norm", use_norm, false)
    norm = core.full({}, use_norm, x[1].dtype)
  end
  local scale = clip_norm / norm:clamp(clip_norm, nil)
  return scaled(x, n, scale)
end

--- cell.ops.clip_by_norm(x, max_norm [, norm_type = 2.0 [, error_if_nonfinite = false]]):
-- x (a Tensor or a list of them) scaled by min(1, max_norm / (total_norm +
-- 1e-6)), total_norm the norm_type-norm of all the elements together
-- (MindSpore 2.x, as torch.nn.utils.clip_grad_norm_).
function M.clip_by_norm(x, max_norm, norm_type, error_if_nonfinite)
  local fname = "clip_by_norm"
  local single = core.is_tensor(x)
  local n
  x, n = check_list(fname, x, true)
  check_number(fname, "max_norm", max_norm, false)
  if norm_type == nil then norm_type = 2.0 end
  if type(norm_type) ~= "number" then E.type_error(fname, "norm_type", "a number", norm_type) end
  if not (norm_type > 0) then
    E.raise(("ValueError: %s: norm_type must be greater than 0 (or math.huge), but got %s")
      :format(fname, tostring(norm_type)))
  end
  local norm = total_norm(x, n, norm_type)
  if error_if_nonfinite then
    local v = norm:item() -- the check itself needs the value
    if v ~= v or v == math.huge or v == -math.huge then
      E.raise(("RuntimeError: %s: the total norm of order %s of the tensors is %s, so they cannot "
        .. "be clipped; pass error_if_nonfinite = false to clip anyway"):format(fname,
        tostring(norm_type), tostring(v)))
    end
  end
  local coef = (max_norm / (norm + 1e-6)):clamp(nil, 1.0)
  local out = scaled(x, n, coef)
  if single then return out[1] end
  return out
end

--- The bound of clip_by_value: nil, a number or a Tensor.
local function check_bound(fname, what, v)
  if v == nil or type(v) == "number" then return v end
  if core.is_tensor(v) then
    if v.dtype.name == "bool" then
      E.raise(("TypeError: %s: %s must be a number or a numeric Tensor, but got a bool Tensor")
        :format(fname, what))
    end
    return v
  end
  E.type_error(fname, what, "a number, a Tensor or nil", v)
end

local function clip_one(t, lo, hi)
  if not core.is_tensor(lo) and not core.is_tensor(hi) then
    if lo ~= nil and hi ~= nil and lo > hi then return t:clamp(hi, hi) end -- MindSpore: max
    return t:clamp(lo, hi)
  end
  -- where, not maximum/minimum: at a bound the gradient goes whole to x (a
  -- tie in maximum splits it), to a bound only where x is past it, as
  -- PyTorch's clamp gives it; where min > max, max wins
  local r = t
  if lo ~= nil then r = core.where(r:lt(lo), lo, r) end
  if hi ~= nil then r = core.where(r:gt(hi), hi, r) end
  return r
end

--- cell.ops.clip_by_value(x, clip_value_min, clip_value_max): x (a Tensor
-- or a list of them) limited to [min, max] elementwise; either bound may
-- be nil (not both), a number or a Tensor that broadcasts; where min > max
-- the result is max.
function M.clip_by_value(x, clip_value_min, clip_value_max)
  local fname = "clip_by_value"
  check_bound(fname, "clip_value_min", clip_value_min)
  check_bound(fname, "clip_value_max", clip_value_max)
  if clip_value_min == nil and clip_value_max == nil then
    E.raise(("ValueError: %s: clip_value_min and clip_value_max cannot both be nil"):format(fname))
  end
  if core.is_tensor(x) then
    if x.dtype.name == "bool" then
      E.raise(("TypeError: %s: x must be a numeric Tensor, but got a bool Tensor"):format(fname))
    end
    return clip_one(x, clip_value_min, clip_value_max)
  end
  if not is_list(x) then E.type_error(fname, "x", "a Tensor or a list of Tensors", x) end
  local out = {}
  for i = 1, #x do
    local t = x[i]
    if not core.is_tensor(t) then E.type_error(fname, ("x[%d]"):format(i), "a Tensor", t) end
    out[i] = clip_one(t, clip_value_min, clip_value_max)
  end
  return out
end

return M
