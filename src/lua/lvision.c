/* lvision.c - the Lua binding of include/cell_vision.h, as functions of
 * cell.core (lua/cell/dataset/vision.lua and image_folder.lua build on
 * them; they check the MindSpore-style arguments, these the C ranges):
 *   core._vision_decode() -> transform
 *   core._vision_resize(h, w, inter)                       (w 0: shorter edge)
 *   core._vision_random_crop(h, w, {l, t, r, b}, pad_if_needed, {fill x3}, border)
 *   core._vision_random_flip(vertical, prob)
 *   core._vision_random_resized_crop(h, w, {s0, s1}, {r0, r1}, inter, attempts)
 *   core._vision_normalize({mean}, {std}, is_hwc)
 *   core._vision_hwc2chw()
 *   core._vision_random_rotation(d0, d1, inter, expand, {cx, cy} | nil, {fill x3})
 *   core._vision_color_jitter({b0, b1}, {c0, c1}, {s0, s1}, {h0, h1})
 *   core._vision_to_tensor(dtype)
 *   core._vision_rescale(rescale, shift)
 *   core._vision_center_crop(h, w)
 *   core._image_decode(bytes [, name]) -> {H, W, 3} uint8   (bytes: string or uint8 tensor)
 *   core._image_load(path) -> {H, W, 3} uint8
 *   core._file_read_bytes(path) -> 1-D uint8
 *   core._image_folder_scan(dir, {ext, ...}) -> classes, files, labels (0-based)
 *   core._image_reader({path, ...}, decode) -> transform: file number (0-based) to bytes or image
 * inter and border are the enums' numbers. Transforms are the userdata of
 * ldata.h: calling one on a tensor applies it. */
#include "lcell.h"
#include "ldata.h"
#include "cell_vision.h"
#include <string.h>

/* Numbers t[1..n] of the table at arg into v. */
static void check_numbers(lua_State *L, int arg, int n, double *v, const char *what) {
  lc_check_table(L, arg, what);
  if ((int)lua_rawlen(L, arg) != n)
    lc_argerror(L, arg, "ValueError: %s must have %d values, but got %d", what, n, (int)lua_rawlen(L, arg));
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, arg, i + 1);
    if (lua_type(L, -1) != LUA_TNUMBER)
      lc_argerror(L, arg, "TypeError: %s[%d] must be a number, but got %s", what, i + 1, lc_typename(L, -1));
    v[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
}

/* After the constructor call that set *op (a separate statement: the
 * order in which a call's arguments are evaluated is unspecified). */
static int push_op(lua_State *L, cell_status s, cell_sample_op **op) {
  if (s != CELL_OK) return lc_raise(L);
  lc_push_sample_op(L, *op);
  return 1;
}

static int l_decode(lua_State *L) {
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_decode(&op);
  return push_op(L, st, &op);
}

static int l_resize(lua_State *L) {
  lua_Integer h = lc_check_int(L, 1), w = lc_check_int(L, 2), inter = lc_check_int(L, 3);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_resize(h, w, (cell_vision_inter)inter, &op);
  return push_op(L, st, &op);
}

static int l_random_crop(lua_State *L) {
  lua_Integer h = lc_check_int(L, 1), w = lc_check_int(L, 2);
  double padf[4], fill[3];
  check_numbers(L, 3, 4, padf, "padding");
  int pad_if_needed = lua_toboolean(L, 4);
  check_numbers(L, 5, 3, fill, "fill_value");
  lua_Integer mode = lc_check_int(L, 6);
  int64_t pad[4];
  for (int i = 0; i < 4; i++) pad[i] = (int64_t)padf[i];
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_random_crop(h, w, pad, pad_if_needed, fill, (cell_vision_border)mode, &op);
  return push_op(L, st, &op);
}

static int l_random_flip(lua_State *L) {
  int vertical = lua_toboolean(L, 1);
  double prob = lc_check_number(L, 2);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_random_flip(vertical, prob, &op);
  return push_op(L, st, &op);
}

static int l_random_resized_crop(lua_State *L) {
  lua_Integer h = lc_check_int(L, 1), w = lc_check_int(L, 2);
  double scale[2], ratio[2];
  check_numbers(L, 3, 2, scale, "scale");
  check_numbers(L, 4, 2, ratio, "ratio");
  lua_Integer inter = lc_check_int(L, 5), attempts = lc_check_int(L, 6);
  if (attempts > 1000000) attempts = 1000000;
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_random_resized_crop(h, w, scale, ratio, (cell_vision_inter)inter, (int)attempts, &op);
  return push_op(L, st, &op);
}

