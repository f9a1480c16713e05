/* norm.c - batch normalisation (per channel of {N, C, ...}) and layer
 * normalisation (per row of the trailing dimensions), forward and backward
 * (src/ops/nn.h).
 *
 * Statistics take two passes over the data (the mean, then the squared
 * deviations from it), so the variance keeps its precision when the mean is
 * large; the output is a third pass. Channels (batch_norm) and rows
 * (layer_norm) are independent and split over threads when the input is
 * large; the sums across rows for layer_norm's weight gradient run serially,
 * in row order, so no result depends on the thread count. */
#include "nn.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "norm_lowp.h"

#define CHUNK CELL_NN_CHUNK
/* layer_norm's weight and bias gradients (column sums) per element, in
 * copies' time: measured 3 (dx, dw, db against dx alone, 1 thread). */
#define LN_COST_SUMS 3

/* A new float64 tensor {n} (data uninitialised). */
static cell_status f64_vec(int64_t n, cell_tensor **out) {
  return cell_tensor_new_contig(CELL_DTYPE_F64, 1, &n, out);
}

static double *f64_data(cell_tensor *t) { return (double *)cell_tensor_base(t); }

static cell_status free_all(cell_status s, double **blocks, int n) {
  for (int i = 0; i < n; i++) cell_dealloc(blocks[i]);
  return s;
}

/* --- batch_norm ---------------------------------------------------------------------- */

typedef struct {
  int64_t n, c, inner, m; /* m = n * inner values per channel */
} bn_geom;

static bn_geom bn_geometry(const cell_tensor *x) {
  bn_geom g = {x->shape[0], x->shape[1], 1, 0};
  for (int d = 2; d < x->ndim; d++) g.inner *= x->shape[d];
  g.m = g.n * g.inner;
  return g;
}

/* A per-channel operand must be a float tensor {C}. */
static cell_status check_channel_param(const char *what, const cell_tensor *t,
                                       const cell_tensor *x) {
  if (!t) return CELL_OK;
  CELL_TRY(cell_nn_check_float("batch_norm", what, t));
  if (t->ndim != 1 || t->shape[0] != x->shape[1]) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_VALUE,
                      "batch_norm: %s of shape %s does not match the %lld channels of the input "
                      "of shape %s (expected [%lld])",
                      what, cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
                      (long long)x->shape[1], cell_shape_str(x->ndim, x->shape, b2, sizeof b2),
                      (long long)x->shape[1]);
  }
  return CELL_OK;
}

static cell_status bn_check(const cell_tensor *x, const cell_tensor *rm, const cell_tensor *rv,
                            const cell_tensor *w, const cell_tensor *b, int training,
                            double momentum, double eps) {
  CELL_TRY(cell_nn_check_float("batch_norm", "the input", x));
  if (!(momentum >= 0 && momentum <= 1))
    return cell_error(CELL_ERR_VALUE, "batch_norm: momentum must lie in [0, 1], got %g", momentum);
  if (!(eps >= 0))
    return cell_error(CELL_ERR_VALUE, "batch_norm: eps must be non-negative, got %g", eps);
  char buf[256];
  if (x->ndim < 2)
    return cell_error(CELL_ERR_VALUE,
                      "batch_norm: the input must have at least 2 dimensions {N, C, ...}, got "
                      "shape %s",
                      cell_shape_str(x->ndim, x->shape, buf, sizeof buf));
  CELL_TRY(check_channel_param("running_mean", rm, x));
  CELL_TRY(check_channel_param("running_var", rv, x));
  CELL_TRY(check_channel_param("weight", w, x));
  CELL_TRY(check_channel_param("bias", b, x));
  if (!training && (!rm || !rv))
    return cell_error(CELL_ERR_VALUE,
                      "batch_norm: running_mean and running_var are required when not training");
  bn_geom g = bn_geometry(x);
  if (training && g.m <= 1 && g.c > 0)
    return cell_error(CELL_ERR_VALUE,
                      "batch_norm: expected more than 1 value per channel when training, got an "
                      "input of shape %s",
                      cell_shape_str(x->ndim, x->shape, buf, sizeof buf));
  return CELL_OK;
}

/* Sum of (x - centre) (squared when sq) over one row of d elements. */
static double row_sum(cell_dtype dt, const char *row, int64_t d, double centre, int sq) {
  int64_t es = cell_dtype_size(dt);
  double buf[CHUNK], s = 0;
  for (int64_t i0 = 0; i0 < d; i0 += CHUNK) {
    int64_t k = d - i0 < CHUNK ? d - i0 : CHUNK;
    cell_load_run(dt, row + i0 * es, es, k, buf);
    if (sq) {
      CELL_NN_SIMD_SUM(s) for (int64_t i = 0; i < k; i++) s += (buf[i] - centre) * (buf[i] - centre);
    } else {
      CELL_NN_SIMD_SUM(s) for (int64_t i = 0; i < k; i++) s += buf[i] - centre;
    }
  }
  return s;
}

/* Sum of (x - centre) (or its square when sq) over channel c: its row in
 * each of the n samples. */
static double channel_sum(cell_dtype dt, const char *xb, const bn_geom *g, int64_t c,
                          double centre, int sq) {
  int64_t es = cell_dtype_size(dt);
  double s = 0;
  for (int64_t n = 0; n < g->n; n++)
    s += row_sum(dt, xb + (n * g->c + c) * g->inner * es, g->inner, centre, sq);
  return s;
}

/* Write a * x + b over channel c. */
static void channel_affine(cell_dtype dt, const char *xb, char *yb, const bn_geom *g, int64_t c,
                           double a, double b) {
  int64_t es = cell_dtype_size(dt);
  double buf[CHUNK];
  for (int64_t n = 0; n < g->n; n++) {
    int64_t off = (n * g->c + c) * g->inner * es;
    for (int64_t i0 = 0; i0 < g->inner; i0 += CHUNK) {
      int64_t k = g->inner - i0 < CHUNK ? g->inner - i0 : CHUNK;
      cell_load_run(dt, xb + off + i0 * es, es, k, buf);
      CELL_NN_SIMD for (int64_t i = 0; i < k; i++) buf[i] = a * buf[i] + b;
      cell_store_run(dt, yb + off + i0 * es, es, k, buf);
    }
  }
}

