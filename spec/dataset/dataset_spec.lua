-- dataset_spec.lua - cell.dataset (lua/cell/dataset/): FashionMNIST on the
-- committed mini copies (spec/fixtures/idx/mini*, from spec/fixtures/gen_idx.py)
-- and on the installed data, its errors; the synthetic stand-in; and
-- batches: counts, order, shuffling per (seed, epoch), drop_last, errors.
local H = require "helpers"
local cell = H.cell
local ds = cell.dataset
local FX = require "fixtures.idx_fixtures"

local MINI = "spec/fixtures/idx/mini"
local FASHION = "/usr/share/datasets/fashion-mnist"

local function core_is_tensor(v) return cell.is_tensor(v) end
local function err(fn, ...) return H.caller_error("dataset_spec%.lua", fn, ...) end

local function installed()
  local f = io.open(FASHION .. "/train-labels-idx1-ubyte.gz", "rb")
  if f then f:close() end
  return f ~= nil
end

local CLASSES = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
  "Ankle boot" }

describe("dataset.FashionMNIST", function()
  it("reads a split as float32 images in [0, 1] and 1-based int64 labels", function()
    local d = ds.FashionMNIST(MINI, "train")
    local fx = FX.mini.train
    H.assert_shape(d.images, { 5, 1, 28, 28 })
    assert.are.equal("float32", d.images.dtype.name)
    assert.are.equal("int64", d.labels.dtype.name)
    H.assert_values(d.labels, fx.labels)
    assert.are.same(CLASSES, d.classes)
    for i = 1, 5 do
      H.assert_close((d.images[i] * 255):sum():item(), fx.sums[i], 1e-5, "sum of image " .. i)
      H.assert_close(d.images[i][1][15][15], fx.pixel_1_15_15[i] / 255, 1e-7)
    end
    assert.is_true(d.images:min():item() >= 0 and d.images:max():item() <= 1)
  end)

  it("reads 'test', 'all' (train first, MindSpore's default) and uncompressed files", function()
    H.assert_values(ds.FashionMNIST(MINI, "test").labels, FX.mini.t10k.labels)
    local all = ds.FashionMNIST(MINI)
    H.assert_shape(all.images, { 8, 1, 28, 28 })
    local want = {}
    for _, v in ipairs(FX.mini.train.labels) do want[#want + 1] = v end
    for _, v in ipairs(FX.mini.t10k.labels) do want[#want + 1] = v end
    H.assert_values(all.labels, want)
    local plain = ds.FashionMNIST(MINI .. "_plain/", { usage = "train" })
    H.assert_values(plain.labels, FX.mini.train.labels)
    H.assert_values(plain.images, ds.FashionMNIST(MINI, "train").images:totable())
  end)

  it("gives each call its own class list", function()
    local a, b = ds.FashionMNIST(MINI, "test"), ds.FashionMNIST(MINI, "test")
    a.classes[1] = "changed"
    assert.are.equal("T-shirt/top", b.classes[1])
  end)

  it("says how to install the data when the directory is missing", function()
    assert.are.equal("ValueError: FashionMNIST: the directory /no/such/dir does not exist; on Debian or Ubuntu, "
      .. "install the data with `apt-get install dataset-fashion-mnist` (it goes to " .. FASHION .. ")",
      err(function() ds.FashionMNIST("/no/such/dir", "train") end))
  end)

  it("names a missing file", function()
    assert.are.equal("ValueError: FashionMNIST: spec/fixtures/train-images-idx3-ubyte.gz (or "
      .. "train-images-idx3-ubyte without .gz) not found", err(function() ds.FashionMNIST("spec/fixtures", "train") end))
  end)

  it("names the file whose contents do not fit", function()
    assert.are.equal("ValueError: FashionMNIST: " .. MINI .. "_bad_count/train-images-idx3-ubyte.gz has 5 images but "
      .. MINI .. "_bad_count/train-labels-idx1-ubyte.gz has 4 labels",
      err(function() ds.FashionMNIST(MINI .. "_bad_count", "train") end))
    assert.are.equal("ValueError: FashionMNIST: " .. MINI .. "_bad_label/train-labels-idx1-ubyte.gz has label 10; "
      .. "Fashion-MNIST's are 0..9", err(function() ds.FashionMNIST(MINI .. "_bad_label", "train") end))
    assert.are.equal("ValueError: FashionMNIST: " .. MINI .. "_bad_shape/train-images-idx3-ubyte.gz holds data of "
      .. "shape (140, 28, 1), not images of 28 x 28", err(function() ds.FashionMNIST(MINI .. "_bad_shape", "train") end))
    -- the test split of the same folders is fine
    H.assert_shape(ds.FashionMNIST(MINI .. "_bad_count", "test").images, { 3, 1, 28, 28 })
  end)

  it("names a corrupt file", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p '" .. dir .. "' && cp spec/fixtures/idx/truncated.idx.gz '" .. dir
      .. "/t10k-images-idx3-ubyte.gz' && cp " .. MINI .. "/t10k-labels-idx1-ubyte.gz '" .. dir .. "/'")
    local msg = err(function() ds.FashionMNIST(dir, "test") end)
    os.execute("rm -rf '" .. dir .. "'")
    assert.is_truthy(msg:find("ValueError: idx: " .. dir .. "/t10k-images-idx3-ubyte.gz: corrupt data", 1, true), msg)
  end)

  it("checks its arguments", function()
    assert.are.equal("ValueError: FashionMNIST: usage must be 'train', 'test' or 'all', but got 'valid'",
      err(function() ds.FashionMNIST(MINI, "valid") end))
    assert.are.equal("ValueError: FashionMNIST: usage must be 'train', 'test' or 'all', but got number",
      err(function() ds.FashionMNIST(MINI, 3) end))
    assert.are.equal("TypeError: FashionMNIST: dataset_dir must be a string, but got number",
      err(function() ds.FashionMNIST(3) end))
    assert.are.equal("TypeError: FashionMNIST() got an unexpected keyword argument 'split'; the options are usage, num_shards, shard_id",
      err(function() ds.FashionMNIST(MINI, { split = "train" }) end))
  end)

  it("reads the installed data set (dataset-fashion-mnist), matching Python's reading", function()
    if not installed() or not FX.fashion then
      pending("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
      return
    end
    local d = ds.FashionMNIST(nil, "train")
    H.assert_shape(d.images, { 60000, 1, 28, 28 })
    H.assert_shape(d.labels, { 60000 })
    assert.are.equal(1, d.labels:min():item())
    assert.are.equal(10, d.labels:max():item())
    local fx = FX.fashion.train
    for _, e in ipairs(fx.labels) do assert.are.equal(e[2], d.labels[e[1]], "label " .. e[1]) end
    for _, e in ipairs(fx.pixels) do
      H.assert_close(d.images[e[1]][1][e[2]][e[3]], e[4] / 255, 1e-7)
    end
    local test = ds.FashionMNIST(FASHION, "test")
    H.assert_shape(test.images, { 10000, 1, 28, 28 })
    for _, e in ipairs(FX.fashion.t10k.labels) do assert.are.equal(e[2], test.labels[e[1]]) end
  end)
end)

describe("dataset.synthetic", function()
  it("has Fashion-MNIST's layout", function()
    local d = ds.synthetic(50)
    H.assert_shape(d.images, { 50, 1, 28, 28 })
    H.assert_shape(d.labels, { 50 })
    assert.are.equal("float32", d.images.dtype.name)
    assert.are.equal("int64", d.labels.dtype.name)
    assert.is_true(d.images:min():item() >= 0 and d.images:max():item() <= 1)
    assert.is_true(d.labels:min():item() >= 1 and d.labels:max():item() <= 10)
    assert.are.same(CLASSES, d.classes)
  end)

  it("is the same for the same seed, different for another, and leaves the engine's RNG alone", function()
    local a, b, c = ds.synthetic(20, { seed = 4 }), ds.synthetic(20, { seed = 4 }), ds.synthetic(20, { seed = 5 })
    H.assert_values(a.images, b.images:totable())
    H.assert_values(a.labels, b.labels:totable())
    assert.is_true((a.images - c.images):abs():max():item() > 0.1)
    cell.set_seed(11)
    local r1 = cell.rand({ 4 }):totable()
    cell.set_seed(11)
    ds.synthetic(10)
    H.assert_values(cell.rand({ 4 }), r1)
  end)

  it("draws the same labels under Lua 5.4 and LuaJIT", function()
    H.assert_values(ds.synthetic(12, { seed = 1 }).labels, { 5, 6, 1, 8, 4, 10, 4, 10, 8, 3, 2, 2 })
  end)

  it("is learnable: class means classify held-out images", function()
    local train, test = ds.synthetic(400, { seed = 1 }), ds.synthetic(200, { seed = 2 })
    local x = train.images:reshape({ 400, 784 })
    local means = {}
    for c = 1, 10 do
      local rows = {}
      for i = 1, 400 do
        if train.labels[i] == c then rows[#rows + 1] = i end
      end
      means[c] = x:index_select(1, cell.tensor(rows, cell.int64)):mean(1)
    end
    local m = cell.stack(means, 1) -- {10, 784}
    local t = test.images:reshape({ 200, 784 })
    -- nearest mean by squared distance: |t|^2 - 2 t.m + |m|^2, the first term constant per row
    local score = t:matmul(m:transpose(1, 2)) * 2 - (m * m):sum(2):reshape({ 1, 10 })
    local pred = score:argmax(2)
    local right = pred:eq(test.labels):sum():item()
    assert.is_true(right >= 190, "only " .. right .. " of 200 right")
  end)

  it("checks its arguments", function()
    assert.are.equal("TypeError: synthetic: n must be an integer, but got string", err(function() ds.synthetic("5") end))
    assert.are.equal("ValueError: synthetic: n must be positive, but got 0", err(function() ds.synthetic(0) end))
    assert.are.equal("TypeError: synthetic: seed must be a non-negative integer, but got 1.5",
      err(function() ds.synthetic(5, { seed = 1.5 }) end))
    assert.are.equal("TypeError: synthetic() got an unexpected keyword argument 'n'; the options are seed, num_shards, shard_id",
      err(function() ds.synthetic(5, { n = 3 }) end))
  end)
end)

describe("dataset.batches", function()
  local x = cell.arange(1, 11):reshape({ 10, 1 }):float()
  local y = cell.arange(101, 111)

  local function collect(b, epoch)
    local xs, ys, sizes = {}, {}, {}
    for xb, yb in b:each(epoch) do
      sizes[#sizes + 1] = xb.shape[1]
      assert.is_true(xb:is_contiguous())
      for i = 1, xb.shape[1] do
        xs[#xs + 1] = xb[i][1]
        ys[#ys + 1] = yb and yb[i]
      end
    end
    return xs, ys, sizes
  end

  it("yields contiguous batches in order, keeping the last partial one", function()
    local b = ds.batches(x, y, 4)
    assert.are.equal(3, b:len())
    local xs, ys, sizes = collect(b)
    assert.are.same({ 4, 4, 2 }, sizes)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, xs)
    assert.are.same({ 101, 102, 103, 104, 105, 106, 107, 108, 109, 110 }, ys)
    assert.are.equal("Batches(samples=10, batch_size=4, batches=3, shuffle=false, drop_last=false)", tostring(b))
  end)

  it("drops the last partial batch with drop_last", function()
    local b = ds.batches(x, y, 4, { drop_last = true })
    assert.are.equal(2, b:len())
    local _, _, sizes = collect(b)
    assert.are.same({ 4, 4 }, sizes)
    assert.are.equal(2, ds.batches(x, y, 5, { drop_last = true }):len())
    assert.are.equal(0, ds.batches(x, y, 11, { drop_last = true }):len())
    assert.are.equal(1, ds.batches(x, y, 11):len())
  end)

  it("shuffles each epoch, reproducibly per seed and epoch, keeping x and y paired", function()
    local b = ds.batches(x, y, 3, { shuffle = true, seed = 7 })
    local x1, y1, sizes = collect(b, 1)
    assert.are.same({ 3, 3, 3, 1 }, sizes)
    local sorted = {}
    for i, v in ipairs(x1) do
      assert.are.equal(v + 100, y1[i])
      sorted[i] = v
    end
    table.sort(sorted)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, sorted)
    assert.are.same(x1, (collect(ds.batches(x, y, 3, { shuffle = true, seed = 7 }), 1)))
    assert.are_not.same(x1, (collect(b, 2)))
    assert.are_not.same(x1, (collect(ds.batches(x, y, 3, { shuffle = true, seed = 8 }), 1)))
  end)

  it("counts epochs itself when each() is given none", function()
    local b = ds.batches(x, y, 10, { shuffle = true, seed = 3 })
    local e1, e2 = collect(b), collect(b)
    assert.are.same(e1, (collect(ds.batches(x, y, 10, { shuffle = true, seed = 3 }), 1)))
    assert.are.same(e2, (collect(ds.batches(x, y, 10, { shuffle = true, seed = 3 }), 2)))
  end)

  it("is itself the iterator of its next epoch in a generic for", function()
    local b = ds.batches(x, y, 4, { shuffle = true, seed = 3 })
    local firsts, sizes = {}, {}
    for xb, yb in b do
      sizes[#sizes + 1] = xb.shape[1]
      assert.are.equal(xb.shape[1], yb.shape[1])
      firsts[#firsts + 1] = xb[1][1]
    end
    assert.are.same({ 4, 4, 2 }, sizes)
    local e1 = {}
    for xb in ds.batches(x, y, 4, { shuffle = true, seed = 3 }):each(1) do e1[#e1 + 1] = xb[1][1] end
    assert.are.same(e1, firsts)
    for _ in b do break end -- epoch 2, left early
    local n = 0
    for _ in b do n = n + 1 end -- a new loop: epoch 3, from its start
    assert.are.equal(3, n)
    assert.are.equal(3, b.epochs)
    local without_y = 0
    for xb, yb in ds.batches(x, nil, 5) do
      without_y = without_y + 1
      assert.is_nil(yb)
      assert.are.equal(5, xb.shape[1])
    end
    assert.are.equal(2, without_y)
  end)

  it("orders a shuffled epoch the same under Lua 5.4 and LuaJIT", function()
    local xs = collect(ds.batches(x, nil, 10, { shuffle = true, seed = 0 }), 1)
    assert.are.same({ 9, 6, 4, 8, 1, 5, 2, 7, 3, 10 }, xs)
  end)

  it("takes a table of any number of tensors, batched alike", function()
    local z = x * 3
    local n = 0
    for xb, yb, zb in ds.batches({ x, y, z }, 4, { shuffle = true, seed = 5 }):each(1) do
      n = n + 1
      H.assert_close(zb, (xb * 3):totable())
      assert.are.equal(xb.shape[1], yb.shape[1])
    end
    assert.are.equal(3, n)
    local one = 0
    for xb, yb in ds.batches({ x }, 4):each(1) do
      one = one + 1
      assert.is_nil(yb)
      assert.is_true(core_is_tensor(xb))
    end
    assert.are.equal(3, one)
  end)

  it("works without y", function()
    for xb, yb in ds.batches(x, nil, 6):each() do
      assert.is_nil(yb)
      assert.is_true(xb.shape[1] == 6 or xb.shape[1] == 4)
    end
  end)

  it("checks its arguments", function()
    assert.are.equal("TypeError: batches: x must be a Tensor, but got string", err(function() ds.batches("x", y, 2) end))
    assert.are.equal("ValueError: batches: the table of tensors is empty", err(function() ds.batches({}, 2) end))
    assert.are.equal("TypeError: batches: tensor 2 of the table must be a Tensor, but got number",
      err(function() ds.batches({ y, 3 }, 2) end))
    assert.are.equal("ValueError: batches: tensor 1 has 10 samples (its first dimension) but tensor 2 has 3",
      err(function() ds.batches({ y, cell.zeros({ 3 }) }, 2) end))
    assert.are.equal("TypeError: batches: y must be a Tensor or nil, but got number", err(function() ds.batches(x, 3, 2) end))
    assert.are.equal("ValueError: batches: x has 10 samples (its first dimension) but y has 9",
      err(function() ds.batches(x, cell.zeros({ 9 }), 2) end))
    assert.are.equal("TypeError: batches: batch_size must be an integer, but got 2.5", err(function() ds.batches(x, y, 2.5) end))
    assert.are.equal("ValueError: batches: batch_size must be positive, but got 0", err(function() ds.batches(x, y, 0) end))
    assert.are.equal("TypeError: batches: shuffle must be a boolean, but got string",
      err(function() ds.batches(x, y, 2, { shuffle = "yes" }) end))
    assert.are.equal("TypeError: batches() got an unexpected keyword argument 'shufle'; the options are shuffle, drop_last, seed, num_shards, shard_id",
      err(function() ds.batches(x, y, 2, { shufle = true }) end))
    assert.are.equal("TypeError: batches: epoch must be an integer, but got string",
      err(function() ds.batches(x, y, 2):each("1") end))
    assert.are.equal("ValueError: batches: x must have at least one dimension, but it is 0-D",
      err(function() ds.batches(cell.tensor(1), nil, 2) end))
  end)
end)
