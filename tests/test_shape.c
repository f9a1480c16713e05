/* test_shape.c - the copying shape ops (src/ops/shape.c): cat, stack,
 * gather, scatter, index_select, tile, repeat_interleave and pad, for every
 * dtype, on transposed, stride-0 expanded, offset and 0-d inputs; error
 * messages; exhaustive tile/repeat_interleave sizes on a strided bf16 view;
 * failed allocations. */
#include "check.h"

/* a transposed view (2-D) */
static cell_tensor *tr(cell_tensor *t) {
  int64_t sh[2] = {t->shape[1], t->shape[0]}, st[2] = {t->stride[1], t->stride[0]};
  cell_tensor *v = NULL;
  CHECK_OK(cell_tensor_new_view(t, 2, sh, st, t->offset, &v));
  return v;
}
/* t has the shape and (row-major) values given; on a mismatch say what
 * differs, naming the dtype, and return 0. */
static int eq(const cell_tensor *t, int nd, const int64_t *shape, const double *v) {
  char b1[128], b2[128];
  if (!t) {
    fprintf(stderr, "  no result\n");
    return 0;
  }
  if (!cell_shape_equal(t->ndim, t->shape, nd, shape)) {
    fprintf(stderr, "  %s: shape %s, want %s\n", cell_dtype_name(t->dtype),
            cell_shape_str(t->ndim, t->shape, b1, sizeof b1), cell_shape_str(nd, shape, b2, sizeof b2));
    return 0;
  }
  int64_t n = cell_shape_numel(nd, shape), idx[CELL_MAX_DIMS];
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i;
    for (int d = nd - 1; d >= 0; d--) { idx[d] = r % shape[d]; r /= shape[d]; }
    double x;
    if (cell_tensor_get(t, idx, &x) != CELL_OK) return 0;
    double e = v[i];
    if (t->dtype == CELL_DTYPE_BOOL) e = e != 0;
    if (x != e) {
      fprintf(stderr, "  %s: elem %lld: got %g want %g\n", cell_dtype_name(t->dtype), (long long)i, x, e);
      return 0;
    }
  }
  return 1;
}
#define S(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

