/* iter.c - broadcasting, dimension merging and the threaded outer loop. */
#include "iter.h"

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

/* Pointers of row r (an index over all dimensions but the last). */
static void row_ptrs(const cell_iter *it, int64_t r, char **p) {
  for (int k = 0; k < it->nops; k++) p[k] = it->base[k];
  for (int d = it->ndim - 2; d >= 0; d--) {
    int64_t i = r % it->shape[d];
    r /= it->shape[d];
    for (int k = 0; k < it->nops; k++) p[k] += i * it->stride[k][d];
  }
}

cell_status cell_iter_run(cell_iter *it, cell_loop_fn fn, void *ctx) {
  for (int i = 0; i < it->ndim; i++)
    if (it->shape[i] == 0) return CELL_OK;
  coalesce(it);
  int64_t inner = it->shape[it->ndim - 1];
  int64_t rows = cell_shape_numel(it->ndim - 1, it->shape);
  int64_t total = rows * inner;
  int64_t work = total > INT64_MAX / it->cost ? INT64_MAX : total * it->cost;
  int64_t istride[CELL_ITER_MAX];
  for (int k = 0; k < it->nops; k++) istride[k] = it->stride[k][it->ndim - 1];
  volatile int *intr = &cell_ctx()->interrupt;
  int nthreads = cell_ctx()->num_threads;

  if (rows == 1) {
    /* One long row: split it into chunks when it is large. */
    int64_t nchunks = work >= CELL_PARALLEL_GRAIN && nthreads > 1 ? nthreads : 1;
    int64_t chunk = (inner + nchunks - 1) / nchunks;
    CELL_FOR(nchunks > 1, int64_t, c, nchunks, {
      int64_t lo = c * chunk, n = inner - lo < chunk ? inner - lo : chunk;
      if (n <= 0) continue;
      char *p[CELL_ITER_MAX];
      for (int k = 0; k < it->nops; k++) p[k] = it->base[k] + lo * istride[k];
      fn(ctx, n, p, istride);
    });
    return *intr ? cell_error(CELL_ERR_INTERRUPT, "interrupted") : CELL_OK;
  }
  int par = work >= CELL_PARALLEL_GRAIN && nthreads > 1;
  if (!par) { /* rows in order, each row's pointers stepped from the last's */
    char *p[CELL_ITER_MAX];
    int64_t idx[CELL_MAX_DIMS] = {0};
    for (int k = 0; k < it->nops; k++) p[k] = it->base[k];
    for (int64_t r = 0; r < rows; r++) {
      if (*intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
      fn(ctx, inner, p, istride);
      for (int d = it->ndim - 2; d >= 0; d--) {
        for (int k = 0; k < it->nops; k++) p[k] += it->stride[k][d];
        if (++idx[d] < it->shape[d]) break;
        for (int k = 0; k < it->nops; k++) p[k] -= it->stride[k][d] * it->shape[d];
        idx[d] = 0;
      }
    }
    return CELL_OK;
  }
  int stop = 0;
  CELL_FOR(par, int64_t, r, rows, {
    if (stop) continue;
    if (*intr) {
      stop = 1;
      continue;
    }
    char *p[CELL_ITER_MAX];
    row_ptrs(it, r, p);
    fn(ctx, inner, p, istride);
  });
  if (stop || *intr) return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  return CELL_OK;
}
