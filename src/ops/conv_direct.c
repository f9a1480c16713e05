/* conv_direct.c - stride-1 conv2d without im2col: the "shifted rows" lowering.
 *
 * Zero-pad a sample's input into planes of Hp x Wp (plus slack). For stride
 * 1, output (oh, ow) of tap (c, i, j) reads padded position
 *   (oh + i * dh) * Wp + ow + j * dw  =  q + off(c, i, j),   q = oh * Wp + ow,
 * so if the output is computed on the padded width (q runs over OH * Wp
 * positions, the columns ow >= OW being discarded), every tap is the same
 * contiguous run shifted by off(c, i, j). Then
 *   forward  y[o][q]      = sum_t w[o][t] * xp[off[t] + q]        (kernel_f)
 *   weight   gw[o][t]    += sum_q gy[o][q] * xp[off[t] + q]       (kernel_w)
 *   input    gxp[c][off_ij + q] += sum_o w[o][c][i][j] * gy[o][q] (kernel_f, accumulating)
 * with gy laid out the same way (zeros in the discarded columns). These are
 * small gemms whose operands are read in place: no patch matrix is written,
 * which on small images (LeNet) costs more than the arithmetic. When the
 * output channels of a group fill whole vectors (a multiple of 8 floats or
 * 4 doubles), forward and the weight gradient put the channels along the
 * vector instead (kernel_fo, kernel_wo) and visit only the real output
 * positions, so no lane is spent on discarded columns. Every kernel keeps
 * a tile of 12 vector accumulators in registers; on x86-64 a second copy is
 * compiled for AVX2 + FMA and picked at load time.
 *
 * Samples are split into a fixed number of parts (not one per thread), each
 * with its own scratch and weight-gradient partial sum, added in part
 * order: the result does not depend on the thread count. */
#include "conv.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include <stdlib.h>

#define MR 6      /* kernel_f: tile rows (12 accumulators, 2 loads, 1 broadcast) */
#define NV 2      /* kernel_f: tile width in vectors */
#define WR 6      /* kernel_w: tile rows */
#define NT 2      /* kernel_w: taps per tile (12 accumulators, 8 loads) */
#define MAX_PARTS 16
/* Threads only for work past CELL_PARALLEL_GRAIN elements counted as this
 * many multiply-adds each (4M multiply-adds, about 0.2 ms of one core): a
 * fork and join of the parts costs a few microseconds next to that. The
 * bar was 64 multiply-adds (4 ms of work) while OpenBLAS ran its own
 * threads: an OpenMP worker left spinning after a region took the core from
 * them in the next Dense layer. Linked with OpenBLAS's OpenMP build (the
 * Makefile's BLAS_LIB) the gemms run on the same threads, so a CIFAR-size
 * CNN's convolutions (32 x 3 x 32 x 32 into 16 channels, 16 into 32 at
 * 16 x 16) split over the cores too. */
#define MACS_PER_ELEMENT 4

/* A loop over the parts, on threads when par: statically scheduled, so
 * each thread takes the same samples in every layer (batch_norm, pooling
 * and the elementwise ops split the batch the same way) and finds them in
 * its own core's cache; a dynamic schedule handed them out at random and
 * the cores read each other's outputs (about 0.6x the speed, two cores,
 * 1-4 MB layers). */
#define PARTS_FOR(par, var, n, ...)                              \
  do {                                                           \
    if (par) {                                                   \
      _Pragma("omp parallel for schedule(static)")               \
      for (int64_t var = 0; var < (n); var++) __VA_ARGS__        \
    } else {                                                     \
      for (int64_t var = 0; var < (n); var++) __VA_ARGS__        \
    }                                                            \
  } while (0)

int cell_conv_direct_ok(const cell_conv_geom *g) { return g->sh == 1 && g->sw == 1; }

/* The padded geometry of one sample. */
typedef struct {
  int64_t hp, wp;  /* padded plane */
  int64_t plane;   /* plane stride: hp * wp and slack for the shifted runs */
  int64_t L, Lr;   /* output positions oh * wp + ow, and the row stride (L rounded up) */
  int64_t kk, taps; /* taps per channel, taps per group (cg * kk) */
  int64_t og, cg;
} dgeom;

static void dgeom_init(const cell_conv_geom *g, int vl, dgeom *d) {
  d->hp = g->h + g->pt + g->pb;
  d->wp = g->w + g->pl + g->pr;
  int64_t ekw = (g->kw - 1) * g->dw + 1;
  d->L = g->oh * d->wp;
  d->Lr = (d->L + vl - 1) / vl * vl;
  /* Runs read up to Lr - L + NV * vl past a plane's last output position
   * plus the kernel's reach: keep that much zeroed slack after each plane. */
  d->plane = d->hp * d->wp + ekw + (d->Lr - d->L) + NV * vl;
  d->plane = (d->plane + vl - 1) / vl * vl;
  d->kk = g->kh * g->kw;
  d->cg = g->c / g->groups;
  d->og = g->o / g->groups;
  d->taps = d->cg * d->kk;
}

