// gpu_grad.cu - the GPU module's CUDA kernels for autograd's elementwise
// gradient formulas (the CPU's ew interpreter, src/ops/ew.c: a = the
// incoming gradient, b = the input, c = the output) and for comparisons
// (==, !=, <, <=, >, >= to bool). Contiguous operands already broadcast
// to the result's shape; arithmetic in double. Raw pointers only
// (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

// sign with sign(0) = 0; NaN stays NaN.
__device__ __forceinline__ double sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }
__device__ __forceinline__ double sigm(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

__device__ double formula(int op, double a, double b, double c, double k0, double k1) {
  switch (op) {
  case GPUK_EW_ABS: return a * sgn(b);
  case GPUK_EW_NEG: return -a;
  case GPUK_EW_EXP: return a * c;
  case GPUK_EW_LOG: return a / b;
  case GPUK_EW_LOG1P: return a / (1.0 + b);
  case GPUK_EW_SQRT: return a * 0.5 / c;
  case GPUK_EW_RSQRT: return -0.5 * a * c * c * c;
  case GPUK_EW_SIN: return a * cos(b);
  case GPUK_EW_COS: return -a * sin(b);
  case GPUK_EW_TANH: return a * (1.0 - c * c);
  case GPUK_EW_SIGMOID: return a * c * (1.0 - c);
  case GPUK_EW_RELU: return b > 0 ? a : 0.0;
  case GPUK_EW_GELU:
    return a * (0.5 * erfc(b * -0.70710678118654752440) + b * 0.39894228040143267794 * exp(-0.5 * b * b));
  case GPUK_EW_SILU: {
    double s = sigm(b);
    return a * s * (1.0 + b * (1.0 - s));
  }
  case GPUK_EW_CLAMP: return b >= k0 && b <= k1 ? a : 0.0;
  case GPUK_EW_SEL_TRUE: return b != 0 ? a : 0.0;
  case GPUK_EW_SEL_FALSE: return b != 0 ? 0.0 : a;
  case GPUK_EW_SCALE: return a * k0;
  case GPUK_EW_MUL: return a * b;
  case GPUK_EW_DIV: return a / b;
  case GPUK_EW_EQ: return a == b ? 1.0 : 0.0;
  case GPUK_EW_ABS_EQ: return fabs(a) == b ? 1.0 : 0.0;
  case GPUK_EW_IS_ZERO: return a == 0 ? 1.0 : 0.0;
  case GPUK_EW_ZERO_TO_ONE: return a == 0 ? 1.0 : a;
  case GPUK_EW_PICK: return b == c ? a : 0.0;
  case GPUK_EW_PICK_ABS: return fabs(b) == c ? a * sgn(b) : 0.0;
  case GPUK_EW_STD_SCALE: return b == 0 ? 0.0 : a / (k0 * b);
  case GPUK_EW_DEV: return a * (b - c);
  case GPUK_EW_NORM_SCALE:
    if (k0 == 1.0) return b == 0 ? 0.0 : a;
    if (k0 == 2.0) return b == 0 ? 0.0 : a / b;
    return b == 0 ? 0.0 : a / pow(b, k0 - 1.0);
  case GPUK_EW_NORM:
    if (k0 == 1.0) return a * sgn(b);
    if (k0 == 2.0) return a * b;
    return b == 0 ? 0.0 : a * sgn(b) * pow(fabs(b), k0 - 1.0);
  case GPUK_EW_SQUARE: return 2.0 * b * a;
  case GPUK_EW_RECIPROCAL: return -a * c * c;
  case GPUK_EW_SOFTPLUS: return b * k0 > k1 ? a : a * sigm(b * k0);
  case GPUK_EW_FINITE: return isfinite(b) ? a : 0.0;
  default: return 0.0;
  }
}

template <typename T>
__global__ void ew_k(int op, double k0, double k1, const T *a, const T *b, const T *c, T *out, int64_t n) {
  GRID_STRIDE(i, n) {
    double av = a ? (double)a[i] : 0.0, bv = b ? (double)b[i] : 0.0, cv = c ? (double)c[i] : 0.0;
    out[i] = (T)formula(op, av, bv, cv, k0, k1);
  }
}

template <typename T>
__global__ void compare_k(int op, const T *a, const T *b, unsigned char *out, int64_t n) {
  GRID_STRIDE(i, n) {
    T x = a[i], y = b[i];
    bool r;
    switch (op) {
    case GPUK_EQ: r = x == y; break;
    case GPUK_NE: r = x != y; break;
    case GPUK_LT: r = x < y; break;
    case GPUK_LE: r = x <= y; break;
    case GPUK_GT: r = x > y; break;
    default: r = x >= y; break;
    }
    out[i] = r ? 1 : 0;
  }
}

} // namespace

extern "C" int gpuk_ew_supported(int op) {
  switch (op) {
  case GPUK_EW_ABS: case GPUK_EW_NEG: case GPUK_EW_EXP: case GPUK_EW_LOG: case GPUK_EW_LOG1P: case GPUK_EW_SQRT:
  case GPUK_EW_RSQRT: case GPUK_EW_SIN: case GPUK_EW_COS: case GPUK_EW_TANH: case GPUK_EW_SIGMOID: case GPUK_EW_RELU:
  case GPUK_EW_GELU: case GPUK_EW_SILU: case GPUK_EW_CLAMP: case GPUK_EW_SEL_TRUE: case GPUK_EW_SEL_FALSE:
  case GPUK_EW_SCALE: case GPUK_EW_MUL: case GPUK_EW_DIV: case GPUK_EW_EQ: case GPUK_EW_ABS_EQ: case GPUK_EW_IS_ZERO:
  case GPUK_EW_ZERO_TO_ONE: case GPUK_EW_PICK: case GPUK_EW_PICK_ABS: case GPUK_EW_STD_SCALE: case GPUK_EW_DEV:
  case GPUK_EW_NORM_SCALE: case GPUK_EW_NORM: case GPUK_EW_SQUARE: case GPUK_EW_RECIPROCAL: case GPUK_EW_SOFTPLUS: case GPUK_EW_FINITE:
    return 1;
  default:
    return 0;
  }
}

extern "C" int gpuk_ew(void *stream, int dt, int op, double k0, double k1, const void *a, const void *b, const void *c,
                       void *out, int64_t n) {
  if (n <= 0) return 0;
  if (dt == GPUK_F64)
    ew_k<double><<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, k0, k1, (const double *)a, (const double *)b,
                                                                        (const double *)c, (double *)out, n);
  else
    ew_k<float><<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, k0, k1, (const float *)a, (const float *)b,
                                                                       (const float *)c, (float *)out, n);
  return last();
}

extern "C" int gpuk_compare(void *stream, int op, int is_int, const void *a, const void *b, unsigned char *out,
                            int64_t n) {
  if (n <= 0) return 0;
  if (is_int)
    compare_k<long long><<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, (const long long *)a,
                                                                                (const long long *)b, out, n);
  else
    compare_k<double><<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, (const double *)a, (const double *)b,
                                                                             out, n);
  return last();
}
