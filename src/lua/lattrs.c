/* lattrs.c - attributed tensors: a tensor userdata that also carries a Lua
 * table of per-object attributes (what a Parameter is), and the three
 * module functions the Lua layer builds Parameters with.
 *
 * An attributed tensor has the plain tensor metatable, so every op takes
 * it; its userdata has one user value, the attrs table, and its `attrs`
 * flag set. Plain tensors have no user value and pay only the flag test.
 * The attrs table's metatable steers the userdata's metamethods: its
 * `__index` serves field reads that the table itself lacks (before the
 * tensor's methods and properties), `__setattr(self, key, value)` takes
 * string-keyed assignments, and `__tostring(self)` prints the object. */
#include "lcell.h"

/* The attributed tensor at 1 with string key at 2: push attrs[key] (a
 * non-raw read, so the attrs metatable's __index takes part) and return
 * true, or push nothing and return false when that is nil. */
bool lc_attrs_get(lua_State *L) {
  lc_getuservalue(L, 1);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return false;
  }
  lua_pushvalue(L, 2);
  lua_gettable(L, -2);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 2);
    return false;
  }
  lua_remove(L, -2);
  return true;
}

/* The attributed tensor at 1: push the field `name` of its attrs table's
 * metatable and return true, or push nothing and return false when there
 * is no such field. */
bool lc_attrs_meta(lua_State *L, const char *name) {
  int top = lua_gettop(L);
  lc_getuservalue(L, 1);
  if (lua_istable(L, -1) && lua_getmetatable(L, -1)) {
    lua_pushstring(L, name);
    lua_rawget(L, -2);
    if (!lua_isnil(L, -1)) {
      lua_replace(L, top + 1);
      lua_settop(L, top + 1);
      return true;
    }
  }
  lua_settop(L, top);
  return false;
}

/* _attach(t, attrs) -> a new attributed tensor: a detached alias of t (the
 * same storage and view, no autograd history, requires_grad off) with attrs
 * as its user value. The userdata and its user value come first, so an
 * engine failure leaks nothing. */
static int l_attach(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  lc_check_table(L, 2, "an attributes table");
  tensor_ud *ud = lua_newuserdatauv(L, sizeof *ud, 1);
  ud->t = NULL;
  ud->kind = &lc_tensor_kind;
  ud->attrs = 1;
  lua_pushvalue(L, UV_TENSOR_MT);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, 2);
  lc_setuservalue(L, -2);
  return lc_finish(L, cell_tensor_detach(t, &ud->t));
}

/* _attrs(x) -> the attrs table of an attributed tensor, else nil (for any
 * other value, plain tensors included). Cheap: the Cell's __newindex asks
 * it of every value assigned. */
static int l_attrs(lua_State *L) {
  tensor_ud *ud = lc_test_ud(L, 1);
  if (ud && ud->attrs) lc_getuservalue(L, 1);
  else lua_pushnil(L);
  return 1;
}

/* _swap(p, src) -> p: p's engine tensor becomes a detached alias of src's,
 * keeping p's userdata (so its identity and attrs) and its requires_grad
 * flag. The old engine tensor goes to a scratch userdata and is released
 * by the collector, so nothing up the C stack is left with a freed one. */
static int l_swap(lua_State *L) {
  tensor_ud *ud = lc_test_ud(L, 1);
  if (!ud || !ud->attrs)
    return lc_argerror(L, 1, "TypeError: _swap: expected an attributed Tensor (a Parameter), got %s",
                       ud ? "Tensor" : luaL_typename(L, 1));
  cell_tensor *old = lc_check_tensor(L, 1);
  cell_tensor *src = lc_check_tensor(L, 2);
  int rg = cell_tensor_requires_grad(old);
  cell_tensor **slot = lc_newtensor(L);
  if (cell_tensor_detach(src, slot) != CELL_OK) return lc_raise(L);
  if (rg && cell_tensor_set_requires_grad(*slot, 1) != CELL_OK) return lc_raise(L);
  ud->t = *slot;
  *slot = old;
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg attrs_funcs[] = {
    {"_attach", l_attach}, {"_attrs", l_attrs}, {"_swap", l_swap}, {NULL, NULL}};

void lc_register_attrs(lua_State *L, int module, int base) { lc_setfuncs(L, module, base, attrs_funcs); }
