/* common.c - helpers of the file readers and writers: dtype names, UTF-8
 * validation, shape text. */
#include "io.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const st_names[CELL_DTYPE_COUNT] = {
    [CELL_DTYPE_F32] = "F32", [CELL_DTYPE_F64] = "F64", [CELL_DTYPE_F16] = "F16",
    [CELL_DTYPE_BF16] = "BF16", [CELL_DTYPE_I8] = "I8", [CELL_DTYPE_U8] = "U8",
    [CELL_DTYPE_I32] = "I32", [CELL_DTYPE_I64] = "I64", [CELL_DTYPE_BOOL] = "BOOL",
    [CELL_DTYPE_I16] = "I16",
};
_Static_assert(sizeof st_names / sizeof st_names[0] == CELL_DTYPE_COUNT, "safetensors dtype names");

const char *cell_st_dtype_name(cell_dtype dt) {
  return (unsigned)dt < CELL_DTYPE_COUNT ? st_names[dt] : "?";
}

cell_dtype cell_st_dtype_from_name(const char *name) {
  for (int i = 0; i < CELL_DTYPE_COUNT; i++)
    if (strcmp(name, st_names[i]) == 0) return (cell_dtype)i;
  return CELL_DTYPE_COUNT;
}

size_t cell_io_utf8_check(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    unsigned cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i; /* a continuation byte, or a lead byte no code point has */
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; k++) {
      if ((p[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return n;
}

const char *cell_io_shape_tuple(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t pos = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < ndim && pos < n; i++)
    pos += (size_t)snprintf(buf + pos, n - pos, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (pos < n) snprintf(buf + pos, n - pos, ndim == 1 ? ",)" : ")");
  return buf;
}

const char *cell_io_file_kind(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int cell_io_by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}
