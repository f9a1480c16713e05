// gpu_ew.cu - the GPU module's CUDA kernels: elementwise binary (tensor and
// tensor, tensor and scalar: + - * / maximum minimum) over contiguous
// float32, float64, int32 and int64, unary ops (abs, neg, exp, log, sqrt,
// tanh, sigmoid, relu, gelu, silu, and the float math of cell_unop in
// double) over float32 and float64, and the
// pattern fill. Grid-stride loops, so
// any n runs with a bounded grid; launches go on the caller's stream and
// return the launch's error (an error inside a kernel shows at the next
// synchronisation).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <string.h>

namespace {

// a op b; maximum / minimum propagate a NaN (x != x is false for integers).
template <typename T> __device__ __forceinline__ T bin(int op, T x, T y) {
  switch (op) {
  case GPUK_ADD: return x + y;
  case GPUK_SUB: return x - y;
  case GPUK_MUL: return x * y;
  case GPUK_DIV: return x / y; // floats only (the host declines integer division)
  case GPUK_MAXIMUM: return (x != x || y != y) ? x + y : (x > y ? x : y);
  default: return (x != x || y != y) ? x + y : (x < y ? x : y);
  }
}

template <typename T> __global__ void binary_k(int op, const T *a, const T *b, T *out, int64_t n) {
  GRID_STRIDE(i, n)
    out[i] = bin<T>(op, a[i], b[i]);
}

// out[i] = a[i] op s, or s op a[i] (reversed).
template <typename T> __global__ void binary_scalar_k(int op, const T *a, T s, int reversed, T *out, int64_t n) {
  GRID_STRIDE(i, n)
    out[i] = reversed ? bin<T>(op, s, a[i]) : bin<T>(op, a[i], s);
}

// The float math ops in double (src/ops/unary.c calls the double libm
// functions and rounds once); sign(NaN) is 0, round is half to even.
__device__ double math_d(int op, double x) {
  switch (op) {
  case GPUK_LOG1P: return log1p(x);
  case GPUK_RSQRT: return 1.0 / sqrt(x);
  case GPUK_SIN: return sin(x);
  case GPUK_COS: return cos(x);
  case GPUK_FLOOR: return floor(x);
  case GPUK_CEIL: return ceil(x);
  case GPUK_ROUND: return rint(x);
  case GPUK_SIGN: return (double)((x > 0) - (x < 0));
  case GPUK_ERF: return erf(x);
  case GPUK_ERFC: return erfc(x);
  case GPUK_TAN: return tan(x);
  case GPUK_ATAN: return atan(x);
  case GPUK_ASIN: return asin(x);
  case GPUK_ACOS: return acos(x);
  case GPUK_SINH: return sinh(x);
  case GPUK_COSH: return cosh(x);
  case GPUK_LOG2: return log2(x);
  case GPUK_LOG10: return log10(x);
  case GPUK_EXP2: return exp2(x);
  case GPUK_EXPM1: return expm1(x);
  case GPUK_SQUARE: return x * x;
  default: return 1.0 / x; // reciprocal
  }
}

// Float unary ops (float's overloads of the math functions for float; the
// math ops of math_d in double).
template <typename T> __global__ void unary_k(int op, const T *a, T *out, int64_t n) {
  GRID_STRIDE(i, n) {
    T x = a[i], r;
    switch (op) {
    case GPUK_LOG1P: case GPUK_RSQRT: case GPUK_SIN: case GPUK_COS: case GPUK_FLOOR: case GPUK_CEIL:
    case GPUK_ROUND: case GPUK_SIGN: case GPUK_ERF: case GPUK_ERFC: case GPUK_TAN: case GPUK_ATAN: case GPUK_ASIN:
    case GPUK_ACOS: case GPUK_SINH: case GPUK_COSH: case GPUK_LOG2: case GPUK_LOG10: case GPUK_EXP2:
    case GPUK_EXPM1: case GPUK_SQUARE: case GPUK_RECIPROCAL: r = (T)math_d(op, (double)x); break;
    case GPUK_ABS: r = fabs(x); break;
    case GPUK_NEG: r = -x; break;
    case GPUK_EXP: r = exp(x); break;
    case GPUK_LOG: r = log(x); break;
    case GPUK_SQRT: r = sqrt(x); break;
    case GPUK_TANH: r = tanh(x); break;
    case GPUK_SIGMOID: r = (T)1 / ((T)1 + exp(-x)); break;
    case GPUK_GELU: r = x * (T)0.5 * erfc(x * (T)-0.70710678118654752440); break; /* no cancellation on the left */
    case GPUK_SILU: r = x / ((T)1 + exp(-x)); break;
    default: r = x > (T)0 ? x : (x != x ? x : (T)0); break; // relu keeps NaN
    }
    out[i] = r;
  }
}

template <typename T> __global__ void fill_pattern(T *dst, int64_t n, T v) {
  GRID_STRIDE(i, n)
    dst[i] = v;
}

template <typename T> int fill_as(cudaStream_t s, void *dst, size_t n, const void *pattern) {
  T v;
  memcpy(&v, pattern, sizeof v);
  int64_t count = (int64_t)(n / sizeof(T));
  if (count > 0) fill_pattern<T><<<blocks_for(count), kThreads, 0, s>>>((T *)dst, count, v);
  return last();
}

} // namespace

