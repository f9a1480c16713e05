/* testdev.c - the test device: the CPU kernels behind memory the host cannot
 * touch.
 *
 * Its memory is one reserved address range kept PROT_NONE except while the
 * device itself runs (a kernel, a copy, a fill). A call opens (read-write)
 * only what it works on: the storage of each tensor its row of
 * kernel_list.h names, the bytes a copy or fill touches, and the blocks
 * allocated while it runs; when the last running call leaves, everything
 * opened is closed again. Host code that reads or writes a tensor's memory
 * without the device's copy functions therefore faults, and so does a
 * kernel that touches a tensor its row does not list (a GPU device would
 * not see that tensor's device either). Opening only a call's own memory
 * keeps each call's cost to a few mprotect calls over its own pages,
 * whatever the arena's size. Registered only by tests
 * (cell_testdev_register), never by the engine itself. */
#include "device.h"
#include "../core/tensor.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE ((size_t)4096)
#define RESERVE ((size_t)1 << 36) /* 64 GiB of address space, none committed */
#define NBUCKETS 48
#define MAX_OPEN 256 /* opened ranges tracked; past that the whole arena opens */

typedef struct block {
  void *p;
  struct block *next;
} block;

typedef struct span {
  char *p;
  size_t n;
} span;

static char *arena;
static size_t used;
static int depth; /* device calls running, on all threads */
static block *buckets[NBUCKETS];
static span opened[MAX_OPEN];
static int nopened;
static int all_open; /* the whole arena is open (too many ranges to track) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Open the pages under [p, p + n) if they are the arena's (lock held,
 * depth > 0). */
static void open_range(const void *p, size_t n) {
  const char *c = p;
  if (!n || !arena || c < arena || c >= arena + used) return;
  size_t lo = (size_t)(c - arena) & ~(PAGE - 1), hi = (size_t)(c - arena) + n;
  if (hi > used) hi = used;
  hi = (hi + PAGE - 1) & ~(PAGE - 1);
  char *q = arena + lo;
  size_t len = hi - lo;
  if (all_open) {
    mprotect(q, len, PROT_READ | PROT_WRITE); /* a block past the arena opened before */
    return;
  }
  for (int i = 0; i < nopened; i++)
    if (opened[i].p <= q && q + len <= opened[i].p + opened[i].n) return;
  if (nopened == MAX_OPEN) {
    mprotect(arena, used, PROT_READ | PROT_WRITE);
    all_open = 1;
    return;
  }
  mprotect(q, len, PROT_READ | PROT_WRITE);
  opened[nopened++] = (span){q, len};
}

static void open_tensor(const cell_tensor *t) {
  if (t) open_range(t->storage->data, t->storage->nbytes);
}

/* Enter a call: returns with the lock held, for the caller to open what
 * the call works on and then unlock. */
static void enter(void) {
  pthread_mutex_lock(&lock);
  depth++;
}

/* Leave a call; the last one out closes everything opened. */
static void leave(void) {
  pthread_mutex_lock(&lock);
  if (--depth == 0) {
    if (all_open) {
      if (used) mprotect(arena, used, PROT_NONE);
    } else {
      for (int i = 0; i < nopened; i++) mprotect(opened[i].p, opened[i].n, PROT_NONE);
    }
    nopened = 0;
    all_open = 0;
  }
  pthread_mutex_unlock(&lock);
}

/* Enter a kernel on the tensors ts (NULLs skipped). */
static void enter_ts(int nt, const cell_tensor *const *ts) {
  enter();
  for (int i = 0; i < nt; i++) open_tensor(ts[i]);
  pthread_mutex_unlock(&lock);
}

/* Power-of-two page counts: bucket b holds blocks of PAGE << b bytes. */
static int bucket_of(size_t n) {
  int b = 0;
  while ((PAGE << b) < n) b++;
  return b;
}

static void *td_alloc(void *ctx, size_t n) {
  (void)ctx;
  int b = bucket_of(n ? n : 1);
  if (b >= NBUCKETS) return NULL;
  size_t size = PAGE << b;
  void *p = NULL;
  pthread_mutex_lock(&lock);
  if (buckets[b]) {
    block *k = buckets[b];
    buckets[b] = k->next;
    p = k->p;
    free(k);
  } else if (used + size <= RESERVE) {
    p = arena + used;
    used += size;
  }
  if (p && depth > 0) open_range(p, size);
  pthread_mutex_unlock(&lock);
  return p;
}

