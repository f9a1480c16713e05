/* device.c - the device registry, the kernel dispatchers and the CPU's table.
 *
 * Every cell_k_* kernel of kernel_list.h is defined here as a dispatcher:
 * it picks the device of its tensors (cell_device_pick), makes that device
 * the one new tensors are allocated on for the duration of the call, and
 * calls the device table's pointer. The CPU table points at the kernels of
 * src/ops (cell_cpu_*). One indirect call per op; nothing per element. */
#include "device.h"
#include "../core/alloc.h"
#include "../core/tensor.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* --- the registry -------------------------------------------------------------- */

/* Process-wide. Registration takes a lock (Lua states on threads may load a
 * device's module at once) and publishes the count after the entry; the
 * dispatchers read without one. */
static const cell_device_table *registry[CELL_MAX_DEVICES] = {&cell_device_cpu};
static char names[CELL_MAX_DEVICES][48] = {"CPU"};
static int ndevices = 1;
static int default_device = 0;
/* The device of the kernel running on this thread (-1: none) and the op
 * those kernels serve are cell_thread_ctx.device and .op_name. */

const char *const cell_kid_names[CELL_KID_COUNT] = {
#define CELL_KNAME_(name, params, args, ts) [CELL_KID_##name] = #name,
    CELL_KERNEL_LIST(CELL_KNAME_)
#undef CELL_KNAME_
    [CELL_KID_cat] = "cat",
    [CELL_KID_stack] = "stack",
    [CELL_KID_batch_norm_update] = "batch_norm_update",
};

static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

static cell_status register_locked(const cell_device_table *t, int *id);

cell_status cell_device_register(const cell_device_table *t, int *id) {
  if (!t || !t->name || !t->kernels || !t->alloc || !t->free || !t->copy_h2d || !t->copy_d2h ||
      !t->copy_d2d || !t->fill)
    return cell_error(CELL_ERR_VALUE, "device_register: incomplete device table");
  pthread_mutex_lock(&register_lock);
  cell_status s = register_locked(t, id);
  pthread_mutex_unlock(&register_lock);
  return s;
}

static cell_status register_locked(const cell_device_table *t, int *id) {
  char name[48];
  snprintf(name, sizeof name, "%s:%d", t->name, t->index);
  for (int i = 0; i < ndevices; i++)
    if (!strcmp(names[i], name) || (i == 0 && !strcmp(t->name, "CPU")))
      return cell_error(CELL_ERR_VALUE, "device_register: device %s is registered already", name);
  if (ndevices >= CELL_MAX_DEVICES)
    return cell_error(CELL_ERR_VALUE, "device_register: at most %d devices", CELL_MAX_DEVICES);
  memcpy(names[ndevices], name, sizeof name);
  registry[ndevices] = t;
  if (id) *id = ndevices;
  __atomic_store_n(&ndevices, ndevices + 1, __ATOMIC_RELEASE);
  return CELL_OK;
}

int cell_device_count(void) { return ndevices; }
const char *cell_device_name(int id) { return id >= 0 && id < ndevices ? names[id] : NULL; }
const cell_device_table *cell_device_get(int id) { return registry[id]; }

cell_status cell_device_find(const char *name, int index, int *id) {
  if (!name || !id) return cell_error(CELL_ERR_VALUE, "device: NULL name");
  char full[48];
  if (strchr(name, ':') || !strcmp(name, "CPU"))
    snprintf(full, sizeof full, "%s", name);
  else
    snprintf(full, sizeof full, "%s:%d", name, index);
  if (!strcmp(full, "CPU:0")) full[3] = 0;
  for (int i = 0; i < ndevices; i++)
    if (!strcmp(names[i], full)) {
      *id = i;
      return CELL_OK;
    }
  return cell_error(CELL_ERR_VALUE, "device: no device '%s' (registered: %d)", full, ndevices);
}

cell_status cell_set_device(int id) {
  if (id < 0 || id >= ndevices)
    return cell_error(CELL_ERR_VALUE, "set_device: no device %d (registered: %d)", id, ndevices);
  default_device = id;
  return CELL_OK;
}
int cell_get_device(void) { return default_device; }
int cell_device_current(void) { return cell_thread_ctx.device; }

int cell_tensor_device(const cell_tensor *t) { return t ? t->storage->device : 0; }

int cell_device_enter(int dev) {
  int saved = cell_thread_ctx.device;
  cell_thread_ctx.device = dev;
  return saved;
}
void cell_device_leave(int saved) { cell_thread_ctx.device = saved; }


/* --- dispatch -------------------------------------------------------------------- */

