/* gpu_table.c - the GPU's kernels table and its capability query.
 *
 * Implemented: mm, bmm and matmul of two matrices or two equal batches
 * (cuBLAS, float32 / float64, contiguous), binary
 * add, sub, mul, div, maximum, minimum (any layout, broadcasting; in
 * place: a contiguous left operand) and the comparisons (any real
 * dtypes, to bool: gpu_grad.c), the same with a scalar (uint8, int8,
 * int16 through int64) and the unary ops with a float result (abs ... silu
 * and the float math in double; float dtypes, any layout) as CUDA kernels, full and fill_ (float32, float64, int32, int64,
 * contiguous), and the rows of
 * gpu_nn.c: clone, contiguous and astype (every real dtype, any layout:
 * casts float16 / bfloat16 / float32 / float64 / integers), reductions
 * (the sum of bool and small integers too), max / argmax, softmax, layer
 * norm, embedding, dropout, cross-entropy and nll_loss (gpu_loss.c),
 * conv2d forward and backward through cuDNN (gpu_dnn.c), linear and its
 * backward (gpu_blas.c), batch norm with its backward and running-stats
 * update and max / avg pooling with their backward (gpu_cnn.c), reshape
 * and copy_ (gpu_view.c), autograd's gradient formulas (ew, gpu_grad.c),
 * attention without a mask tensor (gpu_attn.c), the SGD and Adam steps
 * (float32 / float64), where / masked_fill / pad / cat / stack and the
 * indexing rows (gpu_index.c), flip / tile / repeat_interleave / triangle
 * (gpu_shape.c), var / norm / the scans / arange / linspace (gpu_stats.c),
 * sort / topk (gpu_sort.c), mse / l1 (gpu_pwloss.c), optim_step
 * (gpu_optim.c), the activations / softplus / nan_to_num / logsumexp /
 * roll / diag / eye / dot / rand / randn / randint rows (gpu_act.c),
 * bce_with_logits (gpu_bce.c), interpolate (gpu_interp.c), unfold / fold
 * (gpu_fold.c), nonzero / masked_select / masked_scatter (gpu_masked.c)
 * the random rows (gpu_random.c), conv3d / conv_transpose3d (gpu_conv3d.c,
 * direct kernels), median / unique (gpu_sort.c, gpu_masked.c) and
 * ctc_loss (gpu_ctc.c). Arithmetic promotes mixed dtypes as the CPU does and runs
 * float16 / bfloat16 through float32. supports_op declines every
 * other row and every other dtype or layout, so the engine raises
 * NotImplementedError ("<op> is not supported on device GPU:0"); a row
 * whose op argument it cannot see (which binary op, which formula) is
 * refused by the kernel itself with the same exception. Nothing falls
 * back to the CPU. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

_Static_assert((int)GPUK_ADD == (int)CELL_OP_ADD && (int)GPUK_SUB == (int)CELL_OP_SUB && (int)GPUK_MUL == (int)CELL_OP_MUL &&
                   (int)GPUK_DIV == (int)CELL_OP_DIV && (int)GPUK_MAXIMUM == (int)CELL_OP_MAXIMUM &&
                   (int)GPUK_MINIMUM == (int)CELL_OP_MINIMUM,
               "gpu_kern.h's binary codes are cell_binop's");
_Static_assert((int)GPUK_LOG1P == (int)CELL_OP_LOG1P && (int)GPUK_RSQRT == (int)CELL_OP_RSQRT &&
                   (int)GPUK_SIN == (int)CELL_OP_SIN && (int)GPUK_COS == (int)CELL_OP_COS &&
                   (int)GPUK_FLOOR == (int)CELL_OP_FLOOR && (int)GPUK_CEIL == (int)CELL_OP_CEIL &&
                   (int)GPUK_ROUND == (int)CELL_OP_ROUND && (int)GPUK_SIGN == (int)CELL_OP_SIGN &&
                   (int)GPUK_ERF == (int)CELL_OP_ERF && (int)GPUK_ERFC == (int)CELL_OP_ERFC &&
                   (int)GPUK_TAN == (int)CELL_OP_TAN && (int)GPUK_ATAN == (int)CELL_OP_ATAN &&
                   (int)GPUK_ASIN == (int)CELL_OP_ASIN && (int)GPUK_ACOS == (int)CELL_OP_ACOS &&
                   (int)GPUK_SINH == (int)CELL_OP_SINH && (int)GPUK_COSH == (int)CELL_OP_COSH &&
                   (int)GPUK_LOG2 == (int)CELL_OP_LOG2 && (int)GPUK_LOG10 == (int)CELL_OP_LOG10 &&
                   (int)GPUK_EXP2 == (int)CELL_OP_EXP2 && (int)GPUK_EXPM1 == (int)CELL_OP_EXPM1 &&
                   (int)GPUK_SQUARE == (int)CELL_OP_SQUARE && (int)GPUK_RECIPROCAL == (int)CELL_OP_RECIPROCAL,
               "gpu_kern.h's math codes are cell_unop's");
_Static_assert((int)GPUK_ABS == (int)CELL_OP_ABS && (int)GPUK_NEG == (int)CELL_OP_NEG && (int)GPUK_EXP == (int)CELL_OP_EXP &&
                   (int)GPUK_LOG == (int)CELL_OP_LOG && (int)GPUK_SQRT == (int)CELL_OP_SQRT && (int)GPUK_TANH == (int)CELL_OP_TANH &&
                   (int)GPUK_SIGMOID == (int)CELL_OP_SIGMOID && (int)GPUK_RELU == (int)CELL_OP_RELU &&
                   (int)GPUK_GELU == (int)CELL_OP_GELU && (int)GPUK_SILU == (int)CELL_OP_SILU,
               "gpu_kern.h's unary codes are cell_unop's");

cell_kernels gpu_kernels;

gpu_ctx *gpu_ctx_of(const cell_tensor *t) {
  for (int i = 0; i < gpu_count; i++)
    if (gpu_ctxs[i].id == t->storage->device) return &gpu_ctxs[i];
  return NULL;
}

gpu_ctx *gpu_ctx_current(void) {
  int want = cell_device_current() >= 0 ? cell_device_current() : cell_get_device();
  for (int i = 0; i < gpu_count; i++)
    if (gpu_ctxs[i].id == want) return &gpu_ctxs[i];
  return NULL;
}

int gpu_is_contig(const cell_tensor *t) {
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] == 0) return 1; /* no elements: any strides */
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->stride[i] != expect) return 0;
    expect *= t->shape[i];
  }
  return 1;
}

