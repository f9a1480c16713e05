/* lcore.c - luaopen_cell_core and the helpers every binding file uses. */
#include "lcell.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The collector is told about tensor bytes in two ways. Every GC_STEP_BYTES
 * of new tensor memory, once GC_STEP_TENSORS tensors have been made since
 * the last step (or every GC_STEP_MAX bytes, however few), a step worth
 * that many bytes. That alone is not enough: Debian's lua5.4 runs the
 * collector in generational mode, where a step is a minor collection, and
 * a tensor that survives two of them is only freed by a major one, which
 * Lua paces by its own heap alone. So a full collection also runs once the
 * bytes made since the last one exceed what was live after it (Lua's own
 * pause rule), and at least GC_FULL_BYTES; its cost is amortised over that
 * many bytes of tensors.
 *
 * The count: a training step's tensors live a few ops each (an activation
 * the next layer reads, then only the graph holds it, in C). Stepped every
 * 64K bytes, which a tiny GPT's 32K-float tensors pass one by one, a minor
 * collection ran at nearly every op and promoted whatever was still in a
 * local, and only the full collections (each about 1 ms: Lua's 1.7 MB heap
 * is traversed) freed them: 218 a thousand steps, 0.22 ms a step. Stepped
 * every 32 tensors instead, they die young: 22.6 MB peak instead of 28, and
 * GC_FULL_BYTES raised from 24 to 96 MB then costs no memory (55 full
 * collections a thousand steps, 0.06 ms a step; the model suite's peak 47
 * -> 39 MiB, its CNN step 7.8 -> 7.2 ms). Small tensors reach 32 before
 * 64K: a fresh process's 400 temporaries of 4 KB peak at 159 KB
 * (memory_spec), bench/rss_loop.lua 6.8 MiB (6.6-6.9 before); at 64 they
 * peaked at 300 KB. */
#define GC_STEP_BYTES ((size_t)64 << 10)
#define GC_STEP_TENSORS 32
#define GC_STEP_MAX ((size_t)4 << 20)
#define GC_FULL_BYTES ((size_t)96 << 20)

/* Push "source:line: " for the line an error should blame: the first Lua
 * frame, from the binding function's caller up, whose source is not one of
 * the library's own Lua files (registry["cell.source_prefix"], which
 * cell.errors sets to the source prefix of lua/cell/), so an error raised by
 * a C function that library code called points at the user's line. C
 * frames (pcall, the binding itself) are passed over. Without the prefix
 * this is luaL_where(L, 1). */
void lc_where(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, "cell.source_prefix");
  const char *prefix = lua_tostring(L, -1);
  if (!prefix) {
    lua_pop(L, 1);
    luaL_where(L, 1);
    return;
  }
  size_t plen = strlen(prefix);
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    lua_getinfo(L, "Sl", &ar);
    if (strcmp(ar.what, "C") == 0) continue;
    if (strncmp(ar.source, prefix, plen) == 0) continue;
    lua_pop(L, 1);
    if (ar.currentline > 0) lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
    else lua_pushliteral(L, "");
    return;
  }
  lua_pop(L, 1);
  lua_pushliteral(L, "");
}

/* Raise msg, positioned by lc_where. */
static int raise_at_user(lua_State *L, const char *msg) {
  lc_where(L);
  lua_pushstring(L, msg);
  lua_concat(L, 2);
  return lua_error(L);
}

int lc_raise(lua_State *L) {
  cell_status s = cell_last_status();
  char msg[1024];
  snprintf(msg, sizeof msg, "%s: %s", cell_status_name(s ? s : CELL_ERR_RUNTIME), cell_last_error());
  return raise_at_user(L, msg);
}

/* The length of the exception name that msg starts with ("TypeError" in
 * "TypeError: ..."), or 0. */
static size_t exception_name_len(const char *msg) {
  size_t n = 0;
  if (msg[0] < 'A' || msg[0] > 'Z') return 0;
  while ((msg[n] >= 'A' && msg[n] <= 'Z') || (msg[n] >= 'a' && msg[n] <= 'z')) n++;
  return msg[n] == ':' && msg[n + 1] == ' ' ? n : 0;
}

/* "<Exception>: <function>: <what> (bad argument #<arg>)": the exception
 * name the message starts with (TypeError when it has none), the binding
 * function's name (its registered name, then Lua's idea of it), the text,
 * and the argument counted as Lua counts it (a method's self is not
 * counted). A metamethod's message is "<Exception>: <what>". */
