/* gpu_act.c - the GPU table's activation rows and their neighbours:
 * activation / activation_backward (every kind of cell_act.h), softplus
 * and nan_to_num (gpu_act.cu's pointwise kernel, in double: float32 and
 * float64 as themselves, float16 / bfloat16 through float32), logsumexp
 * (rows from gpu_rows, one block per row), roll (an index remap), diag and
 * eye (strided copies and puts), dot (a product then a sum) and cumprod's
 * gradient (one thread per line).
 * src/ops's checks and messages. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include "cell_act.h"
#include <float.h>
#include <math.h>
#include <string.h>

static cell_status finish(cell_status s, cell_tensor *r, cell_tensor **out) {
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

static int is_float_dt(cell_dtype dt) {
  return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64 || dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16;
}

/* The dtype the pointwise kernel runs dt in: float64 as itself, the rest
 * (float32, float16, bfloat16) in float32. */
static cell_dtype kernel_dt(cell_dtype dt) { return dt == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32; }

/* out (x's shape, dtype rt) = gpuk_pointwise op of x (and g: NULL for the
 * forward ops), the kernel dtype the wider of the operands'. */
static cell_status pointwise(const char *name, int op, double k0, double k1, double k2, const cell_tensor *x,
                             const cell_tensor *g, cell_dtype rt, cell_tensor **out) {
  cell_dtype kt = kernel_dt(x->dtype);
  if (g && g->dtype == CELL_DTYPE_F64) kt = CELL_DTYPE_F64;
  gpu_ctx *c = gpu_ctx_of(x);
  cell_tensor *xc = NULL, *gc = NULL, *o = NULL, *r = NULL;
  cell_status s = gpu_contig_as(x, kt, &xc);
  if (s == CELL_OK && g) s = gpu_contig_as(g, kt, &gc);
  if (s == CELL_OK) s = gpu_new_tensor(c, kt, x->ndim, x->shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_pointwise(c->stream, (int)kt, op, k0, k1, k2, gpu_data(xc), gc ? gpu_data(gc) : NULL,
                                  gpu_data(o), gpu_numel(o)),
                   name);
  if (s == CELL_OK) s = gpu_contig_as(o, rt, &r);
  cell_tensor *tmp[3] = {xc, gc, o};
  gpu_release_all(tmp, 3);
  return finish(s, r, out);
}

/* --- activations ------------------------------------------------------------------------ */

static cell_status act_check(const cell_tensor *x, int kind, double p0, double p1) {
  if (kind < 0 || kind >= CELL_ACT_COUNT) return cell_error(CELL_ERR_VALUE, "activation: unknown kind %d", kind);
  const char *nm = cell_act_name((cell_act)kind);
  if (!is_float_dt(x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: not supported for %s tensors (a float dtype is needed)", nm,
                      cell_dtype_name(x->dtype));
  if (p0 != p0 || p1 != p1) return cell_error(CELL_ERR_VALUE, "%s: parameters must be numbers, got %g, %g", nm, p0, p1);
  if (kind == CELL_ACT_CELU && p0 == 0) return cell_error(CELL_ERR_VALUE, "celu: alpha must not be 0");
  if (kind == CELL_ACT_HARDTANH && p0 > p1)
    return cell_error(CELL_ERR_VALUE, "hardtanh: min_val (%g) must not exceed max_val (%g)", p0, p1);
  return CELL_OK;
}

cell_status gpu_activation(const cell_tensor *x, int kind, double p0, double p1, cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "activation: NULL argument");
  CELL_TRY(act_check(x, kind, p0, p1));
  return pointwise(cell_act_name((cell_act)kind), kind, p0, p1, 0, x, NULL, x->dtype, out);
}

