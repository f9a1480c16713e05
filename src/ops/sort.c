/* sort.c - sort, topk, median and unique: kernels that order the elements
 * of each line.
 *
 * Every element becomes a record (an order-preserving 64-bit key, its
 * position in the line); a line is sorted by a stable LSD radix sort on
 * the keys (insertion sort for short lines), and topk / median select with
 * an expected-linear quickselect on the total order (key, position), so
 * ties go to the earlier element (small k: one pass that keeps the k
 * best, float lines filtered 16 elements at a time against the worst
 * kept). Values are copied from the input by their positions, so every
 * dtype keeps its exact bits. Independent lines run in parallel when there
 * is enough work. */
#include "kernels.h"
#include "kernel_list.h"
#include "lines.h"
#include "../core/alloc.h"
#include "../core/iter.h"
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Work (elements times a cost factor: 4 for a sort, 1 for a selection)
 * below which lines run serially: the engine's bar (iter.h), which keeps
 * OpenMP's spinning workers away from small ops. */
#define SORT_GRAIN CELL_PARALLEL_GRAIN

/* --- the record sorts ---------------------------------------------------------- */

static void insertion_sort(cell_keyrec *a, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    cell_keyrec r = a[i];
    int64_t j = i;
    while (j > 0 && a[j - 1].k > r.k) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = r;
  }
}

void cell_keyrec_sort(cell_keyrec *a, cell_keyrec *tmp, int64_t n) {
  if (n < 64) {
    insertion_sort(a, n);
    return;
  }
  /* LSD radix, 8 bits a pass; a pass where every key has the same byte
   * (the low bytes of a float32 widened to double, the high bytes of small
   * integers) is skipped. */
  static const int B = 8;
  int64_t cnt[8][256];
  memset(cnt, 0, sizeof cnt);
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = a[i].k;
    for (int b = 0; b < B; b++) cnt[b][(k >> (8 * b)) & 255]++;
  }
  cell_keyrec *src = a, *dst = tmp;
  for (int b = 0; b < B; b++) {
    int64_t *c = cnt[b];
    if (c[(src[0].k >> (8 * b)) & 255] == n) continue;
    int64_t pos = 0;
    for (int v = 0; v < 256; v++) {
      int64_t m = c[v];
      c[v] = pos;
      pos += m;
    }
    for (int64_t i = 0; i < n; i++) dst[c[(src[i].k >> (8 * b)) & 255]++] = src[i];
    cell_keyrec *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

static inline int rec_lt(const cell_keyrec *x, const cell_keyrec *y) {
  return x->k < y->k || (x->k == y->k && x->i < y->i);
}

static int rec_cmp(const void *p, const void *q) {
  const cell_keyrec *x = p, *y = q;
  return rec_lt(x, y) ? -1 : rec_lt(y, x) ? 1 : 0;
}

void cell_keyrec_sort_total(cell_keyrec *a, int64_t n) {
  if (n > 1) qsort(a, (size_t)n, sizeof *a, rec_cmp);
}

static inline void rec_swap(cell_keyrec *x, cell_keyrec *y) {
  cell_keyrec t = *x;
  *x = *y;
  *y = t;
}

void cell_keyrec_select(cell_keyrec *a, int64_t n, int64_t kth) {
  int64_t lo = 0, hi = n - 1;
  int budget = 128; /* past it (an adversarial input), sort the rest */
  while (hi > lo) {
    if (budget-- == 0) {
      cell_keyrec_sort_total(a + lo, hi - lo + 1);
      return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    if (rec_lt(&a[mid], &a[lo])) rec_swap(&a[mid], &a[lo]);
    if (rec_lt(&a[hi], &a[lo])) rec_swap(&a[hi], &a[lo]);
    if (rec_lt(&a[hi], &a[mid])) rec_swap(&a[hi], &a[mid]);
    cell_keyrec p = a[mid];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (rec_lt(&a[i], &p)) i++;
      while (rec_lt(&p, &a[j])) j--;
      if (i <= j) {
        rec_swap(&a[i], &a[j]);
        i++;
        j--;
      }
    }
    if (kth <= j) hi = j;
    else if (kth >= i) lo = i;
    else return;
  }
}

/* --- running over lines -------------------------------------------------------- */

typedef void (*line_fn)(void *ctx, int64_t line, cell_keyrec *buf, cell_keyrec *tmp);

/* fn over lines 0..count-1, each with a buffer of len records and tmp of
 * len more; in parallel (a buffer per thread) when work is large. */
static cell_status run_lines(const char *op, int64_t count, int64_t len, int64_t work, line_fn fn,
                             void *ctx) {
  if (count == 0) return CELL_OK;
  size_t bytes = (size_t)(2 * (len ? len : 1)) * sizeof(cell_keyrec);
  int par = count > 1 && work >= SORT_GRAIN && cell_ctx()->num_threads > 1;
  int failed = 0;
  if (!par) {
    cell_keyrec *buf = cell_alloc(bytes);
    if (!buf) failed = 1;
    for (int64_t l = 0; buf && l < count; l++) fn(ctx, l, buf, buf + len);
    cell_dealloc(buf);
  } else {
#pragma omp parallel
    {
      cell_keyrec *buf = cell_alloc(bytes);
      if (!buf) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(dynamic, 16)
      for (int64_t l = 0; l < count; l++)
        if (buf) fn(ctx, l, buf, buf + len);
      cell_dealloc(buf);
    }
  }
  if (failed)
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory allocating %zu bytes of scratch", op,
                      bytes);
  return CELL_OK;
}

