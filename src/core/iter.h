/* iter.h - the strided N-operand iterator every elementwise kernel runs on.
 *
 * Operands share one (broadcast) shape; each has byte strides (0 along
 * broadcast dimensions). Dimensions that are contiguous for every operand
 * are merged, so contiguous tensors make a single call of the inner loop:
 * that is the contiguous fast path. Large iterations are split over threads
 * and poll the interrupt flag between rows. */
#ifndef CELL_CORE_ITER_H
#define CELL_CORE_ITER_H
#include "tensor.h"

#define CELL_ITER_MAX 4

/* Inner loop: n elements; ptrs[i] the first element of operand i; strides[i]
 * its byte stride. Operand 0 is the output by convention. */
typedef void (*cell_loop_fn)(void *ctx, int64_t n, char **ptrs, const int64_t *strides);

typedef struct cell_iter {
  int nops, ndim;
  int64_t shape[CELL_MAX_DIMS];
  int64_t stride[CELL_ITER_MAX][CELL_MAX_DIMS];
  char *base[CELL_ITER_MAX];
  int64_t cost; /* an element's work in copies (1 after init): threads from
                   CELL_ITER_GRAIN / cost elements on */
} cell_iter;

/* The cost of an element of a vectorised transcendental, in copies' time:
 * such ops split over threads from CELL_ITER_GRAIN / cost elements on.
 * Measured as the 1-thread time per element of the op against a float32
 * add of the same size (128K floats, cache-resident, best of 21 runs of 20
 * calls): exp 4.0, sigmoid 4.6, silu 4.8, log 5.1, tanh 6.5, erf 8.8,
 * GELU 9.8, GELU's gradient 11. CELL_ITER_COST_VM is the cheapest of the
 * class (exp, log, tanh, sigmoid, silu); CELL_ITER_COST_VM_HEAVY the
 * cheapest of erf, GELU and their gradients. Rounding down keeps each op
 * at or above its break-even. */
#define CELL_ITER_COST_VM 4
#define CELL_ITER_COST_VM_HEAVY 8

void cell_iter_init(cell_iter *it, int ndim, const int64_t *shape);
/* Add an operand; its shape must broadcast to the iterator's (checked by
 * the caller). */
void cell_iter_add(cell_iter *it, const cell_tensor *t);
/* Run fn over every element; CELL_ERR_INTERRUPT if interrupted. */
cell_status cell_iter_run(cell_iter *it, cell_loop_fn fn, void *ctx);

/* The hot loops compiled twice on x86-64 with GCC, for x86-64-v3 (AVX2 +
 * FMA) and the baseline; the loader picks one for the machine (an ifunc
 * resolved while it relocates the library; src/layout.ld keeps the
 * resolvers together). Not under ThreadSanitizer: the loader runs the
 * resolvers before TSan's runtime is initialised, and instrumented
 * resolvers crash the process at load. GCC says so with __SANITIZE_THREAD__;
 * clang (whose TSan build `make tsan` is) takes the plain loops. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define CELL_CLONES_V3 __attribute__((target_clones("arch=x86-64-v3", "default")))
#define CELL_HAVE_CLONES 1 /* the x86-64-v3 copies exist (with FMA) */
#else
#define CELL_CLONES_V3
#endif

/* A loop over [0, n) split across threads when par is true, run serially
 * otherwise. OpenMP's if() clause is not used for this: even a team of one
 * costs microseconds, more than a small op itself. */
#define CELL_FOR(par, T, var, n, ...)                   \
  do {                                                  \
    if (par) {                                          \
      _Pragma("omp parallel for schedule(static)")      \
      for (T var = 0; var < (n); var++) __VA_ARGS__     \
    } else {                                            \
      for (T var = 0; var < (n); var++) __VA_ARGS__     \
    }                                                   \
  } while (0)

/* CELL_FOR handing out iterations one at a time as threads come free
 * (OpenMP's dynamic schedule): for loops of a few costly iterations
 * (channels, planes), where a thread the OS has not run yet on a busy
 * machine would otherwise hold up the others with its static share. Which
 * thread runs an iteration never changes its result. */
#define CELL_FOR_DYNAMIC(par, T, var, n, ...)           \
  do {                                                  \
    if (par) {                                          \
      _Pragma("omp parallel for schedule(dynamic, 1)")  \
      for (T var = 0; var < (n); var++) __VA_ARGS__     \
    } else {                                            \
      for (T var = 0; var < (n); var++) __VA_ARGS__     \
    }                                                   \
  } while (0)

/* Work below this many elements runs on one thread. The bar is high on
 * purpose: after a parallel region OpenMP's workers spin for a while, and
 * on a small machine they take the cores OpenBLAS's threads need for the
 * next gemm (an MLP's backward pass ran 2.55x its forward with a 32K bar,
 * 1.8x with this one; OMP_WAIT_POLICY=PASSIVE in the environment also
 * cures it). Only tensors big enough to amortise that go parallel. */
#define CELL_PARALLEL_GRAIN (1 << 20)

/* cell_iter_run's bar: elementwise work of at least this many elements
 * splits over threads. Lower than CELL_PARALLEL_GRAIN: OpenBLAS is the
 * OpenMP build (the Makefile's BLAS_LIB), so its gemms run on the same
 * team and no second pool competes for the cores, and idle workers sleep
 * after tens of microseconds (GOMP_SPINCOUNT, src/lua/ompenv). Alone, with
 * its operands in one core's cache, a float32 add on two threads against
 * one (2-vCPU Xeon, best of 7): 16K elements 1.06x the time, 32K 0.74x,
 * 64K 0.64x (a ReLU's gradient on a Zen VM: 16K 1.2x, 32K 0.9x, 64K
 * 0.76x). Inside a model the operands were written by both threads' halves
 * of the ops before, and an op that stays on one thread reads half of them
 * from the other core: the tiny GPT's 32K-float adds took 1.7x their
 * 1-thread time at 2 threads with this bar at 64K; at 16K its 2-thread step
 * went 4.22 -> 4.10 ms (medians; the adds 216 -> 145 us a step, Adam
 * 106 -> 87), 32K was between. */
#define CELL_ITER_GRAIN (1 << 14)

#endif
