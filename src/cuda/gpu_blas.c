/* gpu_blas.c - mm and bmm on the GPU through cuBLAS, float32 and float64,
 * contiguous inputs (supports_op declines the rest); linear (x W^T + b over
 * the last dimension) and its backward (gx = g W, gW = g^T x, gb the
 * column sums of g), any layout (gathered first).
 *
 * cuBLAS is column-major: a row-major C = A B is the column-major
 * C^T = B^T A^T, so the calls pass B first. Float32 gemm runs in full
 * float32 (CUBLAS_DEFAULT_MATH, TF32 off) unless cell.cuda.set_allow_tf32
 * turned TF32 on for the device. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <cublas_v2.h>
#include <string.h>

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
    size_t es = (size_t)cell_dtype_size(out->dtype);
    return gpu_fill(g, gpu_data(out), (size_t)(batch * m * n) * es, zero, es);
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

/* --- linear ------------------------------------------------------------------------------ */

/* C (row-major m x n, ldc n) = op(A) op(B) in cuBLAS's column-major terms. */
static cell_status gemm_ex(gpu_ctx *g, const char *what, cell_dtype dt, cublasOperation_t ta, cublasOperation_t tb,
                           int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
                           void *c, int64_t ldc) {
  if (m > 2147483647 || n > 2147483647 || k > 2147483647 || lda > 2147483647 || ldb > 2147483647 ||
      ldc > 2147483647)
    return cell_error(CELL_ERR_VALUE, "%s: a dimension over 2^31-1 (%lld, %lld, %lld)", what, (long long)m,
                      (long long)k, (long long)n);
  cublasHandle_t h = NULL;
  CELL_TRY(handle(g, &h, what));
  cublasStatus_t s;
  if (dt == CELL_DTYPE_F32) {
    const float one = 1.0f, zero = 0.0f;
    s = cublasSgemm(h, ta, tb, (int)m, (int)n, (int)k, &one, a, (int)lda, b, (int)ldb, &zero, c, (int)ldc);
  } else {
    const double one = 1.0, zero = 0.0;
    s = cublasDgemm(h, ta, tb, (int)m, (int)n, (int)k, &one, a, (int)lda, b, (int)ldb, &zero, c, (int)ldc);
  }
  return s == CUBLAS_STATUS_SUCCESS ? CELL_OK : blas_error(s, what);
}

static cell_status zero_fill(gpu_ctx *g, cell_tensor *t) {
  static const unsigned char zero[8];
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  size_t es = (size_t)cell_dtype_size(t->dtype);
  return gpu_fill(g, gpu_data(t), (size_t)n * es, zero, es);
}

static cell_status linear_check(const char *op, const cell_tensor *x, const cell_tensor *w, const cell_tensor *b) {
  if (x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1] ||
      (b && (b->ndim != 1 || b->shape[0] != w->shape[0])))
    return cell_error(CELL_ERR_VALUE, "%s: input with %lld features, weight of %d dimensions (%lld x %lld)%s", op,
                      (long long)(x->ndim ? x->shape[x->ndim - 1] : 0), w->ndim,
                      (long long)(w->ndim > 0 ? w->shape[0] : 0), (long long)(w->ndim > 1 ? w->shape[1] : 0),
                      b ? " and a bias that do not match" : " that do not match");
  if (w->dtype != x->dtype || (b && b->dtype != x->dtype) ||
      (x->dtype != CELL_DTYPE_F32 && x->dtype != CELL_DTYPE_F64))
    return cell_error(CELL_ERR_NOTIMPL, "%s of %s with a %s weight is not supported on device GPU", op,
                      cell_dtype_name(x->dtype), cell_dtype_name(w->dtype));
  return CELL_OK;
}