void *gpu_data(const cell_tensor *t) {
  return (char *)t->storage->data + t->offset * cell_dtype_size(t->dtype);
}

int64_t gpu_shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

int64_t gpu_numel(const cell_tensor *t) { return gpu_shape_numel(t->ndim, t->shape); }

cell_status gpu_launch(int err, const char *op) {
  return err ? gpu_cuda_error((cudaError_t)err, op) : CELL_OK;
}

void gpu_release_all(cell_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i]) cell_tensor_release(ts[i]);
}

static cell_status declined(const char *op) {
  return cell_error(CELL_ERR_NOTIMPL, "%s is not supported on device GPU", op);
}

/* A stub for every row the device does not run (supports_op declines them
 * first; the stub answers a direct call the same way). */
#define GPU_STUB_(name, params, args, ts)                                     \
  static cell_status stub_##name params {                                     \
    return declined(#name);                                                   \
  }
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
CELL_KERNEL_LIST(GPU_STUB_)
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#undef GPU_STUB_

/* a laid out over shape (ndim dims, right-aligned, stride 0 where a
 * broadcasts) as a contiguous tensor of dtype dt: a itself (retained)
 * when it is contiguous of that shape and dtype already. */
static cell_status spread(const cell_tensor *a, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  if (a->ndim == ndim && a->dtype == dt && gpu_is_contig(a)) {
    int same = 1;
    for (int d = 0; d < ndim; d++) same &= a->shape[d] == shape[d];
    if (same) {
      cell_tensor_retain((cell_tensor *)a);
      *out = (cell_tensor *)a;
      return CELL_OK;
    }
  }
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = ndim;
  for (int d = 0; d < ndim; d++) {
    int k = d - (ndim - a->ndim);
    L.shape[d] = shape[d];
    L.stride[d] = k < 0 || a->shape[k] == 1 ? 0 : a->stride[k];
  }
  cell_tensor *o;
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(a), dt, ndim, shape, &o));
  int64_t n = gpu_numel(o);
  cell_status s = gpu_launch(gpuk_copy_cast(gpu_ctx_of(a)->stream, L, (int)a->dtype, gpu_data(a), (int)dt,
                                            gpu_data(o), n),
                             "broadcast");
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

/* The broadcast shape of a and b (ValueError when they do not broadcast). */
static cell_status broadcast(const char *op, const cell_tensor *a, const cell_tensor *b, int *ndim, int64_t *shape) {
  int n = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int d = 0; d < n; d++) {
    int ka = d - (n - a->ndim), kb = d - (n - b->ndim);
    int64_t x = ka < 0 ? 1 : a->shape[ka], y = kb < 0 ? 1 : b->shape[kb];
    if (x != y && x != 1 && y != 1)
      return cell_error(CELL_ERR_VALUE, "%s: shapes do not broadcast (dimension %d: %lld and %lld)", op, d,
                        (long long)x, (long long)y);
    shape[d] = x == 1 ? y : x;
  }
  *ndim = n;
  return CELL_OK;
}

static int binary_ok(cell_binop op) { return op <= CELL_OP_MINIMUM && op != CELL_OP_POW; }

static int is_float_dt(cell_dtype dt) { return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64; }
static int is_half_dt(cell_dtype dt) { return dt == CELL_DTYPE_F16 || dt == CELL_DTYPE_BF16; }

/* The dtype the kernels compute result dtype rt in: rt itself for
 * float32, float64, int32 and int64; float32 for float16 and bfloat16
 * (rounded to rt once at the end: exact for + - * / and maximum /
 * minimum, float32 having more than twice their precision); int64 for
 * uint8, int8 and int16 (wrapped to rt at the end: the CPU computes them
 * in int64 with wrap-around too); -1 for the rest (declined). */
static int kernel_dtype(cell_dtype rt) {
  if (is_float_dt(rt) || rt == CELL_DTYPE_I32 || rt == CELL_DTYPE_I64) return (int)rt;
  if (rt == CELL_DTYPE_U8 || rt == CELL_DTYPE_I8 || rt == CELL_DTYPE_I16) return (int)CELL_DTYPE_I64;
  return is_half_dt(rt) ? (int)CELL_DTYPE_F32 : -1;
}

/* The CPU's result dtype of a op b (binary.c: promotion, true division of
 * integers to float32). */
static cell_dtype arith_result(cell_binop op, cell_dtype a, cell_dtype b) {
  cell_dtype rt = cell_dtype_promote(a, b);
  if (op == CELL_OP_DIV && !cell_dtype_is_float(rt)) rt = CELL_DTYPE_F32;
  return rt;
}

/* Whether a result of dtype from may be stored in a tensor of dtype to
 * (dtype.c's rule for in-place ops: no float into an integer, only bool
 * into bool). */
