/* gpu_nn.c - the GPU table's kernels beyond gemm and contiguous
 * elementwise: strided copies and casts (contiguous, clone, astype),
 * reductions (sum, mean, prod, max, min over any dims; max / min with
 * indices; argmax / argmin), softmax and log-softmax with their backward,
 * layer norm forward and backward, embedding forward and backward,
 * dropout (the CPU's Philox stream, so the GPU's mask is the CPU's) and
 * the fused SGD / Momentum and Adam / AdamW steps. The CUDA side is
 * gpu_nn.cu (through gpu_kern.h). Strided inputs are first gathered into
 * a contiguous copy (one copy_cast launch), so every kernel runs on
 * contiguous rows. gpu_table.c registers these rows and answers
 * supports_op for them. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include "../core/rng.h"
#include <math.h>
#include <string.h>

_Static_assert((int)GPUK_F32 == (int)CELL_DTYPE_F32 && (int)GPUK_F64 == (int)CELL_DTYPE_F64 &&
                   (int)GPUK_F16 == (int)CELL_DTYPE_F16 && (int)GPUK_BF16 == (int)CELL_DTYPE_BF16 &&
                   (int)GPUK_I8 == (int)CELL_DTYPE_I8 && (int)GPUK_U8 == (int)CELL_DTYPE_U8 &&
                   (int)GPUK_I32 == (int)CELL_DTYPE_I32 && (int)GPUK_I64 == (int)CELL_DTYPE_I64 &&
                   (int)GPUK_BOOL == (int)CELL_DTYPE_BOOL && (int)GPUK_I16 == (int)CELL_DTYPE_I16,
               "gpu_kern.h's dtype codes are cell_dtype's");
_Static_assert((int)GPUK_RED_SUM == (int)CELL_RED_SUM && (int)GPUK_RED_MEAN == (int)CELL_RED_MEAN &&
                   (int)GPUK_RED_PROD == (int)CELL_RED_PROD && (int)GPUK_RED_MAX == (int)CELL_RED_MAX &&
                   (int)GPUK_RED_MIN == (int)CELL_RED_MIN,
               "gpu_kern.h's reduction codes are cell_redop's");
_Static_assert(GPUK_MAX_DIMS >= CELL_MAX_DIMS, "a gpuk_layout holds every tensor's dimensions");

static void *stream_of(const cell_tensor *t) { return gpu_ctx_of(t)->stream; }

int gpu_dtype_copyable(cell_dtype dt) { return dt >= CELL_DTYPE_F32 && dt <= CELL_DTYPE_I16; }

/* A contiguous copy of t (any layout) as dtype dt. */
static cell_status gather(const cell_tensor *t, cell_dtype dt, int ndim, const int64_t *shape,
                          const int64_t *stride, cell_tensor **out) {
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    L.shape[d] = shape[d];
    L.stride[d] = stride[d];
  }
  cell_tensor *o;
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(t), dt, ndim, shape, &o));
  cell_status s = gpu_launch(gpuk_copy_cast(stream_of(t), L, (int)t->dtype, gpu_data(t), (int)dt, gpu_data(o),
                                            gpu_numel(o)),
                             "copy");
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

/* t as a contiguous tensor of dtype dt: t itself (retained) when it is one. */
static cell_status contig_as(const cell_tensor *t, cell_dtype dt, cell_tensor **out) {
  if (t->dtype == dt && gpu_is_contig(t)) {
    cell_tensor_retain((cell_tensor *)t);
    *out = (cell_tensor *)t;
    return CELL_OK;
  }
  return gather(t, dt, t->ndim, t->shape, t->stride, out);
}

cell_status gpu_contiguous(const cell_tensor *t, cell_tensor **out) { return contig_as(t, t->dtype, out); }

cell_status gpu_contig_as(const cell_tensor *t, cell_dtype dt, cell_tensor **out) { return contig_as(t, dt, out); }

cell_status gpu_clone(const cell_tensor *t, cell_tensor **out) {
  return gather(t, t->dtype, t->ndim, t->shape, t->stride, out);
}

