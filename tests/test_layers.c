/* test_layers.c - what moved between layers keeps working: the strided-run
 * helper (core), reshape / flatten / full (ops), dot through the gemm
 * registry, and the public calls the binding now uses instead of engine
 * internals (custom backward nodes, element access, shape strings, owned
 * bytes). Expected values are worked by hand. */
#include "check.h"
#include "ops/kernels.h"

/* cell_load_run / cell_load_run_i64 / cell_store_run on strided and
 * contiguous runs of every dtype. */
static void test_runs(void) {
  for (int k = 0; k < NDT; k++) {
    cell_dtype dt = all_dtypes[k];
    int es = cell_dtype_size(dt);
    char buf[8 * 16];
    memset(buf, 0, sizeof buf);
    double in[5] = {1, 0, 3, 1, 2}, out[5] = {0};
    int64_t iout[5] = {0};
    for (int stride = 1; stride <= 3; stride += 2) { /* contiguous, then every third */
      int64_t s = (int64_t)es * stride;
      cell_store_run(dt, buf, s, 5, in);
      cell_load_run(dt, buf, s, 5, out);
      cell_load_run_i64(dt, buf, s, 5, iout);
      int ok = 1;
      for (int i = 0; i < 5; i++) {
        double want = dt == CELL_DTYPE_BOOL ? (in[i] != 0) : in[i];
        ok = ok && out[i] == want && iout[i] == (int64_t)want;
      }
      CHECKF(ok, "dtype %s stride %d", cell_dtype_name(dt), stride);
      /* the elements between a strided run's are untouched */
      if (stride == 3) CHECKF(cell_load_f64(dt, buf + es) == 0, "dtype %s gap", cell_dtype_name(dt));
    }
  }
}

static void test_moved_kernels(void) {
  int64_t s23[2] = {2, 3}, s6[1] = {6}, s32[2] = {3, 2};
  double v[6] = {1, 2, 3, 4, 5, 6};
  cell_tensor *a = from(CELL_DTYPE_F32, 2, s23, v), *t = NULL, *r = NULL, *f = NULL;
  REQUIRE_OK(cell_k_transpose(a, 0, 1, &t)); /* [[1,4],[2,5],[3,6]], not contiguous */
  REQUIRE_OK(cell_k_reshape(t, 1, s6, &r));  /* a copy */
  double want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; i++) CHECK(flat(r, i) == want[i]);
  CHECK(cell_tensor_data_ptr(r) != cell_tensor_data_ptr(a));
  cell_tensor_release(r);
  REQUIRE_OK(cell_k_reshape(a, 2, s32, &r)); /* a view */
  CHECK(cell_tensor_data_ptr(r) == cell_tensor_data_ptr(a) && flat(r, 5) == 6);
  cell_tensor_release(r);
  REQUIRE_OK(cell_k_flatten(t, 0, 1, &f));
  CHECK(cell_tensor_ndim(f) == 1 && flat(f, 1) == 4);
  cell_tensor_release(f);
  CHECK(cell_k_reshape(a, 1, s32, &r) == CELL_ERR_VALUE);
  CHECK_MSG("cannot reshape a tensor of shape [2, 3] (6 elements) into [3]");
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_I32, 2, s23, 7.9, &f));
  CHECK(flat(f, 0) == 7 && flat(f, 5) == 7);
  cell_tensor_release(f);
  cell_tensor_release(t);
  cell_tensor_release(a);
  /* dot: 1*4 + 2*5 + 3*6 = 32, small (portable backend) and large (BLAS) */
  int64_t n3[1] = {3};
  double x[3] = {1, 2, 3}, y[3] = {4, 5, 6};
  cell_tensor *px = from(CELL_DTYPE_F64, 1, n3, x), *py = from(CELL_DTYPE_F64, 1, n3, y), *d = NULL;
  REQUIRE_OK(cell_k_dot(px, py, &d));
  CHECK(cell_tensor_ndim(d) == 0 && flat(d, 0) == 32);
  cell_tensor_release(d);
  cell_tensor_release(px);
  cell_tensor_release(py);
  int64_t big[1] = {1 << 16};
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, big, 0.5, &px));
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, big, 2.0, &py));
  REQUIRE_OK(cell_k_dot(px, py, &d));
  CHECK(flat(d, 0) == 65536);
  cell_tensor_release(d);
  cell_tensor_release(px);
  cell_tensor_release(py);
}

/* --- the public calls the binding stands on ---------------------------------------- */

static int released;
static void count_release(void *ud) { (void)ud; released++; }

/* d(out)/d(x) = 3 * grad_out; no gradient for y. */
static cell_status triple(void *ud, const cell_tensor *g, int n, const int *wants, cell_tensor **gin) {
  CHECK(ud == &released && n == 2 && wants[0] && !wants[1]);
  return cell_op_binary_scalar(CELL_OP_MUL, g, 3.0, 1, 0, &gin[0]);
}

