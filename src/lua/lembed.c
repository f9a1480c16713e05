/* lembed.c - the embedding API of cell_lua.h (cell_openlibs, pushing and
 * checking tensors from a C host) and the binding's FFI helpers
 * (core._ffi_*), which lua/cell/ffi.lua uses to reach the engine from
 * LuaJIT. */
#define _GNU_SOURCE /* dladdr */
#include "lcell.h"
#include "cell_lua.h"
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if LUA_VERSION_NUM >= 504
#define LUA_VDIR LUA_VERSION_MAJOR "." LUA_VERSION_MINOR
#elif LUA_VERSION_NUM == 503
#define LUA_VDIR "5.3"
#elif LUA_VERSION_NUM == 502
#define LUA_VDIR "5.2"
#else
#define LUA_VDIR "5.1"
#endif

/* Where `make install` puts the Lua files; the Makefile passes its
 * LUA_SHARE. Without it, the Makefile's default PREFIX. */
#ifndef CELL_LUA_DIR
#define CELL_LUA_DIR "/usr/local/share/lua/" LUA_VDIR
#endif

/* --- pushing and checking tensors ---------------------------------------- */

void cell_push_tensor(lua_State *L, cell_tensor *t) {
  if (!t) {
    lua_pushnil(L);
    return;
  }
  luaL_getmetatable(L, TENSOR_MT);
  bool loaded = lua_istable(L, -1);
  lua_pop(L, 1);
  if (!loaded)
    luaL_error(L, "RuntimeError: cell_push_tensor: cell is not loaded in this Lua state "
                  "(call cell_openlibs first)");
  cell_tensor **slot = lc_newtensor_at(L);
  cell_tensor_retain(t);
  *slot = t;
}

/* The tensor userdata at idx, whatever the upvalues of the running
 * function: the host's C functions are not closures of the binding. */
static tensor_ud *test_ud(lua_State *L, int idx) {
  return lc_test_ud(L, idx);
}

cell_tensor *cell_test_tensor(lua_State *L, int idx) {
  tensor_ud *ud = test_ud(L, idx);
  return ud ? ud->t : NULL;
}

/* The name of the running function as a global (`f`) or a field of a
 * global table (`host.gain`), pushed, or nothing pushed and 0. A host's
 * function called through pcall or a table has no name at the call site,
 * where luaL_argerror looks, and would be reported as '?'. */
static int push_global_name(lua_State *L) {
  lua_Debug ar;
  if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "f", &ar)) return 0;
  int f = lua_gettop(L);
#if LUA_VERSION_NUM >= 502
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
#else
  lua_pushvalue(L, LUA_GLOBALSINDEX);
#endif
  int g = lua_gettop(L);
  for (int depth = 0; depth < 2; depth++) { /* the globals, then their tables */
    lua_pushnil(L);
    while (lua_next(L, g)) { /* key at g+1, value at g+2 */
      if (lua_type(L, -2) == LUA_TSTRING) {
        if (depth == 0 && lua_rawequal(L, -1, f)) {
          lua_pushvalue(L, -2);
          lua_replace(L, f);
          lua_settop(L, f);
          return 1;
        }
        if (depth == 1 && lua_istable(L, -1)) {
          lua_pushnil(L);
          while (lua_next(L, -2)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, f)) {
              lua_pushfstring(L, "%s.%s", lua_tostring(L, g + 1), lua_tostring(L, g + 3));
              lua_replace(L, f);
              lua_settop(L, f);
              return 1;
            }
            lua_pop(L, 1);
          }
        }
      }
      lua_pop(L, 1);
    }
  }
  lua_settop(L, f - 1);
  return 0;
}

/* lc_argerror, naming the function by push_global_name when the call
 * site gives no name. */
static int embed_argerror(lua_State *L, int arg, const char *exc, const char *fmt, const char *got) {
  char what[256];
  snprintf(what, sizeof what, fmt, got);
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name == NULL && push_global_name(L))
    return lc_error(L, "%s: %s: %s (bad argument #%d)", exc, lua_tostring(L, -1), what, arg);
  return lc_argerror(L, arg, "%s: %s", exc, what);
}

