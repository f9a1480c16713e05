/* unary.c - elementwise math, clamp, where and masked_fill. */
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include <tgmath.h>
#include "kernel_list.h"
#include "vmath.h"

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
/* sign(NaN) is 0, as PyTorch ((x > 0) - (x < 0)). */
#define F_SIGN(x) ((__typeof__(x))(((x) > 0) - ((x) < 0)))
/* x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2: equal to (1 + erf(x / sqrt 2)) / 2,
 * which cancels to 0 in the left tail (gelu(-10) came out -0, not -7.6e-23) */
#define GELU(x) ((x) * (__typeof__(x))0.5 * erfc((x) * (__typeof__(x))-0.70710678118654752440))
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
/* ReLU of bfloat16/float16 on the bits, vectorised: a set sign gives +0,
 * except for NaN (above the infinity's bits), which passes. The loops
 * relu_BF16/relu_F16 above stay for strided operands. */
#define HALF_RELU(name, INF)                                                 \
  static void name(void *ctx, int64_t n, char **p, const int64_t *s) {     \
    (void)ctx;                                                             \
    if (s[0] != 2 || s[1] != 2) return name##_strided(ctx, n, p, s);       \
    uint16_t *o = (uint16_t *)p[0];                                        \
    const uint16_t *a = (const uint16_t *)p[1];                            \
    VEC                                                                    \
    for (int64_t i = 0; i < n; i++) {                                      \
      uint16_t h = a[i];                                                   \
      o[i] = (h & 0x8000u) && (h & 0x7fffu) <= (INF) ? (uint16_t)0 : h;    \
    }                                                                      \
  }
#define relu_BF16 relu_BF16_strided
#define relu_F16 relu_F16_strided
FLOAT_TYPES(DEF_FLOAT)
#undef relu_BF16
#undef relu_F16
HALF_RELU(relu_BF16, 0x7f80u)
HALF_RELU(relu_F16, 0x7c00u)
INT_TYPES(DEF_INT)
UNARY_LOOP(not_BOOL, uint8_t, int, ID, ID, !x, VEC)

/* Elementwise math of issue 13. Integers reach the transcendental ones as
 * float32 (unop_type); square keeps integers, wrapping as PyTorch does. */
