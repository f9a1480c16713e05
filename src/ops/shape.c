/* shape.c - shape ops that move elements: cat, stack, gather, scatter,
 * index_select, tile, repeat_interleave, pad.
 *
 * Outputs are new contiguous tensors. Whole blocks are moved with
 * cell_tensor_copy_ between view headers built on the stack (see
 * local_view): copy_ runs the strided iterator, so every dtype and layout
 * (transposed, stride-0 expanded, offset) works, dtype conversion included.
 * gather and scatter move single elements with memcpy of the element size
 * (scatter_add_ adds them),
 * walking the index tensor in row-major order (so a scatter with repeated
 * positions keeps the last write). */
#include "../core/iter.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"

/* --- helpers ------------------------------------------------------------- */

/* A view header on the stack sharing t's storage, for cell_tensor_copy_
 * (which keeps no reference): no allocation, nothing to release. Narrow it
 * by editing shape, stride and offset. */
static cell_tensor local_view(const cell_tensor *t) {
  cell_tensor v = *t;
  v.refcount = 1;
  v.autograd = NULL;
  return v;
}

/* Narrow v along d to [start, start + len). */
static void narrow_local(cell_tensor *v, int d, int64_t start, int64_t len) {
  v->offset += start * v->stride[d];
  v->shape[d] = len;
}

/* Copy src into dst unless there is nothing to copy. */
static cell_status copy_block(cell_tensor *dst, const cell_tensor *src) {
  if (cell_tensor_numel(dst) == 0) return CELL_OK;
  return cell_k_copy_(dst, src);
}

/* Release r and return s (s != CELL_OK), or hand r out. */
static cell_status finish(cell_status s, cell_tensor *r, cell_tensor **out) {
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

static int is_index_dtype(cell_dtype d) {
  return cell_dtype_is_int(d);
}

static cell_status check_index_dtype(const char *op, const cell_tensor *index) {
  if (!is_index_dtype(index->dtype))
    return cell_error(CELL_ERR_TYPE,
                      "%s: the index must be an integer tensor (Int8, UInt8, Int32 or Int64), "
                      "got %s",
                      op, cell_dtype_name(index->dtype));
  return CELL_OK;
}

/* The position of index value v counted from base, checked against size. */
static cell_status index_pos(const char *op, int64_t v, int64_t base, int64_t size,
                             int64_t *pos) {
  int64_t p;
  if (__builtin_sub_overflow(v, base, &p) || p < 0 || p >= size)
    return cell_error(CELL_ERR_INDEX,
                      "%s: index %lld is out of range for a dimension of size %lld "
                      "(indices count from %lld)",
                      op, (long long)v, (long long)size, (long long)base);
  *pos = p;
  return CELL_OK;
}

#define POLL_MASK 0xffff /* poll the interrupt flag every 65536 elements */

/* --- cat, stack ------------------------------------------------------------ */

static cell_status check_list(const char *op, int n, cell_tensor *const *ts, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL output", op);
  if (n <= 0 || !ts) return cell_error(CELL_ERR_VALUE, "%s: expected a non-empty list of tensors", op);
  for (int i = 0; i < n; i++)
    if (!ts[i]) return cell_error(CELL_ERR_VALUE, "%s: tensor %d is NULL", op, i);
  return CELL_OK;
}

static cell_dtype promote_all(int n, cell_tensor *const *ts) {
  cell_dtype dt = ts[0]->dtype;
  for (int i = 1; i < n; i++) dt = cell_dtype_promote(dt, ts[i]->dtype);
  return dt;
}

cell_status cell_cpu_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  CELL_TRY(check_list("cat", n, ts, out));
  const cell_tensor *t0 = ts[0];
  int nd = t0->ndim;
  char b0[256], b1[256];
  for (int i = 0; i < n; i++)
    if (ts[i]->ndim == 0)
      return cell_error(CELL_ERR_VALUE,
                        "cat: zero-dimensional tensor (at position %d) cannot be concatenated", i);
  CELL_TRY(cell_check_dim("cat", dim, nd));
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0; d < nd; d++) shape[d] = t0->shape[d];
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const cell_tensor *t = ts[i];
    bool ok = t->ndim == nd;
    for (int d = 0; ok && d < nd; d++)
      if (d != dim && t->shape[d] != shape[d]) ok = false;
    if (!ok)
      return cell_error(CELL_ERR_VALUE,
                        "cat: tensors must have the same number of dimensions and the same "
                        "sizes outside the concatenation dimension, got shapes %s and %s",
                        cell_shape_str(nd, t0->shape, b0, sizeof b0),
                        cell_shape_str(t->ndim, t->shape, b1, sizeof b1));
    if (!cell_size_add(total, t->shape[dim], &total))
      return cell_error(CELL_ERR_VALUE,
                        "cat: concatenating shapes %s and %s (and the rest) gives a size "
                        "above %lld",
                        cell_shape_str(nd, t0->shape, b0, sizeof b0),
                        cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
                        (long long)CELL_MAX_NUMEL);
  }
  shape[dim] = total;
  CELL_TRY(cell_shape_numel_checked("cat", nd, shape, NULL));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(promote_all(n, ts), nd, shape, &r));
  cell_status s = CELL_OK;
  int64_t at = 0;
  for (int i = 0; i < n && s == CELL_OK; i++) {
    cell_tensor v = local_view(r);
    narrow_local(&v, dim, at, ts[i]->shape[dim]);
    s = copy_block(&v, ts[i]);
    at += ts[i]->shape[dim];
  }
  return finish(s, r, out);
}

