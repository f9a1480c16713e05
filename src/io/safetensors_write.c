/* safetensors_write.c - cell_safetensors_save: the header is built in
 * memory (by hand: exact 64-bit offsets, and every byte from the engine's
 * allocator, so failed allocations can be tested), then header and data go
 * to a temporary file beside the target (through symlinks: the link's
 * target is replaced), with the target's permissions, which is flushed,
 * fsync'd and renamed over it, the folder synced before and after. A
 * failure at any step removes the temporary file and leaves the target as
 * it was; temporary files of savers that were killed are removed by the
 * next save to the same place. */
#include "cell_io.h"
#include "io.h"
#include "../core/alloc.h"
#include "../ops/kernels.h"
#include "../core/tensor.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- a growable byte buffer ---------------------------------------------------- */

typedef struct buf {
  char *p;
  size_t n, cap;
  int oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->oom || n == 0) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    char *p = cell_alloc(cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    if (b->n) memcpy(p, b->p, b->n);
    cell_dealloc(b->p);
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void put_str(buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_u64(buf *b, uint64_t v) {
  char t[24];
  snprintf(t, sizeof t, "%llu", (unsigned long long)v);
  put_str(b, t);
}

/* s as a JSON string: quotes, backslashes and control characters escaped;
 * other bytes (UTF-8, checked by the caller) as they are. */
static void put_json_string(buf *b, const char *s) {
  put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char e[8];
    if (*p == '"' || *p == '\\') {
      e[0] = '\\', e[1] = (char)*p;
      put(b, e, 2);
    } else if (*p < 0x20) {
      snprintf(e, sizeof e, "\\u%04x", *p);
      put(b, e, 6);
    } else {
      put(b, (const char *)p, 1);
    }
  }
  put(b, "\"", 1);
}

/* --- checks ---------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static cell_status bad(const char *path, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cell_error(CELL_ERR_VALUE, "safetensors: %s: %s", path, msg);
}

/* No name twice among v[0..n) (what names "tensor name" or "metadata key"). */
static cell_status unique(const char *path, const char *what, int n, const char *const *v) {
  if (n < 2) return CELL_OK;
  const char **s = cell_alloc(sizeof *s * (size_t)n);
  if (!s) return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory checking names", path);
  memcpy(s, v, sizeof *s * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, cell_io_by_string);
  cell_status st = CELL_OK;
  for (int i = 1; i < n && !st; i++)
    if (strcmp(s[i - 1], s[i]) == 0) st = bad(path, "%s '%.200s' appears twice", what, s[i]);
  cell_dealloc(s);
  return st;
}

static cell_status check_text(const char *path, const char *what, const char *s) {
  size_t n = strlen(s);
  if (cell_io_utf8_check(s, n) != n) return bad(path, "%s '%.200s' is not valid UTF-8", what, s);
  return CELL_OK;
}

static cell_status check_args(const char *path, int count, const char *const *names,
                              cell_tensor *const *tensors, int meta_count,
                              const char *const *keys, const char *const *values) {
  if (count < 0 || meta_count < 0 || (count && (!names || !tensors)) ||
      (meta_count && (!keys || !values)))
    return bad(path, "bad tensor or metadata arrays");
  for (int i = 0; i < count; i++) {
    if (!names[i] || !names[i][0]) return bad(path, "tensor %d has an empty name", i + 1);
    if (strcmp(names[i], "__metadata__") == 0)
      return bad(path, "the name '__metadata__' is reserved for the metadata");
    CELL_TRY(check_text(path, "tensor name", names[i]));
    if (!tensors[i]) return bad(path, "tensor '%.200s' is missing", names[i]);
  }
  for (int i = 0; i < meta_count; i++) {
    if (!keys[i] || !values[i]) return bad(path, "metadata entry %d is missing", i + 1);
    CELL_TRY(check_text(path, "metadata key", keys[i]));
    CELL_TRY(check_text(path, "metadata value", values[i]));
  }
  CELL_TRY(unique(path, "tensor name", count, names));
  return unique(path, "metadata key", meta_count, keys);
}

/* --- the header ------------------------------------------------------------------- */

/* {"__metadata__":{...},"name":{"dtype":..,"shape":[..],"data_offsets":[b,e]},...}
 * padded with spaces so the data starts at a multiple of 8 bytes. */
static cell_status make_header(const char *path, int count, const char *const *names,
                               cell_tensor *const *tensors, int meta_count,
                               const char *const *keys, const char *const *values, buf *b) {
  put(b, "{", 1);
  if (meta_count) {
    put_str(b, "\"__metadata__\":{");
    for (int i = 0; i < meta_count; i++) {
      if (i) put(b, ",", 1);
      put_json_string(b, keys[i]);
      put(b, ":", 1);
      put_json_string(b, values[i]);
    }
    put(b, "}", 1);
  }
  uint64_t offset = 0;
  for (int i = 0; i < count; i++) {
    const cell_tensor *t = tensors[i];
    if (i || meta_count) put(b, ",", 1);
    put_json_string(b, names[i]);
    put_str(b, ":{\"dtype\":\"");
    put_str(b, cell_st_dtype_name(t->dtype));
    put_str(b, "\",\"shape\":[");
    for (int d = 0; d < t->ndim; d++) {
      if (d) put(b, ",", 1);
      put_u64(b, (uint64_t)t->shape[d]);
    }
    put_str(b, "],\"data_offsets\":[");
    put_u64(b, offset);
    put(b, ",", 1);
    offset += cell_tensor_nbytes(t);
    put_u64(b, offset);
    put_str(b, "]}");
  }
  put(b, "}", 1);
  while (!b->oom && (8 + b->n) % 8) put(b, " ", 1);
  if (b->oom) return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory building the header", path);
  if (b->n > CELL_ST_MAX_HEADER)
    return bad(path, "the header would be %zu bytes, over the limit of %llu", b->n, CELL_ST_MAX_HEADER);
  return CELL_OK;
}

/* --- the file ----------------------------------------------------------------------- */

typedef struct writer {
  const char *path;  /* as given, for messages */
  char *target;      /* the file replaced: path, or the end of its chain of symlinks */
  char *tmp;         /* the temporary file's name */
  FILE *f;
  buf *mem;          /* cell_st_save_mem: the bytes go here instead */
} writer;

static cell_status sys_fail(const writer *w, const char *what) {
  return cell_error(CELL_ERR_RUNTIME, "safetensors: %s: cannot %s: %s", w->path, what, strerror(errno));
}

static cell_status no_memory(const writer *w) {
  return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory", w->path);
}

static char *dup_n(const char *s, size_t n) {
  char *p = cell_alloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* The folder part of p ("." when none), in dir of size cap; 0 if too long. */
static int folder_of(const char *p, char *dir, size_t cap) {
  const char *slash = strrchr(p, '/');
  size_t n = !slash ? 1 : slash == p ? 1 : (size_t)(slash - p);
  if (n + 1 > cap) return 0;
  memcpy(dir, slash ? p : ".", n);
  dir[n] = '\0';
  return 1;
}

/* w->target: path with its symlinks followed (a save through a link
 * replaces what the link points to, and the link stays), up to 40 links
 * as the system allows; a dangling link names the file to create. */
static cell_status resolve(writer *w) {
  char *cur = dup_n(w->path, strlen(w->path));
  if (!cur) return no_memory(w);
  for (int hops = 0;; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break;
    if (hops == 40) {
      cell_dealloc(cur);
      errno = ELOOP;
      return sys_fail(w, "follow its symbolic links");
    }
    char link[4096];
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0) {
      cell_dealloc(cur);
      return sys_fail(w, "read its symbolic link");
    }
    link[n] = '\0';
    char *next;
    const char *slash = strrchr(cur, '/');
    if (link[0] == '/' || !slash) {
      next = dup_n(link, (size_t)n);
    } else { /* relative to the link's folder */
      size_t d = (size_t)(slash - cur) + 1;
      next = cell_alloc(d + (size_t)n + 1);
      if (next) {
        memcpy(next, cur, d);
        memcpy(next + d, link, (size_t)n + 1);
      }
    }
    cell_dealloc(cur);
    if (!next) return no_memory(w);
    cur = next;
  }
  w->target = cur;
  return CELL_OK;
}

/* Remove "<target>.tmp.<pid>.<n>" files left by savers that died (killed
 * mid-save): those whose process no longer exists. Best effort. */
static void remove_stale(const writer *w) {
  char dir[4096];
  if (!folder_of(w->target, dir, sizeof dir)) return;
  const char *slash = strrchr(w->target, '/');
  const char *base = slash ? slash + 1 : w->target;
  size_t bn = strlen(base);
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    const char *nm = e->d_name;
    if (strncmp(nm, base, bn) != 0 || strncmp(nm + bn, ".tmp.", 5) != 0) continue;
    char *end;
    errno = 0;
    long pid = strtol(nm + bn + 5, &end, 10);
    if (errno || pid <= 0 || end == nm + bn + 5 || *end != '.' || !end[1]) continue;
    char *end2;
    (void)strtoul(end + 1, &end2, 10);
    if (*end2) continue;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char full[4096 + 512];
    snprintf(full, sizeof full, "%s/%s", dir, nm);
    (void)unlink(full);
  }
  closedir(d);
}

