/* test_shape_overflow.c - the checked size arithmetic (src/core/shape_check.c)
 * and every engine function that makes or computes a shape: sizes whose
 * product overflows are a ValueError naming the shape; within the bound,
 * a shape memory cannot hold is a MemoryError. Also set_num_threads' range. */
#include "check.h"
#include "cell_conv.h"
#include "cell_ffi.h"
#include "ops/kernels.h"

#define S(...) ((const int64_t[]){__VA_ARGS__})
#define P(k) (INT64_C(1) << (k))
#define TOO_LARGE "is too large: the product of its sizes (zeros counted as 1) must be at most 1152921504606846975"

/* status st, a message holding word, and *out left NULL. */
#define FAILS(expr, st, word)                                                                \
  do {                                                                                       \
    cell_tensor *out_ = NULL, **o_ = &out_;                                                  \
    (void)o_;                                                                                \
    cell_status got_ = (expr);                                                               \
    CHECKF(got_ == (st) && strstr(cell_last_error(), (word)) && out_ == NULL,                \
           "status %s, message \"%s\" (want %s with \"%s\")", cell_status_name(got_),        \
           cell_last_error(), cell_status_name(st), (word));                                 \
    cell_tensor_release(out_);                                                               \
  } while (0)

static void test_helpers(void) {
  int64_t r = -7;
  CHECK(cell_size_mul(P(30), P(29), &r) && r == P(59));
  CHECK(!cell_size_mul(P(30), P(30), &r) && r == P(59)); /* 2^60 > max: out untouched */
  CHECK(cell_size_mul(CELL_MAX_NUMEL, 1, &r) && r == CELL_MAX_NUMEL);
  CHECK(!cell_size_mul(P(62) + 4, 4, &r)); /* wraps to 16 in 64 bits */
  CHECK(!cell_size_mul(-1, 5, &r) && !cell_size_mul(5, -1, &r));
  CHECK(cell_size_mul(0, INT64_MAX, &r) && r == 0);
  CHECK(cell_size_add(CELL_MAX_NUMEL - 1, 1, &r) && r == CELL_MAX_NUMEL);
  CHECK(!cell_size_add(CELL_MAX_NUMEL, 1, &r));
  CHECK(!cell_size_add(INT64_MAX, INT64_MAX, &r));
  CHECK(!cell_size_add(-3, 1, &r));

  int64_t n = -1;
  CHECK_OK(cell_shape_numel_checked("t", 3, S(2, 3, 4), &n));
  CHECK(n == 24);
  CHECK_OK(cell_shape_numel_checked("t", 0, NULL, &n));
  CHECK(n == 1);
  CHECK_OK(cell_shape_numel_checked("t", 2, S(0, P(59)), &n));
  CHECK(n == 0);
  CHECK_OK(cell_shape_numel_checked("t", 2, S(P(30), P(30) - 1), NULL));
  CHECK(cell_shape_numel_checked("t", 2, S(P(62) + 4, 4), &n) == CELL_ERR_VALUE);
  CHECK_MSG("t: shape [4611686018427387908, 4] " TOO_LARGE);
  /* Zero elements, but strides that overflow. */
  CHECK(cell_shape_numel_checked("t", 4, S(0, P(53), P(53), P(53)), &n) == CELL_ERR_VALUE);
  CHECK_MSG("t: shape [0, 9007199254740992, 9007199254740992, 9007199254740992] " TOO_LARGE);
  /* Wraps to exactly 16: (2^32 + 1)(2^32 - 1) = 2^64 - 1. */
  const int64_t *w16 = S(P(32) + 1, P(32) - 1, P(32) + 1, P(32) - 1, 16);
  CHECK(cell_shape_numel_checked("t", 5, w16, &n) == CELL_ERR_VALUE);
  CHECK(cell_shape_numel_checked("t", 2, S(3, -1), &n) == CELL_ERR_VALUE);
  CHECK_MSG("t: negative size -1 in shape [3, -1]");
  CHECK(cell_shape_numel_checked("t", CELL_MAX_DIMS + 1, S(1), &n) == CELL_ERR_VALUE);
  CHECK_MSG("at most 16 dimensions, got 17");
  CHECK(cell_shape_numel_checked("t", 2, NULL, &n) == CELL_ERR_VALUE);
  CHECK(n == 0); /* untouched by the failures since [0, 2^59] */
}

