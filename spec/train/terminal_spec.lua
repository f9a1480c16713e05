-- terminal_spec.lua - what Model.train and Model.eval show a user: the
-- progress bar and the monitors share the terminal line (a monitor's line
-- never runs on after the bar's), and eval's result prints as MindSpore's
-- dict does.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

--- Three batches of 4 samples, 2 features, regression to zero.
local function data()
  local d = {}
  for i = 1, 3 do d[i] = { cell.ones({ 4, 2 }), cell.zeros({ 4, 2 }) } end
  return d
end

describe("Model.train on a terminal", function()
  local function session(monitors)
    cell.set_seed(1)
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.MSELoss(), nn.SGD(net:trainable_params(), 0.1))
    local log = {}
    local function w(s) log[#log + 1] = s end
    local clock = 0
    local bar = train.ProgressBar { writer = w, tty = true, interval = 0, width = 10,
      clock = function() clock = clock + 1; return clock end }
    model:train(2, data(), { callbacks = monitors(w), progress = bar })
    return table.concat(log)
  end

  --- The text as a terminal shows it: "\r" returns to column 0, later text
  -- overwrites earlier.
  local function screen(text)
    local lines, cur, col = {}, {}, 1
    for i = 1, #text do
      local c = text:sub(i, i)
      if c == "\r" then
        col = 1
      elseif c == "\n" then
        lines[#lines + 1] = (table.concat(cur):gsub("%s+$", ""))
        cur, col = {}, 1
      else
        cur[col] = c
        col = col + 1
      end
    end
    if #cur > 0 then lines[#lines + 1] = (table.concat(cur):gsub("%s+$", "")) end
    return lines
  end

  it("clears the bar's line before LossMonitor prints, and draws it again after", function()
    local text = session(function(w) return train.LossMonitor(1, { writer = w }) end)
    -- never "ETA 0:01epoch: ..." on one line
    assert.is_falsy(text:find("ETA %d+:%d+epoch"), text)
    local lines = screen(text)
    assert.are.equal(8, #lines, table.concat(lines, "\n"))
    for e = 1, 2 do
      local base = (e - 1) * 4
      for s = 1, 3 do
        assert.is_truthy(lines[base + s]:find(("^epoch: %d step: %d, loss is %%d%%.%%d+$"):format(e, s)), lines[base + s])
      end
      assert.is_truthy(lines[base + 4]:find(("^Epoch %d/2 %%[==========%%] 3/3 loss [%%d.]+ [%%d.]+ samples/s took %%d:%%d%%d$")
        :format(e)), lines[base + 4])
    end
    -- the bar was drawn between the monitor's lines (and cleared with spaces)
    assert.is_truthy(text:find("\rEpoch 1/2 %[===>      %] 1/3 loss [%d.]+ [%d.]+ samples/s ETA 0:02\r +\repoch: 1 step: 2"), text)
  end)

  it("clears it before TimeMonitor prints at the epoch's end", function()
    local text = session(function(w) return train.TimeMonitor(nil, { writer = w, clock = function() return 0 end }) end)
    local lines = screen(text)
    assert.are.same("Train epoch time: 0.000 ms, per step time: 0.000 ms", lines[1])
    assert.is_truthy(lines[2]:find("^Epoch 1/2 %[==========%] 3/3 "), lines[2])
    assert.are.same("Train epoch time: 0.000 ms, per step time: 0.000 ms", lines[3])
    assert.are.equal(4, #lines)
  end)
end)

describe("Model.eval's result", function()
  it("prints as MindSpore's dict, in the model's metric order", function()
    local net = nn.Dense(2, 3)
    net.weight:set_data(cell.tensor({ { 1, 0 }, { 0, 1 }, { 0, 0 } }))
    net.bias:set_data(cell.zeros({ 3 }))
    local x = cell.tensor({ { 3, 1 }, { 1, 3 }, { 3, 1 }, { 1, 3 } })
    local model = train.Model(net, nn.SoftmaxCrossEntropyWithLogits(true, "mean"), nil, { "accuracy" })
    -- argmax rows: 1, 2, 1, 2; labels 1, 2, 2, 3: half right
    local r = model:eval({ { x, cell.tensor({ 1, 2, 2, 3 }, cell.int32) } })
    assert.are.equal(0.5, r.accuracy)
    assert.are.equal("{'accuracy': 0.5}", tostring(r))
    local two = train.Model(net, nn.SoftmaxCrossEntropyWithLogits(true, "mean"), nil, { "loss", "accuracy" })
    local s = tostring(two:eval({ { x, cell.tensor({ 1, 2, 1, 2 }, cell.int32) } }))
    assert.is_truthy(s:find("^{'loss': %d%.%d+, 'accuracy': 1%.0}$"), s)
  end)
end)
