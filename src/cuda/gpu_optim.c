/* gpu_optim.c - the GPU table's optim_step row: the fused steps of
 * RMSProp, Adagrad, Adadelta, AdaMax, AdamWeightDecay, FTRL, ASGD, Rprop,
 * Adam's amsgrad and nesterov forms and Lion (gpu_optim.cu), with
 * optim_extra.c's per-step scalars worked out here. Lamb and LARS, whose
 * updates need norms of the whole tensor first, are declined
 * (NotImplementedError). supports_op has checked the layout: one float
 * dtype, contiguous, one size. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <math.h>

_Static_assert((int)GPUK_OPTIM_RMSPROP == (int)CELL_OPTIM_RMSPROP && (int)GPUK_OPTIM_LAMB == (int)CELL_OPTIM_LAMB &&
                   (int)GPUK_OPTIM_LARS == (int)CELL_OPTIM_LARS && (int)GPUK_OPTIM_ASGD == (int)CELL_OPTIM_ASGD &&
                   (int)GPUK_OPTIM_LION == (int)CELL_OPTIM_LION,
               "gpu_kern.h's optimizer kinds are cell_optim_kind's");

cell_status gpu_optim_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *s0, cell_tensor *s1,
                           cell_tensor *s2, const cell_optim_config *cfg) {
  if (cfg->kind < CELL_OPTIM_RMSPROP || cfg->kind > CELL_OPTIM_LION || cfg->kind == CELL_OPTIM_LAMB ||
      cfg->kind == CELL_OPTIM_LARS)
    return cell_error(CELL_ERR_NOTIMPL, "optim_step of this optimizer (kind %d: Lamb and LARS need whole-tensor norms) "
                      "is not supported on device GPU", cfg->kind);
  gpuk_optim_args c;
  c.kind = cfg->kind;
  c.flags = cfg->flags;
  c.step = (long long)cfg->step;
  c.lr = cfg->lr;
  c.wd = cfg->weight_decay;
  c.grad_scale = cfg->grad_scale;
  for (int i = 0; i < 4; i++) c.h[i] = cfg->h[i];
  double t = (double)cfg->step;
  c.bc1 = 1.0 - pow(cfg->h[0], t);
  c.bc2s = sqrt(1.0 - pow(cfg->h[1], t));
  c.eta = c.mu = 0;
  if (cfg->kind == CELL_OPTIM_ASGD && (cfg->flags & 1)) {
    c.eta = cfg->h[1]; /* the caller's state */
    c.mu = cfg->h[2];
  } else if (cfg->kind == CELL_OPTIM_ASGD) {
    c.eta = cfg->step == 1 ? cfg->lr : cfg->lr / pow(1 + cfg->h[0] * cfg->lr * (t - 1), cfg->h[1]);
    c.mu = cfg->step == 1 ? 1.0 : 1.0 / fmax(1.0, t - 1 - cfg->h[2]);
  }
  cell_tensor_bump(param);
  cell_tensor *st[3] = {s0, s1, s2};
  for (int k = 0; k < 3; k++)
    if (st[k]) cell_tensor_bump(st[k]);
  return gpu_launch(gpuk_optim(gpu_ctx_of(param)->stream, (int)param->dtype, c, gpu_data(param), gpu_data(grad),
                               s0 ? gpu_data(s0) : NULL, s1 ? gpu_data(s1) : NULL, s2 ? gpu_data(s2) : NULL,
                               gpu_numel(param)),
                    "optim_step");
}