/* The records of one line of a (its keys, positions 0..len-1). */
static void load_line(const cell_tensor *a, const char *p, int64_t stride, int64_t len,
                      int flip, cell_keyrec *r) {
  int64_t es = cell_dtype_size(a->dtype), bs = stride * es;
  cell_dtype dt = a->dtype;
  if (dt == CELL_DTYPE_F32) {
    for (int64_t i = 0; i < len; i++) r[i] = (cell_keyrec){cell_key_f64(*(const float *)(p + i * bs)), i};
  } else {
    for (int64_t i = 0; i < len; i++) r[i] = (cell_keyrec){cell_key_of(dt, p + i * bs), i};
  }
  if (flip)
    for (int64_t i = 0; i < len; i++) r[i].k = ~r[i].k;
}

/* Outputs: a contiguous values tensor like a with size n along dim (NULL
 * when not wanted) and int64 indices of the same shape. */
static cell_status new_outputs(const cell_tensor *a, int dim, int64_t n, int keep, cell_tensor **v,
                               cell_tensor **ix) {
  int64_t shape[CELL_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (d != dim) shape[nd++] = a->shape[d];
    else if (keep) shape[nd++] = n;
  }
  *ix = NULL;
  cell_status s = CELL_OK;
  if (v) {
    *v = NULL;
    s = cell_tensor_new_contig(a->dtype, nd, shape, v);
  }
  if (s == CELL_OK) s = cell_tensor_new_contig(CELL_DTYPE_I64, nd, shape, ix);
  if (s != CELL_OK && v) {
    cell_tensor_release(*v);
    *v = NULL;
  }
  return s;
}

typedef struct {
  const cell_tensor *a;
  cell_tensor *v, *ix; /* v may be NULL */
  int dim;
  int64_t len, stride, base, k, nout, rank;
  int flip, total;
} line_ctx;

