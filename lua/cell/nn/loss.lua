--- cell.nn loss cells as MindSpore 2.x defines them: MSELoss, L1Loss,
-- CrossEntropyLoss, SoftmaxCrossEntropyWithLogits, NLLLoss and
-- BCEWithLogitsLoss, called as loss(logits, labels), on the fused ops of
-- cell.ops. Each takes reduction "mean" (the default, except
-- SoftmaxCrossEntropyWithLogits: "none", as MindSpore), "sum" or "none".
--
-- Class labels count from 1: an integer label c picks class c of the
-- logits' dimension 2 (of dimension 1 for unbatched {C} logits, whose label
-- is 0-D; a label outside 1..C is an IndexError). As in
-- MindSpore, the samples labelled -100 are left out unless ignore_index
-- names another label k (0 works too, as it is never a class). Options come
-- as a trailing table
-- (CrossEntropyLoss{weight = w, label_smoothing = 0.1}) or positionally in
-- MindSpore's order.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"

local M = {}

local shape_str, type_name = T.shape_str, T.type_name

--- LossBase: the reduction every loss keeps (MindSpore's base class).
local LossBase = Cell:extend("LossBase")
M.LossBase = LossBase

--- Check that logits and labels are Tensors.
local function check_inputs(cls, logits, labels, lvl)
  A.tensor(cls, "logits", logits, lvl + 1)
  A.tensor(cls, "labels", labels, lvl + 1)
end

local function is_int_tensor(t) return not t.dtype.is_floating_point end

--- The class weight option: nil or a 1-D Tensor.
local function check_weight(cls, w, lvl)
  A.tensor(cls, "weight", w, lvl + 1, true)
  if w ~= nil and w.ndim ~= 1 then
    raise(("ValueError: For '%s', the 'weight' must be a 1-D Tensor of one weight per class, but got shape %s.")
      :format(cls, shape_str(w.shape)))
  end
  return w
end

local function check_ignore(cls, v, lvl)
  if v ~= nil and (type(v) ~= "number" or not T.is_int(v)) then
    raise(("TypeError: For '%s', the 'ignore_index' must be an integer or nil, but got %s.")
      :format(cls, type(v) == "number" and T.num_str(v) or type_name(v)))
  end
  return v
end

--- Check class-id or probability labels against {N, C, d...} logits, or
-- unbatched {C} logits (MindSpore's and PyTorch's class dimension is then
-- the first): a 0-D class id or {C} probabilities.
local function check_class_labels(cls, logits, labels, weight, allow_probs, lvl)
  local ls, ts = logits.shape, labels.shape
  if #ls < 1 then
    raise(("ValueError: For '%s', the logits must be {C}, {N, C} or {N, C, d...}, but got shape %s.")
      :format(cls, shape_str(ls)))
  end
  local cdim = #ls == 1 and 1 or 2
  if is_int_tensor(labels) then
    local want = {}
    for i = 1, #ls do
      if i ~= cdim then want[#want + 1] = ls[i] end
    end
    if labels.dtype == core.bool or not T.same_shape(ts, want) then
      raise(("ValueError: For '%s', class-id labels must be an integer Tensor of the logits' shape without the "
        .. "class dimension, %s for logits %s, but got %s of shape %s."):format(cls, shape_str(want), shape_str(ls),
          tostring(labels.dtype), shape_str(ts)))
    end
  elseif not allow_probs then
    raise(("TypeError: For '%s', the labels must be an integer Tensor of class ids (1 to C), but got %s.")
      :format(cls, tostring(labels.dtype)))
  elseif not T.same_shape(ts, ls) then
    raise(("ValueError: For '%s', probability labels must have the logits' shape %s, but got %s.")
      :format(cls, shape_str(ls), shape_str(ts)))
  end
  if weight ~= nil and weight.shape[1] ~= ls[cdim] then
    raise(("ValueError: For '%s', the 'weight' must have one value per class, shape (%d,), but got %s.")
      :format(cls, ls[cdim], shape_str(weight.shape)))
  end
end

-- MSELoss and L1Loss ------------------------------------------------------------

local function elementwise_loss(name, op_name)
  local C = LossBase:extend(name)
  --- (reduction = "mean") or {reduction = }.
  function C:init(...)
    local reduction = A.args(name, { "reduction" }, select("#", ...), ...)
    self.reduction = A.reduction(name, reduction, 3)
  end
  function C:construct(logits, labels)
    check_inputs(name, logits, labels, 2)
    if not A.broadcast_shape(logits.shape, labels.shape) then
      raise(("ValueError: For '%s', the shapes of logits %s and labels %s can not broadcast.")
        :format(name, shape_str(logits.shape), shape_str(labels.shape)))
    end
    local y = ops[op_name](logits, labels, self.reduction)
    return y
  end
  M[name] = C
end

elementwise_loss("MSELoss", "mse_loss")
elementwise_loss("L1Loss", "l1_loss")

-- CrossEntropyLoss and NLLLoss ------------------------------------------------

local CrossEntropyLoss = LossBase:extend("CrossEntropyLoss")
M.CrossEntropyLoss = CrossEntropyLoss

--- CrossEntropyLoss([weight, ignore_index, reduction = "mean", label_smoothing = 0])
-- or CrossEntropyLoss{...}. Labels: class ids {N} (or {N, d...}), or class
-- probabilities of the logits' shape; unbatched {C} logits take a 0-D class
-- id or {C} probabilities.
function CrossEntropyLoss:init(...)
  local weight, ignore_index, reduction, label_smoothing =
    A.args("CrossEntropyLoss", { "weight", "ignore_index", "reduction", "label_smoothing" }, select("#", ...), ...)
  self.weight = check_weight("CrossEntropyLoss", weight, 3)
  self.ignore_index = check_ignore("CrossEntropyLoss", ignore_index, 3)
  self.reduction = A.reduction("CrossEntropyLoss", reduction, 3)
  label_smoothing = A.number("CrossEntropyLoss", "label_smoothing", label_smoothing, 0, 3)
  if label_smoothing < 0 or label_smoothing > 1 then
    raise(("ValueError: For 'CrossEntropyLoss', the 'label_smoothing' must be in range [0, 1], but got %s.")
      :format(T.num_str(label_smoothing)))
  end
  self.label_smoothing = label_smoothing
end

function CrossEntropyLoss:construct(logits, labels)
  check_inputs("CrossEntropyLoss", logits, labels, 2)
  check_class_labels("CrossEntropyLoss", logits, labels, self.weight, true, 2)
  local y = ops.cross_entropy(logits, labels, { reduction = self.reduction, weight = self.weight,
    ignore_index = self.ignore_index, label_smoothing = self.label_smoothing })
  return y
end

local NLLLoss = LossBase:extend("NLLLoss")
M.NLLLoss = NLLLoss

--- NLLLoss([weight, ignore_index, reduction = "mean"]) or NLLLoss{...}: the
-- logits are log-probabilities (LogSoftmax's output), labels class ids.
function NLLLoss:init(...)
  local weight, ignore_index, reduction =
    A.args("NLLLoss", { "weight", "ignore_index", "reduction" }, select("#", ...), ...)
  self.weight = check_weight("NLLLoss", weight, 3)
  self.ignore_index = check_ignore("NLLLoss", ignore_index, 3)
  self.reduction = A.reduction("NLLLoss", reduction, 3)
end

function NLLLoss:construct(logits, labels)
  check_inputs("NLLLoss", logits, labels, 2)
  check_class_labels("NLLLoss", logits, labels, self.weight, false, 2)
  local y = ops.nll_loss(logits, labels, { reduction = self.reduction, weight = self.weight,
    ignore_index = self.ignore_index })
  return y
end

-- SoftmaxCrossEntropyWithLogits ------------------------------------------------

local SoftmaxCE = LossBase:extend("SoftmaxCrossEntropyWithLogits")
M.SoftmaxCrossEntropyWithLogits = SoftmaxCE

--- SoftmaxCrossEntropyWithLogits([sparse = false, reduction = "none"]) or {...}:
-- logits {N, C}; labels class ids {N} when sparse, else {N, C} (one-hot or
-- probabilities).
function SoftmaxCE:init(...)
  local sparse, reduction =
    A.args("SoftmaxCrossEntropyWithLogits", { "sparse", "reduction" }, select("#", ...), ...)
  self.sparse = A.bool("SoftmaxCrossEntropyWithLogits", "sparse", sparse, false, 3)
  self.reduction = A.reduction("SoftmaxCrossEntropyWithLogits", reduction, 3, "none")
end

function SoftmaxCE:construct(logits, labels)
  local cls = "SoftmaxCrossEntropyWithLogits"
  check_inputs(cls, logits, labels, 2)
  local ls, ts = logits.shape, labels.shape
  if #ls ~= 2 then
    raise(("ValueError: For '%s', the logits must be 2-D {N, C}, but got shape %s."):format(cls, shape_str(ls)))
  end
  if self.sparse then
    if not is_int_tensor(labels) or labels.dtype == core.bool or #ts ~= 1 or ts[1] ~= ls[1] then
      raise(("ValueError: For '%s', with sparse = true the labels must be integer class ids of shape (%d,), but "
        .. "got %s of shape %s."):format(cls, ls[1], tostring(labels.dtype), shape_str(ts)))
    end
  else
    if not T.same_shape(ts, ls) then
      raise(("ValueError: For '%s', with sparse = false the labels must have the logits' shape %s, but got %s.")
        :format(cls, shape_str(ls), shape_str(ts)))
    end
    if labels.dtype ~= logits.dtype then labels = labels:astype(logits.dtype) end
  end
  local y = ops.cross_entropy(logits, labels, { reduction = self.reduction })
  return y
end

-- BCEWithLogitsLoss --------------------------------------------------------------

local BCEWithLogitsLoss = LossBase:extend("BCEWithLogitsLoss")
M.BCEWithLogitsLoss = BCEWithLogitsLoss

--- BCEWithLogitsLoss([reduction = "mean", weight, pos_weight]) or {...}:
-- weight (per element) and pos_weight (per class, the last dimension)
-- broadcast to the logits' shape.
function BCEWithLogitsLoss:init(...)
  local reduction, weight, pos_weight =
    A.args("BCEWithLogitsLoss", { "reduction", "weight", "pos_weight" }, select("#", ...), ...)
  self.reduction = A.reduction("BCEWithLogitsLoss", reduction, 3)
  self.weight = A.tensor("BCEWithLogitsLoss", "weight", weight, 3, true)
  self.pos_weight = A.tensor("BCEWithLogitsLoss", "pos_weight", pos_weight, 3, true)
end

function BCEWithLogitsLoss:construct(logits, labels)
  local cls = "BCEWithLogitsLoss"
  check_inputs(cls, logits, labels, 2)
  if not T.same_shape(logits.shape, labels.shape) then
    raise(("ValueError: For '%s', the logits and labels must have the same shape, but got %s and %s.")
      :format(cls, shape_str(logits.shape), shape_str(labels.shape)))
  end
  for _, what in ipairs { "weight", "pos_weight" } do
    local w = self[what]
    if w ~= nil then
      local b = A.broadcast_shape(w.shape, logits.shape)
      if not b or not T.same_shape(b, logits.shape) then
        raise(("ValueError: For '%s', the '%s' of shape %s can not broadcast to the logits' shape %s.")
          :format(cls, what, shape_str(w.shape), shape_str(logits.shape)))
      end
    end
  end
  if labels.dtype ~= logits.dtype then labels = labels:astype(logits.dtype) end
  local y = ops.bce_with_logits(logits, labels, { reduction = self.reduction, weight = self.weight,
    pos_weight = self.pos_weight })
  return y
end

return M
