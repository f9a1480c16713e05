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
#include "../core/alloc.h"
#include "../core/dtype.h"
#include <math.h>
#include <string.h>

/* Columns per block of the weight gradients' sums (a multiple of 8). */
#define LN_COL_BLOCK 64

/* Eight lanes at a time as explicit vectors (GCC's vector extensions; two
 * SSE halves in the baseline copy): omp simd's reductions ended in a
 * serial loop over the partial sums that was a third of a 64-wide row's
 * time. Macros, not functions: 32-byte vectors passed by value warn
 * (-Wpsabi) in the baseline copy. */
typedef float ln_v8f __attribute__((vector_size(32)));
typedef uint32_t ln_v8u __attribute__((vector_size(32)));
typedef int32_t ln_v8i __attribute__((vector_size(32)));
typedef uint16_t ln_v8h __attribute__((vector_size(16)));

/* 8 bfloat16 words at p as floats (exact: the bits shifted up). */
#define LN_LD8(p) __extension__({                              \
    ln_v8h h_;                                                 \
    memcpy(&h_, (p), sizeof h_);                               \
    (ln_v8f)(__builtin_convertvector(h_, ln_v8u) << 16);       \
  })
/* 8 floats rounded to bfloat16 (to nearest even; NaN stays a quiet NaN) at p. */
#define LN_ST8(p, v) do {                                                     \
    ln_v8u u_ = (ln_v8u)(v);                                                  \
    ln_v8u r_ = (u_ + 0x7fffu + ((u_ >> 16) & 1u)) >> 16;                     \
    ln_v8u n_ = (u_ >> 16) | 0x40u;                                           \
    ln_v8u m_ = (ln_v8u)((ln_v8i)(u_ & 0x7fffffffu) > (ln_v8i){0x7f800000, 0x7f800000, 0x7f800000, \
                          0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000}); \
    ln_v8h h_ = __builtin_convertvector((n_ & m_) | (r_ & ~m_), ln_v8h);     \
    memcpy((p), &h_, sizeof h_);                                              \
  } while (0)
#define LN_HSUM(v) ((((v)[0] + (v)[4]) + ((v)[1] + (v)[5])) + (((v)[2] + (v)[6]) + ((v)[3] + (v)[7])))
#define LN_SPLAT(x) ((ln_v8f){0, 0, 0, 0, 0, 0, 0, 0} + (x))

CELL_CLONES_V3 static void fwd_row(const uint16_t *x, uint16_t *y, int64_t d, const float *w, const float *b,
                                   double eps, double *mu_out, double *rs_out) {
  int64_t d8 = d / 8 * 8;
  ln_v8f acc = LN_SPLAT(0.0f);
  for (int64_t i = 0; i < d8; i += 8) acc += LN_LD8(x + i);
  float s = LN_HSUM(acc);
  for (int64_t i = d8; i < d; i++) s += cell_bf16_to_float(x[i]);
  float mu = s / (float)d;
  ln_v8f mv = LN_SPLAT(mu);
  acc = LN_SPLAT(0.0f);
  for (int64_t i = 0; i < d8; i += 8) {
    ln_v8f t = LN_LD8(x + i) - mv;
    acc += t * t;
  }
  float v = LN_HSUM(acc);
  for (int64_t i = d8; i < d; i++) {
    float t = cell_bf16_to_float(x[i]) - mu;
    v += t * t;
  }
  float rs = (float)(1.0 / sqrt((double)v / (double)d + eps));
  ln_v8f rv = LN_SPLAT(rs);
  for (int64_t i = 0; i < d8; i += 8) {
    ln_v8f wv, bv;
    memcpy(&wv, w + i, sizeof wv);
    memcpy(&bv, b + i, sizeof bv);
    LN_ST8(y + i, (LN_LD8(x + i) - mv) * rv * wv + bv);
  }
  for (int64_t i = d8; i < d; i++) y[i] = cell_float_to_bf16((cell_bf16_to_float(x[i]) - mu) * rs * w[i] + b[i]);
  *mu_out = mu;
  *rs_out = rs;
}

