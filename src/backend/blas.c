/* blas.c - the OpenBLAS backend: float32/float64 gemm with BLAS layouts. */
#include "backend.h"
#include <cblas.h>
#include <omp.h>
#include "../core/iter.h"
#include "../core/alloc.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Below this many multiply-adds the call overhead of BLAS dominates. */
#define BLAS_MIN_WORK 4096

/* A rows x cols operand with element strides (rs, cs) as a row-major BLAS
 * matrix: transposed or not, and its leading dimension. */
static int layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE *tr,
                  int64_t *ld) {
  if (cs == 1 || cols == 1) {
    *tr = CblasNoTrans;
    *ld = rows > 1 ? rs : cols;
    if (*ld < cols) *ld = cols;
    return rows <= 1 || rs >= cols;
  }
  if (rs == 1 || rows == 1) {
    *tr = CblasTrans;
    *ld = cols > 1 ? cs : rows;
    if (*ld < rows) *ld = rows;
    return cols <= 1 || cs >= rows;
  }
  return 0;
}

static int blas_supports(const cell_gemm *g) {
  if (g->dtype != CELL_DTYPE_F32 && g->dtype != CELL_DTYPE_F64) return 0;
  if (g->m * g->n * g->k < BLAS_MIN_WORK) return 0;
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX) return 0;
  CBLAS_TRANSPOSE t;
  int64_t ld;
  if (!layout(g->m, g->k, g->a_rs, g->a_cs, &t, &ld) || ld > INT32_MAX) return 0;
  if (!layout(g->k, g->n, g->b_rs, g->b_cs, &t, &ld) || ld > INT32_MAX) return 0;
  return (g->c_cs == 1 || g->n == 1) && (g->m <= 1 || g->c_rs >= g->n) && g->c_rs <= INT32_MAX;
}

/* One row or one column of output is a matrix-vector product: OpenBLAS's
 * gemm does not forward it to gemv, which is several times faster (a
 * batch-1 Dense layer: 60 us as gemm, 9 us as gemv for 784 x 256). The
 * vector's stride must be positive (BLAS reads negative ones backwards). */
static int gemv(const cell_gemm *g) {
  CBLAS_TRANSPOSE tm;
  int64_t ldm;
  if (g->m == 1 && g->a_cs > 0 && g->c_cs > 0) { /* c^T = B^T a^T */
    layout(g->k, g->n, g->b_rs, g->b_cs, &tm, &ldm);
    CBLAS_TRANSPOSE t = tm == CblasNoTrans ? CblasTrans : CblasNoTrans;
    int rows = (int)(tm == CblasNoTrans ? g->k : g->n), cols = (int)(tm == CblasNoTrans ? g->n : g->k);
    if (g->dtype == CELL_DTYPE_F32)
      cblas_sgemv(CblasRowMajor, t, rows, cols, 1.0f, (const float *)g->b, (int)ldm,
                  (const float *)g->a, (int)g->a_cs, 0.0f, (float *)g->c, (int)g->c_cs);
    else
      cblas_dgemv(CblasRowMajor, t, rows, cols, 1.0, (const double *)g->b, (int)ldm,
                  (const double *)g->a, (int)g->a_cs, 0.0, (double *)g->c, (int)g->c_cs);
    return 1;
  }
  if (g->n == 1 && g->b_rs > 0 && g->c_rs > 0) { /* c = A b */
    layout(g->m, g->k, g->a_rs, g->a_cs, &tm, &ldm);
    int rows = (int)(tm == CblasNoTrans ? g->m : g->k), cols = (int)(tm == CblasNoTrans ? g->k : g->m);
    if (g->dtype == CELL_DTYPE_F32)
      cblas_sgemv(CblasRowMajor, tm, rows, cols, 1.0f, (const float *)g->a, (int)ldm,
                  (const float *)g->b, (int)g->b_rs, 0.0f, (float *)g->c, (int)g->c_rs);
    else
      cblas_dgemv(CblasRowMajor, tm, rows, cols, 1.0, (const double *)g->a, (int)ldm,
                  (const double *)g->b, (int)g->b_rs, 0.0, (double *)g->c, (int)g->c_rs);
    return 1;
  }
  return 0;
}