/* The name lc_setfuncs gave the running binding function, or NULL. */
static const char *binding_name(lua_State *L) {
  return lua_type(L, lua_upvalueindex(LC_NUPVALUES + 1)) == LUA_TSTRING
             ? lua_tostring(L, lua_upvalueindex(LC_NUPVALUES + 1))
             : NULL;
}

int lc_argerror(lua_State *L, int arg, const char *fmt, ...) {
  char msg[512], out[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t en = exception_name_len(msg);
  const char *exc = en ? msg : "TypeError";
  int exc_len = en ? (int)en : 9;
  const char *what = en ? msg + en + 2 : msg;
  lua_Debug ar;
  const char *name = NULL;
  bool method = false;
  if (lua_getstack(L, 0, &ar)) {
    lua_getinfo(L, "n", &ar);
    method = ar.namewhat && strcmp(ar.namewhat, "method") == 0;
    name = ar.name;
  }
  if (binding_name(L)) {
    /* a binding function: its name, and whether it is a Tensor method (its
     * first argument is then self, however it was called, in both Luas) */
    name = binding_name(L);
    method = lua_toboolean(L, lua_upvalueindex(LC_NUPVALUES + 2));
  }
  /* A metamethod's operands are not arguments a user passed by position. */
  if (name && name[0] == '_' && name[1] == '_') {
    snprintf(out, sizeof out, "%.*s: %s", exc_len, exc, what);
    return raise_at_user(L, out);
  }
  if (!name) { /* called through pcall or a local: no name to give */
    snprintf(out, sizeof out, "%.*s: %s (bad argument #%d)", exc_len, exc, what, arg);
    return raise_at_user(L, out);
  }
  size_t nl = strlen(name);
  if (strncmp(what, name, nl) == 0 && what[nl] == ':' && what[nl + 1] == ' ') what += nl + 2;
  if (method) arg--;
  if (arg < 0 && arg > LUA_REGISTRYINDEX) /* a relative index names no argument */
    snprintf(out, sizeof out, "%.*s: %s: %s", exc_len, exc, name, what);
  else if (arg == 0 && method)
    snprintf(out, sizeof out, "%.*s: %s: %s (bad self)", exc_len, exc, name, what);
  else
    snprintf(out, sizeof out, "%.*s: %s: %s (bad argument #%d)", exc_len, exc, name, what, arg);
  return raise_at_user(L, out);
}

int lc_error(lua_State *L, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return raise_at_user(L, msg);
}

cell_generator *lc_gen_enter(lua_State *L) {
  lc_state *st = lua_touserdata(L, UV_STATE);
  return cell_generator_use(st->gen);
}

const char lc_tensor_kind = 'T';

cell_tensor **lc_newtensor(lua_State *L) {
  tensor_ud *ud = lua_newuserdatauv(L, sizeof *ud, 0);
  ud->t = NULL;
  ud->kind = &lc_tensor_kind;
  ud->attrs = 0;
  lua_pushvalue(L, UV_TENSOR_MT);
  lua_setmetatable(L, -2);
  return &ud->t;
}

cell_tensor **lc_newtensor_at(lua_State *L) {
  tensor_ud *ud = lua_newuserdatauv(L, sizeof *ud, 0);
  ud->t = NULL;
  ud->kind = &lc_tensor_kind;
  ud->attrs = 0;
  luaL_getmetatable(L, TENSOR_MT);
  lua_setmetatable(L, -2);
  return &ud->t;
}

static void account(lua_State *L, const cell_tensor *t) {
  lc_state *st = lua_touserdata(L, UV_STATE);
  /* New storage counts in full; a view of existing storage costs a header. */
  size_t bytes = 512 + (cell_tensor_owned_bytes(t));
  st->gc_debt += bytes;
  st->gc_made++;
  st->full_debt += bytes;
  if (st->full_debt >= st->full_threshold) {
    st->gc_debt = st->full_debt = st->gc_made = 0;
    lua_gc(L, LUA_GCCOLLECT, 0);
    cell_alloc_stats s;
    cell_alloc_get_stats(&s);
    st->full_threshold = s.in_use > GC_FULL_BYTES ? (size_t)s.in_use : GC_FULL_BYTES;
  } else if ((st->gc_debt >= GC_STEP_BYTES && st->gc_made >= GC_STEP_TENSORS) || st->gc_debt >= GC_STEP_MAX) {
    size_t kb = st->gc_debt >> 10;
    st->gc_debt = st->gc_made = 0;
    /* Under Lua 5.4's generational mode this adds debt (a minor collection
     * follows once it passes a fifth of Lua's heap). Forcing a minor
     * collection here instead (LUA_GCSTEP, 0) held bench/rss_loop.lua's
     * peak at 6.8 MiB against 7.0, but promoted the tensors a training step
     * keeps across its backward pass to the old generation, where only a
     * full collection frees them: the model suite's peak went from 82 to
     * 100 MiB. Smaller steps of debt (GC_STEP_BYTES 64K, was 256K) keep
     * young garbage down instead: rss_loop 7.1 -> 6.9 MiB, the suite's
     * four training models 76 MiB (93 with the forced minor
     * collections), step times unchanged. */
    lua_gc(L, LUA_GCSTEP, kb > 1u << 30 ? 1 << 30 : (int)kb);
  }
}

int lc_finish(lua_State *L, cell_status s) {
  if (s != CELL_OK) return lc_raise(L);
  tensor_ud *ud = lua_touserdata(L, -1);
  account(L, ud->t);
  return 1;
}

void lc_push_owned(lua_State *L, cell_tensor *t) {
  cell_tensor **slot = lc_newtensor(L);
  *slot = t;
  account(L, t);
}

/* A tensor is a full userdata of tensor_ud's size whose kind field holds
 * &lc_tensor_kind, which only the binding's constructors write. Full,
 * because light userdata share one metatable per state (debug.setmetatable
 * sets it) and t:data_ptr() hands them out: without the type test, any
 * address could pass for a tensor. The kind, because debug.setmetatable
 * can also give the tensor metatable to a userdata of another kind (an io
 * file has the size tensor_ud once had). With both, the metatable need not
 * be consulted, which keeps the test cheap on the path of every method
 * call, and the same test serves code outside the binding's closures. */
tensor_ud *lc_test_ud(lua_State *L, int i) {
  if (lua_type(L, i) != LUA_TUSERDATA || lua_rawlen(L, i) != sizeof(tensor_ud)) return NULL;
  tensor_ud *ud = lua_touserdata(L, i);
  return ud->kind == &lc_tensor_kind ? ud : NULL;
}

const char *lc_typename(lua_State *L, int i) {
  if (lc_test_ud(L, i)) return "Tensor";
  if (lc_is_dtype(L, i)) return "dtype";
  if (lua_type(L, i) == LUA_TUSERDATA && luaL_getmetafield(L, i, "__name")) {
    const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1); /* the string stays alive: it is a field of the metatable */
    if (name) return name;
  }
  return luaL_typename(L, i);
}

