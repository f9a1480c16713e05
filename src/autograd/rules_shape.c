/* rules_shape.c - recording wrappers and backward rules for the views
 * (reshape, transpose, narrow, expand, ...), the copies (contiguous, clone,
 * astype) and the shape ops that move elements (cat, stack, gather,
 * scatter, index_select, tile, repeat_interleave, pad).
 *
 * Rules compute with the raw kernels (cell_k_*): grad mode is off during a
 * backward pass, and kernels never record anyway. Each rule with arguments
 * has its own typed struct in the node (CELL_AG_ARGS). The views' rules,
 * the copies' and cat / stack's use the recording views instead (the
 * same as the raw ones with grad mode off), so in a pass that creates a
 * graph they record: they are twice differentiable (cell_ag_twice). */
#include "autograd.h"
#include "../core/alloc.h"
#include "../ops/kernels.h"
#include "../ops/kernel_list.h"

/* --- helpers ---------------------------------------------------------------- */

/* A node on one input with max_saved saved tensors and args_size bytes of
 * arguments (NULL when out of memory). */
static cell_node *node1(const char *name, cell_backward_fn fn, const cell_tensor *t, int max_saved,
                        size_t args_size) {
  const cell_tensor *in[1] = {t};
  return cell_ag_node_new(name, fn, 1, in, max_saved, args_size);
}

static bool wants1(const cell_tensor *t) {
  const cell_tensor *in[1] = {t};
  return t && cell_ag_wants(1, in);
}

/* The dtype gradients are accumulated in: half types add in float32. */
static cell_dtype acc_dtype(cell_dtype dt) {
  return dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16 ? CELL_DTYPE_F32 : dt;
}

static cell_status zeros(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  return cell_tensor_full(dt, ndim, shape, 0.0, out);
}

/* --- identity-like rules ------------------------------------------------------- */

/* contiguous, clone, astype (float to float), expand: the gradient as it
 * is, converted to the input's dtype and summed over broadcast dims. */
static cell_status identity_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  return cell_ag_grad_for(n, 0, (cell_tensor *)g, &gin[0]);
}

