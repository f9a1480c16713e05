/* lconv.c - the Lua binding of include/cell_conv.h: functions of the
 * table core.nnops, which cell.ops (lua/cell/ops.lua) exposes.
 *
 *   conv2d(x, w [, b] [, {stride =, padding =, dilation =, groups =}])
 *   conv3d(x, w [, b] [, {stride =, padding =, dilation =, groups =}])
 *   conv_transpose3d(x, w [, b] [, {stride =, padding =, output_padding =,
 *                                   dilation =, groups =}])
 *   max_pool2d(x, kernel [, {stride =, padding =, dilation =, ceil_mode =,
 *                            return_indices =}])
 *   avg_pool2d(x, kernel [, {stride =, padding =, ceil_mode =, count_include_pad =}])
 *
 * A size pair (stride, dilation, kernel) is n or {h, w}; padding is n,
 * {h, w} (both sides of each) or {top, bottom, left, right}. Sizes are not
 * indices, so nothing here is 1-based. In 3-D a size triple is n or
 * {d, h, w}, padding n, {d, h, w} or {front, back, top, bottom, left, right}. The binding checks Lua types and
 * option names; the engine checks values and shapes. */
#include "lcell.h"
#include <math.h>
#include <string.h>

/* The integer at stack index i, or a TypeError at argument arg. */
static int64_t opt_integer(lua_State *L, int arg, int i, const char *op, const char *key) {
  if (lua_type(L, i) == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, i);
    if (v == floor(v) && fabs(v) <= 9007199254740992.0) return (int64_t)v;
  }
  if (lua_type(L, i) == LUA_TNUMBER)
    lc_argerror(L, arg, "TypeError: %s: %s must hold integers, got %s", op, key, lua_tostring(L, i));
  lc_argerror(L, arg, "TypeError: %s: %s must hold integers, got %s", op, key,
              lc_test_tensor(L, i) ? "Tensor" : luaL_typename(L, i));
  return 0;
}

/* The number or table at stack index i as sizes: one number fills all of
 * out[0..n); a table must have one of the lengths in lens (0-terminated),
 * and *got receives its length (1 for a number). */
static void sizes(lua_State *L, int arg, int i, const char *op, const char *key, const int *lens,
                  int64_t *out, int *got) {
  i = i < 0 ? lua_gettop(L) + i + 1 : i;
  if (lua_type(L, i) == LUA_TNUMBER) {
    out[0] = opt_integer(L, arg, i, op, key);
    *got = 1;
    return;
  }
  bool ok = lua_istable(L, i) && !lc_test_tensor(L, i);
  int len = ok ? (int)lua_rawlen(L, i) : -1, k;
  for (k = 0; ok && lens[k] && lens[k] != len; k++) {
  }
  if (!ok || !lens[k]) {
    char want[64] = "";
    for (k = 0; lens[k]; k++)
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", k ? " or " : "", lens[k]);
    if (ok)
      lc_argerror(L, arg, "TypeError: %s: %s must be an integer or a table of %s integers, got a "
                          "table of %d", op, key, want, len);
    lc_argerror(L, arg, "TypeError: %s: %s must be an integer or a table of %s integers, got %s",
                op, key, want, lc_test_tensor(L, i) ? "Tensor" : luaL_typename(L, i));
  }
  for (k = 0; k < len; k++) {
    lua_rawgeti(L, i, k + 1);
    out[k] = opt_integer(L, arg, lua_gettop(L), op, key);
    lua_pop(L, 1);
  }
  *got = len;
}

/* A pair {h, w} (a number n is {n, n}). */
static void pair_at(lua_State *L, int arg, int i, const char *op, const char *key, int64_t *out) {
  static const int lens[] = {2, 0};
  int got;
  sizes(L, arg, i, op, key, lens, out, &got);
  if (got == 1) out[1] = out[0];
}

/* Padding {top, bottom, left, right}, from n, {h, w} or the four. */
static void pads_at(lua_State *L, int arg, int i, const char *op, int64_t *out) {
  static const int lens[] = {2, 4, 0};
  int64_t v[4];
  int got;
  sizes(L, arg, i, op, "padding", lens, v, &got);
  if (got == 1) v[1] = v[2] = v[3] = v[0];
  if (got == 2) {
    v[2] = v[3] = v[1];
    v[1] = v[0];
  }
  memcpy(out, v, sizeof v);
}