extern "C" int gpuk_binary(void *stream, int dt, int op, const void *a, const void *b, void *out, int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  switch (dt) {
  case GPUK_F64: binary_k<double><<<blocks_for(n), kThreads, 0, st>>>(op, (const double *)a, (const double *)b, (double *)out, n); break;
  case GPUK_I64: binary_k<long long><<<blocks_for(n), kThreads, 0, st>>>(op, (const long long *)a, (const long long *)b, (long long *)out, n); break;
  case GPUK_I32: binary_k<int><<<blocks_for(n), kThreads, 0, st>>>(op, (const int *)a, (const int *)b, (int *)out, n); break;
  default: binary_k<float><<<blocks_for(n), kThreads, 0, st>>>(op, (const float *)a, (const float *)b, (float *)out, n); break;
  }
  return last();
}

extern "C" int gpuk_binary_scalar(void *stream, int dt, int op, const void *a, double s, int reversed, void *out,
                                  int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  switch (dt) {
  case GPUK_F64: binary_scalar_k<double><<<blocks_for(n), kThreads, 0, st>>>(op, (const double *)a, s, reversed, (double *)out, n); break;
  case GPUK_I64: binary_scalar_k<long long><<<blocks_for(n), kThreads, 0, st>>>(op, (const long long *)a, (long long)s, reversed, (long long *)out, n); break;
  case GPUK_I32: binary_scalar_k<int><<<blocks_for(n), kThreads, 0, st>>>(op, (const int *)a, (int)s, reversed, (int *)out, n); break;
  default: binary_scalar_k<float><<<blocks_for(n), kThreads, 0, st>>>(op, (const float *)a, (float)s, reversed, (float *)out, n); break;
  }
  return last();
}

extern "C" int gpuk_unary(void *stream, int dt, int op, const void *a, void *out, int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == GPUK_F64)
    unary_k<double><<<blocks_for(n), kThreads, 0, st>>>(op, (const double *)a, (double *)out, n);
  else
    unary_k<float><<<blocks_for(n), kThreads, 0, st>>>(op, (const float *)a, (float *)out, n);
  return last();
}

extern "C" int gpuk_fill(void *stream, void *dst, size_t n, const void *pattern, size_t psize) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (psize) {
  case 1: return fill_as<unsigned char>(s, dst, n, pattern);
  case 2: return fill_as<unsigned short>(s, dst, n, pattern);
  case 4: return fill_as<unsigned int>(s, dst, n, pattern);
  default: return fill_as<unsigned long long>(s, dst, n, pattern);
  }
}
