/* gpu_philox.h - Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel
 * random numbers: as easy as 1, 2, 3", SC 2011), written from the paper
 * for the GPU's dropout and compiled for the host too, so a CPU test checks
 * it against the Random123 known-answer vectors and against the engine's
 * own generator (cell_philox, src/core/rng.c). C99 and CUDA; no engine
 * header.
 *
 * The engine's stream: block b under seed s is gpu_philox(counter = {b lo,
 * b hi, 0, 0}, key = {s lo, s hi}); dropout's element j of a tensor uses
 * word j % 4 of block first + j / 4. Each element's draw depends on (seed,
 * first, j) only, so any launch shape gives the same mask, and the CPU's. */
#ifndef CELL_CUDA_GPU_PHILOX_H
#define CELL_CUDA_GPU_PHILOX_H
#include <stdint.h>

#ifdef __CUDACC__
#define GPU_PHILOX_FN static __host__ __device__ __forceinline__
#else
#define GPU_PHILOX_FN static inline
#endif

#define GPU_PHILOX_M0 0xD2511F53u
#define GPU_PHILOX_M1 0xCD9E8D57u
#define GPU_PHILOX_W0 0x9E3779B9u /* the golden ratio */
#define GPU_PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

/* Ten rounds over ctr[4] under key[2]; out[4] gets the block. */
GPU_PHILOX_FN void gpu_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r) { /* the key schedule: a Weyl sequence, bumped between rounds */
      k0 += GPU_PHILOX_W0;
      k1 += GPU_PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)GPU_PHILOX_M0 * c0, p1 = (uint64_t)GPU_PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* Block `block` of the stream under `seed` (the engine's layout). */
GPU_PHILOX_FN void gpu_philox_block(uint64_t seed, uint64_t block, uint32_t out[4]) {
  uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  gpu_philox(ctr, key, out);
}

/* Dropout's keep test for element j: word j % 4 of block first + j / 4 at
 * least threshold (ceil(p * 2^32)), as src/ops/dropout.c decides. */
GPU_PHILOX_FN int gpu_dropout_keep(uint64_t seed, uint64_t first, uint64_t j, uint64_t threshold) {
  uint32_t w[4];
  gpu_philox_block(seed, first + j / 4, w);
  return (uint64_t)w[j % 4] >= threshold;
}

#endif