cell_status cell_cpu_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  CELL_TRY(check_list("stack", n, ts, out));
  const cell_tensor *t0 = ts[0];
  int nd = t0->ndim;
  if (dim < 0 || dim > nd)
    return cell_error(CELL_ERR_INDEX,
                      "stack: dimension %d out of range for stacking %d-D tensors (0 to %d)", dim,
                      nd, nd);
  if (nd + 1 > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "stack: a tensor has at most %d dimensions, got %d",
                      CELL_MAX_DIMS, nd + 1);
  for (int i = 1; i < n; i++)
    if (!cell_shape_equal(nd, t0->shape, ts[i]->ndim, ts[i]->shape)) {
      char b0[256], b1[256];
      return cell_error(CELL_ERR_VALUE,
                        "stack: expects tensors of the same shape, got %s and %s (at position %d)",
                        cell_shape_str(nd, t0->shape, b0, sizeof b0),
                        cell_shape_str(ts[i]->ndim, ts[i]->shape, b1, sizeof b1), i);
    }
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0, k = 0; d <= nd; d++) shape[d] = d == dim ? n : t0->shape[k++];
  CELL_TRY(cell_shape_numel_checked("stack", nd + 1, shape, NULL));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(promote_all(n, ts), nd + 1, shape, &r));
  cell_status s = CELL_OK;
  for (int i = 0; i < n && s == CELL_OK; i++) {
    /* r with dim dropped, at position i along it. */
    cell_tensor v = local_view(r);
    v.ndim = nd;
    v.offset = r->offset + (int64_t)i * r->stride[dim];
    for (int d = 0, k = 0; d <= nd; d++) {
      if (d == dim) continue;
      v.shape[k] = r->shape[d];
      v.stride[k] = r->stride[d];
      k++;
    }
    s = copy_block(&v, ts[i]);
  }
  return finish(s, r, out);
}

/* --- gather, scatter ----------------------------------------------------------- */

/* Walk every element of index in row-major order. lin is walked alongside
 * it (its strides, at the index's multi-index); tgt is addressed at the
 * index's multi-index with dim replaced by the position the index value
 * gives. Per element: tgt -> lin (WALK_GATHER), lin -> tgt (WALK_SCATTER)
 * or tgt += lin (WALK_ADD). All three have index->ndim dims (0-d: a single
 * element); lin and tgt have the same dtype. */
typedef enum { WALK_GATHER, WALK_SCATTER, WALK_ADD } walk_mode;

/* *t += *l, both of dtype dt. */
static void add_elem(cell_dtype dt, char *t, const char *l) {
  if (dt == CELL_DTYPE_F32)
    *(float *)t += *(const float *)l;
  else if (dt == CELL_DTYPE_F64)
    *(double *)t += *(const double *)l;
  else if (cell_dtype_is_float(dt))
    cell_store_f64(dt, t, cell_load_f64(dt, t) + cell_load_f64(dt, l));
  else
    cell_store_i64(dt, t, (int64_t)((uint64_t)cell_load_i64(dt, t) + (uint64_t)cell_load_i64(dt, l)));
}

