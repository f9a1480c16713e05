/* gpu_cnn.c - the GPU table's rows for the layers around a convolution:
 * batch_norm (training: each channel's mean and biased variance in double,
 * saved as float64 {C} for the backward, as the CPU's; inference: the
 * running statistics), its backward, the running-stats update
 * (batch_norm_update: running = momentum running + (1 - momentum) stat,
 * the variance unbiased), and max_pool2d / avg_pool2d with their backward
 * passes (pool.c's windows: clipped to the input, ceil_mode, dilation for
 * max, count_include_pad for average; max keeps each maximum's position,
 * which its backward scatters to). float32 and float64, any layout (a
 * strided input is gathered first); the kernels are gpu_cnn.cu. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int f32_or_f64(cell_dtype dt) { return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64; }

static void release_all(cell_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i]) cell_tensor_release(ts[i]);
}

/* --- batch norm -------------------------------------------------------------------------- */

typedef struct {
  int64_t n, c, inner, m;
} bn_geom;

static bn_geom bn_geometry(const cell_tensor *x) {
  bn_geom g = {x->shape[0], x->shape[1], 1, 0};
  for (int d = 2; d < x->ndim; d++) g.inner *= x->shape[d];
  g.m = g.n * g.inner;
  return g;
}

static cell_status check_channel(const char *what, const cell_tensor *t, const cell_tensor *x) {
  if (!t) return CELL_OK;
  if (t->dtype != CELL_DTYPE_F32 && t->dtype != CELL_DTYPE_F64 && t->dtype != CELL_DTYPE_F16 &&
      t->dtype != CELL_DTYPE_BF16)
    return cell_error(CELL_ERR_TYPE, "batch_norm: %s must be a floating-point tensor, got %s", what,
                      cell_dtype_name(t->dtype));
  if (t->ndim != 1 || t->shape[0] != x->shape[1]) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_VALUE,
                      "batch_norm: %s of shape %s does not match the %lld channels of the input of shape %s "
                      "(expected [%lld])",
                      what, cell_shape_str(t->ndim, t->shape, b1, sizeof b1), (long long)x->shape[1], cell_shape_str(x->ndim, x->shape, b2, sizeof b2),
                      (long long)x->shape[1]);
  }
  return CELL_OK;
}

/* norm.c's checks, with its messages. */
static cell_status bn_check(const cell_tensor *x, const cell_tensor *rm, const cell_tensor *rv, const cell_tensor *w,
                            const cell_tensor *b, int training, double momentum, double eps) {
  char buf[256];
  if (!(momentum >= 0 && momentum <= 1))
    return cell_error(CELL_ERR_VALUE, "batch_norm: momentum must lie in [0, 1], got %g", momentum);
  if (!(eps >= 0)) return cell_error(CELL_ERR_VALUE, "batch_norm: eps must be non-negative, got %g", eps);
  if (x->ndim < 2)
    return cell_error(CELL_ERR_VALUE, "batch_norm: the input must have at least 2 dimensions {N, C, ...}, got shape %s",
                      cell_shape_str(x->ndim, x->shape, buf, sizeof buf));
  CELL_TRY(check_channel("running_mean", rm, x));
  CELL_TRY(check_channel("running_var", rv, x));
  CELL_TRY(check_channel("weight", w, x));
  CELL_TRY(check_channel("bias", b, x));
  if (!training && (!rm || !rv))
    return cell_error(CELL_ERR_VALUE, "batch_norm: running_mean and running_var are required when not training");
  bn_geom g = bn_geometry(x);
  if (training && g.m <= 1 && g.c > 0)
    return cell_error(CELL_ERR_VALUE,
                      "batch_norm: expected more than 1 value per channel when training, got an input of shape %s",
                      cell_shape_str(x->ndim, x->shape, buf, sizeof buf));
  return CELL_OK;
}

static cell_status as_f64(const cell_tensor *t, cell_tensor **out) {
  *out = NULL;
  return t ? gpu_contig_as(t, CELL_DTYPE_F64, out) : CELL_OK;
}

/* One running tensor blended with v (float64 {n}, contiguous). */
static cell_status blend(cell_tensor *running, const cell_tensor *v, double momentum, double scale) {
  if (!running) return CELL_OK;
  if (!f32_or_f64(running->dtype) || running->ndim != 1 || v->ndim != 1 || v->shape[0] != running->shape[0] ||
      v->dtype != CELL_DTYPE_F64)
    return cell_error(CELL_ERR_NOTIMPL, "batch_norm's running-stats update of %s is not supported on device GPU",
                      cell_dtype_name(running->dtype));
  cell_tensor *vc;
  CELL_TRY(gpu_contig_as(v, CELL_DTYPE_F64, &vc));
  cell_tensor_bump(running);
  cell_status s = gpu_launch(gpuk_bn_blend(gpu_ctx_of(running)->stream, (int)running->dtype, gpu_data(running),
                                       running->stride[0], gpu_data(vc), running->shape[0], momentum, scale),
                         "batch_norm update");
  cell_tensor_release(vc);
  return s;
}

