--- cell.train's metrics, as MindSpore's: Metric (the protocol clear /
-- update / eval), Accuracy and Loss. Model.eval updates a Loss metric with
-- the batch loss and every other metric with (logits, labels).
--
--     local acc = cell.train.Accuracy()
--     acc:update(logits, labels)   -- logits {N, C}; labels {N} class ids 1..C, or {N, C} one-hot
--     acc:eval()                   --> fraction of rows whose argmax is the label
--     cell.train.Accuracy("multilabel")   -- y_pred, y 0/1 {N, C}: rows whose predictions all match
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local type_name = T.type_name

local M = {}

local Metric = class("Metric")
M.Metric = Metric

function Metric:init() self:clear() end
function Metric:clear() end
function Metric:update()
  raise(("NotImplementedError: %s has no update method"):format(T.class_name(self)))
end
function Metric:eval()
  raise(("NotImplementedError: %s has no eval method"):format(T.class_name(self)))
end
function Metric:__tostring() return T.class_name(self) .. "()" end

-- Accuracy ----------------------------------------------------------------------------

local Accuracy = Metric:extend("Accuracy")
M.Accuracy = Accuracy

local ACCURACY_OPTIONS = { "eval_type" }

--- Accuracy([eval_type = "classification"]) (or {eval_type = }): the fraction of samples whose
-- predicted class (argmax over dimension 2 of the logits) is the label;
-- with "multilabel", of samples whose 0/1 predictions all equal their 0/1 labels.
function Accuracy:init(...)
  local eval_type = args_util.parse("Accuracy", ACCURACY_OPTIONS, 3, select("#", ...), ...)
  if eval_type == nil then eval_type = "classification" end
  if eval_type ~= "classification" and eval_type ~= "multilabel" then
    raise(("ValueError: For 'Accuracy', the 'eval_type' must be 'classification' or 'multilabel', but got %s.")
      :format(type(eval_type) == "string" and ("'" .. eval_type .. "'") or type_name(eval_type)))
  end
  self.eval_type = eval_type
  self:clear()
end

function Accuracy:clear()
  self._correct, self._total = 0, 0
end

--- A value from a tensor, written the same on Lua 5.4 and LuaJIT (3, 0.5).
local function num(v) return ("%.10g"):format(v) end

--- The position ("[i, j, ...]", 1-based) of flat element k of a tensor of shape `shape`.
local function position(shape, k)
  local idx = {}
  k = k - 1
  for d = #shape, 1, -1 do
    idx[d] = k % shape[d] + 1
    k = math.floor(k / shape[d])
  end
  return "[" .. table.concat(idx, ", ") .. "]"
end

--- Multilabel update, as MindSpore's: y_pred and y of one shape (N, C,
-- ...) holding 0 and 1 (MindSpore's _check_value); a sample (each position
-- but dimension 2) is correct when its C predictions all equal its labels.
function Accuracy:_update_multilabel(y_pred, y)
  if not T.same_shape(y_pred.shape, y.shape) then
    raise(("ValueError: For 'Accuracy.update', with eval_type 'multilabel' y_pred and y must have one shape "
      .. "(N, C, ...), but got %s and %s."):format(T.shape_str(y_pred.shape), T.shape_str(y.shape)))
  end
  local p, t = y_pred:astype(core.float64), y:astype(core.float64)
  local bad = p:ne(0):logical_and(p:ne(1)):logical_or(t:ne(0):logical_and(t:ne(1)))
  if bad:any():item() then
    local fb, fp, ft = bad:reshape({ -1 }):tolist(), p:reshape({ -1 }):tolist(), t:reshape({ -1 }):tolist()
    for k = 1, #fb do
      if fb[k] then
        raise(("ValueError: For 'Accuracy.update', with eval_type 'multilabel' y_pred and y must hold 0 and 1, "
          .. "but got %s and %s at %s."):format(num(fp[k]), num(ft[k]), position(y_pred.shape, k)))
      end
    end
  end
  local rows = p:eq(t):all(2)
  self._correct = self._correct + rows:astype(core.int64):sum():item()
  self._total = self._total + rows:numel()
end

