--- cell.dataset.pipeline: the Dataset class and its chained ops (map,
-- shuffle, batch, repeat_, take, skip, split, project, rename), and the
-- iterators over them. The sources (GeneratorDataset, TensorDataset,
-- FashionMnistDataset) are in sources.lua.
--
-- Every dataset is a node over a child (the sources have none). A node
-- gives rows (a Lua list of one tensor per column) by one of two paths:
-- - the C path: when the chain down to its source is made of in-memory
--   columns (TensorDataset, FashionMnistDataset), C transforms, shuffles,
--   takes, skips, projections and at most one batch, the node describes it
--   as a plan (columns, the epoch's order of rows, each column's transforms,
--   a batch size) and the engine's pipeline runs it on worker threads with
--   a bounded prefetch queue (core._data_*);
-- - the Lua path otherwise: each node pulls rows from its child on the
--   main thread; Lua functions in map run there, C transforms too (one
--   sample at a time).
-- Seeds: each node keeps the config seed current at its creation; a node's
-- randomness in epoch e depends only on (that seed, its depth in the chain,
-- e), so a pipeline gives the same order and augmentations on every run,
-- whatever its number of workers.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local config = require "cell.dataset.config"
local rows = require "cell.dataset.rows"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name

local unpack = table.unpack or unpack

local M = {}

