/* rules_sort.c - recording wrappers and backward rules for the ordering
 * and rearranging ops: sort / argsort, topk, median, unique, cumprod,
 * logsumexp, tril / triu, flip, roll, diag and trace.
 *
 * The rules call kernels only (through the device table): the ordering
 * ops scatter the gradient back to the positions their indices name,
 * the rearranging ops apply their inverse rearrangement to it, cumprod
 * has a kernel of its own, and logsumexp's gradient is g * exp(x - y).
 * Only floating results record. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/kernel_list.h"
#include "../ops/device.h"

/* A node for a one-input op whose result r is float, else NULL with *out
 * = r (no gradient to carry). */
#define WANT_NODE(r, out)                    \
  if (!cell_dtype_is_float((r)->dtype)) {    \
    *(out) = (r);                            \
    return CELL_OK;                          \
  }

/* g (or t) reshaped to the input's shape with dimension dim of size 1. */
static cell_status keep_dim(const cell_node *n, int dim, const cell_tensor *t, cell_tensor **out) {
  int64_t ks[CELL_MAX_DIMS];
  for (int d = 0; d < n->in[0].ndim; d++) ks[d] = d == dim ? 1 : n->in[0].shape[d];
  return cell_k_reshape(t, n->in[0].ndim, ks, out);
}


/* --- the value-selecting ops: sort, topk, median along a dimension --------------- */

/* args: the dim, whether the output kept it, the index base; saved: the
 * indices. The gradient is g scattered to the chosen positions. */
typedef struct {
  int dim, keep;
  int64_t index_base;
} select_args;

static cell_status select_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const select_args *sa = CELL_AG_ARGS(n, select_args);
  int nd = n->in[0].ndim;
  const int64_t *shape = n->in[0].shape;
  cell_tensor *t = NULL;
  if (nd == 0) return cell_ag_give(n, 0, cell_k_reshape(g, 0, shape, &t), t, gin);
  cell_tensor *gk = NULL, *ik = NULL, *z = NULL;
  cell_status s = CELL_OK;
  if (sa->keep) {
    cell_tensor_retain((cell_tensor *)g);
    gk = (cell_tensor *)g;
    cell_tensor_retain(n->saved[0]);
    ik = n->saved[0];
  } else {
    s = keep_dim(n, sa->dim, g, &gk);
    if (s == CELL_OK) s = keep_dim(n, sa->dim, n->saved[0], &ik);
  }
  if (s == CELL_OK) {
    int saved = cell_device_enter(cell_tensor_device(g));
    s = cell_tensor_full(cell_ag_grad_dtype(n, 0, g), nd, shape, 0.0, &z);
    cell_device_leave(saved);
  }
  if (s == CELL_OK) s = cell_k_scatter(z, sa->dim, ik, gk, sa->index_base, &t);
  cell_release4(CELL_OK, gk, ik, z, NULL);
  return cell_ag_give(n, 0, s, t, gin);
}

/* Record a select node on *values (indices ix kept for it). */
static cell_status record_select(const char *name, const cell_tensor *a, int dim, int keep,
                                 int64_t index_base, cell_tensor *ix, cell_tensor **v) {
  const cell_tensor *in[1] = {a};
  cell_node *n = cell_ag_node_new(name, select_backward, 1, in, 1, sizeof(select_args));
  cell_status s = CELL_OK;
  if (n) {
    *CELL_AG_ARGS(n, select_args) = (select_args){dim, keep, index_base};
    s = cell_ag_save(n, ix);
  }
  return cell_ag_finish(n, s, v);
}

/* Values and indices from a kernel run raw; records when wanted, hands
 * over what the caller asked for. */
static cell_status finish_select(const char *name, const cell_tensor *a, int dim, int keep,
                                 int64_t index_base, cell_status s, cell_tensor *v,
                                 cell_tensor *ix, cell_tensor **values, cell_tensor **indices) {
  if (s != CELL_OK) return s;
  const cell_tensor *in[1] = {a};
  if (v && cell_ag_wants(1, in) && cell_dtype_is_float(v->dtype)) {
    s = record_select(name, a, dim, keep, index_base, ix, &v);
    if (s != CELL_OK) {
      cell_tensor_release(ix);
      return s;
    }
  }
  if (values) *values = v;
  else cell_tensor_release(v);
  if (indices) *indices = ix;
  else cell_tensor_release(ix);
  return CELL_OK;
}

