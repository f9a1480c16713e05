/* rules_linear.c - the public dense op (include/cell_nn.h), y = x W^T + b,
 * as a recording wrapper over the fused linear kernels (src/ops/linear.c),
 * and its backward rule.
 *
 * DenseBackward has inputs x, W and (when given) b, and saves x and W.
 * The rule hands the whole backward to one kernel call (two gemms that
 * read the transposes through strides and a one-pass bias sum). In a pass
 * that creates a graph it builds the same gradients from recording ops
 * (matmul, transpose, reshape, sum), so higher-order gradients work.
 * Operands the fused kernel does not take (other dtypes, mixed dtypes, a
 * bias that broadcasts rather than being [out]) get the composition
 * matmul(x, W^T) + b, with its own nodes. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/device.h"
#include "../ops/kernel_list.h"

static const char *const NODE = "DenseBackward";

static bool fused(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b) {
  cell_dtype dt = x->dtype;
  if (dt != CELL_DTYPE_F32 && dt != CELL_DTYPE_F64 && dt != CELL_DTYPE_BF16 && dt != CELL_DTYPE_F16) return false;
  if (w->dtype != dt || (b && b->dtype != dt)) return false;
  return !b || (b->ndim == 1 && b->shape[0] == w->shape[0]);
}

/* The gradients from recording ops (a pass that creates a graph). */
static cell_status composed_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *x = n->saved[0], *w = n->saved[1];
  int64_t out = w->shape[0], in = w->shape[1];
  cell_status s = CELL_OK;
  if (n->in[0].next) {
    cell_tensor *t = NULL;
    s = cell_op_matmul(g, w, &t);
    s = cell_ag_give(n, 0, s, t, gin);
  }
  if (s == CELL_OK && n->in[1].next) {
    cell_tensor *g2 = NULL, *x2 = NULL, *gt = NULL, *t = NULL;
    int64_t gs[2] = {-1, out}, xs[2] = {-1, in};
    s = cell_tensor_reshape(g, 2, gs, &g2);
    if (s == CELL_OK) s = cell_tensor_reshape(x, 2, xs, &x2);
    if (s == CELL_OK) s = cell_tensor_transpose(g2, 0, 1, &gt);
    if (s == CELL_OK) s = cell_op_matmul(gt, x2, &t);
    cell_release4(CELL_OK, g2, x2, gt, NULL);
    s = cell_ag_give(n, 1, s, t, gin);
  }
  if (s == CELL_OK && n->n_inputs == 3 && n->in[2].next) {
    cell_tensor *t = NULL;
    if (g->ndim == 1) {
      cell_tensor_retain((cell_tensor *)g);
      t = (cell_tensor *)g;
    } else {
      int dims[CELL_MAX_DIMS];
      for (int i = 0; i < g->ndim - 1; i++) dims[i] = i;
      s = cell_op_reduce(CELL_RED_SUM, g, g->ndim - 1, dims, 0, &t);
    }
    s = cell_ag_give(n, 2, s, t, gin);
  }
  return s;
}

static cell_status dense_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (cell_grad_is_enabled()) return composed_backward(n, g, gin);
  const cell_tensor *x = n->saved[0], *w = n->saved[1];
  bool has_b = n->n_inputs == 3;
  cell_tensor *gx = NULL, *gw = NULL, *gb = NULL, *gc = NULL;
  /* g in the output's dtype (a hook may have changed it) */
  cell_status s = g->dtype == x->dtype ? (cell_tensor_retain((cell_tensor *)g), gc = (cell_tensor *)g, CELL_OK)
                                       : cell_k_astype(g, x->dtype, &gc);
  if (s == CELL_OK)
    s = cell_k_linear_backward(gc, x, w, n->in[0].next ? &gx : NULL, n->in[1].next ? &gw : NULL,
                               has_b && n->in[2].next ? &gb : NULL);
  cell_tensor_release(gc);
  s = cell_ag_give(n, 0, s, gx, gin);
  s = cell_ag_give(n, 1, s, gw, gin);
  if (has_b) s = cell_ag_give(n, 2, s, gb, gin);
  return s;
}

static cell_status dense_op(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                            cell_tensor **out) {
  if (!x || !w || !out) return cell_error(CELL_ERR_VALUE, "dense: NULL argument");
  char sx[256], sw[256];
  if (w->ndim != 2)
    return cell_error(CELL_ERR_VALUE, "dense: the weight must be 2-D [out, in], got shape %s",
                      cell_shape_str(w->ndim, w->shape, sw, sizeof sw));
  if (x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1])
    return cell_error(CELL_ERR_VALUE, "dense: an input of shape %s does not fit a weight of shape "
                                      "%s (the input's last dimension must be %lld)",
                      cell_shape_str(x->ndim, x->shape, sx, sizeof sx),
                      cell_shape_str(w->ndim, w->shape, sw, sizeof sw), (long long)w->shape[1]);
  if (!fused(x, w, b)) { /* matmul(x, W^T) + b, recorded step by step */
    cell_tensor *wt = NULL, *y = NULL;
    cell_status s = cell_tensor_transpose(w, 0, 1, &wt);
    if (s == CELL_OK) s = cell_op_matmul(x, wt, &y);
    cell_tensor_release(wt);
    if (s == CELL_OK && b) {
      cell_tensor *z = NULL;
      s = cell_op_binary(CELL_OP_ADD, y, b, &z);
      cell_tensor_release(y);
      y = z;
    }
    if (s == CELL_OK) *out = y;
    return s;
  }
  const cell_tensor *in[3] = {x, w, b};
  int nin = b ? 3 : 2;
  if (!cell_ag_wants(nin, in)) return cell_k_linear(x, w, b, out);
  cell_status s = CELL_AG_RAW(cell_k_linear(x, w, b, out));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_twice(cell_ag_node_new(NODE, dense_backward, nin, in, 2, 0));
  if (n) {
    s = cell_ag_save(n, x);
    if (s == CELL_OK) s = cell_ag_save(n, w);
  }
  return cell_ag_finish(n, s, out);
}

cell_status cell_op_dense(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                          cell_tensor **out) {
  CELL_OP_NAMED("dense", dense_op(x, w, b, out));
}

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_linear_nodes(const char **names, int max) {
  int n = 0;
  if (n < max) names[n++] = NODE;
  return n;
}
