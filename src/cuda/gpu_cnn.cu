// gpu_cnn.cu - the GPU module's CUDA kernels for the layers around a
// convolution: batch norm (per-channel statistics in double, the affine
// map, the backward's per-channel sums and the input gradient, the
// running-stats blend) and 2-D pooling (max with the position of each
// maximum, average with or without the padding counted, and their
// backward passes). The CPU's formulas (src/ops/norm.c, src/ops/pool.c);
// float32 and float64; raw pointers and counts only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

// Sum of v over the block (blockDim.x == kThreads, a power of two); every
// thread gets the total.
__device__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

// --- batch norm over (n, c, inner): channel ch's m = n * inner values --------------------

// Element j (0 <= j < n * inner) of channel ch.
__device__ __forceinline__ int64_t bn_at(int64_t j, int64_t ch, int64_t c, int64_t inner) {
  int64_t s = j / inner, i = j - s * inner;
  return (s * c + ch) * inner + i;
}

// One block per channel: its mean and biased variance (two passes, in double).
template <typename T>
__global__ void bn_stats_k(const T *x, double *mean, double *var, int64_t n, int64_t c, int64_t inner) {
  __shared__ double sh[kThreads];
  const int64_t m = n * inner;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) s += (double)x[bn_at(j, ch, c, inner)];
    s = block_sum(s, sh);
    double mu = m ? s / (double)m : NAN, q = 0;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      double d = (double)x[bn_at(j, ch, c, inner)] - mu;
      q += d * d;
    }
    q = block_sum(q, sh);
    if (threadIdx.x == 0) {
      mean[ch] = mu;
      var[ch] = m ? q / (double)m : NAN;
    }
  }
}

// y = a x + b per channel, a = w / sqrt(var + eps), b = bias - mean a.
template <typename T>
__global__ void bn_apply_k(const T *x, T *y, const double *mean, const double *var, const double *w,
                           const double *b, int64_t total, int64_t c, int64_t inner, double eps) {
  GRID_STRIDE(q, total) {
    int64_t ch = (q / inner) % c;
    double is = 1.0 / sqrt(var[ch] + eps), wc = w ? w[ch] : 1.0, bc = b ? b[ch] : 0.0;
    double a = is * wc, sh = bc - mean[ch] * is * wc;
    y[q] = (T)(a * (double)x[q] + sh);
  }
}

// running = momentum running + (1 - momentum) v scale (running: n elements
// at a stride, float32 or float64).
template <typename T>
__global__ void bn_blend_k(T *running, int64_t stride, const double *v, int64_t n, double momentum,
                           double scale) {
  GRID_STRIDE(i, n) {
    double r = (double)running[i * stride];
    running[i * stride] = (T)(momentum * r + (1.0 - momentum) * v[i] * scale);
  }
}

// One block per channel: sum(g), sum(g (x - mean)); then gw, gb and the
// three factors of gx = ka g + kb (x - mean) + kc into k (3 per channel).
template <typename T>
__global__ void bn_bwd_sums_k(const T *g, const T *x, const double *mean, const double *var, const double *w,
                              double *gw, double *gb, double *k, int64_t n, int64_t c, int64_t inner, double eps,
                              int training) {
  __shared__ double sh[kThreads];
  const int64_t m = n * inner;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double mu = mean[ch], sg = 0, sgx = 0;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      int64_t at = bn_at(j, ch, c, inner);
      double gv = (double)g[at];
      sg += gv;
      sgx += gv * ((double)x[at] - mu);
    }
    sg = block_sum(sg, sh);
    sgx = block_sum(sgx, sh);
    if (threadIdx.x == 0) {
      double is = 1.0 / sqrt(var[ch] + eps), kk = (w ? w[ch] : 1.0) * is, dm = (double)m;
      if (gw) gw[ch] = sgx * is;
      if (gb) gb[ch] = sg;
      k[3 * ch] = kk;
      k[3 * ch + 1] = training ? -kk * is * is * sgx / dm : 0.0;
      k[3 * ch + 2] = training ? -kk * sg / dm : 0.0;
    }
  }
}

template <typename T>
__global__ void bn_bwd_x_k(const T *g, const T *x, T *gx, const double *mean, const double *k, int64_t total,
                           int64_t c, int64_t inner) {
  GRID_STRIDE(q, total) {
    int64_t ch = (q / inner) % c;
    gx[q] = (T)(k[3 * ch] * (double)g[q] + k[3 * ch + 1] * ((double)x[q] - mean[ch]) + k[3 * ch + 2]);
  }
}

// --- pooling over planes of h x w (pool.c's window rules) ----------------------------------

