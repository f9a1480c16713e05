/* lcreate.c - module functions: tensor creation, cat/stack/where, engine
 * settings and statistics. */
#include "lcell.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* --- cell.tensor(data [, dtype]) ---------------------------------------------- */

/* Shape of a nested table, from its first elements; *leaf_bool tells
 * whether the first leaf is a boolean (the default dtype is then bool). */
static int nested_shape(lua_State *L, int idx, int64_t *shape, bool *leaf_bool) {
  int ndim = 0;
  lua_pushvalue(L, idx);
  for (;;) {
    if (ndim >= CELL_MAX_DIMS)
      lc_error(L, "ValueError: tensor: nested tables deeper than %d levels", CELL_MAX_DIMS);
    int64_t n = (int64_t)lua_rawlen(L, -1);
    shape[ndim++] = n;
    if (n == 0) {
      /* {} is an empty tensor; a table of keys ({data = ...}) is no list */
      lua_pushnil(L);
      if (lua_next(L, -2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING)
          lc_error(L, "TypeError: tensor: expected a list of numbers (a sequence), got a table with key '%s'",
                   lua_tostring(L, -1));
        lc_error(L, "TypeError: tensor: expected a list of numbers (a sequence), got a table with a %s key",
                 luaL_typename(L, -1));
      }
      break;
    }
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
    if (lua_istable(L, -1)) continue;
    *leaf_bool = lua_isboolean(L, -1);
    break;
  }
  lua_pop(L, 1);
  return ndim;
}

static void fill_nested(lua_State *L, int idx, int d, const cell_tensor *t, char **p) {
  int64_t n = (int64_t)lua_rawlen(L, idx);
  if (n != cell_tensor_shape(t)[d])
    lc_error(L, "ValueError: tensor: ragged nested table: expected %lld elements at depth %d, got %lld",
             (long long)cell_tensor_shape(t)[d], d + 1, (long long)n);
  luaL_checkstack(L, 2, "tensor");
  int es = cell_dtype_size(cell_tensor_dtype(t));
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, (int)i);
    int e = lua_gettop(L);
    if (d + 1 < cell_tensor_ndim(t)) {
      if (!lua_istable(L, e))
        lc_error(L, "ValueError: tensor: ragged nested table: expected a table at depth %d, got %s",
                 d + 2, luaL_typename(L, e));
      fill_nested(L, e, d + 1, t, p);
    } else if (lua_type(L, e) == LUA_TNUMBER) {
#if LUA_VERSION_NUM >= 503
      if (lua_isinteger(L, e) && !cell_dtype_is_float(cell_tensor_dtype(t)))
        cell_element_set_i64(cell_tensor_dtype(t), *p, (long long)lua_tointeger(L, e));
      else
#endif
        cell_element_set_f64(cell_tensor_dtype(t), *p, lua_tonumber(L, e));
      *p += es;
    } else if (lua_isboolean(L, e)) {
      cell_element_set_f64(cell_tensor_dtype(t), *p, lua_toboolean(L, e));
      *p += es;
    } else if (lua_istable(L, e)) {
      lc_error(L, "ValueError: tensor: ragged nested table: unexpected table at depth %d", d + 2);
    } else {
      lc_error(L, "TypeError: tensor: expected numbers or booleans, got %s at depth %d",
               luaL_typename(L, e), d + 1);
    }
    lua_pop(L, 1);
  }
}

/* Whether every leaf of the nested table at idx (ndim levels, the shape
 * already checked by nested_shape's first path) is a boolean: a table whose
 * first leaf is true but holds numbers too is float32, not bool, whatever
 * the order ({true, 0.5} keeps its 0.5). Ragged tables stop here early and
 * are refused by fill_nested. */
static bool all_bool(lua_State *L, int idx, int d, int ndim) {
  int64_t n = (int64_t)lua_rawlen(L, idx);
  luaL_checkstack(L, 2, "tensor");
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, (int)i);
    bool ok = d + 1 < ndim ? lua_istable(L, -1) && all_bool(L, lua_gettop(L), d + 1, ndim) : lua_isboolean(L, -1);
    lua_pop(L, 1);
    if (!ok) return false;
  }
  return true;
}