cell_tensor *lc_test_tensor(lua_State *L, int i) {
  tensor_ud *ud = lc_test_ud(L, i);
  if (!ud) return NULL;
  if (!ud->t) lc_error(L, "RuntimeError: this tensor was freed");
  return ud->t;
}

cell_tensor *lc_check_tensor(lua_State *L, int i) {
  cell_tensor *t = lc_test_tensor(L, i);
  if (!t) lc_argerror(L, i, "TypeError: expected a Tensor, got %s", luaL_typename(L, i));
  return t;
}

/* --- dtypes: one userdata per dtype, compared by identity --------------- */

static const char *dtype_lua_names[CELL_DTYPE_COUNT] = {
    "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool", "int16"};

void lc_push_dtype(lua_State *L, cell_dtype dt) {
  lua_getfield(L, LUA_REGISTRYINDEX, "cell.dtypes");
  lua_rawgeti(L, -1, (int)dt + 1);
  lua_remove(L, -2);
}

/* The dtype userdata at i (a full userdata holding one int in range, with
 * the dtype metatable), or NULL: as for tensors, a light userdata never
 * passes. */
static const int *test_dtype(lua_State *L, int i) {
  if (lua_type(L, i) != LUA_TUSERDATA || lua_rawlen(L, i) != sizeof(int)) return NULL;
  const int *p = luaL_testudata(L, i, DTYPE_MT);
  return p && *p >= 0 && *p < CELL_DTYPE_COUNT ? p : NULL;
}

bool lc_is_dtype(lua_State *L, int i) { return test_dtype(L, i) != NULL; }