cell_tensor *cell_check_tensor(lua_State *L, int idx) {
  tensor_ud *ud = test_ud(L, idx);
  if (!ud) embed_argerror(L, idx, "TypeError", "expected a Tensor, got %s", luaL_typename(L, idx));
  if (!ud->t) lc_error(L, "RuntimeError: this tensor was freed");
  return ud->t;
}

int cell_lua_error(lua_State *L) { return lc_raise(L); }

/* --- cell_openlibs ----------------------------------------------------------- */

static bool file_exists(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

/* Whether package.path (at the stack top's package table) finds "cell". */
static bool path_finds_cell(lua_State *L, int package) {
  lua_getfield(L, package, "searchpath");
  if (!lua_isfunction(L, -1)) { /* plain Lua 5.1: no searchpath */
    lua_pop(L, 1);
    return false;
  }
  lua_pushliteral(L, "cell");
  lua_getfield(L, package, "path");
  if (lua_pcall(L, 2, 1, 0) != LUA_OK_COMPAT) {
    lua_pop(L, 1);
    return false;
  }
  bool found = lua_isstring(L, -1);
  lua_pop(L, 1);
  return found;
}

/* The folder of the running executable into out, or "" when unknown. */
static void exe_dir(char *out, size_t size) {
  out[0] = '\0';
  ssize_t n = readlink("/proc/self/exe", out, size - 1);
  if (n <= 0) return;
  out[n] = '\0';
  char *slash = strrchr(out, '/');
  if (slash) *slash = '\0';
  else out[0] = '\0';
}

/* Try the candidate folders in order. On success pushes the first holding
 * cell/init.lua and returns true; otherwise pushes the list tried (for the
 * error message) and returns false. */
static bool find_lua_dir(lua_State *L) {
  char exe[4096];
  exe_dir(exe, sizeof exe);
  const char *env = getenv("CELL_LUA_DIR");
  int top = lua_gettop(L);
  if (env && *env) lua_pushstring(L, env);
  lua_pushstring(L, CELL_LUA_DIR);
  if (exe[0]) {
    lua_pushfstring(L, "%s/../share/lua/" LUA_VDIR, exe);
    lua_pushfstring(L, "%s/../lua", exe);
  }
  int n = lua_gettop(L) - top;
  for (int i = 1; i <= n; i++) {
    lua_pushfstring(L, "%s/cell/init.lua", lua_tostring(L, top + i));
    bool there = file_exists(lua_tostring(L, -1));
    lua_pop(L, 1);
    if (there) {
      lua_pushvalue(L, top + i);
      lua_replace(L, top + 1);
      lua_settop(L, top + 1);
      return true;
    }
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    luaL_addstring(&b, "\n\t");
    luaL_addstring(&b, lua_tostring(L, top + i));
  }
  luaL_pushresult(&b);
  lua_replace(L, top + 1);
  lua_settop(L, top + 1);
  return false;
}

static int require_cell(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cell");
  lua_call(L, 1, 1);
  return 1;
}

int cell_openlibs(lua_State *L) {
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "cell_openlibs: the package library is not open "
                       "(call luaL_openlibs before cell_openlibs)");
    return LUA_ERRRUN;
  }
  int package = lua_gettop(L);
  lua_getfield(L, package, "preload");
  if (!lua_istable(L, -1)) {
    lua_settop(L, package - 1);
    lua_pushliteral(L, "cell_openlibs: package.preload is missing");
    return LUA_ERRRUN;
  }
  lua_pushcfunction(L, luaopen_cell_core);
  lua_setfield(L, -2, "cell.core");
  lua_pop(L, 1);
  if (!path_finds_cell(L, package)) {
    if (!find_lua_dir(L)) {
      const char *tried = lua_tostring(L, -1);
      lua_pushfstring(L,
                      "cell_openlibs: cannot find cell's Lua files (cell/init.lua): not on "
                      "package.path, nor in any of:%s\nset CELL_LUA_DIR to the folder that "
                      "holds cell/, or add it to package.path",
                      tried);
      lua_replace(L, package);
      lua_settop(L, package);
      return LUA_ERRRUN;
    }
    const char *dir = lua_tostring(L, -1);
    lua_getfield(L, package, "path");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
    lua_setfield(L, package, "path");
    lua_pop(L, 2); /* the old path, the folder */
  }
  lua_pop(L, 1); /* package */
  lua_pushcfunction(L, require_cell);
  return lua_pcall(L, 0, 1, 0);
}

