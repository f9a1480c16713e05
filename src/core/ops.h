/* ops.h - helpers shared by the op families (internal). */
#ifndef CELL_CORE_OPS_H
#define CELL_CORE_OPS_H
#include "tensor.h"

/* t itself (retained) when it already has dtype dt, else a converted copy. */
cell_status cell_as_dtype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);
/* Whether an in-place op may store a dt `from` result into a `to` tensor. */
int cell_dtype_can_cast(cell_dtype from, cell_dtype to);
/* Release up to four tensors (NULLs allowed), then return s. */
cell_status cell_release4(cell_status s, cell_tensor *a, cell_tensor *b, cell_tensor *c,
                          cell_tensor *d);
#endif