static void test_values(cell_dtype dt) {
  cell_tensor *r = NULL;
  cell_tensor *m = from(dt, 2, S(2, 2), V(1, 2, 3, 4));
  cell_tensor *mt = tr(m); /* [[1,3],[2,4]] */
  cell_tensor *b = from(dt, 2, S(2, 2), V(5, 6, 7, 8));
  /* cat */
  cell_tensor *ts[3] = {mt, b, mt};
  CHECK_OK(cell_op_cat(2, ts, 1, &r)); CHECK(eq(r, 2, S(2, 4), V(1, 3, 5, 6, 2, 4, 7, 8))); CHECK(r && r->dtype == dt); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_cat(3, ts, 0, &r)); CHECK(eq(r, 2, S(6, 2), V(1, 3, 2, 4, 5, 6, 7, 8, 1, 3, 2, 4))); cell_tensor_release(r); r = NULL;
  /* stack */
  CHECK_OK(cell_op_stack(2, ts, 0, &r)); CHECK(eq(r, 3, S(2, 2, 2), V(1, 3, 2, 4, 5, 6, 7, 8))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_stack(2, ts, 1, &r)); CHECK(eq(r, 3, S(2, 2, 2), V(1, 3, 5, 6, 2, 4, 7, 8))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_stack(2, ts, 2, &r)); CHECK(eq(r, 3, S(2, 2, 2), V(1, 5, 3, 6, 2, 7, 4, 8))); cell_tensor_release(r); r = NULL;
  /* gather on transposed [[1,3],[2,4]] */
  cell_tensor *gi = from(CELL_DTYPE_I64, 2, S(2, 2), V(1, 1, 2, 1));
  CHECK_OK(cell_op_gather(mt, 1, gi, 1, &r)); CHECK(eq(r, 2, S(2, 2), V(1, 1, 4, 2))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_gather(mt, 0, gi, 1, &r)); CHECK(eq(r, 2, S(2, 2), V(1, 3, 2, 3))); cell_tensor_release(r); r = NULL;
  /* scatter: zeros [3,3] dim 0 with index [[0,1,2]] base 0 src transposed */
  cell_tensor *z = from(dt, 2, S(3, 3), V(0, 0, 0, 0, 0, 0, 0, 0, 0));
  cell_tensor *si = from(CELL_DTYPE_I32, 2, S(1, 2), V(2, 0));
  CHECK_OK(cell_op_scatter(z, 0, si, mt, 0, &r)); CHECK(eq(r, 2, S(3, 3), V(0, 3, 0, 0, 0, 0, 1, 0, 0))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_scatter(z, 1, si, mt, 0, &r)); CHECK(eq(r, 2, S(3, 3), V(3, 0, 1, 0, 0, 0, 0, 0, 0))); cell_tensor_release(r); r = NULL;
  /* index_select */
  cell_tensor *ii = from(CELL_DTYPE_U8, 1, S(3), V(1, 1, 0));
  CHECK_OK(cell_op_index_select(mt, 0, ii, 0, &r)); CHECK(eq(r, 2, S(3, 2), V(2, 4, 2, 4, 1, 3))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_index_select(mt, 1, ii, 0, &r)); CHECK(eq(r, 2, S(2, 3), V(3, 3, 1, 4, 4, 2))); cell_tensor_release(r); r = NULL;
  /* tile */
  CHECK_OK(cell_op_tile(mt, 2, S(1, 2), &r)); CHECK(eq(r, 2, S(2, 4), V(1, 3, 1, 3, 2, 4, 2, 4))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(mt, 3, S(2, 1, 1), &r)); CHECK(eq(r, 3, S(2, 2, 2), V(1, 3, 2, 4, 1, 3, 2, 4))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(mt, 1, S(3), &r)); CHECK(eq(r, 2, S(2, 6), V(1, 3, 1, 3, 1, 3, 2, 4, 2, 4, 2, 4))); cell_tensor_release(r); r = NULL;
  /* repeat_interleave */
  CHECK_OK(cell_op_repeat_interleave(mt, 2, 0, &r)); CHECK(eq(r, 2, S(4, 2), V(1, 3, 1, 3, 2, 4, 2, 4))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_repeat_interleave(mt, 3, 1, &r)); CHECK(eq(r, 2, S(2, 6), V(1, 1, 1, 3, 3, 3, 2, 2, 2, 4, 4, 4))); cell_tensor_release(r); r = NULL;
  /* pad */
  CHECK_OK(cell_op_pad(mt, 1, S(1, 1), 0, &r)); CHECK(eq(r, 2, S(2, 4), V(0, 1, 3, 0, 0, 2, 4, 0))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_pad(mt, 2, S(1, 0, 0, 1), 9, &r)); CHECK(eq(r, 2, S(3, 3), V(9, 1, 3, 9, 2, 4, 9, 9, 9))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_pad(mt, 2, S(-1, 1, 1, -1), 7, &r)); CHECK(eq(r, 2, S(2, 2), V(7, 7, 3, 7))); cell_tensor_release(r); r = NULL;
  cell_tensor *rel[] = {m, mt, b, gi, z, si, ii};
  for (unsigned i = 0; i < sizeof rel / sizeof *rel; i++) cell_tensor_release(rel[i]);
}

