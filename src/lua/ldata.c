/* ldata.c - the Lua binding of include/cell_data.h, as functions of
 * cell.core (lua/cell/dataset/ builds on them):
 *   core._data_typecast(dtype) -> transform
 *   core._data_onehot(num_classes, index_base, smoothing [, dtype]) -> transform
 *   core._data_fill(value), core._data_random_apply(list, prob),
 *   core._data_random_choice(list) -> transform
 *   core._data_apply(transform, tensor [, seed [, index]]) -> tensor
 *   core._data_is_transform(v) -> name or nil
 *   core._data_pipeline(columns, names) -> pipeline
 *   core._data_add_op(pipeline, column, transform)      (column from 1)
 *   core._data_start(pipeline, order, batch_size, drop_remainder, seed, workers, prefetch)
 *   core._data_next(pipeline) -> one tensor per column, or nothing at the end
 *   core._data_wait(pipeline [, reset]) -> seconds waited, outputs
 *   core._data_free(pipeline)
 * A transform is a userdata (LC_SAMPLE_OP_MT) owning a cell_sample_op;
 * calling it on a tensor applies it (data_apply). */
#include "lcell.h"
#include "ldata.h"
#include <stdlib.h>
#include <string.h>

#define PIPELINE_MT "cell.DataPipeline"

typedef struct op_ud {
  cell_sample_op *op;
} op_ud;

typedef struct pipe_ud {
  cell_data_pipeline *p;
  int ncols;
} pipe_ud;

const cell_sample_op *lc_test_sample_op(lua_State *L, int idx) {
  op_ud *u = luaL_testudata(L, idx, LC_SAMPLE_OP_MT);
  return u ? u->op : NULL;
}

const cell_sample_op *lc_check_sample_op(lua_State *L, int idx) {
  const cell_sample_op *op = lc_test_sample_op(L, idx);
  if (!op) lc_argerror(L, idx, "TypeError: expected a transform, got %s", lc_typename(L, idx));
  return op;
}

void lc_push_sample_op(lua_State *L, cell_sample_op *op) {
  if (!op) {
    lc_raise(L);
    return;
  }
  op_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->op = op;
  luaL_setmetatable(L, LC_SAMPLE_OP_MT);
}

static int op_gc(lua_State *L) {
  op_ud *u = luaL_checkudata(L, 1, LC_SAMPLE_OP_MT);
  if (u->op && u->op->destroy) u->op->destroy(u->op);
  u->op = NULL;
  return 0;
}

static int op_tostring(lua_State *L) {
  const cell_sample_op *op = lc_check_sample_op(L, 1);
  lua_pushfstring(L, "%s()", op->name ? op->name : "Transform");
  return 1;
}

static int l_is_transform(lua_State *L) {
  const cell_sample_op *op = lc_test_sample_op(L, 1);
  if (!op) lua_pushnil(L);
  else lua_pushstring(L, op->name ? op->name : "Transform");
  return 1;
}

static uint64_t opt_seed(lua_State *L, int i, const char *what) {
  if (lua_isnoneornil(L, i)) return 0;
  lua_Integer v = lc_check_int(L, i);
  if (v < 0) lc_argerror(L, i, "ValueError: %s must not be negative, but got %lld", what, (long long)v);
  return (uint64_t)v;
}

/* A seed from the state's generator, for a transform called without one
 * (a fresh random draw per call, as an eager MindSpore transform makes). */
static uint64_t draw_seed(lua_State *L) {
  cell_tensor *r = NULL;
  cell_generator *prev = lc_gen_enter(L);
  cell_status s = cell_tensor_randint(0, (int64_t)1 << 52, CELL_DTYPE_I64, 0, NULL, &r);
  lc_gen_leave(prev);
  if (s != CELL_OK) lc_raise(L);
  int64_t v = 0;
  s = cell_tensor_item_i64(r, &v);
  cell_tensor_release(r);
  if (s != CELL_OK) lc_raise(L);
  return (uint64_t)v;
}

/* data_apply(op, t [, seed [, index]]): op on a host copy of t. */
static int l_apply(lua_State *L) {
  const cell_sample_op *op = lc_check_sample_op(L, 1);
  cell_tensor *t = lc_check_tensor(L, 2);
  uint64_t seed = lua_isnoneornil(L, 3) ? draw_seed(L) : opt_seed(L, 3, "seed");
  uint64_t index = opt_seed(L, 4, "index");
  cell_tensor *h = lc_host_tensor(L, t), *c = NULL, *o = NULL;
  cell_status s = cell_tensor_clone(h, &c); /* the op may write into its input */
  cell_tensor_release(h);
  if (s != CELL_OK) return lc_raise(L);
  s = cell_sample_op_run(op, c, seed, index, &o);
  cell_tensor_release(c);
  if (s != CELL_OK) return lc_raise(L);
  cell_tensor **slot = lc_newtensor(L);
  *slot = o;
  return lc_finish(L, lc_to_default_device(slot));
}

