/* reduce.c - reductions: sum, mean, prod, max, min, all, any; max / min
 * along a dimension with their positions, argmax / argmin, var / std,
 * p-norms and cumsum.
 *
 * A reduction is planned once (rplan): the kept dimensions, in order, index
 * the contiguous output; the reduced dimensions, in order, are walked for
 * each output element, so positions (argmax, max_dim) count in the logical
 * row-major order whatever the strides. Size-1 dimensions are dropped and
 * neighbours that are contiguous with each other merged, so a contiguous
 * reduce-all or reduce-last-dim walks one run.
 *
 * Elements are loaded in chunks into a double buffer (or an int64 buffer for
 * the exact integer paths: integer and bool sums, products and extrema) and
 * folded there, so every dtype and stride layout (transposed, expanded with
 * stride 0, offset views) shares one set of kernels. Two shortcuts:
 * - unit-stride float32 / float64 runs (a contiguous reduce-all or reduce-
 *   last-dim) are folded directly; a large reduce-all is split into a fixed
 *   number of blocks over threads;
 * - column mode: when the innermost kept dim is denser than the reduced ones
 *   (a sum over the batch dim, cumsum over a leading dim), a block of output
 *   columns is folded per reduced element, in per-thread scratch.
 * Every output element folds its inputs in an order fixed by the layout, so
 * results do not depend on the number of threads.
 *
 * Integer sums and products wrap modulo 2^64 (computed in uint64_t); float
 * inputs accumulate in double. */
#include "../core/alloc.h"
#include "kernels.h"
#include "../core/iter.h"
#include "ops.h"
#ifdef _OPENMP
#include <omp.h>
#include "kernel_list.h"
#endif

#define CHUNK 256 /* elements loaded into a buffer at a time */
#define COLB_MIN 256  /* column mode: narrowest block of columns (threads permitting) */
#define COLB_MAX 8192 /* and the widest */
#define NBLOCKS 64 /* blocks of a large reduce-all (fixed: deterministic) */

/* Runs of elements load through cell_load_run / cell_load_run_i64 (core/dtype.h). */
typedef union {
  double f[CHUNK];
  int64_t i[CHUNK];
} chunk_buf;

/* --- folds ------------------------------------------------------------------ */

typedef enum {
  K_SUM,
  K_PROD,
  K_MAX,  /* NaN wins, first extreme kept */
  K_MIN,
  K_ALL,
  K_ANY,
  K_ASUM, /* sum |x| */
  K_SSQ,  /* sum x^2 */
  K_PSUM, /* sum |x|^p */
  K_AMAX, /* max |x|, NaN wins */
  K_DEV2  /* sum (x - mean)^2 */
} fold_kind;

typedef struct {
  fold_kind kind;
  int as_int;       /* fold int64 values exactly */
  double p, mean;   /* K_PSUM exponent, K_DEV2 centre */
} fold_spec;

typedef struct {
  double d;     /* double accumulator */
  uint64_t u;   /* integer sum / product (wraps) */
  int64_t i;    /* integer extreme; the ALL / ANY flag */
  int64_t pos;  /* position of the extreme among the reduced elements */
} fold_acc;

static void acc_init(const fold_spec *f, fold_acc *a) {
  a->d = 0.0;
  a->u = 0;
  a->i = 0;
  a->pos = 0; /* strict comparisons below keep position 0 when nothing beats it */
  switch (f->kind) {
  case K_PROD: a->d = 1.0; a->u = 1; break;
  case K_MAX: a->d = -INFINITY; a->i = INT64_MIN; break;
  case K_MIN: a->d = INFINITY; a->i = INT64_MAX; break;
  case K_ALL: a->i = 1; break;
  default: break;
  }
}

/* Fold n doubles at positions pos0.. into a; 1 when the result is settled. */
static int fold_f64(const fold_spec *f, fold_acc *a, const double *x, int64_t n, int64_t pos0) {
  double s = a->d;
  switch (f->kind) {
  case K_SUM:
    for (int64_t i = 0; i < n; i++) s += x[i];
    break;
  case K_PROD:
    for (int64_t i = 0; i < n; i++) s *= x[i];
    break;
  case K_MAX:
    for (int64_t i = 0; i < n; i++) {
      double v = x[i];
      if (v > s) {
        s = v;
        a->pos = pos0 + i;
      } else if (v != v) {
        a->d = v;
        a->pos = pos0 + i;
        return 1;
      }
    }
    break;
  case K_MIN:
    for (int64_t i = 0; i < n; i++) {
      double v = x[i];
      if (v < s) {
        s = v;
        a->pos = pos0 + i;
      } else if (v != v) {
        a->d = v;
        a->pos = pos0 + i;
        return 1;
      }
    }
    break;
  case K_ALL:
    for (int64_t i = 0; i < n; i++)
      if (x[i] == 0.0) {
        a->i = 0;
        return 1;
      }
    return 0;
  case K_ANY:
    for (int64_t i = 0; i < n; i++)
      if (x[i] != 0.0) { /* NaN counts as true */
        a->i = 1;
        return 1;
      }
    return 0;
  case K_ASUM:
    for (int64_t i = 0; i < n; i++) s += fabs(x[i]);
    break;
  case K_SSQ:
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    break;
  case K_PSUM:
    for (int64_t i = 0; i < n; i++) s += pow(fabs(x[i]), f->p);
    break;
  case K_AMAX:
    for (int64_t i = 0; i < n; i++) {
      double v = fabs(x[i]);
      if (v > s) {
        s = v;
      } else if (v != v) {
        a->d = v;
        return 1;
      }
    }
    break;
  case K_DEV2:
    for (int64_t i = 0; i < n; i++) {
      double v = x[i] - f->mean;
      s += v * v;
    }
    break;
  }
  a->d = s;
  return 0;
}

