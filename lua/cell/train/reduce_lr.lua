--- cell.train.ReduceLROnPlateau: MindSpore 2.x's callback that lowers the
-- optimizer's learning rate when a monitored value stops improving.
--
--     ReduceLROnPlateau([monitor = "eval_loss", factor = 0.1, patience = 10,
--                        verbose = false, mode = "auto", min_delta = 1e-4,
--                        cooldown = 0, min_lr = 0]) (or the same as options)
--
-- At each epoch's end it reads the monitored value: "loss" is the last
-- step's loss (net_outputs); any other name is looked up in the run
-- context's eval_results (with and without an "eval_" prefix). A value
-- that is not there is skipped (with a warning line when verbose). mode
-- "min" wants the value to fall by more than min_delta, "max" to rise;
-- "auto" is "max" when the name contains "acc", else "min". After
-- `patience` epochs without improvement (not counting `cooldown` epochs
-- after a reduction) the optimizer's fixed learning rate becomes
-- max(lr * factor, min_lr) (only while lr > min_lr). As in MindSpore, the
-- optimizer must have one fixed rate (a TypeError otherwise).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local callbacks = require "cell.train.callbacks"
local parameter = require "cell.parameter"

local M = {}

local ReduceLROnPlateau = callbacks.Callback:extend("ReduceLROnPlateau")
M.ReduceLROnPlateau = ReduceLROnPlateau

local NAMES = { "monitor", "factor", "patience", "verbose", "mode", "min_delta", "cooldown", "min_lr", "writer" }
local CLS = "ReduceLROnPlateau"

local function number(name, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
    raise(("TypeError: For '%s', the '%s' must be a finite number, but got %s."):format(CLS, name,
      type(v) == "number" and tostring(v) or T.type_name(v)))
  end
  return v
end

local function count(name, v, default)
  v = number(name, v, default)
  if v ~= math.floor(v) or v < 0 then
    raise(("ValueError: For '%s', the '%s' must be an integer >= 0, but got %s."):format(CLS, name, tostring(v)))
  end
  return v
end

function ReduceLROnPlateau:init(...)
  local a = args_util.named(CLS, NAMES, 3, select("#", ...), ...)
  local monitor = a.monitor == nil and "eval_loss" or a.monitor
  if type(monitor) ~= "string" then
    raise(("TypeError: For '%s', the 'monitor' must be a string, but got %s."):format(CLS, T.type_name(monitor)))
  end
  local factor = number("factor", a.factor, 0.1)
  if not (factor >= 0 and factor < 1) then
    raise(("ValueError: For '%s', the 'factor' must be in range of [0.0, 1.0), but got %s."):format(CLS, tostring(factor)))
  end
  local mode = a.mode == nil and "auto" or a.mode
  if mode ~= "auto" and mode ~= "min" and mode ~= "max" then
    raise(("ValueError: For '%s', the 'mode' must be one of ['auto', 'min', 'max'], but got %s."):format(CLS,
      tostring(mode)))
  end
  if mode == "auto" then mode = monitor:find("acc", 1, true) and "max" or "min" end
  if a.verbose ~= nil and type(a.verbose) ~= "boolean" then
    raise(("TypeError: For '%s', the 'verbose' must be a boolean, but got %s."):format(CLS, T.type_name(a.verbose)))
  end
  local min_delta = number("min_delta", a.min_delta, 1e-4)
  if min_delta < 0 then
    raise(("ValueError: For '%s', the 'min_delta' must be at least 0, but got %s."):format(CLS, tostring(min_delta)))
  end
  local min_lr = number("min_lr", a.min_lr, 0)
  if min_lr < 0 then
    raise(("ValueError: For '%s', the 'min_lr' must be at least 0, but got %s."):format(CLS, tostring(min_lr)))
  end
  if a.writer ~= nil and type(a.writer) ~= "function" then
    raise(("TypeError: For '%s', the 'writer' must be a function, but got %s."):format(CLS, T.type_name(a.writer)))
  end
  self.monitor, self.factor, self.mode, self.verbose = monitor, factor, mode, a.verbose == true
  self.patience = count("patience", a.patience, 10)
  self.cooldown = count("cooldown", a.cooldown, 0)
  self.min_delta, self.min_lr = min_delta, min_lr
  local write = a.writer or function(s) io.stdout:write(s) end
  -- through the progress bar's live line, as every monitor's text goes
  self._write = function(s)
    callbacks.end_live_line()
    write(s)
  end
  self:_reset()
end

function ReduceLROnPlateau:_reset()
  self.wait, self.cooldown_counter = 0, 0
  self.best = self.mode == "min" and math.huge or -math.huge
end

function ReduceLROnPlateau:on_train_begin() self:_reset() end

function ReduceLROnPlateau:_improved(v)
  if self.mode == "min" then return v < self.best - self.min_delta end
  return v > self.best + self.min_delta
end

--- The monitored value at this epoch's end, or nil.
function ReduceLROnPlateau:_value(cb)
  if self.monitor == "loss" then return callbacks.loss_value(cb.net_outputs) end
  local r = cb.eval_results
  if type(r) ~= "table" then return nil end
  local v = r[self.monitor]
  if v == nil and self.monitor:sub(1, 5) == "eval_" then v = r[self.monitor:sub(6)] end
  return type(v) == "number" and v or nil
end

function ReduceLROnPlateau:on_train_epoch_end(run_context)
  local cb = callbacks.args_of("on_train_epoch_end", run_context)
  local opt = cb.optimizer
  local lr = opt and opt.learning_rate
  if not parameter.is_parameter(lr) then
    raise("TypeError: ReduceLROnPlateau does not support dynamic learning rate and group learning rate now.")
  end
  local v = self:_value(cb)
  if v == nil then
    if self.verbose then
      self._write(("ReduceLROnPlateau: the monitored value '%s' is not available; skipping.\n"):format(self.monitor))
    end
    return
  end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.wait = 0
  end
  if self:_improved(v) then
    self.best, self.wait = v, 0
  elseif self.cooldown_counter <= 0 then
    self.wait = self.wait + 1
    if self.wait >= self.patience then
      local old = lr:item()
      if old > self.min_lr then
        local new = math.max(old * self.factor, self.min_lr)
        lr:set_data(require("cell.core").tensor(new, lr.dtype))
        if self.verbose then
          self._write(("Epoch %05d: ReduceLROnPlateau reducing learning rate to %s.\n"):format(cb.cur_epoch_num,
            ("%.7g"):format(new)))
        end
        self.cooldown_counter, self.wait = self.cooldown, 0
      end
    end
  end
end

return M
