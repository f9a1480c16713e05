--- cell.dataset.samplers: MindSpore's samplers, which choose the samples a
-- random-access source reads and their order (sampler = ... of
-- GeneratorDataset, TensorDataset, FashionMnistDataset, ImageFolderDataset).
--
--     local ds = cell.dataset
--     local s = ds.SubsetRandomSampler({1, 5, 9})
--     local d = ds.TensorDataset({x, y}, {sampler = s})
--
-- Indices are 1-based, as every index in cell (MindSpore's count from 0);
-- shard_id counts from 0, as MindSpore's and cell's num_shards options.
-- A sampler's randomness comes from its dataset's seed (the config seed
-- when the dataset was made) and the epoch: a seeded pipeline reads the
-- same samples in the same order every run, whatever its number of workers.
-- add_child(sampler): the parent samples from the child's indices (its
-- positions index the child's list), as MindSpore's chained samplers.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local class = require "cell.class"
local rows = require "cell.dataset.rows"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name
local is_int = require("cell.util.types").is_int
local checks = require "cell.util.checks"

local M = {}

local show, check_int, check_bool = checks.show, checks.int, checks.bool

--- num_samples: nil (all) or a positive integer.
local function check_num_samples(fname, v)
  if v == nil then return nil end
  return check_int(fname, "num_samples", v, 1)
end

--- A non-empty list of integer indices (1-based), copied.
local function check_indices(fname, v)
  if type(v) ~= "table" or getmetatable(v) ~= nil or #v == 0 then
    raise(("TypeError: %s: indices must be a non-empty list of integers, but got %s"):format(fname, type_name(v)))
  end
  local out = {}
  for i = 1, #v do
    if not is_int(v[i]) then
      raise(("TypeError: %s: indices[%d] must be an integer, but got %s"):format(fname, i, show(v[i])))
    end
    if v[i] < 1 then
      raise(("ValueError: %s: indices[%d] is %d; indices count from 1"):format(fname, i, v[i]))
    end
    out[i] = v[i]
  end
  return out
end

--- A uniform draw in [0, 1) from a rows.generator.
local function uniform(rand) return rand() / 2147483647 end

local function truncate(list, n)
  if n then
    for i = #list, n + 1, -1 do list[i] = nil end
  end
  return list
end

-- ---------------------------------------------------------------- Sampler
local Sampler = class("Sampler")
M.Sampler = Sampler

function Sampler:init()
  raise("TypeError: Sampler: the base class of samplers is not made directly; use SequentialSampler, RandomSampler, "
    .. "SubsetRandomSampler, SubsetSampler, WeightedRandomSampler or DistributedSampler")
end

--- add_child(sampler): this sampler then samples from the child's indices.
function Sampler:add_child(child)
  local fname = self.__class.name .. ":add_child"
  if not class.is_instance(child, Sampler) then
    raise(("TypeError: %s: the child must be a sampler, but got %s"):format(fname, type_name(child)))
  end
  if self._child_sampler then
    raise(("RuntimeError: %s: Cannot add child sampler, this sampler already has a child."):format(fname))
  end
  local s = child
  while s do
    if s == self then raise(("ValueError: %s: the child's chain holds this sampler (a loop)"):format(fname)) end
    s = s._child_sampler
  end
  self._child_sampler = child
end

--- The child sampler, or nil.
function Sampler:get_child() return self._child_sampler end

--- num_samples as given (nil: all).
function Sampler:get_num_samples() return self._num_samples end

--- The indices (1-based, into n samples) of one epoch, from seed: the
-- child's first when there is one, this sampler's positions indexing them.
function Sampler:_ids(n, seed)
  local child = self._child_sampler
  if not child then return self:_own(n, seed) end
  local base = child:_ids(n, (seed * 31 + 7) % 281474976710656)
  local pos = self:_own(#base, seed)
  local out = {}
  for i, p in ipairs(pos) do out[i] = base[p] end
  return out
end

--- How many indices an epoch over n samples gives (without drawing them).
function Sampler:_size(n)
  local child = self._child_sampler
  return self:_count(child and child:_size(n) or n)
end

local function capped(k, num) return num and math.min(k, num) or k end

function Sampler:__tostring()
  return ("%s(num_samples=%s)"):format(self.__class.name, tostring(self._num_samples))
end

local SEQ_ARGS = { "start_index", "num_samples" }
local RANDOM_ARGS = { "replacement", "num_samples" }
local SUBSET_ARGS = { "indices", "num_samples", values = { "indices" } }
local WEIGHTED_ARGS = { "weights", "num_samples", "replacement", values = { "weights" } }
local DIST_ARGS = { "num_shards", "shard_id", "shuffle", "num_samples" }

--- Constructor arguments (positional, or a trailing options table) by name.
local function parse(fname, names, ...)
  return args_util.named(fname, names, 4, select("#", ...), ...)
end

-- ---------------------------------------------------------------- SequentialSampler
local SequentialSampler = Sampler:extend("SequentialSampler")
M.SequentialSampler = SequentialSampler

--- SequentialSampler([start_index = 1, num_samples]): samples start_index, start_index + 1, ...
function SequentialSampler:init(...)
  local fname = "SequentialSampler"
  local o = parse(fname, SEQ_ARGS, ...)
  self._start = o.start_index == nil and 1 or check_int(fname, "start_index", o.start_index, 1)
  self._num_samples = check_num_samples(fname, o.num_samples)
end

function SequentialSampler:_count(n) return capped(math.max(0, n - self._start + 1), self._num_samples) end

function SequentialSampler:_own(n)
  if n > 0 and self._start > n then
    raise(("ValueError: SequentialSampler: start_index %d is past the %d samples"):format(self._start, n))
  end
  local out = {}
  for i = self._start, n do out[#out + 1] = i end
  return truncate(out, self._num_samples)
end

-- ---------------------------------------------------------------- RandomSampler
local RandomSampler = Sampler:extend("RandomSampler")
M.RandomSampler = RandomSampler

--- RandomSampler([replacement = false, num_samples]): a random order
-- (with replacement: num_samples draws, default n).
function RandomSampler:init(...)
  local fname = "RandomSampler"
  local o = parse(fname, RANDOM_ARGS, ...)
  self._replacement = check_bool(fname, "replacement", o.replacement, false)
  self._num_samples = check_num_samples(fname, o.num_samples)
end

function RandomSampler:_count(n)
  if self._replacement then return n == 0 and 0 or (self._num_samples or n) end
  return capped(n, self._num_samples)
end

function RandomSampler:_own(n, seed)
  if not self._replacement then return truncate(rows.permutation(n, seed), self._num_samples) end
  local rand, out = rows.generator(seed), {}
  if n == 0 then return out end
  for i = 1, self._num_samples or n do out[i] = rand() % n + 1 end
  return out
end

-- ---------------------------------------------------------------- SubsetSampler, SubsetRandomSampler
--- The indices checked against n samples.
local function in_range(fname, idx, n)
  for i, v in ipairs(idx) do
    if v > n then
      raise(("IndexError: %s: indices[%d] is %d, but the dataset has %d samples"):format(fname, i, v, n))
    end
  end
end

local SubsetSampler = Sampler:extend("SubsetSampler")
M.SubsetSampler = SubsetSampler

--- SubsetSampler(indices [, num_samples]): the samples at indices, in that order.
function SubsetSampler:init(...)
  local fname = self.__class.name
  local o = parse(fname, SUBSET_ARGS, ...)
  self._indices = check_indices(fname, o.indices)
  self._num_samples = check_num_samples(fname, o.num_samples)
end

function SubsetSampler:_count() return capped(#self._indices, self._num_samples) end

function SubsetSampler:_own(n)
  in_range(self.__class.name, self._indices, n)
  local out = {}
  for i, v in ipairs(self._indices) do out[i] = v end
  return truncate(out, self._num_samples)
end

local SubsetRandomSampler = SubsetSampler:extend("SubsetRandomSampler")
M.SubsetRandomSampler = SubsetRandomSampler

--- SubsetRandomSampler(indices [, num_samples]): the samples at indices, in a random order.
function SubsetRandomSampler:_own(n, seed)
  in_range("SubsetRandomSampler", self._indices, n)
  local p, out = rows.permutation(#self._indices, seed), {}
  for i, k in ipairs(p) do out[i] = self._indices[k] end
  return truncate(out, self._num_samples)
end

-- ---------------------------------------------------------------- WeightedRandomSampler
local WeightedRandomSampler = Sampler:extend("WeightedRandomSampler")
M.WeightedRandomSampler = WeightedRandomSampler

--- WeightedRandomSampler(weights [, num_samples = #weights, replacement = true]):
-- sample i drawn with probability weights[i] / sum(weights).
function WeightedRandomSampler:init(...)
  local fname = "WeightedRandomSampler"
  local o = parse(fname, WEIGHTED_ARGS, ...)
  local w = o.weights
  if type(w) ~= "table" or getmetatable(w) ~= nil or #w == 0 then
    raise(("TypeError: %s: weights must be a non-empty list of numbers, but got %s"):format(fname, type_name(w)))
  end
  local weights, positive = {}, 0
  for i = 1, #w do
    local v = w[i]
    if type(v) ~= "number" then
      raise(("TypeError: %s: weights[%d] must be a number, but got %s"):format(fname, i, type_name(v)))
    end
    if not (v >= 0 and v < math.huge) then
      raise(("ValueError: %s: weights[%d] must be finite and not negative, but got %s"):format(fname, i, tostring(v)))
    end
    if v > 0 then positive = positive + 1 end
    weights[i] = v
  end
  if positive == 0 then raise(("ValueError: %s: the weights are all 0"):format(fname)) end
  self._weights = weights
  self._num_samples = check_num_samples(fname, o.num_samples)
  self._replacement = check_bool(fname, "replacement", o.replacement, true)
  if not self._replacement and (self._num_samples or #weights) > positive then
    raise(("ValueError: %s: without replacement, num_samples (%d) must be at most the number of positive weights (%d)")
      :format(fname, self._num_samples or #weights, positive))
  end
end

function WeightedRandomSampler:_count() return self._num_samples or #self._weights end

function WeightedRandomSampler:_own(n, seed)
  local w = self._weights
  if #w > n then
    raise(("IndexError: WeightedRandomSampler: %d weights, but the dataset has %d samples"):format(#w, n))
  end
  local rand, out, k = rows.generator(seed), {}, self._num_samples or #w
  if self._replacement then
    -- each draw: the first sample whose cumulative weight passes a uniform point (binary search)
    local cum, total = {}, 0
    for i = 1, #w do
      total = total + w[i]
      cum[i] = total
    end
    for j = 1, k do
      local target = uniform(rand) * total
      local lo, hi = 1, #w
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if cum[mid] > target then hi = mid else lo = mid + 1 end
      end
      while w[lo] == 0 do lo = lo - 1 end -- (target rounded onto the total: the last positive weight)
      out[j] = lo
    end
    return out
  end
  -- without replacement: the k largest keys log(u) / w (Efraimidis and Spirakis), ties by index
  local keys, idx = {}, {}
  for i = 1, #w do
    local u = uniform(rand)
    if w[i] > 0 then
      idx[#idx + 1] = i
      keys[i] = math.log(u > 0 and u or 1e-300) / w[i]
    end
  end
  table.sort(idx, function(a, b)
    if keys[a] ~= keys[b] then return keys[a] > keys[b] end
    return a < b
  end)
  for j = 1, k do out[j] = idx[j] end
  return out
end

-- ---------------------------------------------------------------- DistributedSampler
local DistributedSampler = Sampler:extend("DistributedSampler")
M.DistributedSampler = DistributedSampler

--- DistributedSampler(num_shards, shard_id [, shuffle = true, num_samples]):
-- shard shard_id (from 0) of num_shards: every num_shards-th sample of the
-- epoch's order (shuffled alike on every shard), from the shard_id-th; each
-- shard gets ceil(n / num_shards), wrapping round to the first samples.
function DistributedSampler:init(...)
  local fname = "DistributedSampler"
  local o = parse(fname, DIST_ARGS, ...)
  if o.num_shards == nil or o.shard_id == nil then
    raise(("TypeError: %s: num_shards and shard_id are required, but %s was not given"):format(fname,
      o.num_shards == nil and "num_shards" or "shard_id"))
  end
  local shards = require "cell.dataset.batches"
  self._num_shards, self._shard_id = shards.check_shards(fname, o.num_shards, o.shard_id)
  self._shuffle = check_bool(fname, "shuffle", o.shuffle, true)
  self._num_samples = check_num_samples(fname, o.num_samples)
end

function DistributedSampler:_count(n)
  return capped(math.floor((n + self._num_shards - 1) / self._num_shards), self._num_samples)
end

function DistributedSampler:_own(n, seed)
  local order
  if self._shuffle then
    order = rows.permutation(n, seed)
  else
    order = {}
    for i = 1, n do order[i] = i end
  end
  local pos = require("cell.dataset.batches").shard_positions(n, self._num_shards, self._shard_id)
  local out = {}
  for i, p in ipairs(pos) do out[i] = order[p] end
  return truncate(out, self._num_samples)
end

--- A sampler option: a sampler, or a list of indices (MindSpore's: a
-- SubsetSampler of them); nil stays nil.
function M.check(fname, v)
  if v == nil then return nil end
  if class.is_instance(v, Sampler) then return v end
  if type(v) == "table" and getmetatable(v) == nil and #v > 0 then return SubsetSampler(v) end
  raise(("TypeError: %s: sampler must be a sampler (SequentialSampler, RandomSampler, SubsetRandomSampler, "
    .. "SubsetSampler, WeightedRandomSampler, DistributedSampler) or a list of indices, but got %s")
    :format(fname, type_name(v)))
end

--- Every public method checks that it was called on a sampler (with ':').
for _, k in ipairs { "add_child", "get_child", "get_num_samples" } do
  local f = Sampler[k]
  Sampler[k] = function(self, ...)
    if not class.is_instance(self, Sampler) then
      raise(("TypeError: Sampler:%s: self must be a sampler (call it with ':'), but got %s"):format(k, type_name(self)))
    end
    return f(self, ...)
  end
end

return M
