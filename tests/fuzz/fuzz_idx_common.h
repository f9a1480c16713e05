/* fuzz_idx_common.h - the IDX targets' shared check: whatever loads is
 * written back as IDX (plain and gzip'd, by this file: the engine has no
 * IDX writer) and as safetensors (by the engine), and each reloads equal;
 * the conversion to float32 runs too. */
#ifndef CELL_FUZZ_IDX_COMMON_H
#define CELL_FUZZ_IDX_COMMON_H
#include "fuzz_common.h"
#include <zlib.h>

/* The IDX type code of a loaded dtype (each IDX type loads as its own dtype). */
static inline int fuzz_idx_code(cell_dtype dt) {
  switch (dt) {
  case CELL_DTYPE_U8: return 0x08;
  case CELL_DTYPE_I8: return 0x09;
  case CELL_DTYPE_I16: return 0x0B;
  case CELL_DTYPE_I32: return 0x0C;
  case CELL_DTYPE_F32: return 0x0D;
  case CELL_DTYPE_F64: return 0x0E;
  default: return 0;
  }
}

/* t as an IDX file (big endian), malloc'd; *n its size. */
static inline unsigned char *fuzz_idx_write(const cell_tensor *t, size_t *n) {
  int code = fuzz_idx_code(t->dtype), es = cell_dtype_size(t->dtype);
  if (!code) FUZZ_FAIL("an IDX file loaded as %s", cell_dtype_name(t->dtype));
  size_t nb = cell_tensor_nbytes(t);
  *n = 4 + 4 * (size_t)t->ndim + nb;
  unsigned char *p = malloc(*n), *o = p;
  if (!p) FUZZ_FAIL("malloc");
  *o++ = 0, *o++ = 0, *o++ = (unsigned char)code, *o++ = (unsigned char)t->ndim;
  for (int i = 0; i < t->ndim; i++)
    for (int k = 3; k >= 0; k--) *o++ = (unsigned char)((uint64_t)t->shape[i] >> (8 * k));
  const unsigned char *d = cell_tensor_data_ptr(t);
  for (size_t i = 0; i < nb; i += (size_t)es) /* little endian to big */
    for (int k = 0; k < es; k++) o[i + (size_t)k] = d[i + (size_t)(es - 1 - k)];
  return p;
}

/* p[0..n) gzip'd, malloc'd; *m its size. */
static inline unsigned char *fuzz_gzip(const unsigned char *p, size_t n, size_t *m) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) FUZZ_FAIL("deflateInit2");
  size_t cap = deflateBound(&z, (uLong)n) + 32;
  unsigned char *out = malloc(cap);
  if (!out) FUZZ_FAIL("malloc");
  z.next_in = (Bytef *)(uintptr_t)p;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) FUZZ_FAIL("deflate");
  *m = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static inline void fuzz_idx_round_trip(const cell_tensor *t) {
  size_t n, m;
  unsigned char *plain = fuzz_idx_write(t, &n), *gz = fuzz_gzip(plain, n, &m);
  cell_tensor *a = NULL, *b = NULL;
  if (cell_idx_load_mem("fuzz-plain", plain, n, CELL_DTYPE_COUNT, 1, &a) != CELL_OK) FUZZ_FAIL("rewritten IDX");
  if (cell_idx_load_mem("fuzz-gz", gz, m, CELL_DTYPE_COUNT, 1, &b) != CELL_OK) FUZZ_FAIL("rewritten IDX, gzip'd");
  if (!fuzz_same_tensor(t, a) || !fuzz_same_tensor(t, b)) FUZZ_FAIL("IDX reloads different");
  cell_tensor_release(a);
  cell_tensor_release(b);
  free(plain);
  free(gz);
  /* as a checkpoint, through the engine's writer */
  const char *name = "x";
  cell_tensor *tt = (cell_tensor *)t;
  char *p = NULL;
  size_t k = 0;
  cell_safetensors *st = NULL;
  if (cell_st_save_mem("fuzz", 1, &name, &tt, 0, NULL, NULL, &p, &k) != CELL_OK) FUZZ_FAIL("save as safetensors");
  if (cell_st_load_mem("fuzz", p, k, &st) != CELL_OK || st->count != 1 || !fuzz_same_tensor(t, st->tensors[0]))
    FUZZ_FAIL("safetensors reloads different");
  cell_safetensors_free(st);
  cell_dealloc(p);
}

/* Load p[0..n) as IDX: a tensor, or a ValueError/MemoryError naming name;
 * then the round trips and the float32 conversion. Returns the status. */
static inline cell_status fuzz_idx_one(const char *name, const uint8_t *p, size_t n, cell_tensor **out) {
  cell_status s = cell_idx_load_mem(name, p, n, CELL_DTYPE_COUNT, 1, out);
  if (s == CELL_OK) {
    fuzz_idx_round_trip(*out);
    cell_tensor *f = NULL;
    if (cell_idx_load_mem(name, p, n, CELL_DTYPE_F32, 1.0 / 255, &f) != CELL_OK) FUZZ_FAIL("the float32 load fails");
    if (!cell_shape_equal(f->ndim, f->shape, (*out)->ndim, (*out)->shape)) FUZZ_FAIL("the float32 load's shape");
    cell_tensor_release(f);
  } else if (s != CELL_ERR_VALUE && s != CELL_ERR_MEMORY) {
    FUZZ_FAIL("status %d", (int)s);
  } else {
    char want[64];
    snprintf(want, sizeof want, "idx: %s: ", name);
    if (strncmp(cell_last_error(), want, strlen(want)) != 0) FUZZ_FAIL("the message does not name the file");
  }
  return s;
}

#endif
