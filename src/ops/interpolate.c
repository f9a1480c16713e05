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
 * same pixels. float16 and bfloat16 compute through float32. */
#include "../core/iter.h"
#include "conv.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include <math.h>
#include <stdlib.h>

#define KMAX 4

typedef struct {
  int k;          /* taps per output position */
  int64_t n;      /* output positions */
  int64_t *idx;   /* n * k input positions */
  double *w;      /* n * k weights */
} axis_tab;

static int taps(int mode) {
  return mode == CELL_INTERP_NEAREST ? 1 : mode == CELL_INTERP_BICUBIC ? 4 : 2;
}

/* PyTorch's area_pixel_compute_scale / compute_scales_value in type T. */
#define SCALE_OF(T, in, out, align, sc)                                                    \
  ((align) ? ((out) > 1 ? (T)((in) - 1) / (T)((out) - 1) : (T)0)                           \
           : ((sc) > 0 ? (T)(1.0 / (sc)) : (T)(in) / (T)(out)))

static double cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
static double cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

static int64_t clampi(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* The table of one axis (in -> out) for mode; f32 picks float32 coordinates. */
static cell_status make_tab(int mode, int align, int64_t in, int64_t out, double sc, int f32,
                            axis_tab *t) {
  t->k = taps(mode);
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
  for (int64_t o = 0; o < out; o++) {
    int64_t *ix = t->idx + o * t->k;
    double *w = t->w + o * t->k;
    if (mode == CELL_INTERP_NEAREST) {
      int64_t src;
      if (out == in)
        src = o;
      else if (out == 2 * in)
        src = o >> 1;
      else {
        float s = sc > 0 ? (float)(1.0 / sc) : (float)in / (float)out;
        src = (int64_t)floorf((float)o * s);
        if (src > in - 1) src = in - 1;
      }
      ix[0] = src;
      w[0] = 1;
      continue;
    }
    double real, lambda;
    int cubic = mode == CELL_INTERP_BICUBIC;
    if (f32) {
      float s = SCALE_OF(float, in, out, align, sc);
      float r = align ? s * (float)o : s * ((float)o + 0.5f) - 0.5f;
      if (!align && !cubic && r < 0) r = 0;
      real = r;
      float fl = cubic ? floorf(r) : (float)(int64_t)r;
      lambda = (double)(r - fl);
      real = fl;
    } else {
      double s = SCALE_OF(double, in, out, align, sc);
      double r = align ? s * (double)o : s * ((double)o + 0.5) - 0.5;
      if (!align && !cubic && r < 0) r = 0;
      double fl = cubic ? floor(r) : (double)(int64_t)r;
      lambda = r - fl;
      real = fl;
    }
    int64_t i0 = (int64_t)real;
    if (!cubic) {
      ix[0] = i0;
      ix[1] = i0 < in - 1 ? i0 + 1 : i0;
      w[0] = 1 - lambda;
      w[1] = lambda;
    } else {
      const double a = -0.75;
      w[0] = cubic2(lambda + 1, a);
      w[1] = cubic1(lambda, a);
      w[2] = cubic1(1 - lambda, a);
      w[3] = cubic2(2 - lambda, a);
      for (int q = 0; q < 4; q++) ix[q] = clampi(i0 - 1 + q, in - 1);
    }
  }
  return CELL_OK;
}

static void free_tab(axis_tab *t) {
  free(t->idx);
  free(t->w);
}

/* Direct: each output from its K x K window, no scratch. Taken when the
 * separable passes' scratch (H x OW per plane) would be far larger than
 * the input and the output. */
#define DIRECT_LOOPS(T, S)                                                                   \
  static void dfwd_##S(const axis_tab *th, const axis_tab *tw, int64_t planes, int64_t h,     \
                      int64_t w, const T *x, T *y) {                                         \
    int64_t oh = th->n, ow = tw->n;                                                          \
    CELL_FOR(cell_conv_parallel(planes * oh * ow * th->k * tw->k), int64_t, p, planes, {     \
      const T *xp = x + p * h * w;                                                           \
      T *yp = y + p * oh * ow;                                                               \
      for (int64_t i = 0; i < oh; i++) {                                                     \
        const int64_t *hi = th->idx + i * th->k;                                             \
        const double *hw = th->w + i * th->k;                                                \
        for (int64_t j = 0; j < ow; j++) {                                                   \
          const int64_t *wi = tw->idx + j * tw->k;                                           \
          const double *ww = tw->w + j * tw->k;                                              \
          T acc = 0;                                                                         \
          for (int a = 0; a < th->k; a++) {                                                  \
            T row = 0;                                                                       \
            for (int b = 0; b < tw->k; b++) row += (T)ww[b] * xp[hi[a] * w + wi[b]];         \
            acc += (T)hw[a] * row;                                                           \
          }                                                                                  \
          yp[i * ow + j] = acc;                                                              \
        }                                                                                    \
      }                                                                                      \
    });                                                                                      \
  }                                                                                          \
  static void dbwd_##S(const axis_tab *th, const axis_tab *tw, int64_t planes, int64_t h,     \
                      int64_t w, const T *g, T *gx) {                                        \
    int64_t oh = th->n, ow = tw->n;                                                          \
    CELL_FOR(cell_conv_parallel(planes * oh * ow * th->k * tw->k), int64_t, p, planes, {     \
      T *gp = gx + p * h * w;                                                                \
      const T *yp = g + p * oh * ow;                                                         \
      for (int64_t i = 0; i < oh; i++) {                                                     \
        const int64_t *hi = th->idx + i * th->k;                                             \
        const double *hw = th->w + i * th->k;                                                \
        for (int64_t j = 0; j < ow; j++) {                                                   \
          const int64_t *wi = tw->idx + j * tw->k;                                           \
          const double *ww = tw->w + j * tw->k;                                              \
          T v = yp[i * ow + j];                                                              \
          for (int a = 0; a < th->k; a++)                                                    \
            for (int b = 0; b < tw->k; b++)                                                  \
              gp[hi[a] * w + wi[b]] += (T)hw[a] * (T)ww[b] * v;                              \
        }                                                                                    \
      }                                                                                      \
    });                                                                                      \
  }

