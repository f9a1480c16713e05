/* codecs.c - dlopen() libpng and libjpeg on first use: see codecs.h. */
#include "codecs.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

cell_codecs cell_codec;

/* The outcome of one library's load, decided once. */
typedef struct codec_lib {
  pthread_once_t once;
  int ok;
  char name[40];  /* the file asked for first: "libpng16.so.16" */
  char why[240];  /* dlerror()'s text when the load failed */
} codec_lib;

static codec_lib png_lib = {PTHREAD_ONCE_INIT, 0, "", ""};
static codec_lib jpeg_lib = {PTHREAD_ONCE_INIT, 0, "", ""};

/* dlopen the first of `names` that loads; NULL (why filled) when none does. */
static void *open_first(codec_lib *lib, const char *const *names, int n) {
  snprintf(lib->name, sizeof lib->name, "%s", names[0]);
  for (int i = 0; i < n; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    if (i == 0) {
      const char *e = dlerror();
      snprintf(lib->why, sizeof lib->why, "%s", e ? e : "not found");
    }
  }
  return NULL;
}

/* Look every name up; the first one missing fails the load (the handle
 * stays open: a half-resolved library is never used, and unloading it
 * could unmap code another part of the process shares). */
#define CELL_CODEC_RESOLVE(f)                                                    \
  if (ok) {                                                                      \
    void *sym = dlsym(h, #f);                                                    \
    if (sym) {                                                                   \
      memcpy(&cell_codec.f, &sym, sizeof sym);                                   \
    } else {                                                                     \
      snprintf(lib->why, sizeof lib->why, "the library has no function %s", #f); \
      ok = 0;                                                                    \
    }                                                                            \
  }

static void load_png(void) {
  codec_lib *lib = &png_lib;
  char soname[40];
  snprintf(soname, sizeof soname, "libpng%d.so.%d", PNG_LIBPNG_VER_DLLNUM, PNG_LIBPNG_VER_SONUM);
  const char *names[] = {soname, "libpng.so"};
  void *h = open_first(lib, names, 2);
  int ok = h != NULL;
  CELL_PNG_FUNCTIONS(CELL_CODEC_RESOLVE)
  lib->ok = ok;
}

static void load_jpeg(void) {
  codec_lib *lib = &jpeg_lib;
  /* The soname follows the API version: 62 for jpeg-6b's (libjpeg-turbo's
   * default), then 7, 8 and 9 for 70, 80 and 90. */
  int v = JPEG_LIB_VERSION;
  char soname[40];
  snprintf(soname, sizeof soname, "libjpeg.so.%d", v % 10 ? v : v / 10);
  const char *names[] = {soname, "libjpeg.so"};
  void *h = open_first(lib, names, 2);
  int ok = h != NULL;
  CELL_JPEG_FUNCTIONS(CELL_CODEC_RESOLVE)
  lib->ok = ok;
}

static cell_status outcome(const codec_lib *lib, const char *format, const char *what) {
  if (lib->ok) return CELL_OK;
  return cell_error(CELL_ERR_RUNTIME, "Decode: %s: decoding %s needs %s, which could not be loaded (%s)", what,
                    format, lib->name, lib->why);
}

cell_status cell_codecs_png(const char *what) {
  pthread_once(&png_lib.once, load_png);
  return outcome(&png_lib, "PNG", what);
}

cell_status cell_codecs_jpeg(const char *what) {
  pthread_once(&jpeg_lib.once, load_jpeg);
  return outcome(&jpeg_lib, "JPEG", what);
}
