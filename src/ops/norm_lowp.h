/* norm_lowp.h - layer_norm's bfloat16 rows (internal; src/ops/norm_lowp.c)
 * and batch_norm over bfloat16/float16 (src/ops/bn_lowp.c).
 *
 * Contiguous bfloat16 rows of d elements, read as float32 (exactly), with
 * float32 sums and arithmetic, each result rounded to bfloat16 once (to
 * nearest even). The statistics (mean and 1/std per row) come out as
 * doubles, as the generic path's do; w and b are the weight and bias as d
 * doubles (ones and zeros when absent). cell_cpu_layer_norm and its
 * backward hand their bfloat16 inputs here. MemoryError when the float32
 * copy of the weight cannot be allocated. */
#ifndef CELL_OPS_NORM_LOWP_H
#define CELL_OPS_NORM_LOWP_H
#include "cell.h"

/* y = (x - mean) * rstd * w + b per row, the statistics into mv and rv. */
cell_status cell_ln_bf16_forward(const uint16_t *x, uint16_t *y, int64_t rows, int64_t d, const double *w,
                                 const double *b, double eps, double *mv, double *rv);

/* gx (when not NULL) = rstd (g w - sum(g w) / d - xhat sum(g w xhat) / d)
 * per row; wv += sum over rows of g xhat, bv += sum of g (each when not
 * NULL), added in row order. */
cell_status cell_ln_bf16_backward(const uint16_t *g, const uint16_t *x, uint16_t *gx, int64_t rows, int64_t d,
                                  const double *w, const double *mv, const double *rv, double *wv, double *bv);

/* batch_norm over a contiguous bfloat16 or float16 (dt) x of n samples, c
 * channels and inner positions each, computed exactly as float32's path
 * computes on the widened input (per-row sums in rs, n * c doubles
 * forward, 2 n c + 3 c backward), each output rounded once; the rows split
 * over threads when par. mv, vv: the channels' mean and variance (written
 * when training, read otherwise); w, b: weight and bias as c doubles. */
void cell_bn_lowp_forward(cell_dtype dt, int64_t n, int64_t c, int64_t inner, const uint16_t *x, uint16_t *y,
                          double *mv, double *vv, const double *w, const double *b, int training, double eps,
                          double *rs, int par);
/* out (when not NULL) = the input gradient; wv, bv (when not NULL) = the
 * weight and bias gradients. */
void cell_bn_lowp_backward(cell_dtype dt, int64_t n, int64_t c, int64_t inner, const uint16_t *g,
                           const uint16_t *x, uint16_t *out, const double *mv, const double *vv, const double *w,
                           double eps, int training, double *wv, double *bv, double *rs, int par);

#endif
