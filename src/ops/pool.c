/* pool.c - max_pool2d and avg_pool2d over NCHW planes, forward and backward.
 *
 * Each (n, c) plane is pooled on its own (planes go to threads only past
 * the parallel grain, statically: each thread takes the same samples as in
 * the convolution and batch_norm around it, whose outputs are then in its
 * own core's cache). Windows are clipped to the input: padding never wins
 * a max, and adds zeros to an average (counted in the divisor only with
 * count_include_pad). Max pooling keeps, per output, the position of its
 * maximum in the input plane, which backward scatters the gradient to.
 * float32 and float64 compute natively; float16 and bfloat16 through float32. */
#include "conv.h"
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "nn.h"
#include "pool_bf16.h"
#include <stdio.h>

/* Whether a pool over this much work (window elements) is worth threads: a
 * sixteenth of conv's bar, since a window element costs about a load and a
 * compare and a CIFAR-size layer (32 x 16 x 32 x 32) has half a million. */
static int pool_parallel(int64_t work) {
  return cell_conv_parallel(work > INT64_MAX / 16 ? INT64_MAX : work * 16);
}

cell_status cell_k_pool2d_geom(const char *op, int ndim, const int64_t *shape,
                               const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, const int64_t *dilation, int ceil_mode,
                               cell_conv_geom *g) {
  char sx[160];
  cell_conv_shape_str(ndim, shape, sx, sizeof sx);
  if (ndim != 4)
    return cell_error(CELL_ERR_VALUE, "%s: input must be 4-D (N, C, H, W), got input %s", op, sx);
  if (!kernel) return cell_error(CELL_ERR_VALUE, "%s: NULL kernel size", op);
  int64_t k[2], st[2], pd[4], dl[2];
  CELL_TRY(cell_conv_pair(op, "kernel size", kernel, 1, 1, k));
  CELL_TRY(cell_conv_pair(op, "stride", stride ? stride : k, 1, 1, st));
  CELL_TRY(cell_conv_pair(op, "dilation", dilation, 1, 1, dl));
  CELL_TRY(cell_conv_pads(op, padding, pd));
  if (pd[0] > k[0] / 2 || pd[1] > k[0] / 2 || pd[2] > k[1] / 2 || pd[3] > k[1] / 2)
    return cell_error(CELL_ERR_VALUE,
                      "%s: padding must be at most half the kernel size (top and bottom at most "
                      "%lld, left and right at most %lld for kernel %lld x %lld), got (%lld, "
                      "%lld, %lld, %lld)",
                      op, (long long)(k[0] / 2), (long long)(k[1] / 2), (long long)k[0],
                      (long long)k[1], (long long)pd[0], (long long)pd[1], (long long)pd[2],
                      (long long)pd[3]);
  memset(g, 0, sizeof *g);
  g->n = shape[0];
  g->c = g->o = shape[1];
  g->h = shape[2];
  g->w = shape[3];
  g->kh = k[0];
  g->kw = k[1];
  g->groups = 1;
  g->sh = st[0];
  g->sw = st[1];
  g->dh = dl[0];
  g->dw = dl[1];
  g->pt = pd[0];
  g->pb = pd[1];
  g->pl = pd[2];
  g->pr = pd[3];
  int64_t ph = g->h + g->pt + g->pb, pw = g->w + g->pl + g->pr;
  /* The extent of a dilated window (sizes are small: kernel, dilation and
   * padding come from arguments checked above, the input from a tensor). */
  int64_t ekh = g->dh * (g->kh - 1) + 1, ekw = g->dw * (g->kw - 1) + 1;
  if (ekh > ph || ekw > pw) {
    char dil[80] = "";
    if (g->dh != 1 || g->dw != 1)
      snprintf(dil, sizeof dil, ", dilated %lld x %lld", (long long)ekh, (long long)ekw);
    return cell_error(CELL_ERR_VALUE,
                      "%s: the kernel (%lld x %lld%s) is larger than the padded input (%lld x "
                      "%lld): input %s",
                      op, (long long)g->kh, (long long)g->kw, dil, (long long)ph, (long long)pw, sx);
  }
  /* ceil_mode (PyTorch's rule): round the count of strides up, but a last
   * window must start inside the input or its top/left padding. */
  g->oh = (ph - ekh + (ceil_mode ? g->sh - 1 : 0)) / g->sh + 1;
  g->ow = (pw - ekw + (ceil_mode ? g->sw - 1 : 0)) / g->sw + 1;
  if (ceil_mode && (g->oh - 1) * g->sh >= g->h + g->pt) g->oh--;
  if (ceil_mode && (g->ow - 1) * g->sw >= g->w + g->pl) g->ow--;
  return CELL_OK;
}

