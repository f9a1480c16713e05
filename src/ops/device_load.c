/* device_load.c - loading a device module at run time (cell_device_load).
 *
 * A device module is a shared object "libcell_<name>.so" exporting the
 * entry CELL_DEVICE_MODULE_ENTRY ("cell_device_module_init"), which
 * registers the module's devices with cell_device_register and returns a
 * status. The search, first hit wins: a name holding '/' is a path, opened
 * as given; else the file in each folder of $CELL_DEVICE_PATH (':'
 * separated), then beside the engine (the folder of libcell.so, or of the
 * executable it is linked into), then the dynamic loader's own search
 * (LD_LIBRARY_PATH, the executable's runpath, the ld.so cache). A module
 * loads once per process: a second load of the same name returns CELL_OK
 * and registers nothing. A module whose entry ran is never unloaded (the
 * registry keeps its tables). */
#define _GNU_SOURCE /* dladdr */
#include "device.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MODULES 32
#define NAME_MAX_ 200

static char loaded[MAX_MODULES][NAME_MAX_ + 1];
static int nloaded;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_loaded(const char *name) {
  for (int i = 0; i < nloaded; i++)
    if (!strcmp(loaded[i], name)) return 1;
  return 0;
}

/* dlopen dir/file (dir NULL or empty: file as given); the first error kept
 * in why. */
static void *try_open(const char *dir, const char *file, char *why, size_t nwhy) {
  char path[4096];
  if (dir && *dir) {
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) return NULL;
  } else {
    snprintf(path, sizeof path, "%s", file);
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && !why[0]) {
    const char *e = dlerror();
    snprintf(why, nwhy, "%s", e ? e : "unknown dlopen error");
  }
  return h;
}

/* The folder of the object that holds this function (libcell.so, or the
 * executable libcell.a is linked into) into dir; 0 when unknown. */
static int engine_dir(char *dir, size_t n) {
  Dl_info info;
  if (!dladdr((void *)cell_device_load, &info) || !info.dli_fname) return 0;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return 0;
  size_t len = (size_t)(slash - info.dli_fname);
  if (len + 1 > n) return 0;
  memcpy(dir, info.dli_fname, len);
  dir[len] = 0;
  return 1;
}

static void *find_module(const char *name, char *file, size_t nfile, char *why, size_t nwhy) {
  why[0] = 0;
  if (strchr(name, '/')) {
    snprintf(file, nfile, "%s", name);
    return try_open(NULL, name, why, nwhy);
  }
  snprintf(file, nfile, "libcell_%s.so", name);
  void *h = NULL;
  const char *env = getenv("CELL_DEVICE_PATH");
  if (env && *env) {
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s", env);
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !h; d = strtok_r(NULL, ":", &save))
      h = try_open(d, file, why, nwhy);
  }
  char dir[4096];
  if (!h && engine_dir(dir, sizeof dir)) h = try_open(dir, file, why, nwhy);
  if (!h) h = try_open(NULL, file, why, nwhy);
  return h;
}

static int valid_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > NAME_MAX_) return 0;
  if (strchr(name, '/')) return 1; /* a path */
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '-'))
      return 0;
  return 1;
}

static cell_status load_locked(const char *name) {
  if (is_loaded(name)) return CELL_OK;
  if (nloaded == MAX_MODULES)
    return cell_error(CELL_ERR_RUNTIME, "device_load: at most %d device modules", MAX_MODULES);
  char file[4096], why[1024];
  void *h = find_module(name, file, sizeof file, why, sizeof why);
  if (!h)
    return cell_error(CELL_ERR_RUNTIME,
                      "device_load: cannot load device module '%s' (%s; searched CELL_DEVICE_PATH, the "
                      "engine's folder and the loader's path): %s",
                      name, file, why);
  dlerror();
  void *sym = dlsym(h, CELL_DEVICE_MODULE_ENTRY);
  if (!sym) {
    dlclose(h);
    return cell_error(CELL_ERR_RUNTIME, "device_load: %s is not a device module: it has no %s", file,
                      CELL_DEVICE_MODULE_ENTRY);
  }
  cell_device_module_fn entry;
  memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, as POSIX allows */
  cell_status s = entry();
  if (s != CELL_OK) {
    /* The handle stays open: the entry may have registered a device. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cell_last_error());
    return cell_error(s, "device_load: %s: %s", name, msg);
  }
  snprintf(loaded[nloaded++], NAME_MAX_ + 1, "%s", name);
  return CELL_OK;
}

cell_status cell_device_load(const char *name) {
  if (!name) return cell_error(CELL_ERR_VALUE, "device_load: NULL name");
  if (!valid_name(name))
    return cell_error(CELL_ERR_VALUE,
                      "device_load: bad module name '%.64s' (letters, digits, '_' and '-', at most %d "
                      "characters, or a path with '/')",
                      name, NAME_MAX_);
  pthread_mutex_lock(&load_lock);
  cell_status s = load_locked(name);
  pthread_mutex_unlock(&load_lock);
  return s;
}
