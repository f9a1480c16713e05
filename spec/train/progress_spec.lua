-- progress_spec.lua - cell.train.ProgressBar: the exact text of both modes
-- (a line redrawn with "\r" on a terminal, plain lines elsewhere) under a
-- fake clock, throttling, the time format, its place in Model.train, and
-- bad options.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train
local callbacks = require "cell.train.callbacks"

local function err(fn, ...) return H.caller_error("progress_spec%.lua", fn, ...) end

--- Run one epoch of `total` steps through bar, step s taking 0.5 s and
-- reporting loss 1 / s on a batch of 8; returns what was written.
local function epoch(opts, total, epochs)
  local out, now = {}, 0
  opts.writer = function(s) out[#out + 1] = s end
  opts.clock = function() return now end
  local bar = train.ProgressBar(opts)
  local rc = callbacks.RunContext { epoch_num = epochs or 2, cur_epoch_num = 1, batch_num = total }
  bar:on_train_epoch_begin(rc)
  for s = 1, total do
    now = s * 0.5
    rc.cur_step_num, rc.batch_size, rc.net_outputs = s, 8, cell.tensor(1 / s, cell.float64)
    bar:on_train_step_end(rc)
  end
  now = total * 0.5
  bar:on_train_epoch_end(rc)
  return out
end

local function mean_inv(n)
  local s = 0
  for i = 1, n do s = s + 1 / i end
  return s / n
end

describe("train.ProgressBar", function()
  it("writes a plain line per tenth of the epoch when not on a terminal", function()
    local out = epoch({ tty = false }, 20)
    assert.are.equal(10, #out)
    assert.are.equal("Epoch 1/2 step 2/20 loss 0.75 16.0 samples/s ETA 0:09\n", out[1])
    assert.are.equal("Epoch 1/2 step 4/20 loss 0.5208 16.0 samples/s ETA 0:08\n", out[2])
    for k = 1, 9 do
      local s = 2 * k
      local eta = math.floor(0.5 * (20 - s) + 0.5)
      assert.are.equal(("Epoch 1/2 step %d/20 loss %.4g 16.0 samples/s ETA 0:%02d\n"):format(s, mean_inv(s), eta), out[k])
    end
    assert.are.equal(("Epoch 1/2 step 20/20 loss %.4g 16.0 samples/s took 0:10\n"):format(mean_inv(20)), out[10])
    for _, line in ipairs(out) do assert.is_nil(line:find("[\r\27]"), "no control characters") end
    -- fewer steps than tenths: every step
    local short = epoch({ tty = false }, 3)
    assert.are.same({
      "Epoch 1/2 step 1/3 loss 1 16.0 samples/s ETA 0:01\n",
      "Epoch 1/2 step 2/3 loss 0.75 16.0 samples/s ETA 0:01\n",
      ("Epoch 1/2 step 3/3 loss %.4g 16.0 samples/s took 0:02\n"):format(mean_inv(3)),
    }, short)
    -- every = 0.25: a line per quarter
    assert.are.equal(4, #epoch({ tty = false, every = 0.25 }, 20))
  end)

  it("redraws one line with \\r on a terminal, at most every interval, and ends it", function()
    local out = epoch({ tty = true, width = 10, interval = 1 }, 4)
    local l1 = "Epoch 1/2 [==>       ] 1/4 loss 1 16.0 samples/s ETA 0:02"
    local l3 = "Epoch 1/2 [=======>  ] 3/4 loss 0.6111 16.0 samples/s ETA 0:01"
    local l4 = "Epoch 1/2 [==========] 4/4 loss 0.5208 16.0 samples/s took 0:02"
    assert.are.same({ "\r" .. l1, "\r" .. l3, "\r" .. l4 .. string.rep(" ", #l3 - #l4) .. "\n" }, out)
    -- interval 0: every step but the last, which the epoch's end draws
    local all = epoch({ tty = true, width = 4, interval = 0 }, 3)
    assert.are.equal(3, #all)
    assert.are.equal("\rEpoch 1/2 [=>  ] 1/3 loss 1 16.0 samples/s ETA 0:01", all[1])
    assert.are.equal("\rEpoch 1/2 [==> ] 2/3 loss 0.75 16.0 samples/s ETA 0:01", all[2])
    assert.is_truthy(all[3]:find("^\rEpoch 1/2 %[====%] 3/3 loss 0%.6111 16%.0 samples/s took 0:02 *\n$"), all[3])
  end)

  it("formats times as m:ss and h:mm:ss", function()
    local f = train.ProgressBar.format_time
    assert.are.same({ "0:00", "0:01", "0:59", "1:00", "59:59", "1:00:00", "10:02:03", "?" },
      { f(0), f(0.6), f(59.4), f(59.6), f(3599), f(3600), f(36123), f(1 / 0) })
  end)

  it("follows Model.train: one bar per epoch, on stderr by default when that is a terminal", function()
    local net = nn.Dense(2, 2)
    local model = train.Model(net, nn.MSELoss(), nn.SGD(net:trainable_params(), 0.1))
    local data = {}
    for i = 1, 5 do data[i] = { cell.ones({ 3, 2 }), cell.zeros({ 3, 2 }) } end
    local out = {}
    model:train(2, data, { progress = train.ProgressBar { tty = false, writer = function(s) out[#out + 1] = s end } })
    assert.are.equal(10, #out)
    assert.is_truthy(out[1]:find("^Epoch 1/2 step 1/5 loss "), out[1])
    assert.is_truthy(out[5]:find("^Epoch 1/2 step 5/5 loss .* took 0:00\n$"), out[5])
    assert.is_truthy(out[10]:find("^Epoch 2/2 step 5/5 "), out[10])
    -- the default reads cell.core.isatty(2) when the engine has it, else assumes a pipe
    local bar = train.ProgressBar()
    local isatty = cell.core.isatty
    assert.are.equal(type(isatty) == "function" and isatty(2) == true, bar._tty)
  end)

  it("chooses by itself: a redrawn line on a terminal, plain lines into a file", function()
    local pty = require "helpers.pty"
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local cell = require "cell"
      local nn = cell.nn
      local net = nn.Dense(2, 2)
      local model = cell.train.Model(net, nn.MSELoss(), nn.SGD(net:trainable_params(), 0.1))
      local data = {}
      for i = 1, 30 do data[i] = { cell.ones({ 4, 2 }), cell.zeros({ 4, 2 }) } end
      model:train(2, data)
    ]])
    f:close()
    local lua = os.getenv("CELL_LUA") or "lua5.4"
    -- into a file: plain lines, a tenth of an epoch each
    local log = script .. ".log"
    local _, rc = pty.sh(("%s %s 2> %s"):format(lua, pty.quote(script), pty.quote(log)))
    assert.are.equal(0, rc)
    local text = assert(io.open(log)):read("*a")
    os.remove(log)
    assert.is_nil(text:find("\r", 1, true))
    local lines = {}
    for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(20, #lines, text)
    assert.is_truthy(lines[1]:find("^Epoch 1/2 step 3/30 loss "), lines[1])
    assert.is_truthy(lines[20]:find("^Epoch 2/2 step 30/30 loss .* took 0:00$"), lines[20])
    -- on a terminal: one line per epoch, redrawn in place
    local term = pty.start(lua .. " " .. pty.quote(script))
    term:wait_line("^%[exited 0%]$")
    local screen = term:screen()
    term:close()
    os.remove(script)
    assert.is_truthy(screen[1]:find("^Epoch 1/2 %[=+%] 30/30 loss [%d.e-]+ [%d.]+ samples/s took 0:00$"), screen[1])
    assert.is_truthy(screen[2]:find("^Epoch 2/2 %[=+%] 30/30 loss "), screen[2])
    assert.are.equal("[exited 0]", screen[3])
  end)

  it("names bad options", function()
    assert.are.equal("TypeError: ProgressBar() got an unexpected keyword argument 'colour'; the options are writer, tty, clock, width, interval, every",
      err(function() train.ProgressBar { colour = true } end))
    assert.are.equal("TypeError: For 'ProgressBar', the 'tty' must be a boolean, but got string.",
      err(function() train.ProgressBar { tty = "yes" } end))
    assert.are.equal("ValueError: For 'ProgressBar', the 'width' must be an integer in [1, 200], but got 0.",
      err(function() train.ProgressBar { width = 0 } end))
    assert.are.equal("ValueError: For 'ProgressBar', the 'every' must be in (0, 1], but got 2.",
      err(function() train.ProgressBar { every = 2 } end))
    assert.are.equal("TypeError: ProgressBar: expected an options table, but got number.",
      err(function() train.ProgressBar(3) end))
  end)
end)