static int can_store(cell_dtype from, cell_dtype to) {
  if (cell_dtype_is_float(from) && !cell_dtype_is_float(to)) return 0;
  return to != CELL_DTYPE_BOOL || from == CELL_DTYPE_BOOL;
}

/* o (contiguous, kernel dtype) as dtype rt: o itself when it is one, else
 * a cast copy (o released either way). */
static cell_status settle(cell_tensor *o, cell_dtype rt, cell_tensor **out) {
  if (o->dtype == rt) {
    *out = o;
    return CELL_OK;
  }
  cell_status s = gpu_contig_as(o, rt, out);
  cell_tensor_release(o);
  return s;
}

/* o (contiguous) copied into a (contiguous) as a's dtype; bumps a. */
static cell_status store_into(cell_tensor *a, const cell_tensor *o, const char *op) {
  gpuk_layout L;
  memset(&L, 0, sizeof L);
  L.ndim = 1;
  L.shape[0] = gpu_numel(o);
  L.stride[0] = 1;
  cell_tensor_bump(a);
  return gpu_launch(gpuk_copy_cast(gpu_ctx_of(a)->stream, L, (int)o->dtype, gpu_data(o), (int)a->dtype, gpu_data(a),
                                   L.shape[0]),
                    op);
}

static int is_compare(cell_binop op) { return op >= CELL_OP_EQ && op <= CELL_OP_GE; }

static cell_status k_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (is_compare(op)) return gpu_compare(op, a, b, out);
  cell_dtype rt = arith_result(op, a->dtype, b->dtype);
  int kt = kernel_dtype(rt);
  if (!binary_ok(op) || kt < 0) return declined(cell_binop_name(op));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(broadcast(cell_binop_name(op), a, b, &nd, shape));
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *ac = NULL, *bc = NULL, *o = NULL;
  cell_status s = spread(a, (cell_dtype)kt, nd, shape, &ac);
  if (s == CELL_OK) s = spread(b, (cell_dtype)kt, nd, shape, &bc);
  if (s == CELL_OK) s = gpu_new_tensor(g, (cell_dtype)kt, nd, shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_binary(g->stream, kt, (int)op, gpu_data(ac), gpu_data(bc), gpu_data(o), gpu_numel(o)),
                   cell_binop_name(op));
  if (ac) cell_tensor_release(ac);
  if (bc) cell_tensor_release(bc);
  if (s != CELL_OK) {
    if (o) cell_tensor_release(o);
    return s;
  }
  return settle(o, rt, out);
}

/* a (contiguous: supports_op) op= b, b broadcast to a's shape; the result
 * is computed in its own dtype and stored in a's (the CPU's rule). */
static cell_status k_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b) {
  if (is_compare(op)) return declined(cell_binop_name(op));
  cell_dtype rt = arith_result(op, a->dtype, b->dtype);
  int kt = kernel_dtype(rt);
  if (!binary_ok(op) || kt < 0) return declined(cell_binop_name(op));
  if (!can_store(rt, a->dtype))
    return cell_error(CELL_ERR_TYPE, "%s_: result type %s cannot be stored in a %s tensor", cell_binop_name(op),
                      cell_dtype_name(rt), cell_dtype_name(a->dtype));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(broadcast(cell_binop_name(op), a, b, &nd, shape));
  if (nd != a->ndim || gpu_numel(a) != gpu_shape_numel(nd, shape))
    return cell_error(CELL_ERR_VALUE, "%s_: the result's shape is not the in-place operand's", cell_binop_name(op));
  if (kt != (int)a->dtype) { /* computed out of place, then stored */
    cell_tensor *o;
    CELL_TRY(k_binary(op, a, b, &o));
    cell_status s = store_into(a, o, cell_binop_name(op));
    cell_tensor_release(o);
    return s;
  }
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *bc;
  CELL_TRY(spread(b, a->dtype, nd, shape, &bc));
  cell_tensor_bump(a);
  cell_status s = gpu_launch(gpuk_binary(g->stream, kt, (int)op, gpu_data(a), gpu_data(bc), gpu_data(a), gpu_numel(a)),
                             cell_binop_name(op));
  cell_tensor_release(bc);
  return s;
}

/* t op s (s op t reversed), t of any layout; the result's dtype is the
 * CPU's (a float tensor keeps its dtype, an integer one with a float
 * number gives float32, true division of integers float32). */
/* t op s (s op t reversed) for a comparison: s as a 0-D tensor of the
 * CPU's scalar dtype (binary.c's make_scalar: a float number with a
 * float32 tensor rounded to float32), then the tensor comparison. */
static cell_status compare_scalar(cell_binop op, const cell_tensor *t, double s, int s_is_float, int reversed,
                                  cell_tensor **out) {
  gpu_ctx *g = gpu_ctx_of(t);
  cell_tensor *v = NULL, *c = NULL;
  cell_status st = gpu_new_tensor(g, CELL_DTYPE_F64, 0, NULL, &v);
  if (st == CELL_OK) st = gpu_fill(g, gpu_data(v), 8, &s, 8);
  if (st == CELL_OK) st = gpu_contig_as(v, cell_dtype_promote_scalar(t->dtype, s_is_float), &c);
  if (st == CELL_OK) st = reversed ? gpu_compare(op, c, t, out) : gpu_compare(op, t, c, out);
  if (v) cell_tensor_release(v);
  if (c) cell_tensor_release(c);
  return st;
}

/* s as the CPU's scalar tensor of dtype rt holds it (binary.c's
 * make_scalar: stored in rt, so an integer wraps: uint8 maximum with 300
 * compares with 44). */