/* The window of output (oh, ow) clipped to the input: rows [*h0, *h1),
 * columns [*w0, *w1); *full is its size with the padding counted. */
static inline void window(const cell_conv_geom *g, int64_t oh, int64_t ow, int64_t *h0,
                          int64_t *h1, int64_t *w0, int64_t *w1, int64_t *full) {
  int64_t hs = oh * g->sh - g->pt, ws = ow * g->sw - g->pl;
  int64_t he = hs + g->kh, we = ws + g->kw;
  if (he > g->h + g->pb) he = g->h + g->pb;
  if (we > g->w + g->pr) we = g->w + g->pr;
  *full = (he - hs) * (we - ws);
  *h0 = hs < 0 ? 0 : hs;
  *w0 = ws < 0 ? 0 : ws;
  *h1 = he > g->h ? g->h : he;
  *w1 = we > g->w ? g->w : we;
}

/* The even lanes of two vectors, a's then b's: GCC and clang spell the
 * shuffle differently (a mask vector, or constant indices). */
#ifdef __clang__
#define EVEN_f32(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define EVEN_f64(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6)
#else
#define EVEN_f32(a, b) __builtin_shuffle(a, b, ((vi32){0, 2, 4, 6, 8, 10, 12, 14}))
#define EVEN_f64(a, b) __builtin_shuffle(a, b, ((vi64){0, 2, 4, 6}))
#endif

