// gpu_nn.cu - the GPU module's CUDA kernels beyond elementwise: strided
// copies and casts, reductions over a run of dimensions, max / argmax,
// softmax and log-softmax (forward, backward), layer norm (forward,
// backward), embedding (forward; backward with atomicAdd), dropout (the
// engine's Philox stream, gpu_philox.h) and the fused optimizer steps
// (SGD with momentum, Adam / AdamW). Raw pointers and counts only (see
// gpu_kern.h); float kernels are templates over float and double, and
// accumulate in double where the CPU does (reductions, norms).
#include "gpu_kern.h"
#include "gpu_philox.h"
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

// --- loads and stores of every dtype, through double ------------------------------------

__device__ __forceinline__ double load_as(int dt, const void *p, int64_t i) {
  switch (dt) {
  case GPUK_F32: return ((const float *)p)[i];
  case GPUK_F64: return ((const double *)p)[i];
  case GPUK_F16: return __half2float(((const __half *)p)[i]);
  case GPUK_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
  case GPUK_I8: return ((const signed char *)p)[i];
  case GPUK_U8: return ((const unsigned char *)p)[i];
  case GPUK_I32: return ((const int *)p)[i];
  case GPUK_I64: return (double)((const long long *)p)[i];
  case GPUK_BOOL: return ((const unsigned char *)p)[i] != 0;
  default: return ((const short *)p)[i];
  }
}

__device__ __forceinline__ void store_as(int dt, void *p, int64_t i, double v, long long iv, int is_int) {
  switch (dt) {
  case GPUK_F32: ((float *)p)[i] = (float)v; break;
  case GPUK_F64: ((double *)p)[i] = v; break;
  case GPUK_F16: ((__half *)p)[i] = __double2half(v); break;
  case GPUK_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
  case GPUK_I8: ((signed char *)p)[i] = (signed char)(is_int ? iv : (long long)v); break;
  case GPUK_U8: ((unsigned char *)p)[i] = (unsigned char)(is_int ? iv : (long long)v); break;
  case GPUK_I32: ((int *)p)[i] = (int)(is_int ? iv : (long long)v); break;
  case GPUK_I64: ((long long *)p)[i] = is_int ? iv : (long long)v; break;
  case GPUK_BOOL: ((unsigned char *)p)[i] = is_int ? iv != 0 : v != 0; break;
  default: ((short *)p)[i] = (short)(is_int ? iv : (long long)v); break;
  }
}

__device__ __forceinline__ int is_int_dt(int dt) { return dt >= GPUK_I8; }

__device__ __forceinline__ long long load_int(int dt, const void *p, int64_t i) {
  switch (dt) {
  case GPUK_I8: return ((const signed char *)p)[i];
  case GPUK_U8: return ((const unsigned char *)p)[i];
  case GPUK_I32: return ((const int *)p)[i];
  case GPUK_I64: return ((const long long *)p)[i];
  case GPUK_BOOL: return ((const unsigned char *)p)[i] != 0;
  default: return ((const short *)p)[i];
  }
}

// out (contiguous, odt) = in (strided, idt): a copy, a cast, or both.
__global__ void copy_cast(gpuk_layout L, int idt, const void *in, int odt, void *out, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = L.ndim - 1; d >= 0; d--) {
      int64_t k = rem % L.shape[d];
      rem /= L.shape[d];
      off += k * L.stride[d];
    }
    if (is_int_dt(idt) && is_int_dt(odt)) {
      store_as(odt, out, i, 0.0, load_int(idt, in, off), 1);
    } else {
      store_as(odt, out, i, load_as(idt, in, off), 0, 0);
    }
  }
}

// --- reductions over (outer, r, inner) ----------------------------------------------------

