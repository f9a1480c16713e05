--- cell.train: MindSpore's high-level training API. Model wraps a network,
-- a loss function, an optimizer and metrics:
--
--     local model = cell.train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params()),
--                                    {"accuracy", "loss"})
--     model:train(5, train_set, {callbacks = {cell.train.LossMonitor(100)}})
--     local res = model:eval(test_set)     --> {accuracy = 0.91, loss = 0.25}
--
-- A dataset is what cell.dataset.batches returns: an object with :len()
-- (batches per epoch) and :each(epoch) (an iterator of (x, y) batches); a
-- plain list of {x, y} pairs works too. Labels are class ids from 1.
--
-- Model.train runs train_network (TrainOneStepCell(WithLossCell(network,
-- loss_fn), optimizer), or TrainOneStepCell(network, optimizer) without a
-- loss_fn, the network then returning the loss) in training mode, calling
-- the callbacks (see cell.train.callbacks) and, unless progress = false,
-- a ProgressBar (see cell.train.progress). Model.eval runs the network in
-- inference mode without recording gradients and returns each metric's
-- value by name.
--
-- Exports: Model, Callback, RunContext, LossMonitor, TimeMonitor,
-- ModelCheckpoint, CheckpointConfig, ProgressBar, Metric, Accuracy, Loss.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local autograd = require "cell.autograd"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local callbacks = require "cell.train.callbacks"
local metrics = require "cell.train.metrics"
local progress = require "cell.train.progress"

local type_name = T.type_name

local M = {}
for _, mod in ipairs { callbacks, metrics, progress, (require "cell.train.reduce_lr"), (require "cell.train.callbacks_more"), (require "cell.train.summary"), (require "cell.train.report"),
  (require "cell.train.metrics_classification"), (require "cell.train.metrics_regression") } do
  for k, v in pairs(mod) do
    if type(k) == "string" and k:sub(1, 1):match("%u") then M[k] = v end
  end
end

local is_plain = T.is_plain

local is_callable = T.is_callable

local function is_optimizer(v) return require("cell.nn.optim.optimizer").is_optimizer(v) end

