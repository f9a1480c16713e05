/* context.c - the engine context: the process-wide one (threads,
 * interrupt, hook ids) and each thread's own (grad mode, its backward
 * passes). The random generators are per thread too: rng.c. */
#include "tensor.h"
#include <pthread.h>
#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static cell_context ctx = {1, 0, 0};
__thread cell_thread_context cell_thread_ctx CELL_TLS_FAST = {1, -1, NULL, NULL};
/* Once, whichever thread comes first: a plain flag here was a data race
 * between two threads making their first call together. */
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void init_threads(void) {
#ifdef _OPENMP
  ctx.num_threads = omp_get_max_threads();
#endif
}

cell_context *cell_ctx(void) {
  pthread_once(&threads_once, init_threads);
  return &ctx;
}

cell_status cell_check_interrupt(void) {
  return cell_ctx()->interrupt ? cell_error(CELL_ERR_INTERRUPT, "interrupted") : CELL_OK;
}

cell_status cell_set_num_threads(int n) {
  if (n < 1 || n > CELL_MAX_THREADS)
    return cell_error(CELL_ERR_VALUE, "set_num_threads: n must be an integer in [1, %d], but got %d",
                      CELL_MAX_THREADS, n);
  cell_ctx()->num_threads = n;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  openblas_set_num_threads(n);
  return CELL_OK;
}

int cell_get_num_threads(void) { return cell_ctx()->num_threads; }

void cell_interrupt(int on) { ctx.interrupt = on; }
