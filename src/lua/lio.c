/* lio.c - the Lua binding of include/cell_io.h, as functions of cell.core:
 *   core.safetensors_save(path, names, tensors [, metadata])
 *   core.safetensors_load(path) -> names, tensors, metadata
 *   core.idx_load(path [, dtype [, scale]]) -> tensor
 *   core.isatty(fd) -> boolean
 *   core.file_kind(path) -> "file", "directory", "fifo", "other" or nil
 * lua/cell/serialization.lua and lua/cell/dataset/ build on them. */
#include "lcell.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOADED_MT "cell.SafetensorsLoaded"

/* A string argument without embedded NULs (C paths and names stop there). */
static const char *check_cstring(lua_State *L, int arg, int idx, const char *what) {
  size_t n;
  if (lua_type(L, idx) != LUA_TSTRING)
    lc_argerror(L, arg, "TypeError: %s must be a string, got %s", what, luaL_typename(L, idx));
  const char *s = lua_tolstring(L, idx, &n);
  if (strlen(s) != n) lc_argerror(L, arg, "ValueError: %s must not contain a NUL byte", what);
  return s;
}

typedef struct meta_pair {
  const char *key, *value;
} meta_pair;

static int by_key(const void *a, const void *b) {
  return strcmp(((const meta_pair *)a)->key, ((const meta_pair *)b)->key);
}

/* Scratch memory owned by Lua (a userdata left on the stack), so raising
 * while it is held leaks nothing. */
static void *scratch(lua_State *L, size_t n) { return lua_newuserdatauv(L, n ? n : 1, 0); }

/* core.safetensors_save(path, names, tensors [, metadata]): names and
 * tensors are sequences of one length; metadata maps strings to strings,
 * written in key order (so a save is byte-for-byte reproducible). */
static int l_safetensors_save(lua_State *L) {
  lua_settop(L, 4); /* scratch goes above the arguments */
  const char *path = check_cstring(L, 1, 1, "path");
  lc_check_table(L, 2, "a list of names");
  lc_check_table(L, 3, "a list of tensors");
  int n = (int)lua_rawlen(L, 2);
  if ((int)lua_rawlen(L, 3) != n)
    return lc_argerror(L, 3, "ValueError: %d names but %d tensors", n, (int)lua_rawlen(L, 3));
  const char **names = scratch(L, sizeof *names * (size_t)n);
  cell_tensor **tensors = scratch(L, sizeof *tensors * (size_t)n);
  luaL_checkstack(L, 2 * n + 8, "safetensors_save");
  for (int i = 0; i < n; i++) { /* the values stay on the stack, so their strings live */
    lua_rawgeti(L, 2, i + 1);
    names[i] = check_cstring(L, 2, -1, "a tensor name");
    lua_rawgeti(L, 3, i + 1);
    tensors[i] = lc_test_tensor(L, -1);
    if (!tensors[i])
      return lc_argerror(L, 3, "TypeError: tensor %d ('%s') is not a Tensor but a %s", i + 1, names[i],
                         luaL_typename(L, -1));
  }
  int nm = 0;
  const char **keys = NULL, **values = NULL;
  if (!lua_isnoneornil(L, 4)) {
    lc_check_table(L, 4, "a table of metadata strings");
    for (lua_pushnil(L); lua_next(L, 4); lua_pop(L, 1)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        return lc_argerror(L, 4, "TypeError: metadata maps strings to strings, got a %s key and a %s value",
                           luaL_typename(L, -2), luaL_typename(L, -1));
      nm++;
    }
    /* The strings are the table's keys and values, alive while it is. */
    meta_pair *pairs = scratch(L, sizeof *pairs * (size_t)nm);
    keys = scratch(L, sizeof *keys * (size_t)nm);
    values = scratch(L, sizeof *values * (size_t)nm);
    int k = 0;
    for (lua_pushnil(L); k < nm && lua_next(L, 4); lua_pop(L, 1), k++) {
      pairs[k].key = check_cstring(L, 4, -2, "a metadata key");
      pairs[k].value = check_cstring(L, 4, -1, "a metadata value");
    }
    qsort(pairs, (size_t)nm, sizeof *pairs, by_key);
    for (int i = 0; i < nm; i++) {
      keys[i] = pairs[i].key;
      values[i] = pairs[i].value;
    }
  }
  if (cell_safetensors_save(path, n, names, tensors, nm, keys, values) != CELL_OK) return lc_raise(L);
  return 0;
}

/* The load result waits in a userdata whose __gc frees what has not been
 * handed to Lua yet, so a memory error while building the tables leaks
 * nothing. */
