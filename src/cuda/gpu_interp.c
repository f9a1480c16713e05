/* gpu_interp.c - the GPU table's interpolate and its backward (nearest,
 * linear, bilinear, bicubic over 3-D (N, C, L) and 4-D (N, C, H, W)
 * inputs). The two axes' tables (input positions and weights per output
 * position) are made on the host with src/ops/interpolate.c's coordinate
 * rules (float32 coordinates for every dtype but float64; nearest in
 * float32 always), copied to the device, and gpu_interp.cu sums each
 * output's window (backward: adds each gradient back, atomically).
 * float16 / bfloat16 compute in float32. The CPU's checks and messages. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include "cell_sample.h"
#include "../ops/interp_taps.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int k;         /* taps per output position */
  int64_t n;     /* output positions */
  long long *idx; /* n * k input positions */
  double *w;     /* n * k weights */
} axis_tab;

/* interpolate.c's make_tab (cell_interp_point), the positions as long long
 * for the kernels. */
static cell_status make_tab(int mode, int align, int64_t in, int64_t out, double sc, int f32, axis_tab *t) {
  t->k = cell_interp_taps(mode);
  t->n = out;
  t->idx = malloc(sizeof(long long) * (size_t)(out * t->k + 1));
  t->w = malloc(sizeof(double) * (size_t)(out * t->k + 1));
  if (!t->idx || !t->w) return cell_error(CELL_ERR_MEMORY, "interpolate: out of memory");
  for (int64_t o = 0; o < out; o++) {
    int64_t ix[4];
    cell_interp_point(mode, align, in, out, sc, f32, o, ix, t->w + o * t->k);
    for (int q = 0; q < t->k; q++) t->idx[o * t->k + q] = (long long)ix[q];
  }
  return CELL_OK;
}

/* The tables of a call on the device: one int64 tensor (H positions, then
 * W's) and one float64 tensor (the weights, the same order). */
typedef struct {
  cell_tensor *idx, *w;
  int kh, kw;
  int64_t nh;
} dev_tabs;

static cell_status upload(gpu_ctx *g, const axis_tab *th, const axis_tab *tw, dev_tabs *d) {
  int64_t mh = th->n * th->k, mw = tw->n * tw->k, m = mh + mw;
  d->idx = d->w = NULL;
  d->kh = th->k;
  d->kw = tw->k;
  d->nh = mh;
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &m, &d->idx);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &m, &d->w);
  if (s == CELL_OK) s = gpu_copy_h2d(g, gpu_data(d->idx), th->idx, (size_t)mh * 8);
  if (s == CELL_OK) s = gpu_copy_h2d(g, (char *)gpu_data(d->idx) + mh * 8, tw->idx, (size_t)mw * 8);
  if (s == CELL_OK) s = gpu_copy_h2d(g, gpu_data(d->w), th->w, (size_t)mh * 8);
  if (s == CELL_OK) s = gpu_copy_h2d(g, (char *)gpu_data(d->w) + mh * 8, tw->w, (size_t)mw * 8);
  return s;
}

/* Tables for (in_shape -> osz) uploaded to g. */
static cell_status make_dev_tabs(gpu_ctx *g, int mode, int align, int ndim, const int64_t *in_shape,
                                 const int64_t *osz, const double *scales, int f32, dev_tabs *d) {
  axis_tab th = {0, 0, NULL, NULL}, tw = {0, 0, NULL, NULL};
  int sp = ndim - 2;
  cell_status s = sp == 2 ? make_tab(mode, align, in_shape[2], osz[0], scales ? scales[0] : 0, f32, &th)
                          : make_tab(CELL_INTERP_NEAREST, 0, 1, 1, 0, f32, &th);
  if (s == CELL_OK)
    s = make_tab(mode, align, in_shape[ndim - 1], osz[sp - 1], scales ? scales[sp - 1] : 0, f32, &tw);
  d->idx = d->w = NULL;
  if (s == CELL_OK) s = upload(g, &th, &tw, d);
  free(th.idx);
  free(th.w);
  free(tw.idx);
  free(tw.w);
  return s;
}

static cell_status run(gpu_ctx *g, cell_dtype ct, int backward, gpuk_interp A, const dev_tabs *d, const void *in,
                       void *out, const char *op) {
  const long long *idx = gpu_data(d->idx);
  const double *w = gpu_data(d->w);
  return gpu_launch(gpuk_interpolate(g->stream, (int)ct, backward, A, idx, w, idx + d->nh, w + d->nh, in, out), op);
}

static int is_float_dt(cell_dtype dt) {
  return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64 || dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16;
}

