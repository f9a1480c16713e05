/* create.c - filled tensors: full, arange, linspace, eye, and the random tensors
 * rand, randn, randint.
 *
 * The random tensors draw from the counter-based generator (rng.h): a call
 * reserves one counter per Philox block it needs, and element j is a pure
 * function of (seed, first counter, j). The fill is split over threads in
 * chunks, which therefore changes nothing in the result. */
#include "../core/iter.h"
#include "../core/rng.h"
#include "kernels.h"
#include <float.h>
#include "kernel_list.h"

/* Elements per chunk of a parallel fill (even, so random pairs never split). */
#define FILL_CHUNK ((int64_t)1 << 14)

/* Fill elements [lo, hi) of a contiguous tensor. */
typedef void (*fill_fn)(const void *ctx, char *data, cell_dtype dt, int64_t lo, int64_t hi);

/* Run fn over all n elements of t (contiguous), in parallel when large.
 * CELL_ERR_INTERRUPT if the interrupt flag went up meanwhile. */
static cell_status run_fill(cell_tensor *t, fill_fn fn, const void *ctx) {
  int64_t n = cell_shape_numel(t->ndim, t->shape);
  char *data = cell_tensor_base(t);
  cell_dtype dt = t->dtype;
  volatile int *intr = &cell_ctx()->interrupt;
  int64_t nchunks = (n + FILL_CHUNK - 1) / FILL_CHUNK;
  int par = n >= CELL_PARALLEL_GRAIN && cell_ctx()->num_threads > 1;
  cell_tensor_bump(t);
  CELL_FOR(par, int64_t, c, nchunks, {
    if (*intr) continue;
    int64_t lo = c * FILL_CHUNK, hi = lo + FILL_CHUNK < n ? lo + FILL_CHUNK : n;
    fn(ctx, data, dt, lo, hi);
  });
  if (*intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  return CELL_OK;
}

/* Allocate, fill, and hand out (or release on failure). */
static cell_status make_filled(cell_dtype dt, int ndim, const int64_t *shape, fill_fn fn,
                               const void *ctx, cell_tensor **out) {
  cell_tensor *t;
  CELL_TRY(cell_tensor_new_contig(dt, ndim, shape, &t));
  cell_status s = run_fill(t, fn, ctx);
  if (s != CELL_OK) {
    cell_tensor_release(t);
    return s;
  }
  *out = t;
  return CELL_OK;
}

static cell_status check_dtype(const char *op, cell_dtype dt) {
  if ((unsigned)dt >= CELL_DTYPE_COUNT)
    return cell_error(CELL_ERR_TYPE, "%s: unknown dtype %d", op, (int)dt);
  return CELL_OK;
}

/* --- arange, linspace ------------------------------------------------------ */

typedef struct {
  double start, step;
  int64_t n;
  int has_last;  /* linspace: the last element is exactly `last` */
  double last;
} ramp_ctx;

static void ramp_fill(const void *vctx, char *data, cell_dtype dt, int64_t lo, int64_t hi) {
  const ramp_ctx *c = vctx;
  int es = cell_dtype_size(dt);
  for (int64_t i = lo; i < hi; i++) {
    double v = c->has_last && i == c->n - 1 ? c->last : c->start + (double)i * c->step;
    cell_store_f64(dt, data + i * es, v);
  }
}

cell_status cell_cpu_arange(double start, double stop, double step, cell_dtype dt,
                               cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "arange: NULL output");
  CELL_TRY(check_dtype("arange", dt));
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    return cell_error(CELL_ERR_VALUE,
                      "arange: start, stop and step must be finite, got start=%g, stop=%g, "
                      "step=%g",
                      start, stop, step);
  if (step == 0)
    return cell_error(CELL_ERR_VALUE, "arange: step must not be zero (start=%g, stop=%g)", start,
                      stop);
  double count = ceil((stop - start) / step);
  if (!(count <= (double)CELL_MAX_NUMEL)) /* also catches NaN */
    return cell_error(CELL_ERR_VALUE,
                      "arange: start=%g, stop=%g, step=%g gives %g elements, more than a "
                      "tensor can hold (%lld)",
                      start, stop, step, count, (long long)CELL_MAX_NUMEL);
  int64_t n = count > 0 ? (int64_t)count : 0;
  CELL_TRY(cell_shape_numel_checked("arange", 1, &n, NULL));
  ramp_ctx c = {start, step, n, 0, 0.0};
  return make_filled(dt, 1, &n, ramp_fill, &c, out);
}

