/* matmul.c - float32 matmul throughput: cell_op_matmul against cblas_sgemm.
 *
 * Prints `cell_matmul_f32_N X GFLOP/s` and `openblas_sgemm_f32_N X GFLOP/s`
 * for N = 256, 1024, 2048 (or the sizes given as arguments), each the best
 * of several repetitions, so the gap is what cell adds on top of the BLAS
 * it calls (allocating the output, dispatch). Both run with the same thread
 * count: CELL_BENCH_THREADS, else the engine's default. Wall-clock time,
 * since the work is threaded. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cell.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Enough repetitions for about a second of work on a slow machine, and at
 * least three, since the best of several hides a stray context switch. */
static int reps_for(int64_t n) {
  double flop = 2.0 * (double)n * (double)n * (double)n;
  int reps = (int)(2e10 / flop);
  if (reps < 3) reps = 3;
  if (reps > 200) reps = 200;
  return reps;
}

static int fail(const char *what) {
  fprintf(stderr, "bench_matmul: %s: %s: %s\n", what, cell_status_name(cell_last_status()),
          cell_last_error());
  return 1;
}

static int bench(int64_t n) {
  int64_t shape[2] = {n, n};
  cell_tensor *a = NULL, *b = NULL, *c = NULL;
  if (cell_tensor_rand(CELL_DTYPE_F32, 2, shape, &a) ||
      cell_tensor_rand(CELL_DTYPE_F32, 2, shape, &b) ||
      cell_tensor_empty(CELL_DTYPE_F32, 2, shape, &c)) {
    cell_tensor_release(a);
    cell_tensor_release(b);
    return fail("allocating the operands");
  }
  double flop = 2.0 * (double)n * (double)n * (double)n;
  int reps = reps_for(n);

  /* cell: a fresh output per call, as `a:matmul(b)` in Lua makes. */
  double best_cell = 1e30;
  for (int r = 0; r <= reps; r++) { /* r == 0 warms up caches and threads */
    cell_tensor *out = NULL;
    double t0 = now();
    if (cell_op_matmul(a, b, &out) != CELL_OK) {
      cell_tensor_release(a);
      cell_tensor_release(b);
      cell_tensor_release(c);
      return fail("cell_op_matmul");
    }
    double dt = now() - t0;
    cell_tensor_release(out);
    if (r > 0 && dt < best_cell) best_cell = dt;
  }

  /* OpenBLAS directly, on the same operands, into a preallocated output. */
  const float *pa = cell_tensor_data_ptr(a), *pb = cell_tensor_data_ptr(b);
  float *pc = cell_tensor_data_ptr(c);
  double best_blas = 1e30;
  for (int r = 0; r <= reps; r++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, pa,
                (int)n, pb, (int)n, 0.0f, pc, (int)n);
    double dt = now() - t0;
    if (r > 0 && dt < best_blas) best_blas = dt;
  }

  printf("cell_matmul_f32_%lld %.2f GFLOP/s\n", (long long)n, flop / best_cell * 1e-9);
  printf("openblas_sgemm_f32_%lld %.2f GFLOP/s\n", (long long)n, flop / best_blas * 1e-9);
  fflush(stdout);
  cell_tensor_release(a);
  cell_tensor_release(b);
  cell_tensor_release(c);
  return 0;
}

int main(int argc, char **argv) {
  const char *env = getenv("CELL_BENCH_THREADS");
  /* cell_set_num_threads also sets OpenBLAS's count, so both sides agree. */
  cell_set_num_threads(env && atoi(env) > 0 ? atoi(env) : cell_get_num_threads());
  cell_set_seed(1);
  printf("matmul_threads %d threads\n", cell_get_num_threads());
  static const int64_t default_sizes[] = {256, 1024, 2048};
  int status = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++) status |= bench(atoll(argv[i]));
  } else {
    for (size_t i = 0; i < sizeof default_sizes / sizeof default_sizes[0]; i++)
      status |= bench(default_sizes[i]);
  }
  return status;
}
