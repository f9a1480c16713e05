/* linear.c - the fused linear layer y = x W^T + b and its backward.
 *
 * x is [..., in] with any strides whose leading dimensions fold into one
 * uniformly strided run of rows (a contiguous input, or a transposed or
 * sliced view of one; others are copied once), W is [out, in] with any
 * strides, b is [out] or NULL. The forward is one gemm reading W through
 * its transpose's strides (no copy), then the bias added to each row while
 * the row is in cache. The backward hands the gemm backend the transposes
 * too: gx = g W, gW = g^T x over all rows at once (no per-batch products
 * summed afterwards), and gb the column sums of g in one pass. float32,
 * float64, and bfloat16/float16 (the bias added to the float32 sums of
 * the products, in the bfloat16 gemm's epilogue where it runs, and each
 * output rounded once; the column sums in double, rounded once); all
 * three operands of one dtype
 * (the op layer composes matmul and add otherwise). */
#include "../backend/backend.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"
#include "../core/dtype.h"
#include "../core/alloc.h"
#include <omp.h>

static int narrow_dtype(cell_dtype dt) { return dt == CELL_DTYPE_BF16 || dt == CELL_DTYPE_F16; }

/* x as rows x cols with element strides (rs, cs); false when its leading
 * dimensions do not fold into one strided run. */
static bool fold_rows(const cell_tensor *x, int64_t *rows, int64_t *rs, int64_t *cs) {
  int nd = x->ndim;
  int64_t cols = x->shape[nd - 1];
  *cs = cols == 1 ? 1 : x->stride[nd - 1];
  *rows = 1;
  *rs = cols;
  if (nd == 1) return true;
  int64_t step = 0; /* the stride of one row, once known */
  int64_t run = 1;  /* rows covered by the dimensions after the current one */
  bool known = false;
  for (int i = nd - 2; i >= 0; i--) {
    int64_t n = x->shape[i];
    if (n == 1) continue;
    if (!known) {
      step = x->stride[i];
      known = true;
    } else if (x->stride[i] != step * run) {
      return false;
    }
    run *= n;
  }
  *rows = run;
  if (known) *rs = step;
  return true;
}

static cell_status check(const char *op, const cell_tensor *x, const cell_tensor *w,
                         const cell_tensor *b) {
  if (!x || !w) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  if (x->dtype != w->dtype || (b && b->dtype != x->dtype) ||
      (x->dtype != CELL_DTYPE_F32 && x->dtype != CELL_DTYPE_F64 && !narrow_dtype(x->dtype)))
    return cell_error(CELL_ERR_TYPE, "%s: the fused kernel takes float32, float64, bfloat16 or float16 "
                                     "operands of one dtype, got %s, %s%s%s", op, cell_dtype_name(x->dtype),
                      cell_dtype_name(w->dtype), b ? " and " : "", b ? cell_dtype_name(b->dtype) : "");
  char sx[256], sw[256], sb[256];
  if (x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1] ||
      (b && (b->ndim != 1 || b->shape[0] != w->shape[0])))
    return cell_error(CELL_ERR_VALUE, "%s: input %s, weight %s and bias %s do not fit (input "
                                      "[..., in], weight [out, in], bias [out])", op,
                      cell_shape_str(x->ndim, x->shape, sx, sizeof sx),
                      cell_shape_str(w->ndim, w->shape, sw, sizeof sw),
                      b ? cell_shape_str(b->ndim, b->shape, sb, sizeof sb) : "none");
  return CELL_OK;
}

/* x folded to rows, or a contiguous copy of it (*owned set) when its
 * strides do not fold. */
static cell_status rows_of(const cell_tensor *x, const cell_tensor **v, cell_tensor **owned,
                           int64_t *rows, int64_t *rs, int64_t *cs) {
  *owned = NULL;
  *v = x;
  if (fold_rows(x, rows, rs, cs)) return CELL_OK;
  CELL_TRY(cell_k_contiguous(x, owned));
  *v = *owned;
  fold_rows(*v, rows, rs, cs);
  return CELL_OK;
}

/* The bias added to each row of y [m, n]; rows split over threads from
 * the elementwise bar (a float add per element, CELL_ITER_GRAIN). */
#define ADD_ROWS(T)                                                          \
  do {                                                                       \
    const T *bb = (const T *)bp;                                             \
    int par = m > 1 && m * n >= CELL_ITER_GRAIN && cell_ctx()->num_threads > 1; \
    CELL_FOR(par, int64_t, i, m, {                                           \
      T *yr = (T *)y + i * n;                                                \
      if (bs == 1) {                                                         \
        CELL_NN_SIMD for (int64_t j = 0; j < n; j++) yr[j] += bb[j];         \
      } else {                                                               \
        for (int64_t j = 0; j < n; j++) yr[j] += bb[j * bs];                 \
      }                                                                      \
    });                                                                      \
  } while (0)

