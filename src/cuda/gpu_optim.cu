// gpu_optim.cu - the fused steps of the other optimizers on the GPU
// (RMSProp, Adagrad, Adadelta, AdaMax, AdamWeightDecay, FTRL, ASGD, Rprop,
// Adam's amsgrad and nesterov forms, Lion): src/ops/optim_extra.c's
// per-element update, one thread per element of contiguous float32 or
// float64 tensors, in double. Lamb and LARS (which need the norms of the
// whole tensor first) are declined by the host. An absent state tensor
// (NULL) reads as 0 and is not written. Raw pointers only (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

template <typename T> __device__ __forceinline__ double ld(const T *p, int64_t i) { return p ? (double)p[i] : 0.0; }
template <typename T> __device__ __forceinline__ void st(T *p, int64_t i, double v) {
  if (p) p[i] = (T)v;
}
__device__ __forceinline__ double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

template <typename T>
__global__ void optim_k(gpuk_optim_args c, T *p0, const T *p1, T *p2, T *p3, T *p4, int64_t n) {
  const double lr = c.lr, wd = c.wd;
  const double *h = c.h;
  GRID_STRIDE(i, n) {
    double w = (double)p0[i], graw = (double)p1[i] * c.grad_scale;
    double g = graw + wd * w; // L2 decay, for the kinds that use it
    switch (c.kind) {
    case GPUK_OPTIM_RMSPROP: {
      double decay = h[0], ms = decay * ld(p2, i) + (1 - decay) * g * g, d = ms;
      st(p2, i, ms);
      if (c.flags & 1) {
        double mg = decay * ld(p4, i) + (1 - decay) * g;
        st(p4, i, mg);
        d = ms - mg * mg;
      }
      double mom = h[1] * ld(p3, i) + lr * g / sqrt(d + h[2]);
      st(p3, i, mom);
      p0[i] = (T)(w - mom);
      break;
    }
    case GPUK_OPTIM_ADAGRAD: {
      double a = ld(p2, i);
      if (c.flags & 1) {
        a += g * g;
        st(p2, i, a);
      }
      p0[i] = (T)(w - lr * g / sqrt(a));
      break;
    }
    case GPUK_OPTIM_ADADELTA: {
      double rho = h[0], eps = h[1];
      double a = rho * ld(p2, i) + (1 - rho) * g * g, au = ld(p3, i);
      double u = sqrt(au + eps) / sqrt(a + eps) * g;
      st(p2, i, a);
      st(p3, i, rho * au + (1 - rho) * u * u);
      p0[i] = (T)(w - lr * u);
      break;
    }
    case GPUK_OPTIM_ADAMAX: {
      double m = h[0] * ld(p2, i) + (1 - h[0]) * g, v = fmax(h[1] * ld(p3, i), fabs(g));
      st(p2, i, m);
      st(p3, i, v);
      p0[i] = (T)(w - lr / c.bc1 * m / (v + h[2]));
      break;
    }
    case GPUK_OPTIM_ADAMWD: {
      double m = h[0] * ld(p2, i) + (1 - h[0]) * graw;
      double v = h[1] * ld(p3, i) + (1 - h[1]) * graw * graw;
      st(p2, i, m);
      st(p3, i, v);
      p0[i] = (T)(w - lr * (m / (sqrt(v) + h[2]) + wd * w));
      break;
    }
    case GPUK_OPTIM_FTRL: {
      double l1 = h[0], l2 = h[1], lp = -h[2];
      double a0 = ld(p2, i), a = a0 + g * g;
      double lin = ld(p3, i) + g - (pow(a, lp) - pow(a0, lp)) / lr * w;
      st(p2, i, a);
      st(p3, i, lin);
      double q = pow(a, lp) / lr + 2 * l2;
      p0[i] = (T)(fabs(lin) > l1 ? (sgn(lin) * l1 - lin) / q : 0.0);
      break;
    }
    case GPUK_OPTIM_ASGD: {
      double nw = w * (1 - h[0] * c.eta) - c.eta * g;
      p0[i] = (T)nw;
      if (c.mu != 1) {
        double ax = ld(p2, i);
        st(p2, i, ax + (nw - ax) * c.mu);
      } else {
        st(p2, i, nw);
      }
      break;
    }
    case GPUK_OPTIM_RPROP: {
      double prev = ld(p2, i), ss = c.step == 1 ? lr : ld(p3, i), s = g * prev;
      if (s > 0) {
        ss = fmin(ss * h[1], h[3]);
      } else if (s < 0) {
        ss = fmax(ss * h[0], h[2]);
        g = 0;
      } else {
        ss = fmin(fmax(ss, h[2]), h[3]);
      }
      st(p3, i, ss);
      st(p2, i, g);
      p0[i] = (T)(w - sgn(g) * ss);
      break;
    }
    case GPUK_OPTIM_AMSGRAD:
    case GPUK_OPTIM_NESTEROV: {
      double b1 = h[0], b2 = h[1];
      if (c.flags & 2) {
        g = graw;
        w *= 1 - lr * wd;
      }
      double m = b1 * ld(p2, i) + (1 - b1) * g, v = b2 * ld(p3, i) + (1 - b2) * g * g;
      st(p2, i, m);
      st(p3, i, v);
      double num = m, den = v;
      if (c.kind == GPUK_OPTIM_AMSGRAD) {
        den = fmax(ld(p4, i), v);
        st(p4, i, den);
      } else {
        num = b1 * m + (1 - b1) * g;
      }
      p0[i] = (T)(w - lr / c.bc1 * num / (sqrt(den) / c.bc2s + h[2]));
      break;
    }
    case GPUK_OPTIM_LION: {
      double m = ld(p2, i), cc = h[0] * m + (1 - h[0]) * graw;
      p0[i] = (T)(w * (1 - lr * wd) - lr * sgn(cc));
      st(p2, i, h[1] * m + (1 - h[1]) * graw);
      break;
    }
    default: break;
    }
  }
}

} // namespace

extern "C" int gpuk_optim(void *stream, int dt, gpuk_optim_args c, void *p, const void *g, void *s0, void *s1, void *s2,
                          int64_t n) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == GPUK_F64)
    optim_k<double><<<blocks_for(n), kThreads, 0, s>>>(c, (double *)p, (const double *)g, (double *)s0, (double *)s1,
                                                       (double *)s2, n);
  else
    optim_k<float><<<blocks_for(n), kThreads, 0, s>>>(c, (float *)p, (const float *)g, (float *)s0, (float *)s1,
                                                      (float *)s2, n);
  return last();
}
