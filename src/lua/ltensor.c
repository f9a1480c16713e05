/* ltensor.c - the Tensor userdata: lifetime, properties, indexing, views,
 * printing and the arithmetic metamethods. */
#include "lcell.h"
#include <stdlib.h>
#include <string.h>

/* The metamethods check their object like any method does: a script
 * reaches them through debug.getmetatable (getmetatable only gives the
 * __metatable string) and may call them with anything. */
static tensor_ud *self_ud(lua_State *L) {
  tensor_ud *ud = lc_test_ud(L, 1);
  if (!ud) lc_argerror(L, 1, "TypeError: expected a Tensor, got %s", lc_typename(L, 1));
  return ud;
}

/* __gc and __close: the engine tensor is released once; a second call, or
 * a call on a freed tensor, does nothing. */
static int tensor_gc(lua_State *L) {
  tensor_ud *ud = self_ud(L);
  if (ud->t) {
    cell_tensor_release(ud->t);
    ud->t = NULL;
  }
  return 0;
}

static int tensor_free(lua_State *L) {
  lc_check_tensor(L, 1);
  return tensor_gc(L);
}

static int tensor_tostring(lua_State *L) {
  tensor_ud *ud = self_ud(L);
  if (!ud->t) {
    lua_pushliteral(L, "Tensor(freed)");
    return 1;
  }
  if (ud->attrs && lc_attrs_meta(L, "__tostring")) { /* a Parameter prints itself */
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
  }
  char *s;
  if (cell_tensor_format(ud->t, &s) != CELL_OK) return lc_raise(L);
  lua_pushstring(L, s);
  free(s);
  return 1;
}

static void push_shape(lua_State *L, const cell_tensor *t) {
  int n = cell_tensor_ndim(t);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)cell_tensor_dim(t, i));
    lua_rawseti(L, -2, i + 1);
  }
}

static int tensor_numel(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)cell_tensor_numel(lc_check_tensor(L, 1)));
  return 1;
}

static int tensor_size(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (lua_isnoneornil(L, 2)) {
    push_shape(L, t);
    return 1;
  }
  int d = lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  lua_pushinteger(L, cell_tensor_ndim(t) ? (lua_Integer)cell_tensor_shape(t)[d] : 1);
  return 1;
}

static int tensor_stride(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (lua_isnoneornil(L, 2)) {
    lua_createtable(L, cell_tensor_ndim(t), 0);
    for (int i = 0; i < cell_tensor_ndim(t); i++) {
      lua_pushinteger(L, (lua_Integer)cell_tensor_strides(t)[i]);
      lua_rawseti(L, -2, i + 1);
    }
    return 1;
  }
  int d = lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  lua_pushinteger(L, cell_tensor_ndim(t) ? (lua_Integer)cell_tensor_strides(t)[d] : 1);
  return 1;
}

static int tensor_is_contiguous(lua_State *L) {
  lua_pushboolean(L, cell_tensor_is_contiguous(lc_check_tensor(L, 1)));
  return 1;
}

static int tensor_item(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (cell_tensor_numel(t) != 1) {
    char b[256];
    return lc_error(L, "ValueError: item: only a tensor with one element can be converted to "
                       "a number, got shape %s", cell_shape_str(cell_tensor_ndim(t), cell_tensor_shape(t), b, sizeof b));
  }
  if (cell_tensor_device(t) != 0) { /* one element through the device's copies, no tensor made */
    char buf[16];
    cell_dtype dt = cell_tensor_dtype(t);
    if (cell_dtype_is_float(dt) || dt == CELL_DTYPE_BOOL) {
      double v;
      if (cell_tensor_item(t, &v) != CELL_OK) return lc_raise(L);
      cell_element_set_f64(dt, buf, v);
    } else {
      int64_t v;
      if (cell_tensor_item_i64(t, &v) != CELL_OK) return lc_raise(L);
      cell_element_set_i64(dt, buf, v);
    }
    lc_push_element(L, dt, buf);
    return 1;
  }
  lc_push_element(L, cell_tensor_dtype(t), (char *)cell_tensor_data_ptr(t));
  return 1;
}

