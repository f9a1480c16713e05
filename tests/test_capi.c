/* test_capi.c - the public C API under misuse, as an embedding host might
 * get it wrong: every function of cell.h and cell_ffi.h called with NULL
 * handles, NULL outputs, bad dtypes, bad op codes, mismatched shapes and
 * out-of-range dimensions. Each must return the documented status with a
 * message naming the op, leave *out untouched, leak nothing and never
 * crash. Also: host memory wrapped without a copy (cell_tensor_wrap) and
 * its release callback, the accessors' NULL behaviour, the allocation
 * counts of a steady inference loop, and the BLAS gemv path (one row or
 * one column of output) against products computed by hand. */
#include "check.h"
#include "cell_device.h"

#define S(...) ((const int64_t[]){__VA_ARGS__})

/* What a failed call must leave in *out: this, untouched. */
static cell_tensor *const SENTINEL = (cell_tensor *)(uintptr_t)0x5e5e5e50;

/* expr fails with status st, the message holds word, and *out (when the
 * call has one: pass SENTINEL's slot) is untouched. */
#define BAD(expr, st, word)                                                                \
  do {                                                                                     \
    cell_error_clear();                                                                    \
    cell_status got_ = (expr);                                                             \
    CHECKF(got_ == (st) && cell_last_status() == (st) && strstr(cell_last_error(), word),  \
           "status %s (want %s), message \"%s\" (want \"%s\")", cell_status_name(got_),    \
           cell_status_name(st), cell_last_error(), word);                                 \
    CHECKF(out == SENTINEL, "*out was written on failure");                                \
    out = SENTINEL;                                                                        \
  } while (0)

static cell_tensor *out = SENTINEL;

static cell_tensor *mk(cell_dtype dt, int nd, const int64_t *sh) {
  cell_tensor *t = NULL;
  if (cell_tensor_full(dt, nd, sh, 1, &t) != CELL_OK) return NULL;
  return t;
}

/* --- errors, dtypes, accessors ------------------------------------------------ */