#define POOL_KERNELS(T, V, VI, IT, LANES, S)                                                       \
  enum { PVL_##S = VBYTES / (int)sizeof(T) };                                                \
                                                                                             \
  /* Output (oh, ow) of a plane, its window clipped; a NaN wins, as in PyTorch. */           \
  static inline void max_one_##S(const cell_conv_geom *g, const T *src, int64_t oh,          \
                                 int64_t ow, T *dst, int64_t *id) {                          \
    int64_t h0, h1, w0, w1, full;                                                            \
    window(g, oh, ow, &h0, &h1, &w0, &w1, &full);                                            \
    T best = -INFINITY;                                                                      \
    int64_t bi = h0 * g->w + w0;                                                             \
    for (int64_t ih = h0; ih < h1; ih++)                                                     \
      for (int64_t iw = w0; iw < w1; iw++) {                                                 \
        T v = src[ih * g->w + iw];                                                           \
        if (v > best || v != v) {                                                            \
          best = v;                                                                          \
          bi = ih * g->w + iw;                                                               \
        }                                                                                    \
      }                                                                                      \
    dst[oh * g->ow + ow] = best;                                                             \
    id[oh * g->ow + ow] = bi;                                                                \
  }                                                                                          \
                                                                                             \
  /* A plane too narrow for whole rows of vectors: the windows that lie wholly inside the   \
   * input (rows rlo..rhi, columns lo..hi) go PVL at a time in row-major order, gathered;    \
   * the others one at a time. Returns 0 (nothing done) when there are too few. */           \
  CONV_CLONES static int max_narrow_##S(const cell_conv_geom *g, const T *src, T *dst,        \
                                   int64_t *id, int64_t lo, int64_t hi) {                    \
    int64_t rlo = (g->pt + g->sh - 1) / g->sh, rhi = 0;                                      \
    if (g->h + g->pt - g->kh >= 0) rhi = (g->h + g->pt - g->kh) / g->sh + 1;                 \
    if (rhi > g->oh) rhi = g->oh;                                                            \
    if (rlo > rhi) rlo = rhi;                                                                \
    int64_t cols = hi - lo, rect = (rhi - rlo) * cols;                                       \
    if (rect < PVL_##S) return 0;                                                            \
    for (int64_t oh = 0; oh < g->oh; oh++)                                                   \
      for (int64_t ow = 0; ow < g->ow; ow++)                                                 \
        if (oh < rlo || oh >= rhi || ow < lo || ow >= hi) max_one_##S(g, src, oh, ow, dst, id); \
    int64_t r0 = 0, c0 = 0; /* the row and column (in the rectangle) of k0 */               \
    for (int64_t k0 = 0; k0 < rect; k0 += PVL_##S) {                                         \
      if (k0 + PVL_##S > rect) { /* the last group overlaps the one before */                \
        k0 = rect - PVL_##S;                                                                 \
        r0 = k0 / cols;                                                                      \
        c0 = k0 % cols;                                                                      \
      }                                                                                      \
      IT at[PVL_##S];                                                                        \
      int64_t q[PVL_##S], r = r0, c = c0;                                                    \
      for (int l = 0; l < PVL_##S; l++) {                                                    \
        int64_t oh = rlo + r, ow = lo + c;                                                   \
        at[l] = (IT)((oh * g->sh - g->pt) * g->w + ow * g->sw - g->pl);                      \
        q[l] = oh * g->ow + ow;                                                              \
        if (++c == cols) {                                                                   \
          c = 0;                                                                             \
          r++;                                                                               \
        }                                                                                    \
      }                                                                                      \
      r0 = r;                                                                                \
      c0 = c;                                                                                \
      VI base;                                                                               \
      VLOAD(base, at);                                                                       \
      V best = (V){0} - INFINITY;                                                            \
      VI idx = base;                                                                         \
      for (int64_t i = 0; i < g->kh; i++)                                                    \
        for (int64_t j = 0; j < g->kw; j++) {                                                \
          IT e = (IT)(i * g->w + j);                                                         \
          V v;                                                                               \
          for (int l = 0; l < PVL_##S; l++) v[l] = src[at[l] + e];                           \
          VI m = (v > best) | (v != v);                                                      \
          best = (V)(((VI)v & m) | ((VI)best & ~m));                                         \
          idx = ((base + e) & m) | (idx & ~m);                                               \
        }                                                                                    \
      for (int l = 0; l < PVL_##S; l++) {                                                    \
        dst[q[l]] = best[l];                                                                 \
        id[q[l]] = (int64_t)idx[l];                                                          \
      }                                                                                      \
    }                                                                                        \
    return 1;                                                                                \
  }                                                                                          \
                                                                                             \
  /* One plane. Windows that lie inside the input horizontally go PVL at a time, with       \
   * vector compares and blends: on random data a branch per element mispredicts about      \
   * half the time and costs more than everything else. The rest go one at a time. */       \
  CONV_CLONES static void max_plane_##S(const cell_conv_geom *g, const T *src, T *dst,       \
                                        int64_t *id) {                                       \
    int64_t lo = (g->pl + g->sw - 1) / g->sw, hi = 0;                                        \
    if (g->w + g->pl - g->kw >= 0) hi = (g->w + g->pl - g->kw) / g->sw + 1;                  \
    if (hi > g->ow) hi = g->ow;                                                              \
    if (lo > hi) lo = hi;                                                                    \
    if (g->h * g->w > (int64_t)INT32_MAX) lo = hi = g->ow; /* positions must fit IT */       \
    const VI lanes = LANES;                                                                  \
    if (hi - lo < PVL_##S && max_narrow_##S(g, src, dst, id, lo, hi)) return;                \
    for (int64_t oh = 0; oh < g->oh; oh++) {                                                 \
      int64_t h0, h1, w0, w1, full, ow = 0;                                                  \
      window(g, oh, lo, &h0, &h1, &w0, &w1, &full);                                          \
      for (; ow < lo; ow++) max_one_##S(g, src, oh, ow, dst, id);                            \
      for (; ow < hi && hi - lo >= PVL_##S; ow += PVL_##S) {                                 \
        if (ow + PVL_##S > hi) ow = hi - PVL_##S; /* the last group overlaps the one before */ \
        V best = (V){0} - INFINITY;                                                          \
        VI idx = (VI){0} + (IT)(h0 * g->w + ow * g->sw - g->pl) + lanes * (IT)g->sw;         \
        for (int64_t ih = h0; ih < h1; ih++)                                                 \
          for (int64_t j = 0; j < g->kw; j++) {                                              \
            int64_t base = ih * g->w + ow * g->sw - g->pl + j;                               \
            V v;                                                                             \
            if (g->sw == 1) {                                                                \
              VLOAD(v, src + base);                                                          \
            } else if (g->sw == 2 && base + 2 * PVL_##S <= g->h * g->w) {                     \
              V a, b; /* the even elements of two vectors */                                 \
              VLOAD(a, src + base);                                                          \
              VLOAD(b, src + base + PVL_##S);                                                \
              v = EVEN_##S(a, b);                                                              \
            } else {                                                                         \
              for (int l = 0; l < PVL_##S; l++) v[l] = src[base + l * g->sw];                \
            }                                                                                \
            VI m = (v > best) | (v != v);                                                    \
            best = (V)(((VI)v & m) | ((VI)best & ~m));                                       \
            idx = (((VI){0} + (IT)base + lanes * (IT)g->sw) & m) | (idx & ~m);               \
          }                                                                                  \
        for (int l = 0; l < PVL_##S; l++) {                                                  \
          dst[oh * g->ow + ow + l] = best[l];                                                \
          id[oh * g->ow + ow + l] = (int64_t)idx[l];                                         \
        }                                                                                    \
      }                                                                                      \
      for (; ow < g->ow; ow++) max_one_##S(g, src, oh, ow, dst, id);                         \
    }                                                                                        \
  }                                                                                          \
                                                                                             \
  /* A dilated window, one output at a time: positions hs + i * dh inside the input. */      \
  static void max_dilated_##S(const cell_conv_geom *g, const T *src, T *dst, int64_t *id) {  \
    for (int64_t oh = 0; oh < g->oh; oh++)                                                   \
      for (int64_t ow = 0; ow < g->ow; ow++) {                                               \
        int64_t hs = oh * g->sh - g->pt, ws = ow * g->sw - g->pl, bi = -1;                   \
        T best = -INFINITY;                                                                  \
        for (int64_t i = 0; i < g->kh; i++) {                                                \
          int64_t ih = hs + i * g->dh;                                                       \
          if (ih < 0 || ih >= g->h) continue;                                                \
          for (int64_t j = 0; j < g->kw; j++) {                                              \
            int64_t iw = ws + j * g->dw;                                                     \
            if (iw < 0 || iw >= g->w) continue;                                              \
            T v = src[ih * g->w + iw];                                                       \
            if (bi < 0 || v > best || v != v) {                                              \
              best = v;                                                                      \
              bi = ih * g->w + iw;                                                           \
            }                                                                                \
          }                                                                                  \
        }                                                                                    \
        if (bi < 0) bi = 0; /* a window wholly in the padding (not reachable) */             \
        dst[oh * g->ow + ow] = best;                                                         \
        id[oh * g->ow + ow] = bi;                                                            \
      }                                                                                      \
  }                                                                                          \
                                                                                             \
  static void max_fwd_##S(const cell_conv_geom *g, const T *x, T *y, int64_t *idx) {         \
    const int64_t HW = g->h * g->w, OP = g->oh * g->ow;                                      \
    int dil = g->dh != 1 || g->dw != 1;                                                      \
    CELL_FOR(pool_parallel(g->n * g->c * OP * g->kh * g->kw), int64_t, pl,              \
             g->n * g->c, {                                                                  \
      if (dil) max_dilated_##S(g, x + pl * HW, y + pl * OP, idx + pl * OP);                  \
      else max_plane_##S(g, x + pl * HW, y + pl * OP, idx + pl * OP);                        \
    });                                                                                      \
  }                                                                                          \
                                                                                             \
  /* gx = gy added at the saved positions, each plane zeroed first; a plane with a position \
   * outside [0, HW) is left zero and that position goes to *bad (else *bad stays -1). */     \
  static void max_bwd_##S(int64_t planes, int64_t HW, int64_t OP, const T *gy,               \
                          const int64_t *idx, T *gx, int64_t *bad) {                         \
    CELL_FOR(pool_parallel((planes * (OP + HW)) / 4), int64_t, pl, planes, {                 \
      T *dst = gx + pl * HW;                                                                 \
      const T *src = gy + pl * OP;                                                           \
      const int64_t *id = idx + pl * OP;                                                     \
      memset(dst, 0, sizeof(T) * (size_t)HW);                                                \
      int64_t wrong = -1;                                                                    \
      for (int64_t q = 0; q < OP; q++)                                                       \
        if (id[q] < 0 || id[q] >= HW) wrong = id[q];                                         \
      if (wrong != -1) {                                                                     \
        _Pragma("omp atomic write") *bad = wrong;                                            \
      } else                                                                                 \
        for (int64_t q = 0; q < OP; q++) dst[id[q]] += src[q];                               \
    });                                                                                      \
  }                                                                                          \
                                                                                             \
  static void avg_fwd_##S(const cell_conv_geom *g, int cip, const T *x, T *y) {              \
    const int64_t HW = g->h * g->w, OP = g->oh * g->ow;                                      \
    CELL_FOR(pool_parallel(g->n * g->c * OP * g->kh * g->kw), int64_t, pl,              \
             g->n * g->c, {                                                                  \
      const T *src = x + pl * HW;                                                            \
      T *dst = y + pl * OP;                                                                  \
      for (int64_t oh = 0; oh < g->oh; oh++)                                                 \
        for (int64_t ow = 0; ow < g->ow; ow++) {                                             \
          int64_t h0, h1, w0, w1, full;                                                      \
          window(g, oh, ow, &h0, &h1, &w0, &w1, &full);                                      \
          double acc = 0;                                                                    \
          for (int64_t ih = h0; ih < h1; ih++)                                               \
            for (int64_t iw = w0; iw < w1; iw++) acc += src[ih * g->w + iw];                 \
          int64_t div = cip ? full : (h1 - h0) * (w1 - w0);                                  \
          dst[oh * g->ow + ow] = (T)(acc / (double)div);                                     \
        }                                                                                    \
    });                                                                                      \
  }                                                                                          \
                                                                                             \
  /* gx (zeroed) += each output's gradient spread over its window. */                        \
  static void avg_bwd_##S(const cell_conv_geom *g, int cip, const T *gy, T *gx) {            \
    const int64_t HW = g->h * g->w, OP = g->oh * g->ow;                                      \
    CELL_FOR(pool_parallel(g->n * g->c * OP * g->kh * g->kw), int64_t, pl,              \
             g->n * g->c, {                                                                  \
      T *dst = gx + pl * HW;                                                                 \
      const T *src = gy + pl * OP;                                                           \
      for (int64_t oh = 0; oh < g->oh; oh++)                                                 \
        for (int64_t ow = 0; ow < g->ow; ow++) {                                             \
          int64_t h0, h1, w0, w1, full;                                                      \
          window(g, oh, ow, &h0, &h1, &w0, &w1, &full);                                      \
          int64_t div = cip ? full : (h1 - h0) * (w1 - w0);                                  \
          T v = (T)((double)src[oh * g->ow + ow] / (double)div);                             \
          for (int64_t ih = h0; ih < h1; ih++)                                               \
            for (int64_t iw = w0; iw < w1; iw++) dst[ih * g->w + iw] += v;                   \
        }                                                                                    \
    });                                                                                      \
  }

POOL_KERNELS(float, vf32, vi32, int32_t, ((vi32){0, 1, 2, 3, 4, 5, 6, 7}), f32)
POOL_KERNELS(double, vf64, vi64, int64_t, ((vi64){0, 1, 2, 3}), f64)

#define DISPATCH(ct, fn, ...) \
  ((ct) == CELL_DTYPE_F64 ? fn##_f64(__VA_ARGS__) : fn##_f32(__VA_ARGS__))

cell_status cell_cpu_max_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int ceil_mode,
                              cell_tensor **out, cell_tensor **indices) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "max_pool2d: NULL argument");
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("max_pool2d", x->ndim, x->shape, kernel, stride, padding, dilation,
                              ceil_mode, &g));
  CELL_TRY(cell_nn_check_input("max_pool2d", x));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  int64_t shape[4] = {g.n, g.c, g.oh, g.ow};
  if (x->dtype == CELL_DTYPE_BF16) ct = CELL_DTYPE_BF16; /* selected as it lies (pool_bf16.c) */
  cell_tensor *xc = NULL, *r = NULL, *id = NULL;
  cell_status s = ct == CELL_DTYPE_BF16 ? cell_k_contiguous(x, &xc) : cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 4, shape, &r);
  if (s == CELL_OK) s = cell_tensor_new_contig(CELL_DTYPE_I64, 4, shape, &id);
  if (s == CELL_OK && ct == CELL_DTYPE_BF16)
    cell_bf16_max_pool_fwd(&g, (const uint16_t *)(const void *)cell_tensor_base(xc),
                           (uint16_t *)(void *)cell_tensor_base(r), (int64_t *)(void *)cell_tensor_base(id));
  else if (s == CELL_OK)
    DISPATCH(ct, max_fwd, &g, (const void *)cell_tensor_base(xc), (void *)cell_tensor_base(r),
             (int64_t *)(void *)cell_tensor_base(id));
  cell_tensor_release(xc);
  cell_tensor *y = NULL;
  s = cell_nn_to_dtype(s, r, x->dtype, &y);
  if (s != CELL_OK) {
    cell_tensor_release(id);
    return s;
  }
  *out = y;
  if (indices) *indices = id;
  else cell_tensor_release(id);
  return CELL_OK;
}

