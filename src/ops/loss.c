/* loss.c - the class-dim losses and their gradients (src/ops/nn.h):
 * cross_entropy (log_softmax + negative log-likelihood in one pass over
 * each row, with class ids or probabilities, class weights, ignore_index
 * and label smoothing) and nll_loss. The pointwise losses are in
 * loss_pointwise.c.
 *
 * Logits are seen as {n, c, inner} with classes along the middle: each of
 * the n * inner rows has c elements, inner apart. A row's log-sum-exp
 * comes from one pass with an online maximum; everything else the loss
 * needs is linear in the logits and comes from the same pass. Reductions
 * sum per-row values serially in row order, so results do not depend on
 * the thread count. */
#include "nn.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "vmath.h"

#define CHUNK CELL_NN_CHUNK

/* e[i] = exp(v[i] - m) over n elements: vmath.h's vector exp for results
 * narrower than float64 (accurate far below their ulp), libm's for
 * float64. e may be v. */
static void exp_minus(cell_dtype dt, double *e, const double *v, double m, int64_t n) {
  if (dt == CELL_DTYPE_F64) {
    for (int64_t i = 0; i < n; i++) e[i] = exp(v[i] - m);
    return;
  }
  CELL_NN_SIMD for (int64_t i = 0; i < n; i++) e[i] = v[i] - m;
  cell_vm_exp_d(e, e, n);
}

/* The result of a reduced loss: a 0-D tensor holding v. */
static cell_status scalar_out(cell_dtype dt, double v, cell_tensor **out) {
  return cell_tensor_full(dt, 0, NULL, v, out);
}

/* --- class-dim losses: layout and targets ------------------------------------------- */

typedef struct {
  int64_t n, c, inner, rows;
  int probs; /* target holds probabilities */
} cls_geom;

static cell_status check_class_args(const char *op, const cell_tensor *x, const cell_tensor *t,
                                    const cell_ce_args *a, int allow_probs, cls_geom *g) {
  char b1[256], b2[256], b3[256];
  CELL_TRY(cell_nn_check_float(op, "the input", x));
  CELL_TRY(cell_nn_check_reduction(op, a->reduction));
  if (x->ndim < 1)
    return cell_error(CELL_ERR_VALUE,
                      "%s: the input must have a class dimension ({C}, {N, C} or {N, C, ...}), "
                      "got a 0-D tensor",
                      op);
  g->n = x->ndim == 1 ? 1 : x->shape[0];
  g->c = x->ndim == 1 ? x->shape[0] : x->shape[1];
  g->inner = cell_shape_numel(x->ndim > 2 ? x->ndim - 2 : 0, x->shape + 2);
  g->rows = g->n * g->inner;
  if (t->dtype == CELL_DTYPE_BOOL || (!allow_probs && !cell_dtype_is_int(t->dtype)))
    return cell_error(CELL_ERR_TYPE, "%s: target must be an integer tensor of class ids%s, got %s",
                      op, allow_probs ? " or a float tensor of probabilities" : "",
                      cell_dtype_name(t->dtype));
  g->probs = cell_dtype_is_float(t->dtype);
  if (g->probs) {
    if (!cell_shape_equal(t->ndim, t->shape, x->ndim, x->shape))
      return cell_error(CELL_ERR_VALUE,
                        "%s: a target of probabilities must have the shape of the input: target "
                        "of shape %s, input of shape %s",
                        op, cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
                        cell_shape_str(x->ndim, x->shape, b2, sizeof b2));
  } else {
    int64_t want[CELL_MAX_DIMS];
    int nw = 0;
    for (int d = 0; d < x->ndim; d++)
      if (d != (x->ndim == 1 ? 0 : 1)) want[nw++] = x->shape[d];
    if (!cell_shape_equal(t->ndim, t->shape, nw, want))
      return cell_error(CELL_ERR_VALUE,
                        "%s: target of shape %s does not match the input of shape %s (expected "
                        "%s: the input's shape without the class dimension)",
                        op, cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
                        cell_shape_str(x->ndim, x->shape, b2, sizeof b2),
                        cell_shape_str(nw, want, b3, sizeof b3));
  }
  if (a->weight) {
    CELL_TRY(cell_nn_check_float(op, "weight", a->weight));
    if (a->weight->ndim != 1 || a->weight->shape[0] != g->c)
      return cell_error(CELL_ERR_VALUE,
                        "%s: weight of shape %s does not match the %lld classes of the input of "
                        "shape %s (expected [%lld])",
                        op, cell_shape_str(a->weight->ndim, a->weight->shape, b1, sizeof b1),
                        (long long)g->c, cell_shape_str(x->ndim, x->shape, b2, sizeof b2),
                        (long long)g->c);
  }
  if (!(a->label_smoothing >= 0 && a->label_smoothing <= 1))
    return cell_error(CELL_ERR_VALUE, "%s: label_smoothing must lie in [0, 1], got %g", op,
                      a->label_smoothing);
  return CELL_OK;
}

