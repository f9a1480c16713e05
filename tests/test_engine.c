/* test_engine.c - the engine's C tests: views, broadcasting, kernels on
 * contiguous and strided inputs for every dtype, error paths, and failed
 * allocations (fail the Nth for N = 1, 2, ... until the op succeeds).
 * main() also runs the other test files (entry points in check.h) and
 * owns the shared check counters. Usage: test_engine [SUITE...] runs the
 * named suites (all when none is named), test_engine --list lists them;
 * an unknown name exits 2. */
#include "check.h"

int passed, failed;

const cell_dtype all_dtypes[NDT] = {CELL_DTYPE_F32, CELL_DTYPE_F64, CELL_DTYPE_F16,
                                    CELL_DTYPE_BF16, CELL_DTYPE_I8,  CELL_DTYPE_U8,
                                    CELL_DTYPE_I32, CELL_DTYPE_I64, CELL_DTYPE_BOOL};

static double at(const cell_tensor *t, int64_t i0, int64_t i1) {
  int64_t idx[2] = {i0, i1};
  double v = NAN;
  cell_tensor_get(t, idx, &v);
  return v;
}

static void test_views(void) {
  int64_t s23[2] = {2, 3};
  double v[6] = {1, 2, 3, 4, 5, 6};
  cell_tensor *a = from(CELL_DTYPE_F32, 2, s23, v), *t = NULL, *r = NULL;
  CHECK_OK(cell_tensor_transpose(a, 0, 1, &t));
  CHECK(cell_tensor_dim(t, 0) == 3 && !cell_tensor_is_contiguous(t));
  CHECK(at(t, 2, 1) == 6 && at(t, 0, 1) == 4);
  int64_t s6[1] = {-1};
  CHECK_OK(cell_tensor_reshape(t, 1, s6, &r)); /* needs a copy */
  CHECK(cell_tensor_is_contiguous(r) && flat(r, 1) == 4 && flat(r, 2) == 2);
  cell_tensor_release(r);
  CHECK(cell_tensor_view(t, 1, s6, &r) != CELL_OK && cell_last_status() == CELL_ERR_RUNTIME);
  cell_tensor *n = NULL, *e = NULL, *sl = NULL;
  CHECK_OK(cell_tensor_narrow(a, 1, 1, 2, &n));
  CHECK(at(n, 0, 0) == 2 && at(n, 1, 1) == 6);
  int64_t s223[3] = {2, 2, 3};
  CHECK_OK(cell_tensor_expand(a, 3, s223, &e));
  int64_t idx[3] = {1, 1, 2};
  double x;
  CHECK_OK(cell_tensor_get(e, idx, &x));
  CHECK(x == 6);
  CHECK_OK(cell_tensor_slice(a, 1, 0, 3, 2, &sl));
  CHECK(cell_tensor_dim(sl, 1) == 2 && at(sl, 1, 1) == 6);
  /* errors leave messages naming shapes */
  int64_t bad[2] = {4, 3};
  CHECK(cell_tensor_expand(a, 2, bad, &r) == CELL_ERR_VALUE);
  CHECK(strstr(cell_last_error(), "[2, 3]") && strstr(cell_last_error(), "[4, 3]"));
  CHECK(cell_tensor_transpose(a, 0, 2, &r) == CELL_ERR_INDEX);
  CHECK(cell_tensor_narrow(a, 1, 2, 2, &r) == CELL_ERR_INDEX);
  int64_t neg[2] = {-2, 3};
  CHECK(cell_tensor_empty(CELL_DTYPE_F32, 2, neg, &r) == CELL_ERR_VALUE);
  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 30}; /* 2^70 elements: overflow */
  CHECK(cell_tensor_empty(CELL_DTYPE_F32, 2, huge, &r) == CELL_ERR_VALUE);
  int64_t big[2] = {INT64_C(1) << 30, INT64_C(1) << 28}; /* 2^60 bytes: no memory */
  CHECK(cell_tensor_empty(CELL_DTYPE_F32, 2, big, &r) == CELL_ERR_MEMORY);
  cell_tensor_release(sl);
  cell_tensor_release(e);
  cell_tensor_release(n);
  cell_tensor_release(t);
  cell_tensor_release(a);
}

