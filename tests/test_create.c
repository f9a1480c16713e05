/* test_create.c - filled tensors (src/ops/create.c): arange, linspace, eye,
 * rand, randn, randint. Hand-checked values and error messages; the random
 * tensors' values for a fixed seed, their ranges and moments, and their
 * independence of the thread count; how such tensors print; interrupts;
 * failed allocations. */
#include "check.h"

#define S(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* t has dtype dt, shape sh and values v (row-major, to within tol); on a
 * mismatch say what differs and return 0. */
static int has(const cell_tensor *t, cell_dtype dt, int nd, const int64_t *sh, const double *v,
               double tol) {
  char b1[128], b2[128];
  if (!t) {
    fprintf(stderr, "  no tensor\n");
    return 0;
  }
  if (t->dtype != dt) {
    fprintf(stderr, "  dtype %s, want %s\n", cell_dtype_name(t->dtype), cell_dtype_name(dt));
    return 0;
  }
  if (!cell_shape_equal(t->ndim, t->shape, nd, sh)) {
    fprintf(stderr, "  shape %s, want %s\n", cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
            cell_shape_str(nd, sh, b2, sizeof b2));
    return 0;
  }
  int64_t n = cell_tensor_numel(t);
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(flat(t, i) - v[i]) <= tol)) {
      fprintf(stderr, "  [%lld] = %.17g, want %.17g\n", (long long)i, flat(t, i), v[i]);
      return 0;
    }
  return 1;
}

/* cell_tensor_format(t) is exactly want. */
static int prints_as(const cell_tensor *t, const char *want) {
  char *s = NULL;
  if (!t || cell_tensor_format(t, &s) != CELL_OK) {
    fprintf(stderr, "  cannot format: %s\n", cell_last_error());
    return 0;
  }
  int ok = strcmp(s, want) == 0;
  if (!ok) fprintf(stderr, "  printed\n%s\n  want\n%s\n", s, want);
  free(s);
  return ok;
}