/* The class of each row (int64, contiguous): 0-based, or -1 when ignored. */
static cell_status classes_of(const char *op, const cell_tensor *t, const cell_ce_args *a,
                              int64_t c, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(cell_k_astype(t, CELL_DTYPE_I64, &r)); /* a contiguous copy */
  int64_t n = cell_tensor_numel(r), *v = (int64_t *)cell_tensor_base(r);
  for (int64_t i = 0; i < n; i++) {
    int64_t raw = v[i];
    if (a->has_ignore && raw == a->ignore_index) {
      v[i] = -1;
    } else if (raw < a->index_base || raw - a->index_base >= c) {
      cell_tensor_release(r);
      return cell_error(CELL_ERR_INDEX, "%s: target %lld is out of range for %lld classes", op,
                        (long long)raw, (long long)c);
    } else {
      v[i] = raw - a->index_base;
    }
  }
  *out = r;
  return CELL_OK;
}

/* The shape of a class-dim loss without reduction: the input's shape
 * without the class dimension. */
static int row_shape(const cell_tensor *x, int64_t *shape) {
  int n = 0;
  for (int d = 0; d < x->ndim; d++)
    if (d != (x->ndim == 1 ? 0 : 1)) shape[n++] = x->shape[d];
  return n;
}

/* Byte offset of row r's first element in a {n, c, inner} tensor. */
static inline int64_t row_offset(const cls_geom *g, int64_t r, int64_t es) {
  return ((r / g->inner) * g->c * g->inner + r % g->inner) * es;
}

/* Per row (reduction NONE) or reduced: kv v + kv2 v2 (v2 may be NULL),
 * the mean dividing by den. */
static cell_status finish_rows(const cls_geom *g, cell_reduction red, const cell_tensor *x,
                               const double *v, double kv, const double *v2, double kv2,
                               double den, cell_tensor **out) {
  if (red == CELL_REDUCTION_NONE) {
    int64_t shape[CELL_MAX_DIMS];
    int nd = row_shape(x, shape);
    cell_tensor *r;
    CELL_TRY(cell_tensor_new_contig(x->dtype, nd, shape, &r));
    double buf[CHUNK];
    int64_t es = cell_dtype_size(x->dtype);
    for (int64_t i0 = 0; i0 < g->rows; i0 += CHUNK) {
      int64_t n = g->rows - i0 < CHUNK ? g->rows - i0 : CHUNK;
      for (int64_t i = 0; i < n; i++) buf[i] = kv * v[i0 + i] + (v2 ? kv2 * v2[i0 + i] : 0.0);
      cell_store_run(x->dtype, (char *)cell_tensor_base(r) + i0 * es, es, n, buf);
    }
    *out = r;
    return CELL_OK;
  }
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < g->rows; i++) s += v[i];
  if (v2)
    for (int64_t i = 0; i < g->rows; i++) s2 += v2[i];
  double total = kv * s + (v2 ? kv2 * s2 : 0);
  if (red == CELL_REDUCTION_MEAN) total /= den;
  return scalar_out(x->dtype, total, out);
}