cell_status gpu_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out) {
  if (!gpu_dtype_copyable(dt))
    return cell_error(CELL_ERR_NOTIMPL, "astype to %s is not supported on device GPU", cell_dtype_name(dt));
  return gather(t, dt, t->ndim, t->shape, t->stride, out);
}

/* --- reductions ----------------------------------------------------------------------- */

/* red[] from a list of 0-based dims (none: all). */
static cell_status mark_dims(const char *op, const cell_tensor *a, int ndims, const int *dims, int *red) {
  for (int d = 0; d < CELL_MAX_DIMS; d++) red[d] = ndims == 0;
  if (ndims < 0 || (ndims > 0 && !dims))
    return cell_error(CELL_ERR_VALUE, "%s: bad list of dimensions", op);
  for (int k = 0; k < ndims; k++) {
    if (dims[k] < 0 || dims[k] >= (a->ndim ? a->ndim : 1))
      return cell_error(CELL_ERR_INDEX, "%s: dimension %d out of range for a tensor of %d dimensions", op,
                        dims[k], a->ndim);
    if (red[dims[k]])
      return cell_error(CELL_ERR_VALUE, "%s: dimension %d appears more than once in the list of dimensions", op,
                        dims[k]);
    red[dims[k]] = 1;
  }
  return CELL_OK;
}

/* a gathered with its kept dims first and its reduced dims last:
 * (outer = kept elements, r = reduced elements, inner 1); the result's
 * shape into shape / *ndim. */
static cell_status to_rows(const cell_tensor *a, cell_dtype dt, const int *red, int keepdim, cell_tensor **rows,
                           int64_t *outer, int64_t *r, int *ndim, int64_t *shape) {
  int64_t pshape[CELL_MAX_DIMS], pstride[CELL_MAX_DIMS];
  int n = 0, nd = 0;
  *outer = 1;
  *r = 1;
  for (int d = 0; d < a->ndim; d++)
    if (!red[d]) {
      pshape[n] = a->shape[d];
      pstride[n++] = a->stride[d];
      *outer *= a->shape[d];
      shape[nd++] = a->shape[d];
    } else if (keepdim) {
      shape[nd++] = 1;
    }
  for (int d = 0; d < a->ndim; d++)
    if (red[d]) {
      pshape[n] = a->shape[d];
      pstride[n++] = a->stride[d];
      *r *= a->shape[d];
    }
  *ndim = nd;
  return gather(a, dt, n, pshape, pstride, rows);
}

cell_status gpu_rows(const char *op, const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_dtype dt,
                     cell_tensor **rows, int64_t *outer, int64_t *r, int *ndim, int64_t *shape) {
  int red[CELL_MAX_DIMS];
  CELL_TRY(mark_dims(op, a, ndims, dims, red));
  return to_rows(a, dt, red, keepdim, rows, outer, r, ndim, shape);
}

