-- nn_ops_loss_spec.lua - the fused losses (src/ops/loss.c,
-- src/autograd/rules_nn_loss.c, src/lua/lnn.c) as cell.ops functions:
-- cross_entropy, nll_loss, mse_loss, l1_loss, bce_with_logits. Forward
-- values and gradients against PyTorch fixtures (spec/fixtures/gen_nn.py)
-- in float64 and float32, hand-computed cases, numerical stability, and
-- every bad input.
local cell = require "cell"
local H = require "helpers"
local R = require "helpers.fixture_runner"

local ops = cell.ops
local f64, i64 = cell.float64, cell.int64
local assert_close, expect_error = H.assert_close, H.expect_error
local log = math.log

describe("losses against PyTorch", function()
  R.describe_cases(it, {
    cross_entropy = true, nll_loss = true, mse_loss = true, l1_loss = true, bce_with_logits = true,
  })
end)

describe("cross_entropy", function()
  local x = cell.tensor({ { 0, log(3) }, { log(4), 0 } }, f64)
  it("by hand: 1-based class ids, reductions", function()
    local t = cell.tensor({ 2, 2 }, i64)
    local per = { -log(0.75), -log(0.2) }
    assert_close(ops.cross_entropy(x, t, { reduction = "none" }), per, 1e-14)
    assert_close(ops.cross_entropy(x, t, "sum"), per[1] + per[2], 1e-14)
    assert_close(ops.cross_entropy(x, t), (per[1] + per[2]) / 2, 1e-14)
    assert_close(ops.cross_entropy(x, cell.tensor({ 2, 2 }, cell.int32)), (per[1] + per[2]) / 2, 1e-14)
    local y = ops.cross_entropy(x:astype(cell.float32), t)
    assert.are.equal(cell.float32, y.dtype)
    H.assert_shape(y, {})
  end)
  it("the mean with weight divides by the weights of the counted targets", function()
    local t = cell.tensor({ 2, 1 }, i64)
    local w = cell.tensor({ 3, 0.5 }, f64)
    local want = (0.5 * -log(0.75) + 3 * -log(0.8)) / 3.5
    assert_close(ops.cross_entropy(x, t, { weight = w }), want, 1e-14)
    -- an ignored target counts for nothing; all ignored is 0 / 0, as PyTorch
    assert_close(ops.cross_entropy(x, t, { weight = w, ignore_index = 1 }), -log(0.75), 1e-14)
    assert_close(ops.cross_entropy(x, t, { ignore_index = 2, reduction = "none" }), { 0, -log(0.8) }, 1e-14)
    local nan = ops.cross_entropy(x, cell.tensor({ 7, 7 }, i64), { ignore_index = 7 }):item()
    assert.is_true(nan ~= nan)
    -- ignore_index may be any value, such as PyTorch's -100
    assert_close(ops.cross_entropy(x, cell.tensor({ -100, 1 }, i64), { ignore_index = -100 }), -log(0.8), 1e-14)
  end)
  it("probability targets: one-hot equals class ids; label smoothing", function()
    local onehot = cell.tensor({ { 0, 1 }, { 1, 0 } }, f64)
    local ids = cell.tensor({ 2, 1 }, i64)
    assert_close(ops.cross_entropy(x, onehot), ops.cross_entropy(x, ids):item(), 1e-14)
    assert_close(ops.cross_entropy(x, onehot, { label_smoothing = 0.2 }),
      ops.cross_entropy(x, ids, { label_smoothing = 0.2 }):item(), 1e-14)
    -- smoothing 1: the uniform target, whatever the labels
    local uniform = -(log(0.25) + log(0.75) + log(0.8) + log(0.2)) / 4
    assert_close(ops.cross_entropy(x, ids, { label_smoothing = 1 }), uniform, 1e-14)
  end)
  it("is stable for huge logits", function()
    local big = cell.tensor({ { 1000, 0 }, { -1000, 1000 } }, f64)
    assert_close(ops.cross_entropy(big, cell.tensor({ 2, 1 }, i64), "none"), { 1000, 2000 }, 1e-12)
    local g = cell.grad(function(a) return ops.cross_entropy(a, cell.tensor({ 2, 1 }, i64), "sum") end)(big)
    assert_close(g, { { 1, -1 }, { -1, 1 } }, 1e-12)
    local f = ops.cross_entropy(cell.tensor({ { 60000, 0 } }, cell.float16), cell.tensor({ 2 }, i64))
    assert_close(f, 60000, 1e-3)
  end)
  it("records CrossEntropyBackward, to probability targets too", function()
    local l = x:stop_gradient():requires_grad_(true)
    assert.are.equal("CrossEntropyBackward", ops.cross_entropy(l, cell.tensor({ 1, 1 }, i64)).grad_fn)
    local p = cell.tensor({ { 0.5, 0.5 }, { 1, 0 } }, f64):requires_grad_(true)
    assert.are.equal("CrossEntropyBackward", ops.cross_entropy(x, p).grad_fn)
    local g = cell.grad(function(q) return ops.cross_entropy(x, q, "sum") end)(p)
    assert_close(g, { { -log(0.25), -log(0.75) }, { -log(0.8), -log(0.2) } }, 1e-14)
  end)
  it("keeps a training loop's memory flat", function()
    cell.set_seed(1)
    local w = cell.randn({ 20, 10 }):requires_grad_(true)
    local xs, ts = cell.randn({ 32, 20 }), cell.randint(1, 11, { 32 }, i64)
    local vg = cell.value_and_grad(function(a) return ops.cross_entropy(a:matmul(w), ts) end, 1, { w })
    vg(xs)
    collectgarbage()
    local base = cell.memory_stats().in_use
    for _ = 1, 200 do vg(xs) end
    collectgarbage()
    collectgarbage()
    assert.is_true(cell.memory_stats().in_use - base < 256 * 1024)
  end)
  it("rejects bad input", function()
    local logits = cell.zeros({ 4, 10 })
    expect_error(function() return ops.cross_entropy(logits, cell.tensor({ 1, 11, 2, 3 }, i64)) end,
      "IndexError", "cross_entropy: target 11 is out of range for 10 classes")
    expect_error(function() return ops.cross_entropy(logits, cell.tensor({ 1, 0, 2, 3 }, i64)) end,
      "IndexError", "target 0 is out of range for 10 classes")
    expect_error(function() return ops.cross_entropy(logits, cell.tensor({ 1, 2, 3 }, i64)) end,
      "ValueError", "target of shape [3]", "input of shape [4, 10]", "expected [4]")
    expect_error(function() return ops.cross_entropy(cell.zeros({ 2, 3, 5 }), cell.ones({ 2, 3 }, i64)) end,
      "ValueError", "[2, 3]", "[2, 3, 5]", "expected [2, 5]")
    expect_error(function() return ops.cross_entropy(logits, cell.zeros({ 4, 9 })) end,
      "ValueError", "probabilities", "[4, 9]", "[4, 10]")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), { weight = cell.ones({ 9 }) }) end,
      "ValueError", "weight of shape [9]", "10 classes", "expected [10]")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), { label_smoothing = 1.5 }) end,
      "ValueError", "label_smoothing", "[0, 1]", "1.5")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), "avg") end,
      "ValueError", "reduction must be 'mean', 'sum' or 'none'", "'avg'")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), { reduction = 1 }) end,
      "TypeError", "reduction must be a string")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), { weights = cell.ones({ 10 }) }) end,
      "TypeError", "unknown option 'weights'", "reduction, weight, ignore_index, label_smoothing")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), { weight = { 1, 2 } }) end,
      "TypeError", "weight", "Tensor or nil")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, i64), { ignore_index = 0.5 }) end,
      "TypeError", "ignore_index", "integer")
    expect_error(function() return ops.cross_entropy(logits, cell.ones({ 4 }, cell.bool)) end,
      "TypeError", "target", "class ids", "Bool")
    expect_error(function() return ops.cross_entropy(cell.zeros({ 4, 10 }, i64), cell.ones({ 4 }, i64)) end,
      "TypeError", "floating-point", "Int64")
    expect_error(function() return ops.cross_entropy(cell.tensor(1.0), cell.tensor(1, i64)) end,
      "ValueError", "class dimension", "0-D")
    expect_error(function() return ops.cross_entropy(logits, { 1, 2, 3, 4 }) end, "TypeError", "Tensor")
  end)