/* float32 operands (contiguous): the same sums and maps as above, on
 * explicit vectors that load 4 floats at a time as 4 doubles, so they
 * compute in double as the generic path does (same results to rounding)
 * without its conversion buffers. On x86-64 a second copy is compiled for
 * AVX2 + FMA and picked at load time (as conv.h's CONV_CLONES). */
#define BN_CLONES CELL_CLONES_V3
typedef float bn_v4f __attribute__((vector_size(16)));
typedef double bn_v4d __attribute__((vector_size(32)));

/* Macros, not functions: a 32-byte vector passed by value warns (-Wpsabi)
 * in the baseline copy. */
#define BN_LOAD4(p) __extension__({                 \
    bn_v4f bn_f_;                                 \
    memcpy(&bn_f_, (p), sizeof bn_f_);            \
    __builtin_convertvector(bn_f_, bn_v4d);       \
  })
#define BN_STORE4(p, v) do {                        \
    bn_v4f bn_s_ = __builtin_convertvector((v), bn_v4f); \
    memcpy((p), &bn_s_, sizeof bn_s_);            \
  } while (0)
#define BN_HSUM(v) (((v)[0] + (v)[1]) + ((v)[2] + (v)[3]))

/* Sum of (x - centre) (squared when sq) over n floats. */
BN_CLONES static double f32_sum(const float *x, int64_t n, double centre, int sq) {
  bn_v4d a0 = {0, 0, 0, 0}, a1 = a0, cv = a0 + centre;
  int64_t i = 0;
  if (sq)
    for (; i + 8 <= n; i += 8) {
      bn_v4d d0 = BN_LOAD4(x + i) - cv, d1 = BN_LOAD4(x + i + 4) - cv;
      a0 += d0 * d0;
      a1 += d1 * d1;
    }
  else
    for (; i + 8 <= n; i += 8) {
      a0 += BN_LOAD4(x + i) - cv;
      a1 += BN_LOAD4(x + i + 4) - cv;
    }
  double s = BN_HSUM(a0 + a1);
  for (; i < n; i++) s += sq ? (x[i] - centre) * (x[i] - centre) : x[i] - centre;
  return s;
}

/* y = a * x + b over n floats. */
BN_CLONES static void f32_affine(const float *x, float *y, int64_t n, double a, double b) {
  bn_v4d av = (bn_v4d){0, 0, 0, 0} + a, bv = (bn_v4d){0, 0, 0, 0} + b;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) BN_STORE4(y + i, av * BN_LOAD4(x + i) + bv);
  for (; i < n; i++) y[i] = (float)(a * x[i] + b);
}

/* sum(g) and sum(g (x - mu)) over n floats, added into *sg and *sgx. */
BN_CLONES static void f32_grad_sums(const float *g, const float *x, int64_t n, double mu,
                                    double *sg, double *sgx) {
  bn_v4d a0 = {0, 0, 0, 0}, a1 = a0, b0 = a0, b1 = a0, mv = a0 + mu;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    bn_v4d g0 = BN_LOAD4(g + i), g1 = BN_LOAD4(g + i + 4);
    a0 += g0;
    a1 += g1;
    b0 += g0 * (BN_LOAD4(x + i) - mv);
    b1 += g1 * (BN_LOAD4(x + i + 4) - mv);
  }
  double a = BN_HSUM(a0 + a1), b = BN_HSUM(b0 + b1);
  for (; i < n; i++) {
    a += g[i];
    b += g[i] * (x[i] - mu);
  }
  *sg += a;
  *sgx += b;
}

/* out = ka * g + kb * (x - mu) + kc over n floats. */
BN_CLONES static void f32_grad_x(const float *g, const float *x, float *out, int64_t n,
                                 double mu, double ka, double kb, double kc) {
  bn_v4d z = {0, 0, 0, 0}, kav = z + ka, kbv = z + kb, kcv = z + kc, mv = z + mu;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    BN_STORE4(out + i, kav * BN_LOAD4(g + i) + kbv * (BN_LOAD4(x + i) - mv) + kcv);
  for (; i < n; i++) out[i] = (float)(ka * g[i] + kb * (x[i] - mu) + kc);
}

/* Whether batch_norm's loops are worth threads: a lower bar than
 * CELL_PARALLEL_GRAIN, since OpenBLAS shares cell's OpenMP threads (see
 * BLAS_LIB in the Makefile) and a channel's passes cost more than an
 * elementwise op's: a CIFAR-size layer (32 x 16 x 32 x 32) splits. */
#define BN_PARALLEL_GRAIN ((int64_t)1 << 16)
static bool bn_parallel(const bn_geom *g) {
  return g->n * g->c > 1 && g->m * g->c >= BN_PARALLEL_GRAIN && cell_ctx()->num_threads > 1;
}

/* float32: each pass runs over the rows (n, c) of the input, split over
 * threads statically in row order, so a thread works on the same samples
 * as the convolution, ReLU and pooling around it (they split the batch the
 * same way) and finds them in its own core's cache: on two cores, reading a
 * layer's output that the other core wrote ran at about 0.6x the speed.
 * Per-row sums go to rs and are added per channel in sample order: the
 * order of the channel loop this replaces, so results do not change. */