static void push_table(lua_State *L, const cell_tensor *t, int d, const char *p) {
  int es = cell_dtype_size(cell_tensor_dtype(t));
  if (d == cell_tensor_ndim(t)) {
    lc_push_element(L, cell_tensor_dtype(t), p);
    return;
  }
  luaL_checkstack(L, 4, "totable");
  lua_createtable(L, (int)cell_tensor_shape(t)[d], 0);
  for (int64_t i = 0; i < cell_tensor_shape(t)[d]; i++) {
    push_table(L, t, d + 1, p + i * cell_tensor_strides(t)[d] * es);
    lua_rawseti(L, -2, (int)i + 1);
  }
}

static int totable_host(lua_State *L) {
  const cell_tensor *h = lua_touserdata(L, 1);
  push_table(L, h, 0, (char *)cell_tensor_data_ptr(h));
  return 1;
}

static int tensor_totable(lua_State *L) {
  cell_tensor *h = lc_host_tensor(L, lc_check_tensor(L, 1));
  lua_pushcfunction(L, totable_host); /* protected: h is released on any error */
  lua_pushlightuserdata(L, h);
  int rc = lua_pcall(L, 1, 1, 0);
  cell_tensor_release(h);
  if (rc != LUA_OK) return lua_error(L);
  return 1;
}

static int tensor_data_ptr(lua_State *L) {
  /* On another device: the device address (an identity, as a GPU's
   * data_ptr is), which the host must not read. */
  lua_pushlightuserdata(L, cell_tensor_data_ptr(lc_check_tensor(L, 1)));
  return 1;
}

static int tensor_version(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)cell_tensor_version(lc_check_tensor(L, 1)));
  return 1;
}

/* --- views ------------------------------------------------------------------- */

static int shape_view(lua_State *L, int copy_ok) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int64_t shape[CELL_MAX_DIMS];
  int n = 0;
  /* -1 may appear in a new shape: read it here, the engine infers it. */
  if (lua_istable(L, 2)) {
    n = (int)lua_rawlen(L, 2);
    if (n > CELL_MAX_DIMS)
      return lc_argerror(L, 2, "ValueError: a tensor has at most %d dimensions", CELL_MAX_DIMS);
    for (int k = 0; k < n; k++) {
      lua_rawgeti(L, 2, k + 1);
      shape[k] = (int64_t)lc_check_item_int(L, 2, -1, k + 1, "shape");
      lua_pop(L, 1);
    }
  } else {
    for (; !lua_isnoneornil(L, 2 + n); n++) {
      if (n >= CELL_MAX_DIMS)
        return lc_argerror(L, 2 + n, "ValueError: a tensor has at most %d dimensions", CELL_MAX_DIMS);
      shape[n] = (int64_t)lc_check_int(L, 2 + n);
    }
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, copy_ok ? cell_tensor_reshape(t, n, shape, out)
                              : cell_tensor_view(t, n, shape, out));
}
static int tensor_reshape(lua_State *L) { return shape_view(L, 1); }
static int tensor_view(lua_State *L) { return shape_view(L, 0); }

static int tensor_transpose(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int d0 = lua_isnoneornil(L, 2) ? 0 : lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  int d1 = lua_isnoneornil(L, 3) ? (cell_tensor_ndim(t) > 1 ? 1 : 0) : lc_check_dim(L, 3, cell_tensor_ndim(t), 0);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_transpose(t, d0, d1, out));
}

static int tensor_permute(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int dims[CELL_MAX_DIMS], n;
  bool tbl = lua_istable(L, 2);
  n = tbl ? (int)lua_rawlen(L, 2) : lua_gettop(L) - 1;
  if (n != cell_tensor_ndim(t))
    return lc_argerror(L, 2, "ValueError: permute needs %d dimensions, got %d", cell_tensor_ndim(t), n);
  for (int k = 0; k < n; k++) {
    if (tbl) {
      lua_rawgeti(L, 2, k + 1);
      dims[k] = lc_check_dim(L, -1, cell_tensor_ndim(t), 0);
      lua_pop(L, 1);
    } else {
      dims[k] = lc_check_dim(L, 2 + k, cell_tensor_ndim(t), 0);
    }
    for (int j = 0; j < k; j++) /* said here, 1-based (the engine counts from 0) */
      if (dims[j] == dims[k])
        return lc_argerror(L, 2, "ValueError: permute: dimension %d appears more than once", dims[k] + 1);
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_permute(t, dims, out));
}