cell_status gpu_reduce(cell_redop op, const cell_tensor *a, int ndims, const int *dims, int keepdim,
                       cell_tensor **out) {
  if (op > CELL_RED_MIN)
    return cell_error(CELL_ERR_NOTIMPL, "this reduction (%d) is not supported on device GPU", (int)op);
  const char *name = op == CELL_RED_SUM    ? "sum"
                     : op == CELL_RED_MEAN ? "mean"
                     : op == CELL_RED_PROD ? "prod"
                     : op == CELL_RED_MAX  ? "max"
                                           : "min";
  int red[CELL_MAX_DIMS], nd;
  CELL_TRY(mark_dims(name, a, ndims, dims, red));
  cell_tensor *rows, *o = NULL;
  int64_t outer, r, shape[CELL_MAX_DIMS];
  /* bool and integers: the sum only, as int64 (the CPU's promotion),
   * accumulated in double: exact below 2^53 (int64 inputs are declined). */
  /* float16 / bfloat16: every reduction in float64, the result rounded
   * back once. */
  int half = a->dtype == CELL_DTYPE_F16 || a->dtype == CELL_DTYPE_BF16;
  int ints = a->dtype != CELL_DTYPE_F32 && a->dtype != CELL_DTYPE_F64 && !half;
  if (ints && (op != CELL_RED_SUM || a->dtype == CELL_DTYPE_I64 || !gpu_dtype_copyable(a->dtype)))
    return cell_error(CELL_ERR_NOTIMPL, "%s of %s is not supported on device GPU", name, cell_dtype_name(a->dtype));
  cell_dtype ct = ints || half ? CELL_DTYPE_F64 : a->dtype;
  CELL_TRY(to_rows(a, ct, red, keepdim, &rows, &outer, &r, &nd, shape));
  if (r == 0 && (op == CELL_RED_MAX || op == CELL_RED_MIN)) {
    cell_tensor_release(rows);
    return cell_error(CELL_ERR_VALUE, "%s: cannot reduce over an empty dimension (no identity)", name);
  }
  cell_status s = gpu_new_tensor(gpu_ctx_of(a), ct, nd, shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_reduce(stream_of(a), (int)ct, (int)op, gpu_data(rows), gpu_data(o), outer, r, 1), name);
  cell_tensor_release(rows);
  if (s == CELL_OK && (ints || half)) { /* the float64 sums as int64, or as the half dtype */
    cell_tensor *o64;
    s = gather(o, ints ? CELL_DTYPE_I64 : a->dtype, o->ndim, o->shape, o->stride, &o64);
    cell_tensor_release(o);
    o = s == CELL_OK ? o64 : NULL;
  }
  if (s != CELL_OK) {
    if (o) cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

static cell_status arg_extreme(const char *name, const cell_tensor *a, const int *red, int keepdim, int is_min,
                               int64_t base, cell_tensor **values, cell_tensor **indices) {
  cell_tensor *rows, *v = NULL, *ix = NULL;
  int64_t outer, r, shape[CELL_MAX_DIMS];
  int nd;
  CELL_TRY(to_rows(a, a->dtype, red, keepdim, &rows, &outer, &r, &nd, shape));
  if (r == 0) {
    cell_tensor_release(rows);
    return cell_error(CELL_ERR_VALUE, "%s: cannot reduce over an empty dimension", name);
  }
  cell_status s = CELL_OK;
  if (values) s = gpu_new_tensor(gpu_ctx_of(a), a->dtype, nd, shape, &v);
  if (s == CELL_OK) s = gpu_new_tensor(gpu_ctx_of(a), CELL_DTYPE_I64, nd, shape, &ix);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_argext(stream_of(a), (int)a->dtype, is_min, gpu_data(rows), v ? gpu_data(v) : NULL,
                               gpu_data(ix), outer, r, 1, (long long)base),
                   name);
  cell_tensor_release(rows);
  if (s != CELL_OK) {
    if (v) cell_tensor_release(v);
    if (ix) cell_tensor_release(ix);
    return s;
  }
  if (values) *values = v;
  if (indices) *indices = ix;
  else cell_tensor_release(ix);
  return CELL_OK;
}

cell_status gpu_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                        cell_tensor **values, cell_tensor **indices) {
  const char *name = is_min ? "min" : "max";
  int red[CELL_MAX_DIMS];
  CELL_TRY(mark_dims(name, a, 1, &dim, red));
  return arg_extreme(name, a, red, keepdim, is_min, index_base, values, indices);
}

cell_status gpu_argmax(const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                       cell_tensor **out) {
  const char *name = is_min ? "argmin" : "argmax";
  int red[CELL_MAX_DIMS];
  CELL_TRY(mark_dims(name, a, dim < 0 ? 0 : 1, &dim, red));
  return arg_extreme(name, a, red, keepdim, is_min, index_base, NULL, out);
}

/* --- softmax ----------------------------------------------------------------------------- */

static void geometry(const cell_tensor *t, int dim, int64_t *outer, int64_t *n, int64_t *inner) {
  *outer = *inner = 1;
  *n = t->ndim ? t->shape[dim] : 1;
  for (int d = 0; d < dim; d++) *outer *= t->shape[d];
  for (int d = dim + 1; d < t->ndim; d++) *inner *= t->shape[d];
}

