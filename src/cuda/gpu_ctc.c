/* gpu_ctc.c - the GPU table's ctc_loss: the targets and lengths (small
 * integer tensors) read back for src/ops/ctc.c's checks and messages and
 * uploaded as compact int64 arrays, then gpu_ctc.cu's forward-backward,
 * one thread per sample in float64; the losses and the gradient cast to
 * the log-probabilities' dtype. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <stdlib.h>
#include <string.h>

/* An integer tensor's values as int64 on the host (malloc'd; *n of them). */
static cell_status ints_of(gpu_ctx *g, const cell_tensor *t, const char *what, long long **out, int64_t *n) {
  *out = NULL;
  if (cell_dtype_is_float(t->dtype) || t->dtype == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "ctc_loss: %s must be an integer tensor, got %s", what, cell_dtype_name(t->dtype));
  int64_t m = gpu_numel(t);
  cell_tensor *c;
  CELL_TRY(gpu_contig_as(t, CELL_DTYPE_I64, &c));
  long long *v = malloc(sizeof(long long) * (size_t)(m ? m : 1));
  cell_status s = v ? gpu_copy_d2h(g, v, gpu_data(c), sizeof(long long) * (size_t)m)
                    : cell_error(CELL_ERR_MEMORY, "ctc_loss: out of memory");
  cell_tensor_release(c);
  if (s != CELL_OK) {
    free(v);
    return s;
  }
  *out = v;
  *n = m;
  return CELL_OK;
}

static cell_status upload(gpu_ctx *g, const long long *v, int64_t n, cell_tensor **out) {
  int64_t m = n ? n : 1;
  CELL_TRY(gpu_new_tensor(g, CELL_DTYPE_I64, 1, &m, out));
  return n ? gpu_copy_h2d(g, gpu_data(*out), v, sizeof(long long) * (size_t)n) : CELL_OK;
}

