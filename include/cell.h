/* cell.h - the public C API of cell's engine (libcell).
 *
 * The engine knows nothing of Lua: a C host links libcell and calls these
 * functions directly; the Lua module (cell.core) is one such host.
 *
 * Conventions, for every function below:
 * - A function that can fail returns cell_status. On failure it leaves a
 *   message for cell_last_error() (thread-local), leaves *out untouched and
 *   leaks nothing. It never aborts or exits.
 * - Outputs are new references: release them with cell_tensor_release.
 * - Inputs are borrowed: the callee retains what it keeps.
 * - Dimensions are 0-based and must lie in [0, ndim) (or [0, ndim] where a
 *   new dimension is inserted); the Lua binding translates 1-based and
 *   negative dimensions before calling.
 * - Shapes are int64_t arrays of at most CELL_MAX_DIMS entries. */
#ifndef CELL_H
#define CELL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define CELL_API __attribute__((visibility("default")))
#else
#define CELL_API
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#include "cell_ffi.h"
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#define CELL_MAX_DIMS 16
#define CELL_VERSION "0.1.0"

/* Binary elementwise ops, all broadcasting. Comparisons give bool. */
typedef enum cell_binop {
  CELL_OP_ADD = 0,
  CELL_OP_SUB,
  CELL_OP_MUL,
  CELL_OP_DIV,     /* true division: integer inputs give float32 */
  CELL_OP_POW,
  CELL_OP_MAXIMUM,
  CELL_OP_MINIMUM,
  CELL_OP_EQ,
  CELL_OP_NE,
  CELL_OP_LT,
  CELL_OP_LE,
  CELL_OP_GT,
  CELL_OP_GE,
  CELL_OP_LOGICAL_AND,
  CELL_OP_LOGICAL_OR,
  CELL_BINOP_COUNT
} cell_binop;

/* Unary elementwise ops. Math functions on integer or bool inputs give
 * float32; abs, neg, sign, floor, ceil, round, relu keep the dtype. */
typedef enum cell_unop {
  CELL_OP_ABS = 0,
  CELL_OP_NEG,
  CELL_OP_EXP,
  CELL_OP_LOG,
  CELL_OP_LOG1P,
  CELL_OP_SQRT,
  CELL_OP_RSQRT,
  CELL_OP_SIN,
  CELL_OP_COS,
  CELL_OP_TANH,
  CELL_OP_SIGMOID,
  CELL_OP_RELU,
  CELL_OP_GELU,
  CELL_OP_SILU,
  CELL_OP_FLOOR,
  CELL_OP_CEIL,
  CELL_OP_ROUND,   /* half to even, as MindSpore and NumPy */
  CELL_OP_SIGN,
  CELL_OP_LOGICAL_NOT,
  CELL_UNOP_COUNT
} cell_unop;

/* Reductions over a set of dimensions (ndims == 0: over all of them). */
typedef enum cell_redop {
  CELL_RED_SUM = 0,  /* integers and bool sum to int64 */
  CELL_RED_MEAN,     /* integers give float32 */
  CELL_RED_PROD,
  CELL_RED_MAX,
  CELL_RED_MIN,
  CELL_RED_ALL,      /* bool */
  CELL_RED_ANY,      /* bool */
  CELL_REDOP_COUNT
} cell_redop;

/* --- errors ------------------------------------------------------------ */
/* Record a failure (printf-style message) and return status. For hosts and
 * backends that report errors through the engine's channel. */