cell_status gpu_interpolate(const cell_tensor *x, int mode, int align_corners, const int64_t *size,
                            const double *scales, cell_tensor **out) {
  if (!x || !size || !out) return cell_error(CELL_ERR_VALUE, "interpolate: NULL argument");
  CELL_TRY(cell_interp_check(mode, x->ndim, x->shape, size));
  if (!is_float_dt(x->dtype))
    return cell_error(CELL_ERR_TYPE, "interpolate: input must be a float tensor, got %s", cell_dtype_name(x->dtype));
  int nd = x->ndim;
  int64_t oshape[4] = {x->shape[0], x->shape[1], size[0], nd == 4 ? size[1] : 0};
  cell_dtype ct = x->dtype == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *xc = NULL, *y = NULL, *r = NULL;
  dev_tabs d = {NULL, NULL, 0, 0, 0};
  cell_status s = gpu_new_tensor(g, ct, nd, oshape, &y);
  if (s == CELL_OK && gpu_numel(y) > 0) {
    s = gpu_contig_as(x, ct, &xc);
    if (s == CELL_OK) s = make_dev_tabs(g, mode, align_corners, nd, x->shape, size, scales, ct != CELL_DTYPE_F64, &d);
    if (s == CELL_OK) {
      gpuk_interp A;
      memset(&A, 0, sizeof A);
      A.planes = x->shape[0] * x->shape[1];
      A.chans = x->shape[1];
      A.h = nd == 4 ? x->shape[2] : 1;
      A.w = x->shape[nd - 1];
      A.oh = nd == 4 ? size[0] : 1;
      A.ow = size[nd - 3];
      A.kh = d.kh;
      A.kw = d.kw;
      s = run(g, ct, 0, A, &d, gpu_data(xc), gpu_data(y), "interpolate");
    }
  }
  if (s == CELL_OK) s = gpu_contig_as(y, x->dtype, &r);
  cell_tensor *tmp[4] = {xc, y, d.idx, d.w};
  gpu_release_all(tmp, 4);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status gpu_interpolate_backward(const cell_tensor *gr, int mode, int align_corners, int ndim,
                                     const int64_t *in_shape, const double *scales, cell_dtype dt, cell_tensor **gx) {
  if (!gr || !in_shape || !gx) return cell_error(CELL_ERR_VALUE, "interpolate backward: NULL argument");
  if (ndim != 3 && ndim != 4) return cell_error(CELL_ERR_VALUE, "interpolate backward: input must be 3-D or 4-D");
  if (gr->ndim != ndim || gr->shape[0] != in_shape[0] || gr->shape[1] != in_shape[1]) {
    char s1[96], s2[96];
    return cell_error(CELL_ERR_VALUE, "interpolate backward: the output gradient %s does not match input %s",
                      cell_shape_str(gr->ndim, gr->shape, s1, sizeof s1), cell_shape_str(ndim, in_shape, s2, sizeof s2));
  }
  CELL_TRY(cell_interp_check(mode, ndim, in_shape, gr->shape + 2));
  if (!is_float_dt(dt) || !is_float_dt(gr->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "interpolate backward of %s is not supported on device GPU",
                      cell_dtype_name(dt));
  cell_dtype ct = dt == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
  gpu_ctx *g = gpu_ctx_of(gr);
  cell_tensor *gc = NULL, *acc = NULL, *r = NULL;
  dev_tabs d = {NULL, NULL, 0, 0, 0};
  cell_status s = gpu_new_tensor(g, ct, ndim, in_shape, &acc);
  if (s == CELL_OK) {
    unsigned char zero = 0;
    s = gpu_fill(g, gpu_data(acc), (size_t)gpu_numel(acc) * cell_dtype_size(ct), &zero, 1);
  }
  if (s == CELL_OK && gpu_numel(acc) > 0 && gpu_numel(gr) > 0) {
    /* the gradient in the compute dtype, its layout kept when it is one
     * already (a sum's gradient arrives as a broadcast view) */
    if (gr->dtype == ct) {
      cell_tensor_retain((cell_tensor *)gr);
      gc = (cell_tensor *)gr;
    } else {
      s = gpu_contig_as(gr, ct, &gc);
    }
    if (s == CELL_OK)
      s = make_dev_tabs(g, mode, align_corners, ndim, in_shape, gr->shape + 2, scales, ct != CELL_DTYPE_F64, &d);
    if (s == CELL_OK) {
      gpuk_interp A;
      memset(&A, 0, sizeof A);
      A.planes = in_shape[0] * in_shape[1];
      A.chans = in_shape[1];
      A.h = ndim == 4 ? in_shape[2] : 1;
      A.w = in_shape[ndim - 1];
      A.oh = ndim == 4 ? gr->shape[2] : 1;
      A.ow = gr->shape[ndim - 1];
      A.kh = d.kh;
      A.kw = d.kw;
      A.gs[0] = gc->stride[0];
      A.gs[1] = gc->stride[1];
      A.gs[2] = ndim == 4 ? gc->stride[2] : 0;
      A.gs[3] = gc->stride[ndim - 1];
      s = run(g, ct, 1, A, &d, gpu_data(gc), gpu_data(acc), "interpolate backward");
    }
  }
  if (s == CELL_OK) s = gpu_contig_as(acc, dt, &r);
  cell_tensor *tmp[4] = {gc, acc, d.idx, d.w};
  gpu_release_all(tmp, 4);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *gx = r;
  return CELL_OK;
}