static void test_errors_and_dtypes(void) {
  CHECK(cell_error(CELL_ERR_INDEX, "host: level %d is missing", 3) == CELL_ERR_INDEX);
  CHECK(cell_last_status() == CELL_ERR_INDEX && strcmp(cell_last_error(), "host: level 3 is missing") == 0);
  cell_error_clear();
  CHECK(cell_last_status() == CELL_OK && cell_last_error()[0] == '\0');
  CHECK(strcmp(cell_status_name(CELL_OK), "OK") == 0);
  CHECK(strcmp(cell_status_name(CELL_ERR_INTERRUPT), "KeyboardInterrupt") == 0);
  CHECK(strcmp(cell_status_name((cell_status)99), "RuntimeError") == 0);
  CHECK(strcmp(cell_status_name((cell_status)-1), "RuntimeError") == 0);
  /* A long message is cut, not overflowed. */
  char big[4000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  cell_error(CELL_ERR_VALUE, "%s", big);
  CHECK(strlen(cell_last_error()) == 1023);
  cell_error_clear();

  CHECK(strcmp(cell_dtype_name((cell_dtype)99), "Unknown") == 0);
  CHECK(strcmp(cell_dtype_name((cell_dtype)-1), "Unknown") == 0);
  CHECK(cell_dtype_size((cell_dtype)99) == 0 && cell_dtype_size(CELL_DTYPE_BF16) == 2);
  CHECK(!cell_dtype_is_float((cell_dtype)99) && cell_dtype_is_float(CELL_DTYPE_F16));
  CHECK(cell_dtype_from_name(NULL) == CELL_DTYPE_COUNT);
  CHECK(cell_dtype_from_name("float") == CELL_DTYPE_COUNT);
  CHECK(cell_dtype_from_name("BFloat16") == CELL_DTYPE_BF16);
  CHECK(cell_dtype_promote((cell_dtype)99, CELL_DTYPE_F32) == CELL_DTYPE_COUNT);
  CHECK(cell_dtype_promote(CELL_DTYPE_F32, (cell_dtype)-3) == CELL_DTYPE_COUNT);
  CHECK(cell_dtype_promote(CELL_DTYPE_I8, CELL_DTYPE_U8) == CELL_DTYPE_I16);
  CHECK(cell_dtype_promote_scalar(CELL_DTYPE_I32, 1) == CELL_DTYPE_F32);

  /* NULL handles: the accessors never fail and never crash. */
  CHECK(cell_tensor_ndim(NULL) == 0 && cell_tensor_dim(NULL, 0) == 0);
  CHECK(cell_tensor_stride_of(NULL, 0) == 0 && cell_tensor_numel(NULL) == 0);
  CHECK(cell_tensor_dtype(NULL) == CELL_DTYPE_COUNT && !cell_tensor_is_contiguous(NULL));
  CHECK(cell_tensor_data_ptr(NULL) == NULL && cell_tensor_shape(NULL) == NULL);
  CHECK(cell_tensor_strides(NULL) == NULL && cell_tensor_nbytes(NULL) == 0);
  CHECK(cell_tensor_version(NULL) == 0);
  CHECK(!cell_tensor_requires_grad(NULL) && cell_tensor_is_leaf(NULL));
  CHECK(cell_tensor_grad_fn_name(NULL) == NULL);
  cell_tensor_retain(NULL);
  cell_tensor_release(NULL);
  cell_tensor_remove_hook(NULL, 1);
  cell_alloc_get_stats(NULL);
  CHECK(strcmp(cell_binop_name((cell_binop)99), "?") == 0);
  CHECK(strcmp(cell_unop_name((cell_unop)-1), "?") == 0);
  CHECK(cell_autograd_node_names(NULL, 0) >= 0);

  cell_tensor *t = mk(CELL_DTYPE_F32, 2, S(2, 3));
  CHECK(cell_tensor_dim(t, 2) == 0 && cell_tensor_dim(t, -1) == 0 && cell_tensor_dim(t, 1) == 3);
  CHECK(cell_tensor_stride_of(t, 5) == 0 && cell_tensor_stride_of(t, 0) == 3);
  cell_tensor_release(t);
}

/* --- creation -------------------------------------------------------------------- */

static void test_creation(void) {
  const int64_t *sh = S(2, 3);
  BAD(cell_tensor_empty(CELL_DTYPE_F32, 2, sh, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_empty(CELL_DTYPE_F32, 2, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_empty((cell_dtype)42, 2, sh, &out), CELL_ERR_TYPE, "dtype 42");
  BAD(cell_tensor_empty((cell_dtype)-1, 2, sh, &out), CELL_ERR_TYPE, "dtype");
  BAD(cell_tensor_empty(CELL_DTYPE_F32, -1, sh, &out), CELL_ERR_VALUE, "dimensions");
  BAD(cell_tensor_empty(CELL_DTYPE_F32, CELL_MAX_DIMS + 1, S(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), &out),
      CELL_ERR_VALUE, "at most 16");
  BAD(cell_tensor_empty(CELL_DTYPE_F32, 2, S(2, -3), &out), CELL_ERR_VALUE, "negative size -3");
  BAD(cell_tensor_empty(CELL_DTYPE_F64, 3, S(INT64_C(1) << 30, INT64_C(1) << 30, INT64_C(1) << 20), &out),
      CELL_ERR_VALUE, "shape [1073741824, 1073741824, 1048576] is too large");
  BAD(cell_tensor_full(CELL_DTYPE_F32, 2, NULL, 1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_full(CELL_DTYPE_COUNT, 2, sh, 1, &out), CELL_ERR_TYPE, "dtype");
  BAD(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 1, NULL), CELL_ERR_VALUE, "NULL");
  /* A scalar needs no shape. */
  CHECK_OK(cell_tensor_empty(CELL_DTYPE_I64, 0, NULL, &out));
  CHECK(cell_tensor_ndim(out) == 0 && cell_tensor_numel(out) == 1);
  cell_tensor_release(out);
  out = SENTINEL;

  BAD(cell_tensor_arange(0, 5, 1, CELL_DTYPE_F32, NULL), CELL_ERR_VALUE, "arange");
  BAD(cell_tensor_arange(0, 5, 0, CELL_DTYPE_F32, &out), CELL_ERR_VALUE, "step must not be zero");
  BAD(cell_tensor_arange(0, INFINITY, 1, CELL_DTYPE_F32, &out), CELL_ERR_VALUE, "finite");
  BAD(cell_tensor_arange(0, NAN, 1, CELL_DTYPE_F32, &out), CELL_ERR_VALUE, "finite");
  BAD(cell_tensor_arange(0, 5, 1, (cell_dtype)77, &out), CELL_ERR_TYPE, "dtype");
  BAD(cell_tensor_arange(0, 1e300, 1e-300, CELL_DTYPE_F32, &out), CELL_ERR_VALUE, "more than a tensor can hold");
  BAD(cell_tensor_linspace(0, 1, -2, CELL_DTYPE_F32, &out), CELL_ERR_VALUE, "-2");
  BAD(cell_tensor_linspace(0, 1, 5, CELL_DTYPE_F32, NULL), CELL_ERR_VALUE, "linspace");
  BAD(cell_tensor_linspace(0, 1, 5, (cell_dtype)12, &out), CELL_ERR_TYPE, "dtype");
  BAD(cell_tensor_eye(-1, 2, CELL_DTYPE_F32, &out), CELL_ERR_VALUE, "n=-1");
  BAD(cell_tensor_eye(2, 2, CELL_DTYPE_F32, NULL), CELL_ERR_VALUE, "eye");
  BAD(cell_tensor_eye(2, 2, (cell_dtype)12, &out), CELL_ERR_TYPE, "dtype");
  BAD(cell_tensor_rand(CELL_DTYPE_I32, 2, sh, &out), CELL_ERR_TYPE, "floating");
  BAD(cell_tensor_rand(CELL_DTYPE_F32, 2, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_rand(CELL_DTYPE_F32, 2, sh, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_randn(CELL_DTYPE_BOOL, 2, sh, &out), CELL_ERR_TYPE, "floating");
  BAD(cell_tensor_randn(CELL_DTYPE_F32, 2, S(2, -1), &out), CELL_ERR_VALUE, "negative");
  BAD(cell_tensor_randint(5, 5, CELL_DTYPE_I64, 2, sh, &out), CELL_ERR_VALUE, "high");
  BAD(cell_tensor_randint(0, 5, CELL_DTYPE_BOOL, 2, sh, &out), CELL_ERR_TYPE, "randint");
  BAD(cell_tensor_randint(0, 5, CELL_DTYPE_I64, 2, NULL, &out), CELL_ERR_VALUE, "NULL");

  /* The device authors' allocation (cell_device.h): on the host outside a
   * device's kernel. */
  BAD(cell_tensor_new_contig(CELL_DTYPE_F32, 2, sh, NULL), CELL_ERR_VALUE, "tensor: NULL output");
  BAD(cell_tensor_new_contig(CELL_DTYPE_F32, 2, NULL, &out), CELL_ERR_VALUE, "NULL shape");
  BAD(cell_tensor_new_contig((cell_dtype)42, 2, sh, &out), CELL_ERR_TYPE, "tensor: unknown dtype 42");
  BAD(cell_tensor_new_contig(CELL_DTYPE_F32, 2, S(2, -3), &out), CELL_ERR_VALUE, "negative size -3");
  BAD(cell_tensor_new_contig(CELL_DTYPE_F64, 3, S(INT64_C(1) << 30, INT64_C(1) << 30, INT64_C(1) << 20), &out),
      CELL_ERR_VALUE, "shape [1073741824, 1073741824, 1048576] is too large");
  CHECK_OK(cell_tensor_new_contig(CELL_DTYPE_F32, 2, sh, &out));
  CHECK(cell_tensor_device(out) == 0 && cell_tensor_is_contiguous(out) && cell_tensor_numel(out) == 6 &&
        cell_tensor_dim(out, 1) == 3);
  cell_tensor_release(out);
  out = SENTINEL;
}

/* --- host memory without a copy ------------------------------------------------- */

typedef struct {
  int calls;
  void *data;
} release_log;

static void log_release(void *ctx, void *data) {
  release_log *r = ctx;
  r->calls++;
  r->data = data;
}

static void test_wrap_contract(void) {
  float frame[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  release_log log = {0, NULL};
  cell_tensor *t = NULL, *row = NULL, *sum = NULL;
  REQUIRE_OK(cell_tensor_wrap(frame, CELL_DTYPE_F32, 2, S(2, 4), NULL, log_release, &log, &t));
  CHECK(cell_tensor_data_ptr(t) == (void *)frame && cell_tensor_is_contiguous(t));
  CHECK(cell_tensor_nbytes(t) == sizeof frame);
  /* The engine computes on the host's bytes, and writes into them. */
  REQUIRE_OK(cell_op_reduce(CELL_RED_SUM, t, 0, NULL, 0, &sum));
  double v = 0;
  CHECK_OK(cell_tensor_item(sum, &v));
  CHECK(v == 36);
  cell_tensor_release(sum);
  frame[1][3] = 100; /* a host write is seen at once */
  CHECK_OK(cell_tensor_get(t, S(1, 3), &v));
  CHECK(v == 100);
  CHECK_OK(cell_op_binary_scalar_(CELL_OP_MUL, t, 2, 0));
  CHECK(frame[0][1] == 4 && frame[1][3] == 200);
  /* A view keeps the memory: release runs once, with the last reference. */
  REQUIRE_OK(cell_tensor_select(t, 0, 1, &row));
  cell_tensor_release(t);
  CHECK(log.calls == 0);
  CHECK_OK(cell_tensor_fill_(row, -1));
  CHECK(frame[1][0] == -1 && frame[0][0] == 2);
  cell_tensor_release(row);
  CHECK(log.calls == 1 && log.data == (void *)frame);

  /* Strides: a column-major host matrix (3 x 2, stored by columns). */
  double colmajor[6] = {1, 2, 3, 4, 5, 6}; /* [[1, 4], [2, 5], [3, 6]] */
  REQUIRE_OK(cell_tensor_wrap(colmajor, CELL_DTYPE_F64, 2, S(3, 2), S(1, 3), NULL, NULL, &t));
  CHECK(!cell_tensor_is_contiguous(t));
  CHECK_OK(cell_tensor_get(t, S(2, 1), &v));
  CHECK(v == 6);
  cell_tensor *c = NULL;
  REQUIRE_OK(cell_tensor_contiguous(t, &c));
  CHECK(cell_tensor_data_ptr(c) != (void *)colmajor && ((double *)cell_tensor_data_ptr(c))[1] == 4);
  cell_tensor_release(c);
  cell_tensor_release(t);

  /* Misuse: nothing made, release never called, the memory still the host's. */
  log.calls = 0;
  BAD(cell_tensor_wrap(NULL, CELL_DTYPE_F32, 1, S(4), NULL, log_release, &log, &out), CELL_ERR_VALUE, "wrap");
  BAD(cell_tensor_wrap(frame, CELL_DTYPE_F32, 1, NULL, NULL, log_release, &log, &out), CELL_ERR_VALUE, "wrap");
  BAD(cell_tensor_wrap(frame, CELL_DTYPE_F32, 1, S(4), NULL, log_release, &log, NULL), CELL_ERR_VALUE, "wrap");
  BAD(cell_tensor_wrap(frame, (cell_dtype)40, 1, S(4), NULL, log_release, &log, &out), CELL_ERR_TYPE, "dtype 40");
  BAD(cell_tensor_wrap(frame, CELL_DTYPE_F32, 2, S(2, -4), NULL, log_release, &log, &out), CELL_ERR_VALUE, "negative");
  BAD(cell_tensor_wrap(frame, CELL_DTYPE_F32, 17, S(1), NULL, log_release, &log, &out), CELL_ERR_VALUE, "at most");
  CHECK(log.calls == 0);
  /* Out of memory for the header: a MemoryError, and release not called. */
  cell_alloc_fail_after(1);
  BAD(cell_tensor_wrap(frame, CELL_DTYPE_F32, 1, S(8), NULL, log_release, &log, &out), CELL_ERR_MEMORY, "memory");
  cell_alloc_fail_after(0);
  CHECK(log.calls == 0);
}

/* --- elements and views ------------------------------------------------------------- */

static void test_elements_and_views(void) {
  cell_tensor *t = mk(CELL_DTYPE_F32, 2, S(2, 3)), *one = mk(CELL_DTYPE_I64, 1, S(1));
  double v;
  int64_t iv;
  CHECK(cell_tensor_get(NULL, S(0, 0), &v) == CELL_ERR_VALUE);
  CHECK(cell_tensor_get(t, NULL, &v) == CELL_ERR_VALUE);
  CHECK(cell_tensor_get(t, S(2, 0), &v) == CELL_ERR_INDEX && strstr(cell_last_error(), "index 2"));
  CHECK(cell_tensor_get(t, S(0, -1), &v) == CELL_ERR_INDEX);
  CHECK(cell_tensor_set(NULL, S(0, 0), 1) == CELL_ERR_VALUE);
  CHECK(cell_tensor_set(t, S(0, 3), 1) == CELL_ERR_INDEX && strstr(cell_last_error(), "size 3"));
  CHECK(cell_tensor_item(NULL, &v) == CELL_ERR_VALUE);
  CHECK(cell_tensor_item(t, &v) == CELL_ERR_VALUE && strstr(cell_last_error(), "[2, 3]"));
  CHECK(cell_tensor_item_i64(t, &iv) == CELL_ERR_VALUE);
  CHECK(cell_tensor_item_i64(NULL, &iv) == CELL_ERR_VALUE);
  CHECK_OK(cell_tensor_item_i64(one, &iv));
  CHECK(iv == 1);
  CHECK(cell_tensor_item(t, NULL) == CELL_ERR_VALUE);
  CHECK(cell_tensor_get(t, S(0, 0), NULL) == CELL_ERR_VALUE);

  BAD(cell_tensor_reshape(NULL, 1, S(6), &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_reshape(t, 1, S(6), NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_reshape(t, 1, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_reshape(t, 2, S(4, 2), &out), CELL_ERR_VALUE, "[2, 3]");
  BAD(cell_tensor_reshape(t, 2, S(-1, -1), &out), CELL_ERR_VALUE, "only one");
  BAD(cell_tensor_reshape(t, -2, S(6), &out), CELL_ERR_VALUE, "dimensions");
  BAD(cell_tensor_view(NULL, 1, S(6), &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_view(t, 1, S(7), &out), CELL_ERR_VALUE, "[7]");
  BAD(cell_tensor_transpose(NULL, 0, 1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_transpose(t, 0, 1, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_transpose(t, 0, 2, &out), CELL_ERR_INDEX, "dimension 2");
  BAD(cell_tensor_transpose(t, -1, 0, &out), CELL_ERR_INDEX, "dimension -1");
  BAD(cell_tensor_permute(NULL, (const int[]){1, 0}, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_permute(t, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_permute(t, (const int[]){0, 0}, &out), CELL_ERR_VALUE, "more than once");
  BAD(cell_tensor_permute(t, (const int[]){0, 5}, &out), CELL_ERR_INDEX, "5");
  BAD(cell_tensor_squeeze(NULL, -1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_squeeze(t, 2, &out), CELL_ERR_INDEX, "dimension 2");
  BAD(cell_tensor_unsqueeze(NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_unsqueeze(t, 3, &out), CELL_ERR_INDEX, "dimension 3");
  BAD(cell_tensor_unsqueeze(t, -1, &out), CELL_ERR_INDEX, "dimension -1");
  BAD(cell_tensor_flatten(NULL, 0, 1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_flatten(t, 1, 0, &out), CELL_ERR_VALUE, "after");
  BAD(cell_tensor_flatten(t, 0, 2, &out), CELL_ERR_INDEX, "dimension 2");
  BAD(cell_tensor_narrow(NULL, 0, 0, 1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_narrow(t, 1, 2, 2, &out), CELL_ERR_INDEX, "narrow");
  BAD(cell_tensor_narrow(t, 1, -1, 1, &out), CELL_ERR_INDEX, "narrow");
  BAD(cell_tensor_narrow(t, 1, 0, -1, &out), CELL_ERR_INDEX, "narrow");
  BAD(cell_tensor_narrow(t, 4, 0, 1, &out), CELL_ERR_INDEX, "dimension 4");
  BAD(cell_tensor_slice(NULL, 0, 0, 1, 1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_slice(t, 1, 0, 3, 0, &out), CELL_ERR_VALUE, "step");
  BAD(cell_tensor_slice(t, 1, 0, 4, 1, &out), CELL_ERR_INDEX, "[0, 4)");
  BAD(cell_tensor_slice(t, 1, 2, 1, 1, &out), CELL_ERR_INDEX, "slice");
  BAD(cell_tensor_select(NULL, 0, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_select(t, 0, 2, &out), CELL_ERR_INDEX, "index 2");
  BAD(cell_tensor_select(t, 0, -1, &out), CELL_ERR_INDEX, "index -1");
  BAD(cell_tensor_select(one, 1, 0, &out), CELL_ERR_INDEX, "dimension 1");
  BAD(cell_tensor_expand(NULL, 2, S(2, 3), &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_expand(t, 2, NULL, &out), CELL_ERR_VALUE, "expand");
  BAD(cell_tensor_expand(t, 2, S(4, 3), &out), CELL_ERR_VALUE, "[4, 3]");
  BAD(cell_tensor_expand(t, 1, S(3), &out), CELL_ERR_VALUE, "expand");
  BAD(cell_tensor_contiguous(NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_contiguous(t, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_clone(NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_clone(t, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_astype(NULL, CELL_DTYPE_F64, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_astype(t, (cell_dtype)50, &out), CELL_ERR_TYPE, "dtype 50");
  BAD(cell_tensor_astype(t, CELL_DTYPE_F64, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_detach(NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_tensor_detach(t, NULL), CELL_ERR_VALUE, "NULL");

  /* In place. */
  cell_tensor *b = mk(CELL_DTYPE_F32, 1, S(4));
  CHECK(cell_tensor_copy_(NULL, t) == CELL_ERR_VALUE);
  CHECK(cell_tensor_copy_(t, NULL) == CELL_ERR_VALUE);
  CHECK(cell_tensor_copy_(t, b) == CELL_ERR_VALUE && strstr(cell_last_error(), "[4]") &&
        strstr(cell_last_error(), "[2, 3]"));
  CHECK(cell_tensor_fill_(NULL, 1) == CELL_ERR_VALUE);
  char *text = NULL;
  CHECK(cell_tensor_format(NULL, &text) == CELL_ERR_VALUE && text == NULL);
  CHECK(cell_tensor_format(t, NULL) == CELL_ERR_VALUE);
  cell_tensor_release(b);
  cell_tensor_release(one);
  cell_tensor_release(t);
}

/* --- ops --------------------------------------------------------------------------------- */

static void test_ops(void) {
  cell_tensor *a = mk(CELL_DTYPE_F32, 2, S(2, 3)), *b = mk(CELL_DTYPE_F32, 2, S(3, 2));
  cell_tensor *bo = mk(CELL_DTYPE_BOOL, 2, S(2, 3)), *i32 = mk(CELL_DTYPE_I32, 2, S(2, 3));
  cell_tensor *v4 = mk(CELL_DTYPE_F32, 1, S(4)), *s0 = mk(CELL_DTYPE_F32, 0, NULL);
  cell_tensor *idx = mk(CELL_DTYPE_I64, 2, S(2, 3)), *fidx = mk(CELL_DTYPE_F32, 1, S(2));

  /* elementwise */
  BAD(cell_op_binary(CELL_OP_ADD, NULL, a, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary(CELL_OP_ADD, a, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary(CELL_OP_ADD, a, a, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary((cell_binop)99, a, a, &out), CELL_ERR_VALUE, "unknown op 99");
  BAD(cell_op_binary((cell_binop)-1, a, a, &out), CELL_ERR_VALUE, "unknown op -1");
  BAD(cell_op_binary(CELL_OP_ADD, a, b, &out), CELL_ERR_VALUE, "[2, 3] and [3, 2]");
  BAD(cell_op_binary(CELL_OP_SUB, bo, bo, &out), CELL_ERR_TYPE, "Bool");
  BAD(cell_op_binary_(CELL_OP_ADD, NULL, a), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary_(CELL_OP_ADD, a, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary_((cell_binop)99, a, a), CELL_ERR_VALUE, "unknown op");
  BAD(cell_op_binary_(CELL_OP_ADD, v4, a), CELL_ERR_VALUE, "[2, 3]");
  BAD(cell_op_binary_(CELL_OP_ADD, i32, a), CELL_ERR_TYPE, "Int32");
  BAD(cell_op_binary_scalar(CELL_OP_ADD, NULL, 1, 0, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary_scalar(CELL_OP_ADD, a, 1, 0, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary_scalar((cell_binop)40, a, 1, 0, 0, &out), CELL_ERR_VALUE, "unknown op");
  BAD(cell_op_binary_scalar_(CELL_OP_ADD, NULL, 1, 0), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_binary_scalar_(CELL_OP_ADD, i32, 1.5, 1), CELL_ERR_TYPE, "Int32");
  BAD(cell_op_binary_scalar_((cell_binop)40, a, 1, 0), CELL_ERR_VALUE, "unknown op");
  /* PyTorch's "Integers to negative integer powers are not allowed" */
  BAD(cell_op_binary_scalar(CELL_OP_POW, i32, -1, 0, 0, &out), CELL_ERR_RUNTIME, "negative integer powers");
  BAD(cell_op_binary_scalar_(CELL_OP_POW, i32, -2, 0), CELL_ERR_RUNTIME, "Int32 tensor ^ -2");
  BAD(cell_op_unary(CELL_OP_EXP, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_unary(CELL_OP_EXP, a, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_unary((cell_unop)99, a, &out), CELL_ERR_VALUE, "unknown op 99");
  BAD(cell_op_unary_(CELL_OP_EXP, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_unary_((cell_unop)-5, a), CELL_ERR_VALUE, "unknown op");
  BAD(cell_op_unary_(CELL_OP_EXP, i32), CELL_ERR_TYPE, "Int32");
  BAD(cell_op_clamp(NULL, 1, 0, 1, 1, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_clamp(a, 1, 0, 1, 1, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_where(NULL, a, a, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_where(bo, a, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_where(bo, a, a, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_where(bo, a, b, &out), CELL_ERR_VALUE, "[3, 2]");
  BAD(cell_op_masked_fill(NULL, bo, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_masked_fill(a, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_masked_fill(a, bo, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_masked_fill(a, v4, 0, &out), CELL_ERR_TYPE, "Bool");
  cell_tensor *bo4 = mk(CELL_DTYPE_BOOL, 1, S(4));
  BAD(cell_op_masked_fill(a, bo4, 0, &out), CELL_ERR_VALUE, "[4]");
  cell_tensor_release(bo4);

  /* reductions */
  BAD(cell_op_reduce(CELL_RED_SUM, NULL, 0, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_reduce(CELL_RED_SUM, a, 0, NULL, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_reduce((cell_redop)9, a, 0, NULL, 0, &out), CELL_ERR_VALUE, "unknown reduction 9");
  BAD(cell_op_reduce(CELL_RED_SUM, a, 1, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_reduce(CELL_RED_SUM, a, -1, (const int[]){0}, 0, &out), CELL_ERR_VALUE, ">= 0");
  BAD(cell_op_reduce(CELL_RED_SUM, a, 1, (const int[]){2}, 0, &out), CELL_ERR_INDEX, "dimension 2");
  BAD(cell_op_reduce(CELL_RED_SUM, a, 2, (const int[]){1, 1}, 0, &out), CELL_ERR_VALUE, "more than once");
  cell_tensor *empty = NULL;
  REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_F32, 2, S(0, 3), &empty));
  BAD(cell_op_reduce(CELL_RED_MAX, empty, 0, NULL, 0, &out), CELL_ERR_VALUE, "zero elements");
  cell_tensor *vals = SENTINEL, *ixs = SENTINEL;
  CHECK(cell_op_max_dim(NULL, 0, 0, 0, 0, &vals, &ixs) == CELL_ERR_VALUE);
  CHECK(cell_op_max_dim(a, 0, 0, 0, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK(cell_op_max_dim(a, 2, 0, 0, 0, &vals, &ixs) == CELL_ERR_INDEX);
  CHECK(cell_op_max_dim(empty, 0, 0, 0, 0, &vals, &ixs) == CELL_ERR_VALUE);
  CHECK(vals == SENTINEL && ixs == SENTINEL);
  BAD(cell_op_argmax(NULL, 0, 0, 0, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_argmax(a, 0, 0, 0, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_argmax(a, 5, 0, 0, 0, &out), CELL_ERR_INDEX, "dimension 5");
  BAD(cell_op_argmax(empty, -1, 0, 0, 0, &out), CELL_ERR_VALUE, "zero elements");
  BAD(cell_op_var(NULL, 0, NULL, 1, 0, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_var(a, 0, NULL, 1, 0, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_var(a, 1, (const int[]){3}, 1, 0, 0, &out), CELL_ERR_INDEX, "dimension 3");
  BAD(cell_op_norm(NULL, 2, 0, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_norm(a, 2, 0, NULL, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_norm(a, 0, 0, NULL, 0, &out), CELL_ERR_VALUE, "norm"); /* 0 and -inf are the callers' */
  BAD(cell_op_norm(a, -INFINITY, 0, NULL, 0, &out), CELL_ERR_VALUE, "norm");
  BAD(cell_op_norm(empty, -1, 1, (const int[]){0}, 0, &out), CELL_ERR_VALUE, "-1 norm over zero elements");
  BAD(cell_op_norm(a, NAN, 0, NULL, 0, &out), CELL_ERR_VALUE, "norm");
  BAD(cell_op_cumsum(NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_cumsum(a, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_cumsum(a, 2, &out), CELL_ERR_INDEX, "dimension 2");

  /* linear algebra */
  BAD(cell_op_matmul(NULL, b, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_matmul(a, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_matmul(a, b, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_matmul(a, a, &out), CELL_ERR_VALUE, "[2, 3] and [2, 3] cannot be multiplied");
  BAD(cell_op_matmul(a, v4, &out), CELL_ERR_VALUE, "[2, 3] and [4]");
  BAD(cell_op_matmul(v4, s0, &out), CELL_ERR_VALUE, "at least one dimension");
  BAD(cell_op_matmul(bo, bo, &out), CELL_ERR_TYPE, "Bool");
  BAD(cell_op_mm(NULL, b, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_mm(a, v4, &out), CELL_ERR_VALUE, "2-D");
  BAD(cell_op_mm(a, a, &out), CELL_ERR_VALUE, "[2, 3] and [2, 3]");
  BAD(cell_op_bmm(NULL, a, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_bmm(a, b, &out), CELL_ERR_VALUE, "3-D");
  BAD(cell_op_dot(NULL, v4, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_dot(v4, a, &out), CELL_ERR_VALUE, "1-D");
  BAD(cell_op_dot(v4, fidx, &out), CELL_ERR_VALUE, "[4] and [2]");

  /* shape ops */
  cell_tensor *pair[2] = {a, b}, *holes[2] = {a, NULL};
  BAD(cell_op_cat(2, pair, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_cat(0, pair, 0, &out), CELL_ERR_VALUE, "non-empty");
  BAD(cell_op_cat(2, NULL, 0, &out), CELL_ERR_VALUE, "non-empty");
  BAD(cell_op_cat(2, holes, 0, &out), CELL_ERR_VALUE, "tensor 1 is NULL");
  BAD(cell_op_cat(2, pair, 0, &out), CELL_ERR_VALUE, "cat");
  BAD(cell_op_cat(2, pair, 5, &out), CELL_ERR_INDEX, "cat");
  BAD(cell_op_stack(2, pair, 0, &out), CELL_ERR_VALUE, "stack");
  BAD(cell_op_stack(-1, pair, 0, &out), CELL_ERR_VALUE, "non-empty");
  BAD(cell_op_stack(2, holes, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_gather(NULL, 0, idx, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_gather(a, 0, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_gather(a, 0, idx, 0, NULL), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_gather(a, 0, fidx, 0, &out), CELL_ERR_TYPE, "gather");
  BAD(cell_op_gather(a, 3, idx, 0, &out), CELL_ERR_INDEX, "gather");
  BAD(cell_op_gather(a, 0, idx, 0 - 5, &out), CELL_ERR_INDEX, "gather"); /* ids 1 - (-5) = 6 */
  BAD(cell_op_scatter(NULL, 0, idx, a, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_scatter(a, 0, idx, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_scatter(a, 0, fidx, a, 0, &out), CELL_ERR_TYPE, "scatter");
  BAD(cell_op_index_select(NULL, 0, idx, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_index_select(a, 0, idx, 0, &out), CELL_ERR_VALUE, "1-D");
  BAD(cell_op_index_select(a, 0, fidx, 0, &out), CELL_ERR_TYPE, "index_select");
  BAD(cell_op_tile(NULL, 1, S(2), &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_tile(a, 1, NULL, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_tile(a, 1, S(-2), &out), CELL_ERR_VALUE, "non-negative");
  BAD(cell_op_tile(a, 17, S(1), &out), CELL_ERR_VALUE, "repetitions");
  BAD(cell_op_repeat_interleave(NULL, 2, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_repeat_interleave(a, -1, 0, &out), CELL_ERR_VALUE, "non-negative");
  BAD(cell_op_repeat_interleave(a, 2, 7, &out), CELL_ERR_INDEX, "dimension 7");
  BAD(cell_op_pad(NULL, 1, S(1, 1), 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_pad(a, 1, NULL, 0, &out), CELL_ERR_VALUE, "NULL");
  BAD(cell_op_pad(a, 3, S(1, 1, 1, 1, 1, 1), 0, &out), CELL_ERR_VALUE, "pad");
  BAD(cell_op_pad(a, 1, S(-2, -2), 0, &out), CELL_ERR_VALUE, "pad");

  cell_tensor *list[4] = {a, b, bo, i32};
  cell_tensor *rest[4] = {v4, s0, idx, fidx};
  for (int i = 0; i < 4; i++) {
    cell_tensor_release(list[i]);
    cell_tensor_release(rest[i]);
  }
  cell_tensor_release(empty);
}

/* --- autograd ------------------------------------------------------------------------------ */

static cell_status no_hook(void *ud, const cell_tensor *g, cell_tensor **r) {
  (void)ud;
  (void)g;
  (void)r;
  return CELL_OK;
}

/* A replacement of another shape: [1] for a gradient of shape [3]. */
static cell_status resizing_hook(void *ud, const cell_tensor *g, cell_tensor **r) {
  (void)ud;
  (void)g;
  return cell_tensor_full(CELL_DTYPE_F32, 1, (const int64_t[]){1}, 1.0, r);
}

static void test_autograd_misuse(void) {
  cell_tensor *x = mk(CELL_DTYPE_F32, 1, S(3)), *n = mk(CELL_DTYPE_I64, 1, S(3)), *g = SENTINEL;
  int id = -7;
  CHECK(cell_tensor_set_requires_grad(NULL, 1) == CELL_ERR_VALUE);
  CHECK(cell_tensor_set_requires_grad(n, 1) == CELL_ERR_TYPE && strstr(cell_last_error(), "Int64"));
  CHECK(cell_tensor_register_hook(NULL, no_hook, NULL, NULL, &id) == CELL_ERR_VALUE);
  CHECK(cell_tensor_register_hook(x, no_hook, NULL, NULL, &id) != CELL_OK); /* x needs no grad */
  CHECK(cell_tensor_register_hook(x, NULL, NULL, NULL, &id) != CELL_OK);
  CHECK(id == -7);
  CHECK(cell_autograd_grad(NULL, NULL, 1, &x, &g) == CELL_ERR_VALUE);
  CHECK(cell_autograd_grad(x, NULL, 1, NULL, &g) == CELL_ERR_VALUE);
  CHECK(cell_autograd_grad(x, NULL, 1, &x, NULL) == CELL_ERR_VALUE);
  CHECK(cell_autograd_grad(x, NULL, -1, &x, &g) == CELL_ERR_VALUE && strstr(cell_last_error(), "-1"));
  CHECK(cell_autograd_grad(x, NULL, 1, &x, &g) == CELL_ERR_RUNTIME); /* no graph */
  CHECK(g == SENTINEL);
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  cell_tensor *y = NULL;
  REQUIRE_OK(cell_op_unary(CELL_OP_EXP, x, &y));
  CHECK(cell_op_unary_(CELL_OP_EXP, x) == CELL_ERR_RUNTIME &&
        strstr(cell_last_error(), "leaf Variable that requires grad is being used in an in-place"));
  CHECK(cell_tensor_set_requires_grad(y, 0) == CELL_ERR_RUNTIME && strstr(cell_last_error(), "leaf"));
  cell_tensor *bad_sens = mk(CELL_DTYPE_F32, 1, S(4));
  CHECK(cell_autograd_grad(y, bad_sens, 1, &x, &g) == CELL_ERR_VALUE && strstr(cell_last_error(), "[4]"));
  CHECK(g == SENTINEL);
  /* no sens for a non-scalar output: ones (MindSpore's sens_param = false) */
  REQUIRE_OK(cell_autograd_grad(y, NULL, 1, &x, &g));
  CHECK(g != SENTINEL && cell_tensor_numel(g) == 3);
  if (g != SENTINEL) cell_tensor_release(g);
  g = SENTINEL;
  /* a hook's replacement of another shape ends the pass, said as such */
  cell_tensor *y2 = NULL;
  REQUIRE_OK(cell_op_unary(CELL_OP_EXP, x, &y2));
  REQUIRE_OK(cell_tensor_register_hook(y2, resizing_hook, NULL, NULL, &id));
  CHECK(cell_autograd_grad(y2, NULL, 1, &x, &g) == CELL_ERR_RUNTIME &&
        strstr(cell_last_error(), "hook returned a gradient of shape [1] for a tensor of shape [3]"));
  CHECK(g == NULL); /* no gradient on failure */
  cell_tensor_release(y2);
  cell_tensor_release(bad_sens);
  cell_tensor_release(y);
  cell_tensor_release(n);
  cell_tensor_release(x);
}

/* --- the inference loop: allocation counts ------------------------------------------------- */

static void test_steady_loop_allocations(void) {
  int prev = cell_grad_set_enabled(0);
  cell_tensor *x = NULL, *w = NULL, *b = NULL;
  cell_set_seed(3);
  REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 2, S(1, 64), &x));
  REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 2, S(64, 32), &w));
  REQUIRE_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, S(32), &b));
  cell_alloc_stats s0, s1;
  for (int it = 0; it < 120; it++) {
    if (it == 20) cell_alloc_get_stats(&s0);
    cell_tensor *h = NULL, *z = NULL, *y = NULL;
    CHECK_OK(cell_op_matmul(x, w, &h));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, h, b, &z));
    CHECK_OK(cell_op_unary(CELL_OP_RELU, z, &y));
    cell_tensor_release(h);
    cell_tensor_release(z);
    cell_tensor_release(y);
  }
  cell_alloc_get_stats(&s1);
  CHECKF(s1.n_os == s0.n_os, "%llu allocations reached the OS after warm-up", s1.n_os - s0.n_os);
  CHECK(s1.in_use == s0.in_use && s1.n_alloc > s0.n_alloc);
  cell_tensor_release(x);
  cell_tensor_release(w);
  cell_tensor_release(b);
  cell_grad_set_enabled(prev);
}

/* --- gemv: one row or one column of output, every operand layout ---------------------------- */

/* C = A B with A m x k and B k x n, for A and B given row-major or as the
 * transpose of a row-major matrix, in float32 and float64, against the sum
 * computed here. The shapes are large enough for the BLAS backend. */
static void test_gemv_layouts(void) {
  const int64_t dims[2][3] = {{1, 96, 64}, {64, 96, 1}}; /* m, k, n */
  for (int d = 0; d < 2; d++) {
    int64_t m = dims[d][0], k = dims[d][1], n = dims[d][2];
    for (int dt = 0; dt < 2; dt++) {
      cell_dtype t = dt ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
      CHECK(strcmp(cell_gemm_backend_name(t, m, n, k), "blas") == 0);
      for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
          cell_tensor *a0 = NULL, *b0 = NULL, *a = NULL, *b = NULL, *c = NULL;
          REQUIRE_OK(cell_tensor_arange(0, (double)(m * k), 1, t, &a0));
          REQUIRE_OK(cell_tensor_arange(0, (double)(k * n), 1, t, &b0));
          /* a[i][p] = (i * k + p) % 7 - 3 either way: stored row-major, or
           * stored as the transpose and viewed back. */
          cell_tensor *ar = NULL, *br = NULL;
          REQUIRE_OK(cell_tensor_reshape(a0, 2, ta ? S(k, m) : S(m, k), &ar));
          REQUIRE_OK(cell_tensor_reshape(b0, 2, tb ? S(n, k) : S(k, n), &br));
          for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < k; p++)
              CHECK_OK(cell_tensor_set(ar, ta ? S(p, i) : S(i, p), (double)((i * k + p) % 7 - 3)));
          for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++)
              CHECK_OK(cell_tensor_set(br, tb ? S(j, p) : S(p, j), (double)((p * n + j) % 5 - 2)));
          if (ta) CHECK_OK(cell_tensor_transpose(ar, 0, 1, &a));
          else a = (cell_tensor_retain(ar), ar);
          if (tb) CHECK_OK(cell_tensor_transpose(br, 0, 1, &b));
          else b = (cell_tensor_retain(br), br);
          REQUIRE_OK(cell_op_matmul(a, b, &c));
          CHECK(cell_tensor_dim(c, 0) == m && cell_tensor_dim(c, 1) == n);
          int bad = 0;
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
              double want = 0, got = NAN;
              for (int64_t p = 0; p < k; p++)
                want += (double)((i * k + p) % 7 - 3) * (double)((p * n + j) % 5 - 2);
              cell_tensor_get(c, S(i, j), &got);
              if (got != want) bad++;
            }
          CHECKF(bad == 0, "%d wrong values for m=%lld n=%lld k=%lld %s ta=%d tb=%d", bad,
                 (long long)m, (long long)n, (long long)k, cell_dtype_name(t), ta, tb);
          cell_tensor *all[7] = {a0, b0, ar, br, a, b, c};
          for (int q = 0; q < 7; q++) cell_tensor_release(all[q]);
        }
    }
  }
  /* A vector operand with a stride (every other element of a row). */
  cell_tensor *row = NULL, *x = NULL, *w = NULL, *y = NULL;
  REQUIRE_OK(cell_tensor_arange(0, 200, 1, CELL_DTYPE_F32, &row));
  REQUIRE_OK(cell_tensor_slice(row, 0, 0, 200, 2, &x)); /* 0, 2, ..., 198: 100 values */
  cell_tensor *x2 = NULL;
  REQUIRE_OK(cell_tensor_unsqueeze(x, 0, &x2));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 2, S(100, 50), 1, &w));
  REQUIRE_OK(cell_op_matmul(x2, w, &y));
  double v = 0;
  CHECK_OK(cell_tensor_get(y, S(0, 49), &v));
  CHECK(v == 9900); /* 2 * (0 + 1 + ... + 99) */
  cell_tensor *rest[5] = {row, x, x2, w, y};
  for (int q = 0; q < 5; q++) cell_tensor_release(rest[q]);
}

/* --- the file API: NULL arguments --------------------------------------------------------- */

static void test_io_misuse(void) {
  cell_safetensors *st = (cell_safetensors *)(uintptr_t)0x5e5e5e50;
  CHECK(cell_safetensors_load(NULL, &st) == CELL_ERR_VALUE);
  CHECK(cell_safetensors_load("/nonexistent/x.safetensors", NULL) == CELL_ERR_VALUE);
  CHECK(cell_safetensors_load("/nonexistent/x.safetensors", &st) == CELL_ERR_VALUE &&
        strstr(cell_last_error(), "/nonexistent/x.safetensors"));
  CHECK(st == (cell_safetensors *)(uintptr_t)0x5e5e5e50);
  cell_safetensors_free(NULL);
  cell_tensor *t = mk(CELL_DTYPE_F32, 1, S(2));
  const char *names[1] = {"w"};
  CHECK(cell_safetensors_save(NULL, 1, names, &t, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK(cell_safetensors_save("/tmp/cell_capi.safetensors", 1, NULL, &t, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK(cell_safetensors_save("/tmp/cell_capi.safetensors", 1, names, NULL, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK(cell_safetensors_save("/tmp/cell_capi.safetensors", -1, names, &t, 0, NULL, NULL) == CELL_ERR_VALUE);
  CHECK(cell_safetensors_save("/tmp/cell_capi.safetensors", 1, names, &t, 1, NULL, NULL) == CELL_ERR_VALUE);
  cell_tensor *none[1] = {NULL};
  CHECK(cell_safetensors_save("/tmp/cell_capi.safetensors", 1, names, none, 0, NULL, NULL) == CELL_ERR_VALUE);
  out = SENTINEL;
  BAD(cell_idx_load(NULL, &out), CELL_ERR_VALUE, "");
  BAD(cell_idx_load("/nonexistent/x.idx", NULL), CELL_ERR_VALUE, "");
  BAD(cell_idx_load("/nonexistent/x.idx", &out), CELL_ERR_VALUE, "/nonexistent/x.idx");
  cell_tensor_release(t);
}

void test_capi_all(void) {
  test_errors_and_dtypes();
  test_creation();
  test_wrap_contract();
  test_elements_and_views();
  test_ops();
  test_autograd_misuse();
  test_steady_loop_allocations();
  test_gemv_layouts();
  test_io_misuse();
  cell_error_clear();
}
