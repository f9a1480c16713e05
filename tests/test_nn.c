/* test_nn.c - the nn ops of include/cell_nn.h without Lua: values by hand
 * (0-based index_base here, as a C host may use), error statuses and
 * messages, the running-statistics update, dropout's seeding, and failed
 * allocations in every forward and backward pass (fail the Nth for N = 1,
 * 2, ... until the call succeeds: each failure must be a clean MemoryError
 * that leaks nothing and, for batch_norm, leaves the running statistics as
 * they were). */
#include "check.h"

static cell_tensor *vec(cell_dtype dt, int64_t n, const double *v) { return from(dt, 1, &n, v); }

static cell_tensor *mat(cell_dtype dt, int64_t r, int64_t c, const double *v) {
  int64_t s[2] = {r, c};
  return from(dt, 2, s, v);
}

static void release_all(cell_tensor **ts, int n) {
  for (int i = 0; i < n; i++) cell_tensor_release(ts[i]);
}

static void test_softmax_values(void) {
  double v[4] = {0, log(3.0), 1, 1};
  cell_tensor *x = mat(CELL_DTYPE_F64, 2, 2, v), *y = NULL, *l = NULL, *c = NULL, *t = NULL;
  REQUIRE_OK(cell_op_softmax(x, 1, &y));
  CHECK(NEAR(flat(y, 0), 0.25, 1e-15) && NEAR(flat(y, 1), 0.75, 1e-15) && NEAR(flat(y, 3), 0.5, 1e-15));
  CHECK_OK(cell_op_log_softmax(x, 0, &l));
  CHECK(NEAR(flat(l, 0), log(1 / (1 + exp(1.0))), 1e-15));
  CHECK(cell_op_softmax(x, 2, &c) == CELL_ERR_INDEX && c == NULL);
  CHECK_OK(cell_tensor_astype(x, CELL_DTYPE_I32, &t));
  CHECK(cell_op_softmax(t, 0, &c) == CELL_ERR_TYPE);
  CHECK_MSG("floating-point");
  cell_tensor *ts[4] = {x, y, l, t};
  release_all(ts, 4);
}

/* MindSpore's momentum: running = m * running + (1 - m) * batch. */
static void test_batch_norm_running(void) {
  double xv[4] = {1, 2, 3, 6}, zero[2] = {0, 1}, one[2] = {1, 2};
  cell_tensor *x = mat(CELL_DTYPE_F32, 2, 2, xv), *rm = vec(CELL_DTYPE_F64, 2, zero);
  cell_tensor *rv = vec(CELL_DTYPE_F64, 2, one), *y = NULL;
  unsigned v0 = cell_tensor_version(rm);
  REQUIRE_OK(cell_op_batch_norm(x, rm, rv, NULL, NULL, 1, 0.8, 0.0, &y));
  CHECK(NEAR(flat(y, 0), -1, 1e-6) && NEAR(flat(y, 3), 1, 1e-6));
  CHECK(NEAR(flat(rm, 0), 0.4, 1e-15) && NEAR(flat(rm, 1), 1.6, 1e-15));
  CHECK(NEAR(flat(rv, 0), 1.2, 1e-15) && NEAR(flat(rv, 1), 3.2, 1e-15));
  CHECK(cell_tensor_version(rm) != v0);
  cell_tensor *bad = NULL;
  CHECK(cell_op_batch_norm(x, NULL, NULL, NULL, NULL, 0, 0.9, 1e-5, &bad) == CELL_ERR_VALUE);
  CHECK(cell_op_batch_norm(x, rm, rv, NULL, NULL, 1, 2.0, 1e-5, &bad) == CELL_ERR_VALUE);
  CHECK_MSG("momentum");
  int64_t s13[2] = {1, 3};
  double ones[3] = {1, 1, 1};
  cell_tensor *one_row = from(CELL_DTYPE_F32, 2, s13, ones);
  CHECK(cell_op_batch_norm(one_row, NULL, NULL, NULL, NULL, 1, 0.9, 1e-5, &bad) == CELL_ERR_VALUE);
  CHECK_MSG("more than 1 value per channel");
  cell_tensor *ts[5] = {x, rm, rv, y, one_row};
  release_all(ts, 5);
}

