// emulate_kernels.cpp - cell.cuda's pooling, batch norm and attention
// kernels (src/cuda/gpu_cnn.cu, gpu_attn.cu) run on the host and compared
// with the CPU engine: tests/cuda/emulate_kernels.sh extracts each .cu
// file's device code (its anonymous namespace, renamed k_<file>) and this
// file compiles it with a one-thread emulation of CUDA's launch model (one
// block of one thread: grid-stride loops visit every element, a block
// reduction is the thread's own sum, atomics are plain updates). Each case
// runs a kernel in float64 and compares it with libcell's op and autograd
// (max / avg pooling forward and backward over padding, ceil_mode,
// dilation; batch norm forward, running-stats blend and backward, training
// and inference, 2-D to 5-D; attention forward and backward, causal or
// not). It checks index arithmetic and formulas without a GPU; races,
// launch bounds and float32 rounding need the GPU run (tests/gpu_check.sh).
#include <math.h>
#include <stdint.h>
#include <string.h>
struct EmuDim { unsigned x; };
static EmuDim threadIdx = {0}, blockIdx = {0}, blockDim = {1}, gridDim = {1};
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() ((void)0)
template <class T> static T atomicAdd(T *p, T v) { T o = *p; *p += v; return o; }
static unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; if (v < o) *p = v; return o; }
typedef int cudaError_t;
static int cudaGetLastError() { return 0; }
#include "gpu_kern.h"
#include "gpu_grid.cuh"
#include "gpu_cnn.inc"
#include "gpu_attn.inc"
#include <stdio.h>
#include <stdlib.h>
#include <vector>
extern "C" {
#include "cell.h"
}
static int fails = 0;
#define OK(call) do { cell_status s_ = (call); if (s_ != CELL_OK) { printf("engine error %s:%d: %s\n", __FILE__, __LINE__, cell_last_error()); exit(2);} } while (0)

static double *D(const cell_tensor *t) { return (double *)cell_tensor_data_ptr(t); }
static long long N(const cell_tensor *t) { return cell_tensor_numel(t); }
static cell_tensor *randn(std::vector<int64_t> s) { cell_tensor *t; OK(cell_tensor_randn(CELL_DTYPE_F64, (int)s.size(), s.data(), &t)); return t; }
static void cmp(const char *what, const double *a, const double *b, long long n, double tol) {
  double worst = 0; long long at = -1;
  for (long long i = 0; i < n; i++) {
    double d = fabs(a[i] - b[i]);
    if (std::isnan(a[i]) != std::isnan(b[i])) d = INFINITY;
    if (d > worst) { worst = d; at = i; }
  }
  int bad = !(worst <= tol);
  fails += bad;
  printf("%-4s %-60s max diff %.3g%s\n", bad ? "FAIL" : "ok", what, worst, bad ? "" : "");
  if (bad) printf("     at %lld: emu %.17g cpu %.17g\n", at, a[at], b[at]);
}

