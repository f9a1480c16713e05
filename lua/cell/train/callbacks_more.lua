--- cell.train's MindSpore callbacks for steering a run: EarlyStopping,
-- LearningRateScheduler, History and LambdaCallback.
--
--     local hist = cell.train.History()
--     model:fit(20, train_set, valid_set, 1, {
--       cell.train.EarlyStopping { monitor = "eval_loss", patience = 3, restore_best_weights = true },
--       hist })
--     print(hist.history.eval_loss[1])
--
-- A monitored value is read at each epoch's end: "loss" is the last step's
-- loss (net_outputs); any other name is looked up in the run context's
-- eval_results (what Model:fit's evaluation returned), with or without an
-- "eval_" prefix ("eval_loss" finds the "loss" metric).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local callbacks = require "cell.train.callbacks"
local parameter = require "cell.parameter"

local type_name = T.type_name
local Callback = callbacks.Callback
local args_of = callbacks.args_of

local M = {}

--- The monitored value `name` at this point of the run, or nil.
function M.monitor_value(cb, name)
  if name == "loss" then return callbacks.loss_value(cb.net_outputs) end
  local r = cb.eval_results
  if type(r) ~= "table" then return nil end
  local v = r[name]
  if v == nil and name:sub(1, 5) == "eval_" then v = r[name:sub(6)] end
  if core.is_tensor(v) and v:numel() == 1 then v = v:item() end
  return type(v) == "number" and v or nil
end

local function finite(cls, name, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
    raise(("TypeError: For '%s', the '%s' must be a finite number, but got %s."):format(cls, name,
      type(v) == "number" and tostring(v) or type_name(v)))
  end
  return v
end

local function boolean(cls, name, v)
  if v ~= nil and type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the '%s' must be a boolean, but got %s."):format(cls, name, type_name(v)))
  end
  return v == true
end

-- EarlyStopping -------------------------------------------------------------------------

local EarlyStopping = Callback:extend("EarlyStopping")
M.EarlyStopping = EarlyStopping

local ES_NAMES = { "monitor", "min_delta", "patience", "verbose", "mode", "baseline", "restore_best_weights", "writer" }

--- EarlyStopping([monitor = "eval_loss", min_delta = 0, patience = 0,
-- verbose = false, mode = "auto", baseline, restore_best_weights = false])
-- (or the same as options): stop training when the monitored value has
-- not improved by more than min_delta for `patience` epochs.
function EarlyStopping:init(...)
  local cls = "EarlyStopping"
  local a = args_util.named(cls, ES_NAMES, 3, select("#", ...), ...)
  local monitor = a.monitor == nil and "eval_loss" or a.monitor
  if type(monitor) ~= "string" then
    raise(("TypeError: For '%s', the 'monitor' must be a string, but got %s."):format(cls, type_name(monitor)))
  end
  local patience = finite(cls, "patience", a.patience, 0)
  if patience ~= math.floor(patience) or patience < 0 then
    raise(("ValueError: For '%s', the 'patience' must be an integer >= 0, but got %s."):format(cls, tostring(patience)))
  end
  local mode = a.mode == nil and "auto" or a.mode
  if mode ~= "auto" and mode ~= "min" and mode ~= "max" then
    raise(("ValueError: For '%s', the 'mode' must be one of ['auto', 'min', 'max'], but got %s."):format(cls,
      type(mode) == "string" and ("'" .. mode .. "'") or type_name(mode)))
  end
  if mode == "auto" then mode = monitor:find("acc", 1, true) and "max" or "min" end
  if a.writer ~= nil and type(a.writer) ~= "function" then
    raise(("TypeError: For '%s', the 'writer' must be a function, but got %s."):format(cls, type_name(a.writer)))
  end
  self.monitor, self.mode, self.patience = monitor, mode, patience
  self.min_delta = math.abs(finite(cls, "min_delta", a.min_delta, 0))
  self.baseline = finite(cls, "baseline", a.baseline, nil)
  self.verbose = boolean(cls, "verbose", a.verbose)
  self.restore_best_weights = boolean(cls, "restore_best_weights", a.restore_best_weights)
  self._write = a.writer or function(s) io.stdout:write(s) end
  self:_reset()
end

function EarlyStopping:_reset()
  self.wait, self.stopped_epoch = 0, 0
  self.best = self.mode == "min" and math.huge or -math.huge
  self.best_weights = nil
end

function EarlyStopping:_improved(a, b)
  if self.mode == "min" then return a + self.min_delta < b end
  return a - self.min_delta > b
end

--- A copy of every parameter of net, by name.
local function snapshot(net)
  local out = {}
  for name, p in net:parameters_and_names() do out[#out + 1] = { name, p, p:clone() } end
  return out
end

function EarlyStopping:on_train_begin() self:_reset() end

function EarlyStopping:on_train_epoch_end(run_context)
  local cb = args_of("on_train_epoch_end", run_context)
  local v = M.monitor_value(cb, self.monitor)
  if v == nil then
    if self.verbose then
      callbacks.end_live_line()
      self._write(("EarlyStopping: the monitored value '%s' is not available; skipping.\n"):format(self.monitor))
    end
    return
  end
  local net = cb.network or cb.train_network
  if self.restore_best_weights and self.best_weights == nil and net then self.best_weights = snapshot(net) end
  self.wait = self.wait + 1
  if self:_improved(v, self.best) then
    self.best = v
    if self.restore_best_weights and net then self.best_weights = snapshot(net) end
    if self.baseline == nil or self:_improved(v, self.baseline) then self.wait = 0 end
  end
  if self.wait >= self.patience then
    self.stopped_epoch = cb.cur_epoch_num
    run_context:request_stop()
    if self.restore_best_weights and self.best_weights then
      for _, e in ipairs(self.best_weights) do e[2]:set_data(e[3]) end
    end
  end
end

function EarlyStopping:on_train_end()
  if self.stopped_epoch > 0 and self.verbose then
    callbacks.end_live_line()
    self._write(("Epoch %05d: early stopping\n"):format(self.stopped_epoch))
  end
end

-- LearningRateScheduler ------------------------------------------------------------------

local LearningRateScheduler = Callback:extend("LearningRateScheduler")
M.LearningRateScheduler = LearningRateScheduler

--- LearningRateScheduler(learning_rate_function): after each step, the
-- optimizer's fixed learning rate becomes learning_rate_function(lr,
-- cur_step_num).
function LearningRateScheduler:init(fn)
  if not T.is_callable(fn) then
    raise(("TypeError: For 'LearningRateScheduler', the 'learning_rate_function' must be a function, but got %s.")
      :format(type_name(fn)))
  end
  self.learning_rate_function = fn
end

function LearningRateScheduler:on_train_step_end(run_context)
  local cb = args_of("on_train_step_end", run_context)
  local lr = cb.optimizer and cb.optimizer.learning_rate
  if not parameter.is_parameter(lr) then
    raise("TypeError: LearningRateScheduler does not support dynamic learning rate and group learning rate now.")
  end
  local old = lr:item()
  local new = self.learning_rate_function(old, cb.cur_step_num)
  if type(new) ~= "number" or new ~= new then
    raise(("TypeError: For 'LearningRateScheduler', the learning_rate_function must return a number, but got %s.")
      :format(type(new) == "number" and tostring(new) or type_name(new)))
  end
  if math.abs(new - old) > 1e-10 * math.max(math.abs(new), math.abs(old)) then
    lr:set_data(core.tensor(new, lr.dtype))
  end
end

-- History ----------------------------------------------------------------------------------

local History = Callback:extend("History")
M.History = History

--- History(): at each epoch's end, appends the epoch number to `epoch`,
-- the last step's loss to history.net_output, and each value of the
-- run's eval_results (Model:fit) to history[name].
function History:init()
  self.epoch, self.history = {}, {}
end

function History:on_train_begin()
  self.epoch, self.history = {}, {}
end

local function append(h, k, v)
  local l = h[k]
  if l == nil then
    l = {}
    h[k] = l
  end
  l[#l + 1] = v
end

function History:on_train_epoch_end(run_context)
  local cb = args_of("on_train_epoch_end", run_context)
  self.epoch[#self.epoch + 1] = cb.cur_epoch_num or #self.epoch + 1
  local loss = callbacks.loss_value(cb.net_outputs)
  if loss ~= nil then append(self.history, "net_output", loss) end
  local r = cb.eval_results
  if type(r) == "table" then
    local names = {}
    for k in pairs(r) do if type(k) == "string" then names[#names + 1] = k end end
    table.sort(names)
    for _, k in ipairs(names) do append(self.history, k, r[k]) end
  end
end

-- LambdaCallback ---------------------------------------------------------------------------

local LambdaCallback = Callback:extend("LambdaCallback")
M.LambdaCallback = LambdaCallback

local HOOKS = { "on_train_epoch_begin", "on_train_epoch_end", "on_train_step_begin", "on_train_step_end",
  "on_train_begin", "on_train_end", "on_eval_epoch_begin", "on_eval_epoch_end", "on_eval_step_begin",
  "on_eval_step_end", "on_eval_begin", "on_eval_end" }

--- LambdaCallback{on_train_begin =, on_train_epoch_end =, ...} (MindSpore's
-- twelve on_train_* / on_eval_* names, or them positionally in MindSpore's
-- order): a callback made of functions, each called with the run context.
function LambdaCallback:init(...)
  local a = args_util.named("LambdaCallback", HOOKS, 3, select("#", ...), ...)
  for _, k in ipairs(HOOKS) do
    local f = a[k]
    if f ~= nil then
      if not T.is_callable(f) then
        raise(("TypeError: For 'LambdaCallback', the '%s' must be a function, but got %s."):format(k, type_name(f)))
      end
      self[k] = function(_, run_context) return f(run_context) end
    end
  end
end

return M