/* a + b on contiguous and transposed inputs, for every dtype. */
static void test_binary_dtypes(void) {
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s3[1] = {3};
  double va[6] = {1, 2, 3, 4, 5, 6}, vb[3] = {1, 0, 1}, vt[6] = {1, 4, 2, 5, 3, 6};
  for (int k = 0; k < NDT; k++) {
    cell_dtype dt = all_dtypes[k];
    cell_tensor *a = from(dt, 2, s23, va), *b = from(dt, 1, s3, vb), *raw = from(dt, 2, s32, vt);
    cell_tensor *at_ = NULL, *c1 = NULL, *c2 = NULL, *m = NULL;
    CHECK_OK(cell_tensor_transpose(raw, 0, 1, &at_)); /* equals a, strided */
    CHECK_OK(cell_op_binary(CELL_OP_ADD, a, b, &c1));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, at_, b, &c2));
    for (int i = 0; i < 6; i++) {
      double want = dt == CELL_DTYPE_BOOL ? 1 : va[i] + vb[i % 3];
      CHECK(flat(c1, i) == want && flat(c2, i) == want);
    }
    if (dt != CELL_DTYPE_BOOL) {
      CHECK_OK(cell_op_binary(CELL_OP_MUL, at_, a, &m));
      for (int i = 0; i < 6; i++) CHECK(NEAR(flat(m, i), va[i] * va[i], 1e-2) || cell_dtype_size(dt) == 1);
    }
    cell_tensor *cmp = NULL;
    CHECK_OK(cell_op_binary(CELL_OP_GT, a, b, &cmp));
    CHECK(cell_tensor_dtype(cmp) == CELL_DTYPE_BOOL);
    if (dt != CELL_DTYPE_BOOL) CHECK(flat(cmp, 1) == 1 && flat(cmp, 0) == 0);
    cell_tensor_release(cmp);
    cell_tensor_release(m);
    cell_tensor_release(c2);
    cell_tensor_release(c1);
    cell_tensor_release(at_);
    cell_tensor_release(raw);
    cell_tensor_release(b);
    cell_tensor_release(a);
  }
}

static void test_promotion(void) {
  CHECK(cell_dtype_promote(CELL_DTYPE_I32, CELL_DTYPE_F16) == CELL_DTYPE_F16);
  CHECK(cell_dtype_promote(CELL_DTYPE_F16, CELL_DTYPE_BF16) == CELL_DTYPE_F32);
  CHECK(cell_dtype_promote(CELL_DTYPE_I8, CELL_DTYPE_U8) == CELL_DTYPE_I16);
  CHECK(cell_dtype_promote(CELL_DTYPE_BOOL, CELL_DTYPE_U8) == CELL_DTYPE_U8);
  CHECK(cell_dtype_promote(CELL_DTYPE_F32, CELL_DTYPE_F64) == CELL_DTYPE_F64);
  CHECK(cell_dtype_promote_scalar(CELL_DTYPE_I32, 1) == CELL_DTYPE_F32);
  CHECK(cell_dtype_promote_scalar(CELL_DTYPE_I32, 0) == CELL_DTYPE_I32);
  CHECK(cell_dtype_promote_scalar(CELL_DTYPE_BOOL, 0) == CELL_DTYPE_I64);
  int64_t s2[1] = {2};
  double v[2] = {3, 4};
  cell_tensor *i = from(CELL_DTYPE_I32, 1, s2, v), *d = NULL;
  CHECK_OK(cell_op_binary(CELL_OP_DIV, i, i, &d));
  CHECK(cell_tensor_dtype(d) == CELL_DTYPE_F32 && flat(d, 0) == 1);
  CHECK(cell_op_binary_scalar_(CELL_OP_MUL, i, 0.5, 1) == CELL_ERR_TYPE);
  cell_tensor_release(d);
  cell_tensor_release(i);
}

