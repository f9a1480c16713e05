--- cell.nn's learning-rate cells (MindSpore's LearningRateSchedule):
-- ExponentialDecayLR, NaturalExpDecayLR, InverseDecayLR, CosineDecayLR,
-- PolynomialDecayLR, WarmUpLR. Each is a Cell called with the global step
-- (a Tensor or a number, 0 for the first step) that returns the rate as a
-- 0-D float32 Tensor; passed as an optimizer's learning_rate, the optimizer
-- calls it with its global_step before each step.
--   p = step / decay_steps (floor(p) with is_stair)
--   ExponentialDecayLR  lr * decay_rate^p
--   NaturalExpDecayLR   lr * exp(-decay_rate * p)
--   InverseDecayLR      lr / (1 + decay_rate * p)
--   CosineDecayLR       min_lr + 0.5 * (max_lr - min_lr) * (1 + cos(pi * min(step, decay_steps) / decay_steps))
--   PolynomialDecayLR   (lr - end_lr) * (1 - s / d)^power + end_lr, s = min(step, decay_steps), d = decay_steps
--                       (update_decay_steps: s = step, d = decay_steps * max(ceil(step / decay_steps), 1))
--   WarmUpLR            lr * min(step, warmup_steps) / warmup_steps
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local raise = require("cell.errors").raise

local M = {}

local LearningRateSchedule = Cell:extend("LearningRateSchedule")
M.LearningRateSchedule = LearningRateSchedule

local fail = require("cell.errors").raisef -- raise(fmt:format(...))

local function number(cls, name, v, positive, nonneg)
  if type(v) ~= "number" then
    fail("TypeError: For '%s', the argument '%s' must be a number, but got %s.", cls, name, T.type_name(v))
  end
  if v ~= v or v == math.huge or v == -math.huge then
    fail("ValueError: For '%s', the argument '%s' must be finite, but got %s.", cls, name, tostring(v))
  end
  if positive and v <= 0 then
    fail("ValueError: For '%s', the argument '%s' must be greater than 0, but got %s.", cls, name, tostring(v))
  end
  if nonneg and v < 0 then
    fail("ValueError: For '%s', the argument '%s' must be at least 0, but got %s.", cls, name, tostring(v))
  end
  return v
end

local function int(cls, name, v)
  if type(v) ~= "number" or v ~= math.floor(v) then
    fail("TypeError: For '%s', the argument '%s' must be an integer, but got %s.", cls, name,
      type(v) == "number" and tostring(v) or T.type_name(v))
  end
  if v <= 0 then fail("ValueError: For '%s', the argument '%s' must be greater than 0, but got %d.", cls, name, v) end
  return v
end

--- The step as a number, from a Tensor (one element) or a number.
local function step_of(cls, s)
  if core.is_tensor(s) then
    local count = 1
    for _, d in ipairs(s.shape) do count = count * d end
    if count ~= 1 then
      raise(("ValueError: For '%s', the global_step must hold one element, but got shape %s."):format(cls,
        T.shape_list(s.shape)), 3)
    end
    s = s:reshape({}):item()
  end
  if type(s) ~= "number" or s ~= s then
    raise(("TypeError: For '%s', the global_step must be a Tensor or a number, but got %s."):format(cls, T.type_name(s)), 3)
  end
  if s < 0 then raise(("ValueError: For '%s', the global_step must be at least 0, but got %s."):format(cls, tostring(s)), 3) end
  return s
end

--- sched:_rate(step): the rate at `step` as a number (what construct returns, unrounded).
function LearningRateSchedule:construct(global_step)
  if type(self._rate) ~= "function" then
    raise(("NotImplementedError: For '%s', construct needs a _rate(step) method (the base class has none)."):format(
      T.class_name(self)), 2)
  end
  return core.tensor(self:_rate(step_of(T.class_name(self), global_step)), core.float32)
end

