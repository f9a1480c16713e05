/* scan.c - cumprod (and its backward) and logsumexp: kernels that run
 * along lines, in double.
 *
 * cumprod's gradient is computed per line without dividing by a zero:
 * before the first zero of a line it is the reverse cumulative sum of
 * g * y divided by x; at the first zero it is the product of the elements
 * before it times the reverse scan of g over the products after it; past
 * it, 0 (PyTorch's rule). logsumexp subtracts each row's finite maximum
 * before exponentiating, so large inputs do not overflow. */
#include "kernels.h"
#include "kernel_list.h"
#include "lines.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include <math.h>
#include <string.h>

/* `omp simd` where gcc vectorises the loop; clang vectorises (or not)
 * on its own and warns when a requested one fails. */
#if defined(__GNUC__) && !defined(__clang__)
#define SCAN_SIMD(x) _Pragma(x)
#else
#define SCAN_SIMD(x)
#endif

#define SCAN_GRAIN CELL_PARALLEL_GRAIN /* iter.h: the engine's bar for threads */

/* fn over lines 0..count-1 with a scratch of `per` doubles per thread. */
typedef void (*dline_fn)(void *ctx, int64_t line, double *buf);
static cell_status run_dlines(const char *op, int64_t count, int64_t per, int64_t work,
                              dline_fn fn, void *ctx) {
  if (count == 0) return CELL_OK;
  size_t bytes = (size_t)(per ? per : 1) * sizeof(double);
  int par = count > 1 && work >= SCAN_GRAIN && cell_ctx()->num_threads > 1;
  int failed = 0;
  if (!par) {
    double *buf = cell_alloc(bytes);
    if (!buf) failed = 1;
    for (int64_t l = 0; buf && l < count; l++) fn(ctx, l, buf);
    cell_dealloc(buf);
  } else {
#pragma omp parallel
    {
      double *buf = cell_alloc(bytes);
      if (!buf) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(static)
      for (int64_t l = 0; l < count; l++)
        if (buf) fn(ctx, l, buf);
      cell_dealloc(buf);
    }
  }
  if (failed)
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory allocating %zu bytes of scratch", op, bytes);
  return CELL_OK;
}

/* --- cumprod ------------------------------------------------------------------- */

typedef struct {
  const cell_tensor *a, *g;
  cell_tensor *r;
  int dim;
  int64_t len;
} cp_ctx;

static void cumprod_line(void *p, int64_t line, double *buf) {
  cp_ctx *c = p;
  (void)buf;
  const cell_tensor *a = c->a;
  cell_tensor *r = c->r;
  int64_t as = a->ndim ? a->stride[c->dim] : 1, rs = r->ndim ? r->stride[c->dim] : 1;
  int64_t aes = cell_dtype_size(a->dtype), res = cell_dtype_size(r->dtype);
  const char *ap = cell_tensor_base(a) + cell_line_offset(a, c->dim, line) * aes;
  char *rp = cell_tensor_base(r) + cell_line_offset(r, c->dim, line) * res;
  if (cell_dtype_is_float(r->dtype)) {
    double acc = 1;
    for (int64_t i = 0; i < c->len; i++) {
      acc *= cell_load_f64(a->dtype, ap + i * as * aes);
      cell_store_f64(r->dtype, rp + i * rs * res, acc);
    }
  } else { /* int64, wrapping as PyTorch's */
    uint64_t acc = 1;
    for (int64_t i = 0; i < c->len; i++) {
      acc *= (uint64_t)cell_load_i64(a->dtype, ap + i * as * aes);
      ((int64_t *)(void *)rp)[i * rs] = (int64_t)acc;
    }
  }
}

cell_status cell_cpu_cumprod(const cell_tensor *a, int dim, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "cumprod: NULL argument");
  CELL_TRY(cell_check_dim("cumprod", dim, a->ndim));
  cell_dtype rt = cell_dtype_is_float(a->dtype) ? a->dtype : CELL_DTYPE_I64;
  cp_ctx c = {a, NULL, NULL, dim, 0};
  int64_t stride, count;
  cell_line_geometry(a, dim, &c.len, &stride, &count);
  CELL_TRY(cell_tensor_new_contig(rt, a->ndim, a->shape, &c.r));
  cell_status s = run_dlines("cumprod", count, 1, count * c.len, cumprod_line, &c);
  if (s != CELL_OK) return cell_release4(s, c.r, NULL, NULL, NULL);
  *out = c.r;
  return CELL_OK;
}