/* --- cross_entropy ------------------------------------------------------------------------ */

/* One pass over row x (c elements, stride xs, dtype dt): the log-sum-exp,
 * and sum(w x) when w is given. */
static double row_lse(cell_dtype dt, const char *x, int64_t xs, int64_t c, const double *w,
                      double *wx) {
  double buf[CHUNK], e[CHUNK], m = -INFINITY, s = 0, acc = 0;
  for (int64_t i0 = 0; i0 < c; i0 += CHUNK) {
    int64_t n = c - i0 < CHUNK ? c - i0 : CHUNK;
    cell_load_run(dt, x + i0 * xs, xs, n, buf);
    double cm = -INFINITY;
    for (int64_t i = 0; i < n; i++)
      if (buf[i] > cm) cm = buf[i];
    if (cm > m) {
      s *= exp(m - cm);
      m = cm;
    }
    exp_minus(dt, e, buf, m, n);
    for (int64_t i = 0; i < n; i++) s += e[i];
    if (w)
      for (int64_t i = 0; i < n; i++) acc += w[i0 + i] * buf[i];
  }
  if (wx) *wx = acc;
  return m + log(s);
}

/* For probability targets: sum(w t' x) and sum(w t') over a row, where
 * t' = (1 - ls) t + ls / c. */
static void row_target_sums(cell_dtype xdt, const char *x, int64_t xs, cell_dtype tdt,
                            const char *t, int64_t ts, int64_t c, const double *w, double ls,
                            double *wtx, double *wt) {
  double xb[CHUNK], tb[CHUNK], a = 0, b = 0, u = ls / (double)c;
  for (int64_t i0 = 0; i0 < c; i0 += CHUNK) {
    int64_t n = c - i0 < CHUNK ? c - i0 : CHUNK;
    cell_load_run(xdt, x + i0 * xs, xs, n, xb);
    cell_load_run(tdt, t + i0 * ts, ts, n, tb);
    for (int64_t i = 0; i < n; i++) {
      double q = ((1 - ls) * tb[i] + u) * (w ? w[i0 + i] : 1.0);
      a += q * xb[i];
      b += q;
    }
  }
  *wtx = a;
  *wt = b;
}

/* What the forward and backward of a class-dim loss share. */
typedef struct {
  cls_geom g;
  cell_tensor *xc, *tc, *cls; /* contiguous input and target; classes of class targets */
  double *w;                  /* class weights (ones without weight) */
  double wsum;                /* sum of the class weights */
} cls_state;

static void state_release(cls_state *st) {
  cell_release4(CELL_OK, st->xc, st->tc, st->cls, NULL);
  cell_dealloc(st->w);
}

static cell_status state_init(const char *op, const cell_tensor *x, const cell_tensor *t,
                              const cell_ce_args *a, int allow_probs, cls_state *st) {
  memset(st, 0, sizeof *st);
  if (!x || !t || !a) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(check_class_args(op, x, t, a, allow_probs, &st->g));
  cell_status s = cell_nn_doubles(op, a->weight, st->g.c, 1.0, &st->w);
  if (s == CELL_OK) s = cell_k_contiguous(x, &st->xc);
  if (s == CELL_OK && st->g.probs) s = cell_k_contiguous(t, &st->tc);
  if (s == CELL_OK && !st->g.probs) s = classes_of(op, t, a, st->g.c, &st->cls);
  if (s != CELL_OK) {
    state_release(st);
    return s;
  }
  for (int64_t i = 0; i < st->g.c; i++) st->wsum += st->w[i];
  return CELL_OK;
}

