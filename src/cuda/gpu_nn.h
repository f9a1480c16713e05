/* gpu_nn.h - the GPU table's kernels of gpu_nn.c (internal to src/cuda):
 * each has its kernel_list.h row's signature. */
#ifndef CELL_CUDA_GPU_NN_H
#define CELL_CUDA_GPU_NN_H
#include "gpu.h"

/* Whether copies and casts handle dtype dt (every dtype but the complex ones). */
int gpu_dtype_copyable(cell_dtype dt);
cell_status gpu_contiguous(const cell_tensor *t, cell_tensor **out);
/* t as a contiguous tensor of dtype dt: t itself (retained) when it is one. */
cell_status gpu_contig_as(const cell_tensor *t, cell_dtype dt, cell_tensor **out);
cell_status gpu_clone(const cell_tensor *t, cell_tensor **out);
cell_status gpu_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);
/* a (any layout) as contiguous rows of dtype dt: its kept dims first
 * (outer elements), the dims listed last (r elements; none listed: all);
 * the reduction's result shape (keepdim: ones kept) into ndim / shape. The
 * CPU's errors for a bad list. */
cell_status gpu_rows(const char *op, const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_dtype dt,
                     cell_tensor **rows, int64_t *outer, int64_t *r, int *ndim, int64_t *shape);
cell_status gpu_reduce(cell_redop op, const cell_tensor *a, int ndims, const int *dims, int keepdim,
                       cell_tensor **out);
cell_status gpu_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                        cell_tensor **values, cell_tensor **indices);
cell_status gpu_argmax(const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base,
                       cell_tensor **out);
cell_status gpu_softmax(const cell_tensor *x, int dim, int log, cell_tensor **out);
cell_status gpu_softmax_backward(const cell_tensor *y, const cell_tensor *g, int dim, int log, cell_tensor **gx);
cell_status gpu_layer_norm(const cell_tensor *x, int k, const cell_tensor *weight, const cell_tensor *bias,
                           double eps, cell_tensor **out, cell_tensor **mean, cell_tensor **rstd);
cell_status gpu_layer_norm_backward(const cell_tensor *g, const cell_tensor *x, int k, const cell_tensor *weight,
                                    const cell_tensor *mean, const cell_tensor *rstd, cell_tensor **gx,
                                    cell_tensor **gw, cell_tensor **gb);
cell_status gpu_embedding(const cell_tensor *ids, const cell_tensor *weight, int64_t index_base, cell_tensor **out);
cell_status gpu_embedding_backward(const cell_tensor *g, const cell_tensor *ids, int64_t vocab, cell_dtype dt,
                                   int has_padding, int64_t padding_idx, int64_t index_base, cell_tensor **gw);
cell_status gpu_dropout(const cell_tensor *x, double p, uint64_t *seed, uint64_t *first, cell_tensor **out);
cell_status gpu_dropout_apply(const cell_tensor *x, double p, uint64_t seed, uint64_t first, cell_tensor **out);
cell_status gpu_sgd_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *buf, const cell_sgd_config *cfg);
cell_status gpu_adam_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg, cell_tensor *exp_avg_sq,
                          const cell_adam_config *cfg);

/* gpu_loss.c */
cell_status gpu_cross_entropy(const cell_tensor *logits, const cell_tensor *target, const cell_ce_args *a,
                              cell_tensor **out, cell_tensor **lse, double *den);
cell_status gpu_cross_entropy_backward(const cell_tensor *g, const cell_tensor *logits, const cell_tensor *lse,
                                       const cell_tensor *target, const cell_ce_args *a, double den, cell_tensor **gx,
                                       cell_tensor **gt);
cell_status gpu_nll_loss(const cell_tensor *logp, const cell_tensor *target, const cell_ce_args *a, cell_tensor **out,
                         double *den);
cell_status gpu_nll_loss_backward(const cell_tensor *g, const cell_tensor *logp, const cell_tensor *target,
                                  const cell_ce_args *a, double den, cell_tensor **gx);

