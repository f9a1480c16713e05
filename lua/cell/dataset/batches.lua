--- cell.dataset.batches: mini-batches of (x, y) along their first dimension.
--
--     local loader = cell.dataset.batches(ds.images, ds.labels, 64, {shuffle = true, seed = 1})
--     loader:len()                          -- number of batches per epoch
--     for epoch = 1, 3 do
--       for xb, yb in loader:each(epoch) do ... end
--     end
--     for xb, yb in loader do ... end       -- the next epoch, as loader:each()
--
-- Each batch is a contiguous tensor: a view of x when not shuffling (and x
-- is contiguous), else gathered rows. The last, partial batch is kept
-- unless drop_last. The order of a shuffled epoch depends only on (seed,
-- epoch) and is the same under Lua 5.4 and LuaJIT; each() without an epoch
-- counts epochs itself (1, 2, ... on successive calls). y may be nil (the
-- iterator then yields xb alone).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local rows = require "cell.dataset.rows"
local args_util = require "cell.util.args"

local M = {}
local unpack = table.unpack or unpack

local type_name = require("cell.util.types").type_name

local checks = require "cell.util.checks"

local function check_bool(what, v, default) return checks.bool("batches", what, v, default) end
local function check_count(what, v) return checks.int("batches", what, v) end