static void test_half_conversions(void) {
  int64_t s[1] = {5};
  double v[5] = {1.0, -2.5, 65504, 1e-7, 0.1};
  cell_tensor *h = from(CELL_DTYPE_F16, 1, s, v), *b = from(CELL_DTYPE_BF16, 1, s, v);
  CHECK(flat(h, 0) == 1.0 && flat(h, 1) == -2.5 && flat(h, 2) == 65504);
  CHECK(NEAR(flat(h, 3), 1.19209e-07, 1e-3)); /* nearest subnormal */
  CHECK(NEAR(flat(h, 4), 0.0999755859375, 1e-9));
  CHECK(flat(b, 1) == -2.5 && NEAR(flat(b, 4), 0.10009765625, 1e-9));
  cell_tensor_release(h);
  cell_tensor_release(b);
}

static void test_unary(void) {
  int64_t s[2] = {2, 2};
  double v[4] = {-1, 0, 0.5, 2};
  for (int k = 0; k < 4; k++) { /* the float dtypes */
    cell_dtype dt = all_dtypes[k];
    double tol = cell_dtype_size(dt) == 2 ? 1e-2 : 1e-6;
    cell_tensor *a = from(dt, 2, s, v), *t = NULL, *r = NULL;
    CHECK_OK(cell_tensor_transpose(a, 0, 1, &t));
    CHECK_OK(cell_op_unary(CELL_OP_EXP, t, &r));
    CHECK(NEAR(at(r, 0, 1), exp(0.5), tol) && NEAR(at(r, 1, 1), exp(2), tol));
    cell_tensor_release(r);
    CHECK_OK(cell_op_unary(CELL_OP_SIGMOID, a, &r));
    CHECK(NEAR(at(r, 0, 0), 1 / (1 + exp(1)), tol));
    cell_tensor_release(r);
    CHECK_OK(cell_op_unary(CELL_OP_RELU, a, &r));
    CHECK(at(r, 0, 0) == 0 && at(r, 1, 1) == 2);
    cell_tensor_release(r);
    cell_tensor_release(t);
    cell_tensor_release(a);
  }
  int64_t s1[1] = {4};
  double iv[4] = {-3, 2, 0, 7};
  cell_tensor *i = from(CELL_DTYPE_I64, 1, s1, iv), *r = NULL;
  CHECK_OK(cell_op_unary(CELL_OP_ABS, i, &r));
  CHECK(cell_tensor_dtype(r) == CELL_DTYPE_I64 && flat(r, 0) == 3);
  cell_tensor_release(r);
  CHECK_OK(cell_op_unary(CELL_OP_SQRT, i, &r));
  CHECK(cell_tensor_dtype(r) == CELL_DTYPE_F32 && flat(r, 3) == (float)sqrt(7));
  cell_tensor_release(r);
  cell_tensor_release(i);
}