static cell_status check_dim(const char *op, const cell_tensor *t, int dim) {
  if (dim < 0 || dim >= (t->ndim ? t->ndim : 1))
    return cell_error(CELL_ERR_INDEX, "%s: dimension %d out of range for a tensor of %d dimensions", op, dim,
                      t->ndim);
  return CELL_OK;
}

cell_status gpu_softmax(const cell_tensor *x, int dim, int log, cell_tensor **out) {
  const char *op = log ? "log_softmax" : "softmax";
  CELL_TRY(check_dim(op, x, dim));
  cell_tensor *xc, *y;
  CELL_TRY(contig_as(x, x->dtype, &xc));
  cell_status s = gpu_new_tensor(gpu_ctx_of(x), x->dtype, x->ndim, x->shape, &y);
  if (s == CELL_OK) {
    int64_t outer, n, inner;
    geometry(x, dim, &outer, &n, &inner);
    s = gpu_launch(gpuk_softmax(stream_of(x), (int)x->dtype, gpu_data(xc), gpu_data(y), outer, n, inner, log), op);
    if (s != CELL_OK) cell_tensor_release(y);
  }
  cell_tensor_release(xc);
  if (s == CELL_OK) *out = y;
  return s;
}

cell_status gpu_softmax_backward(const cell_tensor *y, const cell_tensor *g, int dim, int log, cell_tensor **gx) {
  const char *op = log ? "log_softmax backward" : "softmax backward";
  CELL_TRY(check_dim(op, y, dim));
  cell_tensor *yc, *gc = NULL, *o = NULL;
  CELL_TRY(contig_as(y, y->dtype, &yc));
  cell_status s = contig_as(g, y->dtype, &gc);
  if (s == CELL_OK) s = gpu_new_tensor(gpu_ctx_of(y), y->dtype, y->ndim, y->shape, &o);
  if (s == CELL_OK) {
    int64_t outer, n, inner;
    geometry(y, dim, &outer, &n, &inner);
    s = gpu_launch(gpuk_softmax_backward(stream_of(y), (int)y->dtype, gpu_data(yc), gpu_data(gc), gpu_data(o), outer,
                                         n, inner, log),
                   op);
  }
  cell_tensor_release(yc);
  if (gc) cell_tensor_release(gc);
  if (s != CELL_OK) {
    if (o) cell_tensor_release(o);
    return s;
  }
  *gx = o;
  return CELL_OK;
}

/* --- layer norm -------------------------------------------------------------------------- */

static cell_status ln_rows(const char *op, const cell_tensor *x, int k, int64_t *rows, int64_t *d) {
  if (k < 1 || k > x->ndim)
    return cell_error(CELL_ERR_VALUE, "%s: %d normalized dimensions for an input of %d", op, k, x->ndim);
  *d = 1;
  *rows = 1;
  for (int i = 0; i < x->ndim; i++) {
    if (i < x->ndim - k) *rows *= x->shape[i];
    else *d *= x->shape[i];
  }
  return CELL_OK;
}

/* An optional parameter as float64 (NULL stays NULL). */
static cell_status as_f64(const cell_tensor *t, cell_tensor **out) {
  *out = NULL;
  return t ? contig_as(t, CELL_DTYPE_F64, out) : CELL_OK;
}

cell_status gpu_layer_norm(const cell_tensor *x, int k, const cell_tensor *weight, const cell_tensor *bias,
                           double eps, cell_tensor **out, cell_tensor **mean, cell_tensor **rstd) {
  int64_t rows, d;
  CELL_TRY(ln_rows("layer_norm", x, k, &rows, &d));
  if ((weight && gpu_numel(weight) != d) || (bias && gpu_numel(bias) != d))
    return cell_error(CELL_ERR_VALUE, "layer_norm: weight and bias need %lld elements (the normalized shape)",
                      (long long)d);
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *t[6] = {NULL}; /* xc, w, b, y, mean, rstd */
  cell_status s = contig_as(x, x->dtype, &t[0]);
  if (s == CELL_OK) s = as_f64(weight, &t[1]);
  if (s == CELL_OK) s = as_f64(bias, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(g, x->dtype, x->ndim, x->shape, &t[3]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &rows, &t[4]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &rows, &t[5]);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_layer_norm(g->stream, (int)x->dtype, gpu_data(t[0]), t[1] ? gpu_data(t[1]) : NULL,
                                   t[2] ? gpu_data(t[2]) : NULL, gpu_data(t[3]), gpu_data(t[4]), gpu_data(t[5]), rows,
                                   d, eps),
                   "layer_norm");
  if (s != CELL_OK) {
    gpu_release_all(t, 6);
    return s;
  }
  gpu_release_all(t, 3);
  *out = t[3];
  if (mean) *mean = t[4];
  else cell_tensor_release(t[4]);
  if (rstd) *rstd = t[5];
  else cell_tensor_release(t[5]);
  return CELL_OK;
}