cell_status cell_op_sort(const cell_tensor *a, int dim, int descending, int64_t index_base,
                         cell_tensor **values, cell_tensor **indices) {
  if (!a || (!values && !indices)) return cell_error(CELL_ERR_VALUE, "sort: NULL argument");
  cell_tensor *v = NULL, *ix = NULL;
  cell_status s = CELL_AG_RAW(cell_k_sort(a, dim, descending, index_base, values ? &v : NULL, &ix));
  return finish_select("SortBackward", a, dim, 1, index_base, s, v, ix, values, indices);
}

cell_status cell_op_topk(const cell_tensor *a, int64_t k, int dim, int largest, int sorted,
                         int64_t index_base, cell_tensor **values, cell_tensor **indices) {
  if (!a || !values) return cell_error(CELL_ERR_VALUE, "topk: NULL argument");
  cell_tensor *v = NULL, *ix = NULL;
  cell_status s = CELL_AG_RAW(cell_k_topk(a, k, dim, largest, sorted, index_base, &v, &ix));
  return finish_select("TopkBackward", a, dim, 1, index_base, s, v, ix, values, indices);
}

cell_status cell_op_median(const cell_tensor *a, int dim, int keepdim, int64_t index_base,
                           cell_tensor **values, cell_tensor **indices) {
  if (!a || !values) return cell_error(CELL_ERR_VALUE, "median: NULL argument");
  cell_tensor *v = NULL, *ix = NULL;
  cell_status s = CELL_AG_RAW(cell_k_median(a, dim, keepdim, index_base, &v, &ix));
  return finish_select("MedianBackward", a, dim, keepdim, index_base, s, v, ix, values, indices);
}

/* --- median of all elements ------------------------------------------------------- */

/* saved: x, y. The gradient is split evenly among the elements equal to
 * the median (as PyTorch's). */
static cell_status median_all_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *eq = NULL, *m = NULL, *cnt = NULL, *gs = NULL, *t = NULL;
  cell_status s = cell_k_binary(CELL_OP_EQ, n->saved[0], n->saved[1], &eq);
  if (s == CELL_OK) s = cell_k_astype(eq, cell_ag_grad_dtype(n, 0, g), &m);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_SUM, m, 0, NULL, 0, &cnt);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_DIV, g, cnt, &gs);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_MUL, m, gs, &t);
  cell_release4(CELL_OK, eq, m, cnt, gs);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_median_all(const cell_tensor *a, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "median: NULL argument");
  int64_t n = cell_tensor_numel(a);
  cell_tensor *flat = NULL, *r = NULL, *ix = NULL;
  if (n == 0) {
    if (!cell_dtype_is_float(a->dtype))
      return cell_error(CELL_ERR_VALUE, "median: the input has no elements and dtype %s has no NaN",
                        cell_dtype_name(a->dtype));
    return cell_tensor_full_on(cell_tensor_device(a), a->dtype, 0, NULL, NAN, out);
  }
  int64_t shape1[1] = {n};
  cell_status s = CELL_AG_RAW(cell_k_reshape(a, 1, shape1, &flat));
  if (s == CELL_OK) s = CELL_AG_RAW(cell_k_median(flat, 0, 0, 0, &r, &ix));
  cell_tensor_release(flat);
  cell_tensor_release(ix);
  if (s != CELL_OK) return s;
  const cell_tensor *in[1] = {a};
  if (!cell_ag_wants(1, in)) {
    *out = r;
    return CELL_OK;
  }
  WANT_NODE(r, out);
  cell_node *nd = cell_ag_node_new("MedianAllBackward", median_all_backward, 1, in, 2, 0);
  if (nd) {
    s = cell_ag_save(nd, a);
    if (s == CELL_OK) s = cell_ag_save(nd, r);
  }
  return cell_ag_record_end(nd, s, r, out);
}