end)

describe("nll_loss", function()
  local lp = cell.tensor({ { -0.5, -1, -2 }, { -3, -0.25, -1 } }, f64)
  it("by hand, with weight and ignore_index", function()
    local t = cell.tensor({ 3, 2 }, i64)
    assert_close(ops.nll_loss(lp, t, "none"), { 2, 0.25 }, 0)
    assert_close(ops.nll_loss(lp, t), 1.125, 1e-15)
    assert_close(ops.nll_loss(lp, t, { weight = cell.tensor({ 1, 2, 4 }, f64) }), (8 + 0.5) / 6, 1e-15)
    assert_close(ops.nll_loss(lp, t, { ignore_index = 3, reduction = "sum" }), 0.25, 0)
    local g = cell.grad(function(a) return ops.nll_loss(a, t, "sum") end)(lp)
    assert_close(g, { { 0, 0, -1 }, { 0, -1, 0 } }, 0)
    local leaf = lp:stop_gradient():requires_grad_(true)
    assert.are.equal("NLLLossBackward", ops.nll_loss(leaf, t).grad_fn)
  end)
  it("rejects bad input", function()
    expect_error(function() return ops.nll_loss(lp, cell.tensor({ 4, 1 }, i64)) end,
      "IndexError", "nll_loss: target 4 is out of range for 3 classes")
    expect_error(function() return ops.nll_loss(lp, lp) end, "TypeError", "nll_loss", "integer tensor of class ids", "Float64")
    expect_error(function() return ops.nll_loss(lp, cell.tensor({ 1 }, i64)) end, "ValueError", "[1]", "[2, 3]")
    expect_error(function() return ops.nll_loss(lp, cell.tensor({ 1, 1 }, i64), { label_smoothing = 0.1 }) end,
      "TypeError", "unknown option 'label_smoothing'")
  end)
end)