/* Inlined into every dispatcher below, where nt is a constant. */
static inline cell_status pick(cell_kid id, int nt, const cell_tensor *const *ts, int *dev) {
  int d = -1;
  for (int i = 0; i < nt; i++) {
    if (!ts[i]) continue;
    int e = ts[i]->storage->device;
    if (d < 0)
      d = e;
    else if (e != d)
      return cell_error(CELL_ERR_VALUE, "%s: tensors on different devices: %s and %s",
                        cell_thread_ctx.op_name ? cell_thread_ctx.op_name : cell_kid_names[id], names[d], names[e]);
  }
  if (d < 0) d = cell_thread_ctx.device >= 0 ? cell_thread_ctx.device : default_device;
  const cell_device_table *t = registry[d];
  if (t->supports_op && !t->supports_op(t->ctx, id, nt, ts))
    return cell_error(CELL_ERR_NOTIMPL, "%s is not supported on device %s",
                      cell_thread_ctx.op_name ? cell_thread_ctx.op_name : cell_kid_names[id], names[d]);
  *dev = d;
  return CELL_OK;
}

cell_status cell_device_pick(cell_kid id, int nt, const cell_tensor *const *ts, int *dev) {
  return pick(id, nt, ts, dev);
}

#define CELL_UNPAREN_(...) __VA_ARGS__
#define CELL_KDEF_(name, params, args, tl)                                                 \
  cell_status cell_k_##name params {                                                       \
    const cell_tensor *ts_[] = {CELL_UNPAREN_ tl};                                         \
    int d_ = 0;                                                                             \
    CELL_TRY(pick(CELL_KID_##name, (int)(sizeof ts_ / sizeof ts_[0]), ts_, &d_));           \
    int saved_ = cell_thread_ctx.device;                                                   \
    cell_thread_ctx.device = d_;                                                           \
    cell_status s_ = registry[d_]->kernels->name args;                                     \
    cell_thread_ctx.device = saved_;                                                       \
    return s_;                                                                             \
  }
CELL_KERNEL_LIST(CELL_KDEF_)
#undef CELL_KDEF_

static cell_status pick_many(cell_kid id, int n, cell_tensor *const *ts, int *d) {
  if (n <= 0 || !ts) return cell_device_pick(id, 0, NULL, d);
  for (int i = 1; i < n; i++) {
    const cell_tensor *pair[2] = {ts[0], ts[i]};
    CELL_TRY(cell_device_pick(id, 2, pair, d));
  }
  return cell_device_pick(id, 1, (const cell_tensor *const *)ts, d);
}

cell_status cell_k_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  int d;
  CELL_TRY(pick_many(CELL_KID_cat, n, ts, &d));
  int saved = cell_device_enter(d);
  cell_status s = registry[d]->kernels->cat(n, ts, dim, out);
  cell_device_leave(saved);
  return s;
}

cell_status cell_k_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  int d;
  CELL_TRY(pick_many(CELL_KID_stack, n, ts, &d));
  int saved = cell_device_enter(d);
  cell_status s = registry[d]->kernels->stack(n, ts, dim, out);
  cell_device_leave(saved);
  return s;
}

/* Cannot fail by contract: a mix of devices updates nothing (the forward
 * pass already refused it). */
void cell_k_batch_norm_update(cell_tensor *running_mean, cell_tensor *running_var,
                              const cell_tensor *mean, const cell_tensor *var, int64_t count,
                              double momentum) {
  const cell_tensor *ts[] = {running_mean, running_var, mean, var};
  int d = 0;
  if (cell_device_pick(CELL_KID_batch_norm_update, 4, ts, &d) != CELL_OK) return;
  int saved = cell_device_enter(d);
  registry[d]->kernels->batch_norm_update(running_mean, running_var, mean, var, count, momentum);
  cell_device_leave(saved);
}

cell_status cell_op_argmax(const cell_tensor *a, int dim, int keepdim, int is_min,
                          int64_t index_base, cell_tensor **out) {
  return cell_k_argmax(a, dim, keepdim, is_min, index_base, out);
}

/* --- the public creation functions: on the default device ------------------------ */

cell_status cell_tensor_arange(double start, double stop, double step, cell_dtype dt,
                               cell_tensor **out) {
  return cell_k_arange(start, stop, step, dt, out);
}
cell_status cell_tensor_linspace(double start, double stop, int64_t n, cell_dtype dt,
                                 cell_tensor **out) {
  return cell_k_linspace(start, stop, n, dt, out);
}
cell_status cell_tensor_eye(int64_t n, int64_t m, cell_dtype dt, cell_tensor **out) {
  return cell_k_eye(n, m, dt, out);
}
cell_status cell_tensor_rand(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  return cell_k_rand(dt, ndim, shape, out);
}
cell_status cell_tensor_randn(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  return cell_k_randn(dt, ndim, shape, out);
}
cell_status cell_tensor_randint(int64_t low, int64_t high, cell_dtype dt, int ndim,
                                const int64_t *shape, cell_tensor **out) {
  return cell_k_randint(low, high, dt, ndim, shape, out);
}
cell_status cell_tensor_full(cell_dtype dt, int ndim, const int64_t *shape, double value,
                             cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "full: NULL argument");
  return cell_k_full(dt, ndim, shape, value, out);
}