/* gpu_dnn.c: conv2d through cuDNN (how is ignored). */
cell_status gpu_conv2d(cell_conv_lowering how, const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                       const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                       cell_tensor **out);
cell_status gpu_conv2d_backward(cell_conv_lowering how, const cell_tensor *gy, const cell_tensor *x,
                                const cell_tensor *w, const int64_t *stride, const int64_t *padding,
                                const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                cell_tensor **gb);

/* gpu_blas.c: linear and its backward through cuBLAS. */
cell_status gpu_linear(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, cell_tensor **out);
cell_status gpu_linear_backward(const cell_tensor *g, const cell_tensor *x, const cell_tensor *w, cell_tensor **gx,
                                cell_tensor **gw, cell_tensor **gb);

/* gpu_view.c: reshape (a view when the strides allow, else a copy) and copy_. */
cell_status gpu_reshape(const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out);
cell_status gpu_copy_(cell_tensor *dst, const cell_tensor *src);

/* gpu_grad.c: autograd's gradient formulas and the comparisons. */
cell_status gpu_ew(ew_op op, double k0, double k1, cell_dtype dt, int ndim, const int64_t *shape, const cell_tensor *a,
                   const cell_tensor *b, const cell_tensor *c, cell_tensor **out);
cell_status gpu_compare(cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out);

/* gpu_attn.c: scaled dot-product attention (no mask tensor, no dropout). */
cell_status gpu_sdpa(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v, const cell_tensor *mask,
                     cell_sdpa_args *a, cell_tensor **out, cell_tensor **lse);
cell_status gpu_sdpa_backward(const cell_tensor *g, const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                              const cell_tensor *mask, const cell_tensor *o, const cell_tensor *lse,
                              const cell_sdpa_args *a, cell_tensor **gq, cell_tensor **gk, cell_tensor **gv,
                              cell_tensor **gm);

/* gpu_index.c: where, masked_fill, cat, stack and the indexing rows;
 * gpu_spread: t laid out over shape (right-aligned, broadcast) as a
 * contiguous tensor of dt (t itself, retained, when it is one). */
cell_status gpu_spread(const cell_tensor *t, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out);
cell_status gpu_where(const cell_tensor *cond, const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status gpu_masked_fill(const cell_tensor *a, const cell_tensor *mask, double value, cell_tensor **out);
cell_status gpu_pad(const cell_tensor *a, int npairs, const int64_t *pads, double value, cell_tensor **out);
cell_status gpu_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
cell_status gpu_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
cell_status gpu_index_select(const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base,
                             cell_tensor **out);
cell_status gpu_gather(const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base, cell_tensor **out);
cell_status gpu_scatter(const cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src,
                        int64_t index_base, cell_tensor **out);
cell_status gpu_scatter_add_(cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src,
                             int64_t index_base);

/* gpu_stats.c: var / std, norm, cumsum (forward, reverse), cumprod, arange, linspace. */
cell_status gpu_var(const cell_tensor *a, int ndims, const int *dims, int ddof, int keepdim, int take_sqrt,
                    cell_tensor **out);
cell_status gpu_norm(const cell_tensor *a, double p, int ndims, const int *dims, int keepdim, cell_tensor **out);
cell_status gpu_cumsum(const cell_tensor *a, int dim, cell_tensor **out);
cell_status gpu_cumsum_reverse(const cell_tensor *a, int dim, cell_tensor **out);
cell_status gpu_cumprod(const cell_tensor *a, int dim, cell_tensor **out);
cell_status gpu_arange(double start, double stop, double step, cell_dtype dt, cell_tensor **out);
cell_status gpu_linspace(double start, double stop, int64_t n, cell_dtype dt, cell_tensor **out);

/* gpu_pwloss.c: mse_loss and l1_loss, forward and backward. */
cell_status gpu_pointwise_loss(cell_loss_kind kind, const cell_tensor *x, const cell_tensor *y, cell_reduction red,
                               cell_tensor **out);
cell_status gpu_pointwise_loss_backward(cell_loss_kind kind, const cell_tensor *g, const cell_tensor *x,
                                        const cell_tensor *y, cell_reduction red, cell_tensor **gx);

/* gpu_shape.c: flip, tile, repeat_interleave, tril / triu. */
cell_status gpu_flip(const cell_tensor *a, int ndims, const int *dims, cell_tensor **out);
cell_status gpu_tile(const cell_tensor *a, int nreps, const int64_t *reps, cell_tensor **out);
cell_status gpu_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim, cell_tensor **out);
cell_status gpu_triangle(const cell_tensor *a, int64_t diagonal, int upper, cell_tensor **out);

