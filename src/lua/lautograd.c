/* lautograd.c - the binding of the tape: requires_grad, stop_gradient,
 * grad mode, tensor hooks (Lua functions called from the backward pass)
 * and the backward call that cell.grad / cell.value_and_grad stand on. */
#include "lcell.h"
#include <stdlib.h>

static int tensor_requires_grad_(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  int on = lua_isnone(L, 2) ? 1 : lua_toboolean(L, 2);
  if (!lua_isnone(L, 2) && !lua_isboolean(L, 2))
    return lc_argerror(L, 2, "TypeError: requires_grad must be a boolean, got %s", luaL_typename(L, 2));
  if (cell_tensor_set_requires_grad(t, on) != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

static int tensor_stop_gradient(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_tensor_detach(t, out));
}

static int tensor_is_leaf(lua_State *L) {
  lua_pushboolean(L, cell_tensor_is_leaf(lc_check_tensor(L, 1)));
  return 1;
}

/* --- hooks: a Lua function in the registry, called through a trampoline -------- */

typedef struct {
  lc_state *st; /* calls run on st->running; unref goes through st->home */
  int ref;
} hook_ud;

/* Calls the registry function ref with a gradient during a backward pass,
 * leaving nres results above *top. A Lua error is kept in the registry
 * (st->error_ref) and re-raised by _backward once the engine has unwound,
 * so the tape is left consistent. */
static cell_status call_rule(lc_state *st, int ref, const cell_tensor *grad, int nres,
                             const char *what, lua_State **Lout, int *top) {
  lua_State *L = st->running ? st->running : st->home;
  *Lout = L;
  *top = lua_gettop(L);
  if (!lua_checkstack(L, nres + 4))
    return cell_error(CELL_ERR_MEMORY, "%s: out of Lua stack for %d results", what, nres);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  cell_tensor **slot = lc_newtensor_at(L);
  cell_tensor_retain((cell_tensor *)grad);
  *slot = (cell_tensor *)grad;
  if (lua_pcall(L, 1, nres, 0) != LUA_OK_COMPAT) {
    st->error_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_settop(L, *top);
    return cell_error(CELL_ERR_RUNTIME, "%s raised an error", what);
  }
  return CELL_OK;
}

static void hook_release(void *p) {
  hook_ud *h = p;
  luaL_unref(h->st->home, LUA_REGISTRYINDEX, h->ref);
  free(h);
}

/* Calls fn(grad); a tensor result replaces the gradient. */
static cell_status hook_call(void *p, const cell_tensor *grad, cell_tensor **replacement) {
  hook_ud *h = p;
  lua_State *L;
  int top;
  cell_status cs = call_rule(h->st, h->ref, grad, 1, "a tensor hook", &L, &top);
  if (cs != CELL_OK) return cs;
  tensor_ud *ud = lc_test_ud(L, -1);
  cell_status s = CELL_OK;
  if (ud && ud->t) {
    cell_tensor_retain(ud->t);
    *replacement = ud->t;
  } else if (!lua_isnil(L, -1)) {
    s = cell_error(CELL_ERR_TYPE, "a tensor hook must return nil or a Tensor, got %s",
                   luaL_typename(L, -1));
  }
  lua_settop(L, top);
  return s;
}

static int handle_remove(lua_State *L) {
  if (!lua_istable(L, 1))
    return lc_error(L, "TypeError: remove: expected a hook handle, got %s", luaL_typename(L, 1));
  lua_getfield(L, 1, "tensor");
  lua_getfield(L, 1, "id");
  /* a plain C function (no binding upvalues): lc_test_ud needs none */
  tensor_ud *ud = lc_test_ud(L, -2);
  if (ud && ud->t && lua_type(L, -1) == LUA_TNUMBER) cell_tensor_remove_hook(ud->t, (int)lua_tointeger(L, -1));
  lua_pushnil(L);
  lua_setfield(L, 1, "tensor");
  return 0;
}

static int tensor_register_hook(lua_State *L) {
  cell_tensor *t = lc_check_tensor(L, 1);
  if (lua_type(L, 2) != LUA_TFUNCTION)
    return lc_argerror(L, 2, "TypeError: the hook must be a function, but got %s", luaL_typename(L, 2));
  hook_ud *h = malloc(sizeof *h);
  if (!h) return lc_error(L, "MemoryError: register_hook: out of memory");
  h->st = lua_touserdata(L, UV_STATE);
  lua_pushvalue(L, 2);
  h->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  int id;
  if (cell_tensor_register_hook(t, hook_call, hook_release, h, &id) != CELL_OK) {
    hook_release(h);
    return lc_raise(L);
  }
  lua_createtable(L, 0, 3); /* the handle */
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "tensor");
  lua_pushinteger(L, id);
  lua_setfield(L, -2, "id");
  lua_pushcfunction(L, handle_remove);
  lua_setfield(L, -2, "remove");
  return 1;
}

/* --- grad mode and backward ------------------------------------------------------ */

static int l_is_grad_enabled(lua_State *L) {
  lua_pushboolean(L, cell_grad_is_enabled());
  return 1;
}

static int l_set_grad_enabled(lua_State *L) {
  lua_pushboolean(L, cell_grad_set_enabled(lua_toboolean(L, 1)));
  return 1;
}

/* _backward(root, sens | nil, {inputs...} [, create_graph]) -> {grads...};
 * with create_graph the pass records (higher-order gradients) and inputs
 * may be tensors a recorded op produced. */
