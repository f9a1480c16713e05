/* gpu_index.c - the GPU table's selection and indexing rows: where and
 * masked_fill (any dtypes, promoted as the CPU does, broadcasting), pad
 * (constant, negative pads crop), cat and stack (any dtypes, promoted),
 * index_select, gather, scatter and
 * scatter_add_ (any layout; scatter_add_ on float32, float64, int32 and
 * int64), with src/ops's checks and messages. The CUDA side is
 * gpu_index.cu. An index out of range is found by the kernel, which skips
 * it and flags its position; the host reads the flag (one small read, so
 * these ops wait for the stream) and raises the CPU's IndexError naming
 * the value. scatter_add_ checks every index before adding any, so a bad
 * index leaves its target untouched. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *stream_of(const cell_tensor *t) { return gpu_ctx_of(t)->stream; }

static cell_status finish(cell_status s, cell_tensor *r, cell_tensor **out) {
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* The broadcast shape of two shapes (the CPU's ValueError when they do not). */
static cell_status bshape(const char *op, int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                          int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      char ba[256], bb[256];
      return cell_error(CELL_ERR_VALUE, "%s: shapes %s and %s cannot be broadcast", op,
                        cell_shape_str(na, a, ba, sizeof ba), cell_shape_str(nb, b, bb, sizeof bb));
    }
    out[i] = sa == 1 ? sb : sa;
  }
  *nout = n;
  return CELL_OK;
}

/* t laid out over shape (right-aligned, stride 0 where it broadcasts) as a
 * contiguous tensor of dt: t itself (retained) when it is one already. */
cell_status gpu_spread(const cell_tensor *t, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  int same = t->ndim == ndim && t->dtype == dt && gpu_is_contig(t);
  for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
  if (same) {
    cell_tensor_retain((cell_tensor *)t);
    *out = (cell_tensor *)t;
    return CELL_OK;
  }
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    int k = d - (ndim - t->ndim);
    L.shape[d] = shape[d];
    L.stride[d] = k < 0 || t->shape[k] == 1 ? 0 : t->stride[k];
  }
  cell_tensor *o;
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(t), dt, ndim, shape, &o));
  cell_status s = gpu_launch(gpuk_copy_cast(stream_of(t), L, (int)t->dtype, gpu_data(t), (int)dt, gpu_data(o),
                                            gpu_numel(o)),
                             "broadcast");
  return finish(s, o, out);
}

/* --- where, masked_fill ------------------------------------------------------------ */

/* out = cond ? a : b, a (n_a 1: one value) and b of dtype dt already spread
 * over cond's shape. */
static cell_status select3(const char *op, const cell_tensor *cond, const cell_tensor *a, int64_t a_step,
                           const cell_tensor *b, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(cond), b->dtype, cond->ndim, cond->shape, &r));
  cell_status s = gpu_launch(gpuk_where(stream_of(cond), (int)cell_dtype_size(b->dtype), gpu_data(cond), gpu_data(a),
                                        a_step, gpu_data(b), gpu_data(r), gpu_numel(r)),
                             op);
  return finish(s, r, out);
}

cell_status gpu_where(const cell_tensor *cond, const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (cond->dtype != CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "where: the condition must be a Bool tensor, got %s",
                      cell_dtype_name(cond->dtype));
  int n1, n2;
  int64_t s1[CELL_MAX_DIMS], s2[CELL_MAX_DIMS];
  CELL_TRY(bshape("where", cond->ndim, cond->shape, a->ndim, a->shape, &n1, s1));
  CELL_TRY(bshape("where", n1, s1, b->ndim, b->shape, &n2, s2));
  cell_dtype dt = cell_dtype_promote(a->dtype, b->dtype);
  if (!gpu_dtype_copyable(dt))
    return cell_error(CELL_ERR_NOTIMPL, "where of %s is not supported on device GPU", cell_dtype_name(dt));
  cell_tensor *t[3] = {NULL, NULL, NULL};
  cell_status s = gpu_spread(cond, CELL_DTYPE_BOOL, n2, s2, &t[0]);
  if (s == CELL_OK) s = gpu_spread(a, dt, n2, s2, &t[1]);
  if (s == CELL_OK) s = gpu_spread(b, dt, n2, s2, &t[2]);
  if (s == CELL_OK) s = select3("where", t[0], t[1], 1, t[2], out);
  gpu_release_all(t, 3);
  return s;
}

