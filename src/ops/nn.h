/* nn.h - raw kernels for softmax, normalisation, dropout, embedding, losses (internal): they compute and never
 * record; src/autograd/rules_nn.c wraps them for the public API.
 *
 * Every kernel accepts any float dtype (and mixed float dtypes among its
 * operands): elements are loaded in runs into double buffers (cell_load_run),
 * computed in double and stored back in the result's dtype, so float16 and
 * bfloat16 accumulate in double too. Results are contiguous and have the
 * dtype of the main input. The statistics a backward rule needs (per-row
 * log-sum-exp, per-channel mean and 1/std) come out as small contiguous
 * float64 tensors. Rows and channels are independent, so large inputs split
 * over threads without changing any result; sums across rows run serially
 * in row order. */
#ifndef CELL_OPS_NN_H
#define CELL_OPS_NN_H
#include "cell.h"
#include "../core/iter.h"
#include "../core/tensor.h"

/* Loops over buffers that GCC's -O2 cost model leaves scalar (it will not
 * add aliasing checks): OpenMP's simd directive (the build uses -fopenmp)
 * vectorizes them. Sums vectorized this way add in a fixed order of
 * partial sums, so they stay independent of the thread count. */
#define CELL_NN_PRAGMA(x) _Pragma(#x)
#define CELL_NN_SIMD CELL_NN_PRAGMA(omp simd)
#define CELL_NN_SIMD_SUM(v) CELL_NN_PRAGMA(omp simd reduction(+ : v))

/* Elements a kernel loads into a buffer at a time. */
#define CELL_NN_CHUNK 256

/* Whether work over `units` independent pieces is worth threads. */
static inline bool cell_nn_parallel(int64_t units, int64_t work) {
  return units > 1 && work >= CELL_PARALLEL_GRAIN && cell_ctx()->num_threads > 1;
}

/* Whether `units` independent rows of `elems` elements in all, each element
 * costing `cost` copies' time (1 for a float32 add), are worth threads:
 * the bar is the elementwise one (CELL_ITER_GRAIN), which holds since
 * OpenBLAS runs on the same OpenMP team. Row kernels of the tiny GPT's
 * size (512 rows of 64) then split; cell_nn_parallel's higher bar stays
 * for kernels whose cost was not measured. The costs are measured as
 * CELL_ITER_COST_VM is: 1-thread time per element against an add. */
/* Measured costs (the ratio named, rounded down): softmax 12 forward, 3.8
 * backward; layer_norm 8.1 forward, 8.5 backward (dx); cross_entropy 11
 * forward, 10 backward (rows of 64 and 40, as a tiny GPT's). */
#define CELL_NN_COST_SOFTMAX 8
#define CELL_NN_COST_SOFTMAX_GRAD 3
#define CELL_NN_COST_LAYER_NORM 8
#define CELL_NN_COST_CROSS_ENTROPY 8
static inline bool cell_nn_parallel_cost(int64_t units, int64_t elems, int64_t cost) {
  return units > 1 && cell_ctx()->num_threads > 1 &&
         (elems >= CELL_ITER_GRAIN || elems * cost >= CELL_ITER_GRAIN);
}

/* A float tensor for op's argument `what` (TypeError otherwise). */
cell_status cell_nn_check_float(const char *op, const char *what, const cell_tensor *t);
/* A float input x of pool, fold and conv-family kernels: TypeError "op:
 * input must be a float tensor, got <dtype>" otherwise. */
cell_status cell_nn_check_input(const char *op, const cell_tensor *x);
/* The end of a kernel that computed r in a compute dtype: r as dtype dt
 * into *out (r itself, or converted and r released). When s is not CELL_OK,
 * or the conversion fails, r is released and the status returned. */
cell_status cell_nn_to_dtype(cell_status s, cell_tensor *r, cell_dtype dt, cell_tensor **out);
/* The n elements of t (any float dtype and layout) as doubles, row-major,
 * in a block from cell_alloc that the caller frees with cell_dealloc;
 * NULL t gives a block filled with fill. MemoryError when out of memory. */
cell_status cell_nn_doubles(const char *op, const cell_tensor *t, int64_t n, double fill,
                            double **out);