static void test_matmul(void) {
  /* sizes straddle the BLAS threshold; transposed operands too */
  int sizes[3] = {3, 17, 40};
  for (int si = 0; si < 3; si++)
    for (int k = 0; k < 2; k++) {
      cell_dtype dt = all_dtypes[k];
      int n = sizes[si];
      int64_t sh[2] = {n, n};
      double *va = malloc(sizeof(double) * n * n), *vb = malloc(sizeof(double) * n * n);
      for (int i = 0; i < n * n; i++) {
        va[i] = (i % 7) - 3;
        vb[i] = (i % 5) * 0.5;
      }
      cell_tensor *a = from(dt, 2, sh, va), *b = from(dt, 2, sh, vb), *bt = NULL, *c = NULL;
      CHECK_OK(cell_tensor_transpose(b, 0, 1, &bt));
      CHECK_OK(cell_op_matmul(a, bt, &c));
      int ok = 1;
      for (int i = 0; i < n && ok; i++)
        for (int j = 0; j < n && ok; j++) {
          double want = 0;
          for (int p = 0; p < n; p++) want += va[i * n + p] * vb[j * n + p];
          if (!NEAR(at(c, i, j), want, 1e-5)) ok = 0;
        }
      CHECK(ok);
      cell_tensor_release(c);
      cell_tensor_release(bt);
      cell_tensor_release(b);
      cell_tensor_release(a);
      free(va);
      free(vb);
    }
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 256, 256, 256), "blas") == 0);
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_F32, 2, 2, 2), "cpu") == 0);
  CHECK(strcmp(cell_gemm_backend_name(CELL_DTYPE_I32, 256, 256, 256), "cpu") == 0);
  int64_t s23[2] = {2, 3};
  double v[6] = {1, 2, 3, 4, 5, 6};
  cell_tensor *a = from(CELL_DTYPE_F32, 2, s23, v), *r = NULL;
  CHECK(cell_op_matmul(a, a, &r) == CELL_ERR_VALUE);
  CHECK(strstr(cell_last_error(), "[2, 3] and [2, 3] cannot be multiplied") != NULL);
  /* batched, broadcasting: [2, 1, 2, 3] @ [3, 3, 1] -> [2, 3, 2, 1] */
  int64_t sa[4] = {2, 1, 2, 3}, sb[3] = {3, 3, 1};
  double ones[18];
  for (int i = 0; i < 18; i++) ones[i] = 1;
  cell_tensor *ba = from(CELL_DTYPE_F64, 4, sa, ones), *bb = from(CELL_DTYPE_F64, 3, sb, ones);
  CHECK_OK(cell_op_matmul(ba, bb, &r));
  CHECK(cell_tensor_ndim(r) == 4 && cell_tensor_dim(r, 1) == 3 && flat(r, 0) == 3);
  cell_tensor_release(r);
  cell_tensor_release(bb);
  cell_tensor_release(ba);
  cell_tensor_release(a);
}

static void test_reduce_and_shape(void) {
  int64_t s23[2] = {2, 3};
  double v[6] = {1, 2, 3, 4, 5, 6};
  for (int k = 0; k < NDT - 1; k++) {
    cell_tensor *a = from(all_dtypes[k], 2, s23, v), *t = NULL, *r = NULL;
    CHECK_OK(cell_tensor_transpose(a, 0, 1, &t));
    int d0 = 1; /* t is [[1, 4], [2, 5], [3, 6]]: row sums */
    CHECK_OK(cell_op_reduce(CELL_RED_SUM, t, 1, &d0, 0, &r));
    CHECK(flat(r, 0) == 5 && flat(r, 2) == 9);
    cell_tensor_release(r);
    CHECK_OK(cell_op_reduce(CELL_RED_MAX, a, 0, NULL, 0, &r));
    CHECK(flat(r, 0) == 6);
    cell_tensor_release(r);
    cell_tensor *ts[2] = {a, a};
    CHECK_OK(cell_op_cat(2, ts, 1, &r));
    CHECK(cell_tensor_dim(r, 1) == 6 && at(r, 1, 5) == 6);
    cell_tensor_release(r);
    cell_tensor_release(t);
    cell_tensor_release(a);
  }
}

/* Fail the Nth allocation for N = 1, 2, ...: each failure is a clean error
 * that leaks nothing; eventually the op succeeds. */
typedef cell_status (*op_fn)(cell_tensor *a, cell_tensor *b, cell_tensor **out);
static cell_status op_add(cell_tensor *a, cell_tensor *b, cell_tensor **o) { return cell_op_binary(CELL_OP_ADD, a, b, o); }
static cell_status op_matmul(cell_tensor *a, cell_tensor *b, cell_tensor **o) { return cell_op_matmul(a, b, o); }
static cell_status op_sum(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  (void)b;
  int d = 1;
  return cell_op_reduce(CELL_RED_SUM, a, 1, &d, 1, o);
}
static cell_status op_cat(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  cell_tensor *ts[2] = {a, b};
  return cell_op_cat(2, ts, 0, o);
}
static cell_status op_reshape(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  (void)b;
  cell_tensor *t;
  CELL_TRY(cell_tensor_transpose(a, 0, 1, &t));
  int64_t s[1] = {-1};
  cell_status st = cell_tensor_reshape(t, 1, s, o);
  cell_tensor_release(t);
  return st;
}
static cell_status op_where(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  cell_tensor *m;
  CELL_TRY(cell_op_binary(CELL_OP_GT, a, b, &m));
  cell_status st = cell_op_where(m, a, b, o);
  cell_tensor_release(m);
  return st;
}
static cell_status op_mixed(cell_tensor *a, cell_tensor *b, cell_tensor **o) {
  cell_tensor *i;
  CELL_TRY(cell_tensor_astype(b, CELL_DTYPE_I32, &i));
  cell_status st = cell_op_binary(CELL_OP_MUL, a, i, o);
  cell_tensor_release(i);
  return st;
}

