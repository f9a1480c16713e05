/* gpu_table.c - the GPU's kernels table and its capability query.
 *
 * Implemented: mm, bmm and matmul of two matrices or two equal batches
 * (cuBLAS, float32 / float64, contiguous), binary
 * add, sub, mul, div, maximum, minimum (float32, any layout, broadcasting;
 * in place: a contiguous left operand) and the comparisons (any real
 * dtypes, to bool: gpu_grad.c), the same with a scalar and the unary abs,
 * neg, exp, log, sqrt, tanh, sigmoid, relu, gelu, silu (float32, any
 * layout) as CUDA kernels, full and fill_ (float32, float64, int32, int64,
 * contiguous), and the rows of
 * gpu_nn.c: clone, contiguous and astype (every real dtype, any layout:
 * casts float16 / bfloat16 / float32 / float64 / integers), reductions
 * (the sum of bool and small integers too), max / argmax, softmax, layer
 * norm, embedding, dropout, cross-entropy and nll_loss (gpu_loss.c),
 * conv2d forward and backward through cuDNN (gpu_dnn.c), linear and its
 * backward (gpu_blas.c), batch norm with its backward and running-stats
 * update and max / avg pooling with their backward (gpu_cnn.c), reshape
 * and copy_ (gpu_view.c), autograd's gradient formulas (ew, gpu_grad.c),
 * attention without a mask tensor (gpu_attn.c) and the SGD and Adam steps
 * (float32 / float64). supports_op declines every
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
static cell_status stub_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  return declined("cat");
}
static cell_status stub_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  return declined("stack");
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#undef GPU_STUB_

static cell_status new_like(const cell_tensor *t, cell_dtype dt, cell_tensor **o) {
  return gpu_new_tensor(gpu_ctx_of(t), dt, t->ndim, t->shape, o);
}

/* a laid out over shape (ndim dims, right-aligned, stride 0 where a
 * broadcasts) as a contiguous tensor of its dtype: a itself (retained)
 * when it is contiguous of that shape already. */