static void pool_case(const char *name, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pb, int64_t pl,
                      int64_t pr, int64_t dh, int64_t dw, int ceil) {
  int64_t n = 2, c = 3, h = 9, w = 11;
  cell_tensor *x = randn({n, c, h, w});
  OK(cell_tensor_set_requires_grad(x, 1));
  int64_t k[2] = {kh, kw}, s[2] = {sh, sw}, pd[4] = {pt, pb, pl, pr}, dl[2] = {dh, dw};
  cell_tensor *y, *idx;
  OK(cell_op_max_pool2d_ex(x, k, s, pd, dl, ceil, &y, &idx));
  const int64_t *ys = cell_tensor_shape(y);
  gpuk_pool p = {n * c, h, w, ys[2], ys[3], kh, kw, sh, sw, pt, pb, pl, pr, dh, dw};
  long long total = N(y);
  std::vector<double> ey(total);
  std::vector<long long> ei(total);
  k_gpu_cnn::max_pool_k<double>(p, D(x), ey.data(), ei.data(), total);
  char buf[200];
  snprintf(buf, sizeof buf, "max_pool2d %s", name);
  cmp(buf, ey.data(), D(y), total, 0);
  std::vector<double> ci(total), eid(total);
  for (long long i = 0; i < total; i++) { ci[i] = (double)((long long *)cell_tensor_data_ptr(idx))[i]; eid[i] = (double)ei[i]; }
  snprintf(buf, sizeof buf, "max_pool2d indices %s", name);
  cmp(buf, eid.data(), ci.data(), total, 0);
  cell_tensor *r = randn({ys[0], ys[1], ys[2], ys[3]}), *gx;
  OK(cell_autograd_grad(y, r, 1, &x, &gx));
  std::vector<double> egx(N(x), 0.0);
  unsigned long long bad = ~0ull;
  k_gpu_cnn::max_pool_bwd_k<double>(D(r), ei.data(), egx.data(), total, p.oh * p.ow, h * w, &bad);
  snprintf(buf, sizeof buf, "max_pool2d backward %s", name);
  cmp(buf, egx.data(), D(gx), N(x), 1e-12);
  if (bad != ~0ull) { printf("FAIL bad index flagged\n"); fails++; }
  if (dh == 1 && dw == 1)
    for (int cip = 0; cip < 2; cip++) {
      cell_tensor *ya;
      OK(cell_op_avg_pool2d_ex(x, k, s, pd, ceil, cip, &ya));
      const int64_t *as = cell_tensor_shape(ya);
      gpuk_pool q = p;
      q.oh = as[2]; q.ow = as[3];
      long long ta = N(ya);
      std::vector<double> e(ta);
      k_gpu_cnn::avg_pool_k<double>(q, cip, D(x), e.data(), ta);
      snprintf(buf, sizeof buf, "avg_pool2d %s cip %d", name, cip);
      cmp(buf, e.data(), D(ya), ta, 1e-13);
      cell_tensor *ra = randn({as[0], as[1], as[2], as[3]}), *ga;
      OK(cell_autograd_grad(ya, ra, 1, &x, &ga));
      std::vector<double> eg(N(x), -7.0);
      k_gpu_cnn::avg_pool_bwd_k<double>(q, cip, D(ra), eg.data(), N(x));
      snprintf(buf, sizeof buf, "avg_pool2d backward %s cip %d", name, cip);
      cmp(buf, eg.data(), D(ga), N(x), 1e-13);
    }
}

static void bn_case(std::vector<int64_t> shape, int training) {
  cell_tensor *x = randn(shape), *w = randn({shape[1]}), *b = randn({shape[1]});
  int64_t c = shape[1], n = shape[0], inner = 1;
  for (size_t d = 2; d < shape.size(); d++) inner *= shape[d];
  cell_tensor *rm = randn({c}), *rv;
  OK(cell_tensor_rand(CELL_DTYPE_F64, 1, &c, &rv));
  for (int i = 0; i < c; i++) D(rv)[i] += 0.5;
  std::vector<double> rm0(D(rm), D(rm) + c), rv0(D(rv), D(rv) + c);
  OK(cell_tensor_set_requires_grad(x, 1));
  OK(cell_tensor_set_requires_grad(w, 1));
  OK(cell_tensor_set_requires_grad(b, 1));
  double mom = 0.8, eps = 1e-5;
  cell_tensor *y;
  OK(cell_op_batch_norm(x, rm, rv, w, b, training, mom, eps, &y));
  std::vector<double> mean(c), var(c), ey(N(x));
  if (training) k_gpu_cnn::bn_stats_k<double>(D(x), mean.data(), var.data(), n, c, inner);
  else { mean = rm0; var = rv0; }
  k_gpu_cnn::bn_apply_k<double>(D(x), ey.data(), mean.data(), var.data(), D(w), D(b), N(x), c, inner, eps);
  char buf[200], sh[80] = "";
  for (size_t d = 0; d < shape.size(); d++) snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%s%lld", d ? "x" : "", (long long)shape[d]);
  snprintf(buf, sizeof buf, "batch_norm %s %s", sh, training ? "training" : "inference");
  cmp(buf, ey.data(), D(y), N(x), 1e-12);
  if (training) {
    std::vector<double> erm = rm0, erv = rv0;
    k_gpu_cnn::bn_blend_k<double>(erm.data(), 1, mean.data(), c, mom, 1.0);
    k_gpu_cnn::bn_blend_k<double>(erv.data(), 1, var.data(), c, mom, (double)(n * inner) / (double)(n * inner - 1));
    snprintf(buf, sizeof buf, "batch_norm running mean %s", sh);
    cmp(buf, erm.data(), D(rm), c, 1e-12);
    snprintf(buf, sizeof buf, "batch_norm running var %s", sh);
    cmp(buf, erv.data(), D(rv), c, 1e-12);
  }
  cell_tensor *r = randn(shape), *in[3] = {x, w, b}, *g[3];
  OK(cell_autograd_grad(y, r, 3, in, g));
  std::vector<double> gx(N(x)), gw(c), gb(c), kk(3 * c);
  k_gpu_cnn::bn_bwd_sums_k<double>(D(r), D(x), mean.data(), var.data(), D(w), gw.data(), gb.data(), kk.data(), n, c, inner, eps, training);
  k_gpu_cnn::bn_bwd_x_k<double>(D(r), D(x), gx.data(), mean.data(), kk.data(), N(x), c, inner);
  snprintf(buf, sizeof buf, "batch_norm grad x %s %s", sh, training ? "training" : "inference");
  cmp(buf, gx.data(), D(g[0]), N(x), 1e-11);
  snprintf(buf, sizeof buf, "batch_norm grad w %s", sh);
  cmp(buf, gw.data(), D(g[1]), c, 1e-11);
  snprintf(buf, sizeof buf, "batch_norm grad b %s", sh);
  cmp(buf, gb.data(), D(g[2]), c, 1e-11);
}