static void cumprod_bw_line(void *p, int64_t line, double *buf) {
  cp_ctx *c = p;
  const cell_tensor *x = c->a, *g = c->g;
  cell_tensor *r = c->r;
  int64_t n = c->len;
  double *xv = buf, *gv = buf + n, *o = buf + 2 * n;
  cell_load_run(x->dtype, cell_tensor_base(x) + cell_line_offset(x, c->dim, line) * cell_dtype_size(x->dtype),
                (x->ndim ? x->stride[c->dim] : 1) * cell_dtype_size(x->dtype), n, xv);
  cell_load_run(g->dtype, cell_tensor_base(g) + cell_line_offset(g, c->dim, line) * cell_dtype_size(g->dtype),
                (g->ndim ? g->stride[c->dim] : 1) * cell_dtype_size(g->dtype), n, gv);
  int64_t z = 0;
  while (z < n && xv[z] != 0) z++;
  /* before the first zero: sum_{j=i}^{z-1} g_j y_j / x_i */
  double y = 1;
  for (int64_t i = 0; i < z; i++) {
    y *= xv[i];
    o[i] = gv[i] * y;
  }
  double acc = 0;
  for (int64_t i = z - 1; i >= 0; i--) {
    acc += o[i];
    o[i] = acc / xv[i];
  }
  if (z < n) {
    double pre = 1, q = 1, sum = 0;
    for (int64_t i = 0; i < z; i++) pre *= xv[i];
    for (int64_t j = z; j < n; j++) {
      if (j > z) q *= xv[j];
      sum += gv[j] * q;
    }
    o[z] = pre * sum;
    for (int64_t j = z + 1; j < n; j++) o[j] = 0;
  }
  cell_store_run(r->dtype, cell_tensor_base(r) + cell_line_offset(r, c->dim, line) * cell_dtype_size(r->dtype),
                 (r->ndim ? r->stride[c->dim] : 1) * cell_dtype_size(r->dtype), n, o);
}

cell_status cell_cpu_cumprod_backward(const cell_tensor *g, const cell_tensor *x, int dim,
                                      cell_tensor **gx) {
  if (!g || !x || !gx) return cell_error(CELL_ERR_VALUE, "cumprod_backward: NULL argument");
  CELL_TRY(cell_check_dim("cumprod_backward", dim, x->ndim));
  if (!cell_shape_equal(g->ndim, g->shape, x->ndim, x->shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "cumprod_backward: gradient of shape %s for an input of shape %s",
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  cell_dtype rt = cell_dtype_is_float(x->dtype) ? x->dtype : CELL_DTYPE_F32;
  cp_ctx c = {x, g, NULL, dim, 0};
  int64_t stride, count;
  cell_line_geometry(x, dim, &c.len, &stride, &count);
  CELL_TRY(cell_tensor_new_contig(rt, x->ndim, x->shape, &c.r));
  cell_status s = run_dlines("cumprod_backward", count, 3 * c.len, count * c.len, cumprod_bw_line, &c);
  if (s != CELL_OK) return cell_release4(s, c.r, NULL, NULL, NULL);
  *gx = c.r;
  return CELL_OK;
}

/* --- logsumexp ----------------------------------------------------------------- */

typedef struct {
  const cell_tensor *x; /* contiguous, reduced dims last */
  cell_tensor *r;
  int64_t len;
} lse_ctx;

/* exp(x) for x <= 0 in float (Cephes' polynomial, within 2 ulp), written
 * so that the compiler vectorises the loop around it: no libm call, the
 * power of two built from its bits. */
static inline float exp_nonpos(float x) {
  float c = x + 87.0f;
  x = (c + fabsf(c)) * 0.5f - 87.0f; /* max(x, -87), branch-free */
  float fx = x * 1.44269504088896341f + 0.5f;
  int n = (int)(fx + 128.0f) - 128; /* floor: fx + 128 > 0 */
  float fn = (float)n;
  x = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * x * x + x + 1.0f;
  int32_t bits = (n + 127) << 23;
  float two;
  memcpy(&two, &bits, 4);
  return y * two;
}

/* Compiled twice where the compiler can (AVX2 and the baseline), the
 * loader picking one for the machine: the exp loop runs 8 wide. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void lse_row(void *p, int64_t row, double *buf) {
  lse_ctx *c = p;
  int64_t n = c->len;
  double res;
  if (c->x->dtype == CELL_DTYPE_F32) {
    const float *v = (const float *)(void *)cell_tensor_base(c->x) + row * n;
    float m = -INFINITY;
    int nan = 0;
    SCAN_SIMD("omp simd reduction(max : m) reduction(| : nan)")
    for (int64_t i = 0; i < n; i++) {
      m = v[i] > m ? v[i] : m;
      nan |= v[i] != v[i];
    }
    if (nan || isinf(m)) {
      res = nan ? NAN : m; /* +inf, or -inf: every element -inf (or none) */
    } else {
      /* float sums over blocks of 512 (each term is at most 1: a block's
       * sum is exact to float rounding, the vector lanes full width),
       * added up in double */
      double s = 0;
      for (int64_t i0 = 0; i0 < n; i0 += 512) {
        int64_t i1 = i0 + 512 < n ? i0 + 512 : n;
        float bs = 0;
        SCAN_SIMD("omp simd reduction(+ : bs)")
        for (int64_t i = i0; i < i1; i++) bs += exp_nonpos(v[i] - m);
        s += bs;
      }
      res = log(s) + m;
    }
  } else {
    const char *b = cell_tensor_base(c->x) + row * n * cell_dtype_size(c->x->dtype);
    double m = -INFINITY, s = 0;
    const double *v;
    if (c->x->dtype == CELL_DTYPE_F64) {
      v = (const double *)(const void *)b;
    } else {
      cell_load_run(c->x->dtype, b, cell_dtype_size(c->x->dtype), n, buf);
      v = buf;
    }
    for (int64_t i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
    if (isinf(m)) m = 0;
    for (int64_t i = 0; i < n; i++) s += exp(v[i] - m);
    res = log(s) + m;
  }
  cell_store_f64(c->r->dtype, cell_tensor_base(c->r) + row * cell_dtype_size(c->r->dtype), res);
}

