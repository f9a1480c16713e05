/* pool3d.c - max_pool3d and avg_pool3d: argument checks, the windows of
 * each volume, and average pooling's backward pass (max pooling's scatters
 * to the saved positions with max_pool2d's backward kernel, the volume
 * seen as D planes of H * W).
 *
 * Each (sample, channel) volume is one task; the windows are clipped to
 * the input (padding never wins a maximum, and counts for an average only
 * with count_include_pad). Rules as the 2-D pools (pool.c): a NaN wins its
 * window, the gradient of a maximum goes to its first position, ceil_mode
 * rounds the output sizes up as PyTorch does.
 *
 * float32 and float64 compute natively; float16 and bfloat16 through float32. */
#include "conv.h"
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include <math.h>
#include <stdio.h>
#include "kernel_list.h"

#define P3_ARG_MAX ((int64_t)1 << 30)

cell_status cell_k_pool3d_geom(const char *op, int ndim, const int64_t *shape,
                               const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, const int64_t *dilation, int ceil_mode,
                               cell_conv3d_geom *g) {
  char sx[160];
  cell_conv_shape_str(ndim, shape, sx, sizeof sx);
  if (ndim != 5)
    return cell_error(CELL_ERR_VALUE, "%s: input must be 5-D (N, C, D, H, W), got input %s", op,
                      sx);
  if (!kernel) return cell_error(CELL_ERR_VALUE, "%s: NULL kernel size", op);
  memset(g, 0, sizeof *g);
  int64_t k[3];
  const char *names[3] = {"kernel size", "stride", "dilation"};
  const int64_t *src[3] = {kernel, stride ? stride : kernel, dilation};
  int64_t *dst[3] = {k, g->s, g->dl};
  for (int a = 0; a < 3; a++)
    for (int i = 0; i < 3; i++) {
      dst[a][i] = src[a] ? src[a][i] : 1;
      if (dst[a][i] < 1 || dst[a][i] > P3_ARG_MAX)
        return cell_error(CELL_ERR_VALUE, "%s: %s must be at least 1 and at most 2^30, got "
                          "(%lld, %lld, %lld)", op, names[a], (long long)(src[a] ? src[a][0] : 1),
                          (long long)(src[a] ? src[a][1] : 1), (long long)(src[a] ? src[a][2] : 1));
    }
  bool bad = false;
  for (int i = 0; i < 6; i++) {
    g->pd[i] = padding ? padding[i] : 0;
    bad = bad || g->pd[i] < 0 || g->pd[i] > k[i / 2] / 2;
  }
  if (bad)
    return cell_error(CELL_ERR_VALUE,
                      "%s: padding must be non-negative and at most half the kernel size (%lld, "
                      "%lld, %lld), got (%lld, %lld, %lld, %lld, %lld, %lld)",
                      op, (long long)k[0], (long long)k[1], (long long)k[2], (long long)g->pd[0],
                      (long long)g->pd[1], (long long)g->pd[2], (long long)g->pd[3],
                      (long long)g->pd[4], (long long)g->pd[5]);
  g->n = shape[0];
  g->c = g->o = shape[1];
  g->d = shape[2];
  g->h = shape[3];
  g->w = shape[4];
  g->kd = k[0];
  g->kh = k[1];
  g->kw = k[2];
  g->groups = 1;
  const int64_t in[3] = {g->d, g->h, g->w};
  int64_t outs[3];
  for (int i = 0; i < 3; i++) {
    int64_t p = in[i] + g->pd[2 * i] + g->pd[2 * i + 1], ek = g->dl[i] * (k[i] - 1) + 1;
    if (ek > p)
      return cell_error(CELL_ERR_VALUE,
                        "%s: the kernel (%lld x %lld x %lld, dilation %lld x %lld x %lld) is larger "
                        "than the padded input in spatial dimension %d (%lld < %lld): input %s",
                        op, (long long)k[0], (long long)k[1], (long long)k[2], (long long)g->dl[0],
                        (long long)g->dl[1], (long long)g->dl[2], i + 1, (long long)p,
                        (long long)ek, sx);
    outs[i] = (p - ek + (ceil_mode ? g->s[i] - 1 : 0)) / g->s[i] + 1;
    if (ceil_mode && (outs[i] - 1) * g->s[i] >= in[i] + g->pd[2 * i]) outs[i]--;
  }
  g->od = outs[0];
  g->oh = outs[1];
  g->ow = outs[2];
  return CELL_OK;
}