/* w and b (d doubles each) as floats in one block from cell_alloc. */
static cell_status floats_of(const double *w, const double *b, int64_t d, float **out) {
  float *f = cell_alloc(sizeof(float) * (size_t)(2 * d + 1));
  if (!f) return cell_error(CELL_ERR_MEMORY, "layer_norm: cannot allocate %lld floats", (long long)(2 * d + 1));
  for (int64_t i = 0; i < d; i++) f[i] = (float)w[i];
  if (b)
    for (int64_t i = 0; i < d; i++) f[d + i] = (float)b[i];
  *out = f;
  return CELL_OK;
}

cell_status cell_ln_bf16_forward(const uint16_t *x, uint16_t *y, int64_t rows, int64_t d, const double *w,
                                 const double *b, double eps, double *mv, double *rv) {
  float *f;
  CELL_TRY(floats_of(w, b, d, &f));
  CELL_FOR(cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM), int64_t, r, rows,
           { fwd_row(x + r * d, y + r * d, d, f, f + d, eps, mv + r, rv + r); });
  cell_dealloc(f);
  return CELL_OK;
}

CELL_CLONES_V3 static void grad_row(const uint16_t *g, const uint16_t *x, uint16_t *gx, int64_t d, const float *w,
                                    float mu, float rs) {
  int64_t d8 = d / 8 * 8;
  ln_v8f a1 = LN_SPLAT(0.0f), a2 = a1, mv = LN_SPLAT(mu), rv = LN_SPLAT(rs);
  for (int64_t i = 0; i < d8; i += 8) {
    ln_v8f wv;
    memcpy(&wv, w + i, sizeof wv);
    ln_v8f gh = LN_LD8(g + i) * wv;
    a1 += gh;
    a2 += gh * ((LN_LD8(x + i) - mv) * rv);
  }
  float s1 = LN_HSUM(a1), s2 = LN_HSUM(a2);
  for (int64_t i = d8; i < d; i++) {
    float gh = cell_bf16_to_float(g[i]) * w[i];
    s1 += gh;
    s2 += gh * ((cell_bf16_to_float(x[i]) - mu) * rs);
  }
  float a = s1 / (float)d, c = s2 / (float)d;
  ln_v8f av = LN_SPLAT(a), cv = LN_SPLAT(c);
  for (int64_t i = 0; i < d8; i += 8) {
    ln_v8f wv;
    memcpy(&wv, w + i, sizeof wv);
    ln_v8f xh = (LN_LD8(x + i) - mv) * rv;
    LN_ST8(gx + i, rv * (LN_LD8(g + i) * wv - av - xh * cv));
  }
  for (int64_t i = d8; i < d; i++) {
    float xh = (cell_bf16_to_float(x[i]) - mu) * rs;
    gx[i] = cell_float_to_bf16(rs * (cell_bf16_to_float(g[i]) * w[i] - a - xh * c));
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

cell_status cell_ln_bf16_backward(const uint16_t *g, const uint16_t *x, uint16_t *gx, int64_t rows, int64_t d,
                                  const double *w, const double *mv, const double *rv, double *wv, double *bv) {
  if (gx) {
    float *f;
    CELL_TRY(floats_of(w, NULL, d, &f));
    CELL_FOR(cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM), int64_t, r, rows, {
      grad_row(g + r * d, x + r * d, gx + r * d, d, f, (float)mv[r], (float)rv[r]);
    });
    cell_dealloc(f);
  }
  if (wv || bv) {
    int64_t nblk = (d + LN_COL_BLOCK - 1) / LN_COL_BLOCK;
    CELL_FOR(nblk > 1 && cell_nn_parallel_cost(nblk, rows * d, 3), int64_t, q, nblk, {
      int64_t c0 = q * LN_COL_BLOCK, c1 = c0 + LN_COL_BLOCK < d ? c0 + LN_COL_BLOCK : d;
      col_sums(g, x, rows, d, c0, c1, mv, rv, wv, bv);
    });
  }
  return CELL_OK;
}
