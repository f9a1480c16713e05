/* kernel_list.h - every kernel a device runs, as one X-macro list (internal).
 *
 * X(name, params, args, tensors): the kernel cell_k_<name> (the op layer's
 * name, defined in device.c as a dispatcher), its parameter list, the same
 * names as an argument list, and the tensors whose device picks the table
 * (NULLs skipped; none: the current or default device). Each device fills
 * a cell_kernels with one pointer per row; the CPU's are cell_cpu_<name>
 * (src/ops, src/core). The enum cell_kid numbers the rows for the
 * capability query (supports_op). */
#ifndef CELL_BACKEND_KERNEL_LIST_H
#define CELL_BACKEND_KERNEL_LIST_H
#include "cell.h"
#include "../ops/nn.h"
#include "../ops/conv.h"
#include "../ops/optim.h"
#include "../ops/ew.h"
#include "../ops/attention.h"

#define CELL_KERNEL_LIST(X) \
  X(binary, (cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out), (op, a, b, out), (a, b)) \
  X(binary_scalar, (cell_binop op, const cell_tensor *t, double s, int s_is_float, int reversed, cell_tensor **out), (op, t, s, s_is_float, reversed, out), (t)) \
  X(unary, (cell_unop op, const cell_tensor *a, cell_tensor **out), (op, a, out), (a)) \
  X(clamp, (const cell_tensor *a, int has_lo, double lo, int has_hi, double hi, cell_tensor **out), (a, has_lo, lo, has_hi, hi, out), (a)) \
  X(where, (const cell_tensor *cond, const cell_tensor *a, const cell_tensor *b, cell_tensor **out), (cond, a, b, out), (cond, a, b)) \
  X(masked_fill, (const cell_tensor *a, const cell_tensor *mask, double value, cell_tensor **out), (a, mask, value, out), (a, mask)) \
  X(reduce, (cell_redop op, const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_tensor **out), (op, a, ndims, dims, keepdim, out), (a)) \
  X(max_dim, (const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base, cell_tensor **values, cell_tensor **indices), (a, dim, keepdim, is_min, index_base, values, indices), (a)) \
  X(argmax, (const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base, cell_tensor **out), (a, dim, keepdim, is_min, index_base, out), (a)) \
  X(var, (const cell_tensor *a, int ndims, const int *dims, int ddof, int keepdim, int take_sqrt, cell_tensor **out), (a, ndims, dims, ddof, keepdim, take_sqrt, out), (a)) \
  X(norm, (const cell_tensor *a, double p, int ndims, const int *dims, int keepdim, cell_tensor **out), (a, p, ndims, dims, keepdim, out), (a)) \
  X(cumsum, (const cell_tensor *a, int dim, cell_tensor **out), (a, dim, out), (a)) \
  X(cumprod, (const cell_tensor *a, int dim, cell_tensor **out), (a, dim, out), (a)) \
  X(cumprod_backward, (const cell_tensor *g, const cell_tensor *x, int dim, cell_tensor **gx), (g, x, dim, gx), (g, x)) \
  X(logsumexp, (const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_tensor **out), (a, ndims, dims, keepdim, out), (a)) \
  X(sort, (const cell_tensor *a, int dim, int descending, int64_t index_base, cell_tensor **values, cell_tensor **indices), (a, dim, descending, index_base, values, indices), (a)) \
  X(topk, (const cell_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base, cell_tensor **values, cell_tensor **indices), (a, k, dim, largest, sorted, index_base, values, indices), (a)) \
  X(median, (const cell_tensor *a, int dim, int keepdim, int64_t index_base, cell_tensor **values, cell_tensor **indices), (a, dim, keepdim, index_base, values, indices), (a)) \
  X(unique, (const cell_tensor *a, int64_t index_base, cell_tensor **out, cell_tensor **inverse, cell_tensor **counts), (a, index_base, out, inverse, counts), (a)) \
  X(triangle, (const cell_tensor *a, int64_t diagonal, int upper, cell_tensor **out), (a, diagonal, upper, out), (a)) \
  X(diag, (const cell_tensor *a, int64_t offset, int64_t rows, int64_t cols, cell_tensor **out), (a, offset, rows, cols, out), (a)) \
  X(flip, (const cell_tensor *a, int ndims, const int *dims, cell_tensor **out), (a, ndims, dims, out), (a)) \
  X(roll, (const cell_tensor *a, int n, const int64_t *shifts, const int *dims, cell_tensor **out), (a, n, shifts, dims, out), (a)) \
  X(cumsum_reverse, (const cell_tensor *a, int dim, cell_tensor **out), (a, dim, out), (a)) \
  X(matmul, (const cell_tensor *a, const cell_tensor *b, cell_tensor **out), (a, b, out), (a, b)) \
  X(mm, (const cell_tensor *a, const cell_tensor *b, cell_tensor **out), (a, b, out), (a, b)) \
  X(bmm, (const cell_tensor *a, const cell_tensor *b, cell_tensor **out), (a, b, out), (a, b)) \
  X(dot, (const cell_tensor *a, const cell_tensor *b, cell_tensor **out), (a, b, out), (a, b)) \
  X(linear, (const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, cell_tensor **out), (x, w, b, out), (x, w, b)) \
  X(linear_backward, (const cell_tensor *g, const cell_tensor *x, const cell_tensor *w, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb), (g, x, w, gx, gw, gb), (g, x, w)) \
  X(gather, (const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base, cell_tensor **out), (a, dim, index, index_base, out), (a, index)) \
  X(scatter, (const cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src, int64_t index_base, cell_tensor **out), (a, dim, index, src, index_base, out), (a, index, src)) \
  X(scatter_add_, (cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src, int64_t index_base), (a, dim, index, src, index_base), (a, index, src)) \
  X(index_select, (const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base, cell_tensor **out), (a, dim, index, index_base, out), (a, index)) \
  X(nonzero, (const cell_tensor *a, int64_t index_base, cell_tensor **out), (a, index_base, out), (a)) \
  X(masked_select, (const cell_tensor *a, const cell_tensor *mask, cell_tensor **out), (a, mask, out), (a, mask)) \
  X(masked_scatter, (const cell_tensor *a, const cell_tensor *mask, const cell_tensor *src, cell_tensor **out), (a, mask, src, out), (a, mask, src)) \
  X(tile, (const cell_tensor *a, int nreps, const int64_t *reps, cell_tensor **out), (a, nreps, reps, out), (a)) \
  X(repeat_interleave, (const cell_tensor *a, int64_t repeats, int dim, cell_tensor **out), (a, repeats, dim, out), (a)) \
  X(pad, (const cell_tensor *a, int npairs, const int64_t *pads, double value, cell_tensor **out), (a, npairs, pads, value, out), (a)) \
  X(reshape, (const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out), (t, ndim, shape, out), (t)) \
  X(contiguous, (const cell_tensor *t, cell_tensor **out), (t, out), (t)) \
  X(clone, (const cell_tensor *t, cell_tensor **out), (t, out), (t)) \
  X(astype, (const cell_tensor *t, cell_dtype dt, cell_tensor **out), (t, dt, out), (t)) \
  X(binary_, (cell_binop op, cell_tensor *a, const cell_tensor *b), (op, a, b), (a, b)) \
  X(binary_scalar_, (cell_binop op, cell_tensor *t, double s, int s_is_float), (op, t, s, s_is_float), (t)) \
  X(unary_, (cell_unop op, cell_tensor *a), (op, a), (a)) \
  X(copy_, (cell_tensor *dst, const cell_tensor *src), (dst, src), (dst, src)) \
  X(fill_, (cell_tensor *t, double v), (t, v), (t)) \
  X(ew, (ew_op op, double k0, double k1, cell_dtype dt, int ndim, const int64_t *shape, const cell_tensor *a, const cell_tensor *b, const cell_tensor *c, cell_tensor **out), (op, k0, k1, dt, ndim, shape, a, b, c, out), (a, b, c)) \
  X(softmax, (const cell_tensor *x, int dim, int log, cell_tensor **out), (x, dim, log, out), (x)) \
  X(softmax_backward, (const cell_tensor *y, const cell_tensor *g, int dim, int log, cell_tensor **gx), (y, g, dim, log, gx), (y, g)) \
  X(batch_norm, (const cell_tensor *x, cell_tensor *running_mean, cell_tensor *running_var, const cell_tensor *weight, const cell_tensor *bias, int training, double momentum, double eps, int update, cell_tensor **out, cell_tensor **mean, cell_tensor **var), (x, running_mean, running_var, weight, bias, training, momentum, eps, update, out, mean, var), (x, running_mean, running_var, weight, bias)) \
  X(batch_norm_backward, (const cell_tensor *g, const cell_tensor *x, const cell_tensor *weight, const cell_tensor *mean, const cell_tensor *var, double eps, int training, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb), (g, x, weight, mean, var, eps, training, gx, gw, gb), (g, x, weight, mean, var)) \
  X(layer_norm, (const cell_tensor *x, int k, const cell_tensor *weight, const cell_tensor *bias, double eps, cell_tensor **out, cell_tensor **mean, cell_tensor **rstd), (x, k, weight, bias, eps, out, mean, rstd), (x, weight, bias)) \
  X(layer_norm_backward, (const cell_tensor *g, const cell_tensor *x, int k, const cell_tensor *weight, const cell_tensor *mean, const cell_tensor *rstd, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb), (g, x, k, weight, mean, rstd, gx, gw, gb), (g, x, weight, mean, rstd)) \
  X(dropout, (const cell_tensor *x, double p, uint64_t *seed, uint64_t *first, cell_tensor **out), (x, p, seed, first, out), (x)) \
  X(dropout_apply, (const cell_tensor *x, double p, uint64_t seed, uint64_t first, cell_tensor **out), (x, p, seed, first, out), (x)) \
  X(embedding, (const cell_tensor *ids, const cell_tensor *weight, int64_t index_base, cell_tensor **out), (ids, weight, index_base, out), (ids, weight)) \
  X(rnn_forward, (int mode, const cell_tensor *x, const cell_tensor *h0, const cell_tensor *c0, const cell_tensor *w_ih, const cell_tensor *w_hh, const cell_tensor *b_ih, const cell_tensor *b_hh, const cell_tensor *lengths, int reverse, cell_tensor **out, cell_tensor **ws), (mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths, reverse, out, ws), (x, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths)) \
  X(rnn_backward, (int mode, const cell_tensor *x, const cell_tensor *w_ih, const cell_tensor *w_hh, const cell_tensor *ws, const cell_tensor *lengths, int reverse, int has_bias, const cell_tensor *gout, cell_tensor **gx, cell_tensor **gh0, cell_tensor **gc0, cell_tensor **gw_ih, cell_tensor **gw_hh, cell_tensor **gb_ih, cell_tensor **gb_hh), (mode, x, w_ih, w_hh, ws, lengths, reverse, has_bias, gout, gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh), (gout, x, w_ih, w_hh, ws, lengths)) \
  X(embedding_backward, (const cell_tensor *g, const cell_tensor *ids, int64_t vocab, cell_dtype dt, int has_padding, int64_t padding_idx, int64_t index_base, cell_tensor **gw), (g, ids, vocab, dt, has_padding, padding_idx, index_base, gw), (g, ids)) \
  X(cross_entropy, (const cell_tensor *logits, const cell_tensor *target, const cell_ce_args *a, cell_tensor **out, cell_tensor **lse, double *den), (logits, target, a, out, lse, den), (logits, target, a->weight)) \
  X(cross_entropy_backward, (const cell_tensor *g, const cell_tensor *logits, const cell_tensor *lse, const cell_tensor *target, const cell_ce_args *a, double den, cell_tensor **gx, cell_tensor **gt), (g, logits, lse, target, a, den, gx, gt), (g, logits, lse, target, a->weight)) \
  X(nll_loss, (const cell_tensor *logp, const cell_tensor *target, const cell_ce_args *a, cell_tensor **out, double *den), (logp, target, a, out, den), (logp, target, a->weight)) \
  X(nll_loss_backward, (const cell_tensor *g, const cell_tensor *logp, const cell_tensor *target, const cell_ce_args *a, double den, cell_tensor **gx), (g, logp, target, a, den, gx), (g, logp, target, a->weight)) \
  X(pointwise_loss, (cell_loss_kind kind, const cell_tensor *x, const cell_tensor *y, cell_reduction red, cell_tensor **out), (kind, x, y, red, out), (x, y)) \
  X(pointwise_loss_backward, (cell_loss_kind kind, const cell_tensor *g, const cell_tensor *x, const cell_tensor *y, cell_reduction red, cell_tensor **gx), (kind, g, x, y, red, gx), (g, x, y)) \
  X(bce_with_logits, (const cell_tensor *x, const cell_tensor *y, const cell_tensor *weight, const cell_tensor *pos_weight, cell_reduction red, cell_tensor **out), (x, y, weight, pos_weight, red, out), (x, y, weight, pos_weight)) \
  X(bce_with_logits_backward, (const cell_tensor *g, const cell_tensor *x, const cell_tensor *y, const cell_tensor *weight, const cell_tensor *pos_weight, cell_reduction red, cell_tensor **gx, cell_tensor **gy, cell_tensor **gw, cell_tensor **gpw), (g, x, y, weight, pos_weight, red, gx, gy, gw, gpw), (g, x, y, weight, pos_weight)) \
  X(conv2d_lowered, (cell_conv_lowering how, const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **out), (how, x, w, b, stride, padding, dilation, groups, out), (x, w, b)) \
  X(conv2d_backward_lowered, (cell_conv_lowering how, const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w, const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb), (how, gy, x, w, stride, padding, dilation, groups, gx, gw, gb), (gy, x, w)) \
  X(conv3d, (const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **out), (x, w, b, stride, padding, dilation, groups, out), (x, w, b)) \
  X(conv3d_backward, (const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w, const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb), (gy, x, w, stride, padding, dilation, groups, gx, gw, gb), (gy, x, w)) \
  X(conv_transpose3d, (const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride, const int64_t *padding, const int64_t *output_padding, const int64_t *dilation, int64_t groups, cell_tensor **out), (x, w, b, stride, padding, output_padding, dilation, groups, out), (x, w, b)) \
  X(conv_transpose3d_backward, (const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w, const int64_t *stride, const int64_t *padding, const int64_t *output_padding, const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb), (gy, x, w, stride, padding, output_padding, dilation, groups, gx, gw, gb), (gy, x, w)) \
  X(max_pool2d, (const cell_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding, const int64_t *dilation, int ceil_mode, cell_tensor **out, cell_tensor **indices), (x, kernel, stride, padding, dilation, ceil_mode, out, indices), (x)) \
  X(max_pool2d_backward, (const cell_tensor *gy, const cell_tensor *indices, const int64_t *in_shape, cell_dtype dt, cell_tensor **gx), (gy, indices, in_shape, dt, gx), (gy, indices)) \
  X(avg_pool2d, (const cell_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding, int ceil_mode, int count_include_pad, cell_tensor **out), (x, kernel, stride, padding, ceil_mode, count_include_pad, out), (x)) \
  X(avg_pool2d_backward, (const cell_tensor *gy, const int64_t *in_shape, const int64_t *kernel, const int64_t *stride, const int64_t *padding, int ceil_mode, int count_include_pad, cell_dtype dt, cell_tensor **gx), (gy, in_shape, kernel, stride, padding, ceil_mode, count_include_pad, dt, gx), (gy)) \
  X(sgd_step, (cell_tensor *param, const cell_tensor *grad, cell_tensor *buf, const cell_sgd_config *cfg), (param, grad, buf, cfg), (param, grad, buf)) \
  X(adam_step, (cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg, cell_tensor *exp_avg_sq, const cell_adam_config *cfg), (param, grad, exp_avg, exp_avg_sq, cfg), (param, grad, exp_avg, exp_avg_sq)) \
  X(optim_step, (cell_tensor *param, const cell_tensor *grad, cell_tensor *s0, cell_tensor *s1, cell_tensor *s2, const cell_optim_config *cfg), (param, grad, s0, s1, s2, cfg), (param, grad, s0, s1, s2)) \
  X(arange, (double start, double stop, double step, cell_dtype dt, cell_tensor **out), (start, stop, step, dt, out), (NULL)) \
  X(linspace, (double start, double stop, int64_t n, cell_dtype dt, cell_tensor **out), (start, stop, n, dt, out), (NULL)) \
  X(eye, (int64_t n, int64_t m, cell_dtype dt, cell_tensor **out), (n, m, dt, out), (NULL)) \
  X(rand, (cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out), (dt, ndim, shape, out), (NULL)) \
  X(randn, (cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out), (dt, ndim, shape, out), (NULL)) \
  X(randint, (int64_t low, int64_t high, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out), (low, high, dt, ndim, shape, out), (NULL)) \
  X(full, (cell_dtype dt, int ndim, const int64_t *shape, double value, cell_tensor **out), (dt, ndim, shape, value, out), (NULL)) \
  X(nan_to_num, (const cell_tensor *a, double nan, double posinf, double neginf, cell_tensor **out), (a, nan, posinf, neginf, out), (a)) \
  X(softplus, (const cell_tensor *a, double beta, double threshold, cell_tensor **out), (a, beta, threshold, out), (a)) \
  X(activation, (const cell_tensor *x, int kind, double p0, double p1, cell_tensor **out), (x, kind, p0, p1, out), (x)) \
  X(activation_backward, (const cell_tensor *g, const cell_tensor *x, int kind, double p0, double p1, cell_tensor **gx), (g, x, kind, p0, p1, gx), (g, x)) \
  X(ctc_loss, (const cell_tensor *log_probs, const cell_tensor *targets, const cell_tensor *input_lengths, const cell_tensor *target_lengths, int64_t blank, int64_t index_base, int zero_infinity, cell_tensor **loss, cell_tensor **grad), (log_probs, targets, input_lengths, target_lengths, blank, index_base, zero_infinity, loss, grad), (log_probs, targets, input_lengths, target_lengths)) \
  X(multinomial, (const cell_tensor *probs, int64_t num_samples, int replacement, int64_t index_base, cell_tensor **out), (probs, num_samples, replacement, index_base, out), (probs)) \
  X(bernoulli, (const cell_tensor *x, const cell_tensor *p, double ps, cell_tensor **out), (x, p, ps, out), (x, p)) \
  X(normal, (int ndim, const int64_t *shape, const cell_tensor *mean, const cell_tensor *std, cell_tensor **out), (ndim, shape, mean, std, out), (mean, std)) \
  X(interpolate, (const cell_tensor *x, int mode, int align_corners, const int64_t *size, const double *scales, cell_tensor **out), (x, mode, align_corners, size, scales, out), (x)) \
  X(interpolate_backward, (const cell_tensor *g, int mode, int align_corners, int ndim, const int64_t *in_shape, const double *scales, cell_dtype dt, cell_tensor **gx), (g, mode, align_corners, ndim, in_shape, scales, dt, gx), (g)) \
  X(unfold, (const cell_tensor *x, const int64_t *kernel, const int64_t *dilation, const int64_t *padding, const int64_t *stride, cell_tensor **out), (x, kernel, dilation, padding, stride, out), (x)) \
  X(fold, (const cell_tensor *x, const int64_t *output_size, const int64_t *kernel, const int64_t *dilation, const int64_t *padding, const int64_t *stride, cell_tensor **out), (x, output_size, kernel, dilation, padding, stride, out), (x)) \
  X(sdpa, (const cell_tensor *q, const cell_tensor *k, const cell_tensor *v, const cell_tensor *mask, cell_sdpa_args *a, cell_tensor **out, cell_tensor **lse), (q, k, v, mask, a, out, lse), (q, k, v, mask)) \
  X(sdpa_backward, (const cell_tensor *g, const cell_tensor *q, const cell_tensor *k, const cell_tensor *v, const cell_tensor *mask, const cell_tensor *o, const cell_tensor *lse, const cell_sdpa_args *a, cell_tensor **gq, cell_tensor **gk, cell_tensor **gv, cell_tensor **gm), (g, q, k, v, mask, o, lse, a, gq, gk, gv, gm), (g, q, k, v, mask, o, lse, a ? a->probs : NULL))

