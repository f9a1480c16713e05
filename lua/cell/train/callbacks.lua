--- cell.train's callbacks, as MindSpore's: Callback (the protocol),
-- RunContext, LossMonitor, TimeMonitor, CheckpointConfig and ModelCheckpoint.
--
-- Model.train calls, on each callback that has them, on_train_begin,
-- on_train_epoch_begin, on_train_step_begin, on_train_step_end,
-- on_train_epoch_end and on_train_end, each with the run context (Model.eval
-- calls the on_eval_* ones). The run context carries the callback
-- parameters as fields, and run_context:original_args() returns it, as
-- MindSpore's does: train_network, network, loss_fn, optimizer,
-- train_dataset, epoch_num, batch_num, cur_epoch_num, cur_step_num (counted
-- over all epochs), step_in_epoch, batch_size (samples in the last batch),
-- net_outputs (the loss), mode ("train" or "eval"), dataset_sink_mode.
-- run_context:request_stop() ends training after the current step.
--
-- A callback is an instance of a Callback subclass or any table with some of
-- those methods. Callback's on_train_* methods call MindSpore's older names
-- (begin, epoch_begin, step_begin, step_end, epoch_end, ["end"]), so either
-- may be overridden.
--
-- The monitors print through a writer, function(text), io.stdout by default
-- (options `writer =`); TimeMonitor reads a clock, function() -> seconds,
-- cell.perf_counter by default (option `clock =`).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local type_name = T.type_name

local M = {}

local is_plain = T.is_plain

--- The line a ProgressBar keeps redrawing on the terminal, if any: a
-- function that clears it. A monitor ends it (M.end_live_line) before it
-- prints, so its line does not run on after the bar's; the bar draws
-- itself again at its next step.
local live_line = nil

--- Set (or, with nil, unset) the function that clears the live line.
function M.set_live_line(clear) live_line = clear end

--- Clear the progress bar's line, if one is on the terminal, before
-- printing something else there; the bar redraws after.
function M.end_live_line()
  local clear = live_line
  if clear then
    live_line = nil
    clear()
  end
end

local function stdout_writer(s)
  io.stdout:write(s)
  io.stdout:flush()
end

local function check_fn(cls, what, v, lvl)
  if type(v) ~= "function" then
    raise(("TypeError: For '%s', the '%s' must be a function, but got %s."):format(cls, what, type_name(v)))
  end
  return v
end

local check_positive_int = require("cell.util.checks").positive_int -- (cls, what, v)

--- A float as Python's repr writes it (what MindSpore's print shows):
-- the shortest digits that read back, fixed notation for exponents in
-- [-4, 16), else d.ddde+XX.
function M.py_float(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  if x == 0 then return 1 / x < 0 and "-0.0" or "0.0" end
  local s
  for p = 0, 16 do
    s = ("%." .. p .. "e"):format(x)
    if tonumber(s) == x then break end
  end
  local sign, int, frac, exp = s:match("^(%-?)(%d)%.?(%d*)e([-+]%d+)$")
  exp = tonumber(exp)
  local digits = (int .. frac):gsub("0+$", "")
  if digits == "" then digits = "0" end
  if exp < -4 or exp >= 16 then
    local mant = digits:sub(1, 1)
    if #digits > 1 then mant = mant .. "." .. digits:sub(2) end
    return ("%s%se%s%02d"):format(sign, mant, exp < 0 and "-" or "+", math.abs(exp))
  end
  if exp < 0 then return sign .. "0." .. string.rep("0", -exp - 1) .. digits end
  if #digits <= exp + 1 then return sign .. digits .. string.rep("0", exp + 1 - #digits) .. ".0" end
  return sign .. digits:sub(1, exp + 1) .. "." .. digits:sub(exp + 2)
end

--- The loss of net_outputs as a number: a Tensor's mean (the first
-- element of a list of outputs), or the number itself.
function M.loss_value(out)
  if type(out) == "table" and not core.is_tensor(out) then out = out[1] end
  if core.is_tensor(out) then
    if out:numel() == 1 then return out:item() end
    return out:astype(core.float64):mean():item()
  end
  if type(out) == "number" then return out end
  return nil
end

-- RunContext ----------------------------------------------------------------------------

local RunContext = {}
RunContext.__index = RunContext
RunContext.__name = "RunContext"

--- A run context holding the fields of `params`.
function M.RunContext(params)
  if params ~= nil and (type(params) ~= "table" or getmetatable(params) ~= nil) then
    require("cell.errors").type_error("RunContext", "params", "a table of fields", params)
  end
  local rc = setmetatable({}, RunContext)
  for k, v in pairs(params or {}) do rc[k] = v end
  return rc
