/* cell_attention.h - public C API: fused scaled dot-product attention.
 * Included by cell.h; the conventions at the top of cell.h apply. */
#ifndef CELL_ATTENTION_H
#define CELL_ATTENTION_H
#include "cell.h"

/* softmax(scale * q k^T + mask) v as one fused op. q {..., L, E},
 * k {..., S, E}, v {..., S, Ev} of one float dtype sharing their leading
 * dimensions; *out is {..., L, Ev} in q's dtype. attn_mask (or NULL)
 * broadcasts to {..., L, S}: bool keeps the keys where it is true (false
 * positions get -inf), a float mask is added to the scores. is_causal keeps
 * key j for query i only when j <= i (with a mask, both apply).
 * has_scale == 0 takes scale = 1 / sqrt(E). dropout_p in [0, 1) drops
 * attention weights with the engine's generator (the backward reuses the
 * mask). Records "ScaledDotProductAttentionBackward" when q, k, v or a
 * float mask requires grad; the backward recomputes the weights from the
 * saved log-sum-exp of each row, so no L x S matrix is kept. A float mask
 * gets the scores' gradient summed into its own shape (a bool mask none).
 * A row whose keys are all masked gives NaN, as softmax does.
 * TypeError for non-float q/k/v, mixed dtypes or a mask neither bool nor
 * float; ValueError for mismatched shapes or dropout_p outside [0, 1). */
CELL_API cell_status cell_op_scaled_dot_product_attention(const cell_tensor *q,
                                                          const cell_tensor *k,
                                                          const cell_tensor *v,
                                                          const cell_tensor *attn_mask,
                                                          double dropout_p, int is_causal,
                                                          int has_scale, double scale,
                                                          cell_tensor **out);

#endif