static cell_status check_float(const char *op, const cell_tensor *x) {
  if (!cell_dtype_is_float(x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: input must be a float tensor, got %s", op,
                      cell_dtype_name(x->dtype));
  return CELL_OK;
}

/* One dimension of a window: output o's positions [*a, *b) in the input
 * (step dl), and *full, its size with the padding counted (avg pools,
 * dilation 1), clipped to the padded input. */
static inline void span(int64_t o, int64_t s, int64_t pb, int64_t pa, int64_t k, int64_t dl,
                        int64_t n, int64_t *a, int64_t *b, int64_t *full) {
  int64_t st = o * s - pb, e = st + (k - 1) * dl + 1;
  int64_t fe = st + k > n + pa ? n + pa : st + k;
  *full = fe - st;
  /* the first tap at or after 0, the end at most n */
  int64_t first = st >= 0 ? st : st + ((-st + dl - 1) / dl) * dl;
  *a = first;
  *b = e > n ? n : e;
  if (*b < *a) *b = *a;
}

#define POOL3_KERNELS(T, S)                                                                    \
  static void max3_##S(const cell_conv3d_geom *g, const T *x, T *y, int64_t *id) {             \
    const int64_t V = g->d * g->h * g->w, OV = g->od * g->oh * g->ow;                          \
    CELL_FOR(cell_conv_parallel(g->n * g->c * OV * g->kd * g->kh * g->kw), int64_t, pl,        \
             g->n * g->c, {                                                                    \
      const T *src = x + pl * V;                                                               \
      T *dst = y + pl * OV;                                                                    \
      int64_t *di = id + pl * OV;                                                              \
      for (int64_t od = 0; od < g->od; od++) {                                                 \
        int64_t d0, d1, f;                                                                     \
        span(od, g->s[0], g->pd[0], g->pd[1], g->kd, g->dl[0], g->d, &d0, &d1, &f);            \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                               \
          int64_t h0, h1;                                                                      \
          span(oh, g->s[1], g->pd[2], g->pd[3], g->kh, g->dl[1], g->h, &h0, &h1, &f);          \
          for (int64_t ow = 0; ow < g->ow; ow++) {                                             \
            int64_t w0, w1;                                                                    \
            span(ow, g->s[2], g->pd[4], g->pd[5], g->kw, g->dl[2], g->w, &w0, &w1, &f);        \
            T best = -INFINITY;                                                                \
            int64_t bi = (d0 * g->h + h0) * g->w + w0;                                         \
            for (int64_t a = d0; a < d1; a += g->dl[0])                                        \
              for (int64_t i = h0; i < h1; i += g->dl[1]) {                                    \
                const T *row = src + (a * g->h + i) * g->w;                                    \
                for (int64_t j = w0; j < w1; j += g->dl[2]) {                                  \
                  T v = row[j];                                                                \
                  if (v > best || v != v) {                                                    \
                    best = v;                                                                  \
                    bi = (a * g->h + i) * g->w + j;                                            \
                  }                                                                            \
                }                                                                              \
              }                                                                                \
            dst[(od * g->oh + oh) * g->ow + ow] = best;                                        \
            di[(od * g->oh + oh) * g->ow + ow] = bi;                                           \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    });                                                                                        \
  }                                                                                            \
                                                                                               \
  /* forward (gx NULL): y = the averages of x; backward (x NULL): gx = gy spread back. */      \
  static void avg3_##S(const cell_conv3d_geom *g, int cip, const T *x, T *y, const T *gy,      \
                       T *gx) {                                                                \
    const int64_t V = g->d * g->h * g->w, OV = g->od * g->oh * g->ow;                          \
    CELL_FOR(cell_conv_parallel(g->n * g->c * OV * g->kd * g->kh * g->kw), int64_t, pl,        \
             g->n * g->c, {                                                                    \
      if (gx) memset(gx + pl * V, 0, sizeof(T) * (size_t)V);                                   \
      for (int64_t od = 0; od < g->od; od++) {                                                 \
        int64_t d0, d1, fd;                                                                    \
        span(od, g->s[0], g->pd[0], g->pd[1], g->kd, 1, g->d, &d0, &d1, &fd);                  \
        for (int64_t oh = 0; oh < g->oh; oh++) {                                               \
          int64_t h0, h1, fh;                                                                  \
          span(oh, g->s[1], g->pd[2], g->pd[3], g->kh, 1, g->h, &h0, &h1, &fh);                \
          for (int64_t ow = 0; ow < g->ow; ow++) {                                             \
            int64_t w0, w1, fw;                                                                \
            span(ow, g->s[2], g->pd[4], g->pd[5], g->kw, 1, g->w, &w0, &w1, &fw);              \
            int64_t cnt = cip ? fd * fh * fw : (d1 - d0) * (h1 - h0) * (w1 - w0);              \
            int64_t q = pl * OV + (od * g->oh + oh) * g->ow + ow;                              \
            if (gx) {                                                                          \
              if (cnt <= 0) continue;                                                          \
              T v = gy[q] / (T)cnt;                                                            \
              for (int64_t a = d0; a < d1; a++)                                                \
                for (int64_t i = h0; i < h1; i++) {                                            \
                  T *row = gx + pl * V + (a * g->h + i) * g->w;                                \
                  for (int64_t j = w0; j < w1; j++) row[j] += v;                               \
                }                                                                              \
            } else {                                                                           \
              T sum = 0;                                                                       \
              for (int64_t a = d0; a < d1; a++)                                                \
                for (int64_t i = h0; i < h1; i++) {                                            \
                  const T *row = x + pl * V + (a * g->h + i) * g->w;                           \
                  for (int64_t j = w0; j < w1; j++) sum += row[j];                             \
                }                                                                              \
              y[q] = cnt > 0 ? sum / (T)cnt : (T)NAN;                                          \
            }                                                                                  \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    });                                                                                        \
  }

POOL3_KERNELS(float, f32)
POOL3_KERNELS(double, f64)

#define DISPATCH(ct, fn, ...) \
  ((ct) == CELL_DTYPE_F64 ? fn##_f64(__VA_ARGS__) : fn##_f32(__VA_ARGS__))

/* r, of dtype ct, as a tensor of dtype dt (r released on failure). */
static cell_status finish(cell_status s, cell_tensor *r, cell_dtype dt, cell_tensor **out) {
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

cell_status cell_cpu_max_pool3d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                                const int64_t *padding, const int64_t *dilation, int ceil_mode,
                                cell_tensor **out, cell_tensor **indices) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "max_pool3d: NULL argument");
  cell_conv3d_geom g;
  CELL_TRY(cell_k_pool3d_geom("max_pool3d", x->ndim, x->shape, kernel, stride, padding, dilation,
                              ceil_mode, &g));
  CELL_TRY(check_float("max_pool3d", x));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  int64_t shape[5] = {g.n, g.c, g.od, g.oh, g.ow};
  cell_tensor *xc = NULL, *r = NULL, *id = NULL;
  cell_status s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 5, shape, &r);
  if (s == CELL_OK) s = cell_tensor_new_contig(CELL_DTYPE_I64, 5, shape, &id);
  if (s == CELL_OK)
    DISPATCH(ct, max3, &g, (const void *)cell_tensor_base(xc), (void *)cell_tensor_base(r),
             (int64_t *)(void *)cell_tensor_base(id));
  cell_tensor_release(xc);
  cell_tensor *y = NULL;
  s = finish(s, r, x->dtype, &y);
  if (s != CELL_OK) {
    cell_tensor_release(id);
    return s;
  }
  *out = y;
  if (indices) *indices = id;
  else cell_tensor_release(id);
  return CELL_OK;
}

cell_status cell_cpu_avg_pool3d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                                const int64_t *padding, int ceil_mode, int count_include_pad,
                                cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "avg_pool3d: NULL argument");
  cell_conv3d_geom g;
  CELL_TRY(cell_k_pool3d_geom("avg_pool3d", x->ndim, x->shape, kernel, stride, padding, NULL,
                              ceil_mode, &g));
  CELL_TRY(check_float("avg_pool3d", x));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  int64_t shape[5] = {g.n, g.c, g.od, g.oh, g.ow};
  cell_tensor *xc = NULL, *r = NULL;
  cell_status s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 5, shape, &r);
  if (s == CELL_OK)
    DISPATCH(ct, avg3, &g, count_include_pad != 0, (const void *)cell_tensor_base(xc),
             (void *)cell_tensor_base(r), NULL, NULL);
  cell_tensor_release(xc);
  return finish(s, r, x->dtype, out);
}

