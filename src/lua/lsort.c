/* lsort.c - tensor methods for the ordering and rearranging ops: sort,
 * argsort, topk, median, unique, cumprod, logsumexp, amax / amin, tril /
 * triu, flip, roll, diag and trace (1-based dims and indices; MindSpore's
 * keyword arguments as an options table). */
#include "lcell.h"
#include <string.h>

/* The options table at i when the value there is a plain table. */
static bool is_opts(lua_State *L, int i) { return lua_istable(L, i) && !lc_test_tensor(L, i); }

/* A boolean option (def when absent); TypeError naming it otherwise. */
static int opt_bool(lua_State *L, int opts, int arg, const char *op, const char *key, int def) {
  int v = def;
  if (lc_field(L, opts, key)) {
    if (!lua_isboolean(L, -1))
      lc_argerror(L, arg, "TypeError: %s: %s must be a boolean, got %s", op, key, lc_typename(L, -1));
    v = lua_toboolean(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* A positional boolean at i (def when nil). */
static int arg_bool(lua_State *L, int i, const char *op, const char *what, int def) {
  if (lua_isnoneornil(L, i)) return def;
  if (!lua_isboolean(L, i))
    lc_argerror(L, i, "TypeError: %s: %s must be a boolean, got %s", op, what, lc_typename(L, i));
  return lua_toboolean(L, i);
}

/* dims from a number or a table of numbers at stack index idx (blamed on
 * argument arg); returns their count. */
static int dims_at(lua_State *L, int arg, int idx, int ndim, int *dims) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    dims[0] = lc_dim_of(L, arg, lc_check_item_int(L, arg, idx, 1, "dim"), ndim, 0);
    return 1;
  }
  if (!is_opts(L, idx))
    lc_argerror(L, arg, "TypeError: a dimension must be a number or a table of numbers, got %s",
                lc_typename(L, idx));
  int n = (int)lua_rawlen(L, idx);
  if (n > CELL_MAX_DIMS) lc_argerror(L, arg, "ValueError: %d dimensions given, at most %d", n, CELL_MAX_DIMS);
  if (idx < 0) idx = lua_gettop(L) + idx + 1; /* absolute (LuaJIT has no lua_absindex) */
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, idx, k + 1);
    dims[k] = lc_dim_of(L, arg, lc_check_item_int(L, arg, -1, k + 1, "dim"), ndim, 0);
    lua_pop(L, 1);
  }
  return n;
}

/* opts.dim or opts.axis pushed; whether either is set. */
static bool dim_field(lua_State *L, int opts) {
  if (lc_field(L, opts, "dim")) return true;
  lua_pop(L, 1);
  return lc_field(L, opts, "axis");
}

/* keepdim, or MindSpore's keep_dims / keepdims. */
static int keep_field(lua_State *L, int opts, int arg, const char *op) {
  static const char *const names[] = {"keep_dims", "keepdims"};
  for (int k = 0; k < 2; k++) {
    if (lc_field(L, opts, names[k])) {
      lua_pop(L, 1);
      return opt_bool(L, opts, arg, op, names[k], 0);
    }
    lua_pop(L, 1);
  }
  return opt_bool(L, opts, arg, op, "keepdim", 0);
}

/* One dimension at i (default def when nil, -1: the last). */
static int one_dim(lua_State *L, int i, int ndim, int def) {
  if (lua_isnoneornil(L, i)) return def < 0 ? (ndim ? ndim - 1 : 0) : def;
  return lc_check_dim(L, i, ndim, 0);
}

static int push2(lua_State *L, cell_status s, cell_tensor **a, cell_tensor **b) {
  (void)a;
  (void)b;
  if (s != CELL_OK) return lc_raise(L);
  lc_finish(L, CELL_OK);
  return 2;
}

/* --- sort / argsort ------------------------------------------------------------ */

static const char *const sort_keys[] = {"dim", "axis", "descending", "stable", NULL};

