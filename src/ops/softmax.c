/* softmax.c - softmax and log_softmax along a dimension, and their
 * gradients (src/ops/nn.h).
 *
 * The input is seen as outer x len x inner with the reduced dimension in
 * the middle: each of the outer * inner rows has len elements, inner apart.
 * Each element takes one exp (see softmax_row). Rows are independent, so
 * large inputs split over threads with identical results. */
#include "nn.h"
#include "../core/iter.h"
#include "kernels.h"
#include "kernel_list.h"
#include "vmath.h"

#define CHUNK CELL_NN_CHUNK

typedef struct {
  int64_t outer, len, inner;
} row_geom;

static row_geom geometry(const cell_tensor *t, int dim) {
  row_geom g = {1, 1, 1};
  for (int d = 0; d < t->ndim; d++) {
    if (d < dim) g.outer *= t->shape[d];
    else if (d == dim) g.len = t->shape[d];
    else g.inner *= t->shape[d];
  }
  return g;
}

/* The maximum of a run; NaNs are skipped here and propagate through exp.
 * Four independent running maxima, so the compiler can keep them in one
 * vector (a compare and a blend per step): an `omp simd reduction(max)`
 * over this NaN-skipping select is one clang cannot vectorise. */
#define MAX_LANES 4
static double run_max(const double *v, int64_t n, double m) {
  double lane[MAX_LANES];
  for (int k = 0; k < MAX_LANES; k++) lane[k] = m;
  int64_t i = 0;
  for (; i + MAX_LANES <= n; i += MAX_LANES)
    for (int k = 0; k < MAX_LANES; k++) lane[k] = v[i + k] > lane[k] ? v[i + k] : lane[k];
  for (; i < n; i++) lane[0] = v[i] > lane[0] ? v[i] : lane[0];
  for (int k = 1; k < MAX_LANES; k++) m = lane[k] > m ? lane[k] : m;
  return lane[0] > m ? lane[0] : m;
}

/* The maximum of a row, in chunks. */
static double row_max(cell_dtype dt, const char *x, int64_t xs, int64_t len) {
  double buf[CHUNK], m = -INFINITY;
  for (int64_t i0 = 0; i0 < len; i0 += CHUNK) {
    int64_t n = len - i0 < CHUNK ? len - i0 : CHUNK;
    cell_load_run(dt, x + i0 * xs, xs, n, buf);
    m = run_max(buf, n, m);
  }
  return m;
}

/* e[i] = exp(v[i] - m) for n elements, and their sum: vmath.h's vector
 * exp for results narrower than float64 (accurate far below their ulp),
 * libm's for float64. e may be v. */
static double exp_shifted(cell_dtype dt, double *e, const double *v, double m, int64_t n) {
  double s = 0;
  if (dt == CELL_DTYPE_F64) {
    for (int64_t i = 0; i < n; i++) {
      e[i] = exp(v[i] - m);
      s += e[i];
    }
    return s;
  }
  CELL_NN_SIMD for (int64_t i = 0; i < n; i++) e[i] = v[i] - m;
  cell_vm_exp_d(e, e, n);
  for (int64_t i = 0; i < n; i++) s += e[i];
  return s;
}

/* One row: len elements of dtype dt at x (stride xs bytes) into y (ys).
 * Each element takes one exp: a row that fits in the buffer is loaded
 * once; a longer one takes a pass for its maximum, a pass that sums the
 * exps (writing them to y when y is float32 / float64, where they keep
 * their precision), and a pass that writes the result. */
static void softmax_row(cell_dtype dt, const char *x, char *y, int64_t xs, int64_t ys, int64_t len,
                        int log_) {
  double buf[CHUNK];
  if (len <= CHUNK) {
    cell_load_run(dt, x, xs, len, buf);
    double m = run_max(buf, len, -INFINITY), s = 0;
    if (log_) {
      double e[CHUNK];
      s = exp_shifted(dt, e, buf, m, len);
      double c = m + log(s);
      CELL_NN_SIMD for (int64_t i = 0; i < len; i++) buf[i] -= c;
    } else {
      s = exp_shifted(dt, buf, buf, m, len);
      double r = 1.0 / s;
      CELL_NN_SIMD for (int64_t i = 0; i < len; i++) buf[i] *= r;
    }
    cell_store_run(dt, y, ys, len, buf);
    return;
  }
  double m = row_max(dt, x, xs, len), s = 0;
  bool keep = !log_ && (dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64);
  for (int64_t i0 = 0; i0 < len; i0 += CHUNK) {
    int64_t n = len - i0 < CHUNK ? len - i0 : CHUNK;
    cell_load_run(dt, x + i0 * xs, xs, n, buf);
    s += exp_shifted(dt, buf, buf, m, n);
    if (keep) cell_store_run(dt, y + i0 * ys, ys, n, buf);
  }
  double c = m + log(s), r = 1.0 / s;
  for (int64_t i0 = 0; i0 < len; i0 += CHUNK) {
    int64_t n = len - i0 < CHUNK ? len - i0 : CHUNK;
    if (keep) {
      cell_load_run(dt, y + i0 * ys, ys, n, buf);
      CELL_NN_SIMD for (int64_t i = 0; i < n; i++) buf[i] *= r;
    } else {
      cell_load_run(dt, x + i0 * xs, xs, n, buf);
      if (log_) {
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) buf[i] -= c;
      } else {
        exp_shifted(dt, buf, buf, m, n);
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) buf[i] *= r;
      }
    }
    cell_store_run(dt, y + i0 * ys, ys, n, buf);
  }
}