static void td_free(void *ctx, void *p, size_t n) {
  (void)ctx;
  block *k = malloc(sizeof *k);
  if (!k) return; /* leaked address space, never a crash */
  int b = bucket_of(n ? n : 1);
  pthread_mutex_lock(&lock);
  k->p = p;
  k->next = buckets[b];
  buckets[b] = k;
  pthread_mutex_unlock(&lock);
}

static cell_status td_copy(void *ctx, void *dst, const void *src, size_t n) {
  (void)ctx;
  enter();
  open_range(dst, n);
  open_range(src, n);
  pthread_mutex_unlock(&lock);
  memmove(dst, src, n);
  leave();
  return CELL_OK;
}

static cell_status td_fill(void *ctx, void *dst, size_t n, const void *pat, size_t psize) {
  (void)ctx;
  enter();
  open_range(dst, n);
  pthread_mutex_unlock(&lock);
  for (size_t i = 0; i + psize <= n; i += psize) memcpy((char *)dst + i, pat, psize);
  leave();
  return CELL_OK;
}

/* Each kernel: the CPU's, with the memory of its row's tensors open. */
#define TD_UNPAREN_(...) __VA_ARGS__
#define TD_KERNEL_(name, params, args, tl)                      \
  static cell_status td_##name params {                         \
    const cell_tensor *ts_[] = {TD_UNPAREN_ tl};                \
    enter_ts((int)(sizeof ts_ / sizeof ts_[0]), ts_);           \
    cell_status s_ = cell_cpu_kernels.name args;                \
    leave();                                                    \
    return s_;                                                  \
  }
CELL_KERNEL_LIST(TD_KERNEL_)
#undef TD_KERNEL_

static cell_status td_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  enter_ts(n > 0 && ts ? n : 0, (const cell_tensor *const *)ts);
  cell_status s = cell_cpu_cat(n, ts, dim, out);
  leave();
  return s;
}
static cell_status td_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  enter_ts(n > 0 && ts ? n : 0, (const cell_tensor *const *)ts);
  cell_status s = cell_cpu_stack(n, ts, dim, out);
  leave();
  return s;
}
static void td_batch_norm_update(cell_tensor *rm, cell_tensor *rv, const cell_tensor *mean,
                                 const cell_tensor *var, int64_t count, double momentum) {
  const cell_tensor *ts[] = {rm, rv, mean, var};
  enter_ts(4, ts);
  cell_cpu_batch_norm_update(rm, rv, mean, var, count, momentum);
  leave();
}

static const cell_kernels td_kernels = {
#define TD_ROW_(name, params, args, ts) .name = td_##name,
    CELL_KERNEL_LIST(TD_ROW_)
#undef TD_ROW_
    .cat = td_cat,
    .stack = td_stack,
    .batch_norm_update = td_batch_norm_update,
};

/* TEST:1 declines mm and matmul, so the capability query has a test. */
static int td1_supports(void *ctx, cell_kid id, int nt, const cell_tensor *const *ts) {
  (void)ctx;
  (void)nt;
  (void)ts;
  return id != CELL_KID_mm && id != CELL_KID_matmul;
}

static const cell_device_table td_tables[2] = {
    {"TEST", 0, NULL, td_alloc, td_free, td_copy, td_copy, td_copy, td_fill, NULL, &td_kernels},
    {"TEST", 1, NULL, td_alloc, td_free, td_copy, td_copy, td_copy, td_fill, td1_supports,
     &td_kernels},
};

/* Exported (not in include/): the binding registers it for the tests. */
CELL_API cell_status cell_testdev_register(int *id) {
  static int ids[2] = {-1, -1};
  static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER; /* states on threads load cell at once */
  pthread_mutex_lock(&once);
  cell_status s = CELL_OK;
  if (ids[0] < 0) {
    if (!arena) {
      void *a = mmap(NULL, RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (a == MAP_FAILED) s = cell_error(CELL_ERR_MEMORY, "test device: cannot reserve memory");
      else arena = a;
    }
    if (s == CELL_OK) s = cell_device_register(&td_tables[0], &ids[0]);
    if (s == CELL_OK) s = cell_device_register(&td_tables[1], &ids[1]);
  }
  pthread_mutex_unlock(&once);
  if (s == CELL_OK && id) *id = ids[0];
  return s;
}
