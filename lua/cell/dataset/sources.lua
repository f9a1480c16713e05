--- cell.dataset.sources: the datasets that read data: GeneratorDataset
-- (a Lua function, a table of rows, or an object with __index/__len),
-- TensorDataset (in-memory tensors, one column each) and
-- FashionMnistDataset (the IDX files, as MindSpore's reader).
--
-- Random-access sources (tables, objects with __len, tensors) can be
-- shuffled and sharded (num_shards / shard_id, MindSpore's semantics:
-- every num_shards-th sample of the epoch's order from shard_id, each
-- shard padded to ceil(n / num_shards)), or read through a sampler
-- (samplers.lua) instead; a function source is read in its own order. TensorDataset and FashionMnistDataset run on the engine's
-- worker threads (pipeline.lua); the Lua sources run on the main thread.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local pipeline = require "cell.dataset.pipeline"
local rows = require "cell.dataset.rows"
local batches = require "cell.dataset.batches"
local fashion = require "cell.dataset.fashion_mnist"
local samplers = require "cell.dataset.samplers"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name

local Dataset = pipeline.Dataset
local unpack = table.unpack or unpack
local check_int, check_opts = pipeline.check_int, pipeline.check_opts

local M = {}

local check_bool = require("cell.util.checks").bool -- (fname, what, v): nil stays nil

--- The order of an epoch over n random-access rows (1-based).
local function source_order(self, n, epoch)
  if self._sampler then return self._sampler:_ids(n, self:_epoch_seed(epoch)) end
  local order
  if self._shuffle then
    order = rows.permutation(n, self:_epoch_seed(epoch))
  else
    order = {}
    for i = 1, n do order[i] = i end
  end
  if self._num_shards then
    local pos = batches.shard_positions(n, self._num_shards, self._shard_id)
    local o = {}
    for i, p in ipairs(pos) do o[i] = order[p] end
    order = o
  end
  if self._num_samples and #order > self._num_samples then
    for i = #order, self._num_samples + 1, -1 do order[i] = nil end
  end
  return order
end

--- Shuffle, shard and num_samples options into self (random access or not).
local function take_common(self, fname, opts, random_access, shuffle_default)
  local sampler = samplers.check(fname, opts.sampler)
  if sampler then
    -- MindSpore's checks, in its words
    if opts.shuffle ~= nil then
      raise(("RuntimeError: %s: sampler and shuffle cannot be specified at the same time."):format(fname))
    end
    if opts.num_shards ~= nil or opts.shard_id ~= nil then
      raise(("RuntimeError: %s: sampler and sharding cannot be specified at the same time."):format(fname))
    end
    if opts.num_samples ~= nil then
      raise(("ValueError: %s: Conflicting arguments during sampler assignments. num_samples: %s, num_shards: nil, "
        .. "shard_id: nil, shuffle: nil."):format(fname, tostring(opts.num_samples)))
    end
    if not random_access then
      raise(("ValueError: %s: sampler needs a random-access source (a table or an object with __len and __index)")
        :format(fname))
    end
    self._sampler = sampler
    self._workers = pipeline.check_workers(fname, opts.num_parallel_workers)
    return
  end
  local shuffle = check_bool(fname, "shuffle", opts.shuffle)
  if shuffle == nil then shuffle = random_access and shuffle_default end
  if shuffle and not random_access then
    raise(("ValueError: %s: shuffle needs a random-access source (a table or an object with __len and __index); "
      .. "shuffle the dataset with :shuffle(buffer_size) instead"):format(fname))
  end
  self._shuffle = shuffle
  self._num_shards, self._shard_id = batches.check_shards(fname, opts.num_shards, opts.shard_id)
  if self._num_shards and not random_access then
    raise(("ValueError: %s: num_shards needs a random-access source (a table or an object with __len and __index)")
      :format(fname))
  end
  if opts.num_samples ~= nil then
    check_int(fname, "num_samples", opts.num_samples, 0)
    if opts.num_samples > 0 then self._num_samples = opts.num_samples end
  end
  self._workers = pipeline.check_workers(fname, opts.num_parallel_workers)
end

local function sized(self, n)
  if self._sampler then return self._sampler:_size(n) end
  if self._num_shards then n = math.floor((n + self._num_shards - 1) / self._num_shards) end
  if self._num_samples then n = math.min(n, self._num_samples) end
  return n
end

-- ---------------------------------------------------------------- GeneratorDataset
local GeneratorDataset = Dataset:extend("GeneratorDataset")
M.GeneratorDataset = GeneratorDataset

local GEN_OPTIONS = { "column_types", "schema", "num_samples", "num_parallel_workers", "shuffle", "sampler",
  "num_shards", "shard_id", "python_multiprocessing", "max_rowsize" }

--- The length of a random-access object: its __len (called directly:
-- LuaJIT's # ignores __len on tables), or #t for a plain table.
local function length_of(src)
  local mt = getmetatable(src)
  if type(mt) == "table" and mt.__len then return mt.__len(src) end
  return #src
end

function GeneratorDataset:init(source, column_names, opts)
  local fname = "GeneratorDataset"
  local cols = pipeline.name_list(column_names, fname, "column_names")
  if cols == nil then
    raise("TypeError: GeneratorDataset: column_names must be a column name or a list of them, but got nil")
  end
  check_opts(fname, opts)
  opts = args_util.named(fname, GEN_OPTIONS, 3, opts == nil and 0 or 1, opts)
  if opts.schema ~= nil or opts.column_types ~= nil then
    raise("NotImplementedError: GeneratorDataset: schema and column_types; column types come from the values")
  end
  local kind
  if type(source) == "function" then
    kind = "function"
  elseif type(source) == "table" or type(source) == "userdata" then
    local mt = getmetatable(source)
    if type(source) == "table" and (mt == nil or mt.__len) then
      kind = "random"
    elseif type(mt) == "table" and mt.__len then
      kind = "random"
    elseif type(mt) == "table" and mt.__call then
      kind = "function"
    end
  end
  if not kind then
    raise(("TypeError: GeneratorDataset: source must be a function returning an iterator, a table of rows or an "
      .. "object with __len and __index, but got %s"):format(type_name(source)))
  end
  self._source, self._kind = source, kind
  if kind == "random" then
    local n = length_of(source)
    if not (type(n) == "number" and n >= 0 and n == math.floor(n)) then
      raise(("TypeError: GeneratorDataset: the source's length must be a count, but got %s"):format(tostring(n)))
    end
  end
  take_common(self, fname, opts, kind == "random", true)
  self:_setup(nil, cols)
end

--- The values v1..vn a source gave for sample k, as a row of tensors.
local function as_row(self, k, n, ...)
  local cols = self._cols
  local first = (select(1, ...))
  if n == 1 and #cols > 1 and type(first) == "table" and getmetatable(first) == nil and #first == #cols then
    return as_row(self, k, #cols, unpack(first, 1, #cols))
  end
  if n ~= #cols then
    raise(("ValueError: GeneratorDataset: sample %d has %d value%s, but column_names has %d (%s)")
      :format(k, n, n == 1 and "" or "s", #cols, table.concat(cols, ", ")))
  end
  local r = {}
  for i = 1, n do r[i] = rows.to_tensor((select(i, ...)), "GeneratorDataset", k, cols[i]) end
  return r
end

--- A random-access item: a list of column values (or the value itself
-- for one column).
local function item_row(self, i, k)
  local v = self._source[i]
  if v == nil then
    raise(("IndexError: GeneratorDataset: the source has no item %d (its length is %d)")
      :format(i, length_of(self._source)))
  end
  if #self._cols == 1 then
    if type(v) == "table" and getmetatable(v) == nil and #v == 1 and core.is_tensor(v[1]) then v = v[1] end
    return as_row(self, k, 1, v)
  end
  if type(v) ~= "table" or getmetatable(v) ~= nil then
    raise(("TypeError: GeneratorDataset: item %d must be a list of %d column values, but got %s")
      :format(i, #self._cols, type_name(v)))
  end
  return as_row(self, k, #v, unpack(v, 1, #v))
end

function GeneratorDataset:_size()
  if self._kind == "random" then return sized(self, length_of(self._source)) end
  local n = 0
  for _ in self:_rows(1) do n = n + 1 end
  return n
end

local function pack(...) return select("#", ...), { ... } end

function GeneratorDataset:_rows(epoch)
  local k = 0
  if self._kind == "random" then
    local order = source_order(self, length_of(self._source), epoch)
    return function()
      k = k + 1
      local i = order[k]
      if i == nil then return nil end
      return item_row(self, i, k)
    end
  end
  local it = self._source()
  if type(it) ~= "function" and not (type(it) == "table" and getmetatable(it) and getmetatable(it).__call) then
    raise(("TypeError: GeneratorDataset: the source function must return an iterator (a function), but got %s")
      :format(type_name(it)))
  end
  local limit = self._num_samples
  return function()
    if limit and k >= limit then return nil end
    local n, vals = pack(it())
    if vals[1] == nil then return nil end
    k = k + 1
    return as_row(self, k, n, unpack(vals, 1, n))
  end
end

-- ---------------------------------------------------------------- TensorDataset
local TensorDataset = Dataset:extend("TensorDataset")
M.TensorDataset = TensorDataset

local TENSOR_OPTIONS = { "column_names", "shuffle", "num_shards", "shard_id", "num_samples", "num_parallel_workers",
  "sampler" }

--- TensorDataset{x, y, ... [, column_names =, shuffle = false, num_shards =,
-- shard_id =, num_samples =, num_parallel_workers =]}: rows are slices on
-- dimension 1. The options may also come as a second table.
function TensorDataset:init(t, opts)
  local fname = self.__class.name -- (ImageFolderDataset's init ends here too)
  if type(t) ~= "table" or getmetatable(t) ~= nil then
    raise(("TypeError: TensorDataset: expected a table of tensors {x, y, ...}, but got %s"):format(type_name(t)))
  end
  check_opts(fname, opts)
  local o = {}
  for k, v in pairs(t) do
    if type(k) ~= "number" then o[k] = v end
  end
  for k, v in pairs(opts or {}) do
    if o[k] ~= nil then raise(("TypeError: TensorDataset() got multiple values for argument '%s'"):format(k)) end
    o[k] = v
  end
  o = args_util.named(fname, TENSOR_OPTIONS, 3, 1, o)
  local n = #t
  if n == 0 then raise("ValueError: TensorDataset: no tensors given") end
  local names = pipeline.name_list(o.column_names, fname, "column_names")
  if names and #names ~= n then
    raise(("ValueError: TensorDataset: %d tensors but %d column names"):format(n, #names))
  end
  if not names then
    names = {}
    for i = 1, n do names[i] = "column_" .. (i - 1) end
  end
  local cols = {}
  for i = 1, n do
    local x = t[i]
    if not core.is_tensor(x) then
      raise(("TypeError: TensorDataset: column %d ('%s') must be a Tensor, but got %s"):format(i, names[i],
        type_name(x)))
    end
    if x.ndim == 0 then
      raise(("ValueError: TensorDataset: column %d ('%s') is 0-D; its dimension 1 must index the samples")
        :format(i, names[i]))
    end
    if x.shape[1] ~= t[1].shape[1] then
      raise(("ValueError: TensorDataset: column %d ('%s') has %d rows but column 1 ('%s') has %d")
        :format(i, names[i], x.shape[1], names[1], t[1].shape[1]))
    end
    cols[i] = x
  end
  self._tensors = cols
  take_common(self, fname, o, true, false)
  self:_setup(nil, names)
end

function TensorDataset:_size() return sized(self, self._tensors[1].shape[1]) end

function TensorDataset:_plan(epoch)
  local ops = {}
  for i = 1, #self._tensors do ops[i] = {} end
  return {
    columns = self._tensors, names = self:get_col_names(), ops = ops,
    order = source_order(self, self._tensors[1].shape[1], epoch),
    seed = self:_epoch_seed(epoch), workers = self._workers,
  }
end

-- ---------------------------------------------------------------- FashionMnistDataset
local FashionMnistDataset = TensorDataset:extend("FashionMnistDataset")
M.FashionMnistDataset = FashionMnistDataset

local FMNIST_OPTIONS = { "usage", "num_samples", "num_parallel_workers", "shuffle", "sampler", "num_shards",
  "shard_id", "cache" }

--- FashionMnistDataset([dataset_dir [, {usage = "all", shuffle = true, num_shards =, shard_id =,
-- num_samples =, num_parallel_workers =}]]): columns image (uint8
-- {28, 28, 1}, MindSpore's HWC) and label (int64, 1..10).
function FashionMnistDataset:init(dir, opts)
  local fname = "FashionMnistDataset"
  check_opts(fname, opts)
  opts = args_util.named(fname, FMNIST_OPTIONS, 3, opts == nil and 0 or 1, opts)
  local images, labels = fashion.load(fname, dir, opts.usage, true)
  local n = images.shape[1]
  self._tensors = { images:reshape({ n, 28, 28, 1 }), labels:astype(core.int64) + 1 }
  self.classes = {}
  for i, c in ipairs(fashion.CLASSES) do self.classes[i] = c end
  take_common(self, fname, opts, true, true)
  self:_setup(nil, { "image", "label" })
end

return M
