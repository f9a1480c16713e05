/* gpu_stats.c - the GPU table's statistics and scans: var / std and the
 * p-norms over any dims (the input gathered into float64 rows, folded in
 * double as src/ops/reduce.c, the result in the input's float dtype or
 * float32), cumsum forwards and from the end (its backward) and cumprod
 * (float dtypes in double, integers and bool as int64, as the CPU), and
 * arange / linspace made on the GPU (the CPU's count and values). The
 * CUDA side is gpu_stats.cu. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <math.h>

static cell_status finish(cell_status s, cell_tensor *r, cell_tensor **out) {
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* rows folded by kind into a float64 tensor of the reduction's shape, then
 * cast to the CPU's result dtype. */
static cell_status moments(const char *op, int kind, const cell_tensor *a, int ndims, const int *dims, int keepdim,
                           double p, int ddof, int take_sqrt, cell_tensor **out) {
  cell_tensor *rows, *o = NULL;
  int64_t outer, r, shape[CELL_MAX_DIMS];
  int nd;
  CELL_TRY(gpu_rows(op, a, ndims, dims, keepdim, CELL_DTYPE_F64, &rows, &outer, &r, &nd, shape));
  gpu_ctx *g = gpu_ctx_of(a);
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, nd, shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_moments(g->stream, kind, gpu_data(rows), gpu_data(o), outer, r, p, ddof, take_sqrt), op);
  cell_tensor_release(rows);
  cell_dtype rt = cell_dtype_is_float(a->dtype) ? a->dtype : CELL_DTYPE_F32;
  cell_tensor *c = NULL;
  if (s == CELL_OK) s = gpu_contig_as(o, rt, &c);
  if (o) cell_tensor_release(o);
  return finish(s, c, out);
}

cell_status gpu_var(const cell_tensor *a, int ndims, const int *dims, int ddof, int keepdim, int take_sqrt,
                    cell_tensor **out) {
  return moments(take_sqrt ? "std" : "var", GPUK_MOM_VAR, a, ndims, dims, keepdim, 0.0, ddof, take_sqrt, out);
}

cell_status gpu_norm(const cell_tensor *a, double p, int ndims, const int *dims, int keepdim, cell_tensor **out) {
  if (p == 0 || isnan(p) || p == -INFINITY) /* no p-norms: callers count, or take the minimum */
    return cell_error(CELL_ERR_VALUE, "norm: the order p must be a nonzero number other than -inf, got %g",
                      p);
  int kind = isinf(p) ? GPUK_MOM_AMAX : p == 1.0 ? GPUK_MOM_ASUM : p == 2.0 ? GPUK_MOM_SSQ : GPUK_MOM_PSUM;
  return moments("norm", kind, a, ndims, dims, keepdim, p, 0, 0, out);
}

/* The running sum or product along dim: a as contiguous float64 (float
 * dtypes) or int64 (the rest), scanned, then cast to the float dtype. */
static cell_status scan(const char *op, const cell_tensor *a, int dim, int prod, int reverse, cell_tensor **out) {
  if (dim < 0 || dim >= (a->ndim ? a->ndim : 1))
    return cell_error(CELL_ERR_INDEX, "%s: dimension %d out of range for a %d-D tensor", op, dim, a->ndim);
  int is_float = cell_dtype_is_float(a->dtype);
  cell_dtype ct = is_float ? CELL_DTYPE_F64 : CELL_DTYPE_I64;
  int64_t outer = 1, len = a->ndim ? a->shape[dim] : 1, inner = 1;
  for (int d = 0; d < dim && d < a->ndim; d++) outer *= a->shape[d];
  for (int d = dim + 1; d < a->ndim; d++) inner *= a->shape[d];
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *x = NULL, *y = NULL, *r = NULL;
  cell_status s = gpu_contig_as(a, ct, &x);
  if (s == CELL_OK) s = gpu_new_tensor(g, ct, a->ndim, a->shape, &y);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_scan(g->stream, !is_float, prod, reverse, gpu_data(x), gpu_data(y), outer, len, inner), op);
  if (s == CELL_OK) s = gpu_contig_as(y, is_float ? a->dtype : CELL_DTYPE_I64, &r);
  if (x) cell_tensor_release(x);
  if (y) cell_tensor_release(y);
  return finish(s, r, out);
}

cell_status gpu_cumsum(const cell_tensor *a, int dim, cell_tensor **out) { return scan("cumsum", a, dim, 0, 0, out); }

cell_status gpu_cumsum_reverse(const cell_tensor *a, int dim, cell_tensor **out) {
  return scan("cumsum_reverse", a, dim, 0, 1, out);
}

cell_status gpu_cumprod(const cell_tensor *a, int dim, cell_tensor **out) { return scan("cumprod", a, dim, 1, 0, out); }

/* n values start + i step (the last one last when has_last) as dtype dt on
 * the current GPU. */
static cell_status ramp(const char *op, int64_t n, double start, double step, int has_last, double last_v,
                        cell_dtype dt, cell_tensor **out) {
  if (!gpu_dtype_copyable(dt))
    return cell_error(CELL_ERR_NOTIMPL, "%s of %s is not supported on device GPU", op, cell_dtype_name(dt));
  gpu_ctx *g = gpu_ctx_current();
  if (!g) return cell_error(CELL_ERR_RUNTIME, "%s: the current device is not a GPU", op);
  cell_tensor *v = NULL, *r = NULL;
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &n, &v);
  if (s == CELL_OK) s = gpu_launch(gpuk_ramp(g->stream, gpu_data(v), n, start, step, has_last, last_v), op);
  if (s == CELL_OK) s = gpu_contig_as(v, dt, &r);
  if (v) cell_tensor_release(v);
  return finish(s, r, out);
}

cell_status gpu_arange(double start, double stop, double step, cell_dtype dt, cell_tensor **out) {
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    return cell_error(CELL_ERR_VALUE, "arange: start, stop and step must be finite, got start=%g, stop=%g, step=%g",
                      start, stop, step);
  if (step == 0) return cell_error(CELL_ERR_VALUE, "arange: step must not be zero (start=%g, stop=%g)", start, stop);
  double count = ceil((stop - start) / step);
  if (!(count <= 9007199254740992.0)) /* also NaN; the allocation refuses what cannot be held */
    return cell_error(CELL_ERR_VALUE, "arange: start=%g, stop=%g, step=%g gives %g elements, more than a tensor can hold",
                      start, stop, step, count);
  return ramp("arange", count > 0 ? (int64_t)count : 0, start, step, 0, 0.0, dt, out);
}

cell_status gpu_linspace(double start, double stop, int64_t n, cell_dtype dt, cell_tensor **out) {
  if (n < 0)
    return cell_error(CELL_ERR_VALUE, "linspace: number of points must be non-negative, got %lld", (long long)n);
  double step = n > 1 ? (stop - start) / (double)(n - 1) : 0.0;
  return ramp("linspace", n, start, step, 1, n == 1 ? start : stop, dt, out);
}