/* squeeze({d1, d2, ...}): the listed dimensions of size 1 removed (the
 * others stay, as MindSpore 2.5+ and PyTorch 2.x leave them); {} is every
 * one, as MindSpore's axis=(). One squeeze per dimension, the last first,
 * so the earlier ones keep their numbers. */
static int squeeze_dims(lua_State *L, cell_tensor *t) {
  int nd = cell_tensor_ndim(t), n = (int)lua_rawlen(L, 2);
  if (n == 0) {
    cell_tensor **out = lc_newtensor(L);
    return lc_finish(L, cell_tensor_squeeze(t, -1, out));
  }
  if (n > CELL_MAX_DIMS) return lc_argerror(L, 2, "ValueError: squeeze: too many dimensions (%d)", n);
  bool listed[CELL_MAX_DIMS] = {false};
  int first = 0;
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, 2, k + 1);
    int d = lc_dim_of(L, 2, lc_check_item_int(L, 2, -1, k + 1, "dimensions"), nd, 0);
    lua_pop(L, 1);
    if (listed[d]) /* said here, 1-based (the engine counts from 0) */
      return lc_argerror(L, 2, "ValueError: squeeze: dimension %d appears more than once", d + 1);
    listed[d] = true;
    if (k == 0) first = d;
  }
  cell_tensor **out = lc_newtensor(L);
  const int64_t *shape = cell_tensor_shape(t);
  cell_tensor *cur = NULL;
  cell_status s = CELL_OK;
  for (int d = nd - 1; d >= 0 && s == CELL_OK; d--) {
    if (!listed[d] || shape[d] != 1) continue;
    cell_tensor *next = NULL;
    s = cell_tensor_squeeze(cur ? cur : t, d, &next);
    cell_tensor_release(cur);
    cur = next;
  }
  if (s == CELL_OK && !cur) s = cell_tensor_squeeze(t, first, &cur); /* none of size 1: a view as it is */
  if (s == CELL_OK) *out = cur;
  return lc_finish(L, s);
}

static int tensor_squeeze(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (lua_istable(L, 2) && !lc_test_tensor(L, 2)) return squeeze_dims(L, t);
  int d = lua_isnoneornil(L, 2) ? -1 : lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_squeeze(t, d, out));
}

static int tensor_unsqueeze(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int d = lc_check_dim(L, 2, cell_tensor_ndim(t), 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_unsqueeze(t, d, out));
}

static int tensor_flatten(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int s = lua_isnoneornil(L, 2) ? 0 : lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  int e = lua_isnoneornil(L, 3) ? (cell_tensor_ndim(t) ? cell_tensor_ndim(t) - 1 : 0) : lc_check_dim(L, 3, cell_tensor_ndim(t), 0);
  if (cell_tensor_ndim(t) && s > e) /* said here, 1-based (the engine counts from 0) */
    return lc_argerror(L, 2, "ValueError: flatten: start dimension %d is after end dimension %d", s + 1, e + 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_flatten(t, s, e, out));
}

/* A 1-based (or negative) index into a dimension of size n: 0-based. */
static int64_t index_of(lua_State *L, int arg, lua_Integer i, int64_t n, int dim, bool end_ok) {
  int64_t r = i > 0 ? (int64_t)i - 1 : (int64_t)(n + i);
  if (i == 0 || r < 0 || r >= n + (end_ok ? 1 : 0))
    lc_argerror(L, arg, "IndexError: index %lld is out of bounds for dimension %d with size %lld",
                (long long)i, dim + 1, (long long)n);
  return r;
}

static int tensor_narrow(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int d = lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  if (cell_tensor_ndim(t) == 0) return lc_argerror(L, 1, "IndexError: cannot narrow a 0-D tensor");
  int64_t start = index_of(L, 3, lc_check_int(L, 3), cell_tensor_shape(t)[d], d, true);
  lua_Integer len = lc_check_int(L, 4);
  if (len < 0 || start + len > cell_tensor_shape(t)[d])
    return lc_argerror(L, 4, "IndexError: length %lld from start %lld exceeds dimension %d of size %lld",
                       (long long)len, (long long)start + 1, d + 1, (long long)cell_tensor_shape(t)[d]);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_narrow(t, d, start, (int64_t)len, out));
}

