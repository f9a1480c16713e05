/* gpu_blas.c - mm and bmm on the GPU through cuBLAS, float32 and float64,
 * contiguous inputs (supports_op declines the rest).
 *
 * cuBLAS is column-major: a row-major C = A B is the column-major
 * C^T = B^T A^T, so the calls pass B first. Float32 gemm runs in full
 * float32 (CUBLAS_DEFAULT_MATH, TF32 off) unless cell.cuda.set_allow_tf32
 * turned TF32 on for the device. */
#include "gpu.h"
#include <cublas_v2.h>

static cell_status blas_error(cublasStatus_t s, const char *what) {
  return cell_error(CELL_ERR_RUNTIME, "%s: cuBLAS: %s", what, cublasGetStatusString(s));
}

static cell_status handle(gpu_ctx *g, cublasHandle_t *h, const char *what) {
  cudaError_t e = cudaSetDevice(g->ordinal);
  if (e != cudaSuccess) return gpu_cuda_error(e, what);
  if (!g->blas) {
    cublasHandle_t nh;
    cublasStatus_t s = cublasCreate(&nh);
    if (s != CUBLAS_STATUS_SUCCESS) return blas_error(s, what);
    s = cublasSetStream(nh, g->stream);
    if (s != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(nh);
      return blas_error(s, what);
    }
    g->blas = nh;
  }
  *h = g->blas;
  cublasStatus_t s =
      cublasSetMathMode(*h, g->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  return s == CUBLAS_STATUS_SUCCESS ? CELL_OK : blas_error(s, what);
}

void gpu_blas_destroy(gpu_ctx *g) {
  if (g->blas) cublasDestroy(g->blas);
  g->blas = NULL;
}

/* batch gemms of (m, k) x (k, n), row-major, contiguous. */
static cell_status gemm(const char *what, const cell_tensor *a, const cell_tensor *b, int64_t batch,
                        int64_t m, int64_t k, int64_t n, cell_tensor *out) {
  gpu_ctx *g = gpu_ctx_of(a);
  if (!g) return cell_error(CELL_ERR_RUNTIME, "%s: tensor not on a GPU", what);
  if (m > 2147483647 || n > 2147483647 || k > 2147483647 || batch > 2147483647)
    return cell_error(CELL_ERR_VALUE, "%s: a dimension over 2^31-1 (%lld, %lld, %lld)", what,
                      (long long)m, (long long)k, (long long)n);
  if (!m || !n || !batch) return CELL_OK;
  if (!k) { /* empty sum: zeros */
    static const unsigned char zero[8];
    return gpu_fill(g, gpu_data(out), (size_t)(batch * m * n) * (size_t)cell_dtype_size(out->dtype),
                    zero, 8);
  }
  cublasHandle_t h = NULL;
  cell_status st = handle(g, &h, what);
  if (st != CELL_OK) return st;
  int im = (int)m, ik = (int)k, in = (int)n, ib = (int)batch;
  cublasStatus_t s;
  if (a->dtype == CELL_DTYPE_F32) {
    const float one = 1.0f, zero = 0.0f;
    s = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, gpu_data(b), in,
                                  (long long)k * n, gpu_data(a), ik, (long long)m * k, &zero,
                                  gpu_data(out), in, (long long)m * n, ib);
  } else {
    const double one = 1.0, zero = 0.0;
    s = cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one, gpu_data(b), in,
                                  (long long)k * n, gpu_data(a), ik, (long long)m * k, &zero,
                                  gpu_data(out), in, (long long)m * n, ib);
  }
  return s == CUBLAS_STATUS_SUCCESS ? CELL_OK : blas_error(s, what);
}

cell_status gpu_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0] || a->dtype != b->dtype)
    return cell_error(CELL_ERR_VALUE, "mm: shapes (%lld, %lld) and (%lld, %lld) on GPU",
                      (long long)(a->ndim > 0 ? a->shape[0] : 0), (long long)(a->ndim > 1 ? a->shape[1] : 0),
                      (long long)(b->ndim > 0 ? b->shape[0] : 0), (long long)(b->ndim > 1 ? b->shape[1] : 0));
  int64_t shape[2] = {a->shape[0], b->shape[1]};
  cell_tensor *o;
  cell_status s = gpu_new_tensor(gpu_ctx_of(a), a->dtype, 2, shape, &o);
  if (s != CELL_OK) return s;
  s = gemm("mm", a, b, 1, a->shape[0], a->shape[1], b->shape[1], o);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

cell_status gpu_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (a->ndim != 3 || b->ndim != 3 || a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1] ||
      a->dtype != b->dtype)
    return cell_error(CELL_ERR_VALUE, "bmm: expected (b, n, m) and (b, m, p) of one dtype on GPU");
  int64_t shape[3] = {a->shape[0], a->shape[1], b->shape[2]};
  cell_tensor *o;
  cell_status s = gpu_new_tensor(gpu_ctx_of(a), a->dtype, 3, shape, &o);
  if (s != CELL_OK) return s;
  s = gemm("bmm", a, b, a->shape[0], a->shape[1], a->shape[2], b->shape[2], o);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}
