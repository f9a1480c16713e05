/* kernels.h - the raw forms of the differentiable ops (internal).
 *
 * src/ops defines these (the views that never copy are src/core/view.h's,
 * included here); they compute and never record.
 * The public cell_op_* / cell_tensor_* names of cell.h are defined in
 * src/autograd/rules_*.c, which call these and, when grad mode is on and
 * an input requires grad, records the backward node. Kernels call each
 * other through these names, so an op's internal steps are never taped. */
#ifndef CELL_OPS_KERNELS_H
#define CELL_OPS_KERNELS_H
#include "cell.h"
#include "../core/view.h"

cell_status cell_k_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status cell_k_binary_scalar(cell_binop op, const cell_tensor *t, double s, int s_is_float, int reversed, cell_tensor **out);
cell_status cell_k_unary(cell_unop op, const cell_tensor *a, cell_tensor **out);
cell_status cell_k_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi, double hi, cell_tensor **out);
cell_status cell_k_where(const cell_tensor *cond, const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status cell_k_masked_fill(const cell_tensor *a, const cell_tensor *mask, double value, cell_tensor **out);
cell_status cell_k_reduce(cell_redop op, const cell_tensor *a, int ndims, const int *dims, int keepdim, cell_tensor **out);
cell_status cell_k_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min, int64_t index_base, cell_tensor **values, cell_tensor **indices);
cell_status cell_k_var(const cell_tensor *a, int ndims, const int *dims, int ddof, int keepdim, int take_sqrt, cell_tensor **out);
cell_status cell_k_norm(const cell_tensor *a, double p, int ndims, const int *dims, int keepdim, cell_tensor **out);
cell_status cell_k_cumsum(const cell_tensor *a, int dim, cell_tensor **out);
cell_status cell_k_matmul(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status cell_k_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status cell_k_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status cell_k_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status cell_k_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
cell_status cell_k_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
cell_status cell_k_gather(const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base, cell_tensor **out);
cell_status cell_k_scatter(const cell_tensor *a, int dim, const cell_tensor *index, const cell_tensor *src, int64_t index_base, cell_tensor **out);
cell_status cell_k_index_select(const cell_tensor *a, int dim, const cell_tensor *index, int64_t index_base, cell_tensor **out);
cell_status cell_k_tile(const cell_tensor *a, int nreps, const int64_t *reps, cell_tensor **out);
cell_status cell_k_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim, cell_tensor **out);
cell_status cell_k_pad(const cell_tensor *a, int npairs, const int64_t *pads, double value, cell_tensor **out);
cell_status cell_k_reshape(const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out);
cell_status cell_k_flatten(const cell_tensor *t, int start, int end, cell_tensor **out);
cell_status cell_k_contiguous(const cell_tensor *t, cell_tensor **out);
cell_status cell_k_clone(const cell_tensor *t, cell_tensor **out);
cell_status cell_k_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);

/* In-place forms; the public ones refuse tensors that require grad. */
cell_status cell_k_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b);
cell_status cell_k_binary_scalar_(cell_binop op, cell_tensor *t, double s, int s_is_float);
cell_status cell_k_unary_(cell_unop op, cell_tensor *a);
cell_status cell_k_copy_(cell_tensor *dst, const cell_tensor *src);
cell_status cell_k_fill_(cell_tensor *t, double v);

#endif
