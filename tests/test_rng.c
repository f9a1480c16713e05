/* test_rng.c - random generators: one per thread, generators of a host's
 * own, and streams that stay bit-identical whether or not other threads
 * draw beside them (4 threads against single-threaded runs). */
#include "check.h"
#include <pthread.h>
#include <sched.h>

#define NTHREADS 4
#define ROUNDS 200

/* What one round draws, in this order: rand f32, randn f64, randint i64,
 * dropout (p = 0.3) of ones f32. */
static const int64_t sizes[4] = {101, 77, 50, 128};

typedef struct {
  unsigned long long seed;
  int own;          /* 1: a generator of its own (cell_generator_new) made
                       current; 0: the thread's own, seeded by cell_set_seed */
  unsigned char *bytes;
  size_t n;
  int status;       /* CELL_OK, or the first failure */
  int *start;       /* threads wait for *start, to draw at the same time */
} job;

static size_t round_bytes(void) {
  return (size_t)sizes[0] * 4 + (size_t)sizes[1] * 8 + (size_t)sizes[2] * 8 + (size_t)sizes[3] * 4;
}

static void keep(job *j, cell_tensor *t) {
  size_t nb = cell_tensor_nbytes(t);
  memcpy(j->bytes + j->n, cell_tensor_data_ptr(t), nb);
  j->n += nb;
  cell_tensor_release(t);
}

/* One round of draws from the calling thread's current generator. */
static cell_status draw_round(job *j) {
  cell_tensor *t = NULL, *ones = NULL;
  CELL_TRY(cell_tensor_rand(CELL_DTYPE_F32, 1, &sizes[0], &t));
  keep(j, t);
  CELL_TRY(cell_tensor_randn(CELL_DTYPE_F64, 1, &sizes[1], &t));
  keep(j, t);
  CELL_TRY(cell_tensor_randint(-1000, 1000, CELL_DTYPE_I64, 1, &sizes[2], &t));
  keep(j, t);
  CELL_TRY(cell_tensor_full(CELL_DTYPE_F32, 1, &sizes[3], 1.0, &ones));
  cell_status s = cell_op_dropout(ones, 0.3, 1, &t);
  cell_tensor_release(ones);
  if (s != CELL_OK) return s;
  keep(j, t);
  return CELL_OK;
}

static void *run_job(void *arg) {
  job *j = arg;
  cell_generator *g = NULL, *prev = NULL;
  j->n = 0;
  j->status = CELL_OK;
  while (j->start && !__atomic_load_n(j->start, __ATOMIC_ACQUIRE)) sched_yield();
  if (j->own) {
    j->status = cell_generator_new(j->seed, &g);
    if (j->status != CELL_OK) return NULL;
    prev = cell_generator_use(g);
  } else {
    cell_set_seed(j->seed);
  }
  for (int r = 0; r < ROUNDS && j->status == CELL_OK; r++) j->status = draw_round(j);
  if (j->own) {
    cell_generator_use(prev);
    cell_generator_free(g);
  }
  return NULL;
}

/* 4 jobs (2 on generators of their own, 2 on their thread's) run alone,
 * one after the other on this thread, then together on 4 threads: every
 * byte must match. The alone runs also leave this thread's stream where a
 * run of its own would. */
static void test_threads_match_alone(void) {
  job ref[NTHREADS], par[NTHREADS];
  size_t cap = round_bytes() * ROUNDS;
  int start = 0;
  for (int i = 0; i < NTHREADS; i++) {
    ref[i] = (job){1000u + (unsigned)i * 7919u, i % 2, malloc(cap), 0, 0, NULL};
    par[i] = ref[i];
    par[i].bytes = malloc(cap);
    par[i].start = &start;
  }
  for (int i = 0; i < NTHREADS; i++) run_job(&ref[i]);
  pthread_t th[NTHREADS];
  int started[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) started[i] = pthread_create(&th[i], NULL, run_job, &par[i]) == 0;
  __atomic_store_n(&start, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < NTHREADS; i++)
    if (started[i]) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) {
    CHECK(started[i]);
    CHECKF(ref[i].status == CELL_OK && par[i].status == CELL_OK, "job %d: %d / %d", i,
           ref[i].status, par[i].status);
    CHECKF(ref[i].n == cap && par[i].n == cap, "job %d: %zu / %zu bytes", i, ref[i].n, par[i].n);
    CHECKF(memcmp(ref[i].bytes, par[i].bytes, cap) == 0, "job %d: threaded draws differ", i);
    for (int k = 0; k < i; k++) /* and the seeds do give different streams */
      CHECKF(memcmp(ref[i].bytes, ref[k].bytes, 64) != 0, "jobs %d and %d drew the same", k, i);
  }
  for (int i = 0; i < NTHREADS; i++) {
    free(ref[i].bytes);
    free(par[i].bytes);
  }
}

