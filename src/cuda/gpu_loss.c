/* gpu_loss.c - the GPU table's cross_entropy and nll_loss rows, forward
 * and backward (the CUDA side is gpu_loss.cu): class ids or (cross-entropy)
 * probabilities, class weights, ignore_index, label smoothing and the three
 * reductions, with the CPU's formulas (src/ops/loss.c). The forward reads
 * two numbers back (the mean's divisor, and whether a class id was out of
 * range, raised as the CPU's IndexError), so it waits for the stream once;
 * the backward reads the incoming gradient on the device and does not wait. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

typedef struct {
  int64_t n, c, inner, rows;
  int probs;
} geom;

/* What the forward and backward share: contiguous logits, the target
 * (probabilities contiguous, or classes), weights as float64 and their sum
 * on the device, and the rows' weights (class targets). */
typedef struct {
  geom g;
  cell_tensor *t[6]; /* x, probs, cls, w, wsum, wrow */
} state;

static cell_status check(const char *op, const cell_tensor *x, const cell_tensor *t, const cell_ce_args *a,
                         int allow_probs, geom *g) {
  if ((unsigned)a->reduction >= CELL_REDUCTION_COUNT)
    return cell_error(CELL_ERR_VALUE, "%s: unknown reduction %d", op, (int)a->reduction);
  if (x->ndim < 1)
    return cell_error(CELL_ERR_VALUE, "%s: the input must have a class dimension ({C}, {N, C} or {N, C, ...}), got a 0-D tensor", op);
  g->n = x->ndim == 1 ? 1 : x->shape[0];
  g->c = x->ndim == 1 ? x->shape[0] : x->shape[1];
  g->inner = 1;
  for (int d = 2; d < x->ndim; d++) g->inner *= x->shape[d];
  g->rows = g->n * g->inner;
  int is_float = t->dtype == CELL_DTYPE_F32 || t->dtype == CELL_DTYPE_F64;
  if (t->dtype == CELL_DTYPE_BOOL || (is_float && !allow_probs))
    return cell_error(CELL_ERR_TYPE, "%s: target must be an integer tensor of class ids%s, got %s", op,
                      allow_probs ? " or a float tensor of probabilities" : "", cell_dtype_name(t->dtype));
  g->probs = is_float;
  int64_t want[CELL_MAX_DIMS];
  int nw = 0;
  for (int d = 0; d < x->ndim; d++)
    if (g->probs || d != (x->ndim == 1 ? 0 : 1)) want[nw++] = x->shape[d];
  int same = t->ndim == nw;
  for (int d = 0; same && d < nw; d++) same = t->shape[d] == want[d];
  if (!same)
    return cell_error(CELL_ERR_VALUE,
                      g->probs ? "%s: a target of probabilities must have the shape of the input"
                               : "%s: the target does not match the input (expected the input's shape without the "
                                 "class dimension)",
                      op);
  if (a->weight && (a->weight->ndim != 1 || a->weight->shape[0] != g->c))
    return cell_error(CELL_ERR_VALUE, "%s: weight does not match the %lld classes of the input", op, (long long)g->c);
  if (!(a->label_smoothing >= 0 && a->label_smoothing <= 1))
    return cell_error(CELL_ERR_VALUE, "%s: label_smoothing must lie in [0, 1], got %g", op, a->label_smoothing);
  return CELL_OK;
}

/* den (class targets): the summed weights of the counted rows, read back
 * with the out-of-range flag; *den stays untouched for probabilities. */
