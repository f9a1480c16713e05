/* fold.c - unfold (im2col: the sliding blocks of an (N, C, H, W) input as
 * the columns of an (N, C * kh * kw, L) tensor) and fold (col2im: the sum
 * of such columns back into an (N, C, H, W) tensor). Each is the other's
 * adjoint, so each is the other's backward.
 *
 * Both run on conv.c's im2col and col2im (one sample at a time, which is
 * exactly unfold's layout), with the geometry of a convolution of C input
 * channels. float16 and bfloat16 compute through float32. */
#include "conv.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "nn.h"

/* Validate the four parameters and the spatial size (h, w); fill *g for
 * n samples of c channels. op and what is folded name the messages. */
static cell_status geom(const char *op, int64_t n, int64_t c, int64_t h, int64_t w,
                        const int64_t *kernel, const int64_t *dilation, const int64_t *padding,
                        const int64_t *stride, cell_conv_geom *g) {
  if (!kernel) return cell_error(CELL_ERR_VALUE, "%s: NULL kernel size", op);
  int64_t k[2], dl[2], st[2], pd[2];
  CELL_TRY(cell_conv_pair(op, "kernel_size", kernel, 1, 1, k));
  CELL_TRY(cell_conv_pair(op, "dilation", dilation, 1, 1, dl));
  CELL_TRY(cell_conv_pair(op, "stride", stride, 1, 1, st));
  CELL_TRY(cell_conv_pair(op, "padding", padding, 0, 0, pd));
  memset(g, 0, sizeof *g);
  g->n = n;
  g->c = g->o = c;
  g->h = h;
  g->w = w;
  g->kh = k[0];
  g->kw = k[1];
  g->groups = 1;
  g->sh = st[0];
  g->sw = st[1];
  g->dh = dl[0];
  g->dw = dl[1];
  g->pt = g->pb = pd[0];
  g->pl = g->pr = pd[1];
  int64_t eh = h + 2 * pd[0] - dl[0] * (k[0] - 1) - 1, ew = w + 2 * pd[1] - dl[1] * (k[1] - 1) - 1;
  g->oh = eh < 0 ? 0 : eh / st[0] + 1;
  g->ow = ew < 0 ? 0 : ew / st[1] + 1;
  if (g->oh < 1 || g->ow < 1)
    return cell_error(CELL_ERR_VALUE,
                      "%s: spatial size (%lld, %lld) with kernel_size (%lld, %lld), dilation "
                      "(%lld, %lld), padding (%lld, %lld) and stride (%lld, %lld) gives (%lld, "
                      "%lld) sliding blocks, but each count must be at least 1",
                      op, (long long)h, (long long)w, (long long)k[0], (long long)k[1],
                      (long long)dl[0], (long long)dl[1], (long long)pd[0], (long long)pd[1],
                      (long long)st[0], (long long)st[1], (long long)(eh < 0 ? 0 : g->oh),
                      (long long)(ew < 0 ? 0 : g->ow));
  return CELL_OK;
}

cell_status cell_cpu_unfold(const cell_tensor *x, const int64_t *kernel, const int64_t *dilation,
                            const int64_t *padding, const int64_t *stride, cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "unfold: NULL argument");
  char sb[96];
  if (x->ndim != 4)
    return cell_error(CELL_ERR_VALUE, "unfold: input must be 4-D (N, C, H, W), got shape %s",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb));
  CELL_TRY(cell_nn_check_input("unfold", x));
  cell_conv_geom g;
  CELL_TRY(geom("unfold", x->shape[0], x->shape[1], x->shape[2], x->shape[3], kernel, dilation,
                padding, stride, &g));
  int64_t rows, L, oshape[3];
  if (!cell_size_mul(g.c, g.kh * g.kw, &rows) || !cell_size_mul(g.oh, g.ow, &L))
    return cell_error(CELL_ERR_VALUE, "unfold: the unfolded input of %s is too large",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb));
  oshape[0] = g.n;
  oshape[1] = rows;
  oshape[2] = L;
  CELL_TRY(cell_check_shape("unfold", 3, oshape));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *xc = NULL, *r = NULL;
  cell_status s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK) s = cell_tensor_new_contig(ct, 3, oshape, &r);
  if (s == CELL_OK) {
    size_t es = (size_t)cell_dtype_size(ct);
    char *o = cell_tensor_base(r);
    for (int64_t n = 0; n < g.n; n++)
      cell_conv_im2col(ct, &g, cell_tensor_base(xc), n, 1, o + (size_t)(n * rows * L) * es);
    cell_tensor_bump(r);
  }
  cell_tensor_release(xc);
  return cell_nn_to_dtype(s, r, x->dtype, out);
}

