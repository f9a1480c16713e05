/* rules_index.c - the recording wrappers of the ops whose output size
 * depends on the data (nonzero, masked_select, masked_scatter) and their
 * backward rules.
 *
 * - MaskedSelectBackward saves the mask: the gradient (one value per
 *   selected element) goes back to the selected positions, zeros elsewhere;
 * - MaskedScatterBackward saves the mask: the input gets the gradient where
 *   the mask is false, the source the gradient of the positions it filled
 *   (in order), zeros for its elements that were not used. */
#include "autograd.h"
#include "../ops/kernel_list.h"
#include "../ops/kernels.h"

cell_status cell_op_nonzero(const cell_tensor *a, int64_t index_base, cell_tensor **out) {
  return cell_k_nonzero(a, index_base, out); /* integer positions: never differentiable */
}

/* The shape a and mask broadcast to (they did in the forward). */
static cell_status pair_shape(const cell_node *n, const cell_tensor *mask, int *nd,
                              int64_t *shape) {
  return cell_broadcast_shapes("masked backward", n->in[0].ndim, n->in[0].shape, mask->ndim,
                               mask->shape, nd, shape);
}

/* saved[0] = mask; input 0 = a. */
static cell_status masked_select_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(pair_shape(n, n->saved[0], &nd, shape));
  cell_tensor *z = NULL, *t = NULL;
  cell_status s = cell_tensor_full(g->dtype, nd, shape, 0.0, &z);
  if (s == CELL_OK) s = cell_k_masked_scatter(z, n->saved[0], g, &t);
  cell_tensor_release(z);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_masked_select(const cell_tensor *a, const cell_tensor *mask,
                                  cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !mask || !out || !cell_ag_wants(1, in)) return cell_k_masked_select(a, mask, out);
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_masked_select(a, mask, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = cell_ag_node_new("MaskedSelectBackward", masked_select_backward, 1, in, 1, 0);
  if (n) s = cell_ag_save(n, mask);
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

/* saved[0] = mask; inputs (a, src). */
static cell_status masked_scatter_backward(cell_node *n, const cell_tensor *g,
                                           cell_tensor **gin) {
  const cell_tensor *mask = n->saved[0];
  cell_status s = CELL_OK;
  if (n->in[0].next) {
    cell_tensor *t = NULL;
    s = cell_k_masked_fill(g, mask, 0.0, &t);
    s = cell_ag_give(n, 0, s, t, gin);
  }
  if (s == CELL_OK && n->in[1].next) {
    /* The mask broadcast to g's shape selects the gradients of the source's
     * first k elements; the rest of the source was not used. */
    int64_t m = cell_shape_numel(n->in[1].ndim, n->in[1].shape), k = 0;
    cell_tensor *sel = NULL, *padded = NULL, *t = NULL;
    s = cell_k_masked_select(g, mask, &sel);
    if (s == CELL_OK) {
      k = cell_tensor_numel(sel);
      int64_t pads[2] = {0, m - k};
      s = cell_k_pad(sel, 1, pads, 0.0, &padded);
    }
    if (s == CELL_OK) s = cell_k_reshape(padded, n->in[1].ndim, n->in[1].shape, &t);
    cell_tensor_release(sel);
    cell_tensor_release(padded);
    s = cell_ag_give(n, 1, s, t, gin);
  }
  return s;
}

cell_status cell_op_masked_scatter(const cell_tensor *a, const cell_tensor *mask,
                                   const cell_tensor *src, cell_tensor **out) {
  const cell_tensor *in[2] = {a, src};
  if (!a || !mask || !src || !out || !cell_ag_wants(2, in))
    return cell_k_masked_scatter(a, mask, src, out);
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_masked_scatter(a, mask, src, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n =
      cell_ag_node_new("MaskedScatterBackward", masked_scatter_backward, 2, in, 1, 0);
  if (n) s = cell_ag_save(n, mask);
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_index_nodes(const char **names, int max) {
  static const char *const all[] = {"MaskedSelectBackward", "MaskedScatterBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}