local function decay_class(name, formula)
  local C = LearningRateSchedule:extend(name)
  local NAMES = { "learning_rate", "decay_rate", "decay_steps", "is_stair" }
  function C:init(...)
    local a = args_util.named(name, NAMES, 0, select("#", ...), ...)
    Cell.init(self)
    self._lr = number(name, "learning_rate", a.learning_rate, true)
    self._decay = number(name, "decay_rate", a.decay_rate, true)
    self._steps = int(name, "decay_steps", a.decay_steps)
    if a.is_stair ~= nil and type(a.is_stair) ~= "boolean" then
      fail("TypeError: For '%s', the argument 'is_stair' must be a boolean, but got %s.", name, T.type_name(a.is_stair))
    end
    self._stair = a.is_stair == true
  end
  function C:_rate(s)
    local p = s / self._steps
    if self._stair then p = math.floor(p) end
    return formula(self._lr, self._decay, p)
  end
  function C:extend_repr()
    return ("learning_rate=%s, decay_rate=%s, decay_steps=%d, is_stair=%s"):format(self._lr, self._decay, self._steps,
      tostring(self._stair))
  end
  M[name] = C
end

decay_class("ExponentialDecayLR", function(lr, r, p) return lr * r ^ p end)
decay_class("NaturalExpDecayLR", function(lr, r, p) return lr * math.exp(-r * p) end)
decay_class("InverseDecayLR", function(lr, r, p) return lr / (1 + r * p) end)

local Cosine = LearningRateSchedule:extend("CosineDecayLR")
function Cosine:init(...)
  local cls = "CosineDecayLR"
  local a = args_util.named(cls, { "min_lr", "max_lr", "decay_steps" }, 0, select("#", ...), ...)
  Cell.init(self)
  self._min = number(cls, "min_lr", a.min_lr, false, true)
  self._max = number(cls, "max_lr", a.max_lr, true)
  if self._min >= self._max then
    fail("ValueError: For 'CosineDecayLR', the 'max_lr' must be greater than the 'min_lr', but got max_lr %s, min_lr %s.",
      tostring(self._max), tostring(self._min))
  end
  self._steps = int(cls, "decay_steps", a.decay_steps)
end
function Cosine:_rate(s)
  local p = math.min(s, self._steps) / self._steps
  return self._min + 0.5 * (self._max - self._min) * (1 + math.cos(math.pi * p))
end
function Cosine:extend_repr()
  return ("min_lr=%s, max_lr=%s, decay_steps=%d"):format(self._min, self._max, self._steps)
end
M.CosineDecayLR = Cosine

local Poly = LearningRateSchedule:extend("PolynomialDecayLR")
function Poly:init(...)
  local cls = "PolynomialDecayLR"
  local a = args_util.named(cls, { "learning_rate", "end_learning_rate", "decay_steps", "power", "update_decay_steps" }, 0,
    select("#", ...), ...)
  Cell.init(self)
  self._lr = number(cls, "learning_rate", a.learning_rate, true)
  self._end = number(cls, "end_learning_rate", a.end_learning_rate, false, true)
  self._steps = int(cls, "decay_steps", a.decay_steps)
  self._power = number(cls, "power", a.power, true)
  if a.update_decay_steps ~= nil and type(a.update_decay_steps) ~= "boolean" then
    fail("TypeError: For '%s', the argument 'update_decay_steps' must be a boolean, but got %s.", cls,
      T.type_name(a.update_decay_steps))
  end
  self._update = a.update_decay_steps == true
end
function Poly:_rate(s)
  local d = self._steps
  if self._update then
    d = d * math.max(math.ceil(s / d), 1)
  else
    s = math.min(s, d)
  end
  return (self._lr - self._end) * (1 - s / d) ^ self._power + self._end
end
function Poly:extend_repr()
  return ("learning_rate=%s, end_learning_rate=%s, decay_steps=%d, power=%s, update_decay_steps=%s"):format(self._lr,
    self._end, self._steps, self._power, tostring(self._update))
end
M.PolynomialDecayLR = Poly

local Warm = LearningRateSchedule:extend("WarmUpLR")
function Warm:init(...)
  local cls = "WarmUpLR"
  local a = args_util.named(cls, { "learning_rate", "warmup_steps" }, 0, select("#", ...), ...)
  Cell.init(self)
  self._lr = number(cls, "learning_rate", a.learning_rate, true)
  self._steps = int(cls, "warmup_steps", a.warmup_steps)
end
function Warm:_rate(s) return self._lr * math.min(s, self._steps) / self._steps end
function Warm:extend_repr() return ("learning_rate=%s, warmup_steps=%d"):format(self._lr, self._steps) end
M.WarmUpLR = Warm

-- The optimizers recognise these cells by this mark (and call v:_rate(step - 1)).
LearningRateSchedule._lr_schedule = true

return M