/* C = A B + beta C as one BLAS call (beta 0: C is only written).
 * With beta 0, OpenBLAS first zeroes C with its own loop (sgemm_beta), then
 * adds the product to it; zeroing C here with memset and passing beta 1
 * gives the same values (0 + the product) and skips that loop, which took
 * 4.5% of the tiny GPT's step at 1 thread: the step ran 2-5% faster
 * (17.2-17.9 ms against 18.0-18.6, alternating). */
static void blas_gemm_beta(const cell_gemm *g, double beta) {
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  layout(g->m, g->k, g->a_rs, g->a_cs, &ta, &lda);
  layout(g->k, g->n, g->b_rs, g->b_cs, &tb, &ldb);
  int ldc = (int)(g->m > 1 ? g->c_rs : g->n);
  if (ldc < g->n) ldc = (int)g->n;
  if (beta == 0.0) {
    size_t es = g->dtype == CELL_DTYPE_F32 ? 4 : 8;
    if (ldc == g->n) {
      memset(g->c, 0, (size_t)g->m * (size_t)g->n * es);
    } else {
      for (int64_t i = 0; i < g->m; i++) memset(g->c + (size_t)i * (size_t)ldc * es, 0, (size_t)g->n * es);
    }
    beta = 1.0;
  }
  if (cell_sgemm_acc(g)) return; /* cell's own kernel where OpenBLAS's core is a fallback (sgemm.c) */
  if (g->dtype == CELL_DTYPE_F32)
    cblas_sgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k, 1.0f,
                (const float *)g->a, (int)lda, (const float *)g->b, (int)ldb, (float)beta,
                (float *)g->c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, (int)g->m, (int)g->n, (int)g->k, 1.0,
                (const double *)g->a, (int)lda, (const double *)g->b, (int)ldb, beta,
                (double *)g->c, ldc);
}

/* What cell knows of OpenBLAS's float32 kernel per core type (none of it
 * is in OpenBLAS's interface): the width of its tiles along C's rows, where
 * a split may cut (row_align, below), and its blocks of A, P x Q, the
 * warm-up's shape (blas_warm, below). Other cores: 48, which 12 and 16
 * divide, and 1024 x 512, above the blocks of OpenBLAS 0.3's x86 float32
 * kernels. */
typedef struct {
  const char *core;
  int64_t align;
  int warm_m, warm_k;
} core_params;

static const core_params known_cores[] = {{"zen", 12, 768, 384},
                                          {"haswell", 12, 768, 384},
                                          {"skylakex", 16, 1024, 512},
                                          {"cooperlake", 16, 1024, 512},
                                          {"sapphirerapids", 16, 1024, 512},
                                          {"excavator", 48, 1024, 512}}; /* AVX2 kernels, tiles not read */
static const core_params other_core = {"", 48, 1024, 512};

static const core_params *blas_core(void) {
  static const core_params *cached;
  const core_params *c = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  if (!c) {
    const char *core = openblas_get_corename();
    c = &other_core;
    for (size_t i = 0; core && i < sizeof known_cores / sizeof known_cores[0]; i++)
      if (strncasecmp(core, known_cores[i].core, strlen(known_cores[i].core)) == 0) c = &known_cores[i];
    __atomic_store_n(&cached, c, __ATOMIC_RELEASE);
  }
  return c;
}

int cell_blas_vector_core(void) { return blas_core() != &other_core; }

/* OpenBLAS's float32 kernel (the Haswell and Zen one at least) prefetches
 * the next packed panel of B while it computes the last one, past the end
 * of what the call packed, into pages of its own buffer (128 MB of address
 * space per caller, written only as far as products have packed) that no
 * call has written yet. A software prefetch cannot fault a page in: the
 * page walk fails, and is walked again at every such prefetch. Under a
 * hypervisor (nested page tables) the walk costs enough that small products
 * run at a third of their speed: on a 2-vCPU EPYC VM, 1 thread, 64 x 64 x
 * 256 ran at 10 GFLOPS, 33 once the pages were written. The tiny GPT's
 * weight gradients (sums over 512 rows) were all of that kind: 28% of its
 * step's samples sat on the instruction after that prefetch at 1 thread
 * and 24% at 2; 0.1% at both after one 64 x 512 x 512 product of zeros.
 * That product wrote too little of the buffer: it packs A in blocks of up
 * to P x Q (768 x 384 floats on Zen and Haswell) and B after them, and a
 * product whose A blocks were larger than its 64 x 512 prefetched into
 * pages it had not written. At 2 threads a 256^3 product (two parts of
 * 132 rows) ran at 20 GFLOPS in about four processes of five and 69 in
 * the fifth, by which pages a thread's buffer happened to have; 384^3 at
 * 59 against 74. A warm-up product of P x 512 x Q writes every page of a
 * whole A block and of B's panels past it: 256^3 then ran at 68-69 in
 * every process, 384^3 at 74 (P and Q: blas_core). It costs 10-25 ms once
 * (against 2) and 1.5-3 MB resident a thread.
 * Each thread of a team has its own buffer (OpenBLAS hands concurrent
 * callers distinct ones), so the team runs that product together, the
 * first time a team of that size reaches BLAS from outside a parallel
 * region. */