/* Write records r[0..n) of line `line` to the outputs (along dim, n long). */
static void write_line(const line_ctx *c, int64_t line, const cell_keyrec *r, int64_t n) {
  int64_t es = cell_dtype_size(c->a->dtype);
  const char *src = cell_tensor_base(c->a) + cell_line_offset(c->a, c->dim, line) * es;
  /* the outputs have a's rank (keepdim views for median) and contiguous strides */
  int64_t ostride = c->ix->ndim ? c->ix->stride[c->dim] : 1;
  int64_t ooff = cell_line_offset(c->ix, c->dim, line);
  int64_t *ip = (int64_t *)cell_tensor_base(c->ix) + ooff;
  for (int64_t j = 0; j < n; j++) ip[j * ostride] = r[j].i + c->base;
  if (c->v) {
    char *vp = cell_tensor_base(c->v) + ooff * es;
    int64_t bs = c->stride * es;
    for (int64_t j = 0; j < n; j++) memcpy(vp + j * ostride * es, src + r[j].i * bs, (size_t)es);
  }
}

static const char *line_src(const line_ctx *c, int64_t line) {
  return cell_tensor_base(c->a) + cell_line_offset(c->a, c->dim, line) * cell_dtype_size(c->a->dtype);
}

/* --- sort ---------------------------------------------------------------------- */

static void sort_line(void *p, int64_t line, cell_keyrec *r, cell_keyrec *tmp) {
  line_ctx *c = p;
  load_line(c->a, line_src(c, line), c->stride, c->len, c->flip, r);
  cell_keyrec_sort(r, tmp, c->len);
  write_line(c, line, r, c->len);
}

cell_status cell_cpu_sort(const cell_tensor *a, int dim, int descending, int64_t index_base,
                          cell_tensor **values, cell_tensor **indices) {
  if (!a || (!values && !indices)) return cell_error(CELL_ERR_VALUE, "sort: NULL argument");
  CELL_TRY(cell_check_dim("sort", dim, a->ndim));
  line_ctx c = {.a = a, .dim = dim, .base = index_base, .flip = descending != 0};
  int64_t count;
  cell_line_geometry(a, dim, &c.len, &c.stride, &count);
  CELL_TRY(new_outputs(a, dim, c.len, 1, values ? &c.v : NULL, &c.ix));
  cell_status s = run_lines("sort", count, c.len, count * c.len * 4, sort_line, &c);
  if (s != CELL_OK) return cell_release4(s, c.v, c.ix, NULL, NULL);
  if (values) *values = c.v;
  if (indices) *indices = c.ix;
  else cell_tensor_release(c.ix);
  return CELL_OK;
}

/* --- topk ---------------------------------------------------------------------- */

/* Restore the max-heap h[0..n) (by the total order) below position i. */
static void sift_down(cell_keyrec *h, int64_t n, int64_t i) {
  cell_keyrec x = h[i];
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && rec_lt(&h[c], &h[c + 1])) c++;
    if (!rec_lt(&x, &h[c])) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = x;
}

/* The k kept records h[0..k), h[0] the worst (the largest by the total
 * order): for k <= KEEP_SORTED a descending array, where an insertion
 * shifts a few records with one hard-to-predict branch, else a max-heap. */
#define KEEP_SORTED 32
static void keep_init(cell_keyrec *h, int64_t k) {
  if (k > KEEP_SORTED) {
    for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(h, k, i);
    return;
  }
  for (int64_t i = 1; i < k; i++) {
    cell_keyrec r = h[i];
    int64_t j = i;
    while (j > 0 && rec_lt(&h[j - 1], &r)) {
      h[j] = h[j - 1];
      j--;
    }
    h[j] = r;
  }
}

/* Replace the worst kept record by (key, pos), which is better than it;
 * pos is past every kept position, so it loses ties. */
static inline void keep_insert(cell_keyrec *h, int64_t k, uint64_t key, int64_t pos) {
  if (k > KEEP_SORTED) {
    h[0] = (cell_keyrec){key, pos};
    sift_down(h, k, 0);
    return;
  }
  int64_t j = 1;
  for (; j < k && h[j].k > key; j++) h[j - 1] = h[j];
  h[j - 1] = (cell_keyrec){key, pos};
}