/* The target's folder flushed to the disk (best effort: some file systems
 * cannot sync a folder). */
static void sync_folder(const writer *w) {
  char dir[4096];
  if (!folder_of(w->target, dir, sizeof dir)) return;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
}

/* Create a new file beside the target: "<target>.tmp.<pid>.<n>", made with
 * O_EXCL so two savers never share one; with the target's permissions when
 * it exists (set before a byte is written), else the umask's default. */
static cell_status open_temp(writer *w) {
  static unsigned counter;
  size_t n = strlen(w->target) + 48;
  w->tmp = cell_alloc(n);
  if (!w->tmp) return no_memory(w);
  struct stat old;
  int keep = stat(w->target, &old) == 0 && S_ISREG(old.st_mode);
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    snprintf(w->tmp, n, "%s.tmp.%ld.%u", w->target, (long)getpid(), k);
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, keep ? 0600 : 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      cell_status s = sys_fail(w, "create a file in its folder");
      cell_dealloc(w->tmp);
      w->tmp = NULL;
      return s;
    }
    if (keep) { /* the owner first (may be refused: then ours), then the mode */
      if (fchown(fd, old.st_uid, old.st_gid) != 0) (void)fchown(fd, (uid_t)-1, old.st_gid);
      if (fchmod(fd, old.st_mode & 07777) != 0) {
        cell_status s = sys_fail(w, "copy its permissions");
        close(fd);
        return s;
      }
    }
    w->f = fdopen(fd, "wb");
    if (!w->f) {
      cell_status s = sys_fail(w, "open a temporary file");
      close(fd);
      return s;
    }
    return CELL_OK;
  }
  cell_dealloc(w->tmp);
  w->tmp = NULL;
  return cell_error(CELL_ERR_RUNTIME, "safetensors: %s: cannot find a free temporary name", w->path);
}