local Dataset = class("Dataset")
M.Dataset = Dataset
local ProjectDataset -- (below; map's column_order makes one)

local is_int = require("cell.util.types").is_int
local check_int = require("cell.util.checks").int
M.check_int = check_int

local function check_opts(fname, opts)
  if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
    raise(("TypeError: %s: the options must be a table, but got %s"):format(fname, type_name(opts)))
  end
end
M.check_opts = check_opts

local function check_workers(fname, n)
  if n == nil then return nil end
  check_int(fname, "num_parallel_workers", n, 0)
  if n > 64 then raise(("ValueError: %s: num_parallel_workers must be at most 64, but got %d"):format(fname, n)) end
  return n
end
M.check_workers = check_workers

--- Dataset itself is abstract: every dataset comes from a source or an op.
function Dataset:init()
  raise("TypeError: Dataset: the base class of datasets is not made directly; make a dataset with a source "
    .. "(GeneratorDataset, TensorDataset, FashionMnistDataset) and its ops")
end

--- Set up a node over child (nil for a source) with column names cols.
function Dataset:_setup(child, cols)
  self._child = child
  self._cols = cols
  self._depth = child and child._depth + 1 or 0
  self._seed = config.get_seed()
end

function Dataset:_epoch_seed(epoch) return rows.mix(self._seed, self._depth, epoch) end

--- The column names, a new list.
function Dataset:get_col_names()
  local out = {}
  for i, c in ipairs(self._cols) do out[i] = c end
  return out
end

function Dataset:get_batch_size()
  if self._child then return self._child:get_batch_size() end
  return 1
end

function Dataset:get_repeat_count()
  if self._child then return self._child:get_repeat_count() end
  return 1
end

--- Rows of one epoch: by the C path when the chain has a plan, else the node's own.
function Dataset:_iter(epoch)
  local plan = self:_plan(epoch)
  if plan then return M.run_plan(plan, self) end
  return self:_rows(epoch)
end

function Dataset:_plan() return nil end

--- Whether the rows never end (an endless repeat_ below, no take above it).
function Dataset:_endless() return self._child ~= nil and self._child:_endless() end

--- The number of rows (batches after batch) in an epoch.
function Dataset:get_dataset_size()
  if self._size_cache == nil then self._size_cache = self:_size() end
  return self._size_cache
end

--- What cell.train.Model takes: len() and each(epoch).
function Dataset:len() return self:get_dataset_size() end

function Dataset:each(epoch)
  if epoch == nil then
    epoch = (self._epochs or 0) + 1
  else
    check_int("Dataset:each", "epoch", epoch, 1)
  end
  self._epochs = epoch
  local it
  if self:_endless() then
    -- MindSpore's way with an endless dataset: epochs of get_dataset_size() rows from one stream
    if epoch == 1 or not self._stream then self._stream = self:_iter(1) end
    local left = self:get_dataset_size()
    local stream = self._stream
    it = function()
      if left <= 0 then return nil end
      left = left - 1
      return stream()
    end
  else
    it = self:_iter(epoch)
  end
  return function()
    local r = it()
    if r == nil then return nil end
    return unpack(r, 1, #self._cols)
  end
end

--- Seconds the consumer waited for the worker threads (without workers: spent making the batches itself) in the last epoch
-- the C path ran (0 on the Lua path), and the outputs it took then.
function Dataset:get_wait_time()
  local w = self._wait
  if not w then
    -- the engine ran a node below (a Lua map or a take above a batch)
    if self._child then return self._child:get_wait_time() end
    return 0, 0
  end
  if w.pipe then
    local s, n = core._data_wait(w.pipe)
    return s, n
  end
  return w.seconds, w.outputs
end

--- `for a, b in dataset do ... end`: the dataset iterates its next epoch.
function Dataset:__call(_, control) return rows.loop_call(self, control, #self._cols) end

function Dataset:__tostring()
  return ("%s(columns={%s}, size=%s)"):format(self.__class.name, table.concat(self._cols, ", "),
    tostring(self._size_cache or "?"))
end

--- The engine's pipeline for a plan, as an iterator of rows; the wait
-- time is kept on ds.
function M.run_plan(plan, ds)
  local pipe = core._data_pipeline(plan.columns, plan.names)
  for c = 1, #plan.columns do
    for _, op in ipairs(plan.ops[c]) do core._data_add_op(pipe, c, op) end
  end
  local workers = plan.workers
  if workers == nil then workers = config.get_num_parallel_workers() end
  local has_ops = false
  for c = 1, #plan.columns do has_ops = has_ops or #plan.ops[c] > 0 end
  -- Without transforms a batch is a copy: not worth a thread.
  if not has_ops and (plan.batch or 0) == 0 then workers = 0 end
  core._data_start(pipe, plan.order, plan.batch or 0, plan.drop or false, plan.seed, workers,
    config.get_prefetch_size())
  ds._wait = { pipe = pipe }
  local n = #plan.columns
  local done = false
  return function()
    if done then return nil end
    local out = { core._data_next(pipe) }
    if out[1] == nil then
      done = true
      return nil
    end
    return out
  end
end

--- A plan's copy whose lists may be changed (the tensors are shared).
local function copy_plan(p)
  local q = {}
  for k, v in pairs(p) do q[k] = v end
  q.columns, q.names, q.ops = {}, {}, {}
  for i = 1, #p.columns do
    q.columns[i], q.names[i] = p.columns[i], p.names[i]
    local l = {}
    for j, op in ipairs(p.ops[i]) do l[j] = op end
    q.ops[i] = l
  end
  return q
end
M.copy_plan = copy_plan

local function col_index(cols, name, fname, what)
  if type(name) ~= "string" then
    raise(("TypeError: %s: %s must name columns (strings), but got %s"):format(fname, what, type_name(name)))
  end
  for i, c in ipairs(cols) do
    if c == name then return i end
  end
  raise(("ValueError: %s: column '%s' does not exist; the columns are %s"):format(fname, name,
    table.concat(cols, ", ")))
end
M.col_index = col_index

--- A column list: one name or a list of names (nil: nil).
local function name_list(v, fname, what)
  if v == nil then return nil end
  if type(v) == "string" then return { v } end
  if type(v) ~= "table" or #v == 0 then
    raise(("TypeError: %s: %s must be a column name or a list of them, but got %s"):format(fname, what,
      type_name(v)))
  end
  local seen = {}
  for i = 1, #v do
    if type(v[i]) ~= "string" then
      raise(("TypeError: %s: %s[%d] must be a string, but got %s"):format(fname, what, i, type_name(v[i])))
    end
    if seen[v[i]] then raise(("ValueError: %s: %s names '%s' twice"):format(fname, what, v[i])) end
    seen[v[i]] = true
  end
  local out = {}
  for i = 1, #v do out[i] = v[i] end
  return out
end
M.name_list = name_list

--- The columns after an op that replaces the input columns inidx (their
-- positions in cols) by the columns `output`: the outputs take the place
-- of the first input column, the other inputs go, the rest keep their
-- places (map and per_batch_map alike). A ValueError when two would share a name.
local function replaced_columns(cols, inidx, output, fname)
  local out_cols, drop = {}, {}
  for i = 2, #inidx do drop[inidx[i]] = true end
  for i, c in ipairs(cols) do
    if i == inidx[1] then
      for _, o in ipairs(output) do out_cols[#out_cols + 1] = o end
    elseif not drop[i] then
      out_cols[#out_cols + 1] = c
    end
  end
  local seen = {}
  for _, c in ipairs(out_cols) do
    if seen[c] then raise(("ValueError: %s: the output would have two columns named '%s'"):format(fname, c)) end
    seen[c] = true
  end
  return out_cols
end

--- A row r with its input columns inidx replaced by vals (as replaced_columns).
local function replaced_row(r, inidx, vals, n)
  local out, drop = {}, {}
  for i = 2, #inidx do drop[inidx[i]] = true end
  for c = 1, n or #r do
    if c == inidx[1] then
      for i = 1, #vals do out[#out + 1] = vals[i] end
    elseif not drop[c] then
      out[#out + 1] = r[c]
    end
  end
  return out
end

--- The input and output columns of map or batch's per_batch_map: input
-- positions in cols (default: default_in) and output names (default: the inputs').
local function in_out_columns(cols, opts, fname, default_in)
  local input = name_list(opts.input_columns, fname, "input_columns") or default_in
  local inidx = {}
  for i, name in ipairs(input) do inidx[i] = col_index(cols, name, fname, "input_columns") end
  local output = name_list(opts.output_columns, fname, "output_columns") or input
  return inidx, output, replaced_columns(cols, inidx, output, fname)
end

-- ---------------------------------------------------------------- map
--- The transforms of map as a flat list: C transforms (userdata), Lua
-- functions, callable tables; Compose lists are flattened.
local function flatten_ops(ops, out)
  if core._data_is_transform(ops) or type(ops) == "function" then
    out[#out + 1] = ops
    return out
  end
  if type(ops) == "table" then
    if rawget(ops, "transforms") and getmetatable(ops) then
      return flatten_ops(ops.transforms, out)
    end
    if getmetatable(ops) and getmetatable(ops).__call then
      out[#out + 1] = ops
      return out
    end
    if getmetatable(ops) == nil and #ops > 0 then
      for i = 1, #ops do flatten_ops(ops[i], out) end
      return out
    end
  end
  raise(("TypeError: map: operations must be a transform, a function or a list of them, but got %s")
    :format(type_name(ops)))
end
M.flatten_ops = flatten_ops

local MapDataset = Dataset:extend("MapDataset")
-- MindSpore's map(operations, input_columns=None, output_columns=None,
-- num_parallel_workers=None, **kwargs): those three positionally, the rest
-- in the options table (python_multiprocessing, max_rowsize, cache,
-- callbacks and offload are accepted and change nothing; column_order is
-- MindSpore 2.0 to 2.2's).
local MAP_OPTIONS = { "input_columns", "output_columns", "num_parallel_workers", "column_order",
  "python_multiprocessing", "max_rowsize", "cache", "callbacks", "offload" }

--- opts: the arguments after operations, already parsed (args_util.named).
function MapDataset:init(child, operations, opts)
  local ops = flatten_ops(operations, {})
  if #ops == 0 then raise("ValueError: map: operations is empty") end
  local cols = child:get_col_names()
  local inidx, output, out_cols = in_out_columns(cols, opts, "map", { cols[1] })
  local all_c = true
  for _, op in ipairs(ops) do all_c = all_c and core._data_is_transform(op) ~= nil end
  self._ops, self._in, self._out, self._all_c = ops, inidx, output, all_c
  self._workers = check_workers("map", opts.num_parallel_workers)
  self:_setup(child, out_cols)
end

function MapDataset:_size() return self._child:get_dataset_size() end

function MapDataset:_plan(epoch)
  if not self._all_c or #self._in ~= 1 or #self._out ~= 1 then return nil end
  local p = self._child:_plan(epoch)
  if not p or p.batch then return nil end
  p = copy_plan(p)
  local c = self._in[1]
  for _, op in ipairs(self._ops) do table.insert(p.ops[c], op) end
  p.names[c] = self._out[1]
  if self._workers and (p.workers == nil or self._workers > p.workers) then p.workers = self._workers end
  return p
end

--- One transform on the values vals (a list), for sample k: a list of outputs.
local function apply_op(op, vals, seed, k, where)
  if core._data_is_transform(op) then
    if #vals ~= 1 then
      raise(("TypeError: %s: %s takes one column, but got %d"):format(where, core._data_is_transform(op), #vals))
    end
    local ok, r = pcall(core._data_apply, op, vals[1], seed, k - 1)
    if not ok then raise(rows.rewrap(r, where)) end
    return { r }
  end
  local res = { pcall(op, unpack(vals, 1, #vals)) }
  if not res[1] then raise(rows.rewrap(res[2], where)) end
  local out = {}
  for i = 2, #res do out[i - 1] = res[i] end
  return out
end

function MapDataset:_rows(epoch)
  local src = self._child:_iter(epoch)
  local seed = self:_epoch_seed(epoch)
  local cols_in = self._child._cols
  local k = 0
  return function()
    local r = src()
    if r == nil then return nil end
    k = k + 1
    local where = ("map: sample %d column '%s'"):format(k, cols_in[self._in[1]])
    local vals = {}
    for i, c in ipairs(self._in) do vals[i] = r[c] end
    for j, op in ipairs(self._ops) do
      vals = apply_op(op, vals, seed + j, k, where)
    end
    if #vals ~= #self._out then
      raise(("ValueError: %s: the transforms gave %d values for %d output columns (%s)")
        :format(where, #vals, #self._out, table.concat(self._out, ", ")))
    end
    for i = 1, #vals do vals[i] = rows.to_tensor(vals[i], "map", k, self._out[i]) end
    return replaced_row(r, self._in, vals)
  end
end

--- map(operations [, input_columns, output_columns, num_parallel_workers]
-- [, {input_columns =, output_columns =, column_order =, ...}]):
-- column_order (MindSpore before 2.3; later ones removed it) is a
-- project(column_order) after the map.
function Dataset:map(operations, ...)
  local n = select("#", ...)
  local opts = args_util.named("map", MAP_OPTIONS, 3, n, ...)
  local order = opts.column_order
  if order == nil then return MapDataset(self, operations, opts) end
  opts.column_order = nil
  local m = MapDataset(self, operations, opts)
  local list = name_list(order, "map", "column_order")
  return ProjectDataset(m, list, nil, "map: column_order")
end

-- ---------------------------------------------------------------- shuffle
local ShuffleDataset = Dataset:extend("ShuffleDataset")

function ShuffleDataset:init(child, buffer_size)
  check_int("shuffle", "buffer_size", buffer_size)
  if buffer_size < 2 then
    raise(("ValueError: shuffle: buffer_size must be at least 2, but got %d"):format(buffer_size))
  end
  self._buffer = buffer_size
  self:_setup(child, child:get_col_names())
end

function ShuffleDataset:_size() return self._child:get_dataset_size() end

function ShuffleDataset:_plan(epoch)
  local p = self._child:_plan(epoch)
  if not p or p.batch then return nil end
  p = copy_plan(p)
  p.order = rows.buffer_shuffle_list(p.order, self._buffer, self:_epoch_seed(epoch))
  return p
end

function ShuffleDataset:_rows(epoch)
  return rows.buffer_shuffle(self._child:_iter(epoch), self._buffer, self:_epoch_seed(epoch))
end

function Dataset:shuffle(buffer_size) return ShuffleDataset(self, buffer_size) end

-- ---------------------------------------------------------------- batch
local BatchDataset = Dataset:extend("BatchDataset")
-- MindSpore's batch(batch_size, drop_remainder=False, num_parallel_workers=None,
-- **kwargs): those two positionally, the rest in the options table
-- (python_multiprocessing and max_rowsize are accepted and change nothing).
local BATCH_OPTIONS = { "drop_remainder", "num_parallel_workers", "per_batch_map", "input_columns",
  "output_columns", "python_multiprocessing", "max_rowsize" }

local is_callable = require("cell.util.types").is_callable

--- opts: the arguments after batch_size, already parsed (args_util.named).
function BatchDataset:init(child, batch_size, opts)
  if is_callable(batch_size) then
    self._size_fn, batch_size = batch_size, 1
  else
    check_int("batch", "batch_size", batch_size, 1)
  end
  local drop = opts.drop_remainder
  if drop == nil then drop = false end
  if type(drop) ~= "boolean" then
    raise(("TypeError: batch: drop_remainder must be a boolean, but got %s"):format(type_name(drop)))
  end
  local cols = child:get_col_names()
  local fn = opts.per_batch_map
  if fn ~= nil then
    if not is_callable(fn) then
      raise(("TypeError: batch: per_batch_map must be a function, but got %s"):format(type_name(fn)))
    end
    self._fn = fn
    self._in, self._out, cols = in_out_columns(cols, opts, "batch", cols)
  elseif opts.input_columns ~= nil or opts.output_columns ~= nil then
    raise("ValueError: batch: input_columns and output_columns are per_batch_map's; per_batch_map is not given")
  end
  self._n, self._drop = batch_size, drop
  self._workers = check_workers("batch", opts.num_parallel_workers)
  self:_setup(child, cols)
end

--- The batch size; -1 when a function gives each batch's.
function BatchDataset:get_batch_size() return self._size_fn and -1 or self._n end

function BatchDataset:_size()
  if self._size_fn then
    -- batch sizes from a function: counted by running an epoch, as MindSpore's dry run does
    local n = 0
    for _ in self:_rows(1) do n = n + 1 end
    return n
  end
  local n = self._child:get_dataset_size()
  if self._drop then return math.floor(n / self._n) end
  return math.floor((n + self._n - 1) / self._n)
end

function BatchDataset:_plan(epoch)
  if self._fn or self._size_fn then return nil end
  local p = self._child:_plan(epoch)
  if not p or p.batch then return nil end
  p = copy_plan(p)
  p.batch, p.drop = self._n, self._drop
  if self._workers and (p.workers == nil or self._workers > p.workers) then p.workers = self._workers end
  return p
end

--- What per_batch_map receives last: the batch's number in the epoch and
-- the epoch's, both from 0 (MindSpore's BatchInfo).
local BatchInfo = {}
BatchInfo.__index = BatchInfo
function BatchInfo:get_batch_num() return self._batch end
function BatchInfo:get_epoch_num() return self._epoch end
M.BatchInfo = BatchInfo

--- per_batch_map on the rows `list` (samples first ..): the batch's
-- columns, the outputs stacked from the lists it returned.
function BatchDataset:_map_batch(list, first, info)
  local child_cols, inidx, out_names = self._child._cols, self._in, self._out
  local args = {}
  for i, c in ipairs(inidx) do
    local col = {}
    for k = 1, #list do col[k] = list[k][c] end
    args[i] = col
  end
  args[#inidx + 1] = info
  local where = ("batch: per_batch_map: batch %d (samples %d..%d)"):format(info._batch, first, first + #list - 1)
  local res = { pcall(self._fn, unpack(args, 1, #inidx + 1)) }
  if not res[1] then raise(rows.rewrap(res[2], where)) end
  local nres = #res - 1
  if nres ~= #out_names then
    raise(("ValueError: %s: it returned %d value%s for %d output column%s (%s)"):format(where, nres,
      nres == 1 and "" or "s", #out_names, #out_names == 1 and "" or "s", table.concat(out_names, ", ")))
  end
  -- every column keeps one number of rows: the batch's while columns pass through, else the first output's
  local ref_n, ref_what = #list, "the batch has"
  if #inidx == #child_cols and type(res[2]) == "table" then
    ref_n, ref_what = #res[2], ("output column '%s' has"):format(out_names[1])
  end
  local vals = {}
  for i = 1, nres do
    local v, name = res[i + 1], out_names[i]
    if type(v) ~= "table" or getmetatable(v) ~= nil or #v == 0 then
      raise(("TypeError: %s: output column '%s' must be a non-empty list of the batch's values, but got %s")
        :format(where, name, type(v) == "table" and getmetatable(v) == nil and "an empty table" or type_name(v)))
    end
    if #v ~= ref_n then
      raise(("ValueError: %s: output column '%s' has %d rows, but %s %d"):format(where, name, #v, ref_what, ref_n))
    end
    local col = {}
    for k = 1, #v do col[k] = rows.to_tensor(v[k], "batch: per_batch_map", first + k - 1, name) end
    vals[i] = rows.stack_column(col, name, first, "batch: per_batch_map")
  end
  -- the other columns batched as they are
  local keep = {}
  for _, c in ipairs(inidx) do keep[c] = false end
  local r = {}
  for c = 1, #child_cols do
    if keep[c] ~= false then
      local col = {}
      for k = 1, #list do col[k] = list[k][c] end
      r[c] = rows.stack_column(col, child_cols[c], first)
    end
  end
  return replaced_row(r, inidx, vals, #child_cols)
end

--- The size of batch nb (from 0) of epoch from batch_size(BatchInfo), checked.
function BatchDataset:_call_size(nb, epoch)
  local where = ("batch: batch_size function at batch %d"):format(nb)
  local ok, v = pcall(self._size_fn, setmetatable({ _batch = nb, _epoch = epoch - 1 }, BatchInfo))
  if not ok then raise(rows.rewrap(v, where)) end
  if not is_int(v) or v < 1 then
    raise(("ValueError: %s: it returned %s; a batch size must be a positive integer"):format(where,
      type(v) == "number" and tostring(v) or type_name(v)))
  end
  return v
end

function BatchDataset:_rows(epoch)
  local src = self._child:_iter(epoch)
  local names = self._cols
  local pos, ended, nb = 0, false, 0
  return function()
    if ended then return nil end
    local size = self._n
    if self._size_fn then size = self:_call_size(nb, epoch) end
    local list = {}
    while #list < size do
      local r = src()
      if r == nil then
        ended = true
        break
      end
      list[#list + 1] = r
    end
    if #list == 0 or (#list < size and self._drop) then return nil end
    local first = pos + 1
    pos = pos + #list
    nb = nb + 1
    if self._fn then
      return self:_map_batch(list, first, setmetatable({ _batch = nb - 1, _epoch = epoch - 1 }, BatchInfo))
    end
    return rows.stack(list, names, first)
  end
end

--- batch(batch_size [, drop_remainder, num_parallel_workers] [, {drop_remainder =, per_batch_map =, ...}]).
function Dataset:batch(batch_size, ...)
  local n = select("#", ...)
  return BatchDataset(self, batch_size, args_util.named("batch", BATCH_OPTIONS, 3, n, ...))
end

-- ---------------------------------------------------------------- repeat
local RepeatDataset = Dataset:extend("RepeatDataset")

-- An endless repeat's repetition k of epoch e is its child's epoch (e - 1) * ENDLESS_STRIDE + k.
local ENDLESS_STRIDE = 1048576

function RepeatDataset:init(child, count)
  if count == nil then count = -1 end
  check_int("repeat_", "count", count)
  if count < 1 and count ~= -1 then
    raise(("ValueError: repeat_: count must be -1 (endless) or positive, but got %d"):format(count))
  end
  self._count = count
  self:_setup(child, child:get_col_names())
end

function RepeatDataset:_endless() return self._count == -1 or self._child:_endless() end

function RepeatDataset:get_repeat_count()
  local c = self._child:get_repeat_count()
  if self._count == -1 or c == -1 then return -1 end
  return self._count * c
end

--- An endless repeat's size is its child's (one pass), as MindSpore's RepeatNode reports it.
function RepeatDataset:_size()
  if self._count == -1 then return self._child:get_dataset_size() end
  return self._count * self._child:get_dataset_size()
end

function RepeatDataset:_plan(epoch)
  -- endless or many repeats: one engine pipeline per repetition (the Lua path) rather than one long order
  if self._count == -1 or self._count > 64 then return nil end
  local out
  for k = 1, self._count do
    local p = self._child:_plan((epoch - 1) * self._count + k)
    if not p or p.batch then return nil end
    if not out then
      out = copy_plan(p)
      local o = {}
      for i, v in ipairs(p.order) do o[i] = v end
      out.order = o
    else
      local o = out.order
      for _, v in ipairs(p.order) do o[#o + 1] = v end
    end
  end
  return out
end

function RepeatDataset:_rows(epoch)
  local endless = self._count == -1
  local stride = endless and ENDLESS_STRIDE or self._count
  local k, it, got = 0, nil, true
  return function()
    while true do
      if it == nil then
        -- an endless repeat of a pass that gave nothing would spin for ever: it ends
        if not got then return nil end
        k = k + 1
        if not endless and k > self._count then return nil end
        it, got = self._child:_iter((epoch - 1) * stride + k), false
      end
      local r = it()
      if r ~= nil then
        got = true
        return r
      end
      it = nil
    end
  end
end

function Dataset:repeat_(count) return RepeatDataset(self, count) end

-- ---------------------------------------------------------------- take, skip
local TakeDataset = Dataset:extend("TakeDataset")

function TakeDataset:init(child, count, skip)
  local what = skip and "skip" or "take"
  check_int(what, "count", count)
  if skip and count < 0 then raise(("ValueError: skip: count must not be negative, but got %d"):format(count)) end
  if not skip and count < 1 and count ~= -1 then
    raise(("ValueError: take: count must be -1 (all) or positive, but got %d"):format(count))
  end
  self._n, self._skip = count, skip
  self:_setup(child, child:get_col_names())
end

function TakeDataset:_endless() return (self._skip or self._n < 0) and self._child:_endless() end

--- take(n) over an endless dataset: n (the rows it gives; MindSpore's TakeNode says min(n, one pass)).
function TakeDataset:_size()
  if not self._skip and self._n >= 0 and self._child:_endless() then return self._n end
  local n = self._child:get_dataset_size()
  if self._skip then return math.max(0, n - self._n) end
  if self._n < 0 then return n end
  return math.min(n, self._n)
end

function TakeDataset:_range(n)
  if self._skip then return self._n + 1, n end
  if self._n < 0 then return 1, n end
  return 1, math.min(n, self._n)
end

function TakeDataset:_plan(epoch)
  local p = self._child:_plan(epoch)
  if not p or p.batch then return nil end
  p = copy_plan(p)
  local a, b = self:_range(#p.order)
  local o = {}
  for i = a, b do o[#o + 1] = p.order[i] end
  p.order = o
  return p
end

function TakeDataset:_rows(epoch)
  local src = self._child:_iter(epoch)
  local k = 0
  return function()
    while true do
      k = k + 1
      if not self._skip and self._n >= 0 and k > self._n then return nil end
      local r = src()
      if r == nil then return nil end
      if not self._skip or k > self._n then return r end
    end
  end
end

function Dataset:take(count)
  if count == nil then count = -1 end
  return TakeDataset(self, count, false)
end
function Dataset:skip(count) return TakeDataset(self, count, true) end

-- ---------------------------------------------------------------- project, rename
ProjectDataset = Dataset:extend("ProjectDataset")

--- project (new_names nil; fname: the op named in errors, "project" by
-- default) or rename (new_names[i] for columns[i]).
function ProjectDataset:init(child, columns, new_names, fname)
  local cols = child:get_col_names()
  if new_names then
    -- rename: new_names[i] for columns[i]
    local names = {}
    for i, c in ipairs(cols) do names[i] = c end
    for i, c in ipairs(columns) do names[col_index(cols, c, "rename", "input_columns")] = new_names[i] end
    local seen = {}
    for _, c in ipairs(names) do
      if seen[c] then raise(("ValueError: rename: two columns would be named '%s'"):format(c)) end
      seen[c] = true
    end
    local idx = {}
    for i = 1, #cols do idx[i] = i end
    self._idx = idx
    self:_setup(child, names)
    return
  end
  local idx = {}
  for i, c in ipairs(columns) do idx[i] = col_index(cols, c, fname or "project", "columns") end
  self._idx = idx
  self:_setup(child, columns)
end

function ProjectDataset:get_batch_size() return self._child:get_batch_size() end
function ProjectDataset:_size() return self._child:get_dataset_size() end

function ProjectDataset:_plan(epoch)
  local p = self._child:_plan(epoch)
  if not p then return nil end
  local q = copy_plan(p)
  q.columns, q.names, q.ops = {}, {}, {}
  for i, c in ipairs(self._idx) do
    q.columns[i], q.names[i], q.ops[i] = p.columns[c], self._cols[i], p.ops[c]
  end
  return q
end

function ProjectDataset:_rows(epoch)
  local src = self._child:_iter(epoch)
  return function()
    local r = src()
    if r == nil then return nil end
    local out = {}
    for i, c in ipairs(self._idx) do out[i] = r[c] end
    return out
  end
end

function Dataset:project(columns)
  local list = name_list(columns, "project", "columns")
  if list == nil then raise("TypeError: project: columns must be a column name or a list of them, but got nil") end
  return ProjectDataset(self, list)
end

function Dataset:rename(input_columns, output_columns)
  local a = name_list(input_columns, "rename", "input_columns")
  local b = name_list(output_columns, "rename", "output_columns")
  if a == nil or b == nil or #a ~= #b then
    raise(("ValueError: rename: input_columns and output_columns must be lists of one length, but got %s and %s")
      :format(a and #a or "nil", b and #b or "nil"))
  end
  return ProjectDataset(self, a, b)
end

-- ---------------------------------------------------------------- split
local SubsetDataset = Dataset:extend("SubsetDataset")

function SubsetDataset:init(child, positions)
  self._pos = positions
  self:_setup(child, child:get_col_names())
end

function SubsetDataset:_size() return #self._pos end

function SubsetDataset:_plan()
  local p = self._child:_plan(1)
  if not p or p.batch then return nil end
  p = copy_plan(p)
  local o = {}
  for i, k in ipairs(self._pos) do o[i] = p.order[k] end
  p.order = o
  return p
end

function SubsetDataset:_rows()
  local child = self._child
  if not child._materialized then
    local all = {}
    for r in child:_iter(1) do all[#all + 1] = r end
    child._materialized = all
  end
  local all, i = child._materialized, 0
  return function()
    i = i + 1
    local k = self._pos[i]
    if k == nil then return nil end
    return all[k]
  end
end

--- split(sizes [, randomize = true]): sizes are counts that sum to the
-- dataset's size, or fractions that sum to 1 (each rounded, the rounding
-- error given to the first part, as MindSpore does).
function Dataset:split(sizes, randomize)
  if randomize == nil then randomize = true end
  if type(randomize) ~= "boolean" then
    raise(("TypeError: split: randomize must be a boolean, but got %s"):format(type_name(randomize)))
  end
  if type(sizes) ~= "table" or #sizes == 0 then
    raise(("TypeError: split: sizes must be a list of counts or fractions, but got %s"):format(type_name(sizes)))
  end
  if self:_endless() then
    raise("ValueError: split: the dataset is endless (an endless repeat_ with no take after it); split needs its rows")
  end
  local n = self:get_dataset_size()
  local counts = {}
  local all_int, sum = true, 0
  for i = 1, #sizes do
    local s = sizes[i]
    if type(s) ~= "number" or s ~= s or s <= 0 then
      raise(("ValueError: split: sizes[%d] must be a positive number, but got %s"):format(i, tostring(s)))
    end
    all_int = all_int and s == math.floor(s)
    sum = sum + s
  end
  if all_int and not (#sizes == 1 and sizes[1] == 1 and n ~= 1) then
    if sum ~= n then
      raise(("ValueError: split: the sizes sum to %d, but the dataset has %d rows"):format(sum, n))
    end
    for i = 1, #sizes do counts[i] = sizes[i] end
  else
    if math.abs(sum - 1) > 1e-9 then
      raise(("ValueError: split: fractions must sum to 1, but they sum to %s"):format(tostring(sum)))
    end
    local total = 0
    for i = 1, #sizes do
      counts[i] = math.floor(sizes[i] * n + 0.5)
      if counts[i] < 1 then
        raise(("ValueError: split: sizes[%d] (%s) gives an empty part of %d rows"):format(i, tostring(sizes[i]), n))
      end
      total = total + counts[i]
    end
    counts[1] = counts[1] + n - total
  end
  local order
  if randomize then
    order = rows.permutation(n, rows.mix(config.get_seed(), self._depth + 1, 0))
  else
    order = {}
    for i = 1, n do order[i] = i end
  end
  local out, at = {}, 0
  for i = 1, #counts do
    local pos = {}
    for k = 1, counts[i] do pos[k] = order[at + k] end
    at = at + counts[i]
    out[i] = SubsetDataset(self, pos)
  end
  return out
end

-- ---------------------------------------------------------------- iterators
local TupleIterator = {}
TupleIterator.__index = TupleIterator

local function next_row(it)
  if not it._cur then
    if it._max > 0 and it._epoch >= it._max then return nil end
    it._epoch = it._epoch + 1
    it._cur = it._ds:_iter(it._epoch)
  end
  local r = it._cur()
  if r == nil then it._cur = nil end -- this for loop ends; the next one runs the next epoch
  return r
end

TupleIterator.__call = function(it)
  local r = next_row(it)
  if r == nil then return nil end
  if it._dict then
    local d = {}
    for i, c in ipairs(it._ds._cols) do d[c] = r[i] end
    return d
  end
  return unpack(r, 1, #it._ds._cols)
end

--- Stop the epoch in progress (the next call starts the next epoch).
function TupleIterator:stop() self._cur = nil end

function TupleIterator:get_wait_time() return self._ds:get_wait_time() end

local ITER_OPTIONS = { "num_epochs", "output_numpy", "do_copy", "columns" }

local function make_iterator(ds, fname, opts, dict)
  check_opts(fname, opts)
  opts = args_util.named(fname, ITER_OPTIONS, 3, opts == nil and 0 or 1, opts)
  local n = opts.num_epochs
  if n == nil then n = -1 end
  check_int(fname, "num_epochs", n)
  if n == 0 or n < -1 then raise(("ValueError: %s: num_epochs must be -1 or positive, but got %d"):format(fname, n)) end
  local src = ds
  if opts.columns ~= nil then src = ds:project(opts.columns) end
  return setmetatable({ _ds = src, _max = n, _epoch = 0, _dict = dict }, TupleIterator)
end

--- An iterator of rows as multiple values (for x, y in it do ... end);
-- each for loop over it runs one epoch, num_epochs of them at most (-1:
-- any number).
function Dataset:create_tuple_iterator(opts) return make_iterator(self, "create_tuple_iterator", opts, false) end
--- The same, rows as tables {column = tensor}.
function Dataset:create_dict_iterator(opts) return make_iterator(self, "create_dict_iterator", opts, true) end

--- Every public method checks that it was called on a dataset (with ':').
for _, k in ipairs { "get_col_names", "get_batch_size", "get_repeat_count", "get_dataset_size", "len", "each",
  "get_wait_time", "map", "shuffle", "batch", "repeat_", "take", "skip", "project", "rename", "split",
  "create_tuple_iterator", "create_dict_iterator" } do
  local f = Dataset[k]
  Dataset[k] = function(self, ...)
    if not class.is_instance(self, Dataset) then
      raise(("TypeError: Dataset:%s: self must be a dataset (call it with ':'), but got %s"):format(k, type_name(self)))
    end
    return f(self, ...)
  end
end

return M
