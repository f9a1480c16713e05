// gpu_ew.cu - the GPU module's CUDA kernels: elementwise binary (tensor and
// tensor, tensor and scalar) and unary ops (abs, neg, exp, log, sqrt, tanh,
// sigmoid, relu, gelu, silu) over contiguous float32, and the pattern fill. Grid-stride loops, so
// any n runs with a bounded grid; launches go on the caller's stream and
// return the launch's error (an error inside a kernel shows at the next
// synchronisation).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include <string.h>

namespace {

const int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 65535 ? 65535 : (b < 1 ? 1 : b));
}

__global__ void binary_f32(int op, const float *a, const float *b, float *out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float x = a[i], y = b[i], r;
    switch (op) {
    case GPUK_ADD: r = x + y; break;
    case GPUK_SUB: r = x - y; break;
    case GPUK_MUL: r = x * y; break;
    case GPUK_DIV: r = x / y; break;
    case GPUK_MAXIMUM: r = (x != x || y != y) ? x + y : fmaxf(x, y); break;
    default: r = (x != x || y != y) ? x + y : fminf(x, y); break;
    }
    out[i] = r;
  }
}

__global__ void unary_f32(int op, const float *a, float *out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float x = a[i], r;
    switch (op) {
    case GPUK_ABS: r = fabsf(x); break;
    case GPUK_NEG: r = -x; break;
    case GPUK_EXP: r = expf(x); break;
    case GPUK_LOG: r = logf(x); break;
    case GPUK_SQRT: r = sqrtf(x); break;
    case GPUK_TANH: r = tanhf(x); break;
    case GPUK_SIGMOID: r = 1.0f / (1.0f + expf(-x)); break;
    case GPUK_GELU: r = x * 0.5f * (1.0f + erff(x * 0.70710678118654752440f)); break;
    case GPUK_SILU: r = x / (1.0f + expf(-x)); break;
    default: r = x > 0.0f ? x : (x != x ? x : 0.0f); break; // relu keeps NaN
    }
    out[i] = r;
  }
}

// out[i] = a[i] op s, or s op a[i] (reversed).
__global__ void binary_scalar_f32(int op, const float *a, float s, int reversed, float *out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float x = reversed ? s : a[i], y = reversed ? a[i] : s, r;
    switch (op) {
    case GPUK_ADD: r = x + y; break;
    case GPUK_SUB: r = x - y; break;
    case GPUK_MUL: r = x * y; break;
    case GPUK_DIV: r = x / y; break;
    case GPUK_MAXIMUM: r = (x != x || y != y) ? x + y : fmaxf(x, y); break;
    default: r = (x != x || y != y) ? x + y : fminf(x, y); break;
    }
    out[i] = r;
  }
}

template <typename T> __global__ void fill_pattern(T *dst, int64_t n, T v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = v;
}

template <typename T> int fill_as(cudaStream_t s, void *dst, size_t n, const void *pattern) {
  T v;
  memcpy(&v, pattern, sizeof v);
  int64_t count = (int64_t)(n / sizeof(T));
  if (count > 0) fill_pattern<T><<<blocks_for(count), kThreads, 0, s>>>((T *)dst, count, v);
  return (int)cudaGetLastError();
}

} // namespace

extern "C" int gpuk_binary_f32(void *stream, int op, const float *a, const float *b, float *out,
                               int64_t n) {
  if (n <= 0) return 0;
  binary_f32<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, a, b, out, n);
  return (int)cudaGetLastError();
}

extern "C" int gpuk_binary_scalar_f32(void *stream, int op, const float *a, float s, int reversed, float *out,
                                      int64_t n) {
  if (n <= 0) return 0;
  binary_scalar_f32<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, a, s, reversed, out, n);
  return (int)cudaGetLastError();
}

extern "C" int gpuk_unary_f32(void *stream, int op, const float *a, float *out, int64_t n) {
  if (n <= 0) return 0;
  unary_f32<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(op, a, out, n);
  return (int)cudaGetLastError();
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