#define WARM_N 512

static int warmed_team; /* the largest team whose buffers are written */

static void blas_warm(void) {
  int nt = (int)cell_ctx()->num_threads;
  if (cell_sgemm_isa()) return; /* OpenBLAS's gemm is not called (sgemm.c) */
  if (__atomic_load_n(&warmed_team, __ATOMIC_ACQUIRE) >= nt || omp_in_parallel()) return;
  int wm = blas_core()->warm_m, wk = blas_core()->warm_k;
  /* A (wm x wk) and B (wk x WARM_N) both read from one buffer of zeros */
  float *ab = calloc((size_t)(wm > WARM_N ? wm : WARM_N) * (size_t)wk, sizeof(float));
  float *c = calloc((size_t)nt * (size_t)wm * WARM_N, sizeof(float));
  if (ab && c) {
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#pragma omp barrier
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, wm, WARM_N, wk, 1.0f, ab, wk, ab, WARM_N, 0.0f,
                  c + (size_t)omp_get_thread_num() * (size_t)wm * WARM_N, WARM_N);
    }
    __atomic_store_n(&warmed_team, nt, __ATOMIC_RELEASE);
  }
  free(ab);
  free(c);
}

static void blas_gemm_beta_alone(const cell_gemm *g, double beta);

/* Whether g runs on cell's own float32 kernel (sgemm.c), not OpenBLAS's. */
static int own_kernel(const cell_gemm *g) { return g->dtype == CELL_DTYPE_F32 && cell_sgemm_isa(); }

static cell_status blas_gemm_one(const cell_gemm *g) {
  if (!gemv(g)) blas_gemm_beta_alone(g, 0.0);
  return CELL_OK;
}

/* Products from 2^18 multiply-adds (OpenBLAS's own bar for threads) split
 * over the team by rows of C, each part one OpenBLAS call (which runs
 * single-threaded inside a parallel region). OpenBLAS's threaded driver
 * shares packed panels between threads through busy-wait flags and
 * sched_yield, and a thread the OS runs late holds up the other at every
 * panel; split parts share nothing (each packs its own copy of B).
 *
 * A split must not change a single bit of C, whatever the team's size:
 * OpenBLAS's kernels round an element differently by where it falls in
 * their tiles. The Zen/Haswell float32 kernel takes C's rows (row-major)
 * 12 at a time and the remainder 8, 4, 2, 1 at a time: an element moved
 * from a tile of 12 to one of 4 changed in its last bit. So rows split at
 * multiples of the tile width (row_align), and the last part is at least
 * 2 rows (one row would go to gemv). C's columns are not split:
 * their tiles start where OpenBLAS's blocks of them do, which it chooses by
 * rules of its own (on Zen, columns 120 to 135 of a 229-column C changed
 * when it was cut at 128; so did a 64-column one cut at 32). A product
 * that does not split (too few rows) is computed by one thread, not
 * by OpenBLAS's team, whose own split rounds differently, up to 2^26
 * multiply-adds; past that OpenBLAS threads it, and only its last bits may
 * depend on the team's size. */
#define GEMM_SPLIT_LO ((int64_t)1 << 18)
#define GEMM_SPLIT_HI ((int64_t)1 << 26)

/* Where rows may be cut: the width of the kernel's tiles along C's rows
 * for the cores whose kernels are known (Zen and Haswell: 12, then the
 * remainder; the AVX-512 ones: 16), else 48, which both divide. */
static int64_t row_align(void) { return blas_core()->align; }
#define SPLIT_ROW_ALIGN row_align()