static int tensor_select(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (cell_tensor_ndim(t) == 0) return lc_argerror(L, 1, "IndexError: cannot index a 0-D tensor");
  int d = lc_check_dim(L, 2, cell_tensor_ndim(t), 0);
  int64_t i = index_of(L, 3, lc_check_int(L, 3), cell_tensor_shape(t)[d], d, false);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_select(t, d, i, out));
}

static int tensor_expand(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int64_t shape[CELL_MAX_DIMS];
  int n = 0;
  if (lua_istable(L, 2)) {
    n = (int)lua_rawlen(L, 2);
    if (n > CELL_MAX_DIMS) return lc_argerror(L, 2, "ValueError: too many dimensions");
    for (int k = 0; k < n; k++) {
      lua_rawgeti(L, 2, k + 1);
      shape[k] = (int64_t)lc_check_item_int(L, 2, -1, k + 1, "shape");
      lua_pop(L, 1);
    }
  } else {
    for (; !lua_isnoneornil(L, 2 + n) && n < CELL_MAX_DIMS; n++) shape[n] = (int64_t)lc_check_int(L, 2 + n);
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_expand(t, n, shape, out));
}

static int tensor_contiguous(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (cell_tensor_is_contiguous(t)) {
    lua_settop(L, 1);
    return 1;
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_contiguous(t, out));
}

static int tensor_clone(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_clone(t, out));
}

static int tensor_astype(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  cell_dtype dt = lc_check_dtype(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_astype(t, dt, out));
}

/* --- indexing: t[i], t[{ {1, 3}, 2 }], t[i] = v ----------------------------- */

/* The view that a key selects; a number key on a 1-D tensor returns true
 * in *scalar with the element's 0-based position. */
static cell_tensor *index_view(lua_State *L, cell_tensor *t, int key, bool *scalar, int64_t *pos) {
  *scalar = false;
  if (lua_type(L, key) == LUA_TNUMBER) {
    if (cell_tensor_ndim(t) == 0) lc_error(L, "IndexError: cannot index a 0-D tensor");
    int64_t i = index_of(L, key, lc_check_int(L, key), cell_tensor_shape(t)[0], 0, false);
    if (cell_tensor_ndim(t) == 1) {
      *scalar = true;
      *pos = i;
      return NULL;
    }
    cell_tensor *r;
    if (cell_tensor_select(t, 0, i, &r) != CELL_OK) lc_raise(L);
    return r;
  }
  /* A table of per-dimension entries: a number selects, {a, b[, step]}
   * keeps an inclusive range, {} keeps the whole dimension. The view under
   * construction lives in a userdata so an error mid-way frees it. */
  int n = (int)lua_rawlen(L, key);
  cell_tensor **slot = lc_newtensor(L);
  *slot = t;
  cell_tensor_retain(t);
  int d = 0;
  for (int k = 1; k <= n; k++) {
    cell_tensor *cur = *slot, *r = NULL;
    if (d >= cell_tensor_ndim(cur)) lc_error(L, "IndexError: too many indices for a %d-D tensor", cell_tensor_ndim(t));
    lua_rawgeti(L, key, k);
    int e = lua_gettop(L);
    cell_status s;
    if (lua_type(L, e) == LUA_TNUMBER) {
      int64_t i = index_of(L, key, lc_check_item_int(L, key, e, k, "an index"), cell_tensor_shape(cur)[d], d, false);
      s = cell_tensor_select(cur, d, i, &r);
    } else if (lua_istable(L, e)) {
      int64_t size = cell_tensor_shape(cur)[d];
      lua_rawgeti(L, e, 1);
      lua_rawgeti(L, e, 2);
      lua_rawgeti(L, e, 3);
      int64_t a = lua_isnil(L, -3) ? 0 : index_of(L, key, lc_check_item_int(L, key, -3, k, "a slice"), size, d, true);
      int64_t b = lua_isnil(L, -2) ? size - 1 : index_of(L, key, lc_check_item_int(L, key, -2, k, "a slice"), size, d, false);
      lua_Integer step = lua_isnil(L, -1) ? 1 : lc_check_item_int(L, key, -1, k, "a slice");
      if (step <= 0) lc_error(L, "ValueError: a slice step must be positive, got %lld", (long long)step);
      if (b < a) b = a - 1; /* an empty range */
      s = cell_tensor_slice(cur, d, a, b + 1, (int64_t)step, &r);
      d++;
    } else {
      lc_error(L, "TypeError: an index entry must be a number or a {start, stop} table, got %s",
               luaL_typename(L, e));
      return NULL;
    }
    lua_settop(L, e - 1);
    if (s != CELL_OK) lc_raise(L);
    cell_tensor_release(*slot);
    *slot = r;
  }
  cell_tensor *r = *slot;
  *slot = NULL;
  lua_pop(L, 1);
  return r;
}

