/* test_math.c - issue 13's elementwise math and the int16 dtype through the
 * C API: values checked by hand, the named errors (integer division by
 * zero, dtypes, options), int16 promotion and wrap-around, and failed
 * allocations (fail the Nth, until success: a clean CELL_ERR_MEMORY and
 * no leak each time), recording and not. */
#include "check.h"
#include <float.h>

static void test_int16(void) {
  CHECK(cell_dtype_promote(CELL_DTYPE_U8, CELL_DTYPE_I8) == CELL_DTYPE_I16);
  CHECK(cell_dtype_promote(CELL_DTYPE_I16, CELL_DTYPE_U8) == CELL_DTYPE_I16);
  CHECK(cell_dtype_promote(CELL_DTYPE_I16, CELL_DTYPE_I32) == CELL_DTYPE_I32);
  CHECK(cell_dtype_promote(CELL_DTYPE_I16, CELL_DTYPE_F16) == CELL_DTYPE_F16);
  CHECK(cell_dtype_promote(CELL_DTYPE_BOOL, CELL_DTYPE_I16) == CELL_DTYPE_I16);
  CHECK(cell_dtype_size(CELL_DTYPE_I16) == 2 && !cell_dtype_is_float(CELL_DTYPE_I16));
  CHECK(strcmp(cell_dtype_name(CELL_DTYPE_I16), "Int16") == 0);
  CHECK(cell_dtype_from_name("int16") == CELL_DTYPE_I16);
  int64_t s3[1] = {3};
  double v[3] = {32767, -32768, 7};
  cell_tensor *a = from(CELL_DTYPE_I16, 1, s3, v), *r = NULL;
  CHECK_OK(cell_op_binary_scalar(CELL_OP_ADD, a, 1, 0, 0, &r));
  CHECK(cell_tensor_dtype(r) == CELL_DTYPE_I16 && flat(r, 0) == -32768 && flat(r, 1) == -32767);
  cell_tensor_release(r);
  CHECK_OK(cell_op_unary(CELL_OP_NEG, a, &r));
  CHECK(flat(r, 1) == -32768 && flat(r, 2) == -7);
  cell_tensor_release(r);
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, &r));
  CHECK(cell_tensor_dtype(r) == CELL_DTYPE_I64 && flat(r, 0) == 6);
  cell_tensor_release(r);
  cell_tensor_release(a);
}

