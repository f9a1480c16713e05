/* random.c - sampling from given distributions: multinomial, bernoulli and
 * normal (rand, randn and randint, which need no input, are in create.c).
 *
 * Like create.c, each call reserves its Philox blocks from the calling
 * thread's current generator once its arguments are checked, and every
 * draw is a pure function of (seed, first block, position): the result
 * does not depend on the thread count. Probabilities, means and deviations
 * are read as float64 whatever their dtype. The public cell_op_* forms are
 * here too: nothing here is differentiable, so nothing records. */
#include "../core/iter.h"
#include "../core/rng.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "multinomial_check.h"
#include <math.h>
#include <stdlib.h>

/* t broadcast to (ndim, shape) as a contiguous float64 tensor. */
static cell_status dense_f64(const cell_tensor *t, int ndim, const int64_t *shape,
                             cell_tensor **out) {
  cell_tensor *e = NULL, *d = NULL;
  cell_status s = cell_k_expand(t, ndim, shape, &e);
  if (s == CELL_OK) s = cell_as_dtype(e, CELL_DTYPE_F64, &d);
  cell_tensor_release(e);
  if (s == CELL_OK) s = cell_k_contiguous(d, out);
  cell_tensor_release(d);
  return s;
}

/* r converted to dt (r released), into *out. */
static cell_status finish_as(cell_status s, cell_tensor *r, cell_dtype dt, cell_tensor **out) {
  if (s == CELL_OK && r->dtype != dt) {
    cell_tensor *c = NULL;
    s = cell_k_astype(r, dt, &c);
    cell_tensor_release(r);
    r = c;
  }
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

static int parallel(int64_t work) {
  return work >= CELL_PARALLEL_GRAIN / 16 && cell_ctx()->num_threads > 1;
}

/* --- multinomial ------------------------------------------------------------------ */

/* The first index whose cumulative weight exceeds u (cdf ascending, n > 0). */
static int64_t search(const double *cdf, int64_t n, double u) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (cdf[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

cell_status cell_cpu_multinomial(const cell_tensor *probs, int64_t num_samples, int replacement,
                                 int64_t index_base, cell_tensor **out) {
  if (!probs || !out) return cell_error(CELL_ERR_VALUE, "multinomial: NULL argument");
  char sb[96];
  if (probs->ndim != 1 && probs->ndim != 2)
    return cell_error(CELL_ERR_VALUE,
                      "multinomial: probabilities must be 1-D or 2-D, got shape %s",
                      cell_shape_str(probs->ndim, probs->shape, sb, sizeof sb));
  if (!cell_dtype_is_float(probs->dtype))
    return cell_error(CELL_ERR_TYPE, "multinomial: probabilities must be a float tensor, got %s",
                      cell_dtype_name(probs->dtype));
  int64_t k = probs->shape[probs->ndim - 1], rows = probs->ndim == 2 ? probs->shape[0] : 1;
  if (k == 0)
    return cell_error(CELL_ERR_VALUE,
                      "multinomial: the probabilities of shape %s have no category to sample",
                      cell_shape_str(probs->ndim, probs->shape, sb, sizeof sb));
  if (num_samples < 1)
    return cell_error(CELL_ERR_VALUE, "multinomial: num_samples must be at least 1, got %lld",
                      (long long)num_samples);
  if (!replacement && num_samples > k)
    return cell_error(CELL_ERR_VALUE,
                      "multinomial: cannot draw %lld samples without replacement from %lld "
                      "categories",
                      (long long)num_samples, (long long)k);
  int64_t oshape[2] = {rows, num_samples}, total;
  if (!cell_size_mul(rows, num_samples, &total))
    return cell_shape_too_large("multinomial", 2, oshape);
  const int64_t *os = probs->ndim == 2 ? oshape : oshape + 1;
  cell_tensor *p = NULL, *r = NULL;
  cell_status s = dense_f64(probs, probs->ndim, probs->shape, &p);
  if (s == CELL_OK) s = cell_tensor_new_contig(CELL_DTYPE_I64, probs->ndim, os, &r);
  /* every row checked before a counter is reserved */
  const double *pd = s == CELL_OK ? (const double *)cell_tensor_base(p) : NULL;
  if (s == CELL_OK) s = cell_multinomial_check(pd, rows, k, num_samples, replacement, index_base);
  double *scratch = NULL;
  if (s == CELL_OK && total > 0) {
    scratch = malloc(sizeof(double) * (size_t)k * (size_t)(rows < 64 ? rows : 64) + 1);
    if (!scratch) s = cell_error(CELL_ERR_MEMORY, "multinomial: out of memory");
  }
  if (s != CELL_OK || total == 0) {
    free(scratch);
    cell_tensor_release(p);
    if (s != CELL_OK) cell_tensor_release(r);
    if (s == CELL_OK) *out = r;
    return s;
  }
  uint64_t seed, first = cell_rng_reserve((uint64_t)total, &seed);
  int64_t *o = (int64_t *)cell_tensor_base(r);
  /* rows in chunks of at most 64, each with its own cdf scratch */
  int64_t chunk = rows < 64 ? rows : 64;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    CELL_FOR(parallel(nr * k * (replacement ? 1 : num_samples)), int64_t, ii, nr, {
      int64_t i = r0 + ii;
      double *cdf = scratch + ii * k;
      const double *w = pd + i * k;
      uint32_t b[4];
      if (replacement) {
        double acc = 0;
        for (int64_t j = 0; j < k; j++) cdf[j] = acc += w[j];
        for (int64_t t = 0; t < num_samples; t++) {
          cell_philox(seed, first + (uint64_t)(i * num_samples + t), b);
          int64_t j = search(cdf, k, cell_u01(b[0], b[1]) * acc);
          while (j > 0 && w[j] == 0) j--; /* u * acc rounded up to a boundary */
          o[i * num_samples + t] = j + index_base;
        }
      } else {
        /* cdf holds the remaining weights; a drawn category's goes to 0 */
        double left = 0;
        for (int64_t j = 0; j < k; j++) left += cdf[j] = w[j];
        for (int64_t t = 0; t < num_samples; t++) {
          cell_philox(seed, first + (uint64_t)(i * num_samples + t), b);
          double u = cell_u01(b[0], b[1]) * left, acc = 0;
          int64_t pick = -1;
          for (int64_t j = 0; j < k; j++) {
            if (cdf[j] <= 0) continue;
            pick = j; /* the last positive one, should rounding leave u past the end */
            acc += cdf[j];
            if (acc > u) break;
          }
          o[i * num_samples + t] = pick + index_base;
          left -= cdf[pick];
          cdf[pick] = 0;
          if (!(left > 0)) { /* rounding: recount what is left */
            left = 0;
            for (int64_t j = 0; j < k; j++) left += cdf[j];
          }
        }
      }
    });
  }
  free(scratch);
  cell_tensor_release(p);
  cell_tensor_bump(r);
  *out = r;
  return CELL_OK;
}

/* --- bernoulli ---------------------------------------------------------------------- */

cell_status cell_cpu_bernoulli(const cell_tensor *x, const cell_tensor *p, double ps,
                               cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "bernoulli: NULL argument");
  cell_tensor *pd = NULL, *r = NULL;
  if (p) {
    if (!cell_dtype_is_float(p->dtype))
      return cell_error(CELL_ERR_TYPE, "bernoulli: probabilities must be a float tensor, got %s",
                        cell_dtype_name(p->dtype));
    int nd;
    int64_t bs[CELL_MAX_DIMS];
    CELL_TRY(cell_broadcast_shapes("bernoulli", p->ndim, p->shape, x->ndim, x->shape, &nd, bs));
    if (!cell_shape_equal(nd, bs, x->ndim, x->shape)) {
      char s1[96], s2[96];
      return cell_error(CELL_ERR_VALUE,
                        "bernoulli: probabilities of shape %s do not broadcast to the input's "
                        "shape %s",
                        cell_shape_str(p->ndim, p->shape, s1, sizeof s1),
                        cell_shape_str(x->ndim, x->shape, s2, sizeof s2));
    }
  } else if (!(ps >= 0 && ps <= 1)) {
    return cell_error(CELL_ERR_VALUE, "bernoulli: p must lie in [0, 1], got %g", ps);
  }
  int64_t n = cell_shape_numel(x->ndim, x->shape);
  cell_status s = p ? dense_f64(p, x->ndim, x->shape, &pd) : CELL_OK;
  const double *pv = s == CELL_OK && p ? (const double *)cell_tensor_base(pd) : NULL;
  for (int64_t i = 0; pv && i < n; i++)
    if (!(pv[i] >= 0 && pv[i] <= 1)) {
      s = cell_error(CELL_ERR_VALUE, "bernoulli: every probability must lie in [0, 1], got %g",
                     pv[i]);
      break;
    }
  if (s == CELL_OK) s = cell_tensor_new_contig(CELL_DTYPE_F64, x->ndim, x->shape, &r);
  if (s == CELL_OK && n > 0) {
    uint64_t seed, first = cell_rng_reserve((uint64_t)(n + 1) / 2, &seed);
    double *o = (double *)cell_tensor_base(r);
    CELL_FOR(parallel(n), int64_t, b, (n + 1) / 2, {
      uint32_t w[4];
      cell_philox(seed, first + (uint64_t)b, w);
      for (int q = 0; q < 2 && 2 * b + q < n; q++) {
        int64_t j = 2 * b + q;
        o[j] = cell_u01(w[2 * q], w[2 * q + 1]) < (pv ? pv[j] : ps) ? 1.0 : 0.0;
      }
    });
    cell_tensor_bump(r);
  }
  cell_tensor_release(pd);
  return finish_as(s, r, x->dtype, out);
}

/* --- normal ------------------------------------------------------------------------- */

cell_status cell_cpu_normal(int ndim, const int64_t *shape, const cell_tensor *mean,
                            const cell_tensor *std, cell_tensor **out) {
  if (!mean || !std || !out || (ndim > 0 && !shape))
    return cell_error(CELL_ERR_VALUE, "normal: NULL argument");
  CELL_TRY(cell_check_shape("normal", ndim, shape));
  if (!cell_dtype_is_float(mean->dtype) || !cell_dtype_is_float(std->dtype))
    return cell_error(CELL_ERR_TYPE, "normal: mean and stddev must be float, got %s and %s",
                      cell_dtype_name(mean->dtype), cell_dtype_name(std->dtype));
  int n1, n2;
  int64_t s1[CELL_MAX_DIMS], s2[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes("normal", ndim, shape, mean->ndim, mean->shape, &n1, s1));
  CELL_TRY(cell_broadcast_shapes("normal", n1, s1, std->ndim, std->shape, &n2, s2));
  cell_dtype dt = cell_dtype_promote(mean->dtype, std->dtype);
  cell_tensor *m = NULL, *sd = NULL, *r = NULL;
  cell_status s = dense_f64(mean, n2, s2, &m);
  if (s == CELL_OK) s = dense_f64(std, n2, s2, &sd);
  int64_t n = cell_shape_numel(n2, s2);
  const double *sv = s == CELL_OK ? (const double *)cell_tensor_base(sd) : NULL;
  for (int64_t i = 0; sv && i < n; i++)
    if (!(sv[i] >= 0)) {
      s = cell_error(CELL_ERR_VALUE, "normal: stddev must be at least 0 everywhere, got %g", sv[i]);
      break;
    }
  if (s == CELL_OK) s = cell_tensor_new_contig(CELL_DTYPE_F64, n2, s2, &r);
  if (s == CELL_OK && n > 0) {
    const double two_pi = 6.283185307179586476925286766559;
    uint64_t seed, first = cell_rng_reserve((uint64_t)(n + 1) / 2, &seed);
    const double *mv = (const double *)cell_tensor_base(m);
    double *o = (double *)cell_tensor_base(r);
    CELL_FOR(parallel(n), int64_t, b, (n + 1) / 2, {
      uint32_t w[4];
      cell_philox(seed, first + (uint64_t)b, w);
      double u1 = 1.0 - cell_u01(w[0], w[1]), u2 = cell_u01(w[2], w[3]);
      double rad = sqrt(-2.0 * log(u1)), a = two_pi * u2;
      int64_t j = 2 * b;
      o[j] = mv[j] + sv[j] * rad * cos(a);
      if (j + 1 < n) o[j + 1] = mv[j + 1] + sv[j + 1] * rad * sin(a);
    });
    cell_tensor_bump(r);
  }
  cell_tensor_release(m);
  cell_tensor_release(sd);
  return finish_as(s, r, dt, out);
}

/* --- the public forms ----------------------------------------------------------------- */

cell_status cell_op_multinomial(const cell_tensor *probs, int64_t num_samples, int replacement,
                                int64_t index_base, cell_tensor **out) {
  return cell_k_multinomial(probs, num_samples, replacement, index_base, out);
}

cell_status cell_op_bernoulli(const cell_tensor *x, const cell_tensor *p, double p_scalar,
                              cell_tensor **out) {
  return cell_k_bernoulli(x, p, p_scalar, out);
}

cell_status cell_op_normal(int ndim, const int64_t *shape, const cell_tensor *mean,
                           const cell_tensor *std, cell_tensor **out) {
  return cell_k_normal(ndim, shape, mean, std, out);
}