static int loaded_gc(lua_State *L) {
  cell_safetensors **p = lua_type(L, 1) == LUA_TUSERDATA && lua_rawlen(L, 1) == sizeof *p
                             ? luaL_testudata(L, 1, LOADED_MT) : NULL;
  if (!p) /* reachable through debug.getregistry(): check what came */
    return lc_argerror(L, 1, "TypeError: expected a safetensors load result, got %s", lc_typename(L, 1));
  cell_safetensors_free(*p);
  *p = NULL;
  return 0;
}

/* core.safetensors_load(path) -> names (a sequence, in the file's order),
 * tensors (a sequence), metadata (a table of strings, empty when none). */
static int l_safetensors_load(lua_State *L) {
  const char *path = check_cstring(L, 1, 1, "path");
  cell_safetensors **p = lua_newuserdatauv(L, sizeof *p, 0);
  *p = NULL;
  luaL_setmetatable(L, LOADED_MT);
  if (cell_safetensors_load(path, p) != CELL_OK) return lc_raise(L);
  cell_safetensors *st = *p;
  lua_createtable(L, st->count, 0);
  lua_createtable(L, st->count, 0);
  int names = lua_gettop(L) - 1, tensors = names + 1;
  for (int i = 0; i < st->count; i++) {
    lua_pushstring(L, st->names[i]);
    lua_rawseti(L, names, i + 1);
    cell_tensor **slot = lc_newtensor(L);
    *slot = st->tensors[i]; /* ownership moves to the userdata */
    st->tensors[i] = NULL;
    lc_finish(L, lc_to_default_device(slot)); /* read on the host, then where new tensors go */
    lua_rawseti(L, tensors, i + 1);
  }
  lua_createtable(L, 0, st->meta_count);
  for (int i = 0; i < st->meta_count; i++) {
    lua_pushstring(L, st->meta_values[i]);
    lua_setfield(L, -2, st->meta_keys[i]);
  }
  cell_safetensors_free(st);
  *p = NULL;
  return 3;
}

/* core.idx_load(path [, dtype [, scale]]) -> tensor: the file's dtype
 * (uint8 for the MNIST files), or dtype with each value times scale. */
static int l_idx_load(lua_State *L) {
  const char *path = check_cstring(L, 1, 1, "path");
  if (lua_isnoneornil(L, 2) && lua_isnoneornil(L, 3)) {
    cell_tensor **out = lc_newtensor(L);
    cell_status s = cell_idx_load(path, out);
    return lc_finish(L, s == CELL_OK ? lc_to_default_device(out) : s);
  }
  cell_dtype dt = lc_check_dtype(L, 2);
  double scale = lua_isnoneornil(L, 3) ? 1.0 : lc_check_number(L, 3);
  cell_tensor **out = lc_newtensor(L);
  cell_status s = cell_idx_load_as(path, dt, scale, out);
  return lc_finish(L, s == CELL_OK ? lc_to_default_device(out) : s);
}

/* core.isatty(fd) -> whether descriptor fd (0 stdin, 1 stdout, 2 stderr)
 * is a terminal. */
static int l_isatty(lua_State *L) {
  lua_Integer fd = lc_check_int(L, 1);
  if (fd < 0 || fd > 2)
    return lc_argerror(L, 1, "ValueError: isatty: expected a descriptor 0 (stdin), 1 (stdout) or 2 (stderr), got %lld",
                       (long long)fd);
  lua_pushboolean(L, isatty((int)fd));
  return 1;
}

/* core.file_kind(path) -> what path names, without opening it (io.open
 * would wait forever on a FIFO): "file", "directory", "fifo", "other", or
 * nil when nothing is there (or it cannot be looked at). */
static int l_file_kind(lua_State *L) {
  const char *path = check_cstring(L, 1, 1, "path");
  struct stat st;
  if (stat(path, &st) != 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory"
                    : S_ISFIFO(st.st_mode) ? "fifo" : "other");
  return 1;
}

static const luaL_Reg io_funcs[] = {
    {"file_kind", l_file_kind},
    {"safetensors_save", l_safetensors_save},
    {"safetensors_load", l_safetensors_load},
    {"idx_load", l_idx_load},
    {"isatty", l_isatty},
    {NULL, NULL},
};

void lc_register_io(lua_State *L, int module, int base) {
  luaL_newmetatable(L, LOADED_MT);
  lua_pushcfunction(L, loaded_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "SafetensorsLoaded");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
  lc_setfuncs(L, module, base, io_funcs);
}
