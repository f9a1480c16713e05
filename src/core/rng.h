/* rng.h - the counter-based generator (Philox4x32-10), internal.
 *
 * Draw i of a stream is a pure function of (seed, counter + i), so a kernel
 * split over threads gives the same numbers as one thread. A stream is a
 * cell_generator (seed, next counter); every thread has one of its own and
 * may make another current (cell_generator_use, cell.h), so two threads, or
 * two Lua states, never share a counter unless a host shares a generator. */
#ifndef CELL_CORE_RNG_H
#define CELL_CORE_RNG_H
#include "cell.h"
#include <stdint.h>

struct cell_generator {
  uint64_t seed;    /* the Philox key */
  uint64_t counter; /* the next unreserved block */
};
/* The seed a fresh generator (and a thread's own one) starts from. */
#define CELL_RNG_DEFAULT_SEED 5489u

/* Four 32-bit words for block `counter` under `key`. */
void cell_philox(uint64_t key, uint64_t counter, uint32_t out[4]);
/* Reserve n consecutive counters from the calling thread's current
 * generator; returns the first and sets *seed to its key. Reads and writes
 * only that generator, so it races with nothing but a host that makes one
 * generator current on two threads at once. */
/* Exported for device modules (the GPU's dropout draws its seed and blocks
 * here). */
CELL_API uint64_t cell_rng_reserve(uint64_t n, uint64_t *seed);
/* Uniform in [0, 1) from 32 random bits (24 for float precision is enough,
 * doubles use two words). */
static inline double cell_u01(uint32_t a, uint32_t b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}
#endif
