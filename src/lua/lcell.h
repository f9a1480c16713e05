/* lcell.h - helpers shared by the binding's files: userdata, argument checks,
 * dimension translation (1-based Lua to 0-based C) and error raising. */
#ifndef CELL_LUA_LCELL_H
#define CELL_LUA_LCELL_H
#include "cell.h"
#include "compat.h"
#include <stdbool.h>
#include <stdint.h>

/* The binding uses only the public API of include/ (tests/layering.sh). */

/* Whether two shapes are the same. */
static inline bool lc_shape_equal(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

#define TENSOR_MT "cell.Tensor"
#define DTYPE_MT "cell.Dtype"

/* Every binding function is a closure over these upvalues (and, after
 * them, its name: see lc_setfuncs). */
#define UV_STATE lua_upvalueindex(1)   /* lc_state userdata */
#define UV_METHODS lua_upvalueindex(2) /* the tensor methods table */
#define UV_TENSOR_MT lua_upvalueindex(3)
#define LC_NUPVALUES 3

typedef struct lc_state {
  size_t gc_debt;        /* tensor bytes made since the last GC step */
  size_t gc_made;        /* tensors made since the last GC step */
  size_t full_debt;      /* tensor bytes made since the last full collection */
  size_t full_threshold; /* full_debt that triggers the next one */
  lua_State *running;    /* the thread running a backward pass (for hooks) */
  lua_State *home;       /* a thread of our own, anchored in the registry: the
                            one that outlives any coroutine that made a hook */
  int error_ref;         /* a hook's Lua error, kept until the pass unwinds */
  cell_generator *gen;   /* this state's random stream (cell.set_seed): two
                            states, on one thread or several, never share
                            one, so seeding one never perturbs another */
} lc_state;

/* Make the calling closure's state generator current on this thread for
 * the engine calls that draw (rand, randn, randint, dropout), and put the
 * previous one back after them:
 *   cell_generator *prev = lc_gen_enter(L);
 *   cell_status s = cell_tensor_rand(...);
 *   lc_gen_leave(prev);
 * Nothing that can raise a Lua error may run in between, or the thread
 * would keep the state's generator current after the call. */
cell_generator *lc_gen_enter(lua_State *L);
#define lc_gen_leave(prev) ((void)cell_generator_use(prev))

typedef struct tensor_ud {
  cell_tensor *t;
  /* &lc_tensor_kind, set when the userdata is made: a userdata of another
   * kind given the tensor metatable (debug.setmetatable can) has other
   * bytes here, so lc_test_ud refuses it rather than read them as a
   * tensor. */
  const void *kind;
  /* 1 when the userdata carries an attrs table as its user value (a
   * Parameter: see core._attach); plain tensors have no user value. */
  unsigned char attrs;
} tensor_ud;

extern const char lc_tensor_kind;

/* Push a userdata for a tensor the caller is about to make; the slot is
 * NULL until then, so an engine failure leaks nothing (the collector takes
 * the empty userdata). */
cell_tensor **lc_newtensor(lua_State *L);
/* After the engine call that filled the slot on the stack top: raise on
 * failure, else tell the collector about the bytes and return 1. */
int lc_finish(lua_State *L, cell_status s);
/* Push a tensor the caller owns a reference to (stolen). */
void lc_push_owned(lua_State *L, cell_tensor *t);
cell_tensor *lc_check_tensor(lua_State *L, int i);
cell_tensor *lc_test_tensor(lua_State *L, int i);
/* The tensor userdata at i (freed or not), or NULL for any other value
 * (light userdata and userdata of other kinds included). Needs no binding
 * upvalues: hooks and the embedding API use it too. */
tensor_ud *lc_test_ud(lua_State *L, int i);
/* The type of the value at i for messages: "Tensor", "dtype", a userdata's
 * __name ("FILE*"), else Lua's type name. */
const char *lc_typename(lua_State *L, int i);
/* Raise the engine's last error as "<ExceptionName>: <message>". */
int lc_raise(lua_State *L);
/* luaL_argerror with a formatted message (which should start with the
 * exception name). */
int lc_argerror(lua_State *L, int arg, const char *fmt, ...);
int lc_error(lua_State *L, const char *fmt, ...);
/* Push "source:line: " for the user's line that an error blames (the first
 * Lua frame outside the library's own files). lc_raise, lc_argerror and
 * lc_error position their messages with it. */
void lc_where(lua_State *L);
/* The integer at stack index idx, an item of the table argument arg (at
 * position pos, 1-based): a TypeError naming `what` and the position. */
lua_Integer lc_check_item_int(lua_State *L, int arg, int idx, int pos, const char *what);

void lc_push_dtype(lua_State *L, cell_dtype dt);
cell_dtype lc_check_dtype(lua_State *L, int i);
cell_dtype lc_opt_dtype(lua_State *L, int i, cell_dtype def);
bool lc_is_dtype(lua_State *L, int i);

/* A 1-based or negative dimension at argument i, for a tensor with ndim
 * dimensions (extra = 1 allows ndim + 1, for unsqueeze): 0-based result. */
int lc_check_dim(lua_State *L, int i, int ndim, int extra);
int lc_dim_of(lua_State *L, int arg, lua_Integer d, int ndim, int extra);
/* A shape from a table at i, or from numbers at i, i+1, ... (returns ndim;
 * *next gets the index after the shape). */
int lc_check_shape(lua_State *L, int i, int64_t *shape, int *next);
lua_Integer lc_check_int(lua_State *L, int i);
/* luaL_checknumber / luaL_checktype with the TypeError: prefix of API.md. */
lua_Number lc_check_number(lua_State *L, int i);
void lc_check_table(lua_State *L, int i, const char *what);
/* Whether the number at i has a fractional part (the type promotion rule
 * for numbers, identical under Lua 5.4 and LuaJIT). */
bool lc_number_is_float(lua_State *L, int i);
void lc_push_element(lua_State *L, cell_dtype dt, const void *p);

/* Register regs into the table at index target, each a closure over the
 * three upvalues found at base, base + 1, base + 2 (absolute indices). */
void lc_setfuncs(lua_State *L, int target, int base, const luaL_Reg *regs);
/* An options table at arg: checks its keys against keys (NULL-terminated);
 * returns arg, or 0 when absent. lc_field pushes opts[key] (nil when opts
 * is 0) and says whether it is set. */
int lc_options(lua_State *L, int arg, const char *op, const char *const *keys);
bool lc_field(lua_State *L, int opts, const char *key);
/* Fill the methods table (base + 1) and the metatable (base + 2). */
void lc_open_tensor(lua_State *L, int base);
void lc_register_ops(lua_State *L, int base);
/* lsort.c: sort, topk, median, unique, cumprod, logsumexp, amax / amin,
 * tril / triu, diag, trace, flip, roll. */
void lc_register_sort(lua_State *L, int base);
/* lindex.c: nonzero, masked_select, masked_scatter (tensor methods). */
void lc_register_index(lua_State *L, int base);
void lc_register_create(lua_State *L, int module, int base);
void lc_register_autograd(lua_State *L, int module, int base);
void lc_register_attrs(lua_State *L, int module, int base);
/* ldevice.c: cell.set_device / get_device; Tensor:move_to and .device; a
 * slot's tensor moved to the default device (for tensors the host filled);
 * t or a CPU copy of it, retained (release when done; raises on failure). */
void lc_register_device(lua_State *L, int module, int base);
int lc_tensor_move_to(lua_State *L);
void lc_push_device_name(lua_State *L, const cell_tensor *t);
cell_status lc_to_default_device(cell_tensor **slot);
cell_tensor *lc_host_tensor(lua_State *L, cell_tensor *t);
/* core.safetensors_save/_load, core.idx_load, core.isatty (lio.c). */
void lc_register_io(lua_State *L, int module, int base);
/* ldata.c: core._data_* (transforms and pipelines, include/cell_data.h). */
void lc_register_data(lua_State *L, int module, int base);
/* lvision.c: core._vision_*, core._image_* (include/cell_vision.h). */
void lc_register_vision(lua_State *L, int module, int base);
/* The FFI helpers of lembed.c (core._ffi_*). */
void lc_register_embed(lua_State *L, int module, int base);
/* Register into the table core.nnops (at index nnops). */
void lc_register_conv(lua_State *L, int nnops, int base);
void lc_register_nn(lua_State *L, int nnops, int base);
void lc_register_rnn(lua_State *L, int nnops, int base);
void lc_register_optim(lua_State *L, int nnops, int base);
/* lrandom.c: multinomial, bernoulli, normal (core.nnops; the first two as
 * methods too) and cell.get_rng_state / set_rng_state; lresample.c:
 * interpolate, unfold, fold (core.nnops). */
void lc_register_random(lua_State *L, int module, int nnops, int base);
void lc_register_resample(lua_State *L, int nnops, int base);
/* lattention.c: scaled_dot_product_attention (core.nnops). */
void lc_register_attention(lua_State *L, int nnops, int base);
void lc_register_act(lua_State *L, int nnops, int base);
/* For the attributed tensor at 1 (ud->attrs set), with the key at 2:
 * lc_attrs_get pushes attrs[key] when it is not nil; lc_attrs_meta pushes
 * the attrs metatable's field `name` when there is one. Each returns
 * whether it pushed. */
bool lc_attrs_get(lua_State *L);
bool lc_attrs_meta(lua_State *L, const char *name);
/* lc_newtensor for code that runs outside a binding closure (hooks). */
cell_tensor **lc_newtensor_at(lua_State *L);

#if LUA_VERSION_NUM >= 502
#define LUA_OK_COMPAT LUA_OK
#else
#define LUA_OK_COMPAT 0
#endif

#endif