static int l_typecast(lua_State *L) {
  cell_dtype dt = lc_check_dtype(L, 1);
  cell_sample_op *op = NULL;
  if (cell_sample_op_typecast(dt, &op) != CELL_OK) return lc_raise(L);
  lc_push_sample_op(L, op);
  return 1;
}

static int l_onehot(lua_State *L) {
  lua_Integer n = lc_check_int(L, 1);
  lua_Integer base = lc_check_int(L, 2);
  lua_Number smoothing = lc_check_number(L, 3);
  cell_dtype dt = lua_isnoneornil(L, 4) ? CELL_DTYPE_COUNT : lc_check_dtype(L, 4);
  cell_sample_op *op = NULL;
  if (cell_sample_op_onehot((int64_t)n, (int64_t)base, smoothing, dt, &op) != CELL_OK) return lc_raise(L);
  lc_push_sample_op(L, op);
  return 1;
}

static int l_fill(lua_State *L) {
  lua_Number v = lc_check_number(L, 1);
  cell_sample_op *op = NULL;
  if (cell_sample_op_fill(v, &op) != CELL_OK) return lc_raise(L);
  lc_push_sample_op(L, op);
  return 1;
}

/* data_random_apply(list, prob) / data_random_choice(list): the value
 * keeps the list's transforms alive (its user value). */
static int random_op(lua_State *L, int choice) {
  lc_check_table(L, 1, "a list of transforms");
  int n = (int)lua_rawlen(L, 1);
  if (n < 1 || n > 64) return lc_argerror(L, 1, "ValueError: %d transforms; between 1 and 64 allowed", n);
  const cell_sample_op *ops[64];
  lua_newtable(L);
  int keep = lua_gettop(L);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    ops[i] = lc_test_sample_op(L, -1);
    if (!ops[i])
      return lc_argerror(L, 1, "TypeError: transforms[%d] must be a C transform, but got %s", i + 1,
                         lc_typename(L, -1));
    lua_rawseti(L, keep, i + 1);
  }
  cell_sample_op *op = NULL;
  cell_status s = choice ? cell_sample_op_random_choice(n, ops, &op)
                         : cell_sample_op_random_apply(n, ops, lc_check_number(L, 2), &op);
  if (s != CELL_OK) return lc_raise(L);
  op_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->op = op;
  luaL_setmetatable(L, LC_SAMPLE_OP_MT);
  lua_pushvalue(L, keep);
  lc_setuservalue(L, -2);
  return 1;
}
static int l_random_apply(lua_State *L) { return random_op(L, 0); }
static int l_random_choice(lua_State *L) { return random_op(L, 1); }

static pipe_ud *check_pipe(lua_State *L, int i) {
  pipe_ud *u = luaL_checkudata(L, i, PIPELINE_MT);
  if (!u->p) lc_argerror(L, i, "RuntimeError: the pipeline was freed");
  return u;
}

/* data_pipeline(columns, names) */
static int l_pipeline(lua_State *L) {
  lc_check_table(L, 1, "a list of tensors");
  lc_check_table(L, 2, "a list of names");
  int n = (int)lua_rawlen(L, 1);
  if ((int)lua_rawlen(L, 2) != n)
    return lc_argerror(L, 2, "ValueError: %d columns but %d names", n, (int)lua_rawlen(L, 2));
  if (n < 1 || n > 64) return lc_argerror(L, 1, "ValueError: %d columns; between 1 and 64 allowed", n);
  cell_tensor *cols[64];
  const char *names[64];
  luaL_checkstack(L, 2 * n + 8, "data_pipeline");
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    cols[i] = lc_test_tensor(L, -1);
    if (!cols[i]) return lc_argerror(L, 1, "TypeError: column %d is not a Tensor but a %s", i + 1, lc_typename(L, -1));
    lua_rawgeti(L, 2, i + 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      return lc_argerror(L, 2, "TypeError: column name %d is not a string but a %s", i + 1, lc_typename(L, -1));
    names[i] = lua_tostring(L, -1);
  }
  pipe_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->p = NULL;
  u->ncols = n;
  luaL_setmetatable(L, PIPELINE_MT);
  lua_newtable(L); /* the transforms it runs, kept alive with it */
  lc_setuservalue(L, -2);
  if (cell_data_pipeline_new(n, cols, names, &u->p) != CELL_OK) return lc_raise(L);
  return 1;
}

static int l_add_op(lua_State *L) {
  pipe_ud *u = check_pipe(L, 1);
  lua_Integer col = lc_check_int(L, 2);
  const cell_sample_op *op = lc_check_sample_op(L, 3);
  if (cell_data_pipeline_add_op(u->p, (int)(col - 1), op) != CELL_OK) return lc_raise(L);
  lc_getuservalue(L, 1);
  lua_pushvalue(L, 3);
  lua_rawseti(L, -2, (int)lua_rawlen(L, -2) + 1);
  return 0;
}