cell_status cell_cpu_max_pool2d_backward(const cell_tensor *gy, const cell_tensor *indices,
                                       const int64_t *in_shape, cell_dtype dt,
                                       cell_tensor **gx) {
  if (!gy || !indices || !in_shape || !gx)
    return cell_error(CELL_ERR_VALUE, "max_pool2d backward: NULL argument");
  if (gy->ndim != 4 || !cell_shape_equal(gy->ndim, gy->shape, indices->ndim, indices->shape) ||
      indices->dtype != CELL_DTYPE_I64 || gy->shape[0] != in_shape[0] ||
      gy->shape[1] != in_shape[1]) {
    char s1[160], s2[160];
    return cell_error(CELL_ERR_VALUE,
                      "max_pool2d backward: the output gradient has shape %s, the indices %s",
                      cell_conv_shape_str(gy->ndim, gy->shape, s1, sizeof s1),
                      cell_conv_shape_str(indices->ndim, indices->shape, s2, sizeof s2));
  }
  cell_dtype ct = cell_conv_compute_dtype(dt);
  int64_t planes = in_shape[0] * in_shape[1], HW = in_shape[2] * in_shape[3];
  int64_t OP = gy->shape[2] * gy->shape[3];
  if (dt == CELL_DTYPE_BF16 && gy->dtype == CELL_DTYPE_BF16 && cell_bf16_max_pool_bwd_fits(HW)) ct = CELL_DTYPE_BF16;
  cell_tensor *gyc = NULL, *ic = NULL, *r = NULL;
  cell_status s = ct == CELL_DTYPE_BF16 ? cell_k_contiguous(gy, &gyc) : cell_conv_operand(gy, ct, &gyc);
  if (s == CELL_OK) s = cell_k_contiguous(indices, &ic);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 4, in_shape, &r);
  if (s == CELL_OK) {
    /* Positions come from our own forward; a corrupt one would write out of bounds. */
    const int64_t *id = (const int64_t *)(const void *)cell_tensor_base(ic);
    int64_t bad = -1;
    if (ct == CELL_DTYPE_BF16)
      cell_bf16_max_pool_bwd(planes, HW, OP, (const uint16_t *)(const void *)cell_tensor_base(gyc), id,
                             (uint16_t *)(void *)cell_tensor_base(r), &bad);
    else
      DISPATCH(ct, max_bwd, planes, HW, OP, (const void *)cell_tensor_base(gyc), id,
               (void *)cell_tensor_base(r), &bad);
    if (bad != -1)
      s = cell_error(CELL_ERR_VALUE, "max_pool2d backward: index %lld is outside the %lld "
                                     "positions of an input plane",
                     (long long)bad, (long long)HW);
  }
  cell_tensor_release(gyc);
  cell_tensor_release(ic);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  return cell_nn_to_dtype(s, r, dt, gx);
}

