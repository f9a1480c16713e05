/* gpu_random.c - the GPU table's random rows: rand, randn, randint (made
 * on the current GPU), bernoulli, normal and multinomial.
 * bernoulli's probabilities and normal's means and deviations broadcast to
 * the output as float64 and checked on the device (the first value outside
 * its range read back for the CPU's message), then gpu_act.cu's Philox
 * fill with the engine's stream (two elements per block, as
 * src/ops/random.c draws them), so a seed gives the CPU's numbers for any
 * launch shape; cast to the CPU's result dtype. multinomial checks its
 * weights on a host copy, then draws one row per thread. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include "../core/rng.h"
#include "../ops/multinomial_check.h"
#include <math.h>
#include <stdlib.h>
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

/* The broadcast shape of (na, a) and (nb, b): the CPU's ValueError. */
static cell_status bshape(const char *op, int na, const int64_t *a, int nb, const int64_t *b, int *nd, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int d = 0; d < n; d++) {
    int ka = d - (n - na), kb = d - (n - nb);
    int64_t x = ka < 0 ? 1 : a[ka], y = kb < 0 ? 1 : b[kb];
    if (x != y && x != 1 && y != 1) {
      char ba[256], bb[256];
      return cell_error(CELL_ERR_VALUE, "%s: shapes %s and %s cannot be broadcast", op, cell_shape_str(na, a, ba, sizeof ba),
                        cell_shape_str(nb, b, bb, sizeof bb));
    }
    out[d] = x == 1 ? y : x;
  }
  *nd = n;
  return CELL_OK;
}

/* The first element of v (n float64 on g) outside [lo, hi] into *val;
 * *found 0 when there is none. */
static cell_status first_outside(gpu_ctx *g, const cell_tensor *v, double lo, double hi, int *found, double *val) {
  *found = 0;
  int64_t n = gpu_numel(v), one = 1;
  if (n == 0) return CELL_OK;
  cell_tensor *bad;
  CELL_TRY(gpu_new_tensor(g, CELL_DTYPE_I64, 1, &one, &bad));
  unsigned long long none = ~0ull, at = 0;
  cell_status s = gpu_fill(g, gpu_data(bad), 8, &none, 8);
  if (s == CELL_OK) s = gpu_launch(gpuk_first_outside(g->stream, gpu_data(v), n, lo, hi, gpu_data(bad)), "range check");
  if (s == CELL_OK) s = gpu_copy_d2h(g, &at, gpu_data(bad), 8);
  if (s == CELL_OK && at != ~0ull && at >= 1 && (int64_t)at <= n) {
    *found = 1;
    s = gpu_copy_d2h(g, val, (const double *)gpu_data(v) + (at - 1), 8);
  }
  cell_tensor_release(bad);
  return s;
}

/* A float64 fill of shape (nd, shape) from the stream (pa / pb as the
 * kernel takes them), cast to dt. */