cell_status gpu_layer_norm_backward(const cell_tensor *gy, const cell_tensor *x, int k, const cell_tensor *weight,
                                    const cell_tensor *mean, const cell_tensor *rstd, cell_tensor **gx,
                                    cell_tensor **gw, cell_tensor **gb) {
  int64_t rows, d;
  CELL_TRY(ln_rows("layer_norm backward", x, k, &rows, &d));
  if (gpu_numel(gy) != gpu_numel(x) || gpu_numel(mean) != rows || gpu_numel(rstd) != rows)
    return cell_error(CELL_ERR_RUNTIME, "layer_norm backward: the gradient, mean or rstd do not match the input");
  gpu_ctx *g = gpu_ctx_of(x);
  const int64_t *trail = x->shape + x->ndim - k;
  cell_tensor *t[8] = {NULL}; /* gc, xc, w, mean, rstd, gx, gw, gb */
  cell_status s = contig_as(gy, x->dtype, &t[0]);
  if (s == CELL_OK) s = contig_as(x, x->dtype, &t[1]);
  if (s == CELL_OK) s = as_f64(weight, &t[2]);
  if (s == CELL_OK) s = contig_as(mean, CELL_DTYPE_F64, &t[3]);
  if (s == CELL_OK) s = contig_as(rstd, CELL_DTYPE_F64, &t[4]);
  if (s == CELL_OK && gx) s = gpu_new_tensor(g, x->dtype, x->ndim, x->shape, &t[5]);
  if (s == CELL_OK && gw) s = gpu_new_tensor(g, CELL_DTYPE_F64, k, trail, &t[6]);
  if (s == CELL_OK && gb) s = gpu_new_tensor(g, CELL_DTYPE_F64, k, trail, &t[7]);
  if (s == CELL_OK && rows == 0) { /* no rows: the column sums are zero */
    static const unsigned char zero[8] = {0};
    for (int i = 6; i < 8 && s == CELL_OK; i++)
      if (t[i]) s = gpu_fill(g, gpu_data(t[i]), (size_t)d * 8, zero, 8);
  }
  if (s == CELL_OK)
    s = gpu_launch(gpuk_layer_norm_backward(g->stream, (int)x->dtype, gpu_data(t[0]), gpu_data(t[1]),
                                            t[2] ? gpu_data(t[2]) : NULL, gpu_data(t[3]), gpu_data(t[4]),
                                            t[5] ? gpu_data(t[5]) : NULL, t[6] ? gpu_data(t[6]) : NULL,
                                            t[7] ? gpu_data(t[7]) : NULL, rows, d),
                   "layer_norm backward");
  if (s != CELL_OK) {
    gpu_release_all(t, 8);
    return s;
  }
  gpu_release_all(t, 5);
  if (gx) *gx = t[5];
  if (gw) *gw = t[6];
  if (gb) *gb = t[7];
  return CELL_OK;
}

/* --- embedding --------------------------------------------------------------------------- */