/* A valid reduction (ValueError otherwise). */
cell_status cell_nn_check_reduction(const char *op, cell_reduction r);
/* The gradient of a reduced loss (one element) as a double. */
cell_status cell_nn_scalar_grad(const char *op, const cell_tensor *g, double *v);

/* --- softmax ---------------------------------------------------------------------- */

/* softmax (log_softmax when log) of x along dim. */
cell_status cell_k_softmax(const cell_tensor *x, int dim, int log, cell_tensor **out);
/* The gradient of x from the saved output y and the output's gradient g:
 * y (g - sum(g y)) for softmax, g - exp(y) sum(g) for log_softmax. */
cell_status cell_k_softmax_backward(const cell_tensor *y, const cell_tensor *g, int dim, int log,
                                    cell_tensor **gx);

/* --- normalisation ------------------------------------------------------------------ */

/* Batch normalisation of x {N, C, ...} per channel C. training: batch
 * statistics, and (when update) running_mean / running_var, when given,
 * updated in place by cell_k_batch_norm_update. Otherwise the running
 * statistics, which are then required. weight / bias may be NULL. mean /
 * var (may be NULL) get the statistics used (the biased batch variance
 * when training), float64 {C}. */
cell_status cell_k_batch_norm(const cell_tensor *x, cell_tensor *running_mean,
                              cell_tensor *running_var, const cell_tensor *weight,
                              const cell_tensor *bias, int training, double momentum, double eps,
                              int update, cell_tensor **out, cell_tensor **mean,
                              cell_tensor **var);
/* running = momentum * running + (1 - momentum) * batch, for the mean and
 * (unbiased from the biased var over count values) the variance; either
 * running tensor may be NULL. Cannot fail. */
void cell_k_batch_norm_update(cell_tensor *running_mean, cell_tensor *running_var,
                              const cell_tensor *mean, const cell_tensor *var, int64_t count,
                              double momentum);
/* Gradients of x, weight and bias (each computed when its pointer is not
 * NULL; gw, gb are float64 {C}), from the statistics of the forward pass.
 * training: through the batch statistics. */
cell_status cell_k_batch_norm_backward(const cell_tensor *g, const cell_tensor *x,
                                       const cell_tensor *weight, const cell_tensor *mean,
                                       const cell_tensor *var, double eps, int training,
                                       cell_tensor **gx, cell_tensor **gw, cell_tensor **gb);

/* Layer normalisation over the last k dimensions of x; weight / bias (may
 * be NULL) have those dimensions' shape. mean / rstd (may be NULL) get the
 * statistics of each row, float64 {rows}. */
cell_status cell_k_layer_norm(const cell_tensor *x, int k, const cell_tensor *weight,
                              const cell_tensor *bias, double eps, cell_tensor **out,
                              cell_tensor **mean, cell_tensor **rstd);
/* gw, gb (float64, the trailing shape) when their pointers are not NULL. */
cell_status cell_k_layer_norm_backward(const cell_tensor *g, const cell_tensor *x, int k,
                                       const cell_tensor *weight, const cell_tensor *mean,
                                       const cell_tensor *rstd, cell_tensor **gx, cell_tensor **gw,
                                       cell_tensor **gb);

/* --- dropout -------------------------------------------------------------------------- */

/* Element j (row-major) of a dropout is kept when the 32-bit word j % 4 of
 * Philox block first + j / 4 under seed, read as u in [0, 1), has u >= p;
 * kept elements are scaled by 1 / (1 - p) (all dropped when p == 1).
 * cell_k_dropout reserves the blocks from the engine's stream and reports
 * seed and first (may be NULL); cell_k_dropout_apply applies the same mask
 * again (to the gradient). */
cell_status cell_k_dropout(const cell_tensor *x, double p, uint64_t *seed, uint64_t *first,
                           cell_tensor **out);
cell_status cell_k_dropout_apply(const cell_tensor *x, double p, uint64_t seed, uint64_t first,
                                 cell_tensor **out);

/* --- embedding -------------------------------------------------------------------------- */

