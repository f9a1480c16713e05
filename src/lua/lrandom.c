/* lrandom.c - the Lua binding of the random ops of include/cell_sample.h and
 * of the generator state: functions of core.nnops (which cell.ops exposes)
 * and of the module itself.
 *
 *   multinomial(probs, num_samples [, replacement [, seed] | {replacement =, seed =}])
 *   bernoulli(x [, p [, seed] | {p =, seed =}])
 *   normal(shape, mean, stddev [, seed])     MindSpore's form
 *   normal(mean, stddev [, shape])           PyTorch's form (mean a Tensor or number)
 *   cell.get_rng_state() -> uint8 Tensor; cell.set_rng_state(state)
 *
 * Every draw comes from the calling state's generator (cell.set_seed), or,
 * when a seed is given, from a generator of that seed made for the call
 * (the state's generator is then left alone). */
#include "lcell.h"
#include <math.h>
#include <string.h>

/* The generator a draw uses: the state's (seed < 0) or a fresh one. */
typedef struct {
  cell_generator *own, *prev;
} draw_gen;

static void gen_begin(lua_State *L, lua_Integer seed, int has_seed, draw_gen *d) {
  d->own = NULL;
  if (has_seed) {
    if (cell_generator_new((unsigned long long)seed, &d->own) != CELL_OK) lc_raise(L);
    d->prev = cell_generator_use(d->own);
  } else {
    d->prev = lc_gen_enter(L);
  }
}

static void gen_end(draw_gen *d) {
  cell_generator_use(d->prev);
  cell_generator_free(d->own);
}

static lua_Integer seed_at(lua_State *L, int arg, int idx, const char *op) {
  lua_Integer v = 0;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number n = lua_tonumber(L, idx);
    if (n == floor(n) && n >= 0 && n <= 9007199254740992.0) return (lua_Integer)n;
  }
  lc_argerror(L, arg, "TypeError: %s: seed must be a non-negative integer, got %s", op,
              lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : luaL_typename(L, idx));
  return v;
}

static int bool_at(lua_State *L, int arg, int idx, const char *op, const char *key) {
  if (!lua_isboolean(L, idx))
    lc_argerror(L, arg, "TypeError: %s: %s must be a boolean, got %s", op, key, luaL_typename(L, idx));
  return lua_toboolean(L, idx);
}

/* --- multinomial ----------------------------------------------------------------- */

static int l_multinomial(lua_State *L) {
  static const char *const keys[] = {"replacement", "seed", NULL};
  cell_tensor *p = lc_check_tensor(L, 1);
  if (lua_type(L, 2) != LUA_TNUMBER)
    return lc_argerror(L, 2, "TypeError: multinomial: num_samples must be an integer, got %s",
                       lc_typename(L, 2));
  lua_Integer n = lc_check_int(L, 2);
  int replacement = 1, has_seed = 0;
  lua_Integer seed = 0;
  if (lua_isboolean(L, 3)) { /* MindSpore's positional form: replacement [, seed] */
    replacement = lua_toboolean(L, 3);
    if (!lua_isnoneornil(L, 4)) {
      seed = seed_at(L, 4, 4, "multinomial");
      has_seed = 1;
    }
  } else {
    int opts = lc_options(L, 3, "multinomial", keys);
    if (lc_field(L, opts, "replacement")) replacement = bool_at(L, 3, -1, "multinomial", "replacement");
    lua_pop(L, 1);
    if (lc_field(L, opts, "seed")) {
      seed = seed_at(L, 3, -1, "multinomial");
      has_seed = 1;
    }
    lua_pop(L, 1);
  }
  cell_tensor **out = lc_newtensor(L);
  draw_gen d;
  gen_begin(L, seed, has_seed, &d);
  cell_status s = cell_op_multinomial(p, (int64_t)n, replacement, 1, out);
  gen_end(&d);
  return lc_finish(L, s);
}

/* --- bernoulli ------------------------------------------------------------------- */

static int l_bernoulli(lua_State *L) {
  static const char *const keys[] = {"p", "seed", NULL};
  cell_tensor *x = lc_check_tensor(L, 1);
  cell_tensor *p = NULL;
  double ps = 0;
  int has_seed = 0, pidx = 0;
  lua_Integer seed = 0;
  if (lua_type(L, 2) == LUA_TNUMBER || lc_test_tensor(L, 2)) { /* p [, seed] */
    pidx = 2;
    if (!lua_isnoneornil(L, 3)) {
      seed = seed_at(L, 3, 3, "bernoulli");
      has_seed = 1;
    }
  } else {
    int opts = lc_options(L, 2, "bernoulli", keys);
    if (lc_field(L, opts, "p")) pidx = lua_gettop(L);
    else lua_pop(L, 1);
    if (lc_field(L, opts, "seed")) {
      seed = seed_at(L, 2, -1, "bernoulli");
      has_seed = 1;
    }
    lua_pop(L, 1);
  }
  if (!pidx) {
    p = x; /* PyTorch's bernoulli(input): the input holds the probabilities */
  } else if (lua_type(L, pidx) == LUA_TNUMBER) {
    ps = lua_tonumber(L, pidx);
  } else if (lc_test_tensor(L, pidx)) {
    p = lc_test_tensor(L, pidx);
  } else {
    return lc_argerror(L, 2, "TypeError: bernoulli: p must be a number or a Tensor, got %s",
                       lc_typename(L, pidx));
  }
  cell_tensor **out = lc_newtensor(L);
  draw_gen d;
  gen_begin(L, seed, has_seed, &d);
  cell_status s = cell_op_bernoulli(x, p, ps, out);
  gen_end(&d);
  return lc_finish(L, s);
}

/* --- normal ---------------------------------------------------------------------- */

