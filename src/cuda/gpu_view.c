/* gpu_view.c - the GPU table's shape and copy rows: reshape (a view sharing
 * the storage when the strides allow one, the CPU's rule of
 * src/core/view.c, else a contiguous copy viewed) and copy_ (src, any
 * dtype and layout, broadcast into a dst of any copyable dtype: one
 * copy_cast launch into a contiguous dst; a strided dst, such as the part
 * of a slice's gradient the slice viewed, through a staging copy and a
 * strided put). */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <stdio.h>
#include <string.h>

/* The new shape with -1 inferred (src/core/view.c's cell_view_shape). */
static cell_status view_shape(const cell_tensor *t, int ndim, const int64_t *shape, int64_t *res) {
  const char *op = "reshape";
  if (ndim < 0 || ndim > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "%s: a tensor has at most %d dimensions, got %d", op, CELL_MAX_DIMS, ndim);
  if (ndim > 0 && !shape) return cell_error(CELL_ERR_VALUE, "%s: NULL shape", op);
  int infer = -1;
  int64_t known = 1;
  int over = 0;
  for (int i = 0; i < ndim; i++) {
    res[i] = shape[i];
    if (shape[i] == -1) {
      if (infer >= 0) return cell_error(CELL_ERR_VALUE, "%s: only one dimension can be -1", op);
      infer = i;
      res[i] = 1;
    } else if (shape[i] < 0) {
      return cell_error(CELL_ERR_VALUE, "%s: negative size %lld in the new shape", op, (long long)shape[i]);
    }
    over |= __builtin_mul_overflow(known, res[i], &known);
  }
  int64_t n = gpu_numel(t);
  int ok = !over && known == n;
  if (!over && infer >= 0) {
    ok = known > 0 && n % known == 0;
    if (ok) res[infer] = n / known;
  }
  if (!ok) {
    char a[256], b[256];
    return cell_error(CELL_ERR_VALUE, "%s: cannot reshape a tensor of shape %s (%lld elements) into %s", op,
                      cell_shape_str(t->ndim, t->shape, a, sizeof a), (long long)n, cell_shape_str(ndim, shape, b, sizeof b));
  }
  return CELL_OK;
}

static void contig_strides(int ndim, const int64_t *shape, int64_t *st) {
  int64_t e = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    st[i] = e;
    e *= shape[i] ? shape[i] : 1;
  }
}

/* Strides viewing t as shape without a copy, if its layout allows one
 * (src/core/view.c's cell_view_strides: TH's newView). */
static int view_strides(const cell_tensor *t, int ndim, const int64_t *shape, int64_t *st) {
  if (gpu_numel(t) == 0 || t->ndim == 0) {
    contig_strides(ndim, shape, st);
    return 1;
  }
  int view_d = ndim - 1;
  int64_t chunk_base = t->stride[t->ndim - 1], tensor_numel = 1, view_numel = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    tensor_numel *= t->shape[d];
    if (d == 0 || (t->shape[d - 1] != 1 && t->stride[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        st[view_d] = view_numel * chunk_base;
        view_numel *= shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return 0;
      if (d > 0) {
        chunk_base = t->stride[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

cell_status gpu_reshape(const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "reshape: NULL argument");
  int64_t res[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  CELL_TRY(view_shape(t, ndim, shape, res));
  cell_tensor *v;
  if (view_strides(t, ndim, res, st)) {
    CELL_TRY(cell_tensor_detach(t, &v)); /* a new header on t's storage, no history */
  } else {
    CELL_TRY(gpu_clone(t, &v));
    contig_strides(ndim, res, st);
  }
  v->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    v->shape[i] = res[i];
    v->stride[i] = st[i];
  }
  *out = v;
  return CELL_OK;
}

/* copy_ into a strided view (a slice's gradient: zeros with g copied into
 * the part the op viewed): src (layout L over dst's shape) gathered into a
 * contiguous staging copy of dst's dtype, then put at dst's strides. */
static cell_status copy_strided(cell_tensor *dst, const cell_tensor *src, const gpuk_layout *L) {
  gpu_ctx *g = gpu_ctx_of(dst);
  int64_t n = gpu_numel(dst);
  cell_tensor *tmp;
  CELL_TRY(gpu_new_tensor(g, dst->dtype, dst->ndim, dst->shape, &tmp));
  cell_status s = gpu_launch(gpuk_copy_cast(g->stream, *L, (int)src->dtype, gpu_data(src), (int)dst->dtype,
                                            gpu_data(tmp), n),
                             "copy_");
  if (s == CELL_OK) {
    gpuk_layout D;
    memset(&D, 0, sizeof D);
    D.ndim = dst->ndim;
    for (int d = 0; d < dst->ndim; d++) {
      D.shape[d] = dst->shape[d];
      D.stride[d] = dst->stride[d];
    }
    cell_tensor_bump(dst);
    s = gpu_launch(gpuk_put(g->stream, (int)cell_dtype_size(dst->dtype), D, gpu_data(tmp), gpu_data(dst), n), "copy_");
  }
  cell_tensor_release(tmp);
  return s;
}

cell_status gpu_copy_(cell_tensor *dst, const cell_tensor *src) {
  if (!dst || !src) return cell_error(CELL_ERR_VALUE, "copy_: NULL tensor");
  if (src->ndim > dst->ndim) goto mismatch;
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = dst->ndim;
  for (int d = 0; d < dst->ndim; d++) {
    int k = d - (dst->ndim - src->ndim);
    if (k >= 0 && src->shape[k] != dst->shape[d] && src->shape[k] != 1) goto mismatch;
    L.shape[d] = dst->shape[d];
    L.stride[d] = k < 0 || src->shape[k] == 1 ? 0 : src->stride[k];
  }
  if (!gpu_dtype_copyable(dst->dtype) || !gpu_dtype_copyable(src->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "copy_ into a %s tensor is not supported on device GPU",
                      cell_dtype_name(dst->dtype));
  if (!gpu_is_contig(dst)) return copy_strided(dst, src, &L);
  cell_tensor_bump(dst);
  int64_t n = gpu_numel(dst);
  /* A source overlapping the destination is read from a copy first. */
  cell_tensor *sc = NULL;
  cell_status s = CELL_OK;
  if (src->storage == dst->storage) s = gpu_clone(src, &sc);
  const cell_tensor *from = sc ? sc : src;
  if (s == CELL_OK && sc)
    for (int d = 0; d < dst->ndim; d++) {
      int k = d - (dst->ndim - from->ndim);
      L.stride[d] = k < 0 || from->shape[k] == 1 ? 0 : from->stride[k];
    }
  if (s == CELL_OK) {
    int e = gpuk_copy_cast(gpu_ctx_of(dst)->stream, L, (int)from->dtype, gpu_data(from), (int)dst->dtype,
                           gpu_data(dst), n);
    if (e) s = gpu_cuda_error((cudaError_t)e, "copy_");
  }
  if (sc) cell_tensor_release(sc);
  return s;
mismatch:;
  char a[256], b[256];
  return cell_error(CELL_ERR_VALUE, "copy_: source of shape %s cannot be broadcast to %s",
                    cell_shape_str(src->ndim, src->shape, a, sizeof a), cell_shape_str(dst->ndim, dst->shape, b, sizeof b));
}