/* reshape, view, flatten, squeeze, unsqueeze: g reshaped to the input. */
static cell_status reshape_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *t = NULL;
  cell_status s = cell_tensor_reshape(g, n->in[0].ndim, n->in[0].shape, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

/* --- views --------------------------------------------------------------------- */

cell_status cell_tensor_reshape(const cell_tensor *t, int ndim, const int64_t *shape,
                                cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_reshape(t, ndim, shape, out), out);
  cell_status s = CELL_AG_RAW(cell_k_reshape(t, ndim, shape, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, cell_ag_finish(cell_ag_twice(node1("ReshapeBackward", reshape_backward, t, 0, 0)), s, out), out);
}

cell_status cell_tensor_view(const cell_tensor *t, int ndim, const int64_t *shape,
                             cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_view(t, ndim, shape, out), out);
  cell_status s = CELL_AG_RAW(cell_k_view(t, ndim, shape, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, cell_ag_finish(cell_ag_twice(node1("ViewBackward", reshape_backward, t, 0, 0)), s, out), out);
}

cell_status cell_tensor_flatten(const cell_tensor *t, int start, int end, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_flatten(t, start, end, out), out);
  cell_status s = CELL_AG_RAW(cell_k_flatten(t, start, end, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, cell_ag_finish(cell_ag_twice(node1("FlattenBackward", reshape_backward, t, 0, 0)), s, out), out);
}

cell_status cell_tensor_squeeze(const cell_tensor *t, int dim, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_squeeze(t, dim, out), out);
  cell_status s = CELL_AG_RAW(cell_k_squeeze(t, dim, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, cell_ag_finish(cell_ag_twice(node1("SqueezeBackward", reshape_backward, t, 0, 0)), s, out), out);
}

cell_status cell_tensor_unsqueeze(const cell_tensor *t, int dim, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_unsqueeze(t, dim, out), out);
  cell_status s = CELL_AG_RAW(cell_k_unsqueeze(t, dim, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, cell_ag_finish(cell_ag_twice(node1("UnsqueezeBackward", reshape_backward, t, 0, 0)), s, out), out);
}

static cell_status transpose_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *t = NULL;
  const int *d = CELL_AG_ARGS(n, int);
  cell_status s = cell_tensor_transpose(g, d[0], d[1], &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_tensor_transpose(const cell_tensor *t, int d0, int d1, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_transpose(t, d0, d1, out), out);
  cell_status s = CELL_AG_RAW(cell_k_transpose(t, d0, d1, out));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_twice(node1("TransposeBackward", transpose_backward, t, 0, 2 * sizeof(int)));
  if (n) {
    CELL_AG_ARGS(n, int)[0] = d0; /* the two dims */
    CELL_AG_ARGS(n, int)[1] = d1;
  }
  return cell_ag_view(t, cell_ag_finish(n, s, out), out);
}

/* args: the permutation (int[ndim]); the gradient takes its inverse. */
static cell_status permute_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int inv[CELL_MAX_DIMS];
  int nd = n->in[0].ndim;
  const int *perm = CELL_AG_ARGS(n, int);
  for (int i = 0; i < nd; i++) inv[perm[i]] = i;
  cell_tensor *t = NULL;
  cell_status s = cell_tensor_permute(g, inv, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_tensor_permute(const cell_tensor *t, const int *dims, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_permute(t, dims, out), out);
  cell_status s = CELL_AG_RAW(cell_k_permute(t, dims, out));
  if (s != CELL_OK) return s;
  cell_node *n =
      cell_ag_twice(node1("PermuteBackward", permute_backward, t, 0, sizeof(int) * (size_t)t->ndim));
  if (n)
    for (int i = 0; i < t->ndim; i++) CELL_AG_ARGS(n, int)[i] = dims[i];
  return cell_ag_view(t, cell_ag_finish(n, s, out), out);
}

/* narrow, slice, select: zeros of the input's shape with g copied into the
 * part the op viewed. */
typedef struct {
  int dim;
  bool is_select;
  int64_t a, b, step; /* select: the index in a; slice: start, stop, step */
} slice_args;

/* In a pass that creates a graph (grad mode on): g padded with zeros to
 * the input's shape, a recording op (select: g with dim put back first;
 * slices of step 1 only, the others are not twice). */
static cell_status slice_graph(cell_node *n, const slice_args *sa, const cell_tensor *g,
                               cell_tensor **gin) {
  int dim = sa->dim, nd = n->in[0].ndim;
  int64_t size = n->in[0].shape[dim], a = sa->a, b = sa->is_select ? sa->a + 1 : sa->b;
  int64_t pads[2 * CELL_MAX_DIMS] = {0};
  int npairs = nd - dim; /* pairs from the last dimension back to dim */
  pads[2 * (npairs - 1)] = a;
  pads[2 * (npairs - 1) + 1] = size - b;
  cell_tensor *u = NULL, *t = NULL;
  cell_status s = sa->is_select ? cell_tensor_unsqueeze(g, dim, &u) : CELL_OK;
  if (s == CELL_OK) s = cell_op_pad(u ? u : g, npairs, pads, 0.0, &t);
  cell_tensor_release(u);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status slice_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const slice_args *sa = CELL_AG_ARGS(n, slice_args);
  if (n->twice && cell_grad_is_enabled()) return slice_graph(n, sa, g, gin);
  int dim = sa->dim;
  cell_tensor *z = NULL, *v = NULL;
  cell_status s = zeros(g->dtype, n->in[0].ndim, n->in[0].shape, &z);
  if (s == CELL_OK)
    s = sa->is_select ? cell_k_select(z, dim, sa->a, &v)
                      : cell_k_slice(z, dim, sa->a, sa->b, sa->step, &v);
  if (s == CELL_OK && cell_tensor_numel(v) > 0) s = cell_k_copy_(v, g);
  cell_tensor_release(v);
  return cell_ag_give(n, 0, s, z, gin);
}

bool cell_ag_is_slice(const cell_node *n) { return n->backward == slice_backward; }

cell_status cell_ag_slice_into(const cell_node *n, const cell_tensor *g, cell_tensor *dst) {
  const slice_args *sa = CELL_AG_ARGS(n, slice_args);
  cell_tensor *v = NULL;
  cell_status s = sa->is_select ? cell_k_select(dst, sa->dim, sa->a, &v)
                                : cell_k_slice(dst, sa->dim, sa->a, sa->b, sa->step, &v);
  if (s == CELL_OK && cell_tensor_numel(v) > 0) s = cell_k_binary_(CELL_OP_ADD, v, g);
  cell_tensor_release(v);
  return s;
}

static cell_status record_slice(const char *name, const cell_tensor *t, int dim, int is_select,
                                int64_t a, int64_t b, int64_t step, cell_tensor **out) {
  cell_node *n = node1(name, slice_backward, t, 0, sizeof(slice_args));
  if (n) *CELL_AG_ARGS(n, slice_args) = (slice_args){dim, is_select != 0, a, b, step};
  if (n && (is_select || step == 1)) n->twice = true;
  return cell_ag_finish(n, CELL_OK, out);
}

cell_status cell_tensor_narrow(const cell_tensor *t, int dim, int64_t start, int64_t len,
                               cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_narrow(t, dim, start, len, out), out);
  cell_status s = CELL_AG_RAW(cell_k_narrow(t, dim, start, len, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, record_slice("NarrowBackward", t, dim, 0, start, start + len, 1, out), out);
}

cell_status cell_tensor_slice(const cell_tensor *t, int dim, int64_t start, int64_t stop,
                              int64_t step, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_slice(t, dim, start, stop, step, out), out);
  cell_status s = CELL_AG_RAW(cell_k_slice(t, dim, start, stop, step, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, record_slice("SliceBackward", t, dim, 0, start, stop, step, out), out);
}

cell_status cell_tensor_select(const cell_tensor *t, int dim, int64_t i, cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_select(t, dim, i, out), out);
  cell_status s = CELL_AG_RAW(cell_k_select(t, dim, i, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, record_slice("SelectBackward", t, dim, 1, i, 0, 0, out), out);
}

/* expand: the gradient summed over the stretched and added dimensions
 * (cell_ag_grad_for sums g down to the input's shape). */
cell_status cell_tensor_expand(const cell_tensor *t, int ndim, const int64_t *shape,
                               cell_tensor **out) {
  if (!wants1(t)) return cell_ag_view(t, cell_k_expand(t, ndim, shape, out), out);
  cell_status s = CELL_AG_RAW(cell_k_expand(t, ndim, shape, out));
  if (s != CELL_OK) return s;
  return cell_ag_view(t, cell_ag_finish(cell_ag_twice(node1("ExpandBackward", identity_backward, t, 0, 0)), s, out), out);
}

/* --- copies -------------------------------------------------------------------- */

cell_status cell_tensor_contiguous(const cell_tensor *t, cell_tensor **out) {
  if (!wants1(t)) return cell_k_contiguous(t, out);
  cell_status s = CELL_AG_RAW(cell_k_contiguous(t, out));
  if (s != CELL_OK || *out == t) return s; /* t itself: it keeps its own history */
  return cell_ag_finish(cell_ag_twice(node1("ContiguousBackward", identity_backward, t, 0, 0)), s, out);
}

cell_status cell_tensor_clone(const cell_tensor *t, cell_tensor **out) {
  if (!wants1(t)) return cell_k_clone(t, out);
  cell_status s = CELL_AG_RAW(cell_k_clone(t, out));
  if (s != CELL_OK) return s;
  return cell_ag_finish(cell_ag_twice(node1("CloneBackward", identity_backward, t, 0, 0)), s, out);
}

/* Only a float-to-float conversion carries a gradient (converted back by
 * cell_ag_grad_for); a cast to or from an integer dtype records nothing. */
cell_status cell_tensor_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out) {
  if ((unsigned)dt >= CELL_DTYPE_COUNT || !cell_dtype_is_float(dt) || !wants1(t) ||
      !cell_dtype_is_float(t->dtype))
    return cell_k_astype(t, dt, out);
  cell_status s = CELL_AG_RAW(cell_k_astype(t, dt, out));
  if (s != CELL_OK) return s;
  return cell_ag_finish(cell_ag_twice(node1("AstypeBackward", identity_backward, t, 0, 0)), s, out);
}

