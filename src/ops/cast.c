/* cast.c - copies and dtype conversion: copy_, fill_, astype, contiguous, clone. */
#include "../core/iter.h"
#include "kernels.h"
#include "kernel_list.h"

typedef struct {
  cell_dtype to, from;
} cast_ctx;

static void copy_same(void *vctx, int64_t n, char **p, const int64_t *s) {
  const cast_ctx *c = vctx;
  int es = cell_dtype_size(c->to);
  char *o = p[0];
  const char *a = p[1];
  if (s[0] == es && s[1] == es) {
    memcpy(o, a, (size_t)(n * es));
    return;
  }
  switch (es) {
#define COPY_N(T)                                                   \
  for (int64_t i = 0; i < n; i++) *(T *)(o + i * s[0]) = *(const T *)(a + i * s[1]); \
  break;
  case 1: COPY_N(uint8_t)
  case 2: COPY_N(uint16_t)
  case 4: COPY_N(uint32_t)
  default: COPY_N(uint64_t)
#undef COPY_N
  }
}

/* bfloat16 <-> float32 as integer lane operations the compiler vectorises
 * (the same rounding as cell_float_to_bf16: nearest even, NaN kept quiet),
 * with AVX2 where the CPU has it (chosen at run time). */
#define CAST_CLONES CELL_CLONES_V3
CAST_CLONES static void bf16_to_f32(const uint16_t *x, float *y, int64_t n) {
  uint32_t *u = (uint32_t *)(void *)y;
#pragma omp simd
  for (int64_t i = 0; i < n; i++) u[i] = (uint32_t)x[i] << 16;
}

CAST_CLONES static void f32_to_bf16(const float *x, uint16_t *y, int64_t n) {
  const uint32_t *u = (const uint32_t *)(const void *)x;
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    uint32_t v = u[i];
    uint32_t r = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
    uint32_t q = (v >> 16) | 0x40u;
    y[i] = (uint16_t)((v & 0x7fffffffu) > 0x7f800000u ? q : r);
  }
}

static void copy_convert(void *vctx, int64_t n, char **p, const int64_t *s) {
  const cast_ctx *c = vctx;
  char *o = p[0];
  const char *a = p[1];
  if (c->to == CELL_DTYPE_F32 && c->from == CELL_DTYPE_F64 && s[0] == 4 && s[1] == 8) {
    for (int64_t i = 0; i < n; i++) ((float *)o)[i] = (float)((const double *)a)[i];
  } else if (c->to == CELL_DTYPE_F64 && c->from == CELL_DTYPE_F32 && s[0] == 8 && s[1] == 4) {
    for (int64_t i = 0; i < n; i++) ((double *)o)[i] = ((const float *)a)[i];
  } else if (c->from == CELL_DTYPE_F32 && s[1] == 4 && s[0] == 2 &&
             (c->to == CELL_DTYPE_BF16 || c->to == CELL_DTYPE_F16)) {
    /* float32 -> bfloat16/float16, contiguous (mixed precision's casts) */
    if (c->to == CELL_DTYPE_BF16)
      f32_to_bf16((const float *)a, (uint16_t *)o, n);
    else
      for (int64_t i = 0; i < n; i++) ((uint16_t *)o)[i] = cell_float_to_half(((const float *)a)[i]);
  } else if (c->to == CELL_DTYPE_F32 && s[0] == 4 && s[1] == 2 &&
             (c->from == CELL_DTYPE_BF16 || c->from == CELL_DTYPE_F16)) {
    if (c->from == CELL_DTYPE_BF16)
      bf16_to_f32((const uint16_t *)a, (float *)o, n);
    else
      for (int64_t i = 0; i < n; i++) ((float *)o)[i] = cell_half_to_float(((const uint16_t *)a)[i]);
  } else if (c->from == CELL_DTYPE_BF16 && c->to == CELL_DTYPE_F32) { /* strided (a transposed view) */
    for (int64_t i = 0; i < n; i++)
      *(float *)(void *)(o + i * s[0]) = cell_bf16_to_float(*(const uint16_t *)(const void *)(a + i * s[1]));
  } else if (c->from == CELL_DTYPE_F32 && c->to == CELL_DTYPE_BF16) {
    for (int64_t i = 0; i < n; i++)
      *(uint16_t *)(void *)(o + i * s[0]) = cell_float_to_bf16(*(const float *)(const void *)(a + i * s[1]));
  } else if (!cell_dtype_is_float(c->from) && !cell_dtype_is_float(c->to)) {
    for (int64_t i = 0; i < n; i++)
      cell_store_i64(c->to, o + i * s[0], cell_load_i64(c->from, a + i * s[1]));
  } else {
    for (int64_t i = 0; i < n; i++)
      cell_store_f64(c->to, o + i * s[0], cell_load_f64(c->from, a + i * s[1]));
  }
}

