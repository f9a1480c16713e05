/* test_higher.c - higher-order gradients through the C API
 * (cell_autograd_grad_ex): a pass that creates a graph, gradients of it,
 * a rule that is not twice differentiable, inputs that are not leaves, and
 * that every node and tensor goes (main checks the allocator's live
 * blocks). */
#include "check.h"

/* y = sum(x^3): the first gradient 3x^2 with a history, its gradient 6x. */
static void test_second_derivative(void) {
  int64_t sh[1] = {3};
  double xv[3] = {0.5, -1.0, 2.0};
  cell_tensor *x = from(CELL_DTYPE_F64, 1, sh, xv), *c = NULL, *y = NULL, *g = NULL, *gs = NULL,
              *h = NULL;
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  CHECK_OK(cell_op_binary_scalar(CELL_OP_POW, x, 3.0, 1, 0, &c));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, c, 0, NULL, 0, &y));
  CHECK_OK(cell_autograd_grad_ex(y, NULL, 1, &x, &g, 1));
  CHECK(g && cell_tensor_requires_grad(g) && !cell_tensor_is_leaf(g));
  for (int i = 0; g && i < 3; i++) CHECK(NEAR(flat(g, i), 3 * xv[i] * xv[i], 1e-12));
  /* the first graph is kept: it can be run again */
  cell_tensor *again = NULL;
  CHECK_OK(cell_autograd_grad(y, NULL, 1, &x, &again));
  cell_tensor_release(again);
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, g, 0, NULL, 0, &gs));
  CHECK_OK(cell_autograd_grad(gs, NULL, 1, &x, &h));
  for (int i = 0; h && i < 3; i++) CHECK(NEAR(flat(h, i), 6 * xv[i], 1e-12));
  /* an ordinary pass records nothing */
  cell_tensor *y2 = NULL, *g2 = NULL, *c2 = NULL;
  CHECK_OK(cell_op_binary_scalar(CELL_OP_POW, x, 3.0, 1, 0, &c2));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, c2, 0, NULL, 0, &y2));
  CHECK_OK(cell_autograd_grad_ex(y2, NULL, 1, &x, &g2, 0));
  CHECK(g2 && !cell_tensor_requires_grad(g2));
  cell_tensor *ts[] = {x, c, y, g, gs, h, y2, g2, c2};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

/* sum(cumsum(x)^2): cumsum's rule sees a gradient that depends on x, so
 * the second pass reaches a node that refuses, naming the rule. */
static void test_not_twice_differentiable(void) {
  int64_t sh[1] = {3};
  double xv[3] = {0.5, -1.0, 2.0};
  cell_tensor *x = from(CELL_DTYPE_F64, 1, sh, xv), *cs = NULL, *sq = NULL, *y = NULL, *g = NULL,
              *gs = NULL, *h = NULL;
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  CHECK_OK(cell_op_cumsum(x, 0, &cs));
  CHECK_OK(cell_op_binary(CELL_OP_MUL, cs, cs, &sq));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, sq, 0, NULL, 0, &y));
  CHECK_OK(cell_autograd_grad_ex(y, NULL, 1, &x, &g, 1));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, g, 0, NULL, 0, &gs));
  CHECK(cell_autograd_grad(gs, NULL, 1, &x, &h) == CELL_ERR_NOTIMPL);
  CHECK_MSG("the gradient of CumsumBackward is not differentiable (higher-order gradient)");
  CHECK(h == NULL);
  cell_tensor *ts[] = {x, cs, sq, y, g, gs};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

/* The gradient of an input that is not a leaf: the one reaching it. */
static void test_non_leaf_input(void) {
  int64_t sh[1] = {2};
  double xv[2] = {1.0, -3.0};
  cell_tensor *x = from(CELL_DTYPE_F64, 1, sh, xv), *z = NULL, *zz = NULL, *y = NULL, *g = NULL;
  REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
  CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, x, 2.0, 1, 0, &z));
  CHECK_OK(cell_op_binary(CELL_OP_MUL, z, z, &zz));
  CHECK_OK(cell_op_reduce(CELL_RED_SUM, zz, 0, NULL, 0, &y));
  CHECK(cell_autograd_grad(y, NULL, 1, &z, &g) == CELL_ERR_RUNTIME); /* leaves only there */
  CHECK_OK(cell_autograd_grad_ex(y, NULL, 1, &z, &g, 0));
  for (int i = 0; g && i < 2; i++) CHECK(NEAR(flat(g, i), 4 * xv[i], 1e-12));
  cell_tensor *ts[] = {x, z, zz, y, g};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
}

