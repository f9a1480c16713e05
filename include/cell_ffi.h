/* cell_ffi.h - the plain declarations of cell's public C API: what a LuaJIT
 * host reaches through the FFI, and the inference path of a C host.
 *
 * This file is read twice: by the C compiler (cell.h includes it, so every
 * declaration here is checked against its definition) and by LuaJIT's
 * ffi.cdef (lua/cell/ffi.lua strips the preprocessor lines). Keep it to
 * plain C declarations: no macros, no includes, no attributes, no function
 * pointers (nothing here calls back into Lua). Include cell.h, not this file:
 * the conventions at the top of cell.h (statuses, new and borrowed
 * references, 0-based dimensions) apply to every declaration below.
 *
 * Every struct declared here is checked from LuaJIT: spec/ffi_spec.lua
 * compares ffi.sizeof / ffi.offsetof of each one, and the value of every
 * enum constant, with the numbers the C build reports (core._ffi_layout in
 * src/lua/lembed.c). A struct added here must be added there too; the spec
 * fails until it is. */
#ifndef CELL_FFI_H
#define CELL_FFI_H

/* Element types. The order is part of the ABI. */
typedef enum cell_dtype {
  CELL_DTYPE_F32 = 0,
  CELL_DTYPE_F64,
  CELL_DTYPE_F16,
  CELL_DTYPE_BF16,
  CELL_DTYPE_I8,
  CELL_DTYPE_U8,
  CELL_DTYPE_I32,
  CELL_DTYPE_I64,
  CELL_DTYPE_BOOL,
  CELL_DTYPE_I16, /* after BOOL: the older values keep their numbers */
  CELL_DTYPE_COUNT
} cell_dtype;

/* Every engine call that can fail returns one of these; CELL_OK is zero.
 * The kind maps onto MindSpore's exception names (cell_status_name). */
typedef enum cell_status {
  CELL_OK = 0,
  CELL_ERR_VALUE,      /* ValueError: bad shape, bad value, NULL argument */
  CELL_ERR_TYPE,       /* TypeError: bad dtype or argument kind */
  CELL_ERR_INDEX,      /* IndexError: index or dimension out of range */
  CELL_ERR_MEMORY,     /* MemoryError: an allocation failed */
  CELL_ERR_RUNTIME,    /* RuntimeError: anything else */
  CELL_ERR_NOTIMPL,    /* NotImplementedError */
  CELL_ERR_INTERRUPT,  /* KeyboardInterrupt: the interrupt flag was raised */
  CELL_STATUS_COUNT
} cell_status;

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
  /* elementwise math (issue 13): */
  CELL_OP_ATAN2,        /* integers give float32 */
  CELL_OP_REMAINDER,    /* the divisor's sign (Python); integer x % 0: ValueError */
  CELL_OP_FMOD,         /* the dividend's sign (C fmod); integer x % 0: ValueError */
  CELL_OP_FLOOR_DIVIDE, /* floor(a / b); integer division by zero: ValueError */
  CELL_OP_LOGICAL_XOR,
  CELL_BINOP_COUNT
} cell_binop;

/* Unary elementwise ops. Math functions on integer or bool inputs give
 * float32; abs, neg, sign, floor, ceil, round, relu, square keep the dtype
 * (square of bool gives int64); isnan, isinf, isfinite give bool. */
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
  /* elementwise math (issue 13): */
  CELL_OP_ERF,
  CELL_OP_ERFC,
  CELL_OP_TAN,
  CELL_OP_ATAN,
  CELL_OP_ASIN,
  CELL_OP_ACOS,
  CELL_OP_SINH,
  CELL_OP_COSH,
  CELL_OP_LOG2,
  CELL_OP_LOG10,
  CELL_OP_EXP2,
  CELL_OP_EXPM1,
  CELL_OP_SQUARE,
  CELL_OP_RECIPROCAL,
  CELL_OP_ISNAN,
  CELL_OP_ISINF,
  CELL_OP_ISFINITE,
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

/* A tensor: a refcounted view (dtype, shape, strides, offset) of a
 * refcounted storage. Opaque: use the accessors. A handle is valid from the
 * call that made it until its last cell_tensor_release. */
typedef struct cell_tensor cell_tensor;

/* Allocator statistics: bytes, then counts. Filled by cell_alloc_get_stats. */
typedef struct cell_alloc_stats {
  unsigned long long in_use;    /* bytes handed out and not yet freed */
  unsigned long long peak;      /* highest in_use since start or reset */
  unsigned long long cached;    /* bytes held in the cache for reuse */
  unsigned long long n_alloc;   /* allocation calls served, cache hits included */
  unsigned long long n_os;      /* of those, calls that reached the OS (malloc) */
} cell_alloc_stats;

