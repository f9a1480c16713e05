--- cell.amp: mixed precision as MindSpore's mindspore.amp. A network
-- computes in float16 or bfloat16 while its Parameters stay float32
-- masters (Cell:to_float casts them as the cell runs; the cast is
-- differentiable), losses are scaled so small float16 gradients do not
-- flush to zero, and a step whose gradients overflowed is skipped.
--
--     local amp = cell.amp
--     net = amp.auto_mixed_precision(net, "O2", cell.bfloat16)
--     local scaler = amp.DynamicLossScaler(2 ^ 16, 2, 1000)
--     local loss, grads = cell.value_and_grad(function(x, y) return scaler:scale(loss_fn(net(x), y)) end,
--       nil, opt.parameters)(x, y)
--     grads = scaler:unscale(grads)
--     local finite = amp.all_finite(grads)
--     if finite then opt(grads) end
--     scaler:adjust(finite)
--
-- The loss-scale update cells and TrainOneStepWithLossScaleCell are in
-- cell.nn (lua/cell/nn/loss_scale.lua).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args = require "cell.util.args"
local Parameter = require("cell.parameter").Parameter

local type_name = T.type_name
local S = I.S

local M = {}

-- Precision of cells ------------------------------------------------------------------

--- Cells computed in low precision under O1 (their outputs go back to
-- float32), and cells kept in float32 under O2 (their outputs go to the
-- low precision), by cell.nn class name, as MindSpore's AMP_WHITE_LIST and
-- AMP_BLACK_LIST. O2 also keeps every loss (nn.LossBase) in float32.
M.AMP_WHITE_LIST = { "Dense", "Conv1d", "Conv2d", "Conv3d", "Conv1dTranspose", "Conv2dTranspose", "Conv3dTranspose" }
M.AMP_BLACK_LIST = { "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm" }

--- get_white_list() / get_black_list(): copies of the two lists.
function M.get_white_list()
  local out = {}
  for i, v in ipairs(M.AMP_WHITE_LIST) do out[i] = v end
  return out
end

function M.get_black_list()
  local out = {}
  for i, v in ipairs(M.AMP_BLACK_LIST) do out[i] = v end
  return out
end

local LOW = { float16 = true, bfloat16 = true }

local function check_low_dtype(fn, dtype)
  if dtype == nil then return core.float16 end
  if not (core.is_dtype(dtype) and LOW[dtype.name]) then
    raise(("ValueError: For '%s', the 'dtype' must be cell.float16 or cell.bfloat16, but got %s.")
      :format(fn, core.is_dtype(dtype) and tostring(dtype) or type_name(dtype)))
  end
  return dtype
end

local function in_list(c, names)
  local nn = require "cell.nn"
  for _, name in ipairs(names) do
    local cls = nn[name]
    if cls and class.is_instance(c, cls) then return true end
  end
  return false
end

local function is_loss(c)
  local LossBase = require("cell.nn.loss").LossBase
  return class.is_instance(c, LossBase)
end

--- c:to_float(dtype) and its outputs cast to out_dtype (nil: left as they are).
local function set_precision(c, dtype, out_dtype)
  c:to_float(dtype)
  rawget(c, S).mixed_out = out_dtype
end

