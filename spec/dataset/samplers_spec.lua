-- samplers_spec.lua - cell.dataset's samplers (lua/cell/dataset/samplers.lua):
-- each sampler's choice and order (by hand, or by its properties for the
-- random ones), chaining with add_child, sampler = on GeneratorDataset,
-- TensorDataset, FashionMnistDataset and ImageFolderDataset, seeded runs
-- that agree whatever the number of workers, and the errors.
local H = require "helpers"
local cell = H.cell
local D = cell.dataset

local function err(fn, ...) return H.caller_error("samplers_spec%.lua", fn, ...) end

local MINI = "spec/fixtures/idx/mini"
local FOLDER = "spec/fixtures/images/folder"

--- The sample numbers (1..n) a sampler reads from a GeneratorDataset of n rows.
local function read(sampler, n, epochs)
  local t = {}
  for i = 1, n do t[i] = { i } end
  local g = D.GeneratorDataset(t, { "x" }, { sampler = sampler })
  local it = g:create_tuple_iterator()
  local out = {}
  for _ = 1, epochs or 1 do
    for x in it do out[#out + 1] = math.floor(x:item()) end
  end
  return out, g:get_dataset_size()
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

describe("samplers", function()
  before_each(function() D.config.set_seed(0) end)

  it("SequentialSampler reads from start_index (1-based), num_samples of them", function()
    assert.are.same(range(1, 6), (read(D.SequentialSampler(), 6)))
    local got, size = read(D.SequentialSampler(3, 2), 6)
    assert.are.same({ 3, 4 }, got)
    assert.are.equal(2, size)
    assert.are.same({ 5, 6 }, (read(D.SequentialSampler({ start_index = 5 }), 6)))
    assert.are.same({ 2, 3, 4 }, (read(D.SequentialSampler(2, { num_samples = 3 }), 6)))
  end)

  it("RandomSampler: a permutation (num_samples of it), or draws with replacement", function()
    local got, size = read(D.RandomSampler(), 20)
    assert.are.same(range(1, 20), sorted(got))
    assert.are_not.same(range(1, 20), got)
    assert.are.equal(20, size)
    local part = read(D.RandomSampler(false, 5), 20)
    assert.are.equal(5, #part)
    local seen = {}
    for _, v in ipairs(part) do
      assert.is_nil(seen[v])
      seen[v] = true
    end
    local draws, n = read(D.RandomSampler({ replacement = true, num_samples = 400 }), 4)
    assert.are.equal(400, n)
    local count = { 0, 0, 0, 0 }
    for _, v in ipairs(draws) do count[v] = count[v] + 1 end
    for i = 1, 4 do assert.is_true(count[i] > 60 and count[i] < 140) end
  end)

  it("SubsetSampler keeps the order of indices; SubsetRandomSampler shuffles them", function()
    assert.are.same({ 5, 2, 9, 2 }, (read(D.SubsetSampler({ 5, 2, 9, 2 }), 10)))
    assert.are.same({ 5, 2 }, (read(D.SubsetSampler({ 5, 2, 9 }, 2), 10)))
    local got = read(D.SubsetRandomSampler(range(3, 12)), 12)
    assert.are.same(range(3, 12), sorted(got))
    assert.are_not.same(range(3, 12), got)
    -- a list of indices as sampler is a SubsetSampler (MindSpore's)
    assert.are.same({ 4, 1 }, (read({ 4, 1 }, 5)))
  end)

  it("WeightedRandomSampler draws by weight; never a weight of 0", function()
    local got, size = read(D.WeightedRandomSampler({ 0, 1, 0, 3 }, 4000), 4)
    assert.are.equal(4000, size)
    local count = { 0, 0, 0, 0 }
    for _, v in ipairs(got) do count[v] = count[v] + 1 end
    assert.are.equal(0, count[1])
    assert.are.equal(0, count[3])
    -- 3 : 1 within a few percent (1000 expected for sample 2; sd about 27)
    assert.is_true(count[2] > 880 and count[2] < 1120)
    local once = read(D.WeightedRandomSampler({ 1, 1, 5, 0, 1 }, 4, false), 5)
    assert.are.same({ 1, 2, 3, 5 }, sorted(once))
    -- default num_samples: one draw per weight
    assert.are.equal(3, #read(D.WeightedRandomSampler({ 1, 2, 3 }), 3))
    -- without replacement the first draw still goes by weight: sample 3 in 6 / 8 of 400 seeds (sd about 9)
    local threes = 0
    for seed = 1, 400 do
      D.config.set_seed(seed)
      if read(D.WeightedRandomSampler({ 1, 1, 6, 0 }, 1, false), 4)[1] == 3 then threes = threes + 1 end
    end
    assert.is_true(threes > 270 and threes < 330, tostring(threes))
  end)

  it("DistributedSampler deals every num_shards-th sample from shard_id (from 0), padded to ceil(n / shards)", function()
    assert.are.same({ 2, 5, 8, 1 }, (read(D.DistributedSampler(3, 1, false), 10)))
    assert.are.same({ 1, 4, 7, 10 }, (read(D.DistributedSampler(3, 0, false), 10)))
    assert.are.same({ 1, 4 }, (read(D.DistributedSampler(3, 0, false, 2), 10)))
    -- shuffled alike on every shard: the shards cover every sample
    local all = {}
    for shard = 0, 2 do
      for _, v in ipairs((read(D.DistributedSampler({ num_shards = 3, shard_id = shard }), 9))) do
        all[#all + 1] = v
      end
    end
    assert.are.same(range(1, 9), sorted(all))
    assert.are_not.same({ 1, 4, 7 }, (read(D.DistributedSampler(3, 0), 9)))
  end)

  it("chains with add_child: the parent picks from the child's indices", function()
    local s = D.SequentialSampler(2, 3)
    s:add_child(D.SubsetSampler({ 10, 9, 8, 7, 6 }))
    local got, size = read(s, 10)
    assert.are.same({ 9, 8, 7 }, got)
    assert.are.equal(3, size)
    local short = D.SequentialSampler(1, 9)
    short:add_child(D.DistributedSampler(2, 0, false))
    local got2, size2 = read(short, 5)
    assert.are.same({ 1, 3, 5 }, got2)
    assert.are.equal(3, size2)
    assert.is_truthy(s:get_child())
    local r = D.SubsetRandomSampler({ 1, 2 })
    r:add_child(D.DistributedSampler(2, 1, false))
    assert.are.same({ 2, 4 }, sorted((read(r, 4))))
    local d = D.DistributedSampler(2, 0, false)
    d:add_child(D.RandomSampler())
    local a, b = read(d, 8), nil
    local e = D.DistributedSampler(2, 1, false)
    e:add_child(D.RandomSampler())
    b = read(e, 8)
    local both = {}
    for _, v in ipairs(a) do both[#both + 1] = v end
    for _, v in ipairs(b) do both[#both + 1] = v end
    assert.are.same(range(1, 8), sorted(both))
  end)

  it("gives the same order for a seed every run, a new one each epoch", function()
    D.config.set_seed(7)
    local a = read(D.RandomSampler(), 12, 2)
    D.config.set_seed(7)
    local b = read(D.RandomSampler(), 12, 2)
    assert.are.same(a, b)
    local e1, e2 = {}, {}
    for i = 1, 12 do e1[i], e2[i] = a[i], a[12 + i] end
    assert.are.same(sorted(e1), sorted(e2))
    assert.are_not.same(e1, e2)
    D.config.set_seed(8)
    assert.are_not.same(a, (read(D.RandomSampler(), 12, 2)))
  end)

  it("runs on TensorDataset's worker threads, in the same order whatever their number", function()
    D.config.set_seed(3)
    local x = cell.arange(1, 41, 1, cell.int64)
    local function run(workers)
      local t = D.TensorDataset({ x }, { sampler = D.WeightedRandomSampler(range(1, 40), 30),
        num_parallel_workers = workers })
      local d = t:map(D.transforms.TypeCast(cell.float32)):batch(4)
      local out = {}
      for b in d:create_tuple_iterator() do
        for _, v in ipairs(b:totable()) do out[#out + 1] = v end
      end
      return out
    end
    local zero = run(0)
    assert.are.equal(30, #zero)
    assert.are.same(zero, run(1))
    assert.are.same(zero, run(4))
  end)

  it("is taken by FashionMnistDataset and ImageFolderDataset", function()
    local f = D.FashionMnistDataset(MINI, { usage = "train", sampler = D.SubsetSampler({ 3, 1 }) })
    assert.are.equal(2, f:get_dataset_size())
    local all = D.FashionMnistDataset(MINI, { usage = "train", shuffle = false })
    local labels = {}
    for _, y in all:create_tuple_iterator() do labels[#labels + 1] = y:item() end
    local got = {}
    for _, y in f:create_tuple_iterator() do got[#got + 1] = y:item() end
    assert.are.same({ labels[3], labels[1] }, got)
    local folder = D.ImageFolderDataset(FOLDER, { extensions = { ".png", ".jpg" }, shuffle = false })
    local files = folder.files
    local img = D.ImageFolderDataset(FOLDER, { extensions = { ".png", ".jpg" }, sampler = D.SequentialSampler(2, 2) })
    assert.are.equal(2, img:get_dataset_size())
    local n = 0
    for bytes in img:create_tuple_iterator() do
      n = n + 1
      local fh = assert(io.open(files[n + 1], "rb"))
      local size = #fh:read("*a")
      fh:close()
      assert.are.equal(size, bytes.shape[1])
    end
    assert.are.equal(2, n)
  end)

  it("refuses sampler with shuffle, sharding or num_samples, in MindSpore's words", function()
    local x = cell.zeros({ 4 })
    assert.are.equal("RuntimeError: TensorDataset: sampler and shuffle cannot be specified at the same time.",
      err(function() D.TensorDataset({ x }, { sampler = D.RandomSampler(), shuffle = false }) end))
    assert.are.equal("RuntimeError: TensorDataset: sampler and sharding cannot be specified at the same time.",
      err(function() D.TensorDataset({ x }, { sampler = D.RandomSampler(), num_shards = 2, shard_id = 0 }) end))
    assert.are.equal("ValueError: GeneratorDataset: Conflicting arguments during sampler assignments. num_samples: 2, "
      .. "num_shards: nil, shard_id: nil, shuffle: nil.",
      err(function() D.GeneratorDataset({ 1, 2 }, "x", { sampler = D.RandomSampler(), num_samples = 2 }) end))
    assert.are.equal("RuntimeError: ImageFolderDataset: sampler and shuffle cannot be specified at the same time.",
      err(function() D.ImageFolderDataset(FOLDER, { sampler = D.RandomSampler(), shuffle = true }) end))
    assert.are.equal("RuntimeError: FashionMnistDataset: sampler and sharding cannot be specified at the same time.",
      err(function() D.FashionMnistDataset(MINI, { sampler = D.RandomSampler(), shard_id = 0, num_shards = 1 }) end))
    assert.are.equal("ValueError: GeneratorDataset: sampler needs a random-access source (a table or an object with "
      .. "__len and __index)", err(function()
        D.GeneratorDataset(function() return function() end end, "x", { sampler = D.RandomSampler() })
      end))
    assert.are.equal("TypeError: TensorDataset: sampler must be a sampler (SequentialSampler, RandomSampler, "
      .. "SubsetRandomSampler, SubsetSampler, WeightedRandomSampler, DistributedSampler) or a list of indices, but "
      .. "got string", err(function() D.TensorDataset({ x }, { sampler = "random" }) end))
  end)

  it("names the bad argument of a sampler", function()
    assert.are.equal("ValueError: SequentialSampler: start_index must be at least 1, but got 0",
      err(function() D.SequentialSampler(0) end))
    assert.are.equal("ValueError: SequentialSampler: num_samples must be at least 1, but got 0",
      err(function() D.SequentialSampler(1, 0) end))
    assert.are.equal("TypeError: RandomSampler: replacement must be a boolean, but got number",
      err(function() D.RandomSampler(1) end))
    assert.are.equal("TypeError: SubsetSampler: indices must be a non-empty list of integers, but got nil",
      err(function() D.SubsetSampler() end))
    assert.are.equal("TypeError: SubsetRandomSampler: indices[2] must be an integer, but got 1.5",
      err(function() D.SubsetRandomSampler({ 1, 1.5 }) end))
    assert.are.equal("ValueError: SubsetSampler: indices[1] is 0; indices count from 1",
      err(function() D.SubsetSampler({ 0, 1 }) end))
    assert.are.equal("ValueError: WeightedRandomSampler: the weights are all 0",
      err(function() D.WeightedRandomSampler({ 0, 0 }) end))
    assert.are.equal("ValueError: WeightedRandomSampler: weights[2] must be finite and not negative, but got -1",
      err(function() D.WeightedRandomSampler({ 1, -1 }) end))
    assert.are.equal("TypeError: WeightedRandomSampler: weights[1] must be a number, but got string",
      err(function() D.WeightedRandomSampler({ "a" }) end))
    assert.are.equal("ValueError: WeightedRandomSampler: without replacement, num_samples (3) must be at most the "
      .. "number of positive weights (2)", err(function() D.WeightedRandomSampler({ 1, 0, 1 }, 3, false) end))
    assert.are.equal("TypeError: DistributedSampler: num_shards and shard_id are required, but shard_id was not given",
      err(function() D.DistributedSampler(2) end))
    assert.are.equal("ValueError: DistributedSampler: shard_id must be in [0, 2) (shards count from 0), but got 2",
      err(function() D.DistributedSampler(2, 2) end))
    assert.are.equal("TypeError: Sampler: the base class of samplers is not made directly; use SequentialSampler, "
      .. "RandomSampler, SubsetRandomSampler, SubsetSampler, WeightedRandomSampler or DistributedSampler",
      err(function() D.Sampler() end))
    local s = D.SequentialSampler()
    s:add_child(D.RandomSampler())
    assert.are.equal("RuntimeError: SequentialSampler:add_child: Cannot add child sampler, this sampler already has "
      .. "a child.", err(function() s:add_child(D.RandomSampler()) end))
    assert.are.equal("TypeError: RandomSampler:add_child: the child must be a sampler, but got number",
      err(function() D.RandomSampler():add_child(3) end))
    local a, b = D.SequentialSampler(), D.SequentialSampler()
    a:add_child(b)
    assert.are.equal("ValueError: SequentialSampler:add_child: the child's chain holds this sampler (a loop)",
      err(function() b:add_child(a) end))
    assert.are.equal("TypeError: Sampler:add_child: self must be a sampler (call it with ':'), but got number",
      err(function() D.RandomSampler().add_child(3, a) end))
  end)

  it("names an index past the dataset when the samples are read", function()
    assert.are.equal("IndexError: SubsetSampler: indices[2] is 11, but the dataset has 10 samples",
      err(function() read(D.SubsetSampler({ 1, 11 }), 10) end))
    assert.are.equal("IndexError: WeightedRandomSampler: 3 weights, but the dataset has 2 samples",
      err(function() read(D.WeightedRandomSampler({ 1, 1, 1 }), 2) end))
    assert.are.equal("ValueError: SequentialSampler: start_index 7 is past the 6 samples",
      err(function() read(D.SequentialSampler(7), 6) end))
  end)
end)
