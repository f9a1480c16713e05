// gpu_masked.cu - the kernels of the ops whose output size depends on the
// data (nonzero, masked_select, masked_scatter, unique): the selection
// flags of a
// float64 copy (not zero; NaN counts as set, -0.0 as zero), and, from the
// flags' inclusive prefix sum pos (gpu_stats.cu's scan), each selected
// element's place in the output (pos[i] - 1, row-major order, as the CPU
// takes them). Raw pointers and counts only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"

namespace {

__global__ void flags_k(const double *x, long long *f, int64_t n) {
  GRID_STRIDE(i, n)
    f[i] = x[i] != 0.0;
}

__global__ void nonzero_k(gpuk_layout L, const long long *f, const long long *pos, long long *out, long long base,
                          int64_t n) {
  GRID_STRIDE(i, n) {
    if (!f[i]) continue;
    long long *o = out + (pos[i] - 1) * L.ndim;
    int64_t rem = i;
    for (int d = L.ndim - 1; d >= 0; d--) {
      o[d] = rem % L.shape[d] + base;
      rem /= L.shape[d];
    }
  }
}

template <typename E>
__global__ void masked_k(int scatter, const long long *f, const long long *pos, const E *a, const E *src, E *out,
                         int64_t n) {
  GRID_STRIDE(i, n) {
    if (scatter) out[i] = f[i] ? src[pos[i] - 1] : a[i];
    else if (f[i]) out[pos[i] - 1] = a[i];
  }
}

template <typename E>
int masked_as(cudaStream_t st, int scatter, const long long *f, const long long *pos, const void *a, const void *src,
              void *out, int64_t n) {
  masked_k<E><<<blocks_for(n), kThreads, 0, st>>>(scatter, f, pos, (const E *)a, (const E *)src, (E *)out, n);
  return last();
}

// unique over n sorted elements: f[i] = 1 where a new group starts (the
// first element; a value unlike the previous one: int64 keys ki or
// float64 kf, where NaN differs from everything and -0 equals +0).
__global__ void ustart_k(const long long *ki, const double *kf, long long *f, int64_t n) {
  GRID_STRIDE(i, n)
    f[i] = i == 0 || (ki ? ki[i] != ki[i - 1] : kf[i] != kf[i - 1]);
}

// From the groups' prefix sum pos: each group's first element into out,
// every element's group (+ base) into inv at its original place idx[i],
// the group sizes counted into cnt (zeroed by the caller).
template <typename E>
__global__ void unique_k(const E *sv, const long long *idx, const long long *pos, E *out, long long *inv,
                         unsigned long long *cnt, long long base, int64_t n) {
  GRID_STRIDE(i, n) {
    long long g = pos[i] - 1;
    if (i == 0 || pos[i] != pos[i - 1]) out[g] = sv[i];
    if (inv) inv[idx[i]] = g + base;
    if (cnt) atomicAdd(cnt + g, 1ull);
  }
}

template <typename E>
int unique_as(cudaStream_t st, const void *sv, const long long *idx, const long long *pos, void *out, long long *inv,
              unsigned long long *cnt, long long base, int64_t n) {
  unique_k<E><<<blocks_for(n), kThreads, 0, st>>>((const E *)sv, idx, pos, (E *)out, inv, cnt, base, n);
  return last();
}

} // namespace

extern "C" int gpuk_flags(void *stream, const double *x, long long *f, int64_t n) {
  if (n <= 0) return 0;
  flags_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(x, f, n);
  return last();
}

extern "C" int gpuk_nonzero(void *stream, gpuk_layout L, const long long *f, const long long *pos, long long *out,
                            long long base, int64_t n) {
  if (n <= 0) return 0;
  nonzero_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(L, f, pos, out, base, n);
  return last();
}

extern "C" int gpuk_masked(void *stream, int es, int scatter, const long long *f, const long long *pos, const void *a,
                           const void *src, void *out, int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  switch (es) {
  case 1: return masked_as<unsigned char>(st, scatter, f, pos, a, src, out, n);
  case 2: return masked_as<unsigned short>(st, scatter, f, pos, a, src, out, n);
  case 4: return masked_as<unsigned int>(st, scatter, f, pos, a, src, out, n);
  default: return masked_as<unsigned long long>(st, scatter, f, pos, a, src, out, n);
  }
}

extern "C" int gpuk_unique_starts(void *stream, const long long *ki, const double *kf, long long *f, int64_t n) {
  if (n <= 0) return 0;
  ustart_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(ki, kf, f, n);
  return last();
}

extern "C" int gpuk_unique(void *stream, int es, const void *sv, const long long *idx, const long long *pos, void *out,
                           long long *inv, unsigned long long *cnt, long long base, int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  switch (es) {
  case 1: return unique_as<unsigned char>(st, sv, idx, pos, out, inv, cnt, base, n);
  case 2: return unique_as<unsigned short>(st, sv, idx, pos, out, inv, cnt, base, n);
  case 4: return unique_as<unsigned int>(st, sv, idx, pos, out, inv, cnt, base, n);
  default: return unique_as<unsigned long long>(st, sv, idx, pos, out, inv, cnt, base, n);
  }
}