/* Row i of y [., n] set to the bias (bp, stride bs). */
#define FILL_ROW(T, i)                                                       \
  do {                                                                       \
    const T *bb = (const T *)bp;                                             \
    T *yr = (T *)y + (i) * n;                                                \
    if (bs == 1) {                                                           \
      memcpy(yr, bb, sizeof(T) * (size_t)n);                                 \
    } else {                                                                 \
      for (int64_t j = 0; j < n; j++) yr[j] = bb[j * bs];                    \
    }                                                                        \
  } while (0)

/* Each row of y [m, n] set to the bias (before the product is added to
 * it); rows split over threads as ADD_ROWS's. */
#define FILL_ROWS(T)                                                         \
  do {                                                                       \
    int par = m > 1 && m * n >= CELL_ITER_GRAIN && cell_ctx()->num_threads > 1; \
    CELL_FOR(par, int64_t, i, m, { FILL_ROW(T, i); });                       \
  } while (0)

/* The bfloat16 product with the bias added to the float32 sums in the
 * gemm's epilogue, each output rounded once. */
static cell_status bf16_biased(const cell_gemm *g, const cell_tensor *b) {
  int64_t n = g->n, bs = b->stride[0];
  float *fb = cell_alloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (!fb) return cell_error(CELL_ERR_MEMORY, "linear: out of memory");
  const uint16_t *bb = (const uint16_t *)(const void *)cell_tensor_base(b);
  for (int64_t j = 0; j < n; j++) fb[j] = cell_bf16_to_float(bb[j * bs]);
  cell_bf16_epilogue ep = {NULL, 0, 0, fb};
  cell_status s = cell_bf16_gemm_epilogue(g, &ep);
  cell_dealloc(fb);
  return s;
}

/* The same elsewhere (and for float16): the operands widened to float32,
 * a float32 gemm, the bias added, each output rounded once. */
static cell_status narrow_biased(const cell_gemm *g, const cell_tensor *b) {
  int64_t m = g->m, n = g->n, k = g->k, bs = b->stride[0];
  size_t count = (size_t)(m * k + k * n + m * n + n);
  float *a = cell_alloc(sizeof(float) * (count > 0 ? count : 1));
  if (!a) return cell_error(CELL_ERR_MEMORY, "linear: out of memory");
  float *w = a + m * k, *c = w + k * n, *fb = c + m * n;
  const uint16_t *A = (const uint16_t *)(const void *)g->a, *B = (const uint16_t *)(const void *)g->b;
  const uint16_t *bb = (const uint16_t *)(const void *)cell_tensor_base(b);
  cell_dtype dt = g->dtype;
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++) a[i * k + p] = (float)cell_load_f64(dt, A + i * g->a_rs + p * g->a_cs);
  for (int64_t p = 0; p < k; p++)
    for (int64_t j = 0; j < n; j++) w[p * n + j] = (float)cell_load_f64(dt, B + p * g->b_rs + j * g->b_cs);
  for (int64_t j = 0; j < n; j++) fb[j] = (float)cell_load_f64(dt, bb + j * bs);
  cell_gemm gf = {CELL_DTYPE_F32, m, n, k, (const char *)a, k, 1, (const char *)w, n, 1, (char *)c, n, 1, 0};
  cell_status s = cell_gemm_run(&gf);
  uint16_t *C = (uint16_t *)(void *)g->c;
  for (int64_t i = 0; s == CELL_OK && i < m; i++)
    for (int64_t j = 0; j < n; j++) cell_store_f64(dt, C + i * g->c_rs + j * g->c_cs, c[i * n + j] + fb[j]);
  cell_dealloc(a);
  return s;
}

/* The bias gradient: column sums of g [m, n] (strides rs, cs) in double,
 * in row order, in blocks of columns so the accumulators stay in L1.
 * Threads take ranges of columns (multiples of 8) when the sums are big
 * enough (a float add per element: CELL_ITER_GRAIN); each column is summed
 * over the same rows in the same order whatever the split. */
