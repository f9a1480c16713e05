/* lresample.c - the Lua binding of the resampling ops of
 * include/cell_sample.h: functions of core.nnops, which cell.ops exposes.
 *
 *   interpolate(x, {size =, scale_factor =, mode = 'nearest', align_corners =,
 *                   recompute_scale_factor =})
 *   unfold(x, kernel_size [, {dilation =, padding =, stride =}])
 *   fold(x, output_size, kernel_size [, {dilation =, padding =, stride =}])
 *
 * Sizes are n (for every spatial dimension) or a table with one per
 * spatial dimension. The output sizes of a scale_factor are PyTorch's
 * (floor(size * scale)), and unless recompute_scale_factor is true the
 * factor itself sets the source coordinates, as in PyTorch and MindSpore. */
#include "lcell.h"
#include <math.h>
#include <string.h>

/* n numbers from the number or table at idx (one number fills all n). */
static void numbers_at(lua_State *L, int arg, int idx, const char *op, const char *key, int n,
                       int integers, double *out) {
  idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    for (int i = 0; i < n; i++) out[i] = lua_tonumber(L, idx);
  } else if (lua_istable(L, idx) && !lc_test_tensor(L, idx)) {
    int len = (int)lua_rawlen(L, idx);
    if (len != n)
      lc_argerror(L, arg, "ValueError: %s: %s must be a number or a table of %d, got a table of %d",
                  op, key, n, len);
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, idx, i + 1);
      if (lua_type(L, -1) != LUA_TNUMBER)
        lc_argerror(L, arg, "TypeError: %s: %s must hold numbers, got %s at position %d", op, key,
                    lc_typename(L, -1), i + 1);
      out[i] = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  } else {
    lc_argerror(L, arg, "TypeError: %s: %s must be a number or a table of %d, got %s", op, key, n,
                lc_typename(L, idx));
  }
  for (int i = 0; integers && i < n; i++)
    if (out[i] != floor(out[i]) || fabs(out[i]) > 9007199254740992.0)
      lc_argerror(L, arg, "TypeError: %s: %s must hold integers, got %.14g", op, key, out[i]);
}

static void ints_at(lua_State *L, int arg, int idx, const char *op, const char *key, int n,
                    int64_t *out) {
  double v[4];
  numbers_at(L, arg, idx, op, key, n, 1, v);
  for (int i = 0; i < n; i++) out[i] = (int64_t)v[i];
}

/* --- interpolate ---------------------------------------------------------------------- */