/* --- cat, stack ---------------------------------------------------------------- */

/* stacked false: input i was the next in[i].shape[dim] slices of the
 * output along dim (cat); true: input i was output slice i (stack). */
typedef struct {
  int dim;
  bool stacked;
} concat_args;

static cell_status concat_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  int dim = CELL_AG_ARGS(n, concat_args)->dim;
  bool stacked = CELL_AG_ARGS(n, concat_args)->stacked;
  cell_status s = CELL_OK;
  int64_t at = 0;
  for (int i = 0; i < n->n_inputs && s == CELL_OK; i++) {
    int64_t len = stacked ? 1 : n->in[i].shape[dim];
    if (n->in[i].next) {
      cell_tensor *t = NULL;
      s = stacked ? cell_tensor_select(g, dim, at, &t) : cell_tensor_narrow(g, dim, at, len, &t);
      s = cell_ag_give(n, i, s, t, gin);
    }
    at += len;
  }
  return s;
}

/* Make *out, the raw result of cat (stacked == 0) or stack of ts[0..n)
 * along dim, the output of a node on them. A node has at most
 * CELL_NODE_MAX_INPUTS inputs, so longer lists are split into groups: each
 * group's part of *out (a view) gets the node of the group, and *out a cat
 * node on the parts. Nothing is copied. On failure *out is released. */
