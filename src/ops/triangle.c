/* triangle.c - tril / triu, diag, flip and roll: kernels that move
 * elements without arithmetic (every dtype, its bytes copied). */
#include "kernels.h"
#include "kernel_list.h"
#include "lines.h"
#include <string.h>

/* --- tril / triu --------------------------------------------------------------- */

cell_status cell_cpu_triangle(const cell_tensor *a, int64_t diagonal, int upper, cell_tensor **out) {
  const char *op = upper ? "triu" : "tril";
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  if (a->ndim < 2) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "%s: input must have at least 2 dimensions, got shape %s", op,
                      cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, a->ndim, a->shape, &r));
  int last = a->ndim - 1;
  int64_t R = a->shape[last - 1], C = a->shape[last], es = cell_dtype_size(a->dtype);
  int64_t lines = C ? cell_tensor_numel(a) / C : 0, cs = a->stride[last] * es;
  char *dst = cell_tensor_base(r);
  for (int64_t l = 0; l < lines; l++) {
    int64_t i = l % R;
    const char *src = cell_tensor_base(a) + cell_line_offset(a, last, l) * es;
    char *d = dst + l * C * es;
    for (int64_t j = 0; j < C; j++) {
      int keep = upper ? (j - i >= diagonal) : (j - i <= diagonal);
      if (keep) memcpy(d + j * es, src + j * cs, (size_t)es);
      else memset(d + j * es, 0, (size_t)es);
    }
  }
  *out = r;
  return CELL_OK;
}

/* --- diag ---------------------------------------------------------------------- */

cell_status cell_cpu_diag(const cell_tensor *a, int64_t offset, int64_t rows, int64_t cols,
                          cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "diag: NULL argument");
  int64_t es = cell_dtype_size(a->dtype);
  cell_tensor *r;
  if (offset > CELL_MAX_NUMEL || offset < -CELL_MAX_NUMEL)
    return cell_error(CELL_ERR_VALUE, "diag: offset %lld is out of range", (long long)offset);
  if (a->ndim == 1) {
    int64_t n = a->shape[0], ao = offset < 0 ? -offset : offset;
    if (rows < 0) rows = cols = n + ao;
    int64_t shape[2] = {rows, cols};
    CELL_TRY(cell_tensor_new_contig(a->dtype, 2, shape, &r));
    char *d = cell_tensor_base(r);
    memset(d, 0, (size_t)(rows * cols * es));
    const char *s = cell_tensor_base(a);
    for (int64_t i = 0; i < n; i++) {
      int64_t ri = offset >= 0 ? i : i - offset, ci = offset >= 0 ? i + offset : i;
      if (ri < rows && ci < cols)
        memcpy(d + (ri * cols + ci) * es, s + i * a->stride[0] * es, (size_t)es);
    }
  } else if (a->ndim == 2) {
    int64_t R = a->shape[0], C = a->shape[1];
    int64_t n = offset >= 0 ? (R < C - offset ? R : C - offset) : (R + offset < C ? R + offset : C);
    if (n < 0) n = 0;
    int64_t shape[1] = {n};
    CELL_TRY(cell_tensor_new_contig(a->dtype, 1, shape, &r));
    char *d = cell_tensor_base(r);
    const char *s = cell_tensor_base(a);
    for (int64_t i = 0; i < n; i++) {
      int64_t ri = offset >= 0 ? i : i - offset, ci = offset >= 0 ? i + offset : i;
      memcpy(d + i * es, s + (ri * a->stride[0] + ci * a->stride[1]) * es, (size_t)es);
    }
  } else {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "diag: input must be 1-D or 2-D, got shape %s",
                      cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  *out = r;
  return CELL_OK;
}

/* --- flip / roll: out[i] = a[src(i)] per dimension ------------------------------ */