static int l_interpolate(lua_State *L) {
  static const char *const keys[] = {"size", "scale_factor", "mode", "align_corners",
                                     "recompute_scale_factor", NULL};
  static const char *const modes[] = {"nearest", "linear", "bilinear", "bicubic", NULL};
  cell_tensor *x = lc_check_tensor(L, 1);
  int nd = cell_tensor_ndim(x), sp = nd - 2;
  int opts = lc_options(L, 2, "interpolate", keys);
  int mode = CELL_INTERP_NEAREST, align = 0, recompute = 0;
  if (lc_field(L, opts, "mode")) {
    const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int k;
    for (k = 0; m && modes[k] && strcmp(modes[k], m); k++) {
    }
    if (!m || !modes[k])
      return lc_argerror(L, 2, "ValueError: interpolate: mode must be 'nearest', 'linear', "
                               "'bilinear', 'bicubic' or 'area', got %s",
                         m ? m : lc_typename(L, -1));
    mode = k;
  }
  lua_pop(L, 1);
  if (lc_field(L, opts, "align_corners")) {
    if (!lua_isboolean(L, -1))
      return lc_argerror(L, 2, "TypeError: interpolate: align_corners must be a boolean, got %s",
                         lc_typename(L, -1));
    if (mode == CELL_INTERP_NEAREST)
      return lc_argerror(L, 2, "ValueError: interpolate: align_corners can only be set with the "
                               "interpolating modes linear, bilinear and bicubic, not 'nearest'");
    align = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  if (lc_field(L, opts, "recompute_scale_factor")) {
    if (!lua_isboolean(L, -1))
      return lc_argerror(L, 2, "TypeError: interpolate: recompute_scale_factor must be a "
                               "boolean, got %s", lc_typename(L, -1));
    recompute = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  if (nd != 3 && nd != 4) {
    char sb[96];
    return lc_argerror(L, 1, "ValueError: interpolate: input must be 3-D (N, C, L) or 4-D (N, C, "
                             "H, W), got shape %s",
                       cell_shape_str(nd, cell_tensor_shape(x), sb, sizeof sb));
  }
  bool has_size = lc_field(L, opts, "size");
  bool has_scale = lc_field(L, opts, "scale_factor");
  if (has_size == has_scale)
    return lc_argerror(L, 2, has_size ? "ValueError: interpolate: only one of size and "
                                        "scale_factor may be given"
                                      : "ValueError: interpolate: either size or scale_factor "
                                        "must be given");
  int64_t size[2];
  double scales[2];
  const int64_t *in = cell_tensor_shape(x);
  if (has_size) {
    ints_at(L, 2, -2, "interpolate", "size", sp, size);
    if (recompute)
      return lc_argerror(L, 2, "ValueError: interpolate: recompute_scale_factor is not meaningful "
                               "with an explicit size");
  } else {
    numbers_at(L, 2, -1, "interpolate", "scale_factor", sp, 0, scales);
    for (int d = 0; d < sp; d++) {
      if (!(scales[d] > 0) || isinf(scales[d]))
        return lc_argerror(L, 2, "ValueError: interpolate: scale_factor must be positive and "
                                 "finite, got %g", scales[d]);
      double o = floor((double)in[2 + d] * scales[d]);
      size[d] = o > 9.0e15 ? (int64_t)9.0e15 : (int64_t)o;
    }
  }
  lua_pop(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_interpolate(x, size, has_scale && !recompute ? scales : NULL,
                                          (cell_interp_mode)mode, align, out));
}

/* --- unfold and fold -------------------------------------------------------------------- */

/* dilation, padding, stride from the options at arg (defaults 1, 0, 1). */
static void block_opts(lua_State *L, int arg, const char *op, int64_t *dilation,
                       int64_t *padding, int64_t *stride) {
  static const char *const keys[] = {"dilation", "padding", "stride", NULL};
  int opts = lc_options(L, arg, op, keys);
  dilation[0] = dilation[1] = stride[0] = stride[1] = 1;
  padding[0] = padding[1] = 0;
  if (lc_field(L, opts, "dilation")) ints_at(L, arg, -1, op, "dilation", 2, dilation);
  lua_pop(L, 1);
  if (lc_field(L, opts, "padding")) ints_at(L, arg, -1, op, "padding", 2, padding);
  lua_pop(L, 1);
  if (lc_field(L, opts, "stride")) ints_at(L, arg, -1, op, "stride", 2, stride);
  lua_pop(L, 1);
}

static int l_unfold(lua_State *L) {
  cell_tensor *x = lc_check_tensor(L, 1);
  int64_t k[2], dl[2], pd[2], st[2];
  if (lua_isnoneornil(L, 2))
    return lc_argerror(L, 2, "TypeError: unfold: expected a kernel_size (an integer or a table "
                             "of 2), got nil");
  ints_at(L, 2, 2, "unfold", "kernel_size", 2, k);
  block_opts(L, 3, "unfold", dl, pd, st);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_unfold(x, k, dl, pd, st, out));
}

static int l_fold(lua_State *L) {
  cell_tensor *x = lc_check_tensor(L, 1);
  int64_t os[2], k[2], dl[2], pd[2], st[2];
  if (lua_isnoneornil(L, 2))
    return lc_argerror(L, 2, "TypeError: fold: expected an output_size (an integer or a table "
                             "of 2), got nil");
  ints_at(L, 2, 2, "fold", "output_size", 2, os);
  if (lua_isnoneornil(L, 3))
    return lc_argerror(L, 3, "TypeError: fold: expected a kernel_size (an integer or a table "
                             "of 2), got nil");
  ints_at(L, 3, 3, "fold", "kernel_size", 2, k);
  block_opts(L, 4, "fold", dl, pd, st);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_fold(x, os, k, dl, pd, st, out));
}

static const luaL_Reg resample_ops[] = {{"interpolate", l_interpolate},
                                        {"unfold", l_unfold},
                                        {"fold", l_fold},
                                        {NULL, NULL}};

void lc_register_resample(lua_State *L, int nnops, int base) {
  lc_setfuncs(L, nnops, base, resample_ops);
}