static cell_status check_args(const char *op, const cell_tensor *x, int dim, cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(cell_nn_check_float(op, "the input", x));
  return cell_check_dim(op, dim, x->ndim);
}

cell_status cell_cpu_softmax(const cell_tensor *x, int dim, int log_, cell_tensor **out) {
  const char *op = log_ ? "log_softmax" : "softmax";
  CELL_TRY(check_args(op, x, dim, out));
  cell_tensor *xc, *y;
  CELL_TRY(cell_k_contiguous(x, &xc));
  cell_status s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &y);
  if (s != CELL_OK) {
    cell_tensor_release(xc);
    return s;
  }
  row_geom g = geometry(x, dim);
  int64_t es = cell_dtype_size(x->dtype), rows = g.outer * g.inner;
  const char *xb = cell_tensor_base(xc);
  char *yb = cell_tensor_base(y);
  cell_dtype dt = x->dtype;
  CELL_FOR(cell_nn_parallel_cost(rows, rows * g.len, CELL_NN_COST_SOFTMAX), int64_t, r, rows, {
    int64_t o = r / g.inner, i = r % g.inner, off = (o * g.len * g.inner + i) * es;
    softmax_row(dt, xb + off, yb + off, g.inner * es, g.inner * es, g.len, log_);
  });
  cell_tensor_release(xc);
  *out = y;
  return CELL_OK;
}

/* One row of the gradient: y and g of dtypes ydt, gdt; gx in ydt. */
static void backward_row(cell_dtype ydt, cell_dtype gdt, const char *y, const char *g, char *gx,
                         int64_t ys, int64_t gs, int64_t len, int log_) {
  double yb[CHUNK], gb[CHUNK];
  double dot = 0; /* sum(g y) for softmax, sum(g) for log_softmax */
  for (int64_t i0 = 0; i0 < len; i0 += CHUNK) {
    int64_t n = len - i0 < CHUNK ? len - i0 : CHUNK;
    cell_load_run(gdt, g + i0 * gs, gs, n, gb);
    if (log_) {
      CELL_NN_SIMD_SUM(dot) for (int64_t i = 0; i < n; i++) dot += gb[i];
    } else {
      cell_load_run(ydt, y + i0 * ys, ys, n, yb);
      CELL_NN_SIMD_SUM(dot) for (int64_t i = 0; i < n; i++) dot += gb[i] * yb[i];
    }
  }
  for (int64_t i0 = 0; i0 < len; i0 += CHUNK) {
    int64_t n = len - i0 < CHUNK ? len - i0 : CHUNK;
    cell_load_run(gdt, g + i0 * gs, gs, n, gb);
    cell_load_run(ydt, y + i0 * ys, ys, n, yb);
    if (log_) {
      exp_shifted(ydt, yb, yb, 0.0, n);
      CELL_NN_SIMD for (int64_t i = 0; i < n; i++) gb[i] -= yb[i] * dot;
    } else {
      CELL_NN_SIMD for (int64_t i = 0; i < n; i++) gb[i] = yb[i] * (gb[i] - dot);
    }
    cell_store_run(ydt, gx + i0 * ys, ys, n, gb);
  }
}

cell_status cell_cpu_softmax_backward(const cell_tensor *y, const cell_tensor *g, int dim, int log_,
                                    cell_tensor **gx) {
  const char *op = log_ ? "log_softmax backward" : "softmax backward";
  CELL_TRY(check_args(op, y, dim, gx));
  if (!g || !cell_shape_equal(g->ndim, g->shape, y->ndim, y->shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for an output of shape %s", op,
                      g ? cell_shape_str(g->ndim, g->shape, b1, sizeof b1) : "NULL",
                      cell_shape_str(y->ndim, y->shape, b2, sizeof b2));
  }
  cell_tensor *yc = NULL, *gc = NULL, *r = NULL;
  cell_status s = cell_k_contiguous(y, &yc);
  if (s == CELL_OK) s = cell_k_contiguous(g, &gc);
  if (s == CELL_OK) s = cell_tensor_new_contig(y->dtype, y->ndim, y->shape, &r);
  if (s == CELL_OK) {
    row_geom geo = geometry(y, dim);
    int64_t ye = cell_dtype_size(y->dtype), ge = cell_dtype_size(g->dtype);
    int64_t rows = geo.outer * geo.inner;
    const char *yb = cell_tensor_base(yc), *gb = cell_tensor_base(gc);
    char *rb = cell_tensor_base(r);
    cell_dtype ydt = y->dtype, gdt = g->dtype;
    CELL_FOR(cell_nn_parallel_cost(rows, rows * geo.len, CELL_NN_COST_SOFTMAX_GRAD), int64_t, k, rows, {
      int64_t o = k / geo.inner, i = k % geo.inner, e = o * geo.len * geo.inner + i;
      backward_row(ydt, gdt, yb + e * ye, gb + e * ge, rb + e * ye, geo.inner * ye,
                   geo.inner * ge, geo.len, log_);
    });
  }
  cell_tensor_release(yc);
  cell_tensor_release(gc);
  if (s == CELL_OK) *gx = r;
  return s;
}
