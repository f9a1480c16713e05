/* interpolate.c - resizing 3-D (N, C, L) and 4-D (N, C, H, W) inputs:
 * nearest, (bi)linear and bicubic, forward and backward, with PyTorch's
 * coordinate rules (which MindSpore's ops.interpolate follows).
 *
 * Each spatial axis gets a table: for every output position, K input
 * positions and their weights (K = 1 nearest, 2 linear, 4 cubic). An output
 * is the weighted sum over the K x K window of the two axes' tables (a 3-D
 * input is a 4-D one of height 1); backward adds each output gradient back
 * to that window. Coordinates are computed in the compute dtype as PyTorch
 * computes them (float32 for float32, float64 for float64; nearest in
 * float32 always), so sizes where a position lands on a boundary pick the
 * same pixels. float16 and bfloat16 compute through float32.
 *
 * Both directions go through one driver (drive_f32 / drive_f64) over the
 * planes (N x C): separable passes, a W pass into an H x OW scratch per
 * thread and an H pass over contiguous output rows, with tap-major tables
 * so the inner loops are branch-free and vectorised; the backward reads
 * the output gradient through its strides and does the W pass as a gather
 * over the transposed table. Where that scratch would dwarf the input and
 * output, the direct K x K loop runs instead. */
#include "interp_taps.h"
#include "../core/iter.h"
#include "conv.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "nn.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
static int interp_max_threads(void) { return omp_get_max_threads(); }
static int interp_thread_num(void) { return omp_get_thread_num(); }
#else
static int interp_max_threads(void) { return 1; }
static int interp_thread_num(void) { return 0; }
#endif

typedef struct {
  int k;          /* taps per output position */
  int64_t n;      /* output positions */
  int64_t *idx;   /* n * k input positions */
  double *w;      /* n * k weights */
} axis_tab;

/* The table of one axis (in -> out) for mode; f32 picks float32 coordinates. */
static cell_status make_tab(int mode, int align, int64_t in, int64_t out, double sc, int f32,
                            axis_tab *t) {
  t->k = cell_interp_taps(mode);
  t->n = out;
  t->idx = malloc(sizeof(int64_t) * (size_t)(out * t->k + 1));
  t->w = malloc(sizeof(double) * (size_t)(out * t->k + 1));
  if (!t->idx || !t->w) {
    free(t->idx);
    free(t->w);
    t->idx = NULL;
    t->w = NULL;
    return cell_error(CELL_ERR_MEMORY, "interpolate: out of memory");
  }
  for (int64_t o = 0; o < out; o++)
    cell_interp_point(mode, align, in, out, sc, f32, o, t->idx + o * t->k, t->w + o * t->k);
  return CELL_OK;
}

static void free_tab(axis_tab *t) {
  free(t->idx);
  free(t->w);
}

/* Direct: each output from its K x K window, no scratch. Taken when the
 * separable passes' scratch (H x OW per plane) would be far larger than
 * the input and the output. The backward reads the output gradient
 * through its row and column strides and adds into a zeroed gx. */