describe("mse_loss and l1_loss", function()
  local a = cell.tensor({ { 1, 2 }, { 3, 4 } }, f64)
  local b = cell.tensor({ { 0, 2 }, { 5, 1 } }, f64)
  it("by hand, with broadcasting", function()
    assert_close(ops.mse_loss(a, b, "none"), { { 1, 0 }, { 4, 9 } }, 0)
    assert_close(ops.mse_loss(a, b), 3.5, 0)
    assert_close(ops.mse_loss(a, b, { reduction = "sum" }), 14, 0)
    assert_close(ops.l1_loss(a, b), 1.5, 0)
    assert_close(ops.l1_loss(a, b, "none"), { { 1, 0 }, { 2, 3 } }, 0)
    assert_close(ops.mse_loss(a, cell.tensor({ 1, 2 }, f64), "none"), { { 0, 0 }, { 4, 4 } }, 0)
    assert_close(ops.mse_loss(cell.tensor({ 1, 2 }, f64), a, "sum"), 8, 0)
  end)
  it("gradients, the sign of l1 being 0 at equality", function()
    local gs = cell.grad(function(x, y) return ops.mse_loss(x, y, "sum") end, { 1, 2 })(a, b)
    assert_close(gs[1], { { 2, 0 }, { -4, 6 } }, 0)
    assert_close(gs[2], { { -2, 0 }, { 4, -6 } }, 0)
    local g1 = cell.grad(function(x) return ops.l1_loss(x, b) end)(a)
    assert_close(g1, { { 0.25, 0 }, { -0.25, 0.25 } }, 0)
    local gy = cell.grad(function(y) return ops.mse_loss(a, y) end)(cell.tensor({ 1, 2 }, f64))
    assert_close(gy, { -1, -1 }, 1e-15) -- summed over the broadcast rows
    local leaf = a:stop_gradient():requires_grad_(true)
    assert.are.equal("MSELossBackward", ops.mse_loss(leaf, b).grad_fn)
    assert.are.equal("L1LossBackward", ops.l1_loss(b, leaf).grad_fn)
  end)
  it("rejects bad input", function()
    expect_error(function() return ops.mse_loss(a, cell.ones({ 3 })) end, "ValueError", "mse_loss", "[2, 2]", "[3]")
    expect_error(function() return ops.l1_loss(a, cell.ones({ 2 }, i64)) end, "TypeError", "target", "floating-point")
    expect_error(function() return ops.l1_loss(a, b, "mean ") end, "ValueError", "'mean '")
    expect_error(function() return ops.mse_loss(a, 1) end, "TypeError", "Tensor")
  end)
end)

