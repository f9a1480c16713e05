/* bn_lowp.c - batch_norm over bfloat16 or float16 as it lies (norm_lowp.h).
 *
 * Under mixed precision's O2 BatchNorm computes in float32: its input was
 * widened to a float32 copy, its output rounded back in another pass, and
 * the same for the gradient, four passes over a layer's activations and
 * four forks per layer. These passes read the narrow rows directly and
 * compute exactly as float32's (norm.c: each element widened to float32
 * then to double, four lanes at a time in the same order, the per-row
 * sums added per channel in sample order), so the results are float32's
 * results rounded once: the same as the copies gave. */
#include "norm_lowp.h"
#include "../core/dtype.h"
#include "../core/iter.h"
#include <math.h>
#include <string.h>

#define BN_CLONES CELL_CLONES_V3
typedef double bl_v4d __attribute__((vector_size(32)));

/* 4 narrow words at p widened to float32, then to doubles. */
#define BL_LOAD4(bf, p) __extension__({                                                    \
    const uint16_t *p_ = (p);                                                             \
    float f_[4];                                                                          \
    for (int k_ = 0; k_ < 4; k_++) f_[k_] = (bf) ? cell_bf16_to_float(p_[k_]) : cell_half_to_float(p_[k_]); \
    (bl_v4d){f_[0], f_[1], f_[2], f_[3]};                                                 \
  })
#define BL_HSUM(v) (((v)[0] + (v)[1]) + ((v)[2] + (v)[3]))

static inline float bl_ld(int bf, uint16_t v) { return bf ? cell_bf16_to_float(v) : cell_half_to_float(v); }
static inline uint16_t bl_st(int bf, double v) {
  float f = (float)v; /* float32's result, then rounded once */
  return bf ? cell_float_to_bf16(f) : cell_float_to_half(f);
}

/* Sum of (x - centre) (squared when sq) over n elements (norm.c's f32_sum). */
BN_CLONES static double row_sum(int bf, const uint16_t *x, int64_t n, double centre, int sq) {
  bl_v4d a0 = {0, 0, 0, 0}, a1 = a0, cv = a0 + centre;
  int64_t i = 0;
  if (sq)
    for (; i + 8 <= n; i += 8) {
      bl_v4d d0 = BL_LOAD4(bf, x + i) - cv, d1 = BL_LOAD4(bf, x + i + 4) - cv;
      a0 += d0 * d0;
      a1 += d1 * d1;
    }
  else
    for (; i + 8 <= n; i += 8) {
      a0 += BL_LOAD4(bf, x + i) - cv;
      a1 += BL_LOAD4(bf, x + i + 4) - cv;
    }
  double s = BL_HSUM(a0 + a1);
  for (; i < n; i++) {
    double v = bl_ld(bf, x[i]);
    s += sq ? (v - centre) * (v - centre) : v - centre;
  }
  return s;
}

/* y = a * x + b (f32_affine). */
BN_CLONES static void row_affine(int bf, const uint16_t *x, uint16_t *y, int64_t n, double a, double b) {
  for (int64_t i = 0; i < n; i++) y[i] = bl_st(bf, a * (double)bl_ld(bf, x[i]) + b);
}

/* sum(g) and sum(g (x - mu)) over n elements, added into *sg and *sgx (f32_grad_sums). */
BN_CLONES static void row_grad_sums(int bf, const uint16_t *g, const uint16_t *x, int64_t n, double mu,
                                    double *sg, double *sgx) {
  bl_v4d a0 = {0, 0, 0, 0}, a1 = a0, b0 = a0, b1 = a0, mv = a0 + mu;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    bl_v4d g0 = BL_LOAD4(bf, g + i), g1 = BL_LOAD4(bf, g + i + 4);
    a0 += g0;
    a1 += g1;
    b0 += g0 * (BL_LOAD4(bf, x + i) - mv);
    b1 += g1 * (BL_LOAD4(bf, x + i + 4) - mv);
  }
  double a = BL_HSUM(a0 + a1), b = BL_HSUM(b0 + b1);
  for (; i < n; i++) {
    double gv = bl_ld(bf, g[i]);
    a += gv;
    b += gv * ((double)bl_ld(bf, x[i]) - mu);
  }
  *sg += a;
  *sgx += b;
}