template <typename T> __device__ double block_sum(double v, double *sh) {
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

__device__ __forceinline__ double pick(int op, double a, double b) {
  if (a != a) return a; // NaN propagates
  if (b != b) return b;
  return op == GPUK_RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
}

// One block per output (o, k): the r elements at o*r*inner + j*inner + k.
template <typename T>
__global__ void reduce_k(int op, const T *x, T *out, int64_t outer, int64_t r, int64_t inner) {
  __shared__ double sh[kThreads];
  for (int64_t q = blockIdx.x; q < outer * inner; q += gridDim.x) {
    int64_t o = q / inner, k = q % inner;
    const T *base = x + o * r * inner + k;
    double acc;
    if (op == GPUK_RED_SUM || op == GPUK_RED_MEAN) {
      acc = 0;
      for (int64_t j = threadIdx.x; j < r; j += blockDim.x) acc += (double)base[j * inner];
      acc = block_sum<T>(acc, sh);
      if (op == GPUK_RED_MEAN) acc = r ? acc / (double)r : NAN;
    } else if (op == GPUK_RED_PROD) {
      acc = 1;
      for (int64_t j = threadIdx.x; j < r; j += blockDim.x) acc *= (double)base[j * inner];
      sh[threadIdx.x] = acc;
      __syncthreads();
      for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] *= sh[threadIdx.x + s];
        __syncthreads();
      }
      acc = sh[0];
      __syncthreads();
    } else { // max, min (r >= 1: the caller refuses empty ones)
      acc = (double)base[0];
      for (int64_t j = threadIdx.x; j < r; j += blockDim.x) acc = pick(op, acc, (double)base[j * inner]);
      sh[threadIdx.x] = acc;
      __syncthreads();
      for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] = pick(op, sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
      }
      acc = sh[0];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[q] = (T)acc;
  }
}

// max / min along r with the first index of the extreme (NaN counts as the
// extreme, the first NaN wins); one thread per output.
template <typename T>
__global__ void argext_k(int is_min, const T *x, T *vals, long long *idx, int64_t outer, int64_t r,
                         int64_t inner, long long base) {
  GRID_STRIDE(q, outer * inner) {
    int64_t o = q / inner, k = q % inner;
    const T *p = x + o * r * inner + k;
    T best = p[0];
    int64_t bi = 0;
    for (int64_t j = 1; j < r && best == best; j++) {
      T v = p[j * inner];
      if (v != v || (is_min ? v < best : v > best)) {
        best = v;
        bi = j;
      }
    }
    if (vals) vals[q] = best;
    idx[q] = (long long)bi + base;
  }
}

// --- softmax over (outer, n, inner) -------------------------------------------------------

template <typename T>
__global__ void softmax_k(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int use_log) {
  __shared__ double sh[kThreads];
  for (int64_t q = blockIdx.x; q < outer * inner; q += gridDim.x) {
    int64_t o = q / inner, k = q % inner;
    const T *xr = x + o * n * inner + k;
    T *yr = y + o * n * inner + k;
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = fmax(m, (double)xr[j * inner]);
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + s]);
      __syncthreads();
    }
    m = sh[0];
    __syncthreads();
    if (m == -INFINITY) m = 0; // an all -inf row: exp(-inf) = 0 everywhere
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += exp((double)xr[j * inner] - m);
    s = block_sum<T>(s, sh);
    double lse = m + log(s);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double v = (double)xr[j * inner];
      yr[j * inner] = (T)(use_log ? v - lse : exp(v - m) / s);
    }
  }
}

// softmax: gx = y (g - sum(g y)); log-softmax: gx = g - exp(y) sum(g).
template <typename T>
__global__ void softmax_bwd_k(const T *y, const T *g, T *gx, int64_t outer, int64_t n, int64_t inner,
                              int use_log) {
  __shared__ double sh[kThreads];
  for (int64_t q = blockIdx.x; q < outer * inner; q += gridDim.x) {
    int64_t o = q / inner, k = q % inner, off = o * n * inner + k;
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double gv = (double)g[off + j * inner];
      s += use_log ? gv : gv * (double)y[off + j * inner];
    }
    s = block_sum<T>(s, sh);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double yv = (double)y[off + j * inner], gv = (double)g[off + j * inner];
      gx[off + j * inner] = (T)(use_log ? gv - exp(yv) * s : yv * (gv - s));
    }
  }
}

// --- layer norm over rows of d ------------------------------------------------------------

template <typename T>
__global__ void layer_norm_k(const T *x, const double *w, const double *b, T *y, double *mean, double *rstd,
                             int64_t rows, int64_t d, double eps) {
  __shared__ double sh[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * d;
    double s = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) s += (double)xr[i];
    s = block_sum<T>(s, sh);
    double mu = d ? s / (double)d : NAN, v = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      double c = (double)xr[i] - mu;
      v += c * c;
    }
    v = block_sum<T>(v, sh);
    double rs = 1.0 / sqrt((d ? v / (double)d : NAN) + eps);
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
      y[r * d + i] = (T)(((double)xr[i] - mu) * rs * (w ? w[i] : 1.0) + (b ? b[i] : 0.0));
  }
}

