-- callbacks_spec.lua - cell.train's callbacks: LossMonitor's lines (and
-- Python's float text), TimeMonitor with a fake clock, ModelCheckpoint's
-- files, the Callback base's older method names, RunContext, and bad
-- arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train
local callbacks = require "cell.train.callbacks"

local function err(fn, ...) return H.caller_error("callbacks_spec%.lua", fn, ...) end

--- A run context as Model.train makes it.
local function context(fields)
  return callbacks.RunContext(fields)
end

describe("Python's float text", function()
  it("is the shortest round-tripping repr", function()
    local f = callbacks.py_float
    local cases = {
      { 0.1, "0.1" }, { 1, "1.0" }, { -2.5, "-2.5" }, { 1e-5, "1e-05" }, { 0.0001, "0.0001" }, { 0.00025, "0.00025" },
      { 123456789, "123456789.0" }, { 1.5e16, "1.5e+16" }, { 1e16, "1e+16" }, { 9999999999999998, "9999999999999998.0" },
      { 0.6931471805599453, "0.6931471805599453" }, { 1 / 3, "0.3333333333333333" }, { 2.5e-7, "2.5e-07" },
      { 0, "0.0" }, { -0.0, "-0.0" }, { 1 / 0, "inf" }, { -1 / 0, "-inf" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
      { 5e-324, "5e-324" },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], f(c[1]), tostring(c[1])) end
    -- a float32 loss printed as MindSpore prints float(np.mean(loss))
    assert.are.equal("0.6931471824645996", f(cell.tensor(0.6931471805599453):item()))
  end)
end)

describe("train.LossMonitor", function()
  it("prints 'epoch: E step: S, loss is L' every per_print_times steps", function()
    local out = {}
    local lm = train.LossMonitor(2, { writer = function(s) out[#out + 1] = s end })
    local rc = context { batch_num = 3, epoch_num = 2 }
    lm:on_train_begin(rc)
    local losses = { 0.5, 0.25, 0.125, 1, 2, 3 }
    for step = 1, 6 do
      rc.cur_epoch_num = math.floor((step - 1) / 3) + 1
      rc.cur_step_num = step
      rc.net_outputs = cell.tensor(losses[step], cell.float64)
      lm:on_train_step_end(rc)
    end
    assert.are.same({ "epoch: 1 step: 2, loss is 0.25\n", "epoch: 2 step: 1, loss is 1.0\n", "epoch: 2 step: 3, loss is 3.0\n" }, out)
    -- a non-scalar loss prints its mean; a list of outputs its first
    out = {}
    local every = train.LossMonitor { writer = function(s) out[#out + 1] = s end }
    every:on_train_step_end(context { batch_num = 2, cur_epoch_num = 1, cur_step_num = 1,
      net_outputs = cell.tensor({ 1, 2 }, cell.float64) })
    every:on_train_step_end(context { batch_num = 2, cur_epoch_num = 1, cur_step_num = 2,
      net_outputs = { cell.tensor(0.75, cell.float64), cell.ones({ 2 }) } })
    assert.are.same({ "epoch: 1 step: 1, loss is 1.5\n", "epoch: 1 step: 2, loss is 0.75\n" }, out)
    -- 0 prints nothing
    local quiet = train.LossMonitor(0, { writer = function() error("printed") end })
    quiet:on_train_step_end(context { batch_num = 1, cur_epoch_num = 1, cur_step_num = 1, net_outputs = cell.tensor(1) })
  end)

  it("stops training on a NaN or infinite loss", function()
    local lm = train.LossMonitor(1, { writer = function() end })
    assert.are.equal("ValueError: epoch: 2 step: 1. Invalid loss, terminating training.", (select(2, pcall(function()
      lm:on_train_step_end(context { batch_num = 3, cur_epoch_num = 2, cur_step_num = 4, net_outputs = cell.tensor(0 / 0) })
    end))))
  end)

  it("prints through Model.train", function()
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.MSELoss(), nn.SGD(net:trainable_params(), 0.1))
    local data = { { cell.ones({ 4, 2 }), cell.zeros({ 4, 2 }) }, { cell.ones({ 4, 2 }), cell.zeros({ 4, 2 }) } }
    local out = {}
    model:train(2, data, { callbacks = train.LossMonitor(3, { writer = function(s) out[#out + 1] = s end }), progress = false })
    assert.are.equal(1, #out)
    assert.is_truthy(out[1]:find("^epoch: 2 step: 1, loss is %d%.%d+\n$"), out[1])
  end)

  it("names bad arguments", function()
    assert.are.equal("ValueError: For 'LossMonitor', the argument 'per_print_times' must be an integer >= 0, but got -1.",
      err(function() train.LossMonitor(-1) end))
    assert.are.equal("ValueError: For 'LossMonitor', the argument 'per_print_times' must be an integer >= 0, but got string.",
      err(function() train.LossMonitor("2") end))
    assert.are.equal("TypeError: For 'LossMonitor', the 'writer' must be a function, but got number.",
      err(function() train.LossMonitor(1, { writer = 3 }) end))
  end)
end)

describe("train.TimeMonitor", function()
  it("prints the epoch's time and the time per step", function()
    local now = 10
    local out = {}
    local tm = train.TimeMonitor { clock = function() return now end, writer = function(s) out[#out + 1] = s end }
    local rc = context { batch_num = 4, mode = "train" }
    tm:on_train_epoch_begin(rc)
    now = 11.5
    tm:on_train_epoch_end(rc)
    assert.are.same({ "Train epoch time: 1500.000 ms, per step time: 375.000 ms\n" }, out)
    -- without batch_num, data_size is the step count
    local tm2 = train.TimeMonitor(3, { clock = function() return now end, writer = function(s) out[#out + 1] = s end })
    tm2:on_train_epoch_begin(rc)
    now = 11.5 + 0.0003
    tm2:on_train_epoch_end(context {})
    assert.are.equal("Train epoch time: 0.300 ms, per step time: 0.100 ms\n", out[2])
  end)

  it("names bad arguments", function()
    assert.are.equal("ValueError: For 'TimeMonitor', the 'data_size' must be a positive integer, but got 0.",
      err(function() train.TimeMonitor(0) end))
    assert.are.equal("TypeError: For 'TimeMonitor', the 'clock' must be a function, but got string.",
      err(function() train.TimeMonitor { clock = "now" } end))
    local tm = train.TimeMonitor { writer = function() end }
    tm:on_train_epoch_begin(context {})
    assert.are.equal("ValueError: For 'TimeMonitor', the number of steps per epoch is unknown; give data_size.",
      (select(2, pcall(tm.on_train_epoch_end, tm, context {}))))
  end)
end)

describe("train.Callback and RunContext", function()
  it("maps the on_train_* methods onto MindSpore's older names", function()
    local C = train.Callback:extend("C")
    local calls = {}
    for _, m in ipairs { "begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end" } do
      C[m] = function(_, rc) calls[#calls + 1] = m .. ":" .. tostring(rc.tag) end
    end
    local c = C()
    local rc = context { tag = 7 }
    for _, m in ipairs { "on_train_begin", "on_train_epoch_begin", "on_train_step_begin", "on_train_step_end",
      "on_train_epoch_end", "on_train_end", "on_eval_begin", "on_eval_step_end", "on_eval_end" } do
      c[m](c, rc)
    end
    assert.are.same({ "begin:7", "epoch_begin:7", "step_begin:7", "step_end:7", "epoch_end:7", "end:7" }, calls)
    assert.are.equal("C()", tostring(c))
    assert.are.equal(rc, rc:original_args())
    assert.is_false(rc:get_stop_requested())
    rc:request_stop()
    assert.is_true(rc:get_stop_requested())
  end)
end)

describe("train.ModelCheckpoint", function()
  local function tmpdir()
    local base = os.tmpname()
    os.remove(base)
    return base .. "_ckpt/sub"
  end

  local function listdir(dir)
    local names = {}
    local p = io.popen("ls '" .. dir .. "'")
    for line in p:lines() do names[#names + 1] = line end
    p:close()
    return names
  end

  it("saves the training network every few steps and at the end, keeping the newest files", function()
    local dir = tmpdir()
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.MSELoss(), nn.Adam(net:trainable_params(), 0.01))
    local data = {}
    for i = 1, 3 do data[i] = { cell.ones({ 2, 2 }) * i, cell.zeros({ 2, 2 }) } end
    local ck = train.ModelCheckpoint("net", dir, { save_checkpoint_steps = 2, keep_checkpoint_max = 2 })
    if cell.save_checkpoint == nil then
      H.expect_error(function() model:train(2, data, { callbacks = ck, progress = false }) end, "NotImplementedError",
        "ModelCheckpoint needs cell.save_checkpoint")
      return
    end
    model:train(3, data, { callbacks = ck, progress = false })
    -- steps 2, 4, 6, 8 and the last, 9: files net-1_2, net-2_1, net-2_3, net-3_2, net-3_3; the two newest stay
    assert.are.same({ "net-3_2.safetensors", "net-3_3.safetensors" }, listdir(dir))
    assert.are.equal(dir .. "/net-3_3.safetensors", ck.latest_ckpt_file_name)
    local saved = cell.load_checkpoint(ck.latest_ckpt_file_name)
    assert.is_true(saved:contains("weight"))
    assert.is_true(saved:contains("moment1.weight"))
    assert.are.equal(9, saved.global_step[1])
    assert.are.same(net.weight:totable(), saved.weight:totable())
    -- the saved state resumes training in a fresh model
    local net2 = nn.Dense(2, 2)
    local opt2 = nn.Adam(net2:trainable_params(), 0.01)
    cell.load_param_into_net(opt2, saved)
    assert.are.equal(9, opt2:get_step())
    assert.are.same(net.weight:totable(), net2.weight:totable())
    os.execute("rm -rf '" .. dir:gsub("/sub$", "") .. "'")
  end)

  it("takes one options table, and saves a chosen network", function()
    local dir = tmpdir()
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.MSELoss(), nn.SGD(net:trainable_params(), 0.01))
    local ck = train.ModelCheckpoint { prefix = "only", directory = dir, save_checkpoint_steps = 10, saved_network = net }
    if cell.save_checkpoint == nil then return end
    model:train(1, { { cell.ones({ 2, 2 }), cell.zeros({ 2, 2 }) } }, { callbacks = ck, progress = false })
    assert.are.same({ "only-1_1.safetensors" }, listdir(dir))
    local saved = cell.load_checkpoint(dir .. "/only-1_1.safetensors")
    assert.are.same({ "weight", "bias" }, saved:keys())
    os.execute("rm -rf '" .. dir:gsub("/sub$", "") .. "'")
  end)

  it("names bad arguments", function()
    assert.are.equal("ValueError: For 'ModelCheckpoint', the argument 'prefix' must be a non-empty string without '/', but got 'a/b'.",
      err(function() train.ModelCheckpoint("a/b") end))
    assert.are.equal("TypeError: For 'ModelCheckpoint', the argument 'directory' must be a path (a string), but got number.",
      err(function() train.ModelCheckpoint("a", 3) end))
    assert.are.equal("ValueError: For 'CheckpointConfig', the 'keep_checkpoint_max' must be a positive integer, but got 0.",
      err(function() train.ModelCheckpoint("a", ".", { keep_checkpoint_max = 0 }) end))
    assert.are.equal("TypeError: CheckpointConfig() got an unexpected keyword argument 'every'; the options are save_checkpoint_steps, keep_checkpoint_max, saved_network",
      err(function() train.ModelCheckpoint("a", ".", { every = 3 }) end))
    assert.are.equal("TypeError: For 'CheckpointConfig', the 'save_checkpoint_steps' must be an integer, but got 1.5.",
      err(function() train.CheckpointConfig { save_checkpoint_steps = 1.5 } end))
    assert.are.equal("TypeError: For 'ModelCheckpoint', the argument 'config' must be a CheckpointConfig (a table), but got number.",
      err(function() train.ModelCheckpoint("a", ".", 5) end))
    -- a NaN config with a step count beside it (the misuse fuzzer, seed 51)
    assert.are.equal("TypeError: For 'ModelCheckpoint', the argument 'config' must be a CheckpointConfig (a table), but got number.",
      err(function() train.ModelCheckpoint("a", ".", 0 / 0, 3) end))
    assert.are.equal("TypeError: ModelCheckpoint() got an unexpected keyword argument 'dir'; the options are prefix, directory, config, save_checkpoint_steps, keep_checkpoint_max, saved_network",
      err(function() train.ModelCheckpoint { dir = "." } end))
    assert.are.equal("TypeError: ModelCheckpoint() got both 'config' and 'keep_checkpoint_max'; give the checkpoint options in one of them",
      err(function() train.ModelCheckpoint { config = train.CheckpointConfig(), keep_checkpoint_max = 2 } end))
    assert.are.equal("TypeError: LossMonitor() got an unexpected keyword argument 'per_print'; the options are per_print_times, writer, clock",
      err(function() train.LossMonitor { per_print = 2 } end))
    assert.are.equal("TypeError: TimeMonitor() got an unexpected keyword argument 'size'; the options are data_size, writer, clock",
      err(function() train.TimeMonitor { size = 2 } end))
    -- positional values then a table
    local lines = {}
    local lm = train.LossMonitor(2, { writer = function(s) lines[#lines + 1] = s end })
    assert.are.equal(2, lm._per_print_times)
    local cp = train.ModelCheckpoint("a", { keep_checkpoint_max = 2 })
    assert.are.equal(2, cp._config.keep_checkpoint_max)
  end)
end)
