/* attention.c - fused scaled dot-product attention, forward and backward
 * (src/ops/attention.h).
 *
 * Forward: for each query row, the keys are visited in blocks of BLOCK;
 * each block's scores update a running maximum m, a running sum l of
 * exp(score - m) and an accumulator of the weighted values (an online
 * softmax, as flash attention computes it), so memory stays O(BLOCK) per
 * row whatever L and S are. The row's log-sum-exp m + log(l) is kept.
 * Backward: per batch-head, each probability is recomputed as
 * exp(score - lse) and used at once for dV, dQ and dK, with
 * D_i = dO_i . O_i standing for sum_j P_ij dP_ij; nothing L x S is stored
 * (but small float32 heads without dropout: their forward keeps the
 * weights, and the backward reads them, as PyTorch's attention does).
 * A float mask that needs a gradient gets P_ij (dP_ij - D_i) summed into its
 * own shape, in a second pass over the heads grouped by mask plane.
 * Rows (forward) and batch-heads (backward) split over threads; each
 * result element is summed in the same order whatever the thread count.
 * Heads of at most DENSE_MAX scores take dense forms (gemms over the
 * materialised scores); in float32 those run in float32 on the operands in
 * place (sdpa_f32, sdpa_backward_f32), as PyTorch computes them. */
#include "attention.h"
#include "nn.h"
#include "kernels.h"
#include "kernel_list.h"
#include "../core/alloc.h"
#include "../core/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "vmath.h"
#include "../backend/backend.h"

#define BLOCK 64

typedef struct {
  int64_t nbh, L, S, E, Ev;
  const double *q, *k, *v, *mask;   /* row-major doubles; mask may be NULL */
  int64_t *moff;                    /* per batch-head: offset of its mask plane */
  int64_t msi, msj;                 /* mask strides along L and S (0: broadcast) */
  int mask_bool;                    /* bool mask: nonzero keeps, zero gives -inf */
  double scale;
  int causal;
  double p, keep_scale;
  uint64_t threshold, seed, first;
  int vexp; /* results narrower than float64: vmath.h's vector exp */
} geom;

/* e[j] = exp(sc[j] - m) over n scores. */
static void exp_block(const geom *g, double *e, const double *sc, double m, int64_t n) {
  if (!g->vexp) {
    for (int64_t j = 0; j < n; j++) e[j] = exp(sc[j] - m);
    return;
  }
  CELL_NN_SIMD for (int64_t j = 0; j < n; j++) e[j] = sc[j] - m;
  cell_vm_exp_d(e, e, n);
}

static const char *OP = "scaled_dot_product_attention";

static cell_status check(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                         const cell_tensor *mask, const cell_sdpa_args *a) {
  if (!q || !k || !v || !a) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", OP);
  CELL_TRY(cell_nn_check_float(OP, "query", q));
  CELL_TRY(cell_nn_check_float(OP, "key", k));
  CELL_TRY(cell_nn_check_float(OP, "value", v));
  if (k->dtype != q->dtype || v->dtype != q->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: query, key and value must share a dtype, got %s, %s, %s",
                      OP, cell_dtype_name(q->dtype), cell_dtype_name(k->dtype),
                      cell_dtype_name(v->dtype));
  if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
    return cell_error(CELL_ERR_VALUE,
                      "%s: query, key and value must have the same number of dimensions, at "
                      "least 2 ({..., L, E}, {..., S, E}, {..., S, Ev}), got %d, %d, %d",
                      OP, q->ndim, k->ndim, v->ndim);
  int nd = q->ndim;
  for (int d = 0; d < nd - 2; d++)
    if (k->shape[d] != q->shape[d] || v->shape[d] != q->shape[d])
      return cell_error(CELL_ERR_VALUE,
                        "%s: query, key and value must share their leading dimensions; dimension "
                        "%d is %lld, %lld, %lld",
                        OP, d + 1, (long long)q->shape[d], (long long)k->shape[d],
                        (long long)v->shape[d]);
  if (k->shape[nd - 1] != q->shape[nd - 1])
    return cell_error(CELL_ERR_VALUE,
                      "%s: key's last dimension (%lld) must equal query's (%lld)", OP,
                      (long long)k->shape[nd - 1], (long long)q->shape[nd - 1]);
  if (v->shape[nd - 2] != k->shape[nd - 2])
    return cell_error(CELL_ERR_VALUE,
                      "%s: value's sequence length (%lld) must equal key's (%lld)", OP,
                      (long long)v->shape[nd - 2], (long long)k->shape[nd - 2]);
  if (!(a->p >= 0 && a->p < 1))
    return cell_error(CELL_ERR_VALUE, "%s: dropout_p must lie in [0, 1), got %g", OP, a->p);
  if (mask) {
    if (mask->dtype != CELL_DTYPE_BOOL && !cell_dtype_is_float(mask->dtype))
      return cell_error(CELL_ERR_TYPE, "%s: attn_mask must be bool or float, got %s", OP,
                        cell_dtype_name(mask->dtype));
    if (mask->ndim > nd)
      return cell_error(CELL_ERR_VALUE,
                        "%s: attn_mask has %d dimensions, more than query's %d", OP, mask->ndim,
                        nd);
    for (int d = 0; d < mask->ndim; d++) {
      int qd = nd - mask->ndim + d;
      int64_t want = qd == nd - 1 ? k->shape[nd - 2] : q->shape[qd];
      if (mask->shape[d] != 1 && mask->shape[d] != want)
        return cell_error(CELL_ERR_VALUE,
                          "%s: attn_mask of shape dimension %d = %lld does not broadcast to the "
                          "scores' %lld ({..., L, S} = {..., %lld, %lld})",
                          OP, d + 1, (long long)mask->shape[d], (long long)want,
                          (long long)q->shape[nd - 2], (long long)k->shape[nd - 2]);
    }
  }
  return CELL_OK;
}

static void free_geom(geom *g) {
  cell_dealloc((void *)g->q);
  cell_dealloc((void *)g->k);
  cell_dealloc((void *)g->v);
  cell_dealloc((void *)g->mask);
  cell_dealloc(g->moff);
}

