-- examples_spec.lua - the examples run (examples/*.lua through $CELL_BIN),
-- and a LeNet-5 trained briefly on part of Fashion-MNIST (the synthetic
-- stand-in where the data set is not installed) classifies well above
-- chance; its checkpoint reloads into a fresh network with the same result.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local BIN = os.getenv("CELL_BIN") or "bin/cell"
local function sh(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

package.path = "examples/lib/?.lua;" .. package.path
local models = require "models"

describe("examples", function()
  it("custom_cell.lua: buffers, hooks and a state_dict round trip", function()
    local out, err, rc = H.run(sh(BIN) .. " examples/custom_cell.lua")
    assert.are.equal(0, rc, err)
    assert.is_truthy(out:find("Tracked(\n  tracks the mean input norm\n  (dense): Dense(input_channels=4, "
      .. "output_channels=2, has_bias=true)\n)", 1, true), out)
    assert.is_truthy(out:find("forward: input 3x4 -> output 3x2", 1, true))
    assert.is_truthy(out:find("max |g| =\t0.00999", 1, true), out)
    assert.is_truthy(out:find("state_dict keys:\tmean_norm, dense.weight, dense.bias", 1, true))
    assert.is_truthy(out:find("<All keys matched successfully>", 1, true))
  end)

  it("mlp.lua trains one epoch, reports its accuracy and saves a checkpoint", function()
    local path = os.tmpname() .. ".safetensors"
    local out, err, rc = H.run(sh(BIN) .. " examples/mlp.lua 1 '' " .. sh(path))
    assert.are.equal(0, rc, err)
    local acc = tonumber(out:match("test accuracy ([%d.]+)%%"))
    assert.is_truthy(acc and acc > 70, out)
    local ck = cell.load_checkpoint(path)
    assert.are.same({ "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias" }, ck:keys())
    os.remove(path)
  end)
end)

describe("fashion_mnist_pipeline.lua", function()
  it("trains LeNet-5 from a dataset pipeline and reports the time spent waiting for data", function()
    local out, err, rc = H.run(sh(BIN) .. " examples/fashion_mnist_pipeline.lua 1 2 20")
    assert.are.equal(0, rc, err)
    local steps, pct = out:match("2 workers: (%d+) steps in [%d.]+ s %([%d.]+ ms a step%), waiting for data "
      .. "[%d.]+ ms a step %(([%d.]+)%%%)")
    assert.are.equal("20", steps, out)
    assert.is_true(tonumber(pct) >= 0 and tonumber(pct) < 100, out)
    local acc = tonumber(out:match("test accuracy ([%d.]+)%%"))
    assert.is_truthy(acc and acc > 20, out)
  end)
end)

describe("tiny_gpt.lua", function()
  it("trains a few steps on the fortunes corpus, lowers the held-out loss, reloads and samples", function()
    local path = os.tmpname() .. ".safetensors"
    local out, err, rc = H.run(sh(BIN) .. " examples/tiny_gpt.lua 40 " .. sh(path) .. " 40")
    local f = io.open("/usr/share/games/fortunes/cookie", "r")
    if not f then -- Debian's fortunes package is not installed: the example says how to get it
      assert.are_not.equal(0, rc)
      assert.is_truthy(err:find("install Debian's fortunes package", 1, true), err)
      return
    end
    f:close()
    assert.are.equal(0, rc, err)
    local before = tonumber(out:match("held%-out loss before training ([%d.]+)"))
    local after = tonumber(out:match("; held%-out loss ([%d.]+) nats per character"))
    local reloaded = tonumber(out:match("reloaded from .-: held%-out loss ([%d.]+)"))
    assert.is_truthy(before and after and reloaded, out)
    assert.is_true(before > 3.4 and after < before - 0.3, out)
    assert.are.equal(after, reloaded)
    assert.is_truthy(err:find("Epoch 4/4", 1, true), err)
    local sample = out:match("sample:\n(.*)$")
    assert.is_truthy(sample and #sample >= 40, out)
    assert.are.same({ "tok.embedding_table" }, { cell.load_checkpoint(path):keys()[1] })
    os.remove(path)
  end)
end)

describe("char_lstm.lua", function()
  local corpus = io.open("/usr/share/games/fortunes/fortunes", "r")
  if corpus then corpus:close() end
  it("trains a two-layer LSTM on the fortunes, lowers the loss, saves, reloads and samples", function()
    assert.is_truthy(corpus, "the fortunes package is missing: make deps")
    local path = os.tmpname() .. ".safetensors"
    local out, err, rc = H.run(sh(BIN) .. " examples/char_lstm.lua 1 6 " .. sh(path))
    assert.are.equal(0, rc, err)
    local first, now = out:match("loss ([%d.]+) at the end of epoch 1, training loss now ([%d.]+)")
    assert.is_truthy(now, out)
    -- a uniform guess over the vocabulary is log(96) = 4.56 nats
    assert.is_true(tonumber(now) < 4.3, out)
    assert.is_truthy(out:find("saved and reloaded", 1, true), out)
    local sample = out:match("%-%-%- sample %(temperature 0.8%) %-%-%-\n(.*)$")
    assert.is_truthy(sample and sample:sub(1, 4) == "The " and #sample > 250, out)
    local keys = cell.load_checkpoint(path):keys()
    table.sort(keys)
    assert.are.same({ "embed.embedding_table", "head.bias", "head.weight", "lstm.bias_hh_l0", "lstm.bias_hh_l1",
      "lstm.bias_ih_l0", "lstm.bias_ih_l1", "lstm.weight_hh_l0", "lstm.weight_hh_l1", "lstm.weight_ih_l0",
      "lstm.weight_ih_l1" }, keys)
    os.remove(path)
  end)
end)

describe("LeNet-5 on Fashion-MNIST", function()
  it("learns well above chance from 4,096 images in one epoch, and reloads", function()
    local ok, train = pcall(cell.dataset.FashionMNIST, nil, "train")
    local test
    if ok then
      test = cell.dataset.FashionMNIST(nil, "test")
      train = { images = train.images:narrow(1, 1, 4096), labels = train.labels:narrow(1, 1, 4096) }
      test = { images = test.images:narrow(1, 1, 1000), labels = test.labels:narrow(1, 1, 1000) }
    else -- no data set on this machine: the synthetic stand-in
      train, test = cell.dataset.synthetic(4096, { seed = 1 }), cell.dataset.synthetic(1000, { seed = 2 })
    end
    cell.set_seed(1)
    local net = models.LeNet5(10)
    local model = cell.train.Model(net, nn.CrossEntropyLoss(), nn.Adam(net:trainable_params(), 3e-3), { "accuracy" })
    model:train(1, cell.dataset.batches(train.images, train.labels, 64, { shuffle = true, seed = 1 }), { progress = false })
    local batches = cell.dataset.batches(test.images, test.labels, 500)
    local acc = model:eval(batches).accuracy
    assert.is_true(acc > 0.6, "accuracy " .. acc .. " (chance is 0.1)")
    local path = os.tmpname() .. ".safetensors"
    cell.save_checkpoint(net, path)
    local fresh = models.LeNet5(10)
    local not_loaded = cell.load_param_into_net(fresh, cell.load_checkpoint(path))
    assert.are.same({}, not_loaded)
    os.remove(path)
    assert.are.equal(acc, cell.train.Model(fresh, nn.CrossEntropyLoss(), nil, { "accuracy" }):eval(batches).accuracy)
  end)
end)