// The window of output (oh, ow) clipped to the input: rows [h0, h1),
// columns [w0, w1); full: its size with the padding counted.
__device__ __forceinline__ void window(const gpuk_pool &p, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1,
                                       int64_t *w0, int64_t *w1, int64_t *full) {
  int64_t hs = oh * p.sh - p.pt, ws = ow * p.sw - p.pl;
  int64_t he = hs + p.kh, we = ws + p.kw;
  if (he > p.h + p.pb) he = p.h + p.pb;
  if (we > p.w + p.pr) we = p.w + p.pr;
  *full = (he - hs) * (we - ws);
  *h0 = hs < 0 ? 0 : hs;
  *w0 = ws < 0 ? 0 : ws;
  *h1 = he > p.h ? p.h : he;
  *w1 = we > p.w ? p.w : we;
}

// One thread per output: the maximum of its (dilated) window and its
// position in the plane; the first of equal maxima, a NaN wins (the last).
template <typename T>
__global__ void max_pool_k(gpuk_pool p, const T *x, T *y, long long *idx, int64_t total) {
  const int64_t OP = p.oh * p.ow, HW = p.h * p.w;
  GRID_STRIDE(q, total) {
    int64_t pl = q / OP, r = q - pl * OP, oh = r / p.ow, ow = r - oh * p.ow;
    const T *src = x + pl * HW;
    int64_t hs = oh * p.sh - p.pt, ws = ow * p.sw - p.pl, bi = -1;
    T best = (T)-INFINITY;
    for (int64_t i = 0; i < p.kh; i++) {
      int64_t ih = hs + i * p.dh;
      if (ih < 0 || ih >= p.h) continue;
      for (int64_t j = 0; j < p.kw; j++) {
        int64_t iw = ws + j * p.dw;
        if (iw < 0 || iw >= p.w) continue;
        T v = src[ih * p.w + iw];
        if (bi < 0 || v > best || v != v) {
          best = v;
          bi = ih * p.w + iw;
        }
      }
    }
    y[q] = best;
    idx[q] = bi < 0 ? 0 : bi;
  }
}

// gx (zeroed) += gy at the saved positions; a position outside the plane
// writes nothing and sets *bad (set to ~0 first) to 1 + its output element.
template <typename T>
__global__ void max_pool_bwd_k(const T *gy, const long long *idx, T *gx, int64_t total, int64_t OP, int64_t HW,
                               unsigned long long *bad) {
  GRID_STRIDE(q, total) {
    long long at = idx[q];
    if (at < 0 || at >= HW) {
      atomicMin(bad, (unsigned long long)q + 1);
      continue;
    }
    atomicAdd(gx + (q / OP) * HW + at, gy[q]);
  }
}

template <typename T>
__global__ void avg_pool_k(gpuk_pool p, int cip, const T *x, T *y, int64_t total) {
  const int64_t OP = p.oh * p.ow, HW = p.h * p.w;
  GRID_STRIDE(q, total) {
    int64_t pl = q / OP, r = q - pl * OP, oh = r / p.ow, ow = r - oh * p.ow;
    int64_t h0, h1, w0, w1, full;
    window(p, oh, ow, &h0, &h1, &w0, &w1, &full);
    const T *src = x + pl * HW;
    double acc = 0;
    for (int64_t ih = h0; ih < h1; ih++)
      for (int64_t iw = w0; iw < w1; iw++) acc += (double)src[ih * p.w + iw];
    int64_t div = cip ? full : (h1 - h0) * (w1 - w0);
    y[q] = (T)(acc / (double)div);
  }
}

// One thread per input element: the sum over the outputs whose window
// covers it of their gradient over their divisor (no atomics).
template <typename T>
__global__ void avg_pool_bwd_k(gpuk_pool p, int cip, const T *gy, T *gx, int64_t total) {
  const int64_t OP = p.oh * p.ow, HW = p.h * p.w;
  GRID_STRIDE(q, total) {
    int64_t pl = q / HW, r = q - pl * HW, ih = r / p.w, iw = r - ih * p.w;
    // Output oh covers ih when oh sh - pt <= ih < oh sh - pt + kh.
    int64_t th = ih + p.pt - p.kh + 1, tw = iw + p.pl - p.kw + 1;
    int64_t oh0 = th <= 0 ? 0 : (th + p.sh - 1) / p.sh, oh1 = (ih + p.pt) / p.sh;
    int64_t ow0 = tw <= 0 ? 0 : (tw + p.sw - 1) / p.sw, ow1 = (iw + p.pl) / p.sw;
    if (oh1 > p.oh - 1) oh1 = p.oh - 1;
    if (ow1 > p.ow - 1) ow1 = p.ow - 1;
    const T *src = gy + pl * OP;
    double acc = 0;
    for (int64_t oh = oh0; oh <= oh1; oh++)
      for (int64_t ow = ow0; ow <= ow1; ow++) {
        int64_t h0, h1, w0, w1, full;
        window(p, oh, ow, &h0, &h1, &w0, &w1, &full);
        if (ih < h0 || ih >= h1 || iw < w0 || iw >= w1) continue;
        int64_t div = cip ? full : (h1 - h0) * (w1 - w0);
        acc += (double)src[oh * p.ow + ow] / (double)div;
      }
    gx[q] = (T)acc;
  }
}