/* Load the operands as doubles and lay out the mask's broadcast. */
static cell_status load(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                        const cell_tensor *mask, const cell_sdpa_args *a, int data, geom *g) {
  memset(g, 0, sizeof *g);
  int nd = q->ndim;
  g->L = q->shape[nd - 2];
  g->E = q->shape[nd - 1];
  g->S = k->shape[nd - 2];
  g->Ev = v->shape[nd - 1];
  g->nbh = 1;
  for (int d = 0; d < nd - 2; d++) g->nbh *= q->shape[d];
  g->scale = a->scale;
  g->vexp = q->dtype != CELL_DTYPE_F64;
  g->causal = a->causal;
  g->p = a->p;
  g->keep_scale = 1.0 / (1.0 - a->p);
  g->threshold = (uint64_t)ceil(a->p * 4294967296.0);
  g->seed = a->seed;
  g->first = a->first;
  g->mask_bool = mask && mask->dtype == CELL_DTYPE_BOOL;
  double *bq = NULL, *bk = NULL, *bv = NULL, *bm = NULL;
  cell_status s = CELL_OK;
  if (data) {
    s = cell_nn_doubles(OP, q, g->nbh * g->L * g->E, 0, &bq);
    if (s == CELL_OK) s = cell_nn_doubles(OP, k, g->nbh * g->S * g->E, 0, &bk);
    if (s == CELL_OK) s = cell_nn_doubles(OP, v, g->nbh * g->S * g->Ev, 0, &bv);
  }
  if (s == CELL_OK && mask) s = cell_nn_doubles(OP, mask, cell_tensor_numel(mask), 0, &bm);
  g->q = bq;
  g->k = bk;
  g->v = bv;
  g->mask = bm;
  if (s == CELL_OK && mask) {
    /* the mask's contiguous strides, 0 where it broadcasts, over {lead..., L, S} */
    int64_t st[CELL_MAX_DIMS] = {0}, acc = 1;
    for (int d = nd - 1; d >= 0; d--) {
      int md = d - (nd - mask->ndim);
      if (md < 0) continue;
      st[d] = mask->shape[md] == 1 ? 0 : acc;
      acc *= mask->shape[md];
    }
    g->msi = st[nd - 2];
    g->msj = st[nd - 1];
    g->moff = cell_alloc((size_t)(g->nbh > 0 ? g->nbh : 1) * sizeof(int64_t));
    if (!g->moff) s = cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
    for (int64_t h = 0; s == CELL_OK && h < g->nbh; h++) {
      int64_t rem = h, off = 0;
      for (int d = nd - 3; d >= 0; d--) {
        off += (rem % q->shape[d]) * st[d];
        rem /= q->shape[d];
      }
      g->moff[h] = off;
    }
  }
  if (s != CELL_OK) free_geom(g);
  return s;
}

/* The scores of query row i of head h against keys j0..j1 into sc; -inf
 * for masked keys. Returns the block's maximum. */
static double scores(const geom *g, int64_t h, int64_t i, int64_t j0, int64_t j1, double *sc) {
  const double *qi = g->q + (h * g->L + i) * g->E;
  const double *mrow = g->mask ? g->mask + g->moff[h] + i * g->msi : NULL;
  double m = -INFINITY;
  for (int64_t j = j0; j < j1; j++) {
    const double *kj = g->k + (h * g->S + j) * g->E;
    double d = 0;
    CELL_NN_SIMD_SUM(d)
    for (int64_t e = 0; e < g->E; e++) d += qi[e] * kj[e];
    d *= g->scale;
    if (mrow) {
      double mv = mrow[j * g->msj];
      if (g->mask_bool) d = mv != 0 ? d : -INFINITY;
      else d += mv;
    }
    sc[j - j0] = d;
    if (d > m) m = d;
  }
  return m;
}

/* The dropout factor of weight (h, i, j): 0 or 1 / (1 - p). */
static inline double drop(const geom *g, int64_t h, int64_t i, int64_t j) {
  uint64_t idx = (uint64_t)((h * g->L + i) * g->S + j);
  uint32_t w[4];
  cell_philox(g->seed, g->first + idx / 4, w);
  return (uint64_t)w[idx % 4] >= g->threshold ? g->keep_scale : 0.0;
}

/* The last key (exclusive) row i may see. */
static inline int64_t key_end(const geom *g, int64_t i) {
  return g->causal ? (i + 1 < g->S ? i + 1 : g->S) : g->S;
}

/* Forward of one query row: out row (Ev doubles) and its lse. */
static void forward_row(const geom *g, int64_t h, int64_t i, double *o, double *lse) {
  double sc[BLOCK], m = -INFINITY, l = 0;
  for (int64_t e = 0; e < g->Ev; e++) o[e] = 0;
  int64_t jend = key_end(g, i);
  for (int64_t j0 = 0; j0 < jend; j0 += BLOCK) {
    int64_t j1 = j0 + BLOCK < jend ? j0 + BLOCK : jend;
    double bm = scores(g, h, i, j0, j1, sc);
    if (bm == -INFINITY) continue;
    double mn = bm > m ? bm : m;
    if (m != -INFINITY && mn != m) {
      double c = exp(m - mn);
      l *= c;
      CELL_NN_SIMD for (int64_t e = 0; e < g->Ev; e++) o[e] *= c;
    }
    m = mn;
    double pe[BLOCK];
    exp_block(g, pe, sc, m, j1 - j0);
    for (int64_t j = j0; j < j1; j++) {
      double pj = pe[j - j0];
      l += pj;
      if (g->p > 0) pj *= drop(g, h, i, j);
      if (pj == 0) continue;
      const double *vj = g->v + (h * g->S + j) * g->Ev;
      CELL_NN_SIMD for (int64_t e = 0; e < g->Ev; e++) o[e] += pj * vj[e];
    }
  }
  double r = 1.0 / l; /* l == 0 (every key masked): NaN, as softmax over -inf gives */
  for (int64_t e = 0; e < g->Ev; e++) o[e] *= r;
  *lse = m + log(l);
}

/* Heads whose L x S scores fit this many doubles take the dense forms (their scores materialised, the products as gemms). */
#define DENSE_MAX (128 * 128)

/* C = A B over doubles (strides in elements; C contiguous, ldc n). */
static cell_status dgemm(int64_t m, int64_t n, int64_t k, const double *a, int64_t a_rs, int64_t a_cs,
                         const double *b, int64_t b_rs, int64_t b_cs, double *c) {
  cell_gemm gm = {CELL_DTYPE_F64, m, n, k, (const char *)a, a_rs, a_cs, (const char *)b, b_rs, b_cs,
                  (char *)c, n, 1, 0};
  return cell_gemm_run(&gm);
}

/* The masked, scaled scores of head h's query row i (from the row of
 * Q K^T in row, in place) up to key jend, then exp(score - m) with m the
 * row's maximum (or the given lse): the row's weights before dropout.
 * Keys from jend on get 0. Returns the maximum used. */
