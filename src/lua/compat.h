/* compat.h - the few Lua 5.2+ API calls the binding uses, for LuaJIT's 5.1 API. */
#ifndef CELL_LUA_COMPAT_H
#define CELL_LUA_COMPAT_H
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#if LUA_VERSION_NUM < 502
#define lua_rawlen(L, i) lua_objlen(L, (i))
#define lua_newuserdatauv(L, sz, nuv) lua_newuserdata(L, (sz))
#endif

/* A userdata's one user value: set pops the value on the stack top and
 * stores it in the userdata at i; get pushes it. Lua 5.1 and LuaJIT keep it
 * as the userdata's environment table (so only a table can be stored, and
 * a userdata that was never given one reads as the creating function's
 * environment: callers keep a flag of their own saying whether it is set). */
#if LUA_VERSION_NUM >= 504
#define lc_setuservalue(L, i) ((void)lua_setiuservalue(L, (i), 1))
#define lc_getuservalue(L, i) ((void)lua_getiuservalue(L, (i), 1))
#elif LUA_VERSION_NUM >= 502
#define lc_setuservalue(L, i) lua_setuservalue(L, (i))
#define lc_getuservalue(L, i) ((void)lua_getuservalue(L, (i)))
#else
#define lc_setuservalue(L, i) ((void)lua_setfenv(L, (i)))
#define lc_getuservalue(L, i) lua_getfenv(L, (i))
#endif

/* LuaJIT 2.1 has these 5.2 auxiliary functions; plain Lua 5.1 does not. */
#if LUA_VERSION_NUM < 502 && !defined(luaL_newlibtable)
#define luaL_newlibtable(L, l) lua_createtable(L, 0, sizeof(l) / sizeof((l)[0]) - 1)
#define luaL_newlib(L, l) (luaL_newlibtable(L, l), luaL_setfuncs(L, l, 0))
static inline void luaL_setfuncs(lua_State *L, const luaL_Reg *l, int nup) {
  luaL_checkstack(L, nup, "too many upvalues");
  for (; l->name; l++) {
    for (int i = 0; i < nup; i++) lua_pushvalue(L, -nup);
    lua_pushcclosure(L, l->func, nup);
    lua_setfield(L, -(nup + 2), l->name);
  }
  lua_pop(L, nup);
}
static inline void luaL_setmetatable(lua_State *L, const char *tname) {
  luaL_getmetatable(L, tname);
  lua_setmetatable(L, -2);
}
static inline void *luaL_testudata(lua_State *L, int i, const char *tname) {
  void *p = lua_touserdata(L, i);
  if (p && lua_getmetatable(L, i)) {
    luaL_getmetatable(L, tname);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (same) return p;
  }
  return NULL;
}
#endif

#endif