static int nn_conv2d(lua_State *L) {
  static const char *const keys[] = {"stride", "padding", "dilation", "groups", NULL};
  cell_tensor *x = lc_check_tensor(L, 1), *w = lc_check_tensor(L, 2), *b = NULL;
  int oarg = 3;
  if (lc_test_tensor(L, 3)) {
    b = lc_test_tensor(L, 3);
    oarg = 4;
  } else if (lua_isnoneornil(L, 3)) {
    oarg = 4;
  } else if (!lua_istable(L, 3)) {
    return lc_argerror(L, 3, "TypeError: conv2d: expected a bias Tensor, nil or an options table, "
                             "got %s", luaL_typename(L, 3));
  }
  int64_t stride[2] = {1, 1}, padding[4] = {0, 0, 0, 0}, dilation[2] = {1, 1}, groups = 1;
  int opts = lc_options(L, oarg, "conv2d", keys) ? oarg : 0;
  if (lc_field(L, opts, "stride")) pair_at(L, oarg, -1, "conv2d", "stride", stride);
  lua_pop(L, 1);
  if (lc_field(L, opts, "padding")) pads_at(L, oarg, -1, "conv2d", padding);
  lua_pop(L, 1);
  if (lc_field(L, opts, "dilation")) pair_at(L, oarg, -1, "conv2d", "dilation", dilation);
  lua_pop(L, 1);
  if (lc_field(L, opts, "groups")) groups = opt_integer(L, oarg, lua_gettop(L), "conv2d", "groups");
  lua_pop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_conv2d(x, w, b, stride, padding, dilation, groups, out));
}

/* A triple {d, h, w} (a number n is {n, n, n}). */
static void triple_at(lua_State *L, int arg, int i, const char *op, const char *key,
                      int64_t *out) {
  static const int lens[] = {3, 0};
  int got;
  sizes(L, arg, i, op, key, lens, out, &got);
  if (got == 1) out[1] = out[2] = out[0];
}

/* 3-D padding {front, back, top, bottom, left, right}, from n, {d, h, w}
 * (both sides of each) or the six. */
static void pads3_at(lua_State *L, int arg, int i, const char *op, int64_t *out) {
  static const int lens[] = {3, 6, 0};
  int64_t v[6];
  int got;
  sizes(L, arg, i, op, "padding", lens, v, &got);
  if (got == 1) v[1] = v[2] = v[3] = v[4] = v[5] = v[0];
  if (got == 3) {
    int64_t t[3] = {v[0], v[1], v[2]};
    for (int k = 0; k < 3; k++) v[2 * k] = v[2 * k + 1] = t[k];
  }
  memcpy(out, v, sizeof v);
}

/* conv3d(x, w [, b] [, {stride =, padding =, dilation =, groups =}]) and
 * conv_transpose3d(x, w [, b] [, {..., output_padding =}]). */
static int conv3d_common(lua_State *L, const char *op, int transposed) {
  static const char *const keys[] = {"stride", "padding", "dilation", "groups", NULL};
  static const char *const tkeys[] = {"stride",         "padding", "dilation",
                                      "output_padding", "groups",  NULL};
  cell_tensor *x = lc_check_tensor(L, 1), *w = lc_check_tensor(L, 2), *b = NULL;
  int oarg = 3;
  if (lc_test_tensor(L, 3)) {
    b = lc_test_tensor(L, 3);
    oarg = 4;
  } else if (lua_isnoneornil(L, 3)) {
    oarg = 4;
  } else if (!lua_istable(L, 3)) {
    return lc_argerror(L, 3, "TypeError: %s: expected a bias Tensor, nil or an options table, "
                             "got %s", op, luaL_typename(L, 3));
  }
  int64_t stride[3] = {1, 1, 1}, padding[6] = {0}, dilation[3] = {1, 1, 1}, opad[3] = {0};
  int64_t groups = 1;
  int opts = lc_options(L, oarg, op, transposed ? tkeys : keys) ? oarg : 0;
  if (lc_field(L, opts, "stride")) triple_at(L, oarg, -1, op, "stride", stride);
  lua_pop(L, 1);
  if (lc_field(L, opts, "padding")) pads3_at(L, oarg, -1, op, padding);
  lua_pop(L, 1);
  if (lc_field(L, opts, "dilation")) triple_at(L, oarg, -1, op, "dilation", dilation);
  lua_pop(L, 1);
  if (transposed && lc_field(L, opts, "output_padding"))
    triple_at(L, oarg, -1, op, "output_padding", opad);
  if (transposed) lua_pop(L, 1);
  if (lc_field(L, opts, "groups")) groups = opt_integer(L, oarg, lua_gettop(L), op, "groups");
  lua_pop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  if (transposed)
    return lc_finish(L, cell_op_conv_transpose3d(x, w, b, stride, padding, opad, dilation, groups,
                                                 out));
  return lc_finish(L, cell_op_conv3d(x, w, b, stride, padding, dilation, groups, out));
}