--- A permutation of 1..n (a Lua list) from (seed, epoch): rows.permutation
-- (Fisher-Yates over Park and Miller's generator) from a seed of both.
local function permutation(n, seed, epoch)
  return rows.permutation(n, seed * 1000003 + epoch * 7919 + 17)
end
M.permutation = permutation

local Batches = class("Batches")
M.Batches = Batches

local OPTIONS = { "shuffle", "drop_last", "seed", "num_shards", "shard_id" }

--- num_shards and shard_id (MindSpore's: shard_id from 0), checked; nil, nil when absent.
function M.check_shards(what, num_shards, shard_id)
  if num_shards == nil and shard_id == nil then return nil, nil end
  if num_shards == nil or shard_id == nil then
    raise(("ValueError: %s: num_shards and shard_id go together, but only %s was given")
      :format(what, num_shards == nil and "shard_id" or "num_shards"))
  end
  checks.int(what, "num_shards", num_shards)
  checks.int(what, "shard_id", shard_id)
  if num_shards < 1 then raise(("ValueError: %s: num_shards must be positive, but got %d"):format(what, num_shards)) end
  if shard_id < 0 or shard_id >= num_shards then
    raise(("ValueError: %s: shard_id must be in [0, %d) (shards count from 0), but got %d"):format(what, num_shards,
      shard_id))
  end
  return num_shards, shard_id
end

--- The positions (1-based, into an order of n samples) of shard shard_id
-- of num_shards: every num_shards-th from shard_id + 1, as MindSpore's
-- DistributedSampler deals them; each shard gets ceil(n / num_shards),
-- the last ones wrapping round to the first samples, so that every rank
-- runs the same number of steps.
function M.shard_positions(n, num_shards, shard_id)
  if n == 0 then return {} end
  local per = math.floor((n + num_shards - 1) / num_shards)
  local out = {}
  for k = 0, per - 1 do
    out[k + 1] = (shard_id + k * num_shards) % n + 1
  end
  return out
end

--- Errors are raised at the caller of cell.dataset.batches (4 levels up:
-- init, the class's __call, batches).
function Batches:init(x, y, batch_size, opts)
  if type(x) == "table" and getmetatable(x) == nil then
    -- batches({x, y, z, ...}, batch_size [, opts]): any number of columns
    if opts ~= nil then
      raise("TypeError: batches: with a table of tensors, the arguments are ({x, y, ...}, batch_size [, opts])")
    end
    local cols = x
    if #cols == 0 then raise("ValueError: batches: the table of tensors is empty") end
    for i = 1, #cols do
      if not core.is_tensor(cols[i]) then
        raise(("TypeError: batches: tensor %d of the table must be a Tensor, but got %s"):format(i, type_name(cols[i])))
      end
      if cols[i].ndim == 0 then
        raise(("ValueError: batches: tensor %d must have at least one dimension, but it is 0-D"):format(i))
      end
      if cols[i].shape[1] ~= cols[1].shape[1] then
        raise(("ValueError: batches: tensor 1 has %d samples (its first dimension) but tensor %d has %d")
          :format(cols[1].shape[1], i, cols[i].shape[1]))
      end
    end
    self:init(cols[1], cols[2], y, batch_size)
    self.cols = {}
    for i = 1, #cols do self.cols[i] = cols[i] end
    return
  end
  if not core.is_tensor(x) then
    raise(("TypeError: batches: x must be a Tensor, but got %s"):format(type_name(x)))
  end
  if y ~= nil and not core.is_tensor(y) then
    raise(("TypeError: batches: y must be a Tensor or nil, but got %s"):format(type_name(y)))
  end
  if x.ndim == 0 then raise("ValueError: batches: x must have at least one dimension, but it is 0-D") end
  if y ~= nil and (y.ndim == 0 or y.shape[1] ~= x.shape[1]) then
    raise(("ValueError: batches: x has %d samples (its first dimension) but y has %s"):format(x.shape[1],
      y.ndim == 0 and "none (it is 0-D)" or tostring(y.shape[1])))
  end
  check_count("batch_size", batch_size, 5)
  if batch_size < 1 then
    raise(("ValueError: batches: batch_size must be positive, but got %s"):format(tostring(batch_size)))
  end
  if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
    raise(("TypeError: batches: the options must be a table, but got %s"):format(type_name(opts)))
  end
  opts = args_util.named("batches", OPTIONS, 4, opts == nil and 0 or 1, opts)
  self.x, self.y, self.batch_size = x, y, batch_size
  self.cols = y and { x, y } or { x } -- each() batches every column alike
  self.n = x.shape[1]
  self.shuffle = check_bool("shuffle", opts.shuffle, false, 5)
  self.drop_last = check_bool("drop_last", opts.drop_last, false, 5)
  local seed = opts.seed
  if seed == nil then seed = 0 end
  check_count("seed", seed, 5)
  if seed < 0 then raise(("ValueError: batches: seed must be non-negative, but got %s"):format(tostring(seed))) end
  self.seed = seed
  self.epochs = 0
  self.num_shards, self.shard_id = M.check_shards("batches", opts.num_shards, opts.shard_id)
  if self.num_shards then
    self.total = self.n
    self.positions = M.shard_positions(self.n, self.num_shards, self.shard_id)
    self.n = #self.positions
  end
end

--- The number of batches in an epoch.
function Batches:len()
  local n, b = self.n, self.batch_size
  if self.drop_last then return math.floor(n / b) end
  return math.floor((n + b - 1) / b)
end

--- each([epoch]) -> iterator of (xb, yb) over one epoch.
function Batches:each(epoch)
  if epoch == nil then
    epoch = self.epochs + 1
  else
    check_count("epoch", epoch, 3)
  end
  self.epochs = epoch
  local b, n = self.batch_size, self.n
  local count = self:len()
  local index
  if self.positions then
    -- the same order on every rank (same seed), then this shard's positions in it
    local order = self.shuffle and permutation(self.total, self.seed, epoch) or nil
    local list = {}
    for i, p in ipairs(self.positions) do list[i] = order and order[p] or p end
    if n > 0 then index = core.tensor(list, core.int64) end
  elseif self.shuffle and n > 0 then
    index = core.tensor(permutation(n, self.seed, epoch), core.int64)
  end
  local k = 0
  local cols = self.cols
  return function()
    k = k + 1
    if k > count then return nil end
    local start = (k - 1) * b + 1
    local len = math.min(b, n - start + 1)
    local idx = index and index:narrow(1, start, len)
    local out = {}
    for i = 1, #cols do
      out[i] = idx and cols[i]:index_select(1, idx) or cols[i]:narrow(1, start, len):contiguous()
    end
    return unpack(out, 1, #cols)
  end
end

--- `for xb, yb in loader do ... end`: the loader iterates its next epoch.
function Batches:__call(_, control) return rows.loop_call(self, control, #self.cols) end

function Batches:__tostring()
  return ("Batches(samples=%d, batch_size=%d, batches=%d, shuffle=%s, drop_last=%s)")
    :format(self.n, self.batch_size, self:len(), tostring(self.shuffle), tostring(self.drop_last))
end

--- batches(x, y, batch_size [, {shuffle = false, drop_last = false, seed = 0,
-- num_shards =, shard_id =}]): with num_shards, only shard shard_id's
-- samples (see shard_positions). batches({x, y, z, ...}, batch_size [, opts]):
-- any number of tensors, batched alike (the iterator yields one per tensor).
function M.batches(x, y, batch_size, opts)
  local b = Batches(x, y, batch_size, opts)
  return b
end

--- The rows of shard shard_id of a data set {images, labels, ...} (a new
-- table; the other fields are kept).
function M.shard_dataset(ds, num_shards, shard_id)
  if num_shards == nil then return ds end
  local pos = M.shard_positions(ds.images.shape[1], num_shards, shard_id)
  local idx = core.tensor(pos, core.int64)
  local out = {}
  for k, v in pairs(ds) do out[k] = v end
  out.images = ds.images:index_select(1, idx)
  out.labels = ds.labels:index_select(1, idx)
  out.num_shards, out.shard_id = num_shards, shard_id
  return out
end

return M
