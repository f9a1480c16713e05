/* ops.h - helpers shared by the op families (internal). */
#ifndef CELL_OPS_OPS_H
#define CELL_OPS_OPS_H
#include "../core/tensor.h"

/* t itself (retained) when it already has dtype dt, else a converted copy. */
cell_status cell_as_dtype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);
/* cell_release4 and cell_dtype_can_cast are core's (tensor.h, dtype.h). */
#endif