/* Class ids counting from 0 (index_base 0), weight, ignore_index. */
static void test_losses_index_base(void) {
  double xv[4] = {0, log(3.0), log(4.0), 0}, tv[2] = {1, 0}, wv[2] = {3, 0.5};
  cell_tensor *x = mat(CELL_DTYPE_F64, 2, 2, xv), *t = vec(CELL_DTYPE_I64, 2, tv);
  cell_tensor *w = vec(CELL_DTYPE_F64, 2, wv), *l = NULL, *l2 = NULL, *bad = NULL;
  REQUIRE_OK(cell_op_cross_entropy(x, t, w, 0, 0, 0.0, CELL_REDUCTION_MEAN, 0, &l));
  CHECK(NEAR(flat(l, 0), (0.5 * -log(0.75) + 3 * -log(0.8)) / 3.5, 1e-14));
  CHECK_OK(cell_op_cross_entropy(x, t, NULL, 1, 0, 0.0, CELL_REDUCTION_SUM, 0, &l2));
  CHECK(NEAR(flat(l2, 0), -log(0.75), 1e-14));
  double tb[2] = {1, 2};
  cell_tensor *tbad = vec(CELL_DTYPE_I64, 2, tb);
  CHECK(cell_op_cross_entropy(x, tbad, NULL, 0, 0, 0.0, CELL_REDUCTION_MEAN, 0, &bad) == CELL_ERR_INDEX);
  CHECK_MSG("cross_entropy: target 2 is out of range for 2 classes");
  CHECK(cell_op_nll_loss(x, tbad, NULL, 0, 0, CELL_REDUCTION_MEAN, 1, &bad) == CELL_OK);
  cell_tensor_release(bad);
  bad = NULL;
  CHECK(cell_op_mse_loss(x, t, CELL_REDUCTION_MEAN, &bad) == CELL_ERR_TYPE && bad == NULL);
  CHECK(cell_op_l1_loss(x, x, (cell_reduction)7, &bad) == CELL_ERR_VALUE);
  CHECK(cell_reduction_name(CELL_REDUCTION_NONE) && strcmp(cell_reduction_name(CELL_REDUCTION_NONE), "none") == 0);
  CHECK(cell_reduction_name((cell_reduction)9) == NULL);
  /* embedding with 0-based ids */
  double ev[6] = {1, 2, 3, 4, 5, 6}, iv[2] = {2, 0};
  cell_tensor *tab = mat(CELL_DTYPE_F32, 3, 2, ev), *ids = vec(CELL_DTYPE_I32, 2, iv), *e = NULL;
  REQUIRE_OK(cell_op_embedding(ids, tab, 0, 0, 0, &e));
  CHECK(flat(e, 0) == 5 && flat(e, 1) == 6 && flat(e, 2) == 1);
  CHECK(cell_op_embedding(ids, tab, 0, 0, 1, &bad) == CELL_ERR_INDEX);
  CHECK_MSG("id 0 is out of range");
  cell_tensor *ts[9] = {x, t, w, l, l2, tbad, tab, ids, e};
  release_all(ts, 9);
}

static void test_dropout_seed(void) {
  int64_t s[1] = {1000};
  cell_tensor *x = NULL, *a = NULL, *b = NULL, *same = NULL;
  REQUIRE_OK(cell_tensor_full(CELL_DTYPE_F32, 1, s, 1.0, &x));
  cell_set_seed(9);
  REQUIRE_OK(cell_op_dropout(x, 0.25, 1, &a));
  cell_set_seed(9);
  REQUIRE_OK(cell_op_dropout(x, 0.25, 1, &b));
  int eq = 1, zeros = 0;
  for (int i = 0; i < 1000; i++) {
    eq &= flat(a, i) == flat(b, i);
    zeros += flat(a, i) == 0;
    if (flat(a, i) != 0) eq &= NEAR(flat(a, i), 1 / 0.75, 1e-6);
  }
  CHECK(eq);
  CHECK(zeros > 200 && zeros < 300);
  CHECK_OK(cell_op_dropout(x, 0.25, 0, &same));
  CHECK(same == x);
  CHECK(cell_op_dropout(x, 1.5, 1, &same) == CELL_ERR_VALUE);
  cell_tensor *ts[4] = {x, a, b, same};
  release_all(ts, 4);
}

