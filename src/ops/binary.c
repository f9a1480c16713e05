/* binary.c - broadcasting binary ops: arithmetic, comparisons, logic.
 *
 * Each (op, dtype) pair has one inner loop generated below, with a
 * contiguous path, a scalar-broadcast path and a strided path. Inputs are
 * converted to the promoted dtype first (a copy only when dtypes differ). */
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"

#define ID(x) (x)
#define TO_BOOL(x) ((uint8_t)((x) != 0))
#define WRAP(ST) (ST)(uint64_t)

/* name, storage type, compute type, output type, load, store, expression
 * (BINARY_LOOP_S: with SIMD before the contiguous loops: `omp simd` for
 * bfloat16's arithmetic, whose conversions are lane operations) */
#define NO_SIMD
#define OMP_SIMD _Pragma("omp simd")
#define BINARY_LOOP(name, ST, CT, OT, LOAD, STORE, EXPR) BINARY_LOOP_S(name, ST, CT, OT, LOAD, STORE, EXPR, NO_SIMD)
#define BINARY_LOOP_S(name, ST, CT, OT, LOAD, STORE, EXPR, SIMD) \
  BINARY_LOOP_A(name, ST, CT, OT, LOAD, STORE, EXPR, SIMD, )
/* BINARY_LOOP_A: the same with an attribute (BF16_CLONES: bfloat16's lane
 * conversions twice as wide with AVX2, chosen at run time) */
#define BF16_CLONES CELL_CLONES_V3
#define BINARY_LOOP_A(name, ST, CT, OT, LOAD, STORE, EXPR, SIMD, ATTR)                     \
  ATTR static void name(void *ctx, int64_t n, char **p, const int64_t *s) {                \
    (void)ctx;                                                                             \
    if (s[0] == sizeof(OT) && s[1] == sizeof(ST) && s[2] == sizeof(ST)) {                  \
      OT *o = (OT *)p[0];                                                                  \
      const ST *a = (const ST *)p[1], *b = (const ST *)p[2];                               \
      SIMD                                                                                 \
      for (int64_t i = 0; i < n; i++) {                                                    \
        CT x = LOAD(a[i]), y = LOAD(b[i]);                                                 \
        o[i] = STORE(EXPR);                                                                \
      }                                                                                    \
    } else if (s[0] == sizeof(OT) && s[1] == sizeof(ST) && s[2] == 0) {                    \
      OT *o = (OT *)p[0];                                                                  \
      const ST *a = (const ST *)p[1];                                                      \
      CT y = LOAD(*(const ST *)p[2]);                                                      \
      SIMD                                                                                 \
      for (int64_t i = 0; i < n; i++) {                                                    \
        CT x = LOAD(a[i]);                                                                 \
        o[i] = STORE(EXPR);                                                                \
      }                                                                                    \
    } else {                                                                               \
      for (int64_t i = 0; i < n; i++) {                                                    \
        CT x = LOAD(*(const ST *)(p[1] + i * s[1])), y = LOAD(*(const ST *)(p[2] + i * s[2])); \
        *(OT *)(p[0] + i * s[0]) = STORE(EXPR);                                            \
      }                                                                                    \
    }                                                                                      \
  }

/* float32 and float64 arithmetic: the contiguous loops in vector code (`omp
 * simd`; GCC's -O2 leaves them scalar, as it will not check at run time
 * that the output does not overlap an input). An output that partly
 * overlaps an input (views of one tensor at an offset) keeps the element
 * loop, whose in-order semantics such a call may rely on; the same tensor
 * as output and input (in place) is fine, element i writing only element i. */
