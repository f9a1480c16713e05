-- workers_spec.lua - the engine's worker threads under cell.dataset: the
-- same outputs for 0, 1 and 3 workers and for every run (random C
-- transforms draw from each sample's own stream), prefetching that
-- survives an early stop, the wait time, and FashionMnistDataset (the
-- committed mini IDX copies, and the installed data when present).
local H = require "helpers"
local cell = H.cell
local D = cell.dataset
local T = D.transforms
local config = D.config

local MINI = "spec/fixtures/idx/mini"

local function err(fn, ...) return H.caller_error("workers_spec%.lua", fn, ...) end

--- Every output of one epoch, flattened into one Lua list.
local function epoch_values(ds, epoch)
  local out = {}
  for a, b in ds:each(epoch) do
    for _, v in ipairs(H.flatten(a:totable())) do out[#out + 1] = v end
    for _, v in ipairs(H.flatten(b:totable())) do out[#out + 1] = v end
  end
  return out
end

local function with_workers(n, fn)
  local old = config.get_num_parallel_workers()
  config.set_num_parallel_workers(n)
  local ok, e = pcall(fn)
  config.set_num_parallel_workers(old)
  if not ok then error(e, 0) end
end

describe("dataset worker threads", function()
  local x, y
  setup(function()
    x = cell.arange(0, 64 * 6):reshape({ 64, 6 }):float()
    local labels = {}
    for i = 1, 64 do labels[i] = (i - 1) % 4 + 1 end
    y = cell.tensor(labels, cell.int64)
  end)

  local function pipeline()
    return D.TensorDataset { x, y, column_names = { "x", "y" }, shuffle = true }
        :map({ T.RandomApply({ T.Fill(-1) }, 0.5), T.TypeCast(cell.float64) }, { input_columns = "x" })
        :map(T.RandomChoice({ T.OneHot(4), T.Compose({ T.OneHot(4), T.Fill(0) }) }), { input_columns = "y" })
        :batch(5)
  end

  it("give the same batches for any number of workers, every run", function()
    local ref
    with_workers(0, function() ref = epoch_values(pipeline(), 1) end)
    for _, w in ipairs({ 1, 3 }) do
      with_workers(w, function()
        for _ = 1, 2 do assert.are.same(ref, epoch_values(pipeline(), 1)) end
      end)
    end
    -- the draws happened: some samples filled, some not, and per epoch
    local filled, kept = 0, 0
    for a in pipeline():each(1) do
      for _, row in ipairs(a:totable()) do
        if row[1] == -1 then filled = filled + 1 else kept = kept + 1 end
      end
    end
    assert.is_true(filled > 10 and kept > 10, ("filled %d, kept %d"):format(filled, kept))
    assert.are_not.same(ref, epoch_values(pipeline(), 2))
  end)

  it("honour map's num_parallel_workers and survive an epoch left early", function()
    local d = D.TensorDataset { x, y }:map(T.TypeCast(cell.float64), { num_parallel_workers = 4 }):batch(2)
    for _ = 1, 3 do
      for a in d:each(1) do
        assert.are.equal("float64", a.dtype.name)
        break -- the workers still have batches queued
      end
    end
    collectgarbage()
    collectgarbage()
    assert.are.equal(32, #(function()
      local t = {}
      for a in d:each(2) do t[#t + 1] = a end
      return t
    end)())
  end)

  it("report the time the consumer waited for them", function()
    local d = D.TensorDataset { x, y }:map(T.TypeCast(cell.float64)):batch(8)
    for _ in d:each(1) do end
    local seconds, outputs = d:get_wait_time()
    assert.are.equal(8, outputs)
    assert.is_true(seconds >= 0 and seconds < 10)
  end)

  it("refuse a bad worker count", function()
    assert.are.equal("ValueError: map: num_parallel_workers must be at most 64, but got 65",
      err(function() local _ = D.TensorDataset { x }:map(T.Fill(0), { num_parallel_workers = 65 }) end))
    assert.are.equal("ValueError: config.set_num_parallel_workers: the value must be in [0, 64], but got -1",
      err(function() config.set_num_parallel_workers(-1) end))
  end)
end)

describe("dataset.FashionMnistDataset", function()
  it("reads the IDX files as MindSpore's reader: image uint8 HWC, label int64 1..10", function()
    local d = D.FashionMnistDataset(MINI, { usage = "train", shuffle = false })
    local ref = D.FashionMNIST(MINI, "train")
    assert.are.same({ "image", "label" }, d:get_col_names())
    assert.are.equal(5, d:get_dataset_size())
    local k = 0
    for img, lab in d:create_tuple_iterator() do
      k = k + 1
      H.assert_shape(img, { 28, 28, 1 })
      assert.are.equal("uint8", img.dtype.name)
      H.assert_close(img:float():reshape({ 1, 28, 28 }) / 255, ref.images[k]:totable(), 1e-6)
      H.assert_values(lab, ref.labels[k], "int64")
    end
    assert.are.equal(5, k)
    assert.are.equal("Ankle boot", d.classes[10])
  end)

  it("shuffles by default, shards, and feeds a C pipeline", function()
    local d = D.FashionMnistDataset(MINI, { usage = "all" })
    assert.are.equal(8, d:get_dataset_size()) -- the mini copies: 5 train and 3 test images
    local shard = D.FashionMnistDataset(MINI, { usage = "all", num_shards = 3, shard_id = 2 })
    assert.are.equal(3, shard:get_dataset_size())
    local b = d:map(T.TypeCast(cell.float32), { input_columns = "image" }):batch(4)
    local sizes = {}
    for img, lab in b:create_tuple_iterator() do
      sizes[#sizes + 1] = img.shape[1]
      assert.are.equal("float32", img.dtype.name)
      assert.are.equal(img.shape[1], lab.shape[1])
    end
    assert.are.same({ 4, 4 }, sizes)
  end)

  it("names a bad usage or a missing folder", function()
    assert.are.equal("ValueError: FashionMnistDataset: usage must be 'train', 'test' or 'all', but got 'val'",
      err(function() local _ = D.FashionMnistDataset(MINI, { usage = "val" }) end))
    assert.is_truthy(err(function() local _ = D.FashionMnistDataset("/nonexistent/fm") end)
      :find("^ValueError: FashionMNIST: the directory /nonexistent/fm does not exist"))
  end)

  it("reads the installed data set when it is there", function()
    local f = io.open(D.FASHION_MNIST_DIR .. "/t10k-labels-idx1-ubyte.gz", "rb")
    if not f then return end -- the data is not installed: the mini copies above cover the reader
    f:close()
    local d = D.FashionMnistDataset(nil, { usage = "test", shuffle = false })
    assert.are.equal(10000, d:get_dataset_size())
    local _, lab = d:each(1)()
    assert.are.equal(10, lab:item()) -- the first test image is an ankle boot
  end)
end)