static void bn_f32_forward(const bn_geom *g, const float *xf, float *yf, double *mv, double *vv,
                           const double *w, const double *b, int training, double eps,
                           double *rs, bool par) {
  const int64_t rows = g->n * g->c, C = g->c, inner = g->inner;
  if (training) {
    CELL_FOR(par, int64_t, r, rows, { rs[r] = f32_sum(xf + r * inner, inner, 0.0, 0); });
    for (int64_t c = 0; c < C; c++) {
      double s1 = 0;
      for (int64_t n = 0; n < g->n; n++) s1 += rs[n * C + c];
      mv[c] = g->m ? s1 / (double)g->m : NAN;
    }
    CELL_FOR(par, int64_t, r, rows, { rs[r] = f32_sum(xf + r * inner, inner, mv[r % C], 1); });
    for (int64_t c = 0; c < C; c++) {
      double s2 = 0;
      for (int64_t n = 0; n < g->n; n++) s2 += rs[n * C + c];
      vv[c] = g->m ? s2 / (double)g->m : NAN;
    }
  }
  CELL_FOR(par, int64_t, r, rows, {
    int64_t c = r % C;
    double is = 1.0 / sqrt(vv[c] + eps), a = is * w[c], sh = b[c] - mv[c] * is * w[c];
    f32_affine(xf + r * inner, yf + r * inner, inner, a, sh);
  });
}

/* The backward pass the same way; rs holds 2 * rows + 3 * C doubles. */
static void bn_f32_backward(const bn_geom *g, const float *gf, const float *xf, float *of,
                            const double *mv, const double *vv, const double *w, double eps,
                            int training, double *wv, double *bv, double *rs, bool par) {
  const int64_t rows = g->n * g->c, C = g->c, inner = g->inner;
  double *ka = rs + 2 * rows, *kb = ka + C, *kc = kb + C, m = (double)g->m;
  CELL_FOR(par, int64_t, r, rows, {
    double a = 0, bb = 0;
    f32_grad_sums(gf + r * inner, xf + r * inner, inner, mv[r % C], &a, &bb);
    rs[2 * r] = a;
    rs[2 * r + 1] = bb;
  });
  for (int64_t c = 0; c < C; c++) {
    double sg = 0, sgx = 0, is = 1.0 / sqrt(vv[c] + eps);
    for (int64_t n = 0; n < g->n; n++) {
      sg += rs[2 * (n * C + c)];
      sgx += rs[2 * (n * C + c) + 1];
    }
    if (wv) wv[c] = sgx * is;
    if (bv) bv[c] = sg;
    double k = w[c] * is;
    /* k (g - sg / m - xhat sum(g xhat) / m), xhat = (x - mu) invstd; k g when not training */
    ka[c] = k;
    kb[c] = training ? -k * is * is * sgx / m : 0.0;
    kc[c] = training ? -k * sg / m : 0.0;
  }
  if (of)
    CELL_FOR(par, int64_t, r, rows, {
      int64_t c = r % C;
      f32_grad_x(gf + r * inner, xf + r * inner, of + r * inner, inner, mv[c], ka[c], kb[c], kc[c]);
    });
}

/* running = momentum * running + (1 - momentum) * v * scale, in running's
 * dtype. */
static void blend_into(cell_tensor *running, const double *v, int64_t n, double momentum,
                       double scale) {
  int64_t es = cell_dtype_size(running->dtype), st = running->stride[0] * es;
  char *p = cell_tensor_base(running);
  for (int64_t c = 0; c < n; c++) {
    double r = cell_load_f64(running->dtype, p + c * st);
    cell_store_f64(running->dtype, p + c * st, momentum * r + (1.0 - momentum) * v[c] * scale);
  }
  cell_tensor_bump(running);
}

void cell_cpu_batch_norm_update(cell_tensor *running_mean, cell_tensor *running_var,
                              const cell_tensor *mean, const cell_tensor *var, int64_t count,
                              double momentum) {
  if (running_mean) blend_into(running_mean, f64_data((cell_tensor *)mean), mean->shape[0], momentum, 1.0);
  if (running_var)
    blend_into(running_var, f64_data((cell_tensor *)var), var->shape[0], momentum,
               (double)count / (double)(count - 1));
}

cell_status cell_cpu_batch_norm(const cell_tensor *x, cell_tensor *running_mean,
                              cell_tensor *running_var, const cell_tensor *weight,
                              const cell_tensor *bias, int training, double momentum, double eps,
                              int update, cell_tensor **out, cell_tensor **mean_out,
                              cell_tensor **var_out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "batch_norm: NULL argument");
  CELL_TRY(bn_check(x, running_mean, running_var, weight, bias, training, momentum, eps));
  bn_geom g = bn_geometry(x);
  double *blk[3] = {NULL, NULL, NULL}; /* weight, bias, float32's per-row sums */
  cell_tensor *xc = NULL, *y = NULL, *mean = NULL, *var = NULL;
  cell_status s = cell_nn_doubles("batch_norm", weight, g.c, 1.0, &blk[0]);
  if (s == CELL_OK) s = cell_nn_doubles("batch_norm", bias, g.c, 0.0, &blk[1]);
  int narrow = x->dtype == CELL_DTYPE_BF16 || x->dtype == CELL_DTYPE_F16; /* computed as float32 (bn_lowp.c) */
  if (s == CELL_OK && (x->dtype == CELL_DTYPE_F32 || narrow))
    s = cell_nn_doubles("batch_norm", NULL, g.n * g.c + 1, 0.0, &blk[2]);
  if (s == CELL_OK) s = cell_k_contiguous(x, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &y);
  if (s == CELL_OK && training) s = f64_vec(g.c, &mean);
  if (s == CELL_OK && training) s = f64_vec(g.c, &var);
  if (s == CELL_OK && !training) s = cell_k_astype(running_mean, CELL_DTYPE_F64, &mean);
  if (s == CELL_OK && !training) s = cell_k_astype(running_var, CELL_DTYPE_F64, &var);
  if (s != CELL_OK) {
    cell_release4(s, xc, y, mean, var);
    return free_all(s, blk, 3);
  }
  double *mv = f64_data(mean), *vv = f64_data(var);
  const double *w = blk[0], *b = blk[1];
  const char *xb = cell_tensor_base(xc);
  char *yb = cell_tensor_base(y);
  cell_dtype dt = x->dtype;
  if (dt == CELL_DTYPE_F32) {
    bn_f32_forward(&g, (const float *)(const void *)xb, (float *)(void *)yb, mv, vv, w, b, training,
                   eps, blk[2], bn_parallel(&g));
  } else if (narrow) {
    cell_bn_lowp_forward(dt, g.n, g.c, g.inner, (const uint16_t *)(const void *)xb, (uint16_t *)(void *)yb, mv, vv,
                         w, b, training, eps, blk[2], bn_parallel(&g));
  } else {
    CELL_FOR_DYNAMIC(bn_parallel(&g) && g.c > 1, int64_t, c, g.c, {
      if (training) {
        mv[c] = g.m ? channel_sum(dt, xb, &g, c, 0.0, 0) / (double)g.m : NAN;
        vv[c] = g.m ? channel_sum(dt, xb, &g, c, mv[c], 1) / (double)g.m : NAN;
      }
      double is = 1.0 / sqrt(vv[c] + eps);
      channel_affine(dt, xb, yb, &g, c, is * w[c], b[c] - mv[c] * is * w[c]);
    });
  }
  if (training && update) /* nothing can fail from here on */
    cell_k_batch_norm_update(running_mean, running_var, mean, var, g.m, momentum);
  cell_tensor_release(xc);
  free_all(CELL_OK, blk, 3);
  *out = y;
  if (mean_out) *mean_out = mean;
  else cell_tensor_release(mean);
  if (var_out) *var_out = var;
  else cell_tensor_release(var);
  return CELL_OK;
}

