--- cell.train.ProgressBar: the progress of Model.train, as a callback.
--
-- On a terminal (stderr, by cell.core.isatty(2) when the engine has it)
-- one line is redrawn in place with "\r", at most every `interval`
-- seconds; at the epoch's end it is drawn complete and ended with "\n":
--
--     Epoch 1/3 [=========>                    ] 32/100 loss 0.6931 1234.5 samples/s ETA 0:05
--     Epoch 1/3 [==============================] 100/100 loss 0.2345 1234.5 samples/s took 0:08
--
-- Elsewhere (a log file, a pipe) there are no control characters: a plain
-- line each time another tenth (`every`) of the epoch is done:
--
--     Epoch 1/3 step 10/100 loss 0.6931 1234.5 samples/s ETA 0:07
--     ...
--     Epoch 1/3 step 100/100 loss 0.2345 1234.5 samples/s took 0:08
--
-- `loss` is the mean of the epoch's step losses so far; samples/s counts
-- the samples of the epoch's batches (the first dimension of each input)
-- over the epoch's time; the time left assumes the remaining steps take as
-- long as the done ones. Times are m:ss, or h:mm:ss from an hour.
--
-- ProgressBar{writer = function(text), tty = bool, clock = function() ->
-- seconds, width = 30, interval = 0.1, every = 0.1}: the writer defaults
-- to io.stderr, tty to what isatty(2) says, the clock to cell.perf_counter.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local args_of = require("cell.train.callbacks").args_of
local raise = require("cell.errors").raise
local core = require "cell.core"
local callbacks = require "cell.train.callbacks"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local type_name = T.type_name
local floor = math.floor

local ProgressBar = callbacks.Callback:extend("ProgressBar")

local OPTIONS = { writer = "function", tty = "boolean", clock = "function", width = "number", interval = "number",
  every = "number" }
local OPTION_NAMES = { "writer", "tty", "clock", "width", "interval", "every" }

local function stderr_writer(s)
  io.stderr:write(s)
  io.stderr:flush()
end

--- Whether stderr is a terminal (false when the engine cannot tell).
local function stderr_is_tty()
  local isatty = core.isatty
  if type(isatty) ~= "function" then return false end
  local ok, r = pcall(isatty, 2)
  return ok and r == true
end