static cell_status fill(gpu_ctx *g, const char *op, int kind, double ps, const cell_tensor *pa, const cell_tensor *pb,
                        int nd, const int64_t *shape, cell_dtype dt, cell_tensor **out) {
  cell_tensor *v = NULL, *r = NULL;
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, nd, shape, &v);
  int64_t n = s == CELL_OK ? gpu_numel(v) : 0;
  if (s == CELL_OK && n > 0) {
    uint64_t seed, first = cell_rng_reserve((uint64_t)(n + 1) / 2, &seed);
    s = gpu_launch(gpuk_rand(g->stream, kind, seed, first, ps, 0, 0, pa ? gpu_data(pa) : NULL,
                             pb ? gpu_data(pb) : NULL, gpu_data(v), NULL, n),
                   op);
  }
  if (s == CELL_OK) s = gpu_contig_as(v, dt, &r);
  if (v) cell_tensor_release(v);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status gpu_bernoulli(const cell_tensor *x, const cell_tensor *p, double ps, cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "bernoulli: NULL argument");
  if (!gpu_dtype_copyable(x->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "bernoulli of %s is not supported on device GPU", cell_dtype_name(x->dtype));
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *pd = NULL;
  if (p) {
    if (!is_float_dt(p->dtype))
      return cell_error(CELL_ERR_TYPE, "bernoulli: probabilities must be a float tensor, got %s",
                        cell_dtype_name(p->dtype));
    int nd;
    int64_t bs[CELL_MAX_DIMS];
    CELL_TRY(bshape("bernoulli", p->ndim, p->shape, x->ndim, x->shape, &nd, bs));
    int same = nd == x->ndim;
    for (int d = 0; same && d < nd; d++) same = bs[d] == x->shape[d];
    if (!same) {
      char s1[96], s2[96];
      return cell_error(CELL_ERR_VALUE, "bernoulli: probabilities of shape %s do not broadcast to the input's shape %s",
                        cell_shape_str(p->ndim, p->shape, s1, sizeof s1), cell_shape_str(x->ndim, x->shape, s2, sizeof s2));
    }
    CELL_TRY(gpu_spread(p, CELL_DTYPE_F64, x->ndim, x->shape, &pd));
    int found;
    double bad = 0;
    cell_status s = first_outside(g, pd, 0, 1, &found, &bad);
    if (s == CELL_OK && found)
      s = cell_error(CELL_ERR_VALUE, "bernoulli: every probability must lie in [0, 1], got %g", bad);
    if (s != CELL_OK) {
      cell_tensor_release(pd);
      return s;
    }
  } else if (!(ps >= 0 && ps <= 1)) {
    return cell_error(CELL_ERR_VALUE, "bernoulli: p must lie in [0, 1], got %g", ps);
  }
  cell_status s = fill(g, "bernoulli", GPUK_RAND_BERNOULLI, ps, pd, NULL, x->ndim, x->shape, x->dtype, out);
  if (pd) cell_tensor_release(pd);
  return s;
}

cell_status gpu_normal(int ndim, const int64_t *shape, const cell_tensor *mean, const cell_tensor *std,
                       cell_tensor **out) {
  if (!mean || !std || !out || (ndim > 0 && !shape)) return cell_error(CELL_ERR_VALUE, "normal: NULL argument");
  if (ndim < 0 || ndim > CELL_MAX_DIMS) return cell_error(CELL_ERR_VALUE, "normal: %d dimensions given", ndim);
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      return cell_error(CELL_ERR_VALUE, "normal: sizes must be non-negative, got %lld", (long long)shape[d]);
  if (!is_float_dt(mean->dtype) || !is_float_dt(std->dtype))
    return cell_error(CELL_ERR_TYPE, "normal: mean and stddev must be float, got %s and %s",
                      cell_dtype_name(mean->dtype), cell_dtype_name(std->dtype));
  int n1, n2;
  int64_t s1[CELL_MAX_DIMS], s2[CELL_MAX_DIMS];
  CELL_TRY(bshape("normal", ndim, shape, mean->ndim, mean->shape, &n1, s1));
  CELL_TRY(bshape("normal", n1, s1, std->ndim, std->shape, &n2, s2));
  cell_dtype dt = cell_dtype_promote(mean->dtype, std->dtype);
  gpu_ctx *g = gpu_ctx_of(mean);
  cell_tensor *m = NULL, *sd = NULL;
  cell_status s = gpu_spread(mean, CELL_DTYPE_F64, n2, s2, &m);
  if (s == CELL_OK) s = gpu_spread(std, CELL_DTYPE_F64, n2, s2, &sd);
  if (s == CELL_OK) {
    int found;
    double bad = 0;
    s = first_outside(g, sd, 0, INFINITY, &found, &bad);
    if (s == CELL_OK && found) s = cell_error(CELL_ERR_VALUE, "normal: stddev must be at least 0 everywhere, got %g", bad);
  }
  if (s == CELL_OK) s = fill(g, "normal", GPUK_RAND_NORMAL, 0, m, sd, n2, s2, dt, out);
  cell_tensor *tmp[2] = {m, sd};
  gpu_release_all(tmp, 2);
  return s;
}

