/* test_sort.c - the ordering and rearranging ops through the C API
 * (src/ops/sort.c, scan.c, triangle.c, src/autograd/rules_sort.c): 0-based
 * indices, and every allocation failing in turn (a MemoryError, nothing
 * leaked, then success). */
#include "check.h"

typedef cell_status (*sort_fn)(const cell_tensor *a, cell_tensor **out);

static cell_status f_sort(const cell_tensor *a, cell_tensor **out) {
  cell_tensor *i = NULL;
  cell_status s = cell_op_sort(a, 1, 1, 0, out, &i);
  cell_tensor_release(i);
  return s;
}
static cell_status f_argsort(const cell_tensor *a, cell_tensor **out) {
  return cell_op_sort(a, 0, 0, 0, NULL, out);
}
static cell_status f_topk_heap(const cell_tensor *a, cell_tensor **out) {
  cell_tensor *i = NULL;
  cell_status s = cell_op_topk(a, 3, 1, 1, 1, 0, out, &i);
  cell_tensor_release(i);
  return s;
}
static cell_status f_topk_select(const cell_tensor *a, cell_tensor **out) {
  return cell_op_topk(a, 30, 1, 0, 1, 0, out, NULL);
}
static cell_status f_median(const cell_tensor *a, cell_tensor **out) {
  cell_tensor *i = NULL;
  cell_status s = cell_op_median(a, 0, 0, 0, out, &i);
  cell_tensor_release(i);
  return s;
}
static cell_status f_median_all(const cell_tensor *a, cell_tensor **out) {
  return cell_op_median_all(a, out);
}
static cell_status f_unique(const cell_tensor *a, cell_tensor **out) {
  cell_tensor *inv = NULL, *cnt = NULL;
  cell_status s = cell_op_unique(a, 0, out, &inv, &cnt);
  cell_tensor_release(inv);
  cell_tensor_release(cnt);
  return s;
}
static cell_status f_cumprod(const cell_tensor *a, cell_tensor **out) {
  return cell_op_cumprod(a, 1, out);
}
static cell_status f_logsumexp(const cell_tensor *a, cell_tensor **out) {
  int dims[1] = {0};
  return cell_op_logsumexp(a, 1, dims, 0, out);
}
static cell_status f_tril(const cell_tensor *a, cell_tensor **out) { return cell_op_tril(a, -1, out); }
static cell_status f_flip(const cell_tensor *a, cell_tensor **out) {
  int dims[2] = {0, 1};
  return cell_op_flip(a, 2, dims, out);
}
static cell_status f_roll(const cell_tensor *a, cell_tensor **out) {
  int64_t shifts[2] = {3, -7};
  int dims[2] = {1, 0};
  return cell_op_roll(a, 2, shifts, dims, out);
}
static cell_status f_roll_flat(const cell_tensor *a, cell_tensor **out) {
  int64_t shift = 5;
  return cell_op_roll(a, 0, &shift, NULL, out);
}
static cell_status f_diag(const cell_tensor *a, cell_tensor **out) { return cell_op_diag(a, 2, out); }
static cell_status f_trace(const cell_tensor *a, cell_tensor **out) { return cell_op_trace(a, out); }

static void test_failed_allocations(void) {
  static const struct {
    const char *name;
    sort_fn fn;
  } ops[] = {{"sort", f_sort},           {"argsort", f_argsort},     {"topk heap", f_topk_heap},
             {"topk select", f_topk_select}, {"median", f_median}, {"median_all", f_median_all},
             {"unique", f_unique},       {"cumprod", f_cumprod},     {"logsumexp", f_logsumexp},
             {"tril", f_tril},           {"flip", f_flip},           {"roll", f_roll},
             {"roll flat", f_roll_flat}, {"diag", f_diag},           {"trace", f_trace}};
  int64_t s[2] = {40, 40};
  double *v = malloc(sizeof(double) * 1600);
  for (int i = 0; i < 1600; i++) v[i] = (i * 7) % 13 - 6;
  cell_tensor *a = from(CELL_DTYPE_F32, 2, s, v);
  free(v);
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    long base = cell_alloc_live_blocks();
    int succeeded = 0, clean = 1;
    for (long n = 1; n < 100 && !succeeded; n++) {
      cell_tensor *out = NULL;
      cell_alloc_fail_after(n);
      cell_status st = ops[k].fn(a, &out);
      cell_alloc_fail_after(0);
      if (st == CELL_OK) {
        succeeded = 1;
        cell_tensor_release(out);
      } else if (st != CELL_ERR_MEMORY || out != NULL || strlen(cell_last_error()) == 0) {
        clean = 0;
        fprintf(stderr, "%s: status %d after failing allocation %ld: %s\n", ops[k].name, (int)st, n,
                cell_last_error());
      }
      if (cell_alloc_live_blocks() != base) {
        clean = 0;
        fprintf(stderr, "%s: leak after failing allocation %ld\n", ops[k].name, n);
      }
    }
    CHECKF(succeeded && clean, "%s", ops[k].name);
  }
  cell_tensor_release(a);
}

static void test_zero_based(void) {
  int64_t s[1] = {5};
  double v[5] = {3, -1, 4, -1, 5};
  cell_tensor *a = from(CELL_DTYPE_F64, 1, s, v), *val = NULL, *idx = NULL;
  REQUIRE_OK(cell_op_sort(a, 0, 0, 0, &val, &idx));
  double want_v[5] = {-1, -1, 3, 4, 5}, want_i[5] = {1, 3, 0, 2, 4};
  for (int i = 0; i < 5; i++) CHECK(flat(val, i) == want_v[i] && flat(idx, i) == want_i[i]);
  cell_tensor_release(val);
  cell_tensor_release(idx);
  REQUIRE_OK(cell_op_topk(a, 2, 0, 1, 1, 0, &val, &idx));
  CHECK(flat(val, 0) == 5 && flat(idx, 0) == 4 && flat(val, 1) == 4 && flat(idx, 1) == 2);
  cell_tensor_release(val);
  cell_tensor_release(idx);
  CHECK(cell_op_topk(a, 6, 0, 1, 1, 0, &val, &idx) == CELL_ERR_VALUE);
  CHECK_MSG("k = 6");
  cell_tensor_release(a);
}

void test_sort_all(void) {
  test_failed_allocations();
  test_zero_based();
}