static int l_normalize(lua_State *L) {
  lc_check_table(L, 1, "mean");
  int n = (int)lua_rawlen(L, 1);
  if (n < 1 || n > 64) return lc_argerror(L, 1, "ValueError: mean must have 1 to 64 values, but got %d", n);
  double mean[64], std[64];
  check_numbers(L, 1, n, mean, "mean");
  check_numbers(L, 2, n, std, "std");
  int hwc = lua_toboolean(L, 3);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_normalize(n, mean, std, hwc, &op);
  return push_op(L, st, &op);
}

static int l_hwc2chw(lua_State *L) {
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_hwc2chw(&op);
  return push_op(L, st, &op);
}

static int l_random_rotation(lua_State *L) {
  double d0 = lc_check_number(L, 1), d1 = lc_check_number(L, 2);
  lua_Integer inter = lc_check_int(L, 3);
  int expand = lua_toboolean(L, 4);
  double center[2], fill[3];
  int has_center = !lua_isnoneornil(L, 5);
  if (has_center) check_numbers(L, 5, 2, center, "center");
  check_numbers(L, 6, 3, fill, "fill_value");
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_random_rotation(d0, d1, (cell_vision_inter)inter, expand, has_center ? center : NULL,
                                                fill, &op);
  return push_op(L, st, &op);
}

static int l_color_jitter(lua_State *L) {
  double r[4][2];
  static const char *const what[4] = {"brightness", "contrast", "saturation", "hue"};
  for (int k = 0; k < 4; k++) check_numbers(L, k + 1, 2, r[k], what[k]);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_color_jitter(r[0], r[1], r[2], r[3], &op);
  return push_op(L, st, &op);
}

static int l_to_tensor(lua_State *L) {
  cell_dtype dt = lc_opt_dtype(L, 1, CELL_DTYPE_F32);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_to_tensor(dt, &op);
  return push_op(L, st, &op);
}

static int l_rescale(lua_State *L) {
  double rescale = lc_check_number(L, 1), shift = lc_check_number(L, 2);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_rescale(rescale, shift, &op);
  return push_op(L, st, &op);
}

static int l_center_crop(lua_State *L) {
  lua_Integer h = lc_check_int(L, 1), w = lc_check_int(L, 2);
  cell_sample_op *op = NULL;
  cell_status st = cell_vision_center_crop(h, w, &op);
  return push_op(L, st, &op);
}

/* A path or name argument without NUL bytes. */
static const char *check_path(lua_State *L, int arg, const char *what) {
  size_t n;
  if (lua_type(L, arg) != LUA_TSTRING)
    lc_argerror(L, arg, "TypeError: %s must be a string, but got %s", what, lc_typename(L, arg));
  const char *s = lua_tolstring(L, arg, &n);
  if (strlen(s) != n) lc_argerror(L, arg, "ValueError: %s must not contain a NUL byte", what);
  return s;
}

static int l_image_decode(lua_State *L) {
  const char *name = lua_isnoneornil(L, 2) ? "<memory>" : check_path(L, 2, "name");
  const void *p;
  size_t n;
  cell_tensor *host = NULL;
  cell_tensor **slot = lc_newtensor(L); /* first: nothing is held if it raises */
  if (lua_type(L, 1) == LUA_TSTRING) {
    p = lua_tolstring(L, 1, &n);
  } else {
    cell_tensor *t = lc_test_tensor(L, 1);
    if (!t)
      return lc_argerror(L, 1, "TypeError: Decode: the input must be a string or a 1-D uint8 Tensor of bytes, but got %s",
                         lc_typename(L, 1));
    if (cell_tensor_dtype(t) != CELL_DTYPE_U8 || cell_tensor_ndim(t) != 1)
      return lc_argerror(L, 1, "TypeError: Decode: the input must be a 1-D uint8 Tensor of bytes, but got %s with %d dimensions",
                         cell_dtype_name(cell_tensor_dtype(t)), cell_tensor_ndim(t));
    cell_tensor *h = lc_host_tensor(L, t);
    cell_status s = cell_tensor_contiguous(h, &host);
    cell_tensor_release(h);
    if (s != CELL_OK) return lc_raise(L);
    p = cell_tensor_data_ptr(host), n = (size_t)cell_tensor_numel(host);
  }
  cell_status s = cell_image_decode(p, n, name, slot);
  cell_tensor_release(host);
  if (s == CELL_OK) s = lc_to_default_device(slot);
  return lc_finish(L, s);
}