static cell_status index_walk(const char *op, const cell_tensor *index, int dim,
                              int64_t base, const cell_tensor *lin, const cell_tensor *tgt,
                              walk_mode mode) {
  int nd = index->ndim;
  int64_t n = cell_tensor_numel(index);
  if (n == 0) return CELL_OK;
  size_t es = (size_t)cell_dtype_size(tgt->dtype);
  int64_t ies = cell_dtype_size(index->dtype);
  int64_t tsize = tgt->ndim ? tgt->shape[dim] : 1;
  int64_t tstride = tgt->ndim ? tgt->stride[dim] : 0;
  const char *ip = cell_tensor_base(index);
  char *lp = cell_tensor_base(lin), *tp = cell_tensor_base(tgt);
  int64_t cnt[CELL_MAX_DIMS] = {0};
  int64_t io = 0, lo = 0, to = 0; /* element offsets; to excludes dim */
  for (int64_t e = 0; e < n; e++) {
    if ((e & POLL_MASK) == POLL_MASK) CELL_TRY(cell_check_interrupt());
    int64_t pos = 0;
    CELL_TRY(index_pos(op, cell_load_i64(index->dtype, ip + io * ies), base, tsize, &pos));
    char *pl = lp + (size_t)lo * es, *pt = tp + (size_t)(to + pos * tstride) * es;
    if (mode == WALK_SCATTER)
      memcpy(pt, pl, es);
    else if (mode == WALK_GATHER)
      memcpy(pl, pt, es);
    else
      add_elem(tgt->dtype, pt, pl);
    for (int d = nd - 1; d >= 0; d--) {
      io += index->stride[d];
      lo += lin->stride[d];
      if (d != dim) to += tgt->stride[d];
      if (++cnt[d] < index->shape[d]) break;
      io -= index->stride[d] * cnt[d];
      lo -= lin->stride[d] * cnt[d];
      if (d != dim) to -= tgt->stride[d] * cnt[d];
      cnt[d] = 0;
    }
  }
  return CELL_OK;
}

/* index fits t in every dimension (but dim when skip_dim). */
static cell_status check_fits(const char *op, const cell_tensor *index, const cell_tensor *t,
                              const char *what, int dim, int skip_dim) {
  char bi[256], bt[256];
  if (index->ndim != t->ndim)
    return cell_error(CELL_ERR_VALUE,
                      "%s: the index (shape %s) must have as many dimensions as the %s (shape %s)",
                      op, cell_shape_str(index->ndim, index->shape, bi, sizeof bi), what,
                      cell_shape_str(t->ndim, t->shape, bt, sizeof bt));
  for (int d = 0; d < t->ndim; d++)
    if ((!skip_dim || d != dim) && index->shape[d] > t->shape[d])
      return cell_error(CELL_ERR_VALUE,
                        "%s: the index of shape %s is larger than the %s of shape %s in "
                        "dimension %d",
                        op, cell_shape_str(index->ndim, index->shape, bi, sizeof bi), what,
                        cell_shape_str(t->ndim, t->shape, bt, sizeof bt), d);
  return CELL_OK;
}

cell_status cell_cpu_gather(const cell_tensor *a, int dim, const cell_tensor *index,
                           int64_t index_base, cell_tensor **out) {
  if (!a || !index || !out) return cell_error(CELL_ERR_VALUE, "gather: NULL argument");
  CELL_TRY(cell_check_dim("gather", dim, a->ndim));
  CELL_TRY(check_index_dtype("gather", index));
  CELL_TRY(check_fits("gather", index, a, "input", dim, 1));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, index->ndim, index->shape, &r));
  return finish(index_walk("gather", index, dim, index_base, r, a, WALK_GATHER), r, out);
}

cell_status cell_cpu_scatter(const cell_tensor *a, int dim, const cell_tensor *index,
                            const cell_tensor *src, int64_t index_base, cell_tensor **out) {
  if (!a || !index || !src || !out) return cell_error(CELL_ERR_VALUE, "scatter: NULL argument");
  CELL_TRY(cell_check_dim("scatter", dim, a->ndim));
  CELL_TRY(check_index_dtype("scatter", index));
  CELL_TRY(check_fits("scatter", index, a, "input", dim, 1));
  CELL_TRY(check_fits("scatter", index, src, "source", dim, 0));
  cell_tensor *cs, *r = NULL;
  CELL_TRY(cell_as_dtype(src, a->dtype, &cs));
  cell_status s = cell_k_clone(a, &r);
  if (s == CELL_OK) s = index_walk("scatter", index, dim, index_base, cs, r, WALK_SCATTER);
  cell_tensor_release(cs);
  return finish(s, r, out);
}

