/* idx.c - cell_idx_load and cell_idx_load_as: the IDX format of MNIST and
 * Fashion-MNIST, plain or gzip'd (one gzip member, inflated through zlib,
 * nothing after it), with the magic, the sizes and the amount of data
 * checked, and gzip's own CRC checked by reading to the end of the stream. A conversion
 * (bytes to float32 in [0, 1]) goes through a small buffer, so the file's
 * bytes never need a tensor of their own. */
#include "cell_io.h"
#include "io.h"
#include "../core/alloc.h"
#include "../core/dtype.h"
#include "../core/tensor.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

__attribute__((format(printf, 2, 3))) static cell_status bad(const char *path, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cell_error(CELL_ERR_VALUE, "idx: %s: %s", path, msg);
}

/* The IDX type code's dtype and element size in the file; 0 when the code
 * is not one of IDX's. */
static int idx_type(unsigned code, cell_dtype *dt) {
  switch (code) {
  case 0x08: *dt = CELL_DTYPE_U8; return 1;
  case 0x09: *dt = CELL_DTYPE_I8; return 1;
  case 0x0B: *dt = CELL_DTYPE_I16; return 2;
  case 0x0C: *dt = CELL_DTYPE_I32; return 4;
  case 0x0D: *dt = CELL_DTYPE_F32; return 4;
  case 0x0E: *dt = CELL_DTYPE_F64; return 8;
  default: return 0;
  }
}

/* --- the bytes: a plain or gzip'd file, or memory ------------------------------------ */

#define IN_CHUNK ((size_t)1 << 18)

typedef struct src {
  const char *path;
  int fd;                     /* the file, or -1 when reading mem */
  const unsigned char *mem;
  uint64_t size;              /* of the file */
  uint64_t taken;             /* raw bytes taken from the file so far */
  unsigned char head[2];      /* the first bytes, not yet handed out (plain) */
  int head_n, head_at;
  int gz, z_ready, z_done, eof;
  z_stream z;
  unsigned char *in;          /* gzip input buffer (file) */
} src;

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  if (size && items > SIZE_MAX / size) return Z_NULL;
  return cell_alloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  cell_dealloc(p);
}

/* Up to n raw bytes of the file at the current place; 0 at its end. */
static cell_status raw_read(src *s, void *p, size_t n, size_t *got) {
  *got = 0;
  if (s->mem) {
    size_t left = (size_t)(s->size - s->taken);
    *got = n < left ? n : left;
    if (*got) memcpy(p, s->mem + s->taken, *got);
  } else {
    ssize_t k;
    do k = read(s->fd, p, n); while (k < 0 && errno == EINTR);
    if (k < 0) return bad(s->path, "cannot read: %s", strerror(errno));
    *got = (size_t)k;
  }
  s->taken += *got;
  return CELL_OK;
}

/* Up to n bytes of the content (inflated when gzip'd); *got 0 at its end. */
static cell_status content(src *s, unsigned char *p, size_t n, size_t *got, const char *what) {
  *got = 0;
  if (!s->gz) {
    while (n && s->head_at < s->head_n) p[(*got)++] = s->head[s->head_at++], n--;
    if (!n || *got) return CELL_OK;
    return raw_read(s, p, n, got);
  }
  if (s->z_done) return CELL_OK;
  s->z.next_out = p;
  s->z.avail_out = (uInt)(n < ((size_t)1 << 30) ? n : (size_t)1 << 30);
  uInt want = s->z.avail_out;
  while (s->z.avail_out == want) {
    if (s->z.avail_in == 0 && !s->mem && !s->eof) {
      size_t k;
      CELL_TRY(raw_read(s, s->in, IN_CHUNK, &k));
      s->z.next_in = s->in;
      s->z.avail_in = (uInt)k;
      if (!k) s->eof = 1;
    }
    if (s->z.avail_in == 0 && (s->mem || s->eof))
      return bad(s->path, "corrupt data while reading the %s: unexpected end of file", what);
    int ret = inflate(&s->z, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) {
      s->z_done = 1;
      break;
    }
    if (ret == Z_MEM_ERROR) return cell_error(CELL_ERR_MEMORY, "idx: %s: out of memory for gzip", s->path);
    if (ret != Z_OK && ret != Z_BUF_ERROR)
      return bad(s->path, "corrupt data while reading the %s: %s", what, s->z.msg ? s->z.msg : "bad gzip data");
  }
  *got = want - s->z.avail_out;
  return CELL_OK;
}