static double dense_row(const geom *g, int64_t h, int64_t i, double *row, int use_lse, double lse) {
  const double *mrow = g->mask ? g->mask + g->moff[h] + i * g->msi : NULL;
  int64_t jend = key_end(g, i);
  double m = -INFINITY;
  for (int64_t j = 0; j < jend; j++) {
    double d = row[j] * g->scale;
    if (mrow) {
      double mv = mrow[j * g->msj];
      if (g->mask_bool) d = mv != 0 ? d : -INFINITY;
      else d += mv;
    }
    row[j] = d;
    if (d > m) m = d;
  }
  if (use_lse) m = lse;
  if (m == -INFINITY) {
    for (int64_t j = 0; j < g->S; j++) row[j] = 0;
  } else {
    exp_block(g, row, row, m, jend);
    for (int64_t j = jend; j < g->S; j++) row[j] = 0;
  }
  return m;
}

/* forward_row for every row of a small head at once: the scores and the
 * weighted values as two gemms. 0 (nothing written) when out of memory. */
static int forward_head_dense(const geom *g, int64_t h, double *o, double *lse) {
  int64_t L = g->L, S = g->S, E = g->E, Ev = g->Ev;
  double *P = cell_alloc(sizeof(double) * (size_t)(L * S));
  if (!P) return 0;
  const double *qh = g->q + h * L * E, *kh = g->k + h * S * E, *vh = g->v + h * S * Ev;
  int ok = dgemm(L, S, E, qh, E, 1, kh, 1, E, P) == CELL_OK;
  double *oh = o + h * L * Ev, *lh = lse + h * L;
  for (int64_t i = 0; ok && i < L; i++) {
    double *row = P + i * S;
    double m = dense_row(g, h, i, row, 0, 0), l = 0;
    for (int64_t j = 0; j < S; j++) l += row[j];
    lh[i] = m + log(l); /* every key masked: -inf, as forward_row */
    if (g->p > 0)
      for (int64_t j = 0; j < S; j++)
        if (row[j] != 0) row[j] *= drop(g, h, i, j);
    double r = 1.0 / l;
    CELL_NN_SIMD for (int64_t j = 0; j < S; j++) row[j] *= r; /* l == 0: NaN, as forward_row */
  }
  if (ok) ok = dgemm(L, Ev, S, P, S, 1, vh, Ev, 1, oh) == CELL_OK;
  cell_dealloc(P);
  return ok;
}

/* --- float32 heads of at most DENSE_MAX scores -------------------------------------
 * The dense forms above in float32, as PyTorch computes them: q, k, v (and
 * the output's gradient and the output) are read in place through their
 * strides (a {B, H, T, hd} view of a {B, T, H * hd} projection needs no
 * copy), the scores and weights are float32 and the products are sgemms
 * straight into the results; the row sums, the log-sum-exp and the
 * D_i = dO_i . O_i of the backward are summed in double. */

/* A float32 operand {lead..., rows, cols} read in place. */
typedef struct {
  const float *base;
  int nl;
  int64_t shape[CELL_MAX_DIMS], stride[CELL_MAX_DIMS];
  int64_t rs, cs;
} fview;

static void fview_init(fview *f, const cell_tensor *t) {
  int nd = t->ndim;
  f->base = (const float *)cell_tensor_base(t);
  f->nl = nd - 2;
  for (int d = 0; d < nd - 2; d++) {
    f->shape[d] = t->shape[d];
    f->stride[d] = t->stride[d];
  }
  f->rs = t->stride[nd - 2];
  f->cs = t->stride[nd - 1];
}

/* The first element of batch-head h. */
static const float *fview_head(const fview *f, int64_t h) {
  int64_t off = 0;
  for (int d = f->nl - 1; d >= 0; d--) {
    off += (h % f->shape[d]) * f->stride[d];
    h /= f->shape[d];
  }
  return f->base + off;
}

/* Whether q, k, v take the float32 dense forms. */
static int f32_dense(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v) {
  int nd = q->ndim;
  int64_t L = q->shape[nd - 2], S = k->shape[nd - 2];
  return q->dtype == CELL_DTYPE_F32 && L > 0 && S > 0 && q->shape[nd - 1] > 0 && v->shape[nd - 1] > 0 &&
         L * S <= DENSE_MAX;
}

/* A float32 result {lead..., H, R, C} (nd >= 3) laid out as `like` is
 * when like is the {..., H, R, C} view of a {..., R, H, C} buffer (heads
 * inner to rows: a projection's output split into heads): the heads'
 * rows interleaved, so that the view's transpose back is contiguous and
 * its reshape to {..., R, H * C} copies nothing (PyTorch's attention
 * keeps the query's layout too); contiguous otherwise. */
static cell_status new_like_heads(const cell_tensor *like, int nd, const int64_t *shape, cell_tensor **out) {
  if (nd < 3 || like->ndim != nd || shape[nd - 3] < 2 || shape[nd - 2] < 2 ||
      !(like->stride[nd - 3] < like->stride[nd - 2]))
    return cell_tensor_new_contig(CELL_DTYPE_F32, nd, shape, out);
  int64_t sh[CELL_MAX_DIMS];
  memcpy(sh, shape, sizeof(int64_t) * (size_t)nd);
  sh[nd - 3] = shape[nd - 2];
  sh[nd - 2] = shape[nd - 3];
  CELL_TRY(cell_tensor_new_contig(CELL_DTYPE_F32, nd, sh, out));
  cell_tensor *t = *out; /* fresh: its header is ours to turn into the transposed view */
  int64_t st = t->stride[nd - 3];
  t->shape[nd - 3] = shape[nd - 3];
  t->shape[nd - 2] = shape[nd - 2];
  t->stride[nd - 3] = t->stride[nd - 2];
  t->stride[nd - 2] = st;
  return CELL_OK;
}

/* C = A B over floats (strides in elements; C row-major with ldc). */
static int sgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                 int64_t b_rs, int64_t b_cs, float *c, int64_t ldc) {
  cell_gemm gm = {CELL_DTYPE_F32, m, n, k, (const char *)a, a_rs, a_cs, (const char *)b, b_rs, b_cs,
                  (char *)c, ldc, 1, 0};
  return cell_gemm_run(&gm) == CELL_OK;
}

/* dense_row in float32, all but the exp: the row's masked, scaled scores
 * (from Q K^T in row) minus m up to key jend, with m the row's maximum or
 * the given lse, and -inf after (and throughout when m is -inf). The
 * caller takes exp_fast of the head's whole L x S block in one call
 * (exp(-inf) = 0): one vector loop instead of a call per row whose short
 * causal rows ran mostly in the scalar tail (the tiny GPT's rows of 1 to
 * 32 keys: exp_fast_f32 3.6% of a step, perf). Returns the maximum used. */
