/* gpu_grad.c - the GPU table's ew row (autograd's elementwise gradient
 * formulas: ReLU's, GELU's, SiLU's, sigmoid's, tanh's, the masks of clamp
 * and where, products and quotients; see gpu_kern.h's GPUK_EW_ list; any
 * other formula is refused with NotImplementedError) and the comparisons
 * of the binary row (==, !=, <, <=, >, >= of any real dtypes, broadcast,
 * to bool). Operands are gathered, broadcast, into contiguous buffers
 * first; the kernels are gpu_grad.cu. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <stdio.h>
#include <string.h>

_Static_assert((int)GPUK_EW_ABS == (int)EW_ABS && (int)GPUK_EW_RELU == (int)EW_RELU &&
                   (int)GPUK_EW_GELU == (int)EW_GELU && (int)GPUK_EW_SILU == (int)EW_SILU &&
                   (int)GPUK_EW_CLAMP == (int)EW_CLAMP && (int)GPUK_EW_SEL_TRUE == (int)EW_SEL_TRUE &&
                   (int)GPUK_EW_SCALE == (int)EW_SCALE && (int)GPUK_EW_MUL == (int)EW_MUL &&
                   (int)GPUK_EW_DIV == (int)EW_DIV && (int)GPUK_EW_ZERO_TO_ONE == (int)EW_ZERO_TO_ONE &&
                   (int)GPUK_EW_SQUARE == (int)EW_SQUARE && (int)GPUK_EW_RECIPROCAL == (int)EW_RECIPROCAL &&
                   (int)GPUK_EW_SOFTPLUS == (int)EW_SOFTPLUS && (int)GPUK_EW_FINITE == (int)EW_FINITE &&
                   (int)GPUK_EW_PICK == (int)EW_PICK && (int)GPUK_EW_PICK_ABS == (int)EW_PICK_ABS &&
                   (int)GPUK_EW_STD_SCALE == (int)EW_STD_SCALE && (int)GPUK_EW_DEV == (int)EW_DEV &&
                   (int)GPUK_EW_NORM_SCALE == (int)EW_NORM_SCALE && (int)GPUK_EW_NORM == (int)EW_NORM,
               "gpu_kern.h's formula codes are ew.h's");
_Static_assert((int)GPUK_EQ == (int)CELL_OP_EQ && (int)GPUK_NE == (int)CELL_OP_NE && (int)GPUK_LT == (int)CELL_OP_LT &&
                   (int)GPUK_LE == (int)CELL_OP_LE && (int)GPUK_GT == (int)CELL_OP_GT && (int)GPUK_GE == (int)CELL_OP_GE,
               "gpu_kern.h's comparison codes are cell_binop's");

/* Whether t broadcasts to shape (its dimensions right-aligned). */
static int broadcasts(const cell_tensor *t, int ndim, const int64_t *shape) {
  if (t->ndim > ndim) return 0;
  for (int i = 0; i < t->ndim; i++) {
    int64_t e = t->shape[i], want = shape[ndim - t->ndim + i];
    if (e != want && e != 1) return 0;
  }
  return 1;
}

/* t broadcast to shape as a contiguous tensor of dtype dt. */
static cell_status spread_as(const cell_tensor *t, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    int k = d - (ndim - t->ndim);
    L.shape[d] = shape[d];
    L.stride[d] = k < 0 || t->shape[k] == 1 ? 0 : t->stride[k];
  }
  cell_tensor *o;
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(t), dt, ndim, shape, &o));
  int e = gpuk_copy_cast(gpu_ctx_of(t)->stream, L, (int)t->dtype, gpu_data(t), (int)dt, gpu_data(o),
                         gpu_shape_numel(ndim, shape));
  if (e) {
    cell_tensor_release(o);
    return gpu_cuda_error((cudaError_t)e, "broadcast");
  }
  *out = o;
  return CELL_OK;
}

