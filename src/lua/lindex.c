/* lindex.c - the Lua binding of the ops whose output size depends on the
 * data: Tensor methods (and so cell.ops functions)
 *
 *   t:nonzero([as_tuple | {as_tuple =}])  1-based positions, int64 {k, ndim},
 *                                         or (as_tuple) a table of ndim 1-D tensors
 *   t:masked_select(mask)                 1-D, the elements where mask is true
 *   t:masked_scatter(mask, source)        source's elements at mask's positions
 *
 * The engine checks dtypes and shapes (include/cell.h). */
#include "lcell.h"

static int tensor_nonzero(lua_State *L) {
  static const char *const keys[] = {"as_tuple", NULL};
  cell_tensor *a = lc_check_tensor(L, 1);
  int as_tuple = 0;
  if (lua_isboolean(L, 2)) {
    as_tuple = lua_toboolean(L, 2);
  } else {
    int opts = lc_options(L, 2, "nonzero", keys);
    if (lc_field(L, opts, "as_tuple")) {
      if (!lua_isboolean(L, -1))
        lc_argerror(L, 2, "TypeError: nonzero: as_tuple must be a boolean, got %s",
                    luaL_typename(L, -1));
      as_tuple = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
  lua_settop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  lc_finish(L, cell_op_nonzero(a, 1, out));
  if (!as_tuple) return 1;
  /* one 1-D tensor per dimension: the columns (views) */
  int nd = cell_tensor_ndim(a);
  lua_createtable(L, nd, 0);
  for (int d = 0; d < nd; d++) {
    cell_tensor **col = lc_newtensor(L);
    lc_finish(L, cell_tensor_select(*out, 1, d, col));
    lua_rawseti(L, -2, d + 1);
  }
  return 1;
}

static int tensor_masked_select(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1), *m = lc_check_tensor(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_masked_select(a, m, out));
}

static int tensor_masked_scatter(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1), *m = lc_check_tensor(L, 2);
  cell_tensor *src = lc_check_tensor(L, 3);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_masked_scatter(a, m, src, out));
}

static const luaL_Reg index_methods[] = {{"nonzero", tensor_nonzero},
                                         {"masked_select", tensor_masked_select},
                                         {"masked_scatter", tensor_masked_scatter},
                                         {NULL, NULL}};

void lc_register_index(lua_State *L, int base) { lc_setfuncs(L, base + 1, base, index_methods); }
