-- batch_map_spec.lua - batch's per_batch_map (with input_columns,
-- output_columns and BatchInfo) and map's column_order
-- (lua/cell/dataset/pipeline.lua), with their errors.
local H = require "helpers"
local cell = H.cell
local D = cell.dataset

local function err(fn, ...) return H.caller_error("batch_map_spec%.lua", fn, ...) end

-- rows {i, 10 i} for i = 1..n, columns a and b, in order
local function ab(n)
  local rows = {}
  for i = 1, n do rows[i] = { i, 10 * i } end
  return D.GeneratorDataset(rows, { "a", "b" }, { shuffle = false })
end

--- Every batch of one epoch as {column = list of numbers}.
local function collect(it)
  local out = {}
  for row in it do
    local r = {}
    for k, v in pairs(row) do r[k] = v:reshape({ -1 }):totable() end
    out[#out + 1] = r
  end
  return out
end

describe("batch with per_batch_map", function()
  it("passes each input column as the list of the batch's rows, and a BatchInfo; stacks what it returns", function()
    local seen = {}
    local ds = ab(5):batch(2, {
      input_columns = { "b" },
      per_batch_map = function(b, info)
        seen[#seen + 1] = { #b, info:get_batch_num(), info:get_epoch_num() }
        local out = {}
        for i, v in ipairs(b) do out[i] = v + 1000 * info:get_batch_num() end
        return out
      end,
    })
    assert.are.same({ "a", "b" }, ds:get_col_names())
    assert.are.equal(3, ds:get_dataset_size())
    local it = ds:create_dict_iterator({ num_epochs = 2 })
    assert.are.same({ { a = { 1, 2 }, b = { 10, 20 } }, { a = { 3, 4 }, b = { 1030, 1040 } },
      { a = { 5 }, b = { 2050 } } }, collect(it))
    collect(it)
    -- {rows in the batch, batch number from 0, epoch number from 0}
    assert.are.same({ { 2, 0, 0 }, { 2, 1, 0 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 1 }, { 1, 2, 1 } }, seen)
  end)

  it("gives every column when input_columns is not set, and output_columns renames and reorders", function()
    local ds = ab(4):batch(2, {
      output_columns = { "sum", "prod", "diff" },
      per_batch_map = function(a, b, info)
        assert.are.equal(0, info:get_epoch_num())
        local s, p, d = {}, {}, {}
        for i = 1, #a do
          s[i], p[i], d[i] = a[i] + b[i], a[i] * b[i], b[i] - a[i]
        end
        return s, p, d
      end,
    })
    assert.are.same({ "sum", "prod", "diff" }, ds:get_col_names())
    assert.are.same({ { sum = { 11, 22 }, prod = { 10, 40 }, diff = { 9, 18 } },
      { sum = { 33, 44 }, prod = { 90, 160 }, diff = { 27, 36 } } }, collect(ds:create_dict_iterator()))
  end)

  it("puts the outputs in place of the first input column, the other columns kept", function()
    local rows = {}
    for i = 1, 3 do rows[i] = { i, 10 * i, 100 * i } end
    local ds = D.GeneratorDataset(rows, { "a", "b", "c" }, { shuffle = false }):batch(3, {
      input_columns = { "b", "c" }, output_columns = { "bc" },
      per_batch_map = function(b, c)
        local out = {}
        for i = 1, #b do out[i] = b[i] + c[i] end
        return out
      end,
    })
    assert.are.same({ "a", "bc" }, ds:get_col_names())
    assert.are.same({ { a = { 1, 2, 3 }, bc = { 110, 220, 330 } } }, collect(ds:create_dict_iterator()))
  end)

  it("may change the number of rows when every column is an input", function()
    local ds = ab(4):batch(2, {
      per_batch_map = function(a, b)
        return { a[1], a[2], a[1] }, { b[1], b[2], b[1] }
      end,
    })
    local got = collect(ds:create_dict_iterator())
    assert.are.same({ 1, 2, 1 }, got[1].a)
    assert.are.same({ 30, 40, 30 }, got[2].b)
  end)

  it("takes tensors (stacked) and numbers in the returned lists, and runs over TensorDataset too", function()
    local x = cell.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
    local ds = D.TensorDataset({ x, column_names = { "x" } }):batch(3, {
      per_batch_map = function(xs) return { xs[1] * 2, xs[2] * 2, xs[3] * 2 } end,
    })
    for b in ds:create_tuple_iterator() do H.assert_values(b, { { 2, 4 }, { 6, 8 }, { 10, 12 } }) end
  end)

  it("drops the remainder before per_batch_map sees it", function()
    local n = 0
    local ds = ab(5):batch(2, { drop_remainder = true, per_batch_map = function(a, b)
      n = n + 1
      return a, b
    end })
    for _ in ds:create_tuple_iterator() do end
    assert.are.equal(2, n)
  end)

  it("names the batch, the column and the fault in its errors", function()
    local ds = ab(4)
    local function run(opts)
      opts.per_batch_map = opts.per_batch_map or function(a, b) return a, b end
      local d = ds:batch(2, opts)
      for _ in d:create_tuple_iterator() do end
    end
    assert.are.equal("TypeError: batch: per_batch_map must be a function, but got number",
      err(function() ds:batch(2, { per_batch_map = 3 }) end))
    assert.are.equal("ValueError: batch: input_columns and output_columns are per_batch_map's; per_batch_map is "
      .. "not given", err(function() ds:batch(2, { input_columns = { "a" } }) end))
    assert.are.equal("ValueError: batch: column 'z' does not exist; the columns are a, b",
      err(function() ds:batch(2, { input_columns = { "z" }, per_batch_map = print }) end))
    assert.are.equal("ValueError: batch: per_batch_map: batch 1 (samples 3..4): it returned 1 value for 2 output "
      .. "columns (a, b)", err(function()
        run({ per_batch_map = function(a, b, info)
          if info:get_batch_num() == 1 then return a end
          return a, b
        end })
      end))
    assert.are.equal("ValueError: batch: per_batch_map: batch 0 (samples 1..2): bad rows",
      err(function() run({ per_batch_map = function() error("ValueError: bad rows") end }) end))
    assert.are.equal("RuntimeError: batch: per_batch_map: batch 0 (samples 1..2): plain",
      err(function() run({ per_batch_map = function() error("plain", 0) end }) end))
    assert.are.equal("TypeError: batch: per_batch_map: batch 0 (samples 1..2): output column 'b' must be a "
      .. "non-empty list of the batch's values, but got number",
      err(function() run({ per_batch_map = function(a) return a, 7 end }) end))
    assert.are.equal("ValueError: batch: per_batch_map: batch 0 (samples 1..2): output column 'a' has 1 rows, "
      .. "but the batch has 2", err(function()
        run({ input_columns = { "a" }, per_batch_map = function(a) return { a[1] } end })
      end))
    assert.are.equal("ValueError: batch: per_batch_map: sample 2 column 'a' has shape (2,), expected ()",
      err(function()
        run({ input_columns = { "a" }, per_batch_map = function(a) return { a[1], cell.zeros({ 2 }, cell.int64) } end })
      end))
    assert.are.equal("TypeError: batch: per_batch_map: sample 1 column 'a' is string, not a Tensor (or a number, a "
      .. "boolean, a table of numbers)",
      err(function() run({ input_columns = { "a" }, per_batch_map = function(a) return { "x", "y" } end }) end))
    assert.are.equal("ValueError: batch: the output would have two columns named 'b'",
      err(function() ds:batch(2, { input_columns = { "a" }, output_columns = { "b" }, per_batch_map = print }) end))
  end)
end)

describe("batch with a batch_size function", function()
  it("asks it each batch's size with a BatchInfo (MindSpore's example: batch number + 1)", function()
    local g = D.GeneratorDataset({ 1, 2, 3, 4, 5, 6, 7 }, "x", { shuffle = false })
    local b = g:batch(function(info) return info:get_batch_num() + 1 end)
    assert.are.equal(4, b:get_dataset_size())
    assert.are.equal(-1, b:get_batch_size())
    local got = {}
    for x in b:create_tuple_iterator() do got[#got + 1] = x:totable() end
    assert.are.same({ { 1 }, { 2, 3 }, { 4, 5, 6 }, { 7 } }, got)
  end)

  it("sees the epoch number, and drop_remainder applies to each size", function()
    local g = D.GeneratorDataset({ 1, 2, 3, 4, 5, 6, 7 }, "x", { shuffle = false })
    local it = g:batch(function(info) return info:get_epoch_num() + 2 end, { drop_remainder = true })
      :create_tuple_iterator({ num_epochs = 2 })
    local counts = {}
    for e = 1, 2 do
      counts[e] = 0
      for x in it do
        counts[e] = counts[e] + 1
        assert.are.equal(e + 1, x.shape[1])
      end
    end
    assert.are.same({ 3, 2 }, counts)
  end)

  it("names the batch when the function fails or gives a bad size", function()
    local g = D.GeneratorDataset({ 1, 2, 3 }, "x", { shuffle = false })
    local function run(f) for _ in g:batch(f):create_tuple_iterator() do end end
    assert.are.equal("ValueError: batch: batch_size function at batch 1: it returned 0; a batch size must be a "
      .. "positive integer", err(function() run(function(info) return 1 - info:get_batch_num() end) end))
    assert.are.equal("ValueError: batch: batch_size function at batch 0: it returned string; a batch size must be a "
      .. "positive integer", err(function() run(function() return "2" end) end))
    assert.are.equal("RuntimeError: batch: batch_size function at batch 0: no size",
      err(function() run(function() error("no size", 0) end) end))
    assert.are.equal("TypeError: batch: batch_size must be an integer, but got string",
      err(function() g:batch("4") end))
  end)
end)

describe("map with column_order", function()
  it("is map then project(column_order): the columns listed, in that order", function()
    local ds = ab(3):map(function(a, b) return a + b, a * b end,
      { input_columns = { "a", "b" }, output_columns = { "s", "p" }, column_order = { "p", "s" } })
    assert.are.same({ "p", "s" }, ds:get_col_names())
    local same = ab(3):map(function(a, b) return a + b, a * b end,
      { input_columns = { "a", "b" }, output_columns = { "s", "p" } }):project({ "p", "s" })
    assert.are.same(collect(same:create_dict_iterator()), collect(ds:create_dict_iterator()))
    assert.are.same({ { p = { 10 }, s = { 11 } }, { p = { 40 }, s = { 22 } }, { p = { 90 }, s = { 33 } } },
      collect(ds:create_dict_iterator()))
  end)

  it("may drop columns and keeps the C path for C transforms", function()
    local x = cell.tensor({ { 1, 2 }, { 3, 4 } })
    local y = cell.tensor({ 7, 8 }, cell.int64)
    local ds = D.TensorDataset({ x, y, column_names = { "x", "y" } })
      :map(D.transforms.TypeCast(cell.float64), { input_columns = "x", column_order = { "y", "x" } })
    assert.are.same({ "y", "x" }, ds:get_col_names())
    local rows = {}
    for a, b in ds:create_tuple_iterator() do rows[#rows + 1] = { a:item(), b.dtype.name } end
    assert.are.same({ { 7, "float64" }, { 8, "float64" } }, rows)
    local only = D.TensorDataset({ x, y, column_names = { "x", "y" } })
      :map(D.transforms.TypeCast(cell.float64), { input_columns = "x", column_order = { "x" } })
    assert.are.same({ "x" }, only:get_col_names())
  end)

  it("names a column_order column that does not exist, or a bad list", function()
    assert.are.equal("ValueError: map: column_order: column 'zz' does not exist; the columns are a, b",
      err(function() ab(2):map(function(a) return a end, { column_order = { "zz" } }) end))
    assert.are.equal("TypeError: map: column_order must be a column name or a list of them, but got number",
      err(function() ab(2):map(function(a) return a end, { column_order = 3 }) end))
  end)
end)
