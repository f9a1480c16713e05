/* norm_lowp.c - layer_norm's bfloat16 rows: read as float32, summed and
 * computed in float32, each output rounded once (src/ops/norm_lowp.h).
 *
 * The generic path loads every element into a double buffer and stores it
 * back through a double -> float -> bfloat16 conversion; under mixed
 * precision (a Transformer's norms) that path was most of layer_norm's
 * time. Here a row is read from its bfloat16 words directly (a shift, so
 * the loops vectorise), three times forward (mean, squared deviations,
 * output) and twice backward. Rows split over threads as the generic
 * path's do; the weight and bias gradients (column sums over the rows) are
 * added in row order, in double, by blocks of columns, so no result
 * depends on the thread count. */
#include "norm_lowp.h"
#include "nn.h"
#include "../core/dtype.h"
#include <math.h>

/* Columns per block of the weight gradients' sums (a multiple of 8). */
#define LN_COL_BLOCK 64

CELL_CLONES_V3 static void fwd_row(const uint16_t *x, uint16_t *y, int64_t d, const double *w, const double *b,
                                   double eps, double *mu_out, double *rs_out) {
  float s = 0, v = 0;
  CELL_NN_SIMD_SUM(s) for (int64_t i = 0; i < d; i++) s += cell_bf16_to_float(x[i]);
  float mu = s / (float)d;
  CELL_NN_SIMD_SUM(v) for (int64_t i = 0; i < d; i++) {
    float t = cell_bf16_to_float(x[i]) - mu;
    v += t * t;
  }
  float rs = (float)(1.0 / sqrt((double)v / (double)d + eps));
  CELL_NN_SIMD for (int64_t i = 0; i < d; i++)
    y[i] = cell_float_to_bf16((cell_bf16_to_float(x[i]) - mu) * rs * (float)w[i] + (float)b[i]);
  *mu_out = mu;
  *rs_out = rs;
}

void cell_ln_bf16_forward(const uint16_t *x, uint16_t *y, int64_t rows, int64_t d, const double *w,
                          const double *b, double eps, double *mv, double *rv) {
  CELL_FOR(cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM), int64_t, r, rows,
           { fwd_row(x + r * d, y + r * d, d, w, b, eps, mv + r, rv + r); });
}

CELL_CLONES_V3 static void grad_row(const uint16_t *g, const uint16_t *x, uint16_t *gx, int64_t d, const double *w,
                                    float mu, float rs) {
  float s1 = 0, s2 = 0;
  CELL_NN_PRAGMA(omp simd reduction(+ : s1, s2))
  for (int64_t i = 0; i < d; i++) {
    float gh = cell_bf16_to_float(g[i]) * (float)w[i];
    s1 += gh;
    s2 += gh * ((cell_bf16_to_float(x[i]) - mu) * rs);
  }
  float a = s1 / (float)d, c = s2 / (float)d;
  CELL_NN_SIMD for (int64_t i = 0; i < d; i++) {
    float xh = (cell_bf16_to_float(x[i]) - mu) * rs;
    gx[i] = cell_float_to_bf16(rs * (cell_bf16_to_float(g[i]) * (float)w[i] - a - xh * c));
  }
}

/* Columns c0 .. c1 of the sums over every row, in row order. */
CELL_CLONES_V3 static void col_sums(const uint16_t *g, const uint16_t *x, int64_t rows, int64_t d, int64_t c0,
                                    int64_t c1, const double *mv, const double *rv, double *wv, double *bv) {
  for (int64_t r = 0; r < rows; r++) {
    const uint16_t *gr = g + r * d, *xr = x + r * d;
    if (bv) {
      CELL_NN_SIMD for (int64_t i = c0; i < c1; i++) bv[i] += cell_bf16_to_float(gr[i]);
    }
    if (wv) {
      float mu = (float)mv[r], rs = (float)rv[r];
      CELL_NN_SIMD for (int64_t i = c0; i < c1; i++)
        wv[i] += cell_bf16_to_float(gr[i]) * ((cell_bf16_to_float(xr[i]) - mu) * rs);
    }
  }
}

void cell_ln_bf16_backward(const uint16_t *g, const uint16_t *x, uint16_t *gx, int64_t rows, int64_t d,
                           const double *w, const double *mv, const double *rv, double *wv, double *bv) {
  if (gx)
    CELL_FOR(cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM), int64_t, r, rows, {
      grad_row(g + r * d, x + r * d, gx + r * d, d, w, (float)mv[r], (float)rv[r]);
    });
  if (wv || bv) {
    int64_t nblk = (d + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
    CELL_FOR(nblk > 1 && cell_nn_parallel_cost(nblk, rows * d, 3), int64_t, q, nblk, {
      int64_t c0 = q * LN_COL_BLOCK, c1 = c0 + LN_COL_BLOCK < d ? c0 + LN_COL_BLOCK : d;
      col_sums(g, x, rows, d, c0, c1, mv, rv, wv, bv);
    });
  }
}
