/* lowp.c - float16/bfloat16 gemm with float32 accumulation.
 *
 * Two backends, asked before the portable one:
 * - "bf16-avx512": bfloat16 products on the CPU's AVX512-BF16 dot-product
 *   instruction (vdpbf16ps: pairs of bf16 products summed into float32
 *   lanes), chosen at run time when cpuid reports avx512_bf16 (and
 *   CELL_BF16_ISA is not "0" in the environment, which forces the other
 *   path, for tests and comparisons). B is packed into panels of 32
 *   columns holding k-pairs, A into blocks of 8 rows of k-pairs (either
 *   operand stored by rows or transposed, each packed with contiguous
 *   runs); a micro-kernel keeps an 8 x 32 tile of C in 16 float32
 *   registers; the tile is rounded to bfloat16 (to nearest even) once, at
 *   the end, after an optional row bias (conv2d's), and may be written to
 *   NCHW places (cell_bf16_gemm_epilogue). The tiles run B panel by B
 *   panel; with a float32 C and a long k, k goes in blocks added tile by
 *   tile. Debian's OpenBLAS (0.3.21) exports no sbgemm, so this kernel is
 *   the only bfloat16 one. AMX is not used.
 * - "lowp": float16, and bfloat16 elsewhere: the operands converted to
 *   float32, OpenBLAS's sgemm, the result rounded back once.
 * Both take any strides (the operands are packed), so transposed views of
 * the autograd rules need no copies before the call. */
#include "backend.h"
#include "../core/dtype.h"
#include "../core/iter.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Below this many multiply-adds the packing costs more than it saves. */
#define LOWP_MIN_WORK 2048

static int lowp_dtype(cell_dtype dt) { return dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16; }

static int lowp_supports(const cell_gemm *g) {
  if (!lowp_dtype(g->dtype)) return 0;
  if (g->m * g->n * g->k < LOWP_MIN_WORK) return 0;
  return g->m <= INT32_MAX && g->n <= INT32_MAX && g->k <= INT32_MAX;
}

static inline float lowp_load(cell_dtype dt, uint16_t v) {
  return dt == CELL_DTYPE_BF16 ? cell_bf16_to_float(v) : cell_half_to_float(v);
}

static inline uint16_t lowp_store(cell_dtype dt, float v) {
  return dt == CELL_DTYPE_BF16 ? cell_float_to_bf16(v) : cell_float_to_half(v);
}

/* Work over this many elements is split across threads. */
static int lowp_par(int64_t work) { return work > (1 << 18) && cell_ctx()->num_threads > 1; }

/* The convert path: float32 copies of A [m,k] and B [k,n], sgemm, C rounded back. */
static cell_status lowp_gemm_f32(const cell_gemm *g) {
  int64_t m = g->m, n = g->n, k = g->k;
  cell_dtype dt = g->dtype;
  float *a = malloc(sizeof(float) * (size_t)(m * k + k * n + m * n));
  if (!a) return cell_error(CELL_ERR_MEMORY, "matmul: cannot allocate %lld bytes of float32 workspace",
                            (long long)(sizeof(float) * (size_t)(m * k + k * n + m * n)));
  float *b = a + m * k, *c = b + k * n;
  const uint16_t *A = (const uint16_t *)g->a, *B = (const uint16_t *)g->b;
  CELL_FOR(lowp_par(m * k), int64_t, i, m, {
    for (int64_t p = 0; p < k; p++) a[i * k + p] = lowp_load(dt, A[i * g->a_rs + p * g->a_cs]);
  });
  CELL_FOR(lowp_par(k * n), int64_t, p, k, {
    for (int64_t j = 0; j < n; j++) b[p * n + j] = lowp_load(dt, B[p * g->b_rs + j * g->b_cs]);
  });
  /* through the float32 backends, which split it over the team without
   * changing a bit of it (blas.c) */
  cell_gemm gf = {CELL_DTYPE_F32, m, n, k, (const char *)a, k, 1, (const char *)b, n, 1, (char *)c, n, 1, 0};
  cell_status st = cell_gemm_run(&gf);
  if (st != CELL_OK) {
    free(a);
    return st;
  }
  uint16_t *C = (uint16_t *)g->c;
  CELL_FOR(lowp_par(m * n), int64_t, i, m, {
    for (int64_t j = 0; j < n; j++) C[i * g->c_rs + j * g->c_cs] = lowp_store(dt, c[i * n + j]);
  });
  free(a);
  return CELL_OK;
}