static int fold_i64(const fold_spec *f, fold_acc *a, const int64_t *x, int64_t n,
                    int64_t pos0) {
  switch (f->kind) {
  case K_SUM: {
    uint64_t u = a->u;
    for (int64_t i = 0; i < n; i++) u += (uint64_t)x[i];
    a->u = u;
    return 0;
  }
  case K_PROD: {
    uint64_t u = a->u;
    for (int64_t i = 0; i < n; i++) u *= (uint64_t)x[i];
    a->u = u;
    return 0;
  }
  case K_MAX:
    for (int64_t i = 0; i < n; i++)
      if (x[i] > a->i) {
        a->i = x[i];
        a->pos = pos0 + i;
      }
    return 0;
  case K_MIN:
    for (int64_t i = 0; i < n; i++)
      if (x[i] < a->i) {
        a->i = x[i];
        a->pos = pos0 + i;
      }
    return 0;
  case K_ALL:
    for (int64_t i = 0; i < n; i++)
      if (x[i] == 0) {
        a->i = 0;
        return 1;
      }
    return 0;
  case K_ANY:
    for (int64_t i = 0; i < n; i++)
      if (x[i] != 0) {
        a->i = 1;
        return 1;
      }
    return 0;
  default: /* the other folds always run on doubles */
    return 0;
  }
}

/* --- planning ------------------------------------------------------------- */

typedef struct {
  cell_dtype dt;
  int es;
  const char *base;
  int nout, nred;                   /* at least 1 each (placeholders of size 1) */
  int64_t oshape[CELL_MAX_DIMS], ostride[CELL_MAX_DIMS]; /* kept dims, byte strides */
  int64_t rshape[CELL_MAX_DIMS], rstride[CELL_MAX_DIMS]; /* reduced dims, byte strides */
  int64_t outer_n, red_n;           /* output elements, elements per output */
} rplan;

static void plan_add(int *nd, int64_t *shape, int64_t *stride, int64_t n, int64_t st) {
  if (n == 1) return;
  if (*nd > 0 && stride[*nd - 1] == st * n) { /* merges with the previous dim */
    shape[*nd - 1] *= n;
    stride[*nd - 1] = st;
    return;
  }
  shape[*nd] = n;
  stride[*nd] = st;
  (*nd)++;
}

static void plan_init(rplan *pl, const cell_tensor *a, const bool *red) {
  pl->dt = a->dtype;
  pl->es = cell_dtype_size(a->dtype);
  pl->base = cell_tensor_base(a);
  pl->nout = pl->nred = 0;
  pl->outer_n = pl->red_n = 1;
  for (int d = 0; d < a->ndim; d++) {
    int64_t n = a->shape[d], st = a->stride[d] * pl->es;
    if (red[d]) {
      pl->red_n *= n;
      plan_add(&pl->nred, pl->rshape, pl->rstride, n, st);
    } else {
      pl->outer_n *= n;
      plan_add(&pl->nout, pl->oshape, pl->ostride, n, st);
    }
  }
  if (pl->nred == 0) {
    pl->rshape[0] = 1;
    pl->rstride[0] = 0;
    pl->nred = 1;
  }
  if (pl->nout == 0) {
    pl->oshape[0] = 1;
    pl->ostride[0] = 0;
    pl->nout = 1;
  }
}

/* Byte offset of output element o over the first nd kept dims. */
static int64_t outer_offset(const rplan *pl, int nd, int64_t o) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t i = o % pl->oshape[d];
    o /= pl->oshape[d];
    off += i * pl->ostride[d];
  }
  return off;
}

/* Fold the reduced elements under p0 into a. 1 when interrupted. */
static int fold_run(const rplan *pl, const fold_spec *f, const char *p0, fold_acc *a) {
  if (pl->red_n == 0) return 0;
  int nr = pl->nred;
  int64_t n = pl->rshape[nr - 1], s = pl->rstride[nr - 1];
  int64_t idx[CELL_MAX_DIMS] = {0};
  volatile int *intr = &cell_ctx()->interrupt;
  chunk_buf buf;
  const char *p = p0;
  int64_t pos = 0;
  for (;;) {
    for (int64_t i = 0; i < n; i += CHUNK) {
      int64_t m = n - i < CHUNK ? n - i : CHUNK;
      int done;
      if (f->as_int) {
        cell_load_run_i64(pl->dt, p + i * s, s, m, buf.i);
        done = fold_i64(f, a, buf.i, m, pos + i);
      } else {
        cell_load_run(pl->dt, p + i * s, s, m, buf.f);
        done = fold_f64(f, a, buf.f, m, pos + i);
      }
      if (done) return 0;
    }
    pos += n;
    int d = nr - 2;
    for (; d >= 0; d--) {
      if (++idx[d] < pl->rshape[d]) {
        p += pl->rstride[d];
        break;
      }
      p -= pl->rstride[d] * (pl->rshape[d] - 1);
      idx[d] = 0;
    }
    if (d < 0) return 0;
    if (*intr) return 1;
  }
}

