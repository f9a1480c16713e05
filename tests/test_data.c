/* test_data.c - the data pipeline (include/cell_data.h): per-sample
 * random streams, TypeCast and OneHot, and a pipeline whose outputs are
 * the same bytes for 0, 1 and 4 worker threads; errors name the sample
 * and column and come out in order; freeing mid-epoch stops the workers. */
#include "check.h"
#include "cell_data.h"

/* A test transform: adds a random integer in [0, 100] drawn from the
 * sample's stream to every element (float32), and fails on a sample whose
 * first element is `fail_at`; with `grow` it makes the sample of value
 * `grow` one element longer. */
typedef struct {
  float fail_at, grow;
} noise_params;

static cell_status noise_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                               uint64_t index, char *err, size_t errlen) {
  const noise_params *p = op->params;
  float *x = cell_tensor_data_ptr(in);
  if (x[0] == p->fail_at) {
    snprintf(err, errlen, "Noise: refused the value %g", (double)x[0]);
    return CELL_ERR_VALUE;
  }
  if (x[0] == p->grow) {
    int64_t n = cell_tensor_numel(in) + 1;
    return cell_tensor_full(CELL_DTYPE_F32, 1, &n, 0, out);
  }
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  float add = (float)cell_data_rng_int(&r, 0, 100);
  for (int64_t i = 0; i < cell_tensor_numel(in); i++) x[i] += add;
  cell_tensor_retain(in);
  *out = in;
  return CELL_OK;
}

static cell_sample_op noise_op(noise_params *p) {
  cell_sample_op op = {"Noise", noise_apply, NULL, p};
  return op;
}

static void test_rng_streams(void) {
  cell_data_rng a, b, c;
  cell_data_rng_init(&a, 7, 3, 0);
  cell_data_rng_init(&b, 7, 3, 0);
  cell_data_rng_init(&c, 7, 4, 0);
  int same = 1, differ = 0;
  for (int i = 0; i < 16; i++) {
    uint32_t x = cell_data_rng_u32(&a), y = cell_data_rng_u32(&b), z = cell_data_rng_u32(&c);
    same &= x == y;
    differ |= x != z;
  }
  CHECK(same);
  CHECK(differ);
  int in_range = 1;
  double sum = 0;
  for (int i = 0; i < 1000; i++) {
    int64_t v = cell_data_rng_int(&a, -2, 2);
    in_range &= v >= -2 && v <= 2;
    double u = cell_data_rng_uniform(&a);
    in_range &= u >= 0 && u < 1;
    sum += u;
  }
  CHECK(in_range);
  CHECK(fabs(sum / 1000 - 0.5) < 0.05);
  CHECK(cell_data_rng_int(&a, 5, 5) == 5);
}

static void test_builtin_ops(void) {
  cell_sample_op *oh = NULL, *tc = NULL;
  REQUIRE_OK(cell_sample_op_onehot(4, 1, 0, CELL_DTYPE_COUNT, &oh));
  REQUIRE_OK(cell_sample_op_typecast(CELL_DTYPE_F64, &tc));
  int64_t two = 2;
  cell_tensor *lab = NULL, *o = NULL, *d = NULL;
  REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_I64, 1, &two, &lab));
  ((int64_t *)cell_tensor_data_ptr(lab))[0] = 4;
  ((int64_t *)cell_tensor_data_ptr(lab))[1] = 1;
  CHECK_OK(cell_sample_op_run(oh, lab, 0, 0, &o));
  CHECK(cell_tensor_ndim(o) == 2 && cell_tensor_dim(o, 1) == 4 && cell_tensor_dtype(o) == CELL_DTYPE_I64);
  const int64_t want[8] = {0, 0, 0, 1, 1, 0, 0, 0};
  CHECK(memcmp(cell_tensor_data_ptr(o), want, sizeof want) == 0);
  CHECK_OK(cell_sample_op_run(tc, o, 0, 0, &d));
  CHECK(cell_tensor_dtype(d) == CELL_DTYPE_F64 && ((double *)cell_tensor_data_ptr(d))[3] == 1.0);
  cell_tensor_release(o);
  cell_tensor_release(d);
  ((int64_t *)cell_tensor_data_ptr(lab))[1] = 5;
  o = NULL;
  CHECK(cell_sample_op_run(oh, lab, 0, 0, &o) == CELL_ERR_VALUE && o == NULL);
  CHECK_MSG("OneHot: label 5 is out of range [1, 4] for 4 classes");
  cell_tensor_release(lab);
  cell_sample_op *bad = NULL;
  CHECK(cell_sample_op_onehot(0, 1, 0, CELL_DTYPE_F32, &bad) == CELL_ERR_VALUE && bad == NULL);
  CHECK(cell_sample_op_onehot(3, 1, 1.0, CELL_DTYPE_F32, &bad) == CELL_ERR_VALUE && bad == NULL);
  CHECK(cell_sample_op_typecast((cell_dtype)99, &bad) == CELL_ERR_TYPE && bad == NULL);
  oh->destroy(oh);
  tc->destroy(tc);
}