static void test_misc(void) {
  cell_tensor *r = NULL;
  /* promotion in cat */
  cell_tensor *a = from(CELL_DTYPE_I32, 1, S(2), V(1, 2)), *f = from(CELL_DTYPE_F64, 1, S(1), V(2.5));
  cell_tensor *ts[2] = {a, f};
  CHECK_OK(cell_op_cat(2, ts, 0, &r)); CHECK(eq(r, 1, S(3), V(1, 2, 2.5))); CHECK(r && r->dtype == CELL_DTYPE_F64); cell_tensor_release(r); r = NULL;
  /* stride-0 expanded input: [[1,2],[1,2],[1,2]] */
  cell_tensor *e = NULL;
  CHECK_OK(cell_tensor_new_view(a, 2, S(3, 2), S(0, 1), 0, &e));
  CHECK_OK(cell_op_pad(e, 1, S(0, 1), -1, &r)); CHECK(eq(r, 2, S(3, 3), V(1, 2, -1, 1, 2, -1, 1, 2, -1))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(e, 2, S(2, 2), &r)); CHECK(eq(r, 2, S(6, 4), V(1,2,1,2, 1,2,1,2, 1,2,1,2, 1,2,1,2, 1,2,1,2, 1,2,1,2))); cell_tensor_release(r); r = NULL;
  /* offset view: [2] of a */
  cell_tensor *o = NULL;
  CHECK_OK(cell_tensor_new_view(a, 1, S(1), S(1), 1, &o));
  CHECK_OK(cell_op_repeat_interleave(o, 3, 0, &r)); CHECK(eq(r, 1, S(3), V(2, 2, 2))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_repeat_interleave(a, 0, 0, &r)); CHECK(eq(r, 1, S(0), V(0))); cell_tensor_release(r); r = NULL;
  /* tile: vector [1,2,3] reps {2} ; reps {2,2} on [1,2]; reps 0 */
  cell_tensor *v3 = from(CELL_DTYPE_F32, 1, S(3), V(1, 2, 3));
  CHECK_OK(cell_op_tile(v3, 1, S(2), &r)); CHECK(eq(r, 1, S(6), V(1, 2, 3, 1, 2, 3))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(a, 2, S(2, 2), &r)); CHECK(eq(r, 2, S(2, 4), V(1, 2, 1, 2, 1, 2, 1, 2))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(v3, 1, S(0), &r)); CHECK(eq(r, 1, S(0), V(0))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(v3, 1, S(7), &r)); CHECK(r && r->shape[0] == 21); 
  if (r) { double x; int64_t i = 20; cell_tensor_get(r, &i, &x); CHECK(x == 3); i = 13; cell_tensor_get(r, &i, &x); CHECK(x == 2); }
  cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(v3, 0, NULL, &r)); CHECK(eq(r, 1, S(3), V(1, 2, 3))); cell_tensor_release(r); r = NULL;
  CHECK(cell_op_tile(v3, 1, S(-1), &r) == CELL_ERR_VALUE); CHECK_MSG("repetitions must be non-negative");
  /* pad */
  cell_tensor *v4 = from(CELL_DTYPE_F32, 1, S(4), V(1, 2, 3, 4));
  CHECK_OK(cell_op_pad(v4, 1, S(-1, -1), 0, &r)); CHECK(eq(r, 1, S(2), V(2, 3))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_pad(v4, 1, S(-5, 2), 6, &r)); CHECK(eq(r, 1, S(1), V(6))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_pad(v4, 1, S(-4, 0), 6, &r)); CHECK(eq(r, 1, S(0), V(0))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_pad(v4, 1, S(2, -3), 6, &r)); CHECK(eq(r, 1, S(3), V(6, 6, 1))); cell_tensor_release(r); r = NULL;
  CHECK(cell_op_pad(v4, 1, S(-5, 0), 6, &r) == CELL_ERR_VALUE); CHECK_MSG("gives the negative size -1");
  CHECK(cell_op_pad(v4, 2, S(0, 0, 0, 0), 6, &r) == CELL_ERR_VALUE); CHECK_MSG("2 (before, after) pairs for a 1-D tensor");
  CHECK_OK(cell_op_pad(v4, 1, S(INT64_MIN, INT64_MAX), 6, &r)); CHECK(eq(r, 1, S(3), V(6, 6, 6))); cell_tensor_release(r); r = NULL;
  CHECK(cell_op_pad(v4, 1, S(INT64_MIN, 0), 6, &r) == CELL_ERR_VALUE);
  CHECK(cell_op_pad(v4, 1, S(INT64_MAX, 1), 6, &r) == CELL_ERR_VALUE);
  CHECK_MSG("pad: padding (9223372036854775807, 1) of a size 4 in shape [4] gives a size above 1152921504606846975");
  CHECK_OK(cell_op_pad(v4, 0, NULL, 6, &r)); CHECK(eq(r, 1, S(4), V(1, 2, 3, 4))); cell_tensor_release(r); r = NULL;
  /* 3-D index_select, gather along middle dim */
  double d24[24]; for (int i = 0; i < 24; i++) d24[i] = i;
  cell_tensor *t3 = from(CELL_DTYPE_I64, 3, S(2, 3, 4), d24);
  cell_tensor *i1 = from(CELL_DTYPE_I64, 1, S(2), V(3, 1));
  CHECK_OK(cell_op_index_select(t3, 1, i1, 1, &r)); CHECK(eq(r, 3, S(2, 2, 4), V(8,9,10,11, 0,1,2,3, 20,21,22,23, 12,13,14,15))); cell_tensor_release(r); r = NULL;
  cell_tensor *i0 = from(CELL_DTYPE_I64, 0, NULL, V(2));
  CHECK_OK(cell_op_index_select(t3, 2, i0, 0, &r)); CHECK(eq(r, 3, S(2, 3, 1), V(2, 6, 10, 14, 18, 22))); cell_tensor_release(r); r = NULL;
  cell_tensor *g3 = from(CELL_DTYPE_I8, 3, S(1, 2, 2), V(2, 0, 1, 2));
  CHECK_OK(cell_op_gather(t3, 1, g3, 0, &r)); CHECK(eq(r, 3, S(1, 2, 2), V(8, 1, 4, 9))); cell_tensor_release(r); r = NULL;
  /* scatter with duplicates: last wins; src converted */
  cell_tensor *z = from(CELL_DTYPE_F32, 1, S(3), V(0, 0, 0)), *src = from(CELL_DTYPE_I64, 1, S(3), V(5, 6, 7));
  cell_tensor *di = from(CELL_DTYPE_I64, 1, S(3), V(1, 1, 3));
  CHECK_OK(cell_op_scatter(z, 0, di, src, 1, &r)); CHECK(eq(r, 1, S(3), V(6, 0, 7))); cell_tensor_release(r); r = NULL;
  /* errors */
  CHECK(cell_op_cat(0, ts, 0, &r) == CELL_ERR_VALUE); CHECK_MSG("non-empty list");
  cell_tensor *m22 = from(CELL_DTYPE_F32, 2, S(2, 2), V(1, 2, 3, 4)), *m33 = from(CELL_DTYPE_F32, 2, S(3, 3), V(1,2,3,4,5,6,7,8,9));
  cell_tensor *bad[2] = {m22, m33};
  CHECK(cell_op_cat(2, bad, 0, &r) == CELL_ERR_VALUE); CHECK_MSG("got shapes [2, 2] and [3, 3]");
  CHECK(cell_op_cat(2, bad, 2, &r) == CELL_ERR_INDEX); CHECK_MSG("dimension 2 out of range for a 2-D tensor");
  cell_tensor *bad2[2] = {v3, m22};
  CHECK(cell_op_cat(2, bad2, 0, &r) == CELL_ERR_VALUE); CHECK_MSG("got shapes [3] and [2, 2]");
  CHECK(cell_op_stack(2, bad, 0, &r) == CELL_ERR_VALUE); CHECK_MSG("same shape, got [2, 2] and [3, 3] (at position 1)");
  cell_tensor *ok2[2] = {m22, m22};
  CHECK(cell_op_stack(2, ok2, 3, &r) == CELL_ERR_INDEX); CHECK_MSG("dimension 3 out of range for stacking");
  cell_tensor *s0[1] = {i0};
  CHECK(cell_op_cat(1, s0, 0, &r) == CELL_ERR_VALUE); CHECK_MSG("zero-dimensional tensor (at position 0)");
  CHECK_OK(cell_op_stack(1, s0, 0, &r)); CHECK(eq(r, 1, S(1), V(2))); cell_tensor_release(r); r = NULL;
  cell_tensor *gi = from(CELL_DTYPE_I64, 2, S(1, 3), V(1, 3, 1));
  CHECK(cell_op_gather(m22, 0, gi, 1, &r) == CELL_ERR_VALUE); CHECK_MSG("index of shape [1, 3] is larger than the input");
  cell_tensor *gi2 = from(CELL_DTYPE_I64, 2, S(1, 2), V(1, 3));
  CHECK(cell_op_gather(m22, 0, gi2, 1, &r) == CELL_ERR_INDEX); CHECK_MSG("index 3 is out of range for a dimension of size 2");
  CHECK(strstr(cell_last_error(), "3") && strstr(cell_last_error(), "size 2"));
  cell_tensor *gz = from(CELL_DTYPE_I64, 2, S(1, 1), V(0));
  CHECK(cell_op_gather(m22, 1, gz, 1, &r) == CELL_ERR_INDEX); CHECK_MSG("index 0 is out of range");
  CHECK(cell_op_gather(m22, 1, m22, 1, &r) == CELL_ERR_TYPE); CHECK_MSG("must be an integer tensor");
  CHECK(cell_op_gather(m22, 2, gz, 1, &r) == CELL_ERR_INDEX); CHECK_MSG("dimension 2 out of range");
  cell_tensor *one = from(CELL_DTYPE_F32, 2, S(1, 1), V(1));
  cell_tensor *sidx = from(CELL_DTYPE_I64, 2, S(2, 2), V(1, 2, 2, 1));
  CHECK(cell_op_scatter(m22, 0, sidx, one, 1, &r) == CELL_ERR_VALUE); CHECK_MSG("larger than the source of shape [1, 1]");
  CHECK(cell_op_scatter(m22, 0, gi2, m22, 1, &r) == CELL_ERR_INDEX); CHECK_MSG("index 3 is out of range");
  CHECK(cell_op_index_select(m22, 0, gz, 1, &r) == CELL_ERR_VALUE); CHECK_MSG("must be 0-D or 1-D, got shape [1, 1]");
  CHECK(cell_op_index_select(m22, 0, v3, 1, &r) == CELL_ERR_TYPE); CHECK_MSG("must be an integer tensor");
  CHECK(cell_op_index_select(m22, 1, i1, 1, &r) == CELL_ERR_INDEX); CHECK_MSG("index 3 is out of range");
  CHECK(cell_op_repeat_interleave(m22, -1, 0, &r) == CELL_ERR_VALUE); CHECK_MSG("repeats must be non-negative");
  CHECK(cell_op_repeat_interleave(m22, 2, 2, &r) == CELL_ERR_INDEX); CHECK_MSG("dimension 2 out of range");
  CHECK(r == NULL);
  /* 0-d */
  CHECK_OK(cell_op_repeat_interleave(i0, 3, 0, &r)); CHECK(eq(r, 1, S(3), V(2, 2, 2))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_tile(i0, 2, S(2, 1), &r)); CHECK(eq(r, 2, S(2, 1), V(2, 2))); cell_tensor_release(r); r = NULL;
  cell_tensor *z0 = from(CELL_DTYPE_I64, 0, NULL, V(0));
  CHECK_OK(cell_op_gather(i0, 0, z0, 0, &r)); CHECK(eq(r, 0, NULL, V(2))); cell_tensor_release(r); r = NULL;
  CHECK_OK(cell_op_index_select(i0, 0, z0, 0, &r)); CHECK(eq(r, 0, NULL, V(2))); cell_tensor_release(r); r = NULL;
  cell_tensor *rel[] = {a, f, e, o, v3, v4, t3, i1, i0, g3, z, src, di, m22, m33, gi, gi2, gz, one, sidx, z0};
  for (unsigned i = 0; i < sizeof rel / sizeof *rel; i++) cell_tensor_release(rel[i]);
}

