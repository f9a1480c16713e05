/* gpu_masked.c - the GPU table's nonzero, masked_select and
 * masked_scatter (src/ops/masked.c's checks, messages and row-major
 * order): the selection flags of a float64 copy, their prefix sum
 * (gpu_stats.cu's scan, one line), the count read back to the host (a
 * synchronisation: the output's size depends on it), then one kernel
 * moving the selected elements (gpu_masked.cu); unique (groups of the
 * sorted input, found the same way). Every dtype. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

/* The flags of t (contiguous over its shape, any dtype) and their
 * inclusive prefix sum (both int64, NULL when t is empty); *k the count. */
static cell_status select_flags(const char *op, const cell_tensor *t, cell_tensor **flags, cell_tensor **pos, int64_t *k) {
  gpu_ctx *g = gpu_ctx_of(t);
  int64_t n = gpu_numel(t);
  *flags = *pos = NULL;
  *k = 0;
  if (n == 0) return CELL_OK;
  cell_tensor *x = NULL;
  cell_status s = gpu_contig_as(t, CELL_DTYPE_F64, &x);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &n, flags);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &n, pos);
  if (s == CELL_OK) s = gpu_launch(gpuk_flags(g->stream, gpu_data(x), gpu_data(*flags), n), op);
  if (s == CELL_OK) s = gpu_launch(gpuk_scan(g->stream, 1, 0, 0, gpu_data(*flags), gpu_data(*pos), 1, n, 1), op);
  long long last = 0;
  if (s == CELL_OK) s = gpu_copy_d2h(g, &last, (long long *)gpu_data(*pos) + (n - 1), 8);
  if (x) cell_tensor_release(x);
  if (s != CELL_OK) {
    cell_tensor *tmp[2] = {*flags, *pos};
    gpu_release_all(tmp, 2);
    *flags = *pos = NULL;
    return s;
  }
  *k = last;
  return CELL_OK;
}

cell_status gpu_nonzero(const cell_tensor *a, int64_t index_base, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "nonzero: NULL argument");
  if (a->ndim > GPUK_MAX_DIMS)
    return cell_error(CELL_ERR_NOTIMPL, "nonzero of a %d-D tensor is not supported on device GPU", a->ndim);
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *f = NULL, *pos = NULL, *r = NULL;
  int64_t k;
  CELL_TRY(select_flags("nonzero", a, &f, &pos, &k));
  int64_t shape[2] = {k, a->ndim};
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_I64, 2, shape, &r);
  if (s == CELL_OK && k > 0 && a->ndim > 0) {
    gpuk_layout L;
    memset(&L, 0, sizeof L);
    L.ndim = a->ndim;
    for (int d = 0; d < a->ndim; d++) L.shape[d] = a->shape[d];
    s = gpu_launch(gpuk_nonzero(g->stream, L, gpu_data(f), gpu_data(pos), gpu_data(r), (long long)index_base,
                                gpu_numel(a)),
                   "nonzero");
  }
  cell_tensor *tmp[2] = {f, pos};
  gpu_release_all(tmp, 2);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

static cell_status check_mask(const char *op, const cell_tensor *mask) {
  if (mask->dtype != CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "%s: the mask must be a Bool tensor, got %s", op, cell_dtype_name(mask->dtype));
  return CELL_OK;
}

/* a and mask broadcast together and made contiguous (the CPU's message
 * when they do not broadcast). */
static cell_status broadcast_pair(const char *op, const cell_tensor *a, const cell_tensor *mask, cell_tensor **ac,
                                  cell_tensor **mc, int *nd, int64_t *shape) {
  int n = a->ndim > mask->ndim ? a->ndim : mask->ndim;
  for (int d = 0; d < n; d++) {
    int ka = d - (n - a->ndim), kb = d - (n - mask->ndim);
    int64_t x = ka < 0 ? 1 : a->shape[ka], y = kb < 0 ? 1 : mask->shape[kb];
    if (x != y && x != 1 && y != 1) {
      char ba[256], bb[256];
      return cell_error(CELL_ERR_VALUE, "%s: shapes %s and %s cannot be broadcast", op,
                        cell_shape_str(a->ndim, a->shape, ba, sizeof ba),
                        cell_shape_str(mask->ndim, mask->shape, bb, sizeof bb));
    }
    shape[d] = x == 1 ? y : x;
  }
  *nd = n;
  *ac = *mc = NULL;
  cell_status s = gpu_spread(a, a->dtype, n, shape, ac);
  if (s == CELL_OK) s = gpu_spread(mask, CELL_DTYPE_BOOL, n, shape, mc);
  if (s != CELL_OK) {
    if (*ac) cell_tensor_release(*ac);
    *ac = NULL;
  }
  return s;
}

