// gpu_act.cu - the GPU module's pointwise kernels with parameters and a
// few row kernels: the fused activations of cell_act.h (forward and
// backward), softplus and nan_to_num (computed in double, as
// src/ops/activation.c and unary_param.c compute them), logsumexp over
// contiguous rows (one block per row), roll (an index remap with a wrap per
// dimension) and the random fills rand / randn / randint / normal /
// bernoulli (the engine's
// Philox stream, gpu_philox.h: element j's value depends on (seed, first,
// j) only, so any launch shape gives the CPU's numbers) and cumprod's
// gradient (one thread per line). Raw pointers and
// counts only (gpu_kern.h).
#include "gpu_kern.h"
#include "gpu_philox.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

#define ACT_SELU_ALPHA 1.6732632423543772848170429916717
#define ACT_SELU_SCALE 1.0507009873554804934193349852946
#define ACT_GELU_C 0.79788456080286535587989211986876
#define ACT_GELU_K 0.044715

__device__ __forceinline__ double softplus1(double x) { return x > 20 ? x : log1p(exp(x)); }
__device__ __forceinline__ double sigm(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

// cell_act.h's kinds: 0 leaky_relu, 1 elu, 2 selu, 3 celu, 4 softsign,
// 5 mish, 6 hardtanh, 7 hswish, 8 hsigmoid, 9 logsigmoid, 10 tanhshrink,
// 11 gelu (tanh).
__device__ double act_fwd(int kind, double x, double p0, double p1) {
  switch (kind) {
  case 0: return x > 0 ? x : p0 * x;
  case 1: return x > 0 ? x : p0 * expm1(x);
  case 2: return ACT_SELU_SCALE * (x > 0 ? x : ACT_SELU_ALPHA * expm1(x));
  case 3: return x > 0 ? x : p0 * expm1(x / p0);
  case 4: return x / (1.0 + fabs(x));
  case 5: return x * tanh(softplus1(x));
  case 6: return x != x ? x : x < p0 ? p0 : x > p1 ? p1 : x;
  case 7: return x <= -3 ? 0.0 : x >= 3 ? x : x * (x + 3) / 6;
  case 8: return x <= -3 ? 0.0 : x >= 3 ? 1.0 : (x + 3) / 6;
  case 9: return (x < 0 ? x : 0.0) - log1p(exp(-fabs(x)));
  case 10: return x - tanh(x);
  default: return 0.5 * x * (1.0 + tanh(ACT_GELU_C * (x + ACT_GELU_K * x * x * x)));
  }
}

__device__ double act_grad(int kind, double x, double p0, double p1) {
  switch (kind) {
  case 0: return x > 0 ? 1.0 : p0;
  case 1: return x > 0 ? 1.0 : p0 * exp(x);
  case 2: return ACT_SELU_SCALE * (x > 0 ? 1.0 : ACT_SELU_ALPHA * exp(x));
  case 3: return x > 0 ? 1.0 : exp(x / p0);
  case 4: {
    double d = 1.0 + fabs(x);
    return 1.0 / (d * d);
  }
  case 5: {
    double t = tanh(softplus1(x));
    return t + x * sigm(x) * (1.0 - t * t);
  }
  case 6: return x <= p0 || x >= p1 ? 0.0 : 1.0;
  case 7: return x < -3 ? 0.0 : x <= 3 ? x / 3 + 0.5 : 1.0;
  case 8: return x > -3 && x < 3 ? 1.0 / 6 : 0.0;
  case 9: return sigm(-x);
  case 10: {
    double t = tanh(x);
    return t * t;
  }
  default: {
    double x2 = x * x, t = tanh(ACT_GELU_C * (x + ACT_GELU_K * x2 * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * ACT_GELU_C * (1.0 + 3.0 * ACT_GELU_K * x2);
  }
  }
}

// out[i] = f(x[i]) (g NULL) or g[i] f'(x[i]) for the codes of gpu_kern.h.
template <typename T>
__global__ void pointwise_k(int op, double k0, double k1, double k2, const T *x, const T *g, T *out, int64_t n) {
  GRID_STRIDE(i, n) {
    double v = (double)x[i], r;
    if (op == GPUK_PW_NAN_TO_NUM) {
      r = v != v ? k0 : v == INFINITY ? k1 : v == -INFINITY ? k2 : v;
    } else if (op == GPUK_PW_SOFTPLUS) {
      double z = v * k0;
      r = z > k1 ? v : log1p(exp(z)) / k0;
    } else if (op >= GPUK_PW_ACT_GRAD) {
      r = (double)g[i] * act_grad(op - GPUK_PW_ACT_GRAD, v, k0, k1);
    } else {
      r = act_fwd(op, v, k0, k1);
    }
    out[i] = (T)r;
  }
}

// out[row] = log(sum exp(x - m)) + m over each contiguous row of len (m
// the row's maximum; a NaN gives NaN, an infinite maximum itself).
template <typename T> __global__ void lse_k(const T *x, T *out, int64_t rows, int64_t len) {
  __shared__ double sh[kThreads];
  __shared__ int shn[kThreads];
  for (int64_t q = blockIdx.x; q < rows; q += gridDim.x) {
    const T *v = x + q * len;
    double m = -INFINITY;
    int nan = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      double e = (double)v[j];
      if (e != e) nan = 1;
      else if (e > m) m = e;
    }
    sh[threadIdx.x] = m;
    shn[threadIdx.x] = nan;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) {
        if (sh[threadIdx.x + s] > sh[threadIdx.x]) sh[threadIdx.x] = sh[threadIdx.x + s];
        shn[threadIdx.x] |= shn[threadIdx.x + s];
      }
      __syncthreads();
    }
    m = sh[0];
    nan = shn[0];
    __syncthreads();
    double acc = 0;
    if (!nan && !isinf(m))
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x) acc += exp((double)v[j] - m);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
      __syncthreads();
    }
    acc = sh[0];
    __syncthreads();
    if (threadIdx.x == 0) out[q] = (T)(nan ? (double)NAN : isinf(m) ? m : log(acc) + m);
  }
}