/* Every output's bytes of one epoch, concatenated (malloc'd), or NULL
 * with *st the failure. */
static unsigned char *run_epoch(cell_data_pipeline *p, const int64_t *order, int64_t n, int64_t batch, int workers,
                                size_t *len, cell_status *st, int *outputs) {
  *st = cell_data_pipeline_start(p, order, n, batch, 0, 1234, workers, 3);
  if (*st != CELL_OK) return NULL;
  unsigned char *buf = NULL;
  size_t used = 0;
  *outputs = 0;
  for (;;) {
    cell_tensor *outs[2] = {NULL, NULL};
    int done = 0;
    *st = cell_data_pipeline_next(p, outs, &done);
    if (*st != CELL_OK || done) break;
    (*outputs)++;
    for (int c = 0; c < 2; c++) {
      size_t nb = cell_tensor_nbytes(outs[c]);
      buf = realloc(buf, used + nb + 1);
      memcpy(buf + used, cell_tensor_data_ptr(outs[c]), nb);
      used += nb;
      cell_tensor_release(outs[c]);
    }
  }
  *len = used;
  return buf;
}

static void test_pipeline_workers(void) {
  const int64_t N = 40, D = 3;
  int64_t shp[2] = {N, D};
  cell_tensor *x = NULL, *y = NULL;
  REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_F32, 2, shp, &x));
  REQUIRE_OK(cell_tensor_arange(0, (double)N, 1, CELL_DTYPE_I64, &y));
  float *xp = cell_tensor_data_ptr(x);
  for (int64_t i = 0; i < N * D; i++) xp[i] = (float)(i / D) * 1000;
  noise_params np = {-1, -1};
  cell_sample_op op = noise_op(&np);
  cell_tensor *cols[2] = {x, y};
  const char *names[2] = {"image", "label"};
  cell_data_pipeline *p = NULL;
  REQUIRE_OK(cell_data_pipeline_new(2, cols, names, &p));
  REQUIRE_OK(cell_data_pipeline_add_op(p, 0, &op));
  int64_t order[40];
  for (int64_t i = 0; i < N; i++) order[i] = (i * 7) % N; /* a permutation */
  size_t len0 = 0, len = 0;
  cell_status st;
  int outs0 = 0, outs = 0;
  unsigned char *ref = run_epoch(p, order, N, 8, 0, &len0, &st, &outs0);
  CHECK(st == CELL_OK && outs0 == 5 && len0 == (size_t)N * (D * 4 + 8));
  /* row order and labels as the order says; noise constant per sample */
  if (ref) {
    const float *b0 = (const float *)ref;
    const int64_t *l0 = (const int64_t *)(ref + 8 * D * 4);
    CHECK(l0[1] == 7 && b0[D] >= 7000 && b0[D] <= 7100 && b0[D] == b0[D + 1]);
  }
  for (int w = 1; w <= 4; w += 3) {
    for (int rep = 0; rep < 3; rep++) {
      unsigned char *got = run_epoch(p, order, N, 8, w, &len, &st, &outs);
      CHECKF(st == CELL_OK && len == len0 && ref && got && memcmp(got, ref, len) == 0,
             "%d workers give other bytes than none", w);
      free(got);
    }
  }
  /* samples, not batches */
  unsigned char *one = run_epoch(p, order, N, 0, 4, &len, &st, &outs);
  CHECK(st == CELL_OK && outs == N && len == len0 && ref && one && memcmp(one, ref, 4 * D) == 0);
  free(one);
  free(ref);
  cell_data_pipeline_free(p);
  /* freed mid-epoch, with workers waiting on a full queue */
  REQUIRE_OK(cell_data_pipeline_new(2, cols, names, &p));
  REQUIRE_OK(cell_data_pipeline_add_op(p, 0, &op));
  REQUIRE_OK(cell_data_pipeline_start(p, order, N, 2, 0, 1, 4, 2));
  cell_tensor *o2[2] = {NULL, NULL};
  int done = 0;
  CHECK_OK(cell_data_pipeline_next(p, o2, &done));
  cell_tensor_release(o2[0]);
  cell_tensor_release(o2[1]);
  cell_data_pipeline_free(p);
  /* errors: an op's failure at sample 11 comes after the batches before it */
  noise_params bad = {(float)order[10] * 1000, -1};
  cell_sample_op bop = noise_op(&bad);
  REQUIRE_OK(cell_data_pipeline_new(2, cols, names, &p));
  REQUIRE_OK(cell_data_pipeline_add_op(p, 0, &bop));
  unsigned char *part = run_epoch(p, order, N, 4, 4, &len, &st, &outs);
  CHECK(st == CELL_ERR_VALUE && outs == 2);
  CHECK_MSG("map: sample 11 column 'image': Noise: refused the value 30000");
  free(part);
  cell_tensor *o3[2] = {NULL, NULL};
  done = 0;
  CHECK(cell_data_pipeline_next(p, o3, &done) == CELL_OK && done == 1); /* the epoch is over */
  cell_data_pipeline_free(p);
  /* a batch of unequal shapes names the sample */
  noise_params grow = {-1, (float)order[5] * 1000};
  cell_sample_op gop = noise_op(&grow);
  REQUIRE_OK(cell_data_pipeline_new(2, cols, names, &p));
  REQUIRE_OK(cell_data_pipeline_add_op(p, 0, &gop));
  part = run_epoch(p, order, N, 4, 2, &len, &st, &outs);
  CHECK(st == CELL_ERR_VALUE && outs == 1);
  CHECK_MSG("batch: sample 6 column 'image' has shape (4,), expected (3,)");
  free(part);
  /* bad arguments */
  int64_t out_of_range = N;
  CHECK(cell_data_pipeline_start(p, &out_of_range, 1, 1, 0, 0, 0, 1) == CELL_ERR_INDEX);
  CHECK_MSG("sample 1 is row 40, out of range for 40 rows");
  CHECK(cell_data_pipeline_start(p, order, N, 1, 0, 0, 65, 1) == CELL_ERR_VALUE);
  CHECK(cell_data_pipeline_add_op(p, 2, &op) == CELL_ERR_INDEX);
  cell_data_pipeline_free(p);
  int64_t s5 = 5;
  cell_tensor *z = NULL;
  REQUIRE_OK(cell_tensor_empty(CELL_DTYPE_F32, 1, &s5, &z));
  cell_tensor *mixed[2] = {x, z};
  p = NULL;
  CHECK(cell_data_pipeline_new(2, mixed, names, &p) == CELL_ERR_VALUE && p == NULL);
  CHECK_MSG("column 'label' has 5 rows but column 'image' has 40");
  cell_tensor_release(z);
  cell_tensor_release(x);
  cell_tensor_release(y);
}

void test_data_all(void) {
  test_rng_streams();
  test_builtin_ops();
  test_pipeline_workers();
}