/* --- running a reduction ---------------------------------------------------- */

typedef enum { POST_NONE, POST_MEAN, POST_SQRT, POST_ROOT, POST_VAR } post_kind;

typedef struct {
  const char *name;        /* for messages */
  rplan pl;
  fold_spec f;
  post_kind post;
  int ddof, take_sqrt;     /* POST_VAR */
  cell_tensor *values;     /* may be NULL (argmax) */
  cell_tensor *indices;    /* int64, may be NULL */
  int64_t index_base;
} rjob;

/* The double result of a finished double fold. */
static double post_value(const rjob *j, const fold_acc *a) {
  switch (j->post) {
  case POST_MEAN: return a->d / (double)j->pl.red_n; /* 0/0: NaN for an empty mean */
  case POST_SQRT: return sqrt(a->d);
  case POST_ROOT: return pow(a->d, 1.0 / j->f.p);
  default: return a->d;
  }
}

/* Variance of the elements under p: two passes (mean, then squared
 * deviations), divided by max(0, n - ddof) as torch does. */
static int var_one(const rjob *j, const char *p, double *out) {
  int64_t n = j->pl.red_n;
  if (n == 0) {
    *out = NAN;
    return 0;
  }
  fold_spec f = {K_SUM, 0, 0.0, 0.0};
  fold_acc a;
  acc_init(&f, &a);
  if (fold_run(&j->pl, &f, p, &a)) return 1;
  f.kind = K_DEV2;
  f.mean = a.d / (double)n;
  acc_init(&f, &a);
  if (fold_run(&j->pl, &f, p, &a)) return 1;
  double dof = (double)n - (double)j->ddof;
  double v = a.d / (dof > 0 ? dof : 0.0);
  *out = j->take_sqrt ? sqrt(v) : v;
  return 0;
}

/* Store the result of output element o. */
static void store_one(const rjob *j, const fold_acc *a, int64_t o) {
  if (j->values) {
    cell_tensor *v = j->values;
    char *dst = cell_tensor_base(v) + o * cell_dtype_size(v->dtype);
    if (j->f.kind == K_ALL || j->f.kind == K_ANY)
      cell_store_i64(v->dtype, dst, a->i);
    else if (j->f.as_int)
      cell_store_i64(v->dtype, dst,
                     (j->f.kind == K_SUM || j->f.kind == K_PROD) ? (int64_t)a->u : a->i);
    else
      cell_store_f64(v->dtype, dst, post_value(j, a));
  }
  if (j->indices) ((int64_t *)cell_tensor_base(j->indices))[o] = a->pos + j->index_base;
}

/* Fast path: unit-stride float32 / float64 runs. */
#define FAST_SUM(T)                                                        \
  static double fast_sum_##T(const T *x, int64_t n) {                      \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                 \
    int64_t i = 0;                                                         \
    for (; i + 4 <= n; i += 4) {                                           \
      s0 += x[i];                                                          \
      s1 += x[i + 1];                                                      \
      s2 += x[i + 2];                                                      \
      s3 += x[i + 3];                                                      \
    }                                                                      \
    for (; i < n; i++) s0 += x[i];                                         \
    return (s0 + s1) + (s2 + s3);                                          \
  }                                                                        \
  static double fast_ext_##T(const T *x, int64_t n, int is_min) {          \
    double m = is_min ? INFINITY : -INFINITY;                              \
    for (int64_t i = 0; i < n; i++) {                                      \
      double v = x[i];                                                     \
      if (v != v) return v;                                                \
      if (is_min ? v < m : v > m) m = v;                                   \
    }                                                                      \
    return m;                                                              \
  }
FAST_SUM(float)
FAST_SUM(double)
#undef FAST_SUM

static double fast_run(cell_dtype dt, fold_kind k, const char *p, int64_t n) {
  if (dt == CELL_DTYPE_F32)
    return k == K_SUM ? fast_sum_float((const float *)p, n)
                      : fast_ext_float((const float *)p, n, k == K_MIN);
  return k == K_SUM ? fast_sum_double((const double *)p, n)
                    : fast_ext_double((const double *)p, n, k == K_MIN);
}

static int fast_ok(const rjob *j) {
  const rplan *pl = &j->pl;
  fold_kind k = j->f.kind;
  return (pl->dt == CELL_DTYPE_F32 || pl->dt == CELL_DTYPE_F64) && !j->f.as_int &&
         !j->indices && j->values && (k == K_SUM || k == K_MAX || k == K_MIN) &&
         (j->post == POST_NONE || j->post == POST_MEAN) && pl->nred == 1 &&
         pl->rstride[0] == pl->es && pl->red_n > 0;
}