/* Over channel c: sum(g) and sum(g (x - mu)). */
static void channel_grad_sums(cell_dtype gdt, const char *gb, cell_dtype xdt, const char *xb,
                              const bn_geom *g, int64_t c, double mu, double *sg, double *sgx) {
  int64_t ge = cell_dtype_size(gdt), xe = cell_dtype_size(xdt);
  double gbuf[CHUNK], xbuf[CHUNK], a = 0, b = 0;
  for (int64_t n = 0; n < g->n; n++) {
    int64_t e = (n * g->c + c) * g->inner;
    for (int64_t i0 = 0; i0 < g->inner; i0 += CHUNK) {
      int64_t k = g->inner - i0 < CHUNK ? g->inner - i0 : CHUNK;
      cell_load_run(gdt, gb + (e + i0) * ge, ge, k, gbuf);
      cell_load_run(xdt, xb + (e + i0) * xe, xe, k, xbuf);
      CELL_NN_PRAGMA(omp simd reduction(+ : a, b))
      for (int64_t i = 0; i < k; i++) {
        a += gbuf[i];
        b += gbuf[i] * (xbuf[i] - mu);
      }
    }
  }
  *sg = a;
  *sgx = b;
}

/* gx = ga * g + gb * (x - mu) + gc over channel c. */
static void channel_grad_x(cell_dtype gdt, const char *gb, cell_dtype xdt, const char *xb,
                           char *ob, const bn_geom *g, int64_t c, double mu, double ka, double kb,
                           double kc) {
  int64_t ge = cell_dtype_size(gdt), xe = cell_dtype_size(xdt);
  double gbuf[CHUNK], xbuf[CHUNK];
  for (int64_t n = 0; n < g->n; n++) {
    int64_t e = (n * g->c + c) * g->inner;
    for (int64_t i0 = 0; i0 < g->inner; i0 += CHUNK) {
      int64_t k = g->inner - i0 < CHUNK ? g->inner - i0 : CHUNK;
      cell_load_run(gdt, gb + (e + i0) * ge, ge, k, gbuf);
      if (kb != 0) cell_load_run(xdt, xb + (e + i0) * xe, xe, k, xbuf);
      if (kb != 0) {
        CELL_NN_SIMD for (int64_t i = 0; i < k; i++) gbuf[i] = ka * gbuf[i] + kb * (xbuf[i] - mu) + kc;
      } else {
        CELL_NN_SIMD for (int64_t i = 0; i < k; i++) gbuf[i] = ka * gbuf[i] + kc;
      }
      cell_store_run(xdt, ob + (e + i0) * xe, xe, k, gbuf);
    }
  }
}