/* What every part of one call shares. */
typedef struct {
  const cell_conv_geom *g;
  const dgeom *d;
  const int64_t *off;  /* tap offsets (tap_offsets) */
  const int64_t *offo; /* o * Lr: the rows of the spread gradient, as taps */
  const int64_t *pos;  /* pos[oh * ow + ow'] = oh * wp + ow': the real output positions */
  /* Output channels per group a multiple of the vector width: forward and
   * the weight gradient take the channel-vector kernels, and the partial
   * weight gradients are laid out [group][tap][channel]. */
  int ovec;
} dplan;

/* One kernel_f tile: rows m0 .. m0 + R - 1 (R a constant, so the
 * accumulators stay in registers) at positions q0 .. q0 + NV * VL - 1. */
#define KF_TILE(T, V, VL, R)                                                                      \
  do {                                                                                            \
    V c[R][NV];                                                                                   \
    _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                         \
      c[r][0] = (V){0};                                                                           \
      c[r][1] = (V){0};                                                                           \
    }                                                                                             \
    for (int64_t t = 0; t < nt; t++) {                                                            \
      const T *bp = b + off[t] + q0, *ap = a + m0 * ars + t * acs;                                \
      V x0, x1;                                                                                   \
      VLOAD(x0, bp);                                                                              \
      VLOAD(x1, bp + VL);                                                                         \
      _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                       \
        const T ws = ap[r * ars];                                                                 \
        c[r][0] += ws * x0;                                                                       \
        c[r][1] += ws * x1;                                                                       \
      }                                                                                           \
    }                                                                                             \
    int64_t n = L - q0 < NV * VL ? L - q0 : NV * VL;                                              \
    _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                         \
      T *o = out + (m0 + r) * ldo + q0;                                                           \
      if (n == NV * VL) {                                                                         \
        _Pragma("GCC unroll 2") for (int k = 0; k < NV; k++) {                                    \
          V v = c[r][k];                                                                          \
          if (acc) {                                                                              \
            V prev;                                                                               \
            VLOAD(prev, o + k * VL);                                                              \
            v += prev;                                                                            \
          }                                                                                       \
          VSTORE(o + k * VL, v);                                                                  \
        }                                                                                         \
      } else {                                                                                    \
        T tmp[NV * VL];                                                                           \
        VSTORE(tmp, c[r][0]);                                                                     \
        VSTORE(tmp + VL, c[r][1]);                                                                \
        for (int64_t e = 0; e < n; e++) o[e] = acc ? o[e] + tmp[e] : tmp[e];                      \
      }                                                                                           \
    }                                                                                             \
  } while (0)

/* kernel_f's rows m0 .. m0 + R - 1 over every position. */
#define KF_ROWS(T, V, VL, R) \
  for (int64_t q0 = 0; q0 < L; q0 += NV * VL) KF_TILE(T, V, VL, R)

/* One kernel_w tile: rows m0 .. m0 + R - 1, taps t0 .. t0 + U - 1 (constants). */
#define KW_TILE(T, V, VL, R, U)                                                                   \
  do {                                                                                            \
    V c[R][U];                                                                                    \
    const T *bq[U];                                                                               \
    _Pragma("GCC unroll 12") for (int r = 0; r < R; r++)                                           \
        _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) c[r][u] = (V){0};                     \
    _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) bq[u] = b + off[t0 + u];                  \
    const T *g0 = g + m0 * ldg;                                                                   \
    for (int64_t q = 0; q < Lr; q += VL) {                                                        \
      V x[U];                                                                                     \
      _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) VLOAD(x[u], bq[u] + q);                 \
      _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                       \
        V gv;                                                                                     \
        VLOAD(gv, g0 + r * ldg + q);                                                              \
        _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) c[r][u] += gv * x[u];                 \
      }                                                                                           \
    }                                                                                             \
    _Pragma("GCC unroll 12") for (int r = 0; r < R; r++)                                           \
        _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) {                                     \
      T lanes[VL], sum = 0;                                                                       \
      VSTORE(lanes, c[r][u]);                                                                     \
      for (int e = 0; e < VL; e++) sum += lanes[e];                                               \
      gw[(m0 + r) * ldw + t0 + u] += sum;                                                         \
    }                                                                                             \
  } while (0)

/* kernel_w's rows m0 .. m0 + R - 1 over every tap. */
#define KW_ROWS(T, V, VL, R)                                          \
  do {                                                                \
    int64_t t0 = 0;                                                   \
    for (; t0 + NT <= nt; t0 += NT) KW_TILE(T, V, VL, R, NT);         \
    for (; t0 < nt; t0++) KW_TILE(T, V, VL, R, 1);                    \
  } while (0)

/* kernel_fo / kernel_wo: the output channels of a group (a multiple of
 * the vector width) lie along the vector, so no lane computes a discarded
 * column: y[o][p] over the real positions p only (pos[p] their padded
 * offsets), with a tile of R positions (or taps) x OV vectors of channels. */
