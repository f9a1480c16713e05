--- mlp.lua - a 784-256-10 perceptron on Fashion-MNIST (or the synthetic
-- stand-in), trained with a hand-written loop (value_and_grad and an
-- optimizer) rather than Model, then saved for the C embedding example
-- (examples/embed/), which runs it without Lua.
-- Run: bin/cell examples/mlp.lua [epochs] [data dir] [checkpoint path]
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/lib/?.lua;" .. package.path
local cell = require "cell"
local data = require "data"
local nn = cell.nn

local epochs = tonumber(arg and arg[1]) or 2
local dir = arg and arg[2]
if dir == "" then dir = nil end
local path = arg and arg[3] or "build/demo/mlp.safetensors"

local MLP = require("models").MLP

cell.set_seed(1)
local train_set, test_set, real = data.load(dir)
local net = MLP()
local loss_fn = nn.CrossEntropyLoss()
local params = net:trainable_params()
local batches = cell.dataset.batches(train_set.images, train_set.labels, 64, { shuffle = true, seed = 1 })
-- Adam with the rate decaying along a cosine, step by step, to 0.
local total = epochs * batches:len()
local max_lr = 3e-3
local opt = nn.Adam(params, nn.cosine_decay_lr(0, max_lr, total, 1, total))
local step = cell.value_and_grad(function(x, y) return loss_fn(net(x), y) end, nil, params)

net:set_train(true)
local t0 = cell.perf_counter()
for epoch = 1, epochs do
  local total, n = 0, 0
  for x, y in batches:each(epoch) do
    local loss, grads = step(x, y)
    opt(grads)
    total, n = total + loss:item(), n + 1
  end
  print(("epoch %d: mean loss %.4f"):format(epoch, total / n))
end
net:set_train(false)

local correct = 0
for x, y in cell.dataset.batches(test_set.images, test_set.labels, 1000):each(1) do
  local pred = cell.no_grad(function() return net(x) end):argmax(2)
  correct = correct + pred:eq(y):sum():item()
end
local acc = correct / test_set.labels:size(1)
print(("%s: %d epochs in %.1f s, test accuracy %.2f%%"):format(real and "Fashion-MNIST" or "synthetic",
  epochs, cell.perf_counter() - t0, 100 * acc))
os.execute("mkdir -p '" .. path:match("^(.*)/[^/]*$") .. "'")
cell.save_checkpoint(net, path)
print("saved " .. path)
