// gpu_fold.cu - unfold (im2col: out (n, c kh kw, oh ow), row (ci kh + ki)
// kw + kj, column oy ow + ox, zero outside the padded input) and fold
// (col2im: each output pixel gathers the columns that cover it, in the
// order ki, kj, as src/ops/conv.c's col2im adds them; no atomics). One
// thread per output element, T float or double. Raw pointers and counts
// only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"

namespace {

template <typename T> __global__ void unfold_k(gpuk_fold_geom G, const T *x, T *out, int64_t n) {
  int64_t L = G.oh * G.ow, rows = G.c * G.kh * G.kw;
  GRID_STRIDE(e, n) {
    int64_t l = e % L, row = (e / L) % rows, b = e / (L * rows);
    int64_t kj = row % G.kw, ki = (row / G.kw) % G.kh, ci = row / (G.kw * G.kh);
    int64_t oy = l / G.ow, ox = l % G.ow;
    int64_t iy = oy * G.sh - G.pt + ki * G.dh, ix = ox * G.sw - G.pl + kj * G.dw;
    out[e] = iy >= 0 && iy < G.h && ix >= 0 && ix < G.w ? x[((b * G.c + ci) * G.h + iy) * G.w + ix] : (T)0;
  }
}

template <typename T> __global__ void fold_k(gpuk_fold_geom G, const T *x, T *out, int64_t n) {
  int64_t L = G.oh * G.ow, rows = G.c * G.kh * G.kw;
  GRID_STRIDE(e, n) {
    int64_t px = e % G.w, py = (e / G.w) % G.h, ci = (e / (G.w * G.h)) % G.c, b = e / (G.w * G.h * G.c);
    T acc = 0;
    for (int64_t ki = 0; ki < G.kh; ki++) {
      int64_t ty = py + G.pt - ki * G.dh;
      if (ty < 0 || ty % G.sh) continue;
      int64_t oy = ty / G.sh;
      if (oy >= G.oh) continue;
      for (int64_t kj = 0; kj < G.kw; kj++) {
        int64_t tx = px + G.pl - kj * G.dw;
        if (tx < 0 || tx % G.sw) continue;
        int64_t ox = tx / G.sw;
        if (ox >= G.ow) continue;
        acc += x[(b * rows + (ci * G.kh + ki) * G.kw + kj) * L + oy * G.ow + ox];
      }
    }
    out[e] = acc;
  }
}

} // namespace

extern "C" int gpuk_fold(void *stream, int dt, int fold, gpuk_fold_geom G, const void *x, void *out) {
  int64_t n = fold ? G.n * G.c * G.h * G.w : G.n * G.c * G.kh * G.kw * G.oh * G.ow;
  if (n <= 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == GPUK_F64) {
    if (fold) fold_k<double><<<blocks_for(n), kThreads, 0, st>>>(G, (const double *)x, (double *)out, n);
    else unfold_k<double><<<blocks_for(n), kThreads, 0, st>>>(G, (const double *)x, (double *)out, n);
  } else {
    if (fold) fold_k<float><<<blocks_for(n), kThreads, 0, st>>>(G, (const float *)x, (float *)out, n);
    else unfold_k<float><<<blocks_for(n), kThreads, 0, st>>>(G, (const float *)x, (float *)out, n);
  }
  return last();
}
