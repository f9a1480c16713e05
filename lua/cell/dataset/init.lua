--- cell.dataset: data sets, and pipelines over them.
--
--     local ds = cell.dataset.FashionMNIST(nil, "train")    -- or cell.dataset.synthetic(1000)
--     for xb, yb in cell.dataset.batches(ds.images, ds.labels, 64, {shuffle = true}):each(1) do ... end
--
--     local d = cell.dataset.TensorDataset{ds.images, ds.labels, column_names = {"image", "label"}}
--     d = d:shuffle(1000):batch(64, {drop_remainder = true})
--     for x, y in d:create_tuple_iterator() do ... end
--
-- FashionMNIST(dir, usage) reads the IDX files (fashion_mnist.lua);
-- synthetic(n, {seed =}) makes a learnable stand-in of the same layout
-- (synthetic.lua); batches(x, y, batch_size, {shuffle =, drop_last =, seed =})
-- iterates over mini-batches (batches.lua). The MindSpore-style pipelines:
-- GeneratorDataset, TensorDataset, FashionMnistDataset (sources.lua) and
-- their chained ops (pipeline.lua); transforms and config load on first use
-- (cell.dataset.transforms, cell.dataset.config, and any other
-- cell.dataset.<name> module).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local fashion = require "cell.dataset.fashion_mnist"
local synthetic = require "cell.dataset.synthetic"
local batches = require "cell.dataset.batches"
local sources = require "cell.dataset.sources"
local pipeline = require "cell.dataset.pipeline"
local samplers = require "cell.dataset.samplers"

local M = {
  FashionMNIST = fashion.FashionMNIST,
  FASHION_MNIST_DIR = fashion.DEFAULT_DIR,
  FASHION_MNIST_CLASSES = fashion.CLASSES,
  synthetic = synthetic.synthetic,
  batches = batches.batches,
  is_batches = function(x) return require("cell.class").is_instance(x, batches.Batches) end,
  GeneratorDataset = sources.GeneratorDataset,
  TensorDataset = sources.TensorDataset,
  FashionMnistDataset = sources.FashionMnistDataset,
  Dataset = pipeline.Dataset,
  is_dataset = function(x) return require("cell.class").is_instance(x, pipeline.Dataset) end,
  -- samplers (samplers.lua)
  Sampler = samplers.Sampler,
  SequentialSampler = samplers.SequentialSampler,
  RandomSampler = samplers.RandomSampler,
  SubsetSampler = samplers.SubsetSampler,
  SubsetRandomSampler = samplers.SubsetRandomSampler,
  WeightedRandomSampler = samplers.WeightedRandomSampler,
  DistributedSampler = samplers.DistributedSampler,
}

--- Submodules (transforms, config, vision, ...) load when first read.
local LAZY = { transforms = true, config = true, vision = true }

return setmetatable(M, {
  __index = function(t, k)
    if LAZY[k] then
      local m = require("cell.dataset." .. k)
      rawset(t, k, m)
      return m
    end
    if k == "ImageFolderDataset" then -- cell.dataset.vision's reader (image_folder.lua)
      local c = require("cell.dataset.image_folder").ImageFolderDataset
      rawset(t, k, c)
      return c
    end
    return nil
  end,
})
