/* iter.c - broadcasting, dimension merging and the threaded outer loop. */
#include "iter.h"
#include <omp.h>

void cell_iter_init(cell_iter *it, int ndim, const int64_t *shape) {
  it->nops = 0;
  it->ndim = ndim;
  it->cost = 1;
  for (int i = 0; i < ndim; i++) it->shape[i] = shape[i];
}

void cell_iter_add(cell_iter *it, const cell_tensor *t) {
  int k = it->nops++;
  int64_t es = cell_dtype_size(t->dtype);
  it->base[k] = cell_tensor_base(t);
  for (int i = 0; i < it->ndim; i++) {
    int ti = t->ndim - it->ndim + i;
    if (ti < 0 || t->shape[ti] == 1)
      it->stride[k][i] = 0;
    else
      it->stride[k][i] = t->stride[ti] * es;
  }
}

/* Drop size-1 dimensions and merge neighbours that are contiguous for all
 * operands; the innermost dimension ends last. */
static void coalesce(cell_iter *it) {
  int nd = 0;
  for (int i = 0; i < it->ndim; i++) {
    if (it->shape[i] == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < it->nops; k++)
        if (it->stride[k][nd - 1] != it->stride[k][i] * it->shape[i]) merge = false;
      if (merge) {
        it->shape[nd - 1] *= it->shape[i];
        for (int k = 0; k < it->nops; k++) it->stride[k][nd - 1] = it->stride[k][i];
        continue;
      }
    }
    it->shape[nd] = it->shape[i];
    for (int k = 0; k < it->nops; k++) it->stride[k][nd] = it->stride[k][i];
    nd++;
  }
  if (nd == 0) { /* a scalar: one element */
    it->shape[0] = 1;
    for (int k = 0; k < it->nops; k++) it->stride[k][0] = 0;
    nd = 1;
  }
  it->ndim = nd;
}

/* Elements [lo, hi) of the iteration, row by row (a range may start and end
 * inside a row); stops early when interrupted. The first row's pointers
 * come from its index, each next row's are stepped from the last's. */
static void run_range(const cell_iter *it, cell_loop_fn fn, void *ctx, int64_t lo, int64_t hi,
                      const int64_t *istride, volatile int *intr) {
  int64_t inner = it->shape[it->ndim - 1];
  int64_t r = lo / inner, col = lo % inner;
  char *p[CELL_ITER_MAX];
  int64_t idx[CELL_MAX_DIMS]; /* entries 0 .. ndim - 2, all set below */
  for (int k = 0; k < it->nops; k++) p[k] = it->base[k];
  for (int d = it->ndim - 2; d >= 0; d--) {
    idx[d] = r % it->shape[d];
    r /= it->shape[d];
    for (int k = 0; k < it->nops; k++) p[k] += idx[d] * it->stride[k][d];
  }
  while (lo < hi) {
    if (*intr) return;
    int64_t n = inner - col < hi - lo ? inner - col : hi - lo;
    char *q[CELL_ITER_MAX];
    for (int k = 0; k < it->nops; k++) q[k] = p[k] + col * istride[k];
    fn(ctx, n, q, istride);
    lo += n;
    col = 0;
    for (int d = it->ndim - 2; d >= 0; d--) { /* the next row */
      for (int k = 0; k < it->nops; k++) p[k] += it->stride[k][d];
      if (++idx[d] < it->shape[d]) break;
      for (int k = 0; k < it->nops; k++) p[k] -= it->stride[k][d] * it->shape[d];
      idx[d] = 0;
    }
  }
}

/* The cost of one row of a strided iteration (its index walk and the inner
 * loop's call), in elements of a contiguous float add: the bar
 * CELL_ITER_GRAIN counts work, not elements, so a copy that gathers short
 * rows (a Transformer's heads merged, [16, 4, 32, 16] transposed to
 * [16, 32, 4, 16] and reshaped) splits from fewer elements. Measured, one
 * thread, best of 15 x 50 calls: that copy of 32K floats (rows of 16) took
 * 15.3 us, a contiguous float add of 32K 4.0 us, so a row of 16 costs
 * about 60 elements; half of it is taken, which keeps every split at or
 * above its break-even. */
#define ITER_ROW_COST 32

cell_status cell_iter_run(cell_iter *it, cell_loop_fn fn, void *ctx) {
  for (int i = 0; i < it->ndim; i++)
    if (it->shape[i] == 0) return CELL_OK;
  coalesce(it);
  int64_t total = cell_shape_numel(it->ndim, it->shape);
  int64_t work = total > INT64_MAX / it->cost ? INT64_MAX : total * it->cost;
  /* Strided operands walk their rows: each row costs about ITER_ROW_COST
   * elements' work on top of its elements (see the definition). */
  if (it->ndim > 1 && work < INT64_MAX / 2) work += total / it->shape[it->ndim - 1] * ITER_ROW_COST;
  int64_t istride[CELL_ITER_MAX];
  for (int k = 0; k < it->nops; k++) istride[k] = it->stride[k][it->ndim - 1];
  volatile int *intr = &cell_ctx()->interrupt;
  int nthreads = cell_ctx()->num_threads;

  /* Inside a parallel region (a kernel run per item of an outer split, as
   * the optimizers' many steps are) the loop stays on its thread: a nested
   * region would be a team of one, at the cost of a fork. */
  if (work < CELL_ITER_GRAIN || nthreads < 2 || omp_in_parallel()) {
    if (it->ndim == 1) { /* one run (contiguous operands coalesce to it): no row walk */
      char *p[CELL_ITER_MAX];
      for (int k = 0; k < it->nops; k++) p[k] = it->base[k];
      fn(ctx, total, p, istride);
    } else {
      run_range(it, fn, ctx, 0, total, istride, intr);
    }
  } else {
    /* One range of the flat index per thread, cut anywhere (mid-row too):
     * the split is even whatever the rows, one long row or many short
     * ones. Thread k takes the k-th range every time, which for an NCHW
     * tensor is the same samples that the convolution, batch_norm and
     * pooling give it (static schedules), so it reads them from its own
     * core's cache. Each element is computed alone, so the split never
     * changes a result. */
    int64_t nchunks = nthreads;
    int64_t chunk = ((total + nchunks - 1) / nchunks + 63) / 64 * 64; /* whole cache lines */
    CELL_FOR(1, int64_t, c, nchunks, {
      int64_t lo = c * chunk, hi = lo + chunk < total ? lo + chunk : total;
      if (lo < hi) run_range(it, fn, ctx, lo, hi, istride, intr);
    });
  }
  return *intr ? cell_error(CELL_ERR_INTERRUPT, "interrupted") : CELL_OK;
}