enum { COL_BLK = 256 };
/* Columns j0 .. j0 + nb - 1 (nb <= COL_BLK). */
#define COL_BLOCK(T, j0, nb)                                                  \
  do {                                                                        \
    const T *G = (const T *)gp;                                               \
    T *o = (T *)op;                                                           \
    double acc[COL_BLK];                                                      \
    for (int64_t j = 0; j < (nb); j++) acc[j] = 0;                            \
    for (int64_t i = 0; i < m; i++) {                                         \
      const T *gr = G + i * rs + (j0) * cs;                                   \
      if (cs == 1) {                                                          \
        CELL_NN_SIMD for (int64_t j = 0; j < (nb); j++) acc[j] += gr[j];      \
      } else                                                                  \
        for (int64_t j = 0; j < (nb); j++) acc[j] += gr[j * cs];              \
    }                                                                         \
    for (int64_t j = 0; j < (nb); j++) o[(j0) + j] = (T)acc[j];               \
  } while (0)
#define COL_SUMS(T)                                                           \
  do {                                                                        \
    int64_t nt = cell_ctx()->num_threads, bw = COL_BLK;                       \
    int par = nt > 1 && n > 8 && m * n >= CELL_ITER_GRAIN;                    \
    if (par && (n + nt - 1) / nt < COL_BLK) bw = ((n + nt - 1) / nt + 7) / 8 * 8; \
    int64_t nblk = (n + bw - 1) / bw;                                         \
    CELL_FOR(par && nblk > 1, int64_t, q, nblk, {                             \
      int64_t j0 = q * bw, nb = n - j0 < bw ? n - j0 : bw;                    \
      COL_BLOCK(T, j0, nb);                                                   \
    });                                                                       \
  } while (0)

/* One fork for a whole fused-linear call whose products split over
 * threads (cell_gemm_split_parts; float32 and float64, C contiguous):
 * forward, each thread takes its parts of the product and adds the bias
 * to them while they are in cache; backward, the parts of gx = g W, those
 * of gW = g^T x and blocks of the bias gradient's columns are handed out
 * statically with no barrier between them. Each call then forks once
 * instead of two or three times (a tiny GPT's step: 68 parallel regions
 * at 2 threads before, 45 after, counted with a uprobe on GOMP_parallel),
 * and the bias rows and column sums, below the elementwise bar in such
 * layers (512 x 64), run on both threads instead of one. Every element is
 * computed as on the split path: the same parts, the same sums. */
typedef struct {
  const cell_gemm *gx, *gw; /* backward: NULL when not wanted */
  int64_t px, pw;
  const char *gp; /* the bias gradient's g (NULL: not wanted) and its output */
  char *op;
  int64_t rs, cs, m, n, bw, nblk;
  cell_status st;
  int64_t nch; /* gW's runs of rows (gw_runs), 1: gW as one product */
  char *tmp;   /* runs 1 .. nch - 1's partial gW, n x k each */
  double *bpart; /* with runs and a bias gradient: each run's column sums, n each */
} fused_bwd;

/* The weight gradient gW = g^T x sums over the rows; from 2 GW_RUN rows
 * on it is summed over fixed runs of GW_RUN rows (the last shorter), each
 * run's product on its own, and the runs' products added in run order.
 * How many runs depends on the rows alone, so every thread count computes
 * the same sums: at 2 threads each thread takes its own rows' run (rows
 * the ops before wrote from its own core), where a split of gW by its
 * output rows had each thread read every row of g and x, half of them
 * from the other core's cache. */
#define GW_RUN 256
static int64_t gw_runs(int64_t rows) { return rows >= 2 * GW_RUN ? (rows + GW_RUN - 1) / GW_RUN : 1; }

/* Run r of gW's product g (its k the rows) into out (n x k, contiguous). */
static cell_status gw_run(const cell_gemm *g, int64_t r, char *out) {
  int64_t es = g->dtype == CELL_DTYPE_F32 ? 4 : 8, lo = r * GW_RUN;
  cell_gemm h = *g;
  h.k = g->k - lo < GW_RUN ? g->k - lo : GW_RUN;
  h.a = g->a + lo * g->a_cs * es;
  h.b = g->b + lo * g->b_rs * es;
  h.c = out;
  h.c_rs = g->n;
  h.c_cs = 1;
  h.part = 1; /* as it is, on any thread: the same bits */
  return cell_gemm_run(&h);
}

/* Where run r's product goes: run 0 into gW itself, the others into tmp. */
static char *gw_run_out(const cell_gemm *g, char *tmp, int64_t r) {
  int64_t es = g->dtype == CELL_DTYPE_F32 ? 4 : 8;
  return r == 0 ? g->c : tmp + (r - 1) * g->m * g->n * es;
}