cell_status cell_cpu_linspace(double start, double stop, int64_t n, cell_dtype dt,
                                 cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "linspace: NULL output");
  CELL_TRY(check_dtype("linspace", dt));
  if (n < 0)
    return cell_error(CELL_ERR_VALUE, "linspace: number of points must be non-negative, got %lld",
                      (long long)n);
  CELL_TRY(cell_shape_numel_checked("linspace", 1, &n, NULL));
  ramp_ctx c = {start, 0.0, n, 1, stop};
  if (n == 1) {
    c.last = start;
  } else if (n > 1) {
    c.step = (stop - start) / (double)(n - 1);
  }
  return make_filled(dt, 1, &n, ramp_fill, &c, out);
}

/* --- eye --------------------------------------------------------------------- */

cell_status cell_cpu_eye(int64_t n, int64_t m, cell_dtype dt, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "eye: NULL output");
  CELL_TRY(check_dtype("eye", dt));
  if (n < 0 || m < 0)
    return cell_error(CELL_ERR_VALUE, "eye: sizes must be non-negative, got n=%lld, m=%lld",
                      (long long)n, (long long)m);
  int64_t shape[2] = {n, m};
  CELL_TRY(cell_shape_numel_checked("eye", 2, shape, NULL));
  cell_tensor *t;
  CELL_TRY(cell_tensor_new_contig(dt, 2, shape, &t));
  char *data = cell_tensor_base(t);
  int es = cell_dtype_size(dt);
  /* All-zero bytes are zero (or false) in every dtype. */
  memset(data, 0, (size_t)n * (size_t)m * (size_t)es);
  int64_t k = n < m ? n : m;
  for (int64_t i = 0; i < k; i++) cell_store_i64(dt, data + (i * m + i) * es, 1);
  cell_tensor_bump(t);
  *out = t;
  return CELL_OK;
}

/* --- random -------------------------------------------------------------------- */

typedef struct {
  uint64_t seed, first;
  double scale;      /* rand: 2^bits, the precision of the dtype */
  int64_t low;       /* randint */
  uint64_t range;    /* randint: high - low, > 0 */
} rng_ctx;

/* Mantissa bits (with the implicit one) of a float dtype. */
static int float_digits(cell_dtype dt) {
  switch (dt) {
  case CELL_DTYPE_F64: return DBL_MANT_DIG;
  case CELL_DTYPE_F32: return FLT_MANT_DIG;
  case CELL_DTYPE_F16: return 11;
  case CELL_DTYPE_BF16: return 8;
  default: return 0;
  }
}

/* Two elements per Philox block, each from two 32-bit words. Chunks start
 * at even elements, so pairs are never split. */
static void rand_fill(const void *vctx, char *data, cell_dtype dt, int64_t lo, int64_t hi) {
  const rng_ctx *c = vctx;
  int es = cell_dtype_size(dt);
  uint32_t w[4];
  for (int64_t j = lo; j < hi; j += 2) {
    cell_philox(c->seed, c->first + (uint64_t)(j / 2), w);
    for (int k = 0; k < 2 && j + k < hi; k++) {
      /* Truncate to the dtype's precision: k / 2^bits is exact there, so
       * the stored value stays below 1. */
      double u = floor(cell_u01(w[2 * k], w[2 * k + 1]) * c->scale) / c->scale;
      cell_store_f64(dt, data + (j + k) * es, u);
    }
  }
}

/* Box-Muller: one block gives two uniforms and so two normals. */
static void randn_fill(const void *vctx, char *data, cell_dtype dt, int64_t lo, int64_t hi) {
  const rng_ctx *c = vctx;
  int es = cell_dtype_size(dt);
  const double two_pi = 6.283185307179586476925286766559;
  uint32_t w[4];
  for (int64_t j = lo; j < hi; j += 2) {
    cell_philox(c->seed, c->first + (uint64_t)(j / 2), w);
    double u1 = 1.0 - cell_u01(w[0], w[1]); /* (0, 1]: log stays finite */
    double u2 = cell_u01(w[2], w[3]);
    double r = sqrt(-2.0 * log(u1)), a = two_pi * u2;
    cell_store_f64(dt, data + j * es, r * cos(a));
    if (j + 1 < hi) cell_store_f64(dt, data + (j + 1) * es, r * sin(a));
  }
}

/* low + floor(r * range / 2^64) from 64 random bits per element. */
static void randint_fill(const void *vctx, char *data, cell_dtype dt, int64_t lo, int64_t hi) {
  const rng_ctx *c = vctx;
  int es = cell_dtype_size(dt);
  uint32_t w[4];
  for (int64_t j = lo; j < hi; j += 2) {
    cell_philox(c->seed, c->first + (uint64_t)(j / 2), w);
    for (int k = 0; k < 2 && j + k < hi; k++) {
      uint64_t r = ((uint64_t)w[2 * k] << 32) | w[2 * k + 1];
      uint64_t off = (uint64_t)(((unsigned __int128)r * c->range) >> 64);
      cell_store_i64(dt, data + (j + k) * es, (int64_t)((uint64_t)c->low + off));
    }
  }
}