/* PyTorch habits that are no member of a Tensor: reading one raises an
 * AttributeError that says what to use. Other unknown names read nil. */
static const char *const tensor_hints[][2] = {
    {"backward", "cell computes gradients functionally, use cell.grad / cell.value_and_grad"},
    {NULL, NULL}};

static void tensor_hint(lua_State *L, const char *k) {
  for (int i = 0; tensor_hints[i][0]; i++) {
    if (strcmp(k, tensor_hints[i][0]) == 0) {
      tensor_ud *ud = lc_test_ud(L, 1);
      luaL_where(L, 1);
      lua_pushfstring(L, "AttributeError: '%s' object has no attribute '%s': %s",
                      ud && ud->attrs ? "Parameter" : "Tensor", k, tensor_hints[i][1]);
      lua_concat(L, 2);
      lua_error(L);
    }
  }
}

/* t[key] and t[key] = v with a Tensor key (a bool mask, or integer
 * indices along dimension 1): the Lua methods named `method` (cell.tensor
 * installs them) called with the nargs arguments (t, key [, v]). */
static int index_by_tensor(lua_State *L, const char *method, int nargs) {
  lua_getfield(L, UV_METHODS, method);
  if (!lua_isfunction(L, -1))
    return lc_argerror(L, 2, "TypeError: a tensor index must be a number or a table, got Tensor");
  for (int i = 1; i <= nargs; i++) lua_pushvalue(L, i);
  lua_call(L, nargs, nargs == 2 ? 1 : 0);
  return nargs == 2 ? 1 : 0;
}

/* t.key: for an attributed tensor its attrs first (per-object fields, then
 * the attrs metatable's __index); then the tensor methods, the properties
 * and, for number and table keys, indexing. */
static int tensor_index(lua_State *L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    tensor_ud *ud = self_ud(L); /* the hot path of method calls: one metatable test */
    if (ud->attrs && lc_attrs_get(L)) return 1;
    lua_pushvalue(L, 2);
    lua_rawget(L, UV_METHODS);
    if (!lua_isnil(L, -1)) return 1;
    const char *k = lua_tostring(L, 2);
    cell_tensor *t = lc_check_tensor(L, 1);
    if (strcmp(k, "shape") == 0) push_shape(L, t);
    else if (strcmp(k, "dtype") == 0) lc_push_dtype(L, cell_tensor_dtype(t));
    else if (strcmp(k, "ndim") == 0) lua_pushinteger(L, cell_tensor_ndim(t));
    else if (strcmp(k, "device") == 0) lc_push_device_name(L, t);
    else if (strcmp(k, "requires_grad") == 0) lua_pushboolean(L, cell_tensor_requires_grad(t));
    else if (strcmp(k, "grad_fn") == 0) {
      const char *name = cell_tensor_grad_fn_name(t);
      if (name) lua_pushstring(L, name);
      else lua_pushnil(L);
    }
    else if (strcmp(k, "T") == 0) {
      cell_tensor **out = lc_newtensor(L);
      int dims[CELL_MAX_DIMS];
      for (int i = 0; i < cell_tensor_ndim(t); i++) dims[i] = cell_tensor_ndim(t) - 1 - i;
      return lc_finish(L, cell_tensor_permute(t, dims, out));
    } else {
      tensor_hint(L, k);
      lua_pushnil(L);
    }
    return 1;
  }
  cell_tensor *t = lc_check_tensor(L, 1);
  if (lc_test_tensor(L, 2)) return index_by_tensor(L, "_index_tensor", 2);
  if (lua_type(L, 2) != LUA_TNUMBER && !lua_istable(L, 2))
    return lc_argerror(L, 2, "TypeError: a tensor index must be a number, a table or a Tensor, got %s",
                       luaL_typename(L, 2));
  bool scalar;
  int64_t pos;
  cell_tensor *v = index_view(L, t, 2, &scalar, &pos);
  if (scalar) {
    if (cell_tensor_device(t) != 0) {
      cell_tensor *h = lc_host_tensor(L, t);
      lc_push_element(L, cell_tensor_dtype(h),
                      (char *)cell_tensor_data_ptr(h) + pos * cell_tensor_strides(h)[0] * cell_dtype_size(cell_tensor_dtype(h)));
      cell_tensor_release(h);
      return 1;
    }
    lc_push_element(L, cell_tensor_dtype(t),
                    (char *)cell_tensor_data_ptr(t) + pos * cell_tensor_strides(t)[0] * cell_dtype_size(cell_tensor_dtype(t)));
    return 1;
  }
  lc_push_owned(L, v);
  return 1;
}

