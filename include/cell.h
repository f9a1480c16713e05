/* cell.h - the public C API of cell's engine (libcell).
 *
 * The engine knows nothing of Lua: a C host links libcell and calls these
 * functions directly (`pkg-config --cflags --libs cell`); the Lua module
 * (cell.core) is one such host. A host that also runs Lua includes
 * cell_lua.h as well. cell_ffi.h, included below, holds the part of the API
 * that LuaJIT's FFI reads (types, accessors, the inference path).
 *
 * Call order. There is no init or shutdown call: the engine's state (the
 * allocator's cache, each thread's random generator, the error message) is
 * set up on first use. A host that cares about threads calls
 * cell_set_num_threads before its first op; the rest may be called in any
 * order.
 *
 * Conventions, for every function below and in the headers it includes:
 * - A function that can fail returns cell_status (CELL_OK is 0). On failure
 *   it leaves a message for cell_last_error() (thread-local) that names the
 *   op and the offending shapes or values, leaves *out untouched and leaks
 *   nothing. It never aborts, exits or longjmps, whatever the arguments:
 *   a NULL tensor, output or array is a CELL_ERR_VALUE ("op: NULL argument").
 * - Outputs (cell_tensor **out) are new references: release each with
 *   cell_tensor_release. A view shares the input's storage (writes through
 *   one are seen through the other) and keeps it alive.
 * - Inputs are borrowed: the callee retains what it keeps, so the caller may
 *   release an input right after the call.
 * - Dimensions are 0-based and must lie in [0, ndim) (or [0, ndim] where a
 *   new dimension is inserted); an index or a dimension out of range is a
 *   CELL_ERR_INDEX. The Lua binding translates 1-based and negative
 *   dimensions before calling.
 * - Shapes are int64_t arrays of at most CELL_MAX_DIMS entries; a negative
 *   size is a CELL_ERR_VALUE, and so is a shape whose sizes (zeros counted
 *   as 1) multiply to more than 2^60 - 1, given or computed (reshape,
 *   expand, broadcasting, cat, tile, pad, ...): element counts, strides and
 *   byte counts never overflow. A shape within that bound that memory
 *   cannot hold is a CELL_ERR_MEMORY.
 * - Threads: the engine may be used from several threads as long as no
 *   tensor, and no graph (the history of a tensor that requires grad), is
 *   shared between them unsynchronised. The engine's state is split so:
 *   per thread (each thread starts with its own; another thread never sees
 *   it): grad mode (on at the start, cell_grad_set_enabled), the backward
 *   passes running (cell_autograd_grad runs on the calling thread, and so
 *   does any pass started from its hooks or Lua nodes, nested to any
 *   depth), the error message (cell_last_error) and the current random
 *   generator (the thread's own, or one it made current with
 *   cell_generator_use).
 *   Per process (shared by every thread): the thread count
 *   (cell_set_num_threads, to be set before ops run on other threads), the
 *   interrupt flag (cell_interrupt), the allocator's cache and statistics
 *   (locked), the numbering of tensor hooks (atomic: ids are unique in the
 *   process) and the table of backends. Nothing else is global.
 * - Sizes and strides are in elements, byte counts in bytes (size_t). */
#ifndef CELL_H
#define CELL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define CELL_API __attribute__((visibility("default")))
#else
#define CELL_API
#endif

/* cell_ffi.h has no CELL_API markers (LuaJIT reads it): export it whole. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#include "cell_ffi.h"
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

/* The most dimensions a tensor has. */
#define CELL_MAX_DIMS 16
/* The most threads cell_set_num_threads accepts. */
#define CELL_MAX_THREADS 1024
/* The release, as "X.Y.Z"; the Lua module reports it as cell.version. */
#define CELL_VERSION "0.1.0"

/* --- errors ------------------------------------------------------------ */
/* Record a failure (printf-style message) and return status, for hosts and
 * backends that report their own errors through the engine's channel: a
 * host's loader can `return cell_error(CELL_ERR_VALUE, "model: %s", why);`
 * and its caller reads cell_last_error() as for any engine failure. The
 * message is cut at 1023 bytes. (cell_last_error, cell_last_status,
 * cell_error_clear and cell_status_name are in cell_ffi.h.) */