static void test_failed_allocations(void) {
  static const struct {
    const char *name;
    op_fn fn;
  } ops[] = {{"add", op_add}, {"matmul", op_matmul}, {"sum", op_sum}, {"cat", op_cat},
             {"reshape", op_reshape}, {"where", op_where}, {"mixed", op_mixed}};
  int64_t s[2] = {40, 40};
  double *v = malloc(sizeof(double) * 1600);
  for (int i = 0; i < 1600; i++) v[i] = i % 11;
  cell_tensor *a = from(CELL_DTYPE_F32, 2, s, v), *b = from(CELL_DTYPE_F32, 2, s, v);
  free(v);
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    long base = cell_alloc_live_blocks();
    int succeeded = 0, clean = 1;
    for (long n = 1; n < 100 && !succeeded; n++) {
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
    CHECK(succeeded && clean);
  }
  cell_tensor_release(a);
  cell_tensor_release(b);
}

static void test_allocator_stats(void) {
  cell_alloc_stats s0, s1;
  cell_alloc_get_stats(&s0);
  int64_t sh[1] = {1000};
  cell_tensor *t = NULL;
  CHECK_OK(cell_tensor_empty(CELL_DTYPE_F32, 1, sh, &t));
  cell_alloc_get_stats(&s1);
  CHECK(s1.in_use >= s0.in_use + 4000 && s1.peak >= s1.in_use);
  cell_tensor_release(t);
  /* a second tensor of the same size comes from the cache */
  cell_alloc_get_stats(&s0);
  CHECK_OK(cell_tensor_empty(CELL_DTYPE_F32, 1, sh, &t));
  cell_alloc_get_stats(&s1);
  CHECK(s1.n_os == s0.n_os);
  cell_tensor_release(t);
}

/* Kernels above CELL_PARALLEL_GRAIN split across threads: the results must
 * equal the one-thread results exactly (elementwise) or closely (sums). */
static void test_parallel_paths(void) {
  int64_t sh[2] = {1 << 11, 1 << 10}; /* 2M elements, past the grain */
  cell_tensor *a = NULL, *b = NULL, *r1 = NULL, *r2 = NULL, *s1 = NULL, *s2 = NULL, *t = NULL;
  cell_set_seed(3);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 2, sh, &a));
  CHECK_OK(cell_tensor_transpose(a, 0, 1, &t)); /* strided rows too */
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 2, sh, &b));
  cell_set_num_threads(1);
  CHECK_OK(cell_op_binary(CELL_OP_MUL, a, b, &r1));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, t, 0, NULL, 0, &s1));
  cell_set_num_threads(2);
  CHECK_OK(cell_op_binary(CELL_OP_MUL, a, b, &r2));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, t, 0, NULL, 0, &s2));
  CHECK(memcmp(cell_tensor_data_ptr(r1), cell_tensor_data_ptr(r2), cell_tensor_nbytes(r1)) == 0);
  CHECK(NEAR(flat(s1, 0), flat(s2, 0), 1e-4));
  cell_tensor *ts[7] = {a, b, r1, r2, s1, s2, t};
  for (int i = 0; i < 7; i++) cell_tensor_release(ts[i]);
}

static void test_rng(void) {
  int64_t sh[1] = {10000};
  cell_tensor *a = NULL, *b = NULL;
  cell_set_seed(7);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 1, sh, &a));
  cell_set_num_threads(1);
  cell_set_seed(7);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 1, sh, &b));
  cell_set_num_threads(2);
  int same = 1;
  double sum = 0, sq = 0;
  for (int i = 0; i < 10000; i++) {
    if (flat(a, i) != flat(b, i)) same = 0;
    sum += flat(a, i);
    sq += flat(a, i) * flat(a, i);
  }
  CHECK(same);
  CHECK(fabs(sum / 10000) < 0.05 && fabs(sq / 10000 - 1) < 0.05);
  cell_tensor_release(a);
  cell_tensor_release(b);
}