cell_status gpu_masked_fill(const cell_tensor *a, const cell_tensor *mask, double value, cell_tensor **out) {
  if (mask->dtype != CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "masked_fill: the mask must be a Bool tensor, got %s",
                      cell_dtype_name(mask->dtype));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(bshape("where", mask->ndim, mask->shape, a->ndim, a->shape, &nd, shape));
  gpu_ctx *g = gpu_ctx_of(a);
  /* The value as one element of a's dtype, converted on the device from
   * float64 as astype converts (float16 and bfloat16 included). */
  cell_tensor *t[4] = {NULL, NULL, NULL, NULL}; /* value (f64), value (dt), mask, a */
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, 0, NULL, &t[0]);
  if (s == CELL_OK) s = gpu_fill(g, gpu_data(t[0]), 8, &value, 8);
  if (s == CELL_OK) s = gpu_contig_as(t[0], a->dtype, &t[1]);
  if (s == CELL_OK) s = gpu_spread(mask, CELL_DTYPE_BOOL, nd, shape, &t[2]);
  if (s == CELL_OK) s = gpu_spread(a, a->dtype, nd, shape, &t[3]);
  if (s == CELL_OK) s = select3("masked_fill", t[2], t[1], 0, t[3], out);
  gpu_release_all(t, 4);
  return s;
}

/* --- pad -------------------------------------------------------------------------- */

cell_status gpu_pad(const cell_tensor *a, int npairs, const int64_t *pads, double value, cell_tensor **out) {
  if (npairs > 0 && !pads) return cell_error(CELL_ERR_VALUE, "pad: NULL argument");
  if (npairs < 0 || npairs > a->ndim)
    return cell_error(CELL_ERR_VALUE, "pad: %d (before, after) pairs for a %d-D tensor; at most one pair per dimension",
                      npairs, a->ndim);
  int nd = a->ndim;
  gpuk_pad_args P;
  memset(&P, 0, sizeof P);
  P.ndim = nd;
  for (int d = 0; d < nd; d++) P.out[d] = a->shape[d];
  for (int i = 0; i < npairs; i++) {
    int d = nd - 1 - i;
    char b[256];
    __int128 wide = (__int128)a->shape[d] + pads[2 * i] + pads[2 * i + 1]; /* pads may be negative (crops) */
    if (wide > INT64_MAX / 2)
      return cell_error(CELL_ERR_VALUE, "pad: padding (%lld, %lld) of a size %lld in shape %s gives a size too large",
                        (long long)pads[2 * i], (long long)pads[2 * i + 1], (long long)a->shape[d],
                        cell_shape_str(nd, a->shape, b, sizeof b));
    if (wide < 0)
      return cell_error(CELL_ERR_VALUE,
                        "pad: padding (%lld, %lld) of a dimension of size %lld in shape %s gives the negative size %lld",
                        (long long)pads[2 * i], (long long)pads[2 * i + 1], (long long)a->shape[d],
                        cell_shape_str(nd, a->shape, b, sizeof b), (long long)(wide < INT64_MIN ? INT64_MIN : wide));
    P.before[d] = pads[2 * i];
    P.out[d] = (int64_t)wide;
  }
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = nd;
  for (int d = 0; d < nd; d++) {
    L.shape[d] = a->shape[d];
    L.stride[d] = a->stride[d];
  }
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *t[3] = {NULL, NULL, NULL}; /* value (f64), value (a's dtype), result */
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, 0, NULL, &t[0]);
  if (s == CELL_OK) s = gpu_fill(g, gpu_data(t[0]), 8, &value, 8);
  if (s == CELL_OK) s = gpu_contig_as(t[0], a->dtype, &t[1]);
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, nd, P.out, &t[2]);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_pad(g->stream, (int)cell_dtype_size(a->dtype), L, P, gpu_data(a), gpu_data(t[1]),
                            gpu_data(t[2]), gpu_numel(t[2])),
                   "pad");
  if (s == CELL_OK) {
    *out = t[2];
    t[2] = NULL;
  }
  gpu_release_all(t, 3);
  return s;
}