cell_status cell_cpu_fold(const cell_tensor *x, const int64_t *output_size, const int64_t *kernel,
                          const int64_t *dilation, const int64_t *padding, const int64_t *stride,
                          cell_tensor **out) {
  if (!x || !output_size || !out) return cell_error(CELL_ERR_VALUE, "fold: NULL argument");
  char sb[96];
  if (x->ndim != 3)
    return cell_error(CELL_ERR_VALUE,
                      "fold: input must be 3-D (N, C * kernel_size product, L), got shape %s",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb));
  CELL_TRY(cell_nn_check_input("fold", x));
  int64_t osz[2];
  CELL_TRY(cell_conv_pair("fold", "output_size", output_size, 1, 1, osz));
  int64_t k[2];
  if (!kernel) return cell_error(CELL_ERR_VALUE, "fold: NULL kernel size");
  CELL_TRY(cell_conv_pair("fold", "kernel_size", kernel, 1, 1, k));
  if (x->shape[1] % (k[0] * k[1]))
    return cell_error(CELL_ERR_VALUE,
                      "fold: dimension 2 of input %s must be divisible by the kernel size's "
                      "product %lld x %lld = %lld",
                      cell_shape_str(x->ndim, x->shape, sb, sizeof sb), (long long)k[0],
                      (long long)k[1], (long long)(k[0] * k[1]));
  cell_conv_geom g;
  CELL_TRY(geom("fold", x->shape[0], x->shape[1] / (k[0] * k[1]), osz[0], osz[1], kernel,
                dilation, padding, stride, &g));
  if (x->shape[2] != g.oh * g.ow)
    return cell_error(CELL_ERR_VALUE,
                      "fold: output_size (%lld, %lld) gives %lld x %lld = %lld sliding blocks, "
                      "but dimension 3 of input %s is %lld",
                      (long long)osz[0], (long long)osz[1], (long long)g.oh, (long long)g.ow,
                      (long long)(g.oh * g.ow), cell_shape_str(x->ndim, x->shape, sb, sizeof sb),
                      (long long)x->shape[2]);
  int64_t oshape[4] = {g.n, g.c, g.h, g.w};
  CELL_TRY(cell_check_shape("fold", 4, oshape));
  cell_dtype ct = cell_conv_compute_dtype(x->dtype);
  cell_tensor *xc = NULL, *r = NULL;
  cell_status s = cell_conv_operand(x, ct, &xc);
  if (s == CELL_OK) s = cell_tensor_full(ct, 4, oshape, 0, &r);
  if (s == CELL_OK) {
    size_t es = (size_t)cell_dtype_size(ct);
    const char *xs = cell_tensor_base(xc);
    int64_t per = x->shape[1] * x->shape[2];
    for (int64_t n = 0; n < g.n; n++)
      cell_conv_col2im(ct, &g, xs + (size_t)(n * per) * es, n, 1, cell_tensor_base(r));
    cell_tensor_bump(r);
  }
  cell_tensor_release(xc);
  return cell_nn_to_dtype(s, r, x->dtype, out);
}
