// gpu_stats.cu - the GPU module's statistics and scans: variance / std
// (two passes: the mean, then the squared deviations) and the p-norms
// (sum |x|, sqrt of sum x^2, (sum |x|^p)^(1/p), max |x| with NaN winning)
// of contiguous float64 rows, one block per row, in double as
// src/ops/reduce.c; cumulative sums and products along the middle
// dimension of (outer, len, inner), forwards or from the end, one thread
// per line (float64 in double, int64 wrapping as the CPU's); and the
// ramps of arange / linspace. Raw pointers only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

// Sum (is_max 0) or NaN-winning maximum of v over the block; every thread
// gets the result.
__device__ double block_fold(double v, double *sh, int is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      double a = sh[threadIdx.x], b = sh[threadIdx.x + s];
      sh[threadIdx.x] = !is_max ? a + b : (a != a || b != b) ? NAN : (a > b ? a : b);
    }
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

__device__ __forceinline__ double term(int kind, double x, double p, double mean) {
  switch (kind) {
  case GPUK_MOM_ASUM:
  case GPUK_MOM_AMAX: return fabs(x);
  case GPUK_MOM_SSQ: return x * x;
  case GPUK_MOM_PSUM: return pow(fabs(x), p);
  default: return (x - mean) * (x - mean); // GPUK_MOM_VAR's second pass
  }
}

// One block per row q of x (rows of r).
__global__ void moments_k(int kind, const double *x, double *out, int64_t rows, int64_t r, double p, int64_t ddof,
                          int take_sqrt) {
  __shared__ double sh[kThreads];
  for (int64_t q = blockIdx.x; q < rows; q += gridDim.x) {
    const double *row = x + q * r;
    double mean = 0;
    if (kind == GPUK_MOM_VAR) {
      double s = 0;
      for (int64_t j = threadIdx.x; j < r; j += blockDim.x) s += row[j];
      mean = block_fold(s, sh, 0) / (double)r;
    }
    int is_max = kind == GPUK_MOM_AMAX;
    double acc = 0;
    for (int64_t j = threadIdx.x; j < r; j += blockDim.x) {
      double t = term(kind, row[j], p, mean);
      acc = !is_max ? acc + t : (acc != acc || t != t) ? NAN : (t > acc ? t : acc);
    }
    acc = block_fold(acc, sh, is_max);
    if (threadIdx.x == 0) {
      double v = acc;
      if (kind == GPUK_MOM_VAR) {
        double dof = (double)r - (double)ddof;
        v = r == 0 ? NAN : acc / (dof > 0 ? dof : 0.0);
        if (take_sqrt) v = sqrt(v);
      } else if (kind == GPUK_MOM_SSQ) {
        v = sqrt(acc);
      } else if (kind == GPUK_MOM_PSUM) {
        v = pow(acc, 1.0 / p);
      }
      out[q] = v;
    }
  }
}

// Line (o, k) of (outer, len, inner): y = the running sum or product of x,
// from the end when reverse.
template <typename T, typename A>
__global__ void scan_k(int prod, int reverse, const T *x, T *y, int64_t outer, int64_t len, int64_t inner) {
  GRID_STRIDE(line, outer * inner) {
    int64_t o = line / inner, k = line - o * inner;
    const T *xl = x + o * len * inner + k;
    T *yl = y + o * len * inner + k;
    A acc = prod ? (A)1 : (A)0;
    for (int64_t i = 0; i < len; i++) {
      int64_t j = reverse ? len - 1 - i : i;
      acc = prod ? (A)(acc * (A)xl[j * inner]) : (A)(acc + (A)xl[j * inner]);
      yl[j * inner] = (T)acc;
    }
  }
}

__global__ void ramp_k(double *out, int64_t n, double start, double step, int has_last, double last) {
  GRID_STRIDE(i, n) out[i] = has_last && i == n - 1 ? last : start + (double)i * step;
}

} // namespace

extern "C" int gpuk_moments(void *stream, int kind, const double *x, double *out, int64_t rows, int64_t r, double p,
                            int64_t ddof, int take_sqrt) {
  if (rows <= 0) return 0;
  moments_k<<<grid_of(rows), kThreads, 0, (cudaStream_t)stream>>>(kind, x, out, rows, r, p, ddof, take_sqrt);
  return last();
}

extern "C" int gpuk_scan(void *stream, int is_int, int prod, int reverse, const void *x, void *y, int64_t outer,
                         int64_t len, int64_t inner) {
  if (outer * len * inner <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (is_int)
    scan_k<long long, unsigned long long><<<blocks_for(outer * inner), kThreads, 0, s>>>(
        prod, reverse, (const long long *)x, (long long *)y, outer, len, inner);
  else
    scan_k<double, double><<<blocks_for(outer * inner), kThreads, 0, s>>>(prod, reverse, (const double *)x,
                                                                          (double *)y, outer, len, inner);
  return last();
}

extern "C" int gpuk_ramp(void *stream, double *out, int64_t n, double start, double step, int has_last, double last_v) {
  if (n <= 0) return 0;
  ramp_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(out, n, start, step, has_last, last_v);
  return last();
}