/* Rows of weight {V, D} picked by the integer ids (counting from
 * index_base): the result has shape ids.shape + {D}. */
cell_status cell_k_embedding(const cell_tensor *ids, const cell_tensor *weight, int64_t index_base,
                             cell_tensor **out);
/* The gradient of weight (dtype dt, {V, D}): the rows of g added at their
 * ids, except the id padding_idx when has_padding. */
cell_status cell_k_embedding_backward(const cell_tensor *g, const cell_tensor *ids, int64_t vocab,
                                      cell_dtype dt, int has_padding, int64_t padding_idx,
                                      int64_t index_base, cell_tensor **gw);

/* --- losses ----------------------------------------------------------------------------- */

/* The options of cross_entropy and nll_loss. Class targets are integers
 * counting from index_base; ignore_index is compared with the raw value. */
typedef struct cell_ce_args {
  const cell_tensor *weight; /* {C} or NULL */
  int has_ignore;
  int64_t ignore_index;
  double label_smoothing;
  cell_reduction reduction;
  int64_t index_base;
} cell_ce_args;

/* Fused log_softmax + negative log-likelihood along dim 1 of logits
 * ({C}, {N, C} or {N, C, d...}); target holds class ids (an integer dtype,
 * shape without dim 1) or probabilities (a float dtype, logits' shape).
 * lse (may be NULL) gets the log-sum-exp of each row, float64 {rows}; den
 * (may be NULL) the divisor of the mean. */
cell_status cell_k_cross_entropy(const cell_tensor *logits, const cell_tensor *target,
                                 const cell_ce_args *a, cell_tensor **out, cell_tensor **lse,
                                 double *den);
/* Gradients of logits and (probability targets, when gt is not NULL) of
 * target, from g (the gradient of the result) and the forward's lse, den. */
cell_status cell_k_cross_entropy_backward(const cell_tensor *g, const cell_tensor *logits,
                                          const cell_tensor *lse, const cell_tensor *target,
                                          const cell_ce_args *a, double den,
                                          cell_tensor **gx, cell_tensor **gt);
/* nll_loss on log-probabilities (same layouts, class targets only); den
 * (may be NULL) gets the divisor of the mean. */
cell_status cell_k_nll_loss(const cell_tensor *logp, const cell_tensor *target,
                            const cell_ce_args *a, cell_tensor **out, double *den);
cell_status cell_k_nll_loss_backward(const cell_tensor *g, const cell_tensor *logp,
                                     const cell_tensor *target, const cell_ce_args *a, double den,
                                     cell_tensor **gx);

/* Pointwise losses, x and y broadcast together. kind: CELL_LOSS_MSE,
 * CELL_LOSS_L1. */
typedef enum { CELL_LOSS_MSE = 0, CELL_LOSS_L1, CELL_LOSS_KIND_COUNT } cell_loss_kind;
cell_status cell_k_pointwise_loss(cell_loss_kind kind, const cell_tensor *x, const cell_tensor *y,
                                  cell_reduction red, cell_tensor **out);
/* The gradient of x (that of y is its negation), in the broadcast shape. */
cell_status cell_k_pointwise_loss_backward(cell_loss_kind kind, const cell_tensor *g,
                                           const cell_tensor *x, const cell_tensor *y,
                                           cell_reduction red, cell_tensor **gx);

/* Binary cross entropy on logits x and targets y of one shape; weight and
 * pos_weight (may be NULL) broadcast to it. */
cell_status cell_k_bce_with_logits(const cell_tensor *x, const cell_tensor *y,
                                   const cell_tensor *weight, const cell_tensor *pos_weight,
                                   cell_reduction red, cell_tensor **out);
/* Gradients of x, y, weight, pos_weight (each when its pointer is not
 * NULL), in x's shape (the rules sum them to the operands' shapes). */
cell_status cell_k_bce_with_logits_backward(const cell_tensor *g, const cell_tensor *x,
                                            const cell_tensor *y, const cell_tensor *weight,
                                            const cell_tensor *pos_weight, cell_reduction red,
                                            cell_tensor **gx, cell_tensor **gy, cell_tensor **gw,
                                            cell_tensor **gpw);

#endif
