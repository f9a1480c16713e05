/* context.c - the engine context (threads, seed, interrupt) and the RNG. */
#include "rng.h"
#include "tensor.h"
#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static cell_context ctx = {1, 5489u, 0, 0};
static int threads_initialised;

cell_context *cell_ctx(void) {
  if (!threads_initialised) {
    threads_initialised = 1;
#ifdef _OPENMP
    ctx.num_threads = omp_get_max_threads();
#endif
  }
  return &ctx;
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

void cell_set_seed(unsigned long long seed) {
  ctx.seed = seed;
  ctx.rng_counter = 0;
}

uint64_t cell_rng_seed(void) { return ctx.seed; }

uint64_t cell_rng_reserve(uint64_t n) {
  uint64_t first = ctx.rng_counter;
  ctx.rng_counter += n;
  return first;
}

void cell_philox(uint64_t key, uint64_t counter, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}