cell_status cell_tensor_full_on(int id, cell_dtype dt, int ndim, const int64_t *shape,
                                double value, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "full: NULL argument");
  if (id < 0 || id >= ndevices)
    return cell_error(CELL_ERR_VALUE, "full: no device %d (registered: %d)", id, ndevices);
  int saved = cell_device_enter(id);
  cell_status s = cell_k_full(dt, ndim, shape, value, out);
  cell_device_leave(saved);
  return s;
}

/* --- moving between devices ----------------------------------------------------- */

/* A contiguous tensor like t on device dev. */
static cell_status new_on(int dev, const cell_tensor *t, cell_tensor **out) {
  int saved = cell_device_enter(dev);
  cell_status s = cell_tensor_new_contig(t->dtype, t->ndim, t->shape, out);
  cell_device_leave(saved);
  return s;
}

cell_status cell_tensor_to_host(const cell_tensor *t, cell_tensor **out) {
  return cell_tensor_move_to(t, 0, out);
}

cell_status cell_tensor_move_to(const cell_tensor *t, int id, cell_tensor **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "move_to: NULL argument");
  if (id < 0 || id >= ndevices)
    return cell_error(CELL_ERR_VALUE, "move_to: no device %d (registered: %d)", id, ndevices);
  int from = t->storage->device;
  if (from == id) {
    cell_tensor_retain((cell_tensor *)t);
    *out = (cell_tensor *)t;
    return CELL_OK;
  }
  if (from != 0 && id != 0) { /* through the host */
    cell_tensor *h;
    CELL_TRY(cell_tensor_move_to(t, 0, &h));
    cell_status s = cell_tensor_move_to(h, id, out);
    cell_tensor_release(h);
    return s;
  }
  cell_tensor *c, *r;
  CELL_TRY(cell_k_contiguous(t, &c));
  cell_status s = new_on(id, t, &r);
  if (s == CELL_OK) {
    size_t n = cell_tensor_nbytes(c);
    const cell_device_table *dt = registry[id ? id : from];
    if (n) s = id ? dt->copy_h2d(dt->ctx, cell_tensor_base(r), cell_tensor_base(c), n)
                  : dt->copy_d2h(dt->ctx, cell_tensor_base(r), cell_tensor_base(c), n);
    if (s != CELL_OK) cell_tensor_release(r);
  }
  cell_tensor_release(c);
  if (s == CELL_OK) *out = r;
  return s;
}

/* One element of a tensor on another device, through its copy functions. */
cell_status cell_device_read(const cell_tensor *t, const char *p, void *dst, size_t n) {
  const cell_device_table *d = registry[t->storage->device];
  return d->copy_d2h(d->ctx, dst, p, n);
}
cell_status cell_device_write(cell_tensor *t, char *p, const void *src, size_t n) {
  const cell_device_table *d = registry[t->storage->device];
  return d->copy_h2d(d->ctx, p, src, n);
}

void *cell_device_alloc(int dev, size_t n) {
  const cell_device_table *d = registry[dev];
  return d->alloc(d->ctx, n);
}
void cell_device_free(int dev, void *p, size_t n) {
  const cell_device_table *d = registry[dev];
  d->free(d->ctx, p, n);
}

/* --- the CPU ------------------------------------------------------------------- */

static void *cpu_alloc(void *ctx, size_t n) {
  (void)ctx;
  return cell_alloc(n ? n : 1);
}
static void cpu_free(void *ctx, void *p, size_t n) {
  (void)ctx;
  (void)n;
  cell_dealloc(p);
}
static cell_status cpu_copy(void *ctx, void *dst, const void *src, size_t n) {
  (void)ctx;
  memmove(dst, src, n);
  return CELL_OK;
}
static cell_status cpu_fill(void *ctx, void *dst, size_t n, const void *pat, size_t psize) {
  (void)ctx;
  for (size_t i = 0; i + psize <= n; i += psize) memcpy((char *)dst + i, pat, psize);
  return CELL_OK;
}
const cell_kernels cell_cpu_kernels = {
#define CELL_KCPUROW_(name, params, args, ts) .name = cell_cpu_##name,
    CELL_KERNEL_LIST(CELL_KCPUROW_)
#undef CELL_KCPUROW_
    .cat = cell_cpu_cat,
    .stack = cell_cpu_stack,
    .batch_norm_update = cell_cpu_batch_norm_update,
};

const cell_device_table cell_device_cpu = {
    .name = "CPU",
    .index = 0,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_h2d = cpu_copy,
    .copy_d2h = cpu_copy,
    .copy_d2d = cpu_copy,
    .fill = cpu_fill,
    .kernels = &cell_cpu_kernels,
};