static cell_status run_fast(const rjob *j, int nthreads) {
  const rplan *pl = &j->pl;
  fold_kind k = j->f.kind;
  int64_t n = pl->red_n, total = pl->outer_n * n;
  if (pl->outer_n == 1) {
    fold_acc a;
    acc_init(&j->f, &a);
    if (n < CELL_PARALLEL_GRAIN) {
      a.d = fast_run(pl->dt, k, pl->base + outer_offset(pl, pl->nout, 0), n);
    } else { /* fixed blocks, combined in order */
      double part[NBLOCKS];
      int64_t chunk = (n + NBLOCKS - 1) / NBLOCKS;
      const char *p = pl->base;
      int par = nthreads > 1;
      CELL_FOR(par, int, b, NBLOCKS, {
        int64_t lo = (int64_t)b * chunk, m = n - lo < chunk ? n - lo : chunk;
        part[b] = m > 0 ? fast_run(pl->dt, k, p + lo * pl->es, m) : a.d; /* a.d: identity */
      });
      double r = part[0];
      for (int b = 1; b < NBLOCKS && r == r; b++) {
        double v = part[b];
        if (k == K_SUM) r += v;
        else if (v != v || (k == K_MAX ? v > r : v < r)) r = v;
      }
      a.d = r;
    }
    store_one(j, &a, 0);
  } else {
    int par = total >= CELL_PARALLEL_GRAIN && nthreads > 1;
    CELL_FOR(par, int64_t, o, pl->outer_n, {
      fold_acc a;
      acc_init(&j->f, &a);
      a.d = fast_run(pl->dt, k, pl->base + outer_offset(pl, pl->nout, o), n);
      store_one(j, &a, o);
    });
  }
  return cell_check_interrupt();
}

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

/* --- column blocks: scratch per thread -------------------------------- */

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

static int max_threads(void) {
#ifdef _OPENMP
  int n = omp_get_max_threads();
  return n > 0 ? n : 1;
#else
  return 1;
#endif
}

/* Width of the column blocks over `rows` lines of `cols` columns: wide (dense
 * runs, few TLB misses) but leaving a block per thread when it can. */
static int64_t block_width(int64_t rows, int64_t cols, int par) {
  int64_t w = cols;
  if (par) {
    int64_t nt = max_threads(), per_row = rows >= nt ? 1 : (nt + rows - 1) / rows;
    w = (cols + per_row - 1) / per_row;
    if (w < COLB_MIN) w = cols < COLB_MIN ? cols : COLB_MIN;
  }
  return w < COLB_MAX ? w : COLB_MAX;
}

/* Four arrays of w 8-byte slots per thread. */
typedef struct {
  double *accd, *bf;
  int64_t *acci, *bi;
} col_scratch;

static cell_status scratch_new(const char *op, int64_t w, int nslots, void **mem) {
  *mem = cell_alloc((size_t)nslots * (size_t)w * 4 * sizeof(double));
  if (!*mem)
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory allocating %lld bytes of scratch", op,
                      (long long)nslots * (long long)w * 32);
  return CELL_OK;
}

static col_scratch scratch_slot(void *mem, int64_t w, int nslots) {
  int t = thread_id();
  if (t >= nslots) t = nslots - 1; /* cannot happen: teams are at most max_threads */
  double *base = (double *)mem + (size_t)t * (size_t)w * 4;
  col_scratch cs = {base, base + w, (int64_t *)(base + 2 * w), (int64_t *)(base + 3 * w)};
  return cs;
}

/* Column mode: when the innermost kept dim is denser than the innermost
 * reduced one (a reduction over the batch dim, or over the last dim of a
 * transposed tensor), fold a block of output columns per reduced
 * element, so each load is a dense run. Sums, products and extrema (without
 * positions) only. */
static int col_ok(const rjob *j) {
  const rplan *pl = &j->pl;
  fold_kind k = j->f.kind;
  return (k == K_SUM || k == K_PROD || k == K_MAX || k == K_MIN) && !j->indices && j->values &&
         (j->post == POST_NONE || j->post == POST_MEAN) && pl->red_n > 1 &&
         pl->oshape[pl->nout - 1] >= 16 && pl->ostride[pl->nout - 1] != 0 &&
         iabs64(pl->ostride[pl->nout - 1]) < iabs64(pl->rstride[pl->nred - 1]);
}

/* Fold the m columns at p (os bytes apart) into the accumulators. */
static void col_fold(const rjob *j, const char *p, int64_t m, int64_t os, double *accd,
                     int64_t *acci, double *bf, int64_t *bi) {
  fold_kind k = j->f.kind;
  if (j->f.as_int) {
    cell_load_run_i64(j->pl.dt, p, os, m, bi);
    switch (k) {
    case K_SUM:
      for (int64_t c = 0; c < m; c++) acci[c] = (int64_t)((uint64_t)acci[c] + (uint64_t)bi[c]);
      break;
    case K_PROD:
      for (int64_t c = 0; c < m; c++) acci[c] = (int64_t)((uint64_t)acci[c] * (uint64_t)bi[c]);
      break;
    case K_MAX:
      for (int64_t c = 0; c < m; c++) acci[c] = bi[c] > acci[c] ? bi[c] : acci[c];
      break;
    default:
      for (int64_t c = 0; c < m; c++) acci[c] = bi[c] < acci[c] ? bi[c] : acci[c];
      break;
    }
    return;
  }
  const double *x = bf;
  if (k == K_SUM && j->pl.dt == CELL_DTYPE_F32 && os == 4) { /* no staging */
    const float *xf = (const float *)p;
    for (int64_t c = 0; c < m; c++) accd[c] += xf[c];
    return;
  }
  if (k == K_SUM && j->pl.dt == CELL_DTYPE_BF16 && os == 2) { /* bias gradients under mixed precision */
    const uint16_t *xh = (const uint16_t *)p;
    for (int64_t c = 0; c < m; c++) accd[c] += cell_bf16_to_float(xh[c]);
    return;
  }
  cell_load_run(j->pl.dt, p, os, m, bf);
  switch (k) {
  case K_SUM:
    for (int64_t c = 0; c < m; c++) accd[c] += x[c];
    break;
  case K_PROD:
    for (int64_t c = 0; c < m; c++) accd[c] *= x[c];
    break;
  case K_MAX: /* a NaN, once in, stays */
    for (int64_t c = 0; c < m; c++)
      if (x[c] > accd[c] || x[c] != x[c]) accd[c] = x[c];
    break;
  default:
    for (int64_t c = 0; c < m; c++)
      if (x[c] < accd[c] || x[c] != x[c]) accd[c] = x[c];
    break;
  }
}