--- The metrics as an ordered list of {name, metric}.
local function parse_metrics(m, lvl)
  local out = {}
  if m == nil then return out end
  if type(m) == "string" then m = { m } end
  if not is_plain(m) then
    raise(("TypeError: For 'Model', the argument 'metrics' must be a list of names or a table of name = metric, "
      .. "but got %s."):format(type_name(m)))
  end
  local function check_metric(name, v)
    if type(v) == "string" then
      local ok, mt = pcall(metrics.get_metric_fn, v)
      if not ok then rethrow(mt) end
      return mt
    end
    if type(v) ~= "table" or type(v.update) ~= "function" or type(v.eval) ~= "function"
        or type(v.clear) ~= "function" then
      raise(("TypeError: For 'Model', the metric '%s' must be a metric name or an object with clear, update and eval, "
        .. "but got %s."):format(tostring(name), type_name(v)))
    end
    return v
  end
  for i = 1, #m do out[#out + 1] = { m[i], check_metric(m[i], m[i]) } end
  local named = {}
  for k in pairs(m) do
    if type(k) == "string" then named[#named + 1] = k
    elseif type(k) ~= "number" or k < 1 or k > #m or k ~= math.floor(k) then
      raise(("TypeError: For 'Model', metric names must be strings, but got %s."):format(type_name(k)))
    end
  end
  table.sort(named)
  for _, k in ipairs(named) do out[#out + 1] = { k, check_metric(k, m[k]) } end
  local seen = {}
  for _, e in ipairs(out) do
    if seen[e[1]] then raise(("ValueError: For 'Model', the metric '%s' is given twice."):format(e[1])) end
    seen[e[1]] = true
  end
  return out
end

-- Model ----------------------------------------------------------------------------------

local Model = class("Model")
M.Model = Model

local MODEL_OPTIONS = { "loss_fn", "optimizer", "metrics", "eval_network", values = { "metrics" } }

--- Model(network [, loss_fn, optimizer, metrics]) or Model(network,
-- {loss_fn =, optimizer =, metrics =, eval_network =}). eval_network,
-- when given, is called as eval_network(x, y) and returns (loss, logits).
function Model:init(network, ...)
  local loss_fn, optimizer, metric_spec, eval_network = args_util.parse("Model", MODEL_OPTIONS, 3, select("#", ...), ...)
  if not I.is_cell(network) then
    raise(("TypeError: For 'Model', the argument 'network' must be a Cell, but got %s."):format(type_name(network)))
  end
  if loss_fn ~= nil and not is_callable(loss_fn) then
    raise(("TypeError: For 'Model', the argument 'loss_fn' must be a Cell or a function, but got %s.")
      :format(type_name(loss_fn)))
  end
  if optimizer ~= nil and not is_optimizer(optimizer) then
    raise(("TypeError: For 'Model', the argument 'optimizer' must be an optimizer (nn.Optimizer), but got %s.")
      :format(type_name(optimizer)))
  end
  if eval_network ~= nil and not is_callable(eval_network) then
    raise(("TypeError: For 'Model', the argument 'eval_network' must be a Cell or a function, but got %s.")
      :format(type_name(eval_network)))
  end
  self.network, self.loss_fn, self.optimizer, self.eval_network = network, loss_fn, optimizer, eval_network
  self._metrics = parse_metrics(metric_spec, 4)
  self.predict_network = network
  if optimizer ~= nil then
    local nn = require "cell.nn"
    local with_loss = loss_fn ~= nil and nn.WithLossCell(network, loss_fn) or network
    self.train_network = nn.TrainOneStepCell(with_loss, optimizer)
  end
end

--- A dataset as (len, iterator maker): an object with len and each, or
-- a plain list of {x, y} pairs.
local function dataset_of(ds, what, lvl)
  if is_plain(ds) and not (type(ds.len) == "function" and type(ds.each) == "function") then
    local n = #ds
    for i = 1, n do
      if type(ds[i]) ~= "table" then
        raise(("TypeError: For 'Model', %s[%d] must be an {x, y} pair, but got %s."):format(what, i, type_name(ds[i])))
      end
    end
    return n, function()
      local i = 0
      return function()
        i = i + 1
        local b = ds[i]
        if b then return b[1], b[2] end
      end
    end
  end
  local ok = type(ds) == "table" or type(ds) == "userdata"
  ok = ok and type(ds.len) == "function" and type(ds.each) == "function"
  if not ok then
    raise(("TypeError: For 'Model', the argument '%s' must be a dataset (an object with len() and each(epoch), "
      .. "as cell.dataset.batches returns) or a list of {x, y} pairs, but got %s."):format(what, type_name(ds)))
  end
  local n = ds:len()
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then
    raise(("TypeError: For 'Model', %s:len() must return a count, but got %s."):format(what, tostring(n)))
  end
  return n, function(epoch) return ds:each(epoch) end
end

--- The callbacks as a list (one callback, a list, or nil).
local function callback_list(cbs, lvl)
  if cbs == nil then return {} end
  if not is_plain(cbs) or cbs[1] == nil and next(cbs) ~= nil then cbs = { cbs } end -- one callback
  local out = {}
  for i = 1, #cbs do
    local c = cbs[i]
    if type(c) ~= "table" then
      raise(("TypeError: For 'Model', callbacks[%d] must be a callback (a table of on_train_* methods), but got %s.")
        :format(i, type_name(c)))
    end
    out[i] = c
  end
  return out
end

local function call_all(list, method, rc)
  for i = 1, #list do
    local c = list[i]
    local f = c[method]
    if f then f(c, rc) end
  end
end

local function samples_in(x)
  if core.is_tensor(x) then return x.ndim > 0 and x:size(1) or 1 end
  if type(x) == "table" and core.is_tensor(x[1]) then return samples_in(x[1]) end
  return 0
end

--- Whether a plain table in the callbacks' place is a callback: one with
-- a function among its values (else it is options).
local function is_callback(t)
  for _, v in pairs(t) do
    if type(v) == "function" then return true end
  end
  return false
end

local TRAIN_OPTIONS = { "callbacks", "dataset_sink_mode", "sink_size", "initial_epoch", "progress", "report",
  value_if = { callbacks = is_callback } }
local FIT_OPTIONS = { "valid_dataset", "valid_frequency", "callbacks", "dataset_sink_mode", "valid_dataset_sink_mode",
  "sink_size", "initial_epoch", "progress", "report", value_if = { callbacks = is_callback } }
local EVAL_OPTIONS = { "callbacks", "dataset_sink_mode", value_if = { callbacks = is_callback } }

--- train(epoch, train_dataset [, callbacks, dataset_sink_mode, sink_size,
-- initial_epoch]) or train(epoch, train_dataset, {callbacks =, progress =,
-- report =, initial_epoch =, dataset_sink_mode =, sink_size =}). `epoch` is the
-- total number of epochs; with initial_epoch = k training resumes at epoch
-- k + 1. dataset_sink_mode and sink_size are accepted and ignored.
-- progress: nil or true for a ProgressBar, false for none, or a
-- ProgressBar (or any callback) of one's own. report: a path, where an
-- HTML report of the run is written at its end (a ReportCallback).
function Model:train(epoch, train_dataset, ...)
  local cbs, dataset_sink_mode, sink_size, initial_epoch, show, report =
    args_util.parse("Model.train", TRAIN_OPTIONS, 2, select("#", ...), ...)
  local _, _ = dataset_sink_mode, sink_size
  return self:_run("Model.train", epoch, train_dataset, cbs, initial_epoch, show, report)
end

--- fit(epoch, train_dataset [, valid_dataset, valid_frequency = 1,
-- callbacks, dataset_sink_mode, valid_dataset_sink_mode, sink_size,
-- initial_epoch]) (or those after train_dataset as options, with progress
-- and report as in train): train, and every valid_frequency epochs (and
-- after the last) evaluate valid_dataset with the model's metrics before
-- the callbacks' on_train_epoch_end, which find the result as the run
-- context's eval_results (and metrics, MindSpore's name).
function Model:fit(epoch, train_dataset, ...)
  local valid, freq, cbs, _, _, _, initial_epoch, show, report =
    args_util.parse("Model.fit", FIT_OPTIONS, 2, select("#", ...), ...)
  if freq == nil then freq = 1 end
  if type(freq) ~= "number" or freq ~= math.floor(freq) or freq < 1 or freq == math.huge then
    raise(("ValueError: For 'Model.fit', the argument 'valid_frequency' must be a positive integer, but got %s.")
      :format(type(freq) == "number" and tostring(freq) or type_name(freq)))
  end
  if valid ~= nil then
    if #self._metrics == 0 then
      raise("ValueError: For 'Model.fit', evaluating valid_dataset needs the model's argument 'metrics'.")
    end
    dataset_of(valid, "valid_dataset", 3)
  end
  return self:_run("Model.fit", epoch, train_dataset, cbs, initial_epoch, show, report, valid, freq)
end

--- The device of a network's first parameter ("CPU" when it has none).
local function device_of(network)
  if type(network) ~= "table" or type(network.get_parameters) ~= "function" then return "CPU" end
  for p in network:get_parameters() do return p.device end
  return "CPU"
end

--- v (a tensor, or a table of them) on device dev: MindSpore's Model feeds
-- each batch to the device its network runs on, so a net moved with
-- net:move_to("GPU") trains from a data set made on the host.
local function to_device(v, dev)
  if core.is_tensor(v) then
    if v.device ~= dev then return v:move_to(dev) end
    return v
  end
  if type(v) == "table" and getmetatable(v) == nil then
    local out = {}
    for k, e in pairs(v) do out[k] = to_device(e, dev) end
    return out
  end
  return v
end

function Model:_run(fname, epoch, train_dataset, cbs, initial_epoch, show, report, valid, freq)
  if show == nil then show = true end
  if self.train_network == nil then
    raise(("ValueError: For '%s', the model has no optimizer, so it cannot be trained; "
      .. "give Model an optimizer."):format(fname))
  end
  if type(epoch) ~= "number" or epoch ~= math.floor(epoch) or epoch < 1 or epoch == math.huge then
    raise(("ValueError: For '%s', the argument 'epoch' must be a positive integer, but got %s.")
      :format(fname, type(epoch) == "number" and tostring(epoch) or type_name(epoch)))
  end
  if initial_epoch == nil then initial_epoch = 0 end
  if type(initial_epoch) ~= "number" or initial_epoch ~= math.floor(initial_epoch) or initial_epoch < 0
      or initial_epoch >= epoch then
    raise(("ValueError: For '%s', the argument 'initial_epoch' must be an integer in [0, epoch), but got %s.")
      :format(fname, type(initial_epoch) == "number" and tostring(initial_epoch) or type_name(initial_epoch)))
  end
  local batch_num, each = dataset_of(train_dataset, "train_dataset", 3)
  local list = callback_list(cbs, 3)
  local eval_list = { (unpack or table.unpack)(list) }
  local pc = require "cell.parallel_context"
  if report ~= nil then
    if type(report) ~= "string" or report == "" then
      raise(("TypeError: For '%s', the option 'report' must be a path (a string), but got %s.")
        :format(fname, type_name(report)))
    end
    if not pc.distributed() or pc.rank() == 0 then list[#list + 1] = require("cell.train.report").ReportCallback(report) end
  end
  if show == true then
    -- data-parallel: one bar, rank 0's
    if not pc.distributed() or pc.rank() == 0 then list[#list + 1] = progress.ProgressBar() end
  elseif show ~= false then
    if type(show) ~= "table" then
      raise(("TypeError: For '%s', the option 'progress' must be a boolean or a callback, but got %s.")
        :format(fname, type_name(show)))
    end
    list[#list + 1] = show
  end
  local net = self.train_network
  net:set_train(true)
  local dev = device_of(self.network)
  local rc = callbacks.RunContext {
    train_network = net, network = self.network, loss_fn = self.loss_fn, optimizer = self.optimizer,
    train_dataset = train_dataset, epoch_num = epoch, batch_num = batch_num, cur_epoch_num = initial_epoch,
    cur_step_num = initial_epoch * batch_num, step_in_epoch = 0, mode = "train", dataset_sink_mode = false,
    list_callback = list, valid_dataset = valid,
  }
  call_all(list, "on_train_begin", rc)
  for e = initial_epoch + 1, epoch do
    rc.cur_epoch_num, rc.step_in_epoch, rc.eval_results, rc.metrics = e, 0, nil, nil
    call_all(list, "on_train_epoch_begin", rc)
    for x, y in each(e) do
      x, y = to_device(x, dev), to_device(y, dev)
      rc.cur_step_num = rc.cur_step_num + 1
      rc.step_in_epoch = rc.step_in_epoch + 1
      rc.batch_size = samples_in(x)
      call_all(list, "on_train_step_begin", rc)
      rc.net_outputs = net(x, y)
      call_all(list, "on_train_step_end", rc)
      if rc:get_stop_requested() then break end
    end
    if valid ~= nil and ((e - initial_epoch) % freq == 0 or e == epoch) then
      rc.eval_results = self:eval(valid, { callbacks = eval_list })
      rc.metrics = rc.eval_results -- MindSpore's cb_params.metrics (LossMonitor prints it)
      net:set_train(true)
    end
    call_all(list, "on_train_epoch_end", rc)
    if rc:get_stop_requested() then break end
  end
  call_all(list, "on_train_end", rc)
end

--- Logits and loss of one evaluation batch.
local function eval_batch(self, x, y, need_loss)
  if self.eval_network then
    local loss, logits = self.eval_network(x, y)
    return logits, loss
  end
  local logits = self.network(x)
  local loss
  if need_loss then loss = self.loss_fn(logits, y) end
  return logits, loss
end

--- A Python repr of a metric's value: floats as Python prints them,
-- integers (Lua 5.4) as integers, strings quoted, anything else by tostring.
local py_repr
function py_repr(v)
  if type(v) == "number" then
    if math.type and math.type(v) == "integer" then return tostring(v) end
    return callbacks.py_float(v)
  end
  if type(v) == "string" then return "'" .. (v:gsub("\\", "\\\\"):gsub("'", "\\'")) .. "'" end
  if core.is_tensor(v) then -- a metric's array (Precision, ConfusionMatrix): as numpy's array
    local function list(t)
      if type(t) ~= "table" then return py_repr(t) end
      local parts = {}
      for i = 1, #t do parts[i] = list(t[i]) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    return "array(" .. list(v:astype(core.float64):tolist()) .. ")"
  end
  return tostring(v)
end

--- eval's result as MindSpore prints its dict: {'accuracy': 0.89, 'loss': 0.31}.
local function metrics_text(t, names)
  local parts = {}
  for i, k in ipairs(names) do parts[i] = py_repr(k) .. ": " .. py_repr(rawget(t, k)) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

--- eval(valid_dataset [, callbacks]) (or {callbacks =}): each metric's
-- value by name, over the whole dataset, with the network in inference
-- mode and nothing recorded. The table prints as MindSpore's dict does,
-- `{'accuracy': 0.89}`, the metrics in the model's order.
function Model:eval(valid_dataset, ...)
  local cbs = args_util.parse("Model.eval", EVAL_OPTIONS, 2, select("#", ...), ...)
  local ms = self._metrics
  if #ms == 0 then
    raise("ValueError: For 'Model.eval', the model argument 'metrics' can not be None or empty, you should set the "
      .. "argument 'metrics' for model.")
  end
  local need_loss = false
  for _, e in ipairs(ms) do
    if e[2].is_loss_metric then need_loss = true end
  end
  if need_loss and self.loss_fn == nil and self.eval_network == nil then
    raise("ValueError: For 'Model.eval', the 'loss' metric needs a loss_fn (or an eval_network).")
  end
  local batch_num, each = dataset_of(valid_dataset, "valid_dataset", 3)
  local list = callback_list(cbs, 3)
  for _, e in ipairs(ms) do e[2]:clear() end
  self.network:set_train(false)
  local rc = callbacks.RunContext {
    network = self.network, loss_fn = self.loss_fn, valid_dataset = valid_dataset, batch_num = batch_num,
    cur_step_num = 0, mode = "eval", dataset_sink_mode = false, list_callback = list,
  }
  call_all(list, "on_eval_begin", rc)
  call_all(list, "on_eval_epoch_begin", rc)
  local dev = device_of(self.network)
  autograd.no_grad(function()
    for x, y in each(1) do
      rc.cur_step_num = rc.cur_step_num + 1
      rc.batch_size = samples_in(x)
      call_all(list, "on_eval_step_begin", rc)
      -- the labels reach the network only for a loss (or an eval_network)
      local yd = (need_loss or self.eval_network) and to_device(y, dev) or y
      local logits, loss = eval_batch(self, to_device(x, dev), yd, need_loss)
      -- the metrics count on the host
      if dev ~= "CPU" then logits, loss, y = to_device(logits, "CPU"), to_device(loss, "CPU"), to_device(y, "CPU") end
      rc.net_outputs = { loss, logits, y }
      for _, e in ipairs(ms) do
        local m = e[2]
        if m.is_loss_metric then m:update(loss) else m:update(logits, y) end
      end
      call_all(list, "on_eval_step_end", rc)
    end
  end)
  -- Data-parallel evaluation: the metrics' counts are summed over the
  -- ranks, so each rank reports the value over every rank's samples.
  local pc = require "cell.parallel_context"
  if pc.distributed() then
    local comm = require "cell.communication"
    local function sum(v)
      return comm.all_reduce(core.tensor({ v }, core.float64), "sum"):item()
    end
    for _, e in ipairs(ms) do
      if type(e[2]._sync) == "function" then e[2]:_sync(sum) end
    end
  end
  local out, names = {}, {}
  for i, e in ipairs(ms) do
    out[e[1]] = e[2]:eval()
    names[i] = e[1]
  end
  setmetatable(out, { __tostring = function(t) return metrics_text(t, names) end })
  rc.metrics = out
  call_all(list, "on_eval_epoch_end", rc)
  call_all(list, "on_eval_end", rc)
  return out
end

--- predict(...): the network's output in inference mode, nothing recorded.
function Model:predict(...)
  self.network:set_train(false)
  local dev = device_of(self.network)
  local n, xs = select("#", ...), { ... }
  for i = 1, n do xs[i] = to_device(xs[i], dev) end
  return autograd.no_grad(self.network, (unpack or table.unpack)(xs, 1, n))
end

return M