static cell_status state_init(const char *op, const cell_tensor *x, const cell_tensor *t, const cell_ce_args *a,
                              int allow_probs, int want_den, double *den, state *st) {
  memset(st, 0, sizeof *st);
  CELL_TRY(check(op, x, t, a, allow_probs, &st->g));
  gpu_ctx *g = gpu_ctx_of(x);
  const geom *ge = &st->g;
  int64_t one = 1;
  cell_status s = gpu_contig_as(x, x->dtype, &st->t[0]);
  if (s == CELL_OK && ge->probs) s = gpu_contig_as(t, t->dtype, &st->t[1]);
  if (s == CELL_OK && a->weight) s = gpu_contig_as(a->weight, CELL_DTYPE_F64, &st->t[3]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &one, &st->t[4]);
  if (s == CELL_OK) { /* the weights' sum */
    if (st->t[3]) {
      s = gpu_launch(gpuk_reduce(g->stream, GPUK_F64, GPUK_RED_SUM, gpu_data(st->t[3]), gpu_data(st->t[4]), 1, ge->c, 1), op);
    } else {
      double c = (double)ge->c;
      s = gpu_fill(g, gpu_data(st->t[4]), 8, &c, 8);
    }
  }
  if (s == CELL_OK && !ge->probs) {
    cell_tensor *ids = NULL, *bad = NULL, *dsum = NULL;
    s = gpu_contig_as(t, CELL_DTYPE_I64, &ids);
    if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &ge->rows, &st->t[2]);
    if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &ge->rows, &st->t[5]);
    if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_I64, 1, &one, &bad);
    static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    if (s == CELL_OK) s = gpu_fill(g, gpu_data(bad), 8, ones, 8);
    if (s == CELL_OK)
      s = gpu_launch(gpuk_ce_classes(g->stream, gpu_data(ids), gpu_data(st->t[2]), gpu_data(st->t[5]),
                                     st->t[3] ? gpu_data(st->t[3]) : NULL, ge->rows, ge->c, a->has_ignore,
                                     (long long)a->ignore_index, (long long)a->index_base, gpu_data(bad)),
                     op);
    unsigned long long b = ~0ull;
    if (s == CELL_OK) s = gpu_copy_d2h(g, &b, gpu_data(bad), 8);
    if (s == CELL_OK && b != ~0ull) {
      long long raw = 0;
      s = gpu_copy_d2h(g, &raw, (char *)gpu_data(ids) + (b - 1) * 8, 8);
      if (s == CELL_OK)
        s = cell_error(CELL_ERR_INDEX, "%s: target %lld is out of range for %lld classes", op, raw, (long long)ge->c);
    }
    if (s == CELL_OK && want_den) {
      s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &one, &dsum);
      if (s == CELL_OK)
        s = gpu_launch(gpuk_reduce(g->stream, GPUK_F64, GPUK_RED_SUM, gpu_data(st->t[5]), gpu_data(dsum), 1, ge->rows, 1), op);
      if (s == CELL_OK) s = gpu_copy_d2h(g, den, gpu_data(dsum), 8);
    }
    cell_tensor *tmp[3] = {ids, bad, dsum};
    gpu_release_all(tmp, 3);
  } else if (want_den) {
    *den = (double)ge->rows;
  }
  if (s != CELL_OK) gpu_release_all(st->t, 6);
  return s;
}

/* The per-row values v as the loss: cast (NONE, the input's shape without
 * the class dimension) or summed and divided (MEAN by den). */
