/* lattention.c - the Lua binding of include/cell_attention.h: a function
 * of the table core.nnops, which cell.ops (lua/cell/ops.lua) exposes.
 *
 *   scaled_dot_product_attention(query, key, value
 *       [, {attn_mask =, dropout_p = 0, is_causal = false, scale =}])
 *
 * The binding checks Lua types and option names; the engine checks dtypes,
 * shapes and values. */
#include "lcell.h"

static int nn_sdpa(lua_State *L) {
  static const char *const OP = "scaled_dot_product_attention";
  static const char *const keys[] = {"attn_mask", "dropout_p", "is_causal", "scale", NULL};
  cell_tensor *q = lc_check_tensor(L, 1), *k = lc_check_tensor(L, 2), *v = lc_check_tensor(L, 3);
  cell_tensor *mask = NULL;
  double p = 0, scale = 0;
  int causal = 0, has_scale = 0;
  int opts = lc_options(L, 4, OP, keys) ? 4 : 0;
  if (lc_field(L, opts, "attn_mask")) {
    mask = lc_test_tensor(L, -1);
    if (!mask)
      lc_argerror(L, 4, "TypeError: %s: attn_mask must be a Tensor, got %s", OP,
                  luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  if (lc_field(L, opts, "dropout_p")) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      lc_argerror(L, 4, "TypeError: %s: dropout_p must be a number, got %s", OP,
                  luaL_typename(L, -1));
    p = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  if (lc_field(L, opts, "is_causal")) {
    if (!lua_isboolean(L, -1))
      lc_argerror(L, 4, "TypeError: %s: is_causal must be a boolean, got %s", OP,
                  luaL_typename(L, -1));
    causal = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  if (lc_field(L, opts, "scale")) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      lc_argerror(L, 4, "TypeError: %s: scale must be a number, got %s", OP,
                  luaL_typename(L, -1));
    scale = lua_tonumber(L, -1);
    has_scale = 1;
  }
  lua_pop(L, 1);
  /* the mask stays referenced by the options table until the call ends */
  cell_tensor **out = lc_newtensor(L);
  cell_generator *prev = lc_gen_enter(L); /* dropout draws from this state's generator */
  cell_status s = cell_op_scaled_dot_product_attention(q, k, v, mask, p, causal, has_scale, scale, out);
  lc_gen_leave(prev);
  return lc_finish(L, s);
}

static const luaL_Reg attention_funcs[] = {{"scaled_dot_product_attention", nn_sdpa},
                                           {NULL, NULL}};

void lc_register_attention(lua_State *L, int nnops, int base) {
  lc_setfuncs(L, nnops, base, attention_funcs);
}