/* Kernels outside the list, by hand in device.c: cat and stack (a tensor
 * array) and batch_norm_update (no status). Their ids follow the list's. */
typedef enum cell_kid {
#define CELL_KID_(name, params, args, ts) CELL_KID_##name,
  CELL_KERNEL_LIST(CELL_KID_)
#undef CELL_KID_
  CELL_KID_cat,
  CELL_KID_stack,
  CELL_KID_batch_norm_update,
  CELL_KID_COUNT
} cell_kid;

typedef struct cell_kernels {
#define CELL_KPTR_(name, params, args, ts) cell_status(*name) params;
  CELL_KERNEL_LIST(CELL_KPTR_)
#undef CELL_KPTR_
  cell_status (*cat)(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
  cell_status (*stack)(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
  void (*batch_norm_update)(cell_tensor *running_mean, cell_tensor *running_var,
                            const cell_tensor *mean, const cell_tensor *var, int64_t count,
                            double momentum);
} cell_kernels;

/* One pointer per id. */
_Static_assert(sizeof(cell_kernels) == CELL_KID_COUNT * sizeof(void (*)(void)),
               "cell_kernels has one pointer per kernel id");

/* The CPU kernels. */
#define CELL_KCPU_(name, params, args, ts) cell_status cell_cpu_##name params;
CELL_KERNEL_LIST(CELL_KCPU_)
#undef CELL_KCPU_
cell_status cell_cpu_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
cell_status cell_cpu_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
void cell_cpu_batch_norm_update(cell_tensor *running_mean, cell_tensor *running_var,
                                const cell_tensor *mean, const cell_tensor *var, int64_t count,
                                double momentum);

/* The dispatchers (device.c), the op layer's names. */
#define CELL_KDISPATCH_(name, params, args, ts) cell_status cell_k_##name params;
CELL_KERNEL_LIST(CELL_KDISPATCH_)
#undef CELL_KDISPATCH_
cell_status cell_k_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
cell_status cell_k_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out);

/* Names of the ids, for messages ("binary", "mm", ...). */
extern const char *const cell_kid_names[CELL_KID_COUNT];

#endif