static double scalar_as(cell_dtype rt, double s) {
  if (cell_dtype_is_float(rt)) return s;
  unsigned char buf[8];
  cell_element_set_f64(rt, buf, s);
  return (double)cell_element_get_i64(rt, buf);
}

static cell_status k_binary_scalar(cell_binop op, const cell_tensor *t, double s, int s_is_float, int reversed,
                                   cell_tensor **out) {
  if (is_compare(op)) return compare_scalar(op, t, s, s_is_float, reversed, out);
  if (!binary_ok(op)) return declined(cell_binop_name(op));
  cell_dtype rt = cell_dtype_promote_scalar(t->dtype, s_is_float);
  if (op == CELL_OP_DIV && !cell_dtype_is_float(rt)) rt = CELL_DTYPE_F32;
  int kt = kernel_dtype(rt);
  if (kt < 0) return declined(cell_binop_name(op));
  s = scalar_as(rt, s);
  gpu_ctx *g = gpu_ctx_of(t);
  cell_tensor *tc, *o;
  CELL_TRY(spread(t, (cell_dtype)kt, t->ndim, t->shape, &tc));
  cell_status st = gpu_new_tensor(g, (cell_dtype)kt, t->ndim, t->shape, &o);
  if (st == CELL_OK) {
    st = gpu_launch(gpuk_binary_scalar(g->stream, kt, (int)op, gpu_data(tc), s, reversed, gpu_data(o), gpu_numel(t)),
                    cell_binop_name(op));
    if (st != CELL_OK) cell_tensor_release(o);
  }
  cell_tensor_release(tc);
  if (st != CELL_OK) return st;
  return settle(o, rt, out);
}

static cell_status k_binary_scalar_(cell_binop op, cell_tensor *t, double s, int s_is_float) {
  if (is_compare(op) || !binary_ok(op)) return declined(cell_binop_name(op));
  cell_dtype rt = cell_dtype_promote_scalar(t->dtype, s_is_float);
  if (op == CELL_OP_DIV && !cell_dtype_is_float(rt)) rt = CELL_DTYPE_F32;
  int kt = kernel_dtype(rt);
  if (kt < 0) return declined(cell_binop_name(op));
  if (!can_store(rt, t->dtype))
    return cell_error(CELL_ERR_TYPE, "%s_: result type %s cannot be stored in a %s tensor", cell_binop_name(op),
                      cell_dtype_name(rt), cell_dtype_name(t->dtype));
  if (kt != (int)t->dtype) { /* float16 / bfloat16: through float32 */
    cell_tensor *o;
    CELL_TRY(k_binary_scalar(op, t, s, s_is_float, 0, &o));
    cell_status st = store_into(t, o, cell_binop_name(op));
    cell_tensor_release(o);
    return st;
  }
  gpu_ctx *g = gpu_ctx_of(t);
  s = scalar_as(rt, s);
  cell_tensor_bump(t);
  return gpu_launch(gpuk_binary_scalar(g->stream, kt, (int)op, gpu_data(t), s, 0, gpu_data(t), gpu_numel(t)),
                    cell_binop_name(op));
}

/* Every cell_unop with a float result of a float input (not logical_not,
 * isnan, isinf, isfinite: bool results). */
static int unary_ok(cell_unop op) {
  return (int)op >= 0 && op <= CELL_OP_RECIPROCAL && op != CELL_OP_LOGICAL_NOT;
}

/* float32 / float64 as themselves, float16 / bfloat16 through float32. */
static cell_status k_unary(cell_unop op, const cell_tensor *a, cell_tensor **out) {
  if (!unary_ok(op) || !(is_float_dt(a->dtype) || is_half_dt(a->dtype))) return declined(cell_unop_name(op));
  cell_dtype kt = is_half_dt(a->dtype) ? CELL_DTYPE_F32 : a->dtype;
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *ac, *o;
  CELL_TRY(spread(a, kt, a->ndim, a->shape, &ac));
  cell_status s = gpu_new_tensor(g, kt, a->ndim, a->shape, &o);
  if (s != CELL_OK) {
    cell_tensor_release(ac);
    return s;
  }
  s = gpu_launch(gpuk_unary(g->stream, (int)kt, (int)op, gpu_data(ac), gpu_data(o), gpu_numel(a)), cell_unop_name(op));
  cell_tensor_release(ac);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  return settle(o, a->dtype, out);
}

static cell_status k_unary_(cell_unop op, cell_tensor *a) {
  if (!unary_ok(op) || !(is_float_dt(a->dtype) || is_half_dt(a->dtype))) return declined(cell_unop_name(op));
  if (is_half_dt(a->dtype)) {
    cell_tensor *o;
    CELL_TRY(k_unary(op, a, &o));
    cell_status s = store_into(a, o, cell_unop_name(op));
    cell_tensor_release(o);
    return s;
  }
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor_bump(a);
  return gpu_launch(gpuk_unary(g->stream, (int)a->dtype, (int)op, gpu_data(a), gpu_data(a), gpu_numel(a)),
                    cell_unop_name(op));
}

/* clamp = minimum(maximum(a, lo), hi), as the CPU composes it. */
static cell_status k_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi, double hi, cell_tensor **out) {
  if (a->dtype == CELL_DTYPE_BOOL) return cell_error(CELL_ERR_TYPE, "clamp: not supported for Bool tensors");
  int f = is_float_dt(a->dtype);
  cell_tensor *t = NULL, *r = NULL;
  if (has_lo) CELL_TRY(k_binary_scalar(CELL_OP_MAXIMUM, a, lo, f, 0, &t));
  else CELL_TRY(gpu_clone(a, &t));
  if (has_hi) {
    cell_status s = k_binary_scalar(CELL_OP_MINIMUM, t, hi, f, 0, &r);
    cell_tensor_release(t);
    if (s != CELL_OK) return s;
    t = r;
  }
  *out = t;
  return CELL_OK;
}

