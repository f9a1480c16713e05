// gpu_index.cu - the GPU module's selection and indexing kernels: where
// and masked_fill (a select by a bool condition), constant padding, the
// placing of one input's block into cat's or stack's result, index_select, and one walk
// over an index tensor for gather, scatter and scatter_add_ (src/ops/
// shape.c's index_walk). Elements move as raw bytes of their size (1, 2,
// 4 or 8), so every dtype runs; scatter_add_ adds with atomics (float32,
// float64, int32, int64). Indices are int64; one out of range is never
// followed: its position goes to *bad (atomicMin of 1 + the position) for
// the host to raise an IndexError. Raw pointers only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"

namespace {

// dst[di] = src[si], elements of es bytes.
__device__ __forceinline__ void move(int es, void *dst, int64_t di, const void *src, int64_t si) {
  switch (es) {
  case 1: ((unsigned char *)dst)[di] = ((const unsigned char *)src)[si]; break;
  case 2: ((unsigned short *)dst)[di] = ((const unsigned short *)src)[si]; break;
  case 4: ((unsigned int *)dst)[di] = ((const unsigned int *)src)[si]; break;
  default: ((unsigned long long *)dst)[di] = ((const unsigned long long *)src)[si]; break;
  }
}

// *p += v atomically (float, double, int; long long as a wrapping add).
template <typename T> __device__ __forceinline__ void add_at(T *p, T v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_at(long long *p, long long v) {
  atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
__device__ __forceinline__ void add_at(char *, char) {} // the byte walks never add

// The position index value v gives, counted from base: in range when
// v >= base and v - base < size (the difference taken unsigned: no overflow).
__device__ __forceinline__ int in_range(long long v, long long base, int64_t size, int64_t *pos) {
  unsigned long long p = (unsigned long long)v - (unsigned long long)base;
  *pos = (int64_t)p;
  return v >= base && p < (unsigned long long)size;
}

// out[i] = cond[i] ? a[i * a_step] : b[i] (a_step 0: one value for all).
__global__ void where_k(int es, const unsigned char *cond, const void *a, int64_t a_step, const void *b, void *out,
                        int64_t n) {
  GRID_STRIDE(i, n) {
    if (cond[i]) move(es, out, i, a, i * a_step);
    else move(es, out, i, b, i);
  }
}

// out (outer, total, inner) at [., at .. at + size, .] = in (outer, size, inner).
__global__ void place_k(int es, const void *in, void *out, int64_t outer, int64_t size, int64_t inner, int64_t total,
                        int64_t at) {
  int64_t block = size * inner;
  GRID_STRIDE(i, outer * block) {
    int64_t o = i / block, r = i - o * block;
    move(es, out, o * total * inner + at * inner + r, in, i);
  }
}

// out (outer, k, inner) = a (outer, size, inner) at the k positions idx - base.
__global__ void index_select_k(int es, const void *a, const long long *idx, void *out, int64_t outer, int64_t size,
                               int64_t inner, int64_t k, long long base, unsigned long long *bad) {
  GRID_STRIDE(i, outer * k * inner) {
    int64_t o = i / (k * inner), r = i - o * k * inner, j = r / inner, q = r - j * inner;
    int64_t pos;
    if (!in_range(idx[j], base, size, &pos)) {
      atomicMin(bad, (unsigned long long)j + 1);
      continue;
    }
    move(es, out, i, a, (o * size + pos) * inner + q);
  }
}

// The walk over n index elements (the index's shape L.shape, the target's
// strides L.stride, the linear tensor's strides ls): at the index's
// multi-index e with dim replaced by idx[e] - base, the target tgt;
// mode 0: lin[e] = tgt[..] (gather), 1: tgt[..] = lin[e] (scatter),
// 2: tgt[..] += lin[e] (scatter_add_, typed T), 3: the range check only.
template <typename T>
__global__ void index_walk_k(int mode, int es, const long long *idx, gpuk_layout L, gpuk_layout ls, int dim,
                             int64_t tsize, int64_t tstride, long long base, void *lin, void *tgt, int64_t n,
                             unsigned long long *bad) {
  GRID_STRIDE(e, n) {
    int64_t rem = e, to = 0, lo = 0;
    for (int d = L.ndim - 1; d >= 0; d--) {
      int64_t c = rem % L.shape[d];
      rem /= L.shape[d];
      if (d != dim) to += c * L.stride[d];
      lo += c * ls.stride[d];
    }
    int64_t pos;
    if (!in_range(idx[e], base, tsize, &pos)) {
      atomicMin(bad, (unsigned long long)e + 1);
      continue;
    }
    to += pos * tstride;
    if (mode == 0) move(es, lin, lo, tgt, to);
    else if (mode == 1) move(es, tgt, to, lin, lo);
    else if (mode == 2) add_at((T *)tgt + to, ((const T *)lin)[lo]);
  }
}

// out (contiguous, P.out shape) = in (layout L) shifted by P.before in
// each dim; positions outside in take value[0].
__global__ void pad_k(int es, gpuk_layout L, gpuk_pad_args P, const void *in, const void *value, void *out,
                      int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    int inside = 1;
    for (int d = P.ndim - 1; d >= 0; d--) {
      int64_t c = rem % P.out[d] - P.before[d];
      rem /= P.out[d];
      if (c < 0 || c >= L.shape[d]) inside = 0;
      else off += c * L.stride[d];
    }
    if (inside) move(es, out, i, in, off);
    else move(es, out, i, value, 0);
  }
}

// out (layout L: its shape and strides) = in (n contiguous elements).
__global__ void put_k(int es, gpuk_layout L, const void *in, void *out, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = L.ndim - 1; d >= 0; d--) {
      int64_t c = rem % L.shape[d];
      rem /= L.shape[d];
      off += c * L.stride[d];
    }
    move(es, out, off, in, i);
  }
}

