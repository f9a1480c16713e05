/* fake_cuda.c - the CUDA runtime and cuBLAS calls cell.cuda makes, on host
 * memory, for tests/cuda/host_gpu.sh: one device whose memory is malloc's,
 * whose stream runs everything at once, and naive column-major gemms.
 * Never linked into the real module. */
#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>
cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { (void)e; return "cudaErrorEmulated"; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "emulated error"; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { (void)k; (void)st; memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { (void)st; memset(d, v, n); return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { (void)d; return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int f) { (void)f; *s = (cudaStream_t)malloc(16); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { free(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) { *h = (cublasHandle_t)malloc(16); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) { free(h); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) { (void)h; (void)s; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { (void)h; (void)m; return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t s) { (void)s; return "emulated cuBLAS error"; }
#define GEMM(T, NAME)                                                                                         \
  static void NAME(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, T alpha, const T *A, int lda, \
                   const T *B, int ldb, T beta, T *C, int ldc) {                                                \
    for (int j = 0; j < n; j++)                                                                               \
      for (int i = 0; i < m; i++) {                                                                           \
        double s = 0;                                                                                         \
        for (int l = 0; l < k; l++) {                                                                         \
          double a = ta == CUBLAS_OP_N ? A[i + (long)l * lda] : A[l + (long)i * lda];                          \
          double b = tb == CUBLAS_OP_N ? B[l + (long)j * ldb] : B[j + (long)l * ldb];                          \
          s += a * b;                                                                                         \
        }                                                                                                     \
        C[i + (long)j * ldc] = (T)(alpha * s + (beta != 0 ? beta * C[i + (long)j * ldc] : 0));                \
      }                                                                                                       \
  }
GEMM(float, sg)
GEMM(double, dg)
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc) {
  (void)h; sg(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc); return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const double *alpha, const double *A, int lda, const double *B, int ldb,
                              const double *beta, double *C, int ldc) {
  (void)h; dg(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc); return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch) {
  (void)h; for (int b = 0; b < batch; b++) sg(ta, tb, m, n, k, *alpha, A + b * sa, lda, B + b * sb, ldb, *beta, C + b * sc, ldc);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch) {
  (void)h; for (int b = 0; b < batch; b++) dg(ta, tb, m, n, k, *alpha, A + b * sa, lda, B + b * sb, ldb, *beta, C + b * sc, ldc);
  return CUBLAS_STATUS_SUCCESS;
}
