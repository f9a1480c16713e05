/* test_autograd_threads.c - the autograd state is per thread where it
 * should be: 4 threads record graphs and run backward passes at once,
 * half of them switching grad mode off and on as they go, each with a
 * tensor hook; every gradient must be right, grad mode must never leak
 * from one thread into another, and hook ids must be unique in the
 * process. ThreadSanitizer (make tsan) checks there is no race. */
#include "check.h"
#include <pthread.h>
#include <sched.h>

#define NTHREADS 4
#define ROUNDS 100

typedef struct {
  int index;
  int *start;
  int bad;       /* rounds that went wrong */
  int hook_calls;
  int hook_id;
} ag_job;

static cell_status count_hook(void *ud, const cell_tensor *grad, cell_tensor **replacement) {
  (void)grad;
  (void)replacement;
  ((ag_job *)ud)->hook_calls++;
  return CELL_OK;
}

/* One round: grad of sum(x * x) is 2x; odd threads also run an op under
 * no_grad, which must record nothing. */
static int ag_round(ag_job *j, cell_tensor *x, const double *xv) {
  int bad = 0;
  if (!cell_grad_is_enabled()) bad++;
  if (j->index % 2) {
    int prev = cell_grad_set_enabled(0);
    cell_tensor *z = NULL;
    if (cell_op_binary(CELL_OP_MUL, x, x, &z) != CELL_OK || cell_tensor_requires_grad(z)) bad++;
    cell_tensor_release(z);
    cell_grad_set_enabled(prev);
  }
  cell_tensor *y = NULL, *s = NULL, *g = NULL;
  if (cell_op_binary(CELL_OP_MUL, x, x, &y) != CELL_OK ||
      cell_op_reduce(CELL_RED_SUM, y, 0, NULL, 0, &s) != CELL_OK ||
      cell_autograd_grad(s, NULL, 1, &x, &g) != CELL_OK) {
    bad++;
  } else {
    for (int i = 0; i < 3; i++)
      if (flat(g, i) != 2 * xv[i]) bad++;
  }
  cell_tensor_release(y);
  cell_tensor_release(s);
  cell_tensor_release(g);
  return bad;
}

static void *ag_run(void *arg) {
  ag_job *j = arg;
  int64_t n = 3;
  double xv[3] = {1 + j->index, 2 + j->index, -3 - j->index};
  cell_tensor *x = from(CELL_DTYPE_F64, 1, &n, xv);
  if (!x || cell_tensor_set_requires_grad(x, 1) != CELL_OK ||
      cell_tensor_register_hook(x, count_hook, NULL, j, &j->hook_id) != CELL_OK) {
    j->bad = -1;
    cell_tensor_release(x);
    return NULL;
  }
  while (!__atomic_load_n(j->start, __ATOMIC_ACQUIRE)) sched_yield();
  for (int r = 0; r < ROUNDS; r++) j->bad += ag_round(j, x, xv);
  cell_tensor_release(x);
  return NULL;
}

void test_autograd_threads_all(void) {
  ag_job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  int started[NTHREADS], start = 0;
  for (int i = 0; i < NTHREADS; i++) jobs[i] = (ag_job){i, &start, 0, 0, 0};
  for (int i = 0; i < NTHREADS; i++) started[i] = pthread_create(&th[i], NULL, ag_run, &jobs[i]) == 0;
  __atomic_store_n(&start, 1, __ATOMIC_RELEASE);
  /* this thread switches grad mode off meanwhile: the others never see it */
  int prev = cell_grad_set_enabled(0);
  for (int i = 0; i < NTHREADS; i++)
    if (started[i]) pthread_join(th[i], NULL);
  CHECK(cell_grad_is_enabled() == 0);
  cell_grad_set_enabled(prev);
  for (int i = 0; i < NTHREADS; i++) {
    CHECK(started[i]);
    CHECKF(jobs[i].bad == 0, "thread %d: %d bad rounds", i, jobs[i].bad);
    CHECKF(jobs[i].hook_calls == ROUNDS, "thread %d: hook ran %d times", i, jobs[i].hook_calls);
    for (int k = 0; k < i; k++)
      CHECKF(jobs[i].hook_id != jobs[k].hook_id, "threads %d and %d got hook id %d", k, i,
             jobs[i].hook_id);
  }
}
