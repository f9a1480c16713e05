/* io.h - what the file readers and writers share (internal): safetensors'
 * dtype names, UTF-8 checks, Python-style shape text for messages, byte
 * order. */
#ifndef CELL_IO_IO_H
#define CELL_IO_IO_H
#include "cell.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Header lengths above this are refused (the reference implementation's
 * limit), so a hostile length cannot make us allocate gigabytes. */
#define CELL_ST_MAX_HEADER 100000000ull

/* A load may allocate at most CELL_ST_MEM_FACTOR times the file's size
 * plus CELL_ST_MEM_SLACK bytes (header, entries, names, the tensors and
 * their data together); a file that would take more is a ValueError. */
#define CELL_ST_MEM_FACTOR 4
#define CELL_ST_MEM_SLACK ((uint64_t)64 << 20)

/* cell_safetensors_load on a file held in memory, p[0..n); name stands for
 * the path in messages (the fuzz targets read their inputs so). */
cell_status cell_st_load_mem(const char *name, const void *p, size_t n, cell_safetensors **out);
/* cell_safetensors_save into a new buffer *out of *n bytes (from
 * cell_alloc; the caller frees it with cell_dealloc). */
cell_status cell_st_save_mem(const char *name, int count, const char *const *names, cell_tensor *const *tensors,
                             int meta_count, const char *const *meta_keys, const char *const *meta_values,
                             char **out, size_t *n);

/* cell_idx_load_as on a file held in memory (dt CELL_DTYPE_COUNT: the
 * file's own dtype, scale 1); name stands for the path in messages. */
cell_status cell_idx_load_mem(const char *name, const void *p, size_t n, cell_dtype dt, double scale,
                              cell_tensor **out);

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

/* What a path that is not a regular file is, for messages ("a directory",
 * "a FIFO", ...), from its stat mode. */
const char *cell_io_file_kind(mode_t m);
/* qsort's comparison of two strings (const char * elements), by strcmp. */
int cell_io_by_string(const void *a, const void *b);

#endif