/* The row has no status: a failure (a launch, an unsupported dtype, which
 * supports_op declines first) leaves the statistics as they were. */
void gpu_batch_norm_update(cell_tensor *running_mean, cell_tensor *running_var, const cell_tensor *mean,
                           const cell_tensor *var, int64_t count, double momentum) {
  if (mean) (void)blend(running_mean, mean, momentum, 1.0);
  if (var) (void)blend(running_var, var, momentum, (double)count / (double)(count - 1));
}

cell_status gpu_batch_norm(const cell_tensor *x, cell_tensor *running_mean, cell_tensor *running_var,
                           const cell_tensor *weight, const cell_tensor *bias, int training, double momentum,
                           double eps, int update, cell_tensor **out, cell_tensor **mean_out, cell_tensor **var_out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "batch_norm: NULL argument");
  if (!f32_or_f64(x->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "batch_norm of %s is not supported on device GPU", cell_dtype_name(x->dtype));
  CELL_TRY(bn_check(x, running_mean, running_var, weight, bias, training, momentum, eps));
  bn_geom g = bn_geometry(x);
  gpu_ctx *gc = gpu_ctx_of(x);
  cell_tensor *t[6] = {NULL}; /* xc, w, b, y, mean, var */
  cell_status s = gpu_contig_as(x, x->dtype, &t[0]);
  if (s == CELL_OK) s = as_f64(weight, &t[1]);
  if (s == CELL_OK) s = as_f64(bias, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(gc, x->dtype, x->ndim, x->shape, &t[3]);
  if (s == CELL_OK && training) s = gpu_new_tensor(gc, CELL_DTYPE_F64, 1, &g.c, &t[4]);
  if (s == CELL_OK && training) s = gpu_new_tensor(gc, CELL_DTYPE_F64, 1, &g.c, &t[5]);
  if (s == CELL_OK && !training) s = gpu_astype(running_mean, CELL_DTYPE_F64, &t[4]);
  if (s == CELL_OK && !training) s = gpu_astype(running_var, CELL_DTYPE_F64, &t[5]);
  if (s == CELL_OK && training)
    s = gpu_launch(gpuk_bn_stats(gc->stream, (int)x->dtype, gpu_data(t[0]), gpu_data(t[4]), gpu_data(t[5]), g.n, g.c,
                             g.inner),
               "batch_norm");
  if (s == CELL_OK)
    s = gpu_launch(gpuk_bn_apply(gc->stream, (int)x->dtype, gpu_data(t[0]), gpu_data(t[3]), gpu_data(t[4]),
                             gpu_data(t[5]), t[1] ? gpu_data(t[1]) : NULL, t[2] ? gpu_data(t[2]) : NULL, g.n, g.c,
                             g.inner, eps),
               "batch_norm");
  if (s == CELL_OK && training && update) {
    s = blend(running_mean, t[4], momentum, 1.0);
    if (s == CELL_OK) s = blend(running_var, t[5], momentum, (double)g.m / (double)(g.m - 1));
  }
  if (s != CELL_OK) {
    release_all(t, 6);
    return s;
  }
  release_all(t, 3);
  *out = t[3];
  if (mean_out) *mean_out = t[4];
  else cell_tensor_release(t[4]);
  if (var_out) *var_out = t[5];
  else cell_tensor_release(t[5]);
  return CELL_OK;
}

cell_status gpu_batch_norm_backward(const cell_tensor *g, const cell_tensor *x, const cell_tensor *weight,
                                    const cell_tensor *mean, const cell_tensor *var, double eps, int training,
                                    cell_tensor **gx, cell_tensor **gw, cell_tensor **gb) {
  if (!g || !x || !mean || !var) return cell_error(CELL_ERR_VALUE, "batch_norm backward: NULL argument");
  int same = g->ndim == x->ndim;
  for (int d = 0; same && d < x->ndim; d++) same = g->shape[d] == x->shape[d];
  if (!same) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "batch_norm backward: gradient of shape %s for an output of shape %s",
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1), cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  if (x->ndim < 2 || !f32_or_f64(x->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "batch_norm backward of %s is not supported on device GPU",
                      cell_dtype_name(x->dtype));
  bn_geom geo = bn_geometry(x);
  if (gpu_numel(mean) != geo.c || gpu_numel(var) != geo.c || (weight && gpu_numel(weight) != geo.c))
    return cell_error(CELL_ERR_RUNTIME, "batch_norm backward: the statistics or the weight do not have %lld elements",
                      (long long)geo.c);
  gpu_ctx *gc = gpu_ctx_of(x);
  int64_t k3 = 3 * geo.c;
  cell_tensor *t[9] = {NULL}; /* gc, xc, w, mean, var, k, gx, gw, gb */
  cell_status s = gpu_contig_as(g, x->dtype, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(x, x->dtype, &t[1]);
  if (s == CELL_OK) s = as_f64(weight, &t[2]);
  if (s == CELL_OK) s = gpu_contig_as(mean, CELL_DTYPE_F64, &t[3]);
  if (s == CELL_OK) s = gpu_contig_as(var, CELL_DTYPE_F64, &t[4]);
  if (s == CELL_OK && k3 > 0) s = gpu_new_tensor(gc, CELL_DTYPE_F64, 1, &k3, &t[5]);
  if (s == CELL_OK && gx) s = gpu_new_tensor(gc, x->dtype, x->ndim, x->shape, &t[6]);
  if (s == CELL_OK && gw) s = gpu_new_tensor(gc, CELL_DTYPE_F64, 1, &geo.c, &t[7]);
  if (s == CELL_OK && gb) s = gpu_new_tensor(gc, CELL_DTYPE_F64, 1, &geo.c, &t[8]);
  if (s == CELL_OK && geo.c > 0)
    s = gpu_launch(gpuk_bn_backward(gc->stream, (int)x->dtype, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[3]),
                                gpu_data(t[4]), t[2] ? gpu_data(t[2]) : NULL,
                                t[6] ? gpu_data(t[6]) : NULL, t[7] ? gpu_data(t[7]) : NULL,
                                t[8] ? gpu_data(t[8]) : NULL, gpu_data(t[5]), geo.n, geo.c, geo.inner, eps, training),
               "batch_norm backward");
  if (s != CELL_OK) {
    release_all(t, 9);
    return s;
  }
  release_all(t, 6);
  if (gx) *gx = t[6];
  if (gw) *gw = t[7];
  if (gb) *gb = t[8];
  return CELL_OK;
}

/* --- pooling ----------------------------------------------------------------------------- */

#define ARG_MAX ((int64_t)1 << 30)

static cell_status pair(const char *op, const char *what, const int64_t *v, int64_t def, int64_t *out) {
  for (int i = 0; i < 2; i++) out[i] = v ? v[i] : def;
  if (out[0] < 1 || out[1] < 1 || out[0] > ARG_MAX || out[1] > ARG_MAX)
    return cell_error(CELL_ERR_VALUE, "%s: %s must be %s, got (%lld, %lld)", op, what,
                      out[0] < 1 || out[1] < 1 ? "at least 1" : "at most 2^30", (long long)out[0], (long long)out[1]);
  return CELL_OK;
}

/* pool.c's cell_k_pool2d_geom, with its messages. */
static cell_status pool_geom(const char *op, int ndim, const int64_t *shape, const int64_t *kernel,
                             const int64_t *stride, const int64_t *padding, const int64_t *dilation, int ceil_mode,
                             gpuk_pool *p) {
  if (ndim != 4) return cell_error(CELL_ERR_VALUE, "%s: input must be 4-D (N, C, H, W), got %d dimensions", op, ndim);
  if (!kernel) return cell_error(CELL_ERR_VALUE, "%s: NULL kernel size", op);
  int64_t k[2], st[2], dl[2], pd[4];
  CELL_TRY(pair(op, "kernel size", kernel, 1, k));
  CELL_TRY(pair(op, "stride", stride ? stride : k, 1, st));
  CELL_TRY(pair(op, "dilation", dilation, 1, dl));
  int bad = 0, big = 0;
  for (int i = 0; i < 4; i++) {
    pd[i] = padding ? padding[i] : 0;
    bad |= pd[i] < 0;
    big |= pd[i] > ARG_MAX;
  }
  if (bad || big)
    return cell_error(CELL_ERR_VALUE, "%s: padding (top, bottom, left, right) must be %s, got (%lld, %lld, %lld, %lld)",
                      op, bad ? "non-negative" : "at most 2^30", (long long)pd[0], (long long)pd[1], (long long)pd[2],
                      (long long)pd[3]);
  if (pd[0] > k[0] / 2 || pd[1] > k[0] / 2 || pd[2] > k[1] / 2 || pd[3] > k[1] / 2)
    return cell_error(CELL_ERR_VALUE,
                      "%s: padding must be at most half the kernel size (top and bottom at most %lld, left and right "
                      "at most %lld for kernel %lld x %lld), got (%lld, %lld, %lld, %lld)",
                      op, (long long)(k[0] / 2), (long long)(k[1] / 2), (long long)k[0], (long long)k[1],
                      (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3]);
  memset(p, 0, sizeof *p);
  p->planes = shape[0] * shape[1];
  p->h = shape[2];
  p->w = shape[3];
  p->kh = k[0];
  p->kw = k[1];
  p->sh = st[0];
  p->sw = st[1];
  p->dh = dl[0];
  p->dw = dl[1];
  p->pt = pd[0];
  p->pb = pd[1];
  p->pl = pd[2];
  p->pr = pd[3];
  int64_t ph = p->h + p->pt + p->pb, pw = p->w + p->pl + p->pr;
  int64_t ekh = p->dh * (p->kh - 1) + 1, ekw = p->dw * (p->kw - 1) + 1;
  if (ekh > ph || ekw > pw)
    return cell_error(CELL_ERR_VALUE, "%s: the kernel (%lld x %lld) is larger than the padded input (%lld x %lld)", op,
                      (long long)p->kh, (long long)p->kw, (long long)ph, (long long)pw);
  p->oh = (ph - ekh + (ceil_mode ? p->sh - 1 : 0)) / p->sh + 1;
  p->ow = (pw - ekw + (ceil_mode ? p->sw - 1 : 0)) / p->sw + 1;
  if (ceil_mode && (p->oh - 1) * p->sh >= p->h + p->pt) p->oh--;
  if (ceil_mode && (p->ow - 1) * p->sw >= p->w + p->pl) p->ow--;
  return CELL_OK;
}

static cell_status float_input(const char *op, cell_dtype dt) {
  if (!f32_or_f64(dt))
    return cell_error(CELL_ERR_NOTIMPL, "%s of %s is not supported on device GPU", op, cell_dtype_name(dt));
  return CELL_OK;
}

cell_status gpu_max_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation, int ceil_mode, cell_tensor **out, cell_tensor **indices) {
  const char *op = "max_pool2d";
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  gpuk_pool p;
  CELL_TRY(pool_geom(op, x->ndim, x->shape, kernel, stride, padding, dilation, ceil_mode, &p));
  CELL_TRY(float_input(op, x->dtype));
  gpu_ctx *gc = gpu_ctx_of(x);
  int64_t shape[4] = {x->shape[0], x->shape[1], p.oh, p.ow};
  cell_tensor *t[3] = {NULL}; /* xc, y, indices */
  cell_status s = gpu_contig_as(x, x->dtype, &t[0]);
  if (s == CELL_OK) s = gpu_new_tensor(gc, x->dtype, 4, shape, &t[1]);
  if (s == CELL_OK) s = gpu_new_tensor(gc, CELL_DTYPE_I64, 4, shape, &t[2]);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_max_pool(gc->stream, (int)x->dtype, p, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2])), op);
  if (s != CELL_OK) {
    release_all(t, 3);
    return s;
  }
  cell_tensor_release(t[0]);
  *out = t[1];
  if (indices) *indices = t[2];
  else cell_tensor_release(t[2]);
  return CELL_OK;
}