static cell_status write_all(writer *w, const void *p, size_t n) {
  if (w->mem) {
    put(w->mem, (const char *)p, n);
    return w->mem->oom ? no_memory(w) : CELL_OK;
  }
  volatile int *intr = &cell_ctx()->interrupt;
  const char *c = p;
  for (size_t done = 0; done < n;) {
    if (*intr) return cell_error(CELL_ERR_INTERRUPT, "safetensors: %s: saving interrupted; the file was not changed", w->path);
    size_t want = n - done < CELL_IO_CHUNK ? n - done : CELL_IO_CHUNK;
    if (fwrite(c + done, 1, want, w->f) != want) return sys_fail(w, "write");
    done += want;
  }
  return CELL_OK;
}

static cell_status write_tensor(writer *w, cell_tensor *t) {
  if (cell_tensor_numel(t) == 0) return CELL_OK;
  cell_tensor *c = NULL;
  /* cell_tensor_move_to: t itself on the CPU (then made contiguous), else
   * a contiguous host copy through the device's copy functions. */
  cell_tensor *h = NULL;
  cell_status s = cell_tensor_move_to(t, 0, &h);
  if (s == CELL_OK) s = cell_k_contiguous(h, &c);
  cell_tensor_release(h);
  if (s == CELL_ERR_MEMORY)
    return cell_error(CELL_ERR_MEMORY, "safetensors: %s: out of memory making a tensor contiguous", w->path);
  if (s) return s;
  s = write_all(w, cell_tensor_data_ptr(c), cell_tensor_nbytes(c));
  cell_tensor_release(c);
  return s;
}