/* Sort k (small) records by the total order, in place. */
static void sort_total_small(cell_keyrec *a, int64_t n) {
  if (n > 32) {
    cell_keyrec_sort_total(a, n);
    return;
  }
  for (int64_t i = 1; i < n; i++) {
    cell_keyrec r = a[i];
    int64_t j = i;
    while (j > 0 && rec_lt(&r, &a[j - 1])) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = r;
  }
}

/* One candidate v at position pos against the kept records (and tv). */
#define TOPK_TRY(T, v_, pos)                                                                 \
  {                                                                                          \
    T v = (v_);                                                                              \
    if (!(big ? v <= tv : v >= tv)) {                                                        \
      uint64_t key = cell_key_f64(v) ^ fl;                                                   \
      if (key < h[0].k) { /* pos is past every kept index: ties stay out */                \
        keep_insert(h, k, key, (pos));                                                       \
        tv = x[h[0].i * st];                                                                 \
      }                                                                                      \
    }                                                                                        \
  }
/* Small k over a float line: one pass keeping the k best records
 * (keep_*), the worst kept also held as a value tv, so most elements cost
 * one float comparison, done 16 at a time (a branch-free test, then a bit
 * mask whose set bits, the rare candidates, are tried one by one). An
 * element passes the filter unless it is certainly no better than tv
 * (largest: x <= tv; smallest: x >= tv); NaN (which orders above +inf)
 * and a NaN tv always pass, and the exact key test decides. Keys order
 * floats as their values do, with -0 == +0, so the filter loses nothing. */
#define TOPK_FLOAT(T, S)                                                                     \
  static void topk_heap_##S(line_ctx *c, const T *x, int64_t st, cell_keyrec *h) {           \
    const int64_t k = c->k, n = c->len;                                                      \
    const int big = c->flip;                                                                 \
    const uint64_t fl = big ? ~(uint64_t)0 : 0;                                              \
    for (int64_t i = 0; i < k; i++) h[i] = (cell_keyrec){cell_key_f64(x[i * st]) ^ fl, i};   \
    keep_init(h, k);                                                                         \
    T tv = x[h[0].i * st];                                                                   \
    int64_t i = k;                                                                           \
    if (st == 1)                                                                             \
      for (; i + 16 <= n; i += 16) {                                                         \
        const T *bl = x + i;                                                                 \
        int any = 0; /* a branch-free pass the compiler vectorises */                        \
        if (big)                                                                             \
          for (int j = 0; j < 16; j++) any |= !(bl[j] <= tv);                                \
        else                                                                                 \
          for (int j = 0; j < 16; j++) any |= !(bl[j] >= tv);                                \
        if (!any) continue;                                                                  \
        unsigned m = 0;                                                                      \
        if (big)                                                                             \
          for (int j = 0; j < 16; j++) m |= (unsigned)!(bl[j] <= tv) << j;                   \
        else                                                                                 \
          for (int j = 0; j < 16; j++) m |= (unsigned)!(bl[j] >= tv) << j;                   \
        while (m) {                                                                          \
          int j = __builtin_ctz(m);                                                          \
          m &= m - 1;                                                                        \
          TOPK_TRY(T, bl[j], i + j)                                                          \
        }                                                                                    \
      }                                                                                      \
    for (; i < n; i++) TOPK_TRY(T, x[i * st], i)                                             \
  }
TOPK_FLOAT(float, f32)
TOPK_FLOAT(double, f64)

/* Small k: one pass keeping the k smallest records (keep_*), so most
 * elements cost one comparison with the worst kept. */
static void topk_heap(line_ctx *c, int64_t line, cell_keyrec *h) {
  const char *p = line_src(c, line);
  int64_t es = cell_dtype_size(c->a->dtype), bs = c->stride * es, k = c->k;
  uint64_t fl = c->flip ? ~(uint64_t)0 : 0;
  cell_dtype dt = c->a->dtype;
  if (dt == CELL_DTYPE_F32) {
    topk_heap_f32(c, (const float *)p, c->stride, h);
  } else if (dt == CELL_DTYPE_F64) {
    topk_heap_f64(c, (const double *)p, c->stride, h);
  } else {
    for (int64_t i = 0; i < k; i++) h[i] = (cell_keyrec){cell_key_of(dt, p + i * bs) ^ fl, i};
    keep_init(h, k);
    for (int64_t i = k; i < c->len; i++) {
      uint64_t key = cell_key_of(dt, p + i * bs) ^ fl;
      if (key < h[0].k) keep_insert(h, k, key, i); /* ties stay out */
    }
  }
  sort_total_small(h, k);
  write_line(c, line, h, k);
}

