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
 * which on small images (LeNet) costs more than the arithmetic. The
 * kernels keep a tile of 12 vector accumulators in registers; on x86-64
 * a second copy is compiled for AVX2 + FMA and picked at load time.
 *
 * Samples are split into a fixed number of parts (not one per thread), each
 * with its own scratch and weight-gradient partial sum, added in part
 * order: the result does not depend on the thread count. */
#include "conv.h"
#include "../core/alloc.h"
#include "../core/iter.h"

#define MR 6      /* kernel_f: tile rows (12 accumulators, 2 loads, 1 broadcast) */
#define NV 2      /* kernel_f: tile width in vectors */
#define WR 6      /* kernel_w: tile rows */
#define NT 2      /* kernel_w: taps per tile (12 accumulators, 8 loads) */
#define MAX_PARTS 16

/* A loop over the parts, on threads when par: dynamically scheduled, so a
 * thread the OS has not run yet (a busy machine) does not hold up the rest,
 * which take its parts. */
#define PARTS_FOR(par, var, n, ...)                              \
  do {                                                           \
    if (par) {                                                   \
      _Pragma("omp parallel for schedule(dynamic, 1)")           \
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

/* One kernel_f tile: rows m0 .. m0 + R - 1 (R a constant, so the
 * accumulators stay in registers) at positions q0 .. q0 + NV * VL - 1. */
#define KF_TILE(T, V, VL, R)                                                                      \
  do {                                                                                            \
    V c[R][NV];                                                                                   \
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {                                         \
      c[r][0] = (V){0};                                                                           \
      c[r][1] = (V){0};                                                                           \
    }                                                                                             \
    for (int64_t t = 0; t < nt; t++) {                                                            \
      const T *bp = b + off[t] + q0, *ap = a + m0 * ars + t * acs;                                \
      V x0, x1;                                                                                   \
      VLOAD(x0, bp);                                                                              \
      VLOAD(x1, bp + VL);                                                                         \
      _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {                                       \
        V wv = (V){0} + ap[r * ars];                                                              \
        c[r][0] += wv * x0;                                                                       \
        c[r][1] += wv * x1;                                                                       \
      }                                                                                           \
    }                                                                                             \
    int64_t n = L - q0 < NV * VL ? L - q0 : NV * VL;                                              \
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {                                         \
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
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                           \
        _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) c[r][u] = (V){0};                     \
    _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) bq[u] = b + off[t0 + u];                  \
    const T *g0 = g + m0 * ldg;                                                                   \
    for (int64_t q = 0; q < Lr; q += VL) {                                                        \
      V x[U];                                                                                     \
      _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) VLOAD(x[u], bq[u] + q);                 \
      _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {                                       \
        V gv;                                                                                     \
        VLOAD(gv, g0 + r * ldg + q);                                                              \
        _Pragma("GCC unroll 2") for (int u = 0; u < U; u++) c[r][u] += gv * x[u];                 \
      }                                                                                           \
    }                                                                                             \
    _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                                           \
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

#define DIRECT_KERNELS(T, V, S)                                                                   \
  enum { VL_##S = VBYTES / (int)sizeof(T) };                                                      \
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
  CONV_CLONES static void bias_grad_##S(const T *y, int64_t n, int64_t o, int64_t P, T *gb) {    \
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
  static void forward_##S(const cell_conv_geom *g, const dgeom *d, const int64_t *off,           \
                          const T *x, const T *w, const T *bias, T *y, int64_t n0, int64_t n1,   \
                          T *xp, T *ye) {                                                         \
    for (int64_t n = n0; n < n1; n++) {                                                           \
      pad_input_##S(g, d, x + n * g->c * g->h * g->w, xp);                                        \
      for (int64_t gi = 0; gi < g->groups; gi++)                                                  \
        kernel_f_##S(d->og, d->L, d->taps, w + gi * d->og * d->taps, d->taps, 1, xp + gi * d->cg * d->plane, \
                     off, ye + gi * d->og * d->Lr, d->Lr, 0);                                     \
      gather_out_##S(g, d, ye, bias, y + n * g->o * g->oh * g->ow);                               \
    }                                                                                             \
  }                                                                                               \
                                                                                                  \
  /* offo[o] = o * Lr: the rows of ge as taps of kernel_f. */                                     \
  static void backward_##S(const cell_conv_geom *g, const dgeom *d, const int64_t *off,          \
                           const int64_t *offo, const T *gy, const T *x, const T *w, T *gx,      \
                           T *gw, int64_t n0, int64_t n1, T *xp, T *ge, T *gxp) {                 \
    for (int64_t n = n0; n < n1; n++) {                                                           \
      spread_grad_##S(g, d, gy + n * g->o * g->oh * g->ow, ge);                                   \
      if (gw) {                                                                                   \
        pad_input_##S(g, d, x + n * g->c * g->h * g->w, xp);                                      \
        for (int64_t gi = 0; gi < g->groups; gi++)                                                \
          kernel_w_##S(d->og, d->Lr, d->taps, ge + gi * d->og * d->Lr, d->Lr,                        \
                       xp + gi * d->cg * d->plane, off, gw + gi * d->og * d->taps, d->taps);            \
      }                                                                                           \
      if (gx) {                                                                                   \
        memset(gxp, 0, sizeof(T) * (size_t)(g->c * d->plane));                                    \
        for (int64_t gi = 0; gi < g->groups; gi++)                                                \
          for (int64_t i = 0; i < g->kh; i++)                                                     \
            for (int64_t j = 0; j < g->kw; j++)                                                   \
              kernel_f_##S(d->cg, d->L, d->og, w + gi * d->og * d->taps + i * g->kw + j, d->kk,      \
                           d->taps, ge + gi * d->og * d->Lr, offo,                                   \
                           gxp + gi * d->cg * d->plane + i * g->dh * d->wp + j * g->dw,          \
                           d->plane, 1);                                                          \
        gather_input_##S(g, d, gxp, gx + n * g->c * g->h * g->w);                                 \
      }                                                                                           \
    }                                                                                             \
  }

