/* nn_common.c - helpers the nn kernels share (src/ops/nn.h): argument
 * checks, small per-channel parameter blocks, the names of the
 * reductions. */
#include "nn.h"
#include "../core/alloc.h"
#include "kernels.h"

cell_status cell_nn_check_float(const char *op, const char *what, const cell_tensor *t) {
  if (!cell_dtype_is_float(t->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: %s must be a floating-point tensor, got %s", op, what,
                      cell_dtype_name(t->dtype));
  return CELL_OK;
}

cell_status cell_nn_check_input(const char *op, const cell_tensor *x) {
  if (!cell_dtype_is_float(x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: input must be a float tensor, got %s", op,
                      cell_dtype_name(x->dtype));
  return CELL_OK;
}

cell_status cell_nn_to_dtype(cell_status s, cell_tensor *r, cell_dtype dt, cell_tensor **out) {
  if (s == CELL_OK && r->dtype != dt) {
    cell_tensor *h = NULL;
    s = cell_k_astype(r, dt, &h);
    cell_tensor_release(r);
    r = h;
  }
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_nn_doubles(const char *op, const cell_tensor *t, int64_t n, double fill,
                            double **out) {
  double *v = cell_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  if (!v) return cell_error(CELL_ERR_MEMORY, "%s: out of memory", op);
  if (!t) {
    for (int64_t i = 0; i < n; i++) v[i] = fill;
  } else if (n > 0) {
    cell_tensor *c;
    cell_status s = cell_k_contiguous(t, &c);
    if (s != CELL_OK) {
      cell_dealloc(v);
      return s;
    }
    cell_load_run(c->dtype, cell_tensor_base(c), cell_dtype_size(c->dtype), n, v);
    cell_tensor_release(c);
  }
  *out = v;
  return CELL_OK;
}

const char *cell_reduction_name(cell_reduction r) {
  static const char *const names[] = {
      [CELL_REDUCTION_MEAN] = "mean", [CELL_REDUCTION_SUM] = "sum", [CELL_REDUCTION_NONE] = "none"};
  _Static_assert(sizeof names / sizeof names[0] == CELL_REDUCTION_COUNT, "a name per reduction");
  return (unsigned)r < CELL_REDUCTION_COUNT ? names[r] : NULL;
}

cell_status cell_nn_check_reduction(const char *op, cell_reduction r) {
  if ((unsigned)r >= CELL_REDUCTION_COUNT)
    return cell_error(CELL_ERR_VALUE, "%s: unknown reduction %d", op, (int)r);
  return CELL_OK;
}

cell_status cell_nn_scalar_grad(const char *op, const cell_tensor *g, double *v) {
  if (cell_tensor_numel(g) != 1)
    return cell_error(CELL_ERR_RUNTIME, "%s: the gradient of a reduced loss must have one element",
                      op);
  return cell_tensor_item(g, v);
}
