/* loss_pointwise.c - the elementwise losses and their gradients
 * (src/ops/nn.h): mse_loss and l1_loss (x and y broadcast together) and
 * bce_with_logits (weight and pos_weight broadcast to the logits).
 *
 * The operands are walked with byte strides (0 along broadcast
 * dimensions), one run of the last dimension at a time, loaded in chunks
 * into double buffers. Reductions add the runs serially in row-major order,
 * so results do not depend on the thread count. */
#include "nn.h"
#include "ops.h"
#include "kernel_list.h"

#define CHUNK CELL_NN_CHUNK

/* The result of a reduced loss: a 0-D tensor holding v. */
static cell_status scalar_out(cell_dtype dt, double v, cell_tensor **out) {
  return cell_tensor_full(dt, 0, NULL, v, out);
}

/* A chunk of n per-element losses l, at element i0 of a row: stored into
 * the row (dst) of r when there is no reduction, else added to *total
 * (the forward kernels then run on one thread). */
static void emit_chunk(cell_tensor *r, cell_dtype dt, const char *dst, int64_t i0, int64_t re,
                       int64_t n, const double *l, double *total) {
  if (r) {
    cell_store_run(dt, (char *)dst + i0 * re, re, n, l);
    return;
  }
  double acc = 0;
  CELL_NN_SIMD_SUM(acc) for (int64_t i = 0; i < n; i++) acc += l[i];
  *total += acc;
}

/* The forward result: r itself (no reduction), or the sum (or the mean
 * over count elements) as a 0-D tensor. */
static cell_status finish(cell_tensor *r, cell_reduction red, double total, int64_t count,
                          cell_dtype dt, cell_tensor **out) {
  if (r) {
    *out = r;
    return CELL_OK;
  }
  if (red == CELL_REDUCTION_MEAN) total /= (double)count;
  return scalar_out(dt, total, out);
}

/* --- a walk over broadcast operands --------------------------------------------------------- */

#define WALK_MAX 6

typedef struct {
  int ndim, nops;
  int64_t shape[CELL_MAX_DIMS];
  int64_t rows, len;
  const char *base[WALK_MAX];
  cell_dtype dt[WALK_MAX];
  int64_t stride[WALK_MAX][CELL_MAX_DIMS]; /* bytes; 0 along broadcast dimensions */
} walk;

static void walk_init(walk *w, int ndim, const int64_t *shape) {
  memset(w, 0, sizeof *w);
  w->ndim = ndim;
  memcpy(w->shape, shape, sizeof(int64_t) * (size_t)ndim);
  w->len = ndim ? shape[ndim - 1] : 1;
  w->rows = cell_shape_numel(ndim ? ndim - 1 : 0, shape);
}

/* Operand t (broadcastable to the walk's shape, or NULL: absent). */
static void walk_add(walk *w, const cell_tensor *t) {
  int k = w->nops++;
  if (!t) return;
  int64_t es = cell_dtype_size(t->dtype);
  w->base[k] = cell_tensor_base(t);
  w->dt[k] = t->dtype;
  for (int i = 0; i < w->ndim; i++) {
    int ti = t->ndim - w->ndim + i;
    w->stride[k][i] = ti < 0 || t->shape[ti] == 1 ? 0 : t->stride[ti] * es;
  }
}

/* Pointers to the first element of row r for every operand. */
static void walk_row(const walk *w, int64_t r, const char **p) {
  for (int k = 0; k < w->nops; k++) p[k] = w->base[k];
  for (int d = w->ndim - 2; d >= 0; d--) {
    int64_t i = r % w->shape[d];
    r /= w->shape[d];
    for (int k = 0; k < w->nops; k++)
      if (p[k]) p[k] += i * w->stride[k][d];
  }
}

/* Load n elements of operand k from p (row pointers), at element i0 of the row. */
static void walk_load(const walk *w, int k, const char *const *p, int64_t i0, int64_t n,
                      double *buf) {
  int64_t s = w->ndim ? w->stride[k][w->ndim - 1] : 0;
  cell_load_run(w->dt[k], p[k] + i0 * s, s, n, buf);
}

