/* linalg.c - matmul (NumPy semantics, batched, broadcasting), mm, bmm, dot. */
#include "../backend/backend.h"
#include "kernels.h"
#include "ops.h"
#include "kernel_list.h"

static cell_status mismatch(const char *op, const cell_tensor *a, const cell_tensor *b) {
  char sa[256], sb[256];
  return cell_error(CELL_ERR_VALUE, "%s: shapes %s and %s cannot be multiplied", op,
                    cell_shape_str(a->ndim, a->shape, sa, sizeof sa),
                    cell_shape_str(b->ndim, b->shape, sb, sizeof sb));
}

static cell_status matmul_dtype(const char *op, const cell_tensor *a, const cell_tensor *b,
                                cell_dtype *dt) {
  *dt = cell_dtype_promote(a->dtype, b->dtype);
  if (*dt == CELL_DTYPE_BOOL)
    return cell_error(CELL_ERR_TYPE, "%s: not supported for Bool tensors", op);
  return CELL_OK;
}

/* One gemm over 2-D views (any strides) into a contiguous C block. */
static cell_status gemm2d(const cell_tensor *a, const cell_tensor *b, char *c, int64_t m,
                          int64_t n, int64_t k, const int64_t *ast, const int64_t *bst,
                          const char *abase, const char *bbase) {
  cell_gemm g = {a->dtype, m, n, k, abase, ast[0], ast[1], bbase, bst[0], bst[1], c, n, 1, 0};
  (void)b;
  return cell_gemm_run(&g);
}

/* Batched core: a is [..., m, k], b is [..., k, n], both with ndim >= 2 and
 * the same dtype; batch dims broadcast. */
static cell_status matmul_nd(const char *op, const cell_tensor *a, const cell_tensor *b,
                             cell_tensor **out) {
  int64_t m = a->shape[a->ndim - 2], k = a->shape[a->ndim - 1];
  int64_t k2 = b->shape[b->ndim - 2], n = b->shape[b->ndim - 1];
  if (k != k2) return mismatch(op, a, b);
  int nb;
  int64_t bshape[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes(op, a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nb, bshape));
  int64_t oshape[CELL_MAX_DIMS];
  memcpy(oshape, bshape, sizeof(int64_t) * (size_t)nb);
  oshape[nb] = m;
  oshape[nb + 1] = n;
  CELL_TRY(cell_shape_numel_checked(op, nb + 2, oshape, NULL));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(a->dtype, nb + 2, oshape, &r));
  int64_t batches = cell_shape_numel(nb, bshape);
  int es = cell_dtype_size(a->dtype);
  if (k == 0) { /* empty inner dimension: zeros */
    cell_status s = cell_k_fill_(r, 0);
    if (s != CELL_OK) cell_tensor_release(r);
    else *out = r;
    return s;
  }
  /* Batch strides of a and b, 0 along broadcast dims. */
  int64_t sa[CELL_MAX_DIMS], sb[CELL_MAX_DIMS];
  for (int i = 0; i < nb; i++) {
    int ia = a->ndim - 2 - nb + i, ib = b->ndim - 2 - nb + i;
    sa[i] = ia >= 0 && a->shape[ia] != 1 ? a->stride[ia] : 0;
    sb[i] = ib >= 0 && b->shape[ib] != 1 ? b->stride[ib] : 0;
  }
  const int64_t *ast = a->stride + a->ndim - 2, *bst = b->stride + b->ndim - 2;
  /* A 2-D right operand and a left one whose batch folds into its rows:
   * one large gemm instead of many small ones (a Dense layer on [B, T, k]). */
  bool fold = b->ndim == 2 && batches > 1;
  /* The batch dims and m must form one uniformly strided run of rows. */
  int64_t expect = ast[0] * m;
  for (int i = nb - 1; i >= 0 && fold; i--) {
    if (bshape[i] == 1) continue;
    if (sa[i] != expect) fold = false;
    expect *= bshape[i];
  }
  cell_status s = CELL_OK;
  if (fold) {
    s = gemm2d(a, b, cell_tensor_base(r), m * batches, n, k, ast, bst, cell_tensor_base(a),
               cell_tensor_base(b));
  } else {
    for (int64_t bi = 0; bi < batches && s == CELL_OK; bi++) {
      int64_t rem = bi, oa = 0, ob = 0;
      for (int i = nb - 1; i >= 0; i--) {
        int64_t idx = rem % bshape[i];
        rem /= bshape[i];
        oa += idx * sa[i];
        ob += idx * sb[i];
      }
      s = gemm2d(a, b, cell_tensor_base(r) + (size_t)(bi * m * n * es), m, n, k, ast, bst,
                 cell_tensor_base(a) + oa * es, cell_tensor_base(b) + ob * es);
      if (s == CELL_OK && cell_ctx()->interrupt) s = cell_error(CELL_ERR_INTERRUPT, "interrupted");
    }
  }
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_matmul(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (!a || !b || !out) return cell_error(CELL_ERR_VALUE, "matmul: NULL argument");
  if (a->ndim == 0 || b->ndim == 0)
    return cell_error(CELL_ERR_VALUE, "matmul: both operands need at least one dimension, got "
                                      "%d-D and %d-D", a->ndim, b->ndim);
  cell_dtype dt;
  CELL_TRY(matmul_dtype("matmul", a, b, &dt));
  if (a->ndim == 1 && b->ndim == 1) return cell_k_dot(a, b, out);
  cell_tensor *ca = NULL, *cb = NULL, *va = NULL, *vb = NULL, *r = NULL;
  cell_status s = cell_as_dtype(a, dt, &ca);
  if (s == CELL_OK) s = cell_as_dtype(b, dt, &cb);
  /* 1-D operands become matrices, and the added dimension goes again. */
  if (s == CELL_OK) s = a->ndim == 1 ? cell_k_unsqueeze(ca, 0, &va) : (cell_tensor_retain(ca), va = ca, CELL_OK);
  if (s == CELL_OK) s = b->ndim == 1 ? cell_k_unsqueeze(cb, 1, &vb) : (cell_tensor_retain(cb), vb = cb, CELL_OK);
  if (s == CELL_OK && va->shape[va->ndim - 1] != vb->shape[vb->ndim - 2]) s = mismatch("matmul", a, b);
  if (s == CELL_OK) s = matmul_nd("matmul", va, vb, &r);
  if (s == CELL_OK && (a->ndim == 1 || b->ndim == 1)) {
    cell_tensor *sq;
    s = cell_k_squeeze(r, a->ndim == 1 ? r->ndim - 2 : r->ndim - 1, &sq);
    cell_tensor_release(r);
    r = s == CELL_OK ? sq : NULL;
  }
  cell_release4(s, ca, cb, va, vb);
  if (s != CELL_OK) return s;
  *out = r;
  return CELL_OK;
}