static cell_status finish(const cell_tensor *x, const geom *ge, cell_reduction red, const cell_tensor *v, double den,
                          cell_tensor **out) {
  gpu_ctx *g = gpu_ctx_of(x);
  cell_tensor *o = NULL, *sum = NULL;
  cell_status s;
  if (red == CELL_REDUCTION_NONE) {
    int64_t shape[CELL_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
      if (d != (x->ndim == 1 ? 0 : 1)) shape[nd++] = x->shape[d];
    s = gpu_new_tensor(g, x->dtype, nd, shape, &o);
    if (s == CELL_OK) s = gpu_launch(gpuk_scale_cast(g->stream, gpu_data(v), (int)x->dtype, gpu_data(o), ge->rows, 1.0), "loss");
  } else {
    int64_t one = 1;
    s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &one, &sum);
    if (s == CELL_OK) s = gpu_launch(gpuk_reduce(g->stream, GPUK_F64, GPUK_RED_SUM, gpu_data(v), gpu_data(sum), 1, ge->rows, 1), "loss");
    if (s == CELL_OK) s = gpu_new_tensor(g, x->dtype, 0, NULL, &o);
    if (s == CELL_OK)
      s = gpu_launch(gpuk_scale_cast(g->stream, gpu_data(sum), (int)x->dtype, gpu_data(o), 1,
                                     red == CELL_REDUCTION_MEAN ? 1.0 / den : 1.0),
                     "loss");
  }
  if (sum) cell_tensor_release(sum);
  if (s != CELL_OK) {
    if (o) cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

cell_status gpu_cross_entropy(const cell_tensor *logits, const cell_tensor *target, const cell_ce_args *a,
                              cell_tensor **out, cell_tensor **lse_out, double *den_out) {
  const char *op = "cross_entropy";
  state st;
  double den = 0;
  CELL_TRY(state_init(op, logits, target, a, 1, 1, &den, &st));
  gpu_ctx *g = gpu_ctx_of(logits);
  cell_tensor *lse = NULL, *v = NULL;
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &st.g.rows, &lse);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &st.g.rows, &v);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_ce_forward(g->stream, (int)logits->dtype, st.t[1] ? (int)st.t[1]->dtype : GPUK_F32,
                                   gpu_data(st.t[0]), st.t[2] ? gpu_data(st.t[2]) : NULL,
                                   st.t[1] ? gpu_data(st.t[1]) : NULL, st.t[3] ? gpu_data(st.t[3]) : NULL,
                                   gpu_data(st.t[4]), gpu_data(lse), gpu_data(v), st.g.rows, st.g.c, st.g.inner,
                                   a->label_smoothing),
                   op);
  if (s == CELL_OK) s = finish(logits, &st.g, a->reduction, v, den, out);
  gpu_release_all(st.t, 6);
  if (v) cell_tensor_release(v);
  if (s != CELL_OK) {
    if (lse) cell_tensor_release(lse);
    return s;
  }
  if (lse_out) *lse_out = lse;
  else cell_tensor_release(lse);
  if (den_out) *den_out = den;
  return CELL_OK;
}

/* The incoming gradient as float64 on the device: one per row (NONE) or
 * one number, and the factor on it. */
static cell_status grad_of(const char *op, const cell_tensor *gy, cell_reduction red, double den, int64_t rows,
                           cell_tensor **gd, int *per_row, double *k) {
  *per_row = red == CELL_REDUCTION_NONE;
  if (*per_row ? gpu_numel(gy) != rows : gpu_numel(gy) != 1)
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of %lld elements for %lld rows", op, (long long)gpu_numel(gy),
                      (long long)rows);
  *k = red == CELL_REDUCTION_MEAN ? 1.0 / den : 1.0;
  return gpu_contig_as(gy, CELL_DTYPE_F64, gd);
}