/* v as one element of dt; 0 for a dtype the fills do not handle. */
static size_t pattern_of(cell_dtype dt, double v, unsigned char *pat) {
  switch (dt) {
  case CELL_DTYPE_F32: { float f = (float)v; memcpy(pat, &f, 4); return 4; }
  case CELL_DTYPE_F64: memcpy(pat, &v, 8); return 8;
  case CELL_DTYPE_I32: { int32_t i = (int32_t)v; memcpy(pat, &i, 4); return 4; }
  case CELL_DTYPE_I64: { int64_t i = (int64_t)v; memcpy(pat, &i, 8); return 8; }
  case CELL_DTYPE_I16: { int16_t i = (int16_t)v; memcpy(pat, &i, 2); return 2; }
  case CELL_DTYPE_I8: { int8_t i = (int8_t)v; memcpy(pat, &i, 1); return 1; }
  case CELL_DTYPE_U8: { uint8_t i = (uint8_t)v; memcpy(pat, &i, 1); return 1; }
  case CELL_DTYPE_BOOL: pat[0] = v != 0; return 1;
  case CELL_DTYPE_F16:
  case CELL_DTYPE_BF16: cell_element_set_f64(dt, pat, v); return 2; /* the engine's rounding */
  default: return 0;
  }
}

static cell_status k_fill_(cell_tensor *t, double v) {
  unsigned char pat[8];
  size_t ps = pattern_of(t->dtype, v, pat);
  if (!ps) return declined("fill_ of this dtype");
  cell_tensor_bump(t);
  return gpu_fill(gpu_ctx_of(t), gpu_data(t), (size_t)gpu_numel(t) * ps, pat, ps);
}

