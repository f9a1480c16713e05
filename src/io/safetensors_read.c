/* safetensors_read.c - cell_safetensors_load: the header is checked field by
 * field (length, UTF-8, JSON, every entry, the ranges together) before a
 * single data byte is read or a tensor allocated; then the data is read
 * tensor by tensor. A hostile or truncated file is a ValueError naming the
 * file and the fault, never a crash or an outsized allocation.
 *
 * The JSON is parsed in one pass straight into compact entries (no tree):
 * every byte comes from the engine's allocator and is counted against a
 * budget proportional to the file (CELL_ST_MEM_FACTOR times its size plus
 * CELL_ST_MEM_SLACK), so a header of a million empty tensors is refused
 * rather than costing gigabytes, and running out of memory anywhere is a
 * MemoryError. The rules are the format's own (those of the reference
 * implementation): one optional "__metadata__" of strings, tensor entries
 * with dtype, shape and data_offsets, ranges that follow each other from 0
 * to the end of the data without a gap; and, beyond the reference, no
 * duplicate names, no empty names and no NUL characters in names or
 * metadata (C strings would silently cut them short).
 *
 * Why not cJSON, which the project used before: its allocation hooks are
 * process-wide (a host that embeds cell and uses cJSON itself would have its
 * hooks replaced, or replace ours), so a per-load memory budget cannot be
 * kept; it builds a tree of about 64-byte nodes per value, decodes \u0000
 * into a C string that ends there, keeps duplicate keys silently, and reports
 * running out of memory as a syntax error: four of the faults this reader
 * must refuse or report. The grammar needed here is a few objects, arrays,
 * strings and integers, parsed below and fuzzed by tests/fuzz/. */
#include "cell_io.h"
#include "io.h"
#include "../core/alloc.h"
#include "../core/tensor.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One tensor's header entry, checked. Names live in the reader's string
 * arena, shapes in its shape pool (offsets, as both grow). */
typedef struct entry {
  size_t name;       /* offset in the arena (NUL-terminated) */
  size_t shape_at;   /* index in the shape pool */
  int dtype, ndim;
  uint64_t begin, end; /* [begin, end) in the data section */
} entry;

typedef struct meta_pair {
  size_t key, value; /* offsets in the arena */
} meta_pair;

typedef struct reader {
  const char *path;
  FILE *f;                   /* the file, or NULL when reading mem */
  const unsigned char *mem;  /* the whole file in memory (cell_st_load_mem) */
  uint64_t size;             /* of the file */
  uint64_t hlen;             /* of the JSON header */
  uint64_t data_len;         /* of the data section */
  uint64_t budget, used;     /* bytes the load may allocate, and has */
  char *header;              /* hlen + 1 bytes, NUL-terminated */
  const char *p, *stop;      /* the parser's cursor in the header */
  char *arena;               /* decoded strings */
  size_t arena_n, arena_cap;
  int64_t *shapes;
  size_t shapes_n, shapes_cap;
  entry *entries;
  size_t n, n_cap;
  meta_pair *meta;
  size_t n_meta, meta_cap;
  int meta_seen;             /* "__metadata__" met (null or not) */
  cell_safetensors *out;
} reader;

#define NAME(r, e) ((r)->arena + (e)->name)

/* An entry's shape (NULL, never indexed, while no entry has a dimension). */
static const int64_t *shape_of(const reader *r, const entry *e) {
  return r->shapes ? r->shapes + e->shape_at : NULL;
}

/* The name (or key) at offset off, for a message: at most 200 bytes, a NUL
 * written as \u0000 (names holding one are refused and named so). */
static const char *show(const reader *r, size_t off, char *buf, size_t cap) {
  const char *s = r->arena + off;
  size_t k = 0;
  for (; *s && k + 1 < cap && k < 200; s++) buf[k++] = *s;
  buf[k] = '\0';
  return buf;
}

/* A ValueError "safetensors: PATH: <fault>". */
__attribute__((format(printf, 2, 3))) static cell_status bad(const reader *r, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cell_error(CELL_ERR_VALUE, "safetensors: %s: %s", r->path, msg);
}

static cell_status no_memory(const reader *r, const char *what) {
  return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory for %s", r->path, what);
}

static cell_status over_budget(const reader *r, const char *what, uint64_t need) {
  return bad(r, "loading it would take more than %llu bytes of memory (%s: %llu more bytes after %llu); "
                "the bound is %d times the file's %llu bytes plus %llu",
             (unsigned long long)r->budget, what, (unsigned long long)need, (unsigned long long)r->used,
             CELL_ST_MEM_FACTOR, (unsigned long long)r->size, (unsigned long long)CELL_ST_MEM_SLACK);
}

