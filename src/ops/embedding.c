/* embedding.c - the rows of a table picked by integer ids, and the
 * gradient of the table (the output's rows added back at their ids)
 * (src/ops/nn.h). */
#include "nn.h"
#include "kernels.h"
#include "kernel_list.h"

#define CHUNK CELL_NN_CHUNK

static cell_status check_ids(const char *op, const cell_tensor *ids) {
  if (!cell_dtype_is_int(ids->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: ids must be an integer tensor, got %s", op,
                      cell_dtype_name(ids->dtype));
  if (ids->ndim + 1 > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "%s: ids have %d dimensions; at most %d are supported", op,
                      ids->ndim, CELL_MAX_DIMS - 1);
  return CELL_OK;
}

/* The 0-based row of every id (int64, contiguous), checked against vocab. */
static cell_status rows_of(const char *op, const cell_tensor *ids, int64_t vocab,
                           int64_t index_base, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(cell_k_astype(ids, CELL_DTYPE_I64, &r)); /* a contiguous copy */
  int64_t n = cell_tensor_numel(r), *v = (int64_t *)cell_tensor_base(r);
  for (int64_t i = 0; i < n; i++) {
    int64_t raw = v[i];
    if (raw < index_base || raw - index_base >= vocab) {
      cell_tensor_release(r);
      if (vocab == 0)
        return cell_error(CELL_ERR_INDEX, "%s: id %lld is out of range for an empty table", op,
                          (long long)raw);
      return cell_error(CELL_ERR_INDEX,
                        "%s: id %lld is out of range for a table of %lld rows (expected "
                        "%lld..%lld)",
                        op, (long long)raw, (long long)vocab, (long long)index_base,
                        (long long)(index_base + vocab - 1));
    }
    v[i] = raw - index_base;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_embedding(const cell_tensor *ids, const cell_tensor *weight, int64_t index_base,
                             cell_tensor **out) {
  if (!ids || !weight || !out) return cell_error(CELL_ERR_VALUE, "embedding: NULL argument");
  CELL_TRY(check_ids("embedding", ids));
  CELL_TRY(cell_nn_check_float("embedding", "weight", weight));
  if (weight->ndim != 2) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "embedding: weight must be 2-D {V, D}, got shape %s",
                      cell_shape_str(weight->ndim, weight->shape, b, sizeof b));
  }
  int64_t vocab = weight->shape[0], d = weight->shape[1];
  int64_t shape[CELL_MAX_DIMS];
  memcpy(shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
  shape[ids->ndim] = d;
  cell_tensor *rows, *y;
  CELL_TRY(rows_of("embedding", ids, vocab, index_base, &rows));
  cell_status s = cell_tensor_new_contig(weight->dtype, ids->ndim + 1, shape, &y);
  if (s != CELL_OK) {
    cell_tensor_release(rows);
    return s;
  }
  int64_t n = cell_tensor_numel(rows), es = cell_dtype_size(weight->dtype);
  const int64_t *rv = (const int64_t *)cell_tensor_base(rows);
  const char *wb = cell_tensor_base(weight);
  char *yb = cell_tensor_base(y);
  int64_t s0 = weight->stride[0] * es, s1 = weight->stride[1] * es;
  for (int64_t i = 0; i < n; i++) {
    const char *src = wb + rv[i] * s0;
    char *dst = yb + i * d * es;
    if (s1 == es || d <= 1) {
      memcpy(dst, src, (size_t)(d * es));
    } else {
      for (int64_t j = 0; j < d; j++) memcpy(dst + j * es, src + j * s1, (size_t)es);
    }
  }
  cell_tensor_release(rows);
  *out = y;
  return CELL_OK;
}

cell_status cell_cpu_embedding_backward(const cell_tensor *g, const cell_tensor *ids, int64_t vocab,
                                      cell_dtype dt, int has_padding, int64_t padding_idx,
                                      int64_t index_base, cell_tensor **gw) {
  const char *op = "embedding backward";
  if (!g || !ids || !gw) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", op);
  CELL_TRY(check_ids(op, ids));
  int64_t d = g->ndim ? g->shape[g->ndim - 1] : 0;
  if (g->ndim != ids->ndim + 1 || !cell_shape_equal(ids->ndim, ids->shape, ids->ndim, g->shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for ids of shape %s", op,
                      cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(ids->ndim, ids->shape, b2, sizeof b2));
  }
  int64_t shape[2] = {vocab, d};
  cell_tensor *rows = NULL, *gc = NULL, *r = NULL;
  cell_status s = rows_of(op, ids, vocab, index_base, &rows);
  if (s == CELL_OK) s = cell_k_contiguous(g, &gc);
  if (s == CELL_OK) s = cell_tensor_full(dt, 2, shape, 0.0, &r);
  if (s == CELL_OK) {
    int64_t n = cell_tensor_numel(rows), ge = cell_dtype_size(g->dtype), re = cell_dtype_size(dt);
    const int64_t *rv = (const int64_t *)cell_tensor_base(rows);
    const char *gb = cell_tensor_base(gc);
    char *rb = cell_tensor_base(r);
    int64_t pad = padding_idx - index_base;
    double acc[CHUNK], add[CHUNK];
    for (int64_t i = 0; i < n; i++) {
      if (has_padding && rv[i] == pad) continue;
      if (dt == CELL_DTYPE_F32 && g->dtype == CELL_DTYPE_F32) {
        /* float32 sums in float32: the same bits as through double (a sum
         * of two floats rounded once either way), at vector speed (a tiny
         * GPT's token embedding backward: 37 us a step through the double
         * buffers) */
        float *fd = (float *)(void *)(rb + rv[i] * d * re);
        const float *fs = (const float *)(const void *)(gb + i * d * ge);
        CELL_NN_SIMD for (int64_t j = 0; j < d; j++) fd[j] += fs[j];
        continue;
      }
      char *dst = rb + rv[i] * d * re;
      const char *src = gb + i * d * ge;
      for (int64_t j0 = 0; j0 < d; j0 += CHUNK) {
        int64_t k = d - j0 < CHUNK ? d - j0 : CHUNK;
        cell_load_run(dt, dst + j0 * re, re, k, acc);
        cell_load_run(g->dtype, src + j0 * ge, ge, k, add);
        for (int64_t j = 0; j < k; j++) acc[j] += add[j];
        cell_store_run(dt, dst + j0 * re, re, k, acc);
      }
    }
  }
  cell_tensor_release(rows);
  cell_tensor_release(gc);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *gw = r;
  return CELL_OK;
}