/* --- unique (not differentiable) -------------------------------------------------- */

cell_status cell_op_unique(const cell_tensor *a, int64_t index_base, cell_tensor **out,
                           cell_tensor **inverse, cell_tensor **counts) {
  return cell_k_unique(a, index_base, out, inverse, counts);
}

/* --- cumprod ------------------------------------------------------------------------ */

static cell_status cumprod_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *t = NULL;
  cell_status s = cell_k_cumprod_backward(g, n->saved[0], *CELL_AG_ARGS(n, int), &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_cumprod(const cell_tensor *a, int dim, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_cumprod(a, dim, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_cumprod(a, dim, &r));
  if (s != CELL_OK) return s;
  WANT_NODE(r, out);
  cell_node *n = CELL_AG_NODE("CumprodBackward", cumprod_backward, 1, in, 1, int);
  if (n) {
    *CELL_AG_ARGS(n, int) = dim;
    s = cell_ag_save(n, a);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* --- logsumexp ------------------------------------------------------------------------ */

typedef struct {
  unsigned mask; /* the reduced dimensions */
} lse_args;

static cell_status logsumexp_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  unsigned mask = CELL_AG_ARGS(n, lse_args)->mask;
  int nd = n->in[0].ndim;
  int64_t ks[CELL_MAX_DIMS];
  for (int d = 0; d < nd; d++) ks[d] = ((mask >> d) & 1u) ? 1 : n->in[0].shape[d];
  cell_tensor *gk = NULL, *yk = NULL, *d = NULL, *e = NULL, *t = NULL;
  cell_status s = cell_k_reshape(g, nd, ks, &gk);
  if (s == CELL_OK) s = cell_k_reshape(n->saved[1], nd, ks, &yk);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_SUB, n->saved[0], yk, &d);
  if (s == CELL_OK) s = cell_k_unary(CELL_OP_EXP, d, &e);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_MUL, e, gk, &t);
  cell_release4(CELL_OK, gk, yk, d, e);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_logsumexp(const cell_tensor *a, int ndims, const int *dims, int keepdim,
                              cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_logsumexp(a, ndims, dims, keepdim, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_logsumexp(a, ndims, dims, keepdim, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(a->dtype)) { /* integer input: no gradient to carry */
    *out = r;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE("LogsumexpBackward", logsumexp_backward, 1, in, 2, lse_args);
  if (n) {
    unsigned mask = 0;
    if (ndims == 0) mask = (1u << a->ndim) - 1u;
    for (int k = 0; k < ndims; k++) mask |= 1u << dims[k];
    CELL_AG_ARGS(n, lse_args)->mask = mask;
    s = cell_ag_save(n, a);
    if (s == CELL_OK) s = cell_ag_save(n, r);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* --- tril / triu ------------------------------------------------------------------------ */

typedef struct {
  int64_t diagonal;
  int upper;
} tri_args;

static cell_status triangle_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const tri_args *ta = CELL_AG_ARGS(n, tri_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_triangle(g, ta->diagonal, ta->upper, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status triangle(const cell_tensor *a, int64_t diagonal, int upper, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_triangle(a, diagonal, upper, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_triangle(a, diagonal, upper, &r));
  if (s != CELL_OK) return s;
  WANT_NODE(r, out);
  cell_node *n = CELL_AG_NODE(upper ? "TriuBackward" : "TrilBackward", triangle_backward, 1, in, 0, tri_args);
  if (n) *CELL_AG_ARGS(n, tri_args) = (tri_args){diagonal, upper};
  return cell_ag_record_end(n, s, r, out);
}

cell_status cell_op_tril(const cell_tensor *a, int64_t diagonal, cell_tensor **out) {
  return triangle(a, diagonal, 0, out);
}
cell_status cell_op_triu(const cell_tensor *a, int64_t diagonal, cell_tensor **out) {
  return triangle(a, diagonal, 1, out);
}

/* --- flip / roll ------------------------------------------------------------------------- */

typedef struct {
  int n;
  int dims[CELL_MAX_DIMS];
  int64_t shifts[CELL_MAX_DIMS];
} perm_args;

static cell_status flip_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const perm_args *pa = CELL_AG_ARGS(n, perm_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_flip(g, pa->n, pa->dims, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_flip(const cell_tensor *a, int ndims, const int *dims, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_flip(a, ndims, dims, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_flip(a, ndims, dims, &r));
  if (s != CELL_OK) return s;
  WANT_NODE(r, out);
  cell_node *n = CELL_AG_NODE("FlipBackward", flip_backward, 1, in, 0, perm_args);
  if (n) {
    perm_args *pa = CELL_AG_ARGS(n, perm_args);
    pa->n = ndims; /* the kernel checked ndims <= CELL_MAX_DIMS */
    for (int k = 0; k < ndims; k++) pa->dims[k] = dims[k];
  }
  return cell_ag_record_end(n, s, r, out);
}

static cell_status roll_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const perm_args *pa = CELL_AG_ARGS(n, perm_args);
  int64_t back[CELL_MAX_DIMS];
  for (int k = 0; k < (pa->n ? pa->n : 1); k++) back[k] = -pa->shifts[k];
  cell_tensor *t = NULL;
  cell_status s = cell_k_roll(g, pa->n, back, pa->dims, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_roll(const cell_tensor *a, int n, const int64_t *shifts, const int *dims,
                         cell_tensor **out) {
  if (n > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "roll: at most %d shifts, got %d", CELL_MAX_DIMS, n);
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_roll(a, n, shifts, dims, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_roll(a, n, shifts, dims, &r));
  if (s != CELL_OK) return s;
  WANT_NODE(r, out);
  cell_node *nd = CELL_AG_NODE("RollBackward", roll_backward, 1, in, 0, perm_args);
  if (nd) {
    perm_args *pa = CELL_AG_ARGS(nd, perm_args);
    /* shifts reduced modulo their sizes, so the backward's negation cannot
     * overflow (the kernel checked the dims) */
    int64_t numel = cell_tensor_numel(a);
    pa->n = n;
    pa->shifts[0] = shifts && numel ? shifts[0] % numel : 0;
    for (int k = 0; k < n; k++) {
      int64_t sz = a->ndim ? a->shape[dims[k]] : 1;
      pa->dims[k] = dims[k];
      pa->shifts[k] = sz ? shifts[k] % sz : 0;
    }
  }
  return cell_ag_record_end(nd, s, r, out);
}

/* --- diag / trace ----------------------------------------------------------------------- */

static cell_status diag_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int64_t off = *CELL_AG_ARGS(n, int64_t);
  cell_tensor *t = NULL;
  cell_status s = n->in[0].ndim == 1
                      ? cell_k_diag(g, off, -1, -1, &t)
                      : cell_k_diag(g, off, n->in[0].shape[0], n->in[0].shape[1], &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_diag(const cell_tensor *a, int64_t offset, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_diag(a, offset, -1, -1, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_diag(a, offset, -1, -1, &r));
  if (s != CELL_OK) return s;
  WANT_NODE(r, out);
  cell_node *n = CELL_AG_NODE("DiagBackward", diag_backward, 1, in, 0, int64_t);
  if (n) *CELL_AG_ARGS(n, int64_t) = offset;
  return cell_ag_record_end(n, s, r, out);
}

cell_status cell_op_trace(const cell_tensor *a, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "trace: NULL argument");
  if (cell_tensor_ndim(a) != 2) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "trace: expected a matrix (2-D), got shape %s",
                      cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  cell_tensor *d;
  CELL_TRY(cell_op_diag(a, 0, &d));
  cell_status s = cell_op_reduce(CELL_RED_SUM, d, 0, NULL, 0, out);
  cell_tensor_release(d);
  return s;
}

int cell_ag_sort_nodes(const char **names, int max) {
  const char *all[] = {"SortBackward", "TopkBackward", "MedianBackward", "MedianAllBackward",
                       "CumprodBackward", "LogsumexpBackward", "TrilBackward", "TriuBackward",
                       "FlipBackward", "RollBackward", "DiagBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}