static double dense_row_f(const geom *g, int64_t h, int64_t i, float *row, int use_lse, double lse) {
  const double *mrow = g->mask ? g->mask + g->moff[h] + i * g->msi : NULL;
  int64_t jend = key_end(g, i);
  float sc = (float)g->scale, m = -INFINITY;
  if (mrow) {
    for (int64_t j = 0; j < jend; j++) {
      double mv = mrow[j * g->msj];
      float d = row[j] * sc;
      if (g->mask_bool) d = mv != 0 ? d : -INFINITY;
      else d = (float)(d + mv);
      row[j] = d;
      m = d > m ? d : m;
    }
  } else {
    CELL_NN_PRAGMA(omp simd reduction(max : m))
    for (int64_t j = 0; j < jend; j++) {
      float d = row[j] * sc;
      row[j] = d;
      m = d > m ? d : m;
    }
  }
  double mu = use_lse ? lse : m;
  if (mu == -INFINITY) {
    for (int64_t j = 0; j < g->S; j++) row[j] = -INFINITY;
    return mu;
  }
  float mf = (float)mu;
  CELL_NN_SIMD for (int64_t j = 0; j < jend; j++) row[j] -= mf;
  for (int64_t j = jend; j < g->S; j++) row[j] = -INFINITY;
  return mu;
}

/* keep: where the head's weights stay for the backward (its L x S block of
 * the kept weights), or NULL (a scratch block). */
static int forward_head_f32(const geom *g, const fview *q, const fview *k, const fview *v, int64_t h,
                            const fview *o, double *lse, float *keep) {
  int64_t L = g->L, S = g->S, E = g->E, Ev = g->Ev;
  float *P = keep ? keep : cell_alloc(sizeof(float) * (size_t)(L * S));
  if (!P) return 0;
  const float *qh = fview_head(q, h), *kh = fview_head(k, h), *vh = fview_head(v, h);
  int ok = sgemm(L, S, E, qh, q->rs, q->cs, kh, k->cs, k->rs, P, S);
  double *lh = lse + h * L;
  for (int64_t i = 0; ok && i < L; i++) lh[i] = dense_row_f(g, h, i, P + i * S, 0, 0); /* the maxima, for now */
  if (ok) cell_vm_exp_fast_f32(P, P, L * S);
  for (int64_t i = 0; ok && i < L; i++) {
    float *row = P + i * S;
    double m = lh[i], l = 0;
    CELL_NN_SIMD_SUM(l)
    for (int64_t j = 0; j < S; j++) l += row[j];
    lh[i] = m + log(l); /* every key masked: -inf */
    if (g->p > 0)
      for (int64_t j = 0; j < S; j++)
        if (row[j] != 0) row[j] = (float)(row[j] * drop(g, h, i, j));
    float r = (float)(1.0 / l); /* l == 0: NaN, as forward_row */
    CELL_NN_SIMD for (int64_t j = 0; j < S; j++) row[j] *= r;
  }
  if (ok) ok = sgemm(L, Ev, S, P, S, 1, vh, v->rs, v->cs, (float *)fview_head(o, h), o->rs);
  if (!keep) cell_dealloc(P);
  return ok;
}

static cell_status sdpa_f32(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                            const cell_tensor *mask, cell_sdpa_args *a, cell_tensor **out, cell_tensor **lse) {
  geom g;
  CELL_TRY(load(q, k, v, mask, a, 0, &g));
  int nd = q->ndim;
  int64_t oshape[CELL_MAX_DIMS];
  memcpy(oshape, q->shape, sizeof(int64_t) * (size_t)nd);
  oshape[nd - 1] = g.Ev;
  int64_t rows = g.nbh * g.L;
  cell_tensor *y = NULL, *ls = NULL, *probs = NULL;
  double *lb = lse ? NULL : cell_alloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
  cell_status s = lse || lb ? CELL_OK : cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
  if (s == CELL_OK) s = new_like_heads(q, nd, oshape, &y);
  if (s == CELL_OK && lse) s = cell_tensor_new_contig(CELL_DTYPE_F64, nd - 1, q->shape, &ls);
  /* the weights kept for the backward (below the budget, no dropout) */
  if (s == CELL_OK && lse && g.p == 0 && rows * g.S <= CELL_SDPA_KEEP_BYTES / (int64_t)sizeof(float))
    s = cell_tensor_new_contig(CELL_DTYPE_F32, 3, (int64_t[]){g.nbh, g.L, g.S}, &probs);
  if (s == CELL_OK && g.p > 0) {
    g.first = cell_rng_reserve((uint64_t)(rows * g.S + 3) / 4, &g.seed);
    a->seed = g.seed;
    a->first = g.first;
  }
  if (s == CELL_OK) {
    fview fq, fk, fv, fy;
    fview_init(&fq, q);
    fview_init(&fk, k);
    fview_init(&fv, v);
    fview_init(&fy, y);
    double *lsb = ls ? (double *)cell_tensor_base(ls) : lb;
    volatile int *intr = &cell_ctx()->interrupt;
    int failed = 0;
    int par = cell_nn_parallel(g.nbh, rows * g.S * (g.E + g.Ev));
    CELL_FOR(par, int64_t, h, g.nbh, {
      if (*intr) continue;
      float *keep = probs ? (float *)cell_tensor_base(probs) + h * g.L * g.S : NULL;
      if (!forward_head_f32(&g, &fq, &fk, &fv, h, &fy, lsb, keep)) failed = 1;
    });
    if (*intr) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
    else if (failed) s = cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
  }
  cell_dealloc(lb);
  free_geom(&g);
  if (s != CELL_OK) {
    cell_tensor_release(y);
    cell_tensor_release(ls);
    cell_tensor_release(probs);
    return s;
  }
  *out = y;
  if (lse) *lse = ls;
  a->probs = probs;
  return CELL_OK;
}

/* backward_head_dense in float32: the gradients' planes of head h in gq,
 * gk, gv (rows of unit column stride). kept: the head's weights as the
 * forward kept them (no dropout), or NULL: recomputed from lse. */