cell_status cell_cpu_batch_norm_backward(const cell_tensor *g, const cell_tensor *x,
                                       const cell_tensor *weight, const cell_tensor *mean,
                                       const cell_tensor *var, double eps, int training,
                                       cell_tensor **gx, cell_tensor **gw, cell_tensor **gb) {
  if (!g || !x || !mean || !var)
    return cell_error(CELL_ERR_VALUE, "batch_norm backward: NULL argument");
  if (!cell_shape_equal(g->ndim, g->shape, x->ndim, x->shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME,
                      "batch_norm backward: gradient of shape %s for an output of shape %s",
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  bn_geom geo = bn_geometry(x);
  double *w = NULL;
  cell_tensor *gc = NULL, *xc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  double *rs = NULL; /* float32's per-row sums and per-channel factors */
  cell_status s = cell_nn_doubles("batch_norm backward", weight, geo.c, 1.0, &w);
  int narrow = g->dtype == x->dtype && (x->dtype == CELL_DTYPE_BF16 || x->dtype == CELL_DTYPE_F16); /* bn_lowp.c */
  if (s == CELL_OK && ((g->dtype == CELL_DTYPE_F32 && x->dtype == CELL_DTYPE_F32) || narrow))
    s = cell_nn_doubles("batch_norm backward", NULL, 2 * geo.n * geo.c + 3 * geo.c + 1, 0.0, &rs);
  if (s == CELL_OK) s = cell_k_contiguous(g, &gc);
  if (s == CELL_OK) s = cell_k_contiguous(x, &xc);
  if (s == CELL_OK && gx) s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &rx);
  if (s == CELL_OK && gw) s = f64_vec(geo.c, &rw);
  if (s == CELL_OK && gb) s = f64_vec(geo.c, &rb);
  if (s == CELL_OK) {
    const double *mv = f64_data((cell_tensor *)mean), *vv = f64_data((cell_tensor *)var);
    const char *gbase = cell_tensor_base(gc), *xbase = cell_tensor_base(xc);
    char *obase = rx ? cell_tensor_base(rx) : NULL;
    double *wv = rw ? f64_data(rw) : NULL, *bv = rb ? f64_data(rb) : NULL;
    cell_dtype gdt = g->dtype, xdt = x->dtype;
    double m = (double)geo.m;
    int f32 = gdt == CELL_DTYPE_F32 && xdt == CELL_DTYPE_F32;
    const float *gf = (const float *)(const void *)gbase, *xf = (const float *)(const void *)xbase;
    float *of = (float *)(void *)obase;
    if (f32)
      bn_f32_backward(&geo, gf, xf, of, mv, vv, w, eps, training, wv, bv, rs, bn_parallel(&geo));
    else if (narrow)
      cell_bn_lowp_backward(xdt, geo.n, geo.c, geo.inner, (const uint16_t *)(const void *)gbase,
                            (const uint16_t *)(const void *)xbase, (uint16_t *)(void *)obase, mv, vv, w, eps, training,
                            wv, bv, rs, bn_parallel(&geo));
    else
      CELL_FOR_DYNAMIC(bn_parallel(&geo) && geo.c > 1, int64_t, c, geo.c, {
        double sg = 0, sgx = 0, is = 1.0 / sqrt(vv[c] + eps);
        channel_grad_sums(gdt, gbase, xdt, xbase, &geo, c, mv[c], &sg, &sgx);
        if (wv) wv[c] = sgx * is;
        if (bv) bv[c] = sg;
        if (obase) {
          double k = w[c] * is;
          /* k (g - sg / m - xhat sum(g xhat) / m), xhat = (x - mu) invstd; k g when not training */
          double kb = training ? -k * is * is * sgx / m : 0.0, kc = training ? -k * sg / m : 0.0;
          channel_grad_x(gdt, gbase, xdt, xbase, obase, &geo, c, mv[c], k, kb, kc);
        }
      });
  }
  cell_dealloc(w);
  cell_dealloc(rs);
  cell_release4(CELL_OK, gc, xc, NULL, NULL);
  if (s != CELL_OK) return cell_release4(s, rx, rw, rb, NULL);
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}

/* float32 rows (contiguous): layer_norm's passes on BN_LOAD4's vectors,
 * in double as the generic path computes them (same results to rounding)
 * without its conversion buffers: the step's layer norms cost about a
 * sixth of the generic path's instructions (a tiny GPT, callgrind). */

/* y = (x - mu) rs w + b over one row of d floats. */
BN_CLONES static void ln_f32_affine(const float *x, float *y, int64_t d, double mu, double rs,
                                    const double *w, const double *b) {
  bn_v4d z = {0, 0, 0, 0}, mv = z + mu, rv = z + rs;
  int64_t i = 0;
  for (; i + 4 <= d; i += 4) {
    bn_v4d wv, bv;
    memcpy(&wv, w + i, sizeof wv);
    memcpy(&bv, b + i, sizeof bv);
    BN_STORE4(y + i, (BN_LOAD4(x + i) - mv) * rv * wv + bv);
  }
  for (; i < d; i++) y[i] = (float)((x[i] - mu) * rs * w[i] + b[i]);
}

/* One row of the input's gradient: rs (g w - s1 / d - xhat s2 / d) with
 * s1 = sum(g w), s2 = sum(g w xhat), xhat = (x - mu) rs. */
BN_CLONES static void ln_f32_grad_row(const float *g, const float *x, float *out, int64_t d,
                                      double mu, double rs, const double *w) {
  bn_v4d z = {0, 0, 0, 0}, a0 = z, a1 = z, b0 = z, b1 = z, mv = z + mu, rv = z + rs;
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    bn_v4d w0, w1;
    memcpy(&w0, w + i, sizeof w0);
    memcpy(&w1, w + i + 4, sizeof w1);
    bn_v4d g0 = BN_LOAD4(g + i) * w0, g1 = BN_LOAD4(g + i + 4) * w1;
    a0 += g0;
    a1 += g1;
    b0 += g0 * ((BN_LOAD4(x + i) - mv) * rv);
    b1 += g1 * ((BN_LOAD4(x + i + 4) - mv) * rv);
  }
  double s1 = BN_HSUM(a0 + a1), s2 = BN_HSUM(b0 + b1), dd = (double)d;
  for (; i < d; i++) {
    double gh = g[i] * w[i];
    s1 += gh;
    s2 += gh * (x[i] - mu) * rs;
  }
  double c1 = s1 / dd, c2 = s2 / dd;
  bn_v4d c1v = z + c1, c2v = z + c2;
  for (i = 0; i + 4 <= d; i += 4) {
    bn_v4d wv;
    memcpy(&wv, w + i, sizeof wv);
    bn_v4d xh = (BN_LOAD4(x + i) - mv) * rv;
    BN_STORE4(out + i, rv * (BN_LOAD4(g + i) * wv - c1v - xh * c2v));
  }
  for (; i < d; i++) out[i] = (float)(rs * (g[i] * w[i] - c1 - (x[i] - mu) * rs * c2));
}

/* Row g, x of the weight (wv) and bias (bv) gradients' sums added in
 * (either may be NULL). */
BN_CLONES static void ln_f32_grad_acc(const float *g, const float *x, int64_t d, double mu, double rs, double *wv,
                                      double *bv) {
  bn_v4d z = {0, 0, 0, 0}, mv = z + mu, rv = z + rs;
  int64_t j = 0;
  for (; j + 4 <= d; j += 4) {
    bn_v4d gv = BN_LOAD4(g + j), acc;
    if (bv) {
      memcpy(&acc, bv + j, sizeof acc);
      acc += gv;
      memcpy(bv + j, &acc, sizeof acc);
    }
    if (wv) {
      memcpy(&acc, wv + j, sizeof acc);
      acc += gv * (BN_LOAD4(x + j) - mv) * rv;
      memcpy(wv + j, &acc, sizeof acc);
    }
  }
  for (; j < d; j++) {
    if (bv) bv[j] += g[j];
    if (wv) wv[j] += g[j] * (x[j] - mu) * rs;
  }
}