/* Where g's rows may be cut. On cell's own kernel (sgemm.c) a cut anywhere
 * keeps every bit (each element is one chain of multiply-adds in order of
 * k, whatever tile it falls in), so parts are whole numbers of its tiles:
 * the tiny GPT's 512 rows cut 264 / 248 instead of 288 / 224 at 48, where
 * one thread did 56% of every such product. */
static int64_t part_align(const cell_gemm *g) { return own_kernel(g) ? cell_sgemm_tile_rows() : row_align(); }

static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/* The length of each of `parts` pieces of a side, a multiple of `align`. */
static int64_t split_piece(int64_t side, int64_t parts, int64_t align) {
  return round_up((side + parts - 1) / parts, align);
}

static double gemm_work(const cell_gemm *g) {
  return (double)g->m * (double)g->n * (double)g->k; /* each side fits 32 bits, not their product */
}

/* A wide product (fewer than two tiles' rows of C, at least as many
 * columns, 2^18 multiply-adds or more: an LSTM's gates for a batch of 16)
 * cannot split by rows, and must not by columns
 * (above). At every thread count it is computed as its transpose instead,
 * C^T = B^T A^T into a scratch of n x m, whose rows split, then copied
 * into C: the same bits on one thread as on several. So is one of fewer
 * than four tiles' rows with at least four times as many columns, whose
 * rows split unevenly (32 rows: 24 and 8 at 2 threads, so one thread did
 * three quarters; a convolution's product over 32 output channels is of
 * that kind): conv3d forward + backward of bench/conv3d.lua at 2 threads
 * 175-179 -> 157-160 ms. */
static int gemm_wide(const cell_gemm *g) {
  return !g->part && g->m >= 2 && g->n >= 2 * SPLIT_ROW_ALIGN && gemm_work(g) >= (double)GEMM_SPLIT_LO &&
         (g->m < 2 * SPLIT_ROW_ALIGN || (g->m < 4 * SPLIT_ROW_ALIGN && g->n >= 4 * g->m));
}

int64_t cell_gemm_split_parts(const cell_gemm *g, int64_t nt) {
  if (nt < 2 || omp_in_parallel() || cell_backend_for_gemm(g) != &cell_backend_blas) return 1;
  if (gemm_work(g) < (double)GEMM_SPLIT_LO || g->n < 2 || gemm_wide(g)) return 1;
  /* the most parts, up to nt, that cell_gemm_split_part's cut (from the
   * number of parts alone) makes exactly, the last at least 2 rows */
  for (int64_t p = nt; p >= 2; p--) {
    int64_t piece = split_piece(g->m, p, part_align(g));
    if ((g->m + piece - 1) / piece == p && g->m - (p - 1) * piece >= 2) {
      blas_warm(); /* before the parts' region (the callers fork for them) */
      return p;
    }
  }
  return 1;
}

void cell_gemm_split_part(const cell_gemm *g, int64_t parts, int64_t q, cell_gemm *h, int64_t *lo, int64_t *len) {
  int64_t es = g->dtype == CELL_DTYPE_F32 ? 4 : 8;
  int64_t part = split_piece(g->m, parts, part_align(g));
  *h = *g;
  *lo = q * part;
  *len = g->m - *lo < part ? g->m - *lo : part;
  if (*len < 0) *len = 0;
  h->part = parts > 1; /* one part is the whole product */
  h->m = *len; /* rows lo.. of A and C */
  h->a = g->a + *lo * g->a_rs * es;
  h->c = g->c + *lo * g->c_rs * es;
}

/* One call on this thread alone where OpenBLAS would otherwise thread it
 * (a product of 2^18 to 2^26 multiply-adds that does not split): inside a
 * parallel region OpenBLAS runs single-threaded; one thread of a team of
 * two makes the call while the other waits. */
static int gemm_needs_one_thread(const cell_gemm *g) {
  double w = gemm_work(g);
  return cell_ctx()->num_threads > 1 && !omp_in_parallel() && w >= (double)GEMM_SPLIT_LO &&
         w <= (double)GEMM_SPLIT_HI;
}

static void blas_gemm_beta_alone(const cell_gemm *g, double beta) {
  if (!gemm_needs_one_thread(g) || own_kernel(g)) { /* sgemm.c's runs on one thread */
    blas_gemm_beta(g, beta);
    return;
  }
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    blas_gemm_beta(g, beta);
  }
}