CELL_API cell_status cell_error(cell_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --- dtypes ------------------------------------------------------------ */
/* The result type of a binary op on tensors of dtypes a and b, MindSpore's
 * rules: bool < integers < floats; the wider of two floats; float16 with
 * bfloat16 gives float32; int8 with uint8 gives int16. Bad values give
 * CELL_DTYPE_COUNT. (Names, sizes and cell_dtype_is_float: cell_ffi.h.) */
CELL_API cell_dtype cell_dtype_promote(cell_dtype a, cell_dtype b);
/* The result type of a tensor of dtype t against a number: a float number
 * makes integer and bool tensors float32, an integral number leaves t as
 * it is (bool becomes int64). */
CELL_API cell_dtype cell_dtype_promote_scalar(cell_dtype t, int scalar_is_float);

/* --- creation ------------------------------------------------------------ */
/* (cell_tensor_empty and cell_tensor_full are in cell_ffi.h.)
 *
 * Wrap host memory as a tensor without copying: a game's vertex buffer, a
 * camera frame, a memory-mapped file. data must hold every element the
 * shape and strides reach (strides in elements, may be 0 or negative for a
 * broadcast or reversed view; NULL means contiguous row-major) and stay
 * valid until release(ctx, data) is called, which happens exactly once,
 * when the last tensor viewing the memory is released: possibly long after
 * cell_tensor_wrap returns, if an op kept a view (reshape, transpose) or
 * autograd saved the tensor. release may be NULL (the host frees the
 * memory itself, after it has released every tensor made from it). The
 * engine reads and writes the memory in place: in-place ops and copy_
 * write into the host's buffer. Errors: NULL data, shape or out, or a
 * negative size: ValueError; an unknown dtype: TypeError; no memory for the
 * tensor's header: MemoryError. On failure release is not called: the
 * memory is still the host's. */
CELL_API cell_status cell_tensor_wrap(void *data, cell_dtype dt, int ndim,
                                      const int64_t *shape, const int64_t *strides,
                                      void (*release)(void *ctx, void *data), void *ctx,
                                      cell_tensor **out);
/* 1-D tensor start, start+step, ... below stop (above it for a negative
 * step). ValueError for step 0 or a non-finite bound, MemoryError for a
 * count that cannot be allocated. */
CELL_API cell_status cell_tensor_arange(double start, double stop, double step,
                                        cell_dtype dt, cell_tensor **out);
/* n evenly spaced values from start to stop inclusive (ValueError: n < 0). */
CELL_API cell_status cell_tensor_linspace(double start, double stop, int64_t n,
                                          cell_dtype dt, cell_tensor **out);
/* n x m matrix with ones on the diagonal (ValueError: a negative size). */
CELL_API cell_status cell_tensor_eye(int64_t n, int64_t m, cell_dtype dt, cell_tensor **out);
/* Random tensors from the calling thread's current generator (below).
 * rand and randn need a floating dtype (TypeError otherwise); randint an
 * integer or floating one, and low < high (ValueError otherwise). */
CELL_API cell_status cell_tensor_rand(cell_dtype dt, int ndim, const int64_t *shape,
                                      cell_tensor **out);   /* uniform [0, 1) */
CELL_API cell_status cell_tensor_randn(cell_dtype dt, int ndim, const int64_t *shape,
                                       cell_tensor **out);  /* standard normal */
CELL_API cell_status cell_tensor_randint(int64_t low, int64_t high, cell_dtype dt, int ndim,
                                         const int64_t *shape, cell_tensor **out); /* [low, high) */

/* --- random generators ------------------------------------------------ */
/* A generator is a counter-based stream (Philox4x32-10): a seed and the
 * next unused counter. rand, randn, randint and dropout draw from the
 * calling thread's current generator, and draw i of a stream depends only
 * on (seed, counter + i): not on the thread count, nor on what other
 * threads or generators do.
 * Every thread starts with a generator of its own, seeded 5489; a thread's
 * draws never perturb another thread's. A host that wants a stream that
 * moves with a task rather than a thread (one per Lua state: the binding
 * does this, so cell.set_seed in one state leaves the others alone) makes
 * a generator and makes it current around the calls that draw:
 *   cell_generator *g; cell_generator_new(42, &g);
 *   cell_generator *prev = cell_generator_use(g);
 *   ... cell_tensor_randn(...), cell_op_dropout(...) ...
 *   cell_generator_use(prev);
 *   cell_generator_free(g);
 * One generator must not be current on two threads at once (the counter
 * is not locked: that is what would make streams overlap). */
typedef struct cell_generator cell_generator;
/* A new generator at counter 0 of seed; MemoryError when it cannot be
 * allocated. Free it with cell_generator_free (NULL: nothing); freeing the
 * calling thread's current generator makes the thread's own current again.
 * It must not be current on another thread when freed. */
CELL_API cell_status cell_generator_new(unsigned long long seed, cell_generator **out);
CELL_API void cell_generator_free(cell_generator *g);
/* Restart g (NULL: the calling thread's current generator) at counter 0 of
 * seed: the same seed gives the same draws again. */
CELL_API void cell_generator_seed(cell_generator *g, unsigned long long seed);
/* Make g the calling thread's current generator (NULL: the thread's own);
 * returns the one it replaces (NULL for the thread's own), to restore. */
CELL_API cell_generator *cell_generator_use(cell_generator *g);
/* The state of g (NULL: the calling thread's current generator) as
 * CELL_RNG_STATE_BYTES bytes written to state: a header, the seed and the
 * counter (little-endian). cell_generator_set_state puts such bytes back,
 * so the draws after it are those that followed the saved state; n other
 * than CELL_RNG_STATE_BYTES, or bytes without the header: ValueError, and
 * g is left as it was. */
#define CELL_RNG_STATE_BYTES 24
CELL_API void cell_generator_get_state(const cell_generator *g, unsigned char *state);
CELL_API cell_status cell_generator_set_state(cell_generator *g, const unsigned char *state,
                                              size_t n);

/* --- shape and elements ----------------------------------------------- */
/* The tensor's sizes and strides, ndim entries each, owned by the tensor
 * and valid while it lives; NULL for a NULL tensor. */
CELL_API const int64_t *cell_tensor_shape(const cell_tensor *t);
CELL_API const int64_t *cell_tensor_strides(const cell_tensor *t);
/* numel * element size: the bytes of the view's values (0 for NULL). */
CELL_API size_t cell_tensor_nbytes(const cell_tensor *t);
/* Read / write one element at a multi-index of ndim entries (0-based,
 * checked: IndexError naming the index, the dimension and its size), as a
 * double. Writing converts the value as cell_tensor_astype converts, and
 * bumps the version. */
CELL_API cell_status cell_tensor_get(const cell_tensor *t, const int64_t *idx, double *out);
CELL_API cell_status cell_tensor_set(cell_tensor *t, const int64_t *idx, double v);
/* The single element of a one-element tensor (any shape); ValueError
 * naming the shape otherwise. The _i64 form reads integers exactly. */
CELL_API cell_status cell_tensor_item(const cell_tensor *t, double *out);
CELL_API cell_status cell_tensor_item_i64(const cell_tensor *t, int64_t *out);
/* A storage's modification counter, bumped by every in-place op: a host
 * that caches something computed from a tensor compares it to see whether
 * the tensor changed. 0 for NULL. */
CELL_API unsigned cell_tensor_version(const cell_tensor *t);

/* --- views (no copy) ------------------------------------------------------ */
/* (reshape, view, transpose and contiguous are in cell_ffi.h.)
 * dims is a permutation of 0..ndim-1 (ValueError for a repeat, IndexError
 * for a value out of range). */
CELL_API cell_status cell_tensor_permute(const cell_tensor *t, const int *dims,
                                         cell_tensor **out);
/* Remove dimension dim if it has size 1 (a dimension of another size is
 * left as it is); dim < 0: remove every size-1 dimension. */
CELL_API cell_status cell_tensor_squeeze(const cell_tensor *t, int dim, cell_tensor **out);
/* Insert a size-1 dimension at dim, 0 <= dim <= ndim. */
CELL_API cell_status cell_tensor_unsqueeze(const cell_tensor *t, int dim, cell_tensor **out);
/* Merge dimensions start..end (inclusive) into one; ValueError when start
 * comes after end. A copy when the strides do not allow a view. */
CELL_API cell_status cell_tensor_flatten(const cell_tensor *t, int start, int end,
                                         cell_tensor **out);
/* Elements start .. start+len-1 along dim (IndexError past the end). */
CELL_API cell_status cell_tensor_narrow(const cell_tensor *t, int dim, int64_t start,
                                        int64_t len, cell_tensor **out);
/* Elements start, start+step, ... below stop along dim; step > 0
 * (ValueError otherwise), 0 <= start <= stop <= size (IndexError naming
 * the range otherwise). */
CELL_API cell_status cell_tensor_slice(const cell_tensor *t, int dim, int64_t start,
                                       int64_t stop, int64_t step, cell_tensor **out);
/* Index i along dim, removing that dimension (IndexError out of range). */
CELL_API cell_status cell_tensor_select(const cell_tensor *t, int dim, int64_t i,
                                        cell_tensor **out);
/* Broadcast to shape: size-1 dims stretch (stride 0), new leading dims are
 * added; ValueError naming both shapes when it cannot. Writes through an
 * expanded view reach the same element many times: do not. */
CELL_API cell_status cell_tensor_expand(const cell_tensor *t, int ndim, const int64_t *shape,
                                        cell_tensor **out);
/* A contiguous copy with storage of its own. */
CELL_API cell_status cell_tensor_clone(const cell_tensor *t, cell_tensor **out);
/* A contiguous copy converted to dt (always a copy, even when t already
 * has dt). TypeError for an unknown dtype. */
CELL_API cell_status cell_tensor_astype(const cell_tensor *t, cell_dtype dt, cell_tensor **out);

/* --- elementwise ------------------------------------------------------------ */
/* (cell_op_binary, cell_op_binary_, cell_op_binary_scalar, cell_op_unary and
 * cell_op_unary_ are in cell_ffi.h.)
 * t = t op s, in place; s must not change t's dtype (TypeError). Recorded
 * while grad mode is on (t's history moves onto the op; on a view, its
 * base's too); RuntimeError on a leaf that requires grad, or a view of one,
 * and for an integer t to a negative integer s (POW). */
CELL_API cell_status cell_op_binary_scalar_(cell_binop op, cell_tensor *t, double s,
                                            int s_is_float);
/* min(max(a, lo), hi), each bound only when its has_ flag is set. */
CELL_API cell_status cell_op_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi,
                                   double hi, cell_tensor **out);
