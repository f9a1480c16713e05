/* safetensors_read.c - cell_safetensors_load: the header is checked field by
 * field (length, UTF-8, JSON, every entry, the ranges together) before a
 * single data byte is read or a tensor allocated; then the data is read
 * tensor by tensor. A hostile or truncated file is a ValueError naming the
 * file and the fault, never a crash or an outsized allocation. */
#include "cell_io.h"
#include "io.h"
#include "../core/alloc.h"
#include "../core/tensor.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One tensor's header entry, checked. */
typedef struct entry {
  const char *name; /* points into the cJSON tree */
  cell_dtype dtype;
  int ndim;
  int64_t shape[CELL_MAX_DIMS];
  uint64_t begin, end; /* [begin, end) in the data section */
} entry;

typedef struct reader {
  const char *path;
  FILE *f;
  uint64_t size;      /* of the file */
  uint64_t hlen;      /* of the JSON header */
  uint64_t data_len;  /* of the data section */
  char *header;       /* hlen + 1 bytes, NUL-terminated */
  cJSON *root;
  entry *entries;
  int n;
  const cJSON *meta;  /* the "__metadata__" object, or NULL */
  int n_meta;
  cell_safetensors *out;
} reader;

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

/* --- the header ------------------------------------------------------------ */

static cell_status open_file(reader *r) {
  r->f = fopen(r->path, "rb");
  if (!r->f) return bad(r, "cannot open: %s", strerror(errno));
  struct stat sb;
  if (fstat(fileno(r->f), &sb) != 0) return bad(r, "cannot stat: %s", strerror(errno));
  if (!S_ISREG(sb.st_mode)) return bad(r, "not a regular file");
  r->size = (uint64_t)sb.st_size;
  if (r->size < 8)
    return bad(r, "the file is %llu bytes, too short for the 8-byte header length",
               (unsigned long long)r->size);
  unsigned char len[8];
  if (fread(len, 1, 8, r->f) != 8) return bad(r, "cannot read the header length");
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
  r->header = cell_alloc((size_t)h + 1);
  if (!r->header) return no_memory(r, "the header");
  if (fread(r->header, 1, (size_t)h, r->f) != (size_t)h) return bad(r, "cannot read the header");
  r->header[h] = '\0';
  return CELL_OK;
}

static cell_status parse_json(reader *r) {
  size_t n = (size_t)r->hlen, at = cell_io_utf8_check(r->header, n);
  if (at != n) return bad(r, "the header is not valid UTF-8 (byte %zu of the header)", at);
  if (r->header[0] != '{') return bad(r, "the header does not start with '{' (not a safetensors file?)");
  const char *end = NULL;
  r->root = cJSON_ParseWithLengthOpts(r->header, n, &end, 0);
  if (!r->root) {
    size_t pos = end && end >= r->header ? (size_t)(end - r->header) : 0;
    return bad(r, "the header is not valid JSON (error near byte %zu of the header)", pos);
  }
  /* Writers pad the header with spaces; JSON whitespace may follow the
   * object, nothing else. */
  const char *stop = r->header + n;
  while (end && end < stop && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
  if (end && end < stop)
    return bad(r, "the header has %zu bytes after its JSON object", (size_t)(stop - end));
  if (!cJSON_IsObject(r->root)) return bad(r, "the header is not a JSON object");
  return CELL_OK;
}

/* A JSON number that is an integer in [0, 2^53] (exact in a double). */
static int as_count(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j)) return 0;
  double v = j->valuedouble;
  if (!(v >= 0) || v > 9007199254740992.0 || v != floor(v)) return 0;
  *out = (uint64_t)v;
  return 1;
}