/* --- cat, stack --------------------------------------------------------------------- */

static cell_status check_list(const char *op, int n, cell_tensor *const *ts) {
  if (n <= 0 || !ts) return cell_error(CELL_ERR_VALUE, "%s: expected a non-empty list of tensors", op);
  for (int i = 0; i < n; i++)
    if (!ts[i]) return cell_error(CELL_ERR_VALUE, "%s: tensor %d is NULL", op, i);
  return CELL_OK;
}

static cell_dtype promote_all(int n, cell_tensor *const *ts) {
  cell_dtype dt = ts[0]->dtype;
  for (int i = 1; i < n; i++) dt = cell_dtype_promote(dt, ts[i]->dtype);
  return dt;
}

/* The product of shape[from..to). */
static int64_t span(const int64_t *shape, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++) p *= shape[d];
  return p;
}

/* Each ts[i] (as dtype r's) into r at its block of the middle dimension of
 * (outer, total, inner): sizes[i] wide, one after another. */
static cell_status place_all(const char *op, int n, cell_tensor *const *ts, const int64_t *sizes, cell_tensor *r,
                             int64_t outer, int64_t total, int64_t inner) {
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    cell_tensor *c;
    CELL_TRY(gpu_contig_as(ts[i], r->dtype, &c));
    cell_status s = gpu_launch(gpuk_place(stream_of(r), (int)cell_dtype_size(r->dtype), gpu_data(c), gpu_data(r),
                                          outer, sizes[i], inner, total, at),
                               op);
    cell_tensor_release(c);
    CELL_TRY(s);
    at += sizes[i];
  }
  return CELL_OK;
}

cell_status gpu_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  CELL_TRY(check_list("cat", n, ts));
  const cell_tensor *t0 = ts[0];
  int nd = t0->ndim;
  char b0[256], b1[256];
  for (int i = 0; i < n; i++)
    if (ts[i]->ndim == 0)
      return cell_error(CELL_ERR_VALUE, "cat: zero-dimensional tensor (at position %d) cannot be concatenated", i);
  if (dim < 0 || dim >= nd)
    return cell_error(CELL_ERR_INDEX, "cat: dimension %d out of range for a %d-D tensor", dim, nd);
  int64_t shape[CELL_MAX_DIMS], total = 0;
  memcpy(shape, t0->shape, sizeof(int64_t) * (size_t)nd);
  int64_t *sizes = malloc(sizeof(int64_t) * (size_t)n);
  if (!sizes) return cell_error(CELL_ERR_MEMORY, "cat: out of host memory for %d tensors", n);
  for (int i = 0; i < n; i++) {
    const cell_tensor *t = ts[i];
    int ok = t->ndim == nd;
    for (int d = 0; ok && d < nd; d++)
      if (d != dim && t->shape[d] != shape[d]) ok = 0;
    if (!ok || t->shape[dim] > INT64_MAX / 2 - total) {
      free(sizes);
      if (ok)
        return cell_error(CELL_ERR_VALUE, "cat: concatenating shapes %s and %s (and the rest) gives a size too large",
                          cell_shape_str(nd, t0->shape, b0, sizeof b0), cell_shape_str(t->ndim, t->shape, b1, sizeof b1));
      return cell_error(CELL_ERR_VALUE,
                        "cat: tensors must have the same number of dimensions and the same sizes outside the "
                        "concatenation dimension, got shapes %s and %s",
                        cell_shape_str(nd, t0->shape, b0, sizeof b0), cell_shape_str(t->ndim, t->shape, b1, sizeof b1));
    }
    sizes[i] = t->shape[dim];
    total += t->shape[dim];
  }
  shape[dim] = total;
  cell_dtype dt = promote_all(n, ts);
  cell_tensor *r = NULL;
  cell_status s = gpu_dtype_copyable(dt) ? gpu_new_tensor(gpu_ctx_of(t0), dt, nd, shape, &r)
                                         : cell_error(CELL_ERR_NOTIMPL, "cat of %s is not supported on device GPU",
                                                      cell_dtype_name(dt));
  if (s == CELL_OK) s = place_all("cat", n, ts, sizes, r, span(shape, 0, dim), total, span(shape, dim + 1, nd));
  free(sizes);
  return finish(s, r, out);
}

