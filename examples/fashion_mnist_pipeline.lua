--- fashion_mnist_pipeline.lua: LeNet-5 on Fashion-MNIST fed by a
-- MindSpore-style pipeline with augmentation: FashionMnistDataset (uint8
-- HWC images), random crops with padding and horizontal flips
-- (cell.dataset.vision) run per sample on the engine's worker threads,
-- batched and queued ahead of the training step. It reports the share of
-- the step spent waiting for data. Without the data set it trains on the
-- synthetic stand-in (as TensorDataset); without cell.dataset.vision it
-- converts the images with transforms.TypeCast only.
-- Run: bin/cell examples/fashion_mnist_pipeline.lua [epochs] [workers] [steps per epoch] [data dir]
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/lib/?.lua;" .. package.path
local cell = require "cell"
local nn, train = cell.nn, cell.train
local D = cell.dataset
local T = D.transforms

local epochs = tonumber(arg and arg[1]) or 1
local workers = tonumber(arg and arg[2]) or 2
local steps = tonumber(arg and arg[3]) or -1
local dir = arg and arg[4]
if dir == "" then dir = nil end

cell.set_seed(1)
D.config.set_seed(1)
D.config.set_num_parallel_workers(workers)

-- The source: the real images as uint8 {28, 28, 1}, or the synthetic set
-- brought to the same layout.
local ok, source = pcall(D.FashionMnistDataset, dir, { usage = "train", shuffle = true })
local real = ok
if not ok then
  io.stderr:write("Fashion-MNIST is not available (", (tostring(source):gsub("^.-:%d+: ", "")),
    ")\nTraining on a synthetic set instead.\n")
  local s = D.synthetic(6000, { seed = 1 })
  local images = (s.images * 255):round():astype(cell.uint8):reshape({ 6000, 28, 28, 1 })
  source = D.TensorDataset { images, s.labels, column_names = { "image", "label" }, shuffle = true }
end

local has_vision, vision = pcall(function() return D.vision end)
local ds
if has_vision then
  ds = source:map({ vision.RandomCrop(28, { padding = 2 }), vision.RandomHorizontalFlip(), vision.ToTensor() },
    { input_columns = "image" }):batch(64, { drop_remainder = true })
else
  io.stderr:write("cell.dataset.vision is not available: no augmentation\n")
  ds = source:map(T.TypeCast(cell.float32), { input_columns = "image" }):batch(64, { drop_remainder = true })
      :map(function(x) return x:reshape({ -1, 1, 28, 28 }) / 255 end, { input_columns = "image" })
end
if steps > 0 then ds = ds:take(steps) end

local net = require("models").LeNet5(10)
local model = train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 2e-3), { "accuracy" })

-- Per epoch: the time the step waited for a batch, against the epoch's time.
local waited, elapsed, t_epoch = 0, 0, 0
local timing = {
  on_train_epoch_begin = function() t_epoch = cell.perf_counter() end,
  on_train_epoch_end = function()
    elapsed = elapsed + (cell.perf_counter() - t_epoch)
    waited = waited + ds:get_wait_time()
  end,
}
model:train(epochs, ds, { callbacks = { timing }, progress = false })
local n = ds:get_dataset_size() * epochs
print(("%s, %s, %d worker%s: %d steps in %.1f s (%.1f ms a step), waiting for data %.3f ms a step (%.2f%%)")
  :format(real and "Fashion-MNIST" or "synthetic", has_vision and "random crop + flip" or "no augmentation",
    workers, workers == 1 and "" or "s", n, elapsed, 1000 * elapsed / n, 1000 * waited / n,
    100 * waited / elapsed))

local test = D.FashionMNIST and real and D.FashionMNIST(dir, "test") or D.synthetic(1000, { seed = 2 })
local acc = model:eval(D.batches(test.images, test.labels, 500)).accuracy
print(("test accuracy %.2f%%"):format(100 * acc))