DIRECT_LOOPS(float, f32)
DIRECT_LOOPS(double, f64)

static int scratch_too_big(int64_t h, int64_t w, int64_t oh, int64_t ow) {
  return h * ow > 4 * (h * w + oh * ow) + ((int64_t)1 << 16);
}

/* Separable: a pass along W into a scratch of H x OW rows, then one along
 * H whose inner loop runs over contiguous outputs (vectorised). Each output
 * is sum_a wh[a] * (sum_b ww[b] * x[hi[a]][wi[b]]), in that order.
 * Backward runs the two passes' adjoints in reverse order. Returns 0, or -1
 * when the scratch cannot be allocated. */
#define INTERP_LOOPS(T, S)                                                                   \
  static T *weights_##S(const axis_tab *t) {                                                 \
    T *w = malloc(sizeof(T) * (size_t)(t->n * t->k + 1));                                    \
    if (w)                                                                                   \
      for (int64_t i = 0; i < t->n * t->k; i++) w[i] = (T)t->w[i];                           \
    return w;                                                                                \
  }                                                                                          \
  static int fwd_##S(const axis_tab *th, const axis_tab *tw, int64_t planes, int64_t h,      \
                     int64_t w, const T *x, T *y) {                                          \
    int64_t oh = th->n, ow = tw->n;                                                          \
    const int kh = th->k, kw = tw->k;                                                        \
    if (scratch_too_big(h, w, oh, ow)) {                                                     \
      dfwd_##S(th, tw, planes, h, w, x, y);                                                  \
      return 0;                                                                              \
    }                                                                                        \
    T *wh = weights_##S(th), *ww = weights_##S(tw);                                          \
    volatile int failed = !wh || !ww;                                                        \
    CELL_FOR(!failed && cell_conv_parallel(planes * (h + oh) * ow * (kh + kw)), int64_t, p,  \
             failed ? 0 : planes, {                                                          \
      T *tmp = malloc(sizeof(T) * (size_t)(h * ow + 1));                                     \
      if (!tmp) {                                                                            \
        failed = 1;                                                                          \
        continue;                                                                            \
      }                                                                                      \
      const T *xp = x + p * h * w;                                                           \
      T *yp = y + p * oh * ow;                                                               \
      for (int64_t r = 0; r < h; r++) {                                                      \
        const T *xr = xp + r * w;                                                            \
        T *tr = tmp + r * ow;                                                                \
        if (kw == 2)                                                                         \
          for (int64_t j = 0; j < ow; j++)                                                   \
            tr[j] = ww[2 * j] * xr[tw->idx[2 * j]] + ww[2 * j + 1] * xr[tw->idx[2 * j + 1]]; \
        else                                                                                 \
          for (int64_t j = 0; j < ow; j++) {                                                 \
            const int64_t *wi = tw->idx + j * kw;                                            \
            const T *wj = ww + j * kw;                                                       \
            T acc = 0;                                                                       \
            for (int b = 0; b < kw; b++) acc += wj[b] * xr[wi[b]];                           \
            tr[j] = acc;                                                                     \
          }                                                                                  \
      }                                                                                      \
      for (int64_t i = 0; i < oh; i++) {                                                     \
        const int64_t *hi = th->idx + i * kh;                                                \
        const T *wi = wh + i * kh;                                                           \
        T *restrict yr = yp + i * ow;                                                        \
        const T *restrict t0 = tmp + hi[0] * ow;                                             \
        const T w0 = wi[0];                                                                  \
        if (kh == 2) {                                                                       \
          const T *restrict t1 = tmp + hi[1] * ow;                                           \
          const T w1 = wi[1];                                                                \
          for (int64_t j = 0; j < ow; j++) yr[j] = w0 * t0[j] + w1 * t1[j];                  \
          continue;                                                                          \
        }                                                                                    \
        for (int64_t j = 0; j < ow; j++) yr[j] = w0 * t0[j];                                 \
        for (int a = 1; a < kh; a++) {                                                       \
          const T *restrict ta = tmp + hi[a] * ow;                                           \
          const T wa = wi[a];                                                                \
          for (int64_t j = 0; j < ow; j++) yr[j] += wa * ta[j];                              \
        }                                                                                    \
      }                                                                                      \
      free(tmp);                                                                             \
    });                                                                                      \
    free(wh);                                                                                \
    free(ww);                                                                                \
    return failed ? -1 : 0;                                                                  \
  }                                                                                          \
  static int bwd_##S(const axis_tab *th, const axis_tab *tw, int64_t planes, int64_t h,      \
                     int64_t w, const T *g, T *gx) {                                         \
    int64_t oh = th->n, ow = tw->n;                                                          \
    const int kh = th->k, kw = tw->k;                                                        \
    if (scratch_too_big(h, w, oh, ow)) {                                                     \
      dbwd_##S(th, tw, planes, h, w, g, gx);                                                 \
      return 0;                                                                              \
    }                                                                                        \
    T *wh = weights_##S(th), *ww = weights_##S(tw);                                          \
    volatile int failed = !wh || !ww;                                                        \
    CELL_FOR(!failed && cell_conv_parallel(planes * (h + oh) * ow * (kh + kw)), int64_t, p,  \
             failed ? 0 : planes, {                                                          \
      T *tmp = calloc((size_t)(h * ow + 1), sizeof(T));                                      \
      if (!tmp) {                                                                            \
        failed = 1;                                                                          \
        continue;                                                                            \
      }                                                                                      \
      const T *gp = g + p * oh * ow;                                                         \
      T *xp = gx + p * h * w;                                                                \
      for (int64_t i = 0; i < oh; i++) {                                                     \
        const int64_t *hi = th->idx + i * kh;                                                \
        const T *wi = wh + i * kh;                                                           \
        const T *restrict gr = gp + i * ow;                                                  \
        for (int a = 0; a < kh; a++) {                                                       \
          T *restrict ta = tmp + hi[a] * ow;                                                 \
          const T wa = wi[a];                                                                \
          for (int64_t j = 0; j < ow; j++) ta[j] += wa * gr[j];                              \
        }                                                                                    \
      }                                                                                      \
      for (int64_t r = 0; r < h; r++) {                                                      \
        T *xr = xp + r * w;                                                                  \
        const T *tr = tmp + r * ow;                                                          \
        if (kw == 2)                                                                         \
          for (int64_t j = 0; j < ow; j++) {                                                 \
            xr[tw->idx[2 * j]] += ww[2 * j] * tr[j];                                         \
            xr[tw->idx[2 * j + 1]] += ww[2 * j + 1] * tr[j];                                 \
          }                                                                                  \
        else                                                                                 \
          for (int64_t j = 0; j < ow; j++) {                                                 \
            const int64_t *wi = tw->idx + j * kw;                                            \
            const T *wj = ww + j * kw;                                                       \
            for (int b = 0; b < kw; b++) xr[wi[b]] += wj[b] * tr[j];                         \
          }                                                                                  \
      }                                                                                      \
      free(tmp);                                                                             \
    });                                                                                      \
    free(wh);                                                                                \
    free(ww);                                                                                \
    return failed ? -1 : 0;                                                                  \
  }