// gx = rs (g w - mean(g w) - xhat mean(g w xhat)), row by row.
template <typename T>
__global__ void layer_norm_bwd_k(const T *g, const T *x, const double *w, const double *mean,
                                 const double *rstd, T *gx, int64_t rows, int64_t d) {
  __shared__ double sh[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *gr = g + r * d, *xr = x + r * d;
    double mu = mean[r], rs = rstd[r], s1 = 0, s2 = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      double gh = (double)gr[i] * (w ? w[i] : 1.0);
      s1 += gh;
      s2 += gh * ((double)xr[i] - mu) * rs;
    }
    s1 = block_sum<T>(s1, sh);
    s2 = block_sum<T>(s2, sh);
    double dd = (double)d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      double gh = (double)gr[i] * (w ? w[i] : 1.0), xh = ((double)xr[i] - mu) * rs;
      gx[r * d + i] = (T)(rs * (gh - s1 / dd - xh * s2 / dd));
    }
  }
}

// Column sums for the weight and bias gradients: one thread per column,
// rows in order (the CPU's order of additions).
template <typename T>
__global__ void layer_norm_wb_k(const T *g, const T *x, const double *mean, const double *rstd, double *gw,
                                double *gb, int64_t rows, int64_t d) {
  GRID_STRIDE(i, d) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; r++) {
      double gv = (double)g[r * d + i];
      sb += gv;
      sw += gv * ((double)x[r * d + i] - mean[r]) * rstd[r];
    }
    if (gw) gw[i] = sw;
    if (gb) gb[i] = sb;
  }
}

// --- embedding ----------------------------------------------------------------------------

__device__ __forceinline__ long long id_at(int idt, const void *ids, int64_t i) {
  return idt == GPUK_I32 ? (long long)((const int *)ids)[i] : ((const long long *)ids)[i];
}

// out[i, :] = weight[ids[i] - base, :]; an id out of range sets *bad (its
// position + 1, the first one kept) and writes zeros.
template <typename T>
__global__ void embedding_k(int idt, const void *ids, const T *w, T *out, int64_t n, int64_t vocab, int64_t dim,
                            long long base, unsigned long long *bad) {
  GRID_STRIDE(q, n * dim) {
    int64_t i = q / dim, c = q % dim;
    long long id = id_at(idt, ids, i) - base;
    if (id < 0 || id >= vocab) {
      if (c == 0) atomicMin(bad, (unsigned long long)i + 1);
      out[q] = (T)0;
    } else {
      out[q] = w[id * dim + c];
    }
  }
}

// gw[ids[i] - base, :] += g[i, :] (gw zeroed by the caller), padding skipped.
template <typename T>
__global__ void embedding_bwd_k(int idt, const void *ids, const T *g, T *gw, int64_t n, int64_t vocab,
                                int64_t dim, long long base, int has_pad, long long pad) {
  GRID_STRIDE(q, n * dim) {
    int64_t i = q / dim, c = q % dim;
    long long id = id_at(idt, ids, i) - base;
    if (id < 0 || id >= vocab || (has_pad && id == pad)) continue;
    atomicAdd(gw + id * dim + c, g[q]);
  }
}

// --- dropout (the CPU's mask, gpu_philox.h) ----------------------------------------------

template <typename T>
__global__ void dropout_k(const T *x, T *y, int64_t n, unsigned long long seed, unsigned long long first,
                          unsigned long long threshold, double scale) {
  GRID_STRIDE(i, n) {
    y[i] = gpu_dropout_keep(seed, first, (uint64_t)i, threshold) ? (T)((double)x[i] * scale) : (T)0;
  }
}

// --- optimizer steps (the CPU's formulas, optim.c) ----------------------------------------

template <typename T>
__global__ void sgd_k(T *p, const T *g, T *buf, int64_t n, gpuk_sgd_args c) {
  const T lr = (T)c.lr, mom = (T)c.momentum, keep = (T)c.keep, wd = (T)c.wd, gs = (T)c.gs;
  GRID_STRIDE(i, n) {
    T d = g[i] * gs;
    if (wd != 0) d += wd * p[i];
    if (buf) {
      T b = c.first ? d : mom * buf[i] + keep * d;
      buf[i] = b;
      d = c.nesterov ? d + mom * b : b;
    }
    p[i] -= lr * d;
  }
}

