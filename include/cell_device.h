/* cell_device.h - devices: where a tensor's memory lives and who runs its
 * kernels.
 *
 * A device is a table of function pointers (memory, copies, one pointer per
 * kernel, a capability query; src/ops/device.h defines it) kept in one
 * registry. The CPU is device 0 and is always there; other devices register
 * themselves with cell_device_register. Every tensor lives on one device;
 * an op runs on its inputs' device, and inputs on two devices are a
 * ValueError naming the op and both devices. Moving is explicit: cell_tensor_move_to. New
 * tensors made from nothing (zeros, arange, rand, ...) go to the default
 * device (cell_set_device); tensors the host fills (cell_tensor_empty,
 * cell_tensor_wrap) are on the CPU. */
#ifndef CELL_DEVICE_H
#define CELL_DEVICE_H
#include "cell.h"

typedef struct cell_device_table cell_device_table;

/* Register a device table (kept, not copied: it must outlive the process's
 * use of the device); *id gets its number. Thread-safe (states on several
 * threads may load a device's module at once). ValueError when a device of
 * the same name and index is registered already, or the registry is full. */
CELL_API cell_status cell_device_register(const cell_device_table *table, int *id);
/* Registered devices (the CPU included), and the name of one: "CPU", or
 * "<NAME>:<index>" for the others ("TEST:0"); NULL for an unknown id. */
CELL_API int cell_device_count(void);
/* (cell_device_name and cell_tensor_device are in cell_ffi.h.) */
/* The id of a device by name ("CPU", "TEST", "TEST:1"; index when the
 * name has none, ignored for the CPU). ValueError naming it when unknown. */
CELL_API cell_status cell_device_find(const char *name, int index, int *id);
/* Where new tensors made from nothing go (default: the CPU). */
CELL_API cell_status cell_set_device(int id);
CELL_API int cell_get_device(void);
/* cell_tensor_full on device id (the default device: cell_tensor_full). */
CELL_API cell_status cell_tensor_full_on(int id, cell_dtype dt, int ndim, const int64_t *shape,
                                         double value, cell_tensor **out);
/* t on device id: t itself (retained) when it is there already, else a
 * contiguous copy made through the devices' copy functions (no autograd
 * history). */
CELL_API cell_status cell_tensor_move_to(const cell_tensor *t, int id, cell_tensor **out);

/* Load the device module `name` and register its devices: the shared
 * object "libcell_<name>.so" (or the path `name`, when it holds a '/'),
 * searched in each folder of $CELL_DEVICE_PATH, then beside the engine
 * (libcell.so's folder), then the dynamic loader's path; its entry
 * CELL_DEVICE_MODULE_ENTRY registers the devices (cell_device_find then
 * names them: "GPU", 0). Loading a name again returns CELL_OK and
 * registers nothing. ValueError for a NULL or malformed name;
 * RuntimeError when no file loads (the loader's reason), when the file has
 * no entry, or with the entry's own message when it fails. */
CELL_API cell_status cell_device_load(const char *name);
/* The entry a device module exports: registers its devices, once however
 * often it is called. */
#define CELL_DEVICE_MODULE_ENTRY "cell_device_module_init"
typedef cell_status (*cell_device_module_fn)(void);

/* For device authors: a new contiguous tensor of shape (ndim sizes), data
 * uninitialised, on the device whose kernel is running (its alloc
 * function), or in host memory outside a device's kernel. What a kernel
 * makes its results with. TypeError for an unknown dtype, ValueError for a
 * NULL out, a bad or too large shape, MemoryError when the device (or the host) cannot
 * serve it. Release *out when done. */
CELL_API cell_status cell_tensor_new_contig(cell_dtype dt, int ndim, const int64_t *shape,
                                            cell_tensor **out);

#endif
