/* lconv.c - the Lua binding of include/cell_conv.h: functions of the
 * table core.nnops, which cell.ops (lua/cell/ops.lua) exposes. */
#include "lcell.h"

static const luaL_Reg conv_funcs[] = {{NULL, NULL}};

void lc_register_conv(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, conv_funcs); }