/* --- the FFI helpers: core._ffi_* -------------------------------------------------- */

/* cell.ffi's hand-over of a handle to Lua (l_ffi_tensor, below). Not in
 * cell_ffi.h: it belongs to the binding, not the engine, and cell.ffi
 * declares it itself. */
CELL_API void cell_lua_ffi_give(cell_tensor *t);

/* The text of cell_ffi.h, for ffi.cdef: built into the binding so that the
 * declarations LuaJIT parses are the ones this binary was compiled with,
 * wherever (and whether) the headers are installed. */
#ifndef CELL_FFI_HEADER
#define CELL_FFI_HEADER "include/cell_ffi.h"
#endif
#if defined(__ELF__)
__asm__(".section .rodata\n"
        ".globl cell__ffi_header_text\n"
        ".hidden cell__ffi_header_text\n"
        ".type cell__ffi_header_text, @object\n"
        "cell__ffi_header_text:\n"
        ".incbin \"" CELL_FFI_HEADER "\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char cell__ffi_header_text[] __attribute__((visibility("hidden")));
#define FFI_HEADER_TEXT cell__ffi_header_text
#else
#define FFI_HEADER_TEXT NULL
#endif

static int l_ffi_cdef(lua_State *L) {
  const char *text = FFI_HEADER_TEXT;
  if (text) lua_pushstring(L, text);
  else lua_pushnil(L);
  return 1;
}

/* Sizes and field offsets of every struct in cell_ffi.h, and the value of
 * every enum constant, as this C build sees them: the FFI spec compares
 * them with ffi.sizeof / ffi.offsetof, and checks that every struct and
 * constant the header declares is listed here. */
typedef struct {
  const char *name;
  size_t offset;
} field_info;

#define FIELD(s, f) {#f, offsetof(s, f)}
static const field_info alloc_stats_fields[] = {
    FIELD(cell_alloc_stats, in_use),  FIELD(cell_alloc_stats, peak),
    FIELD(cell_alloc_stats, cached),  FIELD(cell_alloc_stats, n_alloc),
    FIELD(cell_alloc_stats, n_os),    {NULL, 0}};

static const struct {
  const char *name;
  size_t size;
  const field_info *fields;
} ffi_structs[] = {
    {"cell_alloc_stats", sizeof(cell_alloc_stats), alloc_stats_fields},
};

#define K(c) {#c, (long)(c)}
static const struct {
  const char *name;
  long value;
} ffi_constants[] = {
    K(CELL_DTYPE_F32), K(CELL_DTYPE_F64), K(CELL_DTYPE_F16), K(CELL_DTYPE_BF16),
    K(CELL_DTYPE_I8), K(CELL_DTYPE_U8), K(CELL_DTYPE_I32), K(CELL_DTYPE_I64),
    K(CELL_DTYPE_BOOL), K(CELL_DTYPE_I16), K(CELL_DTYPE_COUNT),
    K(CELL_OK), K(CELL_ERR_VALUE), K(CELL_ERR_TYPE), K(CELL_ERR_INDEX), K(CELL_ERR_MEMORY),
    K(CELL_ERR_RUNTIME), K(CELL_ERR_NOTIMPL), K(CELL_ERR_INTERRUPT), K(CELL_STATUS_COUNT),
    K(CELL_OP_ADD), K(CELL_OP_SUB), K(CELL_OP_MUL), K(CELL_OP_DIV), K(CELL_OP_POW),
    K(CELL_OP_MAXIMUM), K(CELL_OP_MINIMUM), K(CELL_OP_EQ), K(CELL_OP_NE), K(CELL_OP_LT),
    K(CELL_OP_LE), K(CELL_OP_GT), K(CELL_OP_GE), K(CELL_OP_LOGICAL_AND), K(CELL_OP_LOGICAL_OR),
    K(CELL_OP_ATAN2), K(CELL_OP_REMAINDER), K(CELL_OP_FMOD), K(CELL_OP_FLOOR_DIVIDE),
    K(CELL_OP_LOGICAL_XOR),
    K(CELL_BINOP_COUNT),
    K(CELL_OP_ABS), K(CELL_OP_NEG), K(CELL_OP_EXP), K(CELL_OP_LOG), K(CELL_OP_LOG1P),
    K(CELL_OP_SQRT), K(CELL_OP_RSQRT), K(CELL_OP_SIN), K(CELL_OP_COS), K(CELL_OP_TANH),
    K(CELL_OP_SIGMOID), K(CELL_OP_RELU), K(CELL_OP_GELU), K(CELL_OP_SILU), K(CELL_OP_FLOOR),
    K(CELL_OP_CEIL), K(CELL_OP_ROUND), K(CELL_OP_SIGN), K(CELL_OP_LOGICAL_NOT),
    K(CELL_OP_ERF), K(CELL_OP_ERFC), K(CELL_OP_TAN), K(CELL_OP_ATAN), K(CELL_OP_ASIN),
    K(CELL_OP_ACOS), K(CELL_OP_SINH), K(CELL_OP_COSH), K(CELL_OP_LOG2), K(CELL_OP_LOG10),
    K(CELL_OP_EXP2), K(CELL_OP_EXPM1), K(CELL_OP_SQUARE), K(CELL_OP_RECIPROCAL), K(CELL_OP_ISNAN),
    K(CELL_OP_ISINF), K(CELL_OP_ISFINITE),
    K(CELL_UNOP_COUNT),
    K(CELL_RED_SUM), K(CELL_RED_MEAN), K(CELL_RED_PROD), K(CELL_RED_MAX), K(CELL_RED_MIN),
    K(CELL_RED_ALL), K(CELL_RED_ANY), K(CELL_REDOP_COUNT),
};

/* {structs = {name = {size =, fields = {name = offset}}}, constants = {name = value}} */
static int l_ffi_layout(lua_State *L) {
  lua_newtable(L);
  lua_newtable(L);
  for (size_t i = 0; i < sizeof ffi_structs / sizeof ffi_structs[0]; i++) {
    lua_newtable(L);
    lua_pushinteger(L, (lua_Integer)ffi_structs[i].size);
    lua_setfield(L, -2, "size");
    lua_newtable(L);
    for (const field_info *f = ffi_structs[i].fields; f->name; f++) {
      lua_pushinteger(L, (lua_Integer)f->offset);
      lua_setfield(L, -2, f->name);
    }
    lua_setfield(L, -2, "fields");
    lua_setfield(L, -2, ffi_structs[i].name);
  }
  lua_setfield(L, -2, "structs");
  lua_newtable(L);
  for (size_t i = 0; i < sizeof ffi_constants / sizeof ffi_constants[0]; i++) {
    lua_pushinteger(L, (lua_Integer)ffi_constants[i].value);
    lua_setfield(L, -2, ffi_constants[i].name);
  }
  lua_setfield(L, -2, "constants");
  return 1;
}

/* The addresses of a few engine functions, as this module calls them: the
 * FFI side checks that the library it bound is this very engine (and not
 * a second copy, whose allocator and tensors would be strangers). */
static int l_ffi_symbols(lua_State *L) {
  lua_newtable(L);
  /* The file that holds the engine: this module's .so, or the executable
   * when the engine is linked into it (the `cell` executable, a host). */
  Dl_info info;
  if (dladdr((void *)(uintptr_t)&cell_tensor_release, &info) && info.dli_fname) {
    lua_pushstring(L, info.dli_fname);
    lua_setfield(L, -2, "library");
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    lua_pushstring(L, self);
    lua_setfield(L, -2, "executable");
  }
  lua_pushlightuserdata(L, (void *)(uintptr_t)&cell_tensor_release);
  lua_setfield(L, -2, "cell_tensor_release");
  lua_pushlightuserdata(L, (void *)(uintptr_t)&cell_op_matmul);
  lua_setfield(L, -2, "cell_op_matmul");
  lua_pushlightuserdata(L, (void *)(uintptr_t)&cell_alloc_get_stats);
  lua_setfield(L, -2, "cell_alloc_get_stats");
  /* The binding's own side door lives in this module (or the executable),
   * which links libcell.so unless built with STATIC=1: a file of its own. */
  lua_newtable(L);
  if (dladdr((void *)(uintptr_t)&cell_lua_ffi_give, &info) && info.dli_fname) {
    lua_pushstring(L, info.dli_fname);
    lua_setfield(L, -2, "library");
  }
  lua_pushlightuserdata(L, (void *)(uintptr_t)&cell_lua_ffi_give);
  lua_setfield(L, -2, "cell_lua_ffi_give");
  lua_setfield(L, -2, "binding");
  return 1;
}

/* t -> its cell_tensor* as a light userdata, borrowed (valid while t is). */
static int l_ffi_handle(lua_State *L) {
  lua_pushlightuserdata(L, lc_check_tensor(L, 1));
  return 1;
}

/* Handles from the FFI to Lua. A Lua tensor is made from a cell_tensor *
 * only here, and no value a script can make turns into one: numbers,
 * strings and light userdata (t:data_ptr(), _ffi_handle) are all refused,
 * and so are LuaJIT's cdata, which plain LuaJIT makes without the ffi
 * module (4096ULL). Instead the handle comes through a slot per thread
 * that only C can fill: cell.ffi's F.tensor(h) calls
 * cell_lua_ffi_give(h) through the FFI, which parks a new reference to h
 * there, and then core._ffi_tensor(), which takes it. Calling a C
 * function needs the FFI (or a C host), which can reach any address
 * anyway; a script without it finds the slot empty (or holding a live
 * tensor some F.tensor left when it was interrupted), never a pointer of
 * its own making. Validating numbers against a registry of live handles
 * would need the engine to record every tensor it makes and frees, a
 * locked hash set on the path of every op; this costs one C call per
 * F.tensor. The slot holds a reference of its own, so it never dangles. */
static __thread cell_tensor *ffi_slot;

CELL_API void cell_lua_ffi_give(cell_tensor *t) {
  cell_tensor *old = ffi_slot;
  cell_tensor_retain(t);
  ffi_slot = t;
  cell_tensor_release(old);
}

/* core._ffi_tensor() -> a Lua tensor holding the reference that
 * cell_lua_ffi_give parked (the data is shared, not copied). */
static int l_ffi_tensor(lua_State *L) {
  if (!lua_isnone(L, 1))
    return lc_argerror(L, 1, "TypeError: _ffi_tensor takes no argument (got %s): a tensor handle "
                             "reaches Lua only through cell.ffi's F.tensor, never as a value",
                       lc_typename(L, 1));
  if (!ffi_slot)
    return lc_error(L, "ValueError: _ffi_tensor: no tensor handle was handed over "
                       "(cell.ffi's F.tensor(h) makes a Lua tensor from a handle)");
  cell_tensor **slot = lc_newtensor(L); /* first: it may raise, the slot keeps its reference */
  *slot = ffi_slot;
  ffi_slot = NULL;
  return lc_finish(L, CELL_OK);
}

static const luaL_Reg embed_funcs[] = {
    {"_ffi_cdef", l_ffi_cdef},       {"_ffi_layout", l_ffi_layout},
    {"_ffi_symbols", l_ffi_symbols}, {"_ffi_handle", l_ffi_handle},
    {"_ffi_tensor", l_ffi_tensor},   {NULL, NULL}};

void lc_register_embed(lua_State *L, int module, int base) {
  lc_setfuncs(L, module, base, embed_funcs);
}