/* --- failed allocations ----------------------------------------------------------- */

typedef struct {
  cell_tensor *x, *w4, *b4, *rm, *rv, *ids, *cls, *probs, *y, *cw;
} nn_inputs;

typedef cell_status (*nn_fn)(nn_inputs *in, cell_tensor **out);

/* Forward, then the gradient of sum(out) with respect to the leaves. */
static cell_status backward_of(cell_tensor *y, int n, cell_tensor **leaves, cell_tensor **out) {
  cell_tensor *s = NULL, *g[4] = {NULL, NULL, NULL, NULL};
  cell_status st = cell_op_reduce(CELL_RED_SUM, y, 0, NULL, 0, &s);
  cell_tensor_release(y);
  if (st == CELL_OK) st = cell_autograd_grad(s, NULL, n, leaves, g);
  cell_tensor_release(s);
  if (st == CELL_OK) {
    *out = g[0];
    for (int i = 1; i < n; i++) cell_tensor_release(g[i]);
  }
  return st;
}

static cell_status f_softmax(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y;
  CELL_TRY(cell_op_log_softmax(in->x, 1, &y));
  return backward_of(y, 1, &in->x, o);
}
static cell_status f_bn(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[3] = {in->x, in->w4, in->b4};
  CELL_TRY(cell_op_batch_norm(in->x, in->rm, in->rv, in->w4, in->b4, 1, 0.9, 1e-5, &y));
  return backward_of(y, 3, lv, o);
}
static cell_status f_bn_forward(nn_inputs *in, cell_tensor **o) {
  return cell_op_batch_norm(in->x, in->rm, in->rv, in->w4, in->b4, 1, 0.9, 1e-5, o);
}
static cell_status f_bn_eval(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[2] = {in->x, in->w4};
  CELL_TRY(cell_op_batch_norm(in->x, in->rm, in->rv, in->w4, in->b4, 0, 0.9, 1e-5, &y));
  return backward_of(y, 2, lv, o);
}
static cell_status f_ln(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[3] = {in->x, in->w4, in->b4};
  CELL_TRY(cell_op_layer_norm(in->x, 1, in->w4, in->b4, 1e-5, &y));
  return backward_of(y, 3, lv, o);
}
static cell_status f_dropout(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y;
  CELL_TRY(cell_op_dropout(in->x, 0.3, 1, &y));
  return backward_of(y, 1, &in->x, o);
}
static cell_status f_embedding(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y;
  CELL_TRY(cell_op_embedding(in->ids, in->x, 1, 2, 1, &y));
  return backward_of(y, 1, &in->x, o);
}
static cell_status f_ce(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y;
  CELL_TRY(cell_op_cross_entropy(in->x, in->cls, in->w4, 1, 2, 0.1, CELL_REDUCTION_MEAN, 1, &y));
  return backward_of(y, 1, &in->x, o);
}
static cell_status f_ce_probs(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[2] = {in->x, in->probs};
  CELL_TRY(cell_op_cross_entropy(in->x, in->probs, NULL, 0, 0, 0.0, CELL_REDUCTION_NONE, 1, &y));
  return backward_of(y, 2, lv, o);
}
static cell_status f_nll(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y;
  CELL_TRY(cell_op_nll_loss(in->x, in->cls, in->w4, 0, 0, CELL_REDUCTION_NONE, 1, &y));
  return backward_of(y, 1, &in->x, o);
}
static cell_status f_mse(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[2] = {in->x, in->b4};
  CELL_TRY(cell_op_mse_loss(in->x, in->b4, CELL_REDUCTION_MEAN, &y));
  return backward_of(y, 2, lv, o);
}
static cell_status f_l1(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[2] = {in->x, in->y};
  CELL_TRY(cell_op_l1_loss(in->x, in->y, CELL_REDUCTION_NONE, &y));
  return backward_of(y, 2, lv, o);
}
static cell_status f_bce(nn_inputs *in, cell_tensor **o) {
  cell_tensor *y, *lv[4] = {in->x, in->probs, in->w4, in->b4};
  CELL_TRY(cell_op_bce_with_logits(in->x, in->probs, in->w4, in->b4, CELL_REDUCTION_SUM, &y));
  return backward_of(y, 4, lv, o);
}

