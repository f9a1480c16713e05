/* conv_bf16.c - conv2d in bfloat16 on the CPU's AVX512-BF16 gemm.
 * Forward: the input unfolded (im2col) in bfloat16, one bfloat16 gemm per
 * chunk of samples with float32 accumulation and a float32 result
 * (src/backend/lowp.c), moved to NCHW with the bias added and rounded
 * once. Backward, per chunk of samples: the output gradient gy moved to
 * [O, N*P] in bfloat16; gW += gy @ cols^T (float32, summed over the chunks,
 * rounded once at the end); gcols = W^T @ gy in float32, folded back
 * (col2im, float32) and rounded once into gx; gb summed in float32 (and
 * returned as float32, the autograd rule casts it). Taken only when the
 * bfloat16 gemm backend is the native one; elsewhere bfloat16 convolutions
 * compute in float32 (conv.c). */
#include "conv.h"
#include "../backend/backend.h"
#include "../core/alloc.h"
#include "../core/dtype.h"
#include "../core/iter.h"
#include "kernels.h"

/* im2col chunks hold at most this many bytes, unless one sample needs more. */
#define BF16_CHUNK_BYTES ((int64_t)8 << 20)

/* cols[r][n * P + p] for samples [n0, n0 + nb), r = (c, i, j). */
static void im2col_bf16(const cell_conv_geom *g, const uint16_t *x, int64_t n0, int64_t nb, uint16_t *cols) {
  const int64_t P = g->oh * g->ow, NP = nb * P, HW = g->h * g->w, kk = g->kh * g->kw;
  const int64_t rows = g->c * kk;
  CELL_FOR(cell_conv_parallel(rows * NP), int64_t, r, rows, {
    int64_t c = r / kk, i = (r / g->kw) % g->kh, j = r % g->kw;
    int64_t off = j * g->dw - g->pl, lo, hi;
    cell_conv_valid_range(off, g->sw, g->w, g->ow, &lo, &hi);
    for (int64_t n = 0; n < nb; n++) {
      const uint16_t *src = x + ((n0 + n) * g->c + c) * HW;
      uint16_t *d = cols + r * NP + n * P;
      for (int64_t oh = 0; oh < g->oh; oh++, d += g->ow) {
        int64_t ih = oh * g->sh - g->pt + i * g->dh;
        if (ih < 0 || ih >= g->h) {
          memset(d, 0, sizeof(uint16_t) * (size_t)g->ow);
          continue;
        }
        const uint16_t *s = src + ih * g->w + off;
        if (lo > 0) memset(d, 0, sizeof(uint16_t) * (size_t)lo);
        if (g->sw == 1) {
          if (hi > lo) memcpy(d + lo, s + lo, sizeof(uint16_t) * (size_t)(hi - lo));
        } else {
          for (int64_t q = lo; q < hi; q++) d[q] = s[q * g->sw];
        }
        if (g->ow > hi) memset(d + hi, 0, sizeof(uint16_t) * (size_t)(g->ow - hi));
      }
    }
  });
}

int cell_conv_bf16_ok(const cell_conv_geom *g, cell_dtype xdt, cell_dtype wdt) {
  if (xdt != CELL_DTYPE_BF16 || wdt != CELL_DTYPE_BF16 || g->groups != 1) return 0;
  cell_gemm probe = {CELL_DTYPE_BF16, g->o, g->oh * g->ow, g->c * g->kh * g->kw, NULL, 0, 1, NULL, 0, 1, NULL, 0, 1, 0};
  return cell_backend_for_gemm(&probe) == &cell_backend_bf16;
}