/* t[i] = v writes; t.key = v goes to an attributed tensor's __setattr. */
static int tensor_newindex(lua_State *L) {
  tensor_ud *ud = self_ud(L);
  if (lua_type(L, 2) == LUA_TSTRING) {
    if (ud->attrs && lc_attrs_meta(L, "__setattr")) {
      lua_pushvalue(L, 1);
      lua_pushvalue(L, 2);
      lua_pushvalue(L, 3);
      lua_call(L, 3, 0);
      return 0;
    }
  }
  cell_tensor *t = lc_check_tensor(L, 1);
  if (lc_test_tensor(L, 2)) return index_by_tensor(L, "_newindex_tensor", 3);
  if (lua_type(L, 2) != LUA_TNUMBER && !lua_istable(L, 2))
    return lc_argerror(L, 2, "TypeError: cannot set field '%s' of a Tensor",
                       lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2));
  bool scalar;
  int64_t pos;
  cell_tensor *v = index_view(L, t, 2, &scalar, &pos);
  cell_tensor *src = lc_test_tensor(L, 3);
  cell_status s;
  if (scalar && cell_tensor_select(t, 0, pos, &v) != CELL_OK) return lc_raise(L);
  if (src) {
    s = cell_tensor_copy_(v, src);
  } else if (lua_type(L, 3) == LUA_TNUMBER || lua_isboolean(L, 3)) {
    double x = lua_isboolean(L, 3) ? lua_toboolean(L, 3) : lua_tonumber(L, 3);
    s = cell_tensor_fill_(v, x);
  } else {
    cell_tensor_release(v);
    return lc_argerror(L, 3, "TypeError: can only assign a number, a boolean or a Tensor, got %s",
                       luaL_typename(L, 3));
  }
  cell_tensor_release(v);
  if (s != CELL_OK) return lc_raise(L);
  return 0;
}

static int tensor_len(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  lua_pushinteger(L, cell_tensor_ndim(t) ? (lua_Integer)cell_tensor_shape(t)[0] : 0);
  return 1;
}

/* --- arithmetic metamethods --------------------------------------------------- */

/* Either side may be a number; Lua calls the metamethod of whichever
 * operand is a tensor. */
static int arith(lua_State *L, cell_binop op) {
  cell_tensor *a = lc_test_tensor(L, 1), *b = lc_test_tensor(L, 2);
  cell_tensor **out;
  if (a && b) {
    out = lc_newtensor(L);
    return lc_finish(L, cell_op_binary(op, a, b, out));
  }
  int num = a ? 2 : 1;
  cell_tensor *t = a ? a : b;
  if (!t) return lc_argerror(L, 1, "TypeError: expected a Tensor, got %s", luaL_typename(L, 1));
  if (lua_type(L, num) != LUA_TNUMBER && !lua_isboolean(L, num))
    return lc_argerror(L, num, "TypeError: unsupported operand for %s: Tensor and %s",
                       cell_binop_name(op), luaL_typename(L, num));
  double v = lua_isboolean(L, num) ? lua_toboolean(L, num) : lua_tonumber(L, num);
  bool fl = !lua_isboolean(L, num) && lc_number_is_float(L, num);
  out = lc_newtensor(L);
  return lc_finish(L, cell_op_binary_scalar(op, t, v, fl, num == 1, out));
}

