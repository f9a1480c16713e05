/* rules_attention.c - the public attention op (include/cell_attention.h)
 * as a recording wrapper over the fused kernels of src/ops/attention.h,
 * and its backward rule.
 *
 * ScaledDotProductAttentionBackward has inputs q, k, v (and a float mask,
 * whose gradient the kernel sums into its shape) and saves q, k, v,
 * the mask (when given), the output, the per-row log-sum-exp and the
 * L x S weights when the kernel kept them (small float32 heads without
 * dropout; otherwise the backward kernel recomputes them block by block
 * from the log-sum-exp). The dropout mask is regenerated from the
 * generator position kept in the node's arguments. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/attention.h"
#include <math.h>

static const char *const NODE = "ScaledDotProductAttentionBackward";

typedef struct {
  cell_sdpa_args a;
  int has_mask;
  int mask_input; /* a float mask is the node's 4th input (it may need a gradient) */
} sdpa_node_args;

static cell_status sdpa_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const sdpa_node_args *na = CELL_AG_ARGS(n, sdpa_node_args);
  int nin = na->mask_input ? 4 : 3;
  cell_tensor *t[4] = {NULL, NULL, NULL, NULL};
  cell_tensor **want[4] = {NULL, NULL, NULL, NULL};
  int any = 0;
  for (int i = 0; i < nin; i++) {
    want[i] = n->in[i].next ? &t[i] : NULL;
    any |= want[i] != NULL;
  }
  if (!any) return CELL_OK;
  int m = na->has_mask;
  cell_sdpa_args a = na->a;
  a.probs = n->saved[5 + m]; /* NULL: not kept */
  cell_status s = cell_k_sdpa_backward(g, n->saved[0], n->saved[1], n->saved[2],
                                       m ? n->saved[3] : NULL, n->saved[3 + m], n->saved[4 + m],
                                       &a, want[0], want[1], want[2], want[3]);
  for (int i = 0; i < nin; i++) s = cell_ag_give(n, i, s, t[i], gin);
  return s;
}

cell_status cell_op_scaled_dot_product_attention(const cell_tensor *q, const cell_tensor *k,
                                                 const cell_tensor *v,
                                                 const cell_tensor *attn_mask, double dropout_p,
                                                 int is_causal, int has_scale, double scale,
                                                 cell_tensor **out) {
  if (!q || !k || !v || !out)
    return cell_error(CELL_ERR_VALUE, "scaled_dot_product_attention: NULL argument");
  cell_sdpa_args a = {0};
  a.scale = has_scale ? scale : (q->ndim >= 1 && q->shape[q->ndim - 1] > 0
                                     ? 1.0 / sqrt((double)q->shape[q->ndim - 1])
                                     : 1.0);
  a.causal = is_causal != 0;
  a.p = dropout_p;
  const cell_tensor *in[4] = {q, k, v, attn_mask};
  int nin = attn_mask && cell_dtype_is_float(attn_mask->dtype) ? 4 : 3;
  if (!cell_ag_wants(nin, in)) return cell_k_sdpa(q, k, v, attn_mask, &a, out, NULL);
  cell_tensor *r = NULL, *lse = NULL;
  cell_status s = CELL_AG_RAW(cell_k_sdpa(q, k, v, attn_mask, &a, &r, &lse));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE(NODE, sdpa_backward, nin, in, 7, sdpa_node_args);
  cell_tensor *probs = a.probs;
  a.probs = NULL; /* the node holds them as a saved tensor */
  if (n) {
    *CELL_AG_ARGS(n, sdpa_node_args) = (sdpa_node_args){a, attn_mask != NULL, nin == 4};
    s = cell_ag_save(n, q);
    if (s == CELL_OK) s = cell_ag_save(n, k);
    if (s == CELL_OK) s = cell_ag_save(n, v);
    if (s == CELL_OK && attn_mask) s = cell_ag_save(n, attn_mask);
    if (s == CELL_OK) s = cell_ag_save(n, r);
    if (s == CELL_OK) s = cell_ag_save(n, lse);
    if (s == CELL_OK) s = cell_ag_save(n, probs);
  }
  cell_tensor_release(lse);
  cell_tensor_release(probs);
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_attention_nodes(const char **names, int max) {
  int n = 0;
  if (n < max) names[n++] = NODE;
  return n;
}