/* out = ka * g + kb * (x - mu) + kc (f32_grad_x). */
BN_CLONES static void row_grad_x(int bf, const uint16_t *g, const uint16_t *x, uint16_t *out, int64_t n, double mu,
                                 double ka, double kb, double kc) {
  for (int64_t i = 0; i < n; i++)
    out[i] = bl_st(bf, ka * (double)bl_ld(bf, g[i]) + kb * ((double)bl_ld(bf, x[i]) - mu) + kc);
}

void cell_bn_lowp_forward(cell_dtype dt, int64_t n, int64_t c, int64_t inner, const uint16_t *x, uint16_t *y,
                          double *mv, double *vv, const double *w, const double *b, int training, double eps,
                          double *rs, int par) {
  const int bf = dt == CELL_DTYPE_BF16;
  const int64_t rows = n * c, C = c, m = n * inner;
  if (training) {
    CELL_FOR(par, int64_t, r, rows, { rs[r] = row_sum(bf, x + r * inner, inner, 0.0, 0); });
    for (int64_t ch = 0; ch < C; ch++) {
      double s1 = 0;
      for (int64_t s = 0; s < n; s++) s1 += rs[s * C + ch];
      mv[ch] = m ? s1 / (double)m : NAN;
    }
    CELL_FOR(par, int64_t, r, rows, { rs[r] = row_sum(bf, x + r * inner, inner, mv[r % C], 1); });
    for (int64_t ch = 0; ch < C; ch++) {
      double s2 = 0;
      for (int64_t s = 0; s < n; s++) s2 += rs[s * C + ch];
      vv[ch] = m ? s2 / (double)m : NAN;
    }
  }
  CELL_FOR(par, int64_t, r, rows, {
    int64_t ch = r % C;
    double is = 1.0 / sqrt(vv[ch] + eps), a = is * w[ch], sh = b[ch] - mv[ch] * is * w[ch];
    row_affine(bf, x + r * inner, y + r * inner, inner, a, sh);
  });
}

void cell_bn_lowp_backward(cell_dtype dt, int64_t n, int64_t c, int64_t inner, const uint16_t *g,
                           const uint16_t *x, uint16_t *out, const double *mv, const double *vv, const double *w,
                           double eps, int training, double *wv, double *bv, double *rs, int par) {
  const int bf = dt == CELL_DTYPE_BF16;
  const int64_t rows = n * c, C = c;
  double *ka = rs + 2 * rows, *kb = ka + C, *kc = kb + C, m = (double)(n * inner);
  CELL_FOR(par, int64_t, r, rows, {
    double a = 0, bb = 0;
    row_grad_sums(bf, g + r * inner, x + r * inner, inner, mv[r % C], &a, &bb);
    rs[2 * r] = a;
    rs[2 * r + 1] = bb;
  });
  for (int64_t ch = 0; ch < C; ch++) {
    double sg = 0, sgx = 0, is = 1.0 / sqrt(vv[ch] + eps);
    for (int64_t s = 0; s < n; s++) {
      sg += rs[2 * (s * C + ch)];
      sgx += rs[2 * (s * C + ch) + 1];
    }
    if (wv) wv[ch] = sgx * is;
    if (bv) bv[ch] = sg;
    double k = w[ch] * is;
    ka[ch] = k;
    kb[ch] = training ? -k * is * is * sgx / m : 0.0;
    kc[ch] = training ? -k * sg / m : 0.0;
  }
  if (out)
    CELL_FOR(par, int64_t, r, rows, {
      int64_t ch = r % C;
      row_grad_x(bf, g + r * inner, x + r * inner, out + r * inner, inner, mv[ch], ka[ch], kb[ch], kc[ch]);
    });
}
