/* conv3d.c - conv3d and conv_transpose3d: argument checks, vol2col / col2vol
 * (im2col and col2im for volumes) and the lowering onto the gemm backend.
 *
 * As conv2d's im2col path (conv.c), the input volumes of a chunk of nb
 * samples are laid out as a matrix
 *   cols [C * kd * kh * kw, nb * P]   (row (c, a, i, j), column (n, od, oh, ow)),
 * P = OD * OH * OW, so group g of the convolution is one gemm
 *   out_g [O / groups, nb * P] = W_g [O / groups, K] @ cols_g [K, nb * P]
 * (K = C / groups * kd * kh * kw), and the backward pass is two:
 *   gW_g = gy_g @ cols_g^T,   gcols_g = W_g^T @ gy_g, then col2vol (a scatter-add).
 * The transposed convolution is the adjoint: its forward pass is the second
 * of these (col2vol of W^T x), its input gradient a convolution of the output
 * gradient with the same weight, its weight gradient the first with the
 * roles of input and output gradient swapped. The columns are recomputed
 * in backward, never kept.
 *
 * float32 and float64 compute natively; float16 and bfloat16 through float32. */
#include "conv.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include "kernels.h"
#include "nn.h"
#include "ops.h"
#include <stdio.h>
#include "kernel_list.h"

/* A chunk gets at least this many output positions (the gemm's n), */
#define C3_CHUNK_COLS 4096
/* and at most this many vol2col elements, unless one sample needs more. */
#define C3_CHUNK_SCRATCH ((int64_t)4 << 20)
#define C3_ARG_MAX ((int64_t)1 << 30)

/* --- geometry -------------------------------------------------------------------- */

static const char *shp(const cell_tensor *t, char *buf, size_t n) {
  return cell_conv_shape_str(t->ndim, t->shape, buf, n);
}

/* Three sizes (v, or {def, def, def}), each in [lo, 2^30]. */
static cell_status triple(const char *op, const char *what, const int64_t *v, int64_t def,
                          int64_t lo, int64_t *out) {
  bool bad = false;
  for (int i = 0; i < 3; i++) {
    out[i] = v ? v[i] : def;
    bad = bad || out[i] < lo || out[i] > C3_ARG_MAX;
  }
  if (bad)
    return cell_error(CELL_ERR_VALUE, "%s: %s must be at least %lld and at most 2^30, got (%lld, "
                      "%lld, %lld)", op, what, (long long)lo, (long long)out[0], (long long)out[1],
                      (long long)out[2]);
  return CELL_OK;
}

static cell_status pads6(const char *op, const int64_t *v, int64_t *out) {
  bool bad = false;
  for (int i = 0; i < 6; i++) {
    out[i] = v ? v[i] : 0;
    bad = bad || out[i] < 0 || out[i] > C3_ARG_MAX;
  }
  if (bad)
    return cell_error(CELL_ERR_VALUE,
                      "%s: padding (front, back, top, bottom, left, right) must be non-negative "
                      "and at most 2^30, got (%lld, %lld, %lld, %lld, %lld, %lld)",
                      op, (long long)out[0], (long long)out[1], (long long)out[2],
                      (long long)out[3], (long long)out[4], (long long)out[5]);
  return CELL_OK;
}

