/* lines.h - walking a tensor as lines along one dimension, and the sort
 * keys of its elements (internal; sort.c, scan.c, triangle.c, flip.c).
 *
 * A "line" is the run of elements along dim at one position of every other
 * dimension; lines are numbered in row-major order of those positions, so
 * a contiguous output of the same shape (or of another size along dim)
 * numbers its lines the same way. A 0-D tensor is one line of length 1. */
#ifndef CELL_OPS_LINES_H
#define CELL_OPS_LINES_H
#include "../core/tensor.h"

/* Element offset (from t's base) of the first element of line `line`. */
static inline int64_t cell_line_offset(const cell_tensor *t, int dim, int64_t line) {
  int64_t off = 0;
  for (int d = t->ndim - 1; d >= 0 && line > 0; d--) {
    if (d == dim) continue;
    int64_t n = t->shape[d];
    off += (line % n) * t->stride[d];
    line /= n;
  }
  return off;
}

/* Length of the lines along dim, their element stride and their number. */
static inline void cell_line_geometry(const cell_tensor *t, int dim, int64_t *len,
                                      int64_t *stride, int64_t *count) {
  if (t->ndim == 0) {
    *len = 1, *stride = 1, *count = 1;
    return;
  }
  *len = t->shape[dim];
  *stride = t->stride[dim];
  int64_t c = 1;
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) c *= t->shape[d];
  *count = c;
}

/* An unsigned key whose order is the elements' order: floats by value
 * with -0 == +0 and every NaN above +inf (as PyTorch sorts them), integers
 * and bool by value. */
#define CELL_KEY_NAN UINT64_MAX
static inline uint64_t cell_key_f64(double v) {
  if (v != v) return CELL_KEY_NAN;
  if (v == 0) v = 0.0;
  uint64_t b;
  memcpy(&b, &v, 8);
  return (b >> 63) ? ~b : b | ((uint64_t)1 << 63);
}
static inline uint64_t cell_key_i64(int64_t v) { return (uint64_t)v ^ ((uint64_t)1 << 63); }
static inline uint64_t cell_key_of(cell_dtype dt, const char *p) {
  switch (dt) {
  case CELL_DTYPE_F32: return cell_key_f64(*(const float *)p);
  case CELL_DTYPE_F64: return cell_key_f64(*(const double *)p);
  default:
    return cell_dtype_is_float(dt) ? cell_key_f64(cell_load_f64(dt, p))
                                   : cell_key_i64(cell_load_i64(dt, p));
  }
}

/* A key and the position it came from. */
typedef struct cell_keyrec {
  uint64_t k;
  int64_t i;
} cell_keyrec;

/* Stable ascending sort of n records by key (tmp: room for n more). */
void cell_keyrec_sort(cell_keyrec *a, cell_keyrec *tmp, int64_t n);
/* Rearrange a[0..n) so that a[kth] is the record of rank kth in the total
 * order (key, position), the ones before it smaller and the ones after it
 * larger. Expected O(n). */
void cell_keyrec_select(cell_keyrec *a, int64_t n, int64_t kth);
/* Sort by (key, position): for a selected prefix. */
void cell_keyrec_sort_total(cell_keyrec *a, int64_t n);

#endif
