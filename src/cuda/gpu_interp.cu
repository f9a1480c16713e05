// gpu_interp.cu - interpolate's kernels: each output (plane, i, j) is the
// weighted sum over the K x K window of the two axes' tables (positions
// and weights made on the host by gpu_interp.c, as src/ops/interpolate.c
// makes them: K = 1 nearest, 2 linear, 4 cubic), computed in T (float for
// float32, double for float64) in the CPU's order: each row's taps first,
// then the rows. The backward adds each output gradient back to its window
// with atomicAdd into a zeroed gx. Raw pointers and counts only
// (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"

namespace {

template <typename T>
__global__ void interp_k(gpuk_interp A, const long long *hi, const double *hw, const long long *wi, const double *ww,
                         const T *x, T *y, int64_t n) {
  GRID_STRIDE(e, n) {
    int64_t j = e % A.ow, i = (e / A.ow) % A.oh, q = e / (A.ow * A.oh);
    const T *xp = x + q * A.h * A.w;
    T acc = 0;
    for (int a = 0; a < A.kh; a++) {
      const T *xr = xp + hi[i * A.kh + a] * A.w;
      T row = 0;
      for (int b = 0; b < A.kw; b++) row += (T)ww[j * A.kw + b] * xr[wi[j * A.kw + b]];
      acc += (T)hw[i * A.kh + a] * row;
    }
    y[e] = acc;
  }
}

template <typename T>
__global__ void interp_bwd_k(gpuk_interp A, const long long *hi, const double *hw, const long long *wi,
                             const double *ww, const T *g, T *gx, int64_t n) {
  GRID_STRIDE(e, n) {
    int64_t j = e % A.ow, i = (e / A.ow) % A.oh, q = e / (A.ow * A.oh);
    T v = g[(q / A.chans) * A.gs[0] + (q % A.chans) * A.gs[1] + i * A.gs[2] + j * A.gs[3]];
    T *xp = gx + q * A.h * A.w;
    for (int a = 0; a < A.kh; a++)
      for (int b = 0; b < A.kw; b++)
        atomicAdd(xp + hi[i * A.kh + a] * A.w + wi[j * A.kw + b], (T)hw[i * A.kh + a] * (T)ww[j * A.kw + b] * v);
  }
}

} // namespace

extern "C" int gpuk_interpolate(void *stream, int dt, int backward, gpuk_interp A, const long long *hi,
                                const double *hw, const long long *wi, const double *ww, const void *in, void *out) {
  int64_t n = A.planes * A.oh * A.ow;
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == GPUK_F64) {
    if (backward)
      interp_bwd_k<double><<<blocks_for(n), kThreads, 0, st>>>(A, hi, hw, wi, ww, (const double *)in, (double *)out, n);
    else
      interp_k<double><<<blocks_for(n), kThreads, 0, st>>>(A, hi, hw, wi, ww, (const double *)in, (double *)out, n);
  } else {
    if (backward)
      interp_bwd_k<float><<<blocks_for(n), kThreads, 0, st>>>(A, hi, hw, wi, ww, (const float *)in, (float *)out, n);
    else
      interp_k<float><<<blocks_for(n), kThreads, 0, st>>>(A, hi, hw, wi, ww, (const float *)in, (float *)out, n);
  }
  return last();
}