static cell_status record_concat(const char *name, int n, cell_tensor *const *ts, int dim,
                                 int stacked, cell_tensor **out) {
  const cell_tensor *const *in = (const cell_tensor *const *)ts;
  if (n <= CELL_NODE_MAX_INPUTS) {
    cell_node *node = cell_ag_twice(CELL_AG_NODE(name, concat_backward, n, in, 0, concat_args));
    if (node) *CELL_AG_ARGS(node, concat_args) = (concat_args){dim, stacked != 0};
    return cell_ag_finish(node, CELL_OK, out);
  }
  int per = (n + CELL_NODE_MAX_INPUTS - 1) / CELL_NODE_MAX_INPUTS;
  int ng = (n + per - 1) / per;
  cell_tensor **part = cell_alloc_zero(sizeof *part * (size_t)ng);
  if (!part) {
    cell_tensor_release(*out);
    *out = NULL;
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory recording the op", name);
  }
  cell_status s = CELL_OK;
  int64_t at = 0;
  for (int k = 0; k < ng && s == CELL_OK; k++) {
    int lo = k * per, cnt = n - lo < per ? n - lo : per;
    int64_t len = 0;
    for (int i = lo; i < lo + cnt; i++) len += stacked ? 1 : ts[i]->shape[dim];
    s = cell_k_narrow(*out, dim, at, len, &part[k]);
    at += len;
    if (s == CELL_OK && cell_ag_wants(cnt, in + lo))
      s = record_concat(name, cnt, ts + lo, dim, stacked, &part[k]);
  }
  cell_node *node = NULL;
  if (s == CELL_OK) {
    node = cell_ag_twice(
        CELL_AG_NODE(name, concat_backward, ng, (const cell_tensor *const *)part, 0, concat_args));
    if (node) *CELL_AG_ARGS(node, concat_args) = (concat_args){dim, false};
  }
  for (int k = 0; k < ng; k++) cell_tensor_release(part[k]);
  cell_dealloc(part);
  return cell_ag_finish(node, s, out);
}

cell_status cell_op_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  if (n <= 0 || !ts || !cell_ag_wants(n, (const cell_tensor *const *)ts))
    return cell_k_cat(n, ts, dim, out);
  cell_status s = CELL_AG_RAW(cell_k_cat(n, ts, dim, out));
  if (s != CELL_OK) return s;
  return record_concat("CatBackward", n, ts, dim, 0, out);
}

cell_status cell_op_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  if (n <= 0 || !ts || !cell_ag_wants(n, (const cell_tensor *const *)ts))
    return cell_k_stack(n, ts, dim, out);
  cell_status s = CELL_AG_RAW(cell_k_stack(n, ts, dim, out));
  if (s != CELL_OK) return s;
  return record_concat("StackBackward", n, ts, dim, 1, out);
}