cell_status gpu_activation_backward(const cell_tensor *g, const cell_tensor *x, int kind, double p0, double p1,
                                    cell_tensor **gx) {
  if (!g || !x || !gx) return cell_error(CELL_ERR_VALUE, "activation_backward: NULL argument");
  CELL_TRY(act_check(x, kind, p0, p1));
  if (g->ndim != x->ndim) return cell_error(CELL_ERR_VALUE, "activation_backward: shape mismatch");
  for (int d = 0; d < x->ndim; d++)
    if (g->shape[d] != x->shape[d]) return cell_error(CELL_ERR_VALUE, "activation_backward: shape mismatch");
  if (!is_float_dt(g->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "activation_backward of a %s gradient is not supported on device GPU",
                      cell_dtype_name(g->dtype));
  return pointwise("activation_backward", GPUK_PW_ACT_GRAD + kind, p0, p1, 0, x, g, x->dtype, gx);
}

/* The largest finite value of a float dtype (unary_param.c's). */
static double dtype_max(cell_dtype dt) {
  switch (dt) {
  case CELL_DTYPE_F16: return 65504.0;
  case CELL_DTYPE_BF16: return 3.38953138925153547590e38;
  case CELL_DTYPE_F32: return FLT_MAX;
  default: return DBL_MAX;
  }
}

cell_status gpu_nan_to_num(const cell_tensor *a, double nan, double posinf, double neginf, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "nan_to_num: NULL argument");
  if (!is_float_dt(a->dtype)) return gpu_clone(a, out);
  double big = dtype_max(a->dtype);
  return pointwise("nan_to_num", GPUK_PW_NAN_TO_NUM, nan != nan ? 0.0 : nan, posinf != posinf ? big : posinf,
                   neginf != neginf ? -big : neginf, a, NULL, a->dtype, out);
}

cell_status gpu_softplus(const cell_tensor *a, double beta, double threshold, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "softplus: NULL argument");
  if (!is_float_dt(a->dtype))
    return cell_error(CELL_ERR_TYPE, "softplus: not supported for %s tensors (a float dtype is needed)",
                      cell_dtype_name(a->dtype));
  if (!(beta != 0) || beta != beta || threshold != threshold)
    return cell_error(CELL_ERR_VALUE,
                      "softplus: beta must be a nonzero number and threshold a number, got beta=%g, threshold=%g",
                      beta, threshold);
  return pointwise("softplus", GPUK_PW_SOFTPLUS, beta, threshold, 0, a, NULL, a->dtype, out);
}

/* --- logsumexp -------------------------------------------------------------------------- */