static int bin_overlap(const void *o, const void *a, int64_t bytes) {
  const char *x = o, *y = a;
  return x != y && x < y + bytes && y < x + bytes;
}
#define BINARY_LOOP_V(name, ST, CT, OT, LOAD, STORE, EXPR)                                  \
  BINARY_LOOP_S(name##_scalar, ST, CT, OT, LOAD, STORE, EXPR, NO_SIMD)                     \
  BINARY_LOOP_S(name##_simd, ST, CT, OT, LOAD, STORE, EXPR, OMP_SIMD)                      \
  static void name(void *ctx, int64_t n, char **p, const int64_t *s) {                     \
    if (s[0] == sizeof(OT) && (bin_overlap(p[0], p[1], n * (int64_t)sizeof(OT)) ||          \
                               bin_overlap(p[0], p[2], n * (int64_t)sizeof(OT))))           \
      name##_scalar(ctx, n, p, s);                                                         \
    else                                                                                   \
      name##_simd(ctx, n, p, s);                                                           \
  }

/* Integer power by squaring; negative exponents give 0 except for +-1. */
static inline int64_t ipow(int64_t x, int64_t y) {
  if (y < 0) return x == 1 ? 1 : x == -1 ? (y & 1 ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)x;
  while (y) {
    if (y & 1) r *= b;
    b *= b;
    y >>= 1;
  }
  return (int64_t)r;
}

#define F_MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define F_MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* Floating types: tag, storage, compute, load, store. */
#define FLOAT_TYPES(X)                                            \
  X(F32, float, float, ID, ID)                                    \
  X(F64, double, double, ID, ID)                                  \
  X(F16, uint16_t, float, cell_half_to_float, cell_float_to_half) \
  X(BF16, uint16_t, float, cell_bf16_to_float, cell_float_to_bf16)
/* Integer types compute in int64 with wrap-around (no signed overflow). */
#define INT_TYPES(X)                               \
  X(I8, int8_t, int64_t, ID, WRAP(int8_t))         \
  X(U8, uint8_t, int64_t, ID, WRAP(uint8_t))       \
  X(I16, int16_t, int64_t, ID, WRAP(int16_t))      \
  X(I32, int32_t, int64_t, ID, WRAP(int32_t))      \
  X(I64, int64_t, int64_t, ID, WRAP(int64_t))
#define BOOL_TYPE(X) X(BOOL, uint8_t, int64_t, ID, TO_BOOL)

#define U64(v) ((uint64_t)(v))
#define DEF_FLOAT(D, ST, CT, L, S)                                  \
  BINARY_LOOP_V(add_##D, ST, CT, ST, L, S, x + y)                   \
  BINARY_LOOP_V(sub_##D, ST, CT, ST, L, S, x - y)                   \
  BINARY_LOOP_V(mul_##D, ST, CT, ST, L, S, x * y)                   \
  BINARY_LOOP_V(div_##D, ST, CT, ST, L, S, x / y)                   \
  BINARY_LOOP(pow_##D, ST, CT, ST, L, S, (CT)pow(x, y))             \
  BINARY_LOOP(max_##D, ST, CT, ST, L, S, F_MAX(x, y))               \
  BINARY_LOOP(min_##D, ST, CT, ST, L, S, F_MIN(x, y))
#define DEF_INT(D, ST, CT, L, S)                                    \
  BINARY_LOOP(add_##D, ST, CT, ST, L, S, (int64_t)(U64(x) + U64(y))) \
  BINARY_LOOP(sub_##D, ST, CT, ST, L, S, (int64_t)(U64(x) - U64(y))) \
  BINARY_LOOP(mul_##D, ST, CT, ST, L, S, (int64_t)(U64(x) * U64(y))) \
  BINARY_LOOP(pow_##D, ST, CT, ST, L, S, ipow(x, y))                \
  BINARY_LOOP(max_##D, ST, CT, ST, L, S, x > y ? x : y)             \
  BINARY_LOOP(min_##D, ST, CT, ST, L, S, x < y ? x : y)
#define DEF_BOOL(D, ST, CT, L, S)                                   \
  BINARY_LOOP(add_##D, ST, CT, ST, L, S, x | y)                     \
  BINARY_LOOP(mul_##D, ST, CT, ST, L, S, x & y)                     \
  BINARY_LOOP(max_##D, ST, CT, ST, L, S, x | y)                     \
  BINARY_LOOP(min_##D, ST, CT, ST, L, S, x & y)                     \
  BINARY_LOOP(and_##D, ST, CT, ST, L, S, x & y)                     \
  BINARY_LOOP(or_##D, ST, CT, ST, L, S, x | y)
#define DEF_CMP(D, ST, CT, L, S)                                    \
  BINARY_LOOP(eq_##D, ST, CT, uint8_t, L, TO_BOOL, x == y)          \
  BINARY_LOOP(ne_##D, ST, CT, uint8_t, L, TO_BOOL, x != y)          \
  BINARY_LOOP(lt_##D, ST, CT, uint8_t, L, TO_BOOL, x < y)           \
  BINARY_LOOP(le_##D, ST, CT, uint8_t, L, TO_BOOL, x <= y)          \
  BINARY_LOOP(gt_##D, ST, CT, uint8_t, L, TO_BOOL, x > y)           \
  BINARY_LOOP(ge_##D, ST, CT, uint8_t, L, TO_BOOL, x >= y)

#define DEF_BF16_VEC(D, ST, CT, L, S)                                              \
  BINARY_LOOP_A(add_##D, ST, CT, ST, L, S, x + y, OMP_SIMD, BF16_CLONES)         \
  BINARY_LOOP_A(sub_##D, ST, CT, ST, L, S, x - y, OMP_SIMD, BF16_CLONES)         \
  BINARY_LOOP_A(mul_##D, ST, CT, ST, L, S, x * y, OMP_SIMD, BF16_CLONES)         \
  BINARY_LOOP_A(div_##D, ST, CT, ST, L, S, x / y, OMP_SIMD, BF16_CLONES)         \
  BINARY_LOOP(pow_##D, ST, CT, ST, L, S, (CT)pow(x, y))                \
  BINARY_LOOP_S(max_##D, ST, CT, ST, L, S, F_MAX(x, y), OMP_SIMD)      \
  BINARY_LOOP_S(min_##D, ST, CT, ST, L, S, F_MIN(x, y), OMP_SIMD)
#define DEF_FLOAT_VEC(D, ST, CT, L, S)                                   \
  BINARY_LOOP_V(add_##D, ST, CT, ST, L, S, x + y)                        \
  BINARY_LOOP_V(sub_##D, ST, CT, ST, L, S, x - y)                        \
  BINARY_LOOP_V(mul_##D, ST, CT, ST, L, S, x * y)                        \
  BINARY_LOOP_V(div_##D, ST, CT, ST, L, S, x / y)                        \
  BINARY_LOOP(pow_##D, ST, CT, ST, L, S, (CT)pow(x, y))                  \
  BINARY_LOOP_V(max_##D, ST, CT, ST, L, S, F_MAX(x, y))                  \
  BINARY_LOOP_V(min_##D, ST, CT, ST, L, S, F_MIN(x, y))
DEF_FLOAT_VEC(F32, float, float, ID, ID)
DEF_FLOAT_VEC(F64, double, double, ID, ID)
DEF_FLOAT(F16, uint16_t, float, cell_half_to_float, cell_float_to_half)
DEF_BF16_VEC(BF16, uint16_t, float, cell_bf16_to_float, cell_float_to_bf16)
INT_TYPES(DEF_INT)

/* Issue 13's binary math. Floats follow PyTorch's CPU kernels (computed in
 * double): remainder takes the divisor's sign, fmod the dividend's, and
 * floor_divide is PyTorch's div_floor (a / b where b == 0, so +-inf or
 * NaN). Integers: run_binary has refused a zero divisor before these run;
 * a divisor of -1 is taken apart so INT64_MIN / -1 wraps instead of
 * trapping. */
static inline double f_remainder(double a, double b) {
  double m = fmod(a, b);
  return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
}
static inline int64_t i_remainder(int64_t a, int64_t b) {
  if (b == -1 || b == 0) return 0;
  int64_t m = a % b;
  return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
}
static inline int64_t i_fmod(int64_t a, int64_t b) { return (b == -1 || b == 0) ? 0 : a % b; }
static inline int64_t i_floor_divide(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
#define DEF_FLOAT_MATH(D, ST, CT, L, S)                                          \
  BINARY_LOOP(atan2_##D, ST, CT, ST, L, S, (CT)atan2((double)x, (double)y))      \
  BINARY_LOOP(rem_##D, ST, CT, ST, L, S, (CT)f_remainder((double)x, (double)y))  \
  BINARY_LOOP(fmod_##D, ST, CT, ST, L, S, (CT)fmod((double)x, (double)y))        \
  BINARY_LOOP(fdiv_##D, ST, CT, ST, L, S, (CT)cell_floor_div((double)x, (double)y))
#define DEF_INT_MATH(D, ST, CT, L, S)                         \
  BINARY_LOOP(rem_##D, ST, CT, ST, L, S, i_remainder(x, y))   \
  BINARY_LOOP(fmod_##D, ST, CT, ST, L, S, i_fmod(x, y))       \
  BINARY_LOOP(fdiv_##D, ST, CT, ST, L, S, i_floor_divide(x, y))
FLOAT_TYPES(DEF_FLOAT_MATH)
INT_TYPES(DEF_INT_MATH)
BINARY_LOOP(xor_BOOL, uint8_t, int64_t, uint8_t, ID, TO_BOOL, x != y)
BOOL_TYPE(DEF_BOOL)
FLOAT_TYPES(DEF_CMP)
INT_TYPES(DEF_CMP)
BOOL_TYPE(DEF_CMP)

#define K(op, fn, D) [op][CELL_DTYPE_##D] = fn##_##D,
#define ROW_ARITH_F(D, ...) K(CELL_OP_ADD, add, D) K(CELL_OP_SUB, sub, D) K(CELL_OP_MUL, mul, D) \
  K(CELL_OP_DIV, div, D) K(CELL_OP_POW, pow, D) K(CELL_OP_MAXIMUM, max, D) K(CELL_OP_MINIMUM, min, D)
#define ROW_ARITH_I(D, ...) K(CELL_OP_ADD, add, D) K(CELL_OP_SUB, sub, D) K(CELL_OP_MUL, mul, D) \
  K(CELL_OP_POW, pow, D) K(CELL_OP_MAXIMUM, max, D) K(CELL_OP_MINIMUM, min, D)
#define ROW_BOOL(D, ...) K(CELL_OP_ADD, add, D) K(CELL_OP_MUL, mul, D) K(CELL_OP_MAXIMUM, max, D) \
  K(CELL_OP_MINIMUM, min, D) K(CELL_OP_LOGICAL_AND, and, D) K(CELL_OP_LOGICAL_OR, or, D)
#define ROW_CMP(D, ...) K(CELL_OP_EQ, eq, D) K(CELL_OP_NE, ne, D) K(CELL_OP_LT, lt, D) \
  K(CELL_OP_LE, le, D) K(CELL_OP_GT, gt, D) K(CELL_OP_GE, ge, D)

#define ROW_MATH_F(D, ...) K(CELL_OP_ATAN2, atan2, D) K(CELL_OP_REMAINDER, rem, D) \
  K(CELL_OP_FMOD, fmod, D) K(CELL_OP_FLOOR_DIVIDE, fdiv, D)
#define ROW_MATH_I(D, ...) K(CELL_OP_REMAINDER, rem, D) K(CELL_OP_FMOD, fmod, D) \
  K(CELL_OP_FLOOR_DIVIDE, fdiv, D)

static const cell_loop_fn kernels[CELL_BINOP_COUNT][CELL_DTYPE_COUNT] = {
    FLOAT_TYPES(ROW_ARITH_F) INT_TYPES(ROW_ARITH_I) BOOL_TYPE(ROW_BOOL)
    FLOAT_TYPES(ROW_CMP) INT_TYPES(ROW_CMP) BOOL_TYPE(ROW_CMP)
    FLOAT_TYPES(ROW_MATH_F) INT_TYPES(ROW_MATH_I)
    [CELL_OP_LOGICAL_XOR][CELL_DTYPE_BOOL] = xor_BOOL};

/* The op table: one row per op, checked against the enum. */
typedef enum { ARITH, COMPARE, LOGICAL } binop_kind;
static const struct {
  const char *name;
  binop_kind kind;
} binops[] = {
    [CELL_OP_ADD] = {"add", ARITH},         [CELL_OP_SUB] = {"sub", ARITH},
    [CELL_OP_MUL] = {"mul", ARITH},         [CELL_OP_DIV] = {"div", ARITH},
    [CELL_OP_POW] = {"pow", ARITH},         [CELL_OP_MAXIMUM] = {"maximum", ARITH},
    [CELL_OP_MINIMUM] = {"minimum", ARITH}, [CELL_OP_EQ] = {"eq", COMPARE},
    [CELL_OP_NE] = {"ne", COMPARE},         [CELL_OP_LT] = {"lt", COMPARE},
    [CELL_OP_LE] = {"le", COMPARE},         [CELL_OP_GT] = {"gt", COMPARE},
    [CELL_OP_GE] = {"ge", COMPARE},         [CELL_OP_LOGICAL_AND] = {"logical_and", LOGICAL},
    [CELL_OP_LOGICAL_OR] = {"logical_or", LOGICAL},
    [CELL_OP_ATAN2] = {"atan2", ARITH},     [CELL_OP_REMAINDER] = {"remainder", ARITH},
    [CELL_OP_FMOD] = {"fmod", ARITH},       [CELL_OP_FLOOR_DIVIDE] = {"floor_divide", ARITH},
    [CELL_OP_LOGICAL_XOR] = {"logical_xor", LOGICAL},
};
_Static_assert(sizeof binops / sizeof binops[0] == CELL_BINOP_COUNT, "binop table");

const char *cell_binop_name(cell_binop op) {
  return (unsigned)op < CELL_BINOP_COUNT ? binops[op].name : "?";
}

/* The dtype the kernel computes in, and the dtype of the result. */
static cell_status binop_types(cell_binop op, cell_dtype a, cell_dtype b, cell_dtype *compute,
                               cell_dtype *result) {
  if ((unsigned)op >= CELL_BINOP_COUNT)
    return cell_error(CELL_ERR_VALUE, "binary op: unknown op %d", (int)op);
  cell_dtype ct = cell_dtype_promote(a, b);
  if ((op == CELL_OP_DIV || op == CELL_OP_ATAN2) && !cell_dtype_is_float(ct)) ct = CELL_DTYPE_F32;
  if (binops[op].kind == LOGICAL) ct = CELL_DTYPE_BOOL;
  if (!kernels[op][ct])
    return cell_error(CELL_ERR_TYPE, "%s: not supported for %s tensors", binops[op].name,
                      cell_dtype_name(ct));
  *compute = ct;
  *result = binops[op].kind == ARITH ? ct : CELL_DTYPE_BOOL;
  return CELL_OK;
}

/* t itself (retained) when it has dtype dt, else a converted copy. */
cell_status cell_as_dtype(const cell_tensor *t, cell_dtype dt, cell_tensor **out) {
  if (t->dtype == dt) {
    cell_tensor_retain((cell_tensor *)t);
    *out = (cell_tensor *)t;
    return CELL_OK;
  }
  return cell_k_astype(t, dt, out);
}

/* Whether an integer tensor holds a zero (integer division's divisor). */
typedef struct {
  cell_dtype dt;
  int found;
} zero_scan_ctx;

static void zero_scan(void *vctx, int64_t n, char **p, const int64_t *s) {
  zero_scan_ctx *c = vctx;
  for (int64_t i = 0; i < n; i++)
    if (cell_load_i64(c->dt, p[0] + i * s[0]) == 0) c->found = 1;
}

static cell_status check_divisor(cell_binop op, const cell_tensor *b) {
  if ((op != CELL_OP_REMAINDER && op != CELL_OP_FMOD && op != CELL_OP_FLOOR_DIVIDE) ||
      !cell_dtype_is_int(b->dtype))
    return CELL_OK;
  zero_scan_ctx c = {b->dtype, 0};
  cell_iter it;
  cell_iter_init(&it, b->ndim, b->shape);
  cell_iter_add(&it, b);
  CELL_TRY(cell_iter_run(&it, zero_scan, &c));
  if (c.found)
    return cell_error(CELL_ERR_VALUE, "%s: integer division by zero (the divisor, a %s tensor, "
                      "holds a 0)", binops[op].name, cell_dtype_name(b->dtype));
  return CELL_OK;
}

/* Whether t has out's shape and strides (no broadcast, the same layout). */
static bool same_layout(const cell_tensor *out, const cell_tensor *t) {
  if (t->ndim != out->ndim) return false;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] != out->shape[i] || t->stride[i] != out->stride[i]) return false;
  return true;
}

/* The common small case: out (new, contiguous) and both operands laid out
 * alike and too small to split over threads run as one flat loop, without
 * the iterator's set-up; what cell_iter_run would do for them, interrupt
 * included. Returns false (nothing run) when the case does not apply. */
static bool run_flat(cell_binop op, cell_dtype ct, cell_tensor *out, const cell_tensor *ca,
                     const cell_tensor *cb, cell_status *s) {
  if (!same_layout(out, ca) || !same_layout(out, cb)) return false;
  int64_t n = cell_shape_numel(out->ndim, out->shape);
  int64_t expect = 1; /* row-major contiguous (a size-1 dimension's stride is free) */
  for (int i = out->ndim - 1; i >= 0; i--) {
    if (out->shape[i] != 1 && out->stride[i] != expect) return false;
    expect *= out->shape[i];
  }
  cell_context *ctx = cell_ctx();
  if (n >= CELL_ITER_GRAIN && ctx->num_threads >= 2) return false;
  if (n > 0) {
    char *p[3] = {cell_tensor_base(out), cell_tensor_base(ca), cell_tensor_base(cb)};
    int64_t es = cell_dtype_size(ct);
    int64_t st[3] = {cell_dtype_size(out->dtype), es, es};
    kernels[op][ct](NULL, n, p, st);
    *s = ctx->interrupt ? cell_error(CELL_ERR_INTERRUPT, "interrupted") : CELL_OK;
  } else {
    *s = CELL_OK;
  }
  return true;
}

static cell_status run_binary(cell_binop op, cell_dtype ct, cell_tensor *out,
                              const cell_tensor *a, const cell_tensor *b) {
  cell_tensor *ca = NULL, *cb = NULL;
  cell_status s = cell_as_dtype(a, ct, &ca);
  if (s == CELL_OK) s = cell_as_dtype(b, ct, &cb);
  if (s == CELL_OK) s = check_divisor(op, cb);
  if (s == CELL_OK && !run_flat(op, ct, out, ca, cb, &s)) {
    cell_iter it;
    cell_iter_init(&it, out->ndim, out->shape);
    cell_iter_add(&it, out);
    cell_iter_add(&it, ca);
    cell_iter_add(&it, cb);
    s = cell_iter_run(&it, kernels[op][ct], NULL);
  }
  cell_tensor_release(ca);
  cell_tensor_release(cb);
  return s;
}

cell_status cell_cpu_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b,
                           cell_tensor **out) {
  if (!a || !b || !out) return cell_error(CELL_ERR_VALUE, "binary op: NULL argument");
  cell_dtype ct, rt;
  CELL_TRY(binop_types(op, a->dtype, b->dtype, &ct, &rt));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes(binops[op].name, a->ndim, a->shape, b->ndim, b->shape, &nd,
                                 shape));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(rt, nd, shape, &r));
  cell_status s = run_binary(op, ct, r, a, b);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b) {
  if (!a || !b) return cell_error(CELL_ERR_VALUE, "binary op: NULL argument");
  cell_dtype ct, rt;
  CELL_TRY(binop_types(op, a->dtype, b->dtype, &ct, &rt));
  if (!cell_dtype_can_cast(rt, a->dtype))
    return cell_error(CELL_ERR_TYPE, "%s_: result type %s cannot be stored in a %s tensor",
                      binops[op].name, cell_dtype_name(rt), cell_dtype_name(a->dtype));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes(binops[op].name, a->ndim, a->shape, b->ndim, b->shape, &nd,
                                 shape));
  if (!cell_shape_equal(nd, shape, a->ndim, a->shape)) {
    char sa[256], sb[256];
    return cell_error(CELL_ERR_VALUE,
                      "%s_: the shape %s of the operand cannot be broadcast to the shape %s of "
                      "the tensor updated in place",
                      binops[op].name, cell_shape_str(b->ndim, b->shape, sb, sizeof sb),
                      cell_shape_str(a->ndim, a->shape, sa, sizeof sa));
  }
  cell_tensor_bump(a);
  if (rt == a->dtype && ct == a->dtype) return run_binary(op, ct, a, a, b);
  cell_tensor *r;
  CELL_TRY(cell_k_binary(op, a, b, &r));
  cell_status s = cell_k_copy_(a, r);
  cell_tensor_release(r);
  return s;
}

/* A 0-d tensor on the stack holding s in dtype dt: no allocation. */
typedef struct {
  cell_storage storage;
  cell_tensor tensor;
  double buf[1];
} stack_scalar;

static const cell_tensor *make_scalar(stack_scalar *ss, cell_binop op, const cell_tensor *t,
                                      double v, int is_float) {
  cell_dtype dt = cell_dtype_promote_scalar(t->dtype, is_float);
  /* div and atan2 compute integers in float32: the number goes there as it
   * is (uint8 / -3 divides by -3, not by -3 wrapped to 253). */
  if ((op == CELL_OP_DIV || op == CELL_OP_ATAN2) && !cell_dtype_is_float(dt)) dt = CELL_DTYPE_F32;
  memset(ss, 0, sizeof *ss);
  ss->storage.refcount = 1;
  ss->storage.data = ss->buf;
  ss->storage.nbytes = sizeof ss->buf;
  ss->storage.external = true;
  /* Labelled with t's device so the dispatch pairs them: this CPU kernel
   * reads host memory, which every device running it (the CPU, the test
   * device) can; a device with memory of its own runs its own
   * binary_scalar kernel instead. Never released (it is on the stack). */
  ss->storage.device = t->storage->device;
  ss->tensor.refcount = 1;
  ss->tensor.dtype = dt;
  ss->tensor.storage = &ss->storage;
  cell_store_f64(dt, ss->buf, v);
  return &ss->tensor;
}

cell_status cell_cpu_binary_scalar(cell_binop op, const cell_tensor *t, double s, int s_is_float,
                                  int reversed, cell_tensor **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "binary op: NULL argument");
  stack_scalar ss;
  const cell_tensor *st = make_scalar(&ss, op, t, s, s_is_float);
  return reversed ? cell_k_binary(op, st, t, out) : cell_k_binary(op, t, st, out);
}

cell_status cell_cpu_binary_scalar_(cell_binop op, cell_tensor *t, double s, int s_is_float) {
  if (!t) return cell_error(CELL_ERR_VALUE, "binary op: NULL argument");
  stack_scalar ss;
  const cell_tensor *st = make_scalar(&ss, op, t, s, s_is_float);
  return cell_k_binary_(op, t, st);
}