const cell_backend cell_backend_lowp = {"lowp", CELL_DEVICE_CPU, lowp_supports, lowp_gemm_f32};

/* --- AVX512-BF16 ------------------------------------------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 10 || defined(__clang__))
#include <immintrin.h>

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MR 8
#define NR 32
#define KC 256 /* pairs of k per block when C is float32 */

/* Whether the native kernel runs: cpuid says avx512bf16, and CELL_BF16_ISA
 * is not "0". Decided once. */
static int bf16_isa(void) {
  static int state = -1;
  if (state < 0) {
    const char *env = getenv("CELL_BF16_ISA");
    __builtin_cpu_init();
    state = __builtin_cpu_supports("avx512bf16") && !(env && env[0] == '0' && env[1] == 0);
  }
  return state;
}

/* Whether a bf16 product runs on the team: at least 2^20 multiply-adds
 * (about 10 us of vdpbf16ps on one core, several times a fork's cost). */
#define BF16_PAR_WORK ((int64_t)1 << 20)
static int bf16_par(int64_t m, int64_t n, int64_t k) {
  return m * n * k >= BF16_PAR_WORK && cell_ctx()->num_threads > 1 && (m > MR || n > NR);
}

static int bf16_supports(const cell_gemm *g) {
  return g->dtype == CELL_DTYPE_BF16 && lowp_supports(g) && bf16_isa();
}

/* One MR x NR tile of C (rows <= MR and cols <= NR valid) from an A panel
 * (kp x MR uint32 pairs: the MR rows' pair p side by side) and a B panel
 * (kp x NR pairs, two zmm per k-pair). The 16 accumulators are named so
 * that they stay in registers. */
