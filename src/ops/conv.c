/* conv.c - conv2d: argument checks, the choice of lowering, and the im2col
 * lowering onto the gemm backend (OpenBLAS for float32 / float64).
 *
 * Stride-1 convolutions with few taps per output (input channels per group
 * x kh x kw; LeNet's layers) go to the direct kernels of conv_direct.c,
 * which read the input in place. The rest are lowered with im2col: the
 * input patches of a chunk of nb samples are laid out as a matrix
 *   cols [C * kh * kw, nb * OH * OW]   (row (c, i, j), column (n, oh, ow)),
 * so the convolution of group g is one gemm
 *   out_g [O / groups, nb * P] = W_g [O / groups, K] @ cols_g [K, nb * P]
 * (K = C / groups * kh * kw, P = OH * OW), and the backward pass is two:
 *   gW_g = gy_g @ cols_g^T,   gcols_g = W_g^T @ gy_g, then col2im (a scatter-add).
 * One gemm over many samples keeps its n large enough for OpenBLAS on
 * small images, at the price of moving the result between [O, nb, P] and
 * NCHW's [nb, O, P]; a chunk of one sample needs no move. Chunks bound the
 * scratch (from the caching allocator) for large images. The columns are
 * recomputed in backward from the saved input rather than kept: memory
 * stays that of the tensors themselves.
 *
 * float32 and float64 compute natively; float16 and bfloat16 through float32. */
#include "conv.h"
#include "../backend/backend.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include <stdio.h>
#include "kernel_list.h"

/* A chunk gets at least this many output positions (the gemm's n), */
#define CONV_CHUNK_COLS 4096
/* and at most this many im2col elements, unless one sample needs more. */
#define CONV_CHUNK_SCRATCH ((int64_t)4 << 20)
/* The direct kernels take stride-1 convolutions of at most this many taps
 * (input channels per group x kh x kw); past it im2col's gemm runs faster
 * (measured: 64 channels 3 x 3 direct, 128 channels 3 x 3 im2col). */
#define CONV_DIRECT_MAX_TAPS 640
/* Stride, padding, dilation and groups beyond this are refused: nothing
 * meaningful needs them, and sizes computed from them stay far from overflow. */
#define CONV_ARG_MAX ((int64_t)1 << 30)

/* --- shared with pool.c -------------------------------------------------------- */

const char *cell_conv_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (k < n) snprintf(buf + k, n - k, ")");
  return buf;
}

cell_dtype cell_conv_compute_dtype(cell_dtype dt) {
  return dt == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
}

cell_status cell_conv_operand(const cell_tensor *t, cell_dtype ct, cell_tensor **out) {
  cell_tensor *a;
  CELL_TRY(cell_as_dtype(t, ct, &a));
  cell_status s = cell_k_contiguous(a, out);
  cell_tensor_release(a);
  return s;
}

cell_status cell_conv_pair(const char *op, const char *what, const int64_t *v, int64_t def,
                           int64_t lo, int64_t *out) {
  for (int i = 0; i < 2; i++) out[i] = v ? v[i] : def;
  if (out[0] < lo || out[1] < lo || out[0] > CONV_ARG_MAX || out[1] > CONV_ARG_MAX)
    return cell_error(CELL_ERR_VALUE, "%s: %s must be %s, got (%lld, %lld)", op, what,
                      out[0] < lo || out[1] < lo ? "at least 1" : "at most 2^30",
                      (long long)out[0], (long long)out[1]);
  return CELL_OK;
}

cell_status cell_conv_pads(const char *op, const int64_t *v, int64_t *out) {
  bool bad = false, big = false;
  for (int i = 0; i < 4; i++) {
    out[i] = v ? v[i] : 0;
    bad = bad || out[i] < 0;
    big = big || out[i] > CONV_ARG_MAX;
  }
  if (bad || big)
    return cell_error(CELL_ERR_VALUE,
                      "%s: padding (top, bottom, left, right) must be %s, got (%lld, %lld, %lld, "
                      "%lld)", op, bad ? "non-negative" : "at most 2^30", (long long)out[0],
                      (long long)out[1], (long long)out[2], (long long)out[3]);
  return CELL_OK;
}