static cell_status check_pair(const char *op, const cell_tensor *x, const cell_tensor *y,
                              cell_reduction red, int *nd, int64_t *shape) {
  if (!x || !y) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(cell_nn_check_float(op, "the input", x));
  CELL_TRY(cell_nn_check_float(op, "the target", y));
  CELL_TRY(cell_nn_check_reduction(op, red));
  return cell_broadcast_shapes(op, x->ndim, x->shape, y->ndim, y->shape, nd, shape);
}

cell_status cell_cpu_pointwise_loss(cell_loss_kind kind, const cell_tensor *x, const cell_tensor *y,
                                  cell_reduction red, cell_tensor **out) {
  const char *op = kind == CELL_LOSS_MSE ? "mse_loss" : "l1_loss";
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(check_pair(op, x, y, red, &nd, shape));
  walk w;
  walk_init(&w, nd, shape);
  cell_tensor *r = NULL;
  if (red == CELL_REDUCTION_NONE) CELL_TRY(cell_tensor_new_contig(x->dtype, nd, shape, &r));
  walk_add(&w, r);
  walk_add(&w, x);
  walk_add(&w, y);
  double total = 0;
  int64_t re = cell_dtype_size(x->dtype);
  CELL_FOR(r && cell_nn_parallel(w.rows, w.rows * w.len), int64_t, row, w.rows, {
    const char *p[WALK_MAX];
    double xb[CHUNK], yb[CHUNK];
    walk_row(&w, row, p);
    for (int64_t i0 = 0; i0 < w.len; i0 += CHUNK) {
      int64_t n = w.len - i0 < CHUNK ? w.len - i0 : CHUNK;
      walk_load(&w, 1, p, i0, n, xb);
      walk_load(&w, 2, p, i0, n, yb);
      if (kind == CELL_LOSS_MSE) {
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) xb[i] = (xb[i] - yb[i]) * (xb[i] - yb[i]);
      } else {
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) xb[i] = fabs(xb[i] - yb[i]);
      }
      emit_chunk(r, x->dtype, p[0], i0, re, n, xb, &total);
    }
  });
  return finish(r, red, total, w.rows * w.len, x->dtype, out);
}

cell_status cell_cpu_pointwise_loss_backward(cell_loss_kind kind, const cell_tensor *g,
                                           const cell_tensor *x, const cell_tensor *y,
                                           cell_reduction red, cell_tensor **gx) {
  const char *op = kind == CELL_LOSS_MSE ? "mse_loss backward" : "l1_loss backward";
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  if (!g || !gx) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(check_pair(op, x, y, red, &nd, shape));
  double k = 1;
  if (red != CELL_REDUCTION_NONE) {
    CELL_TRY(cell_nn_scalar_grad(op, g, &k));
    if (red == CELL_REDUCTION_MEAN) k /= (double)cell_shape_numel(nd, shape);
  } else if (!cell_shape_equal(g->ndim, g->shape, nd, shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for an output of shape %s", op,
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(nd, shape, b2, sizeof b2));
  }
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(x->dtype, nd, shape, &r));
  walk w;
  walk_init(&w, nd, shape);
  walk_add(&w, r);
  walk_add(&w, x);
  walk_add(&w, y);
  walk_add(&w, red == CELL_REDUCTION_NONE ? g : NULL);
  int64_t re = cell_dtype_size(x->dtype);
  CELL_FOR(cell_nn_parallel(w.rows, w.rows * w.len), int64_t, row, w.rows, {
    const char *p[WALK_MAX];
    double xb[CHUNK], yb[CHUNK], gb[CHUNK];
    walk_row(&w, row, p);
    for (int64_t i0 = 0; i0 < w.len; i0 += CHUNK) {
      int64_t n = w.len - i0 < CHUNK ? w.len - i0 : CHUNK;
      walk_load(&w, 1, p, i0, n, xb);
      walk_load(&w, 2, p, i0, n, yb);
      if (p[3]) walk_load(&w, 3, p, i0, n, gb);
      if (!p[3])
        for (int64_t i = 0; i < n; i++) gb[i] = k;
      if (kind == CELL_LOSS_MSE) {
        CELL_NN_SIMD for (int64_t i = 0; i < n; i++) xb[i] = 2 * (xb[i] - yb[i]) * gb[i];
      } else {
        for (int64_t i = 0; i < n; i++) {
          double d = xb[i] - yb[i];
          xb[i] = d > 0 ? gb[i] : d < 0 ? -gb[i] : 0.0;
        }
      }
      cell_store_run(x->dtype, (char *)p[0] + i0 * re, re, n, xb);
    }
  });
  *gx = r;
  return CELL_OK;
}

