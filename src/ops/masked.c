/* masked.c - the ops whose output size depends on the data: nonzero,
 * masked_select and masked_scatter.
 *
 * Each works on contiguous copies of its operands (broadcast first where
 * the op broadcasts), counts the selected elements, makes the output and
 * moves elements with memcpy of the element size, so every dtype goes the
 * same way. Elements are taken in row-major order, as PyTorch and MindSpore
 * take them. */
#include "../core/tensor.h"
#include "../core/view.h"
#include "kernel_list.h"
#include "ops.h"
#include <string.h>

/* Whether the element at p is not zero (NaN counts as not zero, -0.0 as zero). */
static inline int is_set(cell_dtype dt, const char *p) {
  switch (dt) {
  case CELL_DTYPE_BOOL:
  case CELL_DTYPE_U8:
  case CELL_DTYPE_I8: return *(const uint8_t *)p != 0;
  case CELL_DTYPE_I32: return *(const int32_t *)p != 0;
  case CELL_DTYPE_I64: return *(const int64_t *)p != 0;
  default: return cell_load_f64(dt, p) != 0.0;
  }
}

static cell_status check_mask(const char *op, const cell_tensor *mask) {
  if (mask->dtype != CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "%s: the mask must be a Bool tensor, got %s", op,
                      cell_dtype_name(mask->dtype));
  return CELL_OK;
}

/* a and mask broadcast together and made contiguous: *ac, *mc (released
 * by the caller; NULL on failure). */
static cell_status broadcast_pair(const char *op, const cell_tensor *a, const cell_tensor *mask,
                                  cell_tensor **ac, cell_tensor **mc) {
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  *ac = *mc = NULL;
  CELL_TRY(cell_broadcast_shapes(op, a->ndim, a->shape, mask->ndim, mask->shape, &nd, shape));
  cell_tensor *ae = NULL, *me = NULL;
  cell_status s = cell_k_expand(a, nd, shape, &ae);
  if (s == CELL_OK) s = cell_k_expand(mask, nd, shape, &me);
  if (s == CELL_OK) s = cell_k_contiguous(ae, ac);
  if (s == CELL_OK) s = cell_k_contiguous(me, mc);
  cell_tensor_release(ae);
  cell_tensor_release(me);
  if (s != CELL_OK) {
    cell_tensor_release(*ac);
    cell_tensor_release(*mc);
    *ac = *mc = NULL;
  }
  return s;
}

static int64_t count_set(const cell_tensor *c) {
  int64_t n = cell_tensor_numel(c), k = 0;
  size_t es = (size_t)cell_dtype_size(c->dtype);
  const char *p = cell_tensor_base(c);
  for (int64_t i = 0; i < n; i++) k += is_set(c->dtype, p + (size_t)i * es);
  return k;
}

cell_status cell_cpu_nonzero(const cell_tensor *a, int64_t index_base, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "nonzero: NULL argument");
  cell_tensor *c = NULL, *r = NULL;
  CELL_TRY(cell_k_contiguous(a, &c));
  int64_t n = cell_tensor_numel(c), k = count_set(c);
  int64_t shape[2] = {k, a->ndim};
  cell_status s = cell_tensor_new_contig(CELL_DTYPE_I64, 2, shape, &r);
  if (s == CELL_OK && k > 0) {
    size_t es = (size_t)cell_dtype_size(c->dtype);
    const char *p = cell_tensor_base(c);
    int64_t *o = (int64_t *)(void *)cell_tensor_base(r);
    int64_t idx[CELL_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
      if (is_set(c->dtype, p + (size_t)i * es)) {
        for (int d = 0; d < a->ndim; d++) *o++ = idx[d] + index_base;
      }
      for (int d = a->ndim - 1; d >= 0; d--) {
        if (++idx[d] < a->shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  cell_tensor_release(c);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_masked_select(const cell_tensor *a, const cell_tensor *mask,
                                   cell_tensor **out) {
  if (!a || !mask || !out) return cell_error(CELL_ERR_VALUE, "masked_select: NULL argument");
  CELL_TRY(check_mask("masked_select", mask));
  cell_tensor *ac, *mc, *r = NULL;
  CELL_TRY(broadcast_pair("masked_select", a, mask, &ac, &mc));
  int64_t n = cell_tensor_numel(mc), k = count_set(mc);
  cell_status s = cell_tensor_new_contig(a->dtype, 1, &k, &r);
  if (s == CELL_OK && k > 0) {
    size_t es = (size_t)cell_dtype_size(a->dtype);
    const uint8_t *m = (const uint8_t *)cell_tensor_base(mc);
    const char *src = cell_tensor_base(ac);
    char *dst = cell_tensor_base(r);
    for (int64_t i = 0; i < n; i++)
      if (m[i]) {
        memcpy(dst, src + (size_t)i * es, es);
        dst += es;
      }
  }
  cell_tensor_release(ac);
  cell_tensor_release(mc);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_masked_scatter(const cell_tensor *a, const cell_tensor *mask,
                                    const cell_tensor *src, cell_tensor **out) {
  if (!a || !mask || !src || !out)
    return cell_error(CELL_ERR_VALUE, "masked_scatter: NULL argument");
  CELL_TRY(check_mask("masked_scatter", mask));
  if (src->dtype != a->dtype)
    return cell_error(CELL_ERR_TYPE,
                      "masked_scatter: the source must have the input's dtype %s, got %s",
                      cell_dtype_name(a->dtype), cell_dtype_name(src->dtype));
  cell_tensor *ac, *mc, *sc = NULL;
  CELL_TRY(broadcast_pair("masked_scatter", a, mask, &ac, &mc));
  int64_t n = cell_tensor_numel(mc), k = count_set(mc), have = cell_tensor_numel(src);
  cell_status s = CELL_OK;
  if (have < k) {
    char b1[256], b2[256];
    s = cell_error(CELL_ERR_VALUE,
                   "masked_scatter: the mask (shape %s) selects %lld elements but the source "
                   "(shape %s) has only %lld",
                   cell_shape_str(mask->ndim, mask->shape, b1, sizeof b1), (long long)k,
                   cell_shape_str(src->ndim, src->shape, b2, sizeof b2), (long long)have);
  }
  if (s == CELL_OK) s = cell_k_contiguous(src, &sc);
  /* ac is our own contiguous copy unless a already was contiguous (then it
   * is a itself): write into a fresh copy in that case. */
  if (s == CELL_OK && ac->storage == a->storage) {
    cell_tensor *cl = NULL;
    s = cell_k_clone(ac, &cl);
    cell_tensor_release(ac);
    ac = cl;
  }
  if (s == CELL_OK && k > 0) {
    size_t es = (size_t)cell_dtype_size(a->dtype);
    const uint8_t *m = (const uint8_t *)cell_tensor_base(mc);
    const char *from = cell_tensor_base(sc);
    char *dst = cell_tensor_base(ac);
    for (int64_t i = 0; i < n; i++)
      if (m[i]) {
        memcpy(dst + (size_t)i * es, from, es);
        from += es;
      }
  }
  cell_tensor_release(mc);
  cell_tensor_release(sc);
  if (s != CELL_OK) {
    cell_tensor_release(ac);
    return s;
  }
  *out = ac;
  return CELL_OK;
}