static int backward_head_f32(const geom *g, const fview *q, const fview *k, const fview *v, const fview *go,
                             const fview *o, const double *lse, int64_t h, const fview *gq, const fview *gk,
                             const fview *gv, const float *kept) {
  int64_t L = g->L, S = g->S, E = g->E, Ev = g->Ev;
  int drops = g->p > 0;
  float *buf = cell_alloc(sizeof(float) * (size_t)((kept ? 1 : drops ? 3 : 2) * L * S));
  if (!buf) return 0;
  float *dP = kept ? buf : buf + L * S, *P = kept ? (float *)kept : buf, *Pf = drops ? dP + L * S : P;
  const float *qh = fview_head(q, h), *kh = fview_head(k, h), *vh = fview_head(v, h);
  const float *goh = fview_head(go, h), *oh = fview_head(o, h);
  const double *lh = lse + h * L;
  int ok = 1;
  if (!kept) {
    ok = sgemm(L, S, E, qh, q->rs, q->cs, kh, k->cs, k->rs, P, S); /* Q K^T, unscaled */
    for (int64_t i = 0; ok && i < L; i++) dense_row_f(g, h, i, P + i * S, 1, lh[i]);
    if (ok) cell_vm_exp_fast_f32(P, P, L * S);
  }
  for (int64_t i = 0; ok && i < L; i++) {
    float *row = P + i * S;
    if (drops) {
      float *rowf = Pf + i * S;
      for (int64_t j = 0; j < S; j++) rowf[j] = row[j] != 0 ? (float)(row[j] * drop(g, h, i, j)) : 0.0f;
    }
  }
  /* dV = Pf^T dO; dP = dO V^T */
  if (ok) ok = sgemm(S, Ev, L, Pf, 1, S, goh, go->rs, go->cs, (float *)fview_head(gv, h), gv->rs);
  if (ok) ok = sgemm(L, S, Ev, goh, go->rs, go->cs, vh, v->cs, v->rs, dP, S);
  /* dS = P (dP f - D) scale, into dP (dP f P = dP Pf) */
  float sc = (float)g->scale;
  for (int64_t i = 0; ok && i < L; i++) {
    const float *goi = goh + i * go->rs, *oi = oh + i * o->rs;
    int64_t gcs = go->cs, ocs = o->cs;
    double D = 0;
    CELL_NN_SIMD_SUM(D)
    for (int64_t e = 0; e < Ev; e++) D += (double)goi[e * gcs] * oi[e * ocs];
    float Df = (float)D, *r = dP + i * S;
    const float *pr = P + i * S, *pfr = Pf + i * S;
    CELL_NN_SIMD for (int64_t j = 0; j < S; j++) {
      float ds = (r[j] * pfr[j] - pr[j] * Df) * sc;
      r[j] = pr[j] != 0 ? ds : 0.0f;
    }
  }
  /* dQ = dS K; dK = dS^T Q */
  if (ok) ok = sgemm(L, E, S, dP, S, 1, kh, k->rs, k->cs, (float *)fview_head(gq, h), gq->rs);
  if (ok) ok = sgemm(S, E, L, dP, 1, S, qh, q->rs, q->cs, (float *)fview_head(gk, h), gk->rs);
  cell_dealloc(buf);
  return ok;
}

/* Whether the n elements of t (float32 {lead..., rows, cols}) are all finite. */
static int all_finite_f32(const cell_tensor *t, int64_t nbh) {
  fview f;
  fview_init(&f, t);
  int nd = t->ndim;
  int64_t R = t->shape[nd - 2], C = t->shape[nd - 1];
  int fin = 1;
  for (int64_t h = 0; h < nbh && fin; h++) {
    const float *p = fview_head(&f, h);
    for (int64_t i = 0; i < R; i++) {
      const float *r = p + i * f.rs;
      if (f.cs == 1) {
        /* on the bits, so the loop vectorises (isfinite did not: this scan
         * of the tiny GPT's gradient was 1% of its 2-thread step, serial) */
        uint32_t any = 0;
        for (int64_t j = 0; j < C; j++) {
          uint32_t b;
          memcpy(&b, r + j, sizeof b);
          any |= (b & 0x7f800000u) == 0x7f800000u;
        }
        fin &= !any;
      } else {
        for (int64_t j = 0; j < C; j++) fin &= isfinite(r[j * f.cs]) != 0;
      }
    }
  }
  return fin;
}

/* The float32 dense backward where it applies (*done set): the output's
 * gradient and the output float32 of the output's shape, every lse finite
 * and the gradient finite (as backward_head_dense asks). */
static cell_status sdpa_backward_f32(const cell_tensor *gt, const cell_tensor *q, const cell_tensor *k,
                                     const cell_tensor *v, const cell_tensor *mask, const cell_tensor *ot,
                                     const cell_tensor *lset, const cell_sdpa_args *a, cell_tensor **gq,
                                     cell_tensor **gk, cell_tensor **gv, int *done) {
  *done = 0;
  int nd = q->ndim;
  if (gt->dtype != CELL_DTYPE_F32 || ot->dtype != CELL_DTYPE_F32 || gt->ndim != nd || ot->ndim != nd ||
      lset->dtype != CELL_DTYPE_F64 || lset->ndim != nd - 1)
    return CELL_OK;
  for (int d = 0; d < nd; d++) {
    int64_t want = d == nd - 1 ? v->shape[nd - 1] : q->shape[d];
    if (gt->shape[d] != want || ot->shape[d] != want) return CELL_OK;
    if (d < nd - 1 && lset->shape[d] != q->shape[d]) return CELL_OK;
  }
  int64_t nbh = 1, L = q->shape[nd - 2];
  for (int d = 0; d < nd - 2; d++) nbh *= q->shape[d];
  /* lse contiguous */
  for (int d = nd - 2, acc = 1; d >= 0; d--) {
    if (lset->shape[d] != 1 && lset->stride[d] != acc) return CELL_OK;
    acc *= (int)lset->shape[d];
  }
  const double *lb = (const double *)cell_tensor_base(lset);
  for (int64_t r = 0; r < nbh * L; r++)
    if (!isfinite(lb[r])) return CELL_OK;
  if (!all_finite_f32(gt, nbh)) return CELL_OK;
  geom g;
  CELL_TRY(load(q, k, v, mask, a, 0, &g));
  /* the forward's weights, when it kept them for these heads */
  const cell_tensor *probs = a->probs;
  if (probs && (probs->dtype != CELL_DTYPE_F32 || g.p > 0 || !cell_tensor_is_contiguous(probs) ||
                cell_tensor_numel(probs) != g.nbh * g.L * g.S))
    probs = NULL;
  cell_tensor *rq = NULL, *rk = NULL, *rv = NULL;
  cell_status s = new_like_heads(q, nd, q->shape, &rq);
  if (s == CELL_OK) s = new_like_heads(k, nd, k->shape, &rk);
  if (s == CELL_OK) s = new_like_heads(v, nd, v->shape, &rv);
  if (s == CELL_OK) {
    fview fq, fk, fv, fg, fo, frq, frk, frv;
    fview_init(&fq, q);
    fview_init(&fk, k);
    fview_init(&fv, v);
    fview_init(&fg, gt);
    fview_init(&fo, ot);
    fview_init(&frq, rq);
    fview_init(&frk, rk);
    fview_init(&frv, rv);
    volatile int *intr = &cell_ctx()->interrupt;
    int failed = 0;
    int par = cell_nn_parallel(g.nbh, g.nbh * g.L * g.S * (g.E + g.Ev));
    CELL_FOR(par, int64_t, h, g.nbh, {
      if (*intr) continue;
      const float *kept = probs ? (const float *)cell_tensor_base(probs) + h * g.L * g.S : NULL;
      if (!backward_head_f32(&g, &fq, &fk, &fv, &fg, &fo, lb, h, &frq, &frk, &frv, kept)) failed = 1;
    });
    if (*intr) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
    else if (failed) s = cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
  }
  free_geom(&g);
  if (s != CELL_OK) {
    cell_tensor_release(rq);
    cell_tensor_release(rk);
    cell_tensor_release(rv);
    return s;
  }
  if (gq) *gq = rq;
  else cell_tensor_release(rq);
  if (gk) *gk = rk;
  else cell_tensor_release(rk);
  if (gv) *gv = rv;
  else cell_tensor_release(rv);
  *done = 1;
  return CELL_OK;
}