// out[i] (contiguous over L.shape) = in at index (i_d - shift_d) mod
// size_d per dimension (L.stride: in's strides).
template <typename E> __global__ void roll_k(gpuk_layout L, gpuk_roll_args R, const E *in, E *out, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = L.ndim - 1; d >= 0; d--) {
      int64_t sz = L.shape[d], k = rem % sz;
      rem /= sz;
      k -= R.shift[d];
      if (k < 0) k += sz;
      off += k * L.stride[d];
    }
    out[i] = in[off];
  }
}

// The engine's uniform in [0, 1) from two words (src/core/rng.h).
__device__ __forceinline__ double u01(uint32_t a, uint32_t b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}

// The high 64 bits of a * b (portable: the host emulation runs it too).
__device__ __forceinline__ uint64_t mulhi64(uint64_t a, uint64_t b) {
  uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

// Two elements per Philox block (pair p: elements 2p, 2p + 1), as
// src/ops/create.c's rand_fill / randn_fill / randint_fill.
__global__ void rand_k(int kind, unsigned long long seed, unsigned long long first, double scale, long long low,
                       unsigned long long range, const double *pa, const double *pb, double *fo, long long *io,
                       int64_t n) {
  int64_t pairs = (n + 1) / 2;
  GRID_STRIDE(p, pairs) {
    uint32_t w[4];
    gpu_philox_block(seed, first + (uint64_t)p, w);
    int64_t j = 2 * p;
    if (kind == GPUK_RAND_NORMAL) {
      const double two_pi = 6.283185307179586476925286766559;
      double u1 = 1.0 - u01(w[0], w[1]), u2 = u01(w[2], w[3]);
      double r = sqrt(-2.0 * log(u1)), a = two_pi * u2;
      if (pa) { // normal(mean, std): src/ops/random.c's order of operations
        fo[j] = pa[j] + pb[j] * r * cos(a);
        if (j + 1 < n) fo[j + 1] = pa[j + 1] + pb[j + 1] * r * sin(a);
      } else {
        fo[j] = r * cos(a);
        if (j + 1 < n) fo[j + 1] = r * sin(a);
      }
    } else {
      for (int k = 0; k < 2 && j + k < n; k++) {
        if (kind == GPUK_RAND_UNIFORM) {
          fo[j + k] = floor(u01(w[2 * k], w[2 * k + 1]) * scale) / scale;
        } else if (kind == GPUK_RAND_BERNOULLI) { // probability pa[j] (pa NULL: scale)
          fo[j + k] = u01(w[2 * k], w[2 * k + 1]) < (pa ? pa[j + k] : scale) ? 1.0 : 0.0;
        } else {
          uint64_t r = ((uint64_t)w[2 * k] << 32) | w[2 * k + 1];
          io[j + k] = (long long)((uint64_t)low + mulhi64(r, range));
        }
      }
    }
  }
}

// bce_with_logits over n contiguous float64 elements (w, pw, g may be
// NULL: ones; g NULL: k everywhere), src/ops/loss_pointwise.c's formulas:
// the loss into o0 (backward 0), else the gradients of x, y, weight and
// pos_weight into o0..o3 (each may be NULL).
__device__ __forceinline__ double softplus_neg(double x) { return log1p(exp(-fabs(x))) + (x < 0 ? -x : 0.0); }
__device__ __forceinline__ double sigmoid_neg(double x) {
  return x >= 0 ? exp(-x) / (1.0 + exp(-x)) : 1.0 / (1.0 + exp(x));
}

__global__ void bce_k(int backward, const double *x, const double *y, const double *w, const double *pw,
                      const double *g, double k, double *o0, double *o1, double *o2, double *o3, int64_t n) {
  GRID_STRIDE(i, n) {
    double xv = x[i], t = y[i], pwv = pw ? pw[i] : 1.0, wv = w ? w[i] : 1.0;
    double lw = 1 + (pwv - 1) * t, sp = softplus_neg(xv);
    if (!backward) {
      double l = (1 - t) * xv + lw * sp;
      o0[i] = w ? l * wv : l;
    } else {
      double sc = (g ? g[i] : 1.0) * k;
      if (o0) o0[i] = sc * wv * ((1 - t) - lw * sigmoid_neg(xv));
      if (o1) o1[i] = sc * wv * (-xv + (pwv - 1) * sp);
      if (o2) o2[i] = sc * ((1 - t) * xv + lw * sp);
      if (o3) o3[i] = sc * wv * t * sp;
    }
  }
}

// *bad = 1 + the first i with x[i] outside [lo, hi] (NaN too).
__global__ void outside_k(const double *x, int64_t n, double lo, double hi, unsigned long long *bad) {
  GRID_STRIDE(i, n)
    if (!(x[i] >= lo && x[i] <= hi)) atomicMin(bad, (unsigned long long)(i + 1));
}

// cumprod's gradient along the middle dim of contiguous float64 (outer,
// len, inner), one thread per line, src/ops/scan.c's formula (exact with
// zeros: before the first zero z a reversed sum of g y / x, at z the
// product before it times the sum of g times the products after it, 0
// past it). gx is the line's scratch too.
__global__ void cumprod_bw_k(const double *x, const double *g, double *gx, int64_t outer, int64_t n, int64_t inner) {
  GRID_STRIDE(q, outer * inner) {
    int64_t base = (q / inner) * n * inner + q % inner;
    const double *xv = x + base, *gv = g + base;
    double *o = gx + base;
    int64_t z = 0;
    while (z < n && xv[z * inner] != 0) z++;
    double y = 1;
    for (int64_t i = 0; i < z; i++) {
      y *= xv[i * inner];
      o[i * inner] = gv[i * inner] * y;
    }
    double acc = 0;
    for (int64_t i = z - 1; i >= 0; i--) {
      acc += o[i * inner];
      o[i * inner] = acc / xv[i * inner];
    }
    if (z < n) {
      double pre = 1, p = 1, sum = 0;
      for (int64_t i = 0; i < z; i++) pre *= xv[i * inner];
      for (int64_t j = z; j < n; j++) {
        if (j > z) p *= xv[j * inner];
        sum += gv[j * inner] * p;
      }
      o[z * inner] = pre * sum;
      for (int64_t j = z + 1; j < n; j++) o[j * inner] = 0;
    }
  }
}

// multinomial, one thread per row of k float64 weights w (checked by the
// host), its cdf scratch of k: src/ops/random.c's draws (sample t of row i
// from Philox block first + i num_samples + t), with replacement by a
// search of the cumulative weights, without by a walk over the weights
// left.
__global__ void multinomial_k(const double *w, double *cdf, long long *o, int64_t rows, int64_t k, int64_t ns,
                              int replacement, unsigned long long seed, unsigned long long first, long long base) {
  GRID_STRIDE(i, rows) {
    const double *wr = w + i * k;
    double *c = cdf + i * k;
    uint32_t b[4];
    if (replacement) {
      double acc = 0;
      for (int64_t j = 0; j < k; j++) c[j] = acc += wr[j];
      for (int64_t t = 0; t < ns; t++) {
        gpu_philox_block(seed, first + (uint64_t)(i * ns + t), b);
        double u = u01(b[0], b[1]) * acc;
        int64_t lo = 0, hi = k - 1;
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          if (c[mid] > u) hi = mid;
          else lo = mid + 1;
        }
        while (lo > 0 && wr[lo] == 0) lo--;
        o[i * ns + t] = lo + base;
      }
    } else {
      double left = 0;
      for (int64_t j = 0; j < k; j++) left += c[j] = wr[j];
      for (int64_t t = 0; t < ns; t++) {
        gpu_philox_block(seed, first + (uint64_t)(i * ns + t), b);
        double u = u01(b[0], b[1]) * left, acc = 0;
        int64_t pick = -1;
        for (int64_t j = 0; j < k; j++) {
          if (c[j] <= 0) continue;
          pick = j;
          acc += c[j];
          if (acc > u) break;
        }
        o[i * ns + t] = pick + base;
        if (pick < 0) continue; // the host's checks leave enough positive weights
        left -= c[pick];
        c[pick] = 0;
        if (!(left > 0)) {
          left = 0;
          for (int64_t j = 0; j < k; j++) left += c[j];
        }
      }
    }
  }
}

