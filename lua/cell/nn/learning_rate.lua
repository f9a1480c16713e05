--- cell.nn's dynamic learning rates, as MindSpore's nn.dynamic_lr functions:
-- each returns a Lua list with one rate per step (list[i] is the rate of
-- step i), which an optimizer takes as its learning_rate. For step i the
-- epoch is current_epoch = floor((i - 1) / step_per_epoch), as MindSpore's
-- floor(i / step_per_epoch) for its 0-based i.
--
--     cosine_decay_lr(min_lr, max_lr, total_step, step_per_epoch, decay_epoch)
--     piecewise_constant_lr(milestone, learning_rates)
--     exponential_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch [, is_stair])
--     natural_exp_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch [, is_stair])
--     inverse_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch [, is_stair])
--     polynomial_decay_lr(learning_rate, end_learning_rate, total_step, step_per_epoch, decay_epoch, power
--                         [, update_decay_epoch])
--     warmup_lr(learning_rate, total_step, step_per_epoch, warmup_epoch)
--
-- Every function also takes one options table with the same names.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"
local checks = require "cell.util.checks"

local type_name = T.type_name
local floor = math.floor
local E = math.exp(1) -- Python's math.e: MindSpore computes math.e ** x, a pow

local M = {}

local function fail(_, fmt, ...) raise(fmt:format(...)) end

local finite = T.is_finite

--- Positional arguments, a trailing options table with the named fields,
-- or both (cell.util.args), as a list in the order of `names`; errors
-- point at the line that called the schedule function.
local function args(fname, names, ...)
  local t = args_util.named(fname, names, 3, select("#", ...), ...)
  local out = {}
  for i, name in ipairs(names) do out[i] = t[name] end
  return out
end

local function check_number(fname, name, v, lvl)
  if type(v) ~= "number" then
    fail(lvl + 1, "TypeError: For '%s', the '%s' must be a number, but got %s.", fname, name, type_name(v))
  end
  if not finite(v) then fail(lvl + 1, "ValueError: For '%s', the '%s' must be finite, but got %s.", fname, name, tostring(v)) end
  return v
end

local function check_positive(fname, name, v, lvl)
  check_number(fname, name, v, lvl + 1)
  if v <= 0 then
    fail(lvl + 1, "ValueError: For '%s', the '%s' must be positive, but got %s.", fname, name, tostring(v))
  end
  return v
end

local function check_non_negative(fname, name, v, lvl)
  check_number(fname, name, v, lvl + 1)
  if v < 0 then
    fail(lvl + 1, "ValueError: For '%s', the '%s' must be non-negative, but got %s.", fname, name, tostring(v))
  end
  return v
end

local function check_positive_int(fname, name, v) return checks.positive_int(fname, name, v) end

local function check_bool(fname, name, v, lvl)
  if v == nil then return false end
  if type(v) ~= "boolean" then
    fail(lvl + 1, "TypeError: For '%s', the '%s' must be a boolean, but got %s.", fname, name, type_name(v))
  end
  return v
end

--- The arguments shared by the decay functions.
local function decay_args(fname, a, lvl)
  local lr = check_positive(fname, "learning_rate", a[1], lvl + 1)
  local rate = check_positive(fname, "decay_rate", a[2], lvl + 1)
  local total = check_positive_int(fname, "total_step", a[3], lvl + 1)
  local per = check_positive_int(fname, "step_per_epoch", a[4], lvl + 1)
  local decay = check_positive_int(fname, "decay_epoch", a[5], lvl + 1)
  local stair = check_bool(fname, "is_stair", a[6], lvl + 1)
  return lr, rate, total, per, decay, stair
end

--- min_lr + 0.5 * (max_lr - min_lr) * (1 + cos(pi * e / decay_epoch)),
-- e = min(current_epoch, decay_epoch).
function M.cosine_decay_lr(...)
  local f = "cosine_decay_lr"
  local a = args(f, { "min_lr", "max_lr", "total_step", "step_per_epoch", "decay_epoch" }, ...)
  local min_lr = check_non_negative(f, "min_lr", a[1], 2)
  local max_lr = check_positive(f, "max_lr", a[2], 2)
  if min_lr >= max_lr then
    fail(2, "ValueError: For 'cosine_decay_lr', the 'max_lr' should be greater than the 'min_lr', but got "
      .. "'max_lr' value: %s, 'min_lr' value: %s.", tostring(max_lr), tostring(min_lr))
  end
  local total = check_positive_int(f, "total_step", a[3], 2)
  local per = check_positive_int(f, "step_per_epoch", a[4], 2)
  local decay = check_positive_int(f, "decay_epoch", a[5], 2)
  local delta = 0.5 * (max_lr - min_lr)
  local out = {}
  for i = 0, total - 1 do
    local e = math.min(floor(i / per), decay)
    out[i + 1] = min_lr + delta * (1 + math.cos(math.pi * e / decay))
  end
  return out
end