/* --- bce_with_logits -------------------------------------------------------------------------- */

static cell_status check_bce(const cell_tensor *x, const cell_tensor *y, const cell_tensor *w,
                             const cell_tensor *pw, cell_reduction red) {
  const char *op = "bce_with_logits";
  char b1[256], b2[256];
  if (!x || !y) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(cell_nn_check_float(op, "the input", x));
  CELL_TRY(cell_nn_check_float(op, "the target", y));
  CELL_TRY(cell_nn_check_reduction(op, red));
  if (!cell_shape_equal(y->ndim, y->shape, x->ndim, x->shape))
    return cell_error(CELL_ERR_VALUE,
                      "%s: target of shape %s must have the shape of the input, %s", op,
                      cell_shape_str(y->ndim, y->shape, b1, sizeof b1),
                      cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  const cell_tensor *ps[2] = {w, pw};
  const char *names[2] = {"weight", "pos_weight"};
  for (int i = 0; i < 2; i++) {
    if (!ps[i]) continue;
    CELL_TRY(cell_nn_check_float(op, names[i], ps[i]));
    int nd;
    int64_t shape[CELL_MAX_DIMS];
    cell_status s =
        cell_broadcast_shapes(op, ps[i]->ndim, ps[i]->shape, x->ndim, x->shape, &nd, shape);
    if (s != CELL_OK || !cell_shape_equal(nd, shape, x->ndim, x->shape))
      return cell_error(CELL_ERR_VALUE, "%s: %s of shape %s does not broadcast to the input of "
                        "shape %s", op, names[i],
                        cell_shape_str(ps[i]->ndim, ps[i]->shape, b1, sizeof b1),
                        cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  return CELL_OK;
}

/* log(1 + exp(-x)), without overflow. */
static inline double softplus_neg(double x) { return log1p(exp(-fabs(x))) + (x < 0 ? -x : 0.0); }

/* 1 - sigmoid(x) = sigmoid(-x), stable. */
static inline double sigmoid_neg(double x) {
  return x >= 0 ? exp(-x) / (1.0 + exp(-x)) : 1.0 / (1.0 + exp(x));
}

cell_status cell_cpu_bce_with_logits(const cell_tensor *x, const cell_tensor *y,
                                   const cell_tensor *weight, const cell_tensor *pos_weight,
                                   cell_reduction red, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "bce_with_logits: NULL argument");
  CELL_TRY(check_bce(x, y, weight, pos_weight, red));
  cell_tensor *r = NULL;
  if (red == CELL_REDUCTION_NONE) CELL_TRY(cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &r));
  walk w;
  walk_init(&w, x->ndim, x->shape);
  walk_add(&w, r);
  walk_add(&w, x);
  walk_add(&w, y);
  walk_add(&w, weight);
  walk_add(&w, pos_weight);
  double total = 0;
  int64_t re = cell_dtype_size(x->dtype);
  CELL_FOR(r && cell_nn_parallel(w.rows, w.rows * w.len), int64_t, row, w.rows, {
    const char *p[WALK_MAX];
    double xb[CHUNK], yb[CHUNK], wb[CHUNK], pb[CHUNK];
    walk_row(&w, row, p);
    for (int64_t i0 = 0; i0 < w.len; i0 += CHUNK) {
      int64_t n = w.len - i0 < CHUNK ? w.len - i0 : CHUNK;
      walk_load(&w, 1, p, i0, n, xb);
      walk_load(&w, 2, p, i0, n, yb);
      if (p[3]) walk_load(&w, 3, p, i0, n, wb);
      if (p[4]) walk_load(&w, 4, p, i0, n, pb);
      for (int64_t i = 0; i < n; i++) {
        double t = yb[i], lw = p[4] ? 1 + (pb[i] - 1) * t : 1.0;
        double l = (1 - t) * xb[i] + lw * softplus_neg(xb[i]);
        xb[i] = p[3] ? l * wb[i] : l;
      }
      emit_chunk(r, x->dtype, p[0], i0, re, n, xb, &total);
    }
  });
  return finish(r, red, total, w.rows * w.len, x->dtype, out);
}

cell_status cell_cpu_bce_with_logits_backward(const cell_tensor *g, const cell_tensor *x,
                                            const cell_tensor *y, const cell_tensor *weight,
                                            const cell_tensor *pos_weight, cell_reduction red,
                                            cell_tensor **gx, cell_tensor **gy, cell_tensor **gw,
                                            cell_tensor **gpw) {
  const char *op = "bce_with_logits backward";
  if (!g) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(check_bce(x, y, weight, pos_weight, red));
  double k = 1;
  if (red != CELL_REDUCTION_NONE) {
    CELL_TRY(cell_nn_scalar_grad(op, g, &k));
    if (red == CELL_REDUCTION_MEAN) k /= (double)cell_tensor_numel(x);
  } else if (!cell_shape_equal(g->ndim, g->shape, x->ndim, x->shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for an output of shape %s", op,
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  }
  cell_tensor **outs[4] = {gx, gy, gw, gpw}, *rs[4] = {NULL, NULL, NULL, NULL};
  cell_status s = CELL_OK;
  for (int i = 0; i < 4 && s == CELL_OK; i++)
    if (outs[i]) s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &rs[i]);
  if (s != CELL_OK) return cell_release4(s, rs[0], rs[1], rs[2], rs[3]);
  walk w;
  walk_init(&w, x->ndim, x->shape);
  walk_add(&w, x);
  walk_add(&w, y);
  walk_add(&w, weight);
  walk_add(&w, pos_weight);
  walk_add(&w, red == CELL_REDUCTION_NONE ? g : NULL);
  int64_t re = cell_dtype_size(x->dtype);
  CELL_FOR(cell_nn_parallel(w.rows, w.rows * w.len), int64_t, row, w.rows, {
    const char *p[WALK_MAX];
    double xb[CHUNK], yb[CHUNK], wb[CHUNK], pb[CHUNK], gb[CHUNK], o[4][CHUNK];
    walk_row(&w, row, p);
    int64_t ro = row * w.len; /* the row's first element in the contiguous results */
    for (int64_t i0 = 0; i0 < w.len; i0 += CHUNK) {
      int64_t n = w.len - i0 < CHUNK ? w.len - i0 : CHUNK;
      walk_load(&w, 0, p, i0, n, xb);
      walk_load(&w, 1, p, i0, n, yb);
      if (p[2]) walk_load(&w, 2, p, i0, n, wb);
      if (p[3]) walk_load(&w, 3, p, i0, n, pb);
      if (p[4]) walk_load(&w, 4, p, i0, n, gb);
      for (int64_t i = 0; i < n; i++) {
        double xv = xb[i], t = yb[i], pwv = p[3] ? pb[i] : 1.0, wv = p[2] ? wb[i] : 1.0;
        double sc = p[4] ? gb[i] : k, lw = 1 + (pwv - 1) * t, sp = softplus_neg(xv);
        o[0][i] = sc * wv * ((1 - t) - lw * sigmoid_neg(xv));
        o[1][i] = sc * wv * (-xv + (pwv - 1) * sp);
        o[2][i] = sc * ((1 - t) * xv + lw * sp);
        o[3][i] = sc * wv * t * sp;
      }
      for (int j = 0; j < 4; j++)
        if (rs[j]) cell_store_run(x->dtype, (char *)cell_tensor_base(rs[j]) + (ro + i0) * re, re, n, o[j]);
    }
  });
  for (int i = 0; i < 4; i++)
    if (outs[i]) *outs[i] = rs[i];
  return CELL_OK;
}