cell_dtype lc_check_dtype(lua_State *L, int i) {
  const int *p = test_dtype(L, i);
  if (p) return (cell_dtype)*p;
  if (lua_type(L, i) == LUA_TSTRING) {
    cell_dtype d = cell_dtype_from_name(lua_tostring(L, i));
    if (d != CELL_DTYPE_COUNT) return d;
    lc_argerror(L, i, "TypeError: unknown dtype '%s'", lua_tostring(L, i));
  }
  lc_argerror(L, i, "TypeError: expected a dtype (such as cell.float32), got %s",
              luaL_typename(L, i));
  return CELL_DTYPE_F32;
}

/* A dtype, or an options table {dtype = ...} in its place (MindSpore's
 * keyword argument: cell.zeros({2}, {dtype = cell.int32})); absent: def. */
cell_dtype lc_opt_dtype(lua_State *L, int i, cell_dtype def) {
  if (lua_type(L, i) == LUA_TTABLE && !lua_getmetatable(L, i)) {
    static const char *const keys[] = {"dtype", NULL};
    if (i < 0) i = lua_gettop(L) + i + 1;
    const char *name = binding_name(L);
    int opts = lc_options(L, i, name ? name : "dtype", keys);
    if (!lc_field(L, opts, "dtype")) {
      lua_pop(L, 1);
      return def;
    }
    lua_replace(L, i); /* the dtype in the table's place: an error names argument i */
    return lc_check_dtype(L, i);
  }
  return lua_isnoneornil(L, i) ? def : lc_check_dtype(L, i);
}

/* The dtype at 1 of a dtype metamethod, or a TypeError naming what came. */
static const int *dtype_self(lua_State *L) {
  const int *p = test_dtype(L, 1);
  if (!p) lc_argerror(L, 1, "TypeError: expected a dtype, got %s", lc_typename(L, 1));
  return p;
}

static int dtype_tostring(lua_State *L) {
  const int *p = dtype_self(L);
  lua_pushstring(L, cell_dtype_name((cell_dtype)*p));
  return 1;
}

/* dt.name, dt.itemsize, dt.is_floating_point; nil for any other key. */
static int dtype_index(lua_State *L) {
  const int *p = dtype_self(L);
  if (lua_type(L, 2) != LUA_TSTRING) {
    lua_pushnil(L);
    return 1;
  }
  const char *k = lua_tostring(L, 2);
  if (strcmp(k, "name") == 0) lua_pushstring(L, dtype_lua_names[*p]);
  else if (strcmp(k, "itemsize") == 0) lua_pushinteger(L, cell_dtype_size((cell_dtype)*p));
  else if (strcmp(k, "is_floating_point") == 0) lua_pushboolean(L, cell_dtype_is_float((cell_dtype)*p));
  else lua_pushnil(L);
  return 1;
}

static void open_dtypes(lua_State *L) {
  luaL_newmetatable(L, DTYPE_MT);
  lua_pushcfunction(L, dtype_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, dtype_index);
  lua_setfield(L, -2, "__index");
  lua_pushliteral(L, "dtype"); /* getmetatable(dt): protected */
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
  lua_createtable(L, CELL_DTYPE_COUNT, 0); /* registry["cell.dtypes"][i + 1] */
  for (int i = 0; i < CELL_DTYPE_COUNT; i++) {
    int *p = lua_newuserdatauv(L, sizeof(int), 0);
    *p = i;
    luaL_setmetatable(L, DTYPE_MT);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, LUA_REGISTRYINDEX, "cell.dtypes");
}

/* --- numbers, dims and shapes ----------------------------------------------- */

static bool is_integral(lua_State *L, int i, lua_Integer *out) {
#if LUA_VERSION_NUM >= 503
  int ok;
  lua_Integer v = lua_tointegerx(L, i, &ok);
  if (ok) {
    *out = v;
    return true;
  }
#endif
  if (lua_type(L, i) != LUA_TNUMBER) return false;
  lua_Number n = lua_tonumber(L, i);
  if (n != floor(n) || n < -9.2e18 || n > 9.2e18) return false;
  *out = (lua_Integer)n;
  return true;
}

lua_Integer lc_check_int(lua_State *L, int i) {
  lua_Integer v;
  if (lua_type(L, i) != LUA_TNUMBER)
    lc_argerror(L, i, "TypeError: expected an integer, got %s", luaL_typename(L, i));
  if (!is_integral(L, i, &v))
    lc_argerror(L, i, "TypeError: expected an integer, got %s", lua_tostring(L, i));
  return v;
}

