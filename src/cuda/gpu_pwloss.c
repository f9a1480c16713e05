/* gpu_pwloss.c - the GPU table's pointwise losses: mse_loss and l1_loss
 * (x and y broadcast together) and their gradients, src/ops/
 * loss_pointwise.c's formulas and checks, composed from the elementwise
 * kernels in float64: the difference, its square or absolute value, the
 * sum over every element (gpuk_reduce) for a reduced loss, then the
 * input's dtype. The backward keeps a reduced loss's incoming gradient on
 * the device (a 0-D g broadcast), so it does not wait for the stream. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"

static const char *loss_name(cell_loss_kind kind, int backward) {
  if (kind == CELL_LOSS_MSE) return backward ? "mse_loss backward" : "mse_loss";
  return backward ? "l1_loss backward" : "l1_loss";
}

static cell_status check_float(const char *op, const char *what, const cell_tensor *t) {
  if (!cell_dtype_is_float(t->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: %s must be a floating-point tensor, got %s", op, what,
                      cell_dtype_name(t->dtype));
  return CELL_OK;
}

/* The checks of loss_pointwise.c and the broadcast shape of x and y. */
static cell_status check_pair(const char *op, const cell_tensor *x, const cell_tensor *y, cell_reduction red, int *nd,
                              int64_t *shape) {
  CELL_TRY(check_float(op, "the input", x));
  CELL_TRY(check_float(op, "the target", y));
  if ((unsigned)red >= CELL_REDUCTION_COUNT) return cell_error(CELL_ERR_VALUE, "%s: unknown reduction %d", op, (int)red);
  int n = x->ndim > y->ndim ? x->ndim : y->ndim;
  for (int i = 0; i < n; i++) {
    int ix = x->ndim - n + i, iy = y->ndim - n + i;
    int64_t a = ix >= 0 ? x->shape[ix] : 1, b = iy >= 0 ? y->shape[iy] : 1;
    if (a != b && a != 1 && b != 1) {
      char ba[256], bb[256];
      return cell_error(CELL_ERR_VALUE, "%s: shapes %s and %s cannot be broadcast", op,
                        cell_shape_str(x->ndim, x->shape, ba, sizeof ba), cell_shape_str(y->ndim, y->shape, bb, sizeof bb));
    }
    shape[i] = a == 1 ? b : a;
  }
  *nd = n;
  return CELL_OK;
}

/* t[0] = x - y over shape in float64 (t[1], t[2]: x and y spread). */
static cell_status difference(const char *op, const cell_tensor *x, const cell_tensor *y, int nd, const int64_t *shape,
                              cell_tensor **t) {
  gpu_ctx *g = gpu_ctx_of(x);
  cell_status s = gpu_spread(x, CELL_DTYPE_F64, nd, shape, &t[1]);
  if (s == CELL_OK) s = gpu_spread(y, CELL_DTYPE_F64, nd, shape, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, nd, shape, &t[0]);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_binary(g->stream, GPUK_F64, GPUK_SUB, gpu_data(t[1]), gpu_data(t[2]), gpu_data(t[0]),
                               gpu_numel(t[0])),
                   op);
  return s;
}

