/* image.c - PNG and JPEG decoding (libpng, libjpeg-turbo, loaded on first
 * use: codecs.h) into HWC uint8 RGB tensors, reading a file's bytes, and
 * listing an image folder.
 *
 * Both libraries report a fatal error by calling an error function that
 * must not return; each decoder here keeps that inside itself with its own
 * setjmp, and every object allocated before the jump lives in a context
 * struct (not in locals the jump could leave stale), so a corrupt image is
 * a RuntimeError naming the file, never a crash nor a leak. */
#include "cell_vision.h"
#include "codecs.h"
#include "vision.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger images are refused before a pixel is decoded, so a forged header
 * (65535 x 65535) cannot make us allocate gigabytes. */
#define MAX_PIXELS ((uint64_t)1 << 28)
#define MAX_FILE ((uint64_t)1 << 31)

static cell_status too_large(const char *name, uint64_t w, uint64_t h) {
  return cell_error(CELL_ERR_VALUE, "Decode: %s: the image is %llu x %llu pixels, more than the %llu allowed",
                    name, (unsigned long long)w, (unsigned long long)h, (unsigned long long)MAX_PIXELS);
}

/* --- PNG ------------------------------------------------------------------ */

typedef struct png_ctx {
  const unsigned char *p;
  size_t n, at;
  char msg[200];
  png_structp png;
  png_infop info;
  cell_tensor *t;
  png_bytep *rows;
} png_ctx;

static void png_read_mem(png_structp png, png_bytep dst, png_size_t n) {
  png_ctx *c = cell_codec.png_get_io_ptr(png);
  if (n > c->n - c->at) cell_codec.png_error(png, "the data ends early (truncated file)");
  memcpy(dst, c->p + c->at, n);
  c->at += n;
}

static void png_on_error(png_structp png, png_const_charp msg) {
  png_ctx *c = cell_codec.png_get_error_ptr(png);
  snprintf(c->msg, sizeof c->msg, "%s", msg);
  cell_codec.png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) {
  (void)png, (void)msg; /* warnings (a bad CRC in an ancillary chunk) are not failures */
}