cell_status cell_cpu_sdpa(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                          const cell_tensor *mask, cell_sdpa_args *a, cell_tensor **out,
                          cell_tensor **lse) {
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", OP);
  CELL_TRY(check(q, k, v, mask, a));
  if (f32_dense(q, k, v)) return sdpa_f32(q, k, v, mask, a, out, lse);
  if (cell_sdpa_lowp_applies(q, k, v, DENSE_MAX)) return cell_sdpa_lowp(q, k, v, mask, a, out, lse);
  geom g;
  CELL_TRY(load(q, k, v, mask, a, 1, &g));
  int nd = q->ndim;
  int64_t oshape[CELL_MAX_DIMS];
  memcpy(oshape, q->shape, sizeof(int64_t) * (size_t)nd);
  oshape[nd - 1] = g.Ev;
  int64_t rows = g.nbh * g.L;
  double *ob = cell_alloc((size_t)(rows * g.Ev > 0 ? rows * g.Ev : 1) * sizeof(double));
  double *lb = cell_alloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
  cell_tensor *y = NULL, *ls = NULL;
  cell_status s = ob && lb ? CELL_OK : cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
  if (s == CELL_OK) s = cell_tensor_new_contig(q->dtype, nd, oshape, &y);
  if (s == CELL_OK && lse) s = cell_tensor_new_contig(CELL_DTYPE_F64, nd - 1, q->shape, &ls);
  if (s == CELL_OK && g.p > 0) {
    g.first = cell_rng_reserve((uint64_t)(rows * g.S + 3) / 4, &g.seed);
    a->seed = g.seed;
    a->first = g.first;
  }
  if (s == CELL_OK) {
    volatile int *intr = &cell_ctx()->interrupt;
    int par = cell_nn_parallel(rows, rows * g.S * (g.E + g.Ev));
    if (g.L * g.S <= DENSE_MAX) {
      par = cell_nn_parallel(g.nbh, rows * g.S * (g.E + g.Ev));
      CELL_FOR(par, int64_t, h, g.nbh, {
        if (*intr) continue;
        if (!forward_head_dense(&g, h, ob, lb))
          for (int64_t i = 0; i < g.L; i++) forward_row(&g, h, i, ob + (h * g.L + i) * g.Ev, lb + h * g.L + i);
      });
    } else {
      CELL_FOR(par, int64_t, r, rows, {
        if (*intr) continue;
        forward_row(&g, r / g.L, r % g.L, ob + r * g.Ev, lb + r);
      });
    }
    if (*intr) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
  }
  if (s == CELL_OK) {
    cell_store_run(y->dtype, cell_tensor_base(y), cell_dtype_size(y->dtype), rows * g.Ev, ob);
    if (ls) cell_store_run(CELL_DTYPE_F64, cell_tensor_base(ls), 8, rows, lb);
  }
  cell_dealloc(ob);
  cell_dealloc(lb);
  free_geom(&g);
  if (s != CELL_OK) {
    cell_tensor_release(y);
    cell_tensor_release(ls);
    return s;
  }
  *out = y;
  if (lse) *lse = ls;
  return CELL_OK;
}

/* Backward of one batch-head: accumulates into dq, dk, dv (its planes). */
static void backward_head(const geom *g, int64_t h, const double *go, const double *o,
                          const double *lse, double *dq, double *dk, double *dv) {
  double sc[BLOCK];
  for (int64_t i = 0; i < g->L; i++) {
    int64_t r = h * g->L + i;
    double li = lse[r];
    if (!(li > -INFINITY) || isnan(li)) continue;
    const double *goi = go + r * g->Ev, *oi = o + r * g->Ev, *qi = g->q + r * g->E;
    double *dqi = dq + r * g->E, D = 0;
    CELL_NN_SIMD_SUM(D)
    for (int64_t e = 0; e < g->Ev; e++) D += goi[e] * oi[e];
    int64_t jend = key_end(g, i);
    for (int64_t j0 = 0; j0 < jend; j0 += BLOCK) {
      int64_t j1 = j0 + BLOCK < jend ? j0 + BLOCK : jend;
      scores(g, h, i, j0, j1, sc);
      double pe[BLOCK];
      exp_block(g, pe, sc, li, j1 - j0);
      for (int64_t j = j0; j < j1; j++) {
        double P = pe[j - j0];
        if (P == 0) continue;
        double f = g->p > 0 ? drop(g, h, i, j) : 1.0;
        const double *vj = g->v + (h * g->S + j) * g->Ev, *kj = g->k + (h * g->S + j) * g->E;
        double *dvj = dv + (h * g->S + j) * g->Ev, *dkj = dk + (h * g->S + j) * g->E;
        double dz = 0;
        CELL_NN_SIMD_SUM(dz)
        for (int64_t e = 0; e < g->Ev; e++) dz += goi[e] * vj[e];
        double z = P * f;
        if (z != 0) {
          CELL_NN_SIMD for (int64_t e = 0; e < g->Ev; e++) dvj[e] += z * goi[e];
        }
        double ds = P * (dz * f - D) * g->scale;
        CELL_NN_SIMD for (int64_t e = 0; e < g->E; e++) {
          dqi[e] += ds * kj[e];
          dkj[e] += ds * qi[e];
        }
      }
    }
  }
}