/* What the allocator spends on a block of n bytes, at most: its header and
 * the rounding up to a size class (a quarter octave). */
static uint64_t block_cost(uint64_t n) { return 128 + n + n / 4; }

/* n bytes from the engine's allocator, counted against the budget. */
static cell_status take(reader *r, size_t n, const char *what, void **out) {
  if (block_cost(n) > r->budget - r->used) return over_budget(r, what, block_cost(n));
  void *p = cell_alloc(n);
  if (!p) return no_memory(r, what);
  r->used += block_cost(n);
  *out = p;
  return CELL_OK;
}

static void give(reader *r, void *p, size_t n) {
  if (!p) return;
  cell_dealloc(p);
  r->used -= block_cost(n);
}

/* Room for one more element of size es in the array *v of *cap (doubling). */
static cell_status grow(reader *r, void **v, size_t n, size_t *cap, size_t es, size_t want, const char *what) {
  if (n + want <= *cap) return CELL_OK;
  size_t cap2 = *cap ? *cap : 16;
  while (cap2 < n + want) cap2 *= 2;
  void *p;
  CELL_TRY(take(r, cap2 * es, what, &p));
  if (n) memcpy(p, *v, n * es);
  give(r, *v, *cap * es);
  *v = p;
  *cap = cap2;
  return CELL_OK;
}

/* --- the file ----------------------------------------------------------------- */

/* Open without blocking (a FIFO would wait for a writer) and refuse what is
 * not a regular file before reading a byte. */
