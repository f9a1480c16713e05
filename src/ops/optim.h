/* optim.h - raw kernels for optimizer steps (internal). They compute and
 * never check: the caller has validated what cell_optim_*_step (optim.c)
 * validates (shapes, dtypes, writable layouts, hyper-parameters). The
 * public functions are these plus those checks; other engine code that has
 * already checked (a multi-tensor step, a backend) calls these. */
#ifndef CELL_OPS_OPTIM_H
#define CELL_OPS_OPTIM_H
#include "cell.h"

cell_status cell_k_sgd_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *buf,
                            const cell_sgd_config *cfg);
cell_status cell_k_adam_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg,
                             cell_tensor *exp_avg_sq, const cell_adam_config *cfg);
cell_status cell_k_optim_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *s0, cell_tensor *s1,
                             cell_tensor *s2, const cell_optim_config *cfg);

/* The name an Adam step's errors carry: "adamw_step" for a decoupled
 * configuration, else (NULL included) "adam_step". */
const char *cell_adam_op(const cell_adam_config *cfg);
/* What cell_optim_adam_step checks before its step. */
cell_status cell_adam_check(const cell_tensor *param, const cell_tensor *grad, const cell_tensor *exp_avg,
                            const cell_tensor *exp_avg_sq, const cell_adam_config *cfg);

#endif
