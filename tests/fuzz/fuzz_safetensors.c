/* fuzz_safetensors.c - libFuzzer target: the input is a safetensors file,
 * read from memory by the engine's loader. Whatever loads must save (to
 * memory, by the engine's writer), load again equal (names, order,
 * dtypes, shapes, bytes, metadata), and save again to the same bytes; and
 * after each input the engine holds no block it did not hold before. */
#include "fuzz_common.h"

static void same_result(const cell_safetensors *a, const cell_safetensors *b) {
  if (a->count != b->count || a->meta_count != b->meta_count)
    FUZZ_FAIL("%d tensors and %d metadata entries reload as %d and %d", a->count, a->meta_count, b->count,
              b->meta_count);
  for (int i = 0; i < a->count; i++) {
    if (strcmp(a->names[i], b->names[i]) != 0) FUZZ_FAIL("name %d: '%s' reloads as '%s'", i, a->names[i], b->names[i]);
    if (!fuzz_same_tensor(a->tensors[i], b->tensors[i])) FUZZ_FAIL("tensor '%s' reloads different", a->names[i]);
  }
  for (int i = 0; i < a->meta_count; i++)
    if (strcmp(a->meta_keys[i], b->meta_keys[i]) != 0 || strcmp(a->meta_values[i], b->meta_values[i]) != 0)
      FUZZ_FAIL("metadata entry %d reloads different", i);
}

static cell_status save(const cell_safetensors *st, char **p, size_t *n) {
  return cell_st_save_mem("fuzz", st->count, (const char *const *)st->names, st->tensors, st->meta_count,
                          (const char *const *)st->meta_keys, (const char *const *)st->meta_values, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_setup();
  long live = cell_alloc_live_blocks();
  cell_safetensors *st = NULL;
  cell_status s = cell_st_load_mem("fuzz", data, size, &st);
  if (s == CELL_OK) {
    char *p = NULL, *q = NULL;
    size_t n = 0, m = 0;
    if (save(st, &p, &n) != CELL_OK) FUZZ_FAIL("what loaded does not save");
    cell_safetensors *again = NULL;
    if (cell_st_load_mem("fuzz-saved", p, n, &again) != CELL_OK) FUZZ_FAIL("what was saved does not load");
    same_result(st, again);
    if (save(again, &q, &m) != CELL_OK || m != n || memcmp(p, q, n) != 0) FUZZ_FAIL("a second save differs");
    cell_safetensors_free(again);
    cell_dealloc(p);
    cell_dealloc(q);
  } else if (s != CELL_ERR_VALUE && s != CELL_ERR_MEMORY) {
    FUZZ_FAIL("status %d", (int)s);
  } else if (strncmp(cell_last_error(), "safetensors: fuzz: ", 19) != 0) {
    FUZZ_FAIL("the message does not name the file");
  }
  cell_safetensors_free(st);
  fuzz_check_live(live, "safetensors");
  return 0;
}