static cell_status open_file(reader *r) {
  int fd = open(r->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bad(r, "cannot open: %s", strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    cell_status s = bad(r, "cannot stat: %s", strerror(errno));
    close(fd);
    return s;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return bad(r, "not a regular file (%s)", cell_io_file_kind(sb.st_mode));
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  r->f = fdopen(fd, "rb");
  if (!r->f) {
    close(fd);
    return no_memory(r, "a file buffer");
  }
  r->size = (uint64_t)sb.st_size;
  return CELL_OK;
}

/* n bytes at offset off of the file into p. */
static cell_status read_at(reader *r, uint64_t off, void *p, size_t n, const char *what) {
  if (r->mem) {
    if (off > r->size || n > r->size - off) return bad(r, "the file ended inside %s", what);
    memcpy(p, r->mem + off, n);
    return CELL_OK;
  }
  if (fseeko(r->f, (off_t)off, SEEK_SET) != 0) return bad(r, "cannot seek to %s: %s", what, strerror(errno));
  volatile int *intr = &cell_ctx()->interrupt;
  char *c = p;
  for (size_t done = 0; done < n;) {
    if (*intr) return cell_error(CELL_ERR_INTERRUPT, "safetensors: %s: loading interrupted", r->path);
    size_t want = n - done < CELL_IO_CHUNK ? n - done : CELL_IO_CHUNK;
    size_t got = fread(c + done, 1, want, r->f);
    if (got != want) {
      if (ferror(r->f)) return bad(r, "cannot read %s: %s", what, strerror(errno));
      return bad(r, "the file ended inside %s (did it change while being read?)", what);
    }
    done += got;
  }
  return CELL_OK;
}

static cell_status read_header(reader *r) {
  r->budget = (uint64_t)CELL_ST_MEM_FACTOR * r->size + CELL_ST_MEM_SLACK;
  if (r->size < 8)
    return bad(r, "the file is %llu bytes, too short for the 8-byte header length",
               (unsigned long long)r->size);
  unsigned char len[8];
  CELL_TRY(read_at(r, 0, len, 8, "the header length"));
  uint64_t h = 0;
  for (int i = 7; i >= 0; i--) h = (h << 8) | len[i]; /* little endian */
  r->hlen = h;
  if (h > CELL_ST_MAX_HEADER)
    return bad(r, "header length %llu exceeds the limit of %llu bytes", (unsigned long long)h,
               CELL_ST_MAX_HEADER);
  if (h > r->size - 8)
    return bad(r, "header length %llu runs past the end of the file (%llu bytes after the length)",
               (unsigned long long)h, (unsigned long long)(r->size - 8));
  if (h < 2) return bad(r, "header length %llu is too short for a JSON object", (unsigned long long)h);
  r->data_len = r->size - 8 - h;
  CELL_TRY(take(r, (size_t)h + 1, "the header", (void **)&r->header));
  CELL_TRY(read_at(r, 8, r->header, (size_t)h, "the header"));
  r->header[h] = '\0';
  size_t at = cell_io_utf8_check(r->header, (size_t)h);
  if (at != h) return bad(r, "the header is not valid UTF-8 (byte %zu of the header)", at);
  if (r->header[0] != '{') return bad(r, "the header does not start with '{' (not a safetensors file?)");
  r->p = r->header;
  r->stop = r->header + h;
  return CELL_OK;
}

/* --- JSON ------------------------------------------------------------------------ */

/* Nesting deeper than this (inside values nobody reads) is refused, as by
 * the reference reader's JSON parser. */
#define MAX_DEPTH 128

static cell_status not_json(const reader *r, const char *why) {
  return bad(r, "the header is not valid JSON (%s near byte %zu of the header)", why,
             (size_t)(r->p - r->header));
}

static void ws(reader *r) {
  while (r->p < r->stop && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int peek(reader *r) {
  ws(r);
  return r->p < r->stop ? (unsigned char)*r->p : -1;
}

static cell_status expect(reader *r, char c) {
  if (peek(r) != (unsigned char)c) {
    char why[32];
    snprintf(why, sizeof why, "'%c' expected", c);
    return not_json(r, why);
  }
  r->p++;
  return CELL_OK;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    v = v * 16 + (unsigned)d;
  }
  *out = v;
  return 1;
}

/* A JSON string, decoded into the arena (NUL-terminated); *off its offset,
 * *len its length, *nul whether it holds a NUL character. The decoded text
 * is never longer than the quoted one, so the arena grows with the header. */
static cell_status string(reader *r, size_t *off, size_t *len, int *nul) {
  if (peek(r) != '"') return not_json(r, "a string expected");
  r->p++;
  const char *q = r->p; /* the decoded text is at most as long as the quoted one */
  while (q < r->stop && *q != '"') q += *q == '\\' ? 2 : 1;
  size_t want = (size_t)((q < r->stop ? q : r->stop) - r->p) + 1;
  CELL_TRY(grow(r, (void **)&r->arena, r->arena_n, &r->arena_cap, 1, want, "the names"));
  char *o = r->arena + r->arena_n;
  *nul = 0;
  for (;;) {
    if (r->p >= r->stop) return not_json(r, "unterminated string");
    unsigned char c = (unsigned char)*r->p;
    if (c == '"') break;
    if (c < 0x20) return not_json(r, "control character in a string");
    if (c != '\\') {
      *o++ = (char)c;
      r->p++;
      continue;
    }
    if (r->stop - r->p < 2) return not_json(r, "unterminated string");
    char e = r->p[1];
    r->p += 2;
    switch (e) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '/': *o++ = '/'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'u': {
      unsigned cp, lo;
      if (r->stop - r->p < 4 || !hex4(r->p, &cp)) return not_json(r, "bad \\u escape");
      r->p += 4;
      if (cp >= 0xdc00 && cp <= 0xdfff) return not_json(r, "lone surrogate in a \\u escape");
      if (cp >= 0xd800 && cp <= 0xdbff) {
        if (r->stop - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || !hex4(r->p + 2, &lo) || lo < 0xdc00 ||
            lo > 0xdfff)
          return not_json(r, "lone surrogate in a \\u escape");
        r->p += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      }
      if (cp == 0) *nul = 1;
      if (cp < 0x80) {
        *o++ = (char)cp;
      } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
      } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
      } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
      }
      break;
    }
    default: r->p -= 2; return not_json(r, "bad escape in a string");
    }
  }
  r->p++; /* the closing quote */
  *o++ = '\0';
  *off = r->arena_n;
  *len = (size_t)(o - (r->arena + r->arena_n)) - 1;
  r->arena_n = (size_t)(o - r->arena);
  return CELL_OK;
}

/* The string just decoded at off no longer needed: give its room back. */
static void drop_string(reader *r, size_t off) { r->arena_n = off; }

/* A JSON number. *kind: 1 a non-negative integer below 2^63 (in *v), 2 a
 * larger one, 0 any other number (negative, fraction, exponent). */
