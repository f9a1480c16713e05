/* rng.h - the counter-based generator (Philox4x32-10), internal.
 *
 * Draw i of a stream is a pure function of (seed, counter + i), so a kernel
 * split over threads gives the same numbers as one thread. */
#ifndef CELL_CORE_RNG_H
#define CELL_CORE_RNG_H
#include <stdint.h>

/* Four 32-bit words for block `counter` under `key`. */
void cell_philox(uint64_t key, uint64_t counter, uint32_t out[4]);
/* Reserve n consecutive counters from the engine's stream; returns the first. */
uint64_t cell_rng_reserve(uint64_t n);
uint64_t cell_rng_seed(void);
/* Uniform in [0, 1) from 32 random bits (24 for float precision is enough,
 * doubles use two words). */
static inline double cell_u01(uint32_t a, uint32_t b) {
  return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}
#endif