cell_status gpu_ctc_loss(const cell_tensor *log_probs, const cell_tensor *targets, const cell_tensor *input_lengths,
                         const cell_tensor *target_lengths, int64_t blank, int64_t index_base, int zero_infinity,
                         cell_tensor **loss, cell_tensor **grad) {
  if (!log_probs || !targets || !input_lengths || !target_lengths || !loss || !grad)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: NULL argument");
  if (!cell_dtype_is_float(log_probs->dtype))
    return cell_error(CELL_ERR_TYPE, "ctc_loss: log_probs must be a float tensor, got %s",
                      cell_dtype_name(log_probs->dtype));
  if (log_probs->ndim != 3)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: log_probs must be 3-D (T, N, C), got %d-D", log_probs->ndim);
  const int64_t T = log_probs->shape[0], N = log_probs->shape[1], C = log_probs->shape[2];
  if (C < 1) return cell_error(CELL_ERR_VALUE, "ctc_loss: log_probs has no classes (C = 0)");
  if (blank < 0 || blank >= C)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: blank (%lld) must be a class id in [%lld, %lld]",
                      (long long)(blank + index_base), (long long)index_base, (long long)(C - 1 + index_base));
  if (targets->ndim != 1 && !(targets->ndim == 2 && targets->shape[0] == N))
    return cell_error(CELL_ERR_VALUE, "ctc_loss: targets must be (N, S) with N = %lld, or 1-D (the targets concatenated)",
                      (long long)N);
  gpu_ctx *g = gpu_ctx_of(log_probs);
  long long *tg = NULL, *il = NULL, *tl = NULL, *ctg = NULL, *toff = NULL;
  int64_t ntg = 0, nil = 0, ntl = 0;
  cell_status s = ints_of(g, targets, "targets", &tg, &ntg);
  if (s == CELL_OK) s = ints_of(g, input_lengths, "input_lengths", &il, &nil);
  if (s == CELL_OK) s = ints_of(g, target_lengths, "target_lengths", &tl, &ntl);
  if (s == CELL_OK && (nil != N || ntl != N))
    s = cell_error(CELL_ERR_VALUE, "ctc_loss: input_lengths and target_lengths must have N = %lld values, got %lld and %lld",
                   (long long)N, (long long)nil, (long long)ntl);
  const int padded = targets->ndim == 2;
  const int64_t S = padded ? targets->shape[1] : 0;
  int64_t total = 0, maxL = 0;
  for (int64_t n = 0; s == CELL_OK && n < N; n++) {
    if (il[n] < 0 || il[n] > T)
      s = cell_error(CELL_ERR_VALUE, "ctc_loss: input_lengths[%lld] = %lld must be in [0, %lld]", (long long)(n + 1),
                     (long long)il[n], (long long)T);
    else if (tl[n] < 0 || (padded && tl[n] > S))
      s = cell_error(CELL_ERR_VALUE, "ctc_loss: target_lengths[%lld] = %lld must be in [0, %lld]", (long long)(n + 1),
                     (long long)tl[n], (long long)(padded ? S : INT64_MAX));
    total += tl[n];
    if (tl[n] > maxL) maxL = tl[n];
  }
  if (s == CELL_OK && !padded && total != ntg)
    s = cell_error(CELL_ERR_VALUE, "ctc_loss: 1-D targets must hold sum(target_lengths) = %lld values, got %lld",
                   (long long)total, (long long)ntg);
  for (int64_t i = 0; s == CELL_OK && i < ntg; i++) {
    int64_t v = tg[i] - index_base;
    if (padded && (i % (S ? S : 1)) >= tl[i / (S ? S : 1)]) continue; /* padding */
    if (v < 0 || v >= C || v == blank)
      s = cell_error(CELL_ERR_INDEX, "ctc_loss: target %lld is not a class id in [%lld, %lld] other than blank (%lld)",
                     (long long)tg[i], (long long)index_base, (long long)(C - 1 + index_base),
                     (long long)(blank + index_base));
  }
  /* the targets compacted (0-based), each sample's from toff[n] */
  if (s == CELL_OK) {
    ctg = malloc(sizeof(long long) * (size_t)(total ? total : 1));
    toff = malloc(sizeof(long long) * (size_t)(N ? N : 1));
    if (!ctg || !toff) s = cell_error(CELL_ERR_MEMORY, "ctc_loss: out of memory");
  }
  for (int64_t n = 0, k = 0, off = 0; s == CELL_OK && n < N; n++) {
    toff[n] = k;
    const long long *src = padded ? tg + n * S : tg + off;
    for (int64_t j = 0; j < tl[n]; j++) ctg[k++] = src[j] - index_base;
    off += tl[n];
  }
  const int64_t SP = 2 * maxL + 1;
  cell_tensor *t[9] = {NULL}; /* lp, tg, il, tl, toff, alpha, beta, g, gall */
  cell_tensor *lv = NULL, *L = NULL, *G = NULL;
  if (s == CELL_OK) s = gpu_contig_as(log_probs, CELL_DTYPE_F64, &t[0]);
  if (s == CELL_OK) s = upload(g, ctg, total, &t[1]);
  if (s == CELL_OK) s = upload(g, il, N, &t[2]);
  if (s == CELL_OK) s = upload(g, tl, N, &t[3]);
  if (s == CELL_OK) s = upload(g, toff, N, &t[4]);
  int64_t nab = N * (T ? T : 1) * SP, ng = N * C;
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &nab, &t[5]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &nab, &t[6]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &ng, &t[7]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 3, log_probs->shape, &t[8]);
  if (s == CELL_OK) {
    unsigned char zero = 0;
    s = gpu_fill(g, gpu_data(t[8]), (size_t)gpu_numel(t[8]) * 8, &zero, 1);
  }
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, 1, &N, &lv);
  if (s == CELL_OK) {
    gpuk_ctc_args A = {T, N, C, SP, blank, zero_infinity};
    s = gpu_launch(gpuk_ctc(g->stream, A, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2]), gpu_data(t[3]),
                            gpu_data(t[4]), gpu_data(t[5]), gpu_data(t[6]), gpu_data(t[7]), gpu_data(t[8]),
                            gpu_data(lv)),
                   "ctc_loss");
  }
  if (s == CELL_OK) s = gpu_contig_as(lv, log_probs->dtype, &L);
  if (s == CELL_OK) s = gpu_contig_as(t[8], log_probs->dtype, &G);
  free(tg);
  free(il);
  free(tl);
  free(ctg);
  free(toff);
  gpu_release_all(t, 9);
  if (lv) cell_tensor_release(lv);
  if (s != CELL_OK) {
    if (L) cell_tensor_release(L);
    if (G) cell_tensor_release(G);
    return s;
  }
  *loss = L;
  *grad = G;
  return CELL_OK;
}
