-- autograd_composite_spec.lua - gradients of whole computations built from
-- tensor ops, against PyTorch's autograd (spec/fixtures/gen_autograd.py):
-- one training step of a small MLP with softmax cross-entropy, and
-- composites that mix broadcasting, a transposed operand and reductions.
-- Every case runs in float64 (tol 1e-10) and float32 (tol 1e-4).
local cell = require "cell"
local H = require "helpers"

local FX = require "fixtures.autograd_fixtures"

local dtypes = {
  { name = "float64", dtype = cell.float64, tol = 1e-10 },
  { name = "float32", dtype = cell.float32, tol = 1e-4 },
}

--- log_softmax over dimension 2, the numerically stable way.
local function log_softmax(z)
  local m = z:max(2, true)
  local shifted = z - m
  return shifted - shifted:exp():sum(2, true):log()
end

--- Mean softmax cross-entropy of logits [n, k] and 1-based int64 labels [n].
local function cross_entropy(logits, labels)
  local n = labels:numel()
  local picked = log_softmax(logits):gather(2, labels:reshape({ n, 1 }))
  return -picked:mean()
end

describe("autograd on composites, against PyTorch", function()
  for _, d in ipairs(dtypes) do
    describe(d.name, function()
      local function t(v) return cell.tensor(v, d.dtype) end

      it("one MLP training step: loss and the grads of x, W1, b1, W2, b2", function()
        local fx = FX.mlp
        local W1 = t(fx.W1):requires_grad_(true)
        local b1 = t(fx.b1):requires_grad_(true)
        local W2 = t(fx.W2):requires_grad_(true)
        local b2 = t(fx.b2):requires_grad_(true)
        local labels = cell.tensor(fx.labels, cell.int64)
        local function net(x, y)
          local h = (x:matmul(W1) + b1):relu()
          local logits = h:matmul(W2) + b2
          return cross_entropy(logits, y), logits
        end
        local vg = cell.value_and_grad(net, 1, { W1, b1, W2, b2 }, true)
        local value, grads = vg(t(fx.x), labels)
        local loss, logits = value[1], value[2]
        assert.are.equal(d.name, loss.dtype.name)
        H.assert_close(loss, fx.loss, d.tol, "loss")
        H.assert_close(logits, fx.logits, d.tol, "logits")
        H.assert_close(grads[1], fx.grad_x, d.tol, "grad x")
        local wg = grads[2]
        assert.are.equal(4, #wg)
        H.assert_close(wg[1], fx.grad_W1, d.tol, "grad W1")
        H.assert_close(wg[2], fx.grad_b1, d.tol, "grad b1")
        H.assert_close(wg[3], fx.grad_W2, d.tol, "grad W2")
        H.assert_close(wg[4], fx.grad_b2, d.tol, "grad b2")
        for i, g in ipairs(wg) do assert.are.equal(d.name, g.dtype.name, "grad dtype " .. i) end
        -- a second step on the same function gives the same result (no
        -- gradient left accumulated in the weights)
        local value2, grads2 = vg(t(fx.x), labels)
        H.assert_close(value2[1], fx.loss, d.tol, "loss, second step")
        H.assert_close(grads2[2][1], fx.grad_W1, d.tol, "grad W1, second step")
        H.assert_close(grads2[1], fx.grad_x, d.tol, "grad x, second step")
      end)

      it("broadcasting, a transposed operand and reductions", function()
        local fx = FX.composite
        local function f(a, b, c)
          return ((a:transpose(1, 2) * b):sum(1) / c):tanh():mean()
        end
        local loss, grads = cell.value_and_grad(f, { 1, 2, 3 })(t(fx.a), t(fx.b), t(fx.c))
        H.assert_close(loss, fx.loss, d.tol, "loss")
        H.assert_close(grads[1], fx.grad_a, d.tol, "grad a")
        H.assert_close(grads[2], fx.grad_b, d.tol, "grad b")
        H.assert_close(grads[3], fx.grad_c, d.tol, "grad c")
      end)

      it("keepdim reductions, max over a dimension, select and exp/log", function()
        local fx = FX.composite_keepdim
        local function f(a, b, c2)
          local y = a:transpose(1, 2) * b[1][1]
          local ym = y:max(2, true)
          local lse = (y - ym):exp():sum(2, true):log():mean()
          return lse + (y:sum(1, true) * c2):sum()
        end
        local loss, grads = cell.value_and_grad(f, { 1, 2, 3 })(t(fx.a), t(fx.b), t(fx.c2))
        H.assert_close(loss, fx.loss, d.tol, "loss")
        H.assert_close(grads[1], fx.grad_a, d.tol, "grad a")
        H.assert_close(grads[2], fx.grad_b, d.tol, "grad b")
        H.assert_close(grads[3], fx.grad_c2, d.tol, "grad c2")
      end)
    end)
  end
end)