CELL_API cell_status cell_error(cell_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CELL_API void cell_error_clear(void);

/* --- dtypes ------------------------------------------------------------ */
CELL_API int cell_dtype_is_float(cell_dtype d);
/* The result type of a binary op on two tensors (MindSpore's rules). */
CELL_API cell_dtype cell_dtype_promote(cell_dtype a, cell_dtype b);
/* The result type of tensor `t` against a Lua/C number (float or not). */
CELL_API cell_dtype cell_dtype_promote_scalar(cell_dtype t, int scalar_is_float);
/* Parse "float32" / "Float32"; returns CELL_DTYPE_COUNT when unknown. */
CELL_API cell_dtype cell_dtype_from_name(const char *name);

/* --- creation ------------------------------------------------------------ */
/* Uninitialised contiguous tensor. Negative sizes are a ValueError; sizes
 * whose byte count overflows or cannot be allocated a MemoryError. */
CELL_API cell_status cell_tensor_empty(cell_dtype dt, int ndim, const int64_t *shape,
                                       cell_tensor **out);
CELL_API cell_status cell_tensor_full(cell_dtype dt, int ndim, const int64_t *shape,
                                      double value, cell_tensor **out);
/* Wrap host memory without copying. `release(ctx, data)` runs when the last
 * view goes (release may be NULL). strides == NULL means contiguous. */
CELL_API cell_status cell_tensor_wrap(void *data, cell_dtype dt, int ndim,
                                      const int64_t *shape, const int64_t *strides,
                                      void (*release)(void *ctx, void *data), void *ctx,
                                      cell_tensor **out);
CELL_API cell_status cell_tensor_arange(double start, double stop, double step,
                                        cell_dtype dt, cell_tensor **out);
CELL_API cell_status cell_tensor_linspace(double start, double stop, int64_t n,
                                          cell_dtype dt, cell_tensor **out);
CELL_API cell_status cell_tensor_eye(int64_t n, int64_t m, cell_dtype dt, cell_tensor **out);
/* Random tensors from the engine's counter-based generator. */
CELL_API cell_status cell_tensor_rand(cell_dtype dt, int ndim, const int64_t *shape,
                                      cell_tensor **out);   /* uniform [0, 1) */
CELL_API cell_status cell_tensor_randn(cell_dtype dt, int ndim, const int64_t *shape,
                                       cell_tensor **out);  /* standard normal */
CELL_API cell_status cell_tensor_randint(int64_t low, int64_t high, cell_dtype dt, int ndim,
                                         const int64_t *shape, cell_tensor **out); /* [low, high) */

/* --- shape and elements ----------------------------------------------- */
CELL_API const int64_t *cell_tensor_shape(const cell_tensor *t);
CELL_API const int64_t *cell_tensor_strides(const cell_tensor *t);
CELL_API size_t cell_tensor_nbytes(const cell_tensor *t);
/* Read / write one element at a multi-index (0-based, checked). */
CELL_API cell_status cell_tensor_get(const cell_tensor *t, const int64_t *idx, double *out);
CELL_API cell_status cell_tensor_set(cell_tensor *t, const int64_t *idx, double v);
/* The single element of a one-element tensor. */
CELL_API cell_status cell_tensor_item(const cell_tensor *t, double *out);
CELL_API cell_status cell_tensor_item_i64(const cell_tensor *t, int64_t *out);
/* A storage's modification counter, bumped by every in-place op. */
CELL_API unsigned cell_tensor_version(const cell_tensor *t);

/* --- views (no copy) ------------------------------------------------------ */
/* reshape: a view when the strides allow it, else a contiguous copy. One
 * entry of shape may be -1 (inferred). view: the same, but never copies. */
CELL_API cell_status cell_tensor_reshape(const cell_tensor *t, int ndim, const int64_t *shape,
                                         cell_tensor **out);
CELL_API cell_status cell_tensor_view(const cell_tensor *t, int ndim, const int64_t *shape,
                                      cell_tensor **out);
CELL_API cell_status cell_tensor_transpose(const cell_tensor *t, int d0, int d1,
                                           cell_tensor **out);
CELL_API cell_status cell_tensor_permute(const cell_tensor *t, const int *dims,
                                         cell_tensor **out);
/* dim < 0: squeeze every size-1 dimension. */
CELL_API cell_status cell_tensor_squeeze(const cell_tensor *t, int dim, cell_tensor **out);
CELL_API cell_status cell_tensor_unsqueeze(const cell_tensor *t, int dim, cell_tensor **out);
CELL_API cell_status cell_tensor_flatten(const cell_tensor *t, int start, int end,
                                         cell_tensor **out);
CELL_API cell_status cell_tensor_narrow(const cell_tensor *t, int dim, int64_t start,
                                        int64_t len, cell_tensor **out);
/* Slice with a step: elements start, start+step, ... below stop. */
CELL_API cell_status cell_tensor_slice(const cell_tensor *t, int dim, int64_t start,
                                       int64_t stop, int64_t step, cell_tensor **out);
CELL_API cell_status cell_tensor_select(const cell_tensor *t, int dim, int64_t i,
                                        cell_tensor **out);
/* Broadcast to shape (size-1 dims stretch; new leading dims added). */
CELL_API cell_status cell_tensor_expand(const cell_tensor *t, int ndim, const int64_t *shape,
                                        cell_tensor **out);
/* The same tensor (retained) when contiguous, else a contiguous copy. */
CELL_API cell_status cell_tensor_contiguous(const cell_tensor *t, cell_tensor **out);
CELL_API cell_status cell_tensor_clone(const cell_tensor *t, cell_tensor **out);
CELL_API cell_status cell_tensor_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);