/* Elements lo .. hi - 1 of gW plus the other runs' products, in run order. */
static void gw_add_runs(const cell_gemm *g, const char *tmp, int64_t nch, int64_t lo, int64_t hi) {
  int64_t cnt = g->m * g->n;
  if (g->dtype == CELL_DTYPE_F32) {
    float *c = (float *)(void *)g->c;
    for (int64_t r = 1; r < nch; r++) {
      const float *p = (const float *)(const void *)tmp + (r - 1) * cnt;
      CELL_NN_SIMD for (int64_t i = lo; i < hi; i++) c[i] += p[i];
    }
  } else {
    double *c = (double *)(void *)g->c;
    for (int64_t r = 1; r < nch; r++) {
      const double *p = (const double *)(const void *)tmp + (r - 1) * cnt;
      CELL_NN_SIMD for (int64_t i = lo; i < hi; i++) c[i] += p[i];
    }
  }
}

/* Where gW is summed in runs, so is the bias gradient: run r's column
 * sums of g (rows in order, in double) into part (n doubles); then the
 * runs' sums added in run order and rounded once (columns j0 .. j1 - 1).
 * Each thread sums its own rows, in cache from its run of gW. */
static void bias_run(cell_dtype dt, const char *gp, int64_t rs, int64_t cs, int64_t m, int64_t n, int64_t r,
                     double *part) {
  int64_t lo = r * GW_RUN, hi = lo + GW_RUN < m ? lo + GW_RUN : m;
  for (int64_t j = 0; j < n; j++) part[j] = 0;
  for (int64_t i = lo; i < hi; i++) {
    if (dt == CELL_DTYPE_F32) {
      const float *g = (const float *)(const void *)gp + i * rs;
      if (cs == 1) {
        CELL_NN_SIMD for (int64_t j = 0; j < n; j++) part[j] += g[j];
      } else {
        for (int64_t j = 0; j < n; j++) part[j] += g[j * cs];
      }
    } else {
      const double *g = (const double *)(const void *)gp + i * rs;
      for (int64_t j = 0; j < n; j++) part[j] += g[j * cs];
    }
  }
}

static void bias_add_runs(cell_dtype dt, const double *part, int64_t nch, int64_t n, char *op, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j++) {
    double acc = 0;
    for (int64_t r = 0; r < nch; r++) acc += part[r * n + j];
    if (dt == CELL_DTYPE_F32)
      ((float *)(void *)op)[j] = (float)acc;
    else
      ((double *)(void *)op)[j] = acc;
  }
}

/* gW over its runs on this thread alone. */
static cell_status gw_runs_serial(const cell_gemm *g, int64_t nch) {
  int64_t es = g->dtype == CELL_DTYPE_F32 ? 4 : 8;
  char *tmp = cell_alloc((size_t)((nch - 1) * g->m * g->n * es));
  if (!tmp) return cell_error(CELL_ERR_MEMORY, "linear_backward: out of memory");
  cell_status s = CELL_OK;
  for (int64_t r = 0; r < nch && s == CELL_OK; r++) s = gw_run(g, r, gw_run_out(g, tmp, r));
  if (s == CELL_OK) gw_add_runs(g, tmp, nch, 0, g->m * g->n);
  cell_dealloc(tmp);
  return s;
}

static void run_part(const cell_gemm *g, int64_t parts, int64_t q, cell_status *st) {
  cell_gemm h;
  int64_t lo, len;
  cell_gemm_split_part(g, parts, q, &h, &lo, &len);
  if (len <= 0) return;
  cell_status s = cell_gemm_run(&h);
  if (s != CELL_OK) {
    _Pragma("omp critical(cell_linear_status)") *st = s;
  }
}

/* The bias gradient's blocks of columns, handed out statically over the
 * enclosing region's threads (called inside it), no barrier after. */
static void bias_blocks(const fused_bwd *f) {
  if (!f->gp) return;
  const char *gp = f->gp;
  char *op = f->op;
  int64_t rs = f->rs, cs = f->cs, m = f->m, n = f->n, bw = f->bw;
  int f32 = (f->gx ? f->gx : f->gw)->dtype == CELL_DTYPE_F32;
  _Pragma("omp for schedule(static) nowait")
  for (int64_t q = 0; q < f->nblk; q++) {
    int64_t j0 = q * bw, nb = n - j0 < bw ? n - j0 : bw;
    if (f32)
      COL_BLOCK(float, j0, nb);
    else
      COL_BLOCK(double, j0, nb);
  }
}