cell_status gpu_ew(ew_op op, double k0, double k1, cell_dtype dt, int ndim, const int64_t *shape, const cell_tensor *a,
                   const cell_tensor *b, const cell_tensor *c, cell_tensor **out) {
  if (!gpuk_ew_supported((int)op))
    return cell_error(CELL_ERR_NOTIMPL, "autograd's gradient formula %d is not supported on device GPU", (int)op);
  /* float16 / bfloat16 gradients: the formula in float64, rounded once. */
  int half = dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16;
  if (dt != CELL_DTYPE_F32 && dt != CELL_DTYPE_F64 && !half)
    return cell_error(CELL_ERR_NOTIMPL, "a %s gradient is not supported on device GPU", cell_dtype_name(dt));
  cell_dtype kt = half ? CELL_DTYPE_F64 : dt;
  const cell_tensor *opd[3] = {a, b, c};
  for (int k = 0; k < 3; k++)
    if (opd[k] && !broadcasts(opd[k], ndim, shape)) {
      char b1[256], b2[256];
      return cell_error(CELL_ERR_RUNTIME,
                        "autograd: a tensor of shape %s does not broadcast to the shape %s of the gradient being computed",
                        cell_shape_str(opd[k]->ndim, opd[k]->shape, b1, sizeof b1), cell_shape_str(ndim, shape, b2, sizeof b2));
    }
  const cell_tensor *any = a ? a : b ? b : c;
  if (!any) return cell_error(CELL_ERR_VALUE, "ew: no operand");
  gpu_ctx *g = gpu_ctx_of(any);
  cell_tensor *t[4] = {NULL}; /* a, b, c, out */
  cell_status s = CELL_OK;
  for (int k = 0; k < 3 && s == CELL_OK; k++)
    if (opd[k]) s = spread_as(opd[k], kt, ndim, shape, &t[k]);
  if (s == CELL_OK) s = gpu_new_tensor(g, kt, ndim, shape, &t[3]);
  if (s == CELL_OK) {
    int e = gpuk_ew(g->stream, (int)kt, (int)op, k0, k1, t[0] ? gpu_data(t[0]) : NULL, t[1] ? gpu_data(t[1]) : NULL,
                    t[2] ? gpu_data(t[2]) : NULL, gpu_data(t[3]), gpu_shape_numel(ndim, shape));
    if (e) s = gpu_cuda_error((cudaError_t)e, "autograd's gradient formula");
  }
  for (int k = 0; k < 3; k++)
    if (t[k]) cell_tensor_release(t[k]);
  if (s == CELL_OK && half) {
    cell_tensor *h = NULL;
    s = gpu_contig_as(t[3], dt, &h);
    cell_tensor_release(t[3]);
    t[3] = h;
  }
  if (s != CELL_OK) {
    if (t[3]) cell_tensor_release(t[3]);
    return s;
  }
  *out = t[3];
  return CELL_OK;
}

static int is_int_dtype(cell_dtype dt) { return dt != CELL_DTYPE_F32 && dt != CELL_DTYPE_F64 && dt != CELL_DTYPE_F16 && dt != CELL_DTYPE_BF16; }

cell_status gpu_compare(cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  const char *name = cell_binop_name(op);
  if (!gpu_dtype_copyable(a->dtype) || !gpu_dtype_copyable(b->dtype))
    return cell_error(CELL_ERR_NOTIMPL, "%s of %s and %s is not supported on device GPU", name,
                      cell_dtype_name(a->dtype), cell_dtype_name(b->dtype));
  int n = a->ndim > b->ndim ? a->ndim : b->ndim;
  int64_t shape[CELL_MAX_DIMS];
  for (int d = 0; d < n; d++) {
    int ka = d - (n - a->ndim), kb = d - (n - b->ndim);
    int64_t x = ka < 0 ? 1 : a->shape[ka], y = kb < 0 ? 1 : b->shape[kb];
    if (x != y && x != 1 && y != 1)
      return cell_error(CELL_ERR_VALUE, "%s: shapes do not broadcast (dimension %d: %lld and %lld)", name, d,
                        (long long)x, (long long)y);
    shape[d] = x == 1 ? y : x;
  }
  /* Integers compare exactly as int64; anything with a float as float64. */
  int ints = is_int_dtype(a->dtype) && is_int_dtype(b->dtype);
  cell_dtype ct = ints ? CELL_DTYPE_I64 : CELL_DTYPE_F64;
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *t[3] = {NULL}; /* a, b, out */
  cell_status s = spread_as(a, ct, n, shape, &t[0]);
  if (s == CELL_OK) s = spread_as(b, ct, n, shape, &t[1]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_BOOL, n, shape, &t[2]);
  if (s == CELL_OK) {
    int e = gpuk_compare(g->stream, (int)op, ints, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2]), gpu_shape_numel(n, shape));
    if (e) s = gpu_cuda_error((cudaError_t)e, name);
  }
  if (t[0]) cell_tensor_release(t[0]);
  if (t[1]) cell_tensor_release(t[1]);
  if (s != CELL_OK) {
    if (t[2]) cell_tensor_release(t[2]);
    return s;
  }
  *out = t[2];
  return CELL_OK;
}
