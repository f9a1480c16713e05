--- cell.nn.TrainOneStepWithLossScaleCell and the loss-scale update cells
-- (DynamicLossScaleUpdateCell, FixedLossScaleUpdateCell), as MindSpore's:
--
--     local update = nn.DynamicLossScaleUpdateCell(2 ^ 12, 2, 1000)
--     local train_net = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, loss_fn), opt, update)
--     local loss, overflow, scale = train_net(x, y) -- overflow: the step was skipped
--
-- The gradients are those of loss * scale, divided by scale before the
-- overflow check; a step whose gradients are not all finite leaves the
-- parameters (and the optimizer's state and step count) as they were.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local autograd = require "cell.autograd"
local Cell = require "cell.nn.cell"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local Parameter = require("cell.parameter").Parameter

local type_name = T.type_name

local M = {}

local function scale_number(cls, what, v)
  if core.is_tensor(v) and v:numel() == 1 then v = v:item() end
  if type(v) ~= "number" or not (v > 0) or v == math.huge then
    raise(("ValueError: For '%s', the '%s' must be a finite number > 0, but got %s.")
      :format(cls, what, type(v) == "number" and tostring(v) or type_name(v)))
  end
  return v
end

local function set_scalar(p, v)
  local prev = core.set_grad_enabled(false)
  p:fill_(v)
  core.set_grad_enabled(prev)
end

-- Update cells -----------------------------------------------------------------------

local DynamicLossScaleUpdateCell = Cell:extend("DynamicLossScaleUpdateCell")
M.DynamicLossScaleUpdateCell = DynamicLossScaleUpdateCell

--- DynamicLossScaleUpdateCell(loss_scale_value, scale_factor, scale_window):
-- cell(loss_scale, overflow) updates the Parameter loss_scale in place:
-- after an overflow it is divided by scale_factor (not below 1); after
-- scale_window steps without one it is multiplied by scale_factor.
-- Returns overflow.
function DynamicLossScaleUpdateCell:init(loss_scale_value, scale_factor, scale_window)
  Cell.init(self)
  local cls = "DynamicLossScaleUpdateCell"
  self.loss_scale_value = scale_number(cls, "loss_scale_value", loss_scale_value)
  if type(scale_factor) ~= "number" or not (scale_factor >= 1) or scale_factor == math.huge then
    raise(("ValueError: For '%s', the 'scale_factor' must be a finite number >= 1, but got %s.")
      :format(cls, type(scale_factor) == "number" and tostring(scale_factor) or type_name(scale_factor)))
  end
  if not T.is_int(scale_window) or scale_window < 1 then
    raise(("ValueError: For '%s', the 'scale_window' must be an integer >= 1, but got %s.")
      :format(cls, type(scale_window) == "number" and tostring(scale_window) or type_name(scale_window)))
  end
  self.scale_factor, self.scale_window = scale_factor, scale_window
  self.cur_iter = Parameter(core.tensor(1, core.int32), "current_iterator_step", false)
  self.last_overflow_iter = Parameter(core.tensor(0, core.int32), "last_overflow_iterator_step", false)
end

function DynamicLossScaleUpdateCell:get_loss_scale() return self.loss_scale_value end

local function as_overflow(cls, v)
  if core.is_tensor(v) and v:numel() == 1 then v = v:item() end
  if type(v) == "number" then v = v ~= 0 end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the 'overflow' must be a boolean or a one-element Tensor, but got %s.")
      :format(cls, type_name(v)))
  end
  return v
end

function DynamicLossScaleUpdateCell:construct(loss_scale, overflow)
  local cls = "DynamicLossScaleUpdateCell"
  if not core.is_tensor(loss_scale) or loss_scale:numel() ~= 1 then
    raise(("TypeError: For '%s', the 'loss_scale' must be a one-element Tensor (a Parameter), but got %s.")
      :format(cls, type_name(loss_scale)))
  end
  overflow = as_overflow(cls, overflow)
  local scale = loss_scale:item()
  local cur, last = self.cur_iter:item(), self.last_overflow_iter:item()
  local should_inc = cur - last >= self.scale_window
  if overflow then
    scale = math.max(scale / self.scale_factor, 1)
  elseif should_inc then
    local grown = scale * self.scale_factor
    if grown <= 3.4028234663852886e38 then scale = grown end
  end
  if overflow or should_inc then set_scalar(self.last_overflow_iter, cur) end
  set_scalar(self.cur_iter, cur + 1)
  set_scalar(loss_scale, scale)
  return overflow
end

function DynamicLossScaleUpdateCell:extend_repr()
  return ("loss_scale_value=%s, scale_factor=%s, scale_window=%d"):format(T.num_str(self.loss_scale_value),
    T.num_str(self.scale_factor), self.scale_window)
end

local FixedLossScaleUpdateCell = Cell:extend("FixedLossScaleUpdateCell")
M.FixedLossScaleUpdateCell = FixedLossScaleUpdateCell

