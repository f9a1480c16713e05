--- cell.train.SummaryRecord and SummaryCollector: scalars and histograms
-- written as TensorBoard event files (see cell.train.tfevents for the
-- format), as MindSpore's summary API writes its own.
--
--     local rec = cell.train.SummaryRecord("runs/a")
--     rec:add_value("scalar", "loss", loss)          -- a one-element Tensor or a number
--     rec:add_value("histogram", "fc.weight", net.fc.weight)
--     rec:record(step)                               -- one Event with the values added since
--     rec:close()
--
--     model:train(10, ds, {callbacks = {cell.train.SummaryCollector("runs/b")}})
--
-- `tensorboard --logdir runs` shows them.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local callbacks = require "cell.train.callbacks"
local tf = require "cell.train.tfevents"

local type_name = T.type_name
local floor = math.floor

local M = {}

--- The summary of a tensor's values as a HistogramProto table: min, max,
-- num, sum, sum_squares and `bins` equal-width buckets between min and max
-- (bucket_limit their right edges, bucket their counts). Non-finite values
-- are left out.
function M.histogram(t, bins)
  bins = bins or 30
  local list = t:astype(core.float64):reshape({ -1 }):tolist()
  local vals, lo, hi, sum, sq = {}, math.huge, -math.huge, 0, 0
  for i = 1, #list do
    local v = list[i]
    if v == v and v ~= math.huge and v ~= -math.huge then
      vals[#vals + 1] = v
      if v < lo then lo = v end
      if v > hi then hi = v end
      sum, sq = sum + v, sq + v * v
    end
  end
  local n = #vals
  if n == 0 then
    return { min = 0, max = 0, num = 0, sum = 0, sum_squares = 0, bucket_limit = { 0 }, bucket = { 0 } }
  end
  local limits, counts = {}, {}
  if hi == lo then
    limits[1], counts[1] = hi, n
  else
    local w = (hi - lo) / bins
    for i = 1, bins do limits[i], counts[i] = lo + w * i, 0 end
    limits[bins] = hi
    for i = 1, n do
      local b = floor((vals[i] - lo) / w) + 1
      if b > bins then b = bins end
      counts[b] = counts[b] + 1
    end
  end
  return { min = lo, max = hi, num = n, sum = sum, sum_squares = sq, bucket_limit = limits, bucket = counts }
end

--- This machine's name, for the file name.
local function hostname()
  local f = io.open("/proc/sys/kernel/hostname", "r") or io.open("/etc/hostname", "r")
  local name
  if f then
    name = f:read("*l")
    f:close()
  end
  name = name and name:gsub("[^%w%.%-_]", "") or ""
  return name ~= "" and name or "localhost"
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function mkdir_p(dir)
  if core.file_kind and core.file_kind(dir) == "directory" then return true end
  os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
  return core.file_kind == nil or core.file_kind(dir) == "directory"
end

-- SummaryRecord ---------------------------------------------------------------------------

local SummaryRecord = class("SummaryRecord")
M.SummaryRecord = SummaryRecord

local RECORD_OPTIONS = { "log_dir", "file_prefix", "file_suffix", "clock" }
local PLUGINS = { scalar = true, histogram = true }

--- SummaryRecord(log_dir [, file_prefix = "events", file_suffix = ""])
-- (or options; clock = function() -> seconds since the epoch, os.time by
-- default): opens log_dir/<file_prefix>.out.tfevents.<time>.<host><file_suffix>
-- (log_dir made when missing) and writes the file_version event.
function SummaryRecord:init(...)
  local o = args_util.named("SummaryRecord", RECORD_OPTIONS, 3, select("#", ...), ...)
  local dir = o.log_dir
  if type(dir) ~= "string" or dir == "" then
    raise(("TypeError: For 'SummaryRecord', the 'log_dir' must be a path (a non-empty string), but got %s.")
      :format(type_name(dir)))
  end
  local prefix, suffix = o.file_prefix or "events", o.file_suffix or ""
  for name, v in pairs { file_prefix = prefix, file_suffix = suffix } do
    if type(v) ~= "string" or v:find("/", 1, true) then
      raise(("ValueError: For 'SummaryRecord', the '%s' must be a string without '/', but got %s.")
        :format(name, type(v) == "string" and ("'" .. v .. "'") or type_name(v)))
    end
  end
  if o.clock ~= nil and type(o.clock) ~= "function" then
    raise(("TypeError: For 'SummaryRecord', the 'clock' must be a function, but got %s."):format(type_name(o.clock)))
  end
  self._clock = o.clock or os.time
  if not mkdir_p(dir) then
    raise(("RuntimeError: For 'SummaryRecord', the directory '%s' does not exist and could not be made."):format(dir))
  end
  local now = self._clock()
  local base = ("%s/%s.out.tfevents.%d.%s%s"):format(dir:gsub("/+$", ""), prefix, floor(now), hostname(), suffix)
  local path, n = base, 0
  while exists(path) do
    n = n + 1
    path = base .. "." .. n
  end
  local f, why = io.open(path, "wb")
  if not f then
    raise(("RuntimeError: For 'SummaryRecord', cannot write '%s': %s"):format(path, tostring(why)))
  end
  self.log_dir, self.file_path, self._file = dir, path, f
  self._pending = {}
  self:_write(tf.event(now, 0, "brain.Event:2"))
  self:flush()
end

function SummaryRecord:_write(event)
  local ok, why = self._file:write(tf.record(event))
  if not ok then
    raise(("RuntimeError: For 'SummaryRecord', writing '%s' failed: %s"):format(self.file_path, tostring(why)))
  end
end

function SummaryRecord:_check_open(method)
  if self._file == nil then
    raise(("RuntimeError: For 'SummaryRecord.%s', the SummaryRecord is closed."):format(method))
  end
end

--- add_value(plugin, name, value): "scalar" with a one-element Tensor or
-- a number, or "histogram" with a Tensor; kept until the next record.
function SummaryRecord:add_value(plugin, name, value)
  self:_check_open("add_value")
  if not PLUGINS[plugin] then
    raise(("ValueError: For 'add_value', the 'plugin' must be 'scalar' or 'histogram', but got %s.")
      :format(type(plugin) == "string" and ("'" .. plugin .. "'") or type_name(plugin)))
  end
  if type(name) ~= "string" or name == "" then
    raise(("TypeError: For 'add_value', the 'name' must be a non-empty string, but got %s."):format(type_name(name)))
  end
  if plugin == "scalar" then
    local v = value
    if core.is_tensor(v) then
      if v:numel() ~= 1 then
        raise(("ValueError: For 'add_value', a scalar must have one element, but '%s' has shape %s.")
          :format(name, T.shape_str(v.shape)))
      end
      v = v:item()
    end
    if type(v) ~= "number" then
      raise(("TypeError: For 'add_value', the scalar '%s' must be a Tensor or a number, but got %s.")
        :format(name, type_name(value)))
    end
    self._pending[#self._pending + 1] = { tag = name, simple_value = v }
  else
    if not core.is_tensor(value) then
      raise(("TypeError: For 'add_value', the histogram '%s' must be a Tensor, but got %s."):format(name, type_name(value)))
    end
    self._pending[#self._pending + 1] = { tag = name, histo = M.histogram(value) }
  end
end

--- record(step): write the values added since the last record as one
-- Event at `step` (an integer >= 0); true when something was written.
function SummaryRecord:record(step)
  self:_check_open("record")
  if type(step) ~= "number" or step ~= floor(step) or step < 0 or step >= 2 ^ 53 then
    raise(("ValueError: For 'record', the 'step' must be an integer >= 0, but got %s.")
      :format(type(step) == "number" and tostring(step) or type_name(step)))
  end
  if #self._pending == 0 then return false end
  local values = self._pending
  self._pending = {}
  self:_write(tf.event(self._clock(), step, nil, values))
  return true
end

--- flush(): push what was recorded to the file.
function SummaryRecord:flush()
  if self._file then self._file:flush() end
end

--- close(): flush and close the file; later calls but close raise.
function SummaryRecord:close()
  if self._file then
    self._file:close()
    self._file = nil
  end
end

function SummaryRecord:__tostring() return ("SummaryRecord('%s')"):format(self.file_path or "?") end

-- SummaryCollector --------------------------------------------------------------------------

local SummaryCollector = callbacks.Callback:extend("SummaryCollector")
M.SummaryCollector = SummaryCollector

local COLLECTOR_OPTIONS = { "summary_dir", "collect_freq", "collect_specified_data", "keep_default_action", "clock" }
local SPECIFIED = { collect_metric = "boolean", histogram_regular = "string", collect_learning_rate = "boolean" }

--- The parameters whose histograms are written: those whose name matches
-- the Lua pattern, or the first five.
local function histogram_params(net, pattern)
  local out = {}
  if net == nil then return out end
  for name, p in net:parameters_and_names() do
    if pattern then
      if name:find(pattern) then out[#out + 1] = { name, p } end
    elseif #out < 5 then
      out[#out + 1] = { name, p }
    end
  end
  return out
end
M.histogram_params = histogram_params

--- SummaryCollector(summary_dir [, collect_freq = 10,
-- collect_specified_data, keep_default_action = true]) (or options): a
-- callback writing, every collect_freq steps, the loss ("loss"), the
-- learning rate ("learning_rate") and histograms of the parameters
-- (the first five, or those whose name matches
-- collect_specified_data.histogram_regular, a Lua pattern), and at each
-- epoch's end the eval_results of Model:fit ("eval_<name>").
function SummaryCollector:init(...)
  local o = args_util.named("SummaryCollector", COLLECTOR_OPTIONS, 3, select("#", ...), ...)
  if type(o.summary_dir) ~= "string" or o.summary_dir == "" then
    raise(("TypeError: For 'SummaryCollector', the 'summary_dir' must be a path (a non-empty string), but got %s.")
      :format(type_name(o.summary_dir)))
  end
  local freq = o.collect_freq == nil and 10 or o.collect_freq
  if type(freq) ~= "number" or freq ~= floor(freq) or freq < 1 or freq == math.huge then
    raise(("ValueError: For 'SummaryCollector', the 'collect_freq' must be a positive integer, but got %s.")
      :format(type(freq) == "number" and tostring(freq) or type_name(freq)))
  end
  local keep = o.keep_default_action
  if keep ~= nil and type(keep) ~= "boolean" then
    raise(("TypeError: For 'SummaryCollector', the 'keep_default_action' must be a boolean, but got %s.")
      :format(type_name(keep)))
  end
  keep = keep ~= false
  local spec = o.collect_specified_data or {}
  if not T.is_plain(spec) then
    raise(("TypeError: For 'SummaryCollector', the 'collect_specified_data' must be a table, but got %s.")
      :format(type_name(spec)))
  end
  local collect = { collect_metric = keep, collect_learning_rate = keep, histogram = keep }
  for k, v in pairs(spec) do
    local want = SPECIFIED[k]
    if want == nil then
      raise(("ValueError: For 'SummaryCollector', the key '%s' of 'collect_specified_data' is not one of "
        .. "collect_metric, collect_learning_rate, histogram_regular."):format(tostring(k)))
    end
    if type(v) ~= want then
      raise(("TypeError: For 'SummaryCollector', collect_specified_data.%s must be a %s, but got %s.")
        :format(k, want, type_name(v)))
    end
    if k == "histogram_regular" then collect.histogram, collect.pattern = true, v else collect[k] = v end
  end
  self.summary_dir, self.collect_freq, self._collect, self._clock = o.summary_dir, freq, collect, o.clock
end

function SummaryCollector:on_train_begin(run_context)
  local cb = callbacks.args_of("on_train_begin", run_context)
  if self._record == nil then
    self._record = SummaryRecord { log_dir = self.summary_dir, clock = self._clock }
  end
  self._params = self._collect.histogram and histogram_params(cb.network or cb.train_network, self._collect.pattern) or {}
end

function SummaryCollector:_collect_step(cb)
  local rec = self._record
  local loss = callbacks.loss_value(cb.net_outputs)
  if loss ~= nil then rec:add_value("scalar", "loss", loss) end
  local lr = cb.optimizer and cb.optimizer.learning_rate
  if self._collect.collect_learning_rate and core.is_tensor(lr) and lr:numel() == 1 then
    rec:add_value("scalar", "learning_rate", lr:item())
  end
  for _, e in ipairs(self._params) do rec:add_value("histogram", e[1], e[2]) end
  rec:record(cb.cur_step_num)
end

function SummaryCollector:on_train_step_end(run_context)
  local cb = callbacks.args_of("on_train_step_end", run_context)
  if self._record and (cb.cur_step_num == 1 or cb.cur_step_num % self.collect_freq == 0) then
    self:_collect_step(cb)
  end
end

function SummaryCollector:on_train_epoch_end(run_context)
  local cb = callbacks.args_of("on_train_epoch_end", run_context)
  local r = cb.eval_results
  if self._record and self._collect.collect_metric and type(r) == "table" then
    local names = {}
    for k, v in pairs(r) do
      if type(k) == "string" and (type(v) == "number" or core.is_tensor(v) and v:numel() == 1) then
        names[#names + 1] = k
      end
    end
    table.sort(names)
    for _, k in ipairs(names) do
      self._record:add_value("scalar", k:sub(1, 5) == "eval_" and k or "eval_" .. k, r[k])
    end
    self._record:record(cb.cur_step_num)
  end
  if self._record then self._record:flush() end
end

function SummaryCollector:on_train_end()
  if self._record then
    self._record:close()
    self._record = nil
  end
end

return M
