-- cases_attention.lua - gradient-check entries for the fused attention op,
-- merged into autograd_spec.lua's table: name = { fn, {argument builders}, opts }.
return function(b)
  local cell, r = b.cell, b.r
  local ops = cell.ops
  return {
    -- causal, a float mask broadcast over the batch, a scale, L != S
    ScaledDotProductAttentionBackward = { function(q, k, v)
      local mask = cell.tensor({ { 0, -1, 0.5, 0 }, { 0.25, 0, 0, -0.5 }, { 0, 0, 1, 0 } }, q.dtype)
      return ops.scaled_dot_product_attention(q, k, v, { attn_mask = mask, is_causal = true, scale = 0.7 })
    end, { r { 2, 3, 5 }, r { 2, 4, 5 }, r { 2, 4, 3 } } },
  }
end