static cell_status wrong_shape(void *ud, const cell_tensor *g, int n, const int *wants,
                               cell_tensor **gin) {
  (void)ud, (void)g, (void)n, (void)wants;
  return cell_tensor_full(CELL_DTYPE_F32, 0, NULL, 1.0, &gin[0]);
}

static void test_custom_node(void) {
  int64_t s2[1] = {2};
  double v[2] = {1, 2};
  cell_tensor *x = from(CELL_DTYPE_F32, 1, s2, v), *y = from(CELL_DTYPE_F32, 1, s2, v);
  cell_tensor *out = from(CELL_DTYPE_F32, 1, s2, v), *sens = from(CELL_DTYPE_F32, 1, s2, v);
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  const cell_tensor *in[2] = {x, y};
  released = 0;
  REQUIRE_OK(cell_autograd_custom_node(out, 2, in, "TripleBackward", triple, count_release, &released));
  CHECK(strcmp(cell_tensor_grad_fn_name(out), "TripleBackward") == 0 && released == 0);
  cell_tensor *g = NULL;
  REQUIRE_OK(cell_autograd_grad(out, sens, 1, &x, &g));
  CHECK(flat(g, 0) == 3 && flat(g, 1) == 6);
  cell_tensor_release(g);
  /* a second node on the same output: it already belongs to a graph */
  CHECK(cell_autograd_custom_node(out, 1, in, "TripleBackward", triple, count_release, &released) ==
        CELL_ERR_RUNTIME);
  CHECK_MSG("TripleBackward: the output already belongs to a graph");
  CHECK(released == 1); /* the refused call released its ud */
  cell_tensor_release(out);
  CHECK(released == 2); /* the node went with its output */
  /* no input requires grad: no node, ud released at once */
  cell_tensor *o2 = from(CELL_DTYPE_F32, 1, s2, v);
  const cell_tensor *in_y[1] = {y};
  REQUIRE_OK(cell_autograd_custom_node(o2, 1, in_y, "TripleBackward", triple, count_release, &released));
  CHECK(released == 3 && cell_tensor_grad_fn_name(o2) == NULL);
  /* a gradient of the wrong shape */
  const cell_tensor *in_x[1] = {x};
  REQUIRE_OK(cell_autograd_custom_node(o2, 1, in_x, "OddBackward", wrong_shape, NULL, NULL));
  CHECK(cell_autograd_grad(o2, sens, 1, &x, &g) == CELL_ERR_VALUE);
  CHECK_MSG("OddBackward: gradient 1 has shape [] but its input has shape [2]");
  const cell_tensor *many[CELL_CUSTOM_MAX_INPUTS + 1];
  for (int i = 0; i <= CELL_CUSTOM_MAX_INPUTS; i++) many[i] = x;
  CHECK(cell_autograd_custom_node(sens, CELL_CUSTOM_MAX_INPUTS + 1, many, "Big", triple, NULL, NULL) ==
        CELL_ERR_VALUE);
  CHECK_MSG("Big: a custom backward node takes at most 256 inputs, got 257");
  cell_tensor_release(o2);
  cell_tensor_release(x);
  cell_tensor_release(y);
  cell_tensor_release(sens);
}

static void test_host_accessors(void) {
  unsigned char b[8];
  cell_element_set_f64(CELL_DTYPE_F16, b, 0.5);
  CHECK(cell_element_get_f64(CELL_DTYPE_F16, b) == 0.5);
  cell_element_set_i64(CELL_DTYPE_I8, b, 300); /* wraps: 300 - 256 */
  CHECK(cell_element_get_i64(CELL_DTYPE_I8, b) == 44);
  cell_element_set_f64(CELL_DTYPE_I32, b, -2.7); /* truncates */
  CHECK(cell_element_get_i64(CELL_DTYPE_I32, b) == -2);
  cell_element_set_i64(CELL_DTYPE_I64, b, -(1LL << 62));
  CHECK(cell_element_get_i64(CELL_DTYPE_I64, b) == -(1LL << 62));
  char s[32];
  int64_t sh[2] = {2, 3};
  CHECK(strcmp(cell_shape_str(2, sh, s, sizeof s), "[2, 3]") == 0);
  CHECK(strcmp(cell_shape_str(0, NULL, s, sizeof s), "[]") == 0);
  cell_tensor *t = NULL, *v = NULL;
  REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_F64, 2, sh, &t));
  CHECK(cell_tensor_owned_bytes(t) == 48);
  REQUIRE_OK(cell_tensor_transpose(t, 0, 1, &v));
  CHECK(cell_tensor_owned_bytes(t) == 0 && cell_tensor_owned_bytes(v) == 0);
  cell_tensor_release(t);
  CHECK(cell_tensor_owned_bytes(v) == 48);
  cell_tensor_release(v);
  CHECK(cell_tensor_owned_bytes(NULL) == 0);
}

void test_layers_all(void) {
  test_runs();
  test_moved_kernels();
  test_custom_node();
  test_host_accessors();
}
