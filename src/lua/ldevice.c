/* ldevice.c - devices from Lua: cell.set_device, cell.get_device,
 * Tensor:move_to, and the test device's registration (only when the
 * environment variable CELL_TEST_DEVICE is set: the tests' hook). */
#include "lcell.h"
#include <stdlib.h>
#include <string.h>

/* The test device (src/ops/testdev.c), registered by tests only. */
CELL_API cell_status cell_testdev_register(int *id);

/* The device named by the arguments at i (name) and i + 1 (optional index). */
static int check_device(lua_State *L, int i, const char *op) {
  if (lua_type(L, i) != LUA_TSTRING)
    return lc_argerror(L, i, "TypeError: %s: expected a device name (a string), got %s", op,
                       luaL_typename(L, i));
  lua_Integer index = 0;
  if (!lua_isnoneornil(L, i + 1)) {
    if (lua_type(L, i + 1) != LUA_TNUMBER)
      return lc_argerror(L, i + 1, "TypeError: %s: device_id must be a non-negative integer, got %s",
                         op, luaL_typename(L, i + 1));
    lua_Number v = lua_tonumber(L, i + 1);
    if (!(v >= 0 && v <= 1000000) || v != (lua_Number)(lua_Integer)v)
      return lc_argerror(L, i + 1, "ValueError: %s: device_id must be a non-negative integer, got %g",
                         op, (double)v);
    index = lua_tointeger(L, i + 1);
  }
  int id;
  if (cell_device_find(lua_tostring(L, i), (int)index, &id) != CELL_OK) lc_raise(L);
  return id;
}

static int l_set_device(lua_State *L) {
  int id = check_device(L, 1, "set_device");
  if (cell_set_device(id) != CELL_OK) return lc_raise(L);
  return 0;
}

/* name, index: "CPU", 0 or "TEST", 0. */
static void push_device(lua_State *L, int id) {
  const char *full = cell_device_name(id);
  const char *colon = strchr(full, ':');
  if (!colon) {
    lua_pushstring(L, full);
    lua_pushinteger(L, 0);
    return;
  }
  lua_pushlstring(L, full, (size_t)(colon - full));
  lua_pushinteger(L, atoi(colon + 1));
}

static int l_get_device(lua_State *L) {
  push_device(L, cell_get_device());
  return 2;
}

static int l_register_test_device(lua_State *L) {
  int id;
  if (cell_testdev_register(&id) != CELL_OK) return lc_raise(L);
  lua_pushinteger(L, id);
  return 1;
}

int lc_tensor_move_to(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int id = check_device(L, 2, "move_to");
  if (cell_tensor_device(t) == id) { /* already there: the tensor itself */
    lua_settop(L, 1);
    return 1;
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_move_to(t, id, out));
}

void lc_push_device_name(lua_State *L, const cell_tensor *t) {
  lua_pushstring(L, cell_device_name(cell_tensor_device(t)));
}

cell_status lc_to_default_device(cell_tensor **slot) {
  int id = cell_get_device();
  if (!*slot || cell_tensor_device(*slot) == id) return CELL_OK;
  cell_tensor *m;
  cell_status s = cell_tensor_move_to(*slot, id, &m);
  if (s != CELL_OK) return s;
  cell_tensor_release(*slot);
  *slot = m;
  return CELL_OK;
}

cell_tensor *lc_host_tensor(lua_State *L, cell_tensor *t) {
  if (cell_tensor_device(t) == 0) {
    cell_tensor_retain(t);
    return t;
  }
  cell_tensor *h;
  if (cell_tensor_move_to(t, 0, &h) != CELL_OK) lc_raise(L);
  return h;
}

static const luaL_Reg device_funcs[] = {
    {"set_device", l_set_device}, {"get_device", l_get_device}, {NULL, NULL}};

void lc_register_device(lua_State *L, int module, int base) {
  lc_setfuncs(L, module, base, device_funcs);
  if (getenv("CELL_TEST_DEVICE")) {
    lua_pushcfunction(L, l_register_test_device);
    lua_setfield(L, module, "_register_test_device");
  }
}