cell_status gpu_logsumexp(const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_tensor **out) {
  if (!a || !out || (ndims > 0 && !dims)) return cell_error(CELL_ERR_VALUE, "logsumexp: NULL argument");
  if (ndims < 0 || ndims > CELL_MAX_DIMS) return cell_error(CELL_ERR_VALUE, "logsumexp: %d dimensions given", ndims);
  for (int i = 0; i < ndims; i++)
    for (int j = 0; j < i; j++)
      if (dims[i] == dims[j] && dims[i] >= 0 && dims[i] < (a->ndim ? a->ndim : 1))
        return cell_error(CELL_ERR_VALUE,
                          "logsumexp: dimension %d appears more than once in the list of dimensions", dims[i]);
  cell_dtype rt = is_float_dt(a->dtype) ? a->dtype : CELL_DTYPE_F32, kt = kernel_dt(rt);
  if (!gpu_dtype_copyable(a->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "logsumexp of %s is not supported on device GPU", cell_dtype_name(a->dtype));
  gpu_ctx *g = gpu_ctx_of(a);
  int nd;
  int64_t outer, len, shape[CELL_MAX_DIMS];
  cell_tensor *rows = NULL, *o = NULL, *r = NULL;
  CELL_TRY(gpu_rows("logsumexp", a, ndims, dims, keepdim, kt, &rows, &outer, &len, &nd, shape));
  cell_status s = gpu_new_tensor(g, kt, nd, shape, &o);
  if (s == CELL_OK) s = gpu_launch(gpuk_logsumexp(g->stream, (int)kt, gpu_data(rows), gpu_data(o), outer, len), "logsumexp");
  if (s == CELL_OK) s = gpu_contig_as(o, rt, &r);
  cell_tensor *tmp[2] = {rows, o};
  gpu_release_all(tmp, 2);
  return finish(s, r, out);
}

/* --- roll ------------------------------------------------------------------------------- */

static int64_t wrap(int64_t s, int64_t n) {
  if (n == 0) return 0;
  s %= n;
  return s < 0 ? s + n : s;
}

static cell_status roll_run(const cell_tensor *a, const gpuk_layout *L, const gpuk_roll_args *R, int nd,
                            const int64_t *shape, cell_tensor **out) {
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *r;
  CELL_TRY(gpu_new_tensor(g, a->dtype, nd, shape, &r));
  cell_status s = gpu_launch(gpuk_roll(g->stream, (int)cell_dtype_size(a->dtype), *L, *R, gpu_data(a), gpu_data(r),
                                       gpu_numel(r)),
                             "roll");
  return finish(s, r, out);
}

cell_status gpu_roll(const cell_tensor *a, int n, const int64_t *shifts, const int *dims, cell_tensor **out) {
  if (!a || !out || n < 0 || (n > 0 && (!shifts || !dims))) return cell_error(CELL_ERR_VALUE, "roll: NULL argument");
  if (a->ndim > GPUK_MAX_DIMS)
    return cell_error(CELL_ERR_NOTIMPL, "roll of a %d-D tensor is not supported on device GPU", a->ndim);
  gpuk_layout L;
  gpuk_roll_args R;
  memset(&L, 0, sizeof L);
  memset(&R, 0, sizeof R);
  if (n == 0) { /* flattened: shifts[0] over the elements in row-major order */
    cell_tensor *c, *r = NULL;
    int64_t numel = gpu_numel(a);
    CELL_TRY(gpu_contiguous(a, &c));
    L.ndim = 1;
    L.shape[0] = numel;
    L.stride[0] = 1;
    R.shift[0] = wrap(shifts ? shifts[0] : 0, numel);
    cell_status s = roll_run(c, &L, &R, a->ndim, a->shape, &r);
    cell_tensor_release(c);
    return finish(s, r, out);
  }
  for (int k = 0; k < n; k++) {
    if (dims[k] < 0 || dims[k] >= (a->ndim ? a->ndim : 1))
      return cell_error(CELL_ERR_INDEX, "roll: dimension %d out of range for a %d-D tensor", dims[k], a->ndim);
    if (a->ndim == 0) continue;
    int64_t sz = a->shape[dims[k]];
    R.shift[dims[k]] = wrap(R.shift[dims[k]] + wrap(shifts[k], sz), sz);
  }
  L.ndim = a->ndim;
  for (int d = 0; d < a->ndim; d++) {
    L.shape[d] = a->shape[d];
    L.stride[d] = a->stride[d];
  }
  return roll_run(a, &L, &R, a->ndim, a->shape, out);
}

/* --- diag, eye ---------------------------------------------------------------------------- */

/* dst (a tensor's element at `at`, then k elements `step` apart) = src's
 * k contiguous elements. */
static cell_status put_run(cell_tensor *dst, int64_t at, int64_t step, const cell_tensor *src, int64_t k,
                           const char *op) {
  if (k <= 0) return CELL_OK;
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = 1;
  L.shape[0] = k;
  L.stride[0] = step;
  gpu_ctx *g = gpu_ctx_of(dst);
  char *base = (char *)gpu_data(dst) + at * (int64_t)cell_dtype_size(dst->dtype);
  return gpu_launch(gpuk_put(g->stream, (int)cell_dtype_size(dst->dtype), L, gpu_data(src), base, k), op);
}

static cell_status zeros_on(gpu_ctx *g, cell_dtype dt, int nd, const int64_t *shape, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(gpu_new_tensor(g, dt, nd, shape, &r));
  unsigned char zero = 0; /* all-zero bytes are zero (or false) in every dtype */
  cell_status s = gpu_fill(g, gpu_data(r), (size_t)gpu_numel(r) * cell_dtype_size(dt), &zero, 1);
  return finish(s, r, out);
}

cell_status gpu_diag(const cell_tensor *a, int64_t offset, int64_t rows, int64_t cols, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "diag: NULL argument");
  if (offset > CELL_MAX_NUMEL || offset < -CELL_MAX_NUMEL)
    return cell_error(CELL_ERR_VALUE, "diag: offset %lld is out of range", (long long)offset);
  gpu_ctx *g = gpu_ctx_of(a);
  if (a->ndim == 1) {
    int64_t n = a->shape[0], ao = offset < 0 ? -offset : offset;
    if (rows < 0) rows = cols = n + ao;
    int64_t shape[2] = {rows, cols};
    /* elements i with row ri < rows and column ci < cols: a prefix of a */
    int64_t k = offset >= 0 ? cols - offset : rows + offset;
    if (k > n) k = n;
    if (k > (offset >= 0 ? rows : cols)) k = offset >= 0 ? rows : cols;
    int64_t at = offset >= 0 ? offset : -offset * cols;
    cell_tensor *r = NULL, *c = NULL;
    cell_status s = zeros_on(g, a->dtype, 2, shape, &r);
    if (s == CELL_OK && k > 0) s = gpu_contiguous(a, &c);
    if (s == CELL_OK && k > 0) s = put_run(r, at, cols + 1, c, k, "diag");
    if (c) cell_tensor_release(c);
    return finish(s, r, out);
  }
  if (a->ndim == 2) {
    int64_t R = a->shape[0], C = a->shape[1];
    int64_t n = offset >= 0 ? (R < C - offset ? R : C - offset) : (R + offset < C ? R + offset : C);
    if (n < 0) n = 0;
    gpuk_layout L;
    memset(&L, 0, sizeof L);
    L.ndim = 1;
    L.shape[0] = n;
    L.stride[0] = a->stride[0] + a->stride[1];
    int64_t first = n ? (offset >= 0 ? offset * a->stride[1] : -offset * a->stride[0]) : 0;
    const char *in = (const char *)gpu_data(a) + first * (int64_t)cell_dtype_size(a->dtype);
    cell_tensor *r;
    CELL_TRY(gpu_new_tensor(g, a->dtype, 1, &n, &r));
    cell_status s = n ? gpu_launch(gpuk_copy_cast(g->stream, L, (int)a->dtype, in, (int)a->dtype, gpu_data(r), n), "diag")
                      : CELL_OK;
    return finish(s, r, out);
  }
  char b[256];
  return cell_error(CELL_ERR_VALUE, "diag: input must be 1-D or 2-D, got shape %s",
                    cell_shape_str(a->ndim, a->shape, b, sizeof b));
}

