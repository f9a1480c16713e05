/* io.h - what the file readers and writers share (internal): safetensors'
 * dtype names, UTF-8 checks, Python-style shape text for messages, byte
 * order. */
#ifndef CELL_IO_IO_H
#define CELL_IO_IO_H
#include "cell.h"
#include <stddef.h>
#include <stdint.h>

/* Header lengths above this are refused (the reference implementation's
 * limit), so a hostile length cannot make us allocate gigabytes. */
#define CELL_ST_MAX_HEADER 100000000ull

/* safetensors' name of a dtype ("F32", ...), and back (CELL_DTYPE_COUNT
 * when unknown or not one of cell's). */
const char *cell_st_dtype_name(cell_dtype dt);
cell_dtype cell_st_dtype_from_name(const char *name);

/* The offset of the first byte of s[0..n) that is not well-formed UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF included), or
 * n when all of it is. */
size_t cell_io_utf8_check(const char *s, size_t n);

/* "(2, 3)", "(3,)" or "()" into buf (always terminated). */
const char *cell_io_shape_tuple(int ndim, const int64_t *shape, char *buf, size_t n);

/* 1 on a little-endian host: the byte order of safetensors data. */
static inline int cell_io_little_endian(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

/* Bytes read or written per call, between which the interrupt flag is
 * polled: a multi-gigabyte tensor stays interruptible. */
#define CELL_IO_CHUNK ((size_t)64 << 20)

#endif