/* backward_head for a small head, with its probabilities materialised:
 * five gemms (scores, dV, dP, dQ, dK) instead of a dot product per (i, j).
 * The same quantities as backward_head, summed in another order. Returns
 * 0 (nothing written) where the dense form could differ from the row-wise
 * one beyond rounding: a row whose lse is not finite (all keys masked) or
 * a gradient that is not finite (0 x inf would give NaN where the row-wise
 * form skips the term); the caller then runs backward_head. */
static int backward_head_dense(const geom *g, int64_t h, const double *go, const double *o,
                               const double *lse, double *dq, double *dk, double *dv) {
  int64_t L = g->L, S = g->S, E = g->E, Ev = g->Ev;
  const double *goh = go + h * L * Ev, *oh = o + h * L * Ev, *lh = lse + h * L;
  for (int64_t i = 0; i < L; i++)
    if (!isfinite(lh[i])) return 0;
  int finite = 1;
  for (int64_t e = 0; e < L * Ev; e++) finite &= isfinite(goh[e]);
  if (!finite) return 0;
  double *P = cell_alloc(sizeof(double) * (size_t)(3 * L * S));
  if (!P) return 0;
  double *Pf = P + L * S, *dP = Pf + L * S;
  const double *qh = g->q + h * L * E, *kh = g->k + h * S * E, *vh = g->v + h * S * Ev;
  int ok = dgemm(L, S, E, qh, E, 1, kh, 1, E, P) == CELL_OK; /* Q K^T, unscaled */
  for (int64_t i = 0; ok && i < L; i++) {
    double *row = P + i * S, *rowf = Pf + i * S;
    dense_row(g, h, i, row, 1, lh[i]);
    for (int64_t j = 0; j < S; j++) rowf[j] = g->p > 0 && row[j] != 0 ? row[j] * drop(g, h, i, j) : row[j];
  }
  /* dV = Pf^T dO; dP = dO V^T */
  if (ok) ok = dgemm(S, Ev, L, Pf, 1, S, goh, Ev, 1, dv + h * S * Ev) == CELL_OK;
  if (ok) ok = dgemm(L, S, Ev, goh, Ev, 1, vh, 1, Ev, dP) == CELL_OK;
  /* dS = P (dP f - D) scale, into dP (dP f P = dP Pf) */
  for (int64_t i = 0; ok && i < L; i++) {
    const double *goi = goh + i * Ev, *oi = oh + i * Ev;
    double D = 0;
    CELL_NN_SIMD_SUM(D)
    for (int64_t e = 0; e < Ev; e++) D += goi[e] * oi[e];
    double *r = dP + i * S;
    const double *pr = P + i * S, *pfr = Pf + i * S;
    CELL_NN_SIMD for (int64_t j = 0; j < S; j++) {
      double ds = (r[j] * pfr[j] - pr[j] * D) * g->scale;
      r[j] = pr[j] != 0 ? ds : 0;
    }
  }
  /* dQ = dS K; dK = dS^T Q */
  if (ok) ok = dgemm(L, E, S, dP, S, 1, kh, E, 1, dq + h * L * E) == CELL_OK;
  if (ok) ok = dgemm(S, E, L, dP, 1, S, qh, E, 1, dk + h * S * E) == CELL_OK;
  cell_dealloc(P);
  if (!ok) { /* the planes are rewritten whole by the row-wise form */
    memset(dq + h * L * E, 0, sizeof(double) * (size_t)(L * E));
    memset(dk + h * S * E, 0, sizeof(double) * (size_t)(S * E));
    memset(dv + h * S * Ev, 0, sizeof(double) * (size_t)(S * Ev));
  }
  return ok;
}

/* The mask's gradient from the heads h[0..nh) that share one mask plane
 * (ascending, so each element sums in a fixed order): a float mask adds
 * to the scores, so its gradient is the scores' (without the scale),
 * P * (dz * f - D), recomputed here as backward_head does. */
static void mask_grad_heads(const geom *g, const int64_t *hs, int64_t nh, const double *go,
                            const double *o, const double *lse, double *dm) {
  double sc[BLOCK];
  for (int64_t t = 0; t < nh; t++) {
    int64_t h = hs[t];
    for (int64_t i = 0; i < g->L; i++) {
      int64_t r = h * g->L + i;
      double li = lse[r];
      if (!(li > -INFINITY) || isnan(li)) continue;
      const double *goi = go + r * g->Ev, *oi = o + r * g->Ev;
      double *dmi = dm + g->moff[h] + i * g->msi, D = 0;
      CELL_NN_SIMD_SUM(D)
      for (int64_t e = 0; e < g->Ev; e++) D += goi[e] * oi[e];
      int64_t jend = key_end(g, i);
      for (int64_t j0 = 0; j0 < jend; j0 += BLOCK) {
        int64_t j1 = j0 + BLOCK < jend ? j0 + BLOCK : jend;
        scores(g, h, i, j0, j1, sc);
        for (int64_t j = j0; j < j1; j++) {
          double P = exp(sc[j - j0] - li);
          if (P == 0) continue;
          double f = g->p > 0 ? drop(g, h, i, j) : 1.0;
          const double *vj = g->v + (h * g->S + j) * g->Ev;
          double dz = 0;
          CELL_NN_SIMD_SUM(dz)
          for (int64_t e = 0; e < g->Ev; e++) dz += goi[e] * vj[e];
          dmi[j * g->msj] += P * (dz * f - D);
        }
      }
    }
  }
}

static int cmp_by_plane(const void *x, const void *y) {
  const int64_t *a = x, *b = y; /* (plane offset, head) pairs */
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : (a[1] > b[1]) - (a[1] < b[1]);
}

/* The mask's gradient into dm (its numel doubles, zeroed): heads grouped by
 * the mask plane they read (broadcast dimensions share one), the groups in
 * parallel, each group's heads in order. */
