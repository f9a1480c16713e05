/* view.h - views that share storage, never copying (internal): the raw
 * forms of view, transpose, permute, squeeze, unsqueeze, narrow, slice,
 * select and expand, defined in view.c. Like src/ops/kernels.h (which
 * includes this), they compute and never record. */
#ifndef CELL_CORE_VIEW_H
#define CELL_CORE_VIEW_H
#include "tensor.h"

cell_status cell_k_view(const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out);
cell_status cell_k_transpose(const cell_tensor *t, int d0, int d1, cell_tensor **out);
cell_status cell_k_permute(const cell_tensor *t, const int *dims, cell_tensor **out);
cell_status cell_k_squeeze(const cell_tensor *t, int dim, cell_tensor **out);
cell_status cell_k_unsqueeze(const cell_tensor *t, int dim, cell_tensor **out);
cell_status cell_k_narrow(const cell_tensor *t, int dim, int64_t start, int64_t len, cell_tensor **out);
cell_status cell_k_slice(const cell_tensor *t, int dim, int64_t start, int64_t stop, int64_t step, cell_tensor **out);
cell_status cell_k_select(const cell_tensor *t, int dim, int64_t i, cell_tensor **out);
cell_status cell_k_expand(const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out);

/* Resolve a -1 entry of shape into res (ndim entries) and check that t's
 * element count matches; ValueError naming op otherwise. */
cell_status cell_view_shape(const char *op, const cell_tensor *t, int ndim, const int64_t *shape,
                            int64_t *res);
/* Strides (into st) for viewing t as shape without a copy, if its layout
 * allows one; false otherwise. */
bool cell_view_strides(const cell_tensor *t, int ndim, const int64_t *shape, int64_t *st);

#endif