end

--- The callback parameters (the run context itself).
function RunContext:original_args() return self end

--- The callback parameters of `rc`, which must be a run context (a TypeError
-- naming the callback method otherwise).
local function args_of(method, rc)
  local f = type(rc) == "table" and rc.original_args
  if type(f) ~= "function" then
    require("cell.errors").type_error(method, "run_context", "a RunContext", rc)
  end
  return f(rc)
end
M.args_of = args_of
--- Ask training to stop after the current step.
function RunContext:request_stop() self._stop_requested = true end
function RunContext:get_stop_requested() return self._stop_requested == true end

-- Callback ---------------------------------------------------------------------------------

local Callback = class("Callback")
M.Callback = Callback

-- MindSpore's older protocol, which the on_train_* methods call.
function Callback:begin() end
function Callback:epoch_begin() end
function Callback:step_begin() end
function Callback:step_end() end
function Callback:epoch_end() end
Callback["end"] = function() end

function Callback:on_train_begin(run_context) self:begin(run_context) end
function Callback:on_train_epoch_begin(run_context) self:epoch_begin(run_context) end
function Callback:on_train_step_begin(run_context) self:step_begin(run_context) end
function Callback:on_train_step_end(run_context) self:step_end(run_context) end
function Callback:on_train_epoch_end(run_context) self:epoch_end(run_context) end
function Callback:on_train_end(run_context) self["end"](self, run_context) end
function Callback:on_eval_begin() end
function Callback:on_eval_epoch_begin() end
function Callback:on_eval_step_begin() end
function Callback:on_eval_step_end() end
function Callback:on_eval_epoch_end() end
function Callback:on_eval_end() end

function Callback:__tostring() return T.class_name(self) .. "()" end

--- Options common to the monitors: writer and clock.
local function io_options(self, cls, o, lvl)
  if type(o) ~= "table" or getmetatable(o) ~= nil then
    require("cell.errors").type_error(cls, "options", "a table", o)
  end
  self._write = o.writer == nil and stdout_writer or check_fn(cls, "writer", o.writer, lvl + 1)
  self._clock = o.clock == nil and core.perf_counter or check_fn(cls, "clock", o.clock, lvl + 1)
end

-- LossMonitor --------------------------------------------------------------------------------

local LossMonitor = Callback:extend("LossMonitor")
M.LossMonitor = LossMonitor

local LOSS_MONITOR_OPTIONS = { "per_print_times", "writer", "clock" }

--- LossMonitor([per_print_times = 1]) or LossMonitor{per_print_times =,
-- writer =}: every per_print_times steps, "epoch: E step: S, loss is L"
-- (S counted within the epoch, L as Python prints a float); 0 prints
-- nothing. A NaN or infinite loss stops training with a ValueError. In
-- Model:fit, an epoch that evaluated ends with "Eval result: epoch E,
-- metrics: {...}".
function LossMonitor:init(...)
  local opts = args_util.named("LossMonitor", LOSS_MONITOR_OPTIONS, 3, select("#", ...), ...)
  local per_print_times = opts.per_print_times
  if per_print_times == nil then per_print_times = 1 end
  if type(per_print_times) ~= "number" or per_print_times ~= math.floor(per_print_times) or per_print_times < 0
      or per_print_times == math.huge then
    raise(("ValueError: For 'LossMonitor', the argument 'per_print_times' must be an integer >= 0, but got %s.")
      :format(type(per_print_times) == "number" and tostring(per_print_times) or type_name(per_print_times)))
  end
  self._per_print_times = per_print_times
  self._last_print_time = 0
  io_options(self, "LossMonitor", opts, 3)
end

function LossMonitor:on_train_begin() self._last_print_time = 0 end

function LossMonitor:on_train_step_end(run_context)
  local cb = args_of("on_train_step_end", run_context)
  local loss = M.loss_value(cb.net_outputs)
  local batch_num = cb.batch_num or 0
  local step_in_epoch = batch_num > 0 and (cb.cur_step_num - 1) % batch_num + 1 or cb.cur_step_num
  if loss ~= nil and (loss ~= loss or loss == math.huge or loss == -math.huge) then
    error(("ValueError: epoch: %d step: %d. Invalid loss, terminating training."):format(cb.cur_epoch_num, step_in_epoch), 0)
  end
  local per = self._per_print_times
  if per ~= 0 and cb.cur_step_num <= self._last_print_time then
    while cb.cur_step_num <= self._last_print_time do self._last_print_time = self._last_print_time - per end
  end
  if per ~= 0 and cb.cur_step_num - self._last_print_time >= per then
    self._last_print_time = cb.cur_step_num
    local text = loss ~= nil and M.py_float(loss) or tostring(cb.net_outputs)
    M.end_live_line()
    self._write(("epoch: %d step: %d, loss is %s\n"):format(cb.cur_epoch_num, step_in_epoch, text))
  end