cell_status gpu_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  CELL_TRY(check_list("stack", n, ts));
  const cell_tensor *t0 = ts[0];
  int nd = t0->ndim;
  if (dim < 0 || dim > nd)
    return cell_error(CELL_ERR_INDEX, "stack: dimension %d out of range for stacking %d-D tensors (0 to %d)", dim, nd,
                      nd);
  if (nd + 1 > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "stack: a tensor has at most %d dimensions, got %d", CELL_MAX_DIMS, nd + 1);
  for (int i = 1; i < n; i++) {
    int same = ts[i]->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = ts[i]->shape[d] == t0->shape[d];
    if (!same) {
      char b0[256], b1[256];
      return cell_error(CELL_ERR_VALUE, "stack: expects tensors of the same shape, got %s and %s (at position %d)",
                        cell_shape_str(nd, t0->shape, b0, sizeof b0),
                        cell_shape_str(ts[i]->ndim, ts[i]->shape, b1, sizeof b1), i);
    }
  }
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0, k = 0; d <= nd; d++) shape[d] = d == dim ? n : t0->shape[k++];
  cell_dtype dt = promote_all(n, ts);
  if (!gpu_dtype_copyable(dt))
    return cell_error(CELL_ERR_NOTIMPL, "stack of %s is not supported on device GPU", cell_dtype_name(dt));
  int64_t *ones = malloc(sizeof(int64_t) * (size_t)n);
  if (!ones) return cell_error(CELL_ERR_MEMORY, "stack: out of host memory for %d tensors", n);
  for (int i = 0; i < n; i++) ones[i] = 1;
  cell_tensor *r = NULL;
  cell_status s = gpu_new_tensor(gpu_ctx_of(t0), dt, nd + 1, shape, &r);
  if (s == CELL_OK) s = place_all("stack", n, ts, ones, r, span(shape, 0, dim), n, span(shape, dim + 1, nd + 1));
  free(ones);
  return finish(s, r, out);
}

/* --- index_select, gather, scatter, scatter_add_ ------------------------------------ */

static cell_status check_dim(const char *op, int dim, int ndim) {
  if (dim < 0 || dim >= (ndim ? ndim : 1))
    return cell_error(CELL_ERR_INDEX, "%s: dimension %d out of range for a %d-D tensor", op, dim, ndim);
  return CELL_OK;
}

static int is_int_dtype(cell_dtype d) {
  return d == CELL_DTYPE_I8 || d == CELL_DTYPE_U8 || d == CELL_DTYPE_I16 || d == CELL_DTYPE_I32 ||
         d == CELL_DTYPE_I64;
}

