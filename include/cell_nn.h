/* cell_nn.h - public C API: neural-network ops: softmax, log_softmax, batch_norm, layer_norm, dropout, embedding and the fused losses.
 * Included by cell.h; the conventions at the top of cell.h apply.
 *
 * Inputs are floating tensors of any float dtype and layout (operands may
 * mix float dtypes); results are contiguous, in the dtype of the main
 * input, computed in double. Each op records one backward node when grad
 * mode is on and a differentiable input requires grad. Class ids and
 * embedding ids are integer tensors whose values count from index_base
 * (the Lua binding passes 1); error messages quote them as given. */
#ifndef CELL_NN_H
#define CELL_NN_H
#include "cell.h"

/* How a loss reduces its per-element values. */
typedef enum cell_reduction {
  CELL_REDUCTION_MEAN = 0,
  CELL_REDUCTION_SUM,
  CELL_REDUCTION_NONE,
  CELL_REDUCTION_COUNT
} cell_reduction;

/* "mean", "sum", "none" (NULL for a bad value). */
CELL_API const char *cell_reduction_name(cell_reduction r);

/* softmax / log_softmax of x along dim, stable (the maximum is subtracted
 * first). A 0-D x counts as one element along dim 0. Backward:
 * "SoftmaxBackward", "LogSoftmaxBackward". */
CELL_API cell_status cell_op_softmax(const cell_tensor *x, int dim, cell_tensor **out);
CELL_API cell_status cell_op_log_softmax(const cell_tensor *x, int dim, cell_tensor **out);

/* Batch normalisation of x {N, C, ...} (2-D {N, C} or more, such as
 * {N, C, H, W}) per channel. training: normalises with the batch mean and
 * (biased) variance over N and the trailing dims, and updates
 * running_mean / running_var in place when they are given, with
 * MindSpore's convention running = momentum * running + (1 - momentum) *
 * batch (the unbiased variance for running_var); a channel with a single
 * value is a ValueError. Otherwise normalises with the running statistics,
 * which are then required. weight (gamma) and bias (beta) are {C} or NULL.
 * The running statistics are never differentiated. Backward:
 * "BatchNormBackward" (through the batch statistics when training). */
CELL_API cell_status cell_op_batch_norm(const cell_tensor *x, cell_tensor *running_mean,
                                        cell_tensor *running_var, const cell_tensor *weight,
                                        const cell_tensor *bias, int training, double momentum,
                                        double eps, cell_tensor **out);

/* The fully connected layer y = x W^T + b: x is [..., in], weight [out,
 * in], bias [out] (or any shape that broadcasts against [..., out]) or
 * NULL; y is [..., out]. float32 / float64 operands of one dtype with a
 * [out] bias (or none) run as one gemm that reads W's transpose through
 * its strides, with the bias added in the same pass; others as
 * matmul(x, W^T) + b. A weight that is not 2-D, or an input whose last
 * dimension is not in, is a ValueError. Backward: "DenseBackward" (both
 * gemms of the backward read transposes through strides, the bias
 * gradient is one pass). */
CELL_API cell_status cell_op_dense(const cell_tensor *x, const cell_tensor *weight,
                                   const cell_tensor *bias, cell_tensor **out);

/* Layer normalisation over the last normalized_ndim dimensions of x (1 to
 * ndim), with the biased variance; weight / bias have the shape of those
 * dimensions, or are NULL. Backward: "LayerNormBackward". */
CELL_API cell_status cell_op_layer_norm(const cell_tensor *x, int normalized_ndim,
                                        const cell_tensor *weight, const cell_tensor *bias,
                                        double eps, cell_tensor **out);

/* Dropout: when training and p > 0, each element is zeroed with
 * probability p and the others scaled by 1 / (1 - p) (p == 1 zeroes all).
 * The mask comes from the calling thread's current generator (cell.h),
 * so it does not depend on the thread count. Otherwise *out is x itself,
 * retained. p outside [0, 1] is a ValueError. Backward: "DropoutBackward"
 * (the mask is regenerated, not stored). */
CELL_API cell_status cell_op_dropout(const cell_tensor *x, double p, int training,
                                     cell_tensor **out);

/* Rows of weight {V, D} for integer ids of any shape (counting from
 * index_base): the result has shape ids.shape + {D}. An id outside the
 * table is an IndexError naming it. The gradient of weight adds the rows
 * of the output's gradient at their ids; when has_padding, the row
 * padding_idx (an id, counted the same way) gets no gradient. Backward:
 * "EmbeddingBackward". */
CELL_API cell_status cell_op_embedding(const cell_tensor *ids, const cell_tensor *weight,
                                       int has_padding, int64_t padding_idx, int64_t index_base,
                                       cell_tensor **out);

/* Cross entropy of logits {C}, {N, C} or {N, C, d1, ...} (classes along
 * dim 1) fused with log_softmax. target is either class ids (an integer
 * tensor of logits' shape without the class dim) or class probabilities (a
 * float tensor of logits' shape). weight {C} (NULL: ones) weighs each class
 * (not differentiated). With class ids, targets equal to ignore_index
 * (when has_ignore; compared as given) count for nothing, and other ids
 * must lie in [index_base, index_base + C) (an IndexError naming the
 * target otherwise). label_smoothing in [0, 1] mixes the target with the
 * uniform distribution. As PyTorch: the mean with class ids divides by the
 * summed weights of the counted targets (by their count without weight);
 * with probabilities, by the number of rows. reduction NONE gives target's
 * shape (probabilities: logits' shape without the class dim); MEAN and SUM
 * a 0-D tensor. Backward: "CrossEntropyBackward" (to logits, and to
 * probability targets). */
CELL_API cell_status cell_op_cross_entropy(const cell_tensor *logits, const cell_tensor *target,
                                           const cell_tensor *weight, int has_ignore,
                                           int64_t ignore_index, double label_smoothing,
                                           cell_reduction reduction, int64_t index_base,
                                           cell_tensor **out);

/* Negative log-likelihood of log-probabilities logp (the layouts of
 * cross_entropy) at class-id targets; weight, ignore_index and the mean as
 * cross_entropy's. Backward: "NLLLossBackward". */
CELL_API cell_status cell_op_nll_loss(const cell_tensor *logp, const cell_tensor *target,
                                      const cell_tensor *weight, int has_ignore,
                                      int64_t ignore_index, cell_reduction reduction,
                                      int64_t index_base, cell_tensor **out);

/* (x - y)^2 and |x - y|, x and y broadcast together (as MindSpore's
 * MSELoss and L1Loss). Backward: "MSELossBackward", "L1LossBackward". */
CELL_API cell_status cell_op_mse_loss(const cell_tensor *x, const cell_tensor *y,
                                      cell_reduction reduction, cell_tensor **out);
CELL_API cell_status cell_op_l1_loss(const cell_tensor *x, const cell_tensor *y,
                                     cell_reduction reduction, cell_tensor **out);

/* Binary cross entropy on logits, stable for any magnitude:
 * weight * ((1 - t) x + (1 + (pos_weight - 1) t) log(1 + exp(-x))).
 * target has logits' shape; weight and pos_weight (NULL: ones) broadcast
 * to it. Backward: "BCEWithLogitsBackward" (to all four). */
CELL_API cell_status cell_op_bce_with_logits(const cell_tensor *logits, const cell_tensor *target,
                                             const cell_tensor *weight,
                                             const cell_tensor *pos_weight,
                                             cell_reduction reduction, cell_tensor **out);

#endif
