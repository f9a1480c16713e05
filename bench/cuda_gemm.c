/* cuda_gemm.c - cuBLAS sgemm and strided-batched sgemm called directly,
 * the reference for cell.cuda's figures (bench/cuda_gemm.lua times the same
 * products through cell). Full float32 (CUBLAS_DEFAULT_MATH, no TF32), as
 * cell.cuda's default. Prints one line per case: size, milliseconds per
 * call (median of REPS after WARMUP), GFLOP/s.
 * Usage: cuda_gemm [n = 4096] [batch = 8 (of n/4 matrices)] */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define WARMUP 3
#define REPS 20

#define CK(x)                                                                     \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      fprintf(stderr, "cuda_gemm: %s: %s\n", #x, cudaGetErrorString(e_));         \
      return 1;                                                                   \
    }                                                                             \
  } while (0)
#define CB(x)                                                                     \
  do {                                                                            \
    cublasStatus_t s_ = (x);                                                      \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                            \
      fprintf(stderr, "cuda_gemm: %s: %s\n", #x, cublasGetStatusString(s_));      \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* batch products of (n x n) by (n x n) at once, timed with events. */
static int run(cublasHandle_t h, int n, int batch) {
  size_t count = (size_t)n * n * batch;
  float *a, *b, *c;
  CK(cudaMalloc((void **)&a, count * sizeof *a));
  CK(cudaMalloc((void **)&b, count * sizeof *b));
  CK(cudaMalloc((void **)&c, count * sizeof *c));
  CK(cudaMemset(a, 0, count * sizeof *a)); /* values do not change the time */
  CK(cudaMemset(b, 0, count * sizeof *b));
  const float one = 1.0f, zero = 0.0f;
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  float ms[REPS];
  for (int r = 0; r < WARMUP + REPS; r++) {
    CK(cudaEventRecord(t0, 0));
    if (batch == 1)
      CB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n));
    else
      CB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, (long long)n * n, a,
                                   n, (long long)n * n, &zero, c, n, (long long)n * n, batch));
    CK(cudaEventRecord(t1, 0));
    CK(cudaEventSynchronize(t1));
    if (r >= WARMUP) CK(cudaEventElapsedTime(&ms[r - WARMUP], t0, t1));
  }
  qsort(ms, REPS, sizeof ms[0], cmp);
  double med = ms[REPS / 2];
  printf("cublas %s n=%d batch=%d: %.3f ms, %.0f GFLOP/s\n", batch == 1 ? "sgemm" : "sgemm_strided_batched",
         n, batch, med, 2.0 * n * n * (double)n * batch / (med * 1e6));
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4096;
  int batch = argc > 2 ? atoi(argv[2]) : 8;
  if (n <= 0 || batch <= 0) {
    fprintf(stderr, "usage: cuda_gemm [n > 0] [batch > 0]\n");
    return 2;
  }
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  int rc = run(h, n, 1);
  if (!rc) rc = run(h, n / 4 > 0 ? n / 4 : 1, batch);
  cublasDestroy(h);
  return rc;
}
