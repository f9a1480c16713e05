--- cell.dataset: data sets as tensors, and mini-batches over them.
--
--     local ds = cell.dataset.FashionMNIST(nil, "train")    -- or cell.dataset.synthetic(1000)
--     for xb, yb in cell.dataset.batches(ds.images, ds.labels, 64, {shuffle = true}):each(1) do ... end
--
-- FashionMNIST(dir, usage) reads the IDX files (lua/cell/dataset/fashion_mnist.lua);
-- synthetic(n, {seed =}) makes a learnable stand-in of the same layout
-- (synthetic.lua); batches(x, y, batch_size, {shuffle =, drop_last =, seed =})
-- iterates over mini-batches (batches.lua).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local fashion = require "cell.dataset.fashion_mnist"
local synthetic = require "cell.dataset.synthetic"
local batches = require "cell.dataset.batches"

return {
  FashionMNIST = fashion.FashionMNIST,
  FASHION_MNIST_DIR = fashion.DEFAULT_DIR,
  FASHION_MNIST_CLASSES = fashion.CLASSES,
  synthetic = synthetic.synthetic,
  batches = batches.batches,
  is_batches = function(x) return require("cell.class").is_instance(x, batches.Batches) end,
}