static int nn_conv3d(lua_State *L) { return conv3d_common(L, "conv3d", 0); }
static int nn_conv_transpose3d(lua_State *L) { return conv3d_common(L, "conv_transpose3d", 1); }

/* Shared by the pools: x, kernel, stride (default: the kernel), padding;
 * returns the options index (0 when none). */
static int pool_args(lua_State *L, const char *op, const char *const *keys, int64_t *kernel,
                     int64_t *stride, int64_t *padding) {
  if (lua_isnoneornil(L, 2))
    lc_argerror(L, 2, "TypeError: %s: expected a kernel size (an integer or a table of 2), got %s",
                op, luaL_typename(L, 2));
  pair_at(L, 2, 2, op, "kernel size", kernel);
  stride[0] = kernel[0];
  stride[1] = kernel[1];
  memset(padding, 0, 4 * sizeof *padding);
  int opts = lc_options(L, 3, op, keys) ? 3 : 0;
  if (lc_field(L, opts, "stride")) pair_at(L, 3, -1, op, "stride", stride);
  lua_pop(L, 1);
  if (lc_field(L, opts, "padding")) pads_at(L, 3, -1, op, padding);
  lua_pop(L, 1);
  return opts;
}

/* A boolean option at the top of the stack (popped), default def. */
static int opt_bool(lua_State *L, int opts, const char *op, const char *key, int def) {
  int v = def;
  if (lc_field(L, opts, key)) {
    if (!lua_isboolean(L, -1))
      lc_argerror(L, 3, "TypeError: %s: %s must be a boolean, got %s", op, key,
                  luaL_typename(L, -1));
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static int nn_max_pool2d(lua_State *L) {
  static const char *const keys[] = {"stride", "padding", "dilation", "ceil_mode",
                                     "return_indices", NULL};
  cell_tensor *x = lc_check_tensor(L, 1);
  int64_t kernel[2], stride[2], padding[4], dilation[2] = {1, 1};
  int opts = pool_args(L, "max_pool2d", keys, kernel, stride, padding);
  if (lc_field(L, opts, "dilation")) pair_at(L, 3, -1, "max_pool2d", "dilation", dilation);
  lua_pop(L, 1);
  int ceil_mode = opt_bool(L, opts, "max_pool2d", "ceil_mode", 0);
  int with_indices = opt_bool(L, opts, "max_pool2d", "return_indices", 0);
  cell_tensor **out = lc_newtensor(L);
  if (!with_indices)
    return lc_finish(L, cell_op_max_pool2d_ex(x, kernel, stride, padding, dilation, ceil_mode,
                                              out, NULL));
  cell_tensor **idx = lc_newtensor(L);
  cell_tensor *raw = NULL;
  cell_status s = cell_op_max_pool2d_ex(x, kernel, stride, padding, dilation, ceil_mode, out, &raw);
  if (s != CELL_OK) return lc_raise(L);
  /* 1-based positions in the plane, as every index cell hands to Lua */
  s = cell_op_binary_scalar(CELL_OP_ADD, raw, 1, 0, 0, idx);
  cell_tensor_release(raw);
  lc_finish(L, s);
  lua_pushvalue(L, -2); /* the output, for the collector's count */
  lc_finish(L, CELL_OK);
  lua_pop(L, 1);
  return 2;
}

static int nn_avg_pool2d(lua_State *L) {
  static const char *const keys[] = {"stride", "padding", "ceil_mode", "count_include_pad", NULL};
  cell_tensor *x = lc_check_tensor(L, 1);
  int64_t kernel[2], stride[2], padding[4];
  int opts = pool_args(L, "avg_pool2d", keys, kernel, stride, padding);
  int ceil_mode = opt_bool(L, opts, "avg_pool2d", "ceil_mode", 0);
  int cip = opt_bool(L, opts, "avg_pool2d", "count_include_pad", 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_avg_pool2d_ex(x, kernel, stride, padding, ceil_mode, cip, out));
}

static const luaL_Reg conv_funcs[] = {{"conv2d", nn_conv2d},
                                      {"conv3d", nn_conv3d},
                                      {"conv_transpose3d", nn_conv_transpose3d},
                                      {"max_pool2d", nn_max_pool2d},
                                      {"avg_pool2d", nn_avg_pool2d},
                                      {NULL, NULL}};

void lc_register_conv(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, conv_funcs); }