static cell_status number(reader *r, uint64_t *v, int *kind) {
  const char *s = r->p;
  int neg = 0, frac = 0, big = 0;
  uint64_t x = 0;
  if (s < r->stop && *s == '-') neg = 1, s++;
  if (s >= r->stop || *s < '0' || *s > '9') return not_json(r, "bad number");
  if (*s == '0' && s + 1 < r->stop && s[1] >= '0' && s[1] <= '9') return not_json(r, "leading zero in a number");
  for (; s < r->stop && *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (x > (UINT64_C(0x7fffffffffffffff) - d) / 10) big = 1;
    else x = x * 10 + d;
  }
  if (s < r->stop && *s == '.') {
    frac = 1, s++;
    if (s >= r->stop || *s < '0' || *s > '9') return not_json(r, "bad number");
    while (s < r->stop && *s >= '0' && *s <= '9') s++;
  }
  if (s < r->stop && (*s == 'e' || *s == 'E')) {
    frac = 1, s++;
    if (s < r->stop && (*s == '+' || *s == '-')) s++;
    if (s >= r->stop || *s < '0' || *s > '9') return not_json(r, "bad number");
    while (s < r->stop && *s >= '0' && *s <= '9') s++;
  }
  r->p = s;
  *v = x;
  *kind = neg || frac ? 0 : big ? 2 : 1;
  return CELL_OK;
}

static cell_status literal(reader *r, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(r->stop - r->p) < n || memcmp(r->p, word, n) != 0) return not_json(r, "unexpected character");
  r->p += n;
  return CELL_OK;
}

/* Any JSON value, checked and skipped (unknown fields). */
static cell_status skip_value(reader *r, int depth) {
  int c = peek(r);
  size_t off, len;
  int nul;
  uint64_t v;
  int kind;
  switch (c) {
  case '"':
    CELL_TRY(string(r, &off, &len, &nul));
    drop_string(r, off);
    return CELL_OK;
  case '{':
  case '[':
    if (depth >= MAX_DEPTH) return not_json(r, "nested too deeply");
    r->p++;
    if (peek(r) == (c == '{' ? '}' : ']')) {
      r->p++;
      return CELL_OK;
    }
    for (;;) {
      if (c == '{') {
        CELL_TRY(string(r, &off, &len, &nul));
        drop_string(r, off);
        CELL_TRY(expect(r, ':'));
      }
      CELL_TRY(skip_value(r, depth + 1));
      int d = peek(r);
      if (d == ',') {
        r->p++;
        continue;
      }
      return expect(r, c == '{' ? '}' : ']');
    }
  case 't': return literal(r, "true");
  case 'f': return literal(r, "false");
  case 'n': return literal(r, "null");
  default:
    if (c == '-' || (c >= '0' && c <= '9')) return number(r, &v, &kind);
    return not_json(r, c < 0 ? "unexpected end" : "unexpected character");
  }
}

/* --- the entries ---------------------------------------------------------------- */

static const char *kind_name(int c) {
  return c == '"' ? "a string" : c == '{' ? "an object" : c == '[' ? "a list" : c == 'n' ? "null"
       : c == 't' || c == 'f' ? "a boolean" : "a number";
}

/* "shape": [n, ...], appended to the shape pool. */
static cell_status shape_list(reader *r, entry *e, const char *nm) {
  if (peek(r) != '[') {
    int c = peek(r);
    CELL_TRY(skip_value(r, 1));
    return bad(r, "tensor '%.200s' has a shape that is not a list (it is %s)", nm, kind_name(c));
  }
  r->p++;
  e->shape_at = r->shapes_n;
  e->ndim = 0;
  if (peek(r) == ']') {
    r->p++;
    return CELL_OK;
  }
  for (;;) {
    int c = peek(r);
    uint64_t v = 0;
    int kind = 0;
    if (c == '-' || (c >= '0' && c <= '9')) CELL_TRY(number(r, &v, &kind));
    else CELL_TRY(skip_value(r, 1));
    if (kind != 1)
      return bad(r, "tensor '%.200s' has a shape entry that is not a non-negative integer%s", nm,
                 kind == 2 ? " below 2^63" : "");
    if (e->ndim == CELL_MAX_DIMS) {
      int n = e->ndim;
      while (peek(r) == ',') { /* count them for the message */
        r->p++;
        CELL_TRY(skip_value(r, 1));
        n++;
      }
      return bad(r, "tensor '%.200s' has %d dimensions; cell supports at most %d", nm, n + 1, CELL_MAX_DIMS);
    }
    CELL_TRY(grow(r, (void **)&r->shapes, r->shapes_n, &r->shapes_cap, sizeof *r->shapes, 1, "the shapes"));
    r->shapes[r->shapes_n++] = (int64_t)v;
    e->ndim++;
    if (peek(r) == ',') {
      r->p++;
      continue;
    }
    return expect(r, ']');
  }
}

