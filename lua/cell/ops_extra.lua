--- cell.ops.group_norm, instance_norm, rms_norm, prelu and ctc_loss: the
-- functional normalisations of MindSpore 2.7 beyond batch_norm and
-- layer_norm, PReLU's op and the CTC loss. The normalisations
-- run on the fused layer_norm kernel (forward and backward in C) over the
-- input viewed as {N, groups, rest}, then the per-channel affine.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"
local raise = require("cell.errors").raise
local T = require "cell.util.types"

local M = {}
local nn = core.nnops

local function tensor_arg(fn, what, v, optional)
  if v == nil and optional then return nil end
  if not core.is_tensor(v) then
    raise(("TypeError: For '%s', the '%s' must be a Tensor, but got %s."):format(fn, what, T.type_name(v)))
  end
  return v
end

local function number_arg(fn, what, v, default)
  if v == nil then return default end
  if type(v) ~= "number" then
    raise(("TypeError: For '%s', the '%s' must be a number, but got %s."):format(fn, what, T.type_name(v)))
  end
  return v
end

--- Per-channel affine: y * weight + bias with {C} tensors on dimension 2.
local function channel_affine(fn, y, weight, bias, c, nd)
  local ws = { c }
  for _ = 3, nd do ws[#ws + 1] = 1 end
  for what, t in pairs { weight = weight, bias = bias } do
    if t ~= nil and (t.ndim ~= 1 or t.shape[1] ~= c) then
      raise(("ValueError: For '%s', the '%s' must have shape (%d,), but got %s."):format(fn, what, c,
        T.shape_str(t.shape)))
    end
  end
  if weight ~= nil then y = y * weight:reshape(ws) end
  if bias ~= nil then y = y + bias:reshape(ws) end
  return y
end

--- group_norm(input, num_groups [, weight [, bias [, eps = 1e-5]]]): input
-- {N, C, *} normalised over each group of C / num_groups channels.
function M.group_norm(input, num_groups, weight, bias, eps)
  tensor_arg("group_norm", "input", input)
  tensor_arg("group_norm", "weight", weight, true)
  tensor_arg("group_norm", "bias", bias, true)
  eps = number_arg("group_norm", "eps", eps, 1e-5)
  local shape = input.shape
  if #shape < 2 then
    raise(("ValueError: For 'group_norm', the input must be {N, C, *} (at least 2-D), but got %s.")
      :format(T.shape_str(shape)))
  end
  if type(num_groups) ~= "number" or not T.is_int(num_groups) or num_groups < 1 then
    raise(("ValueError: For 'group_norm', the 'num_groups' must be a positive integer, but got %s.")
      :format(tostring(num_groups)))
  end
  local c = shape[2]
  if c % num_groups ~= 0 then
    raise(("ValueError: For 'group_norm', the number of channels (%d) must be divisible by 'num_groups' (%d).")
      :format(c, num_groups))
  end
  if not input.dtype.is_floating_point then
    raise(("TypeError: For 'group_norm', the input must be a float Tensor, but got %s."):format(tostring(input.dtype)))
  end
  local n = shape[1]
  local y
  if input:numel() == 0 then
    y = input * 1
  else
    y = nn.layer_norm(input:reshape { n, num_groups, -1 }, 1, nil, nil, eps):reshape(shape)
  end
  return channel_affine("group_norm", y, weight, bias, c, #shape)
end

--- instance_norm(input [, weight [, bias [, eps = 1e-5]]]): each channel of
-- each sample normalised over its own spatial values (group_norm with one
-- group per channel).
function M.instance_norm(input, weight, bias, eps)
  tensor_arg("instance_norm", "input", input)
  if input.ndim < 3 then
    raise(("ValueError: For 'instance_norm', the input must be {N, C, *} with at least one spatial dimension, "
      .. "but got %s."):format(T.shape_str(input.shape)))
  end
  return M.group_norm(input, input.shape[2], weight, bias, eps)
end

--- rms_norm(x, gamma [, epsilon = 1e-6]): x / sqrt(mean(x^2) + epsilon) *
-- gamma over x's last gamma.ndim dimensions (which must be gamma's shape);
-- returns y and rstd (1 / sqrt(mean(x^2) + epsilon), kept dimensions of 1).
function M.rms_norm(x, gamma, epsilon)
  tensor_arg("rms_norm", "x", x)
  tensor_arg("rms_norm", "gamma", gamma)
  epsilon = number_arg("rms_norm", "epsilon", epsilon, 1e-6)
  if not (epsilon > 0) then
    raise(("ValueError: For 'rms_norm', the 'epsilon' must be greater than 0, but got %s."):format(T.num_str(epsilon)))
  end
  if not x.dtype.is_floating_point or gamma.dtype ~= x.dtype then
    raise(("TypeError: For 'rms_norm', x and gamma must share one float dtype, but got %s and %s.")
      :format(tostring(x.dtype), tostring(gamma.dtype)))
  end
  local xs, gs = x.shape, gamma.shape
  local k = #gs
  local ok = k >= 1 and k <= #xs
  for i = 1, k do
    if ok and xs[#xs - k + i] ~= gs[i] then ok = false end
  end
  if not ok then
    raise(("ValueError: For 'rms_norm', the gamma's shape %s must be the last dimensions of x's shape %s.")
      :format(T.shape_str(gs), T.shape_str(xs)))
  end
  local dims = {}
  for i = #xs - k + 1, #xs do dims[#dims + 1] = i end
  local rstd = ((x * x):mean(dims, true) + epsilon):rsqrt()
  return x * rstd * gamma, rstd
end

--- prelu(x, weight): max(0, x) + weight min(0, x); weight {1} or {C} (the
-- channels, dimension 2 of x).
function M.prelu(x, weight)
  tensor_arg("prelu", "x", x)
  tensor_arg("prelu", "weight", weight)
  local c = weight:numel()
  local w = weight
  if x.ndim >= 2 then
    if c ~= 1 and c ~= x.shape[2] then
      raise(("ValueError: For 'prelu', the weight must have 1 or C (%d) values, but got shape %s.")
        :format(x.shape[2], T.shape_str(weight.shape)))
    end
    local ws = { c }
    for _ = 3, x.ndim do ws[#ws + 1] = 1 end
    w = weight:reshape(ws)
  elseif c ~= 1 then
    raise(("ValueError: For 'prelu', a 0-D or 1-D x takes one weight, but got shape %s.")
      :format(T.shape_str(weight.shape)))
  end
  return x:relu() - (-x):relu() * w
end

local function int_tensor(fn, what, v)
  if type(v) == "table" and not core.is_tensor(v) then
    for i = 1, #v do
      if type(v[i]) ~= "number" or not T.is_int(v[i]) then
        raise(("TypeError: For '%s', the '%s' must be integers, but got %s."):format(fn, what, T.type_name(v[i])))
      end
    end
    return core.tensor(v, core.int64)
  end
  tensor_arg(fn, what, v)
  if v.dtype.is_floating_point or v.dtype == core.bool then
    raise(("TypeError: For '%s', the '%s' must be an integer Tensor, but got %s."):format(fn, what, tostring(v.dtype)))
  end
  return v
end

--- ctc_loss(log_probs, targets, input_lengths, target_lengths [, blank = 1
-- [, reduction = "mean" [, zero_infinity = false]]]) or with an options
-- table: log_probs {T, N, C}; targets {N, S} padded or 1-D concatenated,
-- 1-based class ids; lengths {N} (Tensors or lists). "mean" divides each
-- loss by its target length (at least 1) before the batch mean.
local CTC_ARGS = { "blank", "reduction", "zero_infinity" }
function M.ctc_loss(log_probs, targets, input_lengths, target_lengths, ...)
  local blank, reduction, zero_infinity = require("cell.util.args").parse("ctc_loss", CTC_ARGS, 3,
    select("#", ...), ...)
  tensor_arg("ctc_loss", "log_probs", log_probs)
  targets = int_tensor("ctc_loss", "targets", targets)
  input_lengths = int_tensor("ctc_loss", "input_lengths", input_lengths)
  target_lengths = int_tensor("ctc_loss", "target_lengths", target_lengths)
  if blank == nil then blank = 1 end
  if type(blank) ~= "number" or not T.is_int(blank) then
    raise(("TypeError: For 'ctc_loss', the 'blank' must be an integer, but got %s."):format(T.type_name(blank)))
  end
  if reduction == nil then reduction = "mean" end
  if reduction ~= "mean" and reduction ~= "sum" and reduction ~= "none" then
    raise(("ValueError: For 'ctc_loss', the 'reduction' must be 'mean', 'sum' or 'none', but got %s.")
      :format(tostring(reduction)))
  end
  if zero_infinity ~= nil and type(zero_infinity) ~= "boolean" then
    raise(("TypeError: For 'ctc_loss', the 'zero_infinity' must be a boolean, but got %s.")
      :format(T.type_name(zero_infinity)))
  end
  local loss = nn._ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity == true)
  if reduction == "sum" then return loss:sum() end
  if reduction == "mean" then
    return (loss / target_lengths:astype(loss.dtype):clamp(1)):mean()
  end
  return loss
end

return M