static void test_ramps(void) {
  cell_tensor *t = NULL, *u = NULL;
  CHECK_OK(cell_tensor_arange(1, 5, 1, CELL_DTYPE_F32, &t));
  CHECK_OK(cell_tensor_reshape(t, 2, S(2, 2), &u));
  CHECK(has(u, CELL_DTYPE_F32, 2, S(2, 2), V(1, 2, 3, 4), 0));
  CHECK(prints_as(u, "Tensor(shape=[2, 2], dtype=Float32, value=\n[[1.0000, 2.0000],\n"
                     " [3.0000, 4.0000]])"));
  cell_tensor_release(u);
  cell_tensor_release(t);
  /* ceil((0.3 - 0) / 0.1) = 3 elements, start + i * step */
  t = NULL;
  CHECK_OK(cell_tensor_arange(0, 0.3, 0.1, CELL_DTYPE_F64, &t));
  CHECK(has(t, CELL_DTYPE_F64, 1, S(3), V(0, 0.1, 0.2), 0));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_arange(5, 0, 1, CELL_DTYPE_F64, &t)); /* empty, not an error */
  CHECK(has(t, CELL_DTYPE_F64, 1, S(0), NULL, 0));
  CHECK(prints_as(t, "Tensor(shape=[0], dtype=Float64, value= [])"));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_arange(10, 0, -3, CELL_DTYPE_I32, &t));
  CHECK(has(t, CELL_DTYPE_I32, 1, S(4), V(10, 7, 4, 1), 0));
  CHECK(prints_as(t, "Tensor(shape=[4], dtype=Int32, value= [10,  7,  4,  1])"));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_arange(-6, 6, 1, CELL_DTYPE_F32, &t));
  u = NULL;
  CHECK_OK(cell_tensor_reshape(t, 3, S(2, 2, 3), &u));
  CHECK(has(u, CELL_DTYPE_F32, 3, S(2, 2, 3), V(-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5), 0));
  CHECK(prints_as(u, "Tensor(shape=[2, 2, 3], dtype=Float32, value=\n"
                     "[[[-6.0000, -5.0000, -4.0000],\n"
                     "  [-3.0000, -2.0000, -1.0000]],\n"
                     "\n"
                     " [[ 0.0000,  1.0000,  2.0000],\n"
                     "  [ 3.0000,  4.0000,  5.0000]]])"));
  cell_tensor_release(u);
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_arange(0.5, 3, 1, CELL_DTYPE_I64, &t)); /* 0.5, 1.5, 2.5 truncated */
  CHECK(has(t, CELL_DTYPE_I64, 1, S(3), V(0, 1, 2), 0));
  cell_tensor_release(t);

  t = NULL;
  CHECK(cell_tensor_arange(0, 1, 0, CELL_DTYPE_F32, &t) == CELL_ERR_VALUE && t == NULL);
  CHECK_MSG("arange: step must not be zero (start=0, stop=1)");
  CHECK(cell_tensor_arange(0, NAN, 1, CELL_DTYPE_F32, &t) == CELL_ERR_VALUE);
  CHECK_MSG("start, stop and step must be finite, got start=0, stop=nan, step=1");
  CHECK(cell_tensor_arange(0, 1, INFINITY, CELL_DTYPE_F32, &t) == CELL_ERR_VALUE);
  CHECK(cell_tensor_arange(0, 1e300, 1e-300, CELL_DTYPE_F32, &t) == CELL_ERR_VALUE);
  CHECK_MSG("gives inf elements, more than a tensor can hold (1152921504606846975)");
  CHECK(cell_tensor_arange(0, 1, 1, (cell_dtype)CELL_DTYPE_COUNT, &t) == CELL_ERR_TYPE);
  CHECK(cell_tensor_arange(0, 1, 1, CELL_DTYPE_F32, NULL) == CELL_ERR_VALUE);
  CHECK(t == NULL);

  CHECK_OK(cell_tensor_linspace(0, 1, 5, CELL_DTYPE_F32, &t));
  CHECK(has(t, CELL_DTYPE_F32, 1, S(5), V(0, 0.25, 0.5, 0.75, 1), 0));
  CHECK(prints_as(t, "Tensor(shape=[5], dtype=Float32, value= "
                     "[0.0000, 0.2500, 0.5000, 0.7500, 1.0000])"));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_linspace(3, 1, 1, CELL_DTYPE_F32, &t)); /* one point: start */
  CHECK(has(t, CELL_DTYPE_F32, 1, S(1), V(3), 0));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_linspace(3, 1, 0, CELL_DTYPE_F32, &t));
  CHECK(has(t, CELL_DTYPE_F32, 1, S(0), NULL, 0));
  cell_tensor_release(t);
  t = NULL;
  /* the last point is exactly stop, whatever the rounding of the step */
  CHECK_OK(cell_tensor_linspace(0, 0.7, 7, CELL_DTYPE_F64, &t));
  CHECK(t && flat(t, 6) == 0.7 && NEAR(flat(t, 3), 0.35, 1e-15));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_linspace(1, -1, 3, CELL_DTYPE_I8, &t));
  CHECK(has(t, CELL_DTYPE_I8, 1, S(3), V(1, 0, -1), 0));
  cell_tensor_release(t);
  t = NULL;
  CHECK(cell_tensor_linspace(0, 1, -1, CELL_DTYPE_F32, &t) == CELL_ERR_VALUE && t == NULL);
  CHECK_MSG("linspace: number of points must be non-negative, got -1");
}