--- update(y_pred, y): y_pred {N, C, ...} scores; y {N, ...} class ids
-- (1-based) or scores of y_pred's shape (one-hot), whose argmax is taken.
-- With eval_type "multilabel", y_pred and y are 0/1 of one shape {N, C, ...}.
function Accuracy:update(y_pred, y)
  if not core.is_tensor(y_pred) or not core.is_tensor(y) then
    raise(("TypeError: For 'Accuracy.update', y_pred and y must be Tensors, but got %s and %s.")
      :format(type_name(y_pred), type_name(y)))
  end
  if y_pred.ndim < 2 then
    raise(("ValueError: For 'Accuracy.update', y_pred must have shape (N, C, ...), but got %s.")
      :format(T.shape_str(y_pred.shape)))
  end
  if self.eval_type == "multilabel" then return self:_update_multilabel(y_pred, y) end
  local pred = y_pred:argmax(2)
  local labels = y
  if y.ndim == y_pred.ndim then labels = y:argmax(2) end
  if not T.same_shape(labels.shape, pred.shape) then
    raise(("ValueError: For 'Accuracy.update', y must have shape %s (class ids) or %s (one-hot), but got %s.")
      :format(T.shape_str(pred.shape), T.shape_str(y_pred.shape), T.shape_str(y.shape)))
  end
  if labels.dtype.is_floating_point then labels = labels:round() end
  local correct = pred:eq(labels:astype(core.int64)):sum():item()
  self._correct = self._correct + correct
  self._total = self._total + pred:numel()
end

--- Data-parallel eval: the counts summed over the ranks (sum(v) -> total).
function Accuracy:_sync(sum)
  self._correct, self._total = sum(self._correct), sum(self._total)
end

function Accuracy:eval()
  if self._total == 0 then
    raise("RuntimeError: The 'Accuracy' can not be calculated, because the number of samples is 0.")
  end
  return self._correct / self._total
end

-- Loss ----------------------------------------------------------------------------------

local Loss = Metric:extend("Loss")
M.Loss = Loss
--- Model.eval gives a Loss metric the loss, not (logits, labels).
Loss.is_loss_metric = true

function Loss:clear()
  self._sum, self._total = 0, 0
end

--- update(loss): a 0-D or 1-D loss Tensor (its mean is added) or a number.
function Loss:update(loss)
  local v
  if type(loss) == "number" then
    v = loss
  elseif core.is_tensor(loss) then
    if loss.ndim > 1 then
      raise(("ValueError: For 'Loss.update', the loss must be 0-D or 1-D, but got shape %s.")
        :format(T.shape_str(loss.shape)))
    end
    v = loss:numel() == 1 and loss:item() or loss:astype(core.float64):mean():item()
  else
    raise(("TypeError: For 'Loss.update', the loss must be a Tensor or a number, but got %s."):format(type_name(loss)))
  end
  self._sum = self._sum + v
  self._total = self._total + 1
end

function Loss:_sync(sum)
  self._sum, self._total = sum(self._sum), sum(self._total)
end

--- The mean of the losses given to update.
function Loss:eval()
  if self._total == 0 then
    raise("RuntimeError: The 'Loss' can not be calculated, because the number of samples is 0.")
  end
  return self._sum / self._total
end

--- MindSpore's metric names: [name] = {module, class}.
local BY_NAME = {
  accuracy = { "cell.train.metrics", "Accuracy" }, acc = { "cell.train.metrics", "Accuracy" },
  loss = { "cell.train.metrics", "Loss" },
  precision = { "cell.train.metrics_classification", "Precision" },
  recall = { "cell.train.metrics_classification", "Recall" },
  F1 = { "cell.train.metrics_classification", "F1" },
  top_1_categorical_accuracy = { "cell.train.metrics_classification", "Top1CategoricalAccuracy" },
  top_5_categorical_accuracy = { "cell.train.metrics_classification", "Top5CategoricalAccuracy" },
  mae = { "cell.train.metrics_regression", "MAE" },
  mse = { "cell.train.metrics_regression", "MSE" },
}

--- The names get_metric_fn knows, sorted.
function M.names()
  local out = {}
  for k in pairs(BY_NAME) do out[#out + 1] = k end
  table.sort(out)
  return out
end

--- A metric object from a MindSpore name ("accuracy" or "acc", "loss",
-- "precision", "recall", "F1", "top_1_categorical_accuracy",
-- "top_5_categorical_accuracy", "mae", "mse").
function M.get_metric_fn(name, lvl)
  local e = type(name) == "string" and BY_NAME[name]
  if not e then
    local known = {}
    for i, k in ipairs(M.names()) do known[i] = "'" .. k .. "'" end
    raise(("KeyError: Unknown metric '%s'; known: %s."):format(tostring(name), table.concat(known, ", ")))
  end
  if e[1] == "cell.train.metrics" then return M[e[2]]() end
  return require(e[1])[e[2]]()
end

return M