static cell_status spread(const cell_tensor *a, int ndim, const int64_t *shape, cell_tensor **out) {
  if (a->ndim == ndim && gpu_is_contig(a)) {
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
  CELL_TRY(gpu_new_tensor(gpu_ctx_of(a), a->dtype, ndim, shape, &o));
  int64_t n = gpu_numel(o);
  cell_status s = gpu_launch(gpuk_copy_cast(gpu_ctx_of(a)->stream, L, (int)a->dtype, gpu_data(a), (int)a->dtype,
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

/* The arithmetic the kernels run: one dtype of float32, float64, int32,
 * int64 (the result's), division of floats only. */
static int arith_ok(cell_binop op, cell_dtype dt) {
  if (!binary_ok(op)) return 0;
  if (is_float_dt(dt)) return 1;
  return (dt == CELL_DTYPE_I32 || dt == CELL_DTYPE_I64) && op != CELL_OP_DIV;
}

static int is_compare(cell_binop op) { return op >= CELL_OP_EQ && op <= CELL_OP_GE; }

static cell_status k_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (is_compare(op)) return gpu_compare(op, a, b, out);
  /* supports_op admits every copyable dtype (for the comparisons); the
   * arithmetic runs on float32 only. */
  if (a->dtype != b->dtype || !arith_ok(op, a->dtype)) return declined(cell_binop_name(op));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(broadcast(cell_binop_name(op), a, b, &nd, shape));
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *ac = NULL, *bc = NULL, *o = NULL;
  cell_status s = spread(a, nd, shape, &ac);
  if (s == CELL_OK) s = spread(b, nd, shape, &bc);
  if (s == CELL_OK) s = gpu_new_tensor(g, a->dtype, nd, shape, &o);
  if (s == CELL_OK)
    s = gpu_launch(gpuk_binary(g->stream, (int)a->dtype, (int)op, gpu_data(ac), gpu_data(bc), gpu_data(o), gpu_numel(o)),
               cell_binop_name(op));
  if (ac) cell_tensor_release(ac);
  if (bc) cell_tensor_release(bc);
  if (s != CELL_OK) {
    if (o) cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

/* a (contiguous: supports_op) op= b, b broadcast to a's shape. */
static cell_status k_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b) {
  if (a->dtype != b->dtype || !arith_ok(op, a->dtype)) return declined(cell_binop_name(op));
  int nd;
  int64_t shape[CELL_MAX_DIMS];
  CELL_TRY(broadcast(cell_binop_name(op), a, b, &nd, shape));
  if (nd != a->ndim || gpu_numel(a) != gpu_shape_numel(nd, shape))
    return cell_error(CELL_ERR_VALUE, "%s_: the result's shape is not the in-place operand's", cell_binop_name(op));
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *bc;
  CELL_TRY(spread(b, nd, shape, &bc));
  cell_tensor_bump(a);
  cell_status s = gpu_launch(gpuk_binary(g->stream, (int)a->dtype, (int)op, gpu_data(a), gpu_data(bc), gpu_data(a), gpu_numel(a)),
                         cell_binop_name(op));
  cell_tensor_release(bc);
  return s;
}

/* t op s (s op t reversed): float32 t of any layout, a float32 result. */
static cell_status k_binary_scalar(cell_binop op, const cell_tensor *t, double s, int s_is_float, int reversed,
                                   cell_tensor **out) {
  /* A float tensor with any number keeps its dtype, an integer tensor with
   * an integer too (the CPU's promotion); an integer tensor with a float
   * number (a float result) is declined. */
  if (!arith_ok(op, t->dtype) || (!is_float_dt(t->dtype) && s_is_float)) return declined(cell_binop_name(op));
  gpu_ctx *g = gpu_ctx_of(t);
  cell_tensor *tc, *o;
  CELL_TRY(spread(t, t->ndim, t->shape, &tc));
  cell_status st = new_like(t, t->dtype, &o);
  if (st == CELL_OK) {
    st = gpu_launch(gpuk_binary_scalar(g->stream, (int)t->dtype, (int)op, gpu_data(tc), s, reversed, gpu_data(o), gpu_numel(t)),
                cell_binop_name(op));
    if (st != CELL_OK) cell_tensor_release(o);
  }
  cell_tensor_release(tc);
  if (st == CELL_OK) *out = o;
  return st;
}

static cell_status k_binary_scalar_(cell_binop op, cell_tensor *t, double s, int s_is_float) {
  if (!arith_ok(op, t->dtype) || (!is_float_dt(t->dtype) && s_is_float)) return declined(cell_binop_name(op));
  gpu_ctx *g = gpu_ctx_of(t);
  cell_tensor_bump(t);
  return gpu_launch(gpuk_binary_scalar(g->stream, (int)t->dtype, (int)op, gpu_data(t), s, 0, gpu_data(t), gpu_numel(t)),
                cell_binop_name(op));
}

static int unary_ok(cell_unop op) {
  return op == CELL_OP_ABS || op == CELL_OP_NEG || op == CELL_OP_EXP || op == CELL_OP_LOG ||
         op == CELL_OP_SQRT || op == CELL_OP_TANH || op == CELL_OP_SIGMOID || op == CELL_OP_RELU ||
         op == CELL_OP_GELU || op == CELL_OP_SILU;
}

static cell_status k_unary(cell_unop op, const cell_tensor *a, cell_tensor **out) {
  if (!unary_ok(op) || !is_float_dt(a->dtype)) return declined(cell_unop_name(op));
  gpu_ctx *g = gpu_ctx_of(a);
  cell_tensor *ac, *o;
  CELL_TRY(spread(a, a->ndim, a->shape, &ac));
  cell_status s = new_like(a, a->dtype, &o);
  if (s != CELL_OK) {
    cell_tensor_release(ac);
    return s;
  }
  s = gpu_launch(gpuk_unary(g->stream, (int)a->dtype, (int)op, gpu_data(ac), gpu_data(o), gpu_numel(a)), cell_unop_name(op));
  cell_tensor_release(ac);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  *out = o;
  return CELL_OK;
}

static cell_status k_unary_(cell_unop op, cell_tensor *a) {
  if (!unary_ok(op) || !is_float_dt(a->dtype)) return declined(cell_unop_name(op));
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
  int want = cell_device_current() >= 0 ? cell_device_current() : cell_get_device();
  gpu_ctx *g = NULL;
  for (int i = 0; i < gpu_count; i++)
    if (gpu_ctxs[i].id == want) g = &gpu_ctxs[i];
  if (!g) return cell_error(CELL_ERR_RUNTIME, "full: device %d is not a GPU", want);
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
  gpu_kernels.cat = stub_cat;
  gpu_kernels.stack = stub_stack;
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
  case CELL_KID_full:
    return 1;
  case CELL_KID_reduce: /* float32 / float64; the sum of bool and small integers too */
    return nt > 0 && ts[0] && (is_float(ts[0]) || ts[0]->dtype == CELL_DTYPE_BOOL || ts[0]->dtype == CELL_DTYPE_U8 ||
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
  case CELL_KID_sdpa_backward: /* g, q, k, v, mask, o, lse */
    return nt == 7 && is_float(ts[1]) && ts[0] && ts[2] && ts[3] && ts[5] && ts[6] && ts[0]->dtype == ts[1]->dtype &&
           ts[2]->dtype == ts[1]->dtype && ts[3]->dtype == ts[1]->dtype && !ts[4] && ts[6]->dtype == CELL_DTYPE_F64;
  case CELL_KID_reshape:
    return nt > 0 && ts[0] && gpu_dtype_copyable(ts[0]->dtype);
  case CELL_KID_copy_: /* dst (written: contiguous), src */
    return nt == 2 && ts[0] && ts[1] && gpu_is_contig(ts[0]) && gpu_dtype_copyable(ts[0]->dtype) &&
           gpu_dtype_copyable(ts[1]->dtype);
  case CELL_KID_ew: /* a, b, c: the operands (the kernel checks the formula and dtype) */
    for (int i = 0; i < nt; i++)
      if (ts[i] && !gpu_dtype_copyable(ts[i]->dtype)) return 0;
    return 1;
  default:
    return 0;
  }
}
