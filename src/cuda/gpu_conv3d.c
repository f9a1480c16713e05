/* gpu_conv3d.c - the GPU table's conv3d and conv_transpose3d, forward and
 * backward: src/ops/conv3d.c's geometry, checks and messages (its
 * cell_k_conv3d_geom is not exported to device modules, so they are
 * restated here), gpu_conv3d.cu's direct kernels in float32 or float64
 * (float16 / bfloat16 through float32), the bias gradients through
 * gpu_reduce. The transposed convolution runs as the adjoint of the
 * convolution whose geometry conv3d.c gives it. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <stdio.h>
#include <string.h>

#define ARG_MAX ((int64_t)1 << 30)

static int is_float_dt(cell_dtype dt) {
  return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64 || dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16;
}

/* conv.c's cell_conv_shape_str: "(2, 3, 4)". */
static const char *shape_str(int nd, const int64_t *shape, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < nd && k < n; i++) k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (k < n) snprintf(buf + k, n - k, ")");
  return buf;
}

static const char *shp(const cell_tensor *t, char *buf, size_t n) { return shape_str(t->ndim, t->shape, buf, n); }

static cell_status triple(const char *op, const char *what, const int64_t *v, int64_t def, int64_t lo, int64_t *out) {
  int bad = 0;
  for (int i = 0; i < 3; i++) {
    out[i] = v ? v[i] : def;
    bad = bad || out[i] < lo || out[i] > ARG_MAX;
  }
  if (bad)
    return cell_error(CELL_ERR_VALUE, "%s: %s must be at least %lld and at most 2^30, got (%lld, %lld, %lld)", op, what,
                      (long long)lo, (long long)out[0], (long long)out[1], (long long)out[2]);
  return CELL_OK;
}

static cell_status pads6(const char *op, const int64_t *v, int64_t *out) {
  int bad = 0;
  for (int i = 0; i < 6; i++) {
    out[i] = v ? v[i] : 0;
    bad = bad || out[i] < 0 || out[i] > ARG_MAX;
  }
  if (bad)
    return cell_error(CELL_ERR_VALUE,
                      "%s: padding (front, back, top, bottom, left, right) must be non-negative and at most 2^30, got "
                      "(%lld, %lld, %lld, %lld, %lld, %lld)",
                      op, (long long)out[0], (long long)out[1], (long long)out[2], (long long)out[3], (long long)out[4],
                      (long long)out[5]);
  return CELL_OK;
}