#define KFO_TILE(T, V, VL, R, OV)                                                                 \
  do {                                                                                            \
    V c[R][OV];                                                                                   \
    const T *xr[R];                                                                               \
    _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                         \
      xr[r] = xp + pos[p0 + r];                                                                   \
      _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) c[r][k] = (V){0};                      \
    }                                                                                             \
    for (int64_t t = 0; t < nt; t++) {                                                            \
      V wv[OV];                                                                                   \
      _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) VLOAD(wv[k], wt + t * ldw + o0 + k * VL); \
      const int64_t ot = off[t];                                                                  \
      _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) {                                       \
        const T xs = xr[r][ot]; /* broadcast by the product (0 + x would cost an add) */          \
        _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) c[r][k] += xs * wv[k];               \
      }                                                                                           \
    }                                                                                             \
    /* + the bias as vectors, then channel by channel: R positions each */                      \
    T tile[R][OV * VL];                                                                           \
    V bv[OV];                                                                                     \
    _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) {                                        \
      bv[k] = (V){0};                                                                             \
      if (bias) VLOAD(bv[k], bias + o0 + k * VL);                                                 \
    }                                                                                             \
    _Pragma("GCC unroll 12") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) {                                    \
      V v = c[r][k] + bv[k];                                                                      \
      VSTORE(&tile[r][k * VL], v);                                                                \
    }                                                                                             \
    for (int e = 0; e < OV * VL; e++) {                                                           \
      T *yo = y + (o0 + e) * ldy + p0;                                                            \
      _Pragma("GCC unroll 12") for (int r = 0; r < R; r++) yo[r] = tile[r][e];                    \
    }                                                                                             \
  } while (0)

#define KFO_POS(T, V, VL, OV)                                                                     \
  do {                                                                                            \
    int64_t p0 = 0;                                                                               \
    if (VL >= 16) /* 32 registers: 12 positions x OV vectors */                                   \
      for (; p0 + 12 <= P; p0 += 12) KFO_TILE(T, V, VL, 12, OV);                                  \
    for (; p0 + 6 <= P; p0 += 6) KFO_TILE(T, V, VL, 6, OV);                                       \
    switch (P - p0) {                                                                             \
    case 5: KFO_TILE(T, V, VL, 5, OV); break;                                                     \
    case 4: KFO_TILE(T, V, VL, 4, OV); break;                                                     \
    case 3: KFO_TILE(T, V, VL, 3, OV); break;                                                     \
    case 2: KFO_TILE(T, V, VL, 2, OV); break;                                                     \
    case 1: KFO_TILE(T, V, VL, 1, OV); break;                                                     \
    default: break;                                                                               \
    }                                                                                             \
  } while (0)

/* gwt[t][o] += sum_p xp[pos[p] + off[t]] * gyt[p][o]: taps t0 .. t0 + U - 1. */
#define KWO_TILE(T, V, VL, U, OV)                                                                 \
  do {                                                                                            \
    V c[U][OV];                                                                                   \
    int64_t ot[U];                                                                                \
    _Pragma("GCC unroll 12") for (int u = 0; u < U; u++) {                                         \
      ot[u] = off[t0 + u];                                                                        \
      _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) c[u][k] = (V){0};                      \
    }                                                                                             \
    for (int64_t p = 0; p < P; p++) {                                                             \
      V gv[OV];                                                                                   \
      _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) VLOAD(gv[k], gyt + p * ldg + o0 + k * VL); \
      const T *xb = xp + pos[p];                                                                  \
      _Pragma("GCC unroll 12") for (int u = 0; u < U; u++) {                                       \
        const T xs = xb[ot[u]];                                                                   \
        _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) c[u][k] += xs * gv[k];               \
      }                                                                                           \
    }                                                                                             \
    _Pragma("GCC unroll 12") for (int u = 0; u < U; u++)                                           \
        _Pragma("GCC unroll 2") for (int k = 0; k < OV; k++) {                                    \
      T *dst = gwt + (t0 + u) * ldw + o0 + k * VL;                                                \
      V prev;                                                                                     \
      VLOAD(prev, dst);                                                                           \
      prev += c[u][k];                                                                            \
      VSTORE(dst, prev);                                                                          \
    }                                                                                             \
  } while (0)

#define KWO_TAPS(T, V, VL, OV)                                                                    \
  do {                                                                                            \
    int64_t t0 = 0;                                                                               \
    if (VL >= 16)                                                                                 \
      for (; t0 + 12 <= nt; t0 += 12) KWO_TILE(T, V, VL, 12, OV);                                 \
    for (; t0 + 6 <= nt; t0 += 6) KWO_TILE(T, V, VL, 6, OV);                                      \
    switch (nt - t0) {                                                                            \
    case 5: KWO_TILE(T, V, VL, 5, OV); break;                                                     \
    case 4: KWO_TILE(T, V, VL, 4, OV); break;                                                     \
    case 3: KWO_TILE(T, V, VL, 3, OV); break;                                                     \
    case 2: KWO_TILE(T, V, VL, 2, OV); break;                                                     \
    case 1: KWO_TILE(T, V, VL, 1, OV); break;                                                     \
    default: break;                                                                               \
    }                                                                                             \
  } while (0)

