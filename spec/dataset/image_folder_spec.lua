-- image_folder_spec.lua - cell.dataset.ImageFolderDataset
-- (lua/cell/dataset/image_folder.lua, src/io/image.c's folder scan and file
-- reader) over spec/fixtures/images/folder (from gen_vision.py): classes,
-- labels, order, decoding, sharding, transforms on workers, bad files.
local H = require "helpers"
local cell = H.cell
local dataset = cell.dataset
local vision = dataset.vision
local FX = require "fixtures.vision_fixtures"

local DIR = "spec/fixtures/images/folder"

local function rows(ds)
  local out = {}
  for img, label in ds:create_tuple_iterator() do out[#out + 1] = { img = img, label = label:item() } end
  return out
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p '" .. d .. "'"))
  return d
end

local function copy(src, dst)
  local f = assert(io.open(src, "rb"))
  local b = f:read("*a")
  f:close()
  f = assert(io.open(dst, "wb"))
  f:write(b)
  f:close()
end

describe("dataset.ImageFolderDataset", function()
  it("labels the subfolders in name order, 1-based, and skips other extensions", function()
    local ds = dataset.ImageFolderDataset(DIR, { extensions = { ".png", ".JPG" }, shuffle = false })
    assert.are.same({ "cat", "dog", "empty_class" }, ds.classes)
    assert.are.same({ cat = 1, dog = 2, empty_class = 3 }, ds:get_class_indexing())
    assert.are.equal(5, ds:get_dataset_size())
    assert.are.same({ "image", "label" }, ds:get_col_names())
    local r = rows(ds)
    local labels = {}
    for i, x in ipairs(r) do labels[i] = x.label end
    assert.are.same({ 1, 1, 1, 2, 2 }, labels)
    -- without decode: the files' bytes
    assert.are.equal("uint8", r[1].img.dtype.name)
    assert.are.equal(1, r[1].img.ndim)
    local f = assert(io.open(DIR .. "/cat/c0.png", "rb"))
    local bytes = f:read("*a")
    f:close()
    assert.are.equal(#bytes, r[1].img.shape[1])
    assert.are.equal(bytes:byte(2), r[1].img:totable()[2])
  end)

  it("decodes with decode = true, and Decode in map gives the same images", function()
    local a = rows(dataset.ImageFolderDataset(DIR, { extensions = { ".png", ".jpg" }, shuffle = false, decode = true }))
    local b = rows(dataset.ImageFolderDataset(DIR, { extensions = { ".png", ".jpg" }, shuffle = false })
      :map(vision.Decode(), { input_columns = "image" }))
    assert.are.equal(5, #a)
    H.assert_shape(a[1].img, { 6, 8, 3 })
    H.assert_shape(a[3].img, { 8, 8, 3 })
    H.assert_shape(a[4].img, { 6, 8, 3 })
    for i = 1, 5 do H.assert_values(a[i].img, b[i].img:totable()) end
    H.assert_values(a[1].img, vision.read_image(DIR .. "/cat/c0.png"):totable())
  end)

  it("uses class_indexing's labels and only its classes", function()
    local ds = dataset.ImageFolderDataset(DIR, { class_indexing = { dog = 7 }, extensions = { ".jpg" } })
    assert.are.same({ "dog" }, ds.classes)
    local r = rows(ds)
    assert.are.equal(2, #r)
    for _, x in ipairs(r) do assert.are.equal(7, x.label) end
    H.expect_error(function() dataset.ImageFolderDataset(DIR, { class_indexing = { bird = 1 } }) end, "ValueError",
      "'bird'", "not a subfolder")
  end)

  it("shuffles by the seed, the same every run, and shards as MindSpore", function()
    local function order(seed, o)
      dataset.config.set_seed(seed)
      local ds = dataset.ImageFolderDataset(DIR, o or { extensions = { ".png", ".jpg" }, decode = true })
      local out = {}
      for _, x in ipairs(rows(ds)) do out[#out + 1] = x.img.shape[1] * 10 + x.label end
      return out
    end
    assert.are.same(order(3), order(3))
    local all = {}
    for _, v in ipairs(order(3)) do all[#all + 1] = v end
    table.sort(all)
    assert.are.same({ 61, 62, 62, 71, 81 }, all)
    local s0 = order(3, { extensions = { ".png", ".jpg" }, num_shards = 2, shard_id = 0, shuffle = false, decode = true })
    local s1 = order(3, { extensions = { ".png", ".jpg" }, num_shards = 2, shard_id = 1, shuffle = false, decode = true })
    assert.are.equal(3, #s0)
    assert.are.equal(3, #s1)
  end)

  it("runs reading and transforms on worker threads, the same for any worker count", function()
    local function run(workers)
      dataset.config.set_seed(11)
      local ds = dataset.ImageFolderDataset(DIR, { extensions = { ".png", ".jpg" }, decode = true,
        num_parallel_workers = workers })
      ds = ds:map({ vision.RandomResizedCrop(4), vision.RandomHorizontalFlip(), vision.ToTensor() },
        { input_columns = "image", num_parallel_workers = workers })
      ds = ds:batch(2)
      local out = {}
      for img, label in ds:create_tuple_iterator() do out[#out + 1] = { img:totable(), label:totable() } end
      return out
    end
    local a = run(0)
    assert.are.equal(3, #a)
    assert.are.equal(2, #a[1][1])
    assert.are.same(a, run(2))
    assert.are.same(a, run(4))
  end)

  it("names the file and the sample of a corrupt image; a missing folder; bad options", function()
    local d = tmpdir()
    assert(os.execute("mkdir -p '" .. d .. "/a' '" .. d .. "/b'"))
    copy(DIR .. "/cat/c0.png", d .. "/a/1.png")
    copy("spec/fixtures/images/bad/truncated.jpg", d .. "/b/2.jpg")
    local ds = dataset.ImageFolderDataset(d, { decode = true, shuffle = false })
    H.expect_error(function() rows(ds) end, "RuntimeError", "sample 2", d .. "/b/2.jpg", "corrupt JPEG image")
    -- not decoded: the bytes read fine; Decode in map fails naming the sample
    local raw = dataset.ImageFolderDataset(d, { shuffle = false }):map(vision.Decode(), { input_columns = "image" })
    H.expect_error(function() rows(raw) end, "RuntimeError", "sample 2", "corrupt JPEG image")
    os.execute("rm -rf '" .. d .. "'")
    H.expect_error(function() dataset.ImageFolderDataset(d) end, "ValueError", "ImageFolderDataset", "does not exist")
    H.expect_error(function() dataset.ImageFolderDataset(DIR, { extensions = { ".gif" } }) end, "ValueError",
      "no image files found")
    H.expect_error(function() dataset.ImageFolderDataset(DIR, { decode = 1 }) end, "TypeError", "decode")
    H.expect_error(function() dataset.ImageFolderDataset(DIR, { colour = 1 }) end, "TypeError", "colour")
    H.expect_error(function() dataset.ImageFolderDataset(42) end, "TypeError", "dataset_dir")
  end)

  it("reads the decode fixtures' folder with every file decoded as read_image does", function()
    local d = tmpdir()
    assert(os.execute("mkdir -p '" .. d .. "/x'"))
    for _, c in ipairs(FX.decode) do copy("spec/fixtures/images/decode/" .. c.name, d .. "/x/" .. c.name) end
    local ds = dataset.ImageFolderDataset(d, { decode = true, shuffle = false })
    local r = rows(ds)
    assert.are.equal(#FX.decode, #r)
    local names = {}
    for _, c in ipairs(FX.decode) do names[#names + 1] = c.name end
    table.sort(names)
    local by = {}
    for _, c in ipairs(FX.decode) do by[c.name] = c.output end
    for i, n in ipairs(names) do H.assert_values(r[i].img, by[n], "uint8", n) end
    os.execute("rm -rf '" .. d .. "'")
  end)
end)