int cell_conv_parallel(int64_t work) {
  return work >= CELL_PARALLEL_GRAIN && cell_ctx()->num_threads > 1;
}

/* --- geometry -------------------------------------------------------------------- */

cell_status cell_k_conv2d_geom(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                               const int64_t *stride, const int64_t *padding,
                               const int64_t *dilation, int64_t groups, cell_conv_geom *g) {
  if (!x || !w || !g) return cell_error(CELL_ERR_VALUE, "conv2d: NULL argument");
  char sx[160], sw[160], sb[160];
  cell_conv_shape_str(x->ndim, x->shape, sx, sizeof sx);
  cell_conv_shape_str(w->ndim, w->shape, sw, sizeof sw);
  if (x->ndim != 4)
    return cell_error(CELL_ERR_VALUE, "conv2d: input must be 4-D (N, C, H, W), got input %s", sx);
  if (w->ndim != 4)
    return cell_error(CELL_ERR_VALUE,
                      "conv2d: weight must be 4-D (out_channels, in_channels / groups, kh, kw), "
                      "got weight %s", sw);
  if (!cell_dtype_is_float(x->dtype))
    return cell_error(CELL_ERR_TYPE, "conv2d: input must be a float tensor, got %s",
                      cell_dtype_name(x->dtype));
  if (w->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "conv2d: input is %s but weight is %s; they must match",
                      cell_dtype_name(x->dtype), cell_dtype_name(w->dtype));
  if (b && b->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "conv2d: input is %s but bias is %s; they must match",
                      cell_dtype_name(x->dtype), cell_dtype_name(b->dtype));
  memset(g, 0, sizeof *g);
  int64_t st[2], dl[2], pd[4];
  CELL_TRY(cell_conv_pair("conv2d", "stride", stride, 1, 1, st));
  CELL_TRY(cell_conv_pair("conv2d", "dilation", dilation, 1, 1, dl));
  CELL_TRY(cell_conv_pads("conv2d", padding, pd));
  if (groups < 1 || groups > CONV_ARG_MAX)
    return cell_error(CELL_ERR_VALUE, "conv2d: groups must be at least 1, got %lld",
                      (long long)groups);
  g->n = x->shape[0];
  g->c = x->shape[1];
  g->h = x->shape[2];
  g->w = x->shape[3];
  g->o = w->shape[0];
  g->kh = w->shape[2];
  g->kw = w->shape[3];
  g->groups = groups;
  g->sh = st[0];
  g->sw = st[1];
  g->dh = dl[0];
  g->dw = dl[1];
  g->pt = pd[0];
  g->pb = pd[1];
  g->pl = pd[2];
  g->pr = pd[3];
  if (g->kh < 1 || g->kw < 1)
    return cell_error(CELL_ERR_VALUE, "conv2d: the kernel must be at least 1 x 1, got weight %s",
                      sw);
  if (g->o % groups)
    return cell_error(CELL_ERR_VALUE,
                      "conv2d: groups %lld must divide the output channels %lld of weight %s",
                      (long long)groups, (long long)g->o, sw);
  if (g->c != w->shape[1] * groups)
    return cell_error(CELL_ERR_VALUE,
                      "conv2d: input has %lld channels but weight expects %lld (groups %lld): "
                      "input %s, weight %s",
                      (long long)g->c, (long long)(w->shape[1] * groups), (long long)groups, sx, sw);
  if (b && (b->ndim != 1 || b->shape[0] != g->o)) {
    int64_t want[1] = {g->o};
    char swant[64];
    return cell_error(CELL_ERR_VALUE, "conv2d: bias must have shape %s to match weight %s, got %s",
                      cell_conv_shape_str(1, want, swant, sizeof swant), sw,
                      cell_conv_shape_str(b->ndim, b->shape, sb, sizeof sb));
  }
  /* The dilated kernel's extent; a product past CELL_MAX_NUMEL is simply
   * too big (larger than any padded input). */
  int64_t ekh, ekw;
  if (!cell_size_mul(g->kh - 1, g->dh, &ekh)) ekh = INT64_MAX - 1;
  if (!cell_size_mul(g->kw - 1, g->dw, &ekw)) ekw = INT64_MAX - 1;
  ekh++;
  ekw++;
  int64_t ph = g->h + g->pt + g->pb, pw = g->w + g->pl + g->pr;
  if (ekh > ph || ekw > pw)
    return cell_error(CELL_ERR_VALUE,
                      "conv2d: the kernel (%lld x %lld, dilation %lld x %lld) is larger than the "
                      "padded input (%lld x %lld): input %s, weight %s",
                      (long long)g->kh, (long long)g->kw, (long long)g->dh, (long long)g->dw,
                      (long long)ph, (long long)pw, sx, sw);
  g->oh = (ph - ekh) / g->sh + 1;
  g->ow = (pw - ekw) / g->sw + 1;
  /* The output and the unfolded input (C * kh * kw rows of oh * ow) must
   * be shapes a tensor can have. */
  int64_t oshape[4] = {g->n, g->o, g->oh, g->ow}, cols[4] = {g->c, g->kh * g->kw, g->oh, g->ow};
  if (cell_shape_numel_checked("conv2d", 4, oshape, NULL) != CELL_OK ||
      cell_shape_numel_checked("conv2d", 4, cols, NULL) != CELL_OK)
    return cell_error(CELL_ERR_VALUE,
                      "conv2d: input %s with weight %s gives an output %s (or an unfolded input) "
                      "too large for a tensor",
                      sx, sw, cell_conv_shape_str(4, oshape, sb, sizeof sb));
  return CELL_OK;
}