cell_status gpu_cross_entropy_backward(const cell_tensor *gy, const cell_tensor *logits, const cell_tensor *lse,
                                       const cell_tensor *target, const cell_ce_args *a, double den, cell_tensor **gx,
                                       cell_tensor **gt) {
  const char *op = "cross_entropy backward";
  state st;
  CELL_TRY(state_init(op, logits, target, a, 1, 0, NULL, &st));
  gpu_ctx *g = gpu_ctx_of(logits);
  cell_tensor *t[4] = {NULL}; /* g, lse, gx, gt */
  int per_row;
  double k;
  cell_status s = grad_of(op, gy, a->reduction, den, st.g.rows, &t[0], &per_row, &k);
  if (s == CELL_OK) s = gpu_contig_as(lse, CELL_DTYPE_F64, &t[1]);
  if (s == CELL_OK && gx) s = gpu_new_tensor(g, logits->dtype, logits->ndim, logits->shape, &t[2]);
  if (s == CELL_OK && gt && st.g.probs) s = gpu_new_tensor(g, target->dtype, target->ndim, target->shape, &t[3]);
  if (s == CELL_OK && (t[2] || t[3]))
    s = gpu_launch(gpuk_ce_backward(g->stream, (int)logits->dtype, st.t[1] ? (int)st.t[1]->dtype : GPUK_F32,
                                    gpu_data(st.t[0]), st.t[2] ? gpu_data(st.t[2]) : NULL,
                                    st.t[1] ? gpu_data(st.t[1]) : NULL, st.t[3] ? gpu_data(st.t[3]) : NULL,
                                    gpu_data(st.t[4]), gpu_data(t[1]), gpu_data(t[0]), per_row, k,
                                    t[2] ? gpu_data(t[2]) : NULL, t[3] ? gpu_data(t[3]) : NULL, st.g.rows, st.g.c,
                                    st.g.inner, a->label_smoothing),
                   op);
  gpu_release_all(st.t, 6);
  gpu_release_all(t, 2);
  if (s != CELL_OK) {
    gpu_release_all(t + 2, 2);
    return s;
  }
  if (gx) *gx = t[2];
  if (gt) *gt = t[3];
  return CELL_OK;
}

cell_status gpu_nll_loss(const cell_tensor *logp, const cell_tensor *target, const cell_ce_args *a, cell_tensor **out,
                         double *den_out) {
  const char *op = "nll_loss";
  state st;
  double den = 0;
  CELL_TRY(state_init(op, logp, target, a, 0, 1, &den, &st));
  gpu_ctx *g = gpu_ctx_of(logp);
  cell_tensor *v = NULL;
  cell_status s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &st.g.rows, &v);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_nll_forward(g->stream, (int)logp->dtype, gpu_data(st.t[0]), gpu_data(st.t[2]),
                                    st.t[3] ? gpu_data(st.t[3]) : NULL, gpu_data(v), st.g.rows, st.g.c, st.g.inner),
                   op);
  if (s == CELL_OK) s = finish(logp, &st.g, a->reduction, v, den, out);
  gpu_release_all(st.t, 6);
  if (v) cell_tensor_release(v);
  if (s == CELL_OK && den_out) *den_out = den;
  return s;
}

cell_status gpu_nll_loss_backward(const cell_tensor *gy, const cell_tensor *logp, const cell_tensor *target,
                                  const cell_ce_args *a, double den, cell_tensor **gx) {
  const char *op = "nll_loss backward";
  state st;
  CELL_TRY(state_init(op, logp, target, a, 0, 0, NULL, &st));
  gpu_ctx *g = gpu_ctx_of(logp);
  cell_tensor *gd = NULL, *o = NULL;
  int per_row;
  double k;
  static const unsigned char zero[8] = {0};
  cell_status s = grad_of(op, gy, a->reduction, den, st.g.rows, &gd, &per_row, &k);
  if (s == CELL_OK) s = gpu_new_tensor(g, logp->dtype, logp->ndim, logp->shape, &o);
  if (s == CELL_OK)
    s = gpu_fill(g, gpu_data(o), (size_t)gpu_numel(logp) * cell_dtype_size(logp->dtype), zero, cell_dtype_size(logp->dtype));
  if (s == CELL_OK)
    s = gpu_launch(gpuk_nll_backward(g->stream, (int)logp->dtype, gpu_data(st.t[2]), st.t[3] ? gpu_data(st.t[3]) : NULL,
                                     gpu_data(gd), per_row, k, gpu_data(o), st.g.rows, st.g.c, st.g.inner),
                   op);
  gpu_release_all(st.t, 6);
  if (gd) cell_tensor_release(gd);
  if (s != CELL_OK) {
    if (o) cell_tensor_release(o);
    return s;
  }
  *gx = o;
  return CELL_OK;
}