static int l_backward(lua_State *L) {
  cell_tensor *root = lc_check_tensor(L, 1);
  cell_tensor *sens = lua_isnoneornil(L, 2) ? NULL : lc_check_tensor(L, 2);
  lc_check_table(L, 3, "a table of tensors");
  int create = lua_toboolean(L, 4);
  lua_settop(L, 3);
  int n = (int)lua_rawlen(L, 3);
  cell_tensor **in = lua_newuserdatauv(L, sizeof(cell_tensor *) * (size_t)(2 * n + 1), 0);
  cell_tensor **out = in + n;
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 3, i + 1);
    in[i] = lc_test_tensor(L, -1);
    if (!in[i]) return lc_argerror(L, 3, "TypeError: element %d is not a Tensor", i + 1);
    lua_pop(L, 1);
  }
  lc_state *st = lua_touserdata(L, UV_STATE);
  lua_State *prev = st->running;
  st->running = L;
  st->error_ref = LUA_NOREF;
  cell_status s = create ? cell_autograd_grad_ex(root, sens, n, in, out, 1)
                         : cell_autograd_grad(root, sens, n, in, out);
  st->running = prev;
  if (s != CELL_OK) {
    if (st->error_ref != LUA_NOREF) { /* a hook's own error, as it was raised */
      lua_rawgeti(L, LUA_REGISTRYINDEX, st->error_ref);
      luaL_unref(L, LUA_REGISTRYINDEX, st->error_ref);
      st->error_ref = LUA_NOREF;
      return lua_error(L);
    }
    return lc_raise(L);
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lc_push_owned(L, out[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_backward_nodes(lua_State *L) {
  const char *names[256];
  int n = cell_autograd_node_names(names, 256);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* --- Lua nodes: a backward rule written in Lua ------------------------------------ */

typedef struct {
  lc_state *st;
  int ref; /* the Lua backward function */
} lua_rule;

static void lua_rule_release(void *p) {
  lua_rule *r = p;
  luaL_unref(r->st->home, LUA_REGISTRYINDEX, r->ref);
  free(r);
}

#define LUA_NODE_NAME "LuaBackward"

/* Calls fn(grad_out) -> one gradient (a Tensor or nil) per input; the
 * engine checks their shapes (cell_autograd_custom_node). */
static cell_status lua_rule_backward(void *p, const cell_tensor *g, int n, const int *wants,
                                     cell_tensor **gin) {
  lua_rule *r = p;
  lua_State *L;
  int top;
  cell_status s = call_rule(r->st, r->ref, g, n, LUA_NODE_NAME, &L, &top);
  if (s != CELL_OK) return s;
  for (int i = 0; i < n && s == CELL_OK; i++) {
    int idx = top + 1 + i;
    if (lua_isnil(L, idx) || !wants[i]) continue;
    tensor_ud *ud = lc_test_ud(L, idx);
    if (!ud || !ud->t) {
      s = cell_error(CELL_ERR_TYPE, "%s: gradient %d must be a Tensor or nil, got %s", LUA_NODE_NAME,
                     i + 1, luaL_typename(L, idx));
      break;
    }
    cell_tensor_retain(ud->t);
    gin[i] = ud->t;
  }
  lua_settop(L, top);
  return s;
}

/* _lua_node(output, {inputs...}, backward_fn): output (a tensor
 * no recorded op produced) gets a node whose backward is backward_fn. The
 * recompute (checkpoint) and custom bprop features stand on it. */
static int l_lua_node(lua_State *L) {
  cell_tensor *out = lc_check_tensor(L, 1);
  lc_check_table(L, 2, "a table of tensors");
  if (lua_type(L, 3) != LUA_TFUNCTION)
    return lc_argerror(L, 3, "TypeError: expected a function, got %s", luaL_typename(L, 3));
  int n = (int)lua_rawlen(L, 2);
  if (n > CELL_CUSTOM_MAX_INPUTS)
    return lc_argerror(L, 2, "ValueError: a Lua backward node takes at most %d inputs, got %d",
                       CELL_CUSTOM_MAX_INPUTS, n);
  const cell_tensor *in[CELL_CUSTOM_MAX_INPUTS];
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 2, i + 1);
    in[i] = lc_test_tensor(L, -1);
    if (!in[i]) return lc_argerror(L, 2, "TypeError: input %d is not a Tensor", i + 1);
    lua_pop(L, 1);
  }
  if (!cell_tensor_is_leaf(out) || cell_tensor_requires_grad(out))
    return lc_argerror(L, 1, "RuntimeError: the output already belongs to a graph");
  lua_rule *r = malloc(sizeof *r);
  if (!r) return lc_error(L, "MemoryError: out of memory");
  r->st = lua_touserdata(L, UV_STATE);
  lua_pushvalue(L, 3);
  r->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  /* The engine owns r from here: lua_rule_release runs when the node goes,
   * at once when no node is needed, or on failure. */
  if (cell_autograd_custom_node(out, n, in, LUA_NODE_NAME, lua_rule_backward, lua_rule_release, r) !=
      CELL_OK)
    return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg ag_methods[] = {{"requires_grad_", tensor_requires_grad_},
                                      {"stop_gradient", tensor_stop_gradient},
                                      {"detach", tensor_stop_gradient},
                                      {"is_leaf", tensor_is_leaf},
                                      {"register_hook", tensor_register_hook},
                                      {NULL, NULL}};

static const luaL_Reg ag_funcs[] = {{"is_grad_enabled", l_is_grad_enabled},
                                    {"set_grad_enabled", l_set_grad_enabled},
                                    {"_backward", l_backward},
                                    {"_backward_nodes", l_backward_nodes},
                                    {"_lua_node", l_lua_node},
                                    {NULL, NULL}};

void lc_register_autograd(lua_State *L, int module, int base) {
  lc_setfuncs(L, base + 1, base, ag_methods);
  lc_setfuncs(L, module, base, ag_funcs);
}
