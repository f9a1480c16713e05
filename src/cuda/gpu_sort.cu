// gpu_sort.cu - sort, argsort and topk on the GPU: src/ops/sort.c's order.
// Every element of a line gets the CPU's order-preserving 64-bit key
// (floats by value with -0 == +0 and every NaN above +inf, integers by
// value; complemented for a descending sort) and the line is sorted by
// (key, position) with a stable bottom-up merge sort, one thread per line
// (scratch: four words per element). The first k records give the values
// (copied by position, so every dtype keeps its bits) and the int64
// indices. Raw pointers only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <string.h>

namespace {

__device__ __forceinline__ unsigned long long key_f64(double v) {
  if (v != v) return ~0ull;
  if (v == 0) v = 0.0;
  unsigned long long b;
  memcpy(&b, &v, 8);
  return (b >> 63) ? ~b : b | (1ull << 63);
}

// dst[di] = src[si], elements of es bytes.
__device__ __forceinline__ void move_el(int es, void *dst, int64_t di, const void *src, int64_t si) {
  switch (es) {
  case 1: ((unsigned char *)dst)[di] = ((const unsigned char *)src)[si]; break;
  case 2: ((unsigned short *)dst)[di] = ((const unsigned short *)src)[si]; break;
  case 4: ((unsigned int *)dst)[di] = ((const unsigned int *)src)[si]; break;
  default: ((unsigned long long *)dst)[di] = ((const unsigned long long *)src)[si]; break;
  }
}

// Line l = (o, q) of (outer, len, inner): x (es-byte elements) and kx (its
// values as float64, or int64 when is_int) contiguous; K, P, K2, P2:
// len words per line of scratch; the first k of the order into vals and
// idx ((outer, k, inner), contiguous).
__global__ void sort_k(int es, int is_int, int flip, const void *x, const void *kx, int64_t outer, int64_t len,
                       int64_t inner, int64_t k, unsigned long long *K, long long *P, unsigned long long *K2,
                       long long *P2, void *vals, long long *idx, long long base) {
  GRID_STRIDE(l, outer * inner) {
    int64_t o = l / inner, q = l - o * inner, first = o * len * inner + q;
    unsigned long long *ka = K + l * len, *kb = K2 + l * len;
    long long *pa = P + l * len, *pb = P2 + l * len;
    for (int64_t j = 0; j < len; j++) {
      int64_t at = first + j * inner;
      unsigned long long key = is_int ? (unsigned long long)((const long long *)kx)[at] ^ (1ull << 63)
                                      : key_f64(((const double *)kx)[at]);
      ka[j] = flip ? ~key : key;
      pa[j] = j;
    }
    for (int64_t w = 1; w < len; w *= 2) { // merge runs of w from (ka, pa) into (kb, pb)
      for (int64_t lo = 0; lo < len; lo += 2 * w) {
        int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
        int64_t i = lo, j = mid, t = lo;
        while (i < mid && j < hi) {
          if (ka[j] < ka[i]) { kb[t] = ka[j]; pb[t++] = pa[j++]; }
          else { kb[t] = ka[i]; pb[t++] = pa[i++]; } // ties: the earlier run first (stable)
        }
        while (i < mid) { kb[t] = ka[i]; pb[t++] = pa[i++]; }
        while (j < hi) { kb[t] = ka[j]; pb[t++] = pa[j++]; }
      }
      unsigned long long *tk = ka; ka = kb; kb = tk;
      long long *tp = pa; pa = pb; pb = tp;
    }
    int64_t ofirst = o * k * inner + q;
    for (int64_t j = 0; j < k; j++) {
      if (vals) move_el(es, vals, ofirst + j * inner, x, first + pa[j] * inner);
      idx[ofirst + j * inner] = pa[j] + base;
    }
  }
}

// median from a line's stable ascending sort (vals, idx: (outer, len,
// inner)): the element at (len - 1) / 2, or, when the line holds a NaN
// (vf non-NULL: the sorted values as float64; NaNs sort last), the first
// NaN (the earliest by index: the stable order keeps them so), as
// src/ops/sort.c's median_line picks.
__global__ void median_k(int es, const void *vals, const double *vf, const long long *idx, void *ov, long long *oi,
                         int64_t outer, int64_t len, int64_t inner) {
  GRID_STRIDE(q, outer * inner) {
    int64_t first = (q / inner) * len * inner + q % inner, p = (len - 1) / 2;
    if (vf && vf[first + (len - 1) * inner] != vf[first + (len - 1) * inner]) {
      p = len - 1;
      while (p > 0 && vf[first + (p - 1) * inner] != vf[first + (p - 1) * inner]) p--;
    }
    move_el(es, ov, q, vals, first + p * inner);
    oi[q] = idx[first + p * inner];
  }
}

} // namespace

extern "C" int gpuk_sort(void *stream, int es, int is_int, int flip, const void *x, const void *kx, int64_t outer,
                         int64_t len, int64_t inner, int64_t k, unsigned long long *K, long long *P,
                         unsigned long long *K2, long long *P2, void *vals, long long *idx, long long base) {
  if (outer * inner <= 0 || len <= 0) return 0;
  sort_k<<<blocks_for(outer * inner), kThreads, 0, (cudaStream_t)stream>>>(es, is_int, flip, x, kx, outer, len, inner,
                                                                          k, K, P, K2, P2, vals, idx, base);
  return last();
}

extern "C" int gpuk_median_pick(void *stream, int es, const void *vals, const double *vf, const long long *idx, void *ov,
                                long long *oi, int64_t outer, int64_t len, int64_t inner) {
  if (outer * inner <= 0 || len <= 0) return 0;
  median_k<<<blocks_for(outer * inner), kThreads, 0, (cudaStream_t)stream>>>(es, vals, vf, idx, ov, oi, outer, len,
                                                                            inner);
  return last();
}