/* Flush the file to the disk and close it; sync the folder (the temporary
 * file's entry), rename over the target, sync the folder again (the
 * rename). */
static cell_status finish(writer *w) {
  int fail = fflush(w->f) != 0 || fsync(fileno(w->f)) != 0;
  int err = errno;
  int close_fail = fclose(w->f) != 0;
  w->f = NULL;
  if (fail || close_fail) {
    if (fail) errno = err;
    return sys_fail(w, "write");
  }
  sync_folder(w);
  if (rename(w->tmp, w->target) != 0) return sys_fail(w, "replace the file");
  sync_folder(w);
  return CELL_OK;
}

/* The 8-byte length, the header, the data. */
static cell_status write_file(writer *w, const buf *b, int count, cell_tensor *const *tensors) {
  unsigned char len[8];
  uint64_t h = b->n;
  for (int i = 0; i < 8; i++, h >>= 8) len[i] = (unsigned char)(h & 0xff);
  cell_status s = write_all(w, len, 8);
  if (!s) s = write_all(w, b->p, b->n);
  for (int i = 0; i < count && !s; i++) s = write_tensor(w, tensors[i]);
  return s;
}

cell_status cell_safetensors_save(const char *path, int count, const char *const *names,
                                  cell_tensor *const *tensors, int meta_count,
                                  const char *const *meta_keys, const char *const *meta_values) {
  if (!path || !path[0]) return cell_error(CELL_ERR_VALUE, "safetensors: no path given");
  if (!cell_io_little_endian())
    return cell_error(CELL_ERR_NOTIMPL, "safetensors: big-endian hosts are not supported");
  CELL_TRY(check_args(path, count, names, tensors, meta_count, meta_keys, meta_values));
  buf b = {NULL, 0, 0, 0};
  cell_status s = make_header(path, count, names, tensors, meta_count, meta_keys, meta_values, &b);
  writer w = {path, NULL, NULL, NULL, NULL};
  if (!s) s = resolve(&w);
  if (!s) {
    remove_stale(&w);
    s = open_temp(&w);
  }
  if (!s) s = write_file(&w, &b, count, tensors);
  if (!s) s = finish(&w);
  if (w.f) fclose(w.f);
  if (s && w.tmp) unlink(w.tmp);
  cell_dealloc(w.tmp);
  cell_dealloc(w.target);
  cell_dealloc(b.p);
  return s;
}

cell_status cell_st_save_mem(const char *name, int count, const char *const *names, cell_tensor *const *tensors,
                             int meta_count, const char *const *meta_keys, const char *const *meta_values,
                             char **out, size_t *n) {
  if (!name || !out || !n) return cell_error(CELL_ERR_VALUE, "safetensors: no output given");
  if (!cell_io_little_endian())
    return cell_error(CELL_ERR_NOTIMPL, "safetensors: big-endian hosts are not supported");
  CELL_TRY(check_args(name, count, names, tensors, meta_count, meta_keys, meta_values));
  buf b = {NULL, 0, 0, 0}, file = {NULL, 0, 0, 0};
  cell_status s = make_header(name, count, names, tensors, meta_count, meta_keys, meta_values, &b);
  writer w = {name, NULL, NULL, NULL, &file};
  if (!s) s = write_file(&w, &b, count, tensors);
  cell_dealloc(b.p);
  if (s) {
    cell_dealloc(file.p);
    return s;
  }
  *out = file.p;
  *n = file.n;
  return CELL_OK;
}
