/* attention_lowp.c - scaled dot-product attention over bfloat16 (or
 * float16) q, k, v whose heads take the dense forms (at most DENSE_MAX
 * scores per head, see attention.c): the operands are widened to float32
 * once, the float32 dense forms compute the scores, weights and products in
 * float32 (sgemms), and the results are rounded to the narrow dtype once.
 * The general path loads every operand as float64 and runs float64 gemms,
 * which for mixed-precision training cost more than the float32 model's
 * own attention. The log-sum-exp stays float64, so the backward of either
 * path reads the forward of either. Masks, dropout and its generator
 * position pass through unchanged. */
#include "attention.h"
#include "kernel_list.h"
#include "../core/dtype.h"
#include <stdlib.h>
#include <string.h>

int cell_sdpa_lowp_applies(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v, int64_t dense_max) {
  if (q->dtype != CELL_DTYPE_BF16 && q->dtype != CELL_DTYPE_F16) return 0;
  if (k->dtype != q->dtype || v->dtype != q->dtype || q->ndim < 2 || k->ndim != q->ndim) return 0;
  int nd = q->ndim;
  int64_t L = q->shape[nd - 2], S = k->shape[nd - 2];
  return L > 0 && S > 0 && L * S <= dense_max;
}

/* Whether t is the {..., H, R, C} view of a {..., R, H, C} buffer (heads
 * inner to rows: a projection's output split into heads), as attention.c
 * lays its float32 results out like such a query. */
static int heads_view(const cell_tensor *t) {
  int nd = t->ndim;
  return nd >= 3 && t->shape[nd - 3] >= 2 && t->shape[nd - 2] >= 2 && t->stride[nd - 3] < t->stride[nd - 2];
}

/* A new dt tensor of t's shape, laid out as a dense heads view (the
 * {..., R, H, C} buffer, its header turned into the {..., H, R, C} view)
 * when heads is set, contiguous otherwise. */
static cell_status new_heads(cell_dtype dt, const cell_tensor *t, int heads, cell_tensor **out) {
  int nd = t->ndim;
  if (!heads) return cell_tensor_new_contig(dt, nd, t->shape, out);
  int64_t sh[CELL_MAX_DIMS];
  memcpy(sh, t->shape, sizeof(int64_t) * (size_t)nd);
  sh[nd - 3] = t->shape[nd - 2];
  sh[nd - 2] = t->shape[nd - 3];
  CELL_TRY(cell_tensor_new_contig(dt, nd, sh, out));
  cell_tensor *r = *out; /* fresh: its header is ours to turn into the view */
  int64_t st = r->stride[nd - 3];
  r->shape[nd - 3] = t->shape[nd - 3];
  r->shape[nd - 2] = t->shape[nd - 2];
  r->stride[nd - 3] = r->stride[nd - 2];
  r->stride[nd - 2] = st;
  return CELL_OK;
}

/* A float32 copy of the bfloat16 t (any strides), row by row of its last
 * dimension: the heads of a {B, H, T, hd} view are short rows, which the
 * general copy visits one call each. The copy keeps a heads view's layout
 * (so that the float32 forms' results keep it too, and the narrow results
 * transpose back and merge their heads without a copy); contiguous
 * otherwise. The rows go in blocks over the threads (each block finds its
 * first row's offsets, then steps). */
#define WIDEN_BLOCKS 16
static cell_status widen_bf16(const cell_tensor *t, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(new_heads(CELL_DTYPE_F32, t, heads_view(t), &r));
  int nd = t->ndim;
  int64_t cols = t->shape[nd - 1], cs = t->stride[nd - 1], rows = cols > 0 ? cell_tensor_numel(t) / cols : 0;
  const uint16_t *src = (const uint16_t *)(const void *)cell_tensor_base(t);
  float *dst = (float *)(void *)cell_tensor_base(r);
  int64_t per = (rows + WIDEN_BLOCKS - 1) / WIDEN_BLOCKS;
  int par = rows > 1 && rows * cols >= CELL_ITER_GRAIN && cell_ctx()->num_threads > 1;
  CELL_FOR(par, int64_t, blk, WIDEN_BLOCKS, {
    int64_t i0 = blk * per, i1 = i0 + per < rows ? i0 + per : rows;
    int64_t idx[CELL_MAX_DIMS] = {0}, off = 0, doff = 0;
    for (int64_t rem = i0, dd = nd - 2; dd >= 0; dd--) { /* row i0's index and offsets */
      idx[dd] = rem % t->shape[dd];
      rem /= t->shape[dd];
      off += idx[dd] * t->stride[dd];
      doff += idx[dd] * r->stride[dd];
    }
    for (int64_t i = i0; i < i1; i++) {
      const uint16_t *row = src + off;
      float *d = dst + doff;
      if (cs == 1) {
        _Pragma("omp simd") for (int64_t j = 0; j < cols; j++) d[j] = cell_bf16_to_float(row[j]);
      } else {
        for (int64_t j = 0; j < cols; j++) d[j] = cell_bf16_to_float(row[j * cs]);
      }
      for (int dd = nd - 2; dd >= 0; dd--) { /* the next row's offsets */
        if (++idx[dd] < t->shape[dd]) {
          off += t->stride[dd];
          doff += r->stride[dd];
          break;
        }
        off -= t->stride[dd] * (t->shape[dd] - 1);
        doff -= r->stride[dd] * (t->shape[dd] - 1);
        idx[dd] = 0;
      }
    }
  });
  *out = r;
  return CELL_OK;
}