/* allocation failures: no leaks */
typedef cell_status (*opf)(cell_tensor *a, cell_tensor *idx, cell_tensor **o);
static cell_status f_cat(cell_tensor *a, cell_tensor *i, cell_tensor **o) { (void)i; cell_tensor *ts[2] = {a, a}; return cell_op_cat(2, ts, 1, o); }
static cell_status f_stack(cell_tensor *a, cell_tensor *i, cell_tensor **o) { (void)i; cell_tensor *ts[2] = {a, a}; return cell_op_stack(2, ts, 1, o); }
static cell_status f_gather(cell_tensor *a, cell_tensor *i, cell_tensor **o) { return cell_op_gather(a, 1, i, 0, o); }
static cell_status f_scatter(cell_tensor *a, cell_tensor *i, cell_tensor **o) { return cell_op_scatter(a, 1, i, a, 0, o); }
static cell_status f_isel(cell_tensor *a, cell_tensor *i, cell_tensor **o) { (void)i; cell_tensor *ix; CELL_TRY(cell_tensor_full(CELL_DTYPE_I32, 1, S(3), 1, &ix)); cell_status s = cell_op_index_select(a, 0, ix, 0, o); cell_tensor_release(ix); return s; }
static cell_status f_tile(cell_tensor *a, cell_tensor *i, cell_tensor **o) { (void)i; return cell_op_tile(a, 3, S(2, 2, 3), o); }
static cell_status f_rep(cell_tensor *a, cell_tensor *i, cell_tensor **o) { (void)i; return cell_op_repeat_interleave(a, 3, 1, o); }
static cell_status f_pad(cell_tensor *a, cell_tensor *i, cell_tensor **o) { (void)i; return cell_op_pad(a, 2, S(1, 1, 1, 1), 3, o); }