/* --- in place -------------------------------------------------------------- */
/* dst = src, broadcasting src to dst's shape and converting its dtype. */
CELL_API cell_status cell_tensor_copy_(cell_tensor *dst, const cell_tensor *src);
CELL_API cell_status cell_tensor_fill_(cell_tensor *t, double v);

/* --- elementwise ------------------------------------------------------------ */
CELL_API cell_status cell_op_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b,
                                    cell_tensor **out);
/* a = a op b; the result dtype must convert to a's dtype (TypeError if not)
 * and b must broadcast to a's shape. */
CELL_API cell_status cell_op_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b);
/* t op s, or s op t when reversed; s is a number, float or integral. */
CELL_API cell_status cell_op_binary_scalar(cell_binop op, const cell_tensor *t, double s,
                                           int s_is_float, int reversed, cell_tensor **out);
CELL_API cell_status cell_op_binary_scalar_(cell_binop op, cell_tensor *t, double s,
                                            int s_is_float);
CELL_API cell_status cell_op_unary(cell_unop op, const cell_tensor *a, cell_tensor **out);
CELL_API cell_status cell_op_unary_(cell_unop op, cell_tensor *a);
CELL_API cell_status cell_op_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi,
                                   double hi, cell_tensor **out);
CELL_API cell_status cell_op_where(const cell_tensor *cond, const cell_tensor *a,
                                   const cell_tensor *b, cell_tensor **out);
CELL_API cell_status cell_op_masked_fill(const cell_tensor *a, const cell_tensor *mask,
                                         double value, cell_tensor **out);
CELL_API const char *cell_binop_name(cell_binop op);
CELL_API const char *cell_unop_name(cell_unop op);

/* --- reductions --------------------------------------------------------------- */
/* Reduce over dims[0..ndims) (ndims == 0: all). */
CELL_API cell_status cell_op_reduce(cell_redop op, const cell_tensor *a, int ndims,
                                    const int *dims, int keepdim, cell_tensor **out);
/* max / min along one dimension, with the positions (int64, counted from
 * index_base) of the first extreme element. */
CELL_API cell_status cell_op_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min,
                                     int64_t index_base, cell_tensor **values,
                                     cell_tensor **indices);
/* argmax / argmin: dim < 0 means over the flattened tensor. */
CELL_API cell_status cell_op_argmax(const cell_tensor *a, int dim, int keepdim, int is_min,
                                    int64_t index_base, cell_tensor **out);
/* Variance (std when take_sqrt) with ddof subtracted from the count. */
CELL_API cell_status cell_op_var(const cell_tensor *a, int ndims, const int *dims, int ddof,
                                 int keepdim, int take_sqrt, cell_tensor **out);
/* p-norm (p > 0, or INFINITY for the max norm). */
CELL_API cell_status cell_op_norm(const cell_tensor *a, double p, int ndims, const int *dims,
                                  int keepdim, cell_tensor **out);
CELL_API cell_status cell_op_cumsum(const cell_tensor *a, int dim, cell_tensor **out);

/* --- linear algebra ------------------------------------------------------------- */
/* NumPy matmul semantics: 1-D operands promoted and squeezed, batch dims
 * broadcast. float32/float64 go to the gemm backend (OpenBLAS). */
CELL_API cell_status cell_op_matmul(const cell_tensor *a, const cell_tensor *b,
                                    cell_tensor **out);
CELL_API cell_status cell_op_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
CELL_API cell_status cell_op_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
CELL_API cell_status cell_op_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);