cell_status cell_conv_bf16_forward(const cell_conv_geom *g, const cell_tensor *x, const cell_tensor *w,
                                   const cell_tensor *b, cell_tensor *out) {
  const int64_t P = g->oh * g->ow, K = g->c * g->kh * g->kw, O = g->o;
  int64_t nb = P * K > 0 ? BF16_CHUNK_BYTES / (2 * P * K) : g->n;
  if (nb < 1) nb = 1;
  if (nb > g->n) nb = g->n;
  uint16_t *cols = cell_alloc(sizeof(uint16_t) * (size_t)(K * nb * P > 0 ? K * nb * P : 1));
  float *m = cell_alloc(sizeof(float) * (size_t)(P % 32 != 0 && O * nb * P > 0 ? O * nb * P : 1));
  float *bias = b ? cell_alloc(sizeof(float) * (size_t)(O > 0 ? O : 1)) : NULL;
  if (!cols || !m || (b && !bias)) {
    cell_dealloc(cols);
    cell_dealloc(m);
    cell_dealloc(bias);
    return cell_error(CELL_ERR_MEMORY, "conv2d: out of memory for the bfloat16 im2col scratch");
  }
  const char *bb = b ? cell_tensor_base(b) : NULL;
  for (int64_t k = 0; b && k < O; k++) bias[k] = (float)cell_load_f64(b->dtype, bb + k * b->stride[0] * cell_dtype_size(b->dtype));
  const uint16_t *xo = (const uint16_t *)cell_tensor_base(x), *wo = (const uint16_t *)cell_tensor_base(w);
  uint16_t *yo = (uint16_t *)cell_tensor_base(out);
  cell_status s = CELL_OK;
  for (int64_t n0 = 0; n0 < g->n && s == CELL_OK; n0 += nb) {
    int64_t cnt = g->n - n0 < nb ? g->n - n0 : nb, NP = cnt * P;
    im2col_bf16(g, xo, n0, cnt, cols);
    if (P % 32 == 0) { /* the tiles write NCHW bfloat16, the bias added before the rounding */
      cell_gemm gd = {CELL_DTYPE_BF16, O, NP, K, (const char *)wo, K, 1, (const char *)cols, NP, 1,
                      (char *)(yo + n0 * O * P), P, 1, 0};
      cell_bf16_epilogue ep = {bias, P, O * P, NULL};
      s = cell_bf16_gemm_epilogue(&gd, &ep);
      if (s == CELL_OK && cell_ctx()->interrupt) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
      continue;
    }
    cell_gemm gm = {CELL_DTYPE_BF16, O, NP, K, (const char *)wo, K, 1, (const char *)cols, NP, 1, NULL, NP, 1, 0};
    s = cell_bf16_gemm_f32(&gm, m);
    if (s != CELL_OK) break;
    CELL_FOR(cell_conv_parallel(O * NP), int64_t, t, cnt * O, {
      int64_t n = t / O, k = t % O;
      const float *src = m + k * NP + n * P;
      uint16_t *dst = yo + ((n0 + n) * O + k) * P;
      float bk = bias ? bias[k] : 0.0f;
      for (int64_t p = 0; p < P; p++) dst[p] = cell_float_to_bf16(src[p] + bk); /* rounded once */
    });
    if (cell_ctx()->interrupt) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
  }
  cell_dealloc(cols);
  cell_dealloc(m);
  cell_dealloc(bias);
  return s;
}

/* --- backward ------------------------------------------------------------------------- */

/* d[i] = bfloat16(s[i]), rounded to nearest even (NaN kept quiet). */
static void round_bf16(const float *s, uint16_t *d, int64_t n) {
  CELL_FOR(cell_conv_parallel(n), int64_t, i, n, { d[i] = cell_float_to_bf16(s[i]); });
}