template <typename T>
__global__ void adam_k(T *p, const T *g, T *m, T *v, int64_t n, gpuk_adam_args c) {
  const T b1 = (T)c.b1, b2 = (T)c.b2, omb1 = (T)c.omb1, omb2 = (T)c.omb2, eps = (T)c.eps, wd = (T)c.wd,
          gs = (T)c.gs, decay = (T)c.decay, nss = (T)c.neg_step_size, bc2_sqrt = (T)c.bc2_sqrt;
  GRID_STRIDE(i, n) {
    T gv = g[i] * gs, pv = p[i];
    if (wd != 0) {
      if (c.decoupled) pv *= decay;
      else gv += wd * pv;
    }
    T mv = m[i] * b1 + omb1 * gv;
    T vv = v[i] * b2 + omb2 * gv * gv;
    T denom = sqrt(vv) / bc2_sqrt + eps;
    p[i] = pv + nss * mv / denom;
    m[i] = mv;
    v[i] = vv;
  }
}

} // namespace

#define AS(T, p) ((T *)(p))
#define ON(s) 0, (cudaStream_t)(s)

extern "C" int gpuk_copy_cast(void *stream, gpuk_layout in_layout, int idt, const void *in, int odt, void *out,
                              int64_t n) {
  if (n <= 0) return 0;
  copy_cast<<<blocks_for(n), kThreads, ON(stream)>>>(in_layout, idt, in, odt, out, n);
  return last();
}

extern "C" int gpuk_reduce(void *stream, int dt, int op, const void *x, void *out, int64_t outer, int64_t r,
                           int64_t inner) {
  if (outer * inner <= 0) return 0;
  if (dt == GPUK_F64)
    reduce_k<double><<<grid_of(outer * inner), kThreads, ON(stream)>>>(op, AS(const double, x), AS(double, out), outer, r, inner);
  else
    reduce_k<float><<<grid_of(outer * inner), kThreads, ON(stream)>>>(op, AS(const float, x), AS(float, out), outer, r, inner);
  return last();
}

extern "C" int gpuk_argext(void *stream, int dt, int is_min, const void *x, void *vals, long long *idx,
                           int64_t outer, int64_t r, int64_t inner, long long base) {
  int64_t n = outer * inner;
  if (n <= 0) return 0;
  if (dt == GPUK_F64)
    argext_k<double><<<blocks_for(n), kThreads, ON(stream)>>>(is_min, AS(const double, x), AS(double, vals), idx, outer, r, inner, base);
  else
    argext_k<float><<<blocks_for(n), kThreads, ON(stream)>>>(is_min, AS(const float, x), AS(float, vals), idx, outer, r, inner, base);
  return last();
}

extern "C" int gpuk_softmax(void *stream, int dt, const void *x, void *y, int64_t outer, int64_t n, int64_t inner,
                            int use_log) {
  if (outer * inner <= 0 || n <= 0) return 0;
  if (dt == GPUK_F64)
    softmax_k<double><<<grid_of(outer * inner), kThreads, ON(stream)>>>(AS(const double, x), AS(double, y), outer, n, inner, use_log);
  else
    softmax_k<float><<<grid_of(outer * inner), kThreads, ON(stream)>>>(AS(const float, x), AS(float, y), outer, n, inner, use_log);
  return last();
}

extern "C" int gpuk_softmax_backward(void *stream, int dt, const void *y, const void *g, void *gx, int64_t outer,
                                     int64_t n, int64_t inner, int use_log) {
  if (outer * inner <= 0 || n <= 0) return 0;
  if (dt == GPUK_F64)
    softmax_bwd_k<double><<<grid_of(outer * inner), kThreads, ON(stream)>>>(AS(const double, y), AS(const double, g), AS(double, gx), outer, n, inner, use_log);
  else
    softmax_bwd_k<float><<<grid_of(outer * inner), kThreads, ON(stream)>>>(AS(const float, y), AS(const float, g), AS(float, gx), outer, n, inner, use_log);
  return last();
}

extern "C" int gpuk_layer_norm(void *stream, int dt, const void *x, const double *w, const double *b, void *y,
                               double *mean, double *rstd, int64_t rows, int64_t d, double eps) {
  if (rows <= 0) return 0;
  if (dt == GPUK_F64)
    layer_norm_k<double><<<grid_of(rows), kThreads, ON(stream)>>>(AS(const double, x), w, b, AS(double, y), mean, rstd, rows, d, eps);
  else
    layer_norm_k<float><<<grid_of(rows), kThreads, ON(stream)>>>(AS(const float, x), w, b, AS(float, y), mean, rstd, rows, d, eps);
  return last();
}