/* cond ? a : b elementwise; cond is bool (TypeError otherwise), the three
 * broadcast together (ValueError naming the shapes otherwise). */
CELL_API cell_status cell_op_where(const cell_tensor *cond, const cell_tensor *a,
                                   const cell_tensor *b, cell_tensor **out);
/* a with value wherever the bool mask (broadcast to a) is true. */
CELL_API cell_status cell_op_masked_fill(const cell_tensor *a, const cell_tensor *mask,
                                         double value, cell_tensor **out);
/* Issue 13's elementwise ops with parameters.
 * nan_to_num: NaN, +inf and -inf replaced by nan, posinf, neginf; a NaN
 * given for one of them stands for its default (0, the dtype's largest
 * finite value, its lowest). Integer and bool tensors come back copied.
 * softplus: log(1 + exp(beta x)) / beta, x itself where beta x > threshold
 * (PyTorch); float tensors only (TypeError), beta nonzero (ValueError).
 * lerp: start + weight (end - start), broadcasting; weight is the tensor w
 * or, when w is NULL, the number wv. start, end (and w) share one float
 * dtype (TypeError naming both otherwise). */
CELL_API cell_status cell_op_nan_to_num(const cell_tensor *a, double nan, double posinf,
                                        double neginf, cell_tensor **out);
