// gpu_ctc.cu - the CTC loss's forward-backward in log space, one thread
// per sample (src/ops/ctc.c's recursions, in double): alpha and beta over
// the sample's extended label sequence in its own scratch, then the
// gradient of the log-probabilities (-the posterior of each class) and
// the sample's negative log-likelihood. Raw pointers and counts only
// (gpu_kern.h).
#include "gpu_kern.h"
#include <cuda_runtime.h>
#include "gpu_grid.cuh"
#include <math.h>

namespace {

__device__ __forceinline__ double lse2(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  double m = a > b ? a : b;
  return m + log1p(exp(-fabs(a - b)));
}

__global__ void ctc_k(gpuk_ctc_args A, const double *lp, const long long *tg, const long long *il, const long long *tl,
                      const long long *toff, double *alpha, double *beta, double *gs, double *gall, double *lv) {
  const int64_t T = A.T, N = A.N, C = A.C, SP = A.SP, blank = A.blank;
  GRID_STRIDE(n, N) {
    const int64_t Tn = il[n], Ln = tl[n], Sn = 2 * Ln + 1;
    const long long *t0 = tg + toff[n];
    double *al = alpha + n * T * SP, *be = beta + n * T * SP, *g = gs + n * C;
#define LP(t, c) lp[((t) * N + n) * C + (c)]
#define LAB(sx) ((sx) % 2 == 0 ? blank : t0[(sx) / 2])
#define AL(t, sx) al[(t) * SP + (sx)]
#define BE(t, sx) be[(t) * SP + (sx)]
    double nll;
    if (Tn == 0) {
      nll = Ln == 0 ? 0.0 : INFINITY;
    } else {
      for (int64_t sx = 0; sx < Sn; sx++) AL(0, sx) = -INFINITY;
      AL(0, 0) = LP(0, blank);
      if (Sn > 1) AL(0, 1) = LP(0, LAB(1));
      for (int64_t t = 1; t < Tn; t++)
        for (int64_t sx = 0; sx < Sn; sx++) {
          int64_t l = LAB(sx);
          double a = AL(t - 1, sx);
          if (sx > 0) a = lse2(a, AL(t - 1, sx - 1));
          if (sx > 1 && l != blank && l != LAB(sx - 2)) a = lse2(a, AL(t - 1, sx - 2));
          AL(t, sx) = a == -INFINITY ? a : a + LP(t, l);
        }
      double ll = AL(Tn - 1, Sn - 1);
      if (Sn > 1) ll = lse2(ll, AL(Tn - 1, Sn - 2));
      nll = -ll;
      for (int64_t sx = 0; sx < Sn; sx++) BE(Tn - 1, sx) = -INFINITY;
      BE(Tn - 1, Sn - 1) = LP(Tn - 1, blank);
      if (Sn > 1) BE(Tn - 1, Sn - 2) = LP(Tn - 1, LAB(Sn - 2));
      for (int64_t t = Tn - 2; t >= 0; t--)
        for (int64_t sx = 0; sx < Sn; sx++) {
          int64_t l = LAB(sx);
          double a = BE(t + 1, sx);
          if (sx < Sn - 1) a = lse2(a, BE(t + 1, sx + 1));
          if (sx < Sn - 2 && l != blank && l != LAB(sx + 2)) a = lse2(a, BE(t + 1, sx + 2));
          BE(t, sx) = a == -INFINITY ? a : a + LP(t, l);
        }
      if (!(isinf(nll) && A.zero_infinity))
        for (int64_t t = 0; t < Tn; t++) {
          for (int64_t c = 0; c < C; c++) g[c] = -INFINITY;
          for (int64_t sx = 0; sx < Sn; sx++) {
            int64_t l = LAB(sx);
            g[l] = lse2(g[l], AL(t, sx) + BE(t, sx));
          }
          for (int64_t c = 0; c < C; c++) gall[(t * N + n) * C + c] = -exp(g[c] + nll - LP(t, c));
        }
    }
    if (isinf(nll) && A.zero_infinity) nll = 0.0;
    lv[n] = nll;
#undef LP
#undef LAB
#undef AL
#undef BE
  }
}

} // namespace

extern "C" int gpuk_ctc(void *stream, gpuk_ctc_args A, const double *lp, const long long *tg, const long long *il,
                        const long long *tl, const long long *toff, double *alpha, double *beta, double *g,
                        double *gall, double *lv) {
  if (A.N <= 0) return 0;
  ctc_k<<<blocks_for(A.N), kThreads, 0, (cudaStream_t)stream>>>(A, lp, tg, il, tl, toff, alpha, beta, g, gall, lv);
  return last();
}
