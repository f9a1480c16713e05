/* loptim.c - the Lua binding of include/cell_optim.h: functions of the
 * table core.nnops, which cell.ops (lua/cell/ops.lua) exposes. */
#include "lcell.h"

static const luaL_Reg optim_funcs[] = {{NULL, NULL}};

void lc_register_optim(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, optim_funcs); }