cell_status cell_cpu_avg_pool3d_backward(const cell_tensor *gy, const int64_t *in_shape,
                                         const int64_t *kernel, const int64_t *stride,
                                         const int64_t *padding, int ceil_mode,
                                         int count_include_pad, cell_dtype dt, cell_tensor **gx) {
  if (!gy || !in_shape || !gx)
    return cell_error(CELL_ERR_VALUE, "avg_pool3d backward: NULL argument");
  cell_conv3d_geom g;
  CELL_TRY(cell_k_pool3d_geom("avg_pool3d", 5, in_shape, kernel, stride, padding, NULL, ceil_mode,
                              &g));
  int64_t yshape[5] = {g.n, g.c, g.od, g.oh, g.ow};
  if (!cell_shape_equal(gy->ndim, gy->shape, 5, yshape)) {
    char s1[160], s2[160];
    return cell_error(CELL_ERR_VALUE, "avg_pool3d backward: the output gradient has shape %s, not %s",
                      cell_conv_shape_str(gy->ndim, gy->shape, s1, sizeof s1),
                      cell_conv_shape_str(5, yshape, s2, sizeof s2));
  }
  cell_dtype ct = cell_conv_compute_dtype(dt);
  cell_tensor *gyc = NULL, *r = NULL;
  cell_status s = cell_conv_operand(gy, ct, &gyc);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 5, in_shape, &r);
  if (s == CELL_OK)
    DISPATCH(ct, avg3, &g, count_include_pad != 0, NULL, NULL,
             (const void *)cell_tensor_base(gyc), (void *)cell_tensor_base(r));
  cell_tensor_release(gyc);
  return finish(s, r, dt, gx);
}