static void test_views_and_results(void) {
  cell_tensor *t = NULL, *one = NULL, *big = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 2, S(4, 4), 1, &t));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, S(1), 1, &one));
  const int64_t *w16 = S(P(32) + 1, P(32) - 1, P(32) + 1, P(32) - 1, 16);
  FAILS(cell_k_reshape(t, 5, w16, o_), CELL_ERR_VALUE,
        "reshape: shape [4294967297, 4294967295, 4294967297, 4294967295, 16] " TOO_LARGE);
  FAILS(cell_k_view(t, 2, S(P(62) + 4, 4), o_), CELL_ERR_VALUE, "view: shape [4611686018427387908, 4] " TOO_LARGE);
  FAILS(cell_k_reshape(t, 3, S(P(62), P(62), -1), o_), CELL_ERR_VALUE, "[4611686018427387904, 4611686018427387904, -1] " TOO_LARGE);
  FAILS(cell_k_expand(one, 2, S(P(31), P(31)), o_), CELL_ERR_VALUE, "expand: shape [2147483648, 2147483648] " TOO_LARGE);
  /* slice and narrow with sizes near INT64_MAX. */
  cell_tensor *v = NULL;
  CHECK_OK(cell_tensor_slice(t, 1, 1, 4, INT64_MAX, &v));
  CHECK(v && cell_tensor_dim(v, 1) == 1);
  cell_tensor_release(v);
  v = NULL;
  CHECK_OK(cell_tensor_slice(t, 1, 4, 4, INT64_MAX, &v));
  CHECK(v && cell_tensor_dim(v, 1) == 0);
  cell_tensor_release(v);
  FAILS(cell_tensor_narrow(t, 1, 2, INT64_MAX, o_), CELL_ERR_INDEX, "narrow: start 2 and length 9223372036854775807");
  /* A view header straight from new_view is checked too. */
  FAILS(cell_tensor_new_view(t, 2, S(P(62), P(62)), S(0, 0), 0, o_), CELL_ERR_VALUE, "view: shape");

  /* Broadcasting. */
  int nd = 0;
  int64_t out[CELL_MAX_DIMS];
  CHECK(cell_broadcast_shapes("add", 2, S(P(40), 1), 2, S(1, P(40)), &nd, out) == CELL_ERR_VALUE);
  CHECK_MSG("add: shape [1099511627776, 1099511627776] " TOO_LARGE);
  CHECK_OK(cell_broadcast_shapes("add", 2, S(P(30), 1), 2, S(1, P(29)), &nd, out));
  CHECK(nd == 2 && out[0] == P(30) && out[1] == P(29));

  /* cat, stack, tile, repeat_interleave, pad over a 2^59-element view. */
  REQUIRE_OK(cell_k_expand(one, 1, S(P(59)), &big));
  cell_tensor *two[2] = {big, big};
  FAILS(cell_k_cat(2, two, 0, o_), CELL_ERR_VALUE, "cat: concatenating shapes [576460752303423488] and [576460752303423488] (and the rest) gives a size above 1152921504606846975");
  FAILS(cell_op_stack(2, two, 0, o_), CELL_ERR_VALUE, "stack: shape [2, 576460752303423488] " TOO_LARGE);
  FAILS(cell_op_tile(t, 1, S(P(62)), o_), CELL_ERR_VALUE, "tile: tiling shape [4, 4] by [4611686018427387904] gives a size above");
  FAILS(cell_op_tile(big, 1, S(2), o_), CELL_ERR_VALUE, "tile: tiling shape [576460752303423488] by [2]");
  FAILS(cell_op_repeat_interleave(big, 2, 0, o_), CELL_ERR_VALUE, "repeat_interleave: 2 repeats of shape [576460752303423488]");
  FAILS(cell_op_pad(big, 1, S(P(59), 0), 0, o_), CELL_ERR_VALUE, "pad: padding (576460752303423488, 0) of a size 576460752303423488");
  FAILS(cell_op_pad(t, 1, S(INT64_MAX, INT64_MAX), 0, o_), CELL_ERR_VALUE, "gives a size above");
  /* Crops that cancel a huge pad are fine: 4 + 2^62 - 2^62 - 1 = 3. */
  cell_tensor *r = NULL;
  CHECK_OK(cell_op_pad(t, 1, S(P(62), -P(62) - 1), 0, &r));
  CHECK(r && cell_tensor_dim(r, 1) == 3);
  cell_tensor_release(r);

  /* matmul's batch dims. */
  cell_tensor *a = NULL, *b = NULL;
  REQUIRE_OK(cell_k_expand(one, 4, S(P(40), 1, 1, 1), &a));
  REQUIRE_OK(cell_k_expand(one, 4, S(1, P(40), 1, 1), &b));
  FAILS(cell_op_matmul(a, b, o_), CELL_ERR_VALUE, "matmul: shape [1099511627776, 1099511627776] " TOO_LARGE);
  cell_tensor_release(a);
  cell_tensor_release(b);

  /* conv2d's output. */
  cell_tensor *x = NULL, *w = NULL;
  REQUIRE_OK(cell_k_expand(one, 4, S(1, 1, P(30), P(29)), &x));
  REQUIRE_OK(cell_k_expand(one, 4, S(P(29), 1, 1, 1), &w));
  FAILS(cell_op_conv2d(x, w, NULL, NULL, NULL, NULL, 1, o_), CELL_ERR_VALUE,
        "conv2d: input (1, 1, 1073741824, 536870912) with weight (536870912, 1, 1, 1) gives an output");
  cell_tensor_release(x);
  cell_tensor_release(w);

  /* conv3d's output and conv_transpose3d's. */
  REQUIRE_OK(cell_k_expand(one, 5, S(1, 1, P(20), P(20), P(19)), &x));
  REQUIRE_OK(cell_k_expand(one, 5, S(P(10), 1, 1, 1, 1), &w));
  FAILS(cell_op_conv3d(x, w, NULL, NULL, NULL, NULL, 1, o_), CELL_ERR_VALUE,
        "conv3d: input (1, 1, 1048576, 1048576, 524288) with weight (1024, 1, 1, 1, 1) gives an output");
  cell_tensor_release(w);
  REQUIRE_OK(cell_k_expand(one, 5, S(1, P(10), 1, 1, 1), &w));
  FAILS(cell_op_conv_transpose3d(x, w, NULL, S(P(30), 1, 1), NULL, NULL, NULL, 1, o_), CELL_ERR_VALUE,
        "conv_transpose3d: input (1, 1, 1048576, 1048576, 524288) with weight (1, 1024, 1, 1, 1) gives an "
        "output");
  cell_tensor_release(x);
  cell_tensor_release(w);
  REQUIRE_OK(cell_k_expand(one, 5, S(1, 1, P(21), P(21), 1), &x));
  REQUIRE_OK(cell_k_expand(one, 5, S(1, 1, 1, 1, 1), &w));
  FAILS(cell_op_conv_transpose3d(x, w, NULL, S(P(30), P(30), P(30)), NULL, NULL, NULL, 1, o_),
        CELL_ERR_VALUE, "too large for a tensor");
  cell_tensor_release(x);
  cell_tensor_release(w);

  cell_tensor_release(big);
  cell_tensor_release(one);
  cell_tensor_release(t);
}