/* a += src at the positions index gives along dim (repeated positions
 * accumulate), in place: the gradient of gather and index_select. src is
 * converted to a's dtype first. */
cell_status cell_cpu_scatter_add_(cell_tensor *a, int dim, const cell_tensor *index,
                                  const cell_tensor *src, int64_t index_base) {
  if (!a || !index || !src) return cell_error(CELL_ERR_VALUE, "scatter_add_: NULL argument");
  CELL_TRY(cell_check_dim("scatter_add_", dim, a->ndim));
  CELL_TRY(check_index_dtype("scatter_add_", index));
  CELL_TRY(check_fits("scatter_add_", index, a, "input", dim, 1));
  CELL_TRY(check_fits("scatter_add_", index, src, "source", dim, 0));
  cell_tensor *cs;
  CELL_TRY(cell_as_dtype(src, a->dtype, &cs));
  cell_status s = index_walk("scatter_add_", index, dim, index_base, cs, a, WALK_ADD);
  cell_tensor_release(cs);
  return s;
}

/* --- index_select ------------------------------------------------------------- */

cell_status cell_cpu_index_select(const cell_tensor *a, int dim, const cell_tensor *index,
                                 int64_t index_base, cell_tensor **out) {
  if (!a || !index || !out) return cell_error(CELL_ERR_VALUE, "index_select: NULL argument");
  CELL_TRY(cell_check_dim("index_select", dim, a->ndim));
  CELL_TRY(check_index_dtype("index_select", index));
  if (index->ndim > 1) {
    char b[256];
    return cell_error(CELL_ERR_VALUE, "index_select: the index must be 0-D or 1-D, got shape %s",
                      cell_shape_str(index->ndim, index->shape, b, sizeof b));
  }
  int64_t k = cell_tensor_numel(index);
  int64_t istride = index->ndim ? index->stride[0] : 0;
  if (a->ndim == 0 && k != 1)
    return cell_error(CELL_ERR_VALUE,
                      "index_select: the index into a 0-D tensor must have one element, got %lld",
                      (long long)k);
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) shape[d] = d == dim ? k : a->shape[d];
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, a->ndim, shape, &r));
  int64_t size = a->ndim ? a->shape[dim] : 1;
  const char *ip = cell_tensor_base(index);
  int64_t ies = cell_dtype_size(index->dtype);
  cell_status s = CELL_OK;
  for (int64_t j = 0; j < k && s == CELL_OK; j++) {
    int64_t pos = 0;
    s = index_pos("index_select", cell_load_i64(index->dtype, ip + j * istride * ies),
                  index_base, size, &pos);
    if (s != CELL_OK) break;
    cell_tensor src = local_view(a), dst = local_view(r);
    if (a->ndim) {
      narrow_local(&src, dim, pos, 1);
      narrow_local(&dst, dim, j, 1);
    }
    s = copy_block(&dst, &src);
  }
  return finish(s, r, out);
}

/* --- tile, repeat_interleave -------------------------------------------------- */