/* Columns c0 .. c1 - 1 of the weight (wv) and bias (bv) gradients summed
 * over rows 0 .. rows - 1 in row order (either may be NULL). */
static void ln_f32_grad_cols(const float *g, const float *x, int64_t d, int64_t rows, int64_t c0, int64_t c1,
                             const double *mean, const double *rstd, double *wv, double *bv) {
  for (int64_t r = 0; r < rows; r++)
    ln_f32_grad_acc(g + r * d + c0, x + r * d + c0, c1 - c0, mean[r], rstd[r], wv ? wv + c0 : NULL,
                    bv ? bv + c0 : NULL);
}

/* --- layer_norm ------------------------------------------------------------------------ */

static cell_status ln_check(const cell_tensor *x, int k, const cell_tensor *w,
                            const cell_tensor *b, double eps) {
  CELL_TRY(cell_nn_check_float("layer_norm", "the input", x));
  if (!(eps >= 0))
    return cell_error(CELL_ERR_VALUE, "layer_norm: eps must be non-negative, got %g", eps);
  char b1[256], b2[256], b3[256];
  if (k < 1 || k > x->ndim)
    return cell_error(CELL_ERR_VALUE,
                      "layer_norm: normalized_ndim must lie in 1..%d for an input of shape %s, "
                      "got %d",
                      x->ndim, cell_shape_str(x->ndim, x->shape, b1, sizeof b1), k);
  const cell_tensor *ps[2] = {w, b};
  const char *names[2] = {"weight", "bias"};
  const int64_t *trail = x->shape + x->ndim - k;
  for (int i = 0; i < 2; i++) {
    if (!ps[i]) continue;
    CELL_TRY(cell_nn_check_float("layer_norm", names[i], ps[i]));
    if (!cell_shape_equal(ps[i]->ndim, ps[i]->shape, k, trail))
      return cell_error(CELL_ERR_VALUE,
                        "layer_norm: %s of shape %s does not match the normalized shape %s of "
                        "the input of shape %s",
                        names[i], cell_shape_str(ps[i]->ndim, ps[i]->shape, b1, sizeof b1),
                        cell_shape_str(k, trail, b2, sizeof b2),
                        cell_shape_str(x->ndim, x->shape, b3, sizeof b3));
  }
  return CELL_OK;
}

cell_status cell_cpu_layer_norm(const cell_tensor *x, int k, const cell_tensor *weight,
                              const cell_tensor *bias, double eps, cell_tensor **out,
                              cell_tensor **mean_out, cell_tensor **rstd_out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "layer_norm: NULL argument");
  CELL_TRY(ln_check(x, k, weight, bias, eps));
  int64_t d = cell_shape_numel(k, x->shape + x->ndim - k);
  int64_t rows = cell_shape_numel(x->ndim - k, x->shape);
  double *blk[2] = {NULL, NULL};
  cell_tensor *xc = NULL, *y = NULL, *mean = NULL, *rstd = NULL;
  cell_status s = cell_nn_doubles("layer_norm", weight, d, 1.0, &blk[0]);
  if (s == CELL_OK) s = cell_nn_doubles("layer_norm", bias, d, 0.0, &blk[1]);
  if (s == CELL_OK) s = cell_k_contiguous(x, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &y);
  if (s == CELL_OK) s = f64_vec(rows, &mean);
  if (s == CELL_OK) s = f64_vec(rows, &rstd);
  if (s != CELL_OK) {
    cell_release4(s, xc, y, mean, rstd);
    return free_all(s, blk, 2);
  }
  const double *w = blk[0], *b = blk[1];
  double *mv = f64_data(mean), *rv = f64_data(rstd);
  cell_dtype dt = x->dtype;
  int64_t es = cell_dtype_size(dt);
  const char *xb = cell_tensor_base(xc);
  char *yb = cell_tensor_base(y);
  if (dt == CELL_DTYPE_BF16) /* float32 arithmetic (norm_lowp.c) */
    s = cell_ln_bf16_forward((const uint16_t *)(const void *)xb, (uint16_t *)(void *)yb, rows, d, w, b, eps, mv, rv);
  else if (dt == CELL_DTYPE_F32) CELL_FOR(cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM), int64_t, r, rows, {
    const float *row = (const float *)(const void *)xb + r * d;
    double mu = d ? f32_sum(row, d, 0.0, 0) / (double)d : NAN;
    double rs = 1.0 / sqrt((d ? f32_sum(row, d, mu, 1) / (double)d : NAN) + eps);
    mv[r] = mu;
    rv[r] = rs;
    ln_f32_affine(row, (float *)(void *)yb + r * d, d, mu, rs, w, b);
  });
  else CELL_FOR(cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM), int64_t, r, rows, {
    const char *row = xb + r * d * es;
    double mu = d ? row_sum(dt, row, d, 0.0, 0) / (double)d : NAN;
    double rs = 1.0 / sqrt((d ? row_sum(dt, row, d, mu, 1) / (double)d : NAN) + eps);
    mv[r] = mu;
    rv[r] = rs;
    double buf[CHUNK];
    for (int64_t i0 = 0; i0 < d; i0 += CHUNK) {
      int64_t n = d - i0 < CHUNK ? d - i0 : CHUNK;
      cell_load_run(dt, row + i0 * es, es, n, buf);
      CELL_NN_SIMD for (int64_t i = 0; i < n; i++) buf[i] = (buf[i] - mu) * rs * w[i0 + i] + b[i0 + i];
      cell_store_run(dt, yb + (r * d + i0) * es, es, n, buf);
    }
  });
  cell_tensor_release(xc);
  free_all(CELL_OK, blk, 2);
  if (s != CELL_OK) return cell_release4(s, y, mean, rstd, NULL);
  *out = y;
  if (mean_out) *mean_out = mean;
  else cell_tensor_release(mean);
  if (rstd_out) *rstd_out = rstd;
  else cell_tensor_release(rstd);
  return CELL_OK;
}