/* Two unsplit backward products fork, one to a thread, from this many
 * multiply-adds each (half the bar at which a product splits, blas.c). */
#define PAIR_WORK ((int64_t)1 << 17)
/* Products paired at two threads sum over at least this many terms each. */
#define PAIR_MIN_K 32

static cell_status fused_backward(fused_bwd *f) {
  f->st = CELL_OK;
  _Pragma("omp parallel")
  {
    /* one list of tasks: a product that does not split first (the
     * largest task), then the parts, handed out as threads come free; a
     * product of 2^18 or more that does not split has too few rows to cut
     * at the BLAS kernel's tiles (blas.c), such as a small layer's weight
     * gradient */
    int64_t px = f->gx ? f->px : 0, pw = f->gw ? f->pw : 0;
    const cell_gemm *first = px == 1 ? f->gx : f->gw, *second = px == 1 ? f->gw : f->gx;
    int64_t pf = px == 1 ? px : pw, ps = px == 1 ? pw : px;
    _Pragma("omp for schedule(dynamic, 1) nowait")
    for (int64_t q = 0; q < pf + ps; q++) {
      if (q < pf) run_part(first, pf, q, &f->st);
      else run_part(second, ps, q - pf, &f->st);
    }
    bias_blocks(f);
  }
  return f->st;
}

/* The backward with gW in runs (f->nch > 1): gx's parts and gW's runs
 * handed out statically (thread t takes gx's part t and run t: its own
 * rows of both), then, past a barrier, gW's runs added by ranges of its
 * elements and the bias gradient's blocks of columns. */
static cell_status fused_backward_runs(fused_bwd *f) {
  f->st = CELL_OK;
  const cell_gemm *gw = f->gw;
  int64_t cnt = gw->m * gw->n;
  _Pragma("omp parallel")
  {
    int64_t nt = omp_get_num_threads(), px = f->gx ? f->px : 0;
    _Pragma("omp for schedule(static) nowait")
    for (int64_t q = 0; q < px; q++) run_part(f->gx, px, q, &f->st);
    _Pragma("omp for schedule(static)")
    for (int64_t r = 0; r < f->nch; r++) {
      cell_status s = gw_run(gw, r, gw_run_out(gw, f->tmp, r));
      if (s != CELL_OK) {
        _Pragma("omp critical(cell_linear_status)") f->st = s;
      }
      if (f->gp) bias_run(gw->dtype, f->gp, f->rs, f->cs, f->m, f->n, r, f->bpart + r * f->n);
    }
    /* (the barrier above: every run is done) */
    _Pragma("omp for schedule(static) nowait")
    for (int64_t t = 0; t < nt; t++) {
      int64_t piece = (cnt + nt - 1) / nt, lo = t * piece, hi = lo + piece < cnt ? lo + piece : cnt;
      if (lo < hi && f->st == CELL_OK) gw_add_runs(gw, f->tmp, f->nch, lo, hi);
      int64_t bp = (f->n + nt - 1) / nt, b0 = t * bp, b1 = b0 + bp < f->n ? b0 + bp : f->n;
      if (f->gp && b0 < b1) bias_add_runs(gw->dtype, f->bpart, f->nch, f->n, f->op, b0, b1);
    }
  }
  return f->st;
}

static cell_status fused_forward(const cell_gemm *g, int64_t parts, const char *bp, int64_t bs) {
  cell_status st = CELL_OK;
  char *y = g->c;
  int64_t n = g->n;
  _Pragma("omp parallel for schedule(static)")
  for (int64_t q = 0; q < parts; q++) {
    cell_gemm h;
    int64_t lo, len;
    cell_gemm_split_part(g, parts, q, &h, &lo, &len);
    if (len > 0 && bp) {
      /* the bias written first and the part's product added to it, as the
       * unsplit call does: the same sums, rounded the same way */
      for (int64_t i = lo; i < lo + len; i++) { /* the part's rows */
        if (g->dtype == CELL_DTYPE_F32)
          FILL_ROW(float, i);
        else
          FILL_ROW(double, i);
      }
      cell_blas_gemm_acc(&h);
    } else if (len > 0) {
      cell_status s = cell_gemm_run(&h);
      if (s != CELL_OK) {
        _Pragma("omp critical(cell_linear_status)") st = s;
      }
    }
  }
  return st;
}