static int l_image_load(lua_State *L) {
  const char *path = check_path(L, 1, "path");
  cell_tensor **slot = lc_newtensor(L);
  cell_status s = cell_image_load(path, slot);
  if (s == CELL_OK) s = lc_to_default_device(slot);
  return lc_finish(L, s);
}

static int l_file_read_bytes(lua_State *L) {
  const char *path = check_path(L, 1, "path");
  cell_tensor **slot = lc_newtensor(L);
  cell_status s = cell_file_read_bytes(path, slot);
  if (s == CELL_OK) s = lc_to_default_device(slot);
  return lc_finish(L, s);
}

/* core.image_reader({path, ...}, decode) -> transform */
static int l_image_reader(lua_State *L) {
  lua_settop(L, 2);
  lc_check_table(L, 1, "a list of paths");
  int64_t n = (int64_t)lua_rawlen(L, 1);
  const char **paths = lua_newuserdatauv(L, sizeof *paths * (size_t)(n ? n : 1), 0);
  for (int64_t i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    paths[i] = check_path(L, lua_gettop(L), "a path");
    lua_pop(L, 1); /* the string stays alive in the table */
  }
  cell_sample_op *op = NULL;
  cell_status st = cell_image_reader(n, paths, lua_toboolean(L, 2), &op);
  return push_op(L, st, &op);
}

#define FOLDER_MT "cell.ImageFolderScan"

static int folder_gc(lua_State *L) {
  cell_image_folder **u = luaL_checkudata(L, 1, FOLDER_MT);
  cell_image_folder_free(*u);
  *u = NULL;
  return 0;
}

static int l_image_folder_scan(lua_State *L) {
  lua_settop(L, 2);
  const char *dir = check_path(L, 1, "dataset_dir");
  int n_ext = 0;
  if (!lua_isnil(L, 2)) {
    lc_check_table(L, 2, "extensions");
    n_ext = (int)lua_rawlen(L, 2);
  }
  const char **exts = lua_newuserdatauv(L, sizeof *exts * (size_t)(n_ext ? n_ext : 1), 0); /* 3 */
  for (int i = 0; i < n_ext; i++) {
    lua_rawgeti(L, 2, i + 1);
    exts[i] = check_path(L, lua_gettop(L), "an extension");
    lua_pop(L, 1); /* the string stays alive in the table */
  }
  /* the scan's result is owned by a userdata, so an error below leaks nothing */
  cell_image_folder **u = lua_newuserdatauv(L, sizeof *u, 0); /* 4 */
  *u = NULL;
  if (luaL_newmetatable(L, FOLDER_MT)) {
    lua_pushcfunction(L, folder_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  if (cell_image_folder_scan(dir, exts, n_ext, u) != CELL_OK) return lc_raise(L);
  cell_image_folder *f = *u;
  lua_createtable(L, f->num_classes, 0);
  for (int i = 0; i < f->num_classes; i++) {
    lua_pushstring(L, f->classes[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_createtable(L, (int)f->num_files, 0);
  lua_createtable(L, (int)f->num_files, 0);
  for (int64_t i = 0; i < f->num_files; i++) {
    lua_pushstring(L, f->files[i]);
    lua_rawseti(L, -3, (lua_Integer)i + 1);
    lua_pushinteger(L, f->class_of[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  cell_image_folder_free(f);
  *u = NULL;
  return 3;
}

static const luaL_Reg vision_funcs[] = {{"_vision_decode", l_decode},
                                        {"_vision_resize", l_resize},
                                        {"_vision_random_crop", l_random_crop},
                                        {"_vision_random_flip", l_random_flip},
                                        {"_vision_random_resized_crop", l_random_resized_crop},
                                        {"_vision_normalize", l_normalize},
                                        {"_vision_hwc2chw", l_hwc2chw},
                                        {"_vision_random_rotation", l_random_rotation},
                                        {"_vision_color_jitter", l_color_jitter},
                                        {"_vision_to_tensor", l_to_tensor},
                                        {"_vision_rescale", l_rescale},
                                        {"_vision_center_crop", l_center_crop},
                                        {"_image_decode", l_image_decode},
                                        {"_image_load", l_image_load},
                                        {"_file_read_bytes", l_file_read_bytes},
                                        {"_image_folder_scan", l_image_folder_scan},
                                        {"_image_reader", l_image_reader},
                                        {NULL, NULL}};

void lc_register_vision(lua_State *L, int module, int base) { lc_setfuncs(L, module, base, vision_funcs); }
