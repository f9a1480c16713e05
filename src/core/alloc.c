/* alloc.c - a size-class caching allocator over aligned malloc.
 *
 * Freed blocks go to a free list per size class (four classes per power of
 * two) and are handed out again, so a training loop in steady state does not
 * reach the OS. The cache is bounded; past the bound blocks go back. */
#include "alloc.h"
#include "cell.h"
#include <stdlib.h>
#include <string.h>

#define HEADER 64u
#define NCLASSES 256

/* A spinlock: the critical sections are a few loads and stores, and an
 * uncontended pthread mutex costs more than a whole small op. */
typedef struct {
  volatile char held;
} spinlock;
#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif
static void lock(spinlock *l) {
  while (__atomic_test_and_set(&l->held, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&l->held, __ATOMIC_RELAXED)) CPU_RELAX();
}
static void unlock(spinlock *l) { __atomic_clear(&l->held, __ATOMIC_RELEASE); }

typedef struct block {
  struct block *next;  /* free-list link while cached */
  size_t size;         /* usable bytes (the class size) */
  int cls;             /* class index, or -1 when not cacheable */
} block;

static struct {
  spinlock lock;
  block *free_list[NCLASSES];
  unsigned long long in_use, peak, cached, n_alloc, n_os;
  size_t cache_limit;
  long fail_countdown;
  long live;
} A = {{0}, {0}, 0, 0, 0, 0, 0, (size_t)512 << 20, 0, 0};

/* Class of n: sizes up to 64 share class 0; above, 4 classes per octave. */
static int size_class(size_t n, size_t *class_size) {
  if (n <= 64) {
    *class_size = 64;
    return 0;
  }
  int lg = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^lg < n <= 2^(lg+1) */
  size_t base = (size_t)1 << lg, quarter = base >> 2;
  size_t steps = (n - base + quarter - 1) / quarter; /* 1..4 */
  int cls = 1 + (lg - 6) * 4 + (int)(steps - 1);
  *class_size = base + steps * quarter;
  if (cls >= NCLASSES) return -1;
  return cls;
}

void *cell_alloc(size_t n) {
  size_t csize;
  int cls = size_class(n ? n : 1, &csize);
  if (cls < 0) csize = n;
  if (csize > ((size_t)1 << 62) - HEADER) return NULL;
  lock(&A.lock);
  if (A.fail_countdown > 0 && --A.fail_countdown == 0) {
    unlock(&A.lock);
    return NULL;
  }
  block *b = NULL;
  if (cls >= 0 && A.free_list[cls]) {
    b = A.free_list[cls];
    A.free_list[cls] = b->next;
    A.cached -= b->size;
  }
  A.n_alloc++;
  if (!b) {
    A.n_os++;
    unlock(&A.lock);
    void *mem = NULL;
    if (posix_memalign(&mem, 64, HEADER + csize) != 0) return NULL;
    b = mem;
    b->size = csize;
    b->cls = cls;
    lock(&A.lock);
  }
  A.in_use += b->size;
  if (A.in_use > A.peak) A.peak = A.in_use;
  A.live++;
  unlock(&A.lock);
  return (char *)b + HEADER;
}

void *cell_alloc_zero(size_t n) {
  void *p = cell_alloc(n);
  if (p) memset(p, 0, n);
  return p;
}

void cell_dealloc(void *p) {
  if (!p) return;
  block *b = (block *)((char *)p - HEADER);
  lock(&A.lock);
  A.in_use -= b->size;
  A.live--;
  if (b->cls >= 0 && A.cached + b->size <= A.cache_limit) {
    b->next = A.free_list[b->cls];
    A.free_list[b->cls] = b;
    A.cached += b->size;
    b = NULL;
  }
  unlock(&A.lock);
  free(b);
}

void cell_alloc_empty_cache(void) {
  lock(&A.lock);
  for (int i = 0; i < NCLASSES; i++) {
    block *b = A.free_list[i];
    while (b) {
      block *next = b->next;
      free(b);
      b = next;
    }
    A.free_list[i] = NULL;
  }
  A.cached = 0;
  unlock(&A.lock);
}

void cell_alloc_get_stats(cell_alloc_stats *out) {
  if (!out) return;
  lock(&A.lock);
  out->in_use = A.in_use;
  out->peak = A.peak;
  out->cached = A.cached;
  out->n_alloc = A.n_alloc;
  out->n_os = A.n_os;
  unlock(&A.lock);
}

void cell_alloc_reset_peak(void) {
  lock(&A.lock);
  A.peak = A.in_use;
  unlock(&A.lock);
}

void cell_alloc_fail_after(long n) {
  lock(&A.lock);
  A.fail_countdown = n > 0 ? n : 0;
  unlock(&A.lock);
}

long cell_alloc_live_blocks(void) {
  lock(&A.lock);
  long n = A.live;
  unlock(&A.lock);
  return n;
}

void cell_alloc_set_cache_limit(size_t bytes) {
  lock(&A.lock);
  A.cache_limit = bytes;
  unlock(&A.lock);
  if (bytes == 0) cell_alloc_empty_cache();
}