/* Each dimension d reads index (flip[d] ? n-1-i : i) - shift[d], wrapped. */
static cell_status remap(const cell_tensor *a, const bool *flip, const int64_t *shift,
                         cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, a->ndim, a->shape, &r));
  int64_t n = cell_tensor_numel(a), es = cell_dtype_size(a->dtype);
  char *dst = cell_tensor_base(r);
  const char *base = cell_tensor_base(a);
  if (a->ndim == 0 || n == 0) {
    if (n) memcpy(dst, base, (size_t)es);
    *out = r;
    return CELL_OK;
  }
  int last = a->ndim - 1;
  int64_t C = a->shape[last], lines = n / C, cs = a->stride[last] * es;
  for (int64_t l = 0; l < lines; l++) {
    int64_t off = 0, rest = l;
    for (int d = last - 1; d >= 0; d--) {
      int64_t sz = a->shape[d], i = rest % sz;
      rest /= sz;
      if (flip[d]) i = sz - 1 - i;
      i -= shift[d];
      if (i < 0) i += sz;
      off += i * a->stride[d];
    }
    const char *src = base + off * es;
    char *d = dst + l * C * es;
    for (int64_t j = 0; j < C; j++) {
      int64_t sj = flip[last] ? C - 1 - j : j;
      sj -= shift[last];
      if (sj < 0) sj += C;
      memcpy(d + j * es, src + sj * cs, (size_t)es);
    }
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_flip(const cell_tensor *a, int ndims, const int *dims, cell_tensor **out) {
  if (!a || !out || (ndims > 0 && !dims)) return cell_error(CELL_ERR_VALUE, "flip: NULL argument");
  if (ndims < 0 || ndims > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "flip: %d dimensions given", ndims);
  bool flip[CELL_MAX_DIMS] = {false};
  int64_t shift[CELL_MAX_DIMS] = {0};
  for (int k = 0; k < ndims; k++) {
    CELL_TRY(cell_check_dim("flip", dims[k], a->ndim));
    if (flip[dims[k]])
      return cell_error(CELL_ERR_VALUE, "flip: dimension %d appears more than once in the list of dimensions",
                        dims[k]);
    flip[dims[k]] = true;
  }
  return remap(a, flip, shift, out);
}

static int64_t wrap(int64_t s, int64_t n) {
  if (n == 0) return 0;
  s %= n;
  return s < 0 ? s + n : s;
}

cell_status cell_cpu_roll(const cell_tensor *a, int n, const int64_t *shifts, const int *dims,
                          cell_tensor **out) {
  if (!a || !out || n < 0 || (n > 0 && (!shifts || !dims)))
    return cell_error(CELL_ERR_VALUE, "roll: NULL argument");
  bool flip[CELL_MAX_DIMS] = {false};
  int64_t shift[CELL_MAX_DIMS] = {0};
  if (n == 0) { /* flattened: shifts[0] over the elements in row-major order */
    cell_tensor *c, *r;
    int64_t numel = cell_tensor_numel(a), s = wrap(shifts ? shifts[0] : 0, numel);
    int64_t es = cell_dtype_size(a->dtype);
    CELL_TRY(cell_k_contiguous(a, &c));
    cell_status st = cell_tensor_new_contig(a->dtype, a->ndim, a->shape, &r);
    if (st != CELL_OK) return cell_release4(st, c, NULL, NULL, NULL);
    char *d = cell_tensor_base(r);
    const char *src = cell_tensor_base(c);
    if (numel) {
      memcpy(d + s * es, src, (size_t)((numel - s) * es));
      memcpy(d, src + (numel - s) * es, (size_t)(s * es));
    }
    cell_tensor_release(c);
    *out = r;
    return CELL_OK;
  }
  for (int k = 0; k < n; k++) {
    CELL_TRY(cell_check_dim("roll", dims[k], a->ndim));
    if (a->ndim == 0) continue;
    int64_t sz = a->shape[dims[k]];
    shift[dims[k]] = wrap(shift[dims[k]] + wrap(shifts[k], sz), sz);
  }
  return remap(a, flip, shift, out);
}