/* The divisor of a mean: the summed weights of the counted targets (their
 * count without weight), as PyTorch; with probabilities, the number of
 * rows. */
static double mean_divisor(const cls_state *st) {
  if (st->g.probs) return (double)st->g.rows;
  const int64_t *cv = (const int64_t *)cell_tensor_base(st->cls);
  double d = 0;
  for (int64_t r = 0; r < st->g.rows; r++)
    if (cv[r] >= 0) d += st->w[cv[r]];
  return d;
}

cell_status cell_cpu_cross_entropy(const cell_tensor *logits, const cell_tensor *target,
                                 const cell_ce_args *a, cell_tensor **out, cell_tensor **lse_out,
                                 double *den_out) {
  const char *op = "cross_entropy";
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  cls_state st;
  CELL_TRY(state_init(op, logits, target, a, 1, &st));
  const cls_geom *g = &st.g;
  cell_tensor *lse = NULL;
  double *v = NULL; /* per row: the log-likelihood term, then the smoothing term */
  cell_status s = cell_tensor_new_contig(CELL_DTYPE_F64, 1, &st.g.rows, &lse);
  if (s == CELL_OK) s = cell_nn_doubles(op, NULL, 2 * g->rows, 0.0, &v);
  if (s != CELL_OK) {
    cell_tensor_release(lse);
    state_release(&st);
    return s;
  }
  double ls = a->label_smoothing, den = mean_divisor(&st);
  cell_dtype xdt = logits->dtype, tdt = target->dtype;
  int64_t xe = cell_dtype_size(xdt), te = cell_dtype_size(tdt), xs = g->inner * xe;
  const char *xb = cell_tensor_base(st.xc), *tb = st.tc ? cell_tensor_base(st.tc) : NULL;
  const int64_t *cv = st.cls ? (const int64_t *)cell_tensor_base(st.cls) : NULL;
  double *lv = (double *)cell_tensor_base(lse), *nll = v, *sm = v + g->rows;
  const double *w = st.w;
  int need_wx = !g->probs && ls > 0;
  CELL_FOR(cell_nn_parallel_cost(g->rows, g->rows * g->c, CELL_NN_COST_CROSS_ENTROPY), int64_t, r, g->rows, {
    const char *row = xb + row_offset(g, r, xe);
    double wx = 0, l = row_lse(xdt, row, xs, g->c, need_wx ? w : NULL, &wx);
    lv[r] = l;
    if (g->probs) {
      double wtx, wt;
      row_target_sums(xdt, row, xs, tdt, tb + row_offset(g, r, te), g->inner * te, g->c, w, ls,
                      &wtx, &wt);
      nll[r] = -(wtx - l * wt);
    } else if (cv[r] >= 0) {
      double xy = cell_load_f64(xdt, row + cv[r] * xs);
      nll[r] = -w[cv[r]] * (xy - l);
      if (need_wx) sm[r] = -(wx - l * st.wsum);
    }
  });
  if (g->probs)
    s = finish_rows(g, a->reduction, logits, nll, 1.0, NULL, 0, den, out);
  else
    s = finish_rows(g, a->reduction, logits, nll, 1 - ls, ls > 0 ? sm : NULL, ls / (double)g->c,
                    den, out);
  cell_dealloc(v);
  state_release(&st);
  if (s != CELL_OK) {
    cell_tensor_release(lse);
    return s;
  }
  if (lse_out) *lse_out = lse;
  else cell_tensor_release(lse);
  if (den_out) *den_out = den;
  return CELL_OK;
}

/* The scale of row r's gradient: g itself (reduction NONE, one per row),
 * or the single gradient over the divisor. */
typedef struct {
  const double *per_row; /* NULL: reduced */
  double k;              /* reduced: g / den (MEAN) or g (SUM) */
} grad_scale;