static cell_status run_col(const rjob *j, int nthreads) {
  const rplan *pl = &j->pl;
  int64_t olast = pl->oshape[pl->nout - 1], os = pl->ostride[pl->nout - 1];
  int64_t rows = pl->outer_n / olast;
  int par = pl->outer_n * pl->red_n >= CELL_PARALLEL_GRAIN && nthreads > 1;
  int64_t w = block_width(rows, olast, par);
  int64_t per_row = (olast + w - 1) / w, nblocks = rows * per_row;
  par = par && nblocks > 1;
  int nslots = par ? max_threads() : 1;
  void *mem;
  CELL_TRY(scratch_new(j->name, w, nslots, &mem));
  fold_acc init;
  acc_init(&j->f, &init);
  int64_t iinit = j->f.kind == K_SUM ? 0 : j->f.kind == K_PROD ? 1 : init.i;
  volatile int *intr = &cell_ctx()->interrupt;
  int stop = 0;
  /* (store_one's per-element calls were half of a 16 x 2048 sum's time, the
   * tiny GPT's position-embedding gradient: 39 us) */
  int f32_out = j->values && !j->indices && !j->f.as_int && j->values->dtype == CELL_DTYPE_F32 &&
                (j->post == POST_NONE || j->post == POST_MEAN);
  CELL_FOR(par, int64_t, b, nblocks, {
    if (stop) continue;
    if (*intr) {
      stop = 1;
      continue;
    }
    col_scratch sc = scratch_slot(mem, w, nslots);
    int64_t row = b / per_row, c0 = (b % per_row) * w;
    int64_t m = olast - c0 < w ? olast - c0 : w;
    const char *p = pl->base + outer_offset(pl, pl->nout - 1, row) + c0 * os;
    for (int64_t c = 0; c < m; c++) {
      sc.accd[c] = init.d;
      sc.acci[c] = iinit;
    }
    int64_t idx[CELL_MAX_DIMS] = {0};
    int nr = pl->nred;
    for (;;) {
      col_fold(j, p, m, os, sc.accd, sc.acci, sc.bf, sc.bi);
      int d = nr - 1;
      for (; d >= 0; d--) {
        if (++idx[d] < pl->rshape[d]) {
          p += pl->rstride[d];
          break;
        }
        p -= pl->rstride[d] * (pl->rshape[d] - 1);
        idx[d] = 0;
      }
      if (d < 0) break;
    }
    if (f32_out) { /* float32 sums and means: store_one's value, without its per-element dispatch */
      float *dst = (float *)(void *)cell_tensor_base(j->values) + row * olast + c0;
      if (j->post == POST_MEAN)
        for (int64_t c = 0; c < m; c++) dst[c] = (float)(sc.accd[c] / (double)pl->red_n);
      else
        for (int64_t c = 0; c < m; c++) dst[c] = (float)sc.accd[c];
    } else {
      for (int64_t c = 0; c < m; c++) {
        fold_acc a = {sc.accd[c], (uint64_t)sc.acci[c], sc.acci[c], 0};
        store_one(j, &a, row * olast + c0 + c);
      }
    }
  });
  cell_dealloc(mem);
  if (stop || *intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  return CELL_OK;
}

static cell_status run_job(const rjob *j) {
  const rplan *pl = &j->pl;
  if (pl->outer_n == 0) return CELL_OK;
  int nthreads = cell_ctx()->num_threads;
  if (j->post != POST_VAR) {
    if (fast_ok(j)) return run_fast(j, nthreads);
    if (col_ok(j)) return run_col(j, nthreads);
  }
  int par = pl->outer_n > 1 && pl->outer_n * pl->red_n >= CELL_PARALLEL_GRAIN && nthreads > 1;
  volatile int *intr = &cell_ctx()->interrupt;
  int stop = 0;
  CELL_FOR(par, int64_t, o, pl->outer_n, {
    if (stop) continue;
    if (*intr) {
      stop = 1;
      continue;
    }
    const char *p = pl->base + outer_offset(pl, pl->nout, o);
    if (j->post == POST_VAR) {
      double v;
      if (var_one(j, p, &v)) {
        stop = 1;
        continue;
      }
      cell_store_f64(j->values->dtype,
                     cell_tensor_base(j->values) + o * cell_dtype_size(j->values->dtype), v);
      continue;
    }
    fold_acc a;
    acc_init(&j->f, &a);
    if (fold_run(pl, &j->f, p, &a)) {
      stop = 1;
      continue;
    }
    store_one(j, &a, o);
  });
  if (stop || *intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  return CELL_OK;
}

/* --- argument handling ------------------------------------------------------ */

/* Mark the reduced dims: ndims == 0 means all of them. */
static cell_status parse_dims(const char *op, const cell_tensor *a, int ndims, const int *dims,
                              bool *red) {
  for (int d = 0; d < CELL_MAX_DIMS; d++) red[d] = ndims == 0;
  if (ndims < 0)
    return cell_error(CELL_ERR_VALUE, "%s: the number of dimensions must be >= 0, got %d", op,
                      ndims);
  if (ndims > 0 && !dims) return cell_error(CELL_ERR_VALUE, "%s: NULL list of dimensions", op);
  bool seen[CELL_MAX_DIMS] = {false};
  for (int k = 0; k < ndims; k++) {
    CELL_TRY(cell_check_dim(op, dims[k], a->ndim));
    if (seen[dims[k]])
      return cell_error(CELL_ERR_VALUE,
                        "%s: dimension %d appears more than once in the list of dimensions", op,
                        dims[k]);
    seen[dims[k]] = true;
    red[dims[k]] = true;
  }
  return CELL_OK;
}

static int out_shape(const cell_tensor *a, const bool *red, int keepdim, int64_t *shape) {
  int n = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (!red[d]) shape[n++] = a->shape[d];
    else if (keepdim) shape[n++] = 1;
  }
  return n;
}

static cell_status empty_error(const char *op, const cell_tensor *a) {
  char b[256];
  return cell_error(CELL_ERR_VALUE,
                    "%s: cannot reduce over zero elements (input of shape %s): the operation "
                    "has no identity",
                    op, cell_shape_str(a->ndim, a->shape, b, sizeof b));
}

/* Allocate the outputs, run, and hand them over (or release them). */
static cell_status finish(rjob *j, const cell_tensor *a, const bool *red, int keepdim,
                          cell_dtype vdt, cell_tensor **values, cell_tensor **indices) {
  int64_t shape[CELL_MAX_DIMS];
  int nd = out_shape(a, red, keepdim, shape);
  cell_tensor *v = NULL, *ix = NULL;
  cell_status s = CELL_OK;
  if (values) s = cell_tensor_new_contig(vdt, nd, shape, &v);
  if (s == CELL_OK && indices) s = cell_tensor_new_contig(CELL_DTYPE_I64, nd, shape, &ix);
  if (s == CELL_OK) {
    j->values = v;
    j->indices = ix;
    s = run_job(j);
  }
  if (s != CELL_OK) return cell_release4(s, v, ix, NULL, NULL);
  if (values) *values = v;
  if (indices) *indices = ix;
  return CELL_OK;
}

static void job_init(rjob *j, const char *name, const cell_tensor *a, const bool *red,
                     fold_kind k, int as_int, post_kind post) {
  memset(j, 0, sizeof *j);
  j->name = name;
  plan_init(&j->pl, a, red);
  j->f.kind = k;
  j->f.as_int = as_int;
  j->post = post;
}

/* --- public entry points ---------------------------------------------------- */

static const char *const redop_names[CELL_REDOP_COUNT] = {"sum", "mean", "prod", "max",
                                                          "min", "all",  "any"};

cell_status cell_cpu_reduce(cell_redop op, const cell_tensor *a, int ndims, const int *dims,
                           int keepdim, cell_tensor **out) {
  if ((unsigned)op >= CELL_REDOP_COUNT)
    return cell_error(CELL_ERR_VALUE, "reduce: unknown reduction %d", (int)op);
  const char *name = redop_names[op];
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  bool red[CELL_MAX_DIMS];
  CELL_TRY(parse_dims(name, a, ndims, dims, red));
  cell_dtype dt = a->dtype, rt;
  int is_float = cell_dtype_is_float(dt);
  fold_kind k;
  post_kind post = POST_NONE;
  int as_int = 0;
  switch (op) {
  case CELL_RED_SUM:
  case CELL_RED_PROD:
    k = op == CELL_RED_SUM ? K_SUM : K_PROD;
    rt = is_float ? dt : CELL_DTYPE_I64;
    as_int = !is_float;
    break;
  case CELL_RED_MEAN:
    k = K_SUM;
    post = POST_MEAN;
    rt = is_float ? dt : CELL_DTYPE_F32;
    break;
  case CELL_RED_MAX:
  case CELL_RED_MIN:
    k = op == CELL_RED_MAX ? K_MAX : K_MIN;
    rt = dt;
    as_int = !is_float;
    break;
  default: /* ALL, ANY */
    k = op == CELL_RED_ALL ? K_ALL : K_ANY;
    rt = CELL_DTYPE_BOOL;
    as_int = !is_float;
    break;
  }
  rjob j;
  job_init(&j, name, a, red, k, as_int, post);
  if ((k == K_MAX || k == K_MIN) && j.pl.red_n == 0) return empty_error(name, a);
  return finish(&j, a, red, keepdim, rt, out, NULL);
}

/* max / min with positions over the dims marked in red. */
static cell_status arg_extreme(const char *name, const cell_tensor *a, const bool *red,
                               int keepdim, int is_min, int64_t index_base,
                               cell_tensor **values, cell_tensor **indices) {
  rjob j;
  job_init(&j, name, a, red, is_min ? K_MIN : K_MAX, !cell_dtype_is_float(a->dtype), POST_NONE);
  j.index_base = index_base;
  if (j.pl.red_n == 0) return empty_error(name, a);
  return finish(&j, a, red, keepdim, a->dtype, values, indices);
}

cell_status cell_cpu_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min,
                            int64_t index_base, cell_tensor **values, cell_tensor **indices) {
  const char *name = is_min ? "min" : "max";
  if (!a || (!values && !indices)) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  CELL_TRY(cell_check_dim(name, dim, a->ndim));
  bool red[CELL_MAX_DIMS] = {false};
  red[dim] = true;
  return arg_extreme(name, a, red, keepdim, is_min, index_base, values, indices);
}