/* "data_offsets": [begin, end]. */
static cell_status offsets_list(reader *r, entry *e, const char *nm) {
  uint64_t v[2] = {0, 0};
  int n = 0, ok = peek(r) == '[';
  if (!ok) {
    CELL_TRY(skip_value(r, 1));
  } else {
    r->p++;
    if (peek(r) == ']') {
      r->p++;
      ok = 0;
    } else {
      for (;;) {
        int c = peek(r), kind = 0;
        uint64_t x = 0;
        if (c == '-' || (c >= '0' && c <= '9')) CELL_TRY(number(r, &x, &kind));
        else CELL_TRY(skip_value(r, 1));
        if (kind != 1) ok = 0;
        if (n < 2) v[n] = x;
        n++;
        if (peek(r) == ',') {
          r->p++;
          continue;
        }
        CELL_TRY(expect(r, ']'));
        break;
      }
    }
  }
  if (!ok || n != 2)
    return bad(r, "tensor '%.200s' has data_offsets that are not two non-negative integers", nm);
  e->begin = v[0];
  e->end = v[1];
  return CELL_OK;
}

/* The checks of one entry on its own: sizes against offsets and the file. */
static cell_status check_entry(reader *r, const entry *e, const char *nm) {
  char sb[256];
  const int64_t *shape = shape_of(r, e);
  const char *dn = cell_st_dtype_name((cell_dtype)e->dtype);
  if (e->end < e->begin)
    return bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] that end before they begin", nm,
               (unsigned long long)e->begin, (unsigned long long)e->end);
  /* The product of the non-zero sizes bounds the strides, zero-size
   * tensors' included: it must fit in an int64. */
  uint64_t need = (uint64_t)cell_dtype_size((cell_dtype)e->dtype);
  int zero = 0, over = 0;
  for (int i = 0; i < e->ndim; i++) {
    uint64_t d = (uint64_t)shape[i];
    if (d == 0) zero = 1;
    else if (need > (uint64_t)INT64_MAX / d) over = 1;
    else need *= d;
  }
  if (over)
    return bad(r, "tensor '%.200s' has shape %s of %s, too large for any file", nm,
               cell_io_shape_tuple(e->ndim, shape, sb, sizeof sb), dn);
  if (zero) need = 0; /* zero-size shapes need 0 bytes whatever the others */
  if (e->end - e->begin != need)
    return bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] but shape %s of %s needs %llu bytes", nm,
               (unsigned long long)e->begin, (unsigned long long)e->end,
               cell_io_shape_tuple(e->ndim, shape, sb, sizeof sb), dn, (unsigned long long)need);
  if (e->end > r->data_len)
    return bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] past the end of the data "
                  "(%llu bytes; truncated file?)", nm, (unsigned long long)e->begin,
               (unsigned long long)e->end, (unsigned long long)r->data_len);
  return CELL_OK;
}

/* A tensor entry: {"dtype": .., "shape": [..], "data_offsets": [b, e]},
 * other fields ignored (as by the reference reader), none twice. */
static cell_status parse_entry(reader *r, entry *e) {
  char nb[256];
  const char *nm = show(r, e->name, nb, sizeof nb);
  if (peek(r) != '{') {
    CELL_TRY(skip_value(r, 1));
    return bad(r, "tensor '%.200s' is not a JSON object", nm);
  }
  r->p++;
  int seen[3] = {0, 0, 0};
  static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
  if (peek(r) != '}')
    for (;;) {
      size_t off, len;
      int nul, which = -1;
      CELL_TRY(string(r, &off, &len, &nul));
      for (int k = 0; k < 3; k++)
        if (len == strlen(fields[k]) && memcmp(r->arena + off, fields[k], len) == 0) which = k;
      drop_string(r, off);
      CELL_TRY(expect(r, ':'));
      if (which >= 0 && seen[which]) return bad(r, "tensor '%.200s' has two \"%s\" fields", nm, fields[which]);
      if (which >= 0) seen[which] = 1;
      if (which == 0) {
        if (peek(r) != '"') {
          CELL_TRY(skip_value(r, 1));
          return bad(r, "tensor '%.200s' has a dtype that is not a string", nm);
        }
        CELL_TRY(string(r, &off, &len, &nul));
        const char *dn = r->arena + off;
        e->dtype = nul ? CELL_DTYPE_COUNT : (int)cell_st_dtype_from_name(dn);
        if (e->dtype == CELL_DTYPE_COUNT)
          return bad(r, "tensor '%.200s' has dtype '%.40s', which cell does not support "
                        "(F32, F64, F16, BF16, I8, U8, I16, I32, I64, BOOL)", nm, dn);
        drop_string(r, off);
      } else if (which == 1) {
        CELL_TRY(shape_list(r, e, nm));
      } else if (which == 2) {
        CELL_TRY(offsets_list(r, e, nm));
      } else {
        CELL_TRY(skip_value(r, 1));
      }
      if (peek(r) == ',') {
        r->p++;
        continue;
      }
      CELL_TRY(expect(r, '}'));
      break;
    }
  else
    r->p++;
  for (int k = 0; k < 3; k++)
    if (!seen[k]) return bad(r, "tensor '%.200s' has no \"%s\"", nm, fields[k]);
  return check_entry(r, e, nm);
}