/* Widened copies of the n tensors in ts (NULLs stay NULL). */
static cell_status widen(int n, const cell_tensor *const *ts, cell_tensor **w) {
  for (int i = 0; i < n; i++) w[i] = NULL;
  for (int i = 0; i < n; i++) {
    if (!ts[i] || ts[i]->dtype == CELL_DTYPE_F32) continue;
    cell_status s = ts[i]->dtype == CELL_DTYPE_BF16 && ts[i]->ndim >= 1 ? widen_bf16(ts[i], &w[i])
                                                                         : cell_cpu_astype(ts[i], CELL_DTYPE_F32, &w[i]);
    if (s != CELL_OK) {
      for (int j = 0; j < i; j++) cell_tensor_release(w[j]);
      return s;
    }
  }
  return CELL_OK;
}

/* Whether t (fresh from new_heads or cell_tensor_new_contig) is dense in
 * the heads layout. */
static int dense_heads(const cell_tensor *t) {
  if (!heads_view(t) || t->offset != 0) return 0;
  int nd = t->ndim;
  int64_t C = t->shape[nd - 1], H = t->shape[nd - 3], R = t->shape[nd - 2];
  if (t->stride[nd - 1] != 1 || t->stride[nd - 3] != C || t->stride[nd - 2] != H * C) return 0;
  int64_t want = H * R * C;
  for (int d = nd - 4; d >= 0; d--) {
    if (t->shape[d] != 1 && t->stride[d] != want) return 0;
    want *= t->shape[d];
  }
  return 1;
}

/* *t (float32, owned) replaced by its rounding to dt: a dense heads
 * layout kept (the buffer rounded as it lies), anything else contiguous. */
static cell_status narrow(cell_tensor **t, cell_dtype dt) {
  if (!t || !*t || (*t)->dtype == dt) return CELL_OK;
  cell_tensor *r = NULL;
  cell_status s;
  if (dt == CELL_DTYPE_BF16 && dense_heads(*t)) {
    s = new_heads(dt, *t, 1, &r);
    if (s == CELL_OK) {
      const float *src = (const float *)(const void *)cell_tensor_base(*t);
      uint16_t *dst = (uint16_t *)(void *)cell_tensor_base(r);
      int64_t n = cell_tensor_numel(*t);
      int par = n >= 4 * CELL_ITER_GRAIN && cell_ctx()->num_threads > 1;
      CELL_FOR(par, int64_t, blk, WIDEN_BLOCKS, {
        int64_t per = (n + WIDEN_BLOCKS - 1) / WIDEN_BLOCKS, i0 = blk * per, i1 = i0 + per < n ? i0 + per : n;
        _Pragma("omp simd") for (int64_t i = i0; i < i1; i++) dst[i] = cell_float_to_bf16(src[i]);
      });
    }
  } else {
    s = cell_cpu_astype(*t, dt, &r);
  }
  cell_tensor_release(*t);
  *t = s == CELL_OK ? r : NULL;
  return s;
}

cell_status cell_sdpa_lowp(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                           const cell_tensor *mask, cell_sdpa_args *a, cell_tensor **out, cell_tensor **lse) {
  const cell_tensor *in[3] = {q, k, v};
  cell_tensor *w[3];
  CELL_TRY(widen(3, in, w));
  cell_tensor *y = NULL;
  cell_status s = cell_cpu_sdpa(w[0], w[1], w[2], mask, a, &y, lse);
  for (int i = 0; i < 3; i++) cell_tensor_release(w[i]);
  if (s != CELL_OK) return s;
  s = narrow(&y, q->dtype);
  if (s != CELL_OK) {
    if (lse) {
      cell_tensor_release(*lse);
      *lse = NULL;
    }
    return s;
  }
  *out = y;
  return CELL_OK;
}

cell_status cell_sdpa_backward_lowp(const cell_tensor *g, const cell_tensor *q, const cell_tensor *k,
                                    const cell_tensor *v, const cell_tensor *mask, const cell_tensor *o,
                                    const cell_tensor *lse, const cell_sdpa_args *a, cell_tensor **gq,
                                    cell_tensor **gk, cell_tensor **gv) {
  const cell_tensor *in[5] = {g, q, k, v, o};
  cell_tensor *w[5];
  CELL_TRY(widen(5, in, w));
  cell_tensor *r[3] = {NULL, NULL, NULL};
  cell_status s = cell_cpu_sdpa_backward(w[0] ? w[0] : g, w[1], w[2], w[3], mask, w[4] ? w[4] : o, lse, a,
                                         gq ? &r[0] : NULL, gk ? &r[1] : NULL, gv ? &r[2] : NULL, NULL);
  for (int i = 0; i < 5; i++) cell_tensor_release(w[i]);
  for (int i = 0; s == CELL_OK && i < 3; i++) s = narrow(&r[i], q->dtype);
  if (s != CELL_OK) {
    for (int i = 0; i < 3; i++) cell_tensor_release(r[i]);
    return s;
  }
  if (gq) *gq = r[0];
  if (gk) *gk = r[1];
  if (gv) *gv = r[2];
  return CELL_OK;
}
