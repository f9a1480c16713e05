/* gpu_fold.c - the GPU table's unfold (im2col) and fold (col2im): the
 * geometry and messages of src/ops/fold.c, gpu_fold.cu's kernels in
 * float32 or float64 (float16 / bfloat16 through float32). Each is the
 * other's adjoint, so autograd's backward of one runs the other. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

#define ARG_MAX ((int64_t)1 << 30)

static int is_float_dt(cell_dtype dt) {
  return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64 || dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16;
}

/* conv.c's cell_conv_pair. */
static cell_status pair(const char *op, const char *what, const int64_t *v, int64_t def, int64_t lo, int64_t *out) {
  for (int i = 0; i < 2; i++) out[i] = v ? v[i] : def;
  if (out[0] < lo || out[1] < lo || out[0] > ARG_MAX || out[1] > ARG_MAX)
    return cell_error(CELL_ERR_VALUE, "%s: %s must be %s, got (%lld, %lld)", op, what,
                      out[0] < lo || out[1] < lo ? "at least 1" : "at most 2^30", (long long)out[0], (long long)out[1]);
  return CELL_OK;
}

/* fold.c's geom. */
static cell_status geom(const char *op, int64_t n, int64_t c, int64_t h, int64_t w, const int64_t *kernel,
                        const int64_t *dilation, const int64_t *padding, const int64_t *stride, gpuk_fold_geom *g) {
  if (!kernel) return cell_error(CELL_ERR_VALUE, "%s: NULL kernel size", op);
  int64_t k[2], dl[2], st[2], pd[2];
  CELL_TRY(pair(op, "kernel_size", kernel, 1, 1, k));
  CELL_TRY(pair(op, "dilation", dilation, 1, 1, dl));
  CELL_TRY(pair(op, "stride", stride, 1, 1, st));
  CELL_TRY(pair(op, "padding", padding, 0, 0, pd));
  memset(g, 0, sizeof *g);
  g->n = n;
  g->c = c;
  g->h = h;
  g->w = w;
  g->kh = k[0];
  g->kw = k[1];
  g->sh = st[0];
  g->sw = st[1];
  g->dh = dl[0];
  g->dw = dl[1];
  g->pt = pd[0];
  g->pl = pd[1];
  int64_t eh = h + 2 * pd[0] - dl[0] * (k[0] - 1) - 1, ew = w + 2 * pd[1] - dl[1] * (k[1] - 1) - 1;
  g->oh = eh < 0 ? 0 : eh / st[0] + 1;
  g->ow = ew < 0 ? 0 : ew / st[1] + 1;
  if (g->oh < 1 || g->ow < 1)
    return cell_error(CELL_ERR_VALUE,
                      "%s: spatial size (%lld, %lld) with kernel_size (%lld, %lld), dilation (%lld, %lld), padding "
                      "(%lld, %lld) and stride (%lld, %lld) gives (%lld, %lld) sliding blocks, but each count must "
                      "be at least 1",
                      op, (long long)h, (long long)w, (long long)k[0], (long long)k[1], (long long)dl[0],
                      (long long)dl[1], (long long)pd[0], (long long)pd[1], (long long)st[0], (long long)st[1],
                      (long long)(eh < 0 ? 0 : g->oh), (long long)(ew < 0 ? 0 : g->ow));
  return CELL_OK;
}

/* out (shape, x's dtype) = the kernel over x in the compute dtype. */
static cell_status run(const char *op, int fold, const cell_tensor *x, const gpuk_fold_geom *G, int nd, const int64_t *shape,
                       cell_tensor **out) {
  cell_dtype ct = x->dtype == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *xc = NULL, *o = NULL, *r = NULL;
  cell_status s = gpu_contig_as(x, ct, &xc);
  if (s == CELL_OK) s = gpu_new_tensor(g, ct, nd, shape, &o);
  if (s == CELL_OK) s = gpu_launch(gpuk_fold(g->stream, (int)ct, fold, *G, gpu_data(xc), gpu_data(o)), op);
  if (s == CELL_OK) s = gpu_contig_as(o, x->dtype, &r);
  cell_tensor *tmp[2] = {xc, o};
  gpu_release_all(tmp, 2);
  if (s != CELL_OK) {
    if (r) cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status gpu_unfold(const cell_tensor *x, const int64_t *kernel, const int64_t *dilation, const int64_t *padding,
                       const int64_t *stride, cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "unfold: NULL argument");
  char sb[96];
  if (x->ndim != 4)
    return cell_error(CELL_ERR_VALUE, "unfold: input must be 4-D (N, C, H, W), got shape %s",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb));
  if (!is_float_dt(x->dtype))
    return cell_error(CELL_ERR_TYPE, "unfold: input must be a float tensor, got %s", cell_dtype_name(x->dtype));
  gpuk_fold_geom G;
  CELL_TRY(geom("unfold", x->shape[0], x->shape[1], x->shape[2], x->shape[3], kernel, dilation, padding, stride, &G));
  if (G.c > INT64_MAX / 4 / (G.kh * G.kw) || G.oh > INT64_MAX / 4 / G.ow)
    return cell_error(CELL_ERR_VALUE, "unfold: the unfolded input of %s is too large",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb));
  int64_t oshape[3] = {G.n, G.c * G.kh * G.kw, G.oh * G.ow};
  return run("unfold", 0, x, &G, 3, oshape, out);
}

cell_status gpu_fold(const cell_tensor *x, const int64_t *output_size, const int64_t *kernel, const int64_t *dilation,
                     const int64_t *padding, const int64_t *stride, cell_tensor **out) {
  if (!x || !output_size || !out) return cell_error(CELL_ERR_VALUE, "fold: NULL argument");
  char sb[96];
  if (x->ndim != 3)
    return cell_error(CELL_ERR_VALUE, "fold: input must be 3-D (N, C * kernel_size product, L), got shape %s",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb));
  if (!is_float_dt(x->dtype))
    return cell_error(CELL_ERR_TYPE, "fold: input must be a float tensor, got %s", cell_dtype_name(x->dtype));
  int64_t osz[2], k[2];
  CELL_TRY(pair("fold", "output_size", output_size, 1, 1, osz));
  if (!kernel) return cell_error(CELL_ERR_VALUE, "fold: NULL kernel size");
  CELL_TRY(pair("fold", "kernel_size", kernel, 1, 1, k));
  if (x->shape[1] % (k[0] * k[1]))
    return cell_error(CELL_ERR_VALUE,
                      "fold: dimension 2 of input %s must be divisible by the kernel size's product %lld x %lld = %lld",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb), (long long)k[0], (long long)k[1],
                      (long long)(k[0] * k[1]));
  gpuk_fold_geom G;
  CELL_TRY(geom("fold", x->shape[0], x->shape[1] / (k[0] * k[1]), osz[0], osz[1], kernel, dilation, padding, stride,
                &G));
  if (x->shape[2] != G.oh * G.ow)
    return cell_error(CELL_ERR_VALUE,
                      "fold: output_size (%lld, %lld) gives %lld x %lld = %lld sliding blocks, but dimension 3 of "
                      "input %s is %lld",
                      (long long)osz[0], (long long)osz[1], (long long)G.oh, (long long)G.ow, (long long)(G.oh * G.ow),
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb), (long long)x->shape[2]);
  int64_t oshape[4] = {G.n, G.c, G.h, G.w};
  return run("fold", 1, x, &G, 4, oshape, out);
}