/* "__metadata__": null, or an object of strings. */
static cell_status parse_metadata(reader *r) {
  if (r->meta_seen) return bad(r, "the header has two \"__metadata__\" entries");
  r->meta_seen = 1;
  int c = peek(r);
  if (c == 'n') return literal(r, "null");
  if (c != '{') {
    CELL_TRY(skip_value(r, 1));
    return bad(r, "\"__metadata__\" is not a JSON object");
  }
  r->p++;
  if (peek(r) == '}') {
    r->p++;
    return CELL_OK;
  }
  char kb[256];
  for (;;) {
    size_t koff, klen, voff, vlen;
    int knul, vnul;
    CELL_TRY(string(r, &koff, &klen, &knul));
    CELL_TRY(expect(r, ':'));
    if (knul) return bad(r, "metadata key '%.200s\\u0000...' holds a NUL character", show(r, koff, kb, sizeof kb));
    if (peek(r) != '"') {
      CELL_TRY(skip_value(r, 1));
      return bad(r, "metadata entry '%.200s' is not a string", show(r, koff, kb, sizeof kb));
    }
    CELL_TRY(string(r, &voff, &vlen, &vnul));
    if (vnul)
      return bad(r, "metadata value of '%.200s' holds a NUL character (\\u0000)", show(r, koff, kb, sizeof kb));
    CELL_TRY(grow(r, (void **)&r->meta, r->n_meta, &r->meta_cap, sizeof *r->meta, 1, "the metadata"));
    r->meta[r->n_meta].key = koff;
    r->meta[r->n_meta].value = voff;
    r->n_meta++;
    if (peek(r) == ',') {
      r->p++;
      continue;
    }
    return expect(r, '}');
  }
}

static cell_status parse_header(reader *r) {
  CELL_TRY(expect(r, '{'));
  if (peek(r) == '}') {
    r->p++;
  } else {
    char nb[256];
    for (;;) {
      size_t off, len;
      int nul;
      CELL_TRY(string(r, &off, &len, &nul));
      CELL_TRY(expect(r, ':'));
      if (!nul && len == 12 && memcmp(r->arena + off, "__metadata__", 12) == 0) {
        drop_string(r, off);
        CELL_TRY(parse_metadata(r));
      } else {
        if (len == 0) return bad(r, "a tensor has an empty name");
        if (nul)
          return bad(r, "tensor name '%.200s\\u0000...' holds a NUL character", show(r, off, nb, sizeof nb));
        CELL_TRY(grow(r, (void **)&r->entries, r->n, &r->n_cap, sizeof *r->entries, 1, "the header's entries"));
        entry *e = &r->entries[r->n];
        memset(e, 0, sizeof *e);
        e->name = off;
        CELL_TRY(parse_entry(r, e));
        r->n++;
        if (r->n > (size_t)INT32_MAX) return bad(r, "the header has more than %d tensors", INT32_MAX);
      }
      if (peek(r) == ',') {
        r->p++;
        continue;
      }
      CELL_TRY(expect(r, '}'));
      break;
    }
  }
  /* Writers pad the header with spaces; JSON whitespace may follow the
   * object, nothing else. */
  ws(r);
  if (r->p < r->stop) return bad(r, "the header has %zu bytes after its JSON object", (size_t)(r->stop - r->p));
  return CELL_OK;
}

/* --- the entries together ------------------------------------------------------- */

/* A name and its entry, for sorting by name (the arena no longer moves). */
typedef struct named {
  const char *s;
  const entry *e;
} named;

static int by_name(const void *a, const void *b) {
  return strcmp(((const named *)a)->s, ((const named *)b)->s);
}

