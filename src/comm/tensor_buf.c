/* tensor_buf.c - a cell tensor as a raw buffer for the transports (see
 * tensor_buf.h). */
#include "tensor_buf.h"
#include <stdlib.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN const cm_dtype cm_dtypes[CM_NDTYPES] = {{"float32", 4}, {"float64", 8}, {"float16", 2}, {"bfloat16", 2},
                                               {"int8", 1},    {"uint8", 1},   {"int32", 4},   {"int64", 8},
                                               {"bool", 1},    {"int16", 2}};

HIDDEN void cm_tbuf_push_k(lua_State *L) {
  lua_newtable(L);
  int k = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "cell.core");
  lua_call(L, 1, 1);
  int core = lua_gettop(L);
  lua_getfield(L, core, "is_tensor");
  lua_setfield(L, k, "is_tensor");
  /* a tensor, for its metatable's __index and its methods */
  lua_getfield(L, core, "empty");
  lua_createtable(L, 1, 0);
  lua_pushinteger(L, 1);
  lua_rawseti(L, -2, 1);
  lua_call(L, 1, 1);
  int t = lua_gettop(L);
  if (!lua_getmetatable(L, t)) {
    luaL_error(L, "RuntimeError: cell.communication: cell.core's tensors have no metatable");
    return;
  }
  lua_getfield(L, -1, "__index");
  lua_setfield(L, k, "index");
  lua_pop(L, 1);
  static const char *const methods[] = {"numel", "is_contiguous", "data_ptr"};
  for (int i = 0; i < 3; i++) {
    lua_getfield(L, k, "index");
    lua_pushvalue(L, t);
    lua_pushstring(L, methods[i]);
    lua_call(L, 2, 1);
    lua_setfield(L, k, methods[i]);
  }
  lua_newtable(L); /* dtypes[dtype object] = index in cm_dtypes */
  for (int i = 0; i < CM_NDTYPES; i++) {
    lua_getfield(L, core, cm_dtypes[i].name);
    lua_pushinteger(L, i);
    lua_rawset(L, -3);
  }
  lua_setfield(L, k, "dtypes");
  lua_settop(L, k);
}

static void call_k(lua_State *L, int k, const char *name, int idx) {
  lua_getfield(L, k, name);
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
}

/* t.<field> through the tensors' own __index. */
static void field_k(lua_State *L, int k, int idx, const char *field) {
  lua_getfield(L, k, "index");
  lua_pushvalue(L, idx);
  lua_pushstring(L, field);
  lua_call(L, 2, 1);
}

HIDDEN void cm_tbuf_get(lua_State *L, int k, int idx, const char *what, const char *kind, const char *layer,
                        cm_tbuf *b) {
  idx = lua_absindex(L, idx);
  k = lua_absindex(L, k);
  call_k(L, k, "is_tensor", idx);
  int ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!ok) luaL_error(L, "TypeError: %s: argument #%d must be a Tensor, but got %s", what, idx, luaL_typename(L, idx));
  field_k(L, k, idx, "device");
  const char *dev = lua_tostring(L, -1);
  size_t kl = strlen(kind);
  if (!dev || strncmp(dev, kind, kl) != 0 || (dev[kl] != '\0' && dev[kl] != ':'))
    luaL_error(L, "ValueError: %s: argument #%d is on %s; the %s layer takes %s tensors", what, idx, dev ? dev : "?",
               layer, kind);
  b->device = dev[kl] == ':' ? atoi(dev + kl + 1) : 0;
  lua_pop(L, 1);
  call_k(L, k, "is_contiguous", idx);
  ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!ok) luaL_error(L, "ValueError: %s: argument #%d must be contiguous", what, idx);
  call_k(L, k, "numel", idx);
  lua_Number n = lua_tonumber(L, -1);
  lua_pop(L, 1);
  if (n > 2147483647.0)
    luaL_error(L, "ValueError: %s: a tensor of %.0f elements is more than one %s call moves (2^31 - 1)", what, n, layer);
  lua_getfield(L, k, "dtypes");
  field_k(L, k, idx, "dtype");
  lua_rawget(L, -2);
  b->dtype = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : -1;
  lua_pop(L, 2);
  if (b->dtype < 0 || b->dtype >= CM_NDTYPES) luaL_error(L, "TypeError: %s: unsupported dtype", what);
  call_k(L, k, "data_ptr", idx);
  b->ptr = lua_touserdata(L, -1);
  lua_pop(L, 1);
  b->count = (int)n;
  b->esize = cm_dtypes[b->dtype].size;
}