static cell_status check_entry(reader *r, const cJSON *obj, entry *e) {
  const char *nm = e->name;
  if (!cJSON_IsObject(obj)) return bad(r, "tensor '%.200s' is not a JSON object", nm);
  const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
  for (const cJSON *c = obj->child; c; c = c->next) {
    const cJSON **slot = strcmp(c->string, "dtype") == 0          ? &dtype
                         : strcmp(c->string, "shape") == 0        ? &shape
                         : strcmp(c->string, "data_offsets") == 0 ? &offsets
                                                                  : NULL;
    if (!slot) continue; /* unknown fields are ignored, as by the reference reader */
    if (*slot) return bad(r, "tensor '%.200s' has two \"%s\" fields", nm, c->string);
    *slot = c;
  }
  if (!dtype) return bad(r, "tensor '%.200s' has no \"dtype\"", nm);
  if (!shape) return bad(r, "tensor '%.200s' has no \"shape\"", nm);
  if (!offsets) return bad(r, "tensor '%.200s' has no \"data_offsets\"", nm);
  if (!cJSON_IsString(dtype)) return bad(r, "tensor '%.200s' has a dtype that is not a string", nm);
  e->dtype = cell_st_dtype_from_name(dtype->valuestring);
  if (e->dtype == CELL_DTYPE_COUNT)
    return bad(r, "tensor '%.200s' has dtype '%.40s', which cell does not support "
                  "(F32, F64, F16, BF16, I8, U8, I32, I64, BOOL)", nm, dtype->valuestring);
  if (!cJSON_IsArray(shape)) return bad(r, "tensor '%.200s' has a shape that is not a list", nm);
  int nd = cJSON_GetArraySize(shape);
  if (nd > CELL_MAX_DIMS)
    return bad(r, "tensor '%.200s' has %d dimensions; cell supports at most %d", nm, nd, CELL_MAX_DIMS);
  e->ndim = 0;
  for (const cJSON *c = shape->child; c; c = c->next) {
    uint64_t v;
    if (!as_count(c, &v))
      return bad(r, "tensor '%.200s' has a shape entry that is not a non-negative integer", nm);
    e->shape[e->ndim++] = (int64_t)v;
  }
  if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
      !as_count(offsets->child, &e->begin) || !as_count(offsets->child->next, &e->end))
    return bad(r, "tensor '%.200s' has data_offsets that are not two non-negative integers", nm);
  char sb[256];
  if (e->end < e->begin)
    return bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] that end before they begin", nm,
               (unsigned long long)e->begin, (unsigned long long)e->end);
  uint64_t need = (uint64_t)cell_dtype_size(e->dtype);
  for (int i = 0; i < e->ndim; i++) {
    uint64_t d = (uint64_t)e->shape[i];
    if (d && need > UINT64_MAX / d) {
      return bad(r, "tensor '%.200s' has shape %s of %s, too large for any file", nm,
                 cell_io_shape_tuple(e->ndim, e->shape, sb, sizeof sb), dtype->valuestring);
    }
    need *= d;
  }
  /* Zero-size shapes need 0 bytes whatever the element size. */
  if (cell_shape_numel(e->ndim, e->shape) == 0) need = 0;
  if (e->end - e->begin != need)
    return bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] but shape %s of %s needs %llu bytes",
               nm, (unsigned long long)e->begin, (unsigned long long)e->end,
               cell_io_shape_tuple(e->ndim, e->shape, sb, sizeof sb), dtype->valuestring,
               (unsigned long long)need);
  if (e->end > r->data_len)
    return bad(r, "tensor '%.200s' has data_offsets [%llu, %llu] past the end of the data "
                  "(%llu bytes; truncated file?)", nm, (unsigned long long)e->begin,
               (unsigned long long)e->end, (unsigned long long)r->data_len);
  return CELL_OK;
}

static cell_status check_metadata(reader *r, const cJSON *m) {
  if (r->meta) return bad(r, "the header has two \"__metadata__\" entries");
  if (cJSON_IsNull(m)) return CELL_OK;
  if (!cJSON_IsObject(m)) return bad(r, "\"__metadata__\" is not a JSON object");
  r->meta = m;
  for (const cJSON *c = m->child; c; c = c->next) {
    if (!cJSON_IsString(c)) return bad(r, "metadata entry '%.200s' is not a string", c->string);
    r->n_meta++;
  }
  return CELL_OK;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The metadata keys are unique (sorted, so a huge header costs n log n). */
static cell_status check_meta_keys(reader *r) {
  if (r->n_meta < 2) return CELL_OK;
  const char **v = cell_alloc(sizeof *v * (size_t)r->n_meta);
  if (!v) return no_memory(r, "the metadata's index");
  int k = 0;
  for (const cJSON *c = r->meta->child; c; c = c->next) v[k++] = c->string;
  qsort(v, (size_t)k, sizeof *v, by_string);
  cell_status s = CELL_OK;
  for (int i = 1; i < k && !s; i++)
    if (strcmp(v[i - 1], v[i]) == 0) s = bad(r, "metadata key '%.200s' appears twice", v[i]);
  cell_dealloc(v);
  return s;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const entry *const *)a)->name, (*(const entry *const *)b)->name);
}