cell_status gpu_masked_select(const cell_tensor *a, const cell_tensor *mask, cell_tensor **out) {
  if (!a || !mask || !out) return cell_error(CELL_ERR_VALUE, "masked_select: NULL argument");
  CELL_TRY(check_mask("masked_select", mask));
  gpu_ctx *g = gpu_ctx_of(a);
  int nd;
  int64_t shape[CELL_MAX_DIMS], k = 0;
  cell_tensor *ac = NULL, *mc = NULL, *f = NULL, *pos = NULL, *r = NULL;
  CELL_TRY(broadcast_pair("masked_select", a, mask, &ac, &mc, &nd, shape));
  cell_status s = select_flags("masked_select", mc, &f, &pos, &k);
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, 1, &k, &r);
  if (s == CELL_OK && k > 0)
    s = gpu_launch(gpuk_masked(g->stream, (int)cell_dtype_size(a->dtype), 0, gpu_data(f), gpu_data(pos), gpu_data(ac),
                               NULL, gpu_data(r), gpu_numel(mc)),
                   "masked_select");
  cell_tensor *tmp[4] = {ac, mc, f, pos};
  gpu_release_all(tmp, 4);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status gpu_masked_scatter(const cell_tensor *a, const cell_tensor *mask, const cell_tensor *src,
                               cell_tensor **out) {
  if (!a || !mask || !src || !out) return cell_error(CELL_ERR_VALUE, "masked_scatter: NULL argument");
  CELL_TRY(check_mask("masked_scatter", mask));
  if (src->dtype != a->dtype)
    return cell_error(CELL_ERR_TYPE, "masked_scatter: the source must have the input's dtype %s, got %s",
                      cell_dtype_name(a->dtype), cell_dtype_name(src->dtype));
  gpu_ctx *g = gpu_ctx_of(a);
  int nd;
  int64_t shape[CELL_MAX_DIMS], k = 0, have = gpu_numel(src);
  cell_tensor *ac = NULL, *mc = NULL, *f = NULL, *pos = NULL, *sc = NULL, *r = NULL;
  CELL_TRY(broadcast_pair("masked_scatter", a, mask, &ac, &mc, &nd, shape));
  cell_status s = select_flags("masked_scatter", mc, &f, &pos, &k);
  if (s == CELL_OK && have < k) {
    char b1[256], b2[256];
    s = cell_error(CELL_ERR_VALUE,
                   "masked_scatter: the mask (shape %s) selects %lld elements but the source (shape %s) has only %lld",
                   cell_shape_str(mask->ndim, mask->shape, b1, sizeof b1), (long long)k,
                   cell_shape_str(src->ndim, src->shape, b2, sizeof b2), (long long)have);
  }
  if (s == CELL_OK) s = gpu_contiguous(src, &sc);
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, nd, shape, &r);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_masked(g->stream, (int)cell_dtype_size(a->dtype), 1, f ? gpu_data(f) : NULL,
                               pos ? gpu_data(pos) : NULL, gpu_data(ac), gpu_data(sc), gpu_data(r), gpu_numel(r)),
                   "masked_scatter");
  cell_tensor *tmp[5] = {ac, mc, f, pos, sc};
  gpu_release_all(tmp, 5);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* unique: a stable sort of the flattened input (gpu_sort), the group
 * starts and their prefix sum (the group count read back), then one
 * kernel writing the values, the inverse and the counts. */
cell_status gpu_unique(const cell_tensor *a, int64_t index_base, cell_tensor **out, cell_tensor **inverse,
                       cell_tensor **counts) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "unique: NULL argument");
  gpu_ctx *g = gpu_ctx_of(a);
  int64_t n = gpu_numel(a), groups = 0;
  cell_tensor *c = NULL, *flat = NULL, *sv = NULL, *si = NULL, *key = NULL, *f = NULL, *pos = NULL;
  cell_tensor *u = NULL, *inv = NULL, *cnt = NULL;
  int isf = cell_dtype_is_float(a->dtype);
  cell_status s = gpu_contiguous(a, &c);
  if (s == CELL_OK) s = gpu_reshape(c, 1, &n, &flat);
  if (s == CELL_OK && n > 0) s = gpu_sort(flat, 0, 0, 0, &sv, &si);
  if (s == CELL_OK && n > 0) s = gpu_contig_as(sv, isf ? CELL_DTYPE_F64 : CELL_DTYPE_I64, &key);
  if (s == CELL_OK && n > 0) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &n, &f);
  if (s == CELL_OK && n > 0) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &n, &pos);
  if (s == CELL_OK && n > 0)
    s = gpu_launch(gpuk_unique_starts(g->stream, isf ? NULL : gpu_data(key), isf ? gpu_data(key) : NULL, gpu_data(f), n),
                   "unique");
  if (s == CELL_OK && n > 0) s = gpu_launch(gpuk_scan(g->stream, 1, 0, 0, gpu_data(f), gpu_data(pos), 1, n, 1), "unique");
  if (s == CELL_OK && n > 0) {
    long long last = 0;
    s = gpu_copy_d2h(g, &last, (long long *)gpu_data(pos) + (n - 1), 8);
    groups = last;
  }
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, 1, &groups, &u);
  if (s == CELL_OK && inverse) s = gpu_new_tensor(g, CELL_DTYPE_I64, a->ndim, a->shape, &inv);
  if (s == CELL_OK && counts) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &groups, &cnt);
  if (s == CELL_OK && cnt && groups > 0) {
    unsigned char zero = 0;
    s = gpu_fill(g, gpu_data(cnt), (size_t)groups * 8, &zero, 1);
  }
  if (s == CELL_OK && n > 0)
    s = gpu_launch(gpuk_unique(g->stream, (int)cell_dtype_size(a->dtype), gpu_data(sv), gpu_data(si), gpu_data(pos),
                               gpu_data(u), inv ? gpu_data(inv) : NULL, cnt ? gpu_data(cnt) : NULL,
                               (long long)index_base, n),
                   "unique");
  cell_tensor *tmp[7] = {c, flat, sv, si, key, f, pos};
  gpu_release_all(tmp, 7);
  if (s != CELL_OK) {
    cell_tensor *r[3] = {u, inv, cnt};
    gpu_release_all(r, 3);
    return s;
  }
  *out = u;
  if (inverse) *inverse = inv;
  if (counts) *counts = cnt;
  return CELL_OK;
}