end

--- In Model:fit, after an epoch that evaluated: "Eval result: epoch E,
-- metrics: {'accuracy': 0.89}", as MindSpore's LossMonitor prints it.
function LossMonitor:on_train_epoch_end(run_context)
  local cb = args_of("on_train_epoch_end", run_context)
  if cb.metrics ~= nil then
    M.end_live_line()
    self._write(("Eval result: epoch %d, metrics: %s\n"):format(cb.cur_epoch_num, tostring(cb.metrics)))
  end
end

-- TimeMonitor ---------------------------------------------------------------------------------

local TimeMonitor = Callback:extend("TimeMonitor")
M.TimeMonitor = TimeMonitor

local TIME_MONITOR_OPTIONS = { "data_size", "writer", "clock" }

--- TimeMonitor([data_size]) or TimeMonitor{data_size =, writer =, clock =}:
-- at each epoch's end, "Train epoch time: T ms, per step time: S ms", S
-- being T over the batches per epoch (data_size when the dataset does not
-- tell).
function TimeMonitor:init(...)
  local opts = args_util.named("TimeMonitor", TIME_MONITOR_OPTIONS, 3, select("#", ...), ...)
  local data_size = opts.data_size
  if data_size ~= nil then check_positive_int("TimeMonitor", "data_size", data_size, 3) end
  self.data_size = data_size
  io_options(self, "TimeMonitor", opts, 3)
end

function TimeMonitor:on_train_epoch_begin() self._epoch_time = self._clock() end

function TimeMonitor:on_train_epoch_end(run_context)
  local cb = args_of("on_train_epoch_end", run_context)
  local ms = (self._clock() - (self._epoch_time or self._clock())) * 1000
  local steps = self.data_size
  if type(cb.batch_num) == "number" and cb.batch_num > 0 then steps = cb.batch_num end
  if steps == nil then
    error("ValueError: For 'TimeMonitor', the number of steps per epoch is unknown; give data_size.", 0)
  end
  local mode = cb.mode or "train"
  mode = mode:sub(1, 1):upper() .. mode:sub(2):lower()
  M.end_live_line()
  self._write(("%s epoch time: %5.3f ms, per step time: %5.3f ms\n"):format(mode, ms, ms / steps))
end

-- ModelCheckpoint -------------------------------------------------------------------------------

local CONFIG_OPTIONS = { "save_checkpoint_steps", "keep_checkpoint_max", "saved_network" }

--- CheckpointConfig{save_checkpoint_steps = 1, keep_checkpoint_max = 5,
-- saved_network = nil} (or positionally): when and what ModelCheckpoint saves.
function M.CheckpointConfig(...)
  local o = args_util.named("CheckpointConfig", CONFIG_OPTIONS, 2, select("#", ...), ...)
  local cfg = { save_checkpoint_steps = 1, keep_checkpoint_max = 5 }
  if o.save_checkpoint_steps ~= nil then
    cfg.save_checkpoint_steps = check_positive_int("CheckpointConfig", "save_checkpoint_steps", o.save_checkpoint_steps, 2)
  end
  if o.keep_checkpoint_max ~= nil then
    cfg.keep_checkpoint_max = check_positive_int("CheckpointConfig", "keep_checkpoint_max", o.keep_checkpoint_max, 2)
  end
  if o.saved_network ~= nil and not I.is_cell(o.saved_network) then
    raise(("TypeError: For 'CheckpointConfig', the 'saved_network' must be a Cell, but got %s.")
      :format(type_name(o.saved_network)))
  end
  cfg.saved_network = o.saved_network
  cfg._is_config = true
  return cfg
end

local ModelCheckpoint = Callback:extend("ModelCheckpoint")
M.ModelCheckpoint = ModelCheckpoint

--- Whether path names an existing directory (or file).
local function exists(path) return os.rename(path, path) and true or false end

local CHECKPOINT_OPTIONS = { "prefix", "directory", "config", "save_checkpoint_steps", "keep_checkpoint_max",
  "saved_network", values = { "config" } }