cell_status cell_cpu_argmax(const cell_tensor *a, int dim, int keepdim, int is_min,
                           int64_t index_base, cell_tensor **out) {
  const char *name = is_min ? "argmin" : "argmax";
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  bool red[CELL_MAX_DIMS];
  for (int d = 0; d < CELL_MAX_DIMS; d++) red[d] = dim < 0;
  if (dim >= 0) {
    CELL_TRY(cell_check_dim(name, dim, a->ndim));
    red[dim] = true;
  }
  return arg_extreme(name, a, red, keepdim, is_min, index_base, NULL, out);
}

cell_status cell_cpu_var(const cell_tensor *a, int ndims, const int *dims, int ddof, int keepdim,
                        int take_sqrt, cell_tensor **out) {
  const char *name = take_sqrt ? "std" : "var";
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  bool red[CELL_MAX_DIMS];
  CELL_TRY(parse_dims(name, a, ndims, dims, red));
  cell_dtype rt = cell_dtype_is_float(a->dtype) ? a->dtype : CELL_DTYPE_F32;
  rjob j;
  job_init(&j, name, a, red, K_SUM, 0, POST_VAR);
  j.ddof = ddof;
  j.take_sqrt = take_sqrt;
  return finish(&j, a, red, keepdim, rt, out, NULL);
}