/* The first two bytes tell a gzip file (1f 8b) from a plain one. */
static cell_status start(src *s) {
  size_t k = 0, k2 = 0;
  CELL_TRY(raw_read(s, s->head, 1, &k));
  if (k) CELL_TRY(raw_read(s, s->head + 1, 1, &k2));
  s->head_n = (int)(k + k2);
  if (s->head_n < 2 || s->head[0] != 0x1f || s->head[1] != 0x8b) return CELL_OK;
  s->gz = 1;
  s->z.zalloc = z_alloc;
  s->z.zfree = z_free;
  if (s->mem) {
    s->z.next_in = (Bytef *)(uintptr_t)s->mem;
    s->z.avail_in = (uInt)(s->size < UINT32_MAX ? s->size : UINT32_MAX);
    s->taken = s->z.avail_in;
  } else {
    s->in = cell_alloc(IN_CHUNK);
    if (!s->in) return cell_error(CELL_ERR_MEMORY, "idx: %s: out of memory for a read buffer", s->path);
    memcpy(s->in, s->head, 2);
    s->z.next_in = s->in;
    s->z.avail_in = 2;
  }
  int ret = inflateInit2(&s->z, 16 + MAX_WBITS); /* gzip only */
  if (ret == Z_MEM_ERROR) return cell_error(CELL_ERR_MEMORY, "idx: %s: out of memory for gzip", s->path);
  if (ret != Z_OK) return bad(s->path, "cannot read gzip data: %s", s->z.msg ? s->z.msg : "zlib refused");
  s->z_ready = 1;
  return CELL_OK;
}

static void finish_src(src *s) {
  if (s->z_ready) inflateEnd(&s->z);
  cell_dealloc(s->in);
}

/* After the end of the gzip stream: nothing (zlib's gz* functions would
 * read a second member or skip trailing bytes silently). */
static cell_status after_stream(src *s) {
  uint64_t left = s->size - (s->taken - s->z.avail_in);
  unsigned char two[2];
  int n = 0;
  while (n < 2 && s->z.avail_in) two[n++] = *s->z.next_in++, s->z.avail_in--;
  if (n < 2 && !s->mem) {
    size_t k = 0;
    CELL_TRY(raw_read(s, two + n, (size_t)(2 - n), &k));
    n += (int)k;
    if (k && left == 0) left = k; /* the file grew while being read */
  }
  if (n == 0) return CELL_OK;
  if (n == 2 && two[0] == 0x1f && two[1] == 0x8b)
    return bad(s->path, "a second gzip member follows the first (concatenated gzip files are not read)");
  return bad(s->path, "the file has %llu bytes of trailing garbage after its gzip data", (unsigned long long)left);
}

/* Read exactly n bytes; 0 on success, else the error already recorded
 * (what names the part being read). */
static cell_status read_exact(src *s, void *p, size_t n, const char *what) {
  volatile int *intr = &cell_ctx()->interrupt;
  unsigned char *c = p;
  size_t done = 0;
  while (done < n) {
    if (*intr) return cell_error(CELL_ERR_INTERRUPT, "idx: %s: loading interrupted", s->path);
    size_t want = n - done < CELL_IO_CHUNK ? n - done : CELL_IO_CHUNK, got;
    CELL_TRY(content(s, c + done, want, &got, what));
    if (got == 0) {
      if (s->gz) CELL_TRY(after_stream(s));
      return bad(s->path, "the file ends after %zu of the %zu bytes of the %s", done, n, what);
    }
    done += got;
  }
  return CELL_OK;
}

/* Nothing may follow the data: no more content (reading on also checks the
 * gzip CRC and length), and nothing after the gzip stream. */