static cell_status grad_scale_init(const char *op, const cell_tensor *g, cell_reduction red,
                                   double den, int64_t rows, double **block, grad_scale *gs) {
  *block = NULL;
  gs->per_row = NULL;
  if (red == CELL_REDUCTION_NONE) {
    if (cell_tensor_numel(g) != rows)
      return cell_error(CELL_ERR_RUNTIME, "%s: gradient of %lld elements for %lld rows", op,
                        (long long)cell_tensor_numel(g), (long long)rows);
    CELL_TRY(cell_nn_doubles(op, g, rows, 0, block));
    gs->per_row = *block;
    return CELL_OK;
  }
  double v;
  CELL_TRY(cell_nn_scalar_grad(op, g, &v));
  gs->k = red == CELL_REDUCTION_MEAN ? v / den : v;
  return CELL_OK;
}

cell_status cell_cpu_cross_entropy_backward(const cell_tensor *g, const cell_tensor *logits,
                                          const cell_tensor *lse, const cell_tensor *target,
                                          const cell_ce_args *a, double den,
                                          cell_tensor **gx, cell_tensor **gt) {
  const char *op = "cross_entropy backward";
  if (!g || !lse) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  cls_state st;
  CELL_TRY(state_init(op, logits, target, a, 1, &st));
  const cls_geom *geo = &st.g;
  double *gblock = NULL;
  grad_scale gs;
  cell_tensor *rx = NULL, *rt = NULL;
  cell_status s = grad_scale_init(op, g, a->reduction, den, geo->rows, &gblock, &gs);
  if (s == CELL_OK && gx) s = cell_tensor_new_contig(logits->dtype, logits->ndim, logits->shape, &rx);
  if (s == CELL_OK && gt && geo->probs)
    s = cell_tensor_new_contig(target->dtype, target->ndim, target->shape, &rt);
  if (s == CELL_OK && (rx || rt)) {
    double ls = a->label_smoothing, u = ls / (double)geo->c;
    cell_dtype xdt = logits->dtype, tdt = target->dtype;
    int64_t xe = cell_dtype_size(xdt), te = cell_dtype_size(tdt);
    const char *xb = cell_tensor_base(st.xc), *tb = st.tc ? cell_tensor_base(st.tc) : NULL;
    char *ob = rx ? cell_tensor_base(rx) : NULL, *otb = rt ? cell_tensor_base(rt) : NULL;
    const int64_t *cv = st.cls ? (const int64_t *)cell_tensor_base(st.cls) : NULL;
    const double *lv = (const double *)cell_tensor_base(lse), *w = st.w;
    double wsum = st.wsum;
    CELL_FOR(cell_nn_parallel_cost(geo->rows, geo->rows * geo->c, CELL_NN_COST_CROSS_ENTROPY), int64_t, r,
             geo->rows, {
      int64_t xo = row_offset(geo, r, xe), to = row_offset(geo, r, te);
      int64_t xs = geo->inner * xe, ts = geo->inner * te, y = cv ? cv[r] : 0;
      double k = gs.per_row ? gs.per_row[r] : gs.k;
      double l = lv[r], xbuf[CHUNK], tbuf[CHUNK], wt = 0, wtx;
      if (geo->probs) row_target_sums(xdt, xb + xo, xs, tdt, tb + to, ts, geo->c, w, ls, &wtx, &wt);
      for (int64_t i0 = 0; i0 < geo->c; i0 += CHUNK) {
        int64_t n = geo->c - i0 < CHUNK ? geo->c - i0 : CHUNK;
        cell_load_run(xdt, xb + xo + i0 * xs, xs, n, xbuf);
        if (geo->probs) {
          cell_load_run(tdt, tb + to + i0 * ts, ts, n, tbuf);
          if (otb) {
            double tg[CHUNK];
            for (int64_t i = 0; i < n; i++) tg[i] = -k * (1 - ls) * w[i0 + i] * (xbuf[i] - l);
            cell_store_run(tdt, otb + to + i0 * ts, ts, n, tg);
          }
          double pe[CHUNK];
          exp_minus(xdt, pe, xbuf, l, n);
          for (int64_t i = 0; i < n; i++) {
            double p = pe[i], q = ((1 - ls) * tbuf[i] + u) * w[i0 + i];
            xbuf[i] = -k * (q - p * wt);
          }
        } else if (y < 0) {
          for (int64_t i = 0; i < n; i++) xbuf[i] = 0;
        } else {
          double wy = w[y], pe[CHUNK];
          exp_minus(xdt, pe, xbuf, l, n);
          for (int64_t i = 0; i < n; i++) {
            double p = pe[i], hit = i0 + i == y ? 1.0 : 0.0;
            xbuf[i] = -k * ((1 - ls) * wy * (hit - p) + u * (w[i0 + i] - p * wsum));
          }
        }
        if (ob) cell_store_run(xdt, ob + xo + i0 * xs, xs, n, xbuf);
      }
    });
  }
  cell_dealloc(gblock);
  state_release(&st);
  if (s != CELL_OK) return cell_release4(s, rx, rt, NULL, NULL);
  if (gx) *gx = rx;
  if (gt) *gt = rt;
  return CELL_OK;
}

