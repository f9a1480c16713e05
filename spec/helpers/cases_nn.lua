-- cases_nn.lua - gradient-check entries for the nn op family, merged into
-- autograd_spec.lua's table: name = { fn, {argument builders}, opts }.
-- Constants (class ids, ids, fixed class weights) are built inside the
-- function or skipped; dropout reseeds inside so every evaluation draws
-- the same mask.
return function(b)
  local cell, r, idx, T = b.cell, b.r, b.idx, b.T
  local ops = cell.ops
  local skip1 = { skip = { [1] = true } }
  local skip2 = { skip = { [2] = true } }
  return {
    SoftmaxBackward = { function(a) return ops.softmax(T(a), 1) end, { r({ 3, 4 }, -2, 2, 3) } },
    LogSoftmaxBackward = { function(a) return ops.log_softmax(a, 2) end, { r({ 2, 3, 4 }, -2, 2, 4) } },
    BatchNormBackward = {
      function(x, w, bias) return ops.batch_norm(x, nil, nil, w, bias, { training = true }) end,
      { r({ 3, 2, 2, 2 }, -1, 1, 5), r({ 2 }, 0.5, 1.5, 6), r({ 2 }, -1, 1, 7) },
    },
    DenseBackward = {
      function(x, w, bias) return ops.dense(x, w, bias) end,
      { r({ 2, 3, 4 }, -1, 1, 24), r({ 5, 4 }, -1, 1, 25), r({ 5 }, -1, 1, 26) },
    },
    LayerNormBackward = {
      function(x, w, bias) return ops.layer_norm(x, 1, w, bias) end,
      { r({ 3, 4 }, -1, 1, 8), r({ 4 }, 0.5, 1.5, 9), r({ 4 }, -1, 1, 10) },
    },
    DropoutBackward = {
      function(a)
        cell.set_seed(5)
        return ops.dropout(a, 0.4)
      end,
      { r({ 4, 5 }, -1, 1, 11) },
    },
    EmbeddingBackward = {
      function(i, w) return ops.embedding(i, w) end, { idx { { 1, 3 }, { 3, 2 } }, r({ 4, 3 }, -1, 1, 12) }, skip1,
    },
    CrossEntropyBackward = {
      function(x, t)
        local w = cell.tensor({ 0.5, 1, 2, 1.5 }, cell.float64)
        return ops.cross_entropy(x, t, { weight = w, label_smoothing = 0.1 })
      end,
      { r({ 3, 4 }, -2, 2, 13), r({ 3, 4 }, 0, 1, 14) },
    },
    NLLLossBackward = {
      function(x, t)
        local w = cell.tensor({ 0.5, 1, 2, 1.5 }, cell.float64)
        return ops.nll_loss(x, t, { weight = w, reduction = "sum" })
      end,
      { r({ 3, 4 }, -2, 0, 15), idx { 2, 4, 1 } }, skip2,
    },
    MSELossBackward = { function(x, y) return ops.mse_loss(T(x), y) end, { r({ 4, 3 }, -1, 1, 16), r({ 4 }, -1, 1, 17) } },
    L1LossBackward = {
      function(x, y) return ops.l1_loss(x, y, "sum") end, { r({ 3, 4 }, -1, 1, 18), r({ 3, 4 }, -1, 1, 19) },
    },
    BCEWithLogitsBackward = {
      function(x, t, w, pw) return ops.bce_with_logits(x, t, { weight = w, pos_weight = pw, reduction = "none" }) end,
      { r({ 3, 4 }, -3, 3, 20), r({ 3, 4 }, 0, 1, 21), r({ 4 }, 0.5, 2, 22), r({ 4 }, 0.5, 2, 23) },
    },
  }
end