/* multinomial: the weights copied to the host for src/ops/random.c's row
 * checks (and messages), then one thread per row draws. */
cell_status gpu_multinomial(const cell_tensor *probs, int64_t num_samples, int replacement, int64_t index_base,
                            cell_tensor **out) {
  if (!probs || !out) return cell_error(CELL_ERR_VALUE, "multinomial: NULL argument");
  char sb[96];
  if (probs->ndim != 1 && probs->ndim != 2)
    return cell_error(CELL_ERR_VALUE, "multinomial: probabilities must be 1-D or 2-D, got shape %s",
                      cell_shape_str(probs->ndim, probs->shape, sb, sizeof sb));
  if (!is_float_dt(probs->dtype))
    return cell_error(CELL_ERR_TYPE, "multinomial: probabilities must be a float tensor, got %s",
                      cell_dtype_name(probs->dtype));
  int64_t k = probs->shape[probs->ndim - 1], rows = probs->ndim == 2 ? probs->shape[0] : 1;
  if (k == 0)
    return cell_error(CELL_ERR_VALUE, "multinomial: the probabilities of shape %s have no category to sample",
                      cell_shape_str(probs->ndim, probs->shape, sb, sizeof sb));
  if (num_samples < 1)
    return cell_error(CELL_ERR_VALUE, "multinomial: num_samples must be at least 1, got %lld", (long long)num_samples);
  if (!replacement && num_samples > k)
    return cell_error(CELL_ERR_VALUE, "multinomial: cannot draw %lld samples without replacement from %lld categories",
                      (long long)num_samples, (long long)k);
  if (rows > 0 && num_samples > INT64_MAX / 4 / rows)
    return cell_error(CELL_ERR_VALUE, "multinomial: %lld rows of %lld samples is too large", (long long)rows,
                      (long long)num_samples);
  int64_t oshape[2] = {rows, num_samples}, total = rows * num_samples;
  const int64_t *os = probs->ndim == 2 ? oshape : oshape + 1;
  gpu_ctx *g = gpu_ctx_of(probs);
  cell_tensor *p = NULL, *cdf = NULL, *r = NULL;
  double *host = NULL;
  cell_status s = gpu_contig_as(probs, CELL_DTYPE_F64, &p);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, probs->ndim, os, &r);
  if (s == CELL_OK && rows * k > 0) {
    host = malloc(sizeof(double) * (size_t)(rows * k));
    if (!host) s = cell_error(CELL_ERR_MEMORY, "multinomial: out of memory for %lld probabilities", (long long)(rows * k));
    if (s == CELL_OK) s = gpu_copy_d2h(g, host, gpu_data(p), sizeof(double) * (size_t)(rows * k));
  }
  if (s == CELL_OK) s = cell_multinomial_check(host, rows, k, num_samples, replacement, index_base); /* k = 0: no reads */
  free(host);
  if (s == CELL_OK && total > 0) {
    int64_t m = rows * k;
    s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &m, &cdf);
    if (s == CELL_OK) {
      uint64_t seed, first = cell_rng_reserve((uint64_t)total, &seed);
      s = gpu_launch(gpuk_multinomial(g->stream, gpu_data(p), gpu_data(cdf), gpu_data(r), rows, k, num_samples,
                                      replacement, seed, first, (long long)index_base),
                     "multinomial");
    }
  }
  cell_tensor *tmp[2] = {p, cdf};
  gpu_release_all(tmp, 2);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* --- random fills ------------------------------------------------------------------------- */