static int l_tensor(lua_State *L) {
  cell_tensor *src = lc_test_tensor(L, 1);
  if (src) {
    cell_dtype dt = lc_opt_dtype(L, 2, cell_tensor_dtype(src));
    cell_tensor **out = lc_newtensor(L);
    return lc_finish(L, cell_tensor_astype(src, dt, out));
  }
  int tp = lua_type(L, 1);
  if (tp == LUA_TNUMBER || tp == LUA_TBOOLEAN) {
    cell_dtype dt = lc_opt_dtype(L, 2, tp == LUA_TBOOLEAN ? CELL_DTYPE_BOOL : CELL_DTYPE_F32);
    double v = tp == LUA_TBOOLEAN ? lua_toboolean(L, 1) : lua_tonumber(L, 1);
    cell_tensor **out = lc_newtensor(L);
    cell_status s = cell_tensor_empty(dt, 0, NULL, out);
#if LUA_VERSION_NUM >= 503
    if (s == CELL_OK && lua_isinteger(L, 1) && !cell_dtype_is_float(dt))
      cell_element_set_i64(dt, cell_tensor_data_ptr(*out), (long long)lua_tointeger(L, 1));
    else
#endif
    if (s == CELL_OK)
      cell_element_set_f64(dt, cell_tensor_data_ptr(*out), v);
    if (s == CELL_OK) s = lc_to_default_device(out);
    return lc_finish(L, s);
  }
  if (tp != LUA_TTABLE)
    return lc_argerror(L, 1, "TypeError: expected a number, a boolean, a nested table or a Tensor, got %s",
                       luaL_typename(L, 1));
  int64_t shape[CELL_MAX_DIMS];
  bool leaf_bool = false;
  int ndim = nested_shape(L, 1, shape, &leaf_bool);
  if (leaf_bool) leaf_bool = all_bool(L, 1, 0, ndim);
  cell_dtype dt = lc_opt_dtype(L, 2, leaf_bool ? CELL_DTYPE_BOOL : CELL_DTYPE_F32);
  cell_tensor **out = lc_newtensor(L);
  if (cell_tensor_empty(dt, ndim, shape, out) != CELL_OK) return lc_raise(L);
  char *p = cell_tensor_data_ptr(*out);
  fill_nested(L, 1, 0, *out, &p);
  return lc_finish(L, lc_to_default_device(out));
}

/* --- shapes and constants ---------------------------------------------------- */

static int make_full(lua_State *L, double v, int has_value) {
  int64_t shape[CELL_MAX_DIMS];
  int next;
  int n = lc_check_shape(L, 1, shape, &next);
  if (has_value) { /* full(shape, value [, dtype]) */
    if (lua_type(L, next) != LUA_TNUMBER && !lua_isboolean(L, next))
      return lc_argerror(L, next, "TypeError: full: expected a fill value, got %s",
                         luaL_typename(L, next));
    bool b = lua_isboolean(L, next);
    v = b ? lua_toboolean(L, next) : lua_tonumber(L, next);
    next++;
    cell_dtype dt = lc_opt_dtype(L, next, b ? CELL_DTYPE_BOOL : CELL_DTYPE_F32);
    cell_tensor **out = lc_newtensor(L);
    return lc_finish(L, cell_tensor_full(dt, n, shape, v, out));
  }
  cell_dtype dt = lc_opt_dtype(L, next, CELL_DTYPE_F32);
  cell_tensor **out = lc_newtensor(L);
  if (isnan(v)) { /* empty: made on the host, then where new tensors go */
    if (cell_tensor_empty(dt, n, shape, out) != CELL_OK) return lc_raise(L);
    return lc_finish(L, lc_to_default_device(out));
  }
  return lc_finish(L, cell_tensor_full(dt, n, shape, v, out));
}
static int l_zeros(lua_State *L) { return make_full(L, 0, 0); }
static int l_ones(lua_State *L) { return make_full(L, 1, 0); }
static int l_full(lua_State *L) { return make_full(L, 0, 1); }
static int l_empty(lua_State *L) { return make_full(L, NAN, 0); }

static int like(lua_State *L, double v) {
  cell_tensor *t = lc_check_tensor(L, 1);
  cell_dtype dt = lc_opt_dtype(L, 2, cell_tensor_dtype(t));
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_full_on(cell_tensor_device(t), dt, cell_tensor_ndim(t), cell_tensor_shape(t), v, out));
}
static int l_zeros_like(lua_State *L) { return like(L, 0); }
static int l_ones_like(lua_State *L) { return like(L, 1); }