cell_status gpu_eye(int64_t n, int64_t m, cell_dtype dt, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "eye: NULL output");
  if ((unsigned)dt >= CELL_DTYPE_COUNT) return cell_error(CELL_ERR_TYPE, "eye: unknown dtype %d", (int)dt);
  if (n < 0 || m < 0)
    return cell_error(CELL_ERR_VALUE, "eye: sizes must be non-negative, got n=%lld, m=%lld", (long long)n, (long long)m);
  if (!gpu_dtype_copyable(dt))
    return cell_error(CELL_ERR_NOTIMPL, "eye of %s is not supported on device GPU", cell_dtype_name(dt));
  gpu_ctx *g = gpu_ctx_current();
  if (!g) return cell_error(CELL_ERR_RUNTIME, "eye: the current device is not a GPU");
  int64_t shape[2] = {n, m}, k = n < m ? n : m;
  cell_tensor *r = NULL, *ones = NULL, *one = NULL;
  cell_status s = zeros_on(g, dt, 2, shape, &r);
  if (s == CELL_OK && k > 0) { /* k ones of dt: a float64 1 cast, then spread */
    double v = 1.0;
    s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &k, &one);
    if (s == CELL_OK) s = gpu_fill(g, gpu_data(one), (size_t)k * 8, &v, 8);
    if (s == CELL_OK) s = gpu_contig_as(one, dt, &ones);
    if (s == CELL_OK) s = put_run(r, 0, m + 1, ones, k, "eye");
  }
  cell_tensor *tmp[2] = {one, ones};
  gpu_release_all(tmp, 2);
  return finish(s, r, out);
}

/* --- dot ---------------------------------------------------------------------------------- */