CELL_API cell_status cell_op_softplus(const cell_tensor *a, double beta, double threshold,
                                      cell_tensor **out);
CELL_API cell_status cell_op_lerp(const cell_tensor *start, const cell_tensor *end,
                                  const cell_tensor *w, double wv, cell_tensor **out);
/* "add", "relu", ...: the name errors use; "?" for a value out of range. */
CELL_API const char *cell_binop_name(cell_binop op);
CELL_API const char *cell_unop_name(cell_unop op);

/* --- reductions --------------------------------------------------------------- */
/* (cell_op_reduce and cell_op_argmax are in cell_ffi.h.)
 * max / min along one dimension: the values, and the positions (int64,
 * counted from index_base) of the first extreme element. Either output may
 * be NULL when not wanted, not both. ValueError over zero elements. */
CELL_API cell_status cell_op_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min,
                                     int64_t index_base, cell_tensor **values,
                                     cell_tensor **indices);
/* Variance (the standard deviation when take_sqrt) over dims, dividing by
 * the count minus ddof (0: population, 1: sample). */
CELL_API cell_status cell_op_var(const cell_tensor *a, int ndims, const int *dims, int ddof,
                                 int keepdim, int take_sqrt, cell_tensor **out);
/* p-norm (sum |x|^p)^(1/p) over dims: p > 0, p < 0 (0 where an element
 * is 0; over zero elements a ValueError), or INFINITY for the max norm;
 * ValueError for 0, -INFINITY and NaN. */