static void test_eye(void) {
  cell_tensor *t = NULL, *u = NULL;
  CHECK_OK(cell_tensor_eye(3, 4, CELL_DTYPE_I64, &t));
  CHECK(has(t, CELL_DTYPE_I64, 2, S(3, 4), V(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0), 0));
  CHECK(prints_as(t, "Tensor(shape=[3, 4], dtype=Int64, value=\n[[1, 0, 0, 0],\n"
                     " [0, 1, 0, 0],\n [0, 0, 1, 0]])"));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_eye(3, 2, CELL_DTYPE_BOOL, &t));
  CHECK(has(t, CELL_DTYPE_BOOL, 2, S(3, 2), V(1, 0, 0, 1, 0, 0), 0));
  CHECK(prints_as(t, "Tensor(shape=[3, 2], dtype=Bool, value=\n[[ true, false],\n"
                     " [false,  true],\n [false, false]])"));
  CHECK_OK(cell_tensor_transpose(t, 0, 1, &u));
  CHECK(has(u, CELL_DTYPE_BOOL, 2, S(2, 3), V(1, 0, 0, 0, 1, 0), 0));
  CHECK(prints_as(u, "Tensor(shape=[2, 3], dtype=Bool, value=\n[[ true, false, false],\n"
                     " [false,  true, false]])"));
  cell_tensor_release(u);
  cell_tensor_release(t);
  for (int k = 0; k < NDT; k++) {
    t = NULL;
    CHECK_OK(cell_tensor_eye(2, 3, all_dtypes[k], &t));
    CHECKF(has(t, all_dtypes[k], 2, S(2, 3), V(1, 0, 0, 0, 1, 0), 0), "eye %s",
           cell_dtype_name(all_dtypes[k]));
    cell_tensor_release(t);
  }
  t = NULL;
  CHECK_OK(cell_tensor_eye(0, 3, CELL_DTYPE_F32, &t));
  CHECK(has(t, CELL_DTYPE_F32, 2, S(0, 3), NULL, 0));
  cell_tensor_release(t);
  t = NULL;
  CHECK(cell_tensor_eye(-1, 2, CELL_DTYPE_F32, &t) == CELL_ERR_VALUE && t == NULL);
  CHECK_MSG("eye: sizes must be non-negative, got n=-1, m=2");
}

/* The values for seed 42 pin the generator (Philox, counter per pair of
 * elements); a deliberate change of the stream must update them. */