cell_status gpu_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (!a || !b || !out) return cell_error(CELL_ERR_VALUE, "dot: NULL argument");
  if (a->ndim != 1 || b->ndim != 1)
    return cell_error(CELL_ERR_VALUE, "dot: both operands must be 1-D, got %d-D and %d-D", a->ndim, b->ndim);
  if (a->shape[0] != b->shape[0])
    return cell_error(CELL_ERR_VALUE, "dot: shapes (%lld) and (%lld) cannot be multiplied", (long long)a->shape[0],
                      (long long)b->shape[0]);
  cell_dtype dt = cell_dtype_promote(a->dtype, b->dtype);
  if (dt == CELL_DTYPE_BOOL) return cell_error(CELL_ERR_TYPE, "dot: not supported for Bool tensors");
  if (dt != CELL_DTYPE_F32 && dt != CELL_DTYPE_F64)
    return cell_error(CELL_ERR_NOTIMPL, "dot of %s is not supported on device GPU", cell_dtype_name(dt));
  /* products in float64, summed in float64 (gpu_reduce), rounded once */
  cell_tensor *ca = NULL, *cb = NULL, *p = NULL, *sum = NULL, *r = NULL;
  cell_status s = gpu_contig_as(a, CELL_DTYPE_F64, &ca);
  if (s == CELL_OK) s = gpu_contig_as(b, CELL_DTYPE_F64, &cb);
  if (s == CELL_OK) s = gpu_kernels.binary(CELL_OP_MUL, ca, cb, &p);
  if (s == CELL_OK) s = gpu_reduce(CELL_RED_SUM, p, 0, NULL, 0, &sum);
  if (s == CELL_OK) s = gpu_contig_as(sum, dt, &r);
  cell_tensor *tmp[4] = {ca, cb, p, sum};
  gpu_release_all(tmp, 4);
  return finish(s, r, out);
}

/* --- cumprod's gradient --------------------------------------------------------------------- */

cell_status gpu_cumprod_backward(const cell_tensor *g, const cell_tensor *x, int dim, cell_tensor **gx) {
  if (!g || !x || !gx) return cell_error(CELL_ERR_VALUE, "cumprod_backward: NULL argument");
  if (dim < 0 || dim >= (x->ndim ? x->ndim : 1))
    return cell_error(CELL_ERR_INDEX, "cumprod_backward: dimension %d out of range for a %d-D tensor", dim, x->ndim);
  int same = g->ndim == x->ndim;
  for (int d = 0; same && d < x->ndim; d++) same = g->shape[d] == x->shape[d];
  if (!same) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "cumprod_backward: gradient of shape %s for an input of shape %s",
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1), cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  if (!gpu_dtype_copyable(x->dtype) || !gpu_dtype_copyable(g->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "cumprod_backward of %s is not supported on device GPU", cell_dtype_name(x->dtype));
  cell_dtype rt = is_float_dt(x->dtype) ? x->dtype : CELL_DTYPE_F32;
  int64_t outer = 1, len = x->ndim ? x->shape[dim] : 1, inner = 1;
  for (int d = 0; d < dim && d < x->ndim; d++) outer *= x->shape[d];
  for (int d = dim + 1; d < x->ndim; d++) inner *= x->shape[d];
  gpu_ctx *c = gpu_ctx_of(x);
  cell_tensor *xc = NULL, *gc = NULL, *o = NULL, *r = NULL;
  cell_status s = gpu_contig_as(x, CELL_DTYPE_F64, &xc);
  if (s == CELL_OK) s = gpu_contig_as(g, CELL_DTYPE_F64, &gc);
  if (s == CELL_OK) s = gpu_new_tensor(c, CELL_DTYPE_F64, x->ndim, x->shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_cumprod_backward(c->stream, gpu_data(xc), gpu_data(gc), gpu_data(o), outer, len, inner),
                   "cumprod_backward");
  if (s == CELL_OK) s = gpu_contig_as(o, rt, &r);
  cell_tensor *tmp[3] = {xc, gc, o};
  gpu_release_all(tmp, 3);
  return finish(s, r, gx);
}