cell_status cell_cpu_copy_(cell_tensor *dst, const cell_tensor *src) {
  if (!dst || !src) return cell_error(CELL_ERR_VALUE, "copy_: NULL tensor");
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes("copy_", dst->ndim, dst->shape, src->ndim, src->shape, &nd,
                                 shape));
  if (!cell_shape_equal(nd, shape, dst->ndim, dst->shape)) {
    char a[256], b[256];
    return cell_error(CELL_ERR_VALUE, "copy_: source of shape %s cannot be broadcast to %s",
                      cell_shape_str(src->ndim, src->shape, a, sizeof a),
                      cell_shape_str(dst->ndim, dst->shape, b, sizeof b));
  }
  cell_iter it;
  cell_iter_init(&it, dst->ndim, dst->shape);
  cell_iter_add(&it, dst);
  cell_iter_add(&it, src);
  cast_ctx c = {dst->dtype, src->dtype};
  cell_tensor_bump(dst);
  return cell_iter_run(&it, dst->dtype == src->dtype ? copy_same : copy_convert, &c);
}

typedef struct {
  int size;
  double value[1]; /* the value already stored in the target dtype */
} fill_ctx;

static void fill_loop(void *vctx, int64_t n, char **p, const int64_t *s) {
  const fill_ctx *c = vctx;
  for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * s[0], c->value, (size_t)c->size);
}

cell_status cell_cpu_fill_(cell_tensor *t, double v) {
  if (!t) return cell_error(CELL_ERR_VALUE, "fill_: NULL tensor");
  fill_ctx ctx = {cell_dtype_size(t->dtype), {0}};
  cell_store_f64(t->dtype, ctx.value, v);
  cell_iter it;
  cell_iter_init(&it, t->ndim, t->shape);
  cell_iter_add(&it, t);
  cell_tensor_bump(t);
  if (t->dtype == CELL_DTYPE_F32 && cell_tensor_is_contiguous(t)) {
    float *d = (float *)cell_tensor_base(t), f = (float)v;
    int64_t n = cell_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) d[i] = f;
    return CELL_OK;
  }
  if (ctx.size == 2 && cell_tensor_is_contiguous(t)) { /* bfloat16/float16/int16 (mixed precision's zeros) */
    uint16_t *d = (uint16_t *)(void *)cell_tensor_base(t), h;
    memcpy(&h, ctx.value, sizeof h);
    int64_t n = cell_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) d[i] = h;
    return CELL_OK;
  }
  return cell_iter_run(&it, fill_loop, &ctx);
}

cell_status cell_cpu_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "astype: NULL argument");
  if ((unsigned)dt >= CELL_DTYPE_COUNT)
    return cell_error(CELL_ERR_TYPE, "astype: unknown dtype %d", (int)dt);
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(dt, t->ndim, t->shape, &r));
  cell_status s = cell_k_copy_(r, t);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_clone(const cell_tensor *t, cell_tensor **out) {
  if (!t) return cell_error(CELL_ERR_VALUE, "clone: NULL tensor");
  return cell_k_astype(t, t->dtype, out);
}

cell_status cell_cpu_contiguous(const cell_tensor *t, cell_tensor **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "contiguous: NULL argument");
  if (cell_tensor_is_contiguous(t)) {
    cell_tensor_retain((cell_tensor *)t);
    *out = (cell_tensor *)t;
    return CELL_OK;
  }
  return cell_k_clone(t, out);
}
