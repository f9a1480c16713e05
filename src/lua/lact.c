/* lact.c - the Lua binding of include/cell_act.h: the fused activations,
 * functions of the table core.nnops (so cell.ops.<name>), with
 * MindSpore's names and defaults:
 *
 *   leaky_relu(x [, alpha = 0.2])      elu(x [, alpha = 1.0])
 *   selu(x)                            celu(x [, alpha = 1.0])
 *   softsign(x)   mish(x)   relu6(x)   hardswish(x)   hardsigmoid(x)
 *   logsigmoid(x) tanhshrink(x)
 *   hardtanh(x [, min_val = -1.0 [, max_val = 1.0]])
 *   gelu(x [, approximate = "none"])   "none": x Phi(x); "tanh": the tanh form
 *
 * Numbers may also come in an options table ({alpha =}, {min_val =,
 * max_val =}, {approximate =}). */
#include "lcell.h"
#include "cell_act.h"
#include "cell_ffi.h"
#include <string.h>

/* The number at arg or opts[key] (arg a table), def when absent. */
static double num_arg(lua_State *L, int arg, int opts, const char *op, const char *key,
                      double def) {
  if (opts) {
    double v = def;
    if (lc_field(L, opts, key)) {
      if (lua_type(L, -1) != LUA_TNUMBER)
        lc_argerror(L, opts, "TypeError: %s: %s must be a number, got %s", op, key,
                    luaL_typename(L, -1));
      v = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    return v;
  }
  if (lua_isnoneornil(L, arg)) return def;
  if (lua_type(L, arg) != LUA_TNUMBER)
    lc_argerror(L, arg, "TypeError: %s: %s must be a number, got %s", op, key,
                luaL_typename(L, arg));
  return lua_tonumber(L, arg);
}

static int act(lua_State *L, cell_act kind, double p0, double p1) {
  cell_tensor *x = lc_check_tensor(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_activation(x, kind, p0, p1, out));
}

static int opts_at2(lua_State *L, const char *op, const char *const *keys) {
  if (!lua_istable(L, 2) || lc_test_tensor(L, 2)) return 0;
  return lc_options(L, 2, op, keys);
}

#define ALPHA_ACT(fname, KIND, def)                                                      \
  static int a_##fname(lua_State *L) {                                                   \
    static const char *const keys[] = {"alpha", NULL};                                   \
    lc_check_tensor(L, 1);                                                                \
    int o = opts_at2(L, #fname, keys);                                                   \
    double a = num_arg(L, 2, o, #fname, "alpha", def);                                    \
    return act(L, KIND, a, 0);                                                            \
  }
ALPHA_ACT(leaky_relu, CELL_ACT_LEAKY_RELU, 0.2)
ALPHA_ACT(elu, CELL_ACT_ELU, 1.0)
ALPHA_ACT(celu, CELL_ACT_CELU, 1.0)

#define PLAIN_ACT(fname, KIND, p0, p1) \
  static int a_##fname(lua_State *L) { return act(L, KIND, p0, p1); }
PLAIN_ACT(selu, CELL_ACT_SELU, 0, 0)
PLAIN_ACT(softsign, CELL_ACT_SOFTSIGN, 0, 0)
PLAIN_ACT(mish, CELL_ACT_MISH, 0, 0)
PLAIN_ACT(relu6, CELL_ACT_HARDTANH, 0, 6)
PLAIN_ACT(hardswish, CELL_ACT_HSWISH, 0, 0)
PLAIN_ACT(hardsigmoid, CELL_ACT_HSIGMOID, 0, 0)
PLAIN_ACT(logsigmoid, CELL_ACT_LOGSIGMOID, 0, 0)
PLAIN_ACT(tanhshrink, CELL_ACT_TANHSHRINK, 0, 0)

static int a_hardtanh(lua_State *L) {
  static const char *const keys[] = {"min_val", "max_val", NULL};
  lc_check_tensor(L, 1);
  int o = opts_at2(L, "hardtanh", keys);
  double lo = num_arg(L, 2, o, "hardtanh", "min_val", -1.0);
  double hi = num_arg(L, 3, o, "hardtanh", "max_val", 1.0);
  return act(L, CELL_ACT_HARDTANH, lo, hi);
}

static int a_gelu(lua_State *L) {
  static const char *const keys[] = {"approximate", NULL};
  cell_tensor *x = lc_check_tensor(L, 1);
  int o = opts_at2(L, "gelu", keys);
  const char *mode = "none";
  if (o) {
    if (lc_field(L, o, "approximate")) {
      if (lua_type(L, -1) != LUA_TSTRING)
        lc_argerror(L, 2, "TypeError: gelu: approximate must be 'none' or 'tanh', got %s",
                    luaL_typename(L, -1));
      mode = lua_tostring(L, -1);
    }
    lua_pop(L, 1);
  } else if (!lua_isnoneornil(L, 2)) {
    if (lua_type(L, 2) != LUA_TSTRING)
      lc_argerror(L, 2, "TypeError: gelu: approximate must be 'none' or 'tanh', got %s",
                  luaL_typename(L, 2));
    mode = lua_tostring(L, 2);
  }
  if (strcmp(mode, "tanh") == 0) return act(L, CELL_ACT_GELU_TANH, 0, 0);
  if (strcmp(mode, "none") != 0)
    lc_argerror(L, 2, "ValueError: gelu: approximate must be 'none' or 'tanh', got '%s'", mode);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_unary(CELL_OP_GELU, x, out));
}

/* _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
 * each sample's loss (N); blank and target ids 1-based. cell.ops.ctc_loss
 * (lua/cell/ops_extra.lua) checks the Lua side and reduces. */
static int a_ctc_loss(lua_State *L) {
  cell_tensor *lp = lc_check_tensor(L, 1), *tg = lc_check_tensor(L, 2);
  cell_tensor *il = lc_check_tensor(L, 3), *tl = lc_check_tensor(L, 4);
  lua_Number blank = lc_check_number(L, 5);
  int zi = lua_toboolean(L, 6);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_ctc_loss(lp, tg, il, tl, (int64_t)blank - 1, 1, zi, out));
}

static const luaL_Reg act_funcs[] = {
    {"leaky_relu", a_leaky_relu}, {"elu", a_elu},           {"celu", a_celu},
    {"selu", a_selu},             {"softsign", a_softsign}, {"mish", a_mish},
    {"relu6", a_relu6},           {"hardswish", a_hardswish}, {"hardsigmoid", a_hardsigmoid},
    {"logsigmoid", a_logsigmoid}, {"tanhshrink", a_tanhshrink}, {"hardtanh", a_hardtanh},
    {"gelu", a_gelu},             {"_ctc_loss", a_ctc_loss}, {NULL, NULL}};

void lc_register_act(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, act_funcs); }