static cell_status check_end(src *s, uint64_t bytes, int ndim, const int64_t *shape) {
  unsigned char extra;
  size_t got;
  char sb[256];
  CELL_TRY(content(s, &extra, 1, &got, "end of the data"));
  if (got)
    return bad(s->path, "the file has data after the %llu bytes its sizes %s call for", (unsigned long long)bytes,
               cell_io_shape_tuple(ndim, shape, sb, sizeof sb));
  return s->gz ? after_stream(s) : CELL_OK;
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

/* n elements of the file (type code, es bytes each) from in into dst of
 * dtype dt, times scale when dt is floating. */
static void convert(unsigned code, int es, const unsigned char *in, int64_t n, cell_dtype dt, double scale,
                    char *dst) {
  if (code == 0x08 && dt == CELL_DTYPE_F32) { /* MNIST's bytes to [0, 1]: the loop that matters */
    float k = (float)scale, *f = (float *)(void *)dst;
    for (int64_t i = 0; i < n; i++) f[i] = (float)in[i] * k;
    return;
  }
  int ds = cell_dtype_size(dt), flt = cell_dtype_is_float(dt);
  for (int64_t i = 0; i < n; i++) {
    int64_t iv = 0;
    double dv = 0;
    decode(code, in + i * es, &iv, &dv);
    if (flt) cell_store_f64(dt, dst + i * ds, dv * scale);
    else if (code == 0x0D || code == 0x0E) cell_store_f64(dt, dst + i * ds, dv);
    else cell_store_i64(dt, dst + i * ds, iv);
  }
}

/* Bytes of the file converted per step when the tensor's dtype is not the
 * file's: small enough to stay in cache. */
#define STEP ((size_t)1 << 18)

/* want: the dtype to produce (CELL_DTYPE_COUNT: the file's). */
static cell_status load(src *g, cell_dtype want, double scale, cell_tensor **out) {
  const char *path = g->path;
  unsigned char magic[4];
  CELL_TRY(read_exact(g, magic, 4, "magic number"));
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
  CELL_TRY(read_exact(g, dims, (size_t)ndim * 4, "sizes"));
  int64_t shape[CELL_MAX_DIMS];
  uint64_t bytes = (uint64_t)es, span = 8; /* span: the non-zero sizes' product, which bounds the strides */
  for (int i = 0; i < ndim; i++) {
    const unsigned char *d = dims + 4 * i;
    shape[i] = (int64_t)(((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) | ((uint32_t)d[2] << 8) | d[3]);
    if (shape[i] && span > (UINT64_MAX >> 8) / (uint64_t)shape[i]) {
      char sb[256];
      return bad(path, "sizes %s are too large", cell_io_shape_tuple(i + 1, shape, sb, sizeof sb));
    }
    bytes *= (uint64_t)shape[i];
    if (shape[i]) span *= (uint64_t)shape[i];
  }
  char sb[256];
  /* Check the sizes against the file before allocating: exactly for a
   * plain file; for a gzip one, against deflate's best ratio (1032:1), so
   * hostile sizes are a ValueError, not a huge allocation. */
  uint64_t fsize = g->size;
  if (!g->gz && fsize != 4 + 4 * (uint64_t)ndim + bytes)
    return bad(path, "sizes %s need %llu data bytes, but the file has %lld after its header",
               cell_io_shape_tuple(ndim, shape, sb, sizeof sb), (unsigned long long)bytes,
               (long long)fsize - 4 - 4 * ndim);
  if (g->gz && bytes / 1032 > fsize)
    return bad(path, "sizes %s need %llu data bytes, more than %llu compressed bytes can hold",
               cell_io_shape_tuple(ndim, shape, sb, sizeof sb), (unsigned long long)bytes,
               (unsigned long long)fsize);
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
    s = read_exact(g, data, (size_t)bytes, "data");
    if (!s && es > 1) convert(code, es, (const unsigned char *)data, n, dt, 1, data);
  } else { /* through a small buffer, converting as we go */
    unsigned char *buf = cell_alloc(STEP);
    if (!buf) s = cell_error(CELL_ERR_MEMORY, "idx: %s: out of memory for a read buffer", path);
    int64_t per = (int64_t)(STEP / (size_t)es), ds = cell_dtype_size(dt);
    for (int64_t i = 0; !s && i < n; i += per) {
      int64_t m = n - i < per ? n - i : per;
      s = read_exact(g, buf, (size_t)m * (size_t)es, "data");
      if (!s) convert(code, es, buf, m, dt, scale, data + i * ds);
    }
    cell_dealloc(buf);
  }
  if (!s) s = check_end(g, bytes, ndim, shape);
  if (s) {
    cell_tensor_release(t);
    return s;
  }
  *out = t;
  return CELL_OK;
}

static cell_status run(src *g, cell_dtype want, double scale, cell_tensor **out) {
  cell_status s = start(g);
  if (!s) s = load(g, want, scale, out);
  finish_src(g);
  return s;
}

/* Opened without blocking (a FIFO would wait for a writer), and refused
 * unless a regular file, before a byte is read. */
static cell_status open_and_load(const char *path, cell_dtype want, double scale, cell_tensor **out) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bad(path, "cannot open: %s", strerror(errno));
  struct stat st;
  cell_status s = CELL_OK;
  if (fstat(fd, &st) != 0) s = bad(path, "cannot stat: %s", strerror(errno));
  else if (!S_ISREG(st.st_mode)) s = bad(path, "not a regular file (%s)", cell_io_file_kind(st.st_mode));
  if (!s) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    src g;
    memset(&g, 0, sizeof g);
    g.path = path;
    g.fd = fd;
    g.size = (uint64_t)st.st_size;
    s = run(&g, want, scale, out);
  }
  close(fd);
  return s;
}

cell_status cell_idx_load_mem(const char *name, const void *p, size_t n, cell_dtype dt, double scale,
                              cell_tensor **out) {
  if (!name || (!p && n) || !out) return cell_error(CELL_ERR_VALUE, "idx: no data given");
  static const unsigned char none[1] = {0};
  src g;
  memset(&g, 0, sizeof g);
  g.path = name;
  g.fd = -1;
  g.mem = p ? p : none;
  g.size = n;
  return run(&g, (unsigned)dt < CELL_DTYPE_COUNT ? dt : CELL_DTYPE_COUNT, scale, out);
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