cell_status gpu_embedding(const cell_tensor *ids, const cell_tensor *weight, int64_t index_base, cell_tensor **out) {
  if (weight->ndim != 2)
    return cell_error(CELL_ERR_VALUE, "embedding: weight must be 2-D {V, D}, got %d dimensions", weight->ndim);
  if (ids->ndim + 1 > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "embedding: ids have %d dimensions; at most %d are supported", ids->ndim,
                      CELL_MAX_DIMS - 1);
  gpu_ctx *g = gpu_ctx_of(weight);
  int64_t vocab = weight->shape[0], dim = weight->shape[1], n = gpu_numel(ids), one = 1;
  int64_t shape[CELL_MAX_DIMS];
  memcpy(shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
  shape[ids->ndim] = dim;
  cell_tensor *t[4] = {NULL}; /* ids (int64), weight, out, bad */
  cell_status s = contig_as(ids, CELL_DTYPE_I64, &t[0]);
  if (s == CELL_OK) s = contig_as(weight, weight->dtype, &t[1]);
  if (s == CELL_OK) s = gpu_new_tensor(g, weight->dtype, ids->ndim + 1, shape, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &one, &t[3]);
  static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  if (s == CELL_OK) s = gpu_fill(g, gpu_data(t[3]), 8, ones, 8);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_embedding(g->stream, (int)weight->dtype, GPUK_I64, gpu_data(t[0]), gpu_data(t[1]),
                                  gpu_data(t[2]), n, vocab, dim, (long long)index_base, gpu_data(t[3])),
                   "embedding");
  /* The range check needs the flag on the host: one small read (it waits
   * for the stream). */
  unsigned long long bad = ~0ull;
  if (s == CELL_OK) s = gpu_copy_d2h(g, &bad, gpu_data(t[3]), 8);
  if (s == CELL_OK && bad != ~0ull && bad > 0) {
    long long raw = 0;
    s = gpu_copy_d2h(g, &raw, (char *)gpu_data(t[0]) + (bad - 1) * 8, 8);
    if (s == CELL_OK) {
      if (vocab == 0)
        s = cell_error(CELL_ERR_INDEX, "embedding: id %lld is out of range for an empty table", raw);
      else
        s = cell_error(CELL_ERR_INDEX, "embedding: id %lld is out of range for a table of %lld rows (expected %lld..%lld)",
                       raw, (long long)vocab, (long long)index_base, (long long)(index_base + vocab - 1));
    }
  }
  if (s != CELL_OK) {
    gpu_release_all(t, 4);
    return s;
  }
  cell_tensor_release(t[0]);
  cell_tensor_release(t[1]);
  cell_tensor_release(t[3]);
  *out = t[2];
  return CELL_OK;
}

cell_status gpu_embedding_backward(const cell_tensor *gy, const cell_tensor *ids, int64_t vocab, cell_dtype dt,
                                   int has_padding, int64_t padding_idx, int64_t index_base, cell_tensor **gw) {
  int64_t dim = gy->ndim ? gy->shape[gy->ndim - 1] : 0, n = gpu_numel(ids);
  if (gy->ndim != ids->ndim + 1 || gpu_numel(gy) != n * dim)
    return cell_error(CELL_ERR_RUNTIME, "embedding backward: the gradient's shape does not match the ids'");
  if (dt != CELL_DTYPE_F32 && dt != CELL_DTYPE_F64)
    return cell_error(CELL_ERR_NOTIMPL, "embedding backward to %s is not supported on device GPU", cell_dtype_name(dt));
  gpu_ctx *g = gpu_ctx_of(gy);
  int64_t shape[2] = {vocab, dim};
  cell_tensor *t[3] = {NULL}; /* ids, g, gw */
  static const unsigned char zero[8] = {0};
  cell_status s = contig_as(ids, CELL_DTYPE_I64, &t[0]);
  if (s == CELL_OK) s = contig_as(gy, dt, &t[1]);
  if (s == CELL_OK) s = gpu_new_tensor(g, dt, 2, shape, &t[2]);
  if (s == CELL_OK) s = gpu_fill(g, gpu_data(t[2]), (size_t)(vocab * dim) * cell_dtype_size(dt), zero, cell_dtype_size(dt));
  if (s == CELL_OK)
    s = gpu_launch(gpuk_embedding_backward(g->stream, (int)dt, GPUK_I64, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2]),
                                           n, vocab, dim, (long long)index_base, has_padding,
                                           (long long)(padding_idx - index_base)),
                   "embedding backward");
  if (s != CELL_OK) {
    gpu_release_all(t, 3);
    return s;
  }
  gpu_release_all(t, 2);
  *gw = t[2];
  return CELL_OK;
}

