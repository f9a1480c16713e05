-- pipeline_spec.lua - cell.dataset's MindSpore-style pipelines
-- (lua/cell/dataset/sources.lua, pipeline.lua): the sources
-- (GeneratorDataset over a function, a table and an object with
-- __index/__len; TensorDataset), the chained ops (map, shuffle, batch,
-- repeat_, take, skip, split, project, rename), the iterators, sizes,
-- sharding, and the errors that name the sample and column.
local H = require "helpers"
local cell = H.cell
local D = cell.dataset
local T = D.transforms

local function err(fn, ...) return H.caller_error("pipeline_spec%.lua", fn, ...) end

--- The first column's first elements of every row of one epoch, as numbers.
local function firsts(ds, epoch)
  local out = {}
  for x in ds:each(epoch) do out[#out + 1] = x:reshape({ -1 }):totable()[1] end
  return out
end

local function sorted(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c
end

local function range(a, b)
  local t = {}
  for i = a, b do t[#t + 1] = i end
  return t
end

-- x row i holds {i, 10 i}; y row i holds i (int64)
local function xy(n)
  local rows = {}
  for i = 1, n do rows[i] = { i, 10 * i } end
  return cell.tensor(rows), cell.tensor(range(1, n), cell.int64)
end

describe("dataset.TensorDataset", function()
  it("gives rows as slices on dimension 1, columns named column_0, ...", function()
    local x, y = xy(5)
    local d = D.TensorDataset { x, y }
    assert.are.same({ "column_0", "column_1" }, d:get_col_names())
    assert.are.equal(5, d:get_dataset_size())
    assert.are.equal(1, d:get_batch_size())
    local k = 0
    for a, b in d:create_tuple_iterator() do
      k = k + 1
      H.assert_values(a, { k, 10 * k }, "float32")
      H.assert_values(b, k, "int64")
    end
    assert.are.equal(5, k)
  end)

  it("takes column_names and options in the table or as a second table", function()
    local x, y = xy(4)
    local d = D.TensorDataset({ x, y }, { column_names = { "image", "label" } })
    assert.are.same({ "image", "label" }, d:get_col_names())
    local d3 = D.TensorDataset { x, y, x * 2, column_names = { "a", "b", "c" } }
    for r in d3:create_dict_iterator() do H.assert_close(r.c, (r.a * 2):totable()) end
  end)

  it("batches with and without drop_remainder, in the C pipeline", function()
    local x, y = xy(5)
    local d = D.TensorDataset { x, y }:batch(2)
    assert.are.equal(3, d:get_dataset_size())
    assert.are.equal(2, d:get_batch_size())
    local shapes = {}
    for a, b in d:create_tuple_iterator() do shapes[#shapes + 1] = a.shape[1] .. "/" .. b.shape[1] end
    assert.are.same({ "2/2", "2/2", "1/1" }, shapes)
    local dd = D.TensorDataset { x, y }:batch(2, { drop_remainder = true })
    assert.are.equal(2, dd:get_dataset_size())
    local n = 0
    for _, b in dd:create_tuple_iterator() do
      n = n + 1
      H.assert_values(b, { 2 * n - 1, 2 * n })
    end
    assert.are.equal(2, n)
  end)

  it("refuses what is not a table of equal-length tensors", function()
    local x, y = xy(4)
    assert.are.equal("TypeError: TensorDataset: column 2 ('column_1') must be a Tensor, but got number",
      err(function() local _ = D.TensorDataset({ x, 3 }) end))
    assert.are.equal("ValueError: TensorDataset: column 2 ('column_1') has 3 rows but column 1 ('column_0') has 4",
      err(function() local _ = D.TensorDataset({ x, cell.zeros({ 3 }) }) end))
    assert.are.equal("ValueError: TensorDataset: 2 tensors but 1 column names",
      err(function() local _ = D.TensorDataset({ x, y, column_names = { "a" } }) end))
    assert.are.equal("ValueError: TensorDataset: no tensors given", err(function() local _ = D.TensorDataset({}) end))
    assert.is_truthy(err(function() local _ = D.TensorDataset({ x, shufle = true }) end)
      :find("unexpected keyword argument 'shufle'", 1, true))
  end)
end)

describe("dataset.GeneratorDataset", function()
  it("reads a generator function, restarted every epoch", function()
    local calls = 0
    local function gen()
      calls = calls + 1
      local i = 0
      return function()
        i = i + 1
        if i <= 3 then return cell.ones({ 2 }) * i, i end
      end
    end
    local d = D.GeneratorDataset(gen, { "data", "label" })
    assert.are.equal(3, d:get_dataset_size())
    for epoch = 1, 2 do
      local labels = {}
      for a, b in d:each(epoch) do
        labels[#labels + 1] = b:item()
        assert.are.equal("int64", b.dtype.name) -- a whole number, as MindSpore's Python int
        H.assert_close(a, { b:item(), b:item() })
      end
      assert.are.same({ 1, 2, 3 }, labels)
    end
  end)

  it("makes a Lua float (3.0 too) float32 and only an integer int64, so a float column batches", function()
    local vals = { 1.5, 3.0, 2 }
    local d = D.GeneratorDataset(function()
      local i = 0
      return function()
        i = i + 1
        return vals[i]
      end
    end, "x")
    local dtypes = {}
    for x in d:each() do dtypes[#dtypes + 1] = x.dtype.name end
    if math.type then
      assert.are.same({ "float32", "float32", "int64" }, dtypes)
      local b = d:take(2):batch(2)
      for x in b:each() do H.assert_values(x, { 1.5, 3 }, "float32") end
    else
      -- LuaJIT has no integer subtype: a whole number (3.0 as 3) is taken as an integer, as documented
      assert.are.same({ "float32", "int64", "int64" }, dtypes)
    end
  end)

  it("reads a table of rows, shuffled by default (MindSpore) and the same every run", function()
    local rows = {}
    for i = 1, 20 do rows[i] = { cell.tensor({ i }), i } end
    local a = D.GeneratorDataset(rows, { "x", "y" })
    local b = D.GeneratorDataset(rows, { "x", "y" })
    local o1 = firsts(a, 1)
    assert.are.same(range(1, 20), sorted(o1))
    assert.are_not.same(range(1, 20), o1)
    assert.are.same(o1, firsts(b, 1))
    assert.are_not.same(o1, firsts(a, 2)) -- another epoch, another order
    local plain = D.GeneratorDataset(rows, { "x", "y" }, { shuffle = false })
    assert.are.same(range(1, 20), firsts(plain, 1))
  end)

  it("reads an object with __len and __index (random access)", function()
    local obj = setmetatable({}, {
      __len = function() return 6 end,
      __index = function(_, i) return { cell.tensor({ i * 2 }), i } end,
    })
    local d = D.GeneratorDataset(obj, { "x", "y" }, { shuffle = false })
    assert.are.equal(6, d:get_dataset_size())
    assert.are.same({ 2, 4, 6, 8, 10, 12 }, firsts(d, 1))
  end)

  it("deals shards as MindSpore: every num_shards-th, padded to equal counts", function()
    local rows = {}
    for i = 1, 7 do rows[i] = cell.tensor({ i }) end
    local seen = {}
    for s = 0, 2 do
      local d = D.GeneratorDataset(rows, "x", { num_shards = 3, shard_id = s, shuffle = false })
      assert.are.equal(3, d:get_dataset_size())
      for _, v in ipairs(firsts(d, 1)) do seen[#seen + 1] = v end
    end
    assert.are.same({ 1, 1, 2, 2, 3, 4, 5, 6, 7 }, sorted(seen))
    assert.are.same({ 2, 5, 1 }, firsts(D.GeneratorDataset(rows, "x", { num_shards = 3, shard_id = 1, shuffle = false }), 1))
  end)

  it("converts numbers, booleans and tables of numbers to tensors", function()
    local d = D.GeneratorDataset({ { 1.5, true, { 1, 2 } } }, { "f", "b", "t" })
    local f, b, t = d:each(1)()
    assert.are.equal("float32", f.dtype.name)
    assert.are.equal("bool", b.dtype.name)
    H.assert_values(t, { 1, 2 })
  end)

  it("names the sample and column of a bad value", function()
    local d = D.GeneratorDataset(function()
      local i = 0
      return function()
        i = i + 1
        if i == 1 then return cell.ones({ 1 }), 1 end
        if i == 2 then return cell.ones({ 1 }), "cat" end
      end
    end, { "image", "label" })
    assert.are.equal("TypeError: GeneratorDataset: sample 2 column 'label' is string, not a Tensor (or a number, "
      .. "a boolean, a table of numbers)", err(function() for _ in d:each(1) do end end))
    local short = D.GeneratorDataset({ { cell.ones({ 1 }) } }, { "image", "label" })
    assert.are.equal("ValueError: GeneratorDataset: sample 1 has 1 value, but column_names has 2 (image, label)",
      err(function() for _ in short:each(1) do end end))
  end)

  it("refuses shuffling or sharding a function source, and bad sources", function()
    local gen = function() return function() end end
    assert.is_truthy(err(function() local _ = D.GeneratorDataset(gen, "x", { shuffle = true }) end):find(
      "^ValueError: GeneratorDataset: shuffle needs a random%-access source"))
    assert.is_truthy(err(function() local _ = D.GeneratorDataset(gen, "x", { num_shards = 2, shard_id = 0 }) end):find(
      "^ValueError: GeneratorDataset: num_shards needs a random%-access source"))
    assert.is_truthy(err(function() local _ = D.GeneratorDataset(42, "x") end)
      :find("^TypeError: GeneratorDataset: source must be"))
    assert.are.equal("ValueError: GeneratorDataset: shard_id must be in [0, 2) (shards count from 0), but got 2",
      err(function() local _ = D.GeneratorDataset({}, "x", { num_shards = 2, shard_id = 2 }) end))
  end)
end)

describe("dataset ops", function()
  it("map runs Lua functions on the main thread, with input and output columns", function()
    local x, y = xy(4)
    local d = D.TensorDataset { x, y, column_names = { "x", "y" } }
    local two = d:map(function(a) return a:sum(), a * 0 end, { input_columns = "x", output_columns = { "s", "z" } })
    assert.are.same({ "s", "z", "y" }, two:get_col_names())
    local k = 0
    for s, z, lab in two:create_tuple_iterator() do
      k = k + 1
      H.assert_close(s, 11 * k)
      H.assert_values(z, { 0, 0 })
      H.assert_values(lab, k)
    end
    local merged = d:map(function(a, b) return a + b:totable()[1] end, { input_columns = { "y", "x" }, output_columns = "m" })
    assert.are.same({ "m" }, merged:get_col_names())
    assert.are.same({ 2, 4, 6, 8 }, firsts(merged, 1))
  end)

  it("map runs C transforms in the engine's pipeline (Compose flattened)", function()
    local x, y = xy(3)
    local d = D.TensorDataset { x, y, column_names = { "x", "y" } }
        :map(T.Compose { T.OneHot(3), T.TypeCast(cell.float64) }, { input_columns = "y" })
    local k = 0
    for _, oh in d:create_tuple_iterator() do
      k = k + 1
      local want = { 0, 0, 0 }
      want[k] = 1
      H.assert_values(oh, want, "float64")
    end
    assert.are.equal(3, k)
  end)

  it("map takes input_columns, output_columns, num_parallel_workers positionally, in MindSpore's order", function()
    local x, y = xy(3)
    local d = D.TensorDataset { x, y, column_names = { "x", "y" } }
    local m = d:map(function(v) return v * 10 end, "y")
    assert.are.same({ "x", "y" }, m:get_col_names())
    local got = {}
    for _, v in m:each(1) do got[#got + 1] = v:item() end
    assert.are.same({ 10, 20, 30 }, got)
    local r = d:map(T.OneHot(3), "y", "oh", 2)
    assert.are.same({ "x", "oh" }, r:get_col_names())
    for _, oh in r:each(1) do assert.are.same({ 3 }, oh.shape) end
    local mixed = d:map(function(v) return v + 1 end, "y", { output_columns = "z", python_multiprocessing = true,
      max_rowsize = 16 })
    assert.are.same({ "x", "z" }, mixed:get_col_names())
    assert.are.same({ "x", "z" }, d:map(function(v) return v end, { "y" }, { "z" }):get_col_names())
    assert.are.equal("TypeError: map() got multiple values for argument 'input_columns'",
      err(function() local _ = d:map(T.OneHot(3), "y", { input_columns = "y" }) end))
    assert.are.equal("TypeError: map: input_columns must be a column name or a list of them, but got number",
      err(function() local _ = d:map(T.OneHot(3), 5) end))
  end)

  it("batch takes drop_remainder and num_parallel_workers positionally, and ignores python_multiprocessing, max_rowsize",
    function()
      local x, y = xy(5)
      local d = D.TensorDataset { x, y }
      assert.are.equal(2, d:batch(2, true):get_dataset_size())
      assert.are.equal(3, d:batch(2, false):get_dataset_size())
      local b = d:batch(2, true, 2)
      local n = 0
      for _, lab in b:each(1) do
        n = n + 1
        H.assert_values(lab, { 2 * n - 1, 2 * n })
      end
      assert.are.equal(2, n)
      assert.are.equal(2, d:batch(3, false, { python_multiprocessing = true, max_rowsize = 16 }):get_dataset_size())
      assert.are.equal(1, d:batch(3, { drop_remainder = true, python_multiprocessing = false }):get_dataset_size())
      assert.are.equal("TypeError: batch: drop_remainder must be a boolean, but got number",
        err(function() local _ = d:batch(3, 1) end))
      assert.are.equal("TypeError: batch() got multiple values for argument 'drop_remainder'",
        err(function() local _ = d:batch(3, true, { drop_remainder = false }) end))
    end)

  it("map errors name the sample and column", function()
    local x, y = xy(4)
    local d = D.TensorDataset { x, y, column_names = { "x", "y" } }
    local bad = d:map(function(a) if a[1] == 3 then error("ValueError: no threes") end return a end,
      { input_columns = "x" })
    assert.are.equal("ValueError: map: sample 3 column 'x': no threes", err(function() for _ in bad:each(1) do end end))
    local c = d:map(T.OneHot(3), { input_columns = "y" })
    assert.are.equal("ValueError: map: sample 4 column 'y': OneHot: label 4 is out of range [1, 3] for 3 classes",
      err(function() for _ in c:each(1) do end end))
    assert.are.equal("ValueError: map: column 'z' does not exist; the columns are x, y",
      err(function() local _ = d:map(T.OneHot(3), { input_columns = "z" }) end))
    local many = d:map(function(a) return a, a end, { input_columns = "x" })
    assert.are.equal("ValueError: map: sample 1 column 'x': the transforms gave 2 values for 1 output columns (x)",
      err(function() for _ in many:each(1) do end end))
  end)

  it("batch names the sample whose shape differs", function()
    local rows = { { cell.zeros({ 3, 32, 32 }) } }
    for i = 2, 20 do rows[i] = { cell.zeros({ 3, i == 17 and 30 or 32, 32 }) } end
    local d = D.GeneratorDataset(rows, "image", { shuffle = false }):batch(8)
    assert.are.equal("ValueError: batch: sample 17 column 'image' has shape (3, 30, 32), expected (3, 32, 32)",
      err(function() for _ in d:each(1) do end end))
  end)

  it("shuffle(buffer_size) permutes, the same way every run", function()
    local x, y = xy(30)
    local a = D.TensorDataset { x, y }:shuffle(8)
    local o = firsts(a, 1)
    assert.are.same(range(1, 30), sorted(o))
    assert.are_not.same(range(1, 30), o)
    assert.are.same(o, firsts(D.TensorDataset { x, y }:shuffle(8), 1))
    -- the Lua path (a Lua map below it) shuffles as the C path does
    local c = D.TensorDataset { x, y }:map(T.TypeCast(cell.float32)):shuffle(8)
    local lua = D.TensorDataset { x, y }:map(function(v) return v end):shuffle(8)
    assert.are.same(firsts(c, 1), firsts(lua, 1))
    assert.are.equal("ValueError: shuffle: buffer_size must be at least 2, but got 1", err(function() local _ = a:shuffle(1) end))
  end)

  it("repeat_, take and skip count rows (batches after batch)", function()
    local x, y = xy(5)
    local d = D.TensorDataset { x, y }
    assert.are.same({ 1, 2, 3, 4, 5, 1, 2, 3, 4, 5 }, firsts(d:repeat_(2), 1))
    assert.are.equal(10, d:repeat_(2):get_dataset_size())
    assert.are.same({ 2, 3, 4, 5, 1, 2 }, firsts(d:repeat_(2):take(7):skip(1), 1))
    assert.are.equal(6, d:repeat_(2):take(7):skip(1):get_dataset_size())
    local b = d:batch(2):repeat_(2)
    assert.are.equal(6, b:get_dataset_size())
    assert.are.same({ 1, 3, 5, 1, 3, 5 }, firsts(b, 1))
    assert.are.same({ 3, 5 }, firsts(d:batch(2):skip(1), 1))
    assert.are.same({ 1, 2, 3, 4, 5 }, firsts(d:take(-1), 1))
    assert.are.equal(0, d:skip(9):get_dataset_size())
    assert.are.same({ 1, 2, 3, 4, 5 }, firsts(d:take(), 1))
    -- MindSpore's check_take: -1 or positive
    assert.are.equal("ValueError: take: count must be -1 (all) or positive, but got 0", err(function() local _ = d:take(0) end))
    assert.are.equal("ValueError: take: count must be -1 (all) or positive, but got -2", err(function() local _ = d:take(-2) end))
  end)

  it("split gives disjoint parts by counts or fractions", function()
    local x, y = xy(10)
    local d = D.TensorDataset { x, y }
    local p = d:split({ 7, 3 }, false)
    assert.are.same(range(1, 7), firsts(p[1], 1))
    assert.are.same(range(8, 10), firsts(p[2], 1))
    local q = d:split({ 0.8, 0.2 })
    assert.are.equal(8, q[1]:get_dataset_size())
    local all = firsts(q[1], 1)
    for _, v in ipairs(firsts(q[2], 1)) do all[#all + 1] = v end
    assert.are.same(range(1, 10), sorted(all))
    assert.are.equal("ValueError: split: the sizes sum to 9, but the dataset has 10 rows", err(function() local _ = d:split({ 5, 4 }) end))
    assert.are.equal("ValueError: split: fractions must sum to 1, but they sum to 0.9", err(function() local _ = d:split({ 0.5, 0.4 }) end))
    -- a Lua source is read once and split the same way
    local g = D.GeneratorDataset(function()
      local i = 0
      return function()
        i = i + 1
        if i <= 4 then return cell.tensor({ i }) end
      end
    end, "x"):split({ 2, 2 }, false)
    assert.are.same({ 3, 4 }, firsts(g[2], 1))
  end)

  it("project and rename pick and name columns", function()
    local x, y = xy(3)
    local d = D.TensorDataset { x, y, column_names = { "x", "y" } }
    local p = d:project({ "y", "x" })
    assert.are.same({ "y", "x" }, p:get_col_names())
    assert.are.same({ 1, 2, 3 }, firsts(p, 1))
    local r = d:rename({ "x" }, { "image" })
    assert.are.same({ "image", "y" }, r:get_col_names())
    for row in r:create_dict_iterator() do assert.is_truthy(row.image and row.y) end
    assert.are.equal("ValueError: project: column 'q' does not exist; the columns are x, y", err(function() local _ = d:project({ "q" }) end))
    assert.are.equal("ValueError: rename: two columns would be named 'y'", err(function() local _ = d:rename("x", "y") end))
  end)
end)

describe("dataset iterators", function()
  it("run one epoch per for loop, num_epochs of them", function()
    local x, y = xy(3)
    local it = D.TensorDataset { x, y }:create_tuple_iterator({ num_epochs = 2 })
    local counts = {}
    for e = 1, 3 do
      local n = 0
      for _ in it do n = n + 1 end
      counts[e] = n
    end
    assert.are.same({ 3, 3, 0 }, counts)
  end)

  it("a dataset in a generic for runs its next epoch", function()
    local x, y = xy(5)
    local d = D.TensorDataset { x, y }:batch(2)
    local sizes = {}
    for xb, yb in d do
      sizes[#sizes + 1] = xb.shape[1]
      assert.are.equal(xb.shape[1], yb.shape[1])
    end
    assert.are.same({ 2, 2, 1 }, sizes)
    for _ in d do break end
    local n = 0
    for _ in d do n = n + 1 end
    assert.are.equal(3, n)
  end)

  it("dict iterators give {column = tensor}; columns= projects", function()
    local x, y = xy(2)
    local d = D.TensorDataset { x, y, column_names = { "x", "y" } }
    local keys = {}
    for row in d:create_dict_iterator({ columns = { "y" } }) do
      for k in pairs(row) do keys[#keys + 1] = k end
    end
    assert.are.same({ "y", "y" }, keys)
    assert.are.equal("ValueError: create_tuple_iterator: num_epochs must be -1 or positive, but got 0",
      err(function() local _ = d:create_tuple_iterator({ num_epochs = 0 }) end))
  end)

  it("feed cell.train.Model", function()
    local syn = D.synthetic(64, { seed = 2 })
    local d = D.TensorDataset { syn.images, syn.labels }:batch(16)
    local nn = cell.nn
    local net = nn.SequentialCell { nn.Flatten(), nn.Dense(784, 10) }
    local model = cell.train.Model(net, nn.CrossEntropyLoss(), nn.SGD(net:trainable_params(), 0.5), { "accuracy" })
    model:train(3, d, { progress = false })
    assert.is_true(model:eval(d).accuracy > 0.5)
  end)
end)