cell_status gpu_linear(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, cell_tensor **out) {
  const char *op = "linear";
  CELL_TRY(linear_check(op, x, w, b));
  gpu_ctx *g = gpu_ctx_of(x);
  int64_t n = w->shape[0], k = w->shape[1], shape[CELL_MAX_DIMS];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  shape[x->ndim - 1] = n;
  int64_t m = 1;
  for (int i = 0; i < x->ndim - 1; i++) m *= x->shape[i];
  cell_tensor *t[4] = {NULL}; /* x, w, b, y */
  cell_status s = gpu_contig_as(x, x->dtype, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(w, x->dtype, &t[1]);
  if (s == CELL_OK && b) s = gpu_contig_as(b, x->dtype, &t[2]);
  if (s == CELL_OK) s = gpu_new_tensor(g, x->dtype, x->ndim, shape, &t[3]);
  if (s == CELL_OK && m > 0 && n > 0) {
    if (k == 0) s = zero_fill(g, t[3]);
    else /* Y^T (n x m) = W (the buffer is W^T, k x n) X^T (k x m) */
      s = gemm_ex(g, op, x->dtype, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, gpu_data(t[1]), k, gpu_data(t[0]), k,
                  gpu_data(t[3]), n);
    if (s == CELL_OK && t[2]) {
      int e = gpuk_add_bias(g->stream, (int)x->dtype, gpu_data(t[3]), gpu_data(t[2]), m, n);
      if (e) s = gpu_cuda_error((cudaError_t)e, op);
    }
  }
  for (int i = 0; i < 3; i++)
    if (t[i]) cell_tensor_release(t[i]);
  if (s != CELL_OK) {
    if (t[3]) cell_tensor_release(t[3]);
    return s;
  }
  *out = t[3];
  return CELL_OK;
}

cell_status gpu_linear_backward(const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w, cell_tensor **gx,
                                cell_tensor **gw, cell_tensor **gb) {
  const char *op = "linear_backward";
  CELL_TRY(linear_check(op, x, w, NULL));
  int64_t n = w->shape[0], k = w->shape[1], m = 1;
  int same = gy->dtype == x->dtype && gy->ndim == x->ndim && gy->shape[gy->ndim - 1] == n;
  for (int i = 0; same && i < x->ndim - 1; i++) same = gy->shape[i] == x->shape[i];
  if (!same)
    return cell_error(CELL_ERR_VALUE, "linear_backward: the gradient does not have the output's shape and dtype");
  for (int i = 0; i < x->ndim - 1; i++) m *= x->shape[i];
  gpu_ctx *g = gpu_ctx_of(x);
  cell_dtype dt = x->dtype;
  cell_tensor *t[6] = {NULL}; /* g, x, w; gx, gw, gb */
  cell_status s = gpu_contig_as(gy, dt, &t[0]);
  if (s == CELL_OK && gw) s = gpu_contig_as(x, dt, &t[1]);
  if (s == CELL_OK && gx) s = gpu_contig_as(w, dt, &t[2]);
  if (s == CELL_OK && gx) {
    s = gpu_new_tensor(g, dt, x->ndim, x->shape, &t[3]);
    if (s == CELL_OK && m > 0 && k > 0) {
      if (n == 0) s = zero_fill(g, t[3]);
      else /* gx^T (k x m) = W^T (the buffer W, k x n) g^T (the buffer g, n x m) */
        s = gemm_ex(g, op, dt, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, gpu_data(t[2]), k, gpu_data(t[0]), n,
                    gpu_data(t[3]), k);
    }
  }
  if (s == CELL_OK && gw) {
    s = gpu_new_tensor(g, dt, 2, w->shape, &t[4]);
    if (s == CELL_OK && n > 0 && k > 0) {
      if (m == 0) s = zero_fill(g, t[4]);
      else /* gW^T (k x n) = x^T (the buffer x, k x m) g (the buffer g^T, n x m, transposed) */
        s = gemm_ex(g, op, dt, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, gpu_data(t[1]), k, gpu_data(t[0]), n,
                    gpu_data(t[4]), k);
    }
  }
  if (s == CELL_OK && gb) {
    s = gpu_new_tensor(g, dt, 1, &n, &t[5]);
    int e = s == CELL_OK && n > 0
                ? gpuk_reduce(g->stream, (int)dt, GPUK_RED_SUM, gpu_data(t[0]), gpu_data(t[5]), 1, m, n)
                : 0;
    if (e) s = gpu_cuda_error((cudaError_t)e, op);
  }
  for (int i = 0; i < 3; i++)
    if (t[i]) cell_tensor_release(t[i]);
  if (s != CELL_OK) {
    for (int i = 3; i < 6; i++)
      if (t[i]) cell_tensor_release(t[i]);
    return s;
  }
  if (gx) *gx = t[3];
  if (gw) *gw = t[4];
  if (gb) *gb = t[5];
  return CELL_OK;
}
