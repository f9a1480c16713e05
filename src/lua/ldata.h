/* ldata.h - the binding's side of cell_data.h, for the binding's files
 * that make per-sample transforms (ldata.c and the vision transforms). */
#ifndef CELL_LUA_LDATA_H
#define CELL_LUA_LDATA_H
#include "cell_data.h"
#include <lua.h>

/* The metatable name of a transform's userdata. */
#define LC_SAMPLE_OP_MT "cell.SampleOp"
/* Push op as a Lua transform; Lua owns it from then on (op->destroy runs
 * when the value is collected). op NULL raises the engine's last error. */
void lc_push_sample_op(lua_State *L, cell_sample_op *op);
/* The op of the transform at idx (borrowed: valid while the value lives);
 * raises a TypeError naming what was there otherwise. */
const cell_sample_op *lc_check_sample_op(lua_State *L, int idx);
/* The op, or NULL when idx holds no transform. */
const cell_sample_op *lc_test_sample_op(lua_State *L, int idx);
#endif