/* --- gather, scatter, index_select ----------------------------------------------- */

/* Zeros of the input's shape with g added at the positions index gives
 * along dim (repeated positions accumulate; the kernel scatter_add_): the
 * gradient of gather. index and g have the same shape and as many dims as
 * the input. */
static cell_status index_add(cell_node *n, const cell_tensor *g, const cell_tensor *index, int dim,
                             int64_t base, cell_tensor **gin) {
  cell_tensor *z = NULL;
  cell_status s = zeros(acc_dtype(g->dtype), n->in[0].ndim, n->in[0].shape, &z);
  if (s == CELL_OK) s = cell_k_scatter_add_(z, dim, index, g, base);
  return cell_ag_give(n, 0, s, z, gin);
}

/* The arguments of gather, scatter and index_select; saved[0]: the index. */
typedef struct {
  int dim;
  int64_t index_base;
} index_args;

static cell_status gather_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const index_args *a = CELL_AG_ARGS(n, index_args);
  return index_add(n, g, n->saved[0], a->dim, a->index_base, gin);
}

cell_status cell_op_gather(const cell_tensor *a, int dim, const cell_tensor *index,
                           int64_t index_base, cell_tensor **out) {
  if (!index || !wants1(a)) return cell_k_gather(a, dim, index, index_base, out);
  cell_status s = CELL_AG_RAW(cell_k_gather(a, dim, index, index_base, out));
  if (s != CELL_OK) return s;
  cell_node *n = node1("GatherBackward", gather_backward, a, 1, sizeof(index_args));
  if (n) {
    *CELL_AG_ARGS(n, index_args) = (index_args){dim, index_base};
    s = cell_ag_save(n, index);
  }
  return cell_ag_finish(n, s, out);
}

/* src's gradient (src of shape src_shape): g at the position each element
 * of src within the index's shape was written to, where that write is the
 * one the forward pass kept (the last of its position, row-major), else 0;
 * 0 outside the index's shape. In ops: the writes numbered 0, 1, ... in the
 * index's shape are scattered as the forward did (each position keeps its
 * last writer's number), gathered back, and g is kept where the number is
 * the write's own. */
static cell_status scatter_src_grad(const cell_tensor *g, const cell_tensor *index, int dim,
                                    int64_t base, int nd, const int64_t *src_shape,
                                    cell_tensor **out) {
  cell_tensor *ids = NULL, *idv = NULL, *none = NULL, *kept = NULL, *back = NULL, *lost = NULL,
              *gg = NULL, *r = NULL;
  int64_t pads[2 * CELL_MAX_DIMS];
  bool padded = false;
  for (int d = 0; d < nd; d++) {
    pads[2 * (nd - 1 - d)] = 0;
    pads[2 * (nd - 1 - d) + 1] = src_shape[d] - index->shape[d];
    if (src_shape[d] != index->shape[d]) padded = true;
  }
  cell_status s =
      cell_k_arange(0.0, (double)cell_tensor_numel(index), 1.0, CELL_DTYPE_I64, &ids);
  if (s == CELL_OK) s = cell_k_reshape(ids, index->ndim, index->shape, &idv);
  if (s == CELL_OK) s = cell_k_full(CELL_DTYPE_I64, g->ndim, g->shape, -1.0, &none);
  if (s == CELL_OK) s = cell_k_scatter(none, dim, index, idv, base, &kept);
  if (s == CELL_OK) s = cell_k_gather(kept, dim, index, base, &back);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_NE, back, idv, &lost);
  if (s == CELL_OK) s = cell_k_gather(g, dim, index, base, &gg);
  if (s == CELL_OK) s = cell_k_masked_fill(gg, lost, 0.0, &r);
  if (s == CELL_OK && padded) {
    cell_tensor *p = NULL;
    s = cell_k_pad(r, nd, pads, 0.0, &p);
    cell_tensor_release(r);
    r = s == CELL_OK ? p : NULL;
  }
  cell_tensor_release(ids);
  cell_tensor_release(idv);
  cell_tensor_release(none);
  cell_tensor_release(kept);
  cell_tensor_release(back);
  cell_tensor_release(lost);
  cell_tensor_release(gg);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* Inputs a (0) and src (1); saved[0]: the index. a gets g with the overwritten positions zeroed; src
 * gets g at the position each of its elements was written to, or 0 where a
 * later write to the same position replaced it. */