/* --- shape ops -------------------------------------------------------------------- */
CELL_API cell_status cell_op_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
CELL_API cell_status cell_op_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
/* Index tensors are integer tensors whose values count from index_base. */
CELL_API cell_status cell_op_gather(const cell_tensor *a, int dim, const cell_tensor *index,
                                    int64_t index_base, cell_tensor **out);
CELL_API cell_status cell_op_scatter(const cell_tensor *a, int dim, const cell_tensor *index,
                                     const cell_tensor *src, int64_t index_base,
                                     cell_tensor **out);
CELL_API cell_status cell_op_index_select(const cell_tensor *a, int dim,
                                          const cell_tensor *index, int64_t index_base,
                                          cell_tensor **out);
/* Repeat the whole tensor reps[i] times along each dim (nreps may exceed
 * ndim: leading dims are added). */
CELL_API cell_status cell_op_tile(const cell_tensor *a, int nreps, const int64_t *reps,
                                  cell_tensor **out);
CELL_API cell_status cell_op_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim,
                                               cell_tensor **out);
/* Constant padding. pads holds (before, after) pairs starting from the last
 * dimension, as torch.nn.functional.pad; negative pads crop. */
CELL_API cell_status cell_op_pad(const cell_tensor *a, int npairs, const int64_t *pads,
                                 double value, cell_tensor **out);

/* --- automatic differentiation ---------------------------------------------------- */
/* Grad mode (thread-local, on by default): while on, differentiable ops on
 * tensors that require grad record how to differentiate their outputs. */
CELL_API int cell_grad_is_enabled(void);
CELL_API int cell_grad_set_enabled(int on); /* returns the previous mode */
/* Only floating tensors may require grad (TypeError otherwise); only a leaf
 * (a tensor no recorded op produced) may have the flag changed. */
CELL_API cell_status cell_tensor_set_requires_grad(cell_tensor *t, int on);
CELL_API int cell_tensor_requires_grad(const cell_tensor *t);
CELL_API int cell_tensor_is_leaf(const cell_tensor *t);
/* Name of the node that produced t ("MulBackward", ...), or NULL. */
CELL_API const char *cell_tensor_grad_fn_name(const cell_tensor *t);
/* The same data, cut from the graph (MindSpore's stop_gradient). */
CELL_API cell_status cell_tensor_detach(const cell_tensor *t, cell_tensor **out);
/* Gradients of root with respect to the leaves inputs[0..n). sens is the
 * gradient of root (NULL: root must have one element, and it is 1).
 * grads[i] gets a new tensor, zeros where inputs[i] did not contribute.
 * The graph's saved tensors are freed afterwards: a second call on the same
 * graph is a RuntimeError. */
CELL_API cell_status cell_autograd_grad(const cell_tensor *root, const cell_tensor *sens, int n,
                                        cell_tensor *const *inputs, cell_tensor **grads);
/* A function run on t's gradient during backward; it may set *replacement
 * (a new reference) to replace it. release(ud) runs when the hook goes.
 * t must require grad. *id identifies the hook for removal. */
CELL_API cell_status cell_tensor_register_hook(cell_tensor *t,
                                               cell_status (*fn)(void *ud, const cell_tensor *grad,
                                                                 cell_tensor **replacement),
                                               void (*release)(void *ud), void *ud, int *id);
CELL_API void cell_tensor_remove_hook(cell_tensor *t, int id);
/* The names of every backward node the engine can record ("MulBackward",
 * ...), up to max of them; returns the count. Tests check each has a
 * gradient check. */
CELL_API int cell_autograd_node_names(const char **names, int max);

/* --- printing ---------------------------------------------------------------------- */
/* MindSpore's repr: "Tensor(shape=[2, 3], dtype=Float32, value=\n[[...]])".
 * *out is a NUL-terminated string owned by the caller (free with free()). */
CELL_API cell_status cell_tensor_format(const cell_tensor *t, char **out);

/* --- backends ------------------------------------------------------------------------ */
/* The name of the backend that would take a gemm of this shape and dtype
 * ("blas" or "cpu"): for tests and benchmarks. */
CELL_API const char *cell_gemm_backend_name(cell_dtype dt, int64_t m, int64_t n, int64_t k);

#include "cell_conv.h"
#include "cell_nn.h"
#include "cell_optim.h"

#endif