static void topk_line(void *p, int64_t line, cell_keyrec *r, cell_keyrec *tmp) {
  line_ctx *c = p;
  (void)tmp;
  if (c->k > 0 && c->k * 8 <= c->len) {
    topk_heap(c, line, r);
    return;
  }
  load_line(c->a, line_src(c, line), c->stride, c->len, c->flip, r);
  if (c->k > 0 && c->k < c->len) cell_keyrec_select(r, c->len, c->k - 1);
  cell_keyrec_sort_total(r, c->k);
  write_line(c, line, r, c->k);
}

cell_status cell_cpu_topk(const cell_tensor *a, int64_t k, int dim, int largest, int sorted,
                          int64_t index_base, cell_tensor **values, cell_tensor **indices) {
  (void)sorted; /* the k are always returned in order */
  if (!a || !values || !indices) return cell_error(CELL_ERR_VALUE, "topk: NULL argument");
  CELL_TRY(cell_check_dim("topk", dim, a->ndim));
  line_ctx c = {.a = a, .dim = dim, .base = index_base, .flip = largest != 0, .k = k};
  int64_t count;
  cell_line_geometry(a, dim, &c.len, &c.stride, &count);
  if (k < 0 || k > c.len) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "topk: k = %lld is out of range for dimension %d of size %lld (input of shape %s)",
                      (long long)k, dim, (long long)c.len, cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  CELL_TRY(new_outputs(a, dim, k, 1, &c.v, &c.ix));
  cell_status s = run_lines("topk", count, c.len, count * c.len, topk_line, &c);
  if (s != CELL_OK) return cell_release4(s, c.v, c.ix, NULL, NULL);
  *values = c.v;
  *indices = c.ix;
  return CELL_OK;
}

/* --- median -------------------------------------------------------------------- */

/* The lower median ((len - 1) / 2 in ascending order); a line holding a
 * NaN has the first NaN as its median, as PyTorch. */
static void median_line(void *p, int64_t line, cell_keyrec *r, cell_keyrec *tmp) {
  line_ctx *c = p;
  (void)tmp;
  load_line(c->a, line_src(c, line), c->stride, c->len, 0, r);
  int64_t nan = -1;
  for (int64_t i = 0; i < c->len && nan < 0; i++)
    if (r[i].k == CELL_KEY_NAN && cell_dtype_is_float(c->a->dtype)) nan = i;
  if (nan >= 0) {
    write_line(c, line, &r[nan], 1);
    return;
  }
  int64_t m = (c->len - 1) / 2;
  cell_keyrec_select(r, c->len, m);
  write_line(c, line, &r[m], 1);
}

