-- reduce_lr_spec.lua - cell.train.ReduceLROnPlateau in Model:train runs: a
-- plateaued loss lowers the rate after `patience` epochs, cooldown and
-- min_lr hold it back, an improving loss leaves it, verbose lines, "auto"
-- mode, and every bad argument.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local train = cell.train

--- A net whose loss cannot change (zero inputs, no bias): a plateau.
local function flat_run(epochs, opts)
  local net = nn.Dense(2, 1, { has_bias = false })
  local opt = nn.SGD(net:trainable_params(), 0.1)
  local data = { { cell.zeros({ 4, 2 }), cell.ones({ 4, 1 }) }, { cell.zeros({ 4, 2 }), cell.ones({ 4, 1 }) } }
  local model = train.Model(net, nn.MSELoss(), opt)
  model:train(epochs, data, { callbacks = train.ReduceLROnPlateau(opts), progress = false })
  return opt.learning_rate:item()
end

local function near(a, b) assert.is_true(math.abs(a - b) < 1e-7, ("got %.9g, expected %.9g"):format(a, b)) end

describe("ReduceLROnPlateau", function()
  it("lowers the rate after patience epochs without improvement", function()
    near(flat_run(2, { monitor = "loss", patience = 2, factor = 0.5 }), 0.1)
    near(flat_run(3, { monitor = "loss", patience = 2, factor = 0.5 }), 0.05)
    near(flat_run(7, { monitor = "loss", patience = 2, factor = 0.5 }), 0.0125)
  end)
  it("waits out the cooldown and stops at min_lr", function()
    near(flat_run(7, { monitor = "loss", patience = 2, factor = 0.5, cooldown = 2 }), 0.025)
    near(flat_run(9, { monitor = "loss", patience = 1, factor = 0.5, min_lr = 0.04 }), 0.04)
  end)
  it("leaves the rate while the loss improves by more than min_delta", function()
    local net = nn.Dense(2, 1)
    local opt = nn.SGD(net:trainable_params(), 0.01)
    local data = { { cell.ones({ 4, 2 }), cell.full({ 4, 1 }, 3.0) } }
    train.Model(net, nn.MSELoss(), opt):train(5, data,
      { callbacks = train.ReduceLROnPlateau { monitor = "loss", patience = 1, min_delta = 0 }, progress = false })
    near(opt.learning_rate:item(), 0.01)
    assert.are.equal("max", train.ReduceLROnPlateau { monitor = "eval_accuracy" }.mode)
    assert.are.equal("min", train.ReduceLROnPlateau().mode)
  end)
  it("prints each reduction when verbose", function()
    local out = {}
    flat_run(3, { monitor = "loss", patience = 2, factor = 0.5, verbose = true, writer = function(s) out[#out + 1] = s end })
    assert.are.same({ "Epoch 00003: ReduceLROnPlateau reducing learning rate to 0.05.\n" }, out)
    out = {}
    flat_run(1, { verbose = true, writer = function(s) out[#out + 1] = s end })
    assert.are.same({ "ReduceLROnPlateau: the monitored value 'eval_loss' is not available; skipping.\n" }, out)
  end)
  it("refuses a dynamic learning rate", function()
    local net = nn.Dense(2, 1)
    local opt = nn.SGD(net:trainable_params(), { 0.1, 0.05 })
    local model = train.Model(net, nn.MSELoss(), opt)
    local ok, e = pcall(function()
      model:train(1, { { cell.ones({ 1, 2 }), cell.ones({ 1, 1 }) } }, { callbacks = train.ReduceLROnPlateau(), progress = false })
    end)
    assert.is_false(ok)
    assert.is_truthy(tostring(e):find("TypeError: ReduceLROnPlateau does not support dynamic learning rate", 1, true))
  end)
  it("raises on bad arguments", function()
    local cases = {
      { { factor = 1 }, "ValueError: For 'ReduceLROnPlateau', the 'factor' must be in range of [0.0, 1.0), but got 1." },
      { { mode = "up" }, "ValueError: For 'ReduceLROnPlateau', the 'mode' must be one of ['auto', 'min', 'max'], but got up." },
      { { patience = 1.5 }, "ValueError: For 'ReduceLROnPlateau', the 'patience' must be an integer >= 0, but got 1.5." },
      { { monitor = 3 }, "TypeError: For 'ReduceLROnPlateau', the 'monitor' must be a string, but got number." },
      { { min_lr = -1 }, "ValueError: For 'ReduceLROnPlateau', the 'min_lr' must be at least 0, but got -1." },
      { { min_delta = "x" }, "TypeError: For 'ReduceLROnPlateau', the 'min_delta' must be a finite number, but got string." },
      { { verbose = 1 }, "TypeError: For 'ReduceLROnPlateau', the 'verbose' must be a boolean, but got number." },
    }
    for _, c in ipairs(cases) do
      local ok, e = pcall(train.ReduceLROnPlateau, c[1])
      assert.is_false(ok)
      assert.is_truthy(tostring(e):find(c[2], 1, true), "expected '" .. c[2] .. "', got '" .. tostring(e) .. "'")
    end
  end)
end)