/* --- nll_loss ---------------------------------------------------------------------------------- */

cell_status cell_cpu_nll_loss(const cell_tensor *logp, const cell_tensor *target,
                            const cell_ce_args *a, cell_tensor **out, double *den_out) {
  const char *op = "nll_loss";
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  cls_state st;
  CELL_TRY(state_init(op, logp, target, a, 0, &st));
  double *v = NULL, den = mean_divisor(&st);
  cell_status s = cell_nn_doubles(op, NULL, st.g.rows, 0.0, &v);
  if (s == CELL_OK) {
    int64_t xe = cell_dtype_size(logp->dtype), xs = st.g.inner * xe;
    const char *xb = cell_tensor_base(st.xc);
    const int64_t *cv = (const int64_t *)cell_tensor_base(st.cls);
    for (int64_t r = 0; r < st.g.rows; r++)
      if (cv[r] >= 0)
        v[r] = -st.w[cv[r]] * cell_load_f64(logp->dtype, xb + row_offset(&st.g, r, xe) + cv[r] * xs);
    s = finish_rows(&st.g, a->reduction, logp, v, 1.0, NULL, 0, den, out);
  }
  cell_dealloc(v);
  state_release(&st);
  if (s == CELL_OK && den_out) *den_out = den;
  return s;
}

cell_status cell_cpu_nll_loss_backward(const cell_tensor *g, const cell_tensor *logp,
                                     const cell_tensor *target, const cell_ce_args *a, double den,
                                     cell_tensor **gx) {
  const char *op = "nll_loss backward";
  if (!g || !gx) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  cls_state st;
  CELL_TRY(state_init(op, logp, target, a, 0, &st));
  double *gblock = NULL;
  grad_scale gs;
  cell_tensor *r = NULL;
  cell_status s = grad_scale_init(op, g, a->reduction, den, st.g.rows, &gblock, &gs);
  if (s == CELL_OK) s = cell_tensor_full(logp->dtype, logp->ndim, logp->shape, 0.0, &r);
  if (s == CELL_OK) {
    int64_t xe = cell_dtype_size(logp->dtype), xs = st.g.inner * xe;
    char *ob = cell_tensor_base(r);
    const int64_t *cv = (const int64_t *)cell_tensor_base(st.cls);
    for (int64_t k = 0; k < st.g.rows; k++)
      if (cv[k] >= 0) {
        double sc = gs.per_row ? gs.per_row[k] : gs.k;
        cell_store_f64(logp->dtype, ob + row_offset(&st.g, k, xe) + cv[k] * xs, -st.w[cv[k]] * sc);
      }
  }
  cell_dealloc(gblock);
  state_release(&st);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *gx = r;
  return CELL_OK;
}