/* gpu_sort.c: sort (argsort) and topk. */
cell_status gpu_sort(const cell_tensor *a, int dim, int descending, int64_t index_base, cell_tensor **values,
                     cell_tensor **indices);
cell_status gpu_topk(const cell_tensor *a, int64_t k, int dim, int largest, int sorted, int64_t index_base,
                     cell_tensor **values, cell_tensor **indices);
cell_status gpu_median(const cell_tensor *a, int dim, int keepdim, int64_t index_base, cell_tensor **values,
                       cell_tensor **indices);

/* gpu_optim.c: the fused steps of optim_step (RMSProp, Adagrad, ...; not Lamb, LARS). */
cell_status gpu_optim_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *s0, cell_tensor *s1,
                           cell_tensor *s2, const cell_optim_config *cfg);

/* gpu_cnn.c: batch norm (forward, backward, the running-stats update) and
 * 2-D max / average pooling with their backward passes. */
cell_status gpu_batch_norm(const cell_tensor *x, cell_tensor *running_mean, cell_tensor *running_var,
                           const cell_tensor *weight, const cell_tensor *bias, int training, double momentum,
                           double eps, int update, cell_tensor **out, cell_tensor **mean, cell_tensor **var);
cell_status gpu_batch_norm_backward(const cell_tensor *g, const cell_tensor *x, const cell_tensor *weight,
                                    const cell_tensor *mean, const cell_tensor *var, double eps, int training,
                                    cell_tensor **gx, cell_tensor **gw, cell_tensor **gb);
void gpu_batch_norm_update(cell_tensor *running_mean, cell_tensor *running_var, const cell_tensor *mean,
                           const cell_tensor *var, int64_t count, double momentum);
cell_status gpu_max_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation, int ceil_mode, cell_tensor **out, cell_tensor **indices);
cell_status gpu_max_pool2d_backward(const cell_tensor *gy, const cell_tensor *indices, const int64_t *in_shape,
                                    cell_dtype dt, cell_tensor **gx);
cell_status gpu_avg_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           int ceil_mode, int count_include_pad, cell_tensor **out);
cell_status gpu_avg_pool2d_backward(const cell_tensor *gy, const int64_t *in_shape, const int64_t *kernel,
                                    const int64_t *stride, const int64_t *padding, int ceil_mode,
                                    int count_include_pad, cell_dtype dt, cell_tensor **gx);

/* gpu_act.c: activations, softplus, nan_to_num, logsumexp, roll, diag, eye,
 * dot, cumprod's gradient; gpu_random.c: rand, randn, randint (the kernel
 * rows of the same names). */
cell_status gpu_activation(const cell_tensor *x, int kind, double p0, double p1, cell_tensor **out);
cell_status gpu_activation_backward(const cell_tensor *g, const cell_tensor *x, int kind, double p0, double p1,
                                    cell_tensor **gx);
cell_status gpu_nan_to_num(const cell_tensor *a, double nan, double posinf, double neginf, cell_tensor **out);
cell_status gpu_softplus(const cell_tensor *a, double beta, double threshold, cell_tensor **out);
cell_status gpu_logsumexp(const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_tensor **out);
cell_status gpu_roll(const cell_tensor *a, int n, const int64_t *shifts, const int *dims, cell_tensor **out);
cell_status gpu_diag(const cell_tensor *a, int64_t offset, int64_t rows, int64_t cols, cell_tensor **out);
cell_status gpu_eye(int64_t n, int64_t m, cell_dtype dt, cell_tensor **out);
cell_status gpu_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status gpu_rand(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out);
cell_status gpu_randn(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out);
cell_status gpu_randint(int64_t low, int64_t high, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out);
cell_status gpu_cumprod_backward(const cell_tensor *g, const cell_tensor *x, int dim, cell_tensor **gx);
/* gpu_random.c: bernoulli and normal (tensors of probabilities, means and
 * deviations). */