--- learning_rates[j] for the steps before milestone[j] (and after
-- milestone[j - 1]); milestone[#milestone] is the number of steps.
function M.piecewise_constant_lr(...)
  local f = "piecewise_constant_lr"
  local a = args(f, { "milestone", "learning_rates" }, ...)
  local milestone, rates = a[1], a[2]
  if type(milestone) ~= "table" then
    fail(2, "TypeError: For '%s', the 'milestone' must be a list, but got %s.", f, type_name(milestone))
  end
  if type(rates) ~= "table" then
    fail(2, "TypeError: For '%s', the 'learning_rates' must be a list, but got %s.", f, type_name(rates))
  end
  if #milestone ~= #rates then
    fail(2, "ValueError: For '%s', the size of 'milestone' must be same with the size of 'learning_rates', but got "
      .. "'milestone' size: %d, 'learning_rates' size: %d.", f, #milestone, #rates)
  end
  local out, last = {}, 0
  for i = 1, #milestone do
    local m = check_positive_int(f, ("milestone[%d]"):format(i), milestone[i], 2)
    local r = check_non_negative(f, ("learning_rates[%d]"):format(i), rates[i], 2)
    if m < last then
      fail(2, "ValueError: For '%s', the value of milestone[%d] must be greater than milestone[%d], but got "
        .. "milestone[%d]: %d, milestone[%d]: %d.", f, i, i - 1, i, m, i - 1, last)
    end
    for _ = last + 1, m do out[#out + 1] = r end
    last = m
  end
  return out
end

--- learning_rate * decay_rate ^ (current_epoch / decay_epoch), the
-- exponent floored with is_stair.
function M.exponential_decay_lr(...)
  local f = "exponential_decay_lr"
  local lr, rate, total, per, decay, stair = decay_args(f, args(f, { "learning_rate", "decay_rate", "total_step",
    "step_per_epoch", "decay_epoch", "is_stair" }, ...), 2)
  local out = {}
  for i = 0, total - 1 do
    local p = floor(i / per) / decay
    if stair then p = floor(p) end
    out[i + 1] = lr * rate ^ p
  end
  return out
end

--- learning_rate * e ^ (-decay_rate * current_epoch), current_epoch
-- rounded down to a multiple of decay_epoch with is_stair.
function M.natural_exp_decay_lr(...)
  local f = "natural_exp_decay_lr"
  local lr, rate, total, per, decay, stair = decay_args(f, args(f, { "learning_rate", "decay_rate", "total_step",
    "step_per_epoch", "decay_epoch", "is_stair" }, ...), 2)
  local out = {}
  for i = 0, total - 1 do
    local e = floor(i / per)
    if stair then e = floor(e / decay) * decay end
    out[i + 1] = lr * E ^ (-rate * e)
  end
  return out
end

--- learning_rate / (1 + decay_rate * current_epoch / decay_epoch), the
-- epoch rounded down to a multiple of decay_epoch with is_stair.
function M.inverse_decay_lr(...)
  local f = "inverse_decay_lr"
  local lr, rate, total, per, decay, stair = decay_args(f, args(f, { "learning_rate", "decay_rate", "total_step",
    "step_per_epoch", "decay_epoch", "is_stair" }, ...), 2)
  local out = {}
  for i = 0, total - 1 do
    local e = floor(i / per)
    if stair then
      out[i + 1] = lr / (1 + rate * floor(e / decay))
    else
      out[i + 1] = lr / (1 + rate * e / decay)
    end
  end
  return out
end

--- (learning_rate - end_learning_rate) * (1 - e / d) ^ power + end_learning_rate,
-- e = min(current_epoch, decay_epoch) and d = decay_epoch; with
-- update_decay_epoch, e = current_epoch and d = decay_epoch *
-- max(ceil(current_epoch / decay_epoch), 1).
function M.polynomial_decay_lr(...)
  local f = "polynomial_decay_lr"
  local a = args(f, { "learning_rate", "end_learning_rate", "total_step", "step_per_epoch", "decay_epoch", "power",
    "update_decay_epoch" }, ...)
  local lr = check_positive(f, "learning_rate", a[1], 2)
  local end_lr = check_non_negative(f, "end_learning_rate", a[2], 2)
  local total = check_positive_int(f, "total_step", a[3], 2)
  local per = check_positive_int(f, "step_per_epoch", a[4], 2)
  local decay = check_positive_int(f, "decay_epoch", a[5], 2)
  local power = check_positive(f, "power", a[6], 2)
  local update = check_bool(f, "update_decay_epoch", a[7], 2)
  local delta = lr - end_lr
  local out = {}
  for i = 0, total - 1 do
    local e = floor(i / per)
    local d = decay
    if update then
      d = decay * math.max(math.ceil(e / decay), 1)
    else
      e = math.min(e, decay)
    end
    out[i + 1] = delta * (1 - e / d) ^ power + end_lr
  end
  return out
end

--- learning_rate * min(current_epoch, warmup_epoch) / warmup_epoch.
function M.warmup_lr(...)
  local f = "warmup_lr"
  local a = args(f, { "learning_rate", "total_step", "step_per_epoch", "warmup_epoch" }, ...)
  local lr = check_non_negative(f, "learning_rate", a[1], 2)
  local total = check_positive_int(f, "total_step", a[2], 2)
  local per = check_positive_int(f, "step_per_epoch", a[3], 2)
  local warm = check_positive_int(f, "warmup_epoch", a[4], 2)
  local out = {}
  for i = 0, total - 1 do
    out[i + 1] = lr * math.min(floor(i / per), warm) / warm
  end
  return out
end

return M
