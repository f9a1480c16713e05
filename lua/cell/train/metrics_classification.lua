--- cell.train's classification metrics, as MindSpore's nn.metrics:
-- Precision, Recall, Fbeta, F1, TopKCategoricalAccuracy (Top1, Top5) and
-- ConfusionMatrix, each with clear / update / eval.
--
--     local p = cell.train.Precision()
--     p:update(logits, labels)   -- logits {N, C}; labels {N} class ids 1..C, or {N, C} one-hot
--     p:eval()                   --> Tensor {C} (float64), the precision of each class
--     p:eval(true)               --> their mean, a number
--
-- The counts are kept on the host as Lua numbers; update reads each batch
-- once (Tensor:tolist). Class ids are 1-based, as everywhere in cell.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local Metric = require("cell.train.metrics").Metric

local type_name = T.type_name
local floor = math.floor

local M = {}

--- A value from a tensor, written the same on Lua 5.4 and LuaJIT (3, 0.5).
local function num(v) return ("%.10g"):format(v) end

-- Python's sys.float_info.min, which MindSpore adds to denominators.
local EPS = 2.2250738585072014e-308

local function check_tensors(cls, y_pred, y)
  if not core.is_tensor(y_pred) or not core.is_tensor(y) then
    raise(("TypeError: For '%s.update', y_pred and y must be Tensors, but got %s and %s.")
      :format(cls, type_name(y_pred), type_name(y)))
  end
end

--- (predicted ids, true ids, C) of a classification batch: y_pred {N, C}
-- scores; y {N} class ids in [1, C] or {N, C} one-hot (argmax taken).
local function class_ids(cls, y_pred, y)
  check_tensors(cls, y_pred, y)
  if y_pred.ndim ~= 2 then
    raise(("ValueError: For '%s.update', y_pred must have shape (N, C), but got %s.")
      :format(cls, T.shape_str(y_pred.shape)))
  end
  local n, c = y_pred.shape[1], y_pred.shape[2]
  local labels
  if y.ndim == 2 and T.same_shape(y.shape, y_pred.shape) then
    labels = y:argmax(2):tolist()
  elseif y.ndim == 1 and y.shape[1] == n then
    labels = y:tolist()
    for i = 1, n do
      local v = labels[i]
      if v ~= floor(v) or v < 1 or v > c then
        raise(("ValueError: For '%s.update', the labels must be class ids in [1, %d], but y[%d] is %s.")
          :format(cls, c, i, num(v)))
      end
      labels[i] = floor(v)
    end
  else
    raise(("ValueError: For '%s.update', y must have shape %s (class ids) or %s (one-hot), but got %s.")
      :format(cls, T.shape_str({ n }), T.shape_str(y_pred.shape), T.shape_str(y.shape)))
  end
  local pred = n > 0 and y_pred:argmax(2):tolist() or {}
  return pred, labels, c
end

local function zeros(n)
  local t = {}
  for i = 1, n do t[i] = 0 end
  return t
end

local function check_eval_type(cls, v)
  if v == nil then return "classification" end
  if v ~= "classification" and v ~= "multilabel" then
    raise(("ValueError: For '%s', the 'eval_type' must be 'classification' or 'multilabel', but got %s.")
      :format(cls, type(v) == "string" and ("'" .. v .. "'") or type_name(v)))
  end
  return v
end

-- Precision and Recall ----------------------------------------------------------------

--- The shared counts of Precision, Recall and Fbeta: per class, true
-- positives, predicted positives and actual positives.
local Counts = Metric:extend("ClassCounts")

function Counts:clear()
  self._tp, self._pos, self._act, self._classes = nil, nil, nil, nil
end

