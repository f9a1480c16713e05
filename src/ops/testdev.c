/* testdev.c - the test device: the CPU kernels behind memory the host cannot
 * touch.
 *
 * Its memory is one reserved address range kept PROT_NONE except while the
 * device itself runs (a kernel, a copy, a fill): then the used part is
 * read-write, the CPU kernel runs, and it goes back to PROT_NONE. Host code
 * that reads or writes a tensor's memory without the device's copy
 * functions therefore faults. Registered only by tests
 * (cell_testdev_register), never by the engine itself. */
#include "device.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE ((size_t)4096)
#define RESERVE ((size_t)1 << 36) /* 64 GiB of address space, none committed */
#define NBUCKETS 48

typedef struct block {
  void *p;
  struct block *next;
} block;

static char *arena;
static size_t used;
static int depth;
static block *buckets[NBUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Power-of-two page counts: bucket b holds blocks of PAGE << b bytes. */
static int bucket_of(size_t n) {
  int b = 0;
  while ((PAGE << b) < n) b++;
  return b;
}

static void enter(void) {
  pthread_mutex_lock(&lock);
  if (depth++ == 0 && used) mprotect(arena, used, PROT_READ | PROT_WRITE);
  pthread_mutex_unlock(&lock);
}

static void leave(void) {
  pthread_mutex_lock(&lock);
  if (--depth == 0 && used) mprotect(arena, used, PROT_NONE);
  pthread_mutex_unlock(&lock);
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
  if (p && depth > 0) mprotect(p, size, PROT_READ | PROT_WRITE);
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
  memmove(dst, src, n);
  leave();
  return CELL_OK;
}

static cell_status td_fill(void *ctx, void *dst, size_t n, const void *pat, size_t psize) {
  (void)ctx;
  enter();
  for (size_t i = 0; i + psize <= n; i += psize) memcpy((char *)dst + i, pat, psize);
  leave();
  return CELL_OK;
}

static cell_status td_run_host(void *ctx, cell_status (*fn)(void *), void *arg) {
  (void)ctx;
  enter();
  cell_status s = fn(arg);
  leave();
  return s;
}

/* Each kernel: the CPU's, with the device's memory open. */
#define TD_KERNEL_(name, params, args, ts)         \
  static cell_status td_##name params {            \
    enter();                                       \
    cell_status s_ = cell_cpu_kernels.name args;   \
    leave();                                       \
    return s_;                                     \
  }
CELL_KERNEL_LIST(TD_KERNEL_)
#undef TD_KERNEL_

static cell_status td_cat(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  enter();
  cell_status s = cell_cpu_cat(n, ts, dim, out);
  leave();
  return s;
}
static cell_status td_stack(int n, cell_tensor *const *ts, int dim, cell_tensor **out) {
  enter();
  cell_status s = cell_cpu_stack(n, ts, dim, out);
  leave();
  return s;
}
static void td_batch_norm_update(cell_tensor *rm, cell_tensor *rv, const cell_tensor *mean,
                                 const cell_tensor *var, int64_t count, double momentum) {
  enter();
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
    {"TEST", 0, NULL, td_alloc, td_free, td_copy, td_copy, td_copy, td_fill, NULL, &td_kernels,
     td_run_host},
    {"TEST", 1, NULL, td_alloc, td_free, td_copy, td_copy, td_copy, td_fill, td1_supports,
     &td_kernels, td_run_host},
};

/* Exported (not in include/): the binding registers it for the tests. */
CELL_API cell_status cell_testdev_register(int *id) {
  static int ids[2] = {-1, -1};
  if (ids[0] < 0) {
    if (!arena) {
      void *a = mmap(NULL, RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (a == MAP_FAILED) return cell_error(CELL_ERR_MEMORY, "test device: cannot reserve memory");
      arena = a;
    }
    CELL_TRY(cell_device_register(&td_tables[0], &ids[0]));
    CELL_TRY(cell_device_register(&td_tables[1], &ids[1]));
  }
  if (id) *id = ids[0];
  return CELL_OK;
}
