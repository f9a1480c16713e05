/* unary_param.c - elementwise ops with numbers for parameters: nan_to_num
 * and softplus (PyTorch's formulas). Computed through doubles in chunks
 * (cell_load_run / cell_store_run), so every float dtype and layout is
 * served by one loop. */
#include "../core/iter.h"
#include "kernels.h"
#include "kernel_list.h"
#include <float.h>

#define CHUNK 256

typedef struct {
  int op; /* 0: nan_to_num, 1: softplus */
  double k0, k1, k2;
  cell_dtype in, out;
} param_ctx;

static void param_loop(void *vctx, int64_t n, char **p, const int64_t *s) {
  const param_ctx *c = vctx;
  double buf[CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
    int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
    cell_load_run(c->in, p[1] + i0 * s[1], s[1], m, buf);
    if (c->op == 0) {
      for (int64_t i = 0; i < m; i++) {
        double x = buf[i];
        buf[i] = x != x ? c->k0 : x == INFINITY ? c->k1 : x == -INFINITY ? c->k2 : x;
      }
    } else {
      for (int64_t i = 0; i < m; i++) {
        double z = buf[i] * c->k0;
        buf[i] = z > c->k1 ? buf[i] : log1p(exp(z)) / c->k0;
      }
    }
    cell_store_run(c->out, p[0] + i0 * s[0], s[0], m, buf);
  }
}

static cell_status run_param(param_ctx *c, const cell_tensor *a, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(c->out, a->ndim, a->shape, &r));
  cell_iter it;
  cell_iter_init(&it, a->ndim, a->shape);
  cell_iter_add(&it, r);
  cell_iter_add(&it, a);
  cell_status s = cell_iter_run(&it, param_loop, c);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* The largest finite value of a float dtype. */
static double dtype_max(cell_dtype dt) {
  switch (dt) {
  case CELL_DTYPE_F16: return 65504.0;
  case CELL_DTYPE_BF16: return 3.38953138925153547590e38;
  case CELL_DTYPE_F32: return FLT_MAX;
  default: return DBL_MAX;
  }
}

/* The replacements given as NaN stand for the defaults: 0 for NaN, the
 * dtype's largest and lowest finite values for +inf and -inf. Integers
 * and bool have nothing to replace: a copy. */
cell_status cell_cpu_nan_to_num(const cell_tensor *a, double nan, double posinf, double neginf,
                                cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "nan_to_num: NULL argument");
  if (!cell_dtype_is_float(a->dtype)) return cell_k_clone(a, out);
  double big = dtype_max(a->dtype);
  param_ctx c = {0, nan != nan ? 0.0 : nan, posinf != posinf ? big : posinf,
                 neginf != neginf ? -big : neginf, a->dtype, a->dtype};
  return run_param(&c, a, out);
}

cell_status cell_cpu_softplus(const cell_tensor *a, double beta, double threshold,
                              cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "softplus: NULL argument");
  if (!cell_dtype_is_float(a->dtype))
    return cell_error(CELL_ERR_TYPE, "softplus: not supported for %s tensors (a float dtype is "
                      "needed)", cell_dtype_name(a->dtype));
  if (!(beta != 0) || beta != beta || threshold != threshold)
    return cell_error(CELL_ERR_VALUE, "softplus: beta must be a nonzero number and threshold a "
                      "number, got beta=%g, threshold=%g", beta, threshold);
  param_ctx c = {1, beta, threshold, 0, a->dtype, a->dtype};
  return run_param(&c, a, out);
}