cell_status cell_cpu_norm(const cell_tensor *a, double p, int ndims, const int *dims, int keepdim,
                         cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "norm: NULL argument");
  if (p == 0 || isnan(p) || p == -INFINITY) /* no p-norms: callers count, or take the minimum */
    return cell_error(CELL_ERR_VALUE, "norm: the order p must be a nonzero number other than -inf, got %g",
                      p);
  bool red[CELL_MAX_DIMS];
  CELL_TRY(parse_dims("norm", a, ndims, dims, red));
  cell_dtype rt = cell_dtype_is_float(a->dtype) ? a->dtype : CELL_DTYPE_F32;
  fold_kind k;
  post_kind post;
  if (isinf(p)) {
    k = K_AMAX;
    post = POST_NONE;
  } else if (p == 1.0) {
    k = K_ASUM;
    post = POST_NONE;
  } else if (p == 2.0) {
    k = K_SSQ;
    post = POST_SQRT;
  } else {
    k = K_PSUM;
    post = POST_ROOT;
  }
  rjob j;
  job_init(&j, "norm", a, red, k, 0, post);
  j.f.p = p;
  return finish(&j, a, red, keepdim, rt, out, NULL);
}

/* --- cumsum ---------------------------------------------------------------------- */

/* One line of len elements: input at ip (is bytes apart), output at op. */
static void cumsum_line(cell_dtype dt, cell_dtype rt, const char *ip, int64_t is, char *op,
                        int64_t ostr, int64_t len) {
  if (dt == CELL_DTYPE_F32 && is == 4 && ostr == 4) {
    const float *x = (const float *)ip;
    float *y = (float *)op;
    double acc = 0.0;
    for (int64_t i = 0; i < len; i++) {
      acc += x[i];
      y[i] = (float)acc;
    }
    return;
  }
  chunk_buf buf;
  if (rt == CELL_DTYPE_I64) {
    uint64_t acc = 0;
    for (int64_t i = 0; i < len; i += CHUNK) {
      int64_t m = len - i < CHUNK ? len - i : CHUNK;
      cell_load_run_i64(dt, ip + i * is, is, m, buf.i);
      for (int64_t k = 0; k < m; k++) {
        acc += (uint64_t)buf.i[k];
        *(int64_t *)(op + (i + k) * ostr) = (int64_t)acc;
      }
    }
    return;
  }
  double acc = 0.0;
  for (int64_t i = 0; i < len; i += CHUNK) {
    int64_t m = len - i < CHUNK ? len - i : CHUNK;
    cell_load_run(dt, ip + i * is, is, m, buf.f);
    for (int64_t k = 0; k < m; k++) {
      acc += buf.f[k];
      cell_store_f64(rt, op + (i + k) * ostr, acc);
    }
  }
}

/* Block mode: m neighbouring lines at once, when the lines' own axis is the
 * sparser one (cumsum over a leading dim): lines starting at ip / op, cs /
 * ocs bytes apart. */
