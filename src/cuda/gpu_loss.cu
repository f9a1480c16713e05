// gpu_loss.cu - the class-dim losses on the GPU: cross-entropy (class ids
// or probabilities, class weights, ignore_index, label smoothing) and
// nll_loss, forward and backward, with src/ops/loss.c's formulas. Logits
// are {n, c, inner}: row r has c elements inner apart, starting at
// ((r / inner) * c) * inner + r % inner. Rows are reduced by one block
// each in double; the per-row results go to a float64 vector that the
// caller sums (gpuk_reduce) or casts (gpuk_scale_cast).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

__device__ double block_reduce(double v, double *sh, int is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s)
      sh[threadIdx.x] = is_max ? fmax(sh[threadIdx.x], sh[threadIdx.x + s]) : sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}

__device__ __forceinline__ int64_t row_base(int64_t r, int64_t c, int64_t inner) {
  return (r / inner) * c * inner + r % inner;
}

// The row's log-sum-exp (all threads of the block get it).
template <typename T> __device__ double row_lse(const T *x, int64_t c, int64_t inner, double *sh) {
  double m = -INFINITY;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) m = fmax(m, (double)x[i * inner]);
  m = block_reduce(m, sh, 1);
  double mm = m == -INFINITY ? 0 : m, s = 0;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x) s += exp((double)x[i * inner] - mm);
  s = block_reduce(s, sh, 0);
  return mm + log(s);
}

// Class ids: cls[r] 0-based, -1 ignored; wrow[r] the row's weight (0 when
// ignored); *bad = 1 + the first row out of range.
__global__ void classes_k(const long long *t, long long *cls, double *wrow, const double *w, int64_t rows,
                          int64_t c, int has_ignore, long long ignore, long long base, unsigned long long *bad) {
  GRID_STRIDE(r, rows) {
    long long raw = t[r];
    if (has_ignore && raw == ignore) {
      cls[r] = -1;
      wrow[r] = 0;
    } else if (raw < base || raw - base >= c) {
      atomicMin(bad, (unsigned long long)r + 1);
      cls[r] = -1;
      wrow[r] = 0;
    } else {
      cls[r] = raw - base;
      wrow[r] = w ? w[raw - base] : 1.0;
    }
  }
}

// Cross-entropy forward: lse[r] and the row's loss v[r].
template <typename T, typename U>
__global__ void ce_fwd_k(const T *x, const long long *cls, const U *probs, const double *w, const double *wsum,
                         double *lse, double *v, int64_t rows, int64_t c, int64_t inner, double ls) {
  __shared__ double sh[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + row_base(r, c, inner);
    double l = row_lse(xr, c, inner, sh), u = ls / (double)c, out;
    if (probs) {
      const U *tr = probs + row_base(r, c, inner);
      double a = 0, b = 0;
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
        double q = ((1 - ls) * (double)tr[i * inner] + u) * (w ? w[i] : 1.0);
        a += q * (double)xr[i * inner];
        b += q;
      }
      a = block_reduce(a, sh, 0);
      b = block_reduce(b, sh, 0);
      out = -(a - l * b);
    } else {
      long long y = cls[r];
      double wx = 0;
      if (ls > 0 && y >= 0) {
        for (int64_t i = threadIdx.x; i < c; i += blockDim.x) wx += (w ? w[i] : 1.0) * (double)xr[i * inner];
        wx = block_reduce(wx, sh, 0);
      }
      if (y < 0) {
        out = 0;
      } else {
        double nll = -(w ? w[y] : 1.0) * ((double)xr[y * inner] - l);
        out = (1 - ls) * nll + (ls > 0 ? u * -(wx - l * *wsum) : 0.0);
      }
    }
    if (threadIdx.x == 0) {
      lse[r] = l;
      v[r] = out;
    }
  }
}

// The gradient's scale for row r: g per row, or the one gradient times k.
__device__ __forceinline__ double scale_of(const double *g, int per_row, double k, int64_t r) {
  return per_row ? g[r] : g[0] * k;
}

template <typename T, typename U>
__global__ void ce_bwd_k(const T *x, const long long *cls, const U *probs, const double *w, const double *wsum,
                         const double *lse, const double *g, int per_row, double kscale, T *gx, U *gt, int64_t rows,
                         int64_t c, int64_t inner, double ls) {
  __shared__ double sh[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t off = row_base(r, c, inner);
    const T *xr = x + off;
    double k = scale_of(g, per_row, kscale, r), l = lse[r], u = ls / (double)c;
    if (probs) {
      const U *tr = probs + off;
      double wt = 0;
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        wt += ((1 - ls) * (double)tr[i * inner] + u) * (w ? w[i] : 1.0);
      wt = block_reduce(wt, sh, 0);
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
        double xv = (double)xr[i * inner], wi = w ? w[i] : 1.0, p = exp(xv - l);
        double q = ((1 - ls) * (double)tr[i * inner] + u) * wi;
        if (gx) gx[off + i * inner] = (T)(-k * (q - p * wt));
        if (gt) gt[off + i * inner] = (U)(-k * (1 - ls) * wi * (xv - l));
      }
    } else {
      long long y = cls[r];
      double wy = y >= 0 ? (w ? w[y] : 1.0) : 0.0, ws = *wsum;
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
        double res = 0;
        if (y >= 0) {
          double p = exp((double)xr[i * inner] - l), hit = i == y ? 1.0 : 0.0;
          res = -k * ((1 - ls) * wy * (hit - p) + u * ((w ? w[i] : 1.0) - p * ws));
        }
        if (gx) gx[off + i * inner] = (T)res;
      }
    }
  }
}