cell_status cell_cpu_linear(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                            cell_tensor **out) {
  CELL_TRY(check("linear", x, w, b));
  if (!out) return cell_error(CELL_ERR_VALUE, "linear: NULL argument");
  int64_t n = w->shape[0], k = w->shape[1];
  int64_t shape[CELL_MAX_DIMS];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
  shape[x->ndim - 1] = n;
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(x->dtype, x->ndim, shape, &r));
  int64_t m = cell_tensor_numel(r) / (n ? n : 1);
  if (n == 0 || m == 0) {
    *out = r;
    return CELL_OK;
  }
  char *y = cell_tensor_base(r);
  cell_status s = CELL_OK;
  if (k == 0) {
    s = cell_k_fill_(r, 0);
  } else {
    const cell_tensor *xv;
    cell_tensor *owned;
    int64_t rows, rs, cs;
    s = rows_of(x, &xv, &owned, &rows, &rs, &cs);
    if (s == CELL_OK) {
      /* B = W^T: [k, n] read through W's strides. */
      cell_gemm g = {x->dtype, m, n, k, cell_tensor_base(xv), rs, cs,
                     cell_tensor_base(w), w->stride[1], w->stride[0], y, n, 1, 0};
      if (b && x->dtype == CELL_DTYPE_BF16 && cell_bf16_gemm_native()) {
        s = bf16_biased(&g, b);
        b = NULL; /* added in the gemm's epilogue */
      } else if (b && narrow_dtype(x->dtype)) {
        s = narrow_biased(&g, b);
        b = NULL;
      } else {
        int64_t parts = narrow_dtype(x->dtype) ? 1 : cell_gemm_split_parts(&g, cell_ctx()->num_threads);
        if (parts > 1) {
          s = fused_forward(&g, parts, b ? cell_tensor_base(b) : NULL, b ? b->stride[0] : 0);
          b = NULL; /* added by each part */
        } else if (b && cell_blas_gemm_acc_ok(&g)) {
          /* the bias rows written first, the product added to them (BLAS's
           * beta = 1): one write pass instead of BLAS zeroing y and a
           * second pass adding the bias (a tiny GPT's step, 1 thread: the
           * add pass and most of OpenBLAS's memset gone) */
          const char *bp = cell_tensor_base(b);
          int64_t bs = b->stride[0];
          if (x->dtype == CELL_DTYPE_F32)
            FILL_ROWS(float);
          else
            FILL_ROWS(double);
          cell_blas_gemm_acc(&g);
          b = NULL;
        } else {
          s = cell_gemm_run(&g);
        }
      }
    }
    cell_tensor_release(owned);
  }
  if (s == CELL_OK && b) {
    const char *bp = cell_tensor_base(b);
    int64_t bs = b->stride[0];
    if (x->dtype == CELL_DTYPE_F32)
      ADD_ROWS(float);
    else
      ADD_ROWS(double);
  }
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* COL_SUMS for bfloat16/float16: double sums, each rounded once; split
 * over threads by ranges of columns as COL_SUMS is (at 2 threads the tiny
 * GPT's bias gradients ran on one). */
static void col_sums_narrow(cell_dtype dt, const uint16_t *G, uint16_t *o, int64_t rs, int64_t cs, int64_t m,
                            int64_t n) {
  enum { BLK = 256 };
  int bf = dt == CELL_DTYPE_BF16;
  int64_t nt = cell_ctx()->num_threads, bw = BLK;
  int par = nt > 1 && n > 8 && m * n >= CELL_ITER_GRAIN;
  if (par && (n + nt - 1) / nt < BLK) bw = ((n + nt - 1) / nt + 7) / 8 * 8;
  int64_t nblk = (n + bw - 1) / bw;
  CELL_FOR(par && nblk > 1, int64_t, q, nblk, {
    int64_t j0 = q * bw, nb = n - j0 < bw ? n - j0 : bw;
    double acc[BLK];
    for (int64_t j = 0; j < nb; j++) acc[j] = 0;
    for (int64_t i = 0; i < m; i++) {
      const uint16_t *gr = G + i * rs + j0 * cs;
      if (bf && cs == 1) {
        CELL_NN_SIMD for (int64_t j = 0; j < nb; j++) acc[j] += cell_bf16_to_float(gr[j]);
      } else if (bf) {
        for (int64_t j = 0; j < nb; j++) acc[j] += cell_bf16_to_float(gr[j * cs]);
      } else {
        for (int64_t j = 0; j < nb; j++) acc[j] += cell_half_to_float(gr[j * cs]);
      }
    }
    for (int64_t j = 0; j < nb; j++)
      o[j0 + j] = bf ? cell_float_to_bf16((float)acc[j]) : cell_float_to_half((float)acc[j]);
  });
}

cell_status cell_cpu_linear_backward(const cell_tensor *g, const cell_tensor *x,
                                     const cell_tensor *w, cell_tensor **gx, cell_tensor **gw,
                                     cell_tensor **gb) {
  CELL_TRY(check("linear_backward", x, w, NULL));
  if (!g) return cell_error(CELL_ERR_VALUE, "linear_backward: NULL argument");
  int64_t n = w->shape[0], k = w->shape[1];
  if (g->dtype != x->dtype || g->ndim != x->ndim || g->shape[g->ndim - 1] != n ||
      memcmp(g->shape, x->shape, sizeof(int64_t) * (size_t)(x->ndim - 1)))
    return cell_error(CELL_ERR_VALUE, "linear_backward: the gradient does not have the output's "
                                      "shape and dtype");
  cell_dtype dt = x->dtype;
  const cell_tensor *gv = NULL, *xv = NULL;
  cell_tensor *gown = NULL, *xown = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
  int64_t m, grs, gcs, xrs = k, xcs = 1;
  int fused = 0, paired = 0;
  cell_status s = rows_of(g, &gv, &gown, &m, &grs, &gcs);
  if (s == CELL_OK && gw) s = rows_of(x, &xv, &xown, &m, &xrs, &xcs);
  if (s == CELL_OK && (gx || gw) && m > 0 && n > 0 && k > 0 && !narrow_dtype(dt) && cell_ctx()->num_threads > 1) {
    /* The products and the bias sums in one region when the products split. */
    int64_t nt = cell_ctx()->num_threads;
    cell_gemm gmx = {dt, m, k, n, cell_tensor_base(gv), grs, gcs, cell_tensor_base(w), w->stride[0], w->stride[1],
                     NULL, k, 1, 0};
    cell_gemm gmw = {dt, n, k, m, cell_tensor_base(gv), gcs, grs,
                     xv ? cell_tensor_base(xv) : NULL, xrs, xcs, NULL, k, 1, 0};
    int64_t px = gx ? cell_gemm_split_parts(&gmx, nt) : 0, pw = gw ? cell_gemm_split_parts(&gmw, nt) : 0;
    /* From 2 GW_RUN rows: gx by rows, gW by runs of them (pw unused). Below,
     * at two threads with both products wanted: one product each, uncut.
     * They are the same number of multiply-adds (m n k), and neither is
     * then packed twice (each part of a cut product packs all of its other
     * operand: gW's parts each packed all of x). Where one of them sums
     * over fewer than PAIR_MIN_K terms it runs slower per multiply-add
     * than the other, and the two are cut as before. The tiny GPT's
     * 512 x 64 x 64 backward at 2 threads: 58 -> 54 us, its head's 512 x
     * 40 x 64: 44 -> 38 us (1 thread: 94, 67). */
    int64_t nch = gw ? gw_runs(m) : 1;
    if (nch == 1 && nt == 2 && gx && gw && n >= PAIR_MIN_K && m >= PAIR_MIN_K && (px > 1 || pw > 1)) px = pw = 1;
    /* also two products that do not split but are worth a thread each */
    int pair = gx && gw && (double)m * (double)n * (double)k >= (double)PAIR_WORK;
    if (px > 1 || pw > 1 || pair || nch > 1) {
      if (gx) s = cell_tensor_new_contig(dt, x->ndim, x->shape, &rx);
      if (s == CELL_OK && gw) s = cell_tensor_new_contig(dt, 2, w->shape, &rw);
      if (s == CELL_OK && gb) s = cell_tensor_new_contig(dt, 1, &n, &rb);
      if (s == CELL_OK) {
        fused_bwd f = {gx ? &gmx : NULL, gw ? &gmw : NULL, px, pw, NULL, NULL, grs, gcs, m, n, 0, 0, CELL_OK, nch, NULL,
                     NULL};
        if (gx) gmx.c = cell_tensor_base(rx);
        if (gw) gmw.c = cell_tensor_base(rw);
        if (gb) {
          f.gp = cell_tensor_base(gv);
          f.op = cell_tensor_base(rb);
          f.bw = ((n + nt - 1) / nt + 7) / 8 * 8;
          if (f.bw > COL_BLK) f.bw = COL_BLK;
          f.nblk = (n + f.bw - 1) / f.bw;
        }
        if (nch > 1) {
          int64_t es = dt == CELL_DTYPE_F32 ? 4 : 8;
          f.tmp = cell_alloc((size_t)((nch - 1) * n * k * es));
          f.bpart = gb ? cell_alloc(sizeof(double) * (size_t)(nch * n)) : NULL;
          s = f.tmp && (f.bpart || !gb) ? fused_backward_runs(&f)
                                        : cell_error(CELL_ERR_MEMORY, "linear_backward: out of memory");
          cell_dealloc(f.tmp);
          cell_dealloc(f.bpart);
        } else {
          s = fused_backward(&f);
        }
      }
      fused = 1;
    }
  }
  if (s == CELL_OK && gx && gw && dt == CELL_DTYPE_BF16 && m > 0 && n > 0 && k > 0 && cell_bf16_gemm_native()) {
    /* bfloat16: both products in one fork (lowp.c) */
    s = cell_tensor_new_contig(dt, x->ndim, x->shape, &rx);
    if (s == CELL_OK) s = cell_tensor_new_contig(dt, 2, w->shape, &rw);
    cell_gemm gmx = {dt, m, k, n, cell_tensor_base(gv), grs, gcs, cell_tensor_base(w), w->stride[0], w->stride[1],
                     rx ? cell_tensor_base(rx) : NULL, k, 1, 0};
    cell_gemm gmw = {dt, n, k, m, cell_tensor_base(gv), gcs, grs, cell_tensor_base(xv), xrs, xcs,
                     rw ? cell_tensor_base(rw) : NULL, k, 1, 0};
    if (s == CELL_OK) s = cell_bf16_gemm_pair(&gmx, &gmw);
    paired = 1;
  }
  if (s == CELL_OK && gx && !fused && !paired) {
    s = cell_tensor_new_contig(dt, x->ndim, x->shape, &rx);
    if (s == CELL_OK && (m == 0 || k == 0)) {
      /* nothing to write */
    } else if (s == CELL_OK && n == 0) {
      s = cell_k_fill_(rx, 0);
    } else if (s == CELL_OK) { /* [m, k] = g [m, n] @ W [n, k] */
      cell_gemm gm = {dt, m, k, n, cell_tensor_base(gv), grs, gcs,
                      cell_tensor_base(w), w->stride[0], w->stride[1], cell_tensor_base(rx), k, 1, 0};
      s = cell_gemm_run(&gm);
    }
  }
  if (s == CELL_OK && gw && !fused && !paired) {
    s = cell_tensor_new_contig(dt, 2, w->shape, &rw);
    if (s == CELL_OK && (n == 0 || k == 0)) {
      /* empty */
    } else if (s == CELL_OK && m == 0) {
      s = cell_k_fill_(rw, 0);
    } else if (s == CELL_OK) { /* [n, k] = g^T [n, m] @ x [m, k] */
      cell_gemm gm = {dt, n, k, m, cell_tensor_base(gv), gcs, grs,
                      cell_tensor_base(xv), xrs, xcs, cell_tensor_base(rw), k, 1, 0};
      int64_t nch = narrow_dtype(dt) ? 1 : gw_runs(m);
      s = nch > 1 ? gw_runs_serial(&gm, nch) : cell_gemm_run(&gm);
    }
  }
  if (s == CELL_OK && gb && !fused) {
    s = cell_tensor_new_contig(dt, 1, &n, &rb);
    if (s == CELL_OK) {
      const char *gp = cell_tensor_base(gv);
      char *op = cell_tensor_base(rb);
      int64_t rs = grs, cs = gcs, nch = gw && !narrow_dtype(dt) ? gw_runs(m) : 1;
      double *part = nch > 1 ? cell_alloc(sizeof(double) * (size_t)(nch * n)) : NULL;
      if (nch > 1 && !part) {
        s = cell_error(CELL_ERR_MEMORY, "linear_backward: out of memory");
      } else if (part) { /* as gW's runs take it (fused_backward_runs) */
        for (int64_t r = 0; r < nch; r++) bias_run(dt, gp, rs, cs, m, n, r, part + r * n);
        bias_add_runs(dt, part, nch, n, op, 0, n);
        cell_dealloc(part);
      } else if (dt == CELL_DTYPE_F32)
        COL_SUMS(float);
      else if (dt == CELL_DTYPE_F64)
        COL_SUMS(double);
      else
        col_sums_narrow(dt, (const uint16_t *)(const void *)gp, (uint16_t *)(void *)op, rs, cs, m, n);
    }
  }
  cell_tensor_release(gown);
  cell_tensor_release(xown);
  if (s != CELL_OK) {
    cell_release4(s, rx, rw, rb, NULL);
    return s;
  }
  if (gx) *gx = rx;
  if (gw) *gw = rw;
  if (gb) *gb = rb;
  return CELL_OK;
}