int cell_blas_gemm_acc_ok(const cell_gemm *g) {
  return g->m >= 2 && g->n >= 2 && cell_backend_for_gemm(g) == &cell_backend_blas && !gemm_wide(g) &&
         cell_gemm_split_parts(g, cell_ctx()->num_threads) == 1;
}

void cell_blas_gemm_acc(const cell_gemm *g) {
  blas_warm();
  blas_gemm_beta_alone(g, 1.0);
}

static cell_status blas_gemm_split(const cell_gemm *g) {
  int64_t parts = cell_gemm_split_parts(g, cell_ctx()->num_threads);
  if (parts < 2) return blas_gemm_one(g);
  CELL_FOR(1, int64_t, q, parts, {
    cell_gemm h;
    int64_t lo, len;
    cell_gemm_split_part(g, parts, q, &h, &lo, &len);
    if (len > 0) blas_gemm_one(&h);
  });
  return CELL_OK;
}

static cell_status blas_gemm_wide(const cell_gemm *g) {
  int64_t m = g->m, n = g->n, es = g->dtype == CELL_DTYPE_F32 ? 4 : 8;
  char *t = cell_alloc((size_t)(m * n * es));
  if (!t) return cell_error(CELL_ERR_MEMORY, "matmul: cannot allocate %lld bytes of scratch", (long long)(m * n * es));
  cell_gemm tg = {g->dtype, n, m, g->k, g->b, g->b_cs, g->b_rs, g->a, g->a_cs, g->a_rs, t, m, 1, 0};
  cell_status s = blas_gemm_split(&tg);
  if (s == CELL_OK) {
    int par = cell_ctx()->num_threads > 1 && !omp_in_parallel() && m * n >= CELL_ITER_GRAIN;
    CELL_FOR(par, int64_t, i, m, {
      if (es == 4) {
        float *cr = (float *)(void *)(g->c + i * g->c_rs * es);
        const float *tc = (const float *)(void *)t + i;
        for (int64_t j = 0; j < n; j++) cr[j * g->c_cs] = tc[j * m];
      } else {
        double *cr = (double *)(void *)(g->c + i * g->c_rs * es);
        const double *tc = (const double *)(void *)t + i;
        for (int64_t j = 0; j < n; j++) cr[j * g->c_cs] = tc[j * m];
      }
    });
  }
  cell_dealloc(t);
  return s;
}

/* On cell's own float32 kernel (sgemm.c) a cut anywhere keeps every bit,
 * and each part packs the whole of the operand it does not cut: a product
 * with more columns than rows (a Dense forward, batch 64, 784 -> 256) is
 * cut by columns of C, at multiples of the kernel's 32, so each thread
 * packs its own columns of B instead of all of them (cut by rows, both
 * threads packed all 784 x 256 of B; the transposed form added a copy). */
static int own_cols_parts(const cell_gemm *g) {
  int64_t nt = cell_ctx()->num_threads;
  if (!own_kernel(g) || nt < 2 || omp_in_parallel()) return 0;
  if (g->m < 2 || g->n <= g->m || g->n < 64 || gemm_work(g) < (double)GEMM_SPLIT_LO) return 0; /* one row: gemv */
  int64_t parts = nt < g->n / 32 ? nt : g->n / 32;
  return (int)parts;
}

static cell_status blas_gemm_cols(const cell_gemm *g, int64_t parts) {
  int64_t piece = split_piece(g->n, parts, 32);
  CELL_FOR(1, int64_t, q, parts, {
    int64_t lo = q * piece, len = g->n - lo < piece ? g->n - lo : piece;
    if (len > 0) { /* on the kernel itself: a part of one column must not go to gemv */
      cell_gemm h = *g;
      h.part = 1;
      h.n = len;
      h.b = g->b + lo * g->b_cs * 4;
      h.c = g->c + lo * g->c_cs * 4;
      blas_gemm_beta(&h, 0.0);
    }
  });
  return CELL_OK;
}

static cell_status blas_gemm(const cell_gemm *g) {
  if (g->part) return blas_gemm_one(g); /* not split again, nor transposed */
  blas_warm();
  int64_t cols = own_cols_parts(g);
  if (cols >= 2) return blas_gemm_cols(g, cols);
  return gemm_wide(g) ? blas_gemm_wide(g) : blas_gemm_split(g);
}

const cell_backend cell_backend_blas = {"blas", CELL_DEVICE_CPU, blas_supports, blas_gemm};
