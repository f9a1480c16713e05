/* test_optim_many.c - cell_optim_adam_steps (src/ops/optim_many.c): many
 * Adam and AdamW steps in one call give the bits of the same steps taken
 * one by one, at 1 thread and at 2 (small parameters shared out, large
 * ones split, each as its own step is); a parameter named twice is
 * stepped twice, in order; a bad entry is reported by its index and
 * nothing is updated; bad arguments are errors. */
#include "check.h"

#define NP 40

/* Sizes: mostly small (shared out), two past CELL_ITER_GRAIN (split). */
static int64_t size_of(int i) { return i == 7 || i == 30 ? 70000 + i : 1 + (i * 977) % 5000; }

typedef struct {
  cell_tensor *p[NP], *g[NP], *m[NP], *v[NP];
  cell_adam_config c[NP];
} set;

static void make_set(set *s, uint64_t seed) {
  cell_set_seed(seed);
  for (int i = 0; i < NP; i++) {
    int64_t sh[1] = {size_of(i)};
    CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, sh, &s->p[i]));
    CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, sh, &s->g[i]));
    CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, sh, &s->m[i]));
    CHECK_OK(cell_tensor_rand(CELL_DTYPE_F32, 1, sh, &s->v[i]));
    cell_adam_config c = {0.001 * (1 + i % 3), 0.9, 0.999, 1e-8, i % 4 == 0 ? 0.0 : 0.01, 1.0, 3, i % 2};
    s->c[i] = c;
  }
}

static void free_set(set *s) {
  for (int i = 0; i < NP; i++) {
    cell_tensor_release(s->p[i]);
    cell_tensor_release(s->g[i]);
    cell_tensor_release(s->m[i]);
    cell_tensor_release(s->v[i]);
  }
}

static int same_bits(const cell_tensor *a, const cell_tensor *b) {
  return cell_tensor_nbytes(a) == cell_tensor_nbytes(b) &&
         memcmp(cell_tensor_data_ptr(a), cell_tensor_data_ptr(b), cell_tensor_nbytes(a)) == 0;
}

static void test_matches_one_by_one(void) {
  int prev = cell_get_num_threads();
  for (int threads = 1; threads <= 2; threads++) {
    set a, b;
    make_set(&a, 21);
    make_set(&b, 21);
    cell_set_num_threads(1);
    for (int i = 0; i < NP; i++) CHECK_OK(cell_optim_adam_step(a.p[i], a.g[i], a.m[i], a.v[i], &a.c[i]));
    cell_set_num_threads(threads);
    int64_t bad = 99;
    CHECK_OK(cell_optim_adam_steps(NP, b.p, (const cell_tensor *const *)b.g, b.m, b.v, b.c, &bad));
    CHECK(bad == -1);
    int same = 1;
    for (int i = 0; i < NP; i++)
      same &= same_bits(a.p[i], b.p[i]) && same_bits(a.m[i], b.m[i]) && same_bits(a.v[i], b.v[i]);
    CHECKF(same, "%d threads", threads);
    free_set(&a);
    free_set(&b);
  }
  cell_set_num_threads(prev);
}

/* The same parameter (and moments) twice: two steps in order, as two
 * calls would take them (the steps then run one after the other). */
static void test_repeated(void) {
  int prev = cell_get_num_threads();
  cell_set_num_threads(2);
  set a, b;
  make_set(&a, 5);
  make_set(&b, 5);
  a.c[1].step = 4;
  b.c[1].step = 4;
  for (int i = 0; i < 2; i++) CHECK_OK(cell_optim_adam_step(a.p[0], a.g[0], a.m[0], a.v[0], &a.c[i]));
  for (int i = 2; i < NP; i++) CHECK_OK(cell_optim_adam_step(a.p[i], a.g[i], a.m[i], a.v[i], &a.c[i]));
  cell_tensor *p[NP], *m[NP], *v[NP];
  const cell_tensor *g[NP];
  for (int i = 0; i < NP; i++) {
    int j = i == 1 ? 0 : i;
    p[i] = b.p[j], g[i] = b.g[j], m[i] = b.m[j], v[i] = b.v[j];
  }
  CHECK_OK(cell_optim_adam_steps(NP, p, g, m, v, b.c, NULL));
  int same = 1;
  for (int i = 0; i < NP; i++) same &= i == 1 || same_bits(a.p[i], b.p[i]);
  CHECK(same);
  free_set(&a);
  free_set(&b);
  cell_set_num_threads(prev);
}

/* A bad entry: its index, the check's error, and no parameter changed. */
static void test_bad_entry(void) {
  set a;
  make_set(&a, 8);
  cell_tensor *before[NP];
  for (int i = 0; i < NP; i++) CHECK_OK(cell_tensor_clone(a.p[i], &before[i]));
  int64_t sh[1] = {3};
  cell_tensor *short_grad = NULL;
  CHECK_OK(cell_tensor_full(CELL_DTYPE_F32, 1, sh, 1, &short_grad));
  const cell_tensor *g[NP];
  for (int i = 0; i < NP; i++) g[i] = i == 17 ? short_grad : a.g[i];
  int64_t bad = -5;
  CHECK(cell_optim_adam_steps(NP, a.p, g, a.m, a.v, a.c, &bad) == CELL_ERR_VALUE);
  CHECK(bad == 17);
  CHECK_MSG("the gradient has shape [3]");
  a.c[3].beta1 = 1.5;
  CHECK(cell_optim_adam_steps(NP, a.p, (const cell_tensor *const *)a.g, a.m, a.v, a.c, &bad) == CELL_ERR_VALUE);
  CHECK(bad == 3);
  CHECK_MSG("beta1 must be in [0, 1)");
  int same = 1;
  for (int i = 0; i < NP; i++) same &= same_bits(a.p[i], before[i]);
  CHECK(same);
  CHECK(cell_optim_adam_steps(-1, a.p, g, a.m, a.v, a.c, &bad) == CELL_ERR_VALUE);
  CHECK(cell_optim_adam_steps(2, NULL, g, a.m, a.v, a.c, &bad) == CELL_ERR_VALUE);
  CHECK_OK(cell_optim_adam_steps(0, NULL, NULL, NULL, NULL, NULL, &bad));
  for (int i = 0; i < NP; i++) cell_tensor_release(before[i]);
  cell_tensor_release(short_grad);
  free_set(&a);
}

void test_optim_many_all(void) {
  test_matches_one_by_one();
  test_repeated();
  test_bad_entry();
}
