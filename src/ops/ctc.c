/* ctc.c - the connectionist temporal classification loss (Graves et al.),
 * forward-backward in log space. One call gives each sample's negative
 * log-likelihood and its gradient with respect to the log-probabilities,
 * which the autograd node keeps: -(the posterior of class c at step t),
 * the true derivative. (PyTorch's kernel adds exp(log_probs), which cancels
 * behind a log_softmax: through one, the two agree.) */
#include "kernels.h"
#include "kernel_list.h"
#include "../core/alloc.h"
#include <math.h>
#include <string.h>

static inline double lse2(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = a > b ? a : b;
  return m + log1p(exp(-fabs(a - b)));
}

/* An int tensor's values as int64 (n of them), into a fresh buffer. */
static cell_status load_ints(const cell_tensor *t, const char *what, int64_t **out, int64_t *n) {
  if (cell_dtype_is_float(t->dtype) || t->dtype == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "ctc_loss: %s must be an integer tensor, got %s", what,
                      cell_dtype_name(t->dtype));
  cell_tensor *c;
  CELL_TRY(cell_k_contiguous(t, &c));
  int64_t m = cell_tensor_numel(c);
  int64_t *v = cell_alloc((size_t)(m ? m : 1) * sizeof(int64_t));
  if (!v) {
    cell_tensor_release(c);
    return cell_error(CELL_ERR_MEMORY, "ctc_loss: out of memory");
  }
  cell_load_run_i64(c->dtype, cell_tensor_base(c), cell_dtype_size(c->dtype), m, v);
  cell_tensor_release(c);
  *out = v;
  *n = m;
  return CELL_OK;
}

typedef struct {
  double *lp;            /* T x N x C */
  int64_t *tg, *il, *tl; /* targets, input lengths, target lengths */
  double *alpha, *beta;
} ctc_buf;

static void ctc_free(ctc_buf *b) {
  cell_dealloc(b->lp);
  cell_dealloc(b->tg);
  cell_dealloc(b->il);
  cell_dealloc(b->tl);
  cell_dealloc(b->alpha);
  cell_dealloc(b->beta);
}