static int l_full_like(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  double v = lc_check_number(L, 2);
  cell_dtype dt = lc_opt_dtype(L, 3, cell_tensor_dtype(t));
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_full_on(cell_tensor_device(t), dt, cell_tensor_ndim(t), cell_tensor_shape(t), v, out));
}

/* arange([start,] stop [, step] [, dtype]): int64 when every bound is
 * integral, as MindSpore infers, float32 otherwise. */
static int l_arange(lua_State *L) {
  double a[3];
  int n = 0;
  bool integral = true;
  while (n < 3 && lua_type(L, n + 1) == LUA_TNUMBER) {
    a[n] = lua_tonumber(L, n + 1);
    if (lc_number_is_float(L, n + 1)) integral = false;
    n++;
  }
  if (n == 0) return lc_argerror(L, 1, "TypeError: arange: expected numbers, got %s", luaL_typename(L, 1));
  double start = n == 1 ? 0 : a[0], stop = n == 1 ? a[0] : a[1], step = n == 3 ? a[2] : 1;
  cell_dtype dt = lc_opt_dtype(L, n + 1, integral ? CELL_DTYPE_I64 : CELL_DTYPE_F32);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_arange(start, stop, step, dt, out));
}

static int l_linspace(lua_State *L) {
  double a = lc_check_number(L, 1), b = lc_check_number(L, 2);
  lua_Integer n = lc_check_int(L, 3);
  cell_dtype dt = lc_opt_dtype(L, 4, CELL_DTYPE_F32);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_linspace(a, b, (int64_t)n, dt, out));
}

static int l_eye(lua_State *L) {
  lua_Integer n = lc_check_int(L, 1);
  lua_Integer m = lua_type(L, 2) == LUA_TNUMBER ? lc_check_int(L, 2) : n;
  cell_dtype dt = lc_opt_dtype(L, lua_type(L, 2) == LUA_TNUMBER ? 3 : 2, CELL_DTYPE_F32);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_eye((int64_t)n, (int64_t)m, dt, out));
}

static int random_tensor(lua_State *L, int normal) {
  int64_t shape[CELL_MAX_DIMS];
  int next;
  int n = lc_check_shape(L, 1, shape, &next);
  cell_dtype dt = lc_opt_dtype(L, next, CELL_DTYPE_F32);
  cell_tensor **out = lc_newtensor(L);
  cell_generator *prev = lc_gen_enter(L);
  cell_status s = normal ? cell_tensor_randn(dt, n, shape, out) : cell_tensor_rand(dt, n, shape, out);
  lc_gen_leave(prev);
  return lc_finish(L, s);
}
static int l_rand(lua_State *L) { return random_tensor(L, 0); }
static int l_randn(lua_State *L) { return random_tensor(L, 1); }

static int l_randint(lua_State *L) {
  lua_Integer lo = lc_check_int(L, 1), hi = lc_check_int(L, 2);
  int64_t shape[CELL_MAX_DIMS];
  int next;
  int n = lc_check_shape(L, 3, shape, &next);
  cell_dtype dt = lc_opt_dtype(L, next, CELL_DTYPE_I64);
  cell_tensor **out = lc_newtensor(L);
  cell_generator *prev = lc_gen_enter(L);
  cell_status s = cell_tensor_randint((int64_t)lo, (int64_t)hi, dt, n, shape, out);
  lc_gen_leave(prev);
  return lc_finish(L, s);
}

/* --- cat, stack, where ------------------------------------------------------- */