/* What layer_norm's backward shares between its row and column loops. */
typedef struct {
  const char *gbase, *xbase;
  char *obase;
  cell_dtype gdt, xdt;
  int64_t ge, xe, d, rows, bw;
  const double *mv, *rv, *w;
  double *wv, *bv;
} ln_bwd;

/* Row r of the input's gradient. */
static void ln_bwd_row(const ln_bwd *c, int64_t r) {
  int64_t d = c->d, ge = c->ge, xe = c->xe;
  if (c->gdt == CELL_DTYPE_F32 && c->xdt == CELL_DTYPE_F32) {
    ln_f32_grad_row((const float *)(const void *)c->gbase + r * d, (const float *)(const void *)c->xbase + r * d,
                    (float *)(void *)c->obase + r * d, d, c->mv[r], c->rv[r], c->w);
    return;
  }
  cell_dtype gdt = c->gdt, xdt = c->xdt;
  const double *w = c->w;
  double dd = (double)d;
  const char *grow = c->gbase + r * d * ge, *xrow = c->xbase + r * d * xe;
  double gbuf[CHUNK], xbuf[CHUNK], s1 = 0, s2 = 0, mu = c->mv[r], rs = c->rv[r];
  for (int64_t i0 = 0; i0 < d; i0 += CHUNK) { /* sum(g w), sum(g w xhat) */
    int64_t n = d - i0 < CHUNK ? d - i0 : CHUNK;
    cell_load_run(gdt, grow + i0 * ge, ge, n, gbuf);
    cell_load_run(xdt, xrow + i0 * xe, xe, n, xbuf);
    CELL_NN_PRAGMA(omp simd reduction(+ : s1, s2))
    for (int64_t i = 0; i < n; i++) {
      double gh = gbuf[i] * w[i0 + i];
      s1 += gh;
      s2 += gh * (xbuf[i] - mu) * rs;
    }
  }
  for (int64_t i0 = 0; i0 < d; i0 += CHUNK) {
    int64_t n = d - i0 < CHUNK ? d - i0 : CHUNK;
    cell_load_run(gdt, grow + i0 * ge, ge, n, gbuf);
    cell_load_run(xdt, xrow + i0 * xe, xe, n, xbuf);
    CELL_NN_SIMD for (int64_t i = 0; i < n; i++) {
      double xh = (xbuf[i] - mu) * rs;
      gbuf[i] = rs * (gbuf[i] * w[i0 + i] - s1 / dd - xh * s2 / dd);
    }
    cell_store_run(xdt, c->obase + (r * d + i0) * xe, xe, n, gbuf);
  }
}

/* float32 rows in LN_CHUNKS fixed runs (how many depends on the rows
 * alone, never on the threads): run q's rows of the input's gradient, and
 * their sums for the weight and bias gradients into run q's own partial
 * sums (pw, pb: d doubles a run), while the row is in cache. The
 * gradients are then the partial sums added in run order: the same bits
 * at any thread count, and g and x are read once instead of twice (the
 * column pass read them again, and at 2 threads each thread read every
 * row for its half of the columns: a tiny GPT's layer norm backward took
 * 0.8x its 1-thread time). */
#define LN_RUN_ROWS 32 /* rows a run at least */
#define LN_RUNS_MAX 32 /* runs at most */
static int64_t ln_runs(int64_t rows) {
  int64_t q = (rows + LN_RUN_ROWS - 1) / LN_RUN_ROWS;
  return q < 1 ? 1 : q > LN_RUNS_MAX ? LN_RUNS_MAX : q;
}

static void ln_bwd_run(const ln_bwd *c, int64_t q, int64_t runs, double *pw, double *pb) {
  int64_t d = c->d, per = (c->rows + runs - 1) / runs, r0 = q * per, r1 = r0 + per < c->rows ? r0 + per : c->rows;
  const float *g = (const float *)(const void *)c->gbase, *x = (const float *)(const void *)c->xbase;
  double *w = pw ? pw + q * d : NULL, *b = pb ? pb + q * d : NULL;
  if (w) memset(w, 0, sizeof(double) * (size_t)d);
  if (b) memset(b, 0, sizeof(double) * (size_t)d);
  for (int64_t r = r0; r < r1; r++) {
    if (c->obase) ln_bwd_row(c, r);
    ln_f32_grad_acc(g + r * d, x + r * d, d, c->mv[r], c->rv[r], w, b);
  }
}

/* The float32 backward in runs (above); false (nothing done) when the
 * partial sums cannot be had. */
static bool ln_bwd_runs(const ln_bwd *c) {
  int64_t d = c->d, runs = ln_runs(c->rows);
  double *part = cell_alloc(sizeof(double) * (size_t)(2 * runs * d));
  if (!part) return false;
  double *pw = c->wv ? part : NULL, *pb = c->bv ? part + runs * d : NULL;
  int par = runs > 1 && cell_nn_parallel_cost(c->rows, c->rows * d, CELL_NN_COST_LAYER_NORM);
  CELL_FOR(par, int64_t, q, runs, { ln_bwd_run(c, q, runs, pw, pb); });
  for (int64_t q = 0; q < runs; q++) {
    if (pw)
      for (int64_t j = 0; j < d; j++) c->wv[j] += pw[q * d + j];
    if (pb)
      for (int64_t j = 0; j < d; j++) c->bv[j] += pb[q * d + j];
  }
  cell_dealloc(part);
  return true;
}

/* Block q of columns of the weight and bias gradients: each column summed
 * over every row in row order, as one thread would. */