#define DIRECT_LOOPS(T, S)                                                                   \
  static void dfwd_##S(const axis_tab *th, const axis_tab *tw, int64_t h, int64_t w,          \
                       const T *xp, T *yp) {                                                 \
    int64_t oh = th->n, ow = tw->n;                                                          \
    (void)h;                                                                                 \
    for (int64_t i = 0; i < oh; i++) {                                                       \
      const int64_t *hi = th->idx + i * th->k;                                               \
      const double *hw = th->w + i * th->k;                                                  \
      for (int64_t j = 0; j < ow; j++) {                                                     \
        const int64_t *wi = tw->idx + j * tw->k;                                             \
        const double *ww = tw->w + j * tw->k;                                                \
        T acc = 0;                                                                           \
        for (int a = 0; a < th->k; a++) {                                                    \
          T row = 0;                                                                         \
          for (int b = 0; b < tw->k; b++) row += (T)ww[b] * xp[hi[a] * w + wi[b]];           \
          acc += (T)hw[a] * row;                                                             \
        }                                                                                    \
        yp[i * ow + j] = acc;                                                                \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  static void dbwd_##S(const axis_tab *th, const axis_tab *tw, int64_t h, int64_t w,          \
                       const T *gp, int64_t gsr, int64_t gsc, T *xp) {                       \
    int64_t oh = th->n, ow = tw->n;                                                          \
    for (int64_t q = 0; q < h * w; q++) xp[q] = 0;                                           \
    for (int64_t i = 0; i < oh; i++) {                                                       \
      const int64_t *hi = th->idx + i * th->k;                                               \
      const double *hw = th->w + i * th->k;                                                  \
      for (int64_t j = 0; j < ow; j++) {                                                     \
        const int64_t *wi = tw->idx + j * tw->k;                                             \
        const double *ww = tw->w + j * tw->k;                                                \
        T v = gp[i * gsr + j * gsc];                                                         \
        for (int a = 0; a < th->k; a++)                                                      \
          for (int b = 0; b < tw->k; b++) xp[hi[a] * w + wi[b]] += (T)hw[a] * (T)ww[b] * v;  \
      }                                                                                      \
    }                                                                                        \
  }

DIRECT_LOOPS(float, f32)
DIRECT_LOOPS(double, f64)

static int scratch_too_big(int64_t h, int64_t w, int64_t oh, int64_t ow) {
  return h * ow > 4 * (h * w + oh * ow) + ((int64_t)1 << 16);
}

/* One call's plan for the separable passes. The tables are tap-major
 * (tap b of output position j at [b * n + j]) so each pass's inner loop
 * runs over contiguous outputs without a branch. For the backward the W
 * table is also transposed: input column c receives, in the order the
 * forward visits them, the (output column, weight) pairs
 * tcol / tw[tstart[c] .. tstart[c + 1]), so the W pass of the backward
 * gathers into a register instead of adding into gx column by column. */
typedef struct {
  int kh, kw;
  int64_t h, w, oh, ow;
  int64_t *hidx, *widx; /* kh * oh, kw * ow */
  void *hw, *ww;        /* the weights in the compute type */
  int64_t *tstart, *tcol;
  void *tw;
  void *scratch; /* per thread: h * ow (the intermediate) + ow (a gradient row) */
  int nthreads;
} sep_plan;

static void sep_free(sep_plan *p) {
  free(p->hidx);
  free(p->widx);
  free(p->hw);
  free(p->ww);
  free(p->tstart);
  free(p->tcol);
  free(p->tw);
  free(p->scratch);
}

/* Tap-major copies of t's positions (and, by the caller, weights). */
static int64_t *tap_major_idx(const axis_tab *t) {
  int64_t *r = malloc(sizeof(int64_t) * (size_t)(t->n * t->k + 1));
  if (r)
    for (int64_t j = 0; j < t->n; j++)
      for (int b = 0; b < t->k; b++) r[b * t->n + j] = t->idx[j * t->k + b];
  return r;
}

/* The passes in type T: the plan's typed tables, the forward and backward
 * of one plane, and the driver both directions share. */
#define SEP_LOOPS(T, S)                                                                      \
  static T *tap_major_w_##S(const axis_tab *t) {                                             \
    T *r = malloc(sizeof(T) * (size_t)(t->n * t->k + 1));                                    \
    if (r)                                                                                   \
      for (int64_t j = 0; j < t->n; j++)                                                     \
        for (int b = 0; b < t->k; b++) r[b * t->n + j] = (T)t->w[j * t->k + b];              \
    return r;                                                                                \
  }                                                                                          \
  /* The transposed W table of the backward (0, or -1 out of memory). */                     \
  static int transpose_w_##S(const axis_tab *t, int64_t in, sep_plan *p) {                   \
    int64_t m = t->n * t->k;                                                                 \
    p->tstart = calloc((size_t)(in + 1), sizeof(int64_t));                                   \
    p->tcol = malloc(sizeof(int64_t) * (size_t)(m + 1));                                     \
    p->tw = malloc(sizeof(T) * (size_t)(m + 1));                                             \
    if (!p->tstart || !p->tcol || !p->tw) return -1;                                         \
    for (int64_t q = 0; q < m; q++) p->tstart[t->idx[q] + 1]++;                              \
    for (int64_t c = 0; c < in; c++) p->tstart[c + 1] += p->tstart[c];                       \
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)(in + 1));                              \
    if (!fill) return -1;                                                                    \
    memcpy(fill, p->tstart, sizeof(int64_t) * (size_t)in);                                   \
    T *tw = p->tw;                                                                           \
    for (int64_t j = 0; j < t->n; j++)                                                       \
      for (int b = 0; b < t->k; b++) {                                                       \
        int64_t q = fill[t->idx[j * t->k + b]]++;                                            \
        p->tcol[q] = j;                                                                      \
        tw[q] = (T)t->w[j * t->k + b];                                                       \
      }                                                                                      \
    free(fill);                                                                              \
    return 0;                                                                                \
  }                                                                                          \
  /* y (oh x ow) from x (h x w): the W pass into tmp (h x ow), then the H                    \
   * pass; y = sum_a wh[a] * (sum_b ww[b] * x[hi[a]][wi[b]]), in that order. */             \
  CONV_CLONES static void plane_fwd_##S(const sep_plan *p, const T *x, T *y, T *tmp) {       \
    const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;                                \
    const int64_t *wi = p->widx, *hi = p->hidx;                                              \
    const T *ww = p->ww, *hw = p->hw;                                                        \
    for (int64_t r = 0; r < h; r++) {                                                        \
      const T *xr = x + r * w;                                                               \
      T *restrict tr = tmp + r * ow;                                                         \
      if (p->kw == 1) {                                                                      \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++) tr[j] = ww[j] * xr[wi[j]];             \
      } else if (p->kw == 2) {                                                               \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++)                                        \
          tr[j] = ww[j] * xr[wi[j]] + ww[ow + j] * xr[wi[ow + j]];                           \
      } else {                                                                               \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++)                                        \
          tr[j] = ww[j] * xr[wi[j]] + ww[ow + j] * xr[wi[ow + j]] +                          \
                  ww[2 * ow + j] * xr[wi[2 * ow + j]] + ww[3 * ow + j] * xr[wi[3 * ow + j]]; \
      }                                                                                      \
    }                                                                                        \
    for (int64_t i = 0; i < oh; i++) {                                                       \
      T *restrict yr = y + i * ow;                                                           \
      const T *t0 = tmp + hi[i] * ow;                                                        \
      const T w0 = hw[i];                                                                    \
      if (p->kh == 1) {                                                                      \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++) yr[j] = w0 * t0[j];                    \
      } else if (p->kh == 2) {                                                               \
        const T *t1 = tmp + hi[oh + i] * ow;                                                 \
        const T w1 = hw[oh + i];                                                             \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++) yr[j] = w0 * t0[j] + w1 * t1[j];       \
      } else {                                                                               \
        const T *t1 = tmp + hi[oh + i] * ow, *t2 = tmp + hi[2 * oh + i] * ow,                \
                *t3 = tmp + hi[3 * oh + i] * ow;                                             \
        const T w1 = hw[oh + i], w2 = hw[2 * oh + i], w3 = hw[3 * oh + i];                   \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++)                                        \
          yr[j] = w0 * t0[j] + w1 * t1[j] + w2 * t2[j] + w3 * t3[j];                         \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  /* gx (h x w) from g (oh x ow, rows gsr and columns gsc apart): the                        \
   * adjoint of the H pass into tmp, then the W pass as a gather. */                         \
  CONV_CLONES static void plane_bwd_##S(const sep_plan *p, const T *g, int64_t gsr,          \
                                        int64_t gsc, T *gx, T *tmp, T *row) {                \
    const int64_t h = p->h, w = p->w, oh = p->oh, ow = p->ow;                                \
    const int64_t *hi = p->hidx, *ts = p->tstart, *tc = p->tcol;                             \
    const T *hw = p->hw, *tw = p->tw;                                                        \
    memset(tmp, 0, sizeof(T) * (size_t)(h * ow));                                            \
    for (int64_t i = 0; i < oh; i++) {                                                       \
      const T *gr = g + i * gsr;                                                             \
      if (gsc != 1) {                                                                        \
        for (int64_t j = 0; j < ow; j++) row[j] = gr[j * gsc];                               \
        gr = row;                                                                            \
      }                                                                                      \
      for (int a = 0; a < p->kh; a++) {                                                      \
        T *restrict ta = tmp + hi[a * oh + i] * ow;                                          \
        const T wa = hw[a * oh + i];                                                         \
        CELL_NN_SIMD for (int64_t j = 0; j < ow; j++) ta[j] += wa * gr[j];                   \
      }                                                                                      \
    }                                                                                        \
    for (int64_t r = 0; r < h; r++) {                                                        \
      const T *tr = tmp + r * ow;                                                            \
      T *xr = gx + r * w;                                                                    \
      for (int64_t c = 0; c < w; c++) {                                                      \
        T acc = 0;                                                                           \
        for (int64_t q = ts[c]; q < ts[c + 1]; q++) acc += tw[q] * tr[tc[q]];                \
        xr[c] = acc;                                                                         \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  /* The driver of both directions over planes (a plane = one (n, c)):                       \
   * forward dst = resize(src), src contiguous; backward dst = adjoint(src),                 \
   * src read through gst (the strides of its N, C, H and W dimensions;                      \
   * chans = C). Returns 0, or -1 when memory runs out. */                                   \
  static int drive_##S(const axis_tab *th, const axis_tab *tw, int64_t planes, int64_t chans, \
                       int64_t h, int64_t w, const T *src, const int64_t *gst, T *dst,       \
                       int bwd) {                                                            \
    int64_t oh = th->n, ow = tw->n;                                                          \
    int64_t s0 = bwd ? gst[0] : chans * oh * ow, s1 = bwd ? gst[1] : oh * ow;                \
    int64_t sr = bwd ? gst[2] : ow, sc = bwd ? gst[3] : 1;                                   \
    int64_t work = planes * (h + oh) * ow * (th->k + tw->k);                                 \
    int par = cell_conv_parallel(work);                                                      \
    if (scratch_too_big(h, w, oh, ow)) {                                                     \
      CELL_FOR(par, int64_t, q, planes, {                                                    \
        const T *sp = src + (q / chans) * s0 + (q % chans) * s1;                             \
        if (bwd)                                                                             \
          dbwd_##S(th, tw, h, w, sp, sr, sc, dst + q * h * w);                               \
        else                                                                                 \
          dfwd_##S(th, tw, h, w, src + q * h * w, dst + q * oh * ow);                        \
      });                                                                                    \
      return 0;                                                                              \
    }                                                                                        \
    sep_plan p = {.kh = th->k, .kw = tw->k, .h = h, .w = w, .oh = oh, .ow = ow};             \
    p.nthreads = par ? interp_max_threads() : 1;                                               \
    int64_t per = h * ow + ow;                                                               \
    p.hidx = tap_major_idx(th);                                                              \
    p.widx = tap_major_idx(tw);                                                              \
    p.hw = tap_major_w_##S(th);                                                              \
    p.ww = tap_major_w_##S(tw);                                                              \
    p.scratch = malloc(sizeof(T) * (size_t)(per * p.nthreads + 1));                          \
    int bad = !p.hidx || !p.widx || !p.hw || !p.ww || !p.scratch;                            \
    if (!bad && bwd) bad = transpose_w_##S(tw, w, &p);                                       \
    if (bad) {                                                                               \
      sep_free(&p);                                                                          \
      return -1;                                                                             \
    }                                                                                        \
    T *scratch = p.scratch;                                                                  \
    CELL_FOR(par, int64_t, q, planes, {                                                      \
      T *tmp = scratch + per * (par ? interp_thread_num() : 0);                                \
      if (bwd)                                                                               \
        plane_bwd_##S(&p, src + (q / chans) * s0 + (q % chans) * s1, sr, sc,                 \
                      dst + q * h * w, tmp, tmp + h * ow);                                   \
      else                                                                                   \
        plane_fwd_##S(&p, src + q * h * w, dst + q * oh * ow, tmp);                          \
    });                                                                                      \
    sep_free(&p);                                                                            \
    return 0;                                                                                \
  }

SEP_LOOPS(float, f32)
SEP_LOOPS(double, f64)

#define DISPATCH(ct, fn, ...) \
  ((ct) == CELL_DTYPE_F64 ? fn##_f64(__VA_ARGS__) : fn##_f32(__VA_ARGS__))

/* The two axis tables of a call (H of a 3-D input: the identity of size 1). */
static cell_status tabs(int mode, int align, int ndim, const int64_t *in_shape,
                        const int64_t *osz, const double *scales, int f32, axis_tab *th,
                        axis_tab *tw) {
  th->idx = tw->idx = NULL;
  th->w = tw->w = NULL;
  int sp = ndim - 2;
  cell_status s = sp == 2 ? make_tab(mode, align, in_shape[2], osz[0], scales ? scales[0] : 0, f32, th)
                          : make_tab(CELL_INTERP_NEAREST, 0, 1, 1, 0, f32, th);
  if (s == CELL_OK)
    s = make_tab(mode, align, in_shape[ndim - 1], osz[sp - 1], scales ? scales[sp - 1] : 0, f32, tw);
  if (s != CELL_OK) {
    free_tab(th);
    free_tab(tw);
  }
  return s;
}

cell_status cell_cpu_interpolate(const cell_tensor *x, int mode, int align_corners,
                                 const int64_t *size, const double *scales, cell_tensor **out) {
  if (!x || !size || !out) return cell_error(CELL_ERR_VALUE, "interpolate: NULL argument");
  CELL_TRY(cell_interp_check(mode, x->ndim, x->shape, size));
  if (!cell_dtype_is_float(x->dtype))
    return cell_error(CELL_ERR_TYPE, "interpolate: input must be a float tensor, got %s",
                      cell_dtype_name(x->dtype));
  int nd = x->ndim;
  int64_t oshape[4] = {x->shape[0], x->shape[1], size[0], nd == 4 ? size[1] : 0};
  CELL_TRY(cell_check_shape("interpolate", nd, oshape));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  /* the output first: the tables are no larger than its last dimensions */
  cell_tensor *xc = NULL, *r = NULL;
  cell_status s = cell_tensor_new_contig(ct, nd, oshape, &r);
  if (s == CELL_OK && cell_shape_numel(nd, oshape) == 0) return cell_nn_to_dtype(s, r, x->dtype, out);
  if (s == CELL_OK) s = cell_conv_operand(x, ct, &xc);
  axis_tab th = {0, 0, NULL, NULL}, tw = {0, 0, NULL, NULL};
  if (s == CELL_OK)
    s = tabs(mode, align_corners, nd, x->shape, size, scales, ct != CELL_DTYPE_F64, &th, &tw);
  if (s == CELL_OK) {
    int64_t h = nd == 4 ? x->shape[2] : 1;
    if (DISPATCH(ct, drive, &th, &tw, x->shape[0] * x->shape[1], x->shape[1], h,
                 x->shape[nd - 1], (const void *)cell_tensor_base(xc), NULL,
                 (void *)cell_tensor_base(r), 0))
      s = cell_error(CELL_ERR_MEMORY, "interpolate: out of memory");
    cell_tensor_bump(r);
  }
  free_tab(&th);
  free_tab(&tw);
  cell_tensor_release(xc);
  return cell_nn_to_dtype(s, r, x->dtype, out);
}

cell_status cell_cpu_interpolate_backward(const cell_tensor *g, int mode, int align_corners,
                                          int ndim, const int64_t *in_shape,
                                          const double *scales, cell_dtype dt, cell_tensor **gx) {
  if (!g || !in_shape || !gx)
    return cell_error(CELL_ERR_VALUE, "interpolate backward: NULL argument");
  if (ndim != 3 && ndim != 4)
    return cell_error(CELL_ERR_VALUE, "interpolate backward: input must be 3-D or 4-D");
  if (g->ndim != ndim || g->shape[0] != in_shape[0] || g->shape[1] != in_shape[1]) {
    char s1[96], s2[96];
    return cell_error(CELL_ERR_VALUE,
                      "interpolate backward: the output gradient %s does not match input %s",
                      cell_shape_str(g->ndim, g->shape, s1, sizeof s1),
                      cell_shape_str(ndim, in_shape, s2, sizeof s2));
  }
  CELL_TRY(cell_interp_check(mode, ndim, in_shape, g->shape + 2));
  cell_dtype ct = cell_conv_compute_dtype(dt);
  cell_tensor *gc = NULL, *r = NULL;
  if (cell_shape_numel(ndim, in_shape) == 0 || cell_shape_numel(g->ndim, g->shape) == 0) {
    cell_status z = cell_tensor_full(ct, ndim, in_shape, 0, &r);
    return cell_nn_to_dtype(z, r, dt, gx);
  }
  /* every element of r is written; g is read through its strides (the
   * gradient of a sum arrives as a broadcast view, not worth a copy) */
  cell_status s = cell_tensor_new_contig(ct, ndim, in_shape, &r);
  if (s == CELL_OK) s = cell_as_dtype(g, ct, &gc);
  axis_tab th = {0, 0, NULL, NULL}, tw = {0, 0, NULL, NULL};
  if (s == CELL_OK)
    s = tabs(mode, align_corners, ndim, in_shape, g->shape + 2, scales, ct != CELL_DTYPE_F64, &th,
             &tw);
  if (s == CELL_OK) {
    int64_t h = ndim == 4 ? in_shape[2] : 1;
    int64_t gst[4] = {gc->stride[0], gc->stride[1], ndim == 4 ? gc->stride[2] : 0,
                      gc->stride[ndim - 1]};
    if (DISPATCH(ct, drive, &th, &tw, in_shape[0] * in_shape[1], in_shape[1], h,
                 in_shape[ndim - 1], (const void *)cell_tensor_base(gc), gst,
                 (void *)cell_tensor_base(r), 1))
      s = cell_error(CELL_ERR_MEMORY, "interpolate backward: out of memory");
    cell_tensor_bump(r);
  }
  free_tab(&th);
  free_tab(&tw);
  cell_tensor_release(gc);
  return cell_nn_to_dtype(s, r, dt, gx);
}