function Counts:_count(cls, y_pred, y)
  local tp, pos, act
  local function start(c)
    if self._classes == nil then
      self._classes = c
      self._tp, self._pos, self._act = zeros(c), zeros(c), zeros(c)
    elseif self._classes ~= c then
      raise(("ValueError: For '%s.update', y_pred has %d classes, but earlier batches had %d.")
        :format(cls, c, self._classes))
    end
    return self._tp, self._pos, self._act
  end
  if self.eval_type == "multilabel" then
    check_tensors(cls, y_pred, y)
    if y_pred.ndim ~= 2 or not T.same_shape(y_pred.shape, y.shape) then
      raise(("ValueError: For '%s.update', with eval_type 'multilabel' y_pred and y must have one shape (N, C), "
        .. "but got %s and %s."):format(cls, T.shape_str(y_pred.shape), T.shape_str(y.shape)))
    end
    tp, pos, act = start(y_pred.shape[2])
    local p, t = y_pred:tolist(), y:tolist()
    for i = 1, #p do
      for j = 1, #p[i] do
        local a, b = p[i][j], t[i][j]
        if (a ~= 0 and a ~= 1) or (b ~= 0 and b ~= 1) then
          raise(("ValueError: For '%s.update', with eval_type 'multilabel' y_pred and y must hold 0 and 1, "
            .. "but got %s and %s at [%d, %d]."):format(cls, num(a), num(b), i, j))
        end
        pos[j], act[j], tp[j] = pos[j] + a, act[j] + b, tp[j] + a * b
      end
    end
    return
  end
  local pred, labels, c = class_ids(cls, y_pred, y)
  tp, pos, act = start(c)
  for i = 1, #pred do
    local p, t = pred[i], labels[i]
    pos[p] = pos[p] + 1
    act[t] = act[t] + 1
    if p == t then tp[p] = tp[p] + 1 end
  end
end

function Counts:_sync(sum)
  if self._classes == nil then return end
  for i = 1, self._classes do
    self._tp[i], self._pos[i], self._act[i] = sum(self._tp[i]), sum(self._pos[i]), sum(self._act[i])
  end
end

--- The per-class values as a float64 Tensor, or (average) their mean.
local function result(cls, self, average, f)
  if average ~= nil and type(average) ~= "boolean" then
    raise(("TypeError: For '%s.eval', the 'average' must be a boolean, but got %s."):format(cls, type_name(average)))
  end
  if self._classes == nil then
    raise(("RuntimeError: The '%s' can not be calculated, because the number of samples is 0."):format(cls))
  end
  local v = {}
  local s = 0
  for i = 1, self._classes do
    v[i] = f(self._tp[i], self._pos[i], self._act[i])
    s = s + v[i]
  end
  if average then return s / self._classes end
  return core.tensor(v, core.float64)
end

local function init_counts(cls, self, ...)
  local eval_type = args_util.parse(cls, { "eval_type" }, 4, select("#", ...), ...)
  self.eval_type = check_eval_type(cls, eval_type)
  self:clear()
end

local Precision = Counts:extend("Precision")
M.Precision = Precision

--- Precision([eval_type = "classification"]): per class, the fraction of
-- the samples predicted as the class that are of it.
function Precision:init(...) init_counts("Precision", self, ...) end
--- update(y_pred, y): a batch of scores {N, C} and labels.
function Precision:update(y_pred, y) self:_count("Precision", y_pred, y) end
--- eval([average = false]): a float64 Tensor {C}, or their mean.
function Precision:eval(average)
  return result("Precision", self, average, function(tp, pos) return tp / (pos + EPS) end)
end

local Recall = Counts:extend("Recall")
M.Recall = Recall

--- Recall([eval_type = "classification"]): per class, the fraction of the
-- samples of the class that are predicted as it.
function Recall:init(...) init_counts("Recall", self, ...) end
--- update(y_pred, y): a batch of scores {N, C} and labels.
function Recall:update(y_pred, y) self:_count("Recall", y_pred, y) end
--- eval([average = false]): a float64 Tensor {C}, or their mean.
function Recall:eval(average)
  return result("Recall", self, average, function(tp, _, act) return tp / (act + EPS) end)
end

-- Fbeta and F1 ---------------------------------------------------------------------------

local Fbeta = Counts:extend("Fbeta")
M.Fbeta = Fbeta

--- Fbeta(beta): per class (1 + beta^2) * tp / (beta^2 * actual + predicted),
-- the weighted harmonic mean of precision and recall.
function Fbeta:init(beta)
  if type(beta) ~= "number" or beta ~= beta or beta == math.huge then
    raise(("TypeError: For 'Fbeta', the 'beta' must be a finite number, but got %s.")
      :format(type(beta) == "number" and tostring(beta) or type_name(beta)))
  end
  if beta <= 0 then
    raise(("ValueError: For 'Fbeta', the 'beta' must be greater than 0, but got %s."):format(tostring(beta)))
  end
  self.beta = beta
  self.eval_type = "classification"
  self:clear()
end