static void cumsum_block(cell_dtype dt, cell_dtype rt, const char *ip, int64_t is, int64_t cs,
                         char *op, int64_t ostr, int64_t ocs, int64_t len, int64_t m,
                         col_scratch sc) {
  double *accd = sc.accd, *bf = sc.bf;
  int64_t *acci = sc.acci, *bi = sc.bi;
  for (int64_t c = 0; c < m; c++) {
    accd[c] = 0.0;
    acci[c] = 0;
  }
  for (int64_t k = 0; k < len; k++) {
    const char *x = ip + k * is;
    char *y = op + k * ostr;
    if (rt == CELL_DTYPE_I64) {
      cell_load_run_i64(dt, x, cs, m, bi);
      for (int64_t c = 0; c < m; c++) {
        acci[c] = (int64_t)((uint64_t)acci[c] + (uint64_t)bi[c]);
        *(int64_t *)(y + c * ocs) = acci[c];
      }
    } else if (dt == CELL_DTYPE_F32 && cs == 4 && ocs == 4) {
      for (int64_t c = 0; c < m; c++) {
        accd[c] += ((const float *)x)[c];
        ((float *)y)[c] = (float)accd[c];
      }
    } else {
      cell_load_run(dt, x, cs, m, bf);
      for (int64_t c = 0; c < m; c++) {
        accd[c] += bf[c];
        cell_store_f64(rt, y + c * ocs, accd[c]);
      }
    }
  }
}

static cell_status cumsum_run(const cell_tensor *a, int dim, cell_tensor *r) {
  int64_t total = cell_tensor_numel(a);
  if (total == 0) return CELL_OK;
  int64_t es = cell_dtype_size(a->dtype), oes = cell_dtype_size(r->dtype);
  int64_t len = 1, is = 0, ostr = 0;
  int nd = 0;
  int64_t shp[CELL_MAX_DIMS], ist[CELL_MAX_DIMS], ost[CELL_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) {
    if (d == dim) {
      len = a->shape[d];
      is = a->stride[d] * es;
      ostr = r->stride[d] * oes;
    } else {
      shp[nd] = a->shape[d];
      ist[nd] = a->stride[d] * es;
      ost[nd] = r->stride[d] * oes;
      nd++;
    }
  }
  /* Lines in blocks of bw neighbours along the innermost other axis. */
  int nthreads = cell_ctx()->num_threads;
  int par = total >= CELL_PARALLEL_GRAIN && nthreads > 1;
  int blocked = nd > 0 && shp[nd - 1] >= 16 && ist[nd - 1] != 0 && iabs64(ist[nd - 1]) < iabs64(is);
  int64_t inner = blocked ? shp[nd - 1] : 1, cs = blocked ? ist[nd - 1] : 0;
  int64_t ocs = blocked ? ost[nd - 1] : 0, rows = total / len / inner;
  int64_t bw = blocked ? block_width(rows, inner, par) : 1;
  int64_t per_row = (inner + bw - 1) / bw, nblocks = rows * per_row;
  int onl = blocked ? nd - 1 : nd; /* axes decomposed per block */
  par = par && nblocks > 1;
  int nslots = par ? max_threads() : 1;
  void *mem = NULL;
  if (blocked) CELL_TRY(scratch_new("cumsum", bw, nslots, &mem));
  const char *ib = cell_tensor_base(a);
  char *ob = cell_tensor_base(r);
  volatile int *intr = &cell_ctx()->interrupt;
  int stop = 0;
  CELL_FOR(par, int64_t, b, nblocks, {
    if (stop) continue;
    if (*intr) {
      stop = 1;
      continue;
    }
    int64_t q = b / per_row, c0 = (b % per_row) * bw, ioff = 0, ooff = 0;
    for (int d = onl - 1; d >= 0; d--) {
      int64_t i = q % shp[d];
      q /= shp[d];
      ioff += i * ist[d];
      ooff += i * ost[d];
    }
    if (blocked) {
      int64_t m = inner - c0 < bw ? inner - c0 : bw;
      cumsum_block(a->dtype, r->dtype, ib + ioff + c0 * cs, is, cs, ob + ooff + c0 * ocs, ostr,
                   ocs, len, m, scratch_slot(mem, bw, nslots));
    } else {
      cumsum_line(a->dtype, r->dtype, ib + ioff, is, ob + ooff, ostr, len);
    }
  });
  cell_dealloc(mem);
  if (stop || *intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  return CELL_OK;
}

/* t's header walking dim backwards: the last element along dim first. */
static cell_tensor reversed_view(const cell_tensor *t, int dim) {
  cell_tensor v = *t;
  if (t->ndim && t->shape[dim] > 0) {
    v.offset += (t->shape[dim] - 1) * t->stride[dim];
    v.stride[dim] = -t->stride[dim];
  }
  return v;
}

/* cumsum, or from the end of dim when reverse (cumsum's backward: the
 * gradient of x[k] is the sum of g[j] for j >= k). */
static cell_status cumsum_any(const char *op, const cell_tensor *a, int dim, int reverse,
                              cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(cell_check_dim(op, dim, a->ndim));
  cell_dtype rt = cell_dtype_is_float(a->dtype) ? a->dtype : CELL_DTYPE_I64;
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(rt, a->ndim, a->shape, &r));
  cell_status s;
  if (reverse) {
    cell_tensor av = reversed_view(a, dim), rv = reversed_view(r, dim);
    s = cumsum_run(&av, dim, &rv);
  } else {
    s = cumsum_run(a, dim, r);
  }
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_cumsum(const cell_tensor *a, int dim, cell_tensor **out) {
  return cumsum_any("cumsum", a, dim, 0, out);
}

cell_status cell_cpu_cumsum_reverse(const cell_tensor *a, int dim, cell_tensor **out) {
  return cumsum_any("cumsum_reverse", a, dim, 1, out);
}