local function each_cell(net, fn)
  local list = {}
  for _, c in net:cells_and_names() do list[#list + 1] = c end
  for _, c in ipairs(list) do fn(c) end
end

local LEVELS = { O0 = true, O1 = true, O2 = true, O3 = true }

local function check_level(fn, level)
  if not LEVELS[level] then
    raise(("ValueError: For '%s', the 'amp_level' must be one of 'O0', 'O1', 'O2', 'O3', but got %s.")
      :format(fn, type(level) == "string" and ("'" .. level .. "'") or type_name(level)))
  end
end

--- auto_mixed_precision(network [, amp_level = "O0" [, dtype = cell.float16]]):
-- MindSpore's levels. O0: unchanged. O1: the white-list cells (Dense, the
-- convolutions) compute in dtype, their outputs cast back to float32. O2:
-- the whole network computes in dtype except the black-list cells
-- (BatchNorm, LayerNorm) and the losses, which compute in float32 (the
-- norms' outputs go back to dtype). O3: the whole network in dtype.
-- Under O2 and O3 the network's own outputs are cast back to float32
-- (MindSpore's _OutputTo32). Parameters stay float32 masters. Changes the
-- network in place and returns it.
function M.auto_mixed_precision(network, amp_level, dtype)
  if not I.is_cell(network) then
    raise(("TypeError: For 'auto_mixed_precision', the 'network' must be a Cell, but got %s.")
      :format(type_name(network)))
  end
  if amp_level == nil then amp_level = "O0" end
  check_level("auto_mixed_precision", amp_level)
  dtype = check_low_dtype("auto_mixed_precision", dtype)
  if amp_level == "O0" then return network end
  if amp_level == "O1" then
    each_cell(network, function(c)
      if in_list(c, M.AMP_WHITE_LIST) then set_precision(c, dtype, core.float32) end
    end)
  elseif amp_level == "O2" then
    network:to_float(dtype)
    each_cell(network, function(c)
      if is_loss(c) then
        set_precision(c, core.float32, nil)
      elseif in_list(c, M.AMP_BLACK_LIST) then
        set_precision(c, core.float32, dtype)
      end
    end)
  else
    network:to_float(dtype)
  end
  -- O2 and O3: the network's outputs come back in float32, as MindSpore's
  -- _OutputTo32 wrapper gives them (here the network itself casts them, so
  -- it stays the same object with the same parameter names)
  rawget(network, S).mixed_out = core.float32
  return network
end

--- all_finite(inputs): whether every element of every Tensor in `inputs`
-- (a Tensor or a list of them, e.g. gradients) is finite: a Lua boolean.
function M.all_finite(inputs)
  if core.is_tensor(inputs) then inputs = { inputs } end
  if type(inputs) ~= "table" then
    raise(("TypeError: For 'all_finite', the 'inputs' must be a Tensor or a list of Tensors, but got %s.")
      :format(type_name(inputs)))
  end
  local prev = core.set_grad_enabled(false)
  local ok, res = pcall(function()
    for i = 1, #inputs do
      local t = inputs[i]
      if not core.is_tensor(t) then
        error(("TypeError: For 'all_finite', inputs[%d] must be a Tensor, but got %s."):format(i, type_name(t)), 0)
      end
      if t.dtype.is_floating_point and t:numel() > 0 and not t:isfinite():all():item() then return false end
    end
    return true
  end)
  core.set_grad_enabled(prev)
  if not ok then raise(res) end
  return res
end

-- Loss scalers ------------------------------------------------------------------------

local function check_scale_value(cls, v)
  if core.is_tensor(v) and v:numel() == 1 then v = v:item() end
  if type(v) ~= "number" or not (v > 0) or v == math.huge then
    raise(("ValueError: For '%s', the 'scale_value' must be a finite number > 0, but got %s.")
      :format(cls, type(v) == "number" and tostring(v) or type_name(v)))
  end
  return v
end

--- The tensors of `inputs` (a Tensor or a nested list) multiplied by k.
local function map_mul(cls, what, inputs, k)
  if core.is_tensor(inputs) then return inputs * k end
  if type(inputs) == "table" and getmetatable(inputs) == nil then
    local out = {}
    for i = 1, #inputs do out[i] = map_mul(cls, what, inputs[i], k) end
    return out
  end
  raise(("TypeError: For '%s.%s', the 'inputs' must be a Tensor or a list of Tensors, but got %s.")
    :format(cls, what, type_name(inputs)))
end

local LossScaler = class("LossScaler")
M.LossScaler = LossScaler

--- LossScaler: the base class (scale, unscale, adjust).
function LossScaler:init() end

function LossScaler:get_scale() return self.scale_value:item() end

--- scaler:scale(inputs): inputs (a Tensor or a list of them) times the scale.
function LossScaler:scale(inputs) return map_mul(T.class_name(self), "scale", inputs, self.scale_value:item()) end

--- scaler:unscale(inputs): inputs divided by the scale.
function LossScaler:unscale(inputs)
  return map_mul(T.class_name(self), "unscale", inputs, 1 / self.scale_value:item())
end

function LossScaler:adjust() return false end

function LossScaler:__tostring()
  return ("%s(scale_value=%s)"):format(T.class_name(self), T.num_str(self.scale_value:item()))
end

local StaticLossScaler = LossScaler:extend("StaticLossScaler")
M.StaticLossScaler = StaticLossScaler

--- StaticLossScaler(scale_value): a fixed scale; adjust does nothing and
-- returns false.
function StaticLossScaler:init(scale_value)
  scale_value = check_scale_value("StaticLossScaler", scale_value)
  self.scale_value = Parameter(core.tensor(scale_value, core.float32), "scale_value", false)
end

local DynamicLossScaler = LossScaler:extend("DynamicLossScaler")
M.DynamicLossScaler = DynamicLossScaler

local DYN_ARGS = { "scale_factor", "scale_window" }

--- DynamicLossScaler(scale_value, scale_factor, scale_window) (or
-- {scale_factor =, scale_window =}): adjust(grads_finite) divides the
-- scale by scale_factor (not below 1) after an overflow, and multiplies it
-- by scale_factor after scale_window finite steps in a row.
function DynamicLossScaler:init(scale_value, ...)
  local factor, window = args.parse("DynamicLossScaler", DYN_ARGS, 2, select("#", ...), ...)
  scale_value = check_scale_value("DynamicLossScaler", scale_value)
  if type(factor) ~= "number" or not (factor >= 1) or factor == math.huge then
    raise(("ValueError: For 'DynamicLossScaler', the 'scale_factor' must be a finite number >= 1, but got %s.")
      :format(type(factor) == "number" and tostring(factor) or type_name(factor)))
  end
  if not T.is_int(window) or window < 1 then
    raise(("ValueError: For 'DynamicLossScaler', the 'scale_window' must be an integer >= 1, but got %s.")
      :format(type(window) == "number" and tostring(window) or type_name(window)))
  end
  self.scale_value = Parameter(core.tensor(scale_value, core.float32), "scale_value", false)
  self.scale_factor = factor
  self.scale_window = window
  self.counter = Parameter(core.tensor(0, core.int32), "counter", false)
end

local function as_bool(cls, v)
  if core.is_tensor(v) and v:numel() == 1 then v = v:item() end
  if type(v) == "number" then v = v ~= 0 end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s.adjust', the 'grads_finite' must be a boolean or a one-element Tensor, but got %s.")
      :format(cls, type_name(v)))
  end
  return v
end

--- scaler:adjust(grads_finite): the scale's update for one step; returns true.
function DynamicLossScaler:adjust(grads_finite)
  local finite = as_bool("DynamicLossScaler", grads_finite)
  local scale, counter = self.scale_value:item(), self.counter:item()
  local prev = core.set_grad_enabled(false)
  if finite then
    counter = counter + 1
    if counter >= self.scale_window then
      local grown = scale * self.scale_factor
      if grown < math.huge and grown <= 3.4028234663852886e38 then scale = grown end
      counter = 0
    end
  else
    scale = math.max(scale / self.scale_factor, 1)
    counter = 0
  end
  self.scale_value:fill_(scale)
  self.counter:fill_(counter)
  core.set_grad_enabled(prev)
  return true
end

function DynamicLossScaler:__tostring()
  return ("DynamicLossScaler(scale_value=%s, scale_factor=%s, scale_window=%d)")
    :format(T.num_str(self.scale_value:item()), T.num_str(self.scale_factor), self.scale_window)
end

-- Loss-scale managers and build_train_network ----------------------------------------

local FixedLossScaleManager = class("FixedLossScaleManager")
M.FixedLossScaleManager = FixedLossScaleManager

local FIXED_ARGS = { "drop_overflow_update" }

--- FixedLossScaleManager([loss_scale = 128 [, drop_overflow_update = true]]):
-- a fixed scale for build_train_network; with drop_overflow_update steps
-- whose gradients overflowed are skipped.
function FixedLossScaleManager:init(loss_scale, ...)
  local drop = args.parse("FixedLossScaleManager", FIXED_ARGS, 2, select("#", ...), ...)
  if loss_scale == nil then loss_scale = 128 end
  if type(loss_scale) ~= "number" or not (loss_scale >= 1) or loss_scale == math.huge then
    raise(("ValueError: For 'FixedLossScaleManager', the 'loss_scale' must be a finite number >= 1, but got %s.")
      :format(type(loss_scale) == "number" and tostring(loss_scale) or type_name(loss_scale)))
  end
  if drop == nil then drop = true end
  if type(drop) ~= "boolean" then
    raise(("TypeError: For 'FixedLossScaleManager', the 'drop_overflow_update' must be a boolean, but got %s.")
      :format(type_name(drop)))
  end
  self.loss_scale, self.drop_overflow_update = loss_scale, drop
end

function FixedLossScaleManager:get_loss_scale() return self.loss_scale end
function FixedLossScaleManager:get_drop_overflow_update() return self.drop_overflow_update end

--- The update cell TrainOneStepWithLossScaleCell takes (nil without drop_overflow_update).
function FixedLossScaleManager:get_update_cell()
  if not self.drop_overflow_update then return nil end
  return require("cell.nn.loss_scale").FixedLossScaleUpdateCell(self.loss_scale)
end

local DynamicLossScaleManager = class("DynamicLossScaleManager")
M.DynamicLossScaleManager = DynamicLossScaleManager

local DYN_MGR_ARGS = { "scale_factor", "scale_window" }

--- DynamicLossScaleManager([init_loss_scale = 2^24 [, scale_factor = 2 [, scale_window = 2000]]]).
function DynamicLossScaleManager:init(init_loss_scale, ...)
  local factor, window = args.parse("DynamicLossScaleManager", DYN_MGR_ARGS, 2, select("#", ...), ...)
  if init_loss_scale == nil then init_loss_scale = 2 ^ 24 end
  self.loss_scale = init_loss_scale
  self.scale_factor = factor == nil and 2 or factor
  self.scale_window = window == nil and 2000 or window
  -- checks the arguments now, so a bad one is reported where it was given
  self._cell = require("cell.nn.loss_scale").DynamicLossScaleUpdateCell(self.loss_scale, self.scale_factor,
    self.scale_window)
end

function DynamicLossScaleManager:get_loss_scale() return self.loss_scale end
function DynamicLossScaleManager:get_drop_overflow_update() return true end
function DynamicLossScaleManager:get_update_cell()
  return require("cell.nn.loss_scale").DynamicLossScaleUpdateCell(self.loss_scale, self.scale_factor,
    self.scale_window)
end

local BUILD_ARGS = { "loss_fn", "level", "loss_scale_manager", "keep_batchnorm_fp32", "cast_model_type" }

--- build_train_network(network, optimizer [, loss_fn [, level = "O0"]]
-- [, {loss_scale_manager =, keep_batchnorm_fp32 =, cast_model_type =}]):
-- the network under auto_mixed_precision(level, cast_model_type or
-- float16) (O2 with keep_batchnorm_fp32 = false is O3), with loss_fn in
-- float32 (WithLossCell), wrapped for training: O2's default
-- loss_scale_manager is DynamicLossScaleManager(), and a manager with an
-- update cell gives nn.TrainOneStepWithLossScaleCell, else
-- nn.TrainOneStepCell (sens = the manager's fixed scale).
function M.build_train_network(network, optimizer, ...)
  local a = args.named("build_train_network", BUILD_ARGS, 2, select("#", ...), ...)
  local nn = require "cell.nn"
  if not I.is_cell(network) then
    raise(("TypeError: For 'build_train_network', the 'network' must be a Cell, but got %s.")
      :format(type_name(network)))
  end
  local level = a.level == nil and "O0" or a.level
  check_level("build_train_network", level)
  local dtype = check_low_dtype("build_train_network", a.cast_model_type)
  local keep_bn = a.keep_batchnorm_fp32
  if keep_bn ~= nil and type(keep_bn) ~= "boolean" then
    raise(("TypeError: For 'build_train_network', the 'keep_batchnorm_fp32' must be a boolean, but got %s.")
      :format(type_name(keep_bn)))
  end
  if level == "O2" and keep_bn == false then level = "O3" end
  M.auto_mixed_precision(network, level, dtype)
  local mgr = a.loss_scale_manager
  if mgr == nil and level == "O2" then mgr = DynamicLossScaleManager() end
  if mgr ~= nil and not (class.is_instance(mgr, FixedLossScaleManager) or class.is_instance(mgr, DynamicLossScaleManager)) then
    raise(("TypeError: For 'build_train_network', the 'loss_scale_manager' must be a FixedLossScaleManager or a "
      .. "DynamicLossScaleManager, but got %s."):format(type_name(mgr)))
  end
  local net = network
  if a.loss_fn ~= nil then
    local loss_fn = a.loss_fn
    if I.is_cell(loss_fn) then
      loss_fn:to_float(core.float32)
    elseif T.is_callable(loss_fn) then
      local f = loss_fn
      loss_fn = function(out, label)
        if core.is_tensor(out) and out.dtype.is_floating_point then out = out:astype(core.float32) end
        return f(out, label)
      end
    end
    net = nn.WithLossCell(network, loss_fn)
  end
  if mgr == nil then return nn.TrainOneStepCell(net, optimizer) end
  local update = mgr:get_update_cell()
  if update == nil then return nn.TrainOneStepCell(net, optimizer, mgr:get_loss_scale()) end
  return nn.TrainOneStepWithLossScaleCell(net, optimizer, update)
end

return M