#define ACC2(r)                                                        \
  __m512 c##r##a, c##r##b;                                             \
  if (acc && r < rows) {                                               \
    load_row(Cf + r * c_rs, cols, c_cs, &c##r##a, &c##r##b);           \
  } else {                                                             \
    __m512 rb_ = _mm512_set1_ps(bias && r < rows ? bias[r] : 0.0f);   \
    c##r##a = _mm512_add_ps(cb0, rb_);                                 \
    c##r##b = _mm512_add_ps(cb1, rb_);                                 \
  }
#define DOT2(r)                                                          \
  {                                                                      \
    __m512bh av = (__m512bh)_mm512_set1_epi32((int)arow[r]);             \
    c##r##a = _mm512_dpbf16_ps(c##r##a, av, b0);                         \
    c##r##b = _mm512_dpbf16_ps(c##r##b, av, b1);                         \
  }
#define OUT2(r)                                                                          \
  if (r < rows && Cf) {                                                                  \
    float *frow = Cf + r * c_rs;                                                         \
    if (cols == NR && c_cs == 1) {                                                       \
      _mm512_storeu_ps(frow, c##r##a);                                                   \
      _mm512_storeu_ps(frow + 16, c##r##b);                                              \
    } else {                                                                             \
      float tmp[NR];                                                                     \
      _mm512_storeu_ps(tmp, c##r##a);                                                    \
      _mm512_storeu_ps(tmp + 16, c##r##b);                                               \
      for (int j = 0; j < cols; j++) frow[j * c_cs] = tmp[j];                            \
    }                                                                                    \
  } else if (r < rows) {                                                                 \
    uint16_t *crow = C + r * c_rs;                                                       \
    if (cols == NR && c_cs == 1) {                                                       \
      _mm256_storeu_si256((__m256i *)crow, (__m256i)_mm512_cvtneps_pbh(c##r##a));        \
      _mm256_storeu_si256((__m256i *)(crow + 16), (__m256i)_mm512_cvtneps_pbh(c##r##b)); \
    } else {                                                                             \
      float tmp[NR];                                                                     \
      _mm512_storeu_ps(tmp, c##r##a);                                                    \
      _mm512_storeu_ps(tmp + 16, c##r##b);                                               \
      for (int j = 0; j < cols; j++) crow[j * c_cs] = cell_float_to_bf16(tmp[j]);        \
    }                                                                                    \
  }

/* A row of a float32 C tile into two registers (zeros past cols). */
BF16_TARGET static inline void load_row(const float *frow, int cols, int64_t c_cs, __m512 *a, __m512 *b) {
  if (cols == NR && c_cs == 1) {
    *a = _mm512_loadu_ps(frow);
    *b = _mm512_loadu_ps(frow + 16);
    return;
  }
  float tmp[NR] = {0};
  for (int j = 0; j < cols; j++) tmp[j] = frow[j * c_cs];
  *a = _mm512_loadu_ps(tmp);
  *b = _mm512_loadu_ps(tmp + 16);
}

/* acc: add to the float32 tile already in Cf (a later block of k) instead
 * of starting from the bias (or zero). */
BF16_TARGET static void bf16_tile(int rows, int cols, int64_t kp, const uint32_t *ap, const uint32_t *bp,
                                  const float *bias, const float *cbias, int acc, uint16_t *C, float *Cf,
                                  int64_t c_rs, int64_t c_cs) {
  __m512 cb0 = _mm512_setzero_ps(), cb1 = cb0; /* the column bias (the tile's cols of it, zeros after) */
  if (cbias && !acc) load_row(cbias, cols, 1, &cb0, &cb1);
  ACC2(0) ACC2(1) ACC2(2) ACC2(3) ACC2(4) ACC2(5) ACC2(6) ACC2(7)
  for (int64_t p = 0; p < kp; p++) {
    __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)(bp + p * NR));
    __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(bp + p * NR + 16));
    const uint32_t *arow = ap + p * MR;
    DOT2(0) DOT2(1) DOT2(2) DOT2(3) DOT2(4) DOT2(5) DOT2(6) DOT2(7)
  }
  OUT2(0) OUT2(1) OUT2(2) OUT2(3) OUT2(4) OUT2(5) OUT2(6) OUT2(7)
}

/* Pairs p0 .. p0 + 15 of MR = 8 rows of A (row r at r0 + r * a_rs; a pair
 * is a 32-bit word) into the A panel (pair p's 8 words side by side): an
 * 8 x 16 transpose of words in registers (two rounds of unpacks leave
 * rows 0-3 and 4-7 of word 4 L + e in lane L of u[e], v[e]) instead of
 * 128 strided word copies, which were 60% of the packing. */
BF16_TARGET static void pack_a_rows16(const uint16_t *r0, int64_t a_rs, int64_t p0, uint32_t *d32) {
  __m512i r[MR];
  for (int i = 0; i < MR; i++) r[i] = _mm512_loadu_si512((const void *)(r0 + i * a_rs + 2 * p0));
  __m512i t0 = _mm512_unpacklo_epi32(r[0], r[1]), t1 = _mm512_unpackhi_epi32(r[0], r[1]);
  __m512i t2 = _mm512_unpacklo_epi32(r[2], r[3]), t3 = _mm512_unpackhi_epi32(r[2], r[3]);
  __m512i t4 = _mm512_unpacklo_epi32(r[4], r[5]), t5 = _mm512_unpackhi_epi32(r[4], r[5]);
  __m512i t6 = _mm512_unpacklo_epi32(r[6], r[7]), t7 = _mm512_unpackhi_epi32(r[6], r[7]);
  uint32_t u[4][16], v[4][16];
  _mm512_storeu_si512((void *)u[0], _mm512_unpacklo_epi64(t0, t2));
  _mm512_storeu_si512((void *)u[1], _mm512_unpackhi_epi64(t0, t2));
  _mm512_storeu_si512((void *)u[2], _mm512_unpacklo_epi64(t1, t3));
  _mm512_storeu_si512((void *)u[3], _mm512_unpackhi_epi64(t1, t3));
  _mm512_storeu_si512((void *)v[0], _mm512_unpacklo_epi64(t4, t6));
  _mm512_storeu_si512((void *)v[1], _mm512_unpackhi_epi64(t4, t6));
  _mm512_storeu_si512((void *)v[2], _mm512_unpacklo_epi64(t5, t7));
  _mm512_storeu_si512((void *)v[3], _mm512_unpackhi_epi64(t5, t7));
  uint32_t *d = d32 + p0 * MR;
  for (int lane = 0; lane < 4; lane++)
    for (int e = 0; e < 4; e++) {
      memcpy(d + (4 * lane + e) * MR, u[e] + 4 * lane, 4 * sizeof(uint32_t));
      memcpy(d + (4 * lane + e) * MR + 4, v[e] + 4 * lane, 4 * sizeof(uint32_t));
    }
}

/* d[2j] = r0[j], d[2j + 1] = r1[j]: two rows of B as k-pairs. */
static void interleave(const uint16_t *r0, const uint16_t *r1, uint16_t *d, int64_t cols) {
#pragma omp simd
  for (int64_t j = 0; j < cols; j++) {
    d[2 * j] = r0[j];
    d[2 * j + 1] = r1[j];
  }
}

/* d[p * step] = the p-th pair (src[2p], src[2p + 1]) of a contiguous row, p < k / 2. */
static void pairs_to_panel(const uint16_t *src, int64_t k, uint32_t *d, int64_t step) {
  for (int64_t p = 0; p < k / 2; p++) {
    uint32_t v;
    memcpy(&v, src + 2 * p, sizeof v);
    d[p * step] = v;
  }
}

/* A B panel (kp x NR pairs) from B stored transposed: column j of the
 * panel is the contiguous row bt + j * ld, whose pairs are 32-bit words
 * already. Done in blocks of pairs, so that the panel's rows being written
 * stay in the first-level cache while all the columns are read (a column
 * at a time touched a new line per element, at a stride that aliased). */
static void pack_b_transposed(const uint16_t *bt, int64_t ld, int64_t k, int64_t cols, int64_t kp, uint32_t *d) {
  const int64_t PB = 64;
  for (int64_t p0 = 0; p0 < kp; p0 += PB) {
    int64_t pe = p0 + PB < kp ? p0 + PB : kp, full = pe < k / 2 ? pe : k / 2;
    for (int64_t j = 0; j < cols; j++) {
      const uint16_t *src = bt + j * ld;
      if (full > p0) pairs_to_panel(src + 2 * p0, 2 * (full - p0), d + p0 * NR + j, NR);
      if (full < pe) d[full * NR + j] = src[k - 1]; /* odd k: the last pair's second half 0 */
    }
    for (int64_t j = cols; j < NR; j++)
      for (int64_t p = p0; p < pe; p++) d[p * NR + j] = 0;
  }
}

/* The packed operands' workspace, kept per calling thread between calls
 * (up to WS_KEEP bytes): a fresh block for every product was mapped and
 * its pages zeroed by the kernel each time (a twentieth of the tiny GPT's
 * mixed-precision step). A product calls no other one while it holds it. */
#define WS_KEEP ((size_t)32 << 20)
static __thread uint32_t *ws_buf;
static __thread size_t ws_size;
static uint32_t *bf16_workspace(size_t bytes) {
  if (bytes > WS_KEEP) return malloc(bytes);
  if (bytes > ws_size) {
    free(ws_buf);
    ws_size = 0;
    ws_buf = malloc(bytes);
    if (ws_buf) ws_size = bytes;
  }
  return ws_buf;
}
static void bf16_workspace_done(uint32_t *p) {
  if (p != ws_buf) free(p);
}

/* Rows i0 .. i0 + rows - 1 (rows <= MR) of A as one packed block: pair p,
 * row r holds A[i][2p], A[i][2p+1] (zeros past the edges). */
static void pack_a_block(const cell_gemm *g, int64_t i0, int64_t rows, int64_t kp, uint32_t *blk) {
  int64_t k = g->k;
  const uint16_t *A = (const uint16_t *)g->a;
  uint16_t *dst = (uint16_t *)(void *)blk;
  if (g->a_rs == 1 && g->a_cs != 1 && rows == MR) { /* A^T stored: pair p = two stored rows, interleaved */
    for (int64_t p = 0; p < k / 2; p++)
      interleave(A + 2 * p * g->a_cs + i0, A + (2 * p + 1) * g->a_cs + i0, dst + p * MR * 2, MR);
    if (k & 1)
      for (int r = 0; r < MR; r++) {
        dst[((k >> 1) * MR + r) * 2] = A[(k - 1) * g->a_cs + i0 + r];
        dst[((k >> 1) * MR + r) * 2 + 1] = 0;
      }
    return;
  }
  if (g->a_cs == 1 && rows == MR) { /* rows of pairs: 32-bit words, MR of them side by side per pair */
    const uint16_t *r0 = A + i0 * g->a_rs;
    int64_t p = 0;
    for (; p + 16 <= k / 2; p += 16) pack_a_rows16(r0, g->a_rs, p, blk);
    for (; p < k / 2; p++)
      for (int r = 0; r < MR; r++) memcpy(blk + p * MR + r, r0 + r * g->a_rs + 2 * p, sizeof(uint32_t));
    if (k & 1)
      for (int r = 0; r < MR; r++) {
        dst[((k >> 1) * MR + r) * 2] = r0[r * g->a_rs + k - 1];
        dst[((k >> 1) * MR + r) * 2 + 1] = 0;
      }
    return;
  }
  for (int r = 0; r < MR; r++) {
    if (r >= rows) {
      for (int64_t p = 0; p < kp; p++) dst[(p * MR + r) * 2] = dst[(p * MR + r) * 2 + 1] = 0;
      continue;
    }
    const uint16_t *src = A + (i0 + r) * g->a_rs;
    if (g->a_cs == 1) { /* a row's pairs are 32-bit words already */
      pairs_to_panel(src, k, blk + r, MR);
      if (k & 1) dst[((k >> 1) * MR + r) * 2] = src[k - 1];
    } else {
      for (int64_t q = 0; q < k; q++) dst[((q >> 1) * MR + r) * 2 + (q & 1)] = src[q * g->a_cs];
    }
    if (k & 1) dst[((k >> 1) * MR + r) * 2 + 1] = 0;
  }
}

/* Columns j0 .. j0 + cols - 1 (cols <= NR) of B as one panel: pair p,
 * column j holds B[2p][j], B[2p+1][j] (zeros past the edges). */
static void pack_b_panel(const cell_gemm *g, int64_t j0, int64_t cols, int64_t kp, uint32_t *panel) {
  int64_t k = g->k;
  const uint16_t *B = (const uint16_t *)g->b;
  uint16_t *dst = (uint16_t *)(void *)panel;
  if (g->b_rs == 1 && g->b_cs != 1) { /* B^T stored (a weight gradient's columns) */
    pack_b_transposed(B + j0 * g->b_cs, g->b_cs, k, cols, kp, panel);
    return;
  }
  for (int64_t p = 0; p < kp; p++) {
    const uint16_t *r0 = B + (2 * p) * g->b_rs + j0 * g->b_cs;
    const uint16_t *r1 = 2 * p + 1 < k ? r0 + g->b_rs : NULL;
    uint16_t *d = dst + p * NR * 2;
    int64_t j = 0, bcs = g->b_cs;
    if (r1 && bcs == 1) {
      interleave(r0, r1, d, cols);
      j = cols;
    } else {
      for (j = 0; j < cols; j++) {
        d[2 * j] = r0[j * bcs];
        d[2 * j + 1] = r1 ? r1[j * bcs] : 0;
      }
    }
    for (; j < NR; j++) d[2 * j] = d[2 * j + 1] = 0;
  }
}

/* The block of C at rows i0 .. i1 - 1 and columns j0 .. j1 - 1 (i0 a
 * multiple of MR, j0 of NR) on the calling thread: its rows of A and its
 * columns of B packed into the thread's workspace, then its tiles, B panel
 * outer and row blocks inner (one B panel stays in cache while the packed
 * rows pass over it). With a float32 C and a long k (a weight gradient's k
 * is the batch's positions), k goes in blocks of KC pairs, each block's
 * tiles added to C: the panels' blocks stay in cache instead of streaming
 * whole panels. 0 on success, -1 when the workspace cannot be had. */
static int bf16_block(const cell_gemm *g, float *cf, const cell_bf16_epilogue *ep, int64_t i0, int64_t i1,
                      int64_t j0, int64_t j1) {
  int64_t kp = (g->k + 1) / 2, panels = (j1 - j0 + NR - 1) / NR, rblocks = (i1 - i0 + MR - 1) / MR;
  size_t bytes = sizeof(uint32_t) * (size_t)(rblocks * kp * MR + panels * kp * NR);
  uint32_t *ap = bf16_workspace(bytes);
  if (!ap) return -1;
  uint32_t *bp = ap + rblocks * kp * MR;
  for (int64_t rb = 0; rb < rblocks; rb++) {
    int64_t i = i0 + rb * MR;
    pack_a_block(g, i, i1 - i < MR ? i1 - i : MR, kp, ap + rb * kp * MR);
  }
  for (int64_t q = 0; q < panels; q++) {
    int64_t j = j0 + q * NR;
    pack_b_panel(g, j, j1 - j < NR ? j1 - j : NR, kp, bp + q * kp * NR);
  }
  const int64_t kc = cf && kp > 2 * KC ? KC : kp;
  uint16_t *C = (uint16_t *)g->c;
  for (int64_t p0 = 0; p0 < kp; p0 += kc) {
    int64_t pn = kp - p0 < kc ? kp - p0 : kc;
    for (int64_t q = 0; q < panels; q++)
      for (int64_t rb = 0; rb < rblocks; rb++) {
        int64_t i = i0 + rb * MR, j = j0 + q * NR;
        int rows = (int)(i1 - i < MR ? i1 - i : MR), cols = (int)(j1 - j < NR ? j1 - j : NR);
        int64_t at = i * g->c_rs + j * g->c_cs;
        if (ep && ep->col_split > 0)
          at = (j / ep->col_split) * ep->split_stride + i * g->c_rs + (j % ep->col_split) * g->c_cs;
        const float *bias = ep && ep->row_bias ? ep->row_bias + i : NULL;
        const float *cbias = ep && ep->col_bias ? ep->col_bias + j : NULL;
        bf16_tile(rows, cols, pn, ap + rb * kp * MR + p0 * MR, bp + q * kp * NR + p0 * NR, bias, cbias, p0 > 0,
                  cf ? NULL : C + at, cf ? cf + at : NULL, g->c_rs, g->c_cs);
      }
  }
  bf16_workspace_done(ap);
  return 0;
}

/* C = A B with bfloat16 A, B and C, or float32 C when cf is not NULL (then
 * cf replaces g->c, with g's strides counted in floats). ep, when not NULL,
 * adds its row bias before the rounding and splits C's columns (see
 * backend.h). On the team (a product worth two threads), C's longer side
 * is cut into one block per thread, each packed and computed by its thread
 * alone: one fork and one join per product, where packing on the team
 * then sharing the packed operands put three barriers in each (a thread
 * the OS ran late held up the other at every one), and each thread packs
 * only the other operand twice (at most 1 / (MR or NR) of its work). */
/* Thread t's share of a team of `team` for C = A B: a block of C's
 * longer side (whole products owned by thread `owner` when split is 0).
 * 0 on success, -1 when the workspace cannot be had. */
static int bf16_share(const cell_gemm *g, float *cf, const cell_bf16_epilogue *ep, int split, int owner, int64_t t,
                      int64_t team) {
  int64_t m = g->m, n = g->n;
  if (!split) return t == owner ? bf16_block(g, cf, ep, 0, m, 0, n) : 0;
  int by_rows = (m + MR - 1) / MR >= (n + NR - 1) / NR;
  int64_t units = by_rows ? (m + MR - 1) / MR : (n + NR - 1) / NR, unit = by_rows ? MR : NR;
  int64_t lo = units * t / team * unit, hi = units * (t + 1) / team * unit;
  if (by_rows) {
    if (hi > m) hi = m;
    return lo < hi ? bf16_block(g, cf, ep, lo, hi, 0, n) : 0;
  }
  if (hi > n) hi = n;
  return lo < hi ? bf16_block(g, cf, ep, 0, m, lo, hi) : 0;
}

static cell_status bf16_failed(const cell_gemm *g) {
  return cell_error(CELL_ERR_MEMORY, "matmul: cannot allocate the bfloat16 workspace for a %lld x %lld x %lld product",
                    (long long)g->m, (long long)g->n, (long long)g->k);
}

/* C = A B with bfloat16 A, B and C, or float32 C when cf is not NULL (then
 * cf replaces g->c, with g's strides counted in floats). ep, when not NULL,
 * adds its row bias before the rounding and splits C's columns (see
 * backend.h). On the team (a product worth two threads), C's longer side
 * is cut into one block per thread, each packed and computed by its thread
 * alone: one fork and one join per product, where packing on the team
 * then sharing the packed operands put three barriers in each (a thread
 * the OS ran late held up the other at every one), and each thread packs
 * only the other operand twice (at most 1 / (MR or NR) of its work). */
static cell_status bf16_gemm_to(const cell_gemm *g, float *cf, const cell_bf16_epilogue *ep) {
  int64_t nt = bf16_par(g->m, g->n, g->k) && !omp_in_parallel() ? cell_ctx()->num_threads : 1;
  int failed = 0;
  if (nt < 2) {
    failed = bf16_block(g, cf, ep, 0, g->m, 0, g->n);
  } else {
#pragma omp parallel num_threads((int)nt) reduction(| : failed)
    failed |= bf16_share(g, cf, ep, 1, 0, omp_get_thread_num(), omp_get_num_threads()) != 0;
  }
  return failed ? bf16_failed(g) : CELL_OK;
}

cell_status cell_bf16_gemm_pair(const cell_gemm *g1, const cell_gemm *g2) {
  if (!bf16_supports(g1) || !bf16_supports(g2)) {
    CELL_TRY(cell_gemm_run(g1));
    return cell_gemm_run(g2);
  }
  int64_t nt = cell_ctx()->num_threads;
  int s1 = bf16_par(g1->m, g1->n, g1->k), s2 = bf16_par(g2->m, g2->n, g2->k);
  int64_t w1 = g1->m * g1->n * g1->k, w2 = g2->m * g2->n * g2->k;
  if (nt < 2 || omp_in_parallel() || w1 + w2 < BF16_PAR_WORK) {
    CELL_TRY(bf16_gemm_to(g1, NULL, NULL));
    return bf16_gemm_to(g2, NULL, NULL);
  }
  int f1 = 0, f2 = 0;
#pragma omp parallel num_threads((int)nt) reduction(| : f1, f2)
  {
    int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
    f1 |= bf16_share(g1, NULL, NULL, s1 && team > 1, 0, t, team) != 0;
    f2 |= bf16_share(g2, NULL, NULL, s2 && team > 1, (int)(team - 1), t, team) != 0;
  }
  if (f1) return bf16_failed(g1);
  return f2 ? bf16_failed(g2) : CELL_OK;
}

static cell_status bf16_gemm(const cell_gemm *g) { return bf16_gemm_to(g, NULL, NULL); }

int cell_bf16_gemm_native(void) { return bf16_isa(); }

cell_status cell_bf16_gemm_f32(const cell_gemm *g, float *c) {
  if (g->dtype != CELL_DTYPE_BF16 || !bf16_isa())
    return cell_error(CELL_ERR_RUNTIME, "matmul: the AVX512-BF16 gemm is not available here");
  return bf16_gemm_to(g, c, NULL);
}

cell_status cell_bf16_gemm_epilogue(const cell_gemm *g, const cell_bf16_epilogue *ep) {
  if (g->dtype != CELL_DTYPE_BF16 || !bf16_isa())
    return cell_error(CELL_ERR_RUNTIME, "matmul: the AVX512-BF16 gemm is not available here");
  if (ep && ep->col_split > 0 && ep->col_split % NR != 0)
    return cell_error(CELL_ERR_RUNTIME, "matmul: a column split of %lld is not a multiple of %d",
                      (long long)ep->col_split, NR);
  return bf16_gemm_to(g, NULL, ep);
}

#else
int cell_bf16_gemm_native(void) { return 0; }
/* Whether a bf16 product runs on the team: at least 2^20 multiply-adds
 * (about 10 us of vdpbf16ps on one core, several times a fork's cost). */
#define BF16_PAR_WORK ((int64_t)1 << 20)
static int bf16_par(int64_t m, int64_t n, int64_t k) {
  return m * n * k >= BF16_PAR_WORK && cell_ctx()->num_threads > 1 && (m > MR || n > NR);
}

static int bf16_supports(const cell_gemm *g) {
  (void)g;
  return 0;
}
static cell_status bf16_gemm(const cell_gemm *g) { return lowp_gemm_f32(g); }
cell_status cell_bf16_gemm_f32(const cell_gemm *g, float *c) {
  (void)g;
  (void)c;
  return cell_error(CELL_ERR_RUNTIME, "matmul: the AVX512-BF16 gemm is not available here");
}
cell_status cell_bf16_gemm_pair(const cell_gemm *g1, const cell_gemm *g2) {
  CELL_TRY(cell_gemm_run(g1));
  return cell_gemm_run(g2);
}
cell_status cell_bf16_gemm_epilogue(const cell_gemm *g, const cell_bf16_epilogue *ep) {
  (void)g;
  (void)ep;
  return cell_error(CELL_ERR_RUNTIME, "matmul: the AVX512-BF16 gemm is not available here");
}
#endif

const cell_backend cell_backend_bf16 = {"bf16-avx512", CELL_DEVICE_CPU, bf16_supports, bf16_gemm};
