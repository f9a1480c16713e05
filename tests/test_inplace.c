/* test_inplace.c - in-place ops while recording (src/autograd/inplace.c),
 * without Lua: a chain through a view gives PyTorch's gradient (worked by
 * hand), the refusals name what they refuse, and every failed allocation
 * along the way is a clean MemoryError that leaks nothing. */
#include "check.h"

/* y = x * 2; y[:, 1:3] *= w (a view); y.sigmoid_() would need more: keep
 * it linear so the gradient is exact. loss = sum(y * y). */
static cell_status chain(cell_tensor *x, cell_tensor *w, cell_tensor **gx, cell_tensor **gw) {
  cell_tensor *y = NULL, *v = NULL, *sq = NULL, *loss = NULL, *in[2] = {x, w}, *g[2] = {NULL, NULL};
  cell_status s = cell_op_binary_scalar(CELL_OP_MUL, x, 2, 0, 0, &y);
  if (s == CELL_OK) s = cell_tensor_narrow(y, 1, 1, 2, &v);
  if (s == CELL_OK) s = cell_op_binary_(CELL_OP_MUL, v, w);
  if (s == CELL_OK) s = cell_op_binary(CELL_OP_MUL, y, y, &sq);
  if (s == CELL_OK) s = cell_op_reduce(CELL_RED_SUM, sq, 0, NULL, 0, &loss);
  if (s == CELL_OK) s = cell_autograd_grad(loss, NULL, 2, in, g);
  *gx = g[0];
  *gw = g[1];
  cell_tensor_release(y);
  cell_tensor_release(v);
  cell_tensor_release(sq);
  cell_tensor_release(loss);
  return s;
}

static void test_chain(void) {
  int64_t sx[2] = {2, 3}, sw[1] = {2};
  double vx[6] = {1, 2, 3, 4, 5, 6}, vw[2] = {3, -1};
  cell_tensor *x = from(CELL_DTYPE_F64, 2, sx, vx), *w = from(CELL_DTYPE_F64, 1, sw, vw);
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  REQUIRE_OK(cell_tensor_set_requires_grad(w, 1));
  cell_tensor *gx = NULL, *gw = NULL;
  REQUIRE_OK(chain(x, w, &gx, &gw));
  /* y = 2x, columns 2..3 times w: dloss/dx = 2 y dy/dx = 8 x (col 1), 8 x w^2 (cols 2, 3);
   * dloss/dw_j = sum_i 2 y_ij (2 x_ij) = 8 w_j sum_i x_ij^2 over column j + 1 */
  double ex[6] = {8, 8 * 2 * 9, 8 * 3 * 1, 32, 8 * 5 * 9, 8 * 6 * 1};
  double ew[2] = {8 * 3 * (4 + 25), 8 * -1 * (9 + 36)};
  for (int i = 0; i < 6; i++) CHECK(NEAR(flat(gx, i), ex[i], 1e-12));
  for (int i = 0; i < 2; i++) CHECK(NEAR(flat(gw, i), ew[i], 1e-12));
  cell_tensor_release(gx);
  cell_tensor_release(gw);
  /* a leaf, and a view of one, are refused while recording; not under no_grad */
  cell_tensor *v = NULL;
  CHECK(cell_op_unary_(CELL_OP_EXP, x) == CELL_ERR_RUNTIME);
  CHECK_MSG("exp_: a leaf Variable that requires grad is being used in an in-place operation");
  REQUIRE_OK(cell_tensor_select(x, 0, 1, &v));
  CHECK(cell_tensor_fill_(v, 0) == CELL_ERR_RUNTIME);
  CHECK_MSG("fill_: a view of a leaf Variable that requires grad");
  int prev = cell_grad_set_enabled(0);
  CHECK_OK(cell_tensor_fill_(v, 0));
  cell_grad_set_enabled(prev);
  CHECK(flat(x, 3) == 0 && flat(x, 2) == 3);
  cell_tensor_release(v);
  /* a value a node saved, overwritten: backward names the node and the versions */
  cell_tensor *e = NULL, *gs[1] = {NULL};
  REQUIRE_OK(cell_op_unary(CELL_OP_EXP, x, &e));
  CHECK_OK(cell_op_binary_scalar_(CELL_OP_MUL, e, 2, 0));
  CHECK(cell_autograd_grad(e, NULL, 1, &x, gs) == CELL_ERR_RUNTIME && gs[0] == NULL);
  CHECK_MSG("a Float64 tensor of shape [2, 3] that ExpBackward saved for the backward pass was "
            "modified in place afterwards");
  cell_tensor_release(e);
  cell_tensor_release(x);
  cell_tensor_release(w);
}

static void test_failed_allocations(void) {
  int64_t sx[2] = {2, 3}, sw[1] = {2};
  double vx[6] = {1, 2, 3, 4, 5, 6}, vw[2] = {3, -1};
  cell_tensor *x = from(CELL_DTYPE_F32, 2, sx, vx), *w = from(CELL_DTYPE_F32, 1, sw, vw);
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  REQUIRE_OK(cell_tensor_set_requires_grad(w, 1));
  /* once first: the leaves' accumulators, made on first use, stay with them */
  cell_tensor *g0 = NULL, *g1 = NULL;
  REQUIRE_OK(chain(x, w, &g0, &g1));
  cell_tensor_release(g0);
  cell_tensor_release(g1);
  long base = cell_alloc_live_blocks();
  int succeeded = 0, clean = 1;
  for (long n = 1; n < 400 && !succeeded; n++) {
    cell_tensor *gx = NULL, *gw = NULL;
    cell_alloc_fail_after(n);
    cell_status st = chain(x, w, &gx, &gw);
    cell_alloc_fail_after(0);
    if (st == CELL_OK) {
      succeeded = 1;
      CHECK(NEAR(flat(gw, 0), 8 * 3 * (4 + 25), 1e-5));
      cell_tensor_release(gx);
      cell_tensor_release(gw);
    } else if (st != CELL_ERR_MEMORY || gx || gw || strlen(cell_last_error()) == 0) {
      clean = 0;
      fprintf(stderr, "inplace: failing allocation %ld gave %s\n", n, cell_last_error());
    }
    if (cell_alloc_live_blocks() != base) {
      clean = 0;
      fprintf(stderr, "inplace: leak after failing allocation %ld\n", n);
    }
  }
  CHECK(succeeded && clean);
  cell_tensor_release(x);
  cell_tensor_release(w);
}

void test_inplace_all(void) {
  test_chain();
  test_failed_allocations();
}
