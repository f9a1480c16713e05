/* sgemm.c - cell's own float32 gemm, for the CPUs OpenBLAS does not know.
 *
 * OpenBLAS (DYNAMIC_ARCH) picks its kernels when it loads, from the CPU's
 * family and model. A CPU newer than the library gets its fallback core:
 * Debian 12's OpenBLAS 0.3.21 takes an Emerald Rapids Xeon (family 6,
 * model 207, AVX-512) for a "Prescott" and multiplies with SSE3, four
 * floats at a time: 67% of the tiny GPT's step and 76% of the LSTM's sat
 * in sgemm_kernel_PRESCOTT on such a machine. OPENBLAS_CORETYPE would
 * tell it better, but that is the user's environment, not ours to set.
 * So where OpenBLAS's core is not one of its vector ones (cell_sgemm_isa)
 * and cpuid says the CPU has AVX-512F, or AVX2 and FMA, the BLAS backend
 * hands its float32 products to this kernel instead (blas.c); elsewhere
 * OpenBLAS keeps them. CELL_SGEMM=openblas, avx2 or avx512 in the
 * environment forces a choice (for tests and comparisons; a kernel the CPU
 * lacks is not taken).
 *
 * The layout is the usual one (Goto's): B in blocks of KC rows by NC
 * columns packed into panels of NR columns, A in blocks of MC rows by KC
 * packed into slivers of MR rows, and a micro-kernel that keeps an MR x NR
 * tile of C in registers (AVX-512: 12 x 32 in 24 zmm; AVX2: 6 x 16 in 12
 * ymm), one broadcast of A against NR floats of B per row and k. The tile
 * is loaded from C and stored back, so every element of C is C's value
 * plus A[i,0] B[0,j], then A[i,1] B[1,j], ... one fused multiply-add each,
 * in order of k: the same bits wherever the element falls in the tiles,
 * however the rows are split over threads, and at either vector width. */
#include "backend.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KC 256
#define MC 144 /* a multiple of both kernels' MR */
#define NC 1024

/* The packed operands, kept per calling thread between calls (a product
 * calls no other one while it holds them). At most
 * (KC * NC + MC * KC) floats, 1.2 MB. */
static __thread float *ws_buf;
static __thread size_t ws_floats;

static float *workspace(size_t floats) {
  if (floats > ws_floats) {
    free(ws_buf);
    ws_floats = 0;
    ws_buf = malloc(floats * sizeof(float));
    if (ws_buf) ws_floats = floats;
  }
  return ws_buf;
}

/* One operand's rows p0 .. p0 + kc - 1 and columns j0 .. j0 + nc - 1 (element
 * (p, j) at src[p * rs + j * cs]) as panels of W columns, each kc rows of W
 * floats (zeros past nc). B is packed so (panels of NR columns); A is its
 * transpose's case (slivers of MR of its rows: rs and cs swapped). W a
 * constant, so a whole panel's rows are copied as fixed-size blocks. */
#define PACK(NAME, W)                                                                                    \
  static void NAME(const float *base, int64_t rs, int64_t cs, int64_t p0, int64_t kc, int64_t j0,       \
                   int64_t nc, float *d) {                                                              \
    for (int64_t jp = 0; jp < nc; jp += W, d += kc * W) {                                               \
      int64_t w = nc - jp < W ? nc - jp : W;                                                            \
      const float *src = base + p0 * rs + (j0 + jp) * cs;                                               \
      if (cs == 1 && w == W) {                                                                          \
        for (int64_t p = 0; p < kc; p++) memcpy(d + p * W, src + p * rs, sizeof(float) * W);           \
      } else if (rs == 1 && w == W) { /* columns contiguous: a row of the panel from W columns */      \
        for (int64_t p = 0; p < kc; p++)                                                                \
          _Pragma("GCC unroll 32") for (int q = 0; q < W; q++) d[p * W + q] = src[q * cs + p];          \
      } else {                                                                                          \
        for (int64_t p = 0; p < kc; p++)                                                                \
          for (int64_t q = 0; q < W; q++) d[p * W + q] = q < w ? src[p * rs + q * cs] : 0.0f;           \
      }                                                                                                 \
    }                                                                                                   \
  }
PACK(pack32, 32)
PACK(pack16, 16)
PACK(pack12, 12)
PACK(pack6, 6)

/* The micro-kernel of one vector width: c[r * ldc + j] += sum_p ap[p * MR
 * + r] * bp[p * NR + j] for an MR x NR tile (NR = 2 vectors), in order of
 * p. Its accumulators are named in arrays the compiler keeps in registers
 * (the loops over them fully unrolled). */
#define SGEMM_KERNEL(NAME, TARGET, V, VL, MR_)                                          \
  TARGET static void NAME(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc) { \
    V acc[MR_][2];                                                                      \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR_; r++) {                            \
      memcpy(&acc[r][0], c + r * ldc, sizeof(V));                                       \
      memcpy(&acc[r][1], c + r * ldc + VL, sizeof(V));                                  \
    }                                                                                   \
    for (int64_t p = 0; p < kc; p++) {                                                  \
      V b0, b1;                                                                         \
      memcpy(&b0, bp + p * 2 * VL, sizeof(V));                                          \
      memcpy(&b1, bp + p * 2 * VL + VL, sizeof(V));                                     \
      const float *a = ap + p * MR_;                                                    \
      _Pragma("GCC unroll 16") for (int r = 0; r < MR_; r++) {                          \
        acc[r][0] += a[r] * b0;                                                         \
        acc[r][1] += a[r] * b1;                                                         \
      }                                                                                 \
    }                                                                                   \
    _Pragma("GCC unroll 16") for (int r = 0; r < MR_; r++) {                            \
      memcpy(c + r * ldc, &acc[r][0], sizeof(V));                                       \
      memcpy(c + r * ldc + VL, &acc[r][1], sizeof(V));                                  \
    }                                                                                   \
  }