static void test_alloc(void) {
  opf fs[] = {f_cat, f_stack, f_gather, f_scatter, f_isel, f_tile, f_rep, f_pad};
  for (unsigned k = 0; k < sizeof fs / sizeof *fs; k++) {
    cell_tensor *a = from(CELL_DTYPE_F16, 2, S(2, 2), V(1, 2, 3, 4)), *at = tr(a);
    cell_tensor *ix = from(CELL_DTYPE_I64, 2, S(2, 2), V(0, 1, 1, 0));
    long base = cell_alloc_live_blocks();
    int done = 0;
    for (long n = 1; n < 100 && !done; n++) {
      cell_tensor *r = NULL;
      cell_alloc_fail_after(n);
      cell_status s = fs[k](at, ix, &r);
      cell_alloc_fail_after(0);
      if (s == CELL_OK) { done = 1; cell_tensor_release(r); }
      else CHECK(s == CELL_ERR_MEMORY && r == NULL);
      CHECK(cell_alloc_live_blocks() == base);
    }
    CHECK(done);
    cell_tensor_release(at); cell_tensor_release(a); cell_tensor_release(ix);
  }
}

/* Every tile of a transposed bf16 view for reps up to (3, 4, 5) (zeros
 * included), and every repeat_interleave count up to 5 along each dim. */