static void test_values(void) {
  int64_t s4[1] = {4};
  double x[4] = {0.5, -1, 4, 0}, y[4] = {-0.75, 2, 3, 0};
  cell_tensor *a = from(CELL_DTYPE_F64, 1, s4, x), *b = from(CELL_DTYPE_F64, 1, s4, y), *r = NULL;
  CHECK_OK(cell_op_unary(CELL_OP_SQUARE, a, &r));
  CHECK(flat(r, 0) == 0.25 && flat(r, 2) == 16);
  cell_tensor_release(r);
  CHECK_OK(cell_op_unary(CELL_OP_EXP2, a, &r));
  CHECK(NEAR(flat(r, 0), sqrt(2.0), 1e-15) && flat(r, 1) == 0.5);
  cell_tensor_release(r);
  CHECK_OK(cell_op_unary(CELL_OP_ISFINITE, a, &r));
  CHECK(cell_tensor_dtype(r) == CELL_DTYPE_BOOL && flat(r, 0) == 1);
  cell_tensor_release(r);
  CHECK_OK(cell_op_binary(CELL_OP_REMAINDER, a, b, &r)); /* 0.5 % -0.75 = -0.25, -1 % 2 = 1 */
  CHECK(flat(r, 0) == -0.25 && flat(r, 1) == 1 && flat(r, 2) == 1 && isnan(flat(r, 3)));
  cell_tensor_release(r);
  CHECK_OK(cell_op_binary(CELL_OP_FMOD, a, b, &r));
  CHECK(flat(r, 0) == 0.5 && flat(r, 1) == -1);
  cell_tensor_release(r);
  CHECK_OK(cell_op_binary(CELL_OP_FLOOR_DIVIDE, a, b, &r));
  CHECK(flat(r, 0) == -1 && flat(r, 1) == -1 && flat(r, 2) == 1 && isnan(flat(r, 3)));
  cell_tensor_release(r);
  CHECK_OK(cell_op_lerp(a, b, NULL, 0.5, &r));
  CHECK(flat(r, 0) == -0.125 && flat(r, 1) == 0.5);
  cell_tensor_release(r);
  CHECK_OK(cell_op_softplus(b, 1, 20, &r));
  CHECK(NEAR(flat(r, 3), log(2.0), 1e-15));
  cell_tensor_release(r);
  double inf_nan[4] = {INFINITY, -INFINITY, NAN, 1};
  cell_tensor *c = from(CELL_DTYPE_F32, 1, s4, inf_nan);
  CHECK_OK(cell_op_nan_to_num(c, NAN, NAN, NAN, &r));
  CHECK(flat(r, 0) == FLT_MAX && flat(r, 1) == -FLT_MAX && flat(r, 2) == 0 && flat(r, 3) == 1);
  cell_tensor_release(r);
  CHECK_OK(cell_op_nan_to_num(c, 5, 6, -7, &r));
  CHECK(flat(r, 0) == 6 && flat(r, 1) == -7 && flat(r, 2) == 5);
  cell_tensor_release(r);
  cell_tensor_release(c);
  cell_tensor_release(a);
  cell_tensor_release(b);
}

