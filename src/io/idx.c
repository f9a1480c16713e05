/* idx.c - cell_idx_load and cell_idx_load_as: the IDX format of MNIST and
 * Fashion-MNIST, read through zlib's gz* functions (which read plain files
 * unchanged), with the magic, the sizes and the amount of data checked, and
 * gzip's own CRC checked by reading to the end of the stream. A conversion
 * (bytes to float32 in [0, 1]) goes through a small buffer, so the file's
 * bytes never need a tensor of their own. */
#include "cell_io.h"
#include "io.h"
#include "../core/alloc.h"
#include "../core/dtype.h"
#include "../core/tensor.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

__attribute__((format(printf, 2, 3))) static cell_status bad(const char *path, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cell_error(CELL_ERR_VALUE, "idx: %s: %s", path, msg);
}

/* The IDX type code's dtype and element size in the file (int16 widens to
 * int32); 0 when the code is not one of IDX's. */
static int idx_type(unsigned code, cell_dtype *dt) {
  switch (code) {
  case 0x08: *dt = CELL_DTYPE_U8; return 1;
  case 0x09: *dt = CELL_DTYPE_I8; return 1;
  case 0x0B: *dt = CELL_DTYPE_I32; return 2;
  case 0x0C: *dt = CELL_DTYPE_I32; return 4;
  case 0x0D: *dt = CELL_DTYPE_F32; return 4;
  case 0x0E: *dt = CELL_DTYPE_F64; return 8;
  default: return 0;
  }
}

/* zlib's message for g, without the "path: " it starts with. */
static const char *gz_message(gzFile g, const char *path, int *code) {
  const char *msg = gzerror(g, code);
  size_t n = strlen(path);
  if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
  return msg;
}

/* Read exactly n bytes; 0 on success, else the error already recorded
 * (what names the part being read). */
static cell_status read_exact(gzFile g, const char *path, void *p, size_t n, const char *what) {
  volatile int *intr = &cell_ctx()->interrupt;
  char *c = p;
  size_t done = 0;
  while (done < n) {
    if (*intr) return cell_error(CELL_ERR_INTERRUPT, "idx: %s: loading interrupted", path);
    size_t want = n - done < CELL_IO_CHUNK ? n - done : CELL_IO_CHUNK;
    int got = gzread(g, c + done, (unsigned)want);
    if (got < 0) {
      int code;
      const char *msg = gz_message(g, path, &code);
      return bad(path, "corrupt data while reading the %s: %s", what,
                 code == Z_ERRNO ? strerror(errno) : msg);
    }
    if (got == 0) {
      int code;
      const char *msg = gz_message(g, path, &code);
      if (code != Z_OK) return bad(path, "corrupt data while reading the %s: %s", what, msg);
      return bad(path, "the file ends after %zu of the %zu bytes of the %s", done, n, what);
    }
    done += (size_t)got;
  }
  return CELL_OK;
}

/* The element at p (big endian, IDX type code) as an integer and as a
 * double. */
static void decode(unsigned code, const unsigned char *p, int64_t *iv, double *dv) {
  switch (code) {
  case 0x08: *iv = p[0]; break;
  case 0x09: *iv = (int8_t)p[0]; break;
  case 0x0B: *iv = (int16_t)(uint16_t)((p[0] << 8) | p[1]); break;
  case 0x0C: *iv = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]); break;
  case 0x0D: {
    uint32_t u = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    float f;
    memcpy(&f, &u, 4);
    *dv = f;
    return;
  }
  default: { /* 0x0E */
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | p[i];
    double d;
    memcpy(&d, &u, 8);
    *dv = d;
    return;
  }
  }
  *dv = (double)*iv;
}

/* n elements of the file (type code, es bytes each) from src into dst of
 * dtype dt, times scale when dt is floating. */
static void convert(unsigned code, int es, const unsigned char *src, int64_t n, cell_dtype dt, double scale,
                    char *dst) {
  if (code == 0x08 && dt == CELL_DTYPE_F32) { /* MNIST's bytes to [0, 1]: the loop that matters */
    float k = (float)scale, *f = (float *)(void *)dst;
    for (int64_t i = 0; i < n; i++) f[i] = (float)src[i] * k;
    return;
  }
  int ds = cell_dtype_size(dt), flt = cell_dtype_is_float(dt);
  for (int64_t i = 0; i < n; i++) {
    int64_t iv = 0;
    double dv = 0;
    decode(code, src + i * es, &iv, &dv);
    if (flt) cell_store_f64(dt, dst + i * ds, dv * scale);
    else if (code == 0x0D || code == 0x0E) cell_store_f64(dt, dst + i * ds, dv);
    else cell_store_i64(dt, dst + i * ds, iv);
  }
}

/* Bytes of the file converted per step when the tensor's dtype is not the
 * file's: small enough to stay in cache. */
#define STEP ((size_t)1 << 18)