describe("bce_with_logits", function()
  local function ref(x, t, w, pw)
    return w * ((1 - t) * x + (1 + (pw - 1) * t) * log(1 + math.exp(-x)))
  end
  it("by hand, with weight and pos_weight broadcast", function()
    local x = cell.tensor({ { 0.5, -1 }, { 2, 0 } }, f64)
    local t = cell.tensor({ { 1, 0 }, { 0.25, 1 } }, f64)
    local w, pw = cell.tensor({ 2, 0.5 }, f64), cell.tensor({ 3, 1 }, f64)
    local want = { { ref(0.5, 1, 2, 3), ref(-1, 0, 0.5, 1) }, { ref(2, 0.25, 2, 3), ref(0, 1, 0.5, 1) } }
    assert_close(ops.bce_with_logits(x, t, { weight = w, pos_weight = pw, reduction = "none" }), want, 1e-14)
    local s = want[1][1] + want[1][2] + want[2][1] + want[2][2]
    assert_close(ops.bce_with_logits(x, t, { weight = w, pos_weight = pw }), s / 4, 1e-14)
    assert_close(ops.bce_with_logits(x, t, { weight = w, pos_weight = pw, reduction = "sum" }), s, 1e-14)
  end)
  it("is stable far in the tails", function()
    local x = cell.tensor({ 100, -100, 800 }, f64)
    local t = cell.tensor({ 0, 1, 1 }, f64)
    assert_close(ops.bce_with_logits(x, t, "none"), { 100, 100, 0 }, 1e-12)
    local g = cell.grad(function(a) return ops.bce_with_logits(a, t, "sum") end)(x)
    assert_close(g, { 1, -1, 0 }, 1e-12)
  end)
  it("records BCEWithLogitsBackward and differentiates weight and pos_weight", function()
    local x, t = cell.tensor({ 0.3, -0.7 }, f64), cell.tensor({ 1, 0 }, f64)
    local w = cell.tensor({ 2, 3 }, f64)
    local leaf = x:stop_gradient():requires_grad_(true)
    assert.are.equal("BCEWithLogitsBackward", ops.bce_with_logits(leaf, t).grad_fn)
    local g = cell.grad(function(ww) return ops.bce_with_logits(x, t, { weight = ww, reduction = "sum" }) end)(w)
    assert_close(g, { ref(0.3, 1, 1, 1), ref(-0.7, 0, 1, 1) }, 1e-14)
  end)
  it("rejects bad input", function()
    local x = cell.zeros({ 2, 3 })
    expect_error(function() return ops.bce_with_logits(x, cell.zeros({ 3 })) end,
      "ValueError", "target of shape [3]", "[2, 3]")
    expect_error(function() return ops.bce_with_logits(x, cell.zeros({ 2, 3 }), { weight = cell.ones({ 2 }) }) end,
      "ValueError", "weight of shape [2]", "does not broadcast", "[2, 3]")
    expect_error(function() return ops.bce_with_logits(x, cell.zeros({ 2, 3 }), { pos_weight = cell.ones({ 3, 1 }) }) end,
      "ValueError", "pos_weight of shape [3, 1]")
    expect_error(function() return ops.bce_with_logits(x, cell.zeros({ 2, 3 }, i64)) end, "TypeError", "target")
    expect_error(function() return ops.bce_with_logits(x, cell.zeros({ 2, 3 }), { pos = 1 }) end,
      "TypeError", "unknown option 'pos'")
  end)
end)
