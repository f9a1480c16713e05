/* optim_many.c - many Adam steps in one call (cell_optim_adam_steps).
 *
 * One step of a parameter below CELL_ITER_GRAIN elements runs on one
 * thread, and a model's optimizer meets dozens of them a step (the tiny
 * GPT: 30 parameters of 64 to 16,384 floats, 0.2 ms of AdamW on the main
 * thread while the other core waited). Here the small ones (all of them,
 * when none is more than a thread's share of the total) are shared out
 * over the team, a parameter at a time; each is computed by the same loop
 * as its own step, so the values do not depend on the thread count. */
#include "optim.h"
#include "../core/iter.h"
#include "device.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cell_status run_one(cell_tensor *p, const cell_tensor *g, cell_tensor *m, cell_tensor *v,
                           const cell_adam_config *c) {
  const char *saved = cell_op_enter(cell_adam_op(c));
  cell_status s = cell_k_adam_step(p, g, m, v, c);
  cell_op_leave(saved);
  return s;
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
  return x < y ? -1 : x > y;
}

/* Whether the steps may run side by side: every tensor on the CPU, and no
 * storage written by one step (parameter, moments) read or written by
 * another. */
static int independent(int64_t n, cell_tensor *const *params, const cell_tensor *const *grads,
                       cell_tensor *const *m, cell_tensor *const *v) {
  void *stack[3 * 64];
  void **w = n <= 64 ? stack : malloc(sizeof(void *) * (size_t)(3 * n));
  if (!w) return 0;
  int ok = 1;
  for (int64_t i = 0; i < n && ok; i++) {
    w[3 * i] = params[i]->storage;
    w[3 * i + 1] = m[i]->storage;
    w[3 * i + 2] = v[i]->storage;
    ok = params[i]->storage->device == 0 && grads[i]->storage->device == 0 && m[i]->storage->device == 0 &&
         v[i]->storage->device == 0;
  }
  if (ok) {
    qsort(w, (size_t)(3 * n), sizeof(void *), cmp_ptr);
    for (int64_t i = 1; i < 3 * n && ok; i++) ok = w[i] != w[i - 1];
    for (int64_t i = 0; i < n && ok; i++) {
      void *key = grads[i]->storage;
      ok = bsearch(&key, w, (size_t)(3 * n), sizeof(void *), cmp_ptr) == NULL;
    }
  }
  if (w != stack) free(w);
  return ok;
}

cell_status cell_optim_adam_steps(int64_t n, cell_tensor *const *params, const cell_tensor *const *grads,
                                  cell_tensor *const *exp_avgs, cell_tensor *const *exp_avg_sqs,
                                  const cell_adam_config *cfgs, int64_t *failed) {
  if (failed) *failed = -1;
  if (n < 0) return cell_error(CELL_ERR_VALUE, "adam_steps: n must be >= 0, got %lld", (long long)n);
  if (n > 0 && (!params || !grads || !exp_avgs || !exp_avg_sqs || !cfgs))
    return cell_error(CELL_ERR_VALUE, "adam_steps: NULL argument");
  for (int64_t i = 0; i < n; i++) {
    cell_status s = cell_adam_check(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], &cfgs[i]);
    if (s != CELL_OK) {
      if (failed) *failed = i;
      return s;
    }
  }
  /* the small steps, shared out when there are several and their sum is
   * worth a fork */
  int64_t nsmall = 0, small_work = 0;
  int threads = cell_ctx()->num_threads;
  char stack[256];
  char *small = n <= (int64_t)sizeof stack ? stack : malloc((size_t)n);
  if (!small) return cell_error(CELL_ERR_MEMORY, "adam_steps: out of memory");
  memset(small, 0, (size_t)(n > 0 ? n : 0));
  if (threads > 1 && n > 1) {
    /* When no parameter is more than a thread's share of them all, every
     * step is shared out in the one region (the tiny GPT's four 16K-float
     * weights took a region each after the small ones' region). */
    int64_t total = 0, largest = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t e = cell_tensor_numel(params[i]);
      total += e;
      if (e > largest) largest = e;
    }
    int all = largest * threads <= total;
    for (int64_t i = 0; i < n; i++) {
      int64_t e = cell_tensor_numel(params[i]);
      if (all || e < CELL_ITER_GRAIN) {
        small[i] = 1;
        nsmall++;
        small_work += e;
      }
    }
    if (nsmall < 2 || small_work < CELL_ITER_GRAIN / 4 || !independent(n, params, grads, exp_avgs, exp_avg_sqs)) {
      memset(small, 0, (size_t)n);
      nsmall = 0;
    }
  }
  cell_status s = CELL_OK;
  for (int64_t i = 0; i < n && s == CELL_OK; i++)
    if (!small[i]) {
      s = run_one(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], &cfgs[i]);
      if (s != CELL_OK && failed) *failed = i;
    }
  if (s == CELL_OK && nsmall > 0) {
    int64_t first = n;
    cell_status fs = CELL_OK;
    char msg[1024] = "";
    _Pragma("omp parallel for schedule(dynamic, 1)")
    for (int64_t i = 0; i < n; i++) {
      if (!small[i]) continue;
      cell_status si = run_one(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], &cfgs[i]);
      if (si != CELL_OK) {
        _Pragma("omp critical(cell_adam_steps)") {
          if (i < first) { /* the error of the first that failed, as run in order */
            first = i;
            fs = si;
            snprintf(msg, sizeof msg, "%s", cell_last_error());
          }
        }
      }
    }
    if (first < n) {
      if (failed) *failed = first;
      s = cell_error(fs, "%s", msg);
    }
  }
  if (small != stack) free(small);
  return s;
}