cell_status gpu_max_pool2d_backward(const cell_tensor *gy, const cell_tensor *indices, const int64_t *in_shape,
                                    cell_dtype dt, cell_tensor **gx) {
  const char *op = "max_pool2d backward";
  if (!gy || !indices || !in_shape || !gx) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  int same = gy->ndim == indices->ndim;
  for (int d = 0; same && d < gy->ndim; d++) same = gy->shape[d] == indices->shape[d];
  if (gy->ndim != 4 || !same || indices->dtype != CELL_DTYPE_I64 || gy->shape[0] != in_shape[0] ||
      gy->shape[1] != in_shape[1]) {
    char s1[256], s2[256];
    return cell_error(CELL_ERR_VALUE, "%s: the output gradient has shape %s, the indices %s", op,
                      cell_shape_str(gy->ndim, gy->shape, s1, sizeof s1), cell_shape_str(indices->ndim, indices->shape, s2, sizeof s2));
  }
  CELL_TRY(float_input(op, dt));
  gpu_ctx *gc = gpu_ctx_of(gy);
  int64_t planes = in_shape[0] * in_shape[1], hw = in_shape[2] * in_shape[3], op_n = gy->shape[2] * gy->shape[3];
  int64_t one = 1;
  static const unsigned char zero[8] = {0};
  static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  size_t es = (size_t)cell_dtype_size(dt);
  cell_tensor *t[4] = {NULL}; /* gy, indices, gx, bad */
  cell_status s = gpu_contig_as(gy, dt, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(indices, CELL_DTYPE_I64, &t[1]);
  if (s == CELL_OK) s = gpu_new_tensor(gc, dt, 4, in_shape, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(gc, CELL_DTYPE_I64, 1, &one, &t[3]);
  if (s == CELL_OK) s = gpu_fill(gc, gpu_data(t[2]), (size_t)(planes * hw) * es, zero, es);
  if (s == CELL_OK) s = gpu_fill(gc, gpu_data(t[3]), 8, ones, 8);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_max_pool_backward(gc->stream, (int)dt, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2]), planes,
                                      op_n, hw, gpu_data(t[3])),
               op);
  /* Positions come from the forward; a corrupt one writes nothing and is
   * reported as on the CPU (one small read, which waits for the stream). */
  unsigned long long bad = ~0ull;
  if (s == CELL_OK && planes * op_n > 0) s = gpu_copy_d2h(gc, &bad, gpu_data(t[3]), 8);
  if (s == CELL_OK && bad != ~0ull && bad > 0) {
    long long raw = 0;
    s = gpu_copy_d2h(gc, &raw, (char *)gpu_data(t[1]) + (bad - 1) * 8, 8);
    if (s == CELL_OK)
      s = cell_error(CELL_ERR_VALUE, "max_pool2d backward: index %lld is outside the %lld positions of an input plane",
                     raw, (long long)hw);
  }
  if (s != CELL_OK) {
    release_all(t, 4);
    return s;
  }
  cell_tensor_release(t[0]);
  cell_tensor_release(t[1]);
  cell_tensor_release(t[3]);
  *gx = t[2];
  return CELL_OK;
}