function ProgressBar:init(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then
    raise(("TypeError: ProgressBar: expected an options table, but got %s."):format(type_name(opts)))
  end
  opts = args_util.named("ProgressBar", OPTION_NAMES, 3, 1, opts)
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if type(v) ~= want then
      raise(("TypeError: For 'ProgressBar', the '%s' must be a %s, but got %s."):format(k, want, type_name(v)))
    end
  end
  if opts.width ~= nil and (opts.width ~= floor(opts.width) or opts.width < 1 or opts.width > 200) then
    raise(("ValueError: For 'ProgressBar', the 'width' must be an integer in [1, 200], but got %s."):format(tostring(opts.width)))
  end
  if opts.every ~= nil and not (opts.every > 0 and opts.every <= 1) then
    raise(("ValueError: For 'ProgressBar', the 'every' must be in (0, 1], but got %s."):format(tostring(opts.every)))
  end
  if opts.interval ~= nil and not (opts.interval >= 0 and opts.interval < math.huge) then
    raise(("ValueError: For 'ProgressBar', the 'interval' must be a finite number >= 0, but got %s.")
      :format(tostring(opts.interval)))
  end
  self._write = opts.writer or stderr_writer
  self._tty = opts.tty
  if self._tty == nil then self._tty = stderr_is_tty() end
  self._clock = opts.clock or core.perf_counter
  self._width = opts.width or 30
  self._interval = opts.interval or 0.1
  self._every = opts.every or 0.1
end

--- Seconds as m:ss, or h:mm:ss from an hour.
function ProgressBar.format_time(s)
  if type(s) ~= "number" then require("cell.errors").type_error("format_time", "s", "a number of seconds", s) end
  if s ~= s or s == math.huge then return "?" end
  s = floor(s + 0.5)
  if s < 0 then s = 0 end
  local h, m, sec = floor(s / 3600), floor(s % 3600 / 60), s % 60
  if h > 0 then return ("%d:%02d:%02d"):format(h, m, sec) end
  return ("%d:%02d"):format(m, sec)
end

local format_time = ProgressBar.format_time

function ProgressBar:on_train_epoch_begin(run_context)
  local cb = args_of("on_train_epoch_begin", run_context)
  self._epoch, self._epochs = cb.cur_epoch_num, cb.epoch_num
  self._t0 = self._clock()
  self._steps, self._samples, self._loss_sum, self._losses = 0, 0, 0, 0
  self._last_draw, self._drawn_len, self._tenth = nil, 0, 0
end

--- The parts after the step count: loss, throughput and time.
function ProgressBar:_stats(total, now, done)
  local elapsed = now - self._t0
  local loss = self._losses > 0 and ("%.4g"):format(self._loss_sum / self._losses) or "-"
  local rate = elapsed > 0 and ("%.1f"):format(self._samples / elapsed) or "-"
  local time
  if done then
    time = "took " .. format_time(elapsed)
  elseif total and total > 0 and self._steps > 0 then
    time = "ETA " .. format_time(elapsed / self._steps * (total - self._steps))
  else
    time = "ETA ?"
  end
  return ("loss %s %s samples/s %s"):format(loss, rate, time)
end

function ProgressBar:_bar(steps, total)
  local w = self._width
  if not total or total <= 0 then return string.rep(" ", w) end
  local filled = floor(w * math.min(steps, total) / total)
  if filled >= w then return string.rep("=", w) end
  return string.rep("=", filled) .. ">" .. string.rep(" ", w - filled - 1)
end

function ProgressBar:_line(total, now, done)
  local head = ("Epoch %d/%d"):format(self._epoch or 0, self._epochs or 0)
  local count = total and ("%d/%d"):format(self._steps, total) or tostring(self._steps)
  if self._tty then
    return ("%s [%s] %s %s"):format(head, self:_bar(self._steps, total), count, self:_stats(total, now, done))
  end
  return ("%s step %s %s"):format(head, count, self:_stats(total, now, done))
end

--- Redraw the terminal line (padded over a longer previous one). While
-- the line is unfinished, a monitor that prints clears it first
-- (callbacks.end_live_line), and the next step draws it again at once.
function ProgressBar:_draw(total, now, done)
  local line = self:_line(total, now, done)
  local pad = self._drawn_len - #line
  self._drawn_len = #line
  self._write("\r" .. line .. (pad > 0 and string.rep(" ", pad) or "") .. (done and "\n" or ""))
  self._last_draw = now
  if done then
    self._drawn_len = 0
    callbacks.set_live_line(nil)
  else
    callbacks.set_live_line(function() self:_clear() end)
  end
end

--- Clear the unfinished line, so that other text starts at column 0.
function ProgressBar:_clear()
  if self._drawn_len > 0 then self._write("\r" .. string.rep(" ", self._drawn_len) .. "\r") end
  self._drawn_len = 0
  self._last_draw = nil
end

function ProgressBar:on_train_step_end(run_context)
  local cb = args_of("on_train_step_end", run_context)
  if self._t0 == nil then self:on_train_epoch_begin(run_context) end
  self._steps = self._steps + 1
  self._samples = self._samples + (cb.batch_size or 0)
  local loss = callbacks.loss_value(cb.net_outputs)
  if loss ~= nil then
    self._loss_sum = self._loss_sum + loss
    self._losses = self._losses + 1
  end
  local total = cb.batch_num
  if total ~= nil and total <= 0 then total = nil end
  local now = self._clock()
  if self._tty then -- the epoch's end draws the last step
    if not (total and self._steps >= total) and (self._last_draw == nil or now - self._last_draw >= self._interval) then
      self:_draw(total, now, false)
    end
    return
  end
  -- plain lines: one per `every` of the epoch (every step when unknown)
  local tenth = total and floor(self._steps / (total * self._every) + 1e-9) or self._steps
  local last = total and self._steps >= total
  if tenth > self._tenth or last then
    self._tenth = tenth
    if not last then self._write(self:_line(total, now, false) .. "\n") end
  end
end

function ProgressBar:on_train_epoch_end(run_context)
  if self._t0 == nil then return end
  local cb = args_of("on_train_epoch_end", run_context)
  local total = cb.batch_num
  if total ~= nil and total <= 0 then total = nil end
  local now = self._clock()
  if self._tty then
    self:_draw(total, now, true)
  elseif self._steps > 0 then
    self._write(self:_line(total, now, true) .. "\n")
  end
  self._t0 = nil
end

return { ProgressBar = ProgressBar }
