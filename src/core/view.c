/* view.c - views that share storage: reshape, transpose, narrow, expand, ... */
#include "tensor.h"
#include "kernels.h"

#define NULLCHECK(op, t, out) \
  if (!(t) || !(out)) return cell_error(CELL_ERR_VALUE, op ": NULL argument")

/* Resolve a -1 entry and check the element count matches. The new shape,
 * with the -1 counted as 1, must pass cell_shape_numel_checked (so a shape
 * whose product wraps around to the right count is refused). */
static cell_status infer_shape(const char *op, const cell_tensor *t, int ndim,
                               const int64_t *shape, int64_t *res) {
  if (ndim < 0 || ndim > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "%s: a tensor has at most %d dimensions, got %d", op,
                      CELL_MAX_DIMS, ndim);
  if (ndim > 0 && !shape) return cell_error(CELL_ERR_VALUE, "%s: NULL shape", op);
  int infer = -1;
  for (int i = 0; i < ndim; i++) {
    res[i] = shape[i];
    if (shape[i] == -1) {
      if (infer >= 0) return cell_error(CELL_ERR_VALUE, "%s: only one dimension can be -1", op);
      infer = i;
      res[i] = 1;
    } else if (shape[i] < 0) {
      return cell_error(CELL_ERR_VALUE, "%s: negative size %lld in the new shape", op,
                        (long long)shape[i]);
    }
  }
  int64_t known;
  if (cell_shape_numel_checked(op, ndim, res, &known) != CELL_OK)
    return cell_shape_too_large(op, ndim, shape);
  int64_t n = cell_tensor_numel(t);
  bool ok = known == n;
  if (infer >= 0) {
    ok = known > 0 && n % known == 0;
    if (ok) res[infer] = n / known;
  }
  if (!ok) {
    char a[256], b[256];
    return cell_error(CELL_ERR_VALUE, "%s: cannot reshape a tensor of shape %s (%lld elements) into %s",
                      op, cell_shape_str(t->ndim, t->shape, a, sizeof a), (long long)n,
                      cell_shape_str(ndim, shape, b, sizeof b));
  }
  return CELL_OK;
}

/* Strides for viewing t as shape without a copy, if the layout allows it
 * (the algorithm of TH's THTensor_(newView) / numpy's attempt_nocopy). */
