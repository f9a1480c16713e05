/* dropout.c - dropout with a mask drawn from the engine's counter-based
 * generator (src/core/rng.h), and the same mask applied again to a
 * gradient (src/ops/nn.h).
 *
 * Element j of the (row-major) input uses word j % 4 of Philox block
 * first + j / 4, so the mask is a pure function of (seed, first, j): the
 * fill splits over threads in chunks without changing it, and the backward
 * rule regenerates it instead of storing it. */
#include "nn.h"
#include "../core/iter.h"
#include "kernels.h"
#include "../core/rng.h"
#include "kernel_list.h"

#define CHUNK CELL_NN_CHUNK /* a multiple of 4: Philox blocks never split */
#define PAR_CHUNK ((int64_t)1 << 14)

typedef struct {
  cell_dtype xdt, ydt;
  const char *x;
  char *y;
  uint64_t threshold; /* keep when the 32-bit word is >= this */
  double scale;
  uint64_t seed, first;
} drop_ctx;

static void drop_range(const drop_ctx *c, int64_t lo, int64_t hi) {
  int64_t xe = cell_dtype_size(c->xdt), ye = cell_dtype_size(c->ydt);
  double buf[CHUNK];
  uint32_t w[4];
  for (int64_t i0 = lo; i0 < hi; i0 += CHUNK) {
    int64_t n = hi - i0 < CHUNK ? hi - i0 : CHUNK;
    cell_load_run(c->xdt, c->x + i0 * xe, xe, n, buf);
    for (int64_t i = 0; i < n; i += 4) {
      cell_philox(c->seed, c->first + (uint64_t)((i0 + i) / 4), w);
      for (int k = 0; k < 4 && i + k < n; k++)
        buf[i + k] = (uint64_t)w[k] >= c->threshold ? buf[i + k] * c->scale : 0.0;
    }
    cell_store_run(c->ydt, c->y + i0 * ye, ye, n, buf);
  }
}

static cell_status check_p(const char *op, double p) {
  if (!(p >= 0 && p <= 1))
    return cell_error(CELL_ERR_VALUE, "%s: the probability p must lie in [0, 1], got %g", op, p);
  return CELL_OK;
}

/* Allocate the output; reserve blocks (when first is NULL) only once nothing but
 * an interrupt can fail; fill. */
static cell_status run(const char *op, const cell_tensor *x, double p, uint64_t seed,
                       const uint64_t *first, uint64_t *seed_out, uint64_t *first_out,
                       cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(cell_nn_check_float(op, "the input", x));
  CELL_TRY(check_p(op, p));
  cell_tensor *xc, *y;
  CELL_TRY(cell_k_contiguous(x, &xc));
  cell_status s = cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &y);
  if (s != CELL_OK) {
    cell_tensor_release(xc);
    return s;
  }
  int64_t n = cell_shape_numel(x->ndim, x->shape);
  drop_ctx c;
  c.xdt = c.ydt = x->dtype;
  c.x = cell_tensor_base(xc);
  c.y = cell_tensor_base(y);
  c.threshold = (uint64_t)ceil(p * 4294967296.0);
  c.scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  c.seed = seed;
  c.first = first ? *first : cell_rng_reserve((uint64_t)(n + 3) / 4, &c.seed);
  if (seed_out) *seed_out = c.seed;
  if (first_out) *first_out = c.first;
  int64_t nchunks = (n + PAR_CHUNK - 1) / PAR_CHUNK;
  volatile int *intr = &cell_ctx()->interrupt;
  int par = n >= CELL_PARALLEL_GRAIN && cell_ctx()->num_threads > 1;
  CELL_FOR(par, int64_t, k, nchunks, {
    if (*intr) continue;
    int64_t lo = k * PAR_CHUNK, hi = lo + PAR_CHUNK < n ? lo + PAR_CHUNK : n;
    drop_range(&c, lo, hi);
  });
  cell_tensor_release(xc);
  if (*intr) {
    cell_tensor_release(y);
    return cell_error(CELL_ERR_INTERRUPT, "interrupted");
  }
  *out = y;
  return CELL_OK;
}

cell_status cell_cpu_dropout(const cell_tensor *x, double p, uint64_t *seed, uint64_t *first,
                           cell_tensor **out) {
  return run("dropout", x, p, 0, NULL, seed, first, out);
}

cell_status cell_cpu_dropout_apply(const cell_tensor *x, double p, uint64_t seed, uint64_t first,
                                 cell_tensor **out) {
  return run("dropout backward", x, p, seed, &first, NULL, NULL, out);
}
