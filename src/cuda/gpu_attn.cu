// gpu_attn.cu - the GPU module's scaled dot-product attention (no mask
// tensor, no dropout; causal or not): the scores of each batch-head's rows
// into a float64 workspace, a softmax per row (its log-sum-exp saved), the
// output; the backward recomputes the probabilities from the saved
// log-sum-exp. One thread per output element, sums in double, in the
// order of the CPU's formulas (src/ops/attention.c). Raw pointers only.
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

// scale q_r . k_j of row r = (h, i) and key j; -inf where causal masks it.
template <typename T>
__device__ double score(const T *q, const T *k, int64_t h, int64_t i, int64_t j, int64_t L, int64_t S, int64_t E,
                        double scale, int causal) {
  if (causal && j > i) return -INFINITY;
  const T *qr = q + (h * L + i) * E, *kr = k + (h * S + j) * E;
  double s = 0;
  for (int64_t e = 0; e < E; e++) s += (double)qr[e] * (double)kr[e];
  return scale * s;
}

template <typename T>
__global__ void scores_k(const T *q, const T *k, double *P, int64_t H, int64_t L, int64_t S, int64_t E, double scale,
                         int causal) {
  GRID_STRIDE(x, H * L * S) {
    int64_t r = x / S, j = x - r * S;
    P[x] = score(q, k, r / L, r % L, j, L, S, E, scale, causal);
  }
}

// One block per row: P = exp(s - lse), lse = log sum exp(s).
__global__ void row_softmax_k(double *P, double *lse, int64_t rows, int64_t S) {
  __shared__ double sh[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double *p = P + r * S, m = -INFINITY;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) m = fmax(m, p[j]);
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + s]);
      __syncthreads();
    }
    m = sh[0];
    __syncthreads();
    double l = 0;
    if (m != -INFINITY)
      for (int64_t j = threadIdx.x; j < S; j += blockDim.x) l += exp(p[j] - m);
    sh[threadIdx.x] = l;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
      __syncthreads();
    }
    l = sh[0];
    __syncthreads();
    double ls = m + log(l); // every key masked: -inf, and the row's weights NaN (the CPU's)
    if (threadIdx.x == 0) lse[r] = ls;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) p[j] = exp(p[j] - ls);
  }
}

// out[r, c] = sum_j P[r, j] v[h, j, c].
template <typename T>
__global__ void out_k(const double *P, const T *v, T *out, int64_t H, int64_t L, int64_t S, int64_t Ev) {
  GRID_STRIDE(x, H * L * Ev) {
    int64_t r = x / Ev, c = x - r * Ev, h = r / L;
    const double *p = P + r * S;
    const T *vh = v + h * S * Ev + c;
    double s = 0;
    for (int64_t j = 0; j < S; j++) s += p[j] * (double)vh[j * Ev];
    out[x] = (T)s;
  }
}

// D[r] = sum_c g[r, c] o[r, c].
template <typename T> __global__ void rowdot_k(const T *g, const T *o, double *D, int64_t rows, int64_t Ev) {
  GRID_STRIDE(r, rows) {
    double s = 0;
    for (int64_t c = 0; c < Ev; c++) s += (double)g[r * Ev + c] * (double)o[r * Ev + c];
    D[r] = s;
  }
}

// P[r, j] (recomputed) and dS[r, j] = P (g_r . v_j - D[r]).
template <typename T>
__global__ void ds_k(const T *q, const T *k, const T *v, const T *g, const double *lse, const double *D, double *P,
                     double *dS, int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev, double scale, int causal) {
  GRID_STRIDE(x, H * L * S) {
    int64_t r = x / S, j = x - r * S, h = r / L, i = r % L;
    double s = score(q, k, h, i, j, L, S, E, scale, causal);
    double p = s == -INFINITY ? 0.0 : exp(s - lse[r]);
    const T *gr = g + r * Ev, *vj = v + (h * S + j) * Ev;
    double dp = 0;
    for (int64_t c = 0; c < Ev; c++) dp += (double)gr[c] * (double)vj[c];
    P[x] = p;
    dS[x] = p * (dp - D[r]);
  }
}

// gq[r, e] = scale sum_j dS[r, j] k[h, j, e].
template <typename T>
__global__ void dq_k(const double *dS, const T *k, T *gq, int64_t H, int64_t L, int64_t S, int64_t E, double scale) {
  GRID_STRIDE(x, H * L * E) {
    int64_t r = x / E, e = x - r * E, h = r / L;
    const double *d = dS + r * S;
    const T *kh = k + h * S * E + e;
    double s = 0;
    for (int64_t j = 0; j < S; j++) s += d[j] * (double)kh[j * E];
    gq[x] = (T)(scale * s);
  }
}

// gk[h, j, e] = scale sum_i dS[h, i, j] q[h, i, e]; gv[h, j, c] = sum_i P[h, i, j] g[h, i, c].
template <typename T>
__global__ void dkv_k(const double *W, const T *a, T *out, int64_t H, int64_t L, int64_t S, int64_t D, double scale) {
  GRID_STRIDE(x, H * S * D) {
    int64_t hj = x / D, e = x - hj * D, h = hj / S, j = hj - h * S;
    const double *w = W + h * L * S + j;
    const T *ah = a + h * L * D + e;
    double s = 0;
    for (int64_t i = 0; i < L; i++) s += w[i * S] * (double)ah[i * D];
    out[x] = (T)(scale * s);
  }
}

} // namespace

#define ON(s) 0, (cudaStream_t)(s)
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

extern "C" int gpuk_sdpa(void *stream, int dt, const void *q, const void *k, const void *v, void *out, double *lse,
                         double *P, int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev, double scale, int causal) {
  int64_t rows = H * L;
  if (rows <= 0) return 0;
  if (S > 0) BY_DTYPE(dt, scores_k, blocks_for(rows * S), stream, (const T *)q, (const T *)k, P, H, L, S, E, scale, causal);
  row_softmax_k<<<grid_of(rows), kThreads, ON(stream)>>>(P, lse, rows, S);
  if (Ev > 0) BY_DTYPE(dt, out_k, blocks_for(rows * Ev), stream, (const double *)P, (const T *)v, (T *)out, H, L, S, Ev);
  return last();
}

extern "C" int gpuk_sdpa_backward(void *stream, int dt, const void *g, const void *q, const void *k, const void *v,
                                  const void *o, const double *lse, double *D, double *P, double *dS, void *gq,
                                  void *gk, void *gv, int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev,
                                  double scale, int causal) {
  int64_t rows = H * L;
  if (rows > 0) BY_DTYPE(dt, rowdot_k, blocks_for(rows), stream, (const T *)g, (const T *)o, D, rows, Ev);
  if (rows * S > 0)
    BY_DTYPE(dt, ds_k, blocks_for(rows * S), stream, (const T *)q, (const T *)k, (const T *)v, (const T *)g, lse,
             (const double *)D, P, dS, H, L, S, E, Ev, scale, causal);
  if (gq && rows * E > 0)
    BY_DTYPE(dt, dq_k, blocks_for(rows * E), stream, (const double *)dS, (const T *)k, (T *)gq, H, L, S, E, scale);
  if (gk && H * S * E > 0)
    BY_DTYPE(dt, dkv_k, blocks_for(H * S * E), stream, (const double *)dS, (const T *)q, (T *)gk, H, L, S, E, scale);
  if (gv && H * S * Ev > 0)
    BY_DTYPE(dt, dkv_k, blocks_for(H * S * Ev), stream, (const double *)P, (const T *)g, (T *)gv, H, L, S, Ev, 1.0);
  return last();
}