--- FixedLossScaleUpdateCell(loss_scale_value): the scale never changes;
-- cell(loss_scale, overflow) returns overflow.
function FixedLossScaleUpdateCell:init(loss_scale_value)
  Cell.init(self)
  self.loss_scale_value = scale_number("FixedLossScaleUpdateCell", "loss_scale_value", loss_scale_value)
end

function FixedLossScaleUpdateCell:get_loss_scale() return self.loss_scale_value end

function FixedLossScaleUpdateCell:construct(_, overflow) return as_overflow("FixedLossScaleUpdateCell", overflow) end

function FixedLossScaleUpdateCell:extend_repr() return "loss_scale_value=" .. T.num_str(self.loss_scale_value) end

-- TrainOneStepWithLossScaleCell ------------------------------------------------------

local TrainOneStepWithLossScaleCell = Cell:extend("TrainOneStepWithLossScaleCell")
M.TrainOneStepWithLossScaleCell = TrainOneStepWithLossScaleCell

local function is_update_cell(v)
  local class = require "cell.class"
  return I.is_cell(v) and (class.is_instance(v, DynamicLossScaleUpdateCell)
    or class.is_instance(v, FixedLossScaleUpdateCell) or type(v.get_loss_scale) == "function")
end

--- TrainOneStepWithLossScaleCell(network, optimizer, scale_sense): as
-- TrainOneStepCell, with the loss scaled by scale_sense (an update cell,
-- or a fixed scale as a one-element Tensor or a number). construct(...)
-- returns loss, overflow (a Lua boolean: the step was skipped) and the
-- scale this step used (a float32 Tensor).
function TrainOneStepWithLossScaleCell:init(network, optimizer, scale_sense)
  local cls = "TrainOneStepWithLossScaleCell"
  Cell.init(self, { auto_prefix = false })
  if not I.is_cell(network) then
    raise(("TypeError: For '%s', the 'network' must be a Cell, but got %s."):format(cls, type_name(network)))
  end
  local O = require "cell.nn.optim.optimizer"
  if not (I.is_cell(optimizer) and require("cell.class").is_instance(optimizer, O.Optimizer)) then
    raise(("TypeError: For '%s', the 'optimizer' must be an optimizer (nn.Optimizer), but got %s.")
      :format(cls, type_name(optimizer)))
  end
  local value
  if is_update_cell(scale_sense) then
    self.loss_scaling_manager = scale_sense
    value = scale_sense:get_loss_scale()
  elseif core.is_tensor(scale_sense) or type(scale_sense) == "number" then
    if core.is_tensor(scale_sense) and scale_sense:numel() ~= 1 then
      raise(("ValueError: For '%s', the 'scale_sense' Tensor must have one element, but got shape %s.")
        :format(cls, T.shape_str(scale_sense.shape)))
    end
    value = scale_number(cls, "scale_sense", scale_sense)
  else
    raise(("TypeError: For '%s', the 'scale_sense' must be a Cell (a loss-scale update cell), a Tensor or a "
      .. "number, but got %s."):format(cls, type_name(scale_sense)))
  end
  self.network = network
  self.optimizer = optimizer
  self.scale_sense = Parameter(core.tensor(value, core.float32), "scale_sense", false)
  local weights = {}
  local params = optimizer.parameters
  for i = 1, #params do weights[i] = params[i] end
  self.weights = weights
  network:set_grad()
  self:set_train(true)
  local held = {}
  self._held = held
  local f32 = core.float32
  local function forward(...)
    local loss = network(...)
    if not core.is_tensor(loss) then
      error(("TypeError: For '%s', the network must return the loss as a Tensor, but got %s.")
        :format(cls, type_name(loss)), 0)
    end
    held.loss = loss
    local l = loss
    if l:numel() ~= 1 then l = l:sum() end
    if l.dtype == core.float16 or l.dtype == core.bfloat16 then l = l:astype(f32) end -- scaled in float32
    return l * held.scale
  end
  self._grad_fn = autograd.value_and_grad(forward, nil, weights)
  self.grad_reducer = require("cell.nn.distributed")._reducer_for(weights)
end

local mul_ = core.Tensor.mul_

function TrainOneStepWithLossScaleCell:construct(...)
  local held = self._held
  local scale = self.scale_sense:item()
  held.scale = scale
  if self.grad_reducer then self.grad_reducer:_arm() end
  local _, grads = self._grad_fn(...)
  local loss = held.loss
  held.loss = nil
  if self.grad_reducer then grads = self.grad_reducer(grads) end
  local prev = core.set_grad_enabled(false)
  for i = 1, #grads do mul_(grads[i], 1 / scale) end
  core.set_grad_enabled(prev)
  local overflow = not require("cell.amp").all_finite(grads)
  if self.loss_scaling_manager then overflow = self.loss_scaling_manager(self.scale_sense, overflow) end
  if not overflow then self.optimizer(grads) end
  return loss, overflow, core.tensor(scale, core.float32)
end

--- set_sense_scale(sens): the scale of the next steps (a number or a one-element Tensor).
function TrainOneStepWithLossScaleCell:set_sense_scale(sens)
  set_scalar(self.scale_sense, scale_number("TrainOneStepWithLossScaleCell", "sens", sens))
end

return M