// y (m rows of n) += b per column.
template <typename T> __global__ void add_bias_k(T *y, const T *b, int64_t total, int64_t n) {
  GRID_STRIDE(q, total) y[q] += b[q % n];
}

} // namespace

#define AS(T, p) ((T *)(p))
#define ON(s) 0, (cudaStream_t)(s)
// Launch kernel k<double> or k<float> by dt.
#define BY_DTYPE(dt, k, grid, stream, ...)                                                  \
  do {                                                                                      \
    if ((dt) == GPUK_F64) {                                                                 \
      typedef double T;                                                                     \
      k<T><<<grid, kThreads, ON(stream)>>>(__VA_ARGS__);                                    \
    } else {                                                                                \
      typedef float T;                                                                      \
      k<T><<<grid, kThreads, ON(stream)>>>(__VA_ARGS__);                                    \
    }                                                                                       \
  } while (0)

extern "C" int gpuk_bn_stats(void *stream, int dt, const void *x, double *mean, double *var, int64_t n, int64_t c,
                             int64_t inner) {
  if (c <= 0) return 0;
  BY_DTYPE(dt, bn_stats_k, grid_of(c), stream, AS(const T, x), mean, var, n, c, inner);
  return last();
}

extern "C" int gpuk_bn_apply(void *stream, int dt, const void *x, void *y, const double *mean, const double *var,
                             const double *w, const double *b, int64_t n, int64_t c, int64_t inner, double eps) {
  int64_t total = n * c * inner;
  if (total <= 0) return 0;
  BY_DTYPE(dt, bn_apply_k, blocks_for(total), stream, AS(const T, x), AS(T, y), mean, var, w, b, total, c, inner,
           eps);
  return last();
}

extern "C" int gpuk_bn_blend(void *stream, int dt, void *running, int64_t stride, const double *v, int64_t n,
                             double momentum, double scale) {
  if (n <= 0) return 0;
  BY_DTYPE(dt, bn_blend_k, blocks_for(n), stream, AS(T, running), stride, v, n, momentum, scale);
  return last();
}

extern "C" int gpuk_bn_backward(void *stream, int dt, const void *g, const void *x, const double *mean,
                                const double *var, const double *w, void *gx, double *gw, double *gb, double *k,
                                int64_t n, int64_t c, int64_t inner, double eps, int training) {
  if (c <= 0) return 0;
  BY_DTYPE(dt, bn_bwd_sums_k, grid_of(c), stream, AS(const T, g), AS(const T, x), mean, var, w, gw, gb, k, n, c,
           inner, eps, training);
  int64_t total = n * c * inner;
  if (gx && total > 0)
    BY_DTYPE(dt, bn_bwd_x_k, blocks_for(total), stream, AS(const T, g), AS(const T, x), AS(T, gx), mean, k, total,
             c, inner);
  return last();
}

extern "C" int gpuk_max_pool(void *stream, int dt, gpuk_pool p, const void *x, void *y, long long *idx) {
  int64_t total = p.planes * p.oh * p.ow;
  if (total <= 0) return 0;
  BY_DTYPE(dt, max_pool_k, blocks_for(total), stream, p, AS(const T, x), AS(T, y), idx, total);
  return last();
}

extern "C" int gpuk_max_pool_backward(void *stream, int dt, const void *gy, const long long *idx, void *gx,
                                      int64_t planes, int64_t op, int64_t hw, unsigned long long *bad) {
  int64_t total = planes * op;
  if (total <= 0 || hw <= 0) return 0;
  BY_DTYPE(dt, max_pool_bwd_k, blocks_for(total), stream, AS(const T, gy), idx, AS(T, gx), total, op, hw, bad);
  return last();
}

extern "C" int gpuk_avg_pool(void *stream, int dt, gpuk_pool p, int count_include_pad, const void *x, void *y) {
  int64_t total = p.planes * p.oh * p.ow;
  if (total <= 0) return 0;
  BY_DTYPE(dt, avg_pool_k, blocks_for(total), stream, p, count_include_pad, AS(const T, x), AS(T, y), total);
  return last();
}

extern "C" int gpuk_avg_pool_backward(void *stream, int dt, gpuk_pool p, int count_include_pad, const void *gy,
                                      void *gx) {
  int64_t total = p.planes * p.h * p.w;
  if (total <= 0) return 0;
  BY_DTYPE(dt, avg_pool_bwd_k, blocks_for(total), stream, p, count_include_pad, AS(const T, gy), AS(T, gx),
           total);
  return last();
}

extern "C" int gpuk_add_bias(void *stream, int dt, void *y, const void *b, int64_t m, int64_t n) {
  int64_t total = m * n;
  if (total <= 0) return 0;
  BY_DTYPE(dt, add_bias_k, blocks_for(total), stream, AS(T, y), AS(const T, b), total, n);
  return last();
}