static cell_status scatter_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *index = n->saved[0];
  int dim = CELL_AG_ARGS(n, index_args)->dim;
  int64_t base = CELL_AG_ARGS(n, index_args)->index_base;
  cell_status s = CELL_OK;
  if (n->in[0].next) {
    cell_tensor *z = NULL, *t = NULL;
    s = zeros(g->dtype, index->ndim, index->shape, &z);
    if (s == CELL_OK) s = cell_k_scatter(g, dim, index, z, base, &t);
    cell_tensor_release(z);
    s = cell_ag_give(n, 0, s, t, gin);
  }
  if (s == CELL_OK && n->in[1].next) {
    cell_tensor *r = NULL;
    s = scatter_src_grad(g, index, dim, base, n->in[1].ndim, n->in[1].shape, &r);
    s = cell_ag_give(n, 1, s, r, gin);
  }
  return s;
}

cell_status cell_op_scatter(const cell_tensor *a, int dim, const cell_tensor *index,
                            const cell_tensor *src, int64_t index_base, cell_tensor **out) {
  const cell_tensor *in[2] = {a, src};
  if (!a || !index || !src || !cell_ag_wants(2, in))
    return cell_k_scatter(a, dim, index, src, index_base, out);
  cell_status s = CELL_AG_RAW(cell_k_scatter(a, dim, index, src, index_base, out));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("ScatterBackward", scatter_backward, 2, in, 1, index_args);
  if (n) {
    *CELL_AG_ARGS(n, index_args) = (index_args){dim, index_base};
    s = cell_ag_save(n, index);
  }
  return cell_ag_finish(n, s, out);
}

/* index_select is gather with the (0-D or 1-D) index laid along dim and
 * broadcast over the other dims of g, so its gradient is index_add's. */
static cell_status index_select_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const cell_tensor *index = n->saved[0];
  int dim = CELL_AG_ARGS(n, index_args)->dim;
  int64_t base = CELL_AG_ARGS(n, index_args)->index_base;
  if (g->ndim == 0) /* a 0-D input: g is its gradient (the forward pass checked the index) */
    return cell_ag_grad_for(n, 0, (cell_tensor *)g, &gin[0]);
  cell_tensor iv = *index; /* a header on the stack: the kernel only reads it */
  iv.ndim = g->ndim;
  iv.autograd = NULL;
  for (int d = 0; d < g->ndim; d++) {
    iv.shape[d] = g->shape[d];
    iv.stride[d] = d == dim && index->ndim ? index->stride[0] : 0;
  }
  return index_add(n, g, &iv, dim, base, gin);
}

cell_status cell_op_index_select(const cell_tensor *a, int dim, const cell_tensor *index,
                                 int64_t index_base, cell_tensor **out) {
  if (!index || !wants1(a)) return cell_k_index_select(a, dim, index, index_base, out);
  cell_status s = CELL_AG_RAW(cell_k_index_select(a, dim, index, index_base, out));
  if (s != CELL_OK) return s;
  cell_node *n = node1("IndexSelectBackward", index_select_backward, a, 1, sizeof(index_args));
  if (n) {
    *CELL_AG_ARGS(n, index_args) = (index_args){dim, index_base};
    s = cell_ag_save(n, index);
  }
  return cell_ag_finish(n, s, out);
}

/* --- tile, repeat_interleave ----------------------------------------------------- */

/* g with dimension d, of size a * b, read as [a, b] and summed over its a
 * part (sum_first) or its b part: g as [P, a, b, Q], summed over axis 1 or
 * 2, back to g's rank. */
