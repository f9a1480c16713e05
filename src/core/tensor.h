/* tensor.h - storage and tensor views, and helpers every op uses (internal). */
#ifndef CELL_CORE_TENSOR_H
#define CELL_CORE_TENSOR_H
#include "cell.h"
#include "cell_device.h"
#include "dtype.h"
#include <stdbool.h>

typedef enum cell_device { CELL_DEVICE_CPU = 0, CELL_DEVICE_COUNT } cell_device;

typedef struct cell_storage {
  int refcount;
  int device;         /* its device's id in the registry (0: the CPU) */
  unsigned version;   /* bumped by in-place writes; autograd checks it */
  size_t nbytes;
  void *data;
  void (*release)(void *ctx, void *data); /* NULL: data came from cell_alloc */
  void *release_ctx;
  bool external;      /* data not owned by the allocator */
  bool inline_data;   /* data lives in the same block, right after this header */
} cell_storage;

/* Storage headers precede their data in one block (see tensor.c). */
#define CELL_STORAGE_HEADER 64

struct cell_tensor {
  int refcount;
  cell_dtype dtype;
  int ndim;
  int64_t offset;                  /* in elements */
  int64_t shape[CELL_MAX_DIMS];
  int64_t stride[CELL_MAX_DIMS];   /* in elements */
  cell_storage *storage;
  void *autograd; /* the autograd layer's state; its first member is a
                     void (*)(cell_tensor *) that frees it */
};

/* cell_tensor_new_contig (a contiguous tensor, data uninitialised, on the
 * running kernel's device) is public, for device modules: cell_device.h. */
/* Device memory (src/ops/device.c): the device the running kernel
 * allocates on (-1: none, the CPU), a device's alloc / free, and one
 * element's bytes read or written through the device's copy functions. */
int cell_device_current(void);
void *cell_device_alloc(int dev, size_t n);
void cell_device_free(int dev, void *p, size_t n);
cell_status cell_device_read(const cell_tensor *t, const char *p, void *dst, size_t n);
cell_status cell_device_write(cell_tensor *t, char *p, const void *src, size_t n);
/* A new view header sharing t's storage, with the given geometry. */
cell_status cell_tensor_new_view(const cell_tensor *t, int ndim, const int64_t *shape,
                                 const int64_t *stride, int64_t offset, cell_tensor **out);

static inline char *cell_tensor_base(const cell_tensor *t) {
  return (char *)t->storage->data + (size_t)t->offset * (size_t)cell_dtype_size(t->dtype);
}

/* The most elements a shape may describe, counting zero sizes as 1 (so
 * that its contiguous strides fit too): 2^60 - 1, so that a tensor's byte
 * count (elements times at most 8 bytes) fits in int64_t and size_t. */
#define CELL_MAX_NUMEL (INT64_MAX / 8)

/* Checked size arithmetic, the one place sizes are multiplied or added:
 * *out = a * b (a + b) when both are sizes (>= 0) and the result is at most
 * CELL_MAX_NUMEL; false otherwise (out untouched). */
static inline bool cell_size_mul(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > CELL_MAX_NUMEL) return false;
  *out = r;
  return true;
}
static inline bool cell_size_add(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) || r > CELL_MAX_NUMEL) return false;
  *out = r;
  return true;
}
/* Validate a shape and count its elements: 0 <= ndim <= CELL_MAX_DIMS,
 * sizes >= 0, and the product of its sizes (zeros counted as 1) at most
 * CELL_MAX_NUMEL. ValueError naming op and the shape otherwise:
 * "op: shape [a, b] is too large: ...". numel may be NULL. Every shape a
 * tensor gets passes here (new_contig, new_view, wrap), and every op that
 * computes a result shape checks it here first. */
cell_status cell_shape_numel_checked(const char *op, int ndim, const int64_t *shape,
                                     int64_t *numel);
/* The ValueError for a shape that is too large (as above). */
cell_status cell_shape_too_large(const char *op, int ndim, const int64_t *shape);

/* Element count of a shape already validated (a tensor's own shape). */
int64_t cell_shape_numel(int ndim, const int64_t *shape);
void cell_contig_strides(int ndim, const int64_t *shape, int64_t *stride);
bool cell_shape_equal(int na, const int64_t *a, int nb, const int64_t *b);
/* cell_shape_str ("[2, 3]") is public: cell.h. */
/* Broadcast two shapes; ValueError naming both when they do not match. */
cell_status cell_broadcast_shapes(const char *op, int na, const int64_t *a, int nb,
                                  const int64_t *b, int *nout, int64_t *out);
/* Validate a dimension for op; IndexError otherwise. */
cell_status cell_check_dim(const char *op, int dim, int ndim);
/* Validate a shape: cell_shape_numel_checked without the count. */
cell_status cell_check_shape(const char *op, int ndim, const int64_t *shape);
/* Release up to four tensors (NULLs allowed), then return s. */
cell_status cell_release4(cell_status s, cell_tensor *a, cell_tensor *b, cell_tensor *c,
                          cell_tensor *d);
/* Mark a storage written (version counter). */
static inline void cell_tensor_bump(cell_tensor *t) { t->storage->version++; }

/* The engine context. Process-wide state lives in cell_context (cell_ctx);
 * the state of what one thread is doing lives in its cell_thread_context
 * (cell_tctx). Apart from these, only the error message (error.c) and the
 * random generators (rng.c, with a current one a host may swap) are per
 * thread, and the allocator's cache (alloc.c, locked) is per process.
 * include/cell.h tells hosts the same. */
typedef struct cell_context {
  int num_threads;
  volatile int interrupt;
  int hook_ids;           /* the last tensor-hook id handed out (atomic) */
} cell_context;
cell_context *cell_ctx(void);
/* CELL_ERR_INTERRUPT ("interrupted") when the interrupt flag is set, else
 * CELL_OK: what a long kernel returns between its chunks. */
cell_status cell_check_interrupt(void);

struct cell_ag_pass;
typedef struct cell_thread_context {
  int grad_enabled;             /* record ops (1) or not; each thread starts at 1 */
  int device;                   /* the device of the kernel running here (-1: none; src/ops/device.c) */
  struct cell_ag_pass *pass;    /* the innermost backward pass running here, or NULL */
  const char *op_name;          /* the op those kernels serve (cell_op_enter; NULL: none named) */
} cell_thread_context;
/* The calling thread's (a static TLS initialiser: no setup call). Every op
 * reads it several times, so it uses the initial-exec model: a load from
 * the thread pointer rather than a __tls_get_addr call per access. It is
 * 24 bytes, well inside the static TLS a dlopen'ed module may take. */
#define CELL_TLS_FAST __attribute__((tls_model("initial-exec")))
extern __thread cell_thread_context cell_thread_ctx CELL_TLS_FAST;
static inline cell_thread_context *cell_tctx(void) { return &cell_thread_ctx; }

#define CELL_TRY(expr)                 \
  do {                                 \
    cell_status s_ = (expr);           \
    if (s_ != CELL_OK) return s_;      \
  } while (0)

#endif
