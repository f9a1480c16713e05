--- cell.dataset.FashionMNIST: Zalando's Fashion-MNIST from its IDX files,
-- as tensors ready for training.
--
--     local ds = cell.dataset.FashionMNIST(nil, "train")
--     ds.images   -- float32 {60000, 1, 28, 28}, values in [0, 1]
--     ds.labels   -- int64 {60000}, class ids 1..10 (1-based, like every class index in cell)
--     ds.classes  -- {"T-shirt/top", "Trouser", ...}: ds.classes[label]
--
-- The directory holds train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
-- t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (or the same
-- names without .gz), as Debian's dataset-fashion-mnist package installs
-- them in /usr/share/datasets/fashion-mnist. usage is "train" (60000
-- images), "test" (10000) or "all" (both, train first), MindSpore's
-- FashionMnistDataset usages; as there, the default is "all".
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local rethrow = require("cell.errors").rethrow
local raise = require("cell.errors").raise
local core = require "cell.core"
local args_util = require "cell.util.args"

local M = {}

M.DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"

M.CLASSES = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
  "Ankle boot" }

local FILES = {
  train = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60000 },
  test = { "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10000 },
}

-- (stat, not open: opening a FIFO would wait for a writer forever)
local function exists(path) return core.file_kind(path) ~= nil end

local type_name = require("cell.util.types").type_name

--- The path of `name` (or `name`.gz, preferred) in dir; a ValueError
-- naming what is missing otherwise.
local function find(dir, name, lvl)
  for _, p in ipairs { dir .. "/" .. name .. ".gz", dir .. "/" .. name } do
    if exists(p) then return p end
  end
  if not exists(dir) then
    raise(("ValueError: FashionMNIST: the directory %s does not exist; on Debian or Ubuntu, install the data "
      .. "with `apt-get install dataset-fashion-mnist` (it goes to %s)"):format(dir, M.DEFAULT_DIR))
  end
  raise(("ValueError: FashionMNIST: %s/%s.gz (or %s without .gz) not found"):format(dir, name, name))
end

--- The engine's IDX reader, its errors raised at the user's call.
local function idx(path, lvl, dtype, scale)
  local ok, t = pcall(core.idx_load, path, dtype, scale)
  if not ok then rethrow(t) end
  return t
end

--- Images and labels of one split, checked against each other (raw:
-- the images as the file's bytes, else float32 in [0, 1]).
local function load_split(dir, usage, lvl, raw)
  local f = FILES[usage]
  local ipath, lpath = find(dir, f[1], lvl + 1), find(dir, f[2], lvl + 1)
  -- Bytes to [0, 1] in the reader's one pass (the IDX type is checked
  -- by the engine: a float file would be refused below by its shape only).
  local images = raw and idx(ipath, lvl + 1) or idx(ipath, lvl + 1, core.float32, 1 / 255)
  local labels = idx(lpath, lvl + 1)
  if raw and images.dtype ~= core.uint8 then
    raise(("ValueError: FashionMnistDataset: %s holds %s, not uint8 images"):format(ipath, tostring(images.dtype)))
  end
  local ish, lsh = images.shape, labels.shape
  if #ish ~= 3 or ish[2] ~= 28 or ish[3] ~= 28 then
    raise(("ValueError: FashionMNIST: %s holds data of shape (%s), not images of 28 x 28")
      :format(ipath, table.concat(ish, ", ")))
  end
  if labels.dtype ~= core.uint8 or #lsh ~= 1 then
    raise(("ValueError: FashionMNIST: %s holds %s of shape (%s), not a uint8 list of labels")
      :format(lpath, tostring(labels.dtype), table.concat(lsh, ", ")))
  end
  if ish[1] ~= lsh[1] then
    raise(("ValueError: FashionMNIST: %s has %d images but %s has %d labels"):format(ipath, ish[1], lpath, lsh[1]))
  end
  if lsh[1] > 0 and labels:max():item() > 9 then
    raise(("ValueError: FashionMNIST: %s has label %d; Fashion-MNIST's are 0..9")
      :format(lpath, labels:max():item()))
  end
  return images, labels
end

M.load_split = load_split

--- The images and labels of usage ("train", "test" or "all": both, train
-- first; nil: "all") in dir (nil: DEFAULT_DIR), the arguments checked in
-- fname's name; raw as load_split's.
function M.load(fname, dir, usage, raw)
  if dir == nil then dir = M.DEFAULT_DIR end
  if type(dir) ~= "string" then
    raise(("TypeError: %s: dataset_dir must be a string, but got %s"):format(fname, type_name(dir)))
  end
  if usage == nil then usage = "all" end
  if usage ~= "train" and usage ~= "test" and usage ~= "all" then
    raise(("ValueError: %s: usage must be 'train', 'test' or 'all', but got %s")
      :format(fname, type(usage) == "string" and ("'" .. usage .. "'") or type_name(usage)))
  end
  dir = dir:gsub("/+$", "")
  if dir == "" then dir = "/" end
  if usage == "all" then
    local i1, l1 = load_split(dir, "train", 3, raw)
    local i2, l2 = load_split(dir, "test", 3, raw)
    return core.cat({ i1, i2 }, 1), core.cat({ l1, l2 }, 1)
  end
  return load_split(dir, usage, 3, raw)
end

local OPTIONS = { "usage", "num_shards", "shard_id" }

--- FashionMNIST([dir [, usage]]) or FashionMNIST(dir, {usage =, num_shards =, shard_id =})
-- -> {images, labels, classes}; with num_shards, shard shard_id's rows only
-- (every num_shards-th from shard_id + 1, see batches.shard_positions).
function M.FashionMNIST(dir, ...)
  local usage, num_shards, shard_id = args_util.parse("FashionMNIST", OPTIONS, 2, select("#", ...), ...)
  local shards = require "cell.dataset.batches"
  num_shards, shard_id = shards.check_shards("FashionMNIST", num_shards, shard_id)
  local images, labels = M.load("FashionMNIST", dir, usage, false)
  local n = images.shape[1]
  local classes = {}
  for i, c in ipairs(M.CLASSES) do classes[i] = c end
  return shards.shard_dataset({
    images = images:reshape({ n, 1, 28, 28 }),
    labels = labels:astype(core.int64) + 1,
    classes = classes,
  }, num_shards, shard_id)
end

return M