DIRECT_KERNELS(float, vf32, f32)
DIRECT_KERNELS(double, vf64, f64)

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

cell_status cell_conv_direct_forward(const cell_conv_geom *g, cell_dtype ct, const void *x,
                                     const void *w, const void *b, void *y) {
  const int es = cell_dtype_size(ct), vl = VBYTES / es;
  dgeom d;
  dgeom_init(g, vl, &d);
  int64_t parts = parts_of(g);
  int64_t per = g->c * d.plane + g->o * d.Lr; /* scratch elements of one part */
  int64_t *off = cell_alloc(sizeof(int64_t) * (size_t)(d.taps > 0 ? d.taps : 1));
  char *scr = cell_alloc((size_t)(per * parts) * (size_t)es);
  if (!off || !scr) {
    cell_dealloc(off);
    cell_dealloc(scr);
    return oom();
  }
  tap_offsets(g, &d, off);
  int par = cell_conv_parallel(g->n * g->o * d.L * d.taps / 16);
  PARTS_FOR(par, p, parts, {
    int64_t n0 = g->n * p / parts, n1 = g->n * (p + 1) / parts;
    char *s = scr + (size_t)(p * per) * (size_t)es;
    if (ct == CELL_DTYPE_F64)
      forward_f64(g, &d, off, x, w, b, y, n0, n1, (double *)(void *)s,
                  (double *)(void *)s + g->c * d.plane);
    else
      forward_f32(g, &d, off, x, w, b, y, n0, n1, (float *)(void *)s,
                  (float *)(void *)s + g->c * d.plane);
  });
  cell_dealloc(off);
  cell_dealloc(scr);
  return cell_ctx()->interrupt ? cell_error(CELL_ERR_INTERRUPT, "interrupted") : CELL_OK;
}

cell_status cell_conv_direct_backward(const cell_conv_geom *g, cell_dtype ct, const void *gy,
                                      const void *x, const void *w, void *gx, void *gw) {
  const int es = cell_dtype_size(ct), vl = VBYTES / es;
  dgeom d;
  dgeom_init(g, vl, &d);
  int64_t parts = parts_of(g), wsz = g->o * d.taps;
  /* per part: xp, ge (+ slack), gxp, a partial weight gradient */
  int64_t nxp = gw ? g->c * d.plane : 0, nge = g->o * d.Lr + NV * vl, ngx = gx ? g->c * d.plane : 0;
  int64_t per = nxp + nge + ngx + (gw ? wsz : 0);
  int64_t nt = d.taps > d.og ? d.taps : d.og;
  int64_t *off = cell_alloc(sizeof(int64_t) * (size_t)(2 * (nt > 0 ? nt : 1)));
  char *scr = cell_alloc((size_t)(per * parts) * (size_t)es);
  if (!off || !scr) {
    cell_dealloc(off);
    cell_dealloc(scr);
    return oom();
  }
  int64_t *offo = off + (nt > 0 ? nt : 1);
  tap_offsets(g, &d, off);
  for (int64_t o = 0; o < d.og; o++) offo[o] = o * d.Lr;
  if (gw) memset(scr, 0, (size_t)(per * parts) * (size_t)es); /* the partial sums start at 0 */
  int par = cell_conv_parallel(g->n * g->o * d.L * d.taps / 8);
  PARTS_FOR(par, p, parts, {
    int64_t n0 = g->n * p / parts, n1 = g->n * (p + 1) / parts;
    char *s = scr + (size_t)(p * per) * (size_t)es;
    if (ct == CELL_DTYPE_F64) {
      double *xp = (double *)(void *)s, *ge = xp + nxp, *gxp = ge + nge, *pw = gxp + ngx;
      backward_f64(g, &d, off, offo, gy, x, w, gx, gw ? pw : NULL, n0, n1, xp, ge, gxp);
    } else {
      float *xp = (float *)(void *)s, *ge = xp + nxp, *gxp = ge + nge, *pw = gxp + ngx;
      backward_f32(g, &d, off, offo, gy, x, w, gx, gw ? pw : NULL, n0, n1, xp, ge, gxp);
    }
  });
  if (gw) { /* gw = the parts' sums, in part order */
    for (int64_t p = 0; p < parts; p++) {
      char *pw = scr + (size_t)(p * per + nxp + nge + ngx) * (size_t)es;
      if (ct == CELL_DTYPE_F64)
        for (int64_t i = 0; i < wsz; i++) ((double *)gw)[i] += ((const double *)(void *)pw)[i];
      else
        for (int64_t i = 0; i < wsz; i++) ((float *)gw)[i] += ((const float *)(void *)pw)[i];
    }
  }
  cell_dealloc(off);
  cell_dealloc(scr);
  return cell_ctx()->interrupt ? cell_error(CELL_ERR_INTERRUPT, "interrupted") : CELL_OK;
}
