-- callbacks_more_spec.lua - cell.train's EarlyStopping, LearningRateScheduler,
-- History and LambdaCallback, and Model:fit, whose evaluation they read as
-- eval_results: stop epochs and rates worked out by hand, restored weights,
-- and bad arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

local function err(fn, ...) return H.caller_error("callbacks_more_spec%.lua", fn, ...) end

--- Run cb's on_train_epoch_end over the monitored values; the epoch it stopped at (or nil).
local function drive(cb, values, name, extra)
  local rc = train.RunContext(extra or {})
  cb:on_train_begin(rc)
  for e, v in ipairs(values) do
    rc.cur_epoch_num = e
    rc.eval_results = { [name or "loss"] = v }
    cb:on_train_epoch_end(rc)
    if rc:get_stop_requested() then return e end
  end
  return nil
end

local function data()
  cell.set_seed(5)
  local x = cell.randn({ 8, 2 })
  local y = cell.tensor({ 1, 2, 1, 2, 1, 2, 1, 2 }, cell.int64)
  return { { x, y } }
end

describe("train.EarlyStopping", function()
  it("stops after `patience` epochs without an improvement larger than min_delta", function()
    assert.are.equal(4, drive(train.EarlyStopping { patience = 2 }, { 1.0, 0.9, 0.95, 0.91, 0.5 }))
    -- 0.9 is not 0.2 better than 1.0: epochs 2 and 3 do not improve
    assert.are.equal(3, drive(train.EarlyStopping { patience = 2, min_delta = -0.2 }, { 1.0, 0.9, 0.85, 0.1 }))
    -- patience 0: the first epoch stops it (MindSpore's default)
    assert.are.equal(1, drive(train.EarlyStopping(), { 1.0, 0.5 }))
    -- "acc" in the name: higher is better
    assert.are.equal(3, drive(train.EarlyStopping { monitor = "accuracy", patience = 1 }, { 0.5, 0.6, 0.6 }, "accuracy"))
    assert.is_nil(drive(train.EarlyStopping { monitor = "accuracy", patience = 1 }, { 0.5, 0.6, 0.7 }, "accuracy"))
    -- baseline: improving on best but not on the baseline still counts as waiting
    assert.are.equal(2, drive(train.EarlyStopping { patience = 2, baseline = 0.5 }, { 1.0, 0.9, 0.8 }))
    -- "eval_loss" finds the loss metric; a missing value is skipped
    assert.is_nil(drive(train.EarlyStopping { monitor = "eval_accuracy" }, { 1, 2 }))
  end)

  it("puts back the best epoch's weights with restore_best_weights", function()
    local net = nn.Dense(2, 1)
    local es = train.EarlyStopping { patience = 1, restore_best_weights = true, monitor = "loss" }
    local rc = train.RunContext { network = net }
    es:on_train_begin(rc)
    rc.cur_epoch_num, rc.net_outputs = 1, cell.tensor(0.5)
    local best = net.weight:tolist()
    es:on_train_epoch_end(rc)
    net.weight:set_data(cell.full({ 1, 2 }, 7))
    rc.cur_epoch_num, rc.net_outputs = 2, cell.tensor(0.75)
    es:on_train_epoch_end(rc)
    assert.is_true(rc:get_stop_requested())
    assert.are.same(best, net.weight:tolist())
    assert.are.equal(2, es.stopped_epoch)
    assert.are.equal(0.5, es.best)
  end)

  it("says so when verbose, after ending the progress bar's line", function()
    local log = {}
    local es = train.EarlyStopping { verbose = true, writer = function(s) log[#log + 1] = s end }
    local cleared = false
    drive(es, { 1 })
    require("cell.train.callbacks").set_live_line(function() cleared = true end)
    es:on_train_end(train.RunContext {})
    assert.is_true(cleared)
    assert.are.same({ "Epoch 00001: early stopping\n" }, log)
  end)

  it("ends the progress bar's line before ReduceLROnPlateau prints too", function()
    local log = {}
    local net = nn.Dense(2, 2)
    local r = train.ReduceLROnPlateau { monitor = "loss", patience = 0, verbose = true,
      writer = function(s) log[#log + 1] = s end }
    local cleared = 0
    require("cell.train.callbacks").set_live_line(function() cleared = cleared + 1 end)
    local rc = train.RunContext { optimizer = nn.SGD(net:trainable_params(), 0.1), cur_epoch_num = 1,
      net_outputs = cell.tensor(1) }
    r:on_train_begin(rc)
    r:on_train_epoch_end(rc)  -- an improvement on inf: no line
    rc.cur_epoch_num = 2
    r:on_train_epoch_end(rc)  -- no improvement, patience 0: reduced
    assert.are.equal(1, #log)
    assert.is_truthy(log[1]:find("^Epoch 00002: ReduceLROnPlateau reducing learning rate to 0%.01"), log[1])
    assert.are.equal(1, cleared)
  end)

  it("names bad arguments", function()
    assert.are.equal("ValueError: For 'EarlyStopping', the 'mode' must be one of ['auto', 'min', 'max'], but got 'up'.",
      err(function() train.EarlyStopping { mode = "up" } end))
    assert.are.equal("ValueError: For 'EarlyStopping', the 'patience' must be an integer >= 0, but got 1.5.",
      err(function() train.EarlyStopping { patience = 1.5 } end))
    assert.are.equal("TypeError: For 'EarlyStopping', the 'monitor' must be a string, but got number.",
      err(function() train.EarlyStopping(3) end))
    assert.are.equal("TypeError: For 'EarlyStopping', the 'restore_best_weights' must be a boolean, but got string.",
      err(function() train.EarlyStopping { restore_best_weights = "yes" } end))
  end)
end)

describe("Model:fit", function()
  it("evaluates valid_dataset every valid_frequency epochs for History and EarlyStopping", function()
    local d = data()
    cell.set_seed(1)
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1), { "loss", "accuracy" })
    local hist = train.History()
    model:fit(4, d, d, 2, { hist }, { progress = false })
    assert.are.same({ 1, 2, 3, 4 }, hist.epoch)
    assert.are.equal(4, #hist.history.net_output)
    assert.are.equal(2, #hist.history.loss) -- epochs 2 and 4
    local now = model:eval(d)
    assert.are.equal(now.loss, hist.history.loss[2])
    assert.are.equal(now.accuracy, hist.history.accuracy[2])
    -- a rising eval loss (learning rate far too large) stops the run early
    local stop = train.EarlyStopping { monitor = "eval_loss", patience = 0, min_delta = -1e9 }
    local h2 = train.History()
    model:fit(10, d, { valid_dataset = d, callbacks = { stop, h2 }, progress = false })
    assert.are.same({ 1 }, h2.epoch)
  end)

  it("LossMonitor prints each evaluated epoch's metrics, as MindSpore's: Eval result: epoch E, metrics: {...}", function()
    local d = data()
    cell.set_seed(1)
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1), { "accuracy" })
    local lines = {}
    local mon = train.LossMonitor { per_print_times = 0, writer = function(t) lines[#lines + 1] = t end }
    model:fit(4, d, d, 2, { mon }, { progress = false })
    assert.are.equal(2, #lines) -- epochs 2 and 4 evaluate
    assert.is_truthy(lines[1]:find("^Eval result: epoch 2, metrics: {'accuracy': [%d.]+}\n$"), lines[1])
    assert.is_truthy(lines[2]:find("^Eval result: epoch 4, metrics: {'accuracy': [%d.]+}\n$"), lines[2])
    lines = {}
    model:train(1, d, { callbacks = { mon }, progress = false }) -- no evaluation: no line
    assert.are.same({}, lines)
  end)

  it("names bad arguments", function()
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1))
    assert.are.equal("ValueError: For 'Model.fit', evaluating valid_dataset needs the model's argument 'metrics'.",
      err(function() model:fit(1, data(), data()) end))
    assert.are.equal("ValueError: For 'Model.fit', the argument 'valid_frequency' must be a positive integer, but got 0.",
      err(function() model:fit(1, data(), nil, 0) end))
    assert.are.equal("ValueError: For 'Model.fit', the argument 'epoch' must be a positive integer, but got 0.",
      err(function() model:fit(0, data()) end))
  end)
end)

describe("train.LearningRateScheduler", function()
  it("sets the rate the function returns after each step", function()
    local net = nn.Dense(2, 2)
    local opt = nn.SGD(net:trainable_params(), 0.1)
    local model = train.Model(net, nn.CrossEntropyLoss(), opt)
    local seen = {}
    local sched = train.LearningRateScheduler(function(lr, step)
      seen[#seen + 1] = step
      return lr * 0.5
    end)
    local d = data()
    model:train(3, { d[1], d[1] }, { callbacks = { sched }, progress = false })
    assert.are.same({ 1, 2, 3, 4, 5, 6 }, seen)
    assert.is_true(math.abs(opt.learning_rate:item() - 0.1 / 64) < 1e-9)
  end)

  it("names bad arguments", function()
    assert.are.equal("TypeError: For 'LearningRateScheduler', the 'learning_rate_function' must be a function, but got number.",
      err(function() train.LearningRateScheduler(0.1) end))
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1))
    assert.are.equal("TypeError: For 'LearningRateScheduler', the learning_rate_function must return a number, but got nil.",
      err(function()
        model:train(1, data(), { callbacks = { train.LearningRateScheduler(function() end) }, progress = false })
      end))
  end)
end)

describe("train.LambdaCallback", function()
  it("calls the functions it was given with the run context", function()
    local calls = {}
    local function rec(name) return function(rc) calls[#calls + 1] = name .. ":" .. tostring(rc.cur_epoch_num) end end
    local cb = train.LambdaCallback { on_train_begin = rec("begin"), on_train_epoch_end = rec("epoch_end"),
      on_train_end = rec("end") }
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1))
    model:train(2, data(), { callbacks = { cb }, progress = false })
    assert.are.same({ "begin:0", "epoch_end:1", "epoch_end:2", "end:2" }, calls)
    local first = {}
    train.LambdaCallback(function(rc) first[1] = rc end):on_train_epoch_begin("x")
    assert.are.same({ "x" }, first)
  end)

  it("names a hook that is not a function", function()
    assert.are.equal("TypeError: For 'LambdaCallback', the 'on_train_end' must be a function, but got number.",
      err(function() train.LambdaCallback { on_train_end = 3 } end))
  end)
end)
