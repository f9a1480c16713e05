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

/* n Adam or AdamW steps in one call: parameter i with grads[i],
 * exp_avgs[i], exp_avg_sqs[i] and cfgs[i], each as cell_optim_adam_step
 * computes it. Every step is checked before any runs; on a failed check
 * nothing is updated and *failed (when not NULL) is the index of the first
 * bad one (-1 otherwise). On the CPU, the parameters too small to split
 * over the threads are spread over them, one parameter to a thread at a
 * time (a model's many small biases and norms); the others take the
 * threads one after another, as one step does. */
CELL_API cell_status cell_optim_adam_steps(int64_t n, cell_tensor *const *params, const cell_tensor *const *grads,
                                           cell_tensor *const *exp_avgs, cell_tensor *const *exp_avg_sqs,
                                           const cell_adam_config *cfgs, int64_t *failed);

/* One step of the other optimizers (optim_extra.c), chosen by kind. g below
 * is grad * grad_scale, plus weight_decay * param where the kind decays
 * through the gradient (L2); t is cfg->step (1 for the first step). The
 * state tensors s0, s1, s2 are used as each kind lists (others may be NULL);
 * h[] holds the kind's hyper-parameters.
 *   RMSPROP   h = {decay, momentum, eps}, flags&1 centered; s0 mean_square, s1 moment, s2 mean_grad:
 *             ms = decay*ms + (1-decay)*g^2; centered: mg = decay*mg + (1-decay)*g, d = ms - mg^2 else d = ms;
 *             mom = momentum*mom + lr*g/sqrt(d + eps); param -= mom
 *   ADAGRAD   flags&1 update_slots; s0 accum: accum += g^2; param -= lr*g/sqrt(accum)
 *   ADADELTA  h = {rho, eps}; s0 accum, s1 accum_update:
 *             accum = rho*accum + (1-rho)*g^2; u = sqrt(accum_update + eps)/sqrt(accum + eps)*g;
 *             accum_update = rho*accum_update + (1-rho)*u^2; param -= lr*u
 *   ADAMAX    h = {beta1, beta2, eps}; s0 m, s1 v: m = b1*m + (1-b1)*g; v = max(b2*v, |g|);
 *             param -= lr/(1-b1^t) * m/(v + eps)
 *   LAMB      h = {beta1, beta2, eps}; s0 m, s1 v (Adam's moments, bias-corrected m^, v^);
 *             r = m^/(sqrt(v^) + eps) + weight_decay*param (g without decay);
 *             param -= lr * (|param| > 0 and |r| > 0 ? |param|/|r| : 1) * r   (|.|: 2-norm of the tensor)
 *   LARS      h = {coefficient, epsilon}; param only read; s0 receives the new gradient:
 *             s0 = trust * (grad + weight_decay/grad_scale*param), trust = coefficient*|param| /
 *             (|grad*grad_scale| + weight_decay*|param| + epsilon) (1 where either norm is 0);
 *             flags&1 use_clip: trust = min(trust/lr, 1) (1 when lr is 0), else lr unused
 *   ADAMWD    h = {beta1, beta2, eps}; s0 m, s1 v (no bias correction, g without decay):
 *             param -= lr * (m/(sqrt(v) + eps) + weight_decay*param)
 *   FTRL      h = {l1, l2, lr_power}; s0 accum, s1 linear: a = accum + g^2;
 *             linear += g - (a^-lr_power - accum^-lr_power)/lr * param; accum = a;
 *             param = |linear| > l1 ? (sign(linear)*l1 - linear)/(a^-lr_power/lr + 2*l2) : 0
 *   ASGD      h = {lambd, alpha, t0}; s0 ax: eta = t == 1 ? lr : lr/(1 + lambd*lr*(t-1))^alpha,
 *             mu = t == 1 ? 1 : 1/max(1, t-1-t0); param = param*(1 - lambd*eta) - eta*g;
 *             ax = mu == 1 ? param : ax + (param - ax)*mu; flags&1: eta = h[1] and mu = h[2] as
 *             given (the caller keeps them as state, MindSpore's eta_ and mu_ parameters)
 *   RPROP     h = {etaminus, etaplus, step_min, step_max}; s0 prev, s1 step_size (taken as lr at t == 1):
 *             sign(g*prev) > 0: step_size = min(step_size*etaplus, step_max), < 0: max(step_size*etaminus,
 *             step_min) and g = 0; param -= sign(g)*step_size; prev = g
 *   AMSGRAD   h = {beta1, beta2, eps}, flags&2 decoupled decay; s0 m, s1 v, s2 vhat: Adam with
 *             vhat = max(vhat, v) in the denominator (torch.optim.Adam(amsgrad=True))
 *   NESTEROV  h = {beta1, beta2, eps}, flags&2 decoupled; s0 m, s1 v: Adam whose numerator is
 *             b1*m + (1-b1)*g (MindSpore's Adam use_nesterov; eps placed as in cell_optim_adam_step)
 *   LION      h = {beta1, beta2}; s0 m: param *= 1 - lr*weight_decay; c = b1*m + (1-b1)*g;
 *             param -= lr*sign(c); m = b2*m + (1-b2)*g (g without decay) */
typedef enum cell_optim_kind {
  CELL_OPTIM_RMSPROP = 1,
  CELL_OPTIM_ADAGRAD,
  CELL_OPTIM_ADADELTA,
  CELL_OPTIM_ADAMAX,
  CELL_OPTIM_LAMB,
  CELL_OPTIM_LARS,
  CELL_OPTIM_ADAMWD,
  CELL_OPTIM_FTRL,
  CELL_OPTIM_ASGD,
  CELL_OPTIM_RPROP,
  CELL_OPTIM_AMSGRAD,
  CELL_OPTIM_NESTEROV,
  CELL_OPTIM_LION
} cell_optim_kind;

typedef struct cell_optim_config {
  int kind;            /* a cell_optim_kind */
  double lr;           /* finite, >= 0 (> 0 for FTRL) */
  double weight_decay; /* finite, >= 0 */
  double grad_scale;   /* finite: the gradient is multiplied by it first (1 / loss_scale) */
  double h[4];         /* the kind's hyper-parameters (see above) */
  int64_t step;        /* >= 1: the number of this step */
  int flags;           /* the kind's switches (see above) */
} cell_optim_config;

CELL_API cell_status cell_optim_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *s0,
                                     cell_tensor *s1, cell_tensor *s2, const cell_optim_config *cfg);

#endif