static void test_errors(void) {
  int64_t s2[1] = {2};
  double v[2] = {7, 0};
  cell_tensor *i = from(CELL_DTYPE_I64, 1, s2, v), *f = from(CELL_DTYPE_F32, 1, s2, v);
  cell_tensor *d = from(CELL_DTYPE_F64, 1, s2, v), *r = NULL;
  cell_binop divs[3] = {CELL_OP_REMAINDER, CELL_OP_FMOD, CELL_OP_FLOOR_DIVIDE};
  for (int k = 0; k < 3; k++) {
    CHECK(cell_op_binary(divs[k], i, i, &r) == CELL_ERR_VALUE && r == NULL);
    CHECK_MSG("integer division by zero");
    CHECK(cell_op_binary_scalar(divs[k], i, 0, 0, 0, &r) == CELL_ERR_VALUE && r == NULL);
    CHECK(cell_op_binary_(divs[k], i, i) == CELL_ERR_VALUE);
  }
  CHECK(flat(i, 0) == 7 && flat(i, 1) == 0); /* untouched */
  CHECK(cell_op_softplus(i, 1, 20, &r) == CELL_ERR_TYPE && r == NULL);
  CHECK(cell_op_softplus(f, 0, 20, &r) == CELL_ERR_VALUE && r == NULL);
  CHECK(cell_op_softplus(NULL, 1, 20, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_lerp(f, d, NULL, 0.5, &r) == CELL_ERR_TYPE && r == NULL);
  CHECK_MSG("lerp: expected end of dtype Float32 (start's), got Float64");
  CHECK(cell_op_lerp(i, i, NULL, 0.5, &r) == CELL_ERR_TYPE);
  CHECK(cell_op_lerp(f, f, d, 0, &r) == CELL_ERR_TYPE);
  CHECK(cell_op_lerp(NULL, f, NULL, 0, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_nan_to_num(NULL, 0, 0, 0, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_unary_(CELL_OP_ISNAN, f) == CELL_ERR_TYPE);
  CHECK(cell_op_unary_(CELL_OP_ERF, i) == CELL_ERR_TYPE);
  cell_tensor_release(i);
  cell_tensor_release(f);
  cell_tensor_release(d);
}

typedef cell_status (*op_fn)(cell_tensor *a, cell_tensor *b, cell_tensor **out);
static cell_status op_lerp(cell_tensor *a, cell_tensor *b, cell_tensor **o) { return cell_op_lerp(a, b, b, 0, o); }
static cell_status op_mul(cell_tensor *a, cell_tensor *b, cell_tensor **o) { return cell_op_binary(CELL_OP_MUL, a, b, o); }
static cell_status op_softplus(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  (void)b;
  return cell_op_softplus(a, 2, 1, o);
}
static cell_status op_nan_to_num(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  (void)b;
  return cell_op_nan_to_num(a, NAN, 1, NAN, o);
}
static cell_status op_remainder(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  return cell_op_binary(CELL_OP_REMAINDER, a, b, o);
}
static cell_status op_atan2(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  return cell_op_binary(CELL_OP_ATAN2, a, b, o);
}
static cell_status op_erf(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  (void)b;
  return cell_op_unary(CELL_OP_ERF, a, o);
}
static cell_status op_isnan(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  (void)b;
  return cell_op_unary(CELL_OP_ISNAN, a, o);
}
static cell_status op_int_div(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  cell_tensor *ia = NULL, *ib = NULL;
  cell_status s = cell_tensor_astype(a, CELL_DTYPE_I16, &ia);
  if (s == CELL_OK) s = cell_tensor_astype(b, CELL_DTYPE_I32, &ib);
  if (s == CELL_OK) s = cell_op_binary(CELL_OP_FLOOR_DIVIDE, ia, ib, o);
  cell_tensor_release(ia);
  cell_tensor_release(ib);
  return s;
}

/* Each op with allocation n failing, n = 1, 2, ... until it succeeds, with
 * and without recording (a and b require grad on the second pass). mul is
 * there as the reference the composite lerp is made of. */
static void test_failed_allocations(void) {
  static const struct {
    const char *name;
    op_fn fn;
  } ops[] = {{"mul", op_mul}, {"lerp", op_lerp},     {"softplus", op_softplus}, {"nan_to_num", op_nan_to_num},
             {"remainder", op_remainder}, {"atan2", op_atan2}, {"erf", op_erf},
             {"isnan", op_isnan},   {"int floor_divide", op_int_div}};
  int64_t s[2] = {30, 20};
  double *v = malloc(sizeof(double) * 600);
  for (int i = 0; i < 600; i++) v[i] = 1 + i % 7;
  for (int rec = 0; rec < 2; rec++) {
    cell_tensor *a = from(CELL_DTYPE_F32, 2, s, v), *b = from(CELL_DTYPE_F32, 2, s, v);
    if (rec) {
      cell_tensor_set_requires_grad(a, 1);
      cell_tensor_set_requires_grad(b, 1);
    }
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
      /* one run first: recording caches each leaf's gradient node on it */
      cell_tensor *warm = NULL;
      CHECK_OK(ops[k].fn(a, b, &warm));
      cell_tensor_release(warm);
      long base = cell_alloc_live_blocks();
      int succeeded = 0, clean = 1;
      for (long n = 1; n < 200 && !succeeded; n++) {
        cell_tensor *out = NULL;
        cell_alloc_fail_after(n);
        cell_status st = ops[k].fn(a, b, &out);
        cell_alloc_fail_after(0);
        if (st == CELL_OK) {
          succeeded = 1;
          cell_tensor_release(out);
        } else if (st != CELL_ERR_MEMORY || out != NULL || strlen(cell_last_error()) == 0) {
          clean = 0;
        }
        if (cell_alloc_live_blocks() != base) {
          clean = 0;
          fprintf(stderr, "%s: leak after failing allocation %ld\n", ops[k].name, n);
        }
      }
      CHECKF(succeeded && clean, "%s (recording %d)", ops[k].name, rec);
    }
    cell_tensor_release(a);
    cell_tensor_release(b);
  }
  free(v);
}

void test_math_all(void) {
  test_int16();
  test_values();
  test_errors();
  test_failed_allocations();
}
