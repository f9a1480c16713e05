/* lcuda.c - the cell.cuda Lua module: registers one "GPU" device per
 * visible CUDA device when it loads, and the functions of cell.cuda.
 *
 * Without a usable GPU (cudaGetDeviceCount fails or finds none) the module
 * still loads: is_available() is false, nothing is registered, and
 * cell.set_device("GPU") and Tensor:move_to("GPU") raise
 * "RuntimeError: no CUDA device: <CUDA's reason>" (the module wraps those
 * two functions of cell.core; other names pass through unchanged). The
 * devices themselves are found and registered by libcell_cuda.so
 * (gpu_init.c), which C hosts load with cell_device_load("cuda"). */
#include "gpu.h"
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int no_gpu(lua_State *L) {
  return luaL_error(L, "RuntimeError: no CUDA device: %s", gpu_unavailable);
}

static int is_gpu_name(lua_State *L, int i) {
  if (lua_type(L, i) != LUA_TSTRING) return 0;
  const char *s = lua_tostring(L, i);
  return strncmp(s, "GPU", 3) == 0 && (s[3] == 0 || s[3] == ':');
}

/* Wrappers (no GPU): the original function is upvalue 1; arg names the
 * device. */
static int guard(lua_State *L, int arg) {
  if (is_gpu_name(L, arg)) return no_gpu(L);
  int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  return lua_gettop(L);
}
static int guard_set_device(lua_State *L) { return guard(L, 1); }
static int guard_move_to(lua_State *L) { return guard(L, 2); }

/* t[k] = wrapper over t[k] (when t[k] is a function). */
static void wrap(lua_State *L, int t, const char *k, lua_CFunction f) {
  lua_getfield(L, t, k);
  if (lua_type(L, -1) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return;
  }
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, t, k);
}

static void install_guards(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushstring(L, "cell.core");
  lua_call(L, 1, 1);
  int core = lua_gettop(L);
  wrap(L, core, "set_device", guard_set_device);
  lua_getfield(L, core, "Tensor");
  if (lua_istable(L, -1)) wrap(L, lua_gettop(L), "move_to", guard_move_to);
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, -1, "cell"); /* cell copied core's functions when it loaded */
  if (lua_istable(L, -1)) {
    lua_getfield(L, core, "set_device");
    lua_setfield(L, -2, "set_device");
  }
  lua_settop(L, core - 1);
}

/* The device of optional argument i (0-based index; default 0). */
static gpu_ctx *check_gpu(lua_State *L, int i) {
  if (!lua_isnoneornil(L, i) && (lua_type(L, i) != LUA_TNUMBER || lua_tonumber(L, i) != (lua_Number)lua_tointeger(L, i)))
    luaL_error(L, "TypeError: cell.cuda: device must be an integer, got %s", luaL_typename(L, i));
  lua_Integer d = lua_isnoneornil(L, i) ? 0 : lua_tointeger(L, i);
  if (!gpu_count) no_gpu(L);
  if (d < 0 || d >= gpu_count)
    luaL_error(L, "ValueError: cell.cuda: device %d out of range (%d GPU%s)", (int)d, gpu_count,
               gpu_count == 1 ? "" : "s");
  return &gpu_ctxs[d];
}

static int l_is_available(lua_State *L) {
  lua_pushboolean(L, gpu_count > 0);
  return 1;
}

static int l_device_count(lua_State *L) {
  lua_pushinteger(L, gpu_count);
  return 1;
}

static int l_unavailable_reason(lua_State *L) {
  if (gpu_count) lua_pushnil(L);
  else lua_pushstring(L, gpu_unavailable);
  return 1;
}

static int l_synchronize(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  if (gpu_sync(g, "synchronize") != CELL_OK) return luaL_error(L, "%s", cell_last_error());
  return 0;
}

static size_t read_counter(gpu_ctx *g, const size_t *field) {
  pthread_mutex_lock(&g->lock);
  size_t v = *field;
  pthread_mutex_unlock(&g->lock);
  return v;
}

static int l_memory_allocated(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  lua_pushinteger(L, (lua_Integer)read_counter(g, &g->allocated));
  return 1;
}

static int l_max_memory_allocated(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  lua_pushinteger(L, (lua_Integer)read_counter(g, &g->max_allocated));
  return 1;
}

static int l_memory_reserved(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  lua_pushinteger(L, (lua_Integer)read_counter(g, &g->reserved));
  return 1;
}

static int l_reset_peak_memory_stats(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  pthread_mutex_lock(&g->lock);
  g->max_allocated = g->allocated;
  pthread_mutex_unlock(&g->lock);
  return 0;
}

static int l_memory_stats(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  pthread_mutex_lock(&g->lock);
  lua_Integer v[5] = {(lua_Integer)g->allocated, (lua_Integer)g->max_allocated,
                      (lua_Integer)g->reserved, (lua_Integer)g->cached, (lua_Integer)g->mallocs};
  pthread_mutex_unlock(&g->lock);
  static const char *const k[5] = {"allocated", "max_allocated", "reserved", "cached", "num_mallocs"};
  lua_createtable(L, 0, 5);
  for (int i = 0; i < 5; i++) {
    lua_pushinteger(L, v[i]);
    lua_setfield(L, -2, k[i]);
  }
  return 1;
}

static int l_empty_cache(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  gpu_empty_cache(g);
  return 0;
}

static int l_set_allow_tf32(lua_State *L) {
  if (lua_type(L, 1) != LUA_TBOOLEAN)
    return luaL_error(L, "TypeError: cell.cuda.set_allow_tf32: expected a boolean, got %s", luaL_typename(L, 1));
  gpu_ctx *g = check_gpu(L, 2);
  g->allow_tf32 = lua_toboolean(L, 1);
  return 0;
}

static int l_get_allow_tf32(lua_State *L) {
  gpu_ctx *g = check_gpu(L, 1);
  lua_pushboolean(L, g->allow_tf32);
  return 1;
}

static const luaL_Reg funcs[] = {
    {"is_available", l_is_available},
    {"device_count", l_device_count},
    {"unavailable_reason", l_unavailable_reason},
    {"synchronize", l_synchronize},
    {"memory_allocated", l_memory_allocated},
    {"max_memory_allocated", l_max_memory_allocated},
    {"memory_reserved", l_memory_reserved},
    {"reset_peak_memory_stats", l_reset_peak_memory_stats},
    {"memory_stats", l_memory_stats},
    {"empty_cache", l_empty_cache},
    {"set_allow_tf32", l_set_allow_tf32},
    {"get_allow_tf32", l_get_allow_tf32},
    {NULL, NULL},
};

int luaopen_cell_cuda(lua_State *L);
__attribute__((visibility("default"))) int luaopen_cell_cuda(lua_State *L) {
  if (gpu_init() != CELL_OK) return luaL_error(L, "RuntimeError: %s", cell_last_error());
  if (!gpu_count) install_guards(L);
  lua_newtable(L);
  for (const luaL_Reg *r = funcs; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
  return 1;
}
