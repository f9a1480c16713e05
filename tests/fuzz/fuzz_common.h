/* fuzz_common.h - what the libFuzzer targets share (tests/fuzz/, built and
 * run by `make fuzz`): a one-time setup, the live-allocation check, and
 * tensor equality. A failed check aborts, which libFuzzer reports as a
 * crash with the input that caused it. */
#ifndef CELL_FUZZ_COMMON_H
#define CELL_FUZZ_COMMON_H
#include "cell.h"
#include "core/alloc.h"
#include "core/tensor.h"
#include "io/io.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_FAIL(...)                                             \
  do {                                                             \
    fprintf(stderr, "fuzz check failed at %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                                  \
    fprintf(stderr, " (last error: %s)\n", cell_last_error());     \
    abort();                                                       \
  } while (0)

/* One thread (inputs are small) and no block cache, so that every block
 * the engine keeps is one it has not given back. */
static inline void fuzz_setup(void) {
  static int done;
  if (done) return;
  done = 1;
  cell_set_num_threads(1);
  cell_alloc_set_cache_limit(0);
}

/* The engine's blocks handed out now; after an input, as many as before. */
static inline void fuzz_check_live(long before, const char *what) {
  long now = cell_alloc_live_blocks();
  if (now != before) FUZZ_FAIL("%s: %ld engine blocks live after the input, %ld before", what, now, before);
}

/* Same dtype, shape and bytes (both contiguous). */
static inline int fuzz_same_tensor(const cell_tensor *a, const cell_tensor *b) {
  if (!a || !b || a->dtype != b->dtype || !cell_shape_equal(a->ndim, a->shape, b->ndim, b->shape)) return 0;
  size_t n = cell_tensor_nbytes(a);
  if (n == 0) return cell_tensor_nbytes(b) == 0; /* (zero-size tensors need not read as contiguous) */
  if (!cell_tensor_is_contiguous(a) || !cell_tensor_is_contiguous(b)) return 0;
  return n == cell_tensor_nbytes(b) && memcmp(cell_tensor_data_ptr(a), cell_tensor_data_ptr(b), n) == 0;
}

#endif