/* ([dim [, descending]]) or ({dim =, axis =, descending =, stable =}). */
static void sort_args(lua_State *L, const char *op, cell_tensor *a, int *dim, int *desc) {
  int nd = cell_tensor_ndim(a);
  if (is_opts(L, 2)) {
    int o = lc_options(L, 2, op, sort_keys);
    *dim = nd ? nd - 1 : 0;
    if (dim_field(L, o)) *dim = lc_dim_of(L, 2, lc_check_item_int(L, 2, -1, 1, "dim"), nd, 0);
    lua_pop(L, 1);
    *desc = opt_bool(L, o, 2, op, "descending", 0);
    (void)opt_bool(L, o, 2, op, "stable", 1); /* always stable */
    return;
  }
  *dim = one_dim(L, 2, nd, -1);
  if (is_opts(L, 3)) { /* (dim, {descending =, stable =}) */
    int o = lc_options(L, 3, op, sort_keys);
    if (dim_field(L, o)) lc_argerror(L, 3, "TypeError: %s: dim given twice (positionally and as an option)", op);
    lua_pop(L, 1);
    *desc = opt_bool(L, o, 3, op, "descending", 0);
    (void)opt_bool(L, o, 3, op, "stable", 1);
    return;
  }
  *desc = arg_bool(L, 3, op, "descending", 0);
}

static int tensor_sort(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int dim, desc;
  sort_args(L, "sort", a, &dim, &desc);
  cell_tensor **v = lc_newtensor(L), **ix = lc_newtensor(L);
  return push2(L, cell_op_sort(a, dim, desc, 1, v, ix), v, ix);
}

static int tensor_argsort(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int dim, desc;
  sort_args(L, "argsort", a, &dim, &desc);
  cell_tensor **ix = lc_newtensor(L);
  return lc_finish(L, cell_op_sort(a, dim, desc, 1, NULL, ix));
}

/* --- topk ---------------------------------------------------------------------- */

static const char *const topk_keys[] = {"dim", "axis", "largest", "sorted", NULL};

/* (k [, dim [, largest [, sorted]]]) or (k, {dim =, largest =, sorted =}). */
static int tensor_topk(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  lua_Integer k = lc_check_int(L, 2);
  int nd = cell_tensor_ndim(a), dim, largest, sorted;
  if (is_opts(L, 3)) {
    int o = lc_options(L, 3, "topk", topk_keys);
    dim = nd ? nd - 1 : 0;
    if (dim_field(L, o)) dim = lc_dim_of(L, 3, lc_check_item_int(L, 3, -1, 1, "dim"), nd, 0);
    lua_pop(L, 1);
    largest = opt_bool(L, o, 3, "topk", "largest", 1);
    sorted = opt_bool(L, o, 3, "topk", "sorted", 1);
  } else {
    dim = one_dim(L, 3, nd, -1);
    largest = arg_bool(L, 4, "topk", "largest", 1);
    sorted = arg_bool(L, 5, "topk", "sorted", 1);
  }
  int64_t len = nd ? (int64_t)cell_tensor_dim(a, dim) : 1;
  if (k < 0 || k > len)
    return lc_argerror(L, 2, "ValueError: topk: k = %lld is out of range: dimension %d has size %lld",
                       (long long)k, dim + 1, (long long)len);
  cell_tensor **v = lc_newtensor(L), **ix = lc_newtensor(L);
  return push2(L, cell_op_topk(a, (int64_t)k, dim, largest, sorted, 1, v, ix), v, ix);
}

/* --- median -------------------------------------------------------------------- */

static const char *const red_keys[] = {"dim", "axis", "keepdim", "keep_dims", "keepdims", NULL};
static const char *const keep_keys[] = {"keepdim", "keep_dims", "keepdims", NULL};

/* () -> the median of everything; (dim [, keepdim]) or ({dim =, keepdim =})
 * -> values, indices. */