/* Mantissa bits (with the implicit one) of a float dtype. */
static int float_digits(cell_dtype dt) {
  switch (dt) {
  case CELL_DTYPE_F64: return 53;
  case CELL_DTYPE_F32: return 24;
  case CELL_DTYPE_F16: return 11;
  case CELL_DTYPE_BF16: return 8;
  default: return 0;
  }
}

/* A tensor of dt and shape on the current GPU from the engine's stream
 * (counters reserved once the checks have passed, two elements a block). */
static cell_status random_fill(const char *op, int kind, double scale, long long low, unsigned long long range,
                               cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  if (!out || (ndim > 0 && !shape)) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  if ((unsigned)dt >= CELL_DTYPE_COUNT) return cell_error(CELL_ERR_TYPE, "%s: unknown dtype %d", op, (int)dt);
  if (ndim < 0 || ndim > CELL_MAX_DIMS) return cell_error(CELL_ERR_VALUE, "%s: %d dimensions given", op, ndim);
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      return cell_error(CELL_ERR_VALUE, "%s: sizes must be non-negative, got %lld", op, (long long)shape[d]);
  if (!gpu_dtype_copyable(dt))
    return cell_error(CELL_ERR_NOTIMPL, "%s of %s is not supported on device GPU", op, cell_dtype_name(dt));
  gpu_ctx *g = gpu_ctx_current();
  if (!g) return cell_error(CELL_ERR_RUNTIME, "%s: the current device is not a GPU", op);
  cell_dtype st = kind == GPUK_RAND_INT ? CELL_DTYPE_I64 : CELL_DTYPE_F64;
  cell_tensor *v = NULL, *r = NULL;
  cell_status s = gpu_new_tensor(g, st, ndim, shape, &v);
  if (s == CELL_OK) {
    int64_t n = gpu_numel(v);
    uint64_t seed, first = cell_rng_reserve((uint64_t)(n + 1) / 2, &seed);
    s = gpu_launch(gpuk_rand(g->stream, kind, seed, first, scale, low, range, NULL, NULL,
                             st == CELL_DTYPE_F64 ? (double *)gpu_data(v) : NULL,
                             st == CELL_DTYPE_I64 ? (long long *)gpu_data(v) : NULL, n),
                   op);
  }
  if (s == CELL_OK) s = gpu_contig_as(v, dt, &r);
  if (v) cell_tensor_release(v);
  return finish(s, r, out);
}

static cell_status check_float(const char *op, cell_dtype dt) {
  if (!is_float_dt(dt))
    return cell_error(CELL_ERR_TYPE, "%s: dtype must be a floating type, got %s", op, cell_dtype_name(dt));
  return CELL_OK;
}

cell_status gpu_rand(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  if ((unsigned)dt < CELL_DTYPE_COUNT) CELL_TRY(check_float("rand", dt));
  return random_fill("rand", GPUK_RAND_UNIFORM, ldexp(1.0, float_digits(dt)), 0, 0, dt, ndim, shape, out);
}

cell_status gpu_randn(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  if ((unsigned)dt < CELL_DTYPE_COUNT) CELL_TRY(check_float("randn", dt));
  return random_fill("randn", GPUK_RAND_NORMAL, 0, 0, 0, dt, ndim, shape, out);
}

cell_status gpu_randint(int64_t low, int64_t high, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  if (dt == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "randint: dtype must be an integer or floating type, got %s", cell_dtype_name(dt));
  if (high <= low)
    return cell_error(CELL_ERR_VALUE, "randint: high must be greater than low, got low=%lld, high=%lld",
                      (long long)low, (long long)high);
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
                      "randint: range [%lld, %lld) does not fit in %s (values must lie in [%lld, %lld])",
                      (long long)low, (long long)high, cell_dtype_name(dt), (long long)lo_ok, (long long)hi_ok);
  return random_fill("randint", GPUK_RAND_INT, 0, (long long)low, (unsigned long long)((uint64_t)high - (uint64_t)low),
                     dt, ndim, shape, out);
}