/* --- the typed loops ------------------------------------------------------------------ */

#define CONV_KERNELS(T, S)                                                                     \
  /* cols[r][n * P + p] for the chunk of samples [n0, n0 + nb): see the top. */                \
  static void im2col_##S(const cell_conv_geom *g, const T *x, int64_t n0, int64_t nb,          \
                         T *cols) {                                                            \
    const int64_t P = g->oh * g->ow, NP = nb * P, HW = g->h * g->w, kk = g->kh * g->kw;        \
    const int64_t rows = g->c * kk;                                                            \
    CELL_FOR(cell_conv_parallel(rows * NP), int64_t, r, rows, {                                \
      int64_t c = r / kk, i = (r / g->kw) % g->kh, j = r % g->kw;                              \
      int64_t off = j * g->dw - g->pl, lo, hi;                                                 \
      cell_conv_valid_range(off, g->sw, g->w, g->ow, &lo, &hi);                                          \
      for (int64_t n = 0; n < nb; n++) {                                                       \
        const T *src = x + ((n0 + n) * g->c + c) * HW;                                         \
        T *d = cols + r * NP + n * P;                                                          \
        for (int64_t oh = 0; oh < g->oh; oh++, d += g->ow) {                                   \
          int64_t ih = oh * g->sh - g->pt + i * g->dh;                                         \
          if (ih < 0 || ih >= g->h) {                                                          \
            for (int64_t q = 0; q < g->ow; q++) d[q] = 0;                                      \
            continue;                                                                          \
          }                                                                                    \
          const T *s = src + ih * g->w + off;                                                  \
          for (int64_t q = 0; q < lo; q++) d[q] = 0;                                           \
          if (g->sw == 1)                                                                      \
            memcpy(d + lo, s + lo, sizeof(T) * (size_t)(hi - lo));                             \
          else                                                                                 \
            for (int64_t q = lo; q < hi; q++) d[q] = s[q * g->sw];                             \
          for (int64_t q = hi; q < g->ow; q++) d[q] = 0;                                       \
        }                                                                                      \
      }                                                                                        \
    });                                                                                        \
  }                                                                                            \
                                                                                               \
  /* gx[n0 + n] += the scatter of cols back to input positions. */                             \
  static void col2im_##S(const cell_conv_geom *g, const T *cols, int64_t n0, int64_t nb,       \
                         T *gx) {                                                              \
    const int64_t P = g->oh * g->ow, NP = nb * P, HW = g->h * g->w;                            \
    CELL_FOR(cell_conv_parallel(nb * g->c * g->kh * g->kw * P), int64_t, nc, nb * g->c, {      \
      int64_t n = nc / g->c, c = nc % g->c;                                                    \
      T *dst = gx + ((n0 + n) * g->c + c) * HW;                                                \
      for (int64_t i = 0; i < g->kh; i++)                                                      \
        for (int64_t j = 0; j < g->kw; j++) {                                                  \
          int64_t off = j * g->dw - g->pl, lo, hi;                                             \
          cell_conv_valid_range(off, g->sw, g->w, g->ow, &lo, &hi);                                      \
          const T *src = cols + ((c * g->kh + i) * g->kw + j) * NP + n * P;                    \
          for (int64_t oh = 0; oh < g->oh; oh++) {                                             \
            int64_t ih = oh * g->sh - g->pt + i * g->dh;                                       \
            if (ih < 0 || ih >= g->h) continue;                                                \
            T *d = dst + ih * g->w + off;                                                      \
            const T *s = src + oh * g->ow;                                                     \
            if (g->sw == 1)                                                                    \
              for (int64_t q = lo; q < hi; q++) d[q] += s[q];                                  \
            else                                                                               \
              for (int64_t q = lo; q < hi; q++) d[q * g->sw] += s[q];                          \
          }                                                                                    \
        }                                                                                      \
    });                                                                                        \
  }