static int tensor_median(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int nd = cell_tensor_ndim(a), dim = -1, keep = 0;
  if (is_opts(L, 2)) {
    int o = lc_options(L, 2, "median", red_keys);
    if (dim_field(L, o)) dim = lc_dim_of(L, 2, lc_check_item_int(L, 2, -1, 1, "dim"), nd, 0);
    lua_pop(L, 1);
    keep = keep_field(L, o, 2, "median");
  } else if (!lua_isnoneornil(L, 2)) {
    dim = lc_check_dim(L, 2, nd, 0);
    if (is_opts(L, 3)) /* (dim, {keepdim =}) */
      keep = keep_field(L, lc_options(L, 3, "median", keep_keys), 3, "median");
    else
      keep = arg_bool(L, 3, "median", "keepdim", 0);
  }
  if (dim < 0) {
    cell_tensor **out = lc_newtensor(L);
    return lc_finish(L, cell_op_median_all(a, out));
  }
  cell_tensor **v = lc_newtensor(L), **ix = lc_newtensor(L);
  return push2(L, cell_op_median(a, dim, keep, 1, v, ix), v, ix);
}

/* --- unique -------------------------------------------------------------------- */

static const char *const unique_keys[] = {"sorted", "return_inverse", "return_counts", NULL};

static int tensor_unique(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int o = lc_options(L, 2, "unique", unique_keys);
  (void)opt_bool(L, o, 2, "unique", "sorted", 1); /* always sorted */
  int inv = opt_bool(L, o, 2, "unique", "return_inverse", 0);
  int cnt = opt_bool(L, o, 2, "unique", "return_counts", 0);
  cell_tensor **u = lc_newtensor(L);
  cell_tensor **ip = inv ? lc_newtensor(L) : NULL, **cp = cnt ? lc_newtensor(L) : NULL;
  if (cell_op_unique(a, 1, u, ip, cp) != CELL_OK) return lc_raise(L);
  lc_finish(L, CELL_OK);
  return 1 + inv + cnt;
}

/* --- cumprod ------------------------------------------------------------------- */

static const char *const cumprod_keys[] = {"dtype", NULL};

/* (dim [, {dtype =}]) */
static int tensor_cumprod(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int d = lc_check_dim(L, 2, cell_tensor_ndim(a), 0);
  int o = lc_options(L, 3, "cumprod", cumprod_keys);
  if (lc_field(L, o, "dtype")) {
    cell_dtype dt = lc_check_dtype(L, lua_gettop(L));
    cell_tensor **c = lc_newtensor(L);
    if (cell_tensor_astype(a, dt, c) != CELL_OK) return lc_raise(L);
    a = *c;
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_cumprod(a, d, out));
}

/* --- logsumexp, amax, amin ----------------------------------------------------- */

/* (dims [, keepdim]) or ({dim =, keepdim =}); no dims: all of them. */
static int dims_keep(lua_State *L, const char *op, cell_tensor *a, int *dims, int *keep) {
  int nd = cell_tensor_ndim(a), n = 0;
  *keep = 0;
  if (is_opts(L, 2) && lua_rawlen(L, 2) == 0) {
    int o = lc_options(L, 2, op, red_keys);
    if (dim_field(L, o)) n = dims_at(L, 2, -1, nd, dims);
    lua_pop(L, 1);
    *keep = keep_field(L, o, 2, op);
    return n;
  }
  if (!lua_isnoneornil(L, 2)) n = dims_at(L, 2, 2, nd, dims);
  if (is_opts(L, 3)) {
    int o = lc_options(L, 3, op, keep_keys);
    *keep = keep_field(L, o, 3, op);
  } else {
    *keep = arg_bool(L, 3, op, "keepdim", 0);
  }
  return n;
}

static int tensor_logsumexp(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int dims[CELL_MAX_DIMS], keep;
  int n = dims_keep(L, "logsumexp", a, dims, &keep);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_logsumexp(a, n, dims, keep, out));
}

static int amax_amin(lua_State *L, cell_redop op, const char *name) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int dims[CELL_MAX_DIMS], keep;
  int n = dims_keep(L, name, a, dims, &keep);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_reduce(op, a, n, dims, keep, out));
}
static int tensor_amax(lua_State *L) { return amax_amin(L, CELL_RED_MAX, "amax"); }
static int tensor_amin(lua_State *L) { return amax_amin(L, CELL_RED_MIN, "amin"); }