/* --- errors ------------------------------------------------------------ */
/* The message and status of the last failure on this thread. Both stay
 * until the next failure (a success does not clear them) or until
 * cell_error_clear: read them right after the call that failed. The
 * message is owned by the engine and overwritten by the next failure. */
const char *cell_last_error(void);
cell_status cell_last_status(void);
/* Forget the last failure: the message becomes "" and the status CELL_OK. */
void cell_error_clear(void);
/* "ValueError", "TypeError", ... ("OK" for CELL_OK); an out-of-range value
 * reads "RuntimeError". The string is static. */
const char *cell_status_name(cell_status s);

/* --- dtypes ------------------------------------------------------------ */
/* "Float32", ... (MindSpore's spelling); "Unknown" for a bad value. */
const char *cell_dtype_name(cell_dtype d);
/* Bytes per element; 0 for a bad value. */
int cell_dtype_size(cell_dtype d);
/* 1 for float32, float64, float16 and bfloat16; 0 otherwise. */
int cell_dtype_is_float(cell_dtype d);
/* "float32" or "Float32" (any case) to CELL_DTYPE_F32; CELL_DTYPE_COUNT
 * when the name is unknown or NULL. */
cell_dtype cell_dtype_from_name(const char *name);

/* --- tensor accessors --------------------------------------------------- */
/* These never fail: a NULL tensor reads as 0 dimensions, 0 elements, dtype
 * CELL_DTYPE_COUNT and data NULL; a dimension out of range reads 0. */
int cell_tensor_ndim(const cell_tensor *t);
long long cell_tensor_dim(const cell_tensor *t, int d);     /* size of dim d (0-based) */
long long cell_tensor_stride_of(const cell_tensor *t, int d); /* in elements, may be 0 */
long long cell_tensor_numel(const cell_tensor *t);
cell_dtype cell_tensor_dtype(const cell_tensor *t);
int cell_tensor_is_contiguous(const cell_tensor *t);
/* The first element of the view. Writes through it are seen by every view
 * of the storage (and by Lua, for a tensor Lua holds); the pointer stays
 * valid while any reference to the storage lives. For a non-contiguous
 * view, step by cell_tensor_stride_of. On another device than the CPU it is
 * the device's address, which the host must not read (move_to the CPU). */
void *cell_tensor_data_ptr(const cell_tensor *t);
/* The id of the device t's memory lives on (0: the CPU; cell_device.h)
 * and a device's name ("CPU", "TEST:0"; NULL for an unknown id). */
int cell_tensor_device(const cell_tensor *t);
const char *cell_device_name(int id);
/* Reference counting. Every handle an engine call gives you is one
 * reference; retain adds one, release drops one and frees the tensor (and,
 * with the last view, its storage) at zero. NULL is a no-op for both.
 * Not thread-safe: one thread uses a tensor at a time. */
void cell_tensor_retain(cell_tensor *t);
void cell_tensor_release(cell_tensor *t);

/* --- creation ------------------------------------------------------------ */
/* Uninitialised contiguous tensor of ndim sizes (shape may be NULL when
 * ndim is 0: a scalar). Errors: NULL out, ndim outside 0..16 or a negative
 * size are ValueError; an unknown dtype TypeError; a byte count that
 * overflows or cannot be allocated MemoryError. */
cell_status cell_tensor_empty(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out);
/* The same, every element set to value (converted to dt). */
cell_status cell_tensor_full(cell_dtype dt, int ndim, const int64_t *shape, double value,
                             cell_tensor **out);

/* --- views and copies ------------------------------------------------------ */
/* reshape: a view when the strides allow it, else a contiguous copy. One
 * entry of shape may be -1 (inferred). Errors: a count that does not match
 * t's is ValueError naming both shapes. view: the same, but never copies
 * (RuntimeError when the layout does not allow it). */
cell_status cell_tensor_reshape(const cell_tensor *t, int ndim, const int64_t *shape,
                                cell_tensor **out);
cell_status cell_tensor_view(const cell_tensor *t, int ndim, const int64_t *shape,
                             cell_tensor **out);
/* Swap dimensions d0 and d1 (a view). IndexError when either is out of range. */
cell_status cell_tensor_transpose(const cell_tensor *t, int d0, int d1, cell_tensor **out);
/* t itself (one more reference) when contiguous, else a contiguous copy. */
cell_status cell_tensor_contiguous(const cell_tensor *t, cell_tensor **out);
/* dst = src, broadcasting src to dst's shape and converting its dtype.
 * ValueError when src does not broadcast to dst. Recorded while grad mode
 * is on (differentiable in src; on a view, in the rest of its base);
 * RuntimeError on a leaf that requires grad, or a view of one. */