/* The moves between the gemm's layout m[o][n * P + p] (a chunk's nb samples
 * side by side) and the layout {n, o, P} of conv2d's and conv3d's outputs
 * (conv.h). */
#define CONV_MOVES(T, S)                                                                       \
  static void to_ncp_##S(const T *m, const T *bias, int64_t o, int64_t P, int64_t n0,          \
                         int64_t nb, T *out) {                                                 \
    CELL_FOR(cell_conv_parallel(nb * o * P), int64_t, nk, nb * o, {                            \
      int64_t n = nk / o, k = nk % o;                                                          \
      const T *s = m + k * nb * P + n * P;                                                     \
      T *d = out + ((n0 + n) * o + k) * P, bk = bias ? bias[k] : 0;                            \
      for (int64_t p = 0; p < P; p++) d[p] = s[p] + bk;                                        \
    });                                                                                        \
  }                                                                                            \
                                                                                               \
  static void add_bias_##S(T *out, const T *bias, int64_t o, int64_t P, int64_t n0,            \
                           int64_t nb) {                                                       \
    CELL_FOR(cell_conv_parallel(nb * o * P), int64_t, nk, nb * o, {                            \
      int64_t k = nk % o;                                                                      \
      T *d = out + (n0 * o + nk) * P, bk = bias[k];                                            \
      for (int64_t p = 0; p < P; p++) d[p] += bk;                                              \
    });                                                                                        \
  }                                                                                            \
                                                                                               \
  static void add_to_##S(T *dst, const T *src, int64_t n) {                                    \
    for (int64_t i = 0; i < n; i++) dst[i] += src[i];                                          \
  }

CONV_KERNELS(float, f32)
CONV_KERNELS(double, f64)
CONV_MOVES(float, f32)
CONV_MOVES(double, f64)