CELL_API cell_status cell_op_norm(const cell_tensor *a, double p, int ndims, const int *dims,
                                  int keepdim, cell_tensor **out);
/* Running sum along dim (integers and bool sum to int64). */
CELL_API cell_status cell_op_cumsum(const cell_tensor *a, int dim, cell_tensor **out);

/* --- linear algebra ------------------------------------------------------------- */
/* (cell_op_matmul is in cell_ffi.h.) mm: both 2-D; bmm: both 3-D with equal
 * batch sizes; dot: both 1-D of one length. Each is a ValueError naming the
 * shapes otherwise. */
CELL_API cell_status cell_op_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
CELL_API cell_status cell_op_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
CELL_API cell_status cell_op_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);

/* --- shape ops -------------------------------------------------------------------- */
/* Join ts[0..n) along dim (cat: an existing dimension, every other size
 * equal; stack: a new one, every shape equal). n >= 1; dtypes promote.
 * ValueError naming the first tensor that does not fit. */
CELL_API cell_status cell_op_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
CELL_API cell_status cell_op_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out);
/* Index tensors are integer tensors whose values count from index_base (0
 * in C, 1 from Lua); a value out of range is an IndexError naming it.
 * gather: out[i][j] = a[index[i][j]][j] (dim 0), index of a's rank;
 * scatter: a copy of a with src's values written at the indices;
 * index_select: the slices of a at index (1-D) along dim. */
CELL_API cell_status cell_op_gather(const cell_tensor *a, int dim, const cell_tensor *index,
                                    int64_t index_base, cell_tensor **out);
CELL_API cell_status cell_op_scatter(const cell_tensor *a, int dim, const cell_tensor *index,
                                     const cell_tensor *src, int64_t index_base,
                                     cell_tensor **out);
CELL_API cell_status cell_op_index_select(const cell_tensor *a, int dim,
                                          const cell_tensor *index, int64_t index_base,
                                          cell_tensor **out);
/* The ops whose output size depends on the data (elements taken in
 * row-major order). nonzero: the positions of a's non-zero elements (NaN
 * counts, -0.0 does not) as int64 {k, ndim}, counting from index_base.
 * masked_select: the elements of a where mask (Bool, broadcast with a) is
 * true, 1-D. masked_scatter: a copy of a (broadcast with mask) whose
 * masked positions take src's elements in order; src has a's dtype
 * (TypeError) and at least as many elements as the mask selects
 * (ValueError). masked_select and masked_scatter record backward nodes
 * ("MaskedSelectBackward", "MaskedScatterBackward"). */
CELL_API cell_status cell_op_nonzero(const cell_tensor *a, int64_t index_base,
                                     cell_tensor **out);
CELL_API cell_status cell_op_masked_select(const cell_tensor *a, const cell_tensor *mask,
                                           cell_tensor **out);