static void test_random_values(void) {
  cell_tensor *t = NULL;
  cell_set_seed(42);
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F32, 2, S(3, 3), &t));
  CHECK(has(t, CELL_DTYPE_F32, 2, S(3, 3),
            V(0.6130, 0.0732, 0.9877, 0.5139, 0.8259, 0.6027, 0.7296, 0.5864, 0.3264), 5e-5));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 2, S(3, 3), &t));
  CHECK(has(t, CELL_DTYPE_F64, 2, S(3, 3),
            V(0.8240, 0.2780, -0.7088, 0.0932, 0.7943, 0.5065, 1.0465, -0.7022, -0.1545), 5e-5));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_randint(-5, 5, CELL_DTYPE_I8, 2, S(3, 3), &t));
  CHECK(has(t, CELL_DTYPE_I8, 2, S(3, 3), V(0, -2, -2, -3, -2, -1, -3, 1, -3), 0));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_randint(0, 10, CELL_DTYPE_F32, 2, S(3, 3), &t));
  CHECK(has(t, CELL_DTYPE_F32, 2, S(3, 3), V(7, 9, 9, 4, 0, 7, 6, 5, 3), 0));
  cell_tensor_release(t);
  t = NULL;

  /* errors draw nothing: the next values are the same as without them */
  CHECK(cell_tensor_rand(CELL_DTYPE_I32, 2, S(3, 3), &t) == CELL_ERR_TYPE);
  CHECK_MSG("rand: dtype must be a floating type, got Int32");
  CHECK(cell_tensor_randn(CELL_DTYPE_BOOL, 2, S(3, 3), &t) == CELL_ERR_TYPE);
  CHECK_MSG("randn: dtype must be a floating type, got Bool");
  CHECK(cell_tensor_randint(3, 3, CELL_DTYPE_I32, 2, S(3, 3), &t) == CELL_ERR_VALUE);
  CHECK_MSG("randint: high must be greater than low, got low=3, high=3");
  CHECK(cell_tensor_randint(0, 300, CELL_DTYPE_I8, 2, S(3, 3), &t) == CELL_ERR_VALUE);
  CHECK_MSG("randint: range [0, 300) does not fit in Int8 (values must lie in [-128, 127])");
  CHECK(cell_tensor_randint(0, 2, CELL_DTYPE_BOOL, 2, S(3, 3), &t) == CELL_ERR_TYPE);
  CHECK_MSG("randint: dtype must be an integer or floating type, got Bool");
  CHECK(cell_tensor_randint(0, (1 << 24) + 2, CELL_DTYPE_F32, 1, S(2), &t) == CELL_ERR_VALUE);
  CHECK(cell_tensor_rand(CELL_DTYPE_F32, 2, S(2, -1), &t) == CELL_ERR_VALUE);
  CHECK_MSG("rand: negative size -1 in shape [2, -1]");
  CHECK(cell_tensor_rand(CELL_DTYPE_F32, 2, NULL, &t) == CELL_ERR_VALUE);
  CHECK(t == NULL);

  /* the full int64 range, exact */
  CHECK_OK(cell_tensor_randint(INT64_MIN, INT64_MAX, CELL_DTYPE_I64, 1, S(2), &t));
  if (t) {
    const int64_t *x = cell_tensor_data_ptr(t);
    CHECKF(x[0] == -2952077253609220340LL && x[1] == 7758399233583954611LL, "got %lld %lld",
           (long long)x[0], (long long)x[1]);
    CHECK(prints_as(t, "Tensor(shape=[2], dtype=Int64, value= "
                       "[-2952077253609220340,  7758399233583954611])"));
  }
  cell_tensor_release(t);
  t = NULL;

  /* the same seed gives the same tensors; 0-d and empty shapes */
  cell_tensor *a = NULL, *b = NULL;
  cell_set_seed(1234);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, S(5), &a));
  cell_set_seed(1234);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, S(5), &b));
  CHECK(a && b && memcmp(cell_tensor_data_ptr(a), cell_tensor_data_ptr(b), 5 * sizeof(float)) == 0);
  cell_tensor_release(b);
  b = NULL;
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, S(5), &b)); /* the stream moved on */
  CHECK(a && b && memcmp(cell_tensor_data_ptr(a), cell_tensor_data_ptr(b), 5 * sizeof(float)) != 0);
  cell_tensor_release(a);
  cell_tensor_release(b);
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 0, NULL, &t));
  CHECK(t && cell_tensor_ndim(t) == 0 && flat(t, 0) >= 0 && flat(t, 0) < 1);
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_randint(0, 3, CELL_DTYPE_U8, 2, S(4, 0), &t));
  CHECK(has(t, CELL_DTYPE_U8, 2, S(4, 0), NULL, 0));
  cell_tensor_release(t);
}

/* Large random tensors: the same for 1 and 8 threads (the fill is split in
 * chunks, which changes nothing), within range, with the right moments. */
