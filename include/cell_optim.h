/* cell_optim.h - public C API: fused in-place optimizer steps (SGD with momentum, Adam, AdamW).
 * Included by cell.h; the conventions at the top of cell.h apply.
 *
 * Each step updates a parameter and its state tensors in place, in one pass
 * over the elements, and allocates nothing. The parameter, its gradient and
 * its state tensors have one shape and one dtype (float32 or float64); any
 * strides are accepted (the contiguous case runs as one flat loop), except
 * that the tensors written (the parameter and its state) may not be
 * broadcast views whose elements share memory, nor share storage with each
 * other. The gradient is only read, and may be a broadcast view.
 *
 * A step is not recorded by autograd (an update is not differentiable). It
 * bumps the written storages' version counters, so a recorded graph that
 * saved the old values refuses to run backward rather than using the new
 * ones. Grad mode is not consulted: a host may step a parameter that
 * requires grad while recording is on, as an optimizer does between
 * iterations. An interrupt (cell_interrupt) stops a large step part way,
 * leaving some elements updated. */
#ifndef CELL_OPTIM_H
#define CELL_OPTIM_H
#include "cell.h"

/* One SGD step, as torch.optim.SGD and MindSpore's SGD and Momentum compute it:
 *   d = grad * grad_scale + weight_decay * param
 *   with momentum: buf = first_step ? d : momentum * buf + (1 - dampening) * d
 *                  d = nesterov ? d + momentum * buf : buf
 *   param = param - lr * d
 * MindSpore's Momentum (ApplyMomentum) is this with dampening 0, whose first
 * step needs no special case (buf starts at zero). */
typedef struct cell_sgd_config {
  double lr;           /* finite, >= 0 */
  double momentum;     /* finite, >= 0; 0: no momentum buffer (buf may be NULL) */
  double dampening;    /* finite, >= 0 */
  double weight_decay; /* finite, >= 0 (L2: added to the gradient) */
  double grad_scale;   /* finite: the gradient is multiplied by it first (1 / loss_scale) */
  int nesterov;        /* needs momentum > 0 and dampening == 0 */
  int first_step;      /* the buffer takes the gradient instead of decaying (PyTorch's first step) */
} cell_sgd_config;

/* buf: the momentum buffer, required when momentum > 0, ignored otherwise. */
CELL_API cell_status cell_optim_sgd_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *buf,
                                         const cell_sgd_config *cfg);

/* One Adam or AdamW step, as torch.optim.Adam and torch.optim.AdamW compute it:
 *   g = grad * grad_scale (+ weight_decay * param, Adam only)
 *   param = param * (1 - lr * weight_decay)              (AdamW only: decoupled)
 *   exp_avg = beta1 * exp_avg + (1 - beta1) * g
 *   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
 *   param = param - lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)
 * (eps is added after the bias correction, PyTorch's placement; MindSpore's
 * Adam kernel adds it before, which differs only where sqrt(v) ~ eps). */
typedef struct cell_adam_config {
  double lr;           /* finite, >= 0 */
  double beta1, beta2; /* in [0, 1) */
  double eps;          /* finite, >= 0 */
  double weight_decay; /* finite, >= 0 */
  double grad_scale;   /* finite: the gradient is multiplied by it first (1 / loss_scale) */
  int64_t step;        /* >= 1: the number of this step (1 for the first), for the bias corrections */
  int decoupled;       /* 1: AdamW (weight decay on the parameter), 0: Adam (L2 on the gradient) */
} cell_adam_config;

CELL_API cell_status cell_optim_adam_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg,
                                          cell_tensor *exp_avg_sq, const cell_adam_config *cfg);

#endif
