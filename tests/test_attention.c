/* test_attention.c - the float32 attention kernels' kept weights
 * (src/ops/attention.c, cell_sdpa_args.probs) without Lua: a forward asked
 * for the log-sum-exp keeps the softmax weights when small and without
 * dropout (and only then), they are the softmax of the scaled scores
 * computed here in double, and the backward that reads them gives the
 * gradients of the one that recomputes them. */
#include "check.h"
#include "ops/attention.h"
#include <math.h>

#define B 2
#define H 3
#define L 7
#define S 9
#define E 5

static cell_tensor *rnd(int64_t n0, int64_t n1, int64_t n2, int64_t n3, unsigned *seed) {
  static double v[B * H * S * E];
  int64_t n = n0 * n1 * n2 * n3;
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 1664525u + 1013904223u;
    v[i] = ((double)(*seed >> 8) / 16777216.0 - 0.5) * 3.0;
  }
  int64_t shape[4] = {n0, n1, n2, n3};
  return from(CELL_DTYPE_F32, 4, shape, v);
}

/* The largest |a - b| / (1 + |b|) over two tensors' elements. */
static double max_diff(const cell_tensor *a, const cell_tensor *b) {
  double w = 0;
  int64_t n = cell_tensor_numel(b);
  if (cell_tensor_numel(a) != n) return INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(flat(a, i) - flat(b, i)) / (1 + fabs(flat(b, i)));
    if (!(d <= w)) w = d;
  }
  return w;
}

static void check_kept(int causal) {
  unsigned seed = 7u + (unsigned)causal;
  cell_tensor *q = rnd(B, H, L, E, &seed), *k = rnd(B, H, S, E, &seed), *v = rnd(B, H, S, E, &seed);
  cell_tensor *g = rnd(B, H, L, E, &seed);
  cell_sdpa_args a = {0};
  a.scale = 1.0 / sqrt((double)E);
  a.causal = causal;
  cell_tensor *out = NULL, *lse = NULL;
  REQUIRE_OK(cell_k_sdpa(q, k, v, NULL, &a, &out, &lse));
  CHECK(a.probs != NULL);
  if (a.probs) {
    CHECK(cell_tensor_ndim(a.probs) == 3 && cell_tensor_dim(a.probs, 0) == B * H &&
          cell_tensor_dim(a.probs, 1) == L && cell_tensor_dim(a.probs, 2) == S);
    /* the softmax of the scaled scores, in double */
    double worst = 0;
    for (int64_t h = 0; h < B * H; h++)
      for (int64_t i = 0; i < L; i++) {
        double sc[S], m = -INFINITY, sum = 0;
        int64_t jend = causal ? (i + 1 < S ? i + 1 : S) : S;
        for (int64_t j = 0; j < jend; j++) {
          double d = 0;
          for (int64_t e = 0; e < E; e++) d += flat(q, (h * L + i) * E + e) * flat(k, (h * S + j) * E + e);
          sc[j] = d * a.scale;
          m = sc[j] > m ? sc[j] : m;
        }
        for (int64_t j = 0; j < jend; j++) sum += exp(sc[j] - m);
        for (int64_t j = 0; j < S; j++) {
          double want = j < jend ? exp(sc[j] - m) / sum : 0;
          double d = fabs(flat(a.probs, (h * L + i) * S + j) - want);
          if (!(d <= worst)) worst = d;
        }
      }
    CHECKF(worst < 1e-6, "kept weights off by %g (causal %d)", worst, causal);
  }
  /* the backward reading them against the one recomputing them */
  cell_tensor *gq[2] = {NULL, NULL}, *gk[2] = {NULL, NULL}, *gv[2] = {NULL, NULL};
  cell_sdpa_args b = a;
  b.probs = NULL;
  CHECK_OK(cell_k_sdpa_backward(g, q, k, v, NULL, out, lse, &a, &gq[0], &gk[0], &gv[0], NULL));
  CHECK_OK(cell_k_sdpa_backward(g, q, k, v, NULL, out, lse, &b, &gq[1], &gk[1], &gv[1], NULL));
  if (gq[0] && gq[1]) {
    double d = max_diff(gq[0], gq[1]), dk = max_diff(gk[0], gk[1]), dv = max_diff(gv[0], gv[1]);
    CHECKF(d < 2e-6 && dk < 2e-6 && dv < 2e-6, "kept vs recomputed: dq %g, dk %g, dv %g (causal %d)", d, dk, dv,
           causal);
  }
  for (int i = 0; i < 2; i++) {
    cell_tensor_release(gq[i]);
    cell_tensor_release(gk[i]);
    cell_tensor_release(gv[i]);
  }
  cell_tensor_release(a.probs);
  cell_tensor_release(out);
  cell_tensor_release(lse);
  /* not asked for lse (no recording), or with dropout: nothing kept */
  cell_sdpa_args c = {0};
  c.scale = a.scale;
  c.causal = causal;
  out = NULL;
  CHECK_OK(cell_k_sdpa(q, k, v, NULL, &c, &out, NULL));
  CHECK(c.probs == NULL);
  cell_tensor_release(out);
  c.p = 0.25;
  out = NULL;
  lse = NULL;
  CHECK_OK(cell_k_sdpa(q, k, v, NULL, &c, &out, &lse));
  CHECK(c.probs == NULL);
  cell_tensor_release(out);
  cell_tensor_release(lse);
  cell_tensor_release(q);
  cell_tensor_release(k);
  cell_tensor_release(v);
  cell_tensor_release(g);
}

void test_attention_all(void) {
  check_kept(0);
  check_kept(1);
}