static cell_status fold_dim(const cell_tensor *g, int d, int64_t a, int64_t b, int sum_first,
                            cell_tensor **out) {
  int64_t sh4[4] = {1, a, b, 1}, sh[CELL_MAX_DIMS];
  for (int i = 0; i < g->ndim; i++) {
    if (i < d) sh4[0] *= g->shape[i];
    if (i > d) sh4[3] *= g->shape[i];
    sh[i] = g->shape[i];
  }
  sh[d] = sum_first ? b : a;
  int axis = sum_first ? 1 : 2;
  cell_tensor *v = NULL, *r = NULL;
  cell_status s = cell_k_reshape(g, 4, sh4, &v);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_SUM, v, 1, &axis, 0, &r);
  cell_tensor_release(v);
  if (s == CELL_OK) s = cell_k_reshape(r, g->ndim, sh, out);
  cell_tensor_release(r);
  return s;
}

/* g's rank is max(ndim, nreps); dim d of g is reps[d] blocks of the input's
 * size sz[d] (1 for the added leading dims): sum the blocks, dim by dim. */
static cell_status tile_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int nd = g->ndim, lead = nd - n->in[0].ndim;
  int64_t sz[CELL_MAX_DIMS];
  for (int d = 0; d < nd; d++) sz[d] = d < lead ? 1 : n->in[0].shape[d - lead];
  if (cell_shape_numel(n->in[0].ndim, n->in[0].shape) == 0) {
    cell_tensor *z = NULL;
    cell_status s = zeros(g->dtype, n->in[0].ndim, n->in[0].shape, &z);
    return cell_ag_give(n, 0, s, z, gin);
  }
  cell_tensor *cur = (cell_tensor *)g, *next = NULL;
  cell_tensor_retain(cur);
  cell_status s = CELL_OK;
  for (int d = 0; d < nd && s == CELL_OK; d++) {
    int64_t rp = cur->shape[d] / sz[d];
    if (rp == 1) continue;
    s = fold_dim(cur, d, rp, sz[d], 1, &next);
    if (s == CELL_OK) {
      cell_tensor_release(cur);
      cur = next;
    }
  }
  if (s == CELL_OK) {
    s = cell_k_reshape(cur, n->in[0].ndim, n->in[0].shape, &next);
    cell_tensor_release(cur);
    cur = s == CELL_OK ? next : NULL;
  }
  return cell_ag_give(n, 0, s, cur, gin);
}

cell_status cell_op_tile(const cell_tensor *a, int nreps, const int64_t *reps, cell_tensor **out) {
  if (!wants1(a)) return cell_k_tile(a, nreps, reps, out);
  cell_status s = CELL_AG_RAW(cell_k_tile(a, nreps, reps, out));
  if (s != CELL_OK) return s;
  return cell_ag_finish(node1("TileBackward", tile_backward, a, 0, 0), s, out);
}

/* Element i of the input became elements [i * repeats, (i + 1) * repeats)
 * along dim. */
typedef struct {
  int dim;
  int64_t repeats;
} repeat_args;

static cell_status repeat_interleave_backward(cell_node *n, const cell_tensor *g,
                                              cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int dim = CELL_AG_ARGS(n, repeat_args)->dim;
  int64_t size = n->in[0].ndim ? n->in[0].shape[dim] : 1;
  cell_tensor *r = NULL, *t = NULL;
  cell_status s = fold_dim(g, dim, size, CELL_AG_ARGS(n, repeat_args)->repeats, 0, &r);
  if (s == CELL_OK) s = cell_k_reshape(r, n->in[0].ndim, n->in[0].shape, &t);
  cell_tensor_release(r);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim,
                                      cell_tensor **out) {
  if (!wants1(a)) return cell_k_repeat_interleave(a, repeats, dim, out);
  cell_status s = CELL_AG_RAW(cell_k_repeat_interleave(a, repeats, dim, out));
  if (s != CELL_OK) return s;
  cell_node *n = node1("RepeatInterleaveBackward", repeat_interleave_backward, a, 0, sizeof(repeat_args));
  if (n) *CELL_AG_ARGS(n, repeat_args) = (repeat_args){dim, repeats};
  return cell_ag_finish(n, s, out);
}

/* --- pad ------------------------------------------------------------------------ */