static int by_begin(const void *a, const void *b) {
  const entry *x = ((const named *)a)->e, *y = ((const named *)b)->e;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* The metadata keys are unique (sorted, so a huge header costs n log n). */
static cell_status check_meta_keys(reader *r) {
  if (r->n_meta < 2) return CELL_OK;
  const char **v;
  size_t nb = sizeof *v * r->n_meta;
  CELL_TRY(take(r, nb, "the metadata's index", (void **)&v));
  for (size_t i = 0; i < r->n_meta; i++) v[i] = r->arena + r->meta[i].key;
  qsort(v, r->n_meta, sizeof *v, cell_io_by_string);
  cell_status s = CELL_OK;
  for (size_t i = 1; i < r->n_meta && !s; i++)
    if (strcmp(v[i - 1], v[i]) == 0) s = bad(r, "metadata key '%.200s' appears twice", v[i]);
  give(r, v, nb);
  return s;
}

/* Names unique; ranges in order of their offsets follow each other from 0
 * to the end of the data, with no overlap and no gap (the format's rule: a
 * byte of the data section belongs to exactly one tensor). */
static cell_status check_together(reader *r) {
  if (r->n == 0) {
    if (r->data_len)
      return bad(r, "the data section holds %llu bytes but the header names no tensor",
                 (unsigned long long)r->data_len);
    return CELL_OK;
  }
  named *v;
  size_t nb = sizeof *v * r->n;
  CELL_TRY(take(r, nb, "the header's index", (void **)&v));
  for (size_t i = 0; i < r->n; i++) v[i].s = NAME(r, &r->entries[i]), v[i].e = &r->entries[i];
  cell_status s = CELL_OK;
  char n1[256], n2[256];
  qsort(v, r->n, sizeof *v, by_name);
  for (size_t i = 1; i < r->n && !s; i++)
    if (strcmp(v[i - 1].s, v[i].s) == 0) s = bad(r, "tensor name '%.200s' appears twice", v[i].s);
  if (!s) {
    qsort(v, r->n, sizeof *v, by_begin);
    const entry *last = NULL; /* the non-empty range reaching furthest so far */
    for (size_t i = 0; i < r->n && !s; i++) {
      const entry *e = v[i].e;
      if (e->begin == e->end) continue;
      if (last && e->begin < last->end)
        s = bad(r, "tensors '%.200s' [%llu, %llu] and '%.200s' [%llu, %llu] overlap", show(r, last->name, n1, sizeof n1),
                (unsigned long long)last->begin, (unsigned long long)last->end, show(r, e->name, n2, sizeof n2),
                (unsigned long long)e->begin, (unsigned long long)e->end);
      if (!last || e->end > last->end) last = e;
    }
  }
  uint64_t at = 0; /* where the next range must begin */
  for (size_t i = 0; i < r->n && !s; i++) {
    const entry *e = v[i].e;
    if (e->begin > at)
      s = bad(r, "the data has a gap: bytes [%llu, %llu) before tensor '%.200s' belong to no tensor",
              (unsigned long long)at, (unsigned long long)e->begin, show(r, e->name, n1, sizeof n1));
    else if (e->begin < at)
      s = bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] inside the data of another tensor "
                 "(the data before it ends at %llu)", show(r, e->name, n1, sizeof n1),
              (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)at);
    at = e->end;
  }
  if (!s && at != r->data_len)
    s = bad(r, "the data section holds %llu bytes but its tensors end at %llu: %llu bytes belong to no tensor",
            (unsigned long long)r->data_len, (unsigned long long)at, (unsigned long long)(r->data_len - at));
  give(r, v, nb);
  return s;
}

/* --- the result ----------------------------------------------------------------- */