/* data_start(p, order, batch_size, drop, seed, workers, prefetch) */
static int l_start(lua_State *L) {
  pipe_ud *u = check_pipe(L, 1);
  lc_check_table(L, 2, "a list of rows");
  lua_Integer batch = lc_check_int(L, 3);
  int drop = lua_toboolean(L, 4);
  uint64_t seed = opt_seed(L, 5, "seed");
  lua_Integer workers = lc_check_int(L, 6), prefetch = lc_check_int(L, 7);
  if (workers < 0 || workers > 64)
    return lc_argerror(L, 6, "ValueError: num_parallel_workers must be in [0, 64], but got %lld", (long long)workers);
  if (prefetch < 1 || prefetch > 1 << 20)
    return lc_argerror(L, 7, "ValueError: prefetch must be in [1, 1048576], but got %lld", (long long)prefetch);
  size_t n = lua_rawlen(L, 2);
  int64_t *order = lua_newuserdatauv(L, sizeof *order * (n ? n : 1), 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, 2, (lua_Integer)i + 1);
    order[i] = (int64_t)lc_check_item_int(L, 2, -1, (int)i + 1, "the order") - 1;
    lua_pop(L, 1);
  }
  if (cell_data_pipeline_start(u->p, order, (int64_t)n, (int64_t)batch, drop, seed, (int)workers, (int)prefetch) !=
      CELL_OK)
    return lc_raise(L);
  lua_pushinteger(L, (lua_Integer)cell_data_pipeline_length(u->p));
  return 1;
}

static int l_next(lua_State *L) {
  pipe_ud *u = check_pipe(L, 1);
  cell_tensor *outs[64];
  int done = 0;
  if (cell_data_pipeline_next(u->p, outs, &done) != CELL_OK) return lc_raise(L);
  if (done) return 0;
  luaL_checkstack(L, u->ncols + 4, "data_next");
  for (int c = 0; c < u->ncols; c++) {
    cell_tensor **slot = lc_newtensor(L);
    *slot = outs[c];
    outs[c] = NULL;
    cell_status s = lc_to_default_device(slot);
    if (s != CELL_OK) {
      for (int k = c + 1; k < u->ncols; k++) cell_tensor_release(outs[k]);
      return lc_raise(L);
    }
    lc_finish(L, CELL_OK);
  }
  return u->ncols;
}

static int l_wait(lua_State *L) {
  pipe_ud *u = check_pipe(L, 1);
  int64_t outputs = 0;
  uint64_t ns = cell_data_pipeline_wait_ns(u->p, lua_toboolean(L, 2), &outputs);
  lua_pushnumber(L, (lua_Number)ns * 1e-9);
  lua_pushinteger(L, (lua_Integer)outputs);
  return 2;
}

static int pipe_gc(lua_State *L) {
  pipe_ud *u = luaL_checkudata(L, 1, PIPELINE_MT);
  cell_data_pipeline_free(u->p);
  u->p = NULL;
  return 0;
}

static const luaL_Reg data_funcs[] = {{"_data_typecast", l_typecast},
                                      {"_data_onehot", l_onehot},
                                      {"_data_apply", l_apply},
                                      {"_data_fill", l_fill},
                                      {"_data_random_apply", l_random_apply},
                                      {"_data_random_choice", l_random_choice},
                                      {"_data_is_transform", l_is_transform},
                                      {"_data_pipeline", l_pipeline},
                                      {"_data_add_op", l_add_op},
                                      {"_data_start", l_start},
                                      {"_data_next", l_next},
                                      {"_data_wait", l_wait},
                                      {"_data_free", pipe_gc},
                                      {NULL, NULL}};

void lc_register_data(lua_State *L, int module, int base) {
  lc_setfuncs(L, module, base, data_funcs);
  luaL_newmetatable(L, LC_SAMPLE_OP_MT);
  int mt = lua_gettop(L);
  static const luaL_Reg op_meta[] = {{"__call", l_apply}, {"__tostring", op_tostring}, {NULL, NULL}};
  lc_setfuncs(L, mt, base, op_meta);
  lua_pushcfunction(L, op_gc);
  lua_setfield(L, mt, "__gc");
  lua_pushliteral(L, "Transform");
  lua_setfield(L, mt, "__name");
  lua_pushliteral(L, "the metatable is locked");
  lua_setfield(L, mt, "__metatable");
  lua_pop(L, 1);
  luaL_newmetatable(L, PIPELINE_MT);
  lua_pushcfunction(L, pipe_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushliteral(L, "the metatable is locked");
  lua_setfield(L, -2, "__metatable");
  lua_pop(L, 1);
}
