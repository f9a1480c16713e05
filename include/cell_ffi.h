/* cell_ffi.h - the plain declarations of cell's public C API.
 *
 * This file is read twice: by the C compiler (cell.h includes it, so every
 * declaration here is checked against its definition) and by LuaJIT's
 * ffi.cdef (lua/cell/ffi.lua strips the preprocessor lines). Keep it to
 * plain C declarations: no macros, no includes, no callbacks into Lua. */
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
  CELL_DTYPE_COUNT
} cell_dtype;

/* Every engine call returns one of these; CELL_OK is zero. The kind maps
 * onto MindSpore's exception names (cell_status_name). */
typedef enum cell_status {
  CELL_OK = 0,
  CELL_ERR_VALUE,      /* ValueError: bad shape, bad value */
  CELL_ERR_TYPE,       /* TypeError: bad dtype or argument kind */
  CELL_ERR_INDEX,      /* IndexError: index or dimension out of range */
  CELL_ERR_MEMORY,     /* MemoryError: an allocation failed */
  CELL_ERR_RUNTIME,    /* RuntimeError: anything else */
  CELL_ERR_NOTIMPL,    /* NotImplementedError */
  CELL_ERR_INTERRUPT,  /* KeyboardInterrupt: the interrupt flag was raised */
  CELL_STATUS_COUNT
} cell_status;

/* A tensor: a refcounted view (dtype, shape, strides, offset) of a
 * refcounted storage. Opaque: use the accessors. */
typedef struct cell_tensor cell_tensor;

/* Allocator statistics, in bytes. */
typedef struct cell_alloc_stats {
  unsigned long long in_use;    /* bytes handed out and not yet freed */
  unsigned long long peak;      /* highest in_use since start or reset */
  unsigned long long cached;    /* bytes held in the cache for reuse */
  unsigned long long n_alloc;   /* allocation calls served */
  unsigned long long n_os;      /* of those, calls that reached the OS */
} cell_alloc_stats;

/* --- errors ------------------------------------------------------------ */
const char *cell_last_error(void);          /* message of the last failure */
cell_status cell_last_status(void);          /* status of the last failure */
const char *cell_status_name(cell_status s); /* "ValueError", ... */

/* --- dtypes ------------------------------------------------------------ */
const char *cell_dtype_name(cell_dtype d);   /* "Float32", ... */
int cell_dtype_size(cell_dtype d);           /* bytes per element, 0 if bad */

/* --- tensor accessors --------------------------------------------------- */
int cell_tensor_ndim(const cell_tensor *t);
long long cell_tensor_dim(const cell_tensor *t, int d);     /* 0-based */
long long cell_tensor_stride_of(const cell_tensor *t, int d);
long long cell_tensor_numel(const cell_tensor *t);
cell_dtype cell_tensor_dtype(const cell_tensor *t);
int cell_tensor_is_contiguous(const cell_tensor *t);
void *cell_tensor_data_ptr(const cell_tensor *t); /* first element of the view */
void cell_tensor_retain(cell_tensor *t);
void cell_tensor_release(cell_tensor *t);         /* NULL is a no-op */

/* --- engine settings ---------------------------------------------------- */
void cell_set_num_threads(int n);
int cell_get_num_threads(void);
void cell_set_seed(unsigned long long seed);
void cell_alloc_get_stats(cell_alloc_stats *out);
void cell_alloc_reset_peak(void);
void cell_alloc_empty_cache(void);
void cell_interrupt(int on);  /* set from a signal handler; kernels poll it */

#endif