static cell_status bf16_backward_run(const cell_conv_geom *g, const uint16_t *yo, const uint16_t *xo,
                                     const uint16_t *wo, uint16_t *gxo, uint16_t *gwo, float *gbo) {
  const int64_t P = g->oh * g->ow, K = g->c * g->kh * g->kw, O = g->o, CHW = g->c * g->h * g->w;
  if (gbo) {
    for (int64_t k = 0; k < O; k++) gbo[k] = 0.0f;
    for (int64_t n = 0; n < g->n; n++)
      for (int64_t k = 0; k < O; k++) {
        const uint16_t *src = yo + (n * O + k) * P;
        float acc = 0.0f;
        for (int64_t p = 0; p < P; p++) acc += cell_bf16_to_float(src[p]);
        gbo[k] += acc;
      }
  }
  if (!gxo && !gwo) return CELL_OK;
  if (K == 0 || O == 0 || g->n == 0) { /* nothing reaches the operands: zero gradients */
    if (gxo) memset(gxo, 0, sizeof(uint16_t) * (size_t)(g->n * CHW));
    if (gwo) memset(gwo, 0, sizeof(uint16_t) * (size_t)(O * K));
    return CELL_OK;
  }
  /* per sample: cols (bf16, K x P), gy moved (bf16, O x P), gcols (f32, K x P), gx (f32, C x H x W) */
  int64_t per = 2 * K * P + 2 * O * P + (gxo ? 4 * K * P + 4 * CHW : 0);
  int64_t nb = per > 0 ? BF16_CHUNK_BYTES / per : g->n;
  if (nb < 1) nb = 1;
  if (nb > g->n) nb = g->n;
  uint16_t *cols = gwo ? cell_alloc(sizeof(uint16_t) * (size_t)(K * nb * P)) : NULL;
  uint16_t *gm = cell_alloc(sizeof(uint16_t) * (size_t)(O * nb * P));
  float *gcols = gxo ? cell_alloc(sizeof(float) * (size_t)(K * nb * P)) : NULL;
  float *gxf = gxo ? cell_alloc(sizeof(float) * (size_t)(nb * CHW > 0 ? nb * CHW : 1)) : NULL;
  float *gwf = gwo ? cell_alloc(sizeof(float) * (size_t)(2 * O * K)) : NULL;
  cell_status s = CELL_OK;
  if ((gwo && (!cols || !gwf)) || !gm || (gxo && (!gcols || !gxf)))
    s = cell_error(CELL_ERR_MEMORY, "conv2d backward: out of memory for the bfloat16 im2col scratch");
  for (int64_t n0 = 0; n0 < g->n && s == CELL_OK; n0 += nb) {
    int64_t cnt = g->n - n0 < nb ? g->n - n0 : nb, NP = cnt * P;
    cell_conv_from_ncp(sizeof(uint16_t), yo, O, P, n0, cnt, gm);
    if (gwo) { /* gW (+)= gy [O, NP] @ cols^T [NP, K] */
      im2col_bf16(g, xo, n0, cnt, cols);
      float *dst = n0 == 0 ? gwf : gwf + O * K;
      cell_gemm gg = {CELL_DTYPE_BF16, O, K, NP, (const char *)gm, NP, 1, (const char *)cols, 1, NP, NULL, K, 1, 0};
      s = cell_bf16_gemm_f32(&gg, dst);
      if (s == CELL_OK && n0 > 0)
        for (int64_t i = 0; i < O * K; i++) gwf[i] += dst[i];
    }
    if (gxo && s == CELL_OK) { /* gcols = W^T [K, O] @ gy [O, NP], folded back */
      cell_gemm gg = {CELL_DTYPE_BF16, K, NP, O, (const char *)wo, 1, K, (const char *)gm, NP, 1, NULL, NP, 1, 0};
      s = cell_bf16_gemm_f32(&gg, gcols);
      if (s == CELL_OK) {
        memset(gxf, 0, sizeof(float) * (size_t)(cnt * CHW));
        cell_conv_col2im(CELL_DTYPE_F32, g, gcols, 0, cnt, gxf);
        round_bf16(gxf, gxo + n0 * CHW, cnt * CHW);
      }
    }
    if (s == CELL_OK && cell_ctx()->interrupt) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
  }
  if (s == CELL_OK && gwo) round_bf16(gwf, gwo, O * K);
  cell_dealloc(cols);
  cell_dealloc(gm);
  cell_dealloc(gcols);
  cell_dealloc(gxf);
  cell_dealloc(gwf);
  return s;
}

cell_status cell_conv_bf16_backward(const cell_conv_geom *g, const cell_tensor *gy, const cell_tensor *x,
                                    const cell_tensor *w, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb) {
  cell_tensor *yc = NULL, *xc = NULL, *wc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  cell_status s = cell_k_contiguous(gy, &yc);
  if (s == CELL_OK && gw) s = cell_k_contiguous(x, &xc);
  if (s == CELL_OK && gx) s = cell_k_contiguous(w, &wc);
  if (s == CELL_OK && gx) s = cell_tensor_new_contig(CELL_DTYPE_BF16, 4, x->shape, &rx);
  if (s == CELL_OK && gw) s = cell_tensor_new_contig(CELL_DTYPE_BF16, 4, w->shape, &rw);
  if (s == CELL_OK && gb) s = cell_tensor_new_contig(CELL_DTYPE_F32, 1, &g->o, &rb);
  if (s == CELL_OK)
    s = bf16_backward_run(g, (const uint16_t *)cell_tensor_base(yc), xc ? (const uint16_t *)cell_tensor_base(xc) : NULL,
                          wc ? (const uint16_t *)cell_tensor_base(wc) : NULL,
                          rx ? (uint16_t *)cell_tensor_base(rx) : NULL, rw ? (uint16_t *)cell_tensor_base(rw) : NULL,
                          rb ? (float *)cell_tensor_base(rb) : NULL);
  cell_tensor_release(yc);
  cell_tensor_release(xc);
  cell_tensor_release(wc);
  if (s != CELL_OK) {
    cell_tensor_release(rx);
    cell_tensor_release(rw);
    cell_tensor_release(rb);
    return s;
  }
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}