cell_status gpu_pointwise_loss(cell_loss_kind kind, const cell_tensor *x, const cell_tensor *y, cell_reduction red,
                               cell_tensor **out) {
  const char *op = loss_name(kind, 0);
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(check_pair(op, x, y, red, &nd, shape));
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *t[5] = {NULL, NULL, NULL, NULL, NULL}; /* d, x, y, sum, result */
  cell_status s = difference(op, x, y, nd, shape, t);
  int64_t n = t[0] ? gpu_numel(t[0]) : 0;
  if (s == CELL_OK) { /* the per-element losses, in place */
    s = gpu_launch(kind == CELL_LOSS_MSE
                       ? gpuk_binary(g->stream, GPUK_F64, GPUK_MUL, gpu_data(t[0]), gpu_data(t[0]), gpu_data(t[0]), n)
                       : gpuk_unary(g->stream, GPUK_F64, GPUK_ABS, gpu_data(t[0]), gpu_data(t[0]), n),
                   op);
  }
  if (s == CELL_OK && red == CELL_REDUCTION_NONE) {
    s = gpu_contig_as(t[0], x->dtype, &t[4]);
  } else if (s == CELL_OK) {
    s = gpu_new_tensor(g, CELL_DTYPE_F64, 0, NULL, &t[3]);
    if (s == CELL_OK)
      s = gpu_launch(gpuk_reduce(g->stream, GPUK_F64, red == CELL_REDUCTION_MEAN ? GPUK_RED_MEAN : GPUK_RED_SUM,
                                 gpu_data(t[0]), gpu_data(t[3]), 1, n, 1),
                     op);
    if (s == CELL_OK) s = gpu_contig_as(t[3], x->dtype, &t[4]);
  }
  if (s == CELL_OK) {
    *out = t[4];
    t[4] = NULL;
  }
  gpu_release_all(t, 5);
  return s;
}

cell_status gpu_pointwise_loss_backward(cell_loss_kind kind, const cell_tensor *g, const cell_tensor *x,
                                        const cell_tensor *y, cell_reduction red, cell_tensor **gx) {
  const char *op = loss_name(kind, 1);
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(check_pair(op, x, y, red, &nd, shape));
  double k = kind == CELL_LOSS_MSE ? 2.0 : 1.0;
  if (red != CELL_REDUCTION_NONE) {
    if (gpu_numel(g) != 1)
      return cell_error(CELL_ERR_RUNTIME, "%s: the gradient of a reduced loss must have one element", op);
    if (red == CELL_REDUCTION_MEAN) k /= (double)gpu_shape_numel(nd, shape);
  } else {
    int same = g->ndim == nd;
    for (int d = 0; same && d < nd; d++) same = g->shape[d] == shape[d];
    if (!same) {
      char b1[256], b2[256];
      return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for an output of shape %s", op,
                        cell_shape_str(g->ndim, g->shape, b1, sizeof b1), cell_shape_str(nd, shape, b2, sizeof b2));
    }
  }
  gpu_ctx *c = gpu_ctx_of(x);
  cell_tensor *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL}; /* d, x, y, g spread, k g d, result */
  cell_status s = difference(op, x, y, nd, shape, t);
  /* g over the shape: a reduced loss's one element broadcast. */
  cell_tensor *gv = NULL;
  if (s == CELL_OK && red != CELL_REDUCTION_NONE && g->ndim) s = gpu_reshape(g, 0, NULL, &gv);
  if (s == CELL_OK) s = gpu_spread(gv ? gv : g, CELL_DTYPE_F64, nd, shape, &t[3]);
  if (gv) cell_tensor_release(gv);
  int64_t n = t[0] ? gpu_numel(t[0]) : 0;
  if (s == CELL_OK) s = gpu_new_tensor(c, CELL_DTYPE_F64, nd, shape, &t[4]);
  /* mse: g d (then 2 k); l1: g sign(d) (then k), autograd's |.| formula. */
  if (s == CELL_OK)
    s = gpu_launch(gpuk_ew(c->stream, GPUK_F64, kind == CELL_LOSS_MSE ? GPUK_EW_MUL : GPUK_EW_ABS, 0.0, 0.0,
                           gpu_data(t[3]), gpu_data(t[0]), NULL, gpu_data(t[4]), n),
                   op);
  if (s == CELL_OK && k != 1.0)
    s = gpu_launch(gpuk_binary_scalar(c->stream, GPUK_F64, GPUK_MUL, gpu_data(t[4]), k, 0, gpu_data(t[4]), n), op);
  if (s == CELL_OK) s = gpu_contig_as(t[4], x->dtype, &t[5]);
  if (s == CELL_OK) {
    *gx = t[5];
    t[5] = NULL;
  }
  gpu_release_all(t, 6);
  return s;
}
