/* cell_io.h - public C API: files. safetensors checkpoints (validated
 * reading, atomic writing) and IDX data sets (the MNIST family's format,
 * gzip-compressed or plain).
 * Included by cell.h; the conventions at the top of cell.h apply. Errors
 * name the file and the fault; I/O errors add the system's reason. */
#ifndef CELL_IO_H
#define CELL_IO_H
#include "cell.h"

/* --- safetensors ------------------------------------------------------------
 * The format: 8 bytes of little-endian header length N, N bytes of JSON (an
 * object mapping each tensor name to {"dtype", "shape", "data_offsets"},
 * with an optional "__metadata__" map of strings), then the data section;
 * data_offsets [begin, end) count from the data section's start. Every
 * dtype of cell is supported: F32 F64 F16 BF16 I8 U8 I16 I32 I64 BOOL. */

/* What cell_safetensors_load read. Arrays are owned by the struct; free it
 * with cell_safetensors_free, which releases the tensors still in it (a
 * caller that keeps tensors[i] sets the slot to NULL). */
typedef struct cell_safetensors {
  int count;               /* tensors, in the header's (JSON key) order */
  char **names;
  cell_tensor **tensors;   /* contiguous, each in storage of its own */
  int meta_count;          /* "__metadata__" entries, in the header's order */
  char **meta_keys;
  char **meta_values;
} cell_safetensors;

/* Read a whole file. Anything but a regular file (a FIFO, a device, a
 * folder) is refused before a byte is read. The header is validated
 * before any data is read: its length (at most 100,000,000 bytes and
 * inside the file), the JSON, every entry (a known dtype, a shape of
 * non-negative integers with at most CELL_MAX_DIMS entries whose non-zero
 * sizes multiply to less than 2^63 bytes, data_offsets whose length is the
 * shape's byte count), the format's layout rule (the ranges, in offset
 * order, follow each other from 0 to the end of the file without a gap or
 * an overlap), one "__metadata__" at most (null or an object of strings),
 * no duplicate, empty or NUL-holding names or keys, no NUL in metadata
 * values. A load allocates at most 4 times the file's size plus 64 MiB in
 * all (a header of a million empty tensors is refused, not loaded into
 * gigabytes). Unaligned data is accepted; BOOL bytes other than 0 read as
 * true. ValueError for a missing, unreadable, malformed or out-of-bounds
 * file ("safetensors: PATH: FAULT"), MemoryError when memory runs out
 * (the header's parsing included), KeyboardInterrupt when interrupted. */
CELL_API cell_status cell_safetensors_load(const char *path, cell_safetensors **out);
CELL_API void cell_safetensors_free(cell_safetensors *st);

/* Write tensors[0..count) under names[0..count) (unique, non-empty, not
 * "__metadata__"), in that order, with the metadata pairs (meta_count 0:
 * none). Views of any strides are written as their contiguous values.
 * Atomic: the file is written to a temporary name in path's folder
 * ("PATH.tmp.PID.N"), flushed and fsync'd, then renamed over path (the
 * folder fsync'd before and after), so path holds either its old contents
 * or the whole new file; on failure the temporary file is removed, and
 * temporary files left by savers that were killed (their process gone)
 * are removed by the next save to the same place. An existing file keeps
 * its permissions (and owner, where allowed); a new one gets the umask's.
 * A path that is a symbolic link has its target replaced; the link stays.
 * ValueError for bad names, RuntimeError when the file system refuses
 * (the message says why), MemoryError, KeyboardInterrupt. */
CELL_API cell_status cell_safetensors_save(const char *path, int count, const char *const *names,
                                           cell_tensor *const *tensors, int meta_count,
                                           const char *const *meta_keys,
                                           const char *const *meta_values);

/* --- IDX ----------------------------------------------------------------------
 * Magic 00 00 TYPE NDIM, NDIM big-endian uint32 sizes, then the data, big
 * endian. TYPE 0x08 gives uint8, 0x09 int8, 0x0B int16, 0x0C int32,
 * 0x0D float32, 0x0E float64. The file may be gzip-compressed (read through
 * zlib: one gzip member, nothing after it) or plain. ValueError for a
 * missing file or one that is not a regular file (a FIFO is refused, not
 * waited on), a bad magic, sizes that disagree with the data (short or
 * with trailing bytes) or overflow, corrupt gzip data, a second gzip member
 * or trailing garbage, each naming the file; MemoryError;
 * KeyboardInterrupt. */
CELL_API cell_status cell_idx_load(const char *path, cell_tensor **out);
/* cell_idx_load, then each element converted to dtype dt and multiplied by
 * scale (scale 1/255 and float32 turn MNIST's bytes into [0, 1] in one
 * pass; integer dtypes take scale 1 only, else a ValueError). */
CELL_API cell_status cell_idx_load_as(const char *path, cell_dtype dt, double scale, cell_tensor **out);

#endif