template <typename T>
int pointwise_as(cudaStream_t st, int op, double k0, double k1, double k2, const void *x, const void *g, void *out,
                 int64_t n) {
  pointwise_k<T><<<blocks_for(n), kThreads, 0, st>>>(op, k0, k1, k2, (const T *)x, (const T *)g, (T *)out, n);
  return last();
}

template <typename E> int roll_as(cudaStream_t st, gpuk_layout L, gpuk_roll_args R, const void *in, void *out, int64_t n) {
  roll_k<E><<<blocks_for(n), kThreads, 0, st>>>(L, R, (const E *)in, (E *)out, n);
  return last();
}

} // namespace

extern "C" int gpuk_pointwise(void *stream, int dt, int op, double k0, double k1, double k2, const void *x,
                              const void *g, void *out, int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  return dt == GPUK_F64 ? pointwise_as<double>(st, op, k0, k1, k2, x, g, out, n)
                        : pointwise_as<float>(st, op, k0, k1, k2, x, g, out, n);
}

extern "C" int gpuk_logsumexp(void *stream, int dt, const void *x, void *out, int64_t rows, int64_t len) {
  if (rows <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == GPUK_F64)
    lse_k<double><<<grid_of(rows), kThreads, 0, st>>>((const double *)x, (double *)out, rows, len);
  else
    lse_k<float><<<grid_of(rows), kThreads, 0, st>>>((const float *)x, (float *)out, rows, len);
  return last();
}