CELL_API cell_status cell_op_masked_scatter(const cell_tensor *a, const cell_tensor *mask,
                                            const cell_tensor *src, cell_tensor **out);
/* Repeat the whole tensor reps[i] times along each dim (nreps may exceed
 * ndim: leading dims are added; ValueError for a negative count). */
CELL_API cell_status cell_op_tile(const cell_tensor *a, int nreps, const int64_t *reps,
                                  cell_tensor **out);
/* Repeat each element `repeats` times along dim (repeats >= 0). */
CELL_API cell_status cell_op_repeat_interleave(const cell_tensor *a, int64_t repeats, int dim,
                                               cell_tensor **out);
/* Constant padding. pads holds npairs (before, after) pairs starting from
 * the last dimension, as torch.nn.functional.pad; negative pads crop
 * (ValueError when a size would go below zero). */
CELL_API cell_status cell_op_pad(const cell_tensor *a, int npairs, const int64_t *pads,
                                 double value, cell_tensor **out);

/* --- automatic differentiation ---------------------------------------------------- */
/* (cell_grad_is_enabled and cell_grad_set_enabled are in cell_ffi.h.)
 * Only floating tensors may require grad (TypeError otherwise); only a leaf
 * (a tensor no recorded op produced) may have the flag changed
 * (RuntimeError otherwise). */
CELL_API cell_status cell_tensor_set_requires_grad(cell_tensor *t, int on);
CELL_API int cell_tensor_requires_grad(const cell_tensor *t); /* 0 for NULL */
CELL_API int cell_tensor_is_leaf(const cell_tensor *t);       /* 1 for NULL */
/* Name of the node that produced t ("MulBackward", ...), or NULL for a
 * leaf. The string is static. */
CELL_API const char *cell_tensor_grad_fn_name(const cell_tensor *t);
/* The same data, cut from the graph (MindSpore's stop_gradient): a view
 * that does not require grad. */
CELL_API cell_status cell_tensor_detach(const cell_tensor *t, cell_tensor **out);
/* Gradients of root with respect to the leaves inputs[0..n). sens is the
 * gradient of root (NULL: ones of root's shape, the gradient of its sum).
 * grads[i] gets a new tensor, zeros where inputs[i] did not contribute.
 * The graph's saved tensors are freed afterwards: a second call on the same
 * graph is a RuntimeError, as is a root that does not require grad. On
 * failure no grads[i] is set. */
CELL_API cell_status cell_autograd_grad(const cell_tensor *root, const cell_tensor *sens, int n,
                                        cell_tensor *const *inputs, cell_tensor **grads);
/* cell_autograd_grad for higher-order gradients. inputs may also be
 * tensors a recorded op produced (their gradient is the one reaching them;
 * the pass does not go past them). With create_graph, the pass records its
 * own computation: grads[i] carry a history, so they can be differentiated
 * again, and the graph keeps its saved tensors (it can be used again). A
 * rule that is not twice differentiable gives gradients whose backward
 * raises NotImplementedError naming it. */
CELL_API cell_status cell_autograd_grad_ex(const cell_tensor *root, const cell_tensor *sens, int n,
                                           cell_tensor *const *inputs, cell_tensor **grads,
                                           int create_graph);
/* A function run on t's gradient during backward; it may set *replacement
 * (a new reference, of the gradient's shape: another shape ends the pass
 * with a RuntimeError naming both) to replace it, and may fail (its status
 * and message end the pass). release(ud) runs when the hook goes (removed,
 * or t freed; release may be NULL). t must require grad (RuntimeError
 * otherwise). *id identifies the hook for removal. */
CELL_API cell_status cell_tensor_register_hook(cell_tensor *t,
                                               cell_status (*fn)(void *ud, const cell_tensor *grad,
                                                                 cell_tensor **replacement),
                                               void (*release)(void *ud), void *ud, int *id);
/* Remove hook id from t; an unknown id or a NULL t is a no-op. */
CELL_API void cell_tensor_remove_hook(cell_tensor *t, int id);
/* The names of every backward node the engine can record ("MulBackward",
 * ...), up to max of them into names (static strings); returns the count
 * of names written. Tests check each has a gradient check. */