cell_status cell_tensor_copy_(cell_tensor *dst, const cell_tensor *src);
/* Every element of t set to v. Recorded while grad mode is on (t's old
 * values get no gradient); RuntimeError on a leaf that requires grad, or
 * a view of one. */
cell_status cell_tensor_fill_(cell_tensor *t, double v);

/* --- elementwise, matmul, reductions: the inference path ------------------ */
/* out = a op b, broadcasting; the result dtype follows MindSpore's
 * promotion (cell_dtype_promote). Errors: shapes that do not broadcast are
 * ValueError naming both; an op out of range ValueError; an op a dtype
 * does not support (logical ops aside, bool arithmetic) TypeError. */
cell_status cell_op_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b,
                           cell_tensor **out);
/* a = a op b: b must broadcast to a's shape and the result dtype must
 * convert to a's (TypeError otherwise). Recorded while grad mode is on
 * (a's history moves onto the op; on a view, its base's too); RuntimeError
 * on a leaf that requires grad, or a view of one. */
cell_status cell_op_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b);
/* t op s (s op t when reversed); s is a number, float when s_is_float.
 * RuntimeError for an integer or bool t to a negative integer s (POW, not
 * reversed), as PyTorch. */
cell_status cell_op_binary_scalar(cell_binop op, const cell_tensor *t, double s,
                                  int s_is_float, int reversed, cell_tensor **out);
/* out = op(a). ValueError for an op out of range. */
cell_status cell_op_unary(cell_unop op, const cell_tensor *a, cell_tensor **out);
/* a = op(a); op must keep a's dtype (TypeError otherwise). Recorded while
 * grad mode is on, as cell_op_binary_. */
cell_status cell_op_unary_(cell_unop op, cell_tensor *a);
/* NumPy matmul: 1-D operands promoted and squeezed, batch dims broadcast;
 * float32/float64 go to OpenBLAS (a single row or column to gemv). Errors:
 * inner sizes that differ are ValueError naming both shapes; a 0-D operand
 * ValueError; bool operands TypeError. */
cell_status cell_op_matmul(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
/* Reduce over dims[0..ndims) (ndims == 0: over all); keepdim keeps them
 * as size 1. IndexError for a dimension out of range, ValueError for one
 * listed twice or for max/min over zero elements. */
cell_status cell_op_reduce(cell_redop op, const cell_tensor *a, int ndims, const int *dims,
                           int keepdim, cell_tensor **out);
/* Positions (int64, counted from index_base: 0 in C, 1 for Lua) of the
 * largest (smallest when is_min) element along dim, or over the flattened
 * tensor when dim < 0. */
cell_status cell_op_argmax(const cell_tensor *a, int dim, int keepdim, int is_min,
                           int64_t index_base, cell_tensor **out);

/* --- grad mode -------------------------------------------------------------- */
/* Grad mode (thread-local, on by default): while on, differentiable ops on
 * tensors that require grad record how to differentiate their outputs.
 * An inference host turns it off (nothing requires grad there anyway, so
 * it only skips a check per op). set returns the previous mode. */
int cell_grad_is_enabled(void);
int cell_grad_set_enabled(int on);

/* --- engine settings ---------------------------------------------------- */
/* Threads for OpenBLAS and the engine's parallel kernels, n in [1,
 * CELL_MAX_THREADS] (1024, cell.h); ValueError, and nothing changed,
 * otherwise. A game loop at batch 1 wants 1: OpenBLAS workers otherwise
 * spin. Call it before the first op, from the thread that runs them. */
cell_status cell_set_num_threads(int n);
int cell_get_num_threads(void);
/* Seed the calling thread's current generator (rand, randn, randint,
 * dropout; cell.h: cell_generator_seed(NULL, seed)): the same seed gives
 * the same numbers whatever the thread count. */
void cell_set_seed(unsigned long long seed);
/* Allocator statistics into *out (NULL: nothing). n_os counts the calls
 * that reached malloc: after warm-up a steady loop adds none. */
void cell_alloc_get_stats(cell_alloc_stats *out);
void cell_alloc_reset_peak(void);       /* peak = in_use */
void cell_alloc_empty_cache(void);      /* give cached blocks back to the OS */
/* Raise (on != 0) or lower the interrupt flag. Kernels poll it and fail
 * with CELL_ERR_INTERRUPT while it is raised; async-signal-safe, so a
 * SIGINT handler may call it. The host lowers it before the next call. */
void cell_interrupt(int on);

#endif
