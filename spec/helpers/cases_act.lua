-- cases_act.lua - gradient-check entries for the fused activations and the
-- CTC loss of issue 14 (ActivationBackward, CtcLossBackward), merged into
-- autograd_spec.lua's table: name = { fn, {argument builders}, opts }.
-- The activation entry chains the smooth kinds; the piecewise ones are
-- checked away from their kinks in spec/nn/activation_extra_spec.lua.
return function(b)
  local cell, r, T = b.cell, b.r, b.T
  local ops = cell.ops
  return {
    ActivationBackward = { function(a)
      local y = ops.celu(ops.elu(ops.softsign(T(a)), 0.7), 1.3)
      y = ops.tanhshrink(ops.logsigmoid(ops.mish(ops.selu(y))))
      return ops.gelu(y, "tanh")
    end, { r({ 3, 2 }, -2, 2) } },
    CtcLossBackward = { function(lp)
      return ops.ctc_loss(lp, cell.tensor({ { 2, 3 }, { 3, 3 } }, cell.int64), { 5, 4 }, { 2, 2 },
        { reduction = "none" })
    end, { r({ 5, 2, 4 }, -2, 0) } },
  }
end