static void test_random_stats(void) {
  const int64_t n = 300001; /* odd, above the parallel grain, many chunks */
  float *fa = malloc((size_t)n * sizeof *fa);
  double *fb = malloc((size_t)n * sizeof *fb);
  int32_t *fc = malloc((size_t)n * sizeof *fc);
  if (!fa || !fb || !fc) abort();
  int threads0 = cell_get_num_threads();
  for (int th = 1; th <= 8; th *= 8) {
    cell_set_num_threads(th);
    cell_set_seed(7);
    cell_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(cell_tensor_rand(CELL_DTYPE_F32, 1, &n, &a));
    CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 1, &n, &b));
    CHECK_OK(cell_tensor_randint(-3, 4, CELL_DTYPE_I32, 1, &n, &c));
    if (!a || !b || !c) {
      cell_tensor_release(a);
      cell_tensor_release(b);
      cell_tensor_release(c);
      break;
    }
    if (th == 1) {
      memcpy(fa, cell_tensor_data_ptr(a), (size_t)n * sizeof *fa);
      memcpy(fb, cell_tensor_data_ptr(b), (size_t)n * sizeof *fb);
      memcpy(fc, cell_tensor_data_ptr(c), (size_t)n * sizeof *fc);
      double s[3] = {0}, sq[2] = {0};
      float mx = 0, mn = 1;
      int cmin = 99, cmax = -99;
      for (int64_t i = 0; i < n; i++) {
        float v = fa[i];
        s[0] += v;
        sq[0] += (double)v * v;
        if (v > mx) mx = v;
        if (v < mn) mn = v;
        s[1] += fb[i];
        sq[1] += fb[i] * fb[i];
        s[2] += fc[i];
        if (fc[i] < cmin) cmin = fc[i];
        if (fc[i] > cmax) cmax = fc[i];
      }
      double m0 = s[0] / (double)n, m1 = s[1] / (double)n, m2 = s[2] / (double)n;
      double v0 = sq[0] / (double)n - m0 * m0, v1 = sq[1] / (double)n - m1 * m1;
      CHECKF(fabs(m0 - 0.5) < 0.005 && fabs(v0 - 1.0 / 12) < 0.003, "rand mean %g var %g", m0, v0);
      CHECKF(mn >= 0 && mx < 1 && mn < 1e-4 && mx > 1 - 1e-4, "rand range [%g, %.9g]", mn, mx);
      CHECKF(fabs(m1) < 0.01 && fabs(v1 - 1) < 0.02, "randn mean %g var %g", m1, v1);
      CHECKF(fabs(m2) < 0.02 && cmin == -3 && cmax == 3, "randint mean %g in [%d, %d]",
             m2, cmin, cmax);
    } else {
      CHECK(memcmp(fa, cell_tensor_data_ptr(a), (size_t)n * sizeof *fa) == 0);
      CHECK(memcmp(fb, cell_tensor_data_ptr(b), (size_t)n * sizeof *fb) == 0);
      CHECK(memcmp(fc, cell_tensor_data_ptr(c), (size_t)n * sizeof *fc) == 0);
    }
    cell_tensor_release(a);
    cell_tensor_release(b);
    cell_tensor_release(c);
  }
  cell_set_num_threads(threads0);
  free(fa);
  free(fb);
  free(fc);

  /* rounding to a half dtype never reaches 1 */
  const cell_dtype halves[2] = {CELL_DTYPE_BF16, CELL_DTYPE_F16};
  for (int k = 0; k < 2; k++) {
    cell_tensor *t = NULL;
    CHECK_OK(cell_tensor_rand(halves[k], 1, &n, &t));
    if (!t) continue;
    double mx = 0, mn = 1;
    for (int64_t i = 0; i < n; i++) {
      double v = flat(t, i);
      if (v > mx) mx = v;
      if (v < mn) mn = v;
    }
    CHECKF(mn >= 0 && mx < 1 && mx > 0.99, "%s rand range [%g, %g]",
           cell_dtype_name(halves[k]), mn, mx);
    cell_tensor_release(t);
  }
  /* randint into float dtypes gives integers */
  cell_tensor *t = NULL;
  CHECK_OK(cell_tensor_randint(-1000, 1000, CELL_DTYPE_F16, 1, S(4096), &t));
  if (t) {
    int ok = 1;
    for (int64_t i = 0; i < 4096; i++) {
      double v = flat(t, i);
      ok &= v == floor(v) && v >= -1000 && v < 1000;
    }
    CHECK(ok);
  }
  cell_tensor_release(t);
}

