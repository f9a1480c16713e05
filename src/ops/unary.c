/* unary.c - elementwise math, clamp, where and masked_fill. */
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include <tgmath.h>
#include "kernel_list.h"

#define ID(x) (x)
#define WRAP(ST) (ST)(uint64_t)

/* The contiguous loop of a cheap op (selects, sign, rounding) is marked
 * `omp simd` (VEC) so that selects compile to vector blends rather than a
 * branch per element. Loops that call libm (exp, log, tanh, ...) or convert
 * halves (a loop per element) cannot be vectorised and are not marked
 * (SCALAR): a request the compiler cannot honour is a warning in clang. */
#define VEC _Pragma("omp simd")
#define SCALAR
#define UNARY_LOOP(name, ST, CT, LOAD, STORE, EXPR, SIMD)              \
  static void name(void *ctx, int64_t n, char **p, const int64_t *s) { \
    (void)ctx;                                                         \
    if (s[0] == sizeof(ST) && s[1] == sizeof(ST)) {                    \
      ST *o = (ST *)p[0];                                              \
      const ST *a = (const ST *)p[1];                                  \
      SIMD                                                             \
      for (int64_t i = 0; i < n; i++) {                                \
        CT x = LOAD(a[i]);                                             \
        o[i] = STORE(EXPR);                                            \
      }                                                                \
    } else {                                                           \
      for (int64_t i = 0; i < n; i++) {                                \
        CT x = LOAD(*(const ST *)(p[1] + i * s[1]));                   \
        *(ST *)(p[0] + i * s[0]) = STORE(EXPR);                        \
      }                                                                \
    }                                                                  \
  }

#define FLOAT_TYPES(X)                                                    \
  X(F32, float, float, ID, ID, VEC)                                       \
  X(F64, double, double, ID, ID, VEC)                                     \
  X(F16, uint16_t, float, cell_half_to_float, cell_float_to_half, SCALAR) \
  X(BF16, uint16_t, float, cell_bf16_to_float, cell_float_to_bf16, SCALAR)
#define INT_TYPES(X)                               \
  X(I8, int8_t, int64_t, ID, WRAP(int8_t), VEC)    \
  X(U8, uint8_t, int64_t, ID, WRAP(uint8_t), VEC)  \
  X(I16, int16_t, int64_t, ID, WRAP(int16_t), VEC) \
  X(I32, int32_t, int64_t, ID, WRAP(int32_t), VEC) \
  X(I64, int64_t, int64_t, ID, WRAP(int64_t), VEC)

#define ONE ((__typeof__(x))1)
#define F_SIGN(x) ((x) != (x) ? (x) : (__typeof__(x))(((x) > 0) - ((x) < 0)))
#define GELU(x) ((x) * (__typeof__(x))0.5 * (ONE + erf((x) * (__typeof__(x))0.70710678118654752440)))
#define SIGMOID(x) ((x) >= 0 ? ONE / (ONE + exp(-(x))) : exp(x) / (ONE + exp(x)))

