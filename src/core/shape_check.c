/* shape_check.c - shapes checked against overflow: every shape a tensor
 * gets, and every result shape an op computes, passes here. */
#include "tensor.h"

cell_status cell_shape_too_large(const char *op, int ndim, const int64_t *shape) {
  char b[400];
  return cell_error(CELL_ERR_VALUE,
                    "%s: shape %s is too large: the product of its sizes (zeros counted as 1) "
                    "must be at most %lld",
                    op, cell_shape_str(ndim, shape, b, sizeof b), (long long)CELL_MAX_NUMEL);
}

cell_status cell_shape_numel_checked(const char *op, int ndim, const int64_t *shape,
                                     int64_t *numel) {
  if (ndim < 0 || ndim > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "%s: a tensor has at most %d dimensions, got %d", op,
                      CELL_MAX_DIMS, ndim);
  if (ndim > 0 && !shape) return cell_error(CELL_ERR_VALUE, "%s: NULL shape", op);
  int64_t span = 1; /* zeros counted as 1: the largest contiguous stride times its size */
  bool empty = false;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      char b[400];
      return cell_error(CELL_ERR_VALUE, "%s: negative size %lld in shape %s", op,
                        (long long)shape[i], cell_shape_str(ndim, shape, b, sizeof b));
    }
    if (shape[i] == 0) empty = true;
    if (!cell_size_mul(span, shape[i] ? shape[i] : 1, &span))
      return cell_shape_too_large(op, ndim, shape);
  }
  if (numel) *numel = empty ? 0 : span;
  return CELL_OK;
}
