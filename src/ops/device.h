/* device.h - device tables and the registry (internal).
 *
 * A device is a table: memory functions, one kernel pointer per kernel of
 * kernel_list.h, and a capability query. The op layer reaches every kernel
 * through the cell_k_* dispatchers (device.c): they find the device of the
 * kernel's tensors, refuse a mix of devices (ValueError naming both) and
 * kernels the device declines (NotImplementedError), then call the table's
 * pointer. While a kernel runs, tensors it makes (cell_tensor_new_contig)
 * are allocated on that device. */
#ifndef CELL_BACKEND_DEVICE_H
#define CELL_BACKEND_DEVICE_H
#include "cell_device.h"
#include "../core/tensor.h"
#include "kernel_list.h"

#define CELL_MAX_DEVICES 16

struct cell_device_table {
  const char *name; /* "CPU", "TEST", "CUDA" */
  int index;        /* which one of that name */
  void *ctx;        /* passed to every function below */
  /* Memory: n bytes; alloc returns NULL when out of memory. */
  void *(*alloc)(void *ctx, size_t n);
  void (*free)(void *ctx, void *p, size_t n);
  cell_status (*copy_h2d)(void *ctx, void *dst, const void *src, size_t n);
  cell_status (*copy_d2h)(void *ctx, void *dst, const void *src, size_t n);
  cell_status (*copy_d2d)(void *ctx, void *dst, const void *src, size_t n);
  /* n bytes at dst set to the psize-byte pattern repeated. */
  cell_status (*fill)(void *ctx, void *dst, size_t n, const void *pattern, size_t psize);
  /* Whether the device runs kernel id on these tensors (NULL: all). */
  int (*supports_op)(void *ctx, cell_kid id, int nt, const cell_tensor *const *ts);
  const cell_kernels *kernels;
};

extern const cell_device_table cell_device_cpu;
extern const cell_kernels cell_cpu_kernels;

/* The table of device id (0 <= id < cell_device_count()). */
const cell_device_table *cell_device_get(int id);
/* The device new tensors of a running kernel go to: the kernel's device
 * inside a dispatch, else -1. Exported for device modules (a kernel that
 * makes a tensor from nothing, like full, asks where). */
CELL_API int cell_device_current(void);
/* The device of ts (NULLs skipped; none: the current kernel's, else the
 * default), checked: ValueError when two differ, NotImplementedError when
 * the device declines kernel id. */
cell_status cell_device_pick(cell_kid id, int nt, const cell_tensor *const *ts, int *dev);
/* A host-readable copy of t (t itself, retained, on the CPU). */
cell_status cell_tensor_to_host(const cell_tensor *t, cell_tensor **out);
/* The op whose kernels run on this thread, named in the dispatcher's
 * errors ("add: tensors on different devices: ..."); none set: the
 * kernel's own name. cell_op_enter sets it unless an outer op has (the op
 * the caller called is the one named) and returns what cell_op_leave
 * restores: two thread-local stores per op, no formatting unless an error
 * is raised. */
static inline const char *cell_op_enter(const char *name) {
  const char *saved = cell_thread_ctx.op_name;
  if (!saved) cell_thread_ctx.op_name = name;
  return saved;
}
static inline void cell_op_leave(const char *saved) { cell_thread_ctx.op_name = saved; }
/* A public op's body: return call's status, with name the op named. */
#define CELL_OP_NAMED(name, call)                    \
  do {                                               \
    const char *saved_op_ = cell_op_enter(name);     \
    cell_status s_op_ = (call);                      \
    cell_op_leave(saved_op_);                        \
    return s_op_;                                    \
  } while (0)
/* Enter / leave a dispatch on device dev (the allocation device). */
int cell_device_enter(int dev);
void cell_device_leave(int saved);


/* The test device (testdev.c): memory kept PROT_NONE outside its own calls. */
CELL_API cell_status cell_testdev_register(int *id);

#endif