lua_Integer lc_check_item_int(lua_State *L, int arg, int idx, int pos, const char *what) {
  lua_Integer v;
  if (!is_integral(L, idx, &v))
    lc_argerror(L, arg, "TypeError: %s must hold integers, but got %s at position %d", what,
                lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : luaL_typename(L, idx), pos);
  return v;
}

lua_Number lc_check_number(lua_State *L, int i) {
  if (lua_type(L, i) != LUA_TNUMBER)
    lc_argerror(L, i, "TypeError: expected a number, got %s", luaL_typename(L, i));
  return lua_tonumber(L, i);
}

void lc_check_table(lua_State *L, int i, const char *what) {
  if (!lua_istable(L, i) || lc_test_tensor(L, i))
    lc_argerror(L, i, "TypeError: expected %s, got %s", what,
                lc_test_tensor(L, i) ? "Tensor" : luaL_typename(L, i));
}

bool lc_number_is_float(lua_State *L, int i) {
  lua_Number n = lua_tonumber(L, i);
  return n != floor(n) || isinf(n);
}

int lc_dim_of(lua_State *L, int arg, lua_Integer d, int ndim, int extra) {
  int n = ndim + extra;
  int hi = n > 0 ? n : 1; /* a 0-D tensor accepts dim 1 / -1 */
  if (d >= 1 && d <= hi) return (int)d - 1;
  if (d <= -1 && d >= -hi) return (int)(hi + d);
  return lc_argerror(L, arg,
                     "IndexError: dimension %lld is out of range for a %d-D tensor "
                     "(expected 1..%d or -%d..-1)",
                     (long long)d, ndim, hi, hi);
}

int lc_check_dim(lua_State *L, int i, int ndim, int extra) {
  return lc_dim_of(L, i, lc_check_int(L, i), ndim, extra);
}

static int64_t shape_entry(lua_State *L, int arg, int idx) {
  lua_Integer v;
  if (!is_integral(L, idx, &v))
    lc_argerror(L, arg, "TypeError: a shape holds integers, got %s",
                lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : luaL_typename(L, idx));
  if (v < 0) lc_argerror(L, arg, "ValueError: negative size %lld in shape", (long long)v);
  return (int64_t)v;
}

int lc_check_shape(lua_State *L, int i, int64_t *shape, int *next) {
  int n = 0;
  if (lua_istable(L, i) && !lc_test_tensor(L, i)) {
    n = (int)lua_rawlen(L, i);
    if (n > CELL_MAX_DIMS)
      lc_argerror(L, i, "ValueError: a tensor has at most %d dimensions, got %d", CELL_MAX_DIMS, n);
    for (int k = 0; k < n; k++) {
      lua_rawgeti(L, i, k + 1);
      shape[k] = shape_entry(L, i, -1);
      lua_pop(L, 1);
    }
    if (next) *next = i + 1;
    return n;
  }
  while (lua_type(L, i + n) == LUA_TNUMBER) {
    if (n >= CELL_MAX_DIMS)
      lc_argerror(L, i + n, "ValueError: a tensor has at most %d dimensions", CELL_MAX_DIMS);
    shape[n] = shape_entry(L, i + n, i + n);
    n++;
  }
  if (n == 0 && !next)
    lc_argerror(L, i, "TypeError: expected a shape (a table of sizes), got %s", luaL_typename(L, i));
  if (n == 0 && !lua_isnoneornil(L, i) && !lc_is_dtype(L, i) && lua_type(L, i) != LUA_TSTRING)
    lc_argerror(L, i, "TypeError: expected a shape (a table of sizes), got %s", luaL_typename(L, i));
  if (next) *next = i + n;
  return n;
}

void lc_push_element(lua_State *L, cell_dtype dt, const void *p) {
  if (dt == CELL_DTYPE_BOOL)
    lua_pushboolean(L, *(const uint8_t *)p != 0);
  else if (cell_dtype_is_float(dt))
    lua_pushnumber(L, cell_element_get_f64(dt, p));
  else
    lua_pushinteger(L, (lua_Integer)cell_element_get_i64(dt, p));
}

/* --- the module ------------------------------------------------------------------ */

/* The options table at arg (nil or absent: none): a TypeError for a value
 * that is not a table or for a key not in keys (a NULL-terminated list,
 * named in the message). Returns arg, or 0 when there is no table. */