/* The Tensor at i, or a 0-d float32 tensor of the number there. */
static cell_tensor *tensor_or_number(lua_State *L, int i, const char *what) {
  cell_tensor *t = lc_test_tensor(L, i);
  if (t) return t;
  if (lua_type(L, i) != LUA_TNUMBER)
    lc_argerror(L, i, "TypeError: normal: %s must be a number or a Tensor, got %s", what,
                lc_typename(L, i));
  cell_tensor **slot = lc_newtensor(L);
  if (cell_tensor_full(CELL_DTYPE_F32, 0, NULL, lua_tonumber(L, i), slot) != CELL_OK) lc_raise(L);
  lua_replace(L, i);
  return *slot;
}

static int l_normal(lua_State *L) {
  int64_t shape[CELL_MAX_DIMS];
  int ndim = 0, mi = 2, si = 3, has_seed = 0;
  lua_Integer seed = 0;
  if (lua_istable(L, 1) && !lc_test_tensor(L, 1)) { /* normal(shape, mean, stddev [, seed]) */
    int next;
    ndim = (int)lua_rawlen(L, 1) == 0 ? 0 : lc_check_shape(L, 1, shape, &next);
    if (!lua_isnoneornil(L, 4)) {
      seed = seed_at(L, 4, 4, "normal");
      has_seed = 1;
    }
  } else { /* normal(mean, stddev [, shape]) */
    mi = 1;
    si = 2;
    if (!lua_isnoneornil(L, 3)) {
      int next;
      if (!lua_istable(L, 3) || lc_test_tensor(L, 3))
        return lc_argerror(L, 3, "TypeError: normal: the shape must be a table of sizes, got %s",
                           lc_typename(L, 3));
      ndim = (int)lua_rawlen(L, 3) == 0 ? 0 : lc_check_shape(L, 3, shape, &next);
    }
  }
  if (lua_isnoneornil(L, mi) || lua_isnoneornil(L, si))
    return lc_argerror(L, lua_isnoneornil(L, mi) ? mi : si,
                       "TypeError: normal: expected a mean and a stddev (numbers or Tensors)");
  cell_tensor *mean = tensor_or_number(L, mi, "mean");
  cell_tensor *std = tensor_or_number(L, si, "stddev");
  cell_tensor **out = lc_newtensor(L);
  draw_gen d;
  gen_begin(L, seed, has_seed, &d);
  cell_status s = cell_op_normal(ndim, shape, mean, std, out);
  gen_end(&d);
  return lc_finish(L, s);
}

/* --- the generator's state -------------------------------------------------------- */

static int l_get_rng_state(lua_State *L) {
  unsigned char bytes[CELL_RNG_STATE_BYTES];
  cell_generator_get_state(((lc_state *)lua_touserdata(L, UV_STATE))->gen, bytes);
  int64_t n = CELL_RNG_STATE_BYTES;
  cell_tensor **out = lc_newtensor(L);
  cell_status s = cell_tensor_empty(CELL_DTYPE_U8, 1, &n, out);
  if (s == CELL_OK) {
    memcpy(cell_tensor_data_ptr(*out), bytes, sizeof bytes);
    s = lc_to_default_device(out);
  }
  return lc_finish(L, s);
}

static int l_set_rng_state(lua_State *L) {
  cell_tensor *t = lc_test_tensor(L, 1);
  if (!t)
    return lc_argerror(L, 1, "TypeError: set_rng_state: the state must be a uint8 Tensor (from "
                             "get_rng_state), got %s", lc_typename(L, 1));
  if (cell_tensor_dtype(t) != CELL_DTYPE_U8)
    return lc_argerror(L, 1, "TypeError: set_rng_state: the state must be a uint8 Tensor, got %s",
                       cell_dtype_name(cell_tensor_dtype(t)));
  int64_t numel = cell_tensor_numel(t);
  if (cell_tensor_ndim(t) != 1 || numel != CELL_RNG_STATE_BYTES) {
    char sb[96];
    return lc_argerror(L, 1, "ValueError: set_rng_state: the state must be a 1-D Tensor of %d "
                             "bytes, got shape %s", CELL_RNG_STATE_BYTES,
                       cell_shape_str(cell_tensor_ndim(t), cell_tensor_shape(t), sb, sizeof sb));
  }
  cell_tensor *h = lc_host_tensor(L, t), *c = NULL;
  cell_status s = cell_tensor_contiguous(h, &c);
  cell_tensor_release(h);
  if (s != CELL_OK) return lc_raise(L);
  unsigned char bytes[CELL_RNG_STATE_BYTES];
  memcpy(bytes, cell_tensor_data_ptr(c), sizeof bytes);
  cell_tensor_release(c);
  if (cell_generator_set_state(((lc_state *)lua_touserdata(L, UV_STATE))->gen, bytes, sizeof bytes) !=
      CELL_OK)
    return lc_raise(L);
  return 0;
}

static const luaL_Reg random_ops[] = {{"multinomial", l_multinomial},
                                      {"bernoulli", l_bernoulli},
                                      {"normal", l_normal},
                                      {NULL, NULL}};
static const luaL_Reg random_methods[] = {{"multinomial", l_multinomial},
                                          {"bernoulli", l_bernoulli},
                                          {NULL, NULL}};
static const luaL_Reg rng_funcs[] = {{"get_rng_state", l_get_rng_state},
                                     {"set_rng_state", l_set_rng_state},
                                     {NULL, NULL}};

void lc_register_random(lua_State *L, int module, int nnops, int base) {
  lc_setfuncs(L, nnops, base, random_ops);
  lc_setfuncs(L, base + 1, base, random_methods);
  lc_setfuncs(L, module, base, rng_funcs);
}