/* A tensor used several times: its gradient is the sum of what reaches it
 * along each edge, added in place where nothing else sees the sum so far
 * (graph.c's accumulate) and out of place where something does: x + x
 * and x + w hand one tensor to two edges (x's sum must not be added into
 * w's), a reshape of x hands a view. z = 2x + 3x + (x + x) + exp(x) +
 * reshape(x) * x + (x + w) + 3w: dz/dx = 8 + exp(x) + 2x, dz/dw = 4, the
 * same in a pass that creates a graph, whose gradient has a history (the
 * second derivative exp(x) + 2) while an ordinary pass's has none. Nothing
 * the caller holds is written: sens, x and w keep their values. The
 * gradients an ordinary pass returns are its own sums, handed over where
 * nothing else sees them: x asked for twice gets two tensors. */
static void test_sum_of_uses(void) {
  int64_t sh[1] = {3};
  double xv[3] = {0.5, -1.0, 2.0}, one[3] = {1, 1, 1};
  for (int create = 0; create <= 1; create++) {
    cell_tensor *x = from(CELL_DTYPE_F64, 1, sh, xv), *sens = NULL, *t[9] = {NULL}, *g = NULL, *gs = NULL,
                *h = NULL;
    REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
    CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, x, 2.0, 1, 0, &t[0]));
    CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, x, 3.0, 1, 0, &t[1]));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, x, x, &t[2]));
    CHECK_OK(cell_op_unary(CELL_OP_EXP, x, &t[3]));
    CHECK_OK(cell_tensor_reshape(x, 1, sh, &t[4]));
    CHECK_OK(cell_op_binary(CELL_OP_MUL, t[4], x, &t[5]));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, t[0], t[1], &t[6]));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, t[6], t[2], &t[7]));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, t[7], t[3], &t[8]));
    cell_tensor *z0 = NULL, *w = from(CELL_DTYPE_F64, 1, sh, one), *xw = NULL, *w3 = NULL, *z1 = NULL, *z = NULL;
    REQUIRE_OK(cell_tensor_set_requires_grad(w, 1));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, t[8], t[5], &z0));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, x, w, &xw));
    CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, w, 3.0, 1, 0, &w3));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, z0, xw, &z1));
    CHECK_OK(cell_op_binary(CELL_OP_ADD, z1, w3, &z));
    sens = from(CELL_DTYPE_F64, 1, sh, one);
    cell_tensor *ins[3] = {x, w, x}, *gr[3] = {NULL, NULL, NULL};
    CHECK_OK(cell_autograd_grad_ex(z, sens, 3, ins, gr, create));
    g = gr[0];
    for (int i = 0; g && gr[1] && gr[2] && i < 3; i++) {
      CHECK(NEAR(flat(g, i), 8 + exp(xv[i]) + 2 * xv[i], 1e-12));
      CHECK(NEAR(flat(gr[1], i), 4, 1e-12));
      CHECK(flat(gr[2], i) == flat(g, i));
      CHECK(flat(sens, i) == 1 && flat(x, i) == xv[i] && flat(w, i) == 1);
    }
    /* x asked for twice: two gradients, neither the other's storage (the
     * pass hands its own sum over once, and copies it for the second) */
    CHECK(g && gr[2] && (create || g->storage != gr[2]->storage));
    cell_tensor *more[] = {z0, w, xw, w3, z1, gr[1], gr[2]};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) cell_tensor_release(more[i]);
    CHECK(g && (cell_tensor_requires_grad(g) != 0) == create);
    if (create && g) {
      CHECK_OK(cell_op_reduce(CELL_RED_SUM, g, 0, NULL, 0, &gs));
      CHECK_OK(cell_autograd_grad(gs, NULL, 1, &x, &h));
      for (int i = 0; h && i < 3; i++) CHECK(NEAR(flat(h, i), exp(xv[i]) + 2, 1e-12));
    }
    for (int i = 0; i < 9; i++) cell_tensor_release(t[i]);
    cell_tensor *ts[] = {x, sens, z, g, gs, h};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) cell_tensor_release(ts[i]);
  }
}