cell_status cell_cpu_ctc_loss(const cell_tensor *log_probs, const cell_tensor *targets,
                              const cell_tensor *input_lengths, const cell_tensor *target_lengths,
                              int64_t blank, int64_t index_base, int zero_infinity,
                              cell_tensor **loss, cell_tensor **grad) {
  if (!log_probs || !targets || !input_lengths || !target_lengths || !loss || !grad)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: NULL argument");
  if (!cell_dtype_is_float(log_probs->dtype))
    return cell_error(CELL_ERR_TYPE, "ctc_loss: log_probs must be a float tensor, got %s",
                      cell_dtype_name(log_probs->dtype));
  if (log_probs->ndim != 3)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: log_probs must be 3-D (T, N, C), got %d-D",
                      log_probs->ndim);
  const int64_t T = log_probs->shape[0], N = log_probs->shape[1], C = log_probs->shape[2];
  if (C < 1) return cell_error(CELL_ERR_VALUE, "ctc_loss: log_probs has no classes (C = 0)");
  if (blank < 0 || blank >= C)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: blank (%lld) must be a class id in [%lld, %lld]",
                      (long long)(blank + index_base), (long long)index_base,
                      (long long)(C - 1 + index_base));
  if (targets->ndim != 1 && !(targets->ndim == 2 && targets->shape[0] == N))
    return cell_error(CELL_ERR_VALUE, "ctc_loss: targets must be (N, S) with N = %lld, or 1-D "
                      "(the targets concatenated)", (long long)N);
  ctc_buf b;
  memset(&b, 0, sizeof b);
  int64_t ntg = 0, nil = 0, ntl = 0;
  cell_status s = load_ints(targets, "targets", &b.tg, &ntg);
  if (s == CELL_OK) s = load_ints(input_lengths, "input_lengths", &b.il, &nil);
  if (s == CELL_OK) s = load_ints(target_lengths, "target_lengths", &b.tl, &ntl);
  if (s == CELL_OK && (nil != N || ntl != N))
    s = cell_error(CELL_ERR_VALUE, "ctc_loss: input_lengths and target_lengths must have N = %lld "
                   "values, got %lld and %lld", (long long)N, (long long)nil, (long long)ntl);
  const int padded = targets->ndim == 2;
  const int64_t S = padded ? targets->shape[1] : 0;
  int64_t total = 0, maxL = 0;
  for (int64_t n = 0; s == CELL_OK && n < N; n++) {
    if (b.il[n] < 0 || b.il[n] > T)
      s = cell_error(CELL_ERR_VALUE, "ctc_loss: input_lengths[%lld] = %lld must be in [0, %lld]",
                     (long long)(n + 1), (long long)b.il[n], (long long)T);
    else if (b.tl[n] < 0 || (padded && b.tl[n] > S))
      s = cell_error(CELL_ERR_VALUE, "ctc_loss: target_lengths[%lld] = %lld must be in [0, %lld]",
                     (long long)(n + 1), (long long)b.tl[n], (long long)(padded ? S : INT64_MAX));
    total += b.tl[n];
    if (b.tl[n] > maxL) maxL = b.tl[n];
  }
  if (s == CELL_OK && !padded && total != ntg)
    s = cell_error(CELL_ERR_VALUE, "ctc_loss: 1-D targets must hold sum(target_lengths) = %lld "
                   "values, got %lld", (long long)total, (long long)ntg);
  for (int64_t i = 0; s == CELL_OK && i < ntg; i++) {
    int64_t v = b.tg[i] - index_base;
    if (padded && (i % (S ? S : 1)) >= b.tl[i / (S ? S : 1)]) continue; /* padding */
    if (v < 0 || v >= C || v == blank)
      s = cell_error(CELL_ERR_INDEX, "ctc_loss: target %lld is not a class id in [%lld, %lld] "
                     "other than blank (%lld)", (long long)b.tg[i], (long long)index_base,
                     (long long)(C - 1 + index_base), (long long)(blank + index_base));
  }
  const int64_t SP = 2 * maxL + 1;
  cell_tensor *lc = NULL, *L = NULL, *G = NULL;
  if (s == CELL_OK) {
    size_t nlp = (size_t)(T * N * C), nab = (size_t)((T ? T : 1) * SP);
    b.lp = cell_alloc((nlp ? nlp : 1) * sizeof(double));
    b.alpha = cell_alloc(nab * sizeof(double));
    b.beta = cell_alloc(nab * sizeof(double));
    if (!b.lp || !b.alpha || !b.beta) s = cell_error(CELL_ERR_MEMORY, "ctc_loss: out of memory");
  }
  if (s == CELL_OK) s = cell_k_contiguous(log_probs, &lc);
  if (s == CELL_OK)
    cell_load_run(lc->dtype, cell_tensor_base(lc), cell_dtype_size(lc->dtype), T * N * C, b.lp);
  cell_tensor_release(lc);
  if (s == CELL_OK) s = cell_tensor_new_contig(log_probs->dtype, 1, &N, &L);
  if (s == CELL_OK) s = cell_tensor_new_contig(log_probs->dtype, 3, log_probs->shape, &G);
  if (s != CELL_OK) {
    ctc_free(&b);
    cell_tensor_release(L);
    cell_tensor_release(G);
    return s;
  }
  double *g = cell_alloc((size_t)(C ? C : 1) * sizeof(double));
  double *gall = cell_alloc_zero((size_t)(T * N * C > 0 ? T * N * C : 1) * sizeof(double));
  double *lv = cell_alloc((size_t)(N ? N : 1) * sizeof(double));
  if (!g || !gall || !lv) {
    cell_dealloc(g);
    cell_dealloc(gall);
    cell_dealloc(lv);
    ctc_free(&b);
    cell_tensor_release(L);
    cell_tensor_release(G);
    return cell_error(CELL_ERR_MEMORY, "ctc_loss: out of memory");
  }
  int64_t off = 0;
  for (int64_t n = 0; n < N; n++) {
    const int64_t Tn = b.il[n], Ln = b.tl[n], Sn = 2 * Ln + 1;
    const int64_t *tg = padded ? b.tg + n * S : b.tg + off;
    off += Ln;
#define LP(t, c) b.lp[((t) * N + n) * C + (c)]
#define LAB(sx) ((sx) % 2 == 0 ? blank : tg[(sx) / 2] - index_base)
#define AL(t, sx) b.alpha[(t) * SP + (sx)]
#define BE(t, sx) b.beta[(t) * SP + (sx)]
    double nll;
    if (Tn == 0) {
      nll = Ln == 0 ? 0.0 : INFINITY;
    } else {
      for (int64_t sx = 0; sx < Sn; sx++) AL(0, sx) = -INFINITY;
      AL(0, 0) = LP(0, blank);
      if (Sn > 1) AL(0, 1) = LP(0, LAB(1));
      for (int64_t t = 1; t < Tn; t++)
        for (int64_t sx = 0; sx < Sn; sx++) {
          int64_t l = LAB(sx);
          double a = AL(t - 1, sx);
          if (sx > 0) a = lse2(a, AL(t - 1, sx - 1));
          if (sx > 1 && l != blank && l != LAB(sx - 2)) a = lse2(a, AL(t - 1, sx - 2));
          AL(t, sx) = a == -INFINITY ? a : a + LP(t, l);
        }
      double ll = AL(Tn - 1, Sn - 1);
      if (Sn > 1) ll = lse2(ll, AL(Tn - 1, Sn - 2));
      nll = -ll;
      for (int64_t sx = 0; sx < Sn; sx++) BE(Tn - 1, sx) = -INFINITY;
      BE(Tn - 1, Sn - 1) = LP(Tn - 1, blank);
      if (Sn > 1) BE(Tn - 1, Sn - 2) = LP(Tn - 1, LAB(Sn - 2));
      for (int64_t t = Tn - 2; t >= 0; t--)
        for (int64_t sx = 0; sx < Sn; sx++) {
          int64_t l = LAB(sx);
          double a = BE(t + 1, sx);
          if (sx < Sn - 1) a = lse2(a, BE(t + 1, sx + 1));
          if (sx < Sn - 2 && l != blank && l != LAB(sx + 2)) a = lse2(a, BE(t + 1, sx + 2));
          BE(t, sx) = a == -INFINITY ? a : a + LP(t, l);
        }
      if (!(isinf(nll) && zero_infinity))
        for (int64_t t = 0; t < Tn; t++) {
          for (int64_t c = 0; c < C; c++) g[c] = -INFINITY;
          for (int64_t sx = 0; sx < Sn; sx++) {
            int64_t l = LAB(sx);
            g[l] = lse2(g[l], AL(t, sx) + BE(t, sx));
          }
          for (int64_t c = 0; c < C; c++) {
            double lp = LP(t, c);
            gall[(t * N + n) * C + c] = -exp(g[c] + nll - lp);
          }
        }
    }
    if (isinf(nll) && zero_infinity) nll = 0.0;
    lv[n] = nll;
#undef LP
#undef LAB
#undef AL
#undef BE
  }
  cell_store_run(L->dtype, cell_tensor_base(L), cell_dtype_size(L->dtype), N, lv);
  cell_store_run(G->dtype, cell_tensor_base(G), cell_dtype_size(G->dtype), T * N * C, gall);
  cell_dealloc(g);
  cell_dealloc(gall);
  cell_dealloc(lv);
  ctc_free(&b);
  *loss = L;
  *grad = G;
  return CELL_OK;
}
