/* gpu_bce.c - the GPU table's bce_with_logits and its backward: the
 * operands broadcast to the logits' shape as contiguous float64 (weight,
 * pos_weight; the backward's one-element gradient of a reduced loss
 * everywhere), gpu_act.cu's elementwise formulas in double, then
 * gpu_reduce's sum or mean, and the results cast to the logits' dtype.
 * src/ops/loss_pointwise.c's checks and messages. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

static const char *const OP = "bce_with_logits";

static int is_float_dt(cell_dtype dt) {
  return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64 || dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16;
}

static int same_shape(const cell_tensor *a, const cell_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

static cell_status check_float(const char *what, const cell_tensor *t) {
  if (!is_float_dt(t->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: %s must be a floating-point tensor, got %s", OP, what,
                      cell_dtype_name(t->dtype));
  return CELL_OK;
}

/* Whether t broadcasts to x's shape (right-aligned, sizes 1 or equal). */
static int broadcasts_to(const cell_tensor *t, const cell_tensor *x) {
  if (t->ndim > x->ndim) return 0;
  for (int d = 0; d < t->ndim; d++) {
    int64_t a = t->shape[d], b = x->shape[d + x->ndim - t->ndim];
    if (a != b && a != 1) return 0;
  }
  return 1;
}

static cell_status check_bce(const cell_tensor *x, const cell_tensor *y, const cell_tensor *w, const cell_tensor *pw,
                             cell_reduction red) {
  char b1[256], b2[256];
  if (!x || !y) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", OP);
  CELL_TRY(check_float("the input", x));
  CELL_TRY(check_float("the target", y));
  if ((unsigned)red >= CELL_REDUCTION_COUNT) return cell_error(CELL_ERR_VALUE, "%s: unknown reduction %d", OP, (int)red);
  if (!same_shape(y, x))
    return cell_error(CELL_ERR_VALUE, "%s: target of shape %s must have the shape of the input, %s", OP,
                      cell_shape_str(y->ndim, y->shape, b1, sizeof b1), cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  const cell_tensor *ps[2] = {w, pw};
  const char *names[2] = {"weight", "pos_weight"};
  for (int i = 0; i < 2; i++) {
    if (!ps[i]) continue;
    CELL_TRY(check_float(names[i], ps[i]));
    if (!broadcasts_to(ps[i], x))
      return cell_error(CELL_ERR_VALUE, "%s: %s of shape %s does not broadcast to the input of shape %s", OP, names[i],
                        cell_shape_str(ps[i]->ndim, ps[i]->shape, b1, sizeof b1),
                        cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  return CELL_OK;
}

/* t over x's shape as a contiguous float64 tensor (stride 0 where t
 * broadcasts; everywhere when every: t's one element repeated). NULL t:
 * NULL. */
static cell_status spread64(const cell_tensor *t, const cell_tensor *x, int every, cell_tensor **out) {
  *out = NULL;
  if (!t) return CELL_OK;
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = x->ndim;
  for (int d = 0; d < x->ndim; d++) {
    int k = d - (x->ndim - t->ndim);
    L.shape[d] = x->shape[d];
    L.stride[d] = every || k < 0 || t->shape[k] == 1 ? 0 : t->stride[k];
  }
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *o;
  CELL_TRY(gpu_new_tensor(g, CELL_DTYPE_F64, x->ndim, x->shape, &o));
  cell_status s = gpu_launch(
      gpuk_copy_cast(g->stream, L, (int)t->dtype, gpu_data(t), (int)CELL_DTYPE_F64, gpu_data(o), gpu_numel(o)), OP);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

static const double *D(const cell_tensor *t) { return t ? (const double *)gpu_data(t) : NULL; }
static double *W(cell_tensor *t) { return t ? (double *)gpu_data(t) : NULL; }

cell_status gpu_bce_with_logits(const cell_tensor *x, const cell_tensor *y, const cell_tensor *weight,
                                const cell_tensor *pos_weight, cell_reduction red, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", OP);
  CELL_TRY(check_bce(x, y, weight, pos_weight, red));
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL}; /* X Y Wt PW loss sum */
  cell_tensor *r = NULL;
  cell_status s = spread64(x, x, 0, &t[0]);
  if (s == CELL_OK) s = spread64(y, x, 0, &t[1]);
  if (s == CELL_OK) s = spread64(weight, x, 0, &t[2]);
  if (s == CELL_OK) s = spread64(pos_weight, x, 0, &t[3]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, x->ndim, x->shape, &t[4]);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_bce(g->stream, 0, D(t[0]), D(t[1]), D(t[2]), D(t[3]), NULL, 1.0, W(t[4]), NULL, NULL, NULL,
                            gpu_numel(x)),
                   OP);
  if (s == CELL_OK && red != CELL_REDUCTION_NONE)
    s = gpu_reduce(red == CELL_REDUCTION_MEAN ? CELL_RED_MEAN : CELL_RED_SUM, t[4], 0, NULL, 0, &t[5]);
  if (s == CELL_OK) s = gpu_contig_as(red == CELL_REDUCTION_NONE ? t[4] : t[5], x->dtype, &r);
  gpu_release_all(t, 6);
  if (s != CELL_OK) return s;
  *out = r;
  return CELL_OK;
}

cell_status gpu_bce_with_logits_backward(const cell_tensor *gr, const cell_tensor *x, const cell_tensor *y,
                                         const cell_tensor *weight, const cell_tensor *pos_weight, cell_reduction red,
                                         cell_tensor **gx, cell_tensor **gy, cell_tensor **gw, cell_tensor **gpw) {
  const char *op = "bce_with_logits backward";
  if (!gr) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(check_bce(x, y, weight, pos_weight, red));
  double k = 1;
  if (red != CELL_REDUCTION_NONE) {
    if (gpu_numel(gr) != 1)
      return cell_error(CELL_ERR_RUNTIME, "%s: the gradient of a reduced loss must have one element", op);
    if (red == CELL_REDUCTION_MEAN) k /= (double)gpu_numel(x);
  } else if (!same_shape(gr, x)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for an output of shape %s", op,
                      cell_shape_str(gr->ndim, gr->shape, b1, sizeof b1), cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *t[9] = {NULL}; /* X Y Wt PW G, then the four float64 gradients */
  cell_tensor **outs[4] = {gx, gy, gw, gpw}, *rs[4] = {NULL, NULL, NULL, NULL};
  cell_status s = spread64(x, x, 0, &t[0]);
  if (s == CELL_OK) s = spread64(y, x, 0, &t[1]);
  if (s == CELL_OK) s = spread64(weight, x, 0, &t[2]);
  if (s == CELL_OK) s = spread64(pos_weight, x, 0, &t[3]);
  if (s == CELL_OK) s = spread64(gr, x, red != CELL_REDUCTION_NONE, &t[4]);
  for (int i = 0; i < 4 && s == CELL_OK; i++)
    if (outs[i]) s = gpu_new_tensor(g, CELL_DTYPE_F64, x->ndim, x->shape, &t[5 + i]);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_bce(g->stream, 1, D(t[0]), D(t[1]), D(t[2]), D(t[3]), D(t[4]), k, W(t[5]), W(t[6]), W(t[7]),
                            W(t[8]), gpu_numel(x)),
                   op);
  for (int i = 0; i < 4 && s == CELL_OK; i++)
    if (outs[i]) s = gpu_contig_as(t[5 + i], x->dtype, &rs[i]);
  gpu_release_all(t, 9);
  if (s != CELL_OK) {
    gpu_release_all(rs, 4);
    return s;
  }
  for (int i = 0; i < 4; i++)
    if (outs[i]) *outs[i] = rs[i];
  return CELL_OK;
}