static cell_status check_index_dtype(const char *op, const cell_tensor *index) {
  if (!is_int_dtype(index->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: the index must be an integer tensor (Int8, UInt8, Int32 or Int64), got %s",
                      op, cell_dtype_name(index->dtype));
  return CELL_OK;
}

/* index fits t in every dimension (but dim when skip_dim): shape.c's check. */
static cell_status check_fits(const char *op, const cell_tensor *index, const cell_tensor *t, const char *what,
                              int dim, int skip_dim) {
  char bi[256], bt[256];
  if (index->ndim != t->ndim)
    return cell_error(CELL_ERR_VALUE, "%s: the index (shape %s) must have as many dimensions as the %s (shape %s)", op,
                      cell_shape_str(index->ndim, index->shape, bi, sizeof bi), what,
                      cell_shape_str(t->ndim, t->shape, bt, sizeof bt));
  for (int d = 0; d < t->ndim; d++)
    if ((!skip_dim || d != dim) && index->shape[d] > t->shape[d])
      return cell_error(CELL_ERR_VALUE, "%s: the index of shape %s is larger than the %s of shape %s in dimension %d",
                        op, cell_shape_str(index->ndim, index->shape, bi, sizeof bi), what,
                        cell_shape_str(t->ndim, t->shape, bt, sizeof bt), d);
  return CELL_OK;
}

/* A one-element flag on g for the kernels' first bad position (all ones). */
static cell_status new_flag(gpu_ctx *g, cell_tensor **flag) {
  static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  int64_t one = 1;
  CELL_TRY(gpu_new_tensor(g, CELL_DTYPE_I64, 1, &one, flag));
  cell_status s = gpu_fill(g, gpu_data(*flag), 8, ones, 8);
  if (s != CELL_OK) cell_tensor_release(*flag);
  return s;
}

/* The flag read back (waits for the stream): the IndexError of the first
 * index out of range in idx (int64, contiguous), shape.c's message. */
static cell_status read_flag(const char *op, gpu_ctx *g, const cell_tensor *flag, const cell_tensor *idx,
                             int64_t size, int64_t base) {
  unsigned long long bad = ~0ull;
  CELL_TRY(gpu_copy_d2h(g, &bad, gpu_data(flag), 8));
  if (bad == ~0ull || bad == 0) return CELL_OK;
  long long v = 0;
  CELL_TRY(gpu_copy_d2h(g, &v, (char *)gpu_data(idx) + (bad - 1) * 8, 8));
  return cell_error(CELL_ERR_INDEX, "%s: index %lld is out of range for a dimension of size %lld (indices count from %lld)",
                    op, v, (long long)size, (long long)base);
}

cell_status gpu_index_select(const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base,
                             cell_tensor **out) {
  CELL_TRY(check_dim("index_select", dim, a->ndim));
  CELL_TRY(check_index_dtype("index_select", index));
  if (index->ndim > 1) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "index_select: the index must be 0-D or 1-D, got shape %s",
                      cell_shape_str(index->ndim, index->shape, b, sizeof b));
  }
  int64_t k = gpu_numel(index);
  if (a->ndim == 0 && k != 1)
    return cell_error(CELL_ERR_VALUE, "index_select: the index into a 0-D tensor must have one element, got %lld",
                      (long long)k);
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) shape[d] = d == dim ? k : a->shape[d];
  int64_t size = a->ndim ? a->shape[dim] : 1;
  int64_t outer = a->ndim ? span(a->shape, 0, dim) : 1, inner = a->ndim ? span(a->shape, dim + 1, a->ndim) : 1;
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *t[3] = {NULL, NULL, NULL}, *r = NULL; /* a, index (int64), flag */
  cell_status s = gpu_contiguous(a, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(index, CELL_DTYPE_I64, &t[1]);
  if (s == CELL_OK) s = new_flag(g, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, a->ndim, shape, &r);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_index_select(g->stream, (int)cell_dtype_size(a->dtype), gpu_data(t[0]), gpu_data(t[1]),
                                     gpu_data(r), outer, size, inner, k, (long long)index_base, gpu_data(t[2])),
                   "index_select");
  if (s == CELL_OK) s = read_flag("index_select", g, t[2], t[1], size, index_base);
  gpu_release_all(t, 3);
  return finish(s, r, out);
}

/* The walk of gpuk_index_walk over index (its shape) into tgt (its
 * strides) with lin (its strides), then the flag. */