INTERP_LOOPS(float, f32)
INTERP_LOOPS(double, f64)

#define DISPATCH(ct, fn, ...) \
  ((ct) == CELL_DTYPE_F64 ? fn##_f64(__VA_ARGS__) : fn##_f32(__VA_ARGS__))

static const char *mode_name(int mode) {
  switch (mode) {
  case CELL_INTERP_NEAREST: return "nearest";
  case CELL_INTERP_LINEAR: return "linear";
  case CELL_INTERP_BILINEAR: return "bilinear";
  case CELL_INTERP_BICUBIC: return "bicubic";
  default: return "?";
  }
}

/* Checks shared by both directions: the mode fits the rank, the sizes are
 * positive (or zero only where the input's is). */
static cell_status check(int mode, int ndim, const int64_t *in_shape, const int64_t *osz) {
  char sb[96];
  if (mode < CELL_INTERP_NEAREST || mode > CELL_INTERP_BICUBIC)
    return cell_error(CELL_ERR_VALUE, "interpolate: unknown mode %d", mode);
  if (ndim != 3 && ndim != 4)
    return cell_error(CELL_ERR_VALUE,
                      "interpolate: input must be 3-D (N, C, L) or 4-D (N, C, H, W), got shape %s",
                      cell_shape_str(ndim, in_shape, sb, sizeof sb));
  if ((ndim == 3 && (mode == CELL_INTERP_BILINEAR || mode == CELL_INTERP_BICUBIC)) ||
      (ndim == 4 && mode == CELL_INTERP_LINEAR))
    return cell_error(CELL_ERR_VALUE,
                      "interpolate: mode '%s' needs a %s input, got shape %s", mode_name(mode),
                      mode == CELL_INTERP_LINEAR ? "3-D (N, C, L)" : "4-D (N, C, H, W)",
                      cell_shape_str(ndim, in_shape, sb, sizeof sb));
  for (int d = 0; d < ndim - 2; d++) {
    if (osz[d] < 1 || osz[d] > ((int64_t)1 << 31))
      return cell_error(CELL_ERR_VALUE,
                        "interpolate: output sizes must be positive, got %lld for input %s",
                        (long long)osz[d], cell_shape_str(ndim, in_shape, sb, sizeof sb));
    if (in_shape[2 + d] < 1)
      return cell_error(CELL_ERR_VALUE,
                        "interpolate: input sizes must be positive past the channels, got %s",
                        cell_shape_str(ndim, in_shape, sb, sizeof sb));
  }
  return CELL_OK;
}

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

static cell_status to_dtype(cell_status s, cell_tensor *r, cell_dtype dt, cell_tensor **out) {
  if (s == CELL_OK && r->dtype != dt) {
    cell_tensor *h = NULL;
    s = cell_k_astype(r, dt, &h);
    cell_tensor_release(r);
    r = h;
  }
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_interpolate(const cell_tensor *x, int mode, int align_corners,
                                 const int64_t *size, const double *scales, cell_tensor **out) {
  if (!x || !size || !out) return cell_error(CELL_ERR_VALUE, "interpolate: NULL argument");
  CELL_TRY(check(mode, x->ndim, x->shape, size));
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
  if (s == CELL_OK && cell_shape_numel(nd, oshape) == 0) return to_dtype(s, r, x->dtype, out);
  if (s == CELL_OK) s = cell_conv_operand(x, ct, &xc);
  axis_tab th = {0, 0, NULL, NULL}, tw = {0, 0, NULL, NULL};
  if (s == CELL_OK)
    s = tabs(mode, align_corners, nd, x->shape, size, scales, ct != CELL_DTYPE_F64, &th, &tw);
  if (s == CELL_OK) {
    int64_t h = nd == 4 ? x->shape[2] : 1;
    if (DISPATCH(ct, fwd, &th, &tw, x->shape[0] * x->shape[1], h, x->shape[nd - 1],
                 (const void *)cell_tensor_base(xc), (void *)cell_tensor_base(r)))
      s = cell_error(CELL_ERR_MEMORY, "interpolate: out of memory");
    cell_tensor_bump(r);
  }
  free_tab(&th);
  free_tab(&tw);
  cell_tensor_release(xc);
  return to_dtype(s, r, x->dtype, out);
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
  CELL_TRY(check(mode, ndim, in_shape, g->shape + 2));
  cell_dtype ct = cell_conv_compute_dtype(dt);
  cell_tensor *gc = NULL, *r = NULL;
  cell_status s = cell_tensor_full(ct, ndim, in_shape, 0, &r);
  if (s == CELL_OK && (cell_shape_numel(ndim, in_shape) == 0 || cell_shape_numel(g->ndim, g->shape) == 0))
    return to_dtype(s, r, dt, gx);
  if (s == CELL_OK) s = cell_conv_operand(g, ct, &gc);
  axis_tab th = {0, 0, NULL, NULL}, tw = {0, 0, NULL, NULL};
  if (s == CELL_OK)
    s = tabs(mode, align_corners, ndim, in_shape, g->shape + 2, scales, ct != CELL_DTYPE_F64, &th,
             &tw);
  if (s == CELL_OK) {
    int64_t h = ndim == 4 ? in_shape[2] : 1;
    if (DISPATCH(ct, bwd, &th, &tw, in_shape[0] * in_shape[1], h, in_shape[ndim - 1],
                 (const void *)cell_tensor_base(gc), (void *)cell_tensor_base(r)))
      s = cell_error(CELL_ERR_MEMORY, "interpolate backward: out of memory");
    cell_tensor_bump(r);
  }
  free_tab(&th);
  free_tab(&tw);
  cell_tensor_release(gc);
  return to_dtype(s, r, dt, gx);
}