extern "C" int gpuk_layer_norm_backward(void *stream, int dt, const void *g, const void *x, const double *w,
                                        const double *mean, const double *rstd, void *gx, double *gw, double *gb,
                                        int64_t rows, int64_t d) {
  if (rows <= 0 || d <= 0) return 0;
  if (dt == GPUK_F64) {
    if (gx) layer_norm_bwd_k<double><<<grid_of(rows), kThreads, ON(stream)>>>(AS(const double, g), AS(const double, x), w, mean, rstd, AS(double, gx), rows, d);
    if (gw || gb) layer_norm_wb_k<double><<<blocks_for(d), kThreads, ON(stream)>>>(AS(const double, g), AS(const double, x), mean, rstd, gw, gb, rows, d);
  } else {
    if (gx) layer_norm_bwd_k<float><<<grid_of(rows), kThreads, ON(stream)>>>(AS(const float, g), AS(const float, x), w, mean, rstd, AS(float, gx), rows, d);
    if (gw || gb) layer_norm_wb_k<float><<<blocks_for(d), kThreads, ON(stream)>>>(AS(const float, g), AS(const float, x), mean, rstd, gw, gb, rows, d);
  }
  return last();
}

extern "C" int gpuk_embedding(void *stream, int dt, int idt, const void *ids, const void *w, void *out, int64_t n,
                              int64_t vocab, int64_t dim, long long base, unsigned long long *bad) {
  if (n * dim <= 0) return 0;
  if (dt == GPUK_F64)
    embedding_k<double><<<blocks_for(n * dim), kThreads, ON(stream)>>>(idt, ids, AS(const double, w), AS(double, out), n, vocab, dim, base, bad);
  else
    embedding_k<float><<<blocks_for(n * dim), kThreads, ON(stream)>>>(idt, ids, AS(const float, w), AS(float, out), n, vocab, dim, base, bad);
  return last();
}

extern "C" int gpuk_embedding_backward(void *stream, int dt, int idt, const void *ids, const void *g, void *gw,
                                       int64_t n, int64_t vocab, int64_t dim, long long base, int has_pad,
                                       long long pad) {
  if (n * dim <= 0) return 0;
  if (dt == GPUK_F64)
    embedding_bwd_k<double><<<blocks_for(n * dim), kThreads, ON(stream)>>>(idt, ids, AS(const double, g), AS(double, gw), n, vocab, dim, base, has_pad, pad);
  else
    embedding_bwd_k<float><<<blocks_for(n * dim), kThreads, ON(stream)>>>(idt, ids, AS(const float, g), AS(float, gw), n, vocab, dim, base, has_pad, pad);
  return last();
}

extern "C" int gpuk_dropout(void *stream, int dt, const void *x, void *y, int64_t n, unsigned long long seed,
                            unsigned long long first, unsigned long long threshold, double scale) {
  if (n <= 0) return 0;
  if (dt == GPUK_F64)
    dropout_k<double><<<blocks_for(n), kThreads, ON(stream)>>>(AS(const double, x), AS(double, y), n, seed, first, threshold, scale);
  else
    dropout_k<float><<<blocks_for(n), kThreads, ON(stream)>>>(AS(const float, x), AS(float, y), n, seed, first, threshold, scale);
  return last();
}

extern "C" int gpuk_sgd(void *stream, int dt, void *p, const void *g, void *buf, int64_t n, gpuk_sgd_args c) {
  if (n <= 0) return 0;
  if (dt == GPUK_F64)
    sgd_k<double><<<blocks_for(n), kThreads, ON(stream)>>>(AS(double, p), AS(const double, g), AS(double, buf), n, c);
  else
    sgd_k<float><<<blocks_for(n), kThreads, ON(stream)>>>(AS(float, p), AS(const float, g), AS(float, buf), n, c);
  return last();
}

extern "C" int gpuk_adam(void *stream, int dt, void *p, const void *g, void *m, void *v, int64_t n, gpuk_adam_args c) {
  if (n <= 0) return 0;
  if (dt == GPUK_F64)
    adam_k<double><<<blocks_for(n), kThreads, ON(stream)>>>(AS(double, p), AS(const double, g), AS(double, m), AS(double, v), n, c);
  else
    adam_k<float><<<blocks_for(n), kThreads, ON(stream)>>>(AS(float, p), AS(const float, g), AS(float, m), AS(float, v), n, c);
  return last();
}