CELL_API int cell_autograd_node_names(const char **names, int max);

/* A backward rule the host defines (the Lua binding's Cell:bprop,
 * recomputation and checkpointing stand on it): out, a tensor no recorded
 * op produced (RuntimeError otherwise), gets a node named name (a string
 * that outlives the node) over inputs[0..n) (n at most
 * CELL_CUSTOM_MAX_INPUTS, ValueError otherwise). In backward,
 * backward(ud, grad_out, n, wants, grad_in) is called with the gradient of
 * out (borrowed); wants[i] says whether input i needs a gradient, and
 * grad_in[i] may receive a new reference (or stay NULL: none) for each
 * such input. A gradient whose shape is not its input's is a ValueError
 * naming both; one of another float dtype is converted. A failing status
 * (with its message) ends the pass. release(ud) runs when the node goes
 * (release may be NULL), and also when this call fails. When grad mode is
 * off or no input requires grad, no node is made and release(ud) runs at
 * once (CELL_OK). */
#define CELL_CUSTOM_MAX_INPUTS 256
typedef cell_status (*cell_custom_backward)(void *ud, const cell_tensor *grad_out, int n,
                                            const int *wants, cell_tensor **grad_in);
CELL_API cell_status cell_autograd_custom_node(cell_tensor *out, int n,
                                               const cell_tensor *const *inputs,
                                               const char *name, cell_custom_backward backward,
                                               void (*release)(void *ud), void *ud);

/* --- elements and shapes for hosts ------------------------------------------------- */
/* One element of dtype dt at p, read as a double or an int64, and written
 * from one, converting as cell_tensor_astype converts (integer stores wrap
 * modulo 2^bits; float to integer saturates, NaN gives 0). p must point at
 * a whole element of dt (cell_tensor_data_ptr, stepped by the strides). */
CELL_API double cell_element_get_f64(cell_dtype dt, const void *p);
CELL_API long long cell_element_get_i64(cell_dtype dt, const void *p);
CELL_API void cell_element_set_f64(cell_dtype dt, void *p, double v);
CELL_API void cell_element_set_i64(cell_dtype dt, void *p, long long v);
/* "[2, 3]" into buf (n bytes, always terminated when n > 0): the form every
 * engine message names shapes in. Returns buf. */
CELL_API const char *cell_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);
/* The bytes of t's storage that t alone holds (0 when other tensors or
 * views share it, or t is NULL): what freeing t would give back. */
CELL_API size_t cell_tensor_owned_bytes(const cell_tensor *t);

/* --- printing ---------------------------------------------------------------------- */
/* MindSpore's repr: "Tensor(shape=[2, 3], dtype=Float32, value=\n[[...]])", a
 * newline before the values of two or more dimensions and a space before
 * those of one or none ("Tensor(shape=[3], dtype=Int64, value= [4, 5, 6])").
 * *out is a NUL-terminated string owned by the caller (free with free()). */
CELL_API cell_status cell_tensor_format(const cell_tensor *t, char **out);

/* --- backends ------------------------------------------------------------------------ */
/* The name of the backend that would take a gemm of this shape and dtype
 * ("blas" or "cpu"): for tests and benchmarks. */
CELL_API const char *cell_gemm_backend_name(cell_dtype dt, int64_t m, int64_t n, int64_t k);
/* Which kernel the BLAS backend's float32 products run on: "openblas", or
 * cell's own "cell-avx512" / "cell-avx2" where OpenBLAS took this CPU for
 * one without vector kernels (or CELL_SGEMM says so). */
CELL_API const char *cell_gemm_kernel_name(void);

/* --- ordering and rearranging ops (sort, topk, median, unique, cumprod,
 * logsumexp, tril / triu, flip, roll, diag, trace) -------------------------------
 * Dimensions are 0-based; index outputs are int64 counted from index_base
 * (0 in C, 1 from Lua). Each differentiable op records its backward rule
 * for float inputs. */
/* Stable sort along dim (NaN sorts as the largest; -0 == +0): the values
 * and the positions they came from. Either output may be NULL, not both. */