cell_status cell_cpu_logsumexp(const cell_tensor *a, int ndims, const int *dims, int keepdim,
                               cell_tensor **out) {
  if (!a || !out || (ndims > 0 && !dims)) return cell_error(CELL_ERR_VALUE, "logsumexp: NULL argument");
  if (ndims < 0 || ndims > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "logsumexp: %d dimensions given", ndims);
  bool red[CELL_MAX_DIMS] = {false};
  for (int k = 0; k < ndims; k++) {
    CELL_TRY(cell_check_dim("logsumexp", dims[k], a->ndim));
    if (red[dims[k]])
      return cell_error(CELL_ERR_VALUE,
                        "logsumexp: dimension %d appears more than once in the list of dimensions", dims[k]);
    red[dims[k]] = true;
  }
  if (ndims == 0)
    for (int d = 0; d < a->ndim; d++) red[d] = true;
  int perm[CELL_MAX_DIMS], np = 0;
  int64_t ps[CELL_MAX_DIMS], pst[CELL_MAX_DIMS], os[CELL_MAX_DIMS], rows = 1, len = 1;
  int on = 0;
  for (int d = 0; d < a->ndim; d++)
    if (!red[d]) {
      perm[np++] = d;
      rows *= a->shape[d];
      os[on++] = a->shape[d];
    } else if (keepdim) {
      os[on++] = 1;
    }
  for (int d = 0; d < a->ndim; d++)
    if (red[d]) {
      perm[np++] = d;
      len *= a->shape[d];
    }
  for (int k = 0; k < np; k++) ps[k] = a->shape[perm[k]], pst[k] = a->stride[perm[k]];
  cell_dtype rt = cell_dtype_is_float(a->dtype) ? a->dtype : CELL_DTYPE_F32;
  cell_tensor *pv = NULL, *xc = NULL, *r = NULL;
  cell_status s = cell_tensor_new_view(a, a->ndim, ps, pst, a->offset, &pv);
  if (s == CELL_OK) s = cell_k_contiguous(pv, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(rt, on, os, &r);
  if (s == CELL_OK) {
    lse_ctx c = {xc, r, len};
    /* an exp per element: worth threads at a sixteenth of the usual work */
    s = run_dlines("logsumexp", rows, len, rows * len * 16, lse_row, &c);
  }
  cell_release4(CELL_OK, pv, xc, NULL, NULL);
  if (s != CELL_OK) return cell_release4(s, r, NULL, NULL, NULL);
  *out = r;
  return CELL_OK;
}