static void test_format(void) {
  cell_tensor *t = NULL, *u = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 0, NULL, 1.5, &t));
  CHECK(prints_as(t, "Tensor(shape=[], dtype=Float32, value= 1.5000)"));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_empty(CELL_DTYPE_F32, 2, S(2, 0), &t));
  CHECK(prints_as(t, "Tensor(shape=[2, 0], dtype=Float32, value=\n[])"));
  cell_tensor_release(t);
  t = NULL;
  /* summarised: three rows and columns at each end */
  CHECK_OK(cell_tensor_arange(0, 10000, 1, CELL_DTYPE_I64, &t));
  CHECK_OK(cell_tensor_reshape(t, 2, S(100, 100), &u));
  CHECK(prints_as(u, "Tensor(shape=[100, 100], dtype=Int64, value=\n"
                     "[[   0,    1,    2, ...,   97,   98,   99],\n"
                     " [ 100,  101,  102, ...,  197,  198,  199],\n"
                     " [ 200,  201,  202, ...,  297,  298,  299],\n"
                     " ...,\n"
                     " [9700, 9701, 9702, ..., 9797, 9798, 9799],\n"
                     " [9800, 9801, 9802, ..., 9897, 9898, 9899],\n"
                     " [9900, 9901, 9902, ..., 9997, 9998, 9999]])"));
  cell_tensor_release(u);
  u = NULL;
  CHECK_OK(cell_tensor_reshape(t, 3, S(10, 10, 100), &u));
  char *s = NULL;
  CHECK_OK(cell_tensor_format(u, &s));
  CHECK(s && strstr(s, "Tensor(shape=[10, 10, 100], dtype=Int64, value=\n"
                       "[[[   0,    1,    2, ...,   97,   98,   99],\n") == s);
  CHECK(s && strstr(s, "\n\n ...,\n\n [[7000, 7001, 7002, ..., 7097, 7098, 7099],\n"));
  CHECK(s && strstr(s, "  [9900, 9901, 9902, ..., 9997, 9998, 9999]]])") ==
                 s + strlen(s) - strlen("  [9900, 9901, 9902, ..., 9997, 9998, 9999]]])"));
  free(s);
  cell_tensor_release(u);
  cell_tensor_release(t);
  double vals[4] = {1e-5, -INFINITY, NAN, 3};
  t = NULL;
  CHECK_OK(cell_tensor_wrap(vals, CELL_DTYPE_F64, 1, S(4), NULL, NULL, NULL, &t));
  CHECK(prints_as(t, "Tensor(shape=[4], dtype=Float64, value= "
                     "[1.0000e-05,       -inf,        nan, 3.0000e+00])"));
  vals[0] = 1e8; /* wrapped: the tensor sees the change */
  CHECK(prints_as(t, "Tensor(shape=[4], dtype=Float64, value= "
                     "[1.0000e+08,       -inf,        nan, 3.0000e+00])"));
  vals[0] = -0.5;
  vals[1] = 0;
  CHECK(prints_as(t, "Tensor(shape=[4], dtype=Float64, value= "
                     "[-0.5000,  0.0000,     nan,  3.0000])"));
  cell_tensor_release(t);
  t = NULL;
  u = NULL;
  CHECK_OK(cell_tensor_arange(0, 16, 1, CELL_DTYPE_U8, &t));
  CHECK_OK(cell_tensor_reshape(t, 4, S(2, 2, 2, 2), &u));
  CHECK(prints_as(u, "Tensor(shape=[2, 2, 2, 2], dtype=UInt8, value=\n"
                     "[[[[ 0,  1],\n   [ 2,  3]],\n\n  [[ 4,  5],\n   [ 6,  7]]],\n\n\n"
                     " [[[ 8,  9],\n   [10, 11]],\n\n  [[12, 13],\n   [14, 15]]]])"));
  cell_tensor_release(u);
  cell_tensor_release(t);
}