static int join(lua_State *L, int stack) {
  lua_settop(L, 2); /* the scratch userdata below must not land in slot 2 */
  lc_check_table(L, 1, stack ? "a list of tensors to stack" : "a list of tensors to cat");
  int n = (int)lua_rawlen(L, 1);
  if (n == 0) return lc_argerror(L, 1, "ValueError: %s: expected a non-empty list of tensors", stack ? "stack" : "cat");
  cell_tensor **ts = lua_newuserdatauv(L, sizeof(cell_tensor *) * (size_t)n, 0); /* freed by GC */
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    ts[i] = lc_test_tensor(L, -1);
    if (!ts[i])
      return lc_argerror(L, 1, "TypeError: %s: element %d is a %s, not a Tensor", stack ? "stack" : "cat",
                         i + 1, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  int d = lua_isnoneornil(L, 2) ? 0 : lc_check_dim(L, 2, cell_tensor_ndim(ts[0]), stack);
  for (int i = 1; stack && i < n; i++) /* said here with the list's 1-based positions */
    if (!lc_shape_equal(cell_tensor_ndim(ts[0]), cell_tensor_shape(ts[0]), cell_tensor_ndim(ts[i]),
                        cell_tensor_shape(ts[i]))) {
      char b0[256], b1[256];
      return lc_argerror(L, 1, "ValueError: stack: expects tensors of the same shape, got %s (element 1) and %s "
                         "(element %d)",
                         cell_shape_str(cell_tensor_ndim(ts[0]), cell_tensor_shape(ts[0]), b0, sizeof b0),
                         cell_shape_str(cell_tensor_ndim(ts[i]), cell_tensor_shape(ts[i]), b1, sizeof b1), i + 1);
    }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, stack ? cell_op_stack(n, ts, d, out) : cell_op_cat(n, ts, d, out));
}
static int l_cat(lua_State *L) { return join(L, 0); }
static int l_stack(lua_State *L) { return join(L, 1); }

/* where(cond, a, b): a and b may be numbers. */
static int l_where(lua_State *L) {
  cell_tensor *c = lc_check_tensor(L, 1);
  cell_tensor *ab[2];
  /* two numbers: int64 when both are integers (PyTorch's, as cell.arange's
   * rule), else float32 */
  cell_dtype num_dt = lua_type(L, 2) == LUA_TNUMBER && lua_type(L, 3) == LUA_TNUMBER &&
                              !lc_number_is_float(L, 2) && !lc_number_is_float(L, 3)
                          ? CELL_DTYPE_I64
                          : CELL_DTYPE_F32;
  for (int k = 0; k < 2; k++) {
    ab[k] = lc_test_tensor(L, 2 + k);
    if (!ab[k]) {
      if (lua_type(L, 2 + k) != LUA_TNUMBER && !lua_isboolean(L, 2 + k))
        return lc_argerror(L, 2 + k, "TypeError: expected a Tensor or a number, got %s",
                           luaL_typename(L, 2 + k));
      bool b = lua_isboolean(L, 2 + k);
      cell_dtype dt = b ? CELL_DTYPE_BOOL : num_dt;
      cell_tensor *other = lc_test_tensor(L, 3 - k);
      if (other && !b) dt = cell_dtype_promote_scalar(cell_tensor_dtype(other), lc_number_is_float(L, 2 + k));
      cell_tensor **slot = lc_newtensor(L);
      if (cell_tensor_full(dt, 0, NULL, b ? lua_toboolean(L, 2 + k) : lua_tonumber(L, 2 + k), slot) != CELL_OK)
        return lc_raise(L);
      lua_replace(L, 2 + k);
      ab[k] = *slot;
    }
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_where(c, ab[0], ab[1], out));
}

/* --- settings ------------------------------------------------------------------ */

static int l_set_seed(lua_State *L) {
  unsigned long long seed = (unsigned long long)lc_check_int(L, 1);
  cell_generator_seed(((lc_state *)lua_touserdata(L, UV_STATE))->gen, seed); /* this state's */
  return 0;
}

/* n: an integer in [1, CELL_MAX_THREADS]; anything else is refused here,
 * before a huge or odd count reaches OpenMP or OpenBLAS. */
static int l_set_num_threads(lua_State *L) {
  if (lua_type(L, 1) != LUA_TNUMBER)
    return lc_error(L, "TypeError: set_num_threads: n must be an integer in [1, %d], but got %s",
                    CELL_MAX_THREADS, luaL_typename(L, 1));
  lua_Number v = lua_tonumber(L, 1);
  if (!(v >= 1 && v <= CELL_MAX_THREADS && v == floor(v))) {
    char got[64];
    if (isnan(v))
      snprintf(got, sizeof got, "nan");
    else
      snprintf(got, sizeof got, "%.14g", (double)v);
    return lc_error(L, "ValueError: set_num_threads: n must be an integer in [1, %d], but got %s",
                    CELL_MAX_THREADS, got);
  }
  if (cell_set_num_threads((int)v) != CELL_OK) return lc_raise(L);
  return 0;
}