static bool view_strides(const cell_tensor *t, int ndim, const int64_t *shape, int64_t *st) {
  if (cell_tensor_numel(t) == 0 || t->ndim == 0) {
    cell_contig_strides(ndim, shape, st);
    return true;
  }
  int view_d = ndim - 1;
  int64_t chunk_base = t->stride[t->ndim - 1], tensor_numel = 1, view_numel = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    tensor_numel *= t->shape[d];
    if (d == 0 || (t->shape[d - 1] != 1 && t->stride[d - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        st[view_d] = view_numel * chunk_base;
        view_numel *= shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base = t->stride[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

cell_status cell_k_view(const cell_tensor *t, int ndim, const int64_t *shape,
                             cell_tensor **out) {
  NULLCHECK("view", t, out);
  int64_t res[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  CELL_TRY(infer_shape("view", t, ndim, shape, res));
  if (!view_strides(t, ndim, res, st)) {
    char a[256];
    return cell_error(CELL_ERR_RUNTIME,
                      "view: the strides of this tensor of shape %s do not allow a view; "
                      "use reshape (it copies)",
                      cell_shape_str(t->ndim, t->shape, a, sizeof a));
  }
  return cell_tensor_new_view(t, ndim, res, st, t->offset, out);
}

/* The CPU kernel behind cell_k_reshape (src/backend/device.c dispatches). */
cell_status cell_cpu_reshape(const cell_tensor *t, int ndim, const int64_t *shape, cell_tensor **out);
cell_status cell_cpu_reshape(const cell_tensor *t, int ndim, const int64_t *shape,
                                cell_tensor **out) {
  NULLCHECK("reshape", t, out);
  int64_t res[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  CELL_TRY(infer_shape("reshape", t, ndim, shape, res));
  if (view_strides(t, ndim, res, st)) return cell_tensor_new_view(t, ndim, res, st, t->offset, out);
  cell_tensor *c;
  CELL_TRY(cell_k_clone(t, &c));
  cell_status s = cell_k_view(c, ndim, res, out);
  cell_tensor_release(c);
  return s;
}

cell_status cell_k_transpose(const cell_tensor *t, int d0, int d1, cell_tensor **out) {
  NULLCHECK("transpose", t, out);
  if (t->ndim == 0 && d0 == 0 && d1 == 0)
    return cell_tensor_new_view(t, 0, t->shape, t->stride, t->offset, out);
  CELL_TRY(cell_check_dim("transpose", d0, t->ndim));
  CELL_TRY(cell_check_dim("transpose", d1, t->ndim));
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  memcpy(sh, t->shape, sizeof sh);
  memcpy(st, t->stride, sizeof st);
  sh[d0] = t->shape[d1];
  sh[d1] = t->shape[d0];
  st[d0] = t->stride[d1];
  st[d1] = t->stride[d0];
  return cell_tensor_new_view(t, t->ndim, sh, st, t->offset, out);
}

cell_status cell_k_permute(const cell_tensor *t, const int *dims, cell_tensor **out) {
  NULLCHECK("permute", t, out);
  if (t->ndim && !dims) return cell_error(CELL_ERR_VALUE, "permute: NULL dims");
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  bool seen[CELL_MAX_DIMS] = {false};
  for (int i = 0; i < t->ndim; i++) {
    CELL_TRY(cell_check_dim("permute", dims[i], t->ndim));
    if (seen[dims[i]])
      return cell_error(CELL_ERR_VALUE, "permute: dimension %d appears more than once", dims[i]);
    seen[dims[i]] = true;
    sh[i] = t->shape[dims[i]];
    st[i] = t->stride[dims[i]];
  }
  return cell_tensor_new_view(t, t->ndim, sh, st, t->offset, out);
}

cell_status cell_k_squeeze(const cell_tensor *t, int dim, cell_tensor **out) {
  NULLCHECK("squeeze", t, out);
  if (dim >= 0 && t->ndim > 0) CELL_TRY(cell_check_dim("squeeze", dim, t->ndim));
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] == 1 && (dim < 0 || dim == i)) continue;
    sh[n] = t->shape[i];
    st[n++] = t->stride[i];
  }
  return cell_tensor_new_view(t, n, sh, st, t->offset, out);
}

cell_status cell_k_unsqueeze(const cell_tensor *t, int dim, cell_tensor **out) {
  NULLCHECK("unsqueeze", t, out);
  if (dim < 0 || dim > t->ndim)
    return cell_error(CELL_ERR_INDEX, "unsqueeze: dimension %d out of range for a %d-D tensor",
                      dim, t->ndim);
  if (t->ndim >= CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "unsqueeze: a tensor has at most %d dimensions",
                      CELL_MAX_DIMS);
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  for (int i = 0, j = 0; i <= t->ndim; i++) {
    if (i == dim) {
      sh[i] = 1;
      st[i] = dim < t->ndim ? t->stride[dim] * t->shape[dim] : 1;
    } else {
      sh[i] = t->shape[j];
      st[i] = t->stride[j++];
    }
  }
  return cell_tensor_new_view(t, t->ndim + 1, sh, st, t->offset, out);
}

cell_status cell_k_flatten(const cell_tensor *t, int start, int end, cell_tensor **out) {
  NULLCHECK("flatten", t, out);
  if (t->ndim == 0) {
    int64_t one = 1;
    return cell_k_reshape(t, 1, &one, out);
  }
  CELL_TRY(cell_check_dim("flatten", start, t->ndim));
  CELL_TRY(cell_check_dim("flatten", end, t->ndim));
  if (start > end)
    return cell_error(CELL_ERR_VALUE, "flatten: start dimension %d is after end dimension %d",
                      start, end);
  int64_t sh[CELL_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < start; i++) sh[n++] = t->shape[i];
  sh[n++] = cell_shape_numel(end - start + 1, t->shape + start);
  for (int i = end + 1; i < t->ndim; i++) sh[n++] = t->shape[i];
  return cell_k_reshape(t, n, sh, out);
}

cell_status cell_k_slice(const cell_tensor *t, int dim, int64_t start, int64_t stop,
                              int64_t step, cell_tensor **out) {
  NULLCHECK("slice", t, out);
  CELL_TRY(cell_check_dim("slice", dim, t->ndim));
  if (t->ndim == 0) return cell_error(CELL_ERR_INDEX, "slice: cannot slice a 0-D tensor");
  int64_t size = t->shape[dim];
  if (step <= 0) return cell_error(CELL_ERR_VALUE, "slice: step must be positive, got %lld", (long long)step);
  if (start < 0 || start > size || stop < start || stop > size)
    return cell_error(CELL_ERR_INDEX,
                      "slice: range [%lld, %lld) is out of bounds for dimension %d with size %lld",
                      (long long)start, (long long)stop, dim, (long long)size);
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  memcpy(sh, t->shape, sizeof sh);
  memcpy(st, t->stride, sizeof st);
  /* Written so that no step, however large, overflows: ceil((stop - start) / step). */
  sh[dim] = stop > start ? (stop - start - 1) / step + 1 : 0;
  /* A step past the size takes one element: its stride never matters. */
  int64_t step_in = step < size ? step : (size > 0 ? size : 1);
  st[dim] = t->stride[dim] * step_in;
  return cell_tensor_new_view(t, t->ndim, sh, st, t->offset + start * t->stride[dim], out);
}

cell_status cell_k_narrow(const cell_tensor *t, int dim, int64_t start, int64_t len,
                               cell_tensor **out) {
  NULLCHECK("narrow", t, out);
  CELL_TRY(cell_check_dim("narrow", dim, t->ndim));
  if (t->ndim == 0) return cell_error(CELL_ERR_INDEX, "narrow: cannot narrow a 0-D tensor");
  int64_t end;
  if (start < 0 || len < 0 || !cell_size_add(start, len, &end) || end > t->shape[dim])
    return cell_error(CELL_ERR_INDEX,
                      "narrow: start %lld and length %lld are out of range for dimension %d of size %lld",
                      (long long)start, (long long)len, dim, (long long)t->shape[dim]);
  return cell_k_slice(t, dim, start, end, 1, out);
}

cell_status cell_k_select(const cell_tensor *t, int dim, int64_t i, cell_tensor **out) {
  NULLCHECK("select", t, out);
  if (t->ndim == 0) return cell_error(CELL_ERR_INDEX, "select: cannot index a 0-D tensor");
  CELL_TRY(cell_check_dim("select", dim, t->ndim));
  if (i < 0 || i >= t->shape[dim])
    return cell_error(CELL_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                      (long long)i, dim, (long long)t->shape[dim]);
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (d == dim) continue;
    sh[n] = t->shape[d];
    st[n++] = t->stride[d];
  }
  return cell_tensor_new_view(t, n, sh, st, t->offset + i * t->stride[dim], out);
}

cell_status cell_k_expand(const cell_tensor *t, int ndim, const int64_t *shape,
                               cell_tensor **out) {
  NULLCHECK("expand", t, out);
  if (ndim < t->ndim || ndim > CELL_MAX_DIMS || (ndim && !shape)) {
    char a[256];
    return cell_error(CELL_ERR_VALUE, "expand: cannot expand a tensor of shape %s to %d dimensions",
                      cell_shape_str(t->ndim, t->shape, a, sizeof a), ndim);
  }
  int64_t sh[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  for (int i = 0; i < ndim; i++) {
    int ti = t->ndim - ndim + i;
    int64_t want = shape[i];
    if (ti < 0) {
      if (want < 0) goto bad;
      sh[i] = want;
      st[i] = 0;
    } else if (want == -1 || want == t->shape[ti]) {
      sh[i] = t->shape[ti];
      st[i] = t->stride[ti];
    } else if (t->shape[ti] == 1 && want >= 0) {
      sh[i] = want;
      st[i] = 0;
    } else {
      goto bad;
    }
  }
  CELL_TRY(cell_shape_numel_checked("expand", ndim, sh, NULL));
  return cell_tensor_new_view(t, ndim, sh, st, t->offset, out);
bad : {
  char a[256], b[256];
  return cell_error(CELL_ERR_VALUE, "expand: shape %s cannot be broadcast to %s",
                    cell_shape_str(t->ndim, t->shape, a, sizeof a),
                    cell_shape_str(ndim, shape, b, sizeof b));
}
}