/* --- tril / triu, diag, trace --------------------------------------------------- */

static int64_t opt_offset(lua_State *L, int i) {
  return lua_isnoneornil(L, i) ? 0 : (int64_t)lc_check_int(L, i);
}

static int tensor_tril(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int64_t k = opt_offset(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_tril(a, k, out));
}

static int tensor_triu(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int64_t k = opt_offset(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_triu(a, k, out));
}

static int tensor_diag(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int64_t k = opt_offset(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_diag(a, k, out));
}

static int tensor_trace(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_trace(a, out));
}

/* --- flip / roll ---------------------------------------------------------------- */

/* flip(dims): a number, a table, or several numbers. */
static int tensor_flip(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int nd = cell_tensor_ndim(a), dims[CELL_MAX_DIMS], n = 0;
  if (lua_isnoneornil(L, 2))
    return lc_argerror(L, 2, "TypeError: flip: expected the dimensions to flip (a number or a table), got nothing");
  if (lua_type(L, 2) == LUA_TNUMBER && lua_gettop(L) > 2) {
    int top = lua_gettop(L);
    if (top - 1 > CELL_MAX_DIMS) return lc_argerror(L, 2, "ValueError: %d dimensions given, at most %d", top - 1, CELL_MAX_DIMS);
    for (int i = 2; i <= top; i++) dims[n++] = lc_check_dim(L, i, nd, 0);
  } else {
    n = dims_at(L, 2, 2, nd, dims);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (dims[i] == dims[j])
        return lc_argerror(L, 2, "ValueError: flip: dimension %d appears more than once in the dimensions", dims[i] + 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_flip(a, n, dims, out));
}

/* roll(shifts [, dims]): numbers or tables of one length. */
static int tensor_roll(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int nd = cell_tensor_ndim(a), dims[CELL_MAX_DIMS], ns = 0, n = 0;
  int64_t shifts[CELL_MAX_DIMS];
  if (lua_type(L, 2) == LUA_TNUMBER) {
    shifts[ns++] = (int64_t)lc_check_int(L, 2);
  } else if (is_opts(L, 2)) {
    ns = (int)lua_rawlen(L, 2);
    if (ns > CELL_MAX_DIMS) return lc_argerror(L, 2, "ValueError: roll: %d shifts given, at most %d", ns, CELL_MAX_DIMS);
    for (int k = 0; k < ns; k++) {
      lua_rawgeti(L, 2, k + 1);
      shifts[k] = (int64_t)lc_check_item_int(L, 2, -1, k + 1, "shift");
      lua_pop(L, 1);
    }
  } else {
    return lc_argerror(L, 2, "TypeError: roll: shifts must be a number or a table of numbers, got %s",
                       lc_typename(L, 2));
  }
  if (!lua_isnoneornil(L, 3)) n = dims_at(L, 3, 3, nd, dims);
  if (n == 0 && ns != 1)
    return lc_argerror(L, 2, "ValueError: roll: without dims, give one shift (for the flattened tensor), got %d", ns);
  if (n > 0 && n != ns)
    return lc_argerror(L, 3, "ValueError: roll: shifts and dims must align: %d shifts, %d dims", ns, n);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_roll(a, n, shifts, dims, out));
}

static const luaL_Reg sort_methods[] = {
    {"sort", tensor_sort},           {"argsort", tensor_argsort}, {"topk", tensor_topk},
    {"median", tensor_median},       {"unique", tensor_unique},   {"cumprod", tensor_cumprod},
    {"logsumexp", tensor_logsumexp}, {"amax", tensor_amax},       {"amin", tensor_amin},
    {"tril", tensor_tril},           {"triu", tensor_triu},       {"diag", tensor_diag},
    {"trace", tensor_trace},         {"flip", tensor_flip},       {"roll", tensor_roll},
    {NULL, NULL}};

void lc_register_sort(lua_State *L, int base) { lc_setfuncs(L, base + 1, base, sort_methods); }