/* t's bytes begin u's. */
static int same_prefix(const cell_tensor *t, const cell_tensor *u) {
  return memcmp(cell_tensor_data_ptr(t), cell_tensor_data_ptr(u), cell_tensor_nbytes(t)) == 0;
}

/* Seeding or drawing from one generator leaves every other where it was. */
static void test_independent_streams(void) {
  int64_t n = 64, n2 = 128;
  cell_tensor *a1 = NULL, *a2 = NULL, *b = NULL, *whole = NULL, *t = NULL;
  cell_generator *g = NULL, *h = NULL;
  REQUIRE_OK(cell_generator_new(5, &g));
  REQUIRE_OK(cell_generator_new(5, &h));
  /* g draws 64, h is reseeded and draws, then g draws 64 more ... */
  cell_generator *prev = cell_generator_use(g);
  CHECK(prev == NULL); /* this thread's own was current */
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, &n, &a1));
  CHECK(cell_generator_use(h) == g);
  cell_set_seed(9); /* seeds h, the current one */
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, &n2, &b));
  cell_generator_use(g);
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, &n, &a2));
  /* ... which is what 128 draws in one go from seed 5 give. */
  cell_generator_seed(g, 5);
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, &n2, &whole));
  CHECK(whole && a1 && same_prefix(a1, whole));
  CHECK(whole && a2 && memcmp(cell_tensor_data_ptr(a2), (char *)cell_tensor_data_ptr(whole) + 64 * 8, 64 * 8) == 0);
  /* h reseeded with 9 draws what this thread's own draws from seed 9. */
  cell_generator_use(NULL);
  cell_set_seed(9);
  CHECK_OK(cell_tensor_rand(CELL_DTYPE_F64, 1, &n2, &t));
  CHECK(t && b && same_prefix(b, t));
  cell_tensor *ts[5] = {a1, a2, b, whole, t};
  for (int i = 0; i < 5; i++) cell_tensor_release(ts[i]);
  /* Freeing the current generator makes the thread's own current again. */
  cell_generator_use(g);
  cell_generator_free(g);
  CHECK(cell_generator_use(NULL) == NULL);
  cell_generator_free(h);
  cell_generator_free(NULL);
  cell_generator_seed(NULL, 3); /* NULL: the current one */
  CHECK(cell_generator_new(1, NULL) == CELL_ERR_VALUE);
  cell_alloc_fail_after(1);
  g = NULL;
  CHECK(cell_generator_new(1, &g) == CELL_ERR_MEMORY && g == NULL);
  CHECK_MSG("out of memory");
  cell_alloc_fail_after(0);
  cell_error_clear();
}

/* A thread that never seeds starts where a fresh generator of 5489 does. */
static void *fresh_thread(void *arg) {
  int64_t n = 32;
  cell_tensor **out = arg;
  if (cell_tensor_randn(CELL_DTYPE_F32, 1, &n, out) != CELL_OK) *out = NULL;
  return NULL;
}

static void test_fresh_thread(void) {
  int64_t n = 32;
  cell_tensor *theirs = NULL, *ours = NULL;
  pthread_t th;
  cell_set_seed(1); /* this thread's seed is no other thread's business */
  REQUIRE_OK(pthread_create(&th, NULL, fresh_thread, &theirs) == 0 ? CELL_OK : CELL_ERR_RUNTIME);
  pthread_join(th, NULL);
  cell_generator *g = NULL;
  REQUIRE_OK(cell_generator_new(5489, &g));
  cell_generator *prev = cell_generator_use(g);
  CHECK_OK(cell_tensor_randn(CELL_DTYPE_F32, 1, &n, &ours));
  cell_generator_use(prev);
  cell_generator_free(g);
  CHECK(theirs && ours && same_prefix(theirs, ours));
  cell_tensor_release(theirs);
  cell_tensor_release(ours);
}

void test_rng_all(void) {
  test_independent_streams();
  test_fresh_thread();
  test_threads_match_alone();
}
