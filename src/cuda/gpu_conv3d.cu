// gpu_conv3d.cu - conv3d as direct CUDA kernels (no cuDNN: they take the
// engine's asymmetric padding as it is): the forward (one thread per
// output element), the input gradient (one thread per input element,
// gathering the outputs whose window covers it: no atomics) and the weight
// gradient (one thread per weight element, summing over the samples and
// output positions). The transposed convolution is the adjoint: its
// forward is the input gradient, its input gradient the forward, its
// weight gradient the weight gradient with the roles of input and output
// gradient swapped (gpu_conv3d.c). T float or double, accumulated in T as
// the CPU's gemm does. Raw pointers and counts only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"

namespace {

// y (n, o, od, oh, ow) = x (n, c, d, h, w) * w (o, c / groups, kd, kh, kw) + b.
template <typename T> __global__ void c3_fwd_k(gpuk_c3_geom G, const T *x, const T *w, const T *b, T *y, int64_t n) {
  int64_t cpg = G.c / G.groups, opg = G.o / G.groups;
  GRID_STRIDE(e, n) {
    int64_t ox = e % G.ow, oy = (e / G.ow) % G.oh, oz = (e / (G.ow * G.oh)) % G.od;
    int64_t o = (e / (G.ow * G.oh * G.od)) % G.o, s = e / (G.ow * G.oh * G.od * G.o);
    int64_t grp = o / opg;
    T acc = 0;
    for (int64_t ci = 0; ci < cpg; ci++) {
      const T *xp = x + (s * G.c + grp * cpg + ci) * G.d * G.h * G.w;
      const T *wp = w + (o * cpg + ci) * G.kd * G.kh * G.kw;
      for (int64_t a = 0; a < G.kd; a++) {
        int64_t iz = oz * G.s[0] - G.pd[0] + a * G.dl[0];
        if (iz < 0 || iz >= G.d) continue;
        for (int64_t i = 0; i < G.kh; i++) {
          int64_t iy = oy * G.s[1] - G.pd[2] + i * G.dl[1];
          if (iy < 0 || iy >= G.h) continue;
          for (int64_t j = 0; j < G.kw; j++) {
            int64_t ix = ox * G.s[2] - G.pd[4] + j * G.dl[2];
            if (ix < 0 || ix >= G.w) continue;
            acc += wp[(a * G.kh + i) * G.kw + j] * xp[(iz * G.h + iy) * G.w + ix];
          }
        }
      }
    }
    y[e] = b ? acc + b[o] : acc;
  }
}

// One output index along a dimension for input position p and tap k:
// (p + pad - k dl) / s when that divides and lies in [0, out), else -1.
__device__ __forceinline__ int64_t tap_out(int64_t p, int64_t pad, int64_t k, int64_t dl, int64_t s, int64_t out) {
  int64_t t = p + pad - k * dl;
  if (t < 0 || t % s) return -1;
  t /= s;
  return t < out ? t : -1;
}

// gx (n, c, d, h, w) = the adjoint of the forward applied to gy (+ b per c).
template <typename T>
__global__ void c3_bwd_data_k(gpuk_c3_geom G, const T *gy, const T *w, const T *b, T *gx, int64_t n) {
  int64_t cpg = G.c / G.groups, opg = G.o / G.groups;
  GRID_STRIDE(e, n) {
    int64_t px = e % G.w, py = (e / G.w) % G.h, pz = (e / (G.w * G.h)) % G.d;
    int64_t c = (e / (G.w * G.h * G.d)) % G.c, s = e / (G.w * G.h * G.d * G.c);
    int64_t grp = c / cpg, ci = c % cpg;
    T acc = 0;
    for (int64_t oo = 0; oo < opg; oo++) {
      int64_t o = grp * opg + oo;
      const T *gp = gy + (s * G.o + o) * G.od * G.oh * G.ow;
      const T *wp = w + (o * cpg + ci) * G.kd * G.kh * G.kw;
      for (int64_t a = 0; a < G.kd; a++) {
        int64_t oz = tap_out(pz, G.pd[0], a, G.dl[0], G.s[0], G.od);
        if (oz < 0) continue;
        for (int64_t i = 0; i < G.kh; i++) {
          int64_t oy = tap_out(py, G.pd[2], i, G.dl[1], G.s[1], G.oh);
          if (oy < 0) continue;
          for (int64_t j = 0; j < G.kw; j++) {
            int64_t ox = tap_out(px, G.pd[4], j, G.dl[2], G.s[2], G.ow);
            if (ox < 0) continue;
            acc += wp[(a * G.kh + i) * G.kw + j] * gp[(oz * G.oh + oy) * G.ow + ox];
          }
        }
      }
    }
    gx[e] = b ? acc + b[c] : acc;
  }
}

// gw (o, c / groups, kd, kh, kw) = sum over samples and outputs of gy x.
template <typename T> __global__ void c3_bwd_w_k(gpuk_c3_geom G, const T *gy, const T *x, T *gw, int64_t n) {
  int64_t cpg = G.c / G.groups, opg = G.o / G.groups;
  GRID_STRIDE(e, n) {
    int64_t j = e % G.kw, i = (e / G.kw) % G.kh, a = (e / (G.kw * G.kh)) % G.kd;
    int64_t ci = (e / (G.kw * G.kh * G.kd)) % cpg, o = e / (G.kw * G.kh * G.kd * cpg);
    int64_t c = (o / opg) * cpg + ci;
    T acc = 0;
    for (int64_t s = 0; s < G.n; s++) {
      const T *gp = gy + (s * G.o + o) * G.od * G.oh * G.ow;
      const T *xp = x + (s * G.c + c) * G.d * G.h * G.w;
      for (int64_t oz = 0; oz < G.od; oz++) {
        int64_t iz = oz * G.s[0] - G.pd[0] + a * G.dl[0];
        if (iz < 0 || iz >= G.d) continue;
        for (int64_t oy = 0; oy < G.oh; oy++) {
          int64_t iy = oy * G.s[1] - G.pd[2] + i * G.dl[1];
          if (iy < 0 || iy >= G.h) continue;
          for (int64_t ox = 0; ox < G.ow; ox++) {
            int64_t ix = ox * G.s[2] - G.pd[4] + j * G.dl[2];
            if (ix < 0 || ix >= G.w) continue;
            acc += gp[(oz * G.oh + oy) * G.ow + ox] * xp[(iz * G.h + iy) * G.w + ix];
          }
        }
      }
    }
    gw[e] = acc;
  }
}

template <typename T>
int c3_as(cudaStream_t st, int which, gpuk_c3_geom G, const void *p0, const void *p1, const void *b, void *out) {
  int64_t n;
  switch (which) {
  case GPUK_C3_FWD:
    n = G.n * G.o * G.od * G.oh * G.ow;
    if (n > 0)
      c3_fwd_k<T><<<blocks_for(n), kThreads, 0, st>>>(G, (const T *)p0, (const T *)p1, (const T *)b, (T *)out, n);
    break;
  case GPUK_C3_DATA:
    n = G.n * G.c * G.d * G.h * G.w;
    if (n > 0)
      c3_bwd_data_k<T><<<blocks_for(n), kThreads, 0, st>>>(G, (const T *)p0, (const T *)p1, (const T *)b, (T *)out, n);
    break;
  default:
    n = G.o * (G.c / G.groups) * G.kd * G.kh * G.kw;
    if (n > 0) c3_bwd_w_k<T><<<blocks_for(n), kThreads, 0, st>>>(G, (const T *)p0, (const T *)p1, (T *)out, n);
    break;
  }
  return last();
}

} // namespace

extern "C" int gpuk_conv3d(void *stream, int dt, int which, gpuk_c3_geom G, const void *p0, const void *p1,
                           const void *b, void *out) {
  cudaStream_t st = (cudaStream_t)stream;
  return dt == GPUK_F64 ? c3_as<double>(st, which, G, p0, p1, b, out) : c3_as<float>(st, which, G, p0, p1, b, out);
}