static cell_status walk(const char *op, int mode, const cell_tensor *index, int dim, int64_t base,
                        const cell_tensor *lin, cell_tensor *tgt) {
  gpu_ctx *g = gpu_ctx_of(tgt);
  gpuk_layout L, ls;
  memset(&L, 0, sizeof L);
  memset(&ls, 0, sizeof ls);
  L.ndim = ls.ndim = index->ndim;
  for (int d = 0; d < index->ndim; d++) {
    L.shape[d] = ls.shape[d] = index->shape[d];
    L.stride[d] = tgt->stride[d];
    ls.stride[d] = lin->stride[d];
  }
  int64_t tsize = tgt->ndim ? tgt->shape[dim] : 1, tstride = tgt->ndim ? tgt->stride[dim] : 0;
  cell_tensor *t[2] = {NULL, NULL}; /* index (int64), flag */
  cell_status s = gpu_contig_as(index, CELL_DTYPE_I64, &t[0]);
  if (s == CELL_OK) s = new_flag(g, &t[1]);
  if (s == CELL_OK && mode == 2) { /* every index checked before any is added */
    s = gpu_launch(gpuk_index_walk(g->stream, 3, (int)tgt->dtype, (int)cell_dtype_size(tgt->dtype), gpu_data(t[0]), L,
                                   ls, dim, tsize, tstride, (long long)base, gpu_data(lin), gpu_data(tgt),
                                   gpu_numel(index), gpu_data(t[1])),
                   op);
    if (s == CELL_OK) s = read_flag(op, g, t[1], t[0], tsize, base);
  }
  if (s == CELL_OK)
    s = gpu_launch(gpuk_index_walk(g->stream, mode, (int)tgt->dtype, (int)cell_dtype_size(tgt->dtype), gpu_data(t[0]),
                                   L, ls, dim, tsize, tstride, (long long)base, gpu_data(lin), gpu_data(tgt),
                                   gpu_numel(index), gpu_data(t[1])),
                   op);
  if (s == CELL_OK && mode != 2) s = read_flag(op, g, t[1], t[0], tsize, base);
  gpu_release_all(t, 2);
  return s;
}

cell_status gpu_gather(const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base, cell_tensor **out) {
  CELL_TRY(check_dim("gather", dim, a->ndim));
  CELL_TRY(check_index_dtype("gather", index));
  CELL_TRY(check_fits("gather", index, a, "input", dim, 1));
  cell_tensor *r;
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(a), a->dtype, index->ndim, index->shape, &r));
  return finish(walk("gather", 0, index, dim, index_base, r, (cell_tensor *)a), r, out);
}

cell_status gpu_scatter(const cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src,
                        int64_t index_base, cell_tensor **out) {
  CELL_TRY(check_dim("scatter", dim, a->ndim));
  CELL_TRY(check_index_dtype("scatter", index));
  CELL_TRY(check_fits("scatter", index, a, "input", dim, 1));
  CELL_TRY(check_fits("scatter", index, src, "source", dim, 0));
  cell_tensor *cs = NULL, *r = NULL;
  cell_status s = src->dtype == a->dtype ? (cell_tensor_retain((cell_tensor *)src), cs = (cell_tensor *)src, CELL_OK)
                                         : gpu_contig_as(src, a->dtype, &cs);
  if (s == CELL_OK) s = gpu_clone(a, &r);
  if (s == CELL_OK) s = walk("scatter", 1, index, dim, index_base, cs, r);
  if (cs) cell_tensor_release(cs);
  return finish(s, r, out);
}

cell_status gpu_scatter_add_(cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src,
                             int64_t index_base) {
  CELL_TRY(check_dim("scatter_add_", dim, a->ndim));
  CELL_TRY(check_index_dtype("scatter_add_", index));
  CELL_TRY(check_fits("scatter_add_", index, a, "input", dim, 1));
  CELL_TRY(check_fits("scatter_add_", index, src, "source", dim, 0));
  if (a->dtype != CELL_DTYPE_F32 && a->dtype != CELL_DTYPE_F64 && a->dtype != CELL_DTYPE_I32 &&
      a->dtype != CELL_DTYPE_I64)
    return cell_error(CELL_ERR_NOTIMPL, "scatter_add_ into %s is not supported on device GPU",
                      cell_dtype_name(a->dtype));
  cell_tensor *cs = NULL;
  cell_status s = src->dtype == a->dtype ? (cell_tensor_retain((cell_tensor *)src), cs = (cell_tensor *)src, CELL_OK)
                                         : gpu_contig_as(src, a->dtype, &cs);
  if (s == CELL_OK) {
    cell_tensor_bump(a);
    s = walk("scatter_add_", 2, index, dim, index_base, cs, a);
  }
  if (cs) cell_tensor_release(cs);
  return s;
}