#define DIRECT_KERNELS(T, V, S, CONV_CLONES)                                                      \
  enum { VL_##S = (int)(sizeof(V) / sizeof(T)) };                                                 \
                                                                                                  \
  /* out[m * ldo + q] (+)= sum_t a[m * ars + t * acs] * b[off[t] + q], m < M, q < L. Reads b up  \
   * to NV * VL past off[t] + L; writes only q < L. */                                            \
  CONV_CLONES static void kernel_f_##S(int64_t M, int64_t L, int64_t nt, const T *a, int64_t ars, \
                                       int64_t acs, const T *b, const int64_t *off, T *out,       \
                                       int64_t ldo, int acc) {                                    \
    int64_t m0 = 0;                                                                               \
    for (; m0 + MR <= M; m0 += MR) KF_ROWS(T, V, VL_##S, MR);                                     \
    switch (M - m0) { /* the last rows, in one tile of their own height */                        \
    case 5: KF_ROWS(T, V, VL_##S, 5); break;                                                      \
    case 4: KF_ROWS(T, V, VL_##S, 4); break;                                                      \
    case 3: KF_ROWS(T, V, VL_##S, 3); break;                                                      \
    case 2: KF_ROWS(T, V, VL_##S, 2); break;                                                      \
    case 1: KF_ROWS(T, V, VL_##S, 1); break;                                                      \
    default: break;                                                                               \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* gw[m * ldw + t] += sum_{q < Lr} g[m * ldg + q] * b[off[t] + q], m < M, t < nt (Lr a        \
   * multiple of VL; g zero where it has no output). */                                          \
  CONV_CLONES static void kernel_w_##S(int64_t M, int64_t Lr, int64_t nt, const T *g,            \
                                       int64_t ldg, const T *b, const int64_t *off, T *gw,        \
                                       int64_t ldw) {                                             \
    int64_t m0 = 0;                                                                               \
    for (; m0 + WR <= M; m0 += WR) KW_ROWS(T, V, VL_##S, WR);                                     \
    switch (M - m0) {                                                                             \
    case 5: KW_ROWS(T, V, VL_##S, 5); break;                                                      \
    case 4: KW_ROWS(T, V, VL_##S, 4); break;                                                      \
    case 3: KW_ROWS(T, V, VL_##S, 3); break;                                                      \
    case 2: KW_ROWS(T, V, VL_##S, 2); break;                                                      \
    case 1: KW_ROWS(T, V, VL_##S, 1); break;                                                      \
    default: break;                                                                               \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* y[o * ldy + p] = bias[o] + sum_t wt[t * ldw + o] * xp[pos[p] + off[t]], o < og (a       \
   * multiple of VL), p < P. */                                                                  \
  CONV_CLONES static void kernel_fo_##S(int64_t og, int64_t P, int64_t nt, const T *wt,          \
                                        int64_t ldw, const T *xp, const int64_t *pos,             \
                                        const int64_t *off, T *y, int64_t ldy, const T *bias) {   \
    int64_t o0 = 0;                                                                               \
    for (; o0 + 2 * VL_##S <= og; o0 += 2 * VL_##S) KFO_POS(T, V, VL_##S, 2);                     \
    if (o0 < og) KFO_POS(T, V, VL_##S, 1);                                                        \
  }                                                                                               \
                                                                                                  \
  /* gwt[t * ldw + o] += sum_p xp[pos[p] + off[t]] * gyt[p * ldg + o], o < og (a multiple of     \
   * VL), t < nt. */                                                                              \
  CONV_CLONES static void kernel_wo_##S(int64_t og, int64_t P, int64_t nt, const T *gyt,         \
                                        int64_t ldg, const T *xp, const int64_t *pos,             \
                                        const int64_t *off, T *gwt, int64_t ldw) {                \
    int64_t o0 = 0;                                                                               \
    for (; o0 + 2 * VL_##S <= og; o0 += 2 * VL_##S) KWO_TAPS(T, V, VL_##S, 2);                    \
    if (o0 < og) KWO_TAPS(T, V, VL_##S, 1);                                                       \
  }                                                                                               \
                                                                                                  \
  /* xp: the c planes of sample x (c x h x w) zero-padded, slack zeroed. */                       \
  static void pad_input_##S(const cell_conv_geom *g, const dgeom *d, const T *x, T *xp) {        \
    for (int64_t c = 0; c < g->c; c++) {                                                          \
      T *p = xp + c * d->plane;                                                                   \
      const T *s = x + c * g->h * g->w;                                                           \
      memset(p, 0, sizeof(T) * (size_t)(g->pt * d->wp));                                          \
      p += g->pt * d->wp;                                                                         \
      for (int64_t h = 0; h < g->h; h++, p += d->wp, s += g->w) {                                 \
        for (int64_t k = 0; k < g->pl; k++) p[k] = 0;                                             \
        memcpy(p + g->pl, s, sizeof(T) * (size_t)g->w);                                           \
        for (int64_t k = g->pl + g->w; k < d->wp; k++) p[k] = 0;                                  \
      }                                                                                           \
      memset(p, 0, sizeof(T) * (size_t)(d->plane - (g->pt + g->h) * d->wp));                     \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* ge: the o planes of gradient y (o x oh x ow) on the padded width: zeros in the discarded   \
   * columns and past L (row stride Lr, then NV * VL of zeroed slack). */                         \
  static void spread_grad_##S(const cell_conv_geom *g, const dgeom *d, const T *y, T *ge) {      \
    for (int64_t o = 0; o < g->o; o++) {                                                          \
      T *p = ge + o * d->Lr;                                                                      \
      const T *s = y + o * g->oh * g->ow;                                                         \
      for (int64_t h = 0; h < g->oh; h++, p += d->wp, s += g->ow) {                               \
        memcpy(p, s, sizeof(T) * (size_t)g->ow);                                                  \
        for (int64_t k = g->ow; k < d->wp; k++) p[k] = 0;                                         \
      }                                                                                           \
      for (int64_t k = d->L; k < d->Lr; k++) ge[o * d->Lr + k] = 0;                               \
    }                                                                                             \
    memset(ge + g->o * d->Lr, 0, sizeof(T) * NV * VL_##S);                                        \
  }                                                                                               \
                                                                                                  \
  /* y (o x oh x ow) = the kept columns of ye (row stride Lr) + bias. */                          \
  CONV_CLONES static void gather_out_##S(const cell_conv_geom *g, const dgeom *d, const T *ye,   \
                                         const T *bias, T *y) {                                   \
    for (int64_t o = 0; o < g->o; o++) {                                                          \
      const T *s = ye + o * d->Lr;                                                                \
      T bo = bias ? bias[o] : 0;                                                                  \
      V bv = (V){0} + bo;                                                                         \
      for (int64_t h = 0; h < g->oh; h++, s += d->wp, y += g->ow) {                               \
        int64_t k = 0;                                                                            \
        for (; k + VL_##S <= g->ow; k += VL_##S) {                                                \
          V v;                                                                                    \
          VLOAD(v, s + k);                                                                        \
          v += bv;                                                                                \
          VSTORE(y + k, v);                                                                       \
        }                                                                                         \
        for (; k < g->ow; k++) y[k] = s[k] + bo;                                                  \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* gb[k] = the sum of y[:, k, :] for y {n, o, P}: vector partial sums per plane, added in      \
   * double across planes. */                                                                     \
  CONV_CLONES __attribute__((unused)) static void bias_grad_##S(const T *y, int64_t n, int64_t o, int64_t P, T *gb) {    \
    for (int64_t k = 0; k < o; k++) {                                                             \
      double total = 0;                                                                           \
      for (int64_t i = 0; i < n; i++) {                                                           \
        const T *s = y + (i * o + k) * P;                                                         \
        V a0 = (V){0}, a1 = (V){0};                                                               \
        int64_t p = 0;                                                                            \
        for (; p + 2 * VL_##S <= P; p += 2 * VL_##S) {                                            \
          V v0, v1;                                                                               \
          VLOAD(v0, s + p);                                                                       \
          VLOAD(v1, s + p + VL_##S);                                                              \
          a0 += v0;                                                                               \
          a1 += v1;                                                                               \
        }                                                                                         \
        a0 += a1;                                                                                 \
        T lanes[VL_##S], part = 0;                                                                \
        VSTORE(lanes, a0);                                                                        \
        for (int e = 0; e < VL_##S; e++) part += lanes[e];                                        \
        for (; p < P; p++) part += s[p];                                                          \
        total += (double)part;                                                                    \
      }                                                                                           \
      gb[k] = (T)total;                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* gx (c x h x w) = the unpadded part of the planes gxp. */                                     \
  static void gather_input_##S(const cell_conv_geom *g, const dgeom *d, const T *gxp, T *gx) {   \
    for (int64_t c = 0; c < g->c; c++) {                                                          \
      const T *s = gxp + c * d->plane + g->pt * d->wp + g->pl;                                    \
      for (int64_t h = 0; h < g->h; h++, s += d->wp, gx += g->w)                                  \
        memcpy(gx, s, sizeof(T) * (size_t)g->w);                                                  \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  static void forward_##S(const dplan *pl, const T *x, const T *w, const T *wt, const T *bias,   \
                          T *y, int64_t n0, int64_t n1, T *xp, T *ye) {                           \
    const cell_conv_geom *g = pl->g;                                                              \
    const dgeom *d = pl->d;                                                                       \
    const int64_t P = g->oh * g->ow;                                                              \
    for (int64_t n = n0; n < n1; n++) {                                                           \
      pad_input_##S(g, d, x + n * g->c * g->h * g->w, xp);                                        \
      T *yn = y + n * g->o * P;                                                                   \
      for (int64_t gi = 0; gi < g->groups; gi++) {                                                \
        const T *xg = xp + gi * d->cg * d->plane;                                                 \
        if (pl->ovec)                                                                             \
          kernel_fo_##S(d->og, P, d->taps, wt + gi * d->taps * d->og, d->og, xg, pl->pos,         \
                        pl->off, yn + gi * d->og * P, P, bias ? bias + gi * d->og : NULL);        \
        else                                                                                      \
          kernel_f_##S(d->og, d->L, d->taps, w + gi * d->og * d->taps, d->taps, 1, xg, pl->off,   \
                       ye + gi * d->og * d->Lr, d->Lr, 0);                                        \
      }                                                                                           \
      if (!pl->ovec) gather_out_##S(g, d, ye, bias, yn);                                          \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* pw: this part's weight gradient (layout: see dplan). */                                      \
  static void backward_##S(const dplan *pl, const T *gy, const T *x, const T *w, T *gx, T *pw,   \
                           int64_t n0, int64_t n1, T *xp, T *ge, T *gyt, T *gxp) {                \
    const cell_conv_geom *g = pl->g;                                                              \
    const dgeom *d = pl->d;                                                                       \
    const int64_t P = g->oh * g->ow;                                                              \
    for (int64_t n = n0; n < n1; n++) {                                                           \
      const T *gyn = gy + n * g->o * P;                                                           \
      if (gx || (pw && !pl->ovec)) spread_grad_##S(g, d, gyn, ge);                                \
      if (pw) {                                                                                   \
        pad_input_##S(g, d, x + n * g->c * g->h * g->w, xp);                                      \
        if (pl->ovec) /* the transpose in blocks of 16 positions: their rows stay in cache */     \
          for (int64_t p0 = 0; p0 < P; p0 += 16) {                                                \
            int64_t p1 = P - p0 < 16 ? P : p0 + 16;                                               \
            for (int64_t o = 0; o < g->o; o++)                                                    \
              for (int64_t p = p0; p < p1; p++) gyt[p * g->o + o] = gyn[o * P + p];               \
          }                                                                                       \
        for (int64_t gi = 0; gi < g->groups; gi++) {                                              \
          const T *xg = xp + gi * d->cg * d->plane;                                               \
          if (pl->ovec)                                                                           \
            kernel_wo_##S(d->og, P, d->taps, gyt + gi * d->og, g->o, xg, pl->pos, pl->off,        \
                          pw + gi * d->taps * d->og, d->og);                                      \
          else                                                                                    \
            kernel_w_##S(d->og, d->Lr, d->taps, ge + gi * d->og * d->Lr, d->Lr, xg, pl->off,      \
                         pw + gi * d->og * d->taps, d->taps);                                     \
        }                                                                                         \
      }                                                                                           \
      if (gx) {                                                                                   \
        memset(gxp, 0, sizeof(T) * (size_t)(g->c * d->plane));                                    \
        for (int64_t gi = 0; gi < g->groups; gi++)                                                \
          for (int64_t i = 0; i < g->kh; i++)                                                     \
            for (int64_t j = 0; j < g->kw; j++)                                                   \
              kernel_f_##S(d->cg, d->L, d->og, w + gi * d->og * d->taps + i * g->kw + j, d->kk,   \
                           d->taps, ge + gi * d->og * d->Lr, pl->offo,                            \
                           gxp + gi * d->cg * d->plane + i * g->dh * d->wp + j * g->dw,          \
                           d->plane, 1);                                                          \
        gather_input_##S(g, d, gxp, gx + n * g->c * g->h * g->w);                                 \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* wt[gi][t][o] = w[gi * og + o][t]; and gw[gi * og + o][t] += pw[gi][t][o]. */                 \
  __attribute__((unused)) static void pack_weights_##S(const dgeom *d, int64_t groups, const T *w, T *wt) {             \
    for (int64_t gi = 0; gi < groups; gi++)                                                       \
      for (int64_t o = 0; o < d->og; o++)                                                         \
        for (int64_t t = 0; t < d->taps; t++)                                                     \
          wt[(gi * d->taps + t) * d->og + o] = w[(gi * d->og + o) * d->taps + t];                 \
  }                                                                                               \
  __attribute__((unused)) static void add_weights_##S(const dgeom *d, int64_t groups, int ovec, const T *pw, T *gw) {   \
    for (int64_t gi = 0; gi < groups; gi++)                                                       \
      for (int64_t o = 0; o < d->og; o++)                                                         \
        for (int64_t t = 0; t < d->taps; t++) {                                                   \
          int64_t k = (gi * d->og + o) * d->taps + t;                                             \
          gw[k] += ovec ? pw[(gi * d->taps + t) * d->og + o] : pw[k];                             \
        }                                                                                         \
  }

DIRECT_KERNELS(float, vf32, f32, CONV_CLONES)
DIRECT_KERNELS(double, vf64, f64, CONV_CLONES)

/* float32 on 16 lanes where the CPU has AVX-512 (run-time choice): taken
 * when a group's output channels are a multiple of 16, so forward and the
 * weight gradient run the channel-vector kernels (a lane per channel) and
 * the input gradient kernel_f (a lane per position): every element sums
 * in the same order as on 8 lanes, and the bits are those of the AVX2
 * path. Only where that path is compiled (CELL_HAVE_CLONES: GCC, not
 * under TSan): elsewhere the 8-lane loops are the baseline's, without
 * fused multiply-adds, and the two would round differently. */
#if defined(__x86_64__) && defined(CELL_HAVE_CLONES)
typedef float vf32w __attribute__((vector_size(64)));
#define WIDE_TARGET __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))
DIRECT_KERNELS(float, vf32w, f32w, WIDE_TARGET)
static int wide_state = -1; /* -1: not decided yet */
static int wide_isa(void) {
  int s = __atomic_load_n(&wide_state, __ATOMIC_ACQUIRE);
  if (s < 0) {
    const char *env = getenv("CELL_CONV_ISA");
    __builtin_cpu_init();
    s = __builtin_cpu_supports("avx512f") && !(env && strcmp(env, "avx2") == 0);
    __atomic_store_n(&wide_state, s, __ATOMIC_RELEASE);
  }
  return s;
}
#define HAVE_WIDE 1
#endif

int cell_conv_wide_set(int on) {
#ifdef HAVE_WIDE
  int prev = wide_isa();
  __builtin_cpu_init();
  __atomic_store_n(&wide_state, on && __builtin_cpu_supports("avx512f"), __ATOMIC_RELEASE);
  return prev;
#else
  (void)on;
  return 0;
#endif
}

/* Whether a float32 convolution takes the 16-lane kernels. */
static int conv_wide(const cell_conv_geom *g, cell_dtype ct) {
#ifdef HAVE_WIDE
  return ct == CELL_DTYPE_F32 && (g->o / g->groups) % 16 == 0 && wide_isa();
#else
  (void)g;
  (void)ct;
  return 0;
#endif
}

/* The tap offsets of one group: off[(c * kh + i) * kw + j] = c * plane + i * dh * wp + j * dw. */
static void tap_offsets(const cell_conv_geom *g, const dgeom *d, int64_t *off) {
  for (int64_t c = 0; c < d->cg; c++)
    for (int64_t i = 0; i < g->kh; i++)
      for (int64_t j = 0; j < g->kw; j++)
        off[(c * g->kh + i) * g->kw + j] = c * d->plane + i * g->dh * d->wp + j * g->dw;
}

/* Parts of the batch: fixed by the batch size alone. */
static int64_t parts_of(const cell_conv_geom *g) { return g->n < MAX_PARTS ? g->n : MAX_PARTS; }

static cell_status oom(void) {
  return cell_error(CELL_ERR_MEMORY, "conv2d: out of memory for the convolution scratch");
}

void cell_conv_bias_grad(cell_dtype ct, const void *gy, int64_t n, int64_t o, int64_t P,
                         void *gb) {
  if (ct == CELL_DTYPE_F64) bias_grad_f64(gy, n, o, P, gb);
  else bias_grad_f32(gy, n, o, P, gb);
}

/* The shared tables of a call (off, offo, pos) in one block of int64_t. */
static int64_t *plan_init(const cell_conv_geom *g, const dgeom *d, int vl, dplan *pl) {
  int64_t P = g->oh * g->ow, nt = d->taps > 0 ? d->taps : 1;
  int64_t *tab = cell_alloc(sizeof(int64_t) * (size_t)(nt + d->og + P + 1));
  if (!tab) return NULL;
  int64_t *offo = tab + nt, *pos = offo + d->og;
  tap_offsets(g, d, tab);
  for (int64_t o = 0; o < d->og; o++) offo[o] = o * d->Lr;
  for (int64_t oh = 0; oh < g->oh; oh++)
    for (int64_t ow = 0; ow < g->ow; ow++) pos[oh * g->ow + ow] = oh * d->wp + ow;
  pl->g = g;
  pl->d = d;
  pl->off = tab;
  pl->offo = offo;
  pl->pos = pos;
  pl->ovec = d->og % vl == 0;
  return tab;
}

cell_status cell_conv_direct_forward(const cell_conv_geom *g, cell_dtype ct, const void *x,
                                     const void *w, const void *b, void *y) {
  const int es = cell_dtype_size(ct), wide = conv_wide(g, ct), vl = wide ? 16 : VBYTES / es;
  dgeom d;
  dplan pl;
  dgeom_init(g, vl, &d);
  int64_t *tab = plan_init(g, &d, vl, &pl);
  int64_t parts = parts_of(g);
  /* per part: the padded input and (channel-position kernel) the output on the padded
   * width; shared: the packed weights (channel-vector kernel) */
  int64_t nxp = g->c * d.plane, nye = pl.ovec ? 0 : g->o * d.Lr, per = nxp + nye;
  int64_t nwt = pl.ovec ? g->o * d.taps : 0;
  char *scr = tab ? cell_alloc((size_t)(per * parts + nwt) * (size_t)es) : NULL;
  if (!scr) {
    cell_dealloc(tab);
    return oom();
  }
  char *wt = scr + (size_t)(per * parts) * (size_t)es;
  if (pl.ovec) {
    if (ct == CELL_DTYPE_F64) pack_weights_f64(&d, g->groups, w, (double *)(void *)wt);
    else pack_weights_f32(&d, g->groups, w, (float *)(void *)wt); /* the same layout at 16 lanes */
  }
  int64_t macs = g->n * g->o * (pl.ovec ? g->oh * g->ow : d.L) * d.taps;
  int par = cell_conv_parallel(macs / MACS_PER_ELEMENT);
  PARTS_FOR(par, p, parts, {
    if (cell_ctx()->interrupt) continue; /* stop between parts; the caller reports it */
    int64_t n0 = g->n * p / parts, n1 = g->n * (p + 1) / parts;
    char *sp = scr + (size_t)(p * per) * (size_t)es;
    if (ct == CELL_DTYPE_F64)
      forward_f64(&pl, x, w, (const double *)(void *)wt, b, y, n0, n1, (double *)(void *)sp,
                  (double *)(void *)sp + nxp);
#ifdef HAVE_WIDE
    else if (wide)
      forward_f32w(&pl, x, w, (const float *)(void *)wt, b, y, n0, n1, (float *)(void *)sp,
                   (float *)(void *)sp + nxp);
#endif
    else
      forward_f32(&pl, x, w, (const float *)(void *)wt, b, y, n0, n1, (float *)(void *)sp,
                  (float *)(void *)sp + nxp);
  });
  cell_dealloc(tab);
  cell_dealloc(scr);
  return cell_check_interrupt();
}

cell_status cell_conv_direct_backward(const cell_conv_geom *g, cell_dtype ct, const void *gy,
                                      const void *x, const void *w, void *gx, void *gw) {
  const int es = cell_dtype_size(ct), wide = conv_wide(g, ct), vl = wide ? 16 : VBYTES / es;
  dgeom d;
  dplan pl;
  dgeom_init(g, vl, &d);
  int64_t *tab = plan_init(g, &d, vl, &pl);
  int64_t parts = parts_of(g), wsz = g->o * d.taps, P = g->oh * g->ow;
  /* per part: the padded input, the gradient spread on the padded width (+ slack) or
   * transposed, the padded input gradient, a partial weight gradient */
  int64_t nxp = gw ? g->c * d.plane : 0;
  int64_t nge = gx || (gw && !pl.ovec) ? g->o * d.Lr + NV * vl : 0;
  int64_t ngt = gw && pl.ovec ? P * g->o : 0, ngx = gx ? g->c * d.plane : 0;
  int64_t per = nxp + nge + ngt + ngx + (gw ? wsz : 0);
  char *scr = tab ? cell_alloc((size_t)(per * parts) * (size_t)es) : NULL;
  if (!scr) {
    cell_dealloc(tab);
    return oom();
  }
  int64_t macs = (gx ? g->n * g->o * d.L * d.taps : 0) +
                 (gw ? g->n * g->o * (pl.ovec ? P : d.Lr) * d.taps : 0);
  int par = cell_conv_parallel(macs / MACS_PER_ELEMENT);
  PARTS_FOR(par, p, parts, {
    if (cell_ctx()->interrupt) continue;
    int64_t n0 = g->n * p / parts, n1 = g->n * (p + 1) / parts;
    char *sp = scr + (size_t)(p * per) * (size_t)es;
    if (gw) /* this part's weight-gradient sum starts at 0 (the rest is written before read) */
      memset(sp + (size_t)(nxp + nge + ngt + ngx) * (size_t)es, 0, (size_t)wsz * (size_t)es);
    if (ct == CELL_DTYPE_F64) {
      double *xp = (double *)(void *)sp, *ge = xp + nxp, *gt = ge + nge, *gxp = gt + ngt;
      backward_f64(&pl, gy, x, w, gx, gw ? gxp + ngx : NULL, n0, n1, xp, ge, gt, gxp);
#ifdef HAVE_WIDE
    } else if (wide) {
      float *xp = (float *)(void *)sp, *ge = xp + nxp, *gt = ge + nge, *gxp = gt + ngt;
      backward_f32w(&pl, gy, x, w, gx, gw ? gxp + ngx : NULL, n0, n1, xp, ge, gt, gxp);
#endif
    } else {
      float *xp = (float *)(void *)sp, *ge = xp + nxp, *gt = ge + nge, *gxp = gt + ngt;
      backward_f32(&pl, gy, x, w, gx, gw ? gxp + ngx : NULL, n0, n1, xp, ge, gt, gxp);
    }
  });
  if (gw) /* gw = the parts' sums, in part order */
    for (int64_t p = 0; p < parts; p++) {
      const char *pw = scr + (size_t)(p * per + nxp + nge + ngt + ngx) * (size_t)es;
      if (ct == CELL_DTYPE_F64)
        add_weights_f64(&d, g->groups, pl.ovec, (const double *)(const void *)pw, gw);
      else
        add_weights_f32(&d, g->groups, pl.ovec, (const float *)(const void *)pw, gw);
    }
  cell_dealloc(tab);
  cell_dealloc(scr);
  return cell_check_interrupt();
}