static int released;
static void on_release(void *ctx, void *data) {
  released += ctx == (void *)&released && data != NULL;
}

/* Host memory wrapped without a copy: writes show through, and the release
 * callback runs once, when the last view goes. */
static void test_wrap(void) {
  float host[6] = {1, 2, 3, 4, 5, 6};
  int64_t s[2] = {2, 3};
  cell_tensor *t = NULL, *v = NULL;
  released = 0;
  CHECK_OK(cell_tensor_wrap(host, CELL_DTYPE_F32, 2, s, NULL, on_release, &released, &t));
  CHECK(cell_tensor_data_ptr(t) == (void *)host && at(t, 1, 2) == 6);
  CHECK_OK(cell_tensor_transpose(t, 0, 1, &v));
  CHECK_OK(cell_tensor_fill_(v, 7));
  CHECK(host[4] == 7);
  cell_tensor_release(t);
  CHECK(released == 0);
  cell_tensor_release(v);
  CHECK(released == 1);
  CHECK(cell_tensor_wrap(NULL, CELL_DTYPE_F32, 2, s, NULL, NULL, NULL, &t) == CELL_ERR_VALUE);
}

/* The engine's own tests above, as one suite. */
static void test_engine_all(void) {
  test_views();
  test_wrap();
  test_binary_dtypes();
  test_promotion();
  test_half_conversions();
  test_unary();
  test_matmul();
  test_reduce_and_shape();
  test_failed_allocations();
  test_allocator_stats();
  test_rng();
}

/* The suites, in the order a plain run runs them; `test_engine NAME...`
 * runs the named ones, `test_engine --list` lists them. */
static const struct {
  const char *name;
  void (*run)(void);
} suites[] = {
    {"engine", test_engine_all},
    {"rng", test_rng_all},
    {"autograd_threads", test_autograd_threads_all},
    {"parallel", test_parallel_paths},
    {"reduce", test_reduce_all},
    {"shape", test_shape_all},
    {"create", test_create_all},
    {"nn", test_nn_all},
    {"optim", test_optim_all},
    {"capi", test_capi_all},
    {"capi_nn", test_capi_nn_all},
    {"io", test_io_all},
    {"data", test_data_all},
    {"conv", test_conv_all},
    {"shape_overflow", test_shape_overflow_all},
    {"layers", test_layers_all},
    {"device_load", test_device_load_all},
    {"philox", test_philox_all},
    {"device", test_device_all},
    {"sort", test_sort_all},
    {"math", test_math_all},
    {"sample", test_sample_all},
    {"inplace", test_inplace_all},
    {"higher", test_higher_all},
    {"vmath", test_vmath_all},
    {"attention", test_attention_all},
    {"vision", test_vision_all},
    {"gemm_small", test_gemm_small_all},
    {"sgemm", test_sgemm_all},
    {"optim_many", test_optim_many_all},
};
#define NSUITES (sizeof suites / sizeof suites[0])

static int find_suite(const char *name) {
  for (size_t i = 0; i < NSUITES; i++)
    if (strcmp(suites[i].name, name) == 0) return (int)i;
  return -1;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < NSUITES; i++) printf("%s\n", suites[i].name);
    return 0;
  }
  for (int i = 1; i < argc; i++) {
    if (find_suite(argv[i]) < 0) {
      fprintf(stderr, "test_engine: unknown suite '%s' (test_engine --list lists them)\n", argv[i]);
      return 2;
    }
  }
  long base = cell_alloc_live_blocks();
  if (argc == 1) {
    for (size_t i = 0; i < NSUITES; i++) suites[i].run();
  } else {
    for (int i = 1; i < argc; i++) suites[find_suite(argv[i])].run();
  }
  CHECK(cell_alloc_live_blocks() == base); /* every test released what it made */
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