cell_status gpu_avg_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           int ceil_mode, int count_include_pad, cell_tensor **out) {
  const char *op = "avg_pool2d";
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  gpuk_pool p;
  CELL_TRY(pool_geom(op, x->ndim, x->shape, kernel, stride, padding, NULL, ceil_mode, &p));
  CELL_TRY(float_input(op, x->dtype));
  gpu_ctx *gc = gpu_ctx_of(x);
  int64_t shape[4] = {x->shape[0], x->shape[1], p.oh, p.ow};
  cell_tensor *xc = NULL, *y = NULL;
  cell_status s = gpu_contig_as(x, x->dtype, &xc);
  if (s == CELL_OK) s = gpu_new_tensor(gc, x->dtype, 4, shape, &y);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_avg_pool(gc->stream, (int)x->dtype, p, count_include_pad != 0, gpu_data(xc), gpu_data(y)), op);
  if (xc) cell_tensor_release(xc);
  if (s != CELL_OK) {
    if (y) cell_tensor_release(y);
    return s;
  }
  *out = y;
  return CELL_OK;
}

cell_status gpu_avg_pool2d_backward(const cell_tensor *gy, const int64_t *in_shape, const int64_t *kernel,
                                    const int64_t *stride, const int64_t *padding, int ceil_mode,
                                    int count_include_pad, cell_dtype dt, cell_tensor **gx) {
  const char *op = "avg_pool2d backward";
  if (!gy || !in_shape || !gx) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  gpuk_pool p;
  CELL_TRY(pool_geom("avg_pool2d", 4, in_shape, kernel, stride, padding, NULL, ceil_mode, &p));
  if (gy->ndim != 4 || gy->shape[0] != in_shape[0] || gy->shape[1] != in_shape[1] || gy->shape[2] != p.oh ||
      gy->shape[3] != p.ow) {
    char s1[256];
    return cell_error(CELL_ERR_VALUE, "%s: the output gradient has shape %s, not [%lld, %lld, %lld, %lld]", op,
                      cell_shape_str(gy->ndim, gy->shape, s1, sizeof s1), (long long)in_shape[0], (long long)in_shape[1], (long long)p.oh,
                      (long long)p.ow);
  }
  CELL_TRY(float_input(op, dt));
  gpu_ctx *gc = gpu_ctx_of(gy);
  cell_tensor *gyc = NULL, *r = NULL;
  cell_status s = gpu_contig_as(gy, dt, &gyc);
  if (s == CELL_OK) s = gpu_new_tensor(gc, dt, 4, in_shape, &r);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_avg_pool_backward(gc->stream, (int)dt, p, count_include_pad != 0, gpu_data(gyc), gpu_data(r)), op);
  if (gyc) cell_tensor_release(gyc);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *gx = r;
  return CELL_OK;
}