cell_status cell_cpu_tile(const cell_tensor *a, int nreps, const int64_t *reps, cell_tensor **out) {
  if (!a || !out || (nreps > 0 && !reps))
    return cell_error(CELL_ERR_VALUE, "tile: NULL argument");
  if (nreps < 0 || nreps > CELL_MAX_DIMS)
    return cell_error(CELL_ERR_VALUE, "tile: between 0 and %d repetitions, got %d", CELL_MAX_DIMS,
                      nreps);
  for (int i = 0; i < nreps; i++)
    if (reps[i] < 0)
      return cell_error(CELL_ERR_VALUE, "tile: repetitions must be non-negative, got %lld",
                        (long long)reps[i]);
  int nd = a->ndim > nreps ? a->ndim : nreps;
  int64_t sz[CELL_MAX_DIMS], rp[CELL_MAX_DIMS], shape[CELL_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    int ia = d - (nd - a->ndim), ir = d - (nd - nreps);
    sz[d] = ia >= 0 ? a->shape[ia] : 1;
    rp[d] = ir >= 0 ? reps[ir] : 1;
    if (!cell_size_mul(sz[d], rp[d], &shape[d])) {
      char b0[256], b1[256];
      return cell_error(CELL_ERR_VALUE, "tile: tiling shape %s by %s gives a size above %lld",
                        cell_shape_str(a->ndim, a->shape, b0, sizeof b0),
                        cell_shape_str(nreps, reps, b1, sizeof b1), (long long)CELL_MAX_NUMEL);
    }
  }
  CELL_TRY(cell_shape_numel_checked("tile", nd, shape, NULL));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, nd, shape, &r));
  if (cell_tensor_numel(r) == 0) {
    *out = r;
    return CELL_OK;
  }
  /* a into the first block, then each dim replicated by doubling: blocks
   * [0, n) copied to [c, c + n) with n <= c, disjoint. */
  cell_tensor v = local_view(r);
  for (int d = 0; d < nd; d++) v.shape[d] = sz[d];
  cell_status s = copy_block(&v, a);
  for (int d = nd - 1; d >= 0 && s == CELL_OK; d--) {
    for (int64_t c = 1; c < rp[d] && s == CELL_OK;) {
      int64_t n = c < rp[d] - c ? c : rp[d] - c;
      cell_tensor src = v, dst = v;
      narrow_local(&src, d, 0, n * sz[d]);
      narrow_local(&dst, d, c * sz[d], n * sz[d]);
      s = copy_block(&dst, &src);
      c += n;
    }
    v.shape[d] = shape[d];
  }
  return finish(s, r, out);
}

cell_status cell_cpu_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim,
                                      cell_tensor **out) {
  if (!a || !out) return cell_error(CELL_ERR_VALUE, "repeat_interleave: NULL argument");
  CELL_TRY(cell_check_dim("repeat_interleave", dim, a->ndim));
  if (repeats < 0)
    return cell_error(CELL_ERR_VALUE, "repeat_interleave: repeats must be non-negative, got %lld",
                      (long long)repeats);
  /* A 0-D tensor counts as 1-D of size 1. */
  cell_tensor src = local_view(a);
  if (a->ndim == 0) {
    src.ndim = 1;
    src.shape[0] = 1;
    src.stride[0] = 0;
  }
  int nd = src.ndim;
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0; d < nd; d++) shape[d] = src.shape[d];
  if (!cell_size_mul(src.shape[dim], repeats, &shape[dim])) {
    char b0[256];
    return cell_error(CELL_ERR_VALUE,
                      "repeat_interleave: %lld repeats of shape %s give a size above %lld",
                      (long long)repeats, cell_shape_str(a->ndim, a->shape, b0, sizeof b0),
                      (long long)CELL_MAX_NUMEL);
  }
  CELL_TRY(cell_shape_numel_checked("repeat_interleave", nd, shape, NULL));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, nd, shape, &r));
  cell_status s = CELL_OK;
  if (cell_tensor_numel(r) > 0) {
    /* Copy j of every element: r along dim with stride repeats, from j. */
    for (int64_t j = 0; j < repeats && s == CELL_OK; j++) {
      cell_tensor dst = local_view(r);
      dst.shape[dim] = src.shape[dim];
      dst.stride[dim] = r->stride[dim] * repeats;
      dst.offset = r->offset + j * r->stride[dim];
      s = copy_block(&dst, &src);
    }
  }
  return finish(s, r, out);
}

/* --- pad ------------------------------------------------------------------------- */