cell_status gpu_bernoulli(const cell_tensor *x, const cell_tensor *p, double ps, cell_tensor **out);
cell_status gpu_normal(int ndim, const int64_t *shape, const cell_tensor *mean, const cell_tensor *std,
                       cell_tensor **out);
cell_status gpu_multinomial(const cell_tensor *probs, int64_t num_samples, int replacement, int64_t index_base,
                            cell_tensor **out);

/* gpu_bce.c: bce_with_logits and its backward. */
cell_status gpu_bce_with_logits(const cell_tensor *x, const cell_tensor *y, const cell_tensor *weight,
                                const cell_tensor *pos_weight, cell_reduction red, cell_tensor **out);
cell_status gpu_bce_with_logits_backward(const cell_tensor *gr, const cell_tensor *x, const cell_tensor *y,
                                         const cell_tensor *weight, const cell_tensor *pos_weight, cell_reduction red,
                                         cell_tensor **gx, cell_tensor **gy, cell_tensor **gw, cell_tensor **gpw);

/* gpu_interp.c: interpolate and its backward. */
cell_status gpu_interpolate(const cell_tensor *x, int mode, int align_corners, const int64_t *size,
                            const double *scales, cell_tensor **out);
cell_status gpu_interpolate_backward(const cell_tensor *gr, int mode, int align_corners, int ndim,
                                     const int64_t *in_shape, const double *scales, cell_dtype dt, cell_tensor **gx);

/* gpu_fold.c: unfold (im2col) and fold (col2im). */
cell_status gpu_unfold(const cell_tensor *x, const int64_t *kernel, const int64_t *dilation, const int64_t *padding,
                       const int64_t *stride, cell_tensor **out);
cell_status gpu_fold(const cell_tensor *x, const int64_t *output_size, const int64_t *kernel, const int64_t *dilation,
                     const int64_t *padding, const int64_t *stride, cell_tensor **out);

/* gpu_masked.c: nonzero, masked_select, masked_scatter. */
cell_status gpu_nonzero(const cell_tensor *a, int64_t index_base, cell_tensor **out);
cell_status gpu_masked_select(const cell_tensor *a, const cell_tensor *mask, cell_tensor **out);
cell_status gpu_masked_scatter(const cell_tensor *a, const cell_tensor *mask, const cell_tensor *src,
                               cell_tensor **out);
cell_status gpu_unique(const cell_tensor *a, int64_t index_base, cell_tensor **out, cell_tensor **inverse,
                       cell_tensor **counts);

/* gpu_conv3d.c: conv3d and conv_transpose3d, forward and backward. */
cell_status gpu_conv3d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride,
                       const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **out);
cell_status gpu_conv3d_backward(const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w, const int64_t *stride,
                                const int64_t *padding, const int64_t *dilation, int64_t groups, cell_tensor **gx,
                                cell_tensor **gw, cell_tensor **gb);
cell_status gpu_conv_transpose3d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b, const int64_t *stride,
                                 const int64_t *padding, const int64_t *output_padding, const int64_t *dilation,
                                 int64_t groups, cell_tensor **out);
cell_status gpu_conv_transpose3d_backward(const cell_tensor *gy, const cell_tensor *x, const cell_tensor *w,
                                          const int64_t *stride, const int64_t *padding, const int64_t *output_padding,
                                          const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                          cell_tensor **gb);

/* gpu_ctc.c: the CTC loss and its gradient. */
cell_status gpu_ctc_loss(const cell_tensor *log_probs, const cell_tensor *targets, const cell_tensor *input_lengths,
                         const cell_tensor *target_lengths, int64_t blank, int64_t index_base, int zero_infinity,
                         cell_tensor **loss, cell_tensor **grad);

#endif