static void ln_bwd_cols(const ln_bwd *c, int64_t q) {
  int64_t d = c->d, ge = c->ge, xe = c->xe, c0 = q * c->bw, c1 = c0 + c->bw < d ? c0 + c->bw : d;
  double gbuf[CHUNK], xbuf[CHUNK], *wv = c->wv, *bv = c->bv;
  if (c->gdt == CELL_DTYPE_F32 && c->xdt == CELL_DTYPE_F32) {
    ln_f32_grad_cols((const float *)(const void *)c->gbase, (const float *)(const void *)c->xbase, d, c->rows, c0, c1,
                     c->mv, c->rv, wv, bv);
    return;
  }
  for (int64_t r = 0; r < c->rows; r++) {
    const char *grow = c->gbase + r * d * ge, *xrow = c->xbase + r * d * xe;
    for (int64_t i0 = c0; i0 < c1; i0 += CHUNK) {
      int64_t n = c1 - i0 < CHUNK ? c1 - i0 : CHUNK;
      cell_load_run(c->gdt, grow + i0 * ge, ge, n, gbuf);
      if (bv) {
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) bv[i0 + i] += gbuf[i];
      }
      if (wv) {
        cell_load_run(c->xdt, xrow + i0 * xe, xe, n, xbuf);
        double mu = c->mv[r], rs = c->rv[r];
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) wv[i0 + i] += gbuf[i] * (xbuf[i] - mu) * rs;
      }
    }
  }
}

cell_status cell_cpu_layer_norm_backward(const cell_tensor *g, const cell_tensor *x, int k,
                                       const cell_tensor *weight, const cell_tensor *mean,
                                       const cell_tensor *rstd, cell_tensor **gx, cell_tensor **gw,
                                       cell_tensor **gb) {
  if (!g || !x || !mean || !rstd)
    return cell_error(CELL_ERR_VALUE, "layer_norm backward: NULL argument");
  if (!cell_shape_equal(g->ndim, g->shape, x->ndim, x->shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME,
                      "layer_norm backward: gradient of shape %s for an output of shape %s",
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  const int64_t *trail = x->shape + x->ndim - k;
  int64_t d = cell_shape_numel(k, trail), rows = cell_shape_numel(x->ndim - k, x->shape);
  double *w = NULL;
  cell_tensor *gc = NULL, *xc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  cell_status s = cell_nn_doubles("layer_norm backward", weight, d, 1.0, &w);
  if (s == CELL_OK) s = cell_k_contiguous(g, &gc);
  if (s == CELL_OK) s = cell_k_contiguous(x, &xc);
  if (s == CELL_OK && gx) s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &rx);
  if (s == CELL_OK && gw) s = cell_tensor_full(CELL_DTYPE_F64, k, trail, 0.0, &rw);
  if (s == CELL_OK && gb) s = cell_tensor_full(CELL_DTYPE_F64, k, trail, 0.0, &rb);
  if (s == CELL_OK) {
    cell_dtype gdt = g->dtype, xdt = x->dtype;
    if (gdt == CELL_DTYPE_BF16 && xdt == CELL_DTYPE_BF16) /* float32 arithmetic (norm_lowp.c) */
      s = cell_ln_bf16_backward((const uint16_t *)(const void *)cell_tensor_base(gc),
                                (const uint16_t *)(const void *)cell_tensor_base(xc),
                                rx ? (uint16_t *)cell_tensor_base(rx) : NULL, rows, d, w,
                                f64_data((cell_tensor *)mean), f64_data((cell_tensor *)rstd),
                                rw ? f64_data(rw) : NULL, rb ? f64_data(rb) : NULL);
    else {
      ln_bwd c = {cell_tensor_base(gc), cell_tensor_base(xc), rx ? cell_tensor_base(rx) : NULL, g->dtype, x->dtype,
                  cell_dtype_size(g->dtype), cell_dtype_size(x->dtype), d, rows, 8,
                  f64_data((cell_tensor *)mean), f64_data((cell_tensor *)rstd), w,
                  rw ? f64_data(rw) : NULL, rb ? f64_data(rb) : NULL};
      int prows = rx && cell_nn_parallel_cost(rows, rows * d, CELL_NN_COST_LAYER_NORM);
      bool done = (rw || rb) && d > 0 && rows > 0 && gdt == CELL_DTYPE_F32 && xdt == CELL_DTYPE_F32 &&
                  ln_bwd_runs(&c);
      /* The weight and bias gradients: threads take ranges of columns (whole
       * multiples of 8). */
      int64_t nblk = (rw || rb) && cell_nn_parallel_cost(d, rows * d, LN_COST_SUMS) ? cell_ctx()->num_threads : 1;
      c.bw = ((d + nblk - 1) / nblk + 7) / 8 * 8;
      if (c.bw < 8) c.bw = 8; /* d = 0: no blocks */
      nblk = (rw || rb) ? (d + c.bw - 1) / c.bw : 0;
      if (done) {
        /* rows and sums in one pass (ln_bwd_runs) */
      } else if (prows && nblk > 1) {
        /* Both split: one region, the column blocks taken after the rows with
         * no barrier between (they read only g, x and the statistics), so
         * the backward forks once instead of twice. */
        _Pragma("omp parallel")
        {
          _Pragma("omp for schedule(static) nowait")
          for (int64_t r = 0; r < rows; r++) ln_bwd_row(&c, r);
          _Pragma("omp for schedule(static) nowait")
          for (int64_t q = 0; q < nblk; q++) ln_bwd_cols(&c, q);
        }
      } else {
        if (rx) CELL_FOR(prows, int64_t, r, rows, { ln_bwd_row(&c, r); });
        CELL_FOR(nblk > 1, int64_t, q, nblk, { ln_bwd_cols(&c, q); });
      }
    }
  }
  cell_dealloc(w);
  cell_release4(CELL_OK, gc, xc, NULL, NULL);
  if (s != CELL_OK) return cell_release4(s, rx, rw, rb, NULL);
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}