static void test_nn_failed_allocations(void) {
  static const struct {
    const char *name;
    nn_fn fn;
    int stats; /* a failure must leave the running statistics as they were */
  } fns[] = {{"log_softmax", f_softmax, 0},
             {"batch_norm", f_bn, 0},
             {"batch_norm forward", f_bn_forward, 1},
             {"batch_norm eval", f_bn_eval, 1},
             {"layer_norm", f_ln, 0},
             {"dropout", f_dropout, 0},
             {"embedding", f_embedding, 0},
             {"cross_entropy", f_ce, 0},
             {"cross_entropy probs", f_ce_probs, 0},
             {"nll_loss", f_nll, 0},
             {"mse_loss", f_mse, 0},
             {"l1_loss", f_l1, 0},
             {"bce_with_logits", f_bce, 0}};
  double xv[24], pv[24], w4[4] = {0.5, 1, 2, 1.5}, b4[4] = {0.1, -0.2, 0.3, 0};
  for (int i = 0; i < 24; i++) {
    xv[i] = ((i * 7) % 11 - 5) / 3.0;
    pv[i] = ((i * 5) % 9) / 8.0;
  }
  double rmv[4] = {0, 0.1, -0.1, 0.2}, rvv[4] = {1, 2, 0.5, 1}, iv[6] = {1, 3, 2, 2, 6, 1};
  double cv[6] = {1, 2, 4, 3, 2, 1};
  nn_inputs in;
  in.x = mat(CELL_DTYPE_F32, 6, 4, xv);
  in.probs = mat(CELL_DTYPE_F32, 6, 4, pv);
  in.y = mat(CELL_DTYPE_F64, 6, 4, pv);
  in.w4 = vec(CELL_DTYPE_F32, 4, w4);
  in.b4 = vec(CELL_DTYPE_F64, 4, b4);
  in.rm = vec(CELL_DTYPE_F32, 4, rmv);
  in.rv = vec(CELL_DTYPE_F32, 4, rvv);
  in.ids = vec(CELL_DTYPE_I64, 6, iv);
  in.cls = vec(CELL_DTYPE_I32, 6, cv);
  in.cw = NULL;
  cell_tensor *leaves[6] = {in.x, in.probs, in.y, in.w4, in.b4, NULL};
  for (int i = 0; i < 5; i++) CHECK_OK(cell_tensor_set_requires_grad(leaves[i], 1));
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
    /* A first call makes what lives on (the leaves' gradient accumulators). */
    cell_tensor *warm = NULL;
    CHECK_OK(fns[k].fn(&in, &warm));
    cell_tensor_release(warm);
    long base = cell_alloc_live_blocks();
    int succeeded = 0, clean = 1;
    for (long n = 1; n < 400 && !succeeded; n++) {
      double rm0 = flat(in.rm, 1), rv0 = flat(in.rv, 1);
      cell_tensor *out = NULL;
      cell_set_seed(17);
      cell_alloc_fail_after(n);
      cell_status st = fns[k].fn(&in, &out);
      cell_alloc_fail_after(0);
      if (st == CELL_OK) {
        succeeded = 1;
        cell_tensor_release(out);
      } else {
        if (st != CELL_ERR_MEMORY || out != NULL || strlen(cell_last_error()) == 0) {
          clean = 0;
          fprintf(stderr, "%s: failing allocation %ld gave status %d: %s\n", fns[k].name, n, st,
                  cell_last_error());
        }
        if (fns[k].stats && (flat(in.rm, 1) != rm0 || flat(in.rv, 1) != rv0)) {
          clean = 0;
          fprintf(stderr, "%s: running statistics changed by a failed call\n", fns[k].name);
        }
      }
      if (cell_alloc_live_blocks() != base) {
        clean = 0;
        fprintf(stderr, "%s: leak after failing allocation %ld\n", fns[k].name, n);
      }
    }
    CHECKF(succeeded && clean, "%s", fns[k].name);
  }
  cell_tensor *ts[9] = {in.x, in.probs, in.y, in.w4, in.b4, in.rm, in.rv, in.ids, in.cls};
  release_all(ts, 9);
}

void test_nn_all(void) {
  test_softmax_values();
  test_batch_norm_running();
  test_losses_index_base();
  test_dropout_seed();
  test_nn_failed_allocations();
}