static cell_status common(const char *op, const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                          const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                          gpuk_c3_geom *g) {
  char sx[160], sw[160];
  if (!x || !w || !g) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  if (x->ndim != 5)
    return cell_error(CELL_ERR_VALUE, "%s: input must be 5-D (N, C, D, H, W), got input %s", op, shp(x, sx, sizeof sx));
  if (w->ndim != 5) return cell_error(CELL_ERR_VALUE, "%s: weight must be 5-D, got weight %s", op, shp(w, sw, sizeof sw));
  if (!is_float_dt(x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: input must be a float tensor, got %s", op, cell_dtype_name(x->dtype));
  if (w->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: input is %s but weight is %s; they must match", op, cell_dtype_name(x->dtype),
                      cell_dtype_name(w->dtype));
  if (b && b->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: input is %s but bias is %s; they must match", op, cell_dtype_name(x->dtype),
                      cell_dtype_name(b->dtype));
  memset(g, 0, sizeof *g);
  CELL_TRY(triple(op, "stride", stride, 1, 1, g->s));
  CELL_TRY(triple(op, "dilation", dilation, 1, 1, g->dl));
  CELL_TRY(pads6(op, padding, g->pd));
  if (groups < 1 || groups > ARG_MAX)
    return cell_error(CELL_ERR_VALUE, "%s: groups must be at least 1, got %lld", op, (long long)groups);
  g->groups = groups;
  g->n = x->shape[0];
  g->kd = w->shape[2];
  g->kh = w->shape[3];
  g->kw = w->shape[4];
  if (g->kd < 1 || g->kh < 1 || g->kw < 1)
    return cell_error(CELL_ERR_VALUE, "%s: the kernel must be at least 1 x 1 x 1, got weight %s", op,
                      shp(w, sw, sizeof sw));
  return CELL_OK;
}

static cell_status bias_shape(const char *op, const cell_tensor *b, int64_t o, const cell_tensor *w) {
  if (b && (b->ndim != 1 || b->shape[0] != o)) {
    char sb[160], sw[160];
    return cell_error(CELL_ERR_VALUE, "%s: bias must have shape (%lld) to match weight %s, got %s", op, (long long)o,
                      shp(w, sw, sizeof sw), shp(b, sb, sizeof sb));
  }
  return CELL_OK;
}

static int64_t extent(int64_t k, int64_t d) {
  if (k - 1 > 0 && d > INT64_MAX / 4 / (k - 1)) return INT64_MAX / 4;
  return (k - 1) * d + 1;
}

static cell_status conv_geom(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride,
                             const int64_t *padding, const int64_t *dilation, int64_t groups, gpuk_c3_geom *g) {
  const char *op = "conv3d";
  CELL_TRY(common(op, x, w, b, stride, padding, dilation, groups, g));
  char sx[160], sw[160];
  g->c = x->shape[1];
  g->d = x->shape[2];
  g->h = x->shape[3];
  g->w = x->shape[4];
  g->o = w->shape[0];
  if (g->o % groups)
    return cell_error(CELL_ERR_VALUE, "%s: groups %lld must divide the output channels %lld of weight %s", op,
                      (long long)groups, (long long)g->o, shp(w, sw, sizeof sw));
  if (g->c != w->shape[1] * groups)
    return cell_error(CELL_ERR_VALUE, "%s: input has %lld channels but weight expects %lld (groups %lld): input %s, weight %s",
                      op, (long long)g->c, (long long)(w->shape[1] * groups), (long long)groups, shp(x, sx, sizeof sx),
                      shp(w, sw, sizeof sw));
  CELL_TRY(bias_shape(op, b, g->o, w));
  const int64_t in[3] = {g->d, g->h, g->w}, k[3] = {g->kd, g->kh, g->kw};
  int64_t outs[3];
  for (int i = 0; i < 3; i++) {
    int64_t ek = extent(k[i], g->dl[i]), p = in[i] + g->pd[2 * i] + g->pd[2 * i + 1];
    if (ek > p)
      return cell_error(CELL_ERR_VALUE,
                        "%s: the kernel (%lld x %lld x %lld, dilation %lld x %lld x %lld) is larger than the padded input "
                        "in spatial dimension %d (%lld < %lld): input %s, weight %s",
                        op, (long long)g->kd, (long long)g->kh, (long long)g->kw, (long long)g->dl[0], (long long)g->dl[1],
                        (long long)g->dl[2], i + 1, (long long)p, (long long)ek, shp(x, sx, sizeof sx),
                        shp(w, sw, sizeof sw));
    outs[i] = (p - ek) / g->s[i] + 1;
  }
  g->od = outs[0];
  g->oh = outs[1];
  g->ow = outs[2];
  return CELL_OK;
}

static cell_status transpose_geom(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride,
                                  const int64_t *padding, const int64_t *output_padding, const int64_t *dilation,
                                  int64_t groups, gpuk_c3_geom *g) {
  const char *op = "conv_transpose3d";
  CELL_TRY(common(op, x, w, b, stride, padding, dilation, groups, g));
  char sx[160], sw[160];
  int64_t opad[3];
  CELL_TRY(triple(op, "output_padding", output_padding, 0, 0, opad));
  g->o = x->shape[1];
  if (w->shape[0] != g->o)
    return cell_error(CELL_ERR_VALUE, "%s: input has %lld channels but weight %s expects %lld: input %s", op,
                      (long long)g->o, shp(w, sw, sizeof sw), (long long)w->shape[0], shp(x, sx, sizeof sx));
  if (g->o % groups)
    return cell_error(CELL_ERR_VALUE, "%s: groups %lld must divide the input channels %lld of weight %s", op,
                      (long long)groups, (long long)g->o, shp(w, sw, sizeof sw));
  if (w->shape[1] > ARG_MAX * 64 / groups)
    return cell_error(CELL_ERR_VALUE, "%s: weight %s with groups %lld has too many output channels", op,
                      shp(w, sw, sizeof sw), (long long)groups);
  g->c = w->shape[1] * groups;
  CELL_TRY(bias_shape(op, b, g->c, w));
  g->od = x->shape[2];
  g->oh = x->shape[3];
  g->ow = x->shape[4];
  const int64_t in[3] = {g->od, g->oh, g->ow}, k[3] = {g->kd, g->kh, g->kw};
  int64_t outs[3];
  for (int i = 0; i < 3; i++) {
    if (opad[i] >= g->s[i])
      return cell_error(CELL_ERR_VALUE, "%s: output_padding (%lld, %lld, %lld) must be smaller than the stride (%lld, %lld, %lld)",
                        op, (long long)opad[0], (long long)opad[1], (long long)opad[2], (long long)g->s[0],
                        (long long)g->s[1], (long long)g->s[2]);
    if (in[i] < 1) {
      outs[i] = -1;
    } else if (g->s[i] > 0 && in[i] - 1 > INT64_MAX / 4 / g->s[i]) {
      return cell_error(CELL_ERR_VALUE, "%s: input %s with stride (%lld, %lld, %lld) gives an output too large for a tensor",
                        op, shp(x, sx, sizeof sx), (long long)g->s[0], (long long)g->s[1], (long long)g->s[2]);
    } else {
      outs[i] = (in[i] - 1) * g->s[i] + extent(k[i], g->dl[i]) + opad[i] - g->pd[2 * i] - g->pd[2 * i + 1];
    }
    if (outs[i] < 1)
      return cell_error(CELL_ERR_VALUE,
                        "%s: the output size %lld of spatial dimension %d is not positive: input %s, weight %s, padding "
                        "(%lld, %lld, %lld, %lld, %lld, %lld)",
                        op, (long long)outs[i], i + 1, shp(x, sx, sizeof sx), shp(w, sw, sizeof sw), (long long)g->pd[0],
                        (long long)g->pd[1], (long long)g->pd[2], (long long)g->pd[3], (long long)g->pd[4],
                        (long long)g->pd[5]);
  }
  g->d = outs[0];
  g->h = outs[1];
  g->w = outs[2];
  return CELL_OK;
}

static cell_dtype ct_of(cell_dtype dt) { return dt == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32; }

/* out (shape, dtype dt) = the kernel `which` over p0, p1 (and b), each
 * made contiguous in the compute dtype. */
static cell_status run(const char *op, int which, const gpuk_c3_geom *G, const cell_tensor *p0, const cell_tensor *p1,
                       const cell_tensor *b, const int64_t *shape, int nd, cell_dtype dt, cell_tensor **out) {
  cell_dtype ct = ct_of(dt);
  gpu_ctx *g = gpu_ctx_of(p0);
  cell_tensor *a = NULL, *c = NULL, *bc = NULL, *o = NULL, *r = NULL;
  cell_status s = gpu_contig_as(p0, ct, &a);
  if (s == CELL_OK) s = gpu_contig_as(p1, ct, &c);
  if (s == CELL_OK && b) s = gpu_contig_as(b, ct, &bc);
  if (s == CELL_OK) s = gpu_new_tensor(g, ct, nd, shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_conv3d(g->stream, (int)ct, which, *G, gpu_data(a), gpu_data(c), bc ? gpu_data(bc) : NULL,
                               gpu_data(o)),
                   op);
  if (s == CELL_OK) s = gpu_contig_as(o, dt, &r);
  cell_tensor *tmp[4] = {a, c, bc, o};
  gpu_release_all(tmp, 4);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* The bias gradient: gy summed over the samples and positions (dims 0, 2, 3, 4). */
static cell_status bias_grad(const cell_tensor *gy, cell_dtype dt, cell_tensor **gb) {
  static const int dims[4] = {0, 2, 3, 4};
  cell_tensor *c = NULL, *r = NULL;
  cell_status s = gpu_contig_as(gy, ct_of(dt), &c);
  if (s == CELL_OK) s = gpu_reduce(CELL_RED_SUM, c, 4, dims, 0, &r);
  if (c) cell_tensor_release(c);
  if (s == CELL_OK && r->dtype != dt) {
    cell_tensor *t = NULL;
    s = gpu_contig_as(r, dt, &t);
    cell_tensor_release(r);
    r = t;
  }
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *gb = r;
  return CELL_OK;
}

static cell_status grad_shape(const char *op, const cell_tensor *gy, const int64_t *want) {
  int same = gy && gy->ndim == 5;
  for (int d = 0; same && d < 5; d++) same = gy->shape[d] == want[d];
  if (same) return CELL_OK;
  char s1[160], s2[160];
  return cell_error(CELL_ERR_VALUE, "%s backward: the output gradient has shape %s, not %s", op,
                    gy ? shp(gy, s1, sizeof s1) : "NULL", shape_str(5, want, s2, sizeof s2));
}

static cell_status finish3(cell_status s, cell_tensor **r, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb) {
  if (s != CELL_OK) {
    gpu_release_all(r, 3);
    return s;
  }
  if (gx) *gx = r[0];
  if (gw) *gw = r[1];
  if (gb) *gb = r[2];
  return CELL_OK;
}

cell_status gpu_conv3d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride,
                       const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **out) {
  gpuk_c3_geom G;
  CELL_TRY(conv_geom(x, w, b, stride, padding, dilation, groups, &G));
  if (!out) return cell_error(CELL_ERR_VALUE, "conv3d: NULL argument");
  int64_t shape[5] = {G.n, G.o, G.od, G.oh, G.ow};
  return run("conv3d", GPUK_C3_FWD, &G, x, w, b, shape, 5, x->dtype, out);
}

cell_status gpu_conv3d_backward(const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w, const int64_t *stride,
                                const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **gx,
                                cell_tensor **gw, cell_tensor **gb) {
  gpuk_c3_geom G;
  CELL_TRY(conv_geom(x, w, NULL, stride, padding, dilation, groups, &G));
  int64_t yshape[5] = {G.n, G.o, G.od, G.oh, G.ow};
  CELL_TRY(grad_shape("conv3d", gy, yshape));
  cell_tensor *r[3] = {NULL, NULL, NULL};
  cell_status s = CELL_OK;
  if (gx) s = run("conv3d backward", GPUK_C3_DATA, &G, gy, w, NULL, x->shape, 5, x->dtype, &r[0]);
  if (s == CELL_OK && gw) s = run("conv3d backward", GPUK_C3_WEIGHT, &G, gy, x, NULL, w->shape, 5, x->dtype, &r[1]);
  if (s == CELL_OK && gb) s = bias_grad(gy, x->dtype, &r[2]);
  return finish3(s, r, gx, gw, gb);
}

cell_status gpu_conv_transpose3d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride,
                                 const int64_t *padding, const int64_t *output_padding, const int64_t *dilation,
                                 int64_t groups, cell_tensor **out) {
  gpuk_c3_geom G;
  CELL_TRY(transpose_geom(x, w, b, stride, padding, output_padding, dilation, groups, &G));
  if (!out) return cell_error(CELL_ERR_VALUE, "conv_transpose3d: NULL argument");
  int64_t shape[5] = {G.n, G.c, G.d, G.h, G.w};
  return run("conv_transpose3d", GPUK_C3_DATA, &G, x, w, b, shape, 5, x->dtype, out);
}

cell_status gpu_conv_transpose3d_backward(const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w,
                                          const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                          const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                          cell_tensor **gb) {
  gpuk_c3_geom G;
  CELL_TRY(transpose_geom(x, w, NULL, stride, padding, output_padding, dilation, groups, &G));
  int64_t yshape[5] = {G.n, G.c, G.d, G.h, G.w};
  CELL_TRY(grad_shape("conv_transpose3d", gy, yshape));
  cell_tensor *r[3] = {NULL, NULL, NULL};
  cell_status s = CELL_OK;
  /* x's gradient: the convolution of gy with w */
  if (gx) s = run("conv_transpose3d backward", GPUK_C3_FWD, &G, gy, w, NULL, x->shape, 5, x->dtype, &r[0]);
  /* w's gradient: the convolution's, x as the output gradient, gy as the input */
  if (s == CELL_OK && gw)
    s = run("conv_transpose3d backward", GPUK_C3_WEIGHT, &G, x, gy, NULL, w->shape, 5, x->dtype, &r[1]);
  if (s == CELL_OK && gb) s = bias_grad(gy, x->dtype, &r[2]);
  return finish3(s, r, gx, gw, gb);
}