int lc_options(lua_State *L, int arg, const char *op, const char *const *keys) {
  if (lua_isnoneornil(L, arg)) return 0;
  if (!lua_istable(L, arg) || lc_test_tensor(L, arg))
    lc_argerror(L, arg, "TypeError: %s: expected an options table, got %s", op,
                lc_test_tensor(L, arg) ? "Tensor" : luaL_typename(L, arg));
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    lua_pop(L, 1);
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING)
      for (int k = 0; keys[k] && !known; k++) known = strcmp(lua_tostring(L, -1), keys[k]) == 0;
    if (!known) {
      char list[160] = "";
      for (int k = 0; keys[k]; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", keys[k]);
      const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
      lc_argerror(L, arg, "TypeError: %s: unknown option '%s' (the options are %s)", op, name, list);
    }
  }
  return arg;
}

/* opts[key] pushed (nil when opts is 0); whether it is set. */
bool lc_field(lua_State *L, int opts, const char *key) {
  if (!opts) {
    lua_pushnil(L);
    return false;
  }
  lua_getfield(L, opts, key);
  return !lua_isnil(L, -1);
}

void lc_setfuncs(lua_State *L, int target, int base, const luaL_Reg *regs) {
  lua_pushvalue(L, target);
  /* The upvalues, then the function's name and whether it is a Tensor
   * method (for lc_argerror's messages). */
  for (; regs->name; regs++) {
    for (int k = 0; k < LC_NUPVALUES; k++) lua_pushvalue(L, base + k);
    lua_pushstring(L, regs->name);
    lua_pushboolean(L, target == base + 1);
    lua_pushcclosure(L, regs->func, LC_NUPVALUES + 2);
    lua_setfield(L, -2, regs->name);
  }
  lua_pop(L, 1);
}

/* The seed a fresh thread's own generator starts from (cell.h). */
#define LC_DEFAULT_SEED 5489u

static int state_gc(lua_State *L) {
  lc_state *st = lua_touserdata(L, 1);
  cell_generator_free(st->gen);
  st->gen = NULL;
  return 0;
}

CELL_API int luaopen_cell_core(lua_State *L);
CELL_API int luaopen_cell_core(lua_State *L) {
  open_dtypes(L);
  lua_newtable(L); /* the module */
  int module = lua_gettop(L);
  /* The upvalues of every binding function: state, methods, metatable. */
  lc_state *st = lua_newuserdatauv(L, sizeof *st, 0);
  st->gc_debt = 0;
  st->gc_made = 0;
  st->full_debt = 0;
  st->full_threshold = GC_FULL_BYTES;
  st->running = NULL;
  st->error_ref = LUA_NOREF;
  st->gen = NULL;
  /* The state's generator goes with the state (its __gc); seeded as a
   * fresh thread's own is. */
  lua_newtable(L);
  lua_pushcfunction(L, state_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  if (cell_generator_new(LC_DEFAULT_SEED, &st->gen) != CELL_OK) return lc_raise(L);
  st->home = lua_newthread(L);
  luaL_ref(L, LUA_REGISTRYINDEX); /* anchored for the life of the state */
  int base = lua_gettop(L);
  lua_newtable(L);
  luaL_newmetatable(L, TENSOR_MT);
  lc_open_tensor(L, base);
  lc_register_sort(L, base);
  lc_register_create(L, module, base);
  lc_register_autograd(L, module, base);
  lc_register_attrs(L, module, base);
  lc_register_device(L, module, base);
  lc_register_io(L, module, base);
  lc_register_data(L, module, base);
  lc_register_vision(L, module, base);
  lc_register_embed(L, module, base);
  lc_register_index(L, base);
  lua_newtable(L); /* core.nnops: the functional neural-network ops */
  int nnops = lua_gettop(L);
  lc_register_conv(L, nnops, base);
  lc_register_nn(L, nnops, base);
  lc_register_rnn(L, nnops, base);
  lc_register_optim(L, nnops, base);
  lc_register_random(L, module, nnops, base);
  lc_register_resample(L, nnops, base);
  lc_register_attention(L, nnops, base);
  lc_register_act(L, nnops, base);
  lua_setfield(L, module, "nnops");
  lua_pushvalue(L, base + 1);
  lua_setfield(L, module, "Tensor"); /* the methods table, for the Lua layer */
  lua_settop(L, module);
  for (int i = 0; i < CELL_DTYPE_COUNT; i++) {
    lc_push_dtype(L, (cell_dtype)i);
    lua_setfield(L, -2, dtype_lua_names[i]);
  }
  lua_pushstring(L, CELL_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
