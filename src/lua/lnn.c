/* lnn.c - the Lua binding of include/cell_nn.h: functions of the
 * table core.nnops, which cell.ops (lua/cell/ops.lua) exposes. */
#include "lcell.h"

static const luaL_Reg nn_funcs[] = {{NULL, NULL}};

void lc_register_nn(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, nn_funcs); }