cell_status cell_cpu_pad(const cell_tensor *a, int npairs, const int64_t *pads, double value,
                        cell_tensor **out) {
  if (!a || !out || (npairs > 0 && !pads))
    return cell_error(CELL_ERR_VALUE, "pad: NULL argument");
  if (npairs < 0 || npairs > a->ndim)
    return cell_error(CELL_ERR_VALUE,
                      "pad: %d (before, after) pairs for a %d-D tensor; at most one pair per "
                      "dimension",
                      npairs, a->ndim);
  int nd = a->ndim;
  int64_t shape[CELL_MAX_DIMS], before[CELL_MAX_DIMS] = {0}, after[CELL_MAX_DIMS] = {0};
  for (int d = 0; d < nd; d++) shape[d] = a->shape[d];
  for (int i = 0; i < npairs; i++) {
    int d = nd - 1 - i;
    before[d] = pads[2 * i];
    after[d] = pads[2 * i + 1];
    /* Pads may be negative (they crop): the exact sum, in 128 bits. */
    __int128 wide = (__int128)a->shape[d] + before[d] + after[d];
    if (wide > CELL_MAX_NUMEL) {
      char b[256];
      return cell_error(CELL_ERR_VALUE,
                        "pad: padding (%lld, %lld) of a size %lld in shape %s gives a size "
                        "above %lld",
                        (long long)before[d], (long long)after[d], (long long)a->shape[d],
                        cell_shape_str(nd, a->shape, b, sizeof b), (long long)CELL_MAX_NUMEL);
    }
    int64_t n = wide < INT64_MIN ? INT64_MIN : (int64_t)wide;
    if (n < 0) {
      char b[256];
      return cell_error(CELL_ERR_VALUE,
                        "pad: padding (%lld, %lld) of a dimension of size %lld in shape %s gives "
                        "the negative size %lld",
                        (long long)before[d], (long long)after[d], (long long)a->shape[d],
                        cell_shape_str(nd, a->shape, b, sizeof b), (long long)n);
    }
    shape[d] = n;
  }
  CELL_TRY(cell_shape_numel_checked("pad", nd, shape, NULL));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, nd, shape, &r));
  cell_status s = cell_k_fill_(r, value);
  /* The part of a that survives cropping, into its place in r: in r's
   * coordinates a spans [before, before + size), clipped to [0, shape). */
  cell_tensor src = local_view(a), dst = local_view(r);
  bool empty = false;
  for (int d = 0; d < nd; d++) {
    int64_t lo = before[d] > 0 ? before[d] : 0;
    __int128 end = (__int128)before[d] + a->shape[d];
    int64_t hi = end > shape[d] ? shape[d] : end < 0 ? 0 : (int64_t)end;
    if (hi <= lo) {
      empty = true;
      break;
    }
    narrow_local(&src, d, lo - before[d], hi - lo);
    narrow_local(&dst, d, lo, hi - lo);
  }
  if (s == CELL_OK && !empty) s = copy_block(&dst, &src);
  return finish(s, r, out);
}

/* --- reshape and flatten: a view when the strides allow one, else a copy --- */

#define NULLCHECK(op, t, out) \
  if (!(t) || !(out)) return cell_error(CELL_ERR_VALUE, op ": NULL argument")

/* The CPU kernel behind cell_k_reshape (src/ops/device.c dispatches). */
cell_status cell_cpu_reshape(const cell_tensor *t, int ndim, const int64_t *shape,
                                cell_tensor **out) {
  NULLCHECK("reshape", t, out);
  int64_t res[CELL_MAX_DIMS], st[CELL_MAX_DIMS];
  CELL_TRY(cell_view_shape("reshape", t, ndim, shape, res));
  if (cell_view_strides(t, ndim, res, st)) return cell_tensor_new_view(t, ndim, res, st, t->offset, out);
  cell_tensor *c;
  CELL_TRY(cell_k_clone(t, &c));
  cell_status s = cell_k_view(c, ndim, res, out);
  cell_tensor_release(c);
  return s;
}

cell_status cell_k_flatten(const cell_tensor *t, int start, int end, cell_tensor **out) {
  NULLCHECK("flatten", t, out);
  if (t->ndim == 0) {
    int64_t one = 1;
    return cell_k_reshape(t, 1, &one, out);
  }
  CELL_TRY(cell_check_dim("flatten", start, t->ndim));
  CELL_TRY(cell_check_dim("flatten", end, t->ndim));
  if (start > end)
    return cell_error(CELL_ERR_VALUE, "flatten: start dimension %d is after end dimension %d",
                      start, end);
  int64_t sh[CELL_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < start; i++) sh[n++] = t->shape[i];
  sh[n++] = cell_shape_numel(end - start + 1, t->shape + start);
  for (int i = end + 1; i < t->ndim; i++) sh[n++] = t->shape[i];
  return cell_k_reshape(t, n, sh, out);
}
#undef NULLCHECK