/* Slices of one tensor: the first slice's gradient is zeros with g copied
 * in, the next ones add g into that sum's part in place (graph.c), unless
 * the sum is seen elsewhere (x + w hands one tensor to x and w). x [6]:
 * z = 2 narrow(x, 0, 3) + 3 narrow(x, 3, 3) (cat'd by a sum), + 5 x[1],
 * + x + w; dz/dx = [3, 8, 3, 4, 4, 4], dz/dw = 1, in both
 * kinds of pass, with the slices reached first and last. */
static void test_slices_of_one(void) {
  int64_t sh[1] = {6};
  double xv[6] = {1, 2, 3, 4, 5, 6}, zero[6] = {0}, want[6] = {3, 8, 3, 4, 4, 4};
  for (int order = 0; order < 2; order++)
    for (int create = 0; create <= 1; create++) {
      cell_tensor *x = from(CELL_DTYPE_F64, 1, sh, xv), *w = from(CELL_DTYPE_F64, 1, sh, zero), *t[12] = {NULL};
      REQUIRE_OK(cell_tensor_set_requires_grad(x, 1));
      REQUIRE_OK(cell_tensor_set_requires_grad(w, 1));
      CHECK_OK(cell_tensor_narrow(x, 0, 0, 3, &t[0]));
      CHECK_OK(cell_tensor_narrow(x, 0, 3, 3, &t[1]));
      CHECK_OK(cell_tensor_select(x, 0, 1, &t[2]));
      CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, t[0], 2.0, 1, 0, &t[3]));
      CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, t[1], 3.0, 1, 0, &t[4]));
      CHECK_OK(cell_op_binary_scalar(CELL_OP_MUL, t[2], 5.0, 1, 0, &t[5]));
      CHECK_OK(cell_op_binary(CELL_OP_ADD, x, w, &t[6]));
      CHECK_OK(cell_op_reduce(CELL_RED_SUM, t[3], 0, NULL, 0, &t[7]));
      CHECK_OK(cell_op_reduce(CELL_RED_SUM, t[4], 0, NULL, 0, &t[8]));
      CHECK_OK(cell_op_reduce(CELL_RED_SUM, t[6], 0, NULL, 0, &t[9]));
      /* The pass runs a node's inputs last to first: with x + w's sum the
       * last term, x's first gradient is the one x + w hands to w too, and
       * the slices must not add into it; as the first term, x's first
       * gradient is a slice's. */
      cell_tensor *z = NULL, *ins[2] = {x, w}, *gr[2] = {NULL, NULL}, *t5s = NULL;
      CHECK_OK(cell_op_reduce(CELL_RED_SUM, t[5], 0, NULL, 0, &t5s));
      CHECK_OK(cell_op_binary(CELL_OP_ADD, order ? t[7] : t[9], order ? t[8] : t[7], &t[10]));
      CHECK_OK(cell_op_binary(CELL_OP_ADD, t[10], order ? t5s : t[8], &t[11]));
      CHECK_OK(cell_op_binary(CELL_OP_ADD, t[11], order ? t[9] : t5s, &z));
      CHECK_OK(cell_autograd_grad_ex(z, NULL, 2, ins, gr, create));
      for (int i = 0; gr[0] && gr[1] && i < 6; i++) {
        CHECK(NEAR(flat(gr[0], i), want[i], 1e-12));
        CHECK(NEAR(flat(gr[1], i), 1, 1e-12));
      }
      cell_tensor *more[] = {x, w, z, gr[0], gr[1], t5s};
      for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) cell_tensor_release(more[i]);
      for (int i = 0; i < 12; i++) cell_tensor_release(t[i]);
    }
}

void test_higher_all(void) {
  test_second_derivative();
  test_not_twice_differentiable();
  test_non_leaf_input();
  test_sum_of_uses();
  test_slices_of_one();
}
