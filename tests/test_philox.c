/* test_philox.c - the GPU's Philox4x32-10 (src/cuda/gpu_philox.h), compiled
 * for the host: the Random123 known-answer vectors (kat_vectors,
 * "philox4x32 10"), and the same stream as the engine's generator
 * (cell_philox), so GPU dropout draws the CPU's mask. Needs no GPU. */
#include "check.h"
#include "core/rng.h"
#include "cuda/gpu_philox.h"

void test_philox_all(void) {
  static const uint32_t kat[3][10] = {
      {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
       0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
       0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
       0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int v = 0; v < 3; v++) {
    uint32_t out[4];
    gpu_philox(kat[v], kat[v] + 4, out);
    for (int i = 0; i < 4; i++) CHECKF(out[i] == kat[v][6 + i], "vector %d word %d: %08x", v, i, out[i]);
  }
  /* The engine's generator is the same function (counter words 2, 3 zero). */
  uint32_t a[4], b[4];
  cell_philox(0, 0, a);
  CHECK(a[0] == 0x6627e8d5u && a[3] == 0x9b00dbd8u);
  uint64_t seeds[3] = {0, 5489, 0x0123456789abcdefull}, blocks[4] = {0, 1, 0xfffffffful, 0x100000007ull};
  int same = 1;
  for (int s = 0; s < 3; s++)
    for (int k = 0; k < 4; k++) {
      cell_philox(seeds[s], blocks[k], a);
      gpu_philox_block(seeds[s], blocks[k], b);
      for (int i = 0; i < 4; i++) same &= a[i] == b[i];
    }
  CHECK(same);
  /* Dropout's keep test: element j reads word j % 4 of block first + j / 4;
   * threshold 0 keeps all, 2^32 none, 2^31 about half. */
  int kept = 0;
  for (uint64_t j = 0; j < 4000; j++) {
    CHECK(gpu_dropout_keep(7, 100, j, 0));
    CHECK(!gpu_dropout_keep(7, 100, j, (uint64_t)1 << 32));
    kept += gpu_dropout_keep(7, 100, j, (uint64_t)1 << 31);
  }
  CHECKF(kept > 1850 && kept < 2150, "kept %d of 4000 at p = 0.5", kept);
  cell_philox(7, 100 + 9, a);
  CHECK(gpu_dropout_keep(7, 100, 37, (uint64_t)a[1]) && !gpu_dropout_keep(7, 100, 37, (uint64_t)a[1] + 1));
}