static void test_creation(void) {
  const int64_t *huge = S(P(62), P(62));
  FAILS(cell_tensor_empty(CELL_DTYPE_F32, 2, huge, o_), CELL_ERR_VALUE, "tensor: shape [4611686018427387904, 4611686018427387904] " TOO_LARGE);
  FAILS(cell_tensor_full(CELL_DTYPE_F32, 3, S(0, P(62), P(62)), 1, o_), CELL_ERR_VALUE, "tensor: shape [0, 4611686018427387904");
  FAILS(cell_tensor_rand(CELL_DTYPE_F32, 2, huge, o_), CELL_ERR_VALUE, "rand: shape");
  FAILS(cell_tensor_randn(CELL_DTYPE_F32, 2, huge, o_), CELL_ERR_VALUE, "randn: shape");
  FAILS(cell_tensor_randint(0, 5, CELL_DTYPE_I64, 2, huge, o_), CELL_ERR_VALUE, "randint: shape");
  FAILS(cell_tensor_eye(P(40), P(40), CELL_DTYPE_F32, o_), CELL_ERR_VALUE, "eye: shape [1099511627776, 1099511627776] " TOO_LARGE);
  FAILS(cell_tensor_eye(0, INT64_MAX, CELL_DTYPE_F32, o_), CELL_ERR_VALUE, "eye: shape [0, 9223372036854775807]");
  FAILS(cell_tensor_linspace(0, 1, P(62), CELL_DTYPE_F32, o_), CELL_ERR_VALUE, "linspace: shape [4611686018427387904] " TOO_LARGE);
  FAILS(cell_tensor_arange(0, 0x1p62, 1, CELL_DTYPE_F32, o_), CELL_ERR_VALUE, "more than a tensor can hold (1152921504606846975)");
  /* Within the bound, too big for memory: MemoryError. */
  FAILS(cell_tensor_empty(CELL_DTYPE_F64, 1, S(CELL_MAX_NUMEL), o_), CELL_ERR_MEMORY, "out of memory allocating 9223372036854775800 bytes");
  /* wrap: the shape, and the reach of the strides. */
  float buf[4] = {0};
  FAILS(cell_tensor_wrap(buf, CELL_DTYPE_F32, 2, S(P(62) + 4, 4), NULL, NULL, NULL, o_), CELL_ERR_VALUE, "wrap: shape [4611686018427387908, 4] " TOO_LARGE);
  FAILS(cell_tensor_wrap(buf, CELL_DTYPE_F32, 2, S(2, 2), S(P(62), 1), NULL, NULL, o_), CELL_ERR_VALUE, "wrap: strides [4611686018427387904, 1] over shape [2, 2] reach too far");
  FAILS(cell_tensor_wrap(buf, CELL_DTYPE_F32, 1, S(2), S(INT64_MIN), NULL, NULL, o_), CELL_ERR_VALUE, "reach too far");
  cell_tensor *t = NULL;
  CHECK_OK(cell_tensor_wrap(buf, CELL_DTYPE_F32, 2, S(2, 2), S(-2, 1), NULL, NULL, &t));
  cell_tensor_release(t);
  t = NULL;
  CHECK_OK(cell_tensor_wrap(buf, CELL_DTYPE_F32, 2, S(0, 2), S(INT64_MAX, 1), NULL, NULL, &t));
  CHECK(t && cell_tensor_numel(t) == 0);
  cell_tensor_release(t);
}

static void test_threads(void) {
  int before = cell_get_num_threads();
  const int bad[] = {0, -1, CELL_MAX_THREADS + 1, 65536, 1000000000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(cell_set_num_threads(bad[i]) == CELL_ERR_VALUE);
    CHECK(cell_get_num_threads() == before);
  }
  CHECK_MSG("set_num_threads: n must be an integer in [1, 1024], but got 1000000000");
  CHECK_OK(cell_set_num_threads(CELL_MAX_THREADS));
  CHECK(cell_get_num_threads() == CELL_MAX_THREADS);
  CHECK_OK(cell_set_num_threads(before));
}

void test_shape_overflow_all(void) {
  test_helpers();
  test_views_and_results();
  test_creation();
  test_threads();
}