static int tensor_add(lua_State *L) { return arith(L, CELL_OP_ADD); }
static int tensor_sub(lua_State *L) { return arith(L, CELL_OP_SUB); }
static int tensor_mul(lua_State *L) { return arith(L, CELL_OP_MUL); }
static int tensor_div(lua_State *L) { return arith(L, CELL_OP_DIV); }
static int tensor_pow(lua_State *L) { return arith(L, CELL_OP_POW); }

static int tensor_unm(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_unary(CELL_OP_NEG, t, out));
}

/* t < x, t <= x and the mirrored forms: Lua turns any comparison's result
 * into a boolean, so a Tensor cannot come back; the error names the methods
 * that do it, in both operand orders, at the comparison's line.
 * (Lua 5.4 calls these for a number on either side; LuaJIT, as Lua 5.1,
 * only for two tensors, and reports a number compared with a tensor as
 * "attempt to compare number with userdata".) */
static int compare_error(lua_State *L, const char *ops, const char *less, const char *greater) {
  /* called directly with no Tensor at all: the metamethod's own type error */
  if (!lc_test_ud(L, 1) && !lc_test_ud(L, 2)) lc_check_tensor(L, 1);
  luaL_where(L, 1);
  lua_pushfstring(L,
                  "TypeError: %s cannot compare Tensors in Lua (a comparison must give a boolean): "
                  "%s, %s (x a number or a Tensor)",
                  ops, less, greater);
  lua_concat(L, 2);
  return lua_error(L);
}

static int tensor_lt(lua_State *L) {
  return compare_error(L, "'<' and '>'", "for t < x use t:lt(x)", "for t > x use t:gt(x)");
}
static int tensor_le(lua_State *L) {
  return compare_error(L, "'<=' and '>='", "for t <= x use t:le(x)", "for t >= x use t:ge(x)");
}

static const luaL_Reg tensor_metamethods[] = {
    {"__gc", tensor_gc},     {"__close", tensor_gc}, {"__tostring", tensor_tostring},
    {"__index", tensor_index}, {"__newindex", tensor_newindex}, {"__len", tensor_len},
    {"__add", tensor_add},   {"__sub", tensor_sub},  {"__mul", tensor_mul},
    {"__div", tensor_div},   {"__pow", tensor_pow},  {"__unm", tensor_unm},
    {"__lt", tensor_lt},     {"__le", tensor_le},
    {NULL, NULL}};

static const luaL_Reg tensor_methods[] = {
    {"free", tensor_free},
    {"numel", tensor_numel},
    {"size", tensor_size},
    {"stride", tensor_stride},
    {"is_contiguous", tensor_is_contiguous},
    {"item", tensor_item},
    {"totable", tensor_totable},
    {"data_ptr", tensor_data_ptr},
    {"move_to", lc_tensor_move_to},
    {"_version", tensor_version},
    {"reshape", tensor_reshape},
    {"view", tensor_view},
    {"transpose", tensor_transpose},
    {"permute", tensor_permute},
    {"squeeze", tensor_squeeze},
    {"unsqueeze", tensor_unsqueeze},
    {"expand_dims", tensor_unsqueeze},
    {"flatten", tensor_flatten},
    {"narrow", tensor_narrow},
    {"select", tensor_select},
    {"expand", tensor_expand},
    {"broadcast_to", tensor_expand},
    {"contiguous", tensor_contiguous},
    {"clone", tensor_clone},
    {"astype", tensor_astype},
    {NULL, NULL}};

void lc_open_tensor(lua_State *L, int base) {
  lc_setfuncs(L, base + 1, base, tensor_methods);
  lc_setfuncs(L, base + 2, base, tensor_metamethods);
  lua_pushliteral(L, "Tensor");
  lua_setfield(L, base + 2, "__name");
  /* getmetatable(t) gives this string, so a script cannot reach (or, from
   * Lua, replace) the metamethods; the Lua layer asks core.is_tensor and
   * core._attrs instead. */
  lua_pushliteral(L, "Tensor");
  lua_setfield(L, base + 2, "__metatable");
  lc_register_ops(L, base);
}