/* full: on the dispatch's device (no tensor names it). */
static cell_status k_full(cell_dtype dt, int ndim, const int64_t *shape, double value, cell_tensor **out) {
  unsigned char pat[8];
  size_t ps = pattern_of(dt, value, pat);
  if (!ps) return cell_error(CELL_ERR_NOTIMPL, "full of %s is not supported on device GPU", cell_dtype_name(dt));
  /* The device the dispatch chose: the running kernel's (a tensor made
   * inside another op, cell_tensor_full_on), else the default device. */
  gpu_ctx *g = gpu_ctx_current();
  if (!g) return cell_error(CELL_ERR_RUNTIME, "full: the current device is not a GPU");
  cell_tensor *o;
  cell_status s = gpu_new_tensor(g, dt, ndim, shape, &o);
  if (s != CELL_OK) return s;
  s = gpu_fill(gpu_ctx_of(o), gpu_data(o), (size_t)gpu_numel(o) * ps, pat, ps);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

/* matmul of two matrices or two batches of one size: mm or bmm (supports_op
 * declines broadcasting and vectors). */
static cell_status k_matmul(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  return a->ndim == 2 ? gpu_mm(a, b, out) : gpu_bmm(a, b, out);
}

void gpu_kernels_init(void) {
#define GPU_ROW_(name, params, args, ts) gpu_kernels.name = stub_##name;
  CELL_KERNEL_LIST(GPU_ROW_)
#undef GPU_ROW_
  gpu_kernels.cat = gpu_cat;
  gpu_kernels.stack = gpu_stack;
  gpu_kernels.var = gpu_var;
  gpu_kernels.norm = gpu_norm;
  gpu_kernels.cumsum = gpu_cumsum;
  gpu_kernels.cumsum_reverse = gpu_cumsum_reverse;
  gpu_kernels.cumprod = gpu_cumprod;
  gpu_kernels.arange = gpu_arange;
  gpu_kernels.linspace = gpu_linspace;
  gpu_kernels.pointwise_loss = gpu_pointwise_loss;
  gpu_kernels.pointwise_loss_backward = gpu_pointwise_loss_backward;
  gpu_kernels.pad = gpu_pad;
  gpu_kernels.flip = gpu_flip;
  gpu_kernels.tile = gpu_tile;
  gpu_kernels.repeat_interleave = gpu_repeat_interleave;
  gpu_kernels.triangle = gpu_triangle;
  gpu_kernels.sort = gpu_sort;
  gpu_kernels.topk = gpu_topk;
  gpu_kernels.where = gpu_where;
  gpu_kernels.masked_fill = gpu_masked_fill;
  gpu_kernels.index_select = gpu_index_select;
  gpu_kernels.gather = gpu_gather;
  gpu_kernels.scatter = gpu_scatter;
  gpu_kernels.scatter_add_ = gpu_scatter_add_;
  gpu_kernels.mm = gpu_mm;
  gpu_kernels.bmm = gpu_bmm;
  gpu_kernels.matmul = k_matmul;
  gpu_kernels.binary = k_binary;
  gpu_kernels.binary_ = k_binary_;
  gpu_kernels.binary_scalar = k_binary_scalar;
  gpu_kernels.binary_scalar_ = k_binary_scalar_;
  gpu_kernels.unary = k_unary;
  gpu_kernels.unary_ = k_unary_;
  gpu_kernels.clamp = k_clamp;
  gpu_kernels.fill_ = k_fill_;
  gpu_kernels.full = k_full;
  gpu_kernels.clone = gpu_clone;
  gpu_kernels.contiguous = gpu_contiguous;
  gpu_kernels.astype = gpu_astype;
  gpu_kernels.reduce = gpu_reduce;
  gpu_kernels.max_dim = gpu_max_dim;
  gpu_kernels.argmax = gpu_argmax;
  gpu_kernels.softmax = gpu_softmax;
  gpu_kernels.softmax_backward = gpu_softmax_backward;
  gpu_kernels.layer_norm = gpu_layer_norm;
  gpu_kernels.layer_norm_backward = gpu_layer_norm_backward;
  gpu_kernels.embedding = gpu_embedding;
  gpu_kernels.embedding_backward = gpu_embedding_backward;
  gpu_kernels.dropout = gpu_dropout;
  gpu_kernels.dropout_apply = gpu_dropout_apply;
  gpu_kernels.cross_entropy = gpu_cross_entropy;
  gpu_kernels.cross_entropy_backward = gpu_cross_entropy_backward;
  gpu_kernels.nll_loss = gpu_nll_loss;
  gpu_kernels.nll_loss_backward = gpu_nll_loss_backward;
  gpu_kernels.conv2d_lowered = gpu_conv2d;
  gpu_kernels.conv2d_backward_lowered = gpu_conv2d_backward;
  gpu_kernels.batch_norm = gpu_batch_norm;
  gpu_kernels.batch_norm_backward = gpu_batch_norm_backward;
  gpu_kernels.batch_norm_update = gpu_batch_norm_update;
  gpu_kernels.max_pool2d = gpu_max_pool2d;
  gpu_kernels.max_pool2d_backward = gpu_max_pool2d_backward;
  gpu_kernels.avg_pool2d = gpu_avg_pool2d;
  gpu_kernels.avg_pool2d_backward = gpu_avg_pool2d_backward;
  gpu_kernels.linear = gpu_linear;
  gpu_kernels.linear_backward = gpu_linear_backward;
  gpu_kernels.reshape = gpu_reshape;
  gpu_kernels.copy_ = gpu_copy_;
  gpu_kernels.ew = gpu_ew;
  gpu_kernels.sdpa = gpu_sdpa;
  gpu_kernels.sdpa_backward = gpu_sdpa_backward;
  gpu_kernels.sgd_step = gpu_sgd_step;
  gpu_kernels.adam_step = gpu_adam_step;
  gpu_kernels.optim_step = gpu_optim_step;
  gpu_kernels.activation = gpu_activation;
  gpu_kernels.activation_backward = gpu_activation_backward;
  gpu_kernels.nan_to_num = gpu_nan_to_num;
  gpu_kernels.softplus = gpu_softplus;
  gpu_kernels.logsumexp = gpu_logsumexp;
  gpu_kernels.roll = gpu_roll;
  gpu_kernels.diag = gpu_diag;
  gpu_kernels.eye = gpu_eye;
  gpu_kernels.dot = gpu_dot;
  gpu_kernels.rand = gpu_rand;
  gpu_kernels.randn = gpu_randn;
  gpu_kernels.randint = gpu_randint;
  gpu_kernels.bce_with_logits = gpu_bce_with_logits;
  gpu_kernels.bce_with_logits_backward = gpu_bce_with_logits_backward;
  gpu_kernels.interpolate = gpu_interpolate;
  gpu_kernels.interpolate_backward = gpu_interpolate_backward;
  gpu_kernels.unfold = gpu_unfold;
  gpu_kernels.fold = gpu_fold;
  gpu_kernels.nonzero = gpu_nonzero;
  gpu_kernels.masked_select = gpu_masked_select;
  gpu_kernels.masked_scatter = gpu_masked_scatter;
  gpu_kernels.bernoulli = gpu_bernoulli;
  gpu_kernels.normal = gpu_normal;
  gpu_kernels.conv3d = gpu_conv3d;
  gpu_kernels.conv3d_backward = gpu_conv3d_backward;
  gpu_kernels.conv_transpose3d = gpu_conv_transpose3d;
  gpu_kernels.conv_transpose3d_backward = gpu_conv_transpose3d_backward;
  gpu_kernels.cumprod_backward = gpu_cumprod_backward;
  gpu_kernels.median = gpu_median;
  gpu_kernels.multinomial = gpu_multinomial;
  gpu_kernels.unique = gpu_unique;
  gpu_kernels.ctc_loss = gpu_ctc_loss;
}

static int all_of(int nt, const cell_tensor *const *ts, cell_dtype dt) {
  for (int i = 0; i < nt; i++)
    if (ts[i] && (ts[i]->dtype != dt || !gpu_is_contig(ts[i]))) return 0;
  return 1;
}

/* Every tensor given is float32 or float64, any layout. */
static int all_float(int nt, const cell_tensor *const *ts) {
  for (int i = 0; i < nt; i++)
    if (ts[i] && ts[i]->dtype != CELL_DTYPE_F32 && ts[i]->dtype != CELL_DTYPE_F64) return 0;
  return 1;
}

static int is_float(const cell_tensor *t) { return t && (t->dtype == CELL_DTYPE_F32 || t->dtype == CELL_DTYPE_F64); }
static int is_index(const cell_tensor *t) {
  return t && (t->dtype == CELL_DTYPE_I32 || t->dtype == CELL_DTYPE_I64 || t->dtype == CELL_DTYPE_I16 ||
               t->dtype == CELL_DTYPE_I8 || t->dtype == CELL_DTYPE_U8);
}

/* param, grad and the state tensors: one dtype (float32 or float64), contiguous, one size. */
static int step_ok(int nt, const cell_tensor *const *ts) {
  if (nt < 2 || !is_float(ts[0]) || !ts[1]) return 0;
  int64_t n = gpu_numel(ts[0]);
  for (int i = 0; i < nt; i++)
    if (ts[i] && (ts[i]->dtype != ts[0]->dtype || !gpu_is_contig(ts[i]) || gpu_numel(ts[i]) != n)) return 0;
  return 1;
}

int gpu_supports(void *ctx, cell_kid id, int nt, const cell_tensor *const *ts) {
  (void)ctx;
  switch (id) {
  case CELL_KID_mm:
  case CELL_KID_bmm:
    return all_of(nt, ts, CELL_DTYPE_F32) || all_of(nt, ts, CELL_DTYPE_F64);
  case CELL_KID_matmul:
    if (nt != 2 || !ts[0] || !ts[1] || ts[0]->ndim != ts[1]->ndim) return 0;
    if (ts[0]->ndim != 2 && !(ts[0]->ndim == 3 && ts[0]->shape[0] == ts[1]->shape[0])) return 0;
    return all_of(nt, ts, CELL_DTYPE_F32) || all_of(nt, ts, CELL_DTYPE_F64);
  case CELL_KID_binary: /* float32 arithmetic, comparisons of any real dtypes (the kernel
                          * refuses the rest: it sees the op); any layout, broadcasting */
    for (int i = 0; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return 1;
  case CELL_KID_binary_scalar: /* the kernels check the dtype against the op */
  case CELL_KID_unary:
  case CELL_KID_clamp:
    return nt > 0 && ts[0] && gpu_dtype_copyable(ts[0]->dtype);
  case CELL_KID_binary_: /* the operand written in place: contiguous */
  case CELL_KID_binary_scalar_:
  case CELL_KID_unary_:
    for (int i = 0; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return nt > 0 && ts[0] && gpu_is_contig(ts[0]);
  case CELL_KID_fill_:
    return nt > 0 && ts[0] && gpu_is_contig(ts[0]);
  case CELL_KID_clone:
  case CELL_KID_contiguous:
  case CELL_KID_astype:
    return nt > 0 && ts[0] && gpu_dtype_copyable(ts[0]->dtype);
  case CELL_KID_full: /* no tensor: made on the current GPU */
  case CELL_KID_arange:
  case CELL_KID_linspace:
  case CELL_KID_eye:
  case CELL_KID_rand:
  case CELL_KID_randn:
  case CELL_KID_randint:
    return 1;
  case CELL_KID_activation: /* x: any dtype (the kernel raises the CPU's TypeError for the rest) */
  case CELL_KID_activation_backward: /* g, x */
  case CELL_KID_softplus:
  case CELL_KID_nan_to_num:
  case CELL_KID_logsumexp:
  case CELL_KID_roll:
  case CELL_KID_diag:
  case CELL_KID_bce_with_logits: /* x, y, weight, pos_weight (the kernel checks for floats) */
  case CELL_KID_bce_with_logits_backward: /* g, x, y, weight, pos_weight */
  case CELL_KID_interpolate: /* x (the kernel checks for floats) */
  case CELL_KID_interpolate_backward: /* g */
  case CELL_KID_unfold: /* x (the kernel checks for floats) */
  case CELL_KID_fold:
  case CELL_KID_nonzero: /* a: every dtype */
  case CELL_KID_masked_select: /* a, mask (the kernel checks the mask is bool) */
  case CELL_KID_masked_scatter: /* a, mask, src */
  case CELL_KID_bernoulli: /* x (its shape and dtype), p (may be NULL) */
  case CELL_KID_normal: /* mean, std */
  case CELL_KID_multinomial: /* probs (the kernel checks for floats) */
  case CELL_KID_ctc_loss: /* log_probs, targets, input_lengths, target_lengths */
  case CELL_KID_conv3d: /* x, w, b (the kernel checks for floats) */
  case CELL_KID_conv3d_backward: /* gy, x, w */
  case CELL_KID_conv_transpose3d:
  case CELL_KID_conv_transpose3d_backward:
  case CELL_KID_cumprod_backward: /* g, x: any real dtypes (through float64) */
    for (int i = 0; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return nt > 0 && ts[0];
  case CELL_KID_dot: /* a, b: float32 / float64 (the kernel refuses bool with the CPU's TypeError) */
    if (nt != 2 || !ts[0] || !ts[1]) return 0;
    {
      cell_dtype dt = cell_dtype_promote(ts[0]->dtype, ts[1]->dtype);
      return dt == CELL_DTYPE_F32 || dt == CELL_DTYPE_F64 || dt == CELL_DTYPE_BOOL;
    }
  case CELL_KID_sort: /* any real dtype: keys from a float64 or int64 copy */
  case CELL_KID_topk:
  case CELL_KID_median:
  case CELL_KID_unique:
  case CELL_KID_var: /* any real dtype, gathered as float64 */
  case CELL_KID_norm:
  case CELL_KID_cumsum:
  case CELL_KID_cumsum_reverse:
  case CELL_KID_cumprod:
    return nt > 0 && ts[0] && gpu_dtype_copyable(ts[0]->dtype);
  case CELL_KID_reduce: /* float dtypes (float16 / bfloat16 through float64); the sum of bool and small integers too */
    return nt > 0 && ts[0] && (is_float(ts[0]) || ts[0]->dtype == CELL_DTYPE_F16 || ts[0]->dtype == CELL_DTYPE_BF16 ||
                               ts[0]->dtype == CELL_DTYPE_BOOL || ts[0]->dtype == CELL_DTYPE_U8 ||
                               ts[0]->dtype == CELL_DTYPE_I8 || ts[0]->dtype == CELL_DTYPE_I16 ||
                               ts[0]->dtype == CELL_DTYPE_I32);
  case CELL_KID_max_dim:
  case CELL_KID_argmax:
  case CELL_KID_softmax:
  case CELL_KID_softmax_backward:
  case CELL_KID_dropout:
  case CELL_KID_dropout_apply:
  case CELL_KID_layer_norm:
  case CELL_KID_layer_norm_backward:
    return nt > 0 && ts[0] && all_float(nt, ts);
  case CELL_KID_embedding: /* ids, weight */
    return nt == 2 && is_index(ts[0]) && is_float(ts[1]);
  case CELL_KID_embedding_backward: /* g, ids */
    return nt == 2 && is_float(ts[0]) && is_index(ts[1]);
  case CELL_KID_cross_entropy: /* logits, target, weight */
  case CELL_KID_nll_loss:
    return nt == 3 && is_float(ts[0]) && (is_float(ts[1]) || is_index(ts[1])) && (!ts[2] || is_float(ts[2]));
  case CELL_KID_cross_entropy_backward: /* g, logits, lse, target, weight */
    return nt == 5 && is_float(ts[0]) && is_float(ts[1]) && is_float(ts[2]) &&
           (is_float(ts[3]) || is_index(ts[3])) && (!ts[4] || is_float(ts[4]));
  case CELL_KID_nll_loss_backward: /* g, logp, target, weight */
    return nt == 4 && is_float(ts[0]) && is_float(ts[1]) && is_index(ts[2]) && (!ts[3] || is_float(ts[3]));
  case CELL_KID_conv2d_lowered: /* x, w, b: one float dtype */
  case CELL_KID_conv2d_backward_lowered: /* gy, x, w */
    if (!is_float(ts[0])) return 0;
    for (int i = 1; i < nt; i++)
      if (ts[i] && ts[i]->dtype != ts[0]->dtype) return 0;
    return 1;
  case CELL_KID_sgd_step:
  case CELL_KID_adam_step:
  case CELL_KID_optim_step: /* param, grad, s0, s1, s2 (absent states NULL) */
    return step_ok(nt, ts);
  case CELL_KID_batch_norm: /* x, running_mean, running_var, weight, bias */
  case CELL_KID_batch_norm_backward: /* g, x, weight, mean, var */
  case CELL_KID_batch_norm_update: /* running_mean, running_var, mean, var */
  case CELL_KID_max_pool2d: /* x */
  case CELL_KID_avg_pool2d:
  case CELL_KID_avg_pool2d_backward: /* gy */
    return nt > 0 && all_float(nt, ts) && (id == CELL_KID_batch_norm_update || ts[0]);
  case CELL_KID_max_pool2d_backward: /* gy, indices */
    return nt == 2 && is_float(ts[0]) && ts[1] && ts[1]->dtype == CELL_DTYPE_I64;
  case CELL_KID_linear: /* x, w, b: one float dtype */
  case CELL_KID_linear_backward: /* g, x, w */
    if (nt < 2 || !is_float(ts[0])) return 0;
    for (int i = 1; i < nt; i++)
      if (ts[i] && ts[i]->dtype != ts[0]->dtype) return 0;
    return 1;
  case CELL_KID_sdpa: /* q, k, v, mask: no mask tensor (is_causal runs) */
    return nt == 4 && is_float(ts[0]) && ts[1] && ts[2] && ts[1]->dtype == ts[0]->dtype &&
           ts[2]->dtype == ts[0]->dtype && !ts[3];
  case CELL_KID_sdpa_backward: /* g, q, k, v, mask, o, lse, kept weights (a CPU forward's only) */
    return nt == 8 && is_float(ts[1]) && ts[0] && ts[2] && ts[3] && ts[5] && ts[6] && ts[0]->dtype == ts[1]->dtype &&
           ts[2]->dtype == ts[1]->dtype && ts[3]->dtype == ts[1]->dtype && !ts[4] && ts[6]->dtype == CELL_DTYPE_F64 &&
           !ts[7];
  case CELL_KID_reshape:
    return nt > 0 && ts[0] && gpu_dtype_copyable(ts[0]->dtype);
  case CELL_KID_copy_: /* dst (any layout: a strided one through a staging copy), src */
    return nt == 2 && ts[0] && ts[1] && gpu_dtype_copyable(ts[0]->dtype) && gpu_dtype_copyable(ts[1]->dtype);
  case CELL_KID_pointwise_loss: /* x, y (the kernel checks for floats) */
  case CELL_KID_pointwise_loss_backward: /* g, x, y */
  case CELL_KID_where: /* cond, a, b: any dtypes (the kernels check and promote them) */
  case CELL_KID_masked_fill: /* a, mask */
  case CELL_KID_pad: /* a */
  case CELL_KID_flip:
  case CELL_KID_tile:
  case CELL_KID_repeat_interleave:
  case CELL_KID_triangle:
  case CELL_KID_cat: /* pairs of the list, then its first */
  case CELL_KID_stack:
  case CELL_KID_index_select: /* a, index */
  case CELL_KID_gather:
  case CELL_KID_scatter: /* a, index, src */
    for (int i = 0; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return 1;
  case CELL_KID_scatter_add_: /* a (added to: float32, float64, int32, int64), index, src */
    if (nt < 1 || !ts[0] || (ts[0]->dtype != CELL_DTYPE_F32 && ts[0]->dtype != CELL_DTYPE_F64 &&
                             ts[0]->dtype != CELL_DTYPE_I32 && ts[0]->dtype != CELL_DTYPE_I64))
      return 0;
    for (int i = 1; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return 1;
  case CELL_KID_ew: /* a, b, c: the operands (the kernel checks the formula and dtype) */
    for (int i = 0; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return 1;
  default:
    return 0;
  }
}