/* The checks shared by both ops: ranks, dtypes, bias dtype, the options. */
static cell_status common(const char *op, const cell_tensor *x, const cell_tensor *w,
                          const cell_tensor *b, const int64_t *stride, const int64_t *padding,
                          const int64_t *dilation, int64_t groups, cell_conv3d_geom *g) {
  char sx[160], sw[160];
  if (!x || !w || !g) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  if (x->ndim != 5)
    return cell_error(CELL_ERR_VALUE, "%s: input must be 5-D (N, C, D, H, W), got input %s", op,
                      shp(x, sx, sizeof sx));
  if (w->ndim != 5)
    return cell_error(CELL_ERR_VALUE, "%s: weight must be 5-D, got weight %s", op,
                      shp(w, sw, sizeof sw));
  if (!cell_dtype_is_float(x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: input must be a float tensor, got %s", op,
                      cell_dtype_name(x->dtype));
  if (w->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: input is %s but weight is %s; they must match", op,
                      cell_dtype_name(x->dtype), cell_dtype_name(w->dtype));
  if (b && b->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: input is %s but bias is %s; they must match", op,
                      cell_dtype_name(x->dtype), cell_dtype_name(b->dtype));
  memset(g, 0, sizeof *g);
  CELL_TRY(triple(op, "stride", stride, 1, 1, g->s));
  CELL_TRY(triple(op, "dilation", dilation, 1, 1, g->dl));
  CELL_TRY(pads6(op, padding, g->pd));
  if (groups < 1 || groups > C3_ARG_MAX)
    return cell_error(CELL_ERR_VALUE, "%s: groups must be at least 1, got %lld", op,
                      (long long)groups);
  g->groups = groups;
  g->n = x->shape[0];
  g->kd = w->shape[2];
  g->kh = w->shape[3];
  g->kw = w->shape[4];
  if (g->kd < 1 || g->kh < 1 || g->kw < 1)
    return cell_error(CELL_ERR_VALUE, "%s: the kernel must be at least 1 x 1 x 1, got weight %s",
                      op, shp(w, sw, sizeof sw));
  return CELL_OK;
}

static cell_status bias_shape(const char *op, const cell_tensor *b, int64_t o,
                              const cell_tensor *w) {
  if (b && (b->ndim != 1 || b->shape[0] != o)) {
    char sb[160], sw[160];
    return cell_error(CELL_ERR_VALUE, "%s: bias must have shape (%lld) to match weight %s, got %s",
                      op, (long long)o, shp(w, sw, sizeof sw), shp(b, sb, sizeof sb));
  }
  return CELL_OK;
}

/* The dilated extent (k - 1) * d + 1, saturated far above any tensor size. */
static int64_t extent(int64_t k, int64_t d) {
  int64_t e;
  if (!cell_size_mul(k - 1, d, &e)) return INT64_MAX / 4;
  return e + 1;
}

/* The output and the unfolded input must be shapes a tensor can have. */
static cell_status sizes_ok(const char *op, const cell_conv3d_geom *g, const int64_t *yshape,
                            const cell_tensor *x, const cell_tensor *w) {
  int64_t cols[5] = {g->c, g->kd * g->kh * g->kw, g->od, g->oh, g->ow};
  int64_t in[5] = {g->n, g->c, g->d, g->h, g->w};
  if (cell_shape_numel_checked(op, 5, yshape, NULL) != CELL_OK ||
      cell_shape_numel_checked(op, 5, cols, NULL) != CELL_OK ||
      cell_shape_numel_checked(op, 5, in, NULL) != CELL_OK) {
    char sx[160], sw[160], sy[160];
    return cell_error(CELL_ERR_VALUE,
                      "%s: input %s with weight %s gives an output %s (or an unfolded input) too "
                      "large for a tensor",
                      op, shp(x, sx, sizeof sx), shp(w, sw, sizeof sw),
                      cell_conv_shape_str(5, yshape, sy, sizeof sy));
  }
  return CELL_OK;
}

cell_status cell_k_conv3d_geom(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                               const int64_t *stride, const int64_t *padding,
                               const int64_t *dilation, int64_t groups, cell_conv3d_geom *g) {
  const char *op = "conv3d";
  CELL_TRY(common(op, x, w, b, stride, padding, dilation, groups, g));
  char sx[160], sw[160];
  g->c = x->shape[1];
  g->d = x->shape[2];
  g->h = x->shape[3];
  g->w = x->shape[4];
  g->o = w->shape[0];
  if (g->o % groups)
    return cell_error(CELL_ERR_VALUE,
                      "%s: groups %lld must divide the output channels %lld of weight %s", op,
                      (long long)groups, (long long)g->o, shp(w, sw, sizeof sw));
  if (g->c != w->shape[1] * groups)
    return cell_error(CELL_ERR_VALUE,
                      "%s: input has %lld channels but weight expects %lld (groups %lld): input "
                      "%s, weight %s",
                      op, (long long)g->c, (long long)(w->shape[1] * groups), (long long)groups,
                      shp(x, sx, sizeof sx), shp(w, sw, sizeof sw));
  CELL_TRY(bias_shape(op, b, g->o, w));
  const int64_t in[3] = {g->d, g->h, g->w}, k[3] = {g->kd, g->kh, g->kw};
  int64_t outs[3];
  for (int i = 0; i < 3; i++) {
    int64_t ek = extent(k[i], g->dl[i]), p = in[i] + g->pd[2 * i] + g->pd[2 * i + 1];
    if (ek > p)
      return cell_error(CELL_ERR_VALUE,
                        "%s: the kernel (%lld x %lld x %lld, dilation %lld x %lld x %lld) is larger "
                        "than the padded input in spatial dimension %d (%lld < %lld): input %s, "
                        "weight %s",
                        op, (long long)g->kd, (long long)g->kh, (long long)g->kw,
                        (long long)g->dl[0], (long long)g->dl[1], (long long)g->dl[2], i + 1,
                        (long long)p, (long long)ek, shp(x, sx, sizeof sx), shp(w, sw, sizeof sw));
    outs[i] = (p - ek) / g->s[i] + 1;
  }
  g->od = outs[0];
  g->oh = outs[1];
  g->ow = outs[2];
  int64_t y[5] = {g->n, g->o, g->od, g->oh, g->ow};
  return sizes_ok(op, g, y, x, w);
}

/* The transposed convolution as the adjoint of a convolution: g's input
 * (c, d, h, w) is the transposed op's output, g's output (o, od, oh, ow) its
 * input x. */
cell_status cell_k_conv_transpose3d_geom(const cell_tensor *x, const cell_tensor *w,
                                         const cell_tensor *b, const int64_t *stride,
                                         const int64_t *padding, const int64_t *output_padding,
                                         const int64_t *dilation, int64_t groups,
                                         cell_conv3d_geom *g) {
  const char *op = "conv_transpose3d";
  CELL_TRY(common(op, x, w, b, stride, padding, dilation, groups, g));
  char sx[160], sw[160];
  int64_t opad[3];
  CELL_TRY(triple(op, "output_padding", output_padding, 0, 0, opad));
  g->o = x->shape[1];
  if (w->shape[0] != g->o)
    return cell_error(CELL_ERR_VALUE,
                      "%s: input has %lld channels but weight %s expects %lld: input %s", op,
                      (long long)g->o, shp(w, sw, sizeof sw), (long long)w->shape[0],
                      shp(x, sx, sizeof sx));
  if (g->o % groups)
    return cell_error(CELL_ERR_VALUE,
                      "%s: groups %lld must divide the input channels %lld of weight %s", op,
                      (long long)groups, (long long)g->o, shp(w, sw, sizeof sw));
  if (!cell_size_mul(w->shape[1], groups, &g->c) || g->c > C3_ARG_MAX * 64)
    return cell_error(CELL_ERR_VALUE, "%s: weight %s with groups %lld has too many output channels",
                      op, shp(w, sw, sizeof sw), (long long)groups);
  CELL_TRY(bias_shape(op, b, g->c, w));
  g->od = x->shape[2];
  g->oh = x->shape[3];
  g->ow = x->shape[4];
  const int64_t in[3] = {g->od, g->oh, g->ow}, k[3] = {g->kd, g->kh, g->kw};
  int64_t outs[3];
  for (int i = 0; i < 3; i++) {
    if (opad[i] >= g->s[i])
      return cell_error(CELL_ERR_VALUE,
                        "%s: output_padding (%lld, %lld, %lld) must be smaller than the stride "
                        "(%lld, %lld, %lld)",
                        op, (long long)opad[0], (long long)opad[1], (long long)opad[2],
                        (long long)g->s[0], (long long)g->s[1], (long long)g->s[2]);
    int64_t span, full;
    if (in[i] < 1) {
      outs[i] = -1;
    } else if (!cell_size_mul(in[i] - 1, g->s[i], &span) || span > INT64_MAX / 4) {
      return cell_error(CELL_ERR_VALUE, "%s: input %s with stride (%lld, %lld, %lld) gives an "
                        "output too large for a tensor", op, shp(x, sx, sizeof sx),
                        (long long)g->s[0], (long long)g->s[1], (long long)g->s[2]);
    } else {
      full = span + extent(k[i], g->dl[i]) + opad[i];
      outs[i] = full - g->pd[2 * i] - g->pd[2 * i + 1];
    }
    if (outs[i] < 1)
      return cell_error(CELL_ERR_VALUE,
                        "%s: the output size %lld of spatial dimension %d is not positive: input "
                        "%s, weight %s, padding (%lld, %lld, %lld, %lld, %lld, %lld)",
                        op, (long long)outs[i], i + 1, shp(x, sx, sizeof sx), shp(w, sw, sizeof sw),
                        (long long)g->pd[0], (long long)g->pd[1], (long long)g->pd[2],
                        (long long)g->pd[3], (long long)g->pd[4], (long long)g->pd[5]);
  }
  g->d = outs[0];
  g->h = outs[1];
  g->w = outs[2];
  int64_t y[5] = {g->n, g->c, g->d, g->h, g->w};
  return sizes_ok(op, g, y, x, w);
}

/* --- the typed loops ------------------------------------------------------------------ */

#define C3_KERNELS(T, S)                                                                       \
  /* cols[r][n * P + p] for the samples [n0, n0 + nb): see the top. */                         \
  static void vol2col_##S(const cell_conv3d_geom *g, const T *x, int64_t n0, int64_t nb,       \
                          T *cols) {                                                           \
    const int64_t HW = g->oh * g->ow, P = g->od * HW, NP = nb * P;                             \
    const int64_t V = g->d * g->h * g->w, kk = g->kd * g->kh * g->kw, rows = g->c * kk;        \
    CELL_FOR(cell_conv_parallel(rows * NP), int64_t, r, rows, {                                \
      int64_t c = r / kk, a = (r / (g->kh * g->kw)) % g->kd, i = (r / g->kw) % g->kh;          \
      int64_t j = r % g->kw, off = j * g->dl[2] - g->pd[4], lo, hi;                            \
      cell_conv_valid_range(off, g->s[2], g->w, g->ow, &lo, &hi);                                        \
      for (int64_t n = 0; n < nb; n++) {                                                       \
        const T *src = x + ((n0 + n) * g->c + c) * V;                                          \
        T *d = cols + r * NP + n * P;                                                          \
        for (int64_t od = 0; od < g->od; od++) {                                               \
          int64_t id = od * g->s[0] - g->pd[0] + a * g->dl[0];                                 \
          if (id < 0 || id >= g->d) {                                                          \
            memset(d, 0, sizeof(T) * (size_t)HW);                                              \
            d += HW;                                                                           \
            continue;                                                                          \
          }                                                                                    \
          for (int64_t oh = 0; oh < g->oh; oh++, d += g->ow) {                                 \
            int64_t ih = oh * g->s[1] - g->pd[2] + i * g->dl[1];                               \
            if (ih < 0 || ih >= g->h) {                                                        \
              for (int64_t q = 0; q < g->ow; q++) d[q] = 0;                                    \
              continue;                                                                        \
            }                                                                                  \
            const T *s = src + (id * g->h + ih) * g->w + off;                                  \
            for (int64_t q = 0; q < lo; q++) d[q] = 0;                                         \
            if (g->s[2] == 1)                                                                  \
              memcpy(d + lo, s + lo, sizeof(T) * (size_t)(hi - lo));                           \
            else                                                                               \
              for (int64_t q = lo; q < hi; q++) d[q] = s[q * g->s[2]];                         \
            for (int64_t q = hi; q < g->ow; q++) d[q] = 0;                                     \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    });                                                                                        \
  }                                                                                            \
                                                                                               \
  /* gx[n0 + n] += the scatter of cols back to input positions. */                             \
  static void col2vol_##S(const cell_conv3d_geom *g, const T *cols, int64_t n0, int64_t nb,    \
                          T *gx) {                                                             \
    const int64_t HW = g->oh * g->ow, P = g->od * HW, NP = nb * P;                             \
    const int64_t V = g->d * g->h * g->w;                                                      \
    CELL_FOR(cell_conv_parallel(nb * g->c * g->kd * g->kh * g->kw * P), int64_t, nc,           \
             nb * g->c, {                                                                      \
      int64_t n = nc / g->c, c = nc % g->c;                                                    \
      T *dst = gx + ((n0 + n) * g->c + c) * V;                                                 \
      for (int64_t a = 0; a < g->kd; a++)                                                      \
        for (int64_t i = 0; i < g->kh; i++)                                                    \
          for (int64_t j = 0; j < g->kw; j++) {                                                \
            int64_t off = j * g->dl[2] - g->pd[4], lo, hi;                                     \
            cell_conv_valid_range(off, g->s[2], g->w, g->ow, &lo, &hi);                                  \
            const T *src = cols + (((c * g->kd + a) * g->kh + i) * g->kw + j) * NP + n * P;    \
            for (int64_t od = 0; od < g->od; od++) {                                           \
              int64_t id = od * g->s[0] - g->pd[0] + a * g->dl[0];                             \
              if (id < 0 || id >= g->d) continue;                                              \
              for (int64_t oh = 0; oh < g->oh; oh++) {                                         \
                int64_t ih = oh * g->s[1] - g->pd[2] + i * g->dl[1];                           \
                if (ih < 0 || ih >= g->h) continue;                                            \
                T *d = dst + (id * g->h + ih) * g->w + off;                                    \
                const T *s = src + od * HW + oh * g->ow;                                       \
                if (g->s[2] == 1)                                                              \
                  for (int64_t q = lo; q < hi; q++) d[q] += s[q];                              \
                else                                                                           \
                  for (int64_t q = lo; q < hi; q++) d[q * g->s[2]] += s[q];                    \
              }                                                                                \
            }                                                                                  \
          }                                                                                    \
    });                                                                                        \
  }

C3_KERNELS(float, f32)
C3_KERNELS(double, f64)

#define DISPATCH(ct, fn, ...) \
  ((ct) == CELL_DTYPE_F64 ? fn##_f64(__VA_ARGS__) : fn##_f32(__VA_ARGS__))

void cell_conv_vol2col(cell_dtype ct, const cell_conv3d_geom *g, const void *x, int64_t n0,
                       int64_t nb, void *cols) {
  DISPATCH(ct, vol2col, g, x, n0, nb, cols);
}
void cell_conv_col2vol(cell_dtype ct, const cell_conv3d_geom *g, const void *cols, int64_t n0,
                       int64_t nb, void *gx) {
  DISPATCH(ct, col2vol, g, cols, n0, nb, gx);
}

/* --- chunking and gemm ------------------------------------------------------------------- */

static int64_t chunk_samples(const cell_conv3d_geom *g) {
  int64_t P = g->od * g->oh * g->ow, rows = g->c * g->kd * g->kh * g->kw;
  if (g->n <= 1) return 1;
  int64_t nb = (C3_CHUNK_COLS + P - 1) / (P > 0 ? P : 1);
  int64_t cap = rows * P > 0 ? C3_CHUNK_SCRATCH / (rows * P) : g->n;
  if (nb > cap) nb = cap;
  if (nb < 1) nb = 1;
  if (nb > g->n) nb = g->n;
  int64_t chunks = (g->n + nb - 1) / nb;
  return (g->n + chunks - 1) / chunks;
}

static cell_status oom(const char *op) {
  return cell_error(CELL_ERR_MEMORY, "%s: out of memory for the vol2col scratch", op);
}

#define AT(p, i) ((char *)(p) + (size_t)(i) * (size_t)es)

/* y {n, o, P} = conv(x {n, c, V}, w) + b, contiguous in ct; y fully written. */
static cell_status forward(const char *op, const cell_conv3d_geom *g, cell_dtype ct,
                           const void *x, const void *w, const void *bias, void *y) {
  const int es = cell_dtype_size(ct);
  const int64_t P = g->od * g->oh * g->ow, og = g->o / g->groups, cg = g->c / g->groups;
  const int64_t K = cg * g->kd * g->kh * g->kw, rows = g->c * g->kd * g->kh * g->kw;
  if (g->n == 0 || g->o == 0 || P == 0) return CELL_OK;
  if (K == 0) { /* no input channels: the bias alone */
    memset(y, 0, (size_t)(g->n * g->o * P) * (size_t)es);
    if (bias) cell_conv_add_bias(ct, y, bias, g->o, P, 0, g->n);
    return CELL_OK;
  }
  const int64_t nbmax = chunk_samples(g);
  char *cols = cell_conv_scratch(rows * nbmax * P, es);
  char *m = nbmax > 1 ? cell_conv_scratch(g->o * nbmax * P, es) : NULL;
  if (!cols || (nbmax > 1 && !m)) {
    cell_dealloc(cols);
    cell_dealloc(m);
    return oom(op);
  }
  cell_status s = CELL_OK;
  for (int64_t n0 = 0; n0 < g->n && s == CELL_OK; n0 += nbmax) {
    int64_t nb = g->n - n0 < nbmax ? g->n - n0 : nbmax, NP = nb * P;
    DISPATCH(ct, vol2col, g, x, n0, nb, (void *)cols);
    char *dst = nb == 1 ? AT(y, n0 * g->o * P) : m;
    for (int64_t gi = 0; gi < g->groups && s == CELL_OK; gi++)
      s = cell_conv_gemm(ct, og, NP, K, AT(w, gi * og * K), K, 1, AT(cols, gi * K * NP), NP, 1,
                         AT(dst, gi * og * NP), NP);
    if (s != CELL_OK) break;
    if (nb > 1) cell_conv_to_ncp(ct, m, bias, g->o, P, n0, nb, y);
    else if (bias) cell_conv_add_bias(ct, y, bias, g->o, P, n0, 1);
    s = cell_check_interrupt();
  }
  cell_dealloc(cols);
  cell_dealloc(m);
  return s;
}

/* From gy {n, o, P}: gx {n, c, V} (zeroed by the caller; added into) and gw
 * (written) when not NULL; x is needed only for gw, w only for gx. */
static cell_status backward(const char *op, const cell_conv3d_geom *g, cell_dtype ct,
                            const void *gy, const void *x, const void *w, void *gx, void *gw) {
  const int es = cell_dtype_size(ct);
  const int64_t P = g->od * g->oh * g->ow, og = g->o / g->groups, cg = g->c / g->groups;
  const int64_t K = cg * g->kd * g->kh * g->kw, rows = g->c * g->kd * g->kh * g->kw;
  if (gw) memset(gw, 0, (size_t)(g->o * K) * (size_t)es);
  if ((!gx && !gw) || K == 0 || g->n == 0 || g->o == 0 || P == 0) return CELL_OK;
  const int64_t nbmax = chunk_samples(g);
  char *cols = cell_conv_scratch(rows * nbmax * P, es);
  char *m = nbmax > 1 ? cell_conv_scratch(g->o * nbmax * P, es) : NULL;
  char *tmp = gw && g->n > nbmax ? cell_conv_scratch(g->o * K, es) : NULL;
  cell_status s = CELL_OK;
  if (!cols || (nbmax > 1 && !m) || (gw && g->n > nbmax && !tmp)) s = oom(op);
  for (int64_t n0 = 0; n0 < g->n && s == CELL_OK; n0 += nbmax) {
    int64_t nb = g->n - n0 < nbmax ? g->n - n0 : nbmax, NP = nb * P;
    const char *gm = AT(gy, n0 * g->o * P); /* [O, NP]: one sample's block */
    if (nb > 1) {
      cell_conv_from_ncp((size_t)es, gy, g->o, P, n0, nb, m);
      gm = m;
    }
    if (gw) {
      DISPATCH(ct, vol2col, g, x, n0, nb, (void *)cols);
      char *dst = n0 == 0 ? gw : tmp;
      for (int64_t gi = 0; gi < g->groups && s == CELL_OK; gi++)
        s = cell_conv_gemm(ct, og, K, NP, gm + (size_t)(gi * og * NP) * es, NP, 1, AT(cols, gi * K * NP), 1,
                           NP, AT(dst, gi * og * K), K);
      if (s == CELL_OK && n0 > 0) cell_conv_add_to(ct, gw, tmp, g->o * K);
    }
    if (gx && s == CELL_OK) {
      for (int64_t gi = 0; gi < g->groups && s == CELL_OK; gi++)
        s = cell_conv_gemm(ct, K, NP, og, AT(w, gi * og * K), 1, K, gm + (size_t)(gi * og * NP) * es, NP,
                           1, AT(cols, gi * K * NP), NP);
      if (s == CELL_OK) DISPATCH(ct, col2vol, g, (const void *)cols, n0, nb, gx);
    }
    if (s == CELL_OK) s = cell_check_interrupt();
  }
  cell_dealloc(cols);
  cell_dealloc(m);
  cell_dealloc(tmp);
  return s;
}

/* --- the kernels ------------------------------------------------------------------ */

static void *base(const cell_tensor *t) { return t ? cell_tensor_base(t) : NULL; }

cell_status cell_cpu_conv3d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                            const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                            int64_t groups, cell_tensor **out) {
  cell_conv3d_geom g;
  CELL_TRY(cell_k_conv3d_geom(x, w, b, stride, padding, dilation, groups, &g));
  if (!out) return cell_error(CELL_ERR_VALUE, "conv3d: NULL argument");
  int64_t shape[5] = {g.n, g.o, g.od, g.oh, g.ow};
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *xc = NULL, *wc = NULL, *bc = NULL, *r = NULL;
  cell_status s = cell_tensor_new_contig(ct, 5, shape, &r);
  if (s == CELL_OK && cell_tensor_numel(r) > 0) {
    s = cell_conv_operand(x, ct, &xc);
    if (s == CELL_OK) s = cell_conv_operand(w, ct, &wc);
    if (s == CELL_OK && b) s = cell_conv_operand(b, ct, &bc);
    if (s == CELL_OK) s = forward("conv3d", &g, ct, base(xc), base(wc), base(bc), base(r));
    if (s == CELL_OK) cell_tensor_bump(r);
  }
  cell_release4(s, xc, wc, bc, NULL);
  return cell_nn_to_dtype(s, r, x->dtype, out);
}

static cell_status zeros(cell_dtype dt, const int64_t *shape, cell_tensor **out) {
  return cell_tensor_full(dt, 5, shape, 0, out);
}

static cell_status grad_shape(const char *op, const cell_tensor *gy, const int64_t *want) {
  if (gy && cell_shape_equal(gy->ndim, gy->shape, 5, want)) return CELL_OK;
  char s1[160], s2[160];
  return cell_error(CELL_ERR_VALUE, "%s backward: the output gradient has shape %s, not %s", op,
                    gy ? cell_conv_shape_str(gy->ndim, gy->shape, s1, sizeof s1) : "NULL",
                    cell_conv_shape_str(5, want, s2, sizeof s2));
}

cell_status cell_cpu_conv3d_backward(const cell_tensor *gy, const cell_tensor *x,
                                     const cell_tensor *w, const int64_t *stride,
                                     const int64_t *padding, const int64_t *dilation,
                                     int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                     cell_tensor **gb) {
  cell_conv3d_geom g;
  CELL_TRY(cell_k_conv3d_geom(x, w, NULL, stride, padding, dilation, groups, &g));
  int64_t yshape[5] = {g.n, g.o, g.od, g.oh, g.ow};
  CELL_TRY(grad_shape("conv3d", gy, yshape));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *gyc = NULL, *xc = NULL, *wc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  cell_status s = cell_conv_operand(gy, ct, &gyc);
  if (s == CELL_OK && gw) s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK && gx) s = cell_conv_operand(w, ct, &wc);
  if (s == CELL_OK && gx) s = zeros(ct, x->shape, &rx);
  if (s == CELL_OK && gw) s = cell_tensor_new_contig(ct, 5, w->shape, &rw);
  if (s == CELL_OK && gb) s = cell_tensor_new_contig(ct, 1, &g.o, &rb);
  if (s == CELL_OK && rb)
    cell_conv_bias_grad(ct, base(gyc), g.n, g.o, g.od * g.oh * g.ow, base(rb));
  if (s == CELL_OK)
    s = backward("conv3d", &g, ct, base(gyc), base(xc), base(wc), base(rx), base(rw));
  cell_release4(s, gyc, xc, wc, NULL);
  if (s != CELL_OK) return cell_release4(s, rx, rw, rb, NULL);
  if (rx) cell_tensor_bump(rx);
  if (rw) cell_tensor_bump(rw);
  if (rb) cell_tensor_bump(rb);
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}

cell_status cell_cpu_conv_transpose3d(const cell_tensor *x, const cell_tensor *w,
                                      const cell_tensor *b, const int64_t *stride,
                                      const int64_t *padding, const int64_t *output_padding,
                                      const int64_t *dilation, int64_t groups,
                                      cell_tensor **out) {
  cell_conv3d_geom g;
  CELL_TRY(cell_k_conv_transpose3d_geom(x, w, b, stride, padding, output_padding, dilation, groups,
                                        &g));
  if (!out) return cell_error(CELL_ERR_VALUE, "conv_transpose3d: NULL argument");
  int64_t shape[5] = {g.n, g.c, g.d, g.h, g.w};
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *xc = NULL, *wc = NULL, *bc = NULL, *r = NULL;
  cell_status s = zeros(ct, shape, &r);
  if (s == CELL_OK && cell_tensor_numel(r) > 0) {
    s = cell_conv_operand(x, ct, &xc);
    if (s == CELL_OK) s = cell_conv_operand(w, ct, &wc);
    if (s == CELL_OK && b) s = cell_conv_operand(b, ct, &bc);
    if (s == CELL_OK)
      s = backward("conv_transpose3d", &g, ct, base(xc), NULL, base(wc), base(r), NULL);
    if (s == CELL_OK && bc)
      cell_conv_add_bias(ct, base(r), base(bc), g.c, g.d * g.h * g.w, 0, g.n);
    if (s == CELL_OK) cell_tensor_bump(r);
  }
  cell_release4(s, xc, wc, bc, NULL);
  return cell_nn_to_dtype(s, r, x->dtype, out);
}

cell_status cell_cpu_conv_transpose3d_backward(const cell_tensor *gy, const cell_tensor *x,
                                               const cell_tensor *w, const int64_t *stride,
                                               const int64_t *padding,
                                               const int64_t *output_padding,
                                               const int64_t *dilation, int64_t groups,
                                               cell_tensor **gx, cell_tensor **gw,
                                               cell_tensor **gb) {
  cell_conv3d_geom g;
  CELL_TRY(cell_k_conv_transpose3d_geom(x, w, NULL, stride, padding, output_padding, dilation,
                                        groups, &g));
  int64_t yshape[5] = {g.n, g.c, g.d, g.h, g.w};
  CELL_TRY(grad_shape("conv_transpose3d", gy, yshape));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *gyc = NULL, *xc = NULL, *wc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  cell_status s = cell_conv_operand(gy, ct, &gyc);
  if (s == CELL_OK && gw) s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK && gx) s = cell_conv_operand(w, ct, &wc);
  if (s == CELL_OK && gx) s = cell_tensor_new_contig(ct, 5, x->shape, &rx);
  if (s == CELL_OK && gw) s = cell_tensor_new_contig(ct, 5, w->shape, &rw);
  if (s == CELL_OK && gb) s = cell_tensor_new_contig(ct, 1, &g.c, &rb);
  if (s == CELL_OK && rb) cell_conv_bias_grad(ct, base(gyc), g.n, g.c, g.d * g.h * g.w, base(rb));
  /* x's gradient: the convolution of gy with w (every element written) */
  if (s == CELL_OK && rx) s = forward("conv_transpose3d", &g, ct, base(gyc), base(wc), NULL, base(rx));
  /* w's gradient: the convolution's weight gradient, with x as the output
   * gradient and gy as the input */
  if (s == CELL_OK && rw)
    s = backward("conv_transpose3d", &g, ct, base(xc), base(gyc), NULL, NULL, base(rw));
  cell_release4(s, gyc, xc, wc, NULL);
  if (s != CELL_OK) return cell_release4(s, rx, rw, rb, NULL);
  if (rx) cell_tensor_bump(rx);
  if (rw) cell_tensor_bump(rw);
  if (rb) cell_tensor_bump(rb);
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}
