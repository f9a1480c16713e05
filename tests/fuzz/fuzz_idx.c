/* fuzz_idx.c - libFuzzer target: the input is an IDX file, plain or gzip'd
 * (the reader tells them apart by gzip's magic), read from memory. What
 * loads round-trips (fuzz_idx_common.h); no engine block outlives the
 * input. */
#include "fuzz_idx_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  long live = cell_alloc_live_blocks();
  cell_tensor *t = NULL;
  fuzz_idx_one("fuzz", data, size, &t);
  cell_tensor_release(t);
  fuzz_check_live(live, "idx");
  return 0;
}