typedef void (*micro_fn)(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc);
typedef void (*pack_fn)(const float *base, int64_t rs, int64_t cs, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                        float *d);

/* A kernel of one width: its micro-kernel, tile (mr x nr) and packers. */
typedef struct {
  micro_fn fn;
  int mr, nr;
  pack_fn pack_a, pack_b;
} sgemm_kernel;

#if defined(__x86_64__) && defined(__GNUC__)
typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
SGEMM_KERNEL(kernel512, __attribute__((target("avx512f,fma"))), v16f, 16, 12)
SGEMM_KERNEL(kernel256, __attribute__((target("avx2,fma"))), v8f, 8, 6)
/* by isa: 1 AVX2 + FMA, 2 AVX-512 */
static const sgemm_kernel kernels[3] = {{NULL, 0, 0, NULL, NULL},
                                        {kernel256, 6, 16, pack6, pack16},
                                        {kernel512, 12, 32, pack12, pack32}};
/* Whether the CPU has the instructions of kernel isa (1 or 2). */
static int cpu_has(int isa) {
  __builtin_cpu_init();
  return isa == 2 ? __builtin_cpu_supports("avx512f") : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#define HAVE_KERNELS 1
#endif

/* The tile at rows i, columns j of C: straight from C when whole and C's
 * rows are contiguous, else through a local tile (C's values in, zeros
 * past the edges, the valid part back). */
static void tile(const cell_gemm *g, micro_fn fn, int mr, int nr, int64_t i, int64_t j, int64_t kc, const float *ap,
                 const float *bp) {
  float *c = (float *)(void *)g->c;
  int64_t h = g->m - i < mr ? g->m - i : mr, w = g->n - j < nr ? g->n - j : nr;
  if (h == mr && w == nr && g->c_cs == 1) {
    fn(kc, ap, bp, c + i * g->c_rs + j, g->c_rs);
    return;
  }
  float t[16 * 32];
  for (int64_t r = 0; r < mr; r++)
    for (int64_t q = 0; q < nr; q++)
      t[r * nr + q] = r < h && q < w ? c[(i + r) * g->c_rs + (j + q) * g->c_cs] : 0.0f;
  fn(kc, ap, bp, t, nr);
  for (int64_t r = 0; r < h; r++)
    for (int64_t q = 0; q < w; q++) c[(i + r) * g->c_rs + (j + q) * g->c_cs] = t[r * nr + q];
}

int cell_sgemm_isa(void) {
  static int state = -1;
  int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
  if (s >= 0) return s;
  s = 0;
#ifdef HAVE_KERNELS
  int has512 = cpu_has(2), has256 = cpu_has(1);
  const char *env = getenv("CELL_SGEMM");
  if (env && strcmp(env, "avx512") == 0) {
    s = has512 ? 2 : 0;
  } else if (env && strcmp(env, "avx2") == 0) {
    s = has256 ? 1 : 0;
  } else if (!(env && strcmp(env, "openblas") == 0)) {
    s = cell_blas_vector_core() ? 0 : has512 ? 2 : has256 ? 1 : 0;
  }
#endif
  __atomic_store_n(&state, s, __ATOMIC_RELEASE);
  return s;
}

int cell_sgemm_tile_rows(void) {
#ifdef HAVE_KERNELS
  return kernels[cell_sgemm_isa()].mr;
#else
  return 0;
#endif
}

int cell_sgemm_acc(const cell_gemm *g) { return cell_sgemm_acc_with(g, cell_sgemm_isa()); }

int cell_sgemm_acc_with(const cell_gemm *g, int isa) {
  if (g->dtype != CELL_DTYPE_F32 || (isa != 1 && isa != 2)) return 0;
#ifdef HAVE_KERNELS
  if (!cpu_has(isa)) return 0;
  const sgemm_kernel *kn = &kernels[isa];
  int mr = kn->mr, nr = kn->nr;
  int64_t m = g->m, n = g->n, k = g->k;
  int64_t kcb = k < KC ? k : KC, ncb = n < NC ? n : NC, mcb = m < MC ? m : MC;
  int64_t ncp = (ncb + nr - 1) / nr * nr, mcp = (mcb + mr - 1) / mr * mr;
  float *bbuf = workspace((size_t)(kcb * ncp + mcp * kcb));
  if (!bbuf) return 0;
  float *abuf = bbuf + kcb * ncp;
  for (int64_t jc = 0; jc < n; jc += NC) {
    int64_t nc = n - jc < NC ? n - jc : NC;
    for (int64_t pc = 0; pc < k; pc += KC) {
      int64_t kc = k - pc < KC ? k - pc : KC;
      kn->pack_b((const float *)(const void *)g->b, g->b_rs, g->b_cs, pc, kc, jc, nc, bbuf);
      for (int64_t ic = 0; ic < m; ic += MC) {
        int64_t mc = m - ic < MC ? m - ic : MC;
        kn->pack_a((const float *)(const void *)g->a, g->a_cs, g->a_rs, pc, kc, ic, mc, abuf);
        for (int64_t jr = 0; jr < nc; jr += nr)
          for (int64_t ir = 0; ir < mc; ir += mr)
            tile(g, kn->fn, mr, nr, ic + ir, jc + jr, kc, abuf + ir * kc, bbuf + jr * kc);
      }
    }
  }
  return 1;
#else
  return 0;
#endif
}
