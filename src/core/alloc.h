/* alloc.h - the engine's caching allocator (internal).
 *
 * Every engine allocation, tensor headers included, goes through here so
 * that statistics are complete and tests can fail the Nth allocation. */
#ifndef CELL_CORE_ALLOC_H
#define CELL_CORE_ALLOC_H
#include <stddef.h>

/* 64-byte aligned block of at least n bytes, or NULL (no message set). */
void *cell_alloc(size_t n);
/* Zero-filled variant. */
void *cell_alloc_zero(size_t n);
void cell_dealloc(void *p);

/* Testing hooks: make the n-th allocation from now fail (n >= 1), or turn
 * injection off (n == 0). Blocks currently handed out, for leak checks. */
void cell_alloc_fail_after(long n);
long cell_alloc_live_blocks(void);
/* Bytes the cache may keep before it returns blocks to the OS. */
void cell_alloc_set_cache_limit(size_t bytes);

#endif