/* --- dropout ----------------------------------------------------------------------------- */

static cell_status drop(const char *op, const cell_tensor *x, double p, uint64_t seed, const uint64_t *first,
                        uint64_t *seed_out, uint64_t *first_out, cell_tensor **out) {
  if (!(p >= 0 && p <= 1))
    return cell_error(CELL_ERR_VALUE, "%s: the probability p must lie in [0, 1], got %g", op, p);
  cell_tensor *xc, *y;
  CELL_TRY(contig_as(x, x->dtype, &xc));
  cell_status s = gpu_new_tensor(gpu_ctx_of(x), x->dtype, x->ndim, x->shape, &y);
  if (s != CELL_OK) {
    cell_tensor_release(xc);
    return s;
  }
  int64_t n = gpu_numel(x);
  uint64_t f = first ? *first : cell_rng_reserve((uint64_t)(n + 3) / 4, &seed);
  if (seed_out) *seed_out = seed;
  if (first_out) *first_out = f;
  unsigned long long threshold = (unsigned long long)ceil(p * 4294967296.0);
  double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  s = gpu_launch(gpuk_dropout(stream_of(x), (int)x->dtype, gpu_data(xc), gpu_data(y), n, seed, f, threshold, scale), op);
  cell_tensor_release(xc);
  if (s != CELL_OK) {
    cell_tensor_release(y);
    return s;
  }
  *out = y;
  return CELL_OK;
}

cell_status gpu_dropout(const cell_tensor *x, double p, uint64_t *seed, uint64_t *first, cell_tensor **out) {
  return drop("dropout", x, p, 0, NULL, seed, first, out);
}

cell_status gpu_dropout_apply(const cell_tensor *x, double p, uint64_t seed, uint64_t first, cell_tensor **out) {
  return drop("dropout backward", x, p, seed, &first, NULL, NULL, out);
}

/* --- optimizer steps (supports_op admits contiguous float32 / float64 of one shape) ------ */

cell_status gpu_sgd_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *buf, const cell_sgd_config *cfg) {
  gpuk_sgd_args c = {cfg->lr, cfg->momentum, 1.0 - cfg->dampening, cfg->weight_decay, cfg->grad_scale,
                     cfg->nesterov != 0, cfg->first_step != 0};
  int has_buf = cfg->momentum != 0;
  if (has_buf && !buf) return cell_error(CELL_ERR_VALUE, "sgd: momentum needs a buffer");
  cell_tensor_bump(param);
  if (has_buf) cell_tensor_bump(buf);
  return gpu_launch(gpuk_sgd(stream_of(param), (int)param->dtype, gpu_data(param), gpu_data(grad),
                             has_buf ? gpu_data(buf) : NULL, gpu_numel(param), c),
                    "sgd");
}

cell_status gpu_adam_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg, cell_tensor *exp_avg_sq,
                          const cell_adam_config *cfg) {
  double t = (double)cfg->step;
  double bc1 = 1.0 - pow(cfg->beta1, t), bc2 = 1.0 - pow(cfg->beta2, t);
  gpuk_adam_args c = {cfg->beta1,         cfg->beta2,      1.0 - cfg->beta1, 1.0 - cfg->beta2,
                      cfg->eps,           cfg->weight_decay, cfg->grad_scale, 1.0 - cfg->lr * cfg->weight_decay,
                      -(cfg->lr / bc1),   sqrt(bc2),       cfg->decoupled != 0};
  cell_tensor_bump(param);
  cell_tensor_bump(exp_avg);
  cell_tensor_bump(exp_avg_sq);
  return gpu_launch(gpuk_adam(stream_of(param), (int)param->dtype, gpu_data(param), gpu_data(grad), gpu_data(exp_avg),
                              gpu_data(exp_avg_sq), gpu_numel(param), c),
                    cfg->decoupled ? "adamw" : "adam");
}