cell_status cell_cpu_median(const cell_tensor *a, int dim, int keepdim, int64_t index_base,
                            cell_tensor **values, cell_tensor **indices) {
  if (!a || !values || !indices) return cell_error(CELL_ERR_VALUE, "median: NULL argument");
  CELL_TRY(cell_check_dim("median", dim, a->ndim));
  line_ctx c = {.a = a, .dim = dim, .base = index_base};
  int64_t count;
  cell_line_geometry(a, dim, &c.len, &c.stride, &count);
  if (c.len == 0) {
    char b[256];
    return cell_error(CELL_ERR_INDEX, "median: dimension %d of the input (shape %s) has size 0: no median",
                      dim, cell_shape_str(a->ndim, a->shape, b, sizeof b));
  }
  CELL_TRY(new_outputs(a, dim, 1, keepdim && a->ndim > 0, &c.v, &c.ix));
  line_ctx w = c;
  cell_status s = CELL_OK;
  if (keepdim || a->ndim == 0) {
    s = run_lines("median", count, c.len, count * c.len, median_line, &w);
  } else {
    /* write through keepdim views of the outputs */
    int64_t ks[CELL_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) ks[d] = d == dim ? 1 : a->shape[d];
    cell_tensor *vk = NULL, *ik = NULL;
    int64_t st[CELL_MAX_DIMS];
    cell_contig_strides(a->ndim, ks, st);
    s = cell_tensor_new_view(c.v, a->ndim, ks, st, 0, &vk);
    if (s == CELL_OK) s = cell_tensor_new_view(c.ix, a->ndim, ks, st, 0, &ik);
    if (s == CELL_OK) {
      w.v = vk;
      w.ix = ik;
      s = run_lines("median", count, c.len, count * c.len, median_line, &w);
    }
    cell_tensor_release(vk);
    cell_tensor_release(ik);
  }
  if (s != CELL_OK) return cell_release4(s, c.v, c.ix, NULL, NULL);
  *values = c.v;
  *indices = c.ix;
  return CELL_OK;
}

/* --- unique -------------------------------------------------------------------- */

cell_status cell_cpu_unique(const cell_tensor *a, int64_t index_base, cell_tensor **out,
                            cell_tensor **inverse, cell_tensor **counts) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "unique: NULL argument");
  int64_t n = cell_tensor_numel(a);
  cell_tensor *flat = NULL;
  CELL_TRY(cell_k_contiguous(a, &flat));
  cell_keyrec *r = cell_alloc((size_t)(2 * (n ? n : 1)) * sizeof *r);
  if (!r) {
    cell_tensor_release(flat);
    return cell_error(CELL_ERR_MEMORY, "unique: out of memory sorting %lld elements", (long long)n);
  }
  const char *src = cell_tensor_base(flat);
  int64_t es = cell_dtype_size(a->dtype);
  int isf = cell_dtype_is_float(a->dtype);
  for (int64_t i = 0; i < n; i++) r[i] = (cell_keyrec){cell_key_of(a->dtype, src + i * es), i};
  cell_keyrec_sort(r, r + n, n);
  int64_t groups = 0;
  for (int64_t i = 0; i < n; i++)
    if (i == 0 || r[i].k != r[i - 1].k || (isf && r[i].k == CELL_KEY_NAN)) groups++;
  cell_tensor *u = NULL, *inv = NULL, *cnt = NULL;
  int64_t gshape[1] = {groups};
  cell_status s = cell_tensor_new_contig(a->dtype, 1, gshape, &u);
  if (s == CELL_OK && inverse) s = cell_tensor_new_contig(CELL_DTYPE_I64, a->ndim, a->shape, &inv);
  if (s == CELL_OK && counts) s = cell_tensor_new_contig(CELL_DTYPE_I64, 1, gshape, &cnt);
  if (s == CELL_OK) {
    char *up = cell_tensor_base(u);
    int64_t *ip = inv ? (int64_t *)cell_tensor_base(inv) : NULL;
    int64_t *cp = cnt ? (int64_t *)cell_tensor_base(cnt) : NULL;
    int64_t g = -1;
    for (int64_t i = 0; i < n; i++) {
      if (i == 0 || r[i].k != r[i - 1].k || (isf && r[i].k == CELL_KEY_NAN)) {
        g++;
        memcpy(up + g * es, src + r[i].i * es, (size_t)es);
        if (cp) cp[g] = 0;
      }
      if (ip) ip[r[i].i] = g + index_base;
      if (cp) cp[g]++;
    }
  }
  cell_dealloc(r);
  cell_tensor_release(flat);
  if (s != CELL_OK) return cell_release4(s, u, inv, cnt, NULL);
  *out = u;
  if (inverse) *inverse = inv;
  if (counts) *counts = cnt;
  return CELL_OK;
}