static cell_status decode_png(const unsigned char *p, size_t n, const char *name, cell_tensor **out) {
  cell_status loaded = cell_codecs_png(name);
  if (loaded) return loaded;
  png_ctx ctx, *c = &ctx;
  memset(c, 0, sizeof *c);
  c->p = p, c->n = n;
  c->png = cell_codec.png_create_read_struct(PNG_LIBPNG_VER_STRING, c, png_on_error, png_on_warning);
  if (!c->png) return cell_error(CELL_ERR_MEMORY, "Decode: %s: out of memory", name);
  c->info = cell_codec.png_create_info_struct(c->png);
  if (!c->info) {
    cell_codec.png_destroy_read_struct(&c->png, NULL, NULL);
    return cell_error(CELL_ERR_MEMORY, "Decode: %s: out of memory", name);
  }
  cell_status s = CELL_OK;
  if (setjmp(*cell_codec.png_set_longjmp_fn(c->png, longjmp, sizeof(jmp_buf)))) {
    s = cell_error(CELL_ERR_RUNTIME, "Decode: %s: corrupt PNG image: %s", name, c->msg);
    goto done;
  }
  cell_codec.png_set_read_fn(c->png, c, png_read_mem);
  cell_codec.png_set_user_limits(c->png, 1u << 20, 1u << 20);
  cell_codec.png_read_info(c->png, c->info);
  png_uint_32 w = cell_codec.png_get_image_width(c->png, c->info), h = cell_codec.png_get_image_height(c->png, c->info);
  if ((uint64_t)w * h > MAX_PIXELS) {
    s = too_large(name, w, h);
    goto done;
  }
  int color = cell_codec.png_get_color_type(c->png, c->info), depth = cell_codec.png_get_bit_depth(c->png, c->info);
  /* As OpenCV's IMREAD_COLOR (MindSpore's Decode): 8-bit RGB, alpha dropped
   * (not composited), grey repeated in the three channels. */
  if (depth == 16) cell_codec.png_set_strip_16(c->png);
  if (color == PNG_COLOR_TYPE_PALETTE) cell_codec.png_set_palette_to_rgb(c->png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) cell_codec.png_set_expand_gray_1_2_4_to_8(c->png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) cell_codec.png_set_gray_to_rgb(c->png);
  if (color & PNG_COLOR_MASK_ALPHA) cell_codec.png_set_strip_alpha(c->png);
  cell_codec.png_set_interlace_handling(c->png);
  cell_codec.png_read_update_info(c->png, c->info);
  if (cell_codec.png_get_rowbytes(c->png, c->info) != (size_t)w * 3) {
    snprintf(c->msg, sizeof c->msg, "an unsupported pixel layout");
    cell_codec.png_longjmp(c->png, 1);
  }
  int64_t shape[3] = {h, w, 3};
  s = cell_tensor_empty(CELL_DTYPE_U8, 3, shape, &c->t);
  if (s) goto done;
  c->rows = malloc(sizeof *c->rows * (h ? h : 1));
  if (!c->rows) {
    s = cell_error(CELL_ERR_MEMORY, "Decode: %s: out of memory", name);
    goto done;
  }
  unsigned char *base = cell_tensor_data_ptr(c->t);
  for (png_uint_32 y = 0; y < h; y++) c->rows[y] = base + (size_t)y * w * 3;
  cell_codec.png_read_image(c->png, c->rows);
  cell_codec.png_read_end(c->png, NULL);
done:
  cell_codec.png_destroy_read_struct(&c->png, &c->info, NULL);
  free(c->rows);
  if (s) {
    cell_tensor_release(c->t);
    return s;
  }
  *out = c->t;
  return CELL_OK;
}

/* --- JPEG ------------------------------------------------------------------ */

typedef struct jpeg_ctx {
  struct jpeg_error_mgr err; /* first: libjpeg hands us this pointer */
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  struct jpeg_decompress_struct d;
  int made;
  cell_tensor *t;
} jpeg_ctx;

static void jpeg_on_error(j_common_ptr cinfo) {
  jpeg_ctx *c = (jpeg_ctx *)cinfo->err;
  cinfo->err->format_message(cinfo, c->msg);
  longjmp(c->jump, 1);
}

/* Warnings (level -1) decode on, as OpenCV does ("extraneous bytes before
 * marker" is common in cameras' files), except the data ending early: a
 * truncated file would come out grey below the cut. */
static void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    jpeg_ctx *c = (jpeg_ctx *)cinfo->err;
    cinfo->err->format_message(cinfo, c->msg);
    longjmp(c->jump, 1);
  }
}