/* want: the dtype to produce (CELL_DTYPE_COUNT: the file's). */
static cell_status load(gzFile g, const char *path, cell_dtype want, double scale, cell_tensor **out) {
  unsigned char magic[4];
  CELL_TRY(read_exact(g, path, magic, 4, "magic number"));
  cell_dtype native;
  int es = idx_type(magic[2], &native);
  if (magic[0] != 0 || magic[1] != 0 || !es)
    return bad(path, "not an IDX file (magic bytes %02x %02x %02x %02x)", magic[0], magic[1], magic[2],
               magic[3]);
  unsigned code = magic[2];
  int ndim = magic[3];
  if (ndim < 1 || ndim > CELL_MAX_DIMS)
    return bad(path, "%d dimensions in the header; cell reads 1 to %d", ndim, CELL_MAX_DIMS);
  unsigned char dims[4 * CELL_MAX_DIMS];
  CELL_TRY(read_exact(g, path, dims, (size_t)ndim * 4, "sizes"));
  int64_t shape[CELL_MAX_DIMS];
  uint64_t bytes = (uint64_t)es;
  for (int i = 0; i < ndim; i++) {
    const unsigned char *d = dims + 4 * i;
    shape[i] = (int64_t)(((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) | ((uint32_t)d[2] << 8) | d[3]);
    if (shape[i] && bytes > (UINT64_MAX >> 8) / (uint64_t)shape[i]) {
      char sb[256];
      return bad(path, "sizes %s are too large", cell_io_shape_tuple(i + 1, shape, sb, sizeof sb));
    }
    bytes *= (uint64_t)shape[i];
  }
  char sb[256];
  /* Check the sizes against the file before allocating: exactly for a
   * plain file; for a gzip one, against deflate's best ratio (1032:1), so
   * hostile sizes are a ValueError, not a huge allocation. */
  struct stat st;
  if (stat(path, &st) == 0) {
    uint64_t fsize = (uint64_t)st.st_size;
    if (gzdirect(g) && fsize != 4 + 4 * (uint64_t)ndim + bytes)
      return bad(path, "sizes %s need %llu data bytes, but the file has %lld after its header",
                 cell_io_shape_tuple(ndim, shape, sb, sizeof sb), (unsigned long long)bytes,
                 (long long)fsize - 4 - 4 * ndim);
    if (!gzdirect(g) && bytes / 1032 > fsize)
      return bad(path, "sizes %s need %llu data bytes, more than %llu compressed bytes can hold",
                 cell_io_shape_tuple(ndim, shape, sb, sizeof sb), (unsigned long long)bytes,
                 (unsigned long long)fsize);
  }
  cell_dtype dt = want == CELL_DTYPE_COUNT ? native : want;
  cell_tensor *t = NULL;
  if (cell_shape_numel_checked("the header", ndim, shape, NULL) != CELL_OK)
    return bad(path, "%s", cell_last_error());
  if (cell_tensor_empty(dt, ndim, shape, &t) != CELL_OK)
    return cell_error(CELL_ERR_MEMORY, "idx: %s: out of memory for data of shape %s", path,
                      cell_io_shape_tuple(ndim, shape, sb, sizeof sb));
  char *data = cell_tensor_data_ptr(t);
  int64_t n = cell_tensor_numel(t);
  cell_status s = CELL_OK;
  if (dt == native && scale == 1 && es == cell_dtype_size(dt)) { /* straight in, then swap in place */
    s = read_exact(g, path, data, (size_t)bytes, "data");
    if (!s && es > 1) convert(code, es, (const unsigned char *)data, n, dt, 1, data);
  } else { /* through a small buffer, converting as we go */
    unsigned char *buf = cell_alloc(STEP);
    if (!buf) s = cell_error(CELL_ERR_MEMORY, "idx: %s: out of memory for a read buffer", path);
    int64_t per = (int64_t)(STEP / (size_t)es), ds = cell_dtype_size(dt);
    for (int64_t i = 0; !s && i < n; i += per) {
      int64_t m = n - i < per ? n - i : per;
      s = read_exact(g, path, buf, (size_t)m * (size_t)es, "data");
      if (!s) convert(code, es, buf, m, dt, scale, data + i * ds);
    }
    cell_dealloc(buf);
  }
  if (!s) { /* nothing may follow; reading on also checks the gzip CRC */
    unsigned char extra;
    int got = gzread(g, &extra, 1);
    int zcode;
    const char *msg = gz_message(g, path, &zcode);
    if (got < 0 || zcode != Z_OK) s = bad(path, "corrupt data at the end of the file: %s", msg);
    else if (got > 0) s = bad(path, "the file has data after the %llu bytes its sizes %s call for",
                              (unsigned long long)bytes, cell_io_shape_tuple(ndim, shape, sb, sizeof sb));
  }
  if (s) {
    cell_tensor_release(t);
    return s;
  }
  *out = t;
  return CELL_OK;
}

static cell_status open_and_load(const char *path, cell_dtype want, double scale, cell_tensor **out) {
  struct stat st;
  if (stat(path, &st) != 0) return bad(path, "cannot open: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return bad(path, "not a regular file");
  errno = 0;
  gzFile g = gzopen(path, "rb");
  if (!g) return bad(path, "cannot open: %s", errno ? strerror(errno) : "out of memory");
  gzbuffer(g, 1u << 18);
  cell_status s = load(g, path, want, scale, out);
  gzclose(g);
  return s;
}

cell_status cell_idx_load(const char *path, cell_tensor **out) {
  if (!path || !out) return cell_error(CELL_ERR_VALUE, "idx: no path given");
  return open_and_load(path, CELL_DTYPE_COUNT, 1, out);
}

cell_status cell_idx_load_as(const char *path, cell_dtype dt, double scale, cell_tensor **out) {
  if (!path || !out) return cell_error(CELL_ERR_VALUE, "idx: no path given");
  if ((unsigned)dt >= CELL_DTYPE_COUNT) return cell_error(CELL_ERR_TYPE, "idx: unknown dtype %d", (int)dt);
  if (!cell_dtype_is_float(dt) && scale != 1)
    return cell_error(CELL_ERR_VALUE, "idx: a scale (%g) needs a floating-point dtype, not %s", scale,
                      cell_dtype_name(dt));
  return open_and_load(path, dt, scale, out);
}