cell_status cell_cpu_avg_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, int ceil_mode, int count_include_pad,
                              cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "avg_pool2d: NULL argument");
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("avg_pool2d", x->ndim, x->shape, kernel, stride, padding, NULL,
                              ceil_mode, &g));
  CELL_TRY(cell_nn_check_input("avg_pool2d", x));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  int64_t shape[4] = {g.n, g.c, g.oh, g.ow};
  cell_tensor *xc = NULL, *r = NULL;
  cell_status s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 4, shape, &r);
  if (s == CELL_OK)
    DISPATCH(ct, avg_fwd, &g, count_include_pad, (const void *)cell_tensor_base(xc),
             (void *)cell_tensor_base(r));
  cell_tensor_release(xc);
  return cell_nn_to_dtype(s, r, x->dtype, out);
}

cell_status cell_cpu_avg_pool2d_backward(const cell_tensor *gy, const int64_t *in_shape,
                                       const int64_t *kernel, const int64_t *stride,
                                       const int64_t *padding, int ceil_mode,
                                       int count_include_pad, cell_dtype dt, cell_tensor **gx) {
  if (!gy || !in_shape || !gx)
    return cell_error(CELL_ERR_VALUE, "avg_pool2d backward: NULL argument");
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("avg_pool2d", 4, in_shape, kernel, stride, padding, NULL, ceil_mode,
                              &g));
  int64_t yshape[4] = {g.n, g.c, g.oh, g.ow};
  if (!cell_shape_equal(gy->ndim, gy->shape, 4, yshape)) {
    char s1[160], s2[160];
    return cell_error(CELL_ERR_VALUE, "avg_pool2d backward: the output gradient has shape %s, not %s",
                      cell_conv_shape_str(gy->ndim, gy->shape, s1, sizeof s1),
                      cell_conv_shape_str(4, yshape, s2, sizeof s2));
  }
  cell_dtype ct = cell_conv_compute_dtype(dt);
  cell_tensor *gyc = NULL, *r = NULL;
  cell_status s = cell_conv_operand(gy, ct, &gyc);
  if (s == CELL_OK) s = cell_tensor_full(ct, 4, in_shape, 0, &r);
  if (s == CELL_OK)
    DISPATCH(ct, avg_bwd, &g, count_include_pad, (const void *)cell_tensor_base(gyc),
             (void *)cell_tensor_base(r));
  cell_tensor_release(gyc);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  return cell_nn_to_dtype(s, r, dt, gx);
}