static cell_status decode_jpeg(const unsigned char *p, size_t n, const char *name, cell_tensor **out) {
  cell_status loaded = cell_codecs_jpeg(name);
  if (loaded) return loaded;
  jpeg_ctx *c = calloc(1, sizeof *c); /* jmp_buf and the struct: off the worker's stack */
  if (!c) return cell_error(CELL_ERR_MEMORY, "Decode: %s: out of memory", name);
  cell_status s = CELL_OK;
  c->d.err = cell_codec.jpeg_std_error(&c->err);
  c->err.error_exit = jpeg_on_error;
  c->err.emit_message = jpeg_on_message;
  if (setjmp(c->jump)) {
    s = cell_error(CELL_ERR_RUNTIME, "Decode: %s: corrupt JPEG image: %s", name, c->msg);
    goto done;
  }
  cell_codec.jpeg_CreateDecompress(&c->d, JPEG_LIB_VERSION, sizeof c->d);
  c->made = 1;
  cell_codec.jpeg_mem_src(&c->d, p, (unsigned long)n);
  cell_codec.jpeg_read_header(&c->d, TRUE);
  if ((uint64_t)c->d.image_width * c->d.image_height > MAX_PIXELS) {
    s = too_large(name, c->d.image_width, c->d.image_height);
    goto done;
  }
  c->d.out_color_space = JCS_RGB; /* grey and CMYK/YCCK come out as RGB too */
  if (c->d.jpeg_color_space == JCS_CMYK || c->d.jpeg_color_space == JCS_YCCK) c->d.out_color_space = JCS_CMYK;
  cell_codec.jpeg_start_decompress(&c->d);
  int64_t w = c->d.output_width, h = c->d.output_height, comps = c->d.output_components;
  int64_t shape[3] = {h, w, 3};
  s = cell_tensor_empty(CELL_DTYPE_U8, 3, shape, &c->t);
  if (s) goto done;
  unsigned char *base = cell_tensor_data_ptr(c->t);
  JSAMPARRAY row = (*c->d.mem->alloc_sarray)((j_common_ptr)&c->d, JPOOL_IMAGE, (JDIMENSION)(w * comps), 1);
  while (c->d.output_scanline < c->d.output_height) {
    int64_t y = c->d.output_scanline;
    cell_codec.jpeg_read_scanlines(&c->d, row, 1);
    unsigned char *dst = base + y * w * 3, *src = row[0];
    if (comps == 3) {
      memcpy(dst, src, (size_t)w * 3);
    } else { /* CMYK as Adobe writes it (inverted): R = C * K / 255 */
      for (int64_t x = 0; x < w; x++) {
        unsigned k = src[4 * x + 3];
        for (int ch = 0; ch < 3; ch++) dst[3 * x + ch] = (unsigned char)((src[4 * x + ch] * k + 127) / 255);
      }
    }
  }
  cell_codec.jpeg_finish_decompress(&c->d);
done:
  if (c->made) cell_codec.jpeg_destroy_decompress(&c->d);
  if (s) cell_tensor_release(c->t);
  else *out = c->t;
  free(c);
  return s;
}

/* --- the public entry points ------------------------------------------------- */

int cell_image_format(const void *buf, size_t n) {
  const unsigned char *p = buf;
  if (p && n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return CELL_IMAGE_PNG;
  if (p && n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) return CELL_IMAGE_JPEG;
  return CELL_IMAGE_UNKNOWN;
}

cell_status cell_image_decode(const void *buf, size_t n, const char *name, cell_tensor **out) {
  if (!name) name = "<memory>";
  if (!out || (!buf && n)) return cell_error(CELL_ERR_VALUE, "Decode: NULL argument");
  switch (cell_image_format(buf, n)) {
  case CELL_IMAGE_PNG: return decode_png(buf, n, name, out);
  case CELL_IMAGE_JPEG: return decode_jpeg(buf, n, name, out);
  default:
    if (n == 0) return cell_error(CELL_ERR_RUNTIME, "Decode: %s: the image is empty (0 bytes)", name);
    return cell_error(CELL_ERR_RUNTIME, "Decode: %s: not a PNG or JPEG image (it starts with bytes %02x %02x %02x)",
                      name, ((const unsigned char *)buf)[0], n > 1 ? ((const unsigned char *)buf)[1] : 0,
                      n > 2 ? ((const unsigned char *)buf)[2] : 0);
  }
}

cell_status cell_file_read_bytes(const char *path, cell_tensor **out) {
  if (!path || !out) return cell_error(CELL_ERR_VALUE, "read_file: NULL argument");
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cell_error(CELL_ERR_VALUE, "read_file: %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return cell_error(CELL_ERR_VALUE, "read_file: %s: not a regular file", path);
  }
  if ((uint64_t)st.st_size > MAX_FILE) {
    close(fd);
    return cell_error(CELL_ERR_VALUE, "read_file: %s: %lld bytes, more than the %llu allowed", path,
                      (long long)st.st_size, (unsigned long long)MAX_FILE);
  }
  int64_t n = st.st_size;
  cell_tensor *t;
  cell_status s = cell_tensor_empty(CELL_DTYPE_U8, 1, &n, &t);
  if (s) {
    close(fd);
    return s;
  }
  unsigned char *p = cell_tensor_data_ptr(t);
  int64_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, (size_t)(n - got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      s = cell_error(CELL_ERR_VALUE, "read_file: %s: %s", path, r < 0 ? strerror(errno) : "the file shrank while read");
      break;
    }
    got += r;
  }
  close(fd);
  if (s) {
    cell_tensor_release(t);
    return s;
  }
  *out = t;
  return CELL_OK;
}