--- update(y_pred, y): a batch of scores {N, C} and labels.
function Fbeta:update(y_pred, y) self:_count(T.class_name(self), y_pred, y) end

--- eval([average = false]): a float64 Tensor {C}, or their mean.
function Fbeta:eval(average)
  local b2 = self.beta * self.beta
  return result(T.class_name(self), self, average, function(tp, pos, act)
    return (1 + b2) * tp / (b2 * act + pos + EPS)
  end)
end

local F1 = Fbeta:extend("F1")
M.F1 = F1

--- F1(): Fbeta with beta = 1.
function F1:init() Fbeta.init(self, 1) end

-- TopKCategoricalAccuracy --------------------------------------------------------------

local TopK = Metric:extend("TopKCategoricalAccuracy")
M.TopKCategoricalAccuracy = TopK

--- TopKCategoricalAccuracy(k): the fraction of samples whose label is
-- among the k highest scores.
function TopK:init(k)
  if type(k) ~= "number" or k ~= floor(k) or k == math.huge then
    raise(("TypeError: For 'TopKCategoricalAccuracy', the 'k' must be an integer, but got %s.")
      :format(type(k) == "number" and tostring(k) or type_name(k)))
  end
  if k < 1 then
    raise(("ValueError: For 'TopKCategoricalAccuracy', the 'k' must be at least 1, but got %d."):format(k))
  end
  self.k = k
  self:clear()
end

function TopK:clear() self._correct, self._total = 0, 0 end

--- update(y_pred, y): scores {N, C} (C >= k) and labels.
function TopK:update(y_pred, y)
  local cls = T.class_name(self)
  local _, labels, c = class_ids(cls, y_pred, y)
  if c < self.k then
    raise(("ValueError: For '%s.update', y_pred has %d classes, fewer than k = %d."):format(cls, c, self.k))
  end
  local n = #labels
  if n == 0 then return end
  local _, idx = y_pred:topk(self.k, 2)
  local top = idx:tolist()
  for i = 1, n do
    for j = 1, self.k do
      if top[i][j] == labels[i] then
        self._correct = self._correct + 1
        break
      end
    end
  end
  self._total = self._total + n
end

function TopK:_sync(sum) self._correct, self._total = sum(self._correct), sum(self._total) end

--- eval(): the fraction of samples with the label in their top k.
function TopK:eval()
  if self._total == 0 then
    raise(("RuntimeError: The '%s' can not be calculated, because the number of samples is 0.")
      :format(T.class_name(self)))
  end
  return self._correct / self._total
end

local Top1 = TopK:extend("Top1CategoricalAccuracy")
M.Top1CategoricalAccuracy = Top1
--- Top1CategoricalAccuracy(): TopKCategoricalAccuracy(1).
function Top1:init() TopK.init(self, 1) end

local Top5 = TopK:extend("Top5CategoricalAccuracy")
M.Top5CategoricalAccuracy = Top5
--- Top5CategoricalAccuracy(): TopKCategoricalAccuracy(5).
function Top5:init() TopK.init(self, 5) end

-- ConfusionMatrix ------------------------------------------------------------------------

local ConfusionMatrix = Metric:extend("ConfusionMatrix")
M.ConfusionMatrix = ConfusionMatrix

local NORMS = { no_norm = true, target = true, prediction = true, all = true }

--- ConfusionMatrix(num_classes [, normalize = "no_norm", threshold = 0.5])
-- (or options): counts[i][j] of samples of class i predicted as class j.
function ConfusionMatrix:init(...)
  local num_classes, normalize, threshold = args_util.parse("ConfusionMatrix",
    { "num_classes", "normalize", "threshold" }, 3, select("#", ...), ...)
  if type(num_classes) ~= "number" or num_classes ~= floor(num_classes) or num_classes == math.huge then
    raise(("TypeError: For 'ConfusionMatrix', the 'num_classes' must be an integer, but got %s.")
      :format(type(num_classes) == "number" and tostring(num_classes) or type_name(num_classes)))
  end
  if num_classes < 1 then
    raise(("ValueError: For 'ConfusionMatrix', the 'num_classes' must be at least 1, but got %d."):format(num_classes))
  end
  if normalize == nil then normalize = "no_norm" end
  if not NORMS[normalize] then
    raise(("ValueError: For 'ConfusionMatrix', the 'normalize' must be one of 'no_norm', 'target', 'prediction', "
      .. "'all', but got %s."):format(type(normalize) == "string" and ("'" .. normalize .. "'") or type_name(normalize)))
  end
  if threshold == nil then threshold = 0.5 end
  if type(threshold) ~= "number" or threshold ~= threshold then
    raise(("TypeError: For 'ConfusionMatrix', the 'threshold' must be a number, but got %s.")
      :format(type(threshold) == "number" and tostring(threshold) or type_name(threshold)))
  end
  self.num_classes, self.normalize, self.threshold = num_classes, normalize, threshold
  self:clear()