static cell_status mask_grad(const geom *g, const double *go, const double *o, const double *lse,
                             double *dm) {
  int64_t nbh = g->nbh;
  int64_t *pairs = cell_alloc((size_t)(2 * (nbh > 0 ? nbh : 1)) * sizeof(int64_t));
  int64_t *heads = cell_alloc((size_t)(nbh > 0 ? nbh : 1) * sizeof(int64_t));
  int64_t *start = cell_alloc((size_t)(nbh + 1) * sizeof(int64_t));
  if (!pairs || !heads || !start) {
    cell_dealloc(pairs);
    cell_dealloc(heads);
    cell_dealloc(start);
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
  }
  for (int64_t h = 0; h < nbh; h++) {
    pairs[2 * h] = g->moff[h];
    pairs[2 * h + 1] = h;
  }
  qsort(pairs, (size_t)nbh, 2 * sizeof(int64_t), cmp_by_plane);
  int64_t groups = 0;
  for (int64_t t = 0; t < nbh; t++) {
    heads[t] = pairs[2 * t + 1];
    if (t == 0 || pairs[2 * t] != pairs[2 * t - 2]) start[groups++] = t;
  }
  start[groups] = nbh;
  volatile int *intr = &cell_ctx()->interrupt;
  int par = cell_nn_parallel(groups, nbh * g->L * g->S * (g->E + g->Ev));
  CELL_FOR(par, int64_t, q, groups, {
    if (*intr) continue;
    mask_grad_heads(g, heads + start[q], start[q + 1] - start[q], go, o, lse, dm);
  });
  cell_dealloc(pairs);
  cell_dealloc(heads);
  cell_dealloc(start);
  if (*intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  return CELL_OK;
}

/* A new tensor like t (t's dtype and shape) holding n doubles from b. */
static cell_status give(const cell_tensor *t, const double *b, int64_t n, cell_tensor **out) {
  if (!out) return CELL_OK;
  cell_tensor *y;
  CELL_TRY(cell_tensor_new_contig(t->dtype, t->ndim, t->shape, &y));
  cell_store_run(y->dtype, cell_tensor_base(y), cell_dtype_size(y->dtype), n, b);
  *out = y;
  return CELL_OK;
}

cell_status cell_cpu_sdpa_backward(const cell_tensor *gt, const cell_tensor *q,
                                   const cell_tensor *k, const cell_tensor *v,
                                   const cell_tensor *mask, const cell_tensor *ot,
                                   const cell_tensor *lset, const cell_sdpa_args *a,
                                   cell_tensor **gq, cell_tensor **gk, cell_tensor **gv,
                                   cell_tensor **gm) {
  if (!gt || !ot || !lset) return cell_error(CELL_ERR_VALUE, "%s backward: NULL argument", OP);
  CELL_TRY(check(q, k, v, mask, a));
  if (gm && (!mask || mask->dtype == CELL_DTYPE_BOOL))
    return cell_error(CELL_ERR_VALUE, "%s backward: a mask gradient needs a float mask", OP);
  if (!gq && !gk && !gv && !gm) return CELL_OK;
  if (!gm && f32_dense(q, k, v)) {
    int done = 0;
    CELL_TRY(sdpa_backward_f32(gt, q, k, v, mask, ot, lset, a, gq, gk, gv, &done));
    if (done) return CELL_OK;
  }
  if (!gm && cell_sdpa_lowp_applies(q, k, v, DENSE_MAX))
    return cell_sdpa_backward_lowp(gt, q, k, v, mask, ot, lset, a, gq, gk, gv);
  geom g;
  CELL_TRY(load(q, k, v, mask, a, 1, &g));
  int64_t nq = g.nbh * g.L * g.E, nk = g.nbh * g.S * g.E, nv = g.nbh * g.S * g.Ev;
  int64_t no = g.nbh * g.L * g.Ev;
  if (cell_tensor_numel(gt) != no || cell_tensor_numel(ot) != no ||
      cell_tensor_numel(lset) != g.nbh * g.L) {
    free_geom(&g);
    return cell_error(CELL_ERR_VALUE, "%s backward: the gradient has %lld elements, expected %lld",
                      OP, (long long)cell_tensor_numel(gt), (long long)no);
  }
  double *go = NULL, *o = NULL, *ls = NULL, *dm = NULL;
  int64_t nm = gm ? cell_tensor_numel(mask) : 0;
  double *dq = cell_alloc_zero((size_t)(nq > 0 ? nq : 1) * sizeof(double));
  double *dk = cell_alloc_zero((size_t)(nk > 0 ? nk : 1) * sizeof(double));
  double *dv = cell_alloc_zero((size_t)(nv > 0 ? nv : 1) * sizeof(double));
  if (gm) dm = cell_alloc_zero((size_t)(nm > 0 ? nm : 1) * sizeof(double));
  cell_status s = dq && dk && dv && (!gm || dm) ? CELL_OK
                                                : cell_error(CELL_ERR_MEMORY, "%s: out of memory", OP);
  if (s == CELL_OK) s = cell_nn_doubles(OP, gt, no, 0, &go);
  if (s == CELL_OK) s = cell_nn_doubles(OP, ot, no, 0, &o);
  if (s == CELL_OK) s = cell_nn_doubles(OP, lset, g.nbh * g.L, 0, &ls);
  if (s == CELL_OK) {
    volatile int *intr = &cell_ctx()->interrupt;
    int par = cell_nn_parallel(g.nbh, g.nbh * g.L * g.S * (g.E + g.Ev));
    CELL_FOR(par, int64_t, h, g.nbh, {
      if (*intr) continue;
      if (g.L * g.S > DENSE_MAX || !backward_head_dense(&g, h, go, o, ls, dq, dk, dv))
        backward_head(&g, h, go, o, ls, dq, dk, dv);
    });
    if (*intr) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
  }
  if (s == CELL_OK && gm) s = mask_grad(&g, go, o, ls, dm);
  cell_tensor *rq = NULL, *rk = NULL, *rv = NULL, *rm = NULL;
  if (s == CELL_OK) s = give(q, dq, nq, gq ? &rq : NULL);
  if (s == CELL_OK) s = give(k, dk, nk, gk ? &rk : NULL);
  if (s == CELL_OK) s = give(v, dv, nv, gv ? &rv : NULL);
  if (s == CELL_OK) s = give(mask, dm, nm, gm ? &rm : NULL);
  cell_dealloc(dm);
  cell_dealloc(dq);
  cell_dealloc(dk);
  cell_dealloc(dv);
  cell_dealloc(go);
  cell_dealloc(o);
  cell_dealloc(ls);
  free_geom(&g);
  if (s != CELL_OK) {
    cell_tensor_release(rq);
    cell_tensor_release(rk);
    cell_tensor_release(rv);
    cell_tensor_release(rm);
    return s;
  }
  if (gq) *gq = rq;
  if (gk) *gk = rk;
  if (gv) *gv = rv;
  if (gm) *gm = rm;
  return CELL_OK;
}