--- ModelCheckpoint([prefix = "CKP", directory = ".", config]) or
-- ModelCheckpoint{prefix =, directory =, save_checkpoint_steps =,
-- keep_checkpoint_max =, saved_network =}: saves the training network (its
-- parameters and the optimizer's state; config.saved_network instead when
-- given) with cell.save_checkpoint every save_checkpoint_steps steps and
-- at the end of training, as directory/prefix-<epoch>_<step in epoch>.safetensors
-- (MindSpore's name with format = "safetensors"), keeping the keep_checkpoint_max newest files it wrote.
function ModelCheckpoint:init(...)
  local o = args_util.named("ModelCheckpoint", CHECKPOINT_OPTIONS, 3, select("#", ...), ...)
  local prefix, directory, config = o.prefix, o.directory, o.config
  if config ~= nil and type(config) ~= "table" then
    raise(("TypeError: For 'ModelCheckpoint', the argument 'config' must be a CheckpointConfig (a table), but got %s.")
      :format(type_name(config)))
  end
  for _, k in ipairs(CONFIG_OPTIONS) do
    if o[k] ~= nil then
      if o.config ~= nil then
        raise(("TypeError: ModelCheckpoint() got both 'config' and '%s'; give the checkpoint options in one of "
          .. "them"):format(k))
      end
      config = config or {}
      config[k] = o[k]
    end
  end
  if prefix == nil then prefix = "CKP" end
  if type(prefix) ~= "string" or prefix == "" or prefix:find("/", 1, true) then
    raise(("ValueError: For 'ModelCheckpoint', the argument 'prefix' must be a non-empty string without '/', "
      .. "but got %s."):format(type(prefix) == "string" and ("'" .. prefix .. "'") or type_name(prefix)))
  end
  if directory == nil then directory = "." end
  if type(directory) ~= "string" or directory == "" then
    raise(("TypeError: For 'ModelCheckpoint', the argument 'directory' must be a path (a string), but got %s.")
      :format(type_name(directory)))
  end
  if config == nil then
    config = M.CheckpointConfig {}
  elseif is_plain(config) and not config._is_config then
    local ok, cfg = pcall(M.CheckpointConfig, config)
    if not ok then rethrow(cfg) end
    config = cfg
  elseif not is_plain(config) then
    raise(("TypeError: For 'ModelCheckpoint', the argument 'config' must be a CheckpointConfig (a table), but got %s.")
      :format(type_name(config)))
  end
  self._prefix, self._directory, self._config = prefix, directory, config
  self._files = {}
  self._last_saved_step = nil
  self.latest_ckpt_file_name = nil
end

--- The function that saves: cell.save_checkpoint(net, path).
local function saver()
  return require("cell.serialization").save_checkpoint
end

function ModelCheckpoint:on_train_begin()
  if saver() == nil then
    error("NotImplementedError: ModelCheckpoint needs cell.save_checkpoint, which this build does not have.", 0)
  end
  local dir = self._directory
  if not exists(dir) then
    local quoted = "'" .. dir:gsub("'", "'\\''") .. "'"
    os.execute("mkdir -p " .. quoted)
    if not exists(dir) then
      error(("RuntimeError: For 'ModelCheckpoint', the directory '%s' does not exist and could not be made."):format(dir), 0)
    end
  end
end

function ModelCheckpoint:_save(cb)
  if cb.cur_step_num == self._last_saved_step then return end
  -- Data-parallel training: the ranks hold the same weights; rank 0 writes.
  local pc = require "cell.parallel_context"
  if pc.distributed() and pc.rank() ~= 0 then return end
  local batch_num = cb.batch_num or 0
  local step_in_epoch = batch_num > 0 and (cb.cur_step_num - 1) % batch_num + 1 or cb.cur_step_num
  local name = ("%s-%d_%d.safetensors"):format(self._prefix, cb.cur_epoch_num, step_in_epoch)
  local path = self._directory:gsub("/+$", "") .. "/" .. name
  local net = self._config.saved_network or cb.train_network
  saver()(net, path)
  self._last_saved_step = cb.cur_step_num
  self.latest_ckpt_file_name = path
  local files = self._files
  for i = #files, 1, -1 do
    if files[i] == path then table.remove(files, i) end -- written again: now the newest
  end
  files[#files + 1] = path
  while #files > self._config.keep_checkpoint_max do
    os.remove(table.remove(files, 1))
  end
end

function ModelCheckpoint:on_train_step_end(run_context)
  local cb = args_of("on_train_step_end", run_context)
  if cb.cur_step_num % self._config.save_checkpoint_steps == 0 then self:_save(cb) end
end

function ModelCheckpoint:on_train_end(run_context)
  local cb = args_of("on_train_end", run_context)
  if (cb.cur_step_num or 0) > 0 then self:_save(cb) end
end

return M