#define DISPATCH(ct, fn, ...) \
  ((ct) == CELL_DTYPE_F64 ? fn##_f64(__VA_ARGS__) : fn##_f32(__VA_ARGS__))

/* fold.c's unfold and fold run on these (conv.h). */
void cell_conv_im2col(cell_dtype ct, const cell_conv_geom *g, const void *x, int64_t n0,
                      int64_t nb, void *cols) {
  DISPATCH(ct, im2col, g, x, n0, nb, cols);
}
void cell_conv_col2im(cell_dtype ct, const cell_conv_geom *g, const void *cols, int64_t n0,
                      int64_t nb, void *gx) {
  DISPATCH(ct, col2im, g, cols, n0, nb, gx);
}

void cell_conv_to_ncp(cell_dtype ct, const void *m, const void *bias, int64_t o, int64_t P,
                      int64_t n0, int64_t nb, void *out) {
  DISPATCH(ct, to_ncp, m, bias, o, P, n0, nb, out);
}
void cell_conv_from_ncp(size_t es, const void *y, int64_t o, int64_t P, int64_t n0, int64_t nb,
                        void *m) {
  CELL_FOR(cell_conv_parallel(nb * o * P), int64_t, nk, nb * o, {
    int64_t n = nk / o, k = nk % o;
    memcpy((char *)m + (size_t)(k * nb * P + n * P) * es,
           (const char *)y + (size_t)(((n0 + n) * o + k) * P) * es, es * (size_t)P);
  });
}
void cell_conv_add_bias(cell_dtype ct, void *out, const void *bias, int64_t o, int64_t P,
                        int64_t n0, int64_t nb) {
  DISPATCH(ct, add_bias, out, bias, o, P, n0, nb);
}
void cell_conv_add_to(cell_dtype ct, void *dst, const void *src, int64_t n) {
  DISPATCH(ct, add_to, dst, src, n);
}

/* --- chunking and gemm ------------------------------------------------------------------- */

/* Samples per chunk: enough output positions for a large gemm, within the
 * scratch bound, and chunks of equal size. */
static int64_t chunk_samples(const cell_conv_geom *g) {
  int64_t P = g->oh * g->ow, rows = g->c * g->kh * g->kw;
  if (g->n <= 1) return 1;
  int64_t nb = (CONV_CHUNK_COLS + P - 1) / P;
  int64_t cap = rows * P > 0 ? CONV_CHUNK_SCRATCH / (rows * P) : g->n;
  if (nb > cap) nb = cap;
  if (nb < 1) nb = 1;
  if (nb > g->n) nb = g->n;
  int64_t chunks = (g->n + nb - 1) / nb;
  return (g->n + chunks - 1) / chunks;
}

cell_status cell_conv_gemm(cell_dtype ct, int64_t m, int64_t n, int64_t k, const void *a,
                           int64_t a_rs, int64_t a_cs, const void *b, int64_t b_rs, int64_t b_cs,
                           void *c, int64_t c_rs) {
  cell_gemm gm = {ct, m, n, k, a, a_rs, a_cs, b, b_rs, b_cs, c, c_rs, 1, 0};
  return cell_gemm_run(&gm);
}

void *cell_conv_scratch(int64_t elems, int es) {
  return cell_alloc((size_t)(elems > 0 ? elems : 1) * (size_t)es);
}

static cell_status oom(void) {
  return cell_error(CELL_ERR_MEMORY, "conv2d: out of memory for the im2col scratch");
}

/* Whether the direct kernels take this convolution: stride 1, and small
 * enough per group that im2col's data movement and a gemm with a small
 * dimension cost more than the direct kernels' lower arithmetic rate. */
static bool use_direct(cell_conv_lowering how, const cell_conv_geom *g) {
  if (!cell_conv_direct_ok(g) || how == CELL_CONV_IM2COL) return false;
  return how == CELL_CONV_DIRECT || g->c / g->groups * g->kh * g->kw <= CONV_DIRECT_MAX_TAPS;
}

/* out (contiguous, compute dtype ct) = conv2d(x, w) + b, operands contiguous in ct. */
static cell_status conv_forward(cell_conv_lowering how, const cell_conv_geom *g, cell_dtype ct,
                                const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                                cell_tensor *out) {
  const int es = cell_dtype_size(ct);
  const int64_t P = g->oh * g->ow, og = g->o / g->groups, cg = g->c / g->groups;
  const int64_t K = cg * g->kh * g->kw, rows = g->c * g->kh * g->kw;
  char *xo = cell_tensor_base(x), *wo = cell_tensor_base(w), *yo = cell_tensor_base(out);
  const void *bias = b ? cell_tensor_base(b) : NULL;
  if (K == 0) { /* no input channels: the bias alone */
    CELL_TRY(cell_k_fill_(out, 0));
    if (bias) cell_conv_add_bias(ct, yo, bias, g->o, P, 0, g->n);
    return CELL_OK;
  }
  if (use_direct(how, g)) return cell_conv_direct_forward(g, ct, xo, wo, bias, yo);
  const int64_t nbmax = chunk_samples(g);
  char *cols = cell_conv_scratch(rows * nbmax * P, es);
  char *m = nbmax > 1 ? cell_conv_scratch(g->o * nbmax * P, es) : NULL;
  if (!cols || (nbmax > 1 && !m)) {
    cell_dealloc(cols);
    cell_dealloc(m);
    return oom();
  }
  cell_status s = CELL_OK;
  for (int64_t n0 = 0; n0 < g->n && s == CELL_OK; n0 += nbmax) {
    int64_t nb = g->n - n0 < nbmax ? g->n - n0 : nbmax, NP = nb * P;
    DISPATCH(ct, im2col, g, (const void *)xo, n0, nb, (void *)cols);
    /* One sample: the gemm writes its NCHW block directly. */
    char *dst = nb == 1 ? yo + (size_t)(n0 * g->o * P) * (size_t)es : m;
    for (int64_t gi = 0; gi < g->groups && s == CELL_OK; gi++)
      s = cell_conv_gemm(ct, og, NP, K, wo + (size_t)(gi * og * K) * es, K, 1,
                         cols + (size_t)(gi * K * NP) * es, NP, 1, dst + (size_t)(gi * og * NP) * es, NP);
    if (s != CELL_OK) break;
    if (nb > 1) cell_conv_to_ncp(ct, m, bias, g->o, P, n0, nb, yo);
    else if (bias) cell_conv_add_bias(ct, yo, bias, g->o, P, n0, 1);
    s = cell_check_interrupt();
  }
  cell_dealloc(cols);
  cell_dealloc(m);
  return s;
}

cell_status cell_k_conv2d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                          const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                          int64_t groups, cell_tensor **out) {
  return cell_k_conv2d_lowered(CELL_CONV_AUTO, x, w, b, stride, padding, dilation, groups, out);
}