static void attn_case(int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev, int causal) {
  cell_tensor *q = randn({H, L, E}), *k = randn({H, S, E}), *v = randn({H, S, Ev}), *o;
  OK(cell_tensor_set_requires_grad(q, 1));
  OK(cell_tensor_set_requires_grad(k, 1));
  OK(cell_tensor_set_requires_grad(v, 1));
  double scale = 1.0 / sqrt((double)E);
  OK(cell_op_scaled_dot_product_attention(q, k, v, NULL, 0, causal, 0, 0, &o));
  std::vector<double> P(H * L * S), lse(H * L), eo(H * L * Ev);
  k_gpu_attn::scores_k<double>(D(q), D(k), P.data(), H, L, S, E, scale, causal);
  k_gpu_attn::row_softmax_k(P.data(), lse.data(), H * L, S);
  k_gpu_attn::out_k<double>(P.data(), D(v), eo.data(), H, L, S, Ev);
  char buf[200];
  snprintf(buf, sizeof buf, "sdpa %lldx%lldx%lld S %lld Ev %lld%s", (long long)H, (long long)L, (long long)E, (long long)S,
           (long long)Ev, causal ? " causal" : "");
  cmp(buf, eo.data(), D(o), N(o), 1e-12);
  cell_tensor *r = randn({H, L, Ev}), *in[3] = {q, k, v}, *g[3];
  OK(cell_autograd_grad(o, r, 3, in, g));
  std::vector<double> Dv(H * L), P2(H * L * S), dS(H * L * S), gq(N(q)), gk(N(k)), gv(N(v));
  k_gpu_attn::rowdot_k<double>(D(r), eo.data(), Dv.data(), H * L, Ev);
  k_gpu_attn::ds_k<double>(D(q), D(k), D(v), D(r), lse.data(), Dv.data(), P2.data(), dS.data(), H, L, S, E, Ev, scale, causal);
  k_gpu_attn::dq_k<double>(dS.data(), D(k), gq.data(), H, L, S, E, scale);
  k_gpu_attn::dkv_k<double>(dS.data(), D(q), gk.data(), H, L, S, E, scale);
  k_gpu_attn::dkv_k<double>(P2.data(), D(r), gv.data(), H, L, S, Ev, 1.0);
  const char *nm[3] = {"q", "k", "v"};
  std::vector<double> *e[3] = {&gq, &gk, &gv};
  for (int i = 0; i < 3; i++) {
    char b2[240];
    snprintf(b2, sizeof b2, "%s grad %s", buf, nm[i]);
    cmp(b2, e[i]->data(), D(g[i]), N(in[i]), 1e-11);
  }
}

int main(void) {
  pool_case("2x2", 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 0);
  pool_case("3x3 s2 p1", 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0);
  pool_case("3x2 s1", 3, 2, 1, 1, 0, 0, 0, 0, 1, 1, 0);
  pool_case("3x3 s2 ceil", 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 1);
  pool_case("2x2 s2 p1 ceil", 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1);
  pool_case("3x3 s2 p(1,0,1,1) ceil", 3, 3, 2, 2, 1, 0, 1, 1, 1, 1, 1);
  pool_case("4x3 s3x2 p(2,1,0,1)", 4, 3, 3, 2, 2, 1, 0, 1, 1, 1, 0);
  pool_case("3x3 s1 dil 2", 3, 3, 1, 1, 0, 0, 0, 0, 2, 2, 0);
  pool_case("3x3 s3 dil 2 p1 ceil", 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 1);
  for (int tr = 0; tr < 2; tr++) {
    bn_case({6, 5}, tr);
    bn_case({4, 3, 7}, tr);
    bn_case({3, 4, 5, 6}, tr);
    bn_case({2, 3, 2, 3, 4}, tr);
  }
  attn_case(3, 5, 7, 8, 4, 0);
  attn_case(3, 5, 7, 8, 4, 1);
  attn_case(2, 6, 6, 4, 5, 1);
  printf("%d failures\n", fails);
  return fails != 0;
}