template <typename T>
__global__ void nll_fwd_k(const T *x, const long long *cls, const double *w, double *v, int64_t rows, int64_t c,
                          int64_t inner) {
  GRID_STRIDE(r, rows) {
    long long y = cls[r];
    v[r] = y < 0 ? 0.0 : -(w ? w[y] : 1.0) * (double)x[row_base(r, c, inner) + y * inner];
  }
}

// gx (zeroed by the caller) at each row's class: -w[y] times the scale.
template <typename T>
__global__ void nll_bwd_k(const long long *cls, const double *w, const double *g, int per_row, double kscale, T *gx,
                          int64_t rows, int64_t c, int64_t inner) {
  GRID_STRIDE(r, rows) {
    long long y = cls[r];
    if (y >= 0) gx[row_base(r, c, inner) + y * inner] = (T)(-(w ? w[y] : 1.0) * scale_of(g, per_row, kscale, r));
  }
}

template <typename T> __global__ void scale_cast_k(const double *in, T *out, int64_t n, double k) {
  GRID_STRIDE(i, n) out[i] = (T)(in[i] * k);
}

} // namespace

#define ON(s) 0, (cudaStream_t)(s)

extern "C" int gpuk_ce_classes(void *stream, const long long *target, long long *cls, double *wrow, const double *w,
                               int64_t rows, int64_t c, int has_ignore, long long ignore, long long base,
                               unsigned long long *bad) {
  if (rows <= 0) return 0;
  classes_k<<<blocks_for(rows), kThreads, ON(stream)>>>(target, cls, wrow, w, rows, c, has_ignore, ignore, base, bad);
  return last();
}

#define PROBS_SWITCH(tdt, CALL)                                                              \
  do {                                                                                       \
    if (tdt == GPUK_F64) { typedef double U; CALL; } else { typedef float U; CALL; }         \
  } while (0)

extern "C" int gpuk_ce_forward(void *stream, int dt, int tdt, const void *x, const long long *cls, const void *probs,
                               const double *w, const double *wsum, double *lse, double *v, int64_t rows, int64_t c,
                               int64_t inner, double ls) {
  if (rows <= 0) return 0;
  if (dt == GPUK_F64) {
    typedef double T;
    PROBS_SWITCH(tdt, (ce_fwd_k<T, U><<<grid_of(rows), kThreads, ON(stream)>>>((const T *)x, cls, (const U *)probs, w, wsum, lse, v, rows, c, inner, ls)));
  } else {
    typedef float T;
    PROBS_SWITCH(tdt, (ce_fwd_k<T, U><<<grid_of(rows), kThreads, ON(stream)>>>((const T *)x, cls, (const U *)probs, w, wsum, lse, v, rows, c, inner, ls)));
  }
  return last();
}

extern "C" int gpuk_ce_backward(void *stream, int dt, int tdt, const void *x, const long long *cls, const void *probs,
                                const double *w, const double *wsum, const double *lse, const double *g, int per_row,
                                double kscale, void *gx, void *gt, int64_t rows, int64_t c, int64_t inner, double ls) {
  if (rows <= 0) return 0;
  if (dt == GPUK_F64) {
    typedef double T;
    PROBS_SWITCH(tdt, (ce_bwd_k<T, U><<<grid_of(rows), kThreads, ON(stream)>>>((const T *)x, cls, (const U *)probs, w, wsum, lse, g, per_row, kscale, (T *)gx, (U *)gt, rows, c, inner, ls)));
  } else {
    typedef float T;
    PROBS_SWITCH(tdt, (ce_bwd_k<T, U><<<grid_of(rows), kThreads, ON(stream)>>>((const T *)x, cls, (const U *)probs, w, wsum, lse, g, per_row, kscale, (T *)gx, (U *)gt, rows, c, inner, ls)));
  }
  return last();
}

extern "C" int gpuk_nll_forward(void *stream, int dt, const void *x, const long long *cls, const double *w, double *v,
                                int64_t rows, int64_t c, int64_t inner) {
  if (rows <= 0) return 0;
  if (dt == GPUK_F64)
    nll_fwd_k<double><<<blocks_for(rows), kThreads, ON(stream)>>>((const double *)x, cls, w, v, rows, c, inner);
  else
    nll_fwd_k<float><<<blocks_for(rows), kThreads, ON(stream)>>>((const float *)x, cls, w, v, rows, c, inner);
  return last();
}

extern "C" int gpuk_nll_backward(void *stream, int dt, const long long *cls, const double *w, const double *g,
                                 int per_row, double kscale, void *gx, int64_t rows, int64_t c, int64_t inner) {
  if (rows <= 0) return 0;
  if (dt == GPUK_F64)
    nll_bwd_k<double><<<blocks_for(rows), kThreads, ON(stream)>>>(cls, w, g, per_row, kscale, (double *)gx, rows, c, inner);
  else
    nll_bwd_k<float><<<blocks_for(rows), kThreads, ON(stream)>>>(cls, w, g, per_row, kscale, (float *)gx, rows, c, inner);
  return last();
}

extern "C" int gpuk_scale_cast(void *stream, const double *in, int odt, void *out, int64_t n, double k) {
  if (n <= 0) return 0;
  if (odt == GPUK_F64)
    scale_cast_k<double><<<blocks_for(n), kThreads, ON(stream)>>>(in, (double *)out, n, k);
  else
    scale_cast_k<float><<<blocks_for(n), kThreads, ON(stream)>>>(in, (float *)out, n, k);
  return last();
}
