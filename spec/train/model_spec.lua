-- model_spec.lua - cell.train.Model: training a small classifier on a
-- synthetic dataset object built here until it is accurate, the callback
-- protocol (order, run-context fields, request_stop, initial_epoch),
-- training and inference modes, eval's metrics checked by hand, a network
-- that computes its own loss, predict, and bad arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

local function err(fn, ...) return H.caller_error("model_spec%.lua", fn, ...) end

--- A dataset object as cell.dataset.batches makes them: len() and
-- each(epoch), over fixed batches of points around three centres, with
-- labels 1..3 (1-based class ids).
local function blobs(n_batches, batch_size, seed)
  cell.set_seed(seed or 1)
  local centres = cell.tensor({ { 2, 0 }, { -1, 2 }, { -1, -2 } })
  local batches = {}
  for i = 1, n_batches do
    local y = cell.randint(1, 4, { batch_size })
    local x = centres:index_select(1, y) + cell.randn({ batch_size, 2 }) * 0.3
    batches[i] = { x, y }
  end
  local ds = { batches = batches, epochs_seen = {} }
  function ds:len() return #self.batches end
  function ds:each(epoch)
    self.epochs_seen[#self.epochs_seen + 1] = epoch
    local i = 0
    return function()
      i = i + 1
      local b = self.batches[i]
      if b then return b[1], b[2] end
    end
  end
  return ds
end

--- A callback recording every call as "method epoch step".
local function recorder(log)
  local cb = {}
  for _, m in ipairs { "on_train_begin", "on_train_epoch_begin", "on_train_step_begin", "on_train_step_end",
    "on_train_epoch_end", "on_train_end" } do
    cb[m] = function(_, rc)
      log[#log + 1] = ("%s %d %d"):format(m:sub(10), rc.cur_epoch_num, rc.cur_step_num)
    end
  end
  return cb
end

describe("train.Model", function()
  it("trains a classifier on a dataset object, then evaluates it", function()
    cell.set_seed(3)
    local net = nn.Dense(2, 3)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 0.05), { "accuracy", "loss" })
    local ds = blobs(6, 16)
    local before = model:eval(ds)
    model:train(8, ds, { progress = false })
    local after = model:eval(ds)
    assert.is_true(after.loss < 0.5 * before.loss, ("loss %g -> %g"):format(before.loss, after.loss))
    assert.is_true(after.accuracy >= 0.95, "accuracy " .. after.accuracy)
    assert.are.same({ 1, 1, 2, 3, 4, 5, 6, 7, 8, 1 }, ds.epochs_seen)
  end)

  it("eval gives the accuracy and the mean batch loss, as computed by hand", function()
    cell.set_seed(4)
    local net = nn.Dense(2, 3)
    local loss_fn = nn.CrossEntropyLoss()
    local model = train.Model(net, loss_fn, nil, { acc = "accuracy", mean_loss = train.Loss() })
    local ds = blobs(3, 10, 9)
    local correct, total, loss_sum = 0, 0, 0
    for _, b in ipairs(ds.batches) do
      local logits = net(b[1])
      local pred = logits:argmax(2):totable()
      local y = b[2]:totable()
      for i = 1, #y do
        if pred[i] == y[i] then correct = correct + 1 end
      end
      total = total + #y
      loss_sum = loss_sum + loss_fn(logits, b[2]):item()
    end
    local r = model:eval(ds)
    assert.are.equal(correct / total, r.acc)
    H.assert_close(r.mean_loss, loss_sum / 3, 1e-6)
    assert.is_nil(r.accuracy)
    -- a plain list of {x, y} pairs is a dataset too
    assert.are.equal(r.acc, model:eval(ds.batches).acc)
  end)

  it("calls the callbacks in MindSpore's order with the run context's fields", function()
    local net = nn.Dense(2, 3)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1))
    local log, seen = {}, {}
    local probe = {
      on_train_step_end = function(_, rc)
        assert.are.equal(rc, rc:original_args())
        seen[#seen + 1] = {
          epoch_num = rc.epoch_num, batch_num = rc.batch_num, step_in_epoch = rc.step_in_epoch,
          batch_size = rc.batch_size, mode = rc.mode, loss = rc.net_outputs:item(),
          net = rc.train_network, network = rc.network, optimizer = rc.optimizer,
        }
      end,
    }
    local old = train.Callback:extend("Old")
    local old_calls = {}
    function old:step_end(rc) old_calls[#old_calls + 1] = rc.cur_step_num end
    old["end"] = function() old_calls[#old_calls + 1] = "end" end
    model:train(2, blobs(3, 4), { callbacks = { recorder(log), probe, old() }, progress = false })
    assert.are.same({
      "begin 0 0",
      "epoch_begin 1 0", "step_begin 1 1", "step_end 1 1", "step_begin 1 2", "step_end 1 2", "step_begin 1 3",
      "step_end 1 3", "epoch_end 1 3",
      "epoch_begin 2 3", "step_begin 2 4", "step_end 2 4", "step_begin 2 5", "step_end 2 5", "step_begin 2 6",
      "step_end 2 6", "epoch_end 2 6",
      "end 2 6",
    }, log)
    assert.are.same({ 1, 2, 3, 4, 5, 6, "end" }, old_calls)
    assert.are.equal(6, #seen)
    assert.are.same({ 2, 3, 1, 4, "train" }, { seen[4].epoch_num, seen[4].batch_num, seen[4].step_in_epoch,
      seen[4].batch_size, seen[4].mode })
    assert.are.equal(model.train_network, seen[1].net)
    assert.are.equal(net, seen[1].network)
    assert.are.equal(model.optimizer, seen[1].optimizer)
    assert.are.equal("number", type(seen[1].loss))
  end)

  it("stops after the step that requests it, and resumes at initial_epoch", function()
    local net = nn.Dense(2, 3)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1))
    local log = {}
    local stopper = { on_train_step_end = function(_, rc) if rc.cur_step_num == 4 then rc:request_stop() end end }
    model:train(3, blobs(3, 4), { callbacks = { recorder(log), stopper }, progress = false })
    assert.are.same({ "step_end 2 4", "epoch_end 2 4", "end 2 4" }, { log[#log - 2], log[#log - 1], log[#log] })
    assert.are.equal(4, model.optimizer:get_step())
    local log2 = {}
    model:train(3, blobs(3, 4), { callbacks = recorder(log2), initial_epoch = 2, progress = false })
    assert.are.same({ "begin 2 6", "epoch_begin 3 6", "step_begin 3 7" }, { log2[1], log2[2], log2[3] })
    assert.are.equal("end 3 9", log2[#log2])
  end)

  it("sets training mode for train and inference mode for eval and predict", function()
    local Probe = nn.Cell:extend("Probe")
    function Probe:init()
      self.dense = nn.Dense(2, 3)
      self.modes = {}
    end
    function Probe:construct(x)
      self.modes[#self.modes + 1] = self.training
      return self.dense(x)
    end
    local net = Probe()
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1), { "accuracy" })
    local ds = blobs(2, 4)
    model:train(1, ds, { progress = false })
    model:eval(ds)
    assert.are.same({ true, true, false, false }, net.modes)
    local y = model:predict(ds.batches[1][1])
    assert.are.same({ 4, 3 }, y.shape)
    assert.is_false(y.requires_grad)
    assert.is_false(net.training)
  end)

  it("trains a network that computes its own loss, and evaluates through eval_network", function()
    local net = nn.Dense(2, 3)
    local loss_fn = nn.CrossEntropyLoss()
    local with_loss = nn.WithLossCell(net, loss_fn)
    local eval_net = function(x, y)
      local logits = net(x)
      return loss_fn(logits, y), logits
    end
    local model = train.Model(with_loss, { optimizer = nn.Adam(net:trainable_params(), 0.05), metrics = { "accuracy", "loss" },
      eval_network = eval_net })
    local ds = blobs(4, 16, 5)
    local before = model:eval(ds)
    model:train(5, ds, { progress = false })
    local after = model:eval(ds)
    assert.is_true(after.loss < before.loss)
    assert.is_true(after.accuracy > 0.9)
  end)

  it("works on cell.dataset.batches", function()
    cell.set_seed(6)
    local centres = cell.tensor({ { 2, 0 }, { -1, 2 }, { -1, -2 } })
    local y = cell.randint(1, 4, { 60 })
    local x = centres:index_select(1, y) + cell.randn({ 60, 2 }) * 0.3
    local loader = cell.dataset.batches(x, y, 16, { shuffle = true, seed = 1 })
    local net = nn.Dense(2, 3)
    local model = train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 0.05), { "accuracy" })
    local lines = {}
    model:train(6, loader, { progress = train.ProgressBar { tty = false, writer = function(s) lines[#lines + 1] = s end } })
    assert.are.equal(6 * 4, model.optimizer:get_step())
    assert.is_true(model:eval(loader).accuracy > 0.9)
    assert.is_truthy(lines[#lines]:find("^Epoch 6/6 step 4/4 loss [%d.e-]+ [%d.]+ samples/s took 0:00\n$"), lines[#lines])
  end)

  it("names bad arguments", function()
    local net = nn.Dense(2, 3)
    local opt = nn.SGD(net:trainable_params())
    local ds = blobs(1, 4)
    local m = train.Model(net, nn.CrossEntropyLoss(), opt, { "accuracy" })
    local cases = {
      { function() train.Model(3) end, "TypeError: For 'Model', the argument 'network' must be a Cell, but got number." },
      { function() train.Model(net, 3) end, "TypeError: For 'Model', the argument 'loss_fn' must be a Cell or a function, but got number." },
      { function() train.Model(net, nil, net) end, "TypeError: For 'Model', the argument 'optimizer' must be an optimizer (nn.Optimizer), but got Dense." },
      { function() train.Model(net, nil, nil, { "f1" }) end, "KeyError: Unknown metric 'f1'; known: 'F1', 'acc', 'accuracy', 'loss', 'mae', 'mse', 'precision', 'recall', 'top_1_categorical_accuracy', 'top_5_categorical_accuracy'." },
      { function() train.Model(net, nil, nil, { x = 3 }) end, "TypeError: For 'Model', the metric 'x' must be a metric name or an object with clear, update and eval, but got number." },
      { function() train.Model(net, { optimiser = opt }) end, "TypeError: Model() got an unexpected keyword argument 'optimiser'; the options are loss_fn, optimizer, metrics, eval_network" },
      { function() train.Model(net, nn.CrossEntropyLoss()):train(1, ds) end, "ValueError: For 'Model.train', the model has no optimizer, so it cannot be trained; give Model an optimizer." },
      { function() m:train(0, ds) end, "ValueError: For 'Model.train', the argument 'epoch' must be a positive integer, but got 0." },
      { function() m:train(2, ds, { initial_epoch = 2 }) end, "ValueError: For 'Model.train', the argument 'initial_epoch' must be an integer in [0, epoch), but got 2." },
      { function() m:train(1, 5) end, "TypeError: For 'Model', the argument 'train_dataset' must be a dataset (an object with len() and each(epoch), as cell.dataset.batches returns) or a list of {x, y} pairs, but got number." },
      { function() m:train(1, ds, { callbacks = { 3 } }) end, "TypeError: For 'Model', callbacks[1] must be a callback (a table of on_train_* methods), but got number." },
      { function() m:train(1, ds, { progres = false }) end, "TypeError: Model.train() got an unexpected keyword argument 'progres'; the options are callbacks, dataset_sink_mode, sink_size, initial_epoch, progress, report" },
      { function() m:train(1, ds, { progress = "yes" }) end, "TypeError: For 'Model.train', the option 'progress' must be a boolean or a callback, but got string." },
      { function() train.Model(net, nn.CrossEntropyLoss()):eval(ds) end, "ValueError: For 'Model.eval', the model argument 'metrics' can not be None or empty, you should set the argument 'metrics' for model." },
      { function() train.Model(net, nil, nil, { "loss" }):eval(ds) end, "ValueError: For 'Model.eval', the 'loss' metric needs a loss_fn (or an eval_network)." },
      { function() m:eval(ds, { callback = {} }) end, "TypeError: Model.eval() got an unexpected keyword argument 'callback'; the options are callbacks, dataset_sink_mode" },
      { function() m:eval({ 1 }) end, "TypeError: For 'Model', valid_dataset[1] must be an {x, y} pair, but got number." },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], err(c[1]))
    end
    H.still_works()
  end)
end)

describe("Model on a device", function()
  it("feeds each host batch to the network's device; eval and predict too", function()
    local core = cell.core
    assert.is_function(core._register_test_device, "run under CELL_TEST_DEVICE=1 (make test)")
    core._register_test_device()
    local ds = blobs(4, 8, 3)
    for _, b in ipairs(ds.batches) do b[1], b[2] = b[1]:move_to("CPU"), b[2]:move_to("CPU") end
    local results = {}
    for i, dev in ipairs({ "CPU", "TEST" }) do
      cell.set_seed(7)
      local net = nn.Dense(2, 3)
      net:move_to(dev)
      local m = train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.1), { "accuracy", "loss" })
      m:train(2, ds, { progress = false })
      local w = net.weight
      assert.are.equal(dev == "CPU" and "CPU" or "TEST:0", w.device)
      local out = m:predict(ds.batches[1][1])
      assert.are.equal(w.device, out.device)
      results[i] = { w = w:move_to("CPU"):tolist(), ev = m:eval(ds) }
    end
    assert.are.same(results[1].w, results[2].w)
    assert.are.equal(results[1].ev.accuracy, results[2].ev.accuracy)
    assert.is_true(math.abs(results[1].ev.loss - results[2].ev.loss) < 1e-6)
  end)
end)
