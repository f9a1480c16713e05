/* gpu_sort.c - the GPU table's sort and topk rows (argsort is sort's
 * indices): src/ops/sort.c's checks, order and outputs (values of the
 * input's dtype, int64 indices counted from index_base), through
 * gpu_sort.cu's one-thread-per-line merge sort. The input is made
 * contiguous, with a float64 (float dtypes) or int64 copy for the keys.
 * median picks the lower median (or a line's first NaN) from the sort. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"

static cell_status run_sort(const char *op, const cell_tensor *a, int dim, int flip, int64_t k, int64_t base,
                            cell_tensor **values, cell_tensor **indices) {
  int nd = a->ndim;
  int64_t len = nd ? a->shape[dim] : 1, outer = 1, inner = 1, shape[CELL_MAX_DIMS], scratch;
  for (int d = 0; d < nd; d++) {
    if (d < dim) outer *= a->shape[d];
    if (d > dim) inner *= a->shape[d];
    shape[d] = d == dim ? k : a->shape[d];
  }
  scratch = outer * len * inner;
  int is_int = !cell_dtype_is_float(a->dtype);
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL}; /* x, keys' source, K, P, K2, P2 */
  cell_tensor *v = NULL, *ix = NULL;
  cell_status s = gpu_contiguous(a, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(a, is_int ? CELL_DTYPE_I64 : CELL_DTYPE_F64, &t[1]);
  for (int i = 2; i < 6 && s == CELL_OK; i++) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &scratch, &t[i]);
  if (s == CELL_OK && values) s = gpu_new_tensor(g, a->dtype, nd, shape, &v);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, nd, shape, &ix);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_sort(g->stream, (int)cell_dtype_size(a->dtype), is_int, flip, gpu_data(t[0]), gpu_data(t[1]),
                             outer, len, inner, k, gpu_data(t[2]), gpu_data(t[3]), gpu_data(t[4]), gpu_data(t[5]),
                             v ? gpu_data(v) : NULL, gpu_data(ix), (long long)base),
                   op);
  gpu_release_all(t, 6);
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

static cell_status check_dim(const char *op, int dim, int ndim) {
  if (dim < 0 || dim >= (ndim ? ndim : 1))
    return cell_error(CELL_ERR_INDEX, "%s: dimension %d out of range for a %d-D tensor", op, dim, ndim);
  return CELL_OK;
}

cell_status gpu_sort(const cell_tensor *a, int dim, int descending, int64_t index_base, cell_tensor **values,
                     cell_tensor **indices) {
  if (!values && !indices) return cell_error(CELL_ERR_VALUE, "sort: NULL argument");
  CELL_TRY(check_dim("sort", dim, a->ndim));
  int64_t len = a->ndim ? a->shape[dim] : 1;
  return run_sort("sort", a, dim, descending != 0, len, index_base, values, indices);
}

cell_status gpu_topk(const cell_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base,
                     cell_tensor **values, cell_tensor **indices) {
  (void)sorted; /* the k are always returned in order, as on the CPU */
  if (!values || !indices) return cell_error(CELL_ERR_VALUE, "topk: NULL argument");
  CELL_TRY(check_dim("topk", dim, a->ndim));
  int64_t len = a->ndim ? a->shape[dim] : 1;
  if (k < 0 || k > len) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "topk: k = %lld is out of range for dimension %d of size %lld (input of shape %s)",
                      (long long)k, dim, (long long)len, cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  return run_sort("topk", a, dim, largest != 0, k, index_base, values, indices);
}

/* median: the stable ascending sort of each line, then the lower median
 * (or the line's first NaN) picked from it. */
cell_status gpu_median(const cell_tensor *a, int dim, int keepdim, int64_t index_base, cell_tensor **values,
                       cell_tensor **indices) {
  if (!a || !values || !indices) return cell_error(CELL_ERR_VALUE, "median: NULL argument");
  CELL_TRY(check_dim("median", dim, a->ndim));
  int nd = a->ndim;
  int64_t len = nd ? a->shape[dim] : 1, outer = 1, inner = 1, shape[CELL_MAX_DIMS];
  if (len == 0) {
    char b[256];
    return cell_error(CELL_ERR_INDEX, "median: dimension %d of the input (shape %s) has size 0: no median", dim,
                      cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  int on = 0;
  for (int d = 0; d < nd; d++) {
    if (d < dim) outer *= a->shape[d];
    if (d > dim) inner *= a->shape[d];
    if (d != dim) shape[on++] = a->shape[d];
    else if (keepdim) shape[on++] = 1;
  }
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *sv = NULL, *si = NULL, *vf = NULL, *v = NULL, *ix = NULL;
  cell_status s = run_sort("median", a, dim, 0, len, index_base, &sv, &si);
  if (s == CELL_OK && cell_dtype_is_float(a->dtype)) s = gpu_contig_as(sv, CELL_DTYPE_F64, &vf);
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, on, shape, &v);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, on, shape, &ix);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_median_pick(g->stream, (int)cell_dtype_size(a->dtype), gpu_data(sv), vf ? gpu_data(vf) : NULL,
                                    gpu_data(si), gpu_data(v), gpu_data(ix), outer, len, inner),
                   "median");
  cell_tensor *tmp[3] = {sv, si, vf};
  gpu_release_all(tmp, 3);
  if (s != CELL_OK) {
    if (v) cell_tensor_release(v);
    if (ix) cell_tensor_release(ix);
    return s;
  }
  *values = v;
  *indices = ix;
  return CELL_OK;
}
