--- fashion_mnist.lua - `make demo`: train a LeNet-5-style network on
-- Fashion-MNIST for two epochs, report the test accuracy, save the weights
-- as safetensors, reload them into a fresh network and check that it
-- predicts the same. Without the data set it says how to install it and
-- runs the same pipeline on a synthetic set.
-- Run: bin/cell examples/fashion_mnist.lua [epochs] [data dir] [checkpoint path] [amp level]
-- An amp level ("O1", "O2", "O3") trains in bfloat16 with float32 master
-- weights (cell.amp.auto_mixed_precision): the guide's accuracy comparison.
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/lib/?.lua;" .. package.path
local cell = require "cell"
local data = require "data"
local nn, train = cell.nn, cell.train

local epochs = tonumber(arg and arg[1]) or 2
local dir = arg and arg[2]
if dir == "" then dir = nil end
local path = arg and arg[3] or "build/demo/lenet.safetensors"
if path == "" then path = "build/demo/lenet.safetensors" end
local amp_level = arg and arg[4]

local LeNet5 = require("models").LeNet5

cell.set_seed(1)
local train_set, test_set, real = data.load(dir)
local net = LeNet5(10)
if amp_level then cell.amp.auto_mixed_precision(net, amp_level, cell.bfloat16) end
print(net)
local batches = cell.dataset.batches(train_set.images, train_set.labels, 64, { shuffle = true, seed = 1 })
-- Adam with the rate decaying along a cosine, step by step, from 5e-3 to 0.
local total = epochs * batches:len()
local lr = nn.cosine_decay_lr(0, 5e-3, total, 1, total)
local model = train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), lr), { "accuracy" })
local t0 = cell.perf_counter()
model:train(epochs, batches)
local secs = cell.perf_counter() - t0
local test_batches = cell.dataset.batches(test_set.images, test_set.labels, 1000)
local acc = model:eval(test_batches).accuracy
print(("%s: %d epochs in %.1f s%s, test accuracy %.2f%%"):format(real and "Fashion-MNIST" or "synthetic",
  epochs, secs, amp_level and (" (bfloat16 " .. amp_level .. ")") or "", 100 * acc))

os.execute("mkdir -p '" .. path:match("^(.*)/[^/]*$") .. "'")
cell.save_checkpoint(net, path)
local fresh = LeNet5(10)
local not_loaded = cell.load_param_into_net(fresh, cell.load_checkpoint(path))
assert(#not_loaded == 0, "every parameter loads")
local acc2 = train.Model(fresh, nn.CrossEntropyLoss(), nil, { "accuracy" }):eval(test_batches).accuracy
print(("reloaded from %s: test accuracy %.2f%%"):format(path, 100 * acc2))

local x = test_set.images:narrow(1, 1, 8)
local pred = cell.no_grad(function() return fresh(x) end):argmax(2)
local classes = test_set.classes
for i = 1, 8 do
  local p, y = pred[i], test_set.labels[i]
  print(("  image %d: predicted %-12s actual %-12s%s"):format(i, classes[p], classes[y], p == y and "" or "  (wrong)"))
end