cell_status cell_cpu_conv2d_lowered(cell_conv_lowering how, const cell_tensor *x,
                                  const cell_tensor *w, const cell_tensor *b,
                                  const int64_t *stride, const int64_t *padding,
                                  const int64_t *dilation, int64_t groups, cell_tensor **out) {
  cell_conv_geom g;
  CELL_TRY(cell_k_conv2d_geom(x, w, b, stride, padding, dilation, groups, &g));
  if (!out) return cell_error(CELL_ERR_VALUE, "conv2d: NULL argument");
  int64_t shape[4] = {g.n, g.o, g.oh, g.ow};
  if (how == CELL_CONV_AUTO && cell_conv_bf16_ok(&g, x->dtype, w->dtype)) { /* conv_bf16.c */
    cell_tensor *xb = NULL, *wb = NULL, *rb = NULL;
    cell_status sb = cell_tensor_new_contig(CELL_DTYPE_BF16, 4, shape, &rb);
    if (sb == CELL_OK && cell_tensor_numel(rb) > 0) {
      sb = cell_k_contiguous(x, &xb);
      if (sb == CELL_OK) sb = cell_k_contiguous(w, &wb);
      if (sb == CELL_OK) sb = cell_conv_bf16_forward(&g, xb, wb, b, rb);
    }
    cell_tensor_release(xb);
    cell_tensor_release(wb);
    if (sb != CELL_OK) {
      cell_tensor_release(rb);
      return sb;
    }
    *out = rb;
    return CELL_OK;
  }
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *xc = NULL, *wc = NULL, *bc = NULL, *r = NULL;
  cell_status s = cell_tensor_new_contig(ct, 4, shape, &r);
  if (s == CELL_OK && cell_tensor_numel(r) > 0) {
    s = cell_conv_operand(x, ct, &xc);
    if (s == CELL_OK) s = cell_conv_operand(w, ct, &wc);
    if (s == CELL_OK && b) s = cell_conv_operand(b, ct, &bc);
    if (s == CELL_OK) s = conv_forward(how, &g, ct, xc, wc, bc, r);
  }
  cell_release4(s, xc, wc, bc, NULL);
  if (s == CELL_OK && ct != x->dtype) {
    cell_tensor *h = NULL;
    s = cell_k_astype(r, x->dtype, &h);
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

/* --- backward ---------------------------------------------------------------------------- */

/* gx, gw (zero-filled when wanted) and gb from gy, x, w, all contiguous in ct. */
static cell_status conv_backward(cell_conv_lowering how, const cell_conv_geom *g, cell_dtype ct,
                                 const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w,
                                 cell_tensor *gx, cell_tensor *gw, cell_tensor *gb) {
  const int es = cell_dtype_size(ct);
  const int64_t P = g->oh * g->ow, og = g->o / g->groups, cg = g->c / g->groups;
  const int64_t K = cg * g->kh * g->kw, rows = g->c * g->kh * g->kw;
  const char *yo = cell_tensor_base(gy), *xo = cell_tensor_base(x), *wo = cell_tensor_base(w);
  char *gxo = gx ? cell_tensor_base(gx) : NULL, *gwo = gw ? cell_tensor_base(gw) : NULL;
  if (gb) cell_conv_bias_grad(ct, yo, g->n, g->o, P, cell_tensor_base(gb));
  if ((!gx && !gw) || K == 0 || g->n == 0 || g->o == 0) return CELL_OK;
  if (use_direct(how, g)) return cell_conv_direct_backward(g, ct, yo, xo, wo, gxo, gwo);
  const int64_t nbmax = chunk_samples(g);
  char *cols = cell_conv_scratch(rows * nbmax * P, es);
  char *m = nbmax > 1 ? cell_conv_scratch(g->o * nbmax * P, es) : NULL;
  char *tmp = gw && g->n > nbmax ? cell_conv_scratch(g->o * K, es) : NULL;
  cell_status s = CELL_OK;
  if (!cols || (nbmax > 1 && !m) || (gw && g->n > nbmax && !tmp)) s = oom();
  for (int64_t n0 = 0; n0 < g->n && s == CELL_OK; n0 += nbmax) {
    int64_t nb = g->n - n0 < nbmax ? g->n - n0 : nbmax, NP = nb * P;
    const char *gm = yo + (size_t)(n0 * g->o * P) * es; /* [O, NP]: one sample's block */
    if (nb > 1) {
      cell_conv_from_ncp((size_t)es, yo, g->o, P, n0, nb, m);
      gm = m;
    }
    if (gw) {
      DISPATCH(ct, im2col, g, (const void *)xo, n0, nb, (void *)cols);
      char *dst = n0 == 0 ? gwo : tmp;
      for (int64_t gi = 0; gi < g->groups && s == CELL_OK; gi++)
        s = cell_conv_gemm(ct, og, K, NP, gm + (size_t)(gi * og * NP) * es, NP, 1,
                           cols + (size_t)(gi * K * NP) * es, 1, NP, dst + (size_t)(gi * og * K) * es, K);
      if (s == CELL_OK && n0 > 0) cell_conv_add_to(ct, gwo, tmp, g->o * K);
    }
    if (gx && s == CELL_OK) {
      for (int64_t gi = 0; gi < g->groups && s == CELL_OK; gi++)
        s = cell_conv_gemm(ct, K, NP, og, wo + (size_t)(gi * og * K) * es, 1, K,
                           gm + (size_t)(gi * og * NP) * es, NP, 1, cols + (size_t)(gi * K * NP) * es, NP);
      if (s == CELL_OK) DISPATCH(ct, col2im, g, (const void *)cols, n0, nb, (void *)gxo);
    }
    if (s == CELL_OK) s = cell_check_interrupt();
  }
  cell_dealloc(cols);
  cell_dealloc(m);
  cell_dealloc(tmp);
  return s;
}

static cell_status zeros(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  return cell_tensor_full(dt, ndim, shape, 0, out);
}

cell_status cell_k_conv2d_backward(const cell_tensor *gy, const cell_tensor *x,
                                   const cell_tensor *w, const int64_t *stride,
                                   const int64_t *padding, const int64_t *dilation,
                                   int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                   cell_tensor **gb) {
  return cell_k_conv2d_backward_lowered(CELL_CONV_AUTO, gy, x, w, stride, padding, dilation,
                                        groups, gx, gw, gb);
}

cell_status cell_cpu_conv2d_backward_lowered(cell_conv_lowering how, const cell_tensor *gy,
                                           const cell_tensor *x, const cell_tensor *w,
                                           const int64_t *stride, const int64_t *padding,
                                           const int64_t *dilation, int64_t groups,
                                           cell_tensor **gx, cell_tensor **gw, cell_tensor **gb) {
  cell_conv_geom g;
  CELL_TRY(cell_k_conv2d_geom(x, w, NULL, stride, padding, dilation, groups, &g));
  int64_t yshape[4] = {g.n, g.o, g.oh, g.ow};
  if (!gy || !cell_shape_equal(gy->ndim, gy->shape, 4, yshape)) {
    char s1[160], s2[160];
    return cell_error(CELL_ERR_VALUE, "conv2d backward: the output gradient has shape %s, not %s",
                      gy ? cell_conv_shape_str(gy->ndim, gy->shape, s1, sizeof s1) : "NULL",
                      cell_conv_shape_str(4, yshape, s2, sizeof s2));
  }
  if (how == CELL_CONV_AUTO && gy->dtype == CELL_DTYPE_BF16 && cell_conv_bf16_ok(&g, x->dtype, w->dtype))
    return cell_conv_bf16_backward(&g, gy, x, w, gx, gw, gb); /* conv_bf16.c */
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *gyc = NULL, *xc = NULL, *wc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  cell_status s = cell_conv_operand(gy, ct, &gyc);
  if (s == CELL_OK && gw) s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK && gx) s = cell_conv_operand(w, ct, &wc);
  /* col2im adds into gx; the direct kernels write all of it */
  if (s == CELL_OK && gx)
    s = use_direct(how, &g) && g.o > 0 ? cell_tensor_new_contig(ct, 4, x->shape, &rx)
                                       : zeros(ct, 4, x->shape, &rx);
  if (s == CELL_OK && gw) s = zeros(ct, 4, w->shape, &rw);
  if (s == CELL_OK && gb) s = cell_tensor_new_contig(ct, 1, &g.o, &rb);
  if (s == CELL_OK) s = conv_backward(how, &g, ct, gyc, xc ? xc : x, wc ? wc : w, rx, rw, rb);
  cell_release4(s, gyc, xc, wc, NULL);
  if (s != CELL_OK) return cell_release4(s, rx, rw, rb, NULL);
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}
