/* test_sample.c - the C API of include/cell_sample.h and the generator
 * state: saved states resume a stream, malformed ones are refused with the
 * generator left alone, and the sampling and resampling ops give known
 * values from C (0-based indices). */
#include "check.h"

static void test_state_round_trip(void) {
  cell_generator *g = NULL;
  REQUIRE_OK(cell_generator_new(42, &g));
  cell_generator *prev = cell_generator_use(g);
  int64_t n = 16;
  cell_tensor *a = NULL, *b = NULL, *c = NULL;
  unsigned char st[CELL_RNG_STATE_BYTES], bad[CELL_RNG_STATE_BYTES];
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 1, &n, &a));
  cell_generator_get_state(NULL, st); /* NULL: the current one, g */
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 1, &n, &b));
  CHECK_OK(cell_generator_set_state(g, st, sizeof st));
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F64, 1, &n, &c));
  int same = b && c, differs = a && b;
  for (int64_t i = 0; same && i < n; i++) same = flat(b, i) == flat(c, i);
  CHECK(same);
  int any = 0;
  for (int64_t i = 0; differs && i < n; i++) any |= flat(a, i) != flat(b, i);
  CHECK(any);
  /* malformed: the wrong size, then a wrong header; g keeps its place */
  memcpy(bad, st, sizeof bad);
  bad[0] ^= 1;
  cell_generator_get_state(g, st);
  CHECK(cell_generator_set_state(g, st, sizeof st - 1) == CELL_ERR_VALUE);
  CHECK_MSG("24 bytes");
  CHECK(cell_generator_set_state(g, bad, sizeof bad) == CELL_ERR_VALUE);
  CHECK_MSG("not a generator state");
  CHECK(cell_generator_set_state(g, NULL, 24) == CELL_ERR_VALUE);
  unsigned char again[CELL_RNG_STATE_BYTES];
  cell_generator_get_state(g, again);
  CHECK(memcmp(st, again, sizeof st) == 0);
  cell_generator_get_state(g, NULL); /* nothing to write: nothing happens */
  cell_generator_use(prev);
  cell_generator_free(g);
  cell_tensor_release(a);
  cell_tensor_release(b);
  cell_tensor_release(c);
}

static void test_random_ops(void) {
  int64_t k = 3, two[2] = {2, 3};
  double pv[3] = {0, 0, 1}, rows[6] = {1, 0, 0, 0, 1, 0};
  cell_tensor *p = from(CELL_DTYPE_F32, 1, &k, pv), *p2 = from(CELL_DTYPE_F64, 2, two, rows);
  cell_tensor *s = NULL;
  REQUIRE_OK(cell_op_multinomial(p, 4, 1, 0, &s));
  CHECK(cell_tensor_dtype(s) == CELL_DTYPE_I64 && cell_tensor_numel(s) == 4);
  for (int64_t i = 0; i < 4; i++) CHECK(flat(s, i) == 2);
  cell_tensor_release(s);
  REQUIRE_OK(cell_op_multinomial(p2, 1, 0, 0, &s));
  CHECK(flat(s, 0) == 0 && flat(s, 1) == 1);
  cell_tensor_release(s);
  CHECK(cell_op_multinomial(p, 2, 0, 0, &s) == CELL_ERR_VALUE);
  CHECK_MSG("nonzero");
  CHECK(cell_op_bernoulli(p, NULL, 1.0, &s) == CELL_OK);
  for (int64_t i = 0; i < 3; i++) CHECK(flat(s, i) == 1);
  cell_tensor_release(s);
  CHECK(cell_op_bernoulli(p, NULL, 2.0, &s) == CELL_ERR_VALUE);
  cell_tensor *zero = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F64, 0, NULL, 0, &zero));
  REQUIRE_OK(cell_op_normal(2, two, p2, zero, &s)); /* stddev 0: the mean itself */
  CHECK(cell_tensor_dtype(s) == CELL_DTYPE_F64);
  for (int64_t i = 0; i < 6; i++) CHECK(flat(s, i) == rows[i]);
  cell_tensor_release(s);
  int64_t two_only = 2;
  CHECK(cell_op_normal(1, &two_only, p2, zero, &s) == CELL_ERR_VALUE); /* {2} against {2, 3} */
  CHECK_MSG("[2]");
  cell_tensor_release(zero);
  cell_tensor_release(p);
  cell_tensor_release(p2);
}

static void test_resample_ops(void) {
  int64_t shape[4] = {1, 2, 4, 6};
  double v[48];
  for (int i = 0; i < 48; i++) v[i] = i;
  cell_tensor *x = from(CELL_DTYPE_F32, 4, shape, v), *u = NULL, *f = NULL, *y = NULL;
  int64_t kk[2] = {2, 3}, os[2] = {4, 6};
  REQUIRE_OK(cell_op_unfold(x, kk, NULL, NULL, kk, &u)); /* stride = kernel: no overlap */
  CHECK(cell_tensor_dim(u, 1) == 12 && cell_tensor_dim(u, 2) == 4);
  REQUIRE_OK(cell_op_fold(u, os, kk, NULL, NULL, kk, &f));
  for (int i = 0; i < 48; i++) CHECK(flat(f, i) == v[i]);
  int64_t same[2] = {4, 6};
  REQUIRE_OK(cell_op_interpolate(x, same, NULL, CELL_INTERP_BILINEAR, 0, &y));
  for (int i = 0; i < 48; i++) CHECK(NEAR(flat(y, i), v[i], 1e-6));
  cell_tensor_release(y);
  CHECK(cell_op_interpolate(x, same, NULL, CELL_INTERP_LINEAR, 0, &y) == CELL_ERR_VALUE);
  CHECK_MSG("'linear'");
  cell_tensor_release(u);
  cell_tensor_release(f);
  cell_tensor_release(x);
}

void test_sample_all(void) {
  test_state_round_trip();
  test_random_ops();
  test_resample_ops();
}