#define DEF_FLOAT(D, ST, CT, L, S, V)                                 \
  UNARY_LOOP(abs_##D, ST, CT, L, S, fabs(x), V)                       \
  UNARY_LOOP(neg_##D, ST, CT, L, S, -x, V)                            \
  UNARY_LOOP(exp_##D, ST, CT, L, S, exp(x), SCALAR)                   \
  UNARY_LOOP(log_##D, ST, CT, L, S, log(x), SCALAR)                   \
  UNARY_LOOP(log1p_##D, ST, CT, L, S, log1p(x), SCALAR)               \
  UNARY_LOOP(sqrt_##D, ST, CT, L, S, sqrt(x), SCALAR)                 \
  UNARY_LOOP(rsqrt_##D, ST, CT, L, S, ONE / sqrt(x), SCALAR)          \
  UNARY_LOOP(sin_##D, ST, CT, L, S, sin(x), SCALAR)                   \
  UNARY_LOOP(cos_##D, ST, CT, L, S, cos(x), SCALAR)                   \
  UNARY_LOOP(tanh_##D, ST, CT, L, S, tanh(x), SCALAR)                 \
  UNARY_LOOP(sigmoid_##D, ST, CT, L, S, SIGMOID(x), SCALAR)           \
  UNARY_LOOP(relu_##D, ST, CT, L, S, x > 0 ? x : (x != x ? x : 0), V) \
  UNARY_LOOP(gelu_##D, ST, CT, L, S, GELU(x), SCALAR)                 \
  UNARY_LOOP(silu_##D, ST, CT, L, S, x * SIGMOID(x), SCALAR)          \
  UNARY_LOOP(floor_##D, ST, CT, L, S, floor(x), V)                    \
  UNARY_LOOP(ceil_##D, ST, CT, L, S, ceil(x), V)                      \
  UNARY_LOOP(round_##D, ST, CT, L, S, nearbyint(x), V)                \
  UNARY_LOOP(sign_##D, ST, CT, L, S, F_SIGN(x), V)
#define DEF_INT(D, ST, CT, L, S, V)                                            \
  UNARY_LOOP(abs_##D, ST, CT, L, S, x < 0 ? (int64_t)(0 - (uint64_t)x) : x, V) \
  UNARY_LOOP(neg_##D, ST, CT, L, S, (int64_t)(0 - (uint64_t)x), V)             \
  UNARY_LOOP(relu_##D, ST, CT, L, S, x > 0 ? x : 0, V)                         \
  UNARY_LOOP(floor_##D, ST, CT, L, S, x, V)                                    \
  UNARY_LOOP(ceil_##D, ST, CT, L, S, x, V)                                     \
  UNARY_LOOP(round_##D, ST, CT, L, S, x, V)                                    \
  UNARY_LOOP(sign_##D, ST, CT, L, S, (x > 0) - (x < 0), V)
FLOAT_TYPES(DEF_FLOAT)
INT_TYPES(DEF_INT)
UNARY_LOOP(not_BOOL, uint8_t, int, ID, ID, !x, VEC)

#define K(op, fn, D) [op][CELL_DTYPE_##D] = fn##_##D,
#define ROW_F(D, ...)                                                                         \
  K(CELL_OP_ABS, abs, D) K(CELL_OP_NEG, neg, D) K(CELL_OP_EXP, exp, D) K(CELL_OP_LOG, log, D) \
  K(CELL_OP_LOG1P, log1p, D) K(CELL_OP_SQRT, sqrt, D) K(CELL_OP_RSQRT, rsqrt, D)              \
  K(CELL_OP_SIN, sin, D) K(CELL_OP_COS, cos, D) K(CELL_OP_TANH, tanh, D)                      \
  K(CELL_OP_SIGMOID, sigmoid, D) K(CELL_OP_RELU, relu, D) K(CELL_OP_GELU, gelu, D)            \
  K(CELL_OP_SILU, silu, D) K(CELL_OP_FLOOR, floor, D) K(CELL_OP_CEIL, ceil, D)                \
  K(CELL_OP_ROUND, round, D) K(CELL_OP_SIGN, sign, D)
#define ROW_I(D, ...)                                                            \
  K(CELL_OP_ABS, abs, D) K(CELL_OP_NEG, neg, D) K(CELL_OP_RELU, relu, D)         \
  K(CELL_OP_FLOOR, floor, D) K(CELL_OP_CEIL, ceil, D) K(CELL_OP_ROUND, round, D) \
  K(CELL_OP_SIGN, sign, D)
static const cell_loop_fn kernels[CELL_UNOP_COUNT][CELL_DTYPE_COUNT] = {
    FLOAT_TYPES(ROW_F) INT_TYPES(ROW_I)[CELL_OP_LOGICAL_NOT][CELL_DTYPE_BOOL] = not_BOOL};

/* The op table: name, and whether integer inputs are computed in float32. */
static const struct {
  const char *name;
  bool to_float;
} unops[] = {
    [CELL_OP_ABS] = {"abs", false},       [CELL_OP_NEG] = {"neg", false},
    [CELL_OP_EXP] = {"exp", true},        [CELL_OP_LOG] = {"log", true},
    [CELL_OP_LOG1P] = {"log1p", true},    [CELL_OP_SQRT] = {"sqrt", true},
    [CELL_OP_RSQRT] = {"rsqrt", true},    [CELL_OP_SIN] = {"sin", true},
    [CELL_OP_COS] = {"cos", true},        [CELL_OP_TANH] = {"tanh", true},
    [CELL_OP_SIGMOID] = {"sigmoid", true}, [CELL_OP_RELU] = {"relu", false},
    [CELL_OP_GELU] = {"gelu", true},      [CELL_OP_SILU] = {"silu", true},
    [CELL_OP_FLOOR] = {"floor", false},   [CELL_OP_CEIL] = {"ceil", false},
    [CELL_OP_ROUND] = {"round", false},   [CELL_OP_SIGN] = {"sign", false},
    [CELL_OP_LOGICAL_NOT] = {"logical_not", false},
};
_Static_assert(sizeof unops / sizeof unops[0] == CELL_UNOP_COUNT, "unop table");

const char *cell_unop_name(cell_unop op) {
  return (unsigned)op < CELL_UNOP_COUNT ? unops[op].name : "?";
}

static cell_status unop_type(cell_unop op, cell_dtype in, cell_dtype *ct) {
  if ((unsigned)op >= CELL_UNOP_COUNT)
    return cell_error(CELL_ERR_VALUE, "unary op: unknown op %d", (int)op);
  cell_dtype t = in;
  if (op == CELL_OP_LOGICAL_NOT) t = CELL_DTYPE_BOOL;
  else if (unops[op].to_float && !cell_dtype_is_float(in)) t = CELL_DTYPE_F32;
  if (!kernels[op][t])
    return cell_error(CELL_ERR_TYPE, "%s: not supported for %s tensors", unops[op].name,
                      cell_dtype_name(in));
  *ct = t;
  return CELL_OK;
}

static cell_status run_unary(cell_unop op, cell_dtype ct, cell_tensor *out, const cell_tensor *a) {
  cell_tensor *ca;
  CELL_TRY(cell_as_dtype(a, ct, &ca));
  cell_iter it;
  cell_iter_init(&it, out->ndim, out->shape);
  cell_iter_add(&it, out);
  cell_iter_add(&it, ca);
  cell_status s = cell_iter_run(&it, kernels[op][ct], NULL);
  cell_tensor_release(ca);
  return s;
}

cell_status cell_cpu_unary(cell_unop op, const cell_tensor *a, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "unary op: NULL argument");
  cell_dtype ct;
  CELL_TRY(unop_type(op, a->dtype, &ct));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(ct, a->ndim, a->shape, &r));
  cell_status s = run_unary(op, ct, r, a);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_unary_(cell_unop op, cell_tensor *a) {
  if (!a) return cell_error(CELL_ERR_VALUE, "unary op: NULL argument");
  cell_dtype ct;
  CELL_TRY(unop_type(op, a->dtype, &ct));
  if (ct != a->dtype)
    return cell_error(CELL_ERR_TYPE, "%s_: result type %s cannot be stored in a %s tensor",
                      unops[op].name, cell_dtype_name(ct), cell_dtype_name(a->dtype));
  cell_tensor_bump(a);
  return run_unary(op, ct, a, a);
}

/* clamp = minimum(maximum(a, lo), hi), through the binary kernels. */
cell_status cell_cpu_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi, double hi,
                          cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "clamp: NULL argument");
  if (a->dtype == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "clamp: not supported for Bool tensors");
  if (has_lo && has_hi && lo > hi)
    return cell_error(CELL_ERR_VALUE, "clamp: min %g is greater than max %g", lo, hi);
  int is_float = cell_dtype_is_float(a->dtype);
  cell_tensor *t = NULL, *r = NULL;
  if (has_lo) CELL_TRY(cell_k_binary_scalar(CELL_OP_MAXIMUM, a, lo, is_float, 0, &t));
  else CELL_TRY(cell_k_clone(a, &t));
  if (has_hi) {
    cell_status s = cell_k_binary_scalar(CELL_OP_MINIMUM, t, hi, is_float, 0, &r);
    cell_tensor_release(t);
    if (s != CELL_OK) return s;
    t = r;
  }
  *out = t;
  return CELL_OK;
}

typedef struct {
  int es;
} where_ctx;

static void where_loop(void *vctx, int64_t n, char **p, const int64_t *s) {
  size_t es = (size_t)((where_ctx *)vctx)->es;
  for (int64_t i = 0; i < n; i++) {
    const char *src = *(const uint8_t *)(p[1] + i * s[1]) ? p[2] + i * s[2] : p[3] + i * s[3];
    memcpy(p[0] + i * s[0], src, es);
  }
}

cell_status cell_cpu_where(const cell_tensor *cond, const cell_tensor *a, const cell_tensor *b,
                          cell_tensor **out) {
  if (!cond || !a || !b || !out) return cell_error(CELL_ERR_VALUE, "where: NULL argument");
  if (cond->dtype != CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "where: the condition must be a Bool tensor, got %s",
                      cell_dtype_name(cond->dtype));
  int n1, n2;
  int64_t s1[CELL_MAX_DIMS], s2[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes("where", cond->ndim, cond->shape, a->ndim, a->shape, &n1, s1));
  CELL_TRY(cell_broadcast_shapes("where", n1, s1, b->ndim, b->shape, &n2, s2));
  cell_dtype dt = cell_dtype_promote(a->dtype, b->dtype);
  cell_tensor *ca = NULL, *cb = NULL, *r = NULL;
  cell_status s = cell_as_dtype(a, dt, &ca);
  if (s == CELL_OK) s = cell_as_dtype(b, dt, &cb);
  if (s == CELL_OK) s = cell_tensor_new_contig(dt, n2, s2, &r);
  if (s == CELL_OK) {
    cell_iter it;
    cell_iter_init(&it, n2, s2);
    cell_iter_add(&it, r);
    cell_iter_add(&it, cond);
    cell_iter_add(&it, ca);
    cell_iter_add(&it, cb);
    where_ctx c = {cell_dtype_size(dt)};
    s = cell_iter_run(&it, where_loop, &c);
  }
  if (s != CELL_OK) return cell_release4(s, ca, cb, r, NULL);
  cell_release4(s, ca, cb, NULL, NULL);
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_masked_fill(const cell_tensor *a, const cell_tensor *mask, double value,
                                cell_tensor **out) {
  if (!a || !mask || !out) return cell_error(CELL_ERR_VALUE, "masked_fill: NULL argument");
  if (mask->dtype != CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "masked_fill: the mask must be a Bool tensor, got %s",
                      cell_dtype_name(mask->dtype));
  cell_tensor *v;
  CELL_TRY(cell_tensor_full(a->dtype, 0, NULL, value, &v));
  cell_status s = cell_k_where(mask, v, a, out);
  cell_tensor_release(v);
  return s;
}