end

function ConfusionMatrix:clear()
  local c = self.num_classes or 0
  self._m = {}
  for i = 1, c do self._m[i] = zeros(c) end
  self._total = 0
end

local function flat(t, out)
  if type(t) ~= "table" then
    out[#out + 1] = t
    return out
  end
  for i = 1, #t do flat(t[i], out) end
  return out
end

--- update(y_pred, y): y_pred {N, C, ...} scores (argmax over dimension 2)
-- with y {N, ...} class ids; or y_pred of y's shape, probabilities
-- (class 2 where > threshold, else 1) or class ids.
function ConfusionMatrix:update(y_pred, y)
  check_tensors("ConfusionMatrix", y_pred, y)
  local c = self.num_classes
  local pred
  if y_pred.ndim == y.ndim + 1 then
    if y_pred.shape[2] ~= c then
      raise(("ValueError: For 'ConfusionMatrix.update', y_pred has %d classes in dimension 2, but num_classes is %d.")
        :format(y_pred.shape[2], c))
    end
    pred = flat(y_pred:argmax(2):tolist(), {})
    local want = {}
    for i = 1, y_pred.ndim do if i ~= 2 then want[#want + 1] = y_pred.shape[i] end end
    if not T.same_shape(want, y.shape) then
      raise(("ValueError: For 'ConfusionMatrix.update', y must have shape %s for y_pred %s, but got %s.")
        :format(T.shape_str(want), T.shape_str(y_pred.shape), T.shape_str(y.shape)))
    end
  elseif T.same_shape(y_pred.shape, y.shape) then
    pred = flat(y_pred:tolist(), {})
    if y_pred.dtype.is_floating_point then
      local ids = true
      for i = 1, #pred do
        if pred[i] ~= floor(pred[i]) or pred[i] < 1 then ids = false break end
      end
      if not ids then
        for i = 1, #pred do pred[i] = pred[i] > self.threshold and 2 or 1 end
      end
    end
  else
    raise(("ValueError: For 'ConfusionMatrix.update', y_pred must have y's shape %s or one more dimension, "
      .. "but got %s."):format(T.shape_str(y.shape), T.shape_str(y_pred.shape)))
  end
  local labels = flat(y:tolist(), {})
  for i = 1, #labels do
    local t, p = labels[i], pred[i]
    if t ~= floor(t) or t < 1 or t > c or p ~= floor(p) or p < 1 or p > c then
      raise(("ValueError: For 'ConfusionMatrix.update', class ids must be in [1, %d], but sample %d has label %s "
        .. "and prediction %s."):format(c, i, num(t), num(p)))
    end
    self._m[t][p] = self._m[t][p] + 1
  end
  self._total = self._total + #labels
end

function ConfusionMatrix:_sync(sum)
  for i = 1, self.num_classes do
    for j = 1, self.num_classes do self._m[i][j] = sum(self._m[i][j]) end
  end
  self._total = sum(self._total)
end

--- eval(): a float64 Tensor {num_classes, num_classes}: rows the true
-- class, columns the predicted one; normalized by row ("target"), by
-- column ("prediction") or by the total ("all").
function ConfusionMatrix:eval()
  if self._total == 0 then
    raise("RuntimeError: The 'ConfusionMatrix' can not be calculated, because the number of samples is 0.")
  end
  local c, m = self.num_classes, self._m
  local out = {}
  for i = 1, c do
    out[i] = {}
    for j = 1, c do
      local v, d = m[i][j], 1
      if self.normalize == "target" then
        d = 0
        for k = 1, c do d = d + m[i][k] end
      elseif self.normalize == "prediction" then
        d = 0
        for k = 1, c do d = d + m[k][j] end
      elseif self.normalize == "all" then
        d = self._total
      end
      out[i][j] = d > 0 and v / d or 0
    end
  end
  return core.tensor(out, core.float64)
end

return M