// out = x (both contiguous, lines of C columns in matrices of R rows) with
// the elements off the kept triangle zeroed (upper: column - row >=
// diagonal; lower: <=).
__global__ void tri_k(int es, const void *x, void *out, int64_t R, int64_t C, long long diagonal, int upper,
                      int64_t n) {
  const long long zero = 0;
  GRID_STRIDE(i, n) {
    int64_t j = i % C, r = (i / C) % R;
    int keep = upper ? (j - r >= diagonal) : (j - r <= diagonal);
    if (keep) move(es, out, i, x, i);
    else move(es, out, i, &zero, 0);
  }
}

} // namespace

extern "C" int gpuk_where(void *stream, int es, const unsigned char *cond, const void *a, int64_t a_step,
                          const void *b, void *out, int64_t n) {
  if (n <= 0) return 0;
  where_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(es, cond, a, a_step, b, out, n);
  return last();
}

extern "C" int gpuk_place(void *stream, int es, const void *in, void *out, int64_t outer, int64_t size, int64_t inner,
                          int64_t total, int64_t at) {
  if (outer * size * inner <= 0) return 0;
  place_k<<<blocks_for(outer * size * inner), kThreads, 0, (cudaStream_t)stream>>>(es, in, out, outer, size, inner,
                                                                                  total, at);
  return last();
}

extern "C" int gpuk_index_select(void *stream, int es, const void *a, const long long *idx, void *out, int64_t outer,
                                 int64_t size, int64_t inner, int64_t k, long long base, unsigned long long *bad) {
  if (outer * k * inner <= 0) return 0;
  index_select_k<<<blocks_for(outer * k * inner), kThreads, 0, (cudaStream_t)stream>>>(es, a, idx, out, outer, size,
                                                                                      inner, k, base, bad);
  return last();
}

extern "C" int gpuk_index_walk(void *stream, int mode, int dt, int es, const long long *idx, gpuk_layout L,
                               gpuk_layout ls, int dim, int64_t tsize, int64_t tstride, long long base, void *lin,
                               void *tgt, int64_t n, unsigned long long *bad) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned g = blocks_for(n);
  if (mode != 2) {
    index_walk_k<char><<<g, kThreads, 0, s>>>(mode, es, idx, L, ls, dim, tsize, tstride, base, lin, tgt, n, bad);
    return last();
  }
  switch (dt) {
  case GPUK_F32: index_walk_k<float><<<g, kThreads, 0, s>>>(2, es, idx, L, ls, dim, tsize, tstride, base, lin, tgt, n, bad); break;
  case GPUK_F64: index_walk_k<double><<<g, kThreads, 0, s>>>(2, es, idx, L, ls, dim, tsize, tstride, base, lin, tgt, n, bad); break;
  case GPUK_I32: index_walk_k<int><<<g, kThreads, 0, s>>>(2, es, idx, L, ls, dim, tsize, tstride, base, lin, tgt, n, bad); break;
  case GPUK_I64: index_walk_k<long long><<<g, kThreads, 0, s>>>(2, es, idx, L, ls, dim, tsize, tstride, base, lin, tgt, n, bad); break;
  default: return (int)cudaErrorInvalidValue;
  }
  return last();
}

extern "C" int gpuk_pad(void *stream, int es, gpuk_layout L, gpuk_pad_args P, const void *in, const void *value,
                        void *out, int64_t n) {
  if (n <= 0) return 0;
  pad_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(es, L, P, in, value, out, n);
  return last();
}

extern "C" int gpuk_put(void *stream, int es, gpuk_layout L, const void *in, void *out, int64_t n) {
  if (n <= 0) return 0;
  put_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(es, L, in, out, n);
  return last();
}

extern "C" int gpuk_triangle(void *stream, int es, const void *x, void *out, int64_t R, int64_t C, long long diagonal,
                             int upper, int64_t n) {
  if (n <= 0 || R <= 0 || C <= 0) return 0;
  tri_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(es, x, out, R, C, diagonal, upper, n);
  return last();
}