cell_status cell_cpu_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (!a || !b || !out) return cell_error(CELL_ERR_VALUE, "mm: NULL argument");
  if (a->ndim != 2 || b->ndim != 2)
    return cell_error(CELL_ERR_VALUE, "mm: both operands must be 2-D, got %d-D and %d-D", a->ndim,
                      b->ndim);
  if (a->shape[1] != b->shape[0]) return mismatch("mm", a, b);
  return cell_k_matmul(a, b, out);
}

cell_status cell_cpu_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (!a || !b || !out) return cell_error(CELL_ERR_VALUE, "bmm: NULL argument");
  if (a->ndim != 3 || b->ndim != 3)
    return cell_error(CELL_ERR_VALUE, "bmm: both operands must be 3-D, got %d-D and %d-D",
                      a->ndim, b->ndim);
  if (a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1]) return mismatch("bmm", a, b);
  return cell_k_matmul(a, b, out);
}

cell_status cell_cpu_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (!a || !b || !out) return cell_error(CELL_ERR_VALUE, "dot: NULL argument");
  if (a->ndim != 1 || b->ndim != 1)
    return cell_error(CELL_ERR_VALUE, "dot: both operands must be 1-D, got %d-D and %d-D",
                      a->ndim, b->ndim);
  if (a->shape[0] != b->shape[0]) return mismatch("dot", a, b);
  cell_dtype dt;
  CELL_TRY(matmul_dtype("dot", a, b, &dt));
  cell_tensor *ca = NULL, *cb = NULL, *r = NULL;
  cell_status s = cell_as_dtype(a, dt, &ca);
  if (s == CELL_OK) s = cell_as_dtype(b, dt, &cb);
  if (s == CELL_OK) s = cell_tensor_new_contig(dt, 0, NULL, &r);
  if (s == CELL_OK) {
    cell_gemm g = {dt, 1, 1, a->shape[0], cell_tensor_base(ca), 0, ca->stride[0],
                   cell_tensor_base(cb), cb->stride[0], 0, cell_tensor_base(r), 1, 1, 0};
    s = cell_gemm_run(&g);
  }
  if (s != CELL_OK) return cell_release4(s, ca, cb, r, NULL);
  cell_release4(s, ca, cb, NULL, NULL);
  *out = r;
  return CELL_OK;
}
