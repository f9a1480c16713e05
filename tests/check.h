/* check.h - what the engine's C test files share: the CHECK macros and
 * their counters (defined in test_engine.c), small tensor helpers, and the
 * entry point of each test file. All files are linked into one binary. */
#ifndef CELL_TESTS_CHECK_H
#define CELL_TESTS_CHECK_H
#include "cell.h"
#include "core/alloc.h"
#include "core/tensor.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int passed, failed;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (cond) {                                                               \
      passed++;                                                               \
    } else {                                                                  \
      failed++;                                                               \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, \
              __LINE__, #cond, cell_last_error());                            \
    }                                                                         \
  } while (0)
/* CHECK with a printf-style explanation, printed (evaluated) only on failure. */
#define CHECKF(cond, ...)                                                          \
  do {                                                                             \
    if (cond) {                                                                    \
      passed++;                                                                    \
    } else {                                                                       \
      failed++;                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);     \
      fprintf(stderr, __VA_ARGS__);                                                \
      fprintf(stderr, " (last error: %s)\n", cell_last_error());                   \
    }                                                                              \
  } while (0)
#define CHECK_OK(expr) CHECK((expr) == CELL_OK)
/* CHECK_OK that leaves the enclosing void function when expr fails, for
 * calls whose results the rest of the test reads. */
#define REQUIRE_OK(expr)                                                               \
  do {                                                                                 \
    if ((expr) == CELL_OK) {                                                           \
      passed++;                                                                        \
    } else {                                                                           \
      failed++;                                                                        \
      fprintf(stderr, "%s:%d: check failed: %s == CELL_OK (last error: %s); test "     \
                      "abandoned\n", __FILE__, __LINE__, #expr, cell_last_error());   \
      return;                                                                          \
    }                                                                                  \
  } while (0)
/* The last error message contains s. */
#define CHECK_MSG(s) CHECKF(strstr(cell_last_error(), (s)) != NULL, "message lacks \"%s\"", (s))
#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol) * (1 + fabs((double)(b))))

/* The nine dtypes before int16, in enum order (defined in test_engine.c;
 * tests/test_math.c covers int16). */
#define NDT 9
extern const cell_dtype all_dtypes[NDT];

/* A contiguous tensor of dtype dt holding v (row-major), or NULL. */
/* xorshift64 on *state: doubles in [-1, 1), and integers in [lo, hi]. */
static inline double check_unit(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (double)(*state >> 11) / (double)(1ULL << 52) - 1.0;
}
static inline int64_t check_pick(uint64_t *state, int64_t lo, int64_t hi) {
  return lo + (int64_t)((check_unit(state) + 1) / 2 * (double)(hi - lo + 1)) % (hi - lo + 1);
}

/* Whether got, a float32 product's element C[i, j] = c0 + sum_p A[i, p]
 * B[p, j] (operands by element strides), is within 1e-6 of the float64
 * sum's magnitude (plus 1e-6); *want the float64 value. */
static inline int check_gemm_elem(const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs,
                                  int64_t bcs, int64_t k, int64_t i, int64_t j, double c0, float got,
                                  double *want) {
  double s = c0, mag = fabs(c0);
  for (int64_t p = 0; p < k; p++) {
    double t = (double)a[i * ars + p * acs] * b[p * brs + j * bcs];
    s += t;
    mag += fabs(t);
  }
  *want = s;
  return fabs(got - s) <= 1e-6 * (mag + 1);
}

static inline cell_tensor *from(cell_dtype dt, int ndim, const int64_t *shape, const double *v) {
  cell_tensor *t = NULL;
  if (cell_tensor_empty(dt, ndim, shape, &t) != CELL_OK) return NULL;
  int64_t n = cell_tensor_numel(t), es = cell_dtype_size(dt);
  for (int64_t i = 0; i < n; i++) cell_store_f64(dt, (char *)cell_tensor_data_ptr(t) + i * es, v[i]);
  return t;
}

/* The i-th element of the view in row-major order (NaN if unreadable). */
static inline double flat(const cell_tensor *t, int64_t i) {
  int64_t idx[CELL_MAX_DIMS];
  int nd = cell_tensor_ndim(t);
  for (int d = nd - 1; d >= 0; d--) {
    int64_t n = cell_tensor_dim(t, d);
    idx[d] = i % n;
    i /= n;
  }
  double v = NAN;
  cell_tensor_get(t, idx, &v);
  return v;
}

/* One entry point per test file, called from main() in test_engine.c. */
void test_reduce_all(void);
void test_shape_all(void);
void test_create_all(void);
void test_nn_all(void);
void test_optim_all(void);
void test_capi_all(void);
void test_capi_nn_all(void);
void test_io_all(void);
void test_data_all(void);
void test_conv_all(void);
void test_rng_all(void);
void test_autograd_threads_all(void);
void test_shape_overflow_all(void);
void test_layers_all(void);
void test_device_all(void);
void test_device_load_all(void);
void test_philox_all(void);
void test_sort_all(void);
void test_math_all(void);
void test_sample_all(void);
void test_inplace_all(void);
void test_higher_all(void);
void test_vmath_all(void);
void test_attention_all(void);
void test_vision_all(void);
void test_gemm_small_all(void);
void test_sgemm_all(void);
void test_optim_many_all(void);

#endif