cell_status cell_image_load(const char *path, cell_tensor **out) {
  if (!path || !out) return cell_error(CELL_ERR_VALUE, "Decode: NULL argument");
  cell_tensor *bytes;
  cell_status s = cell_file_read_bytes(path, &bytes);
  if (s) return s;
  s = cell_image_decode(cell_tensor_data_ptr(bytes), (size_t)cell_tensor_numel(bytes), path, out);
  cell_tensor_release(bytes);
  return s;
}

/* --- folders --------------------------------------------------------------- */

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of dir's entries that are folders (want_dirs) or regular
 * files; hidden entries (".x") are skipped. */
static cell_status list_dir(const char *dir, int want_dirs, char ***names, int *count) {
  DIR *d = opendir(dir);
  if (!d) return cell_error(CELL_ERR_VALUE, "ImageFolderDataset: %s: %s", dir, strerror(errno));
  char **v = NULL;
  int n = 0, cap = 0;
  cell_status s = CELL_OK;
  struct dirent *e;
  size_t dl = strlen(dir);
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t el = strlen(e->d_name);
    char *full = malloc(dl + el + 2);
    if (!full) { s = cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory"); break; }
    memcpy(full, dir, dl);
    full[dl] = '/';
    memcpy(full + dl + 1, e->d_name, el + 1);
    struct stat st;
    int ok = stat(full, &st) == 0 && (want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
    free(full);
    if (!ok) continue;
    if (n == cap) {
      int nc = cap ? 2 * cap : 16;
      char **nv = realloc(v, sizeof *v * (size_t)nc);
      if (!nv) { s = cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory"); break; }
      v = nv, cap = nc;
    }
    if (!(v[n] = strdup(e->d_name))) { s = cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory"); break; }
    n++;
  }
  closedir(d);
  if (s) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
    return s;
  }
  if (n) qsort(v, (size_t)n, sizeof *v, by_name);
  *names = v, *count = n;
  return CELL_OK;
}

static int has_ext(const char *name, const char *const *exts, int n_ext) {
  if (n_ext <= 0) return 1;
  size_t nl = strlen(name);
  for (int i = 0; i < n_ext; i++) {
    size_t el = strlen(exts[i]);
    if (el <= nl && strcasecmp(name + nl - el, exts[i]) == 0) return 1;
  }
  return 0;
}

void cell_image_folder_free(cell_image_folder *f) {
  if (!f) return;
  for (int i = 0; i < f->num_classes; i++) free(f->classes[i]);
  for (int64_t i = 0; i < f->num_files; i++) free(f->files[i]);
  free(f->classes), free(f->files), free(f->class_of), free(f);
}

cell_status cell_image_folder_scan(const char *dir, const char *const *exts, int n_ext, cell_image_folder **out) {
  if (!dir || !out || (n_ext > 0 && !exts)) return cell_error(CELL_ERR_VALUE, "ImageFolderDataset: NULL argument");
  cell_image_folder *f = calloc(1, sizeof *f);
  if (!f) return cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory");
  cell_status s = list_dir(dir, 1, &f->classes, &f->num_classes);
  if (s) {
    free(f);
    return s;
  }
  int64_t cap = 0;
  size_t dl = strlen(dir);
  for (int k = 0; k < f->num_classes && !s; k++) {
    size_t cl = strlen(f->classes[k]);
    char *sub = malloc(dl + cl + 2);
    if (!sub) { s = cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory"); break; }
    snprintf(sub, dl + cl + 2, "%s/%s", dir, f->classes[k]);
    char **names = NULL;
    int n = 0;
    s = list_dir(sub, 0, &names, &n);
    for (int i = 0; i < n; i++) {
      if (s || !has_ext(names[i], exts, n_ext)) { free(names[i]); continue; }
      if (f->num_files == cap) {
        int64_t nc = cap ? 2 * cap : 64;
        char **nf = realloc(f->files, sizeof *nf * (size_t)nc);
        int *nk = nf ? realloc(f->class_of, sizeof *nk * (size_t)nc) : NULL;
        if (nf) f->files = nf;
        if (!nk) { s = cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory"); free(names[i]); continue; }
        f->class_of = nk, cap = nc;
      }
      size_t pl = dl + cl + strlen(names[i]) + 3;
      char *path = malloc(pl);
      if (!path) { s = cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory"); free(names[i]); continue; }
      snprintf(path, pl, "%s/%s", sub, names[i]);
      free(names[i]);
      f->files[f->num_files] = path;
      f->class_of[f->num_files++] = k;
    }
    free(names);
    free(sub);
  }
  if (s) {
    cell_image_folder_free(f);
    return s;
  }
  *out = f;
  return CELL_OK;
}

/* --- a folder's files as a per-sample op ------------------------------------------ */

typedef struct reader_params {
  int64_t n;
  int decode;
  char **paths;
} reader_params;

static cell_status reader_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                uint64_t index, char *err, size_t errlen) {
  (void)seed, (void)index;
  const reader_params *p = op->params;
  int64_t i;
  if (cell_tensor_numel(in) != 1 || cell_tensor_item_i64(in, &i) != CELL_OK) {
    snprintf(err, errlen, "ImageFolderDataset: the image column must hold file numbers (one integer per sample)");
    return CELL_ERR_TYPE;
  }
  if (i < 0 || i >= p->n) {
    snprintf(err, errlen, "ImageFolderDataset: file number %lld is out of range [0, %lld)", (long long)i,
             (long long)p->n);
    return CELL_ERR_INDEX;
  }
  cell_status s = p->decode ? cell_image_load(p->paths[i], out) : cell_file_read_bytes(p->paths[i], out);
  if (s) snprintf(err, errlen, "%s", cell_last_error());
  return s;
}

static void reader_destroy(cell_sample_op *op) {
  if (!op) return;
  reader_params *p = op->params;
  if (p) {
    for (int64_t i = 0; i < p->n; i++) free(p->paths[i]);
    free(p->paths);
    free(p);
  }
  free(op);
}

cell_status cell_image_reader(int64_t n, const char *const *paths, int decode, cell_sample_op **out) {
  if (!out || n < 0 || (n > 0 && !paths)) return cell_error(CELL_ERR_VALUE, "ImageFolderDataset: NULL argument");
  cell_sample_op *op = calloc(1, sizeof *op);
  reader_params *p = calloc(1, sizeof *p);
  char **v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!op || !p || !v) {
    free(op), free(p), free(v);
    return cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory");
  }
  p->paths = v, p->decode = decode != 0;
  op->name = decode ? "ImageFolderDataset(decode)" : "ImageFolderDataset";
  op->apply = reader_apply, op->destroy = reader_destroy, op->params = p;
  for (int64_t i = 0; i < n; i++) {
    if (!paths[i] || !(v[i] = strdup(paths[i]))) {
      reader_destroy(op);
      return paths[i] ? cell_error(CELL_ERR_MEMORY, "ImageFolderDataset: out of memory")
                      : cell_error(CELL_ERR_VALUE, "ImageFolderDataset: NULL path %lld", (long long)i);
    }
    p->n = i + 1;
  }
  *out = op;
  return CELL_OK;
}