static int l_get_num_threads(lua_State *L) {
  lua_pushinteger(L, cell_get_num_threads());
  return 1;
}

static int l_memory_stats(lua_State *L) {
  cell_alloc_stats s;
  cell_alloc_get_stats(&s);
  lua_createtable(L, 0, 5);
  lua_pushnumber(L, (lua_Number)s.in_use);
  lua_setfield(L, -2, "in_use");
  lua_pushnumber(L, (lua_Number)s.peak);
  lua_setfield(L, -2, "peak");
  lua_pushnumber(L, (lua_Number)s.cached);
  lua_setfield(L, -2, "cached");
  lua_pushnumber(L, (lua_Number)s.n_alloc);
  lua_setfield(L, -2, "allocations");
  lua_pushnumber(L, (lua_Number)s.n_os);
  lua_setfield(L, -2, "os_allocations");
  return 1;
}

static int l_reset_peak(lua_State *L) {
  (void)L;
  cell_alloc_reset_peak();
  return 0;
}

static int l_empty_cache(lua_State *L) {
  (void)L;
  cell_alloc_empty_cache();
  return 0;
}

static int l_is_tensor(lua_State *L) {
  lua_pushboolean(L, lc_test_ud(L, 1) != NULL);
  return 1;
}

/* same_shape(a, b): whether tensors a and b have one shape, with no shape
 * tables made (load_state_dict asks it once per tensor). */
static int l_same_shape(lua_State *L) {
  const cell_tensor *a = lc_check_tensor(L, 1), *b = lc_check_tensor(L, 2);
  lua_pushboolean(L, lc_shape_equal(cell_tensor_ndim(a), cell_tensor_shape(a), cell_tensor_ndim(b),
                                    cell_tensor_shape(b)));
  return 1;
}

static int l_is_dtype(lua_State *L) {
  lua_pushboolean(L, lc_is_dtype(L, 1));
  return 1;
}

static int l_promote_types(lua_State *L) {
  lc_push_dtype(L, cell_dtype_promote(lc_check_dtype(L, 1), lc_check_dtype(L, 2)));
  return 1;
}

static int l_gemm_backend(lua_State *L) {
  cell_dtype dt = lc_check_dtype(L, 1);
  lua_pushstring(L, cell_gemm_backend_name(dt, (int64_t)lc_check_int(L, 2), (int64_t)lc_check_int(L, 3),
                                           (int64_t)lc_check_int(L, 4)));
  return 1;
}

static int l_gemm_kernel(lua_State *L) {
  lua_pushstring(L, cell_gemm_kernel_name());
  return 1;
}

/* Seconds on a monotonic wall clock, for timing (os.clock counts the CPU
 * time of every thread, OpenBLAS's spinning workers included). */
static int l_perf_counter(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static int l_interrupt(lua_State *L) {
  cell_interrupt(lua_toboolean(L, 1));
  return 0;
}

static const luaL_Reg create_funcs[] = {
    {"tensor", l_tensor},
    {"zeros", l_zeros},
    {"ones", l_ones},
    {"full", l_full},
    {"empty", l_empty},
    {"zeros_like", l_zeros_like},
    {"ones_like", l_ones_like},
    {"full_like", l_full_like},
    {"arange", l_arange},
    {"linspace", l_linspace},
    {"eye", l_eye},
    {"rand", l_rand},
    {"randn", l_randn},
    {"randint", l_randint},
    {"cat", l_cat},
    {"stack", l_stack},
    {"where", l_where},
    {"set_seed", l_set_seed},
    {"set_num_threads", l_set_num_threads},
    {"get_num_threads", l_get_num_threads},
    {"memory_stats", l_memory_stats},
    {"reset_peak_memory", l_reset_peak},
    {"empty_cache", l_empty_cache},
    {"is_tensor", l_is_tensor},
    {"_same_shape", l_same_shape},
    {"is_dtype", l_is_dtype},
    {"promote_types", l_promote_types},
    {"_gemm_backend", l_gemm_backend},
    {"gemm_kernel", l_gemm_kernel},
    {"perf_counter", l_perf_counter},
    {"_interrupt", l_interrupt},
    {NULL, NULL}};

void lc_register_create(lua_State *L, int module, int base) { lc_setfuncs(L, module, base, create_funcs); }
