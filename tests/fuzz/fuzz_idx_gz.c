/* fuzz_idx_gz.c - libFuzzer target: the input is an IDX file's content; it
 * is read plain, and gzip'd (always a valid gzip stream, so the mutations
 * reach the IDX parsing behind zlib), and both reads must agree: the same
 * tensor, or both refused. What loads round-trips (fuzz_idx_common.h). */
#include "fuzz_idx_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return 0; /* gzip in gzip: the other target's */
  long live = cell_alloc_live_blocks();
  size_t m;
  unsigned char *gz = fuzz_gzip(data, size, &m);
  cell_tensor *a = NULL, *b = NULL;
  cell_status sa = fuzz_idx_one("fuzz", data, size, &a);
  cell_status sb = fuzz_idx_one("fuzz-gz", gz, m, &b);
  if ((sa == CELL_OK) != (sb == CELL_OK)) FUZZ_FAIL("plain status %d, gzip'd status %d", (int)sa, (int)sb);
  if (sa == CELL_OK && !fuzz_same_tensor(a, b)) FUZZ_FAIL("plain and gzip'd loads differ");
  cell_tensor_release(a);
  cell_tensor_release(b);
  free(gz);
  fuzz_check_live(live, "idx_gz");
  return 0;
}