/* args: the padding before each dim (int64_t[ndim]; negative crops). The
 * input's surviving part, at [lo - before, hi - before) of the input and
 * [lo, hi) of g, gets g there; cropped-away parts get 0. */
static cell_status pad_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const int64_t *before = CELL_AG_ARGS(n, int64_t);
  int nd = n->in[0].ndim;
  const int64_t *in_shape = n->in[0].shape;
  if (n->twice && cell_grad_is_enabled()) { /* no pad negative: g cut back, recording */
    cell_tensor *t = (cell_tensor *)g, *u = NULL;
    cell_tensor_retain(t);
    cell_status s = CELL_OK;
    for (int d = 0; d < nd && s == CELL_OK; d++) {
      if (before[d] == 0 && in_shape[d] == t->shape[d]) continue;
      s = cell_tensor_narrow(t, d, before[d], in_shape[d], &u);
      cell_tensor_release(t);
      t = s == CELL_OK ? u : NULL;
    }
    return cell_ag_give(n, 0, s, t, gin);
  }
  int64_t sh[CELL_MAX_DIMS], glo[CELL_MAX_DIMS], alo[CELL_MAX_DIMS];
  bool whole = true, empty = false;
  for (int d = 0; d < nd; d++) {
    int64_t lo = before[d] > 0 ? before[d] : 0, hi = before[d] + in_shape[d];
    if (hi > g->shape[d]) hi = g->shape[d];
    if (hi <= lo) {
      empty = true;
      hi = lo;
    }
    sh[d] = hi - lo;
    glo[d] = lo;
    alo[d] = lo - before[d];
    if (alo[d] != 0 || sh[d] != in_shape[d]) whole = false;
  }
  int64_t goff = g->offset;
  for (int d = 0; d < nd; d++) goff += glo[d] * g->stride[d];
  cell_tensor *gv = NULL, *z = NULL, *zv = NULL;
  cell_status s = CELL_OK;
  if (!empty) s = cell_tensor_new_view(g, nd, sh, g->stride, goff, &gv);
  if (s == CELL_OK && whole && !empty) return cell_ag_give(n, 0, s, gv, gin);
  if (s == CELL_OK) s = zeros(g->dtype, nd, in_shape, &z);
  if (s == CELL_OK && !empty) {
    int64_t zoff = z->offset;
    for (int d = 0; d < nd; d++) zoff += alo[d] * z->stride[d];
    s = cell_tensor_new_view(z, nd, sh, z->stride, zoff, &zv);
    if (s == CELL_OK) s = cell_k_copy_(zv, gv);
  }
  cell_tensor_release(zv);
  cell_tensor_release(gv);
  return cell_ag_give(n, 0, s, z, gin);
}

cell_status cell_op_pad(const cell_tensor *a, int npairs, const int64_t *pads, double value,
                        cell_tensor **out) {
  if (!wants1(a)) return cell_k_pad(a, npairs, pads, value, out);
  cell_status s = CELL_AG_RAW(cell_k_pad(a, npairs, pads, value, out));
  if (s != CELL_OK) return s;
  cell_node *n = node1("PadBackward", pad_backward, a, 0, sizeof(int64_t) * (size_t)a->ndim);
  if (n) {
    n->twice = true; /* when no pad is negative */
    for (int i = 0; i < npairs; i++) {
      CELL_AG_ARGS(n, int64_t)[a->ndim - 1 - i] = pads[2 * i];
      if (pads[2 * i] < 0 || pads[2 * i + 1] < 0) n->twice = false;
    }
  }
  return cell_ag_finish(n, s, out);
}

int cell_ag_shape_nodes(const char **names, int max) {
  static const char *const all[] = {"AstypeBackward", "CatBackward", "CloneBackward", "ContiguousBackward", "ExpandBackward", "FlattenBackward", "GatherBackward", "IndexSelectBackward", "NarrowBackward", "PadBackward", "PermuteBackward", "RepeatInterleaveBackward", "ReshapeBackward", "ScatterBackward", "SelectBackward", "SliceBackward", "SqueezeBackward", "StackBackward", "TileBackward", "TransposeBackward", "UnsqueezeBackward", "ViewBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}