#define DEF_FLOAT_MATH(D, ST, CT, L, S, V)                              \
  UNARY_LOOP(erf_##D, ST, CT, L, S, erf(x), SCALAR)                     \
  UNARY_LOOP(erfc_##D, ST, CT, L, S, erfc(x), SCALAR)                   \
  UNARY_LOOP(tan_##D, ST, CT, L, S, tan(x), SCALAR)                     \
  UNARY_LOOP(atan_##D, ST, CT, L, S, atan(x), SCALAR)                   \
  UNARY_LOOP(asin_##D, ST, CT, L, S, asin(x), SCALAR)                   \
  UNARY_LOOP(acos_##D, ST, CT, L, S, acos(x), SCALAR)                   \
  UNARY_LOOP(sinh_##D, ST, CT, L, S, sinh(x), SCALAR)                   \
  UNARY_LOOP(cosh_##D, ST, CT, L, S, cosh(x), SCALAR)                   \
  UNARY_LOOP(log2_##D, ST, CT, L, S, log2(x), SCALAR)                   \
  UNARY_LOOP(log10_##D, ST, CT, L, S, log10(x), SCALAR)                 \
  UNARY_LOOP(exp2_##D, ST, CT, L, S, exp2(x), SCALAR)                   \
  UNARY_LOOP(expm1_##D, ST, CT, L, S, expm1(x), SCALAR)                 \
  UNARY_LOOP(square_##D, ST, CT, L, S, x * x, V)                        \
  UNARY_LOOP(reciprocal_##D, ST, CT, L, S, ONE / x, V)
#define DEF_INT_MATH(D, ST, CT, L, S, V) \
  UNARY_LOOP(square_##D, ST, CT, L, S, (int64_t)((uint64_t)x * (uint64_t)x), V)
FLOAT_TYPES(DEF_FLOAT_MATH)
INT_TYPES(DEF_INT_MATH)

/* isnan / isinf / isfinite: any dtype in, bool out. Integers and bool are
 * never NaN or infinite. */
#define PRED_LOOP(name, ST, CT, LOAD, EXPR)                              \
  static void name(void *ctx, int64_t n, char **p, const int64_t *s) {   \
    (void)ctx;                                                           \
    for (int64_t i = 0; i < n; i++) {                                    \
      CT x = LOAD(*(const ST *)(p[1] + i * s[1]));                       \
      *(uint8_t *)(p[0] + i * s[0]) = (uint8_t)(EXPR);                   \
    }                                                                    \
  }
#define DEF_PRED(D, ST, CT, L, S, V)                 \
  PRED_LOOP(isnan_##D, ST, CT, L, isnan(x) != 0)     \
  PRED_LOOP(isinf_##D, ST, CT, L, isinf(x) != 0)     \
  PRED_LOOP(isfinite_##D, ST, CT, L, isfinite(x) != 0)
FLOAT_TYPES(DEF_PRED)
static void pred_false(void *ctx, int64_t n, char **p, const int64_t *s) {
  (void)ctx;
  for (int64_t i = 0; i < n; i++) *(uint8_t *)(p[0] + i * s[0]) = 0;
}
static void pred_true(void *ctx, int64_t n, char **p, const int64_t *s) {
  (void)ctx;
  for (int64_t i = 0; i < n; i++) *(uint8_t *)(p[0] + i * s[0]) = 1;
}

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
#define ROW_F_MATH(D, ...)                                                              \
  K(CELL_OP_ERF, erf, D) K(CELL_OP_ERFC, erfc, D) K(CELL_OP_TAN, tan, D)                \
  K(CELL_OP_ATAN, atan, D) K(CELL_OP_ASIN, asin, D) K(CELL_OP_ACOS, acos, D)            \
  K(CELL_OP_SINH, sinh, D) K(CELL_OP_COSH, cosh, D) K(CELL_OP_LOG2, log2, D)            \
  K(CELL_OP_LOG10, log10, D) K(CELL_OP_EXP2, exp2, D) K(CELL_OP_EXPM1, expm1, D)        \
  K(CELL_OP_SQUARE, square, D) K(CELL_OP_RECIPROCAL, reciprocal, D)                     \
  K(CELL_OP_ISNAN, isnan, D) K(CELL_OP_ISINF, isinf, D) K(CELL_OP_ISFINITE, isfinite, D)
#define ROW_I_MATH(D, ...) K(CELL_OP_SQUARE, square, D) ROW_PRED_CONST(D)
#define ROW_PRED_CONST(D)                                                   \
  [CELL_OP_ISNAN][CELL_DTYPE_##D] = pred_false,                             \
  [CELL_OP_ISINF][CELL_DTYPE_##D] = pred_false,                             \
  [CELL_OP_ISFINITE][CELL_DTYPE_##D] = pred_true,
static const cell_loop_fn kernels[CELL_UNOP_COUNT][CELL_DTYPE_COUNT] = {
    FLOAT_TYPES(ROW_F) INT_TYPES(ROW_I)[CELL_OP_LOGICAL_NOT][CELL_DTYPE_BOOL] = not_BOOL,
    FLOAT_TYPES(ROW_F_MATH) INT_TYPES(ROW_I_MATH) ROW_PRED_CONST(BOOL)};

/* float32's transcendentals through vmath.h's vector code: straight on
 * contiguous runs, through a buffer on strided ones (so that a view gives
 * the same values as a contiguous copy). */
#define VM_CHUNK 256
#define VM_LOOP(name, vmfn)                                                      \
  static void name##_F32_vm(void *ctx, int64_t n, char **p, const int64_t *s) { \
    (void)ctx;                                                                  \
    if (s[0] == sizeof(float) && s[1] == sizeof(float)) {                       \
      vmfn((float *)p[0], (const float *)p[1], n);                              \
      return;                                                                   \
    }                                                                           \
    float buf[VM_CHUNK];                                                        \
    for (int64_t i0 = 0; i0 < n; i0 += VM_CHUNK) {                              \
      int64_t m = n - i0 < VM_CHUNK ? n - i0 : VM_CHUNK;                        \
      for (int64_t i = 0; i < m; i++) buf[i] = *(const float *)(p[1] + (i0 + i) * s[1]); \
      vmfn(buf, buf, m);                                                        \
      for (int64_t i = 0; i < m; i++) *(float *)(p[0] + (i0 + i) * s[0]) = buf[i]; \
    }                                                                           \
  }
VM_LOOP(exp, cell_vm_exp_f32)
VM_LOOP(log, cell_vm_log_f32)
VM_LOOP(tanh, cell_vm_tanh_f32)
VM_LOOP(erf, cell_vm_erf_f32)
VM_LOOP(sigmoid, cell_vm_sigmoid_f32)
VM_LOOP(silu, cell_vm_silu_f32)
VM_LOOP(gelu, cell_vm_gelu_f32)
static const cell_loop_fn vm_loops[CELL_UNOP_COUNT] = {
    [CELL_OP_EXP] = exp_F32_vm,         [CELL_OP_LOG] = log_F32_vm,   [CELL_OP_TANH] = tanh_F32_vm,
    [CELL_OP_ERF] = erf_F32_vm,         [CELL_OP_SIGMOID] = sigmoid_F32_vm,
    [CELL_OP_SILU] = silu_F32_vm,       [CELL_OP_GELU] = gelu_F32_vm};

/* The same for bfloat16 (mixed precision's activations): a chunk widened
 * to float32 (exact), the vector code, each result rounded once to nearest
 * even. The scalar loops above called libm's float functions per element
 * (GELU's erff was 10% of a bfloat16 GPT step). */
#define VM_LOOP_BF16(name, vmfn)                                                 \
  static void name##_BF16_vm(void *ctx, int64_t n, char **p, const int64_t *s) { \
    (void)ctx;                                                                   \
    float buf[VM_CHUNK];                                                         \
    for (int64_t i0 = 0; i0 < n; i0 += VM_CHUNK) {                               \
      int64_t m = n - i0 < VM_CHUNK ? n - i0 : VM_CHUNK;                         \
      if (s[1] == 2) {                                                           \
        const uint16_t *a = (const uint16_t *)p[1] + i0;                         \
        _Pragma("omp simd") for (int64_t i = 0; i < m; i++) buf[i] = cell_bf16_to_float(a[i]); \
      } else {                                                                   \
        for (int64_t i = 0; i < m; i++)                                          \
          buf[i] = cell_bf16_to_float(*(const uint16_t *)(p[1] + (i0 + i) * s[1])); \
      }                                                                          \
      vmfn(buf, buf, m);                                                         \
      if (s[0] == 2) {                                                           \
        uint16_t *o = (uint16_t *)p[0] + i0;                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < m; i++) o[i] = cell_float_to_bf16(buf[i]); \
      } else {                                                                   \
        for (int64_t i = 0; i < m; i++)                                          \
          *(uint16_t *)(p[0] + (i0 + i) * s[0]) = cell_float_to_bf16(buf[i]);    \
      }                                                                          \
    }                                                                            \
  }
VM_LOOP_BF16(exp, cell_vm_exp_f32)
VM_LOOP_BF16(log, cell_vm_log_f32)
VM_LOOP_BF16(tanh, cell_vm_tanh_f32)
VM_LOOP_BF16(erf, cell_vm_erf_f32)
VM_LOOP_BF16(sigmoid, cell_vm_sigmoid_f32)
VM_LOOP_BF16(silu, cell_vm_silu_f32)
VM_LOOP_BF16(gelu, cell_vm_gelu_f32)
static const cell_loop_fn vm_loops_bf16[CELL_UNOP_COUNT] = {
    [CELL_OP_EXP] = exp_BF16_vm,         [CELL_OP_LOG] = log_BF16_vm,   [CELL_OP_TANH] = tanh_BF16_vm,
    [CELL_OP_ERF] = erf_BF16_vm,         [CELL_OP_SIGMOID] = sigmoid_BF16_vm,
    [CELL_OP_SILU] = silu_BF16_vm,       [CELL_OP_GELU] = gelu_BF16_vm};

static cell_loop_fn unary_loop(cell_unop op, cell_dtype ct) {
  if (ct == CELL_DTYPE_F32 && vm_loops[op]) return vm_loops[op];
  if (ct == CELL_DTYPE_BF16 && vm_loops_bf16[op]) return vm_loops_bf16[op];
  return kernels[op][ct];
}

/* The op table: name, whether integer inputs are computed in float32, and
 * whether the result is bool (predicates, which run on the input's dtype). */
static const struct {
  const char *name;
  bool to_float;
  bool pred;
} unops[] = {
    [CELL_OP_ABS] = {"abs", false, false},       [CELL_OP_NEG] = {"neg", false, false},
    [CELL_OP_EXP] = {"exp", true, false},        [CELL_OP_LOG] = {"log", true, false},
    [CELL_OP_LOG1P] = {"log1p", true, false},    [CELL_OP_SQRT] = {"sqrt", true, false},
    [CELL_OP_RSQRT] = {"rsqrt", true, false},    [CELL_OP_SIN] = {"sin", true, false},
    [CELL_OP_COS] = {"cos", true, false},        [CELL_OP_TANH] = {"tanh", true, false},
    [CELL_OP_SIGMOID] = {"sigmoid", true, false}, [CELL_OP_RELU] = {"relu", false, false},
    [CELL_OP_GELU] = {"gelu", true, false},      [CELL_OP_SILU] = {"silu", true, false},
    [CELL_OP_FLOOR] = {"floor", false, false},   [CELL_OP_CEIL] = {"ceil", false, false},
    [CELL_OP_ROUND] = {"round", false, false},   [CELL_OP_SIGN] = {"sign", false, false},
    [CELL_OP_LOGICAL_NOT] = {"logical_not", false, false},
    [CELL_OP_ERF] = {"erf", true, false},        [CELL_OP_ERFC] = {"erfc", true, false},
    [CELL_OP_TAN] = {"tan", true, false},        [CELL_OP_ATAN] = {"atan", true, false},
    [CELL_OP_ASIN] = {"asin", true, false},      [CELL_OP_ACOS] = {"acos", true, false},
    [CELL_OP_SINH] = {"sinh", true, false},      [CELL_OP_COSH] = {"cosh", true, false},
    [CELL_OP_LOG2] = {"log2", true, false},      [CELL_OP_LOG10] = {"log10", true, false},
    [CELL_OP_EXP2] = {"exp2", true, false},      [CELL_OP_EXPM1] = {"expm1", true, false},
    [CELL_OP_SQUARE] = {"square", false, false}, [CELL_OP_RECIPROCAL] = {"reciprocal", true, false},
    [CELL_OP_ISNAN] = {"isnan", false, true}, [CELL_OP_ISINF] = {"isinf", false, true},
    [CELL_OP_ISFINITE] = {"isfinite", false, true},
};
_Static_assert(sizeof unops / sizeof unops[0] == CELL_UNOP_COUNT, "unop table");

const char *cell_unop_name(cell_unop op) {
  return (unsigned)op < CELL_UNOP_COUNT ? unops[op].name : "?";
}

/* The dtype the kernel computes in (*ct) and the result's (*rt). */
static cell_status unop_type(cell_unop op, cell_dtype in, cell_dtype *ct, cell_dtype *rt) {
  if ((unsigned)op >= CELL_UNOP_COUNT)
    return cell_error(CELL_ERR_VALUE, "unary op: unknown op %d", (int)op);
  cell_dtype t = in;
  if (op == CELL_OP_LOGICAL_NOT) t = CELL_DTYPE_BOOL;
  else if (op == CELL_OP_SQUARE && in == CELL_DTYPE_BOOL) t = CELL_DTYPE_I64; /* as PyTorch */
  else if (unops[op].to_float && !cell_dtype_is_float(in)) t = CELL_DTYPE_F32;
  if (!kernels[op][t])
    return cell_error(CELL_ERR_TYPE, "%s: not supported for %s tensors", unops[op].name,
                      cell_dtype_name(in));
  *ct = t;
  *rt = unops[op].pred ? CELL_DTYPE_BOOL : t;
  return CELL_OK;
}

static cell_status run_unary(cell_unop op, cell_dtype ct, cell_tensor *out, const cell_tensor *a) {
  cell_tensor *ca;
  CELL_TRY(cell_as_dtype(a, ct, &ca));
  cell_iter it;
  cell_iter_init(&it, out->ndim, out->shape);
  cell_iter_add(&it, out);
  cell_iter_add(&it, ca);
  if (ct == CELL_DTYPE_F32 && vm_loops[op])
    it.cost = op == CELL_OP_ERF || op == CELL_OP_GELU ? CELL_ITER_COST_VM_HEAVY : CELL_ITER_COST_VM;
  cell_status s = cell_iter_run(&it, unary_loop(op, ct), NULL);
  cell_tensor_release(ca);
  return s;
}

cell_status cell_cpu_unary(cell_unop op, const cell_tensor *a, cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "unary op: NULL argument");
  cell_dtype ct, rt;
  CELL_TRY(unop_type(op, a->dtype, &ct, &rt));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(rt, a->ndim, a->shape, &r));
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
  cell_dtype ct, rt;
  CELL_TRY(unop_type(op, a->dtype, &ct, &rt));
  if (ct != a->dtype || rt != a->dtype)
    return cell_error(CELL_ERR_TYPE, "%s_: result type %s cannot be stored in a %s tensor",
                      unops[op].name, cell_dtype_name(rt), cell_dtype_name(a->dtype));
  cell_tensor_bump(a);
  return run_unary(op, ct, a, a);
}

/* clamp = minimum(maximum(a, lo), hi), through the binary kernels: with lo > hi
 * every element is hi, as PyTorch and MindSpore. */
cell_status cell_cpu_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi, double hi,
                          cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "clamp: NULL argument");
  if (a->dtype == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "clamp: not supported for Bool tensors");
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
  int nd;
  int64_t sh[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes("masked_fill", mask->ndim, mask->shape, a->ndim, a->shape, &nd, sh));
  cell_tensor *v;
  CELL_TRY(cell_tensor_full(a->dtype, 0, NULL, value, &v));
  cell_status s = cell_k_where(mask, v, a, out);
  cell_tensor_release(v);
  return s;
}