static void test_tile_repeat_sizes(void) {
  double v[6] = {1, 2, 3, 4, 5, 6};
  cell_tensor *a = from(CELL_DTYPE_BF16, 2, S(2, 3), v), *t = NULL, *r = NULL;
  int64_t tsh[2] = {3, 2}, tst[2] = {1, 3};
  REQUIRE_OK(cell_tensor_new_view(a, 2, tsh, tst, 0, &t)); /* t[i][j] = a[j][i] = 3j+i+1 */
  for (int r0 = 0; r0 <= 4; r0++)
    for (int r1 = 0; r1 <= 5; r1++)
      for (int r2 = 1; r2 <= 3; r2++) {
        int64_t reps[3] = {r2, r0, r1};
        r = NULL;
        CHECK_OK(cell_op_tile(t, 3, reps, &r));
        if (!r) continue;
        int bad = !cell_shape_equal(r->ndim, r->shape, 3, S(r2, 3 * r0, 2 * r1));
        for (int64_t k = 0; k < r2 && !bad; k++)
          for (int64_t i = 0; i < 3 * r0; i++)
            for (int64_t j = 0; j < 2 * r1; j++) {
              int64_t idx[3] = {k, i, j};
              double x = NAN;
              cell_tensor_get(r, idx, &x);
              if (x != 3 * (j % 2) + (i % 3) + 1) bad++;
            }
        CHECKF(!bad, "tile reps (%d, %d, %d)", r2, r0, r1);
        cell_tensor_release(r);
      }
  for (int rep = 0; rep <= 5; rep++)
    for (int d = 0; d < 2; d++) {
      r = NULL;
      CHECK_OK(cell_op_repeat_interleave(t, rep, d, &r));
      if (!r) continue;
      int bad = !cell_shape_equal(r->ndim, r->shape, 2, d == 0 ? S(3 * rep, 2) : S(3, 2 * rep));
      for (int64_t i = 0; i < r->shape[0] && !bad; i++)
        for (int64_t j = 0; j < r->shape[1]; j++) {
          int64_t idx[2] = {i, j};
          double x = NAN;
          cell_tensor_get(r, idx, &x);
          int64_t si = d == 0 ? i / rep : i, sj = d == 1 ? j / rep : j;
          if (x != 3 * sj + si + 1) bad++;
        }
      CHECKF(!bad, "repeat_interleave %d along dim %d", rep, d);
      cell_tensor_release(r);
    }
  cell_tensor_release(t);
  cell_tensor_release(a);
}

void test_shape_all(void) {
  long base = cell_alloc_live_blocks();
  for (int k = 0; k < NDT; k++) test_values(all_dtypes[k]);
  test_misc();
  test_tile_repeat_sizes();
  test_alloc();
  CHECK(cell_alloc_live_blocks() == base);
}