CELL_API cell_status cell_op_sort(const cell_tensor *a, int dim, int descending,
                                  int64_t index_base, cell_tensor **values,
                                  cell_tensor **indices);
/* The k largest (or smallest) elements along dim, in order, and their
 * positions; ties go to the earlier element. 0 <= k <= size of dim
 * (ValueError otherwise). indices may be NULL. */
CELL_API cell_status cell_op_topk(const cell_tensor *a, int64_t k, int dim, int largest,
                                  int sorted, int64_t index_base, cell_tensor **values,
                                  cell_tensor **indices);
/* The lower median along dim ((n-1)/2-th smallest; a NaN if the line has
 * one) and its position; IndexError for a dimension of size 0. */
CELL_API cell_status cell_op_median(const cell_tensor *a, int dim, int keepdim,
                                    int64_t index_base, cell_tensor **values,
                                    cell_tensor **indices);
/* The lower median of all elements, 0-D (NaN for an empty float tensor);
 * its gradient is split evenly among the elements equal to it. */
CELL_API cell_status cell_op_median_all(const cell_tensor *a, cell_tensor **out);
/* The distinct elements, sorted (1-D), and optionally, for each element of
 * a, the position of its value in out (a's shape), and how many times each
 * value occurs. NaNs are each distinct. Not differentiable. */
CELL_API cell_status cell_op_unique(const cell_tensor *a, int64_t index_base, cell_tensor **out,
                                    cell_tensor **inverse, cell_tensor **counts);
/* Running product along dim (integers and bool give int64); the gradient
 * is exact where the input holds zeros. */
CELL_API cell_status cell_op_cumprod(const cell_tensor *a, int dim, cell_tensor **out);
/* log(sum(exp(a))) over dims (ndims == 0: all), computed stably; integer
 * inputs give float32. ValueError for a repeated dimension. */
CELL_API cell_status cell_op_logsumexp(const cell_tensor *a, int ndims, const int *dims,
                                       int keepdim, cell_tensor **out);
/* The lower (tril) or upper (triu) triangle of the last two dimensions,
 * the rest zero: elements with col - row <= diagonal (tril) or >= diagonal
 * (triu) are kept. ValueError below 2-D. */
CELL_API cell_status cell_op_tril(const cell_tensor *a, int64_t diagonal, cell_tensor **out);
CELL_API cell_status cell_op_triu(const cell_tensor *a, int64_t diagonal, cell_tensor **out);
/* a with the order of the elements reversed along each of dims
 * (ValueError for a repeated dimension). */
CELL_API cell_status cell_op_flip(const cell_tensor *a, int ndims, const int *dims,
                                  cell_tensor **out);
/* a with its elements shifted by shifts[i] along dims[i] (wrapping
 * around); n == 0: shifts[0] over the flattened elements, shape kept. */
CELL_API cell_status cell_op_roll(const cell_tensor *a, int n, const int64_t *shifts,
                                  const int *dims, cell_tensor **out);
/* 1-D a: a square matrix with a on diagonal `offset` (> 0 above the main
 * one); 2-D a: that diagonal as 1-D. ValueError for other ranks. */
CELL_API cell_status cell_op_diag(const cell_tensor *a, int64_t offset, cell_tensor **out);
/* The sum of the main diagonal of a 2-D tensor (integers give int64);
 * ValueError for another rank. */
CELL_API cell_status cell_op_trace(const cell_tensor *a, cell_tensor **out);

/* --- op families, each in a header of its own -------------------------------------------- */
#include "cell_conv.h"  /* conv2d, max_pool2d, avg_pool2d */
#include "cell_nn.h"    /* softmax, normalisation, dropout, embedding, losses */
#include "cell_optim.h" /* fused optimizer steps */
#include "cell_io.h"    /* safetensors checkpoints, IDX data sets */
#include "cell_device.h" /* devices: registry, default device, move_to */
#include "cell_sample.h" /* multinomial, bernoulli, normal, interpolate, fold, unfold */
#include "cell_attention.h" /* scaled_dot_product_attention */
#include "cell_rnn.h"    /* recurrent time loops: RNN, LSTM, GRU */

#endif
