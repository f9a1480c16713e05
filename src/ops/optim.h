/* optim.h - raw kernels for optimizer steps (internal): they compute and never
 * record; src/autograd/rules_optim.c wraps them for the public API. */
#ifndef CELL_OPS_OPTIM_H
#define CELL_OPS_OPTIM_H
#include "cell.h"

#endif
