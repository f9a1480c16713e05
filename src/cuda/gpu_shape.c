/* gpu_shape.c - the GPU table's remapping shape rows: flip (a copy through
 * negated strides), tile and repeat_interleave (a copy over a layout that
 * splits each repeated dimension in two, one of stride 0), and tril / triu
 * (gpu_index.cu's triangle mask over a contiguous copy). Every dtype;
 * src/ops's checks and messages. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

/* A new contiguous tensor of a's dtype and the given shape, filled from a
 * through L (over that shape; in: the first element's address). */
static cell_status remap(const char *op, const cell_tensor *a, const void *in, const gpuk_layout *L, int nd,
                         const int64_t *shape, cell_tensor **out) {
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *r;
  CELL_TRY(gpu_new_tensor(g, a->dtype, nd, shape, &r));
  cell_status s = gpu_launch(gpuk_copy_cast(g->stream, *L, (int)a->dtype, in, (int)a->dtype, gpu_data(r), gpu_numel(r)),
                             op);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status gpu_flip(const cell_tensor *a, int ndims, const int *dims, cell_tensor **out) {
  if (ndims > 0 && !dims) return cell_error(CELL_ERR_VALUE, "flip: NULL argument");
  if (ndims < 0 || ndims > CELL_MAX_DIMS) return cell_error(CELL_ERR_VALUE, "flip: %d dimensions given", ndims);
  int flip[CELL_MAX_DIMS] = {0};
  for (int k = 0; k < ndims; k++) {
    if (dims[k] < 0 || dims[k] >= (a->ndim ? a->ndim : 1))
      return cell_error(CELL_ERR_INDEX, "flip: dimension %d out of range for a %d-D tensor", dims[k], a->ndim);
    if (flip[dims[k]])
      return cell_error(CELL_ERR_VALUE, "flip: dimension %d appears more than once in the list of dimensions", dims[k]);
    flip[dims[k]] = 1;
  }
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = a->ndim;
  int64_t first = 0; /* elements from a's first to the flipped view's first */
  int empty = 0;
  for (int d = 0; d < a->ndim; d++) {
    L.shape[d] = a->shape[d];
    L.stride[d] = flip[d] ? -a->stride[d] : a->stride[d];
    if (a->shape[d] == 0) empty = 1;
    else if (flip[d]) first += (a->shape[d] - 1) * a->stride[d];
  }
  const char *in = (const char *)gpu_data(a) + (empty ? 0 : first) * (int64_t)cell_dtype_size(a->dtype);
  return remap("flip", a, in, &L, a->ndim, a->shape, out);
}

cell_status gpu_tile(const cell_tensor *a, int nreps, const int64_t *reps, cell_tensor **out) {
  if (nreps > 0 && !reps) return cell_error(CELL_ERR_VALUE, "tile: NULL argument");
  if (nreps < 0 || nreps > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "tile: between 0 and %d repetitions, got %d", CELL_MAX_DIMS, nreps);
  for (int i = 0; i < nreps; i++)
    if (reps[i] < 0)
      return cell_error(CELL_ERR_VALUE, "tile: repetitions must be non-negative, got %lld", (long long)reps[i]);
  int nd = a->ndim > nreps ? a->ndim : nreps;
  if (2 * nd > GPUK_MAX_DIMS)
    return cell_error(CELL_ERR_NOTIMPL, "tile of a %d-D result is not supported on device GPU (at most %d)", nd,
                      GPUK_MAX_DIMS / 2);
  int64_t shape[CELL_MAX_DIMS];
  gpuk_layout L; /* each dim d as (reps, size): strides (0, a's) */
  memset(&L, 0, sizeof L);
  L.ndim = 2 * nd;
  for (int d = 0; d < nd; d++) {
    int ia = d - (nd - a->ndim), ir = d - (nd - nreps);
    int64_t sz = ia >= 0 ? a->shape[ia] : 1, rp = ir >= 0 ? reps[ir] : 1;
    if (sz && rp > INT64_MAX / 4 / sz) {
      char b0[256];
      return cell_error(CELL_ERR_VALUE, "tile: tiling shape %s gives a size too large",
                        cell_shape_str(a->ndim, a->shape, b0, sizeof b0));
    }
    shape[d] = sz * rp;
    L.shape[2 * d] = rp;
    L.stride[2 * d] = 0;
    L.shape[2 * d + 1] = sz;
    L.stride[2 * d + 1] = ia >= 0 ? a->stride[ia] : 0;
  }
  return remap("tile", a, gpu_data(a), &L, nd, shape, out);
}

cell_status gpu_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim, cell_tensor **out) {
  if (dim < 0 || dim >= (a->ndim ? a->ndim : 1))
    return cell_error(CELL_ERR_INDEX, "repeat_interleave: dimension %d out of range for a %d-D tensor", dim, a->ndim);
  if (repeats < 0)
    return cell_error(CELL_ERR_VALUE, "repeat_interleave: repeats must be non-negative, got %lld", (long long)repeats);
  int nd = a->ndim ? a->ndim : 1; /* a 0-D tensor counts as 1-D of size 1 */
  if (nd + 1 > GPUK_MAX_DIMS)
    return cell_error(CELL_ERR_NOTIMPL, "repeat_interleave of a %d-D tensor is not supported on device GPU", nd);
  int64_t shape[CELL_MAX_DIMS];
  gpuk_layout L; /* dim as (size, repeats): strides (a's, 0) */
  memset(&L, 0, sizeof L);
  L.ndim = nd + 1;
  for (int d = 0, k = 0; d < nd; d++) {
    int64_t sz = a->ndim ? a->shape[d] : 1, st = a->ndim ? a->stride[d] : 0;
    shape[d] = sz;
    L.shape[k] = sz;
    L.stride[k++] = st;
    if (d == dim) {
      if (sz && repeats > INT64_MAX / 4 / sz) {
        char b0[256];
        return cell_error(CELL_ERR_VALUE, "repeat_interleave: %lld repeats of shape %s give a size too large",
                          (long long)repeats, cell_shape_str(a->ndim, a->shape, b0, sizeof b0));
      }
      shape[d] = sz * repeats;
      L.shape[k] = repeats;
      L.stride[k++] = 0;
    }
  }
  return remap("repeat_interleave", a, gpu_data(a), &L, nd, shape, out);
}

cell_status gpu_triangle(const cell_tensor *a, int64_t diagonal, int upper, cell_tensor **out) {
  const char *op = upper ? "triu" : "tril";
  if (a->ndim < 2) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "%s: input must have at least 2 dimensions, got shape %s", op,
                      cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *x, *r = NULL;
  CELL_TRY(gpu_contiguous(a, &x));
  cell_status s = gpu_new_tensor(g, a->dtype, a->ndim, a->shape, &r);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_triangle(g->stream, (int)cell_dtype_size(a->dtype), gpu_data(x), gpu_data(r),
                                 a->shape[a->ndim - 2], a->shape[a->ndim - 1], (long long)diagonal, upper,
                                 gpu_numel(r)),
                   op);
  cell_tensor_release(x);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}