static int by_begin(const void *a, const void *b) {
  const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Names unique and ranges disjoint, through one sorted array of pointers. */
static cell_status check_together(reader *r) {
  if (r->n < 2) return CELL_OK;
  entry **v = cell_alloc(sizeof *v * (size_t)r->n);
  if (!v) return no_memory(r, "the header's index");
  for (int i = 0; i < r->n; i++) v[i] = &r->entries[i];
  cell_status s = CELL_OK;
  qsort(v, (size_t)r->n, sizeof *v, by_name);
  for (int i = 1; i < r->n && !s; i++)
    if (strcmp(v[i - 1]->name, v[i]->name) == 0)
      s = bad(r, "tensor name '%.200s' appears twice", v[i]->name);
  if (!s) {
    qsort(v, (size_t)r->n, sizeof *v, by_begin);
    const entry *last = NULL; /* the non-empty range reaching furthest so far */
    for (int i = 0; i < r->n && !s; i++) {
      const entry *e = v[i];
      if (e->begin == e->end) continue;
      if (last && e->begin < last->end)
        s = bad(r, "tensors '%.200s' [%llu, %llu] and '%.200s' [%llu, %llu] overlap", last->name,
                (unsigned long long)last->begin, (unsigned long long)last->end, e->name,
                (unsigned long long)e->begin, (unsigned long long)e->end);
      if (!last || e->end > last->end) last = e;
    }
  }
  cell_dealloc(v);
  return s;
}

static cell_status check_header(reader *r) {
  int count = 0;
  for (const cJSON *c = r->root->child; c; c = c->next)
    if (strcmp(c->string, "__metadata__") != 0) count++;
  r->entries = cell_alloc(sizeof *r->entries * (size_t)(count ? count : 1));
  if (!r->entries) return no_memory(r, "the header's entries");
  for (const cJSON *c = r->root->child; c; c = c->next) {
    if (strcmp(c->string, "__metadata__") == 0) {
      CELL_TRY(check_metadata(r, c));
      continue;
    }
    entry *e = &r->entries[r->n++];
    e->name = c->string;
    CELL_TRY(check_entry(r, c, e));
  }
  CELL_TRY(check_meta_keys(r));
  return check_together(r);
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

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = cell_alloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Pointer arrays of n slots, zeroed (n may be 0). */
static void *slots(int n) { return cell_alloc_zero(sizeof(void *) * (size_t)(n ? n : 1)); }

static cell_status read_data(reader *r, const entry *e, cell_tensor *t) {
  size_t nbytes = (size_t)(e->end - e->begin);
  if (nbytes == 0) return CELL_OK;
  if (fseeko(r->f, (off_t)(8 + r->hlen + e->begin), SEEK_SET) != 0)
    return bad(r, "cannot seek to tensor '%.200s': %s", e->name, strerror(errno));
  char *p = cell_tensor_data_ptr(t);
  volatile int *intr = &cell_ctx()->interrupt;
  for (size_t done = 0; done < nbytes;) {
    if (*intr) return cell_error(CELL_ERR_INTERRUPT, "safetensors: %s: loading interrupted", r->path);
    size_t want = nbytes - done < CELL_IO_CHUNK ? nbytes - done : CELL_IO_CHUNK;
    size_t got = fread(p + done, 1, want, r->f);
    if (got != want) {
      if (ferror(r->f)) return bad(r, "cannot read tensor '%.200s': %s", e->name, strerror(errno));
      return bad(r, "the file ended inside tensor '%.200s' (did it change while being read?)", e->name);
    }
    done += got;
  }
  if (e->dtype == CELL_DTYPE_BOOL)
    for (size_t i = 0; i < nbytes; i++) p[i] = p[i] != 0;
  return CELL_OK;
}

static cell_status build(reader *r) {
  cell_safetensors *st = cell_alloc_zero(sizeof *st);
  if (!st) return no_memory(r, "the result");
  r->out = st;
  st->names = slots(r->n);
  st->tensors = slots(r->n);
  st->meta_keys = slots(r->n_meta);
  st->meta_values = slots(r->n_meta);
  if (!st->names || !st->tensors || !st->meta_keys || !st->meta_values) return no_memory(r, "the result");
  if (r->meta)
    for (const cJSON *c = r->meta->child; c; c = c->next) {
      int i = st->meta_count++;
      st->meta_keys[i] = dup(c->string);
      st->meta_values[i] = dup(c->valuestring);
      if (!st->meta_keys[i] || !st->meta_values[i]) return no_memory(r, "the metadata");
    }
  char sb[256];
  for (int i = 0; i < r->n; i++) {
    const entry *e = &r->entries[i];
    st->count++;
    st->names[i] = dup(e->name);
    if (!st->names[i]) return no_memory(r, "the tensor names");
    char op[256];
    snprintf(op, sizeof op, "tensor '%.200s'", e->name);
    if (cell_shape_numel_checked(op, e->ndim, e->shape, NULL) != CELL_OK)
      return bad(r, "%s", cell_last_error());
    if (cell_tensor_empty(e->dtype, e->ndim, e->shape, &st->tensors[i]) != CELL_OK)
      return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory for tensor '%.200s' of shape %s",
                        r->path, e->name, cell_io_shape_tuple(e->ndim, e->shape, sb, sizeof sb));
    CELL_TRY(read_data(r, e, st->tensors[i]));
  }
  return CELL_OK;
}

cell_status cell_safetensors_load(const char *path, cell_safetensors **out) {
  if (!path || !out) return cell_error(CELL_ERR_VALUE, "safetensors: no path given");
  if (!cell_io_little_endian())
    return cell_error(CELL_ERR_NOTIMPL, "safetensors: big-endian hosts are not supported");
  reader r;
  memset(&r, 0, sizeof r);
  r.path = path;
  cell_status s = open_file(&r);
  if (!s) s = parse_json(&r);
  if (!s) s = check_header(&r);
  if (!s) s = build(&r);
  if (r.f) fclose(r.f);
  cJSON_Delete(r.root);
  cell_dealloc(r.entries);
  cell_dealloc(r.header);
  if (s) {
    cell_safetensors_free(r.out);
    return s;
  }
  *out = r.out;
  return CELL_OK;
}