void cell_safetensors_free(cell_safetensors *st) {
  if (!st) return;
  for (int i = 0; i < st->count; i++) {
    if (st->tensors) cell_tensor_release(st->tensors[i]);
    if (st->names) cell_dealloc(st->names[i]);
  }
  for (int i = 0; i < st->meta_count; i++) {
    if (st->meta_keys) cell_dealloc(st->meta_keys[i]);
    if (st->meta_values) cell_dealloc(st->meta_values[i]);
  }
  cell_dealloc(st->names);
  cell_dealloc(st->tensors);
  cell_dealloc(st->meta_keys);
  cell_dealloc(st->meta_values);
  cell_dealloc(st);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = cell_alloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Pointer arrays of n slots, zeroed (n may be 0). */
static void *slots(size_t n) { return cell_alloc_zero(sizeof(void *) * (n ? n : 1)); }

/* The memory the result will take, checked against the budget before any
 * of it is allocated. */
static cell_status check_result_size(reader *r) {
  uint64_t need = 4 * block_cost(sizeof(void *) * (r->n + r->n_meta));
  for (size_t i = 0; i < r->n; i++) {
    const entry *e = &r->entries[i];
    need += block_cost(strlen(NAME(r, e)) + 1) + block_cost(sizeof(cell_tensor)) +
            block_cost(128 + (e->end - e->begin));
  }
  for (size_t i = 0; i < r->n_meta; i++)
    need += block_cost(strlen(r->arena + r->meta[i].key) + 1) + block_cost(strlen(r->arena + r->meta[i].value) + 1);
  if (need > r->budget - r->used) {
    char what[64];
    snprintf(what, sizeof what, "%zu tensors", r->n);
    return over_budget(r, what, need);
  }
  r->used += need;
  return CELL_OK;
}

static cell_status read_data(reader *r, const entry *e, cell_tensor *t) {
  size_t nbytes = (size_t)(e->end - e->begin);
  if (nbytes == 0) return CELL_OK;
  char *p = cell_tensor_data_ptr(t), what[256];
  snprintf(what, sizeof what, "tensor '%.200s'", NAME(r, e));
  CELL_TRY(read_at(r, 8 + r->hlen + e->begin, p, nbytes, what));
  if (e->dtype == CELL_DTYPE_BOOL)
    for (size_t i = 0; i < nbytes; i++) p[i] = p[i] != 0;
  return CELL_OK;
}

static cell_status build(reader *r) {
  CELL_TRY(check_result_size(r));
  cell_safetensors *st = cell_alloc_zero(sizeof *st);
  if (!st) return no_memory(r, "the result");
  r->out = st;
  st->names = slots(r->n);
  st->tensors = slots(r->n);
  st->meta_keys = slots(r->n_meta);
  st->meta_values = slots(r->n_meta);
  if (!st->names || !st->tensors || !st->meta_keys || !st->meta_values) return no_memory(r, "the result");
  for (size_t i = 0; i < r->n_meta; i++) {
    st->meta_count++;
    st->meta_keys[i] = dup_str(r->arena + r->meta[i].key);
    st->meta_values[i] = dup_str(r->arena + r->meta[i].value);
    if (!st->meta_keys[i] || !st->meta_values[i]) return no_memory(r, "the metadata");
  }
  char sb[256];
  for (size_t i = 0; i < r->n; i++) {
    const entry *e = &r->entries[i];
    st->count++;
    st->names[i] = dup_str(NAME(r, e));
    if (!st->names[i]) return no_memory(r, "the tensor names");
    const int64_t *shape = shape_of(r, e);
    char op[256];
    snprintf(op, sizeof op, "tensor '%.200s'", NAME(r, e));
    if (cell_shape_numel_checked(op, e->ndim, shape, NULL) != CELL_OK)
      return bad(r, "%s", cell_last_error());
    if (cell_tensor_empty((cell_dtype)e->dtype, e->ndim, shape, &st->tensors[i]) != CELL_OK)
      return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory for tensor '%.200s' of shape %s",
                        r->path, NAME(r, e), cell_io_shape_tuple(e->ndim, shape, sb, sizeof sb));
    CELL_TRY(read_data(r, e, st->tensors[i]));
  }
  return CELL_OK;
}

static cell_status load(reader *r, cell_safetensors **out) {
  if (!cell_io_little_endian())
    return cell_error(CELL_ERR_NOTIMPL, "safetensors: big-endian hosts are not supported");
  cell_status s = r->mem ? CELL_OK : open_file(r);
  if (!s) s = read_header(r);
  if (!s) s = parse_header(r);
  if (!s) { /* the header's text is no longer needed */
    give(r, r->header, (size_t)r->hlen + 1);
    r->header = NULL;
  }
  if (!s) s = check_meta_keys(r);
  if (!s) s = check_together(r);
  if (!s) s = build(r);
  if (r->f) fclose(r->f);
  cell_dealloc(r->header);
  cell_dealloc(r->arena);
  cell_dealloc(r->shapes);
  cell_dealloc(r->entries);
  cell_dealloc(r->meta);
  if (s) {
    cell_safetensors_free(r->out);
    return s;
  }
  *out = r->out;
  return CELL_OK;
}

cell_status cell_safetensors_load(const char *path, cell_safetensors **out) {
  if (!path || !out) return cell_error(CELL_ERR_VALUE, "safetensors: no path given");
  reader r;
  memset(&r, 0, sizeof r);
  r.path = path;
  return load(&r, out);
}

cell_status cell_st_load_mem(const char *name, const void *p, size_t n, cell_safetensors **out) {
  if (!name || (!p && n) || !out) return cell_error(CELL_ERR_VALUE, "safetensors: no data given");
  static const unsigned char none[1] = {0};
  reader r;
  memset(&r, 0, sizeof r);
  r.path = name;
  r.mem = p ? p : none;
  r.size = n;
  return load(&r, out);
}