/* An interrupt raised before (or during) a fill fails it without a leak. */
static void test_interrupt(void) {
  long live = cell_alloc_live_blocks();
  cell_tensor *t = NULL;
  cell_interrupt(1);
  CHECK(cell_tensor_rand(CELL_DTYPE_F32, 1, S(100000), &t) == CELL_ERR_INTERRUPT);
  CHECK(cell_tensor_randint(0, 5, CELL_DTYPE_I32, 1, S(10), &t) == CELL_ERR_INTERRUPT);
  CHECK(cell_tensor_arange(0, 100000, 1, CELL_DTYPE_F64, &t) == CELL_ERR_INTERRUPT);
  CHECK(cell_tensor_linspace(0, 1, 100000, CELL_DTYPE_F64, &t) == CELL_ERR_INTERRUPT);
  cell_interrupt(0);
  CHECK(t == NULL && cell_alloc_live_blocks() == live);
}

/* Fail the n-th allocation for n = 1, 2, ... until the creator succeeds. */
static cell_status c_arange(cell_tensor **o) { return cell_tensor_arange(0, 10, 1, CELL_DTYPE_F32, o); }
static cell_status c_linspace(cell_tensor **o) { return cell_tensor_linspace(0, 1, 7, CELL_DTYPE_F64, o); }
static cell_status c_eye(cell_tensor **o) { return cell_tensor_eye(3, 5, CELL_DTYPE_BOOL, o); }
static cell_status c_rand(cell_tensor **o) { return cell_tensor_rand(CELL_DTYPE_F32, 2, S(3, 3), o); }
static cell_status c_randn(cell_tensor **o) { return cell_tensor_randn(CELL_DTYPE_BF16, 1, S(70000), o); }
static cell_status c_randint(cell_tensor **o) {
  return cell_tensor_randint(-2, 9, CELL_DTYPE_I64, 2, S(2, 3), o);
}

static void test_alloc(void) {
  typedef cell_status (*mk_fn)(cell_tensor **);
  static const mk_fn fs[] = {c_arange, c_linspace, c_eye, c_rand, c_randn, c_randint};
  for (unsigned k = 0; k < sizeof fs / sizeof fs[0]; k++) {
    long base = cell_alloc_live_blocks();
    int done = 0, clean = 1, mem = 1;
    for (long n = 1; n < 100 && !done; n++) {
      cell_tensor *r = NULL;
      cell_alloc_fail_after(n);
      cell_status s = fs[k](&r);
      cell_alloc_fail_after(0);
      if (s == CELL_OK) {
        done = 1;
        cell_tensor_release(r);
      } else if (s != CELL_ERR_MEMORY || r != NULL) {
        mem = 0;
      }
      if (cell_alloc_live_blocks() != base) clean = 0;
    }
    CHECKF(done && clean && mem, "creator %u: succeeded %d, no leak %d, MemoryError %d", k, done,
           clean, mem);
  }
  /* a failed random tensor draws no random numbers */
  cell_tensor *a = NULL, *b = NULL;
  cell_set_seed(99);
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, S(4), &a));
  cell_set_seed(99);
  cell_alloc_fail_after(1);
  CHECK(cell_tensor_rand(CELL_DTYPE_F64, 1, S(4), &b) == CELL_ERR_MEMORY);
  cell_alloc_fail_after(0);
  CHECK_MSG("out of memory");
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, S(4), &b));
  CHECK(a && b && memcmp(cell_tensor_data_ptr(a), cell_tensor_data_ptr(b), 4 * sizeof(double)) == 0);
  cell_tensor_release(a);
  cell_tensor_release(b);
}

void test_create_all(void) {
  long base = cell_alloc_live_blocks();
  test_ramps();
  test_eye();
  test_random_values();
  test_random_stats();
  test_format();
  test_interrupt();
  test_alloc();
  CHECK(cell_alloc_live_blocks() == base);
}
