/* cell_optim.h - public C API: fused in-place optimizer steps (SGD with momentum, Adam, AdamW).
 * Included by cell.h; the conventions at the top of cell.h apply. */
#ifndef CELL_OPTIM_H
#define CELL_OPTIM_H
#include "cell.h"

#endif