/* Validate, allocate, reserve counters (only once nothing can fail but an
 * interrupt), fill. */
static cell_status make_random(cell_dtype dt, int ndim, const int64_t *shape, fill_fn fn,
                               rng_ctx *c, cell_tensor **out) {
  cell_tensor *t;
  CELL_TRY(cell_tensor_new_contig(dt, ndim, shape, &t));
  uint64_t n = (uint64_t)cell_shape_numel(ndim, shape);
  c->first = cell_rng_reserve((n + 1) / 2, &c->seed);
  cell_status s = run_fill(t, fn, c);
  if (s != CELL_OK) {
    cell_tensor_release(t);
    return s;
  }
  *out = t;
  return CELL_OK;
}

static cell_status check_random_args(const char *op, cell_dtype dt, int ndim,
                                     const int64_t *shape, cell_tensor **out) {
  if (!out || (ndim > 0 && !shape)) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(check_dtype(op, dt));
  return cell_check_shape(op, ndim, shape);
}

static cell_status check_float(const char *op, cell_dtype dt) {
  if (!cell_dtype_is_float(dt))
    return cell_error(CELL_ERR_TYPE, "%s: dtype must be a floating type, got %s", op,
                      cell_dtype_name(dt));
  return CELL_OK;
}

cell_status cell_cpu_rand(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  CELL_TRY(check_random_args("rand", dt, ndim, shape, out));
  CELL_TRY(check_float("rand", dt));
  rng_ctx c = {0, 0, ldexp(1.0, float_digits(dt)), 0, 0};
  return make_random(dt, ndim, shape, rand_fill, &c, out);
}

cell_status cell_cpu_randn(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  CELL_TRY(check_random_args("randn", dt, ndim, shape, out));
  CELL_TRY(check_float("randn", dt));
  rng_ctx c = {0, 0, 0.0, 0, 0};
  return make_random(dt, ndim, shape, randn_fill, &c, out);
}

cell_status cell_cpu_randint(int64_t low, int64_t high, cell_dtype dt, int ndim,
                                const int64_t *shape, cell_tensor **out) {
  CELL_TRY(check_random_args("randint", dt, ndim, shape, out));
  if (dt == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "randint: dtype must be an integer or floating type, got %s",
                      cell_dtype_name(dt));
  if (high <= low)
    return cell_error(CELL_ERR_VALUE, "randint: high must be greater than low, got low=%lld, "
                      "high=%lld", (long long)low, (long long)high);
  /* Every value in [low, high) must be representable in dt. */
  int64_t lo_ok, hi_ok;
  switch (dt) {
  case CELL_DTYPE_I8: lo_ok = INT8_MIN, hi_ok = INT8_MAX; break;
  case CELL_DTYPE_U8: lo_ok = 0, hi_ok = UINT8_MAX; break;
  case CELL_DTYPE_I16: lo_ok = INT16_MIN, hi_ok = INT16_MAX; break;
  case CELL_DTYPE_I32: lo_ok = INT32_MIN, hi_ok = INT32_MAX; break;
  case CELL_DTYPE_I64: lo_ok = INT64_MIN, hi_ok = INT64_MAX; break;
  default: /* floats: integers are exact up to 2^digits */
    hi_ok = (int64_t)1 << float_digits(dt);
    lo_ok = -hi_ok;
    break;
  }
  if (low < lo_ok || high - 1 > hi_ok)
    return cell_error(CELL_ERR_VALUE,
                      "randint: range [%lld, %lld) does not fit in %s (values must lie in "
                      "[%lld, %lld])",
                      (long long)low, (long long)high, cell_dtype_name(dt), (long long)lo_ok,
                      (long long)hi_ok);
  rng_ctx c = {0, 0, 0.0, low, (uint64_t)high - (uint64_t)low};
  return make_random(dt, ndim, shape, randint_fill, &c, out);
}

/* full: the device-independent zeros / ones / full (cell_tensor_full dispatches here). */
cell_status cell_cpu_full(cell_dtype dt, int ndim, const int64_t *shape, double value,
                             cell_tensor **out) {
  cell_tensor *t;
  if (!out) return cell_error(CELL_ERR_VALUE, "full: NULL argument");
  CELL_TRY(cell_tensor_empty(dt, ndim, shape, &t));
  cell_status s = cell_k_fill_(t, value);
  if (s != CELL_OK) {
    cell_tensor_release(t);
    return s;
  }
  *out = t;
  return CELL_OK;
}