extern "C" int gpuk_roll(void *stream, int es, gpuk_layout L, gpuk_roll_args R, const void *in, void *out, int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  switch (es) {
  case 1: return roll_as<unsigned char>(st, L, R, in, out, n);
  case 2: return roll_as<unsigned short>(st, L, R, in, out, n);
  case 4: return roll_as<unsigned int>(st, L, R, in, out, n);
  default: return roll_as<unsigned long long>(st, L, R, in, out, n);
  }
}

extern "C" int gpuk_rand(void *stream, int kind, unsigned long long seed, unsigned long long first, double scale,
                         long long low, unsigned long long range, const double *pa, const double *pb, double *fo,
                         long long *io, int64_t n) {
  if (n <= 0) return 0;
  rand_k<<<blocks_for((n + 1) / 2), kThreads, 0, (cudaStream_t)stream>>>(kind, seed, first, scale, low, range, pa, pb,
                                                                        fo, io, n);
  return last();
}

extern "C" int gpuk_first_outside(void *stream, const double *x, int64_t n, double lo, double hi,
                                  unsigned long long *bad) {
  if (n <= 0) return 0;
  outside_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(x, n, lo, hi, bad);
  return last();
}

extern "C" int gpuk_bce(void *stream, int backward, const double *x, const double *y, const double *w,
                        const double *pw, const double *g, double k, double *o0, double *o1, double *o2, double *o3,
                        int64_t n) {
  if (n <= 0) return 0;
  bce_k<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(backward, x, y, w, pw, g, k, o0, o1, o2, o3, n);
  return last();
}

extern "C" int gpuk_cumprod_backward(void *stream, const double *x, const double *g, double *gx, int64_t outer,
                                     int64_t len, int64_t inner) {
  if (outer * inner <= 0 || len <= 0) return 0;
  cumprod_bw_k<<<blocks_for(outer * inner), kThreads, 0, (cudaStream_t)stream>>>(x, g, gx, outer, len, inner);
  return last();
}

extern "C" int gpuk_multinomial(void *stream, const double *w, double *cdf, long long *o, int64_t rows, int64_t k,
                                int64_t ns, int replacement, unsigned long long seed, unsigned long long first,
                                long long base) {
  if (rows <= 0 || k <= 0 || ns <= 0) return 0;
  multinomial_k<<<blocks_for(rows), kThreads, 0, (cudaStream_t)stream>>>(w, cdf, o, rows, k, ns, replacement, seed,
                                                                        first, base);
  return last();
}
