--- cell.train's regression metrics, as MindSpore's nn.metrics: MAE and
-- MSE. Like MindSpore's, the summed error is divided by the number of
-- samples (the size of y's first dimension), not of elements.
--
--     local mae = cell.train.MAE()
--     mae:update(pred, target)   -- pred and target of one shape (or target reshapable to it)
--     mae:eval()                 --> sum |target - pred| / samples
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local T = require "cell.util.types"
local Metric = require("cell.train.metrics").Metric

local M = {}

local function error_sum(cls, y_pred, y, square)
  if not core.is_tensor(y_pred) or not core.is_tensor(y) then
    raise(("TypeError: For '%s.update', y_pred and y must be Tensors, but got %s and %s.")
      :format(cls, T.type_name(y_pred), T.type_name(y)))
  end
  if y:numel() ~= y_pred:numel() then
    raise(("ValueError: For '%s.update', y must have as many elements as y_pred %s, but got shape %s.")
      :format(cls, T.shape_str(y_pred.shape), T.shape_str(y.shape)))
  end
  local d = y:astype(core.float64):reshape(y_pred.shape) - y_pred:astype(core.float64)
  d = square and d * d or d:abs()
  local samples = y.ndim > 0 and y.shape[1] or 1
  return d:numel() > 0 and d:sum():item() or 0, samples
end

local function make(cls, square)
  local C = Metric:extend(cls)
  function C:clear() self._sum, self._samples = 0, 0 end
  function C:update(y_pred, y)
    local s, n = error_sum(cls, y_pred, y, square)
    self._sum, self._samples = self._sum + s, self._samples + n
  end
  function C:_sync(sum) self._sum, self._samples = sum(self._sum), sum(self._samples) end
  function C:eval()
    if self._samples == 0 then
      raise(("RuntimeError: The '%s' can not be calculated, because the number of samples is 0."):format(cls))
    end
    return self._sum / self._samples
  end
  return C
end

--- MAE(): the mean absolute error, sum |y - y_pred| over the samples.
M.MAE = make("MAE", false)
--- MSE(): the mean squared error, sum (y - y_pred)^2 over the samples.
M.MSE = make("MSE", true)

return M
