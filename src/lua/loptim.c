/* loptim.c - the Lua binding of include/cell_optim.h: functions of the
 * table core.nnops, which cell.ops (lua/cell/ops.lua) exposes. They are
 * internal (underscored): lua/cell/nn/optim/ calls them once per parameter
 * per step, with every hyper-parameter as a number, so a step makes no Lua
 * tables and no tensors. */
#include "lcell.h"

/* Raise the engine's error, prefixed by the caller's label when it gave one
 * (the optimizer and parameter the step was for). */
static int step_error(lua_State *L, int label) {
  if (lua_type(L, label) != LUA_TSTRING) return lc_raise(L);
  cell_status s = cell_last_status();
  return lc_error(L, "%s: %s: %s", cell_status_name(s ? s : CELL_ERR_RUNTIME), lua_tostring(L, label),
                    cell_last_error());
}

/* _sgd_step(param, grad, buf | nil, lr, momentum, dampening, weight_decay,
 *           nesterov, first_step, grad_scale [, label]) */
static int l_sgd_step(lua_State *L) {
  cell_tensor *p = lc_check_tensor(L, 1), *g = lc_check_tensor(L, 2);
  cell_tensor *buf = lua_isnil(L, 3) ? NULL : lc_check_tensor(L, 3);
  cell_sgd_config c;
  c.lr = lc_check_number(L, 4);
  c.momentum = lc_check_number(L, 5);
  c.dampening = lc_check_number(L, 6);
  c.weight_decay = lc_check_number(L, 7);
  c.nesterov = lua_toboolean(L, 8);
  c.first_step = lua_toboolean(L, 9);
  c.grad_scale = lc_check_number(L, 10);
  if (cell_optim_sgd_step(p, g, buf, &c) != CELL_OK) return step_error(L, 11);
  return 0;
}

/* _adam_step(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
 *            weight_decay, step, decoupled, grad_scale [, label]) */
static int l_adam_step(lua_State *L) {
  cell_tensor *p = lc_check_tensor(L, 1), *g = lc_check_tensor(L, 2);
  cell_tensor *m = lc_check_tensor(L, 3), *v = lc_check_tensor(L, 4);
  cell_adam_config c;
  c.lr = lc_check_number(L, 5);
  c.beta1 = lc_check_number(L, 6);
  c.beta2 = lc_check_number(L, 7);
  c.eps = lc_check_number(L, 8);
  c.weight_decay = lc_check_number(L, 9);
  c.step = (int64_t)lc_check_int(L, 10);
  c.decoupled = lua_toboolean(L, 11);
  c.grad_scale = lc_check_number(L, 12);
  if (cell_optim_adam_step(p, g, m, v, &c) != CELL_OK) return step_error(L, 13);
  return 0;
}

/* _adam_steps(params, grads, exp_avgs, exp_avg_sqs, lrs, lr_of, weight_decays,
 *             labels, n, beta1, beta2, eps, step, decoupled, grad_scale):
 * cell_optim_adam_steps over entries 1..n of the tables; parameter i's
 * learning rate is lrs[lr_of[i]]. An error names labels[i] of the step
 * that failed. */
static int l_adam_steps(lua_State *L) {
  for (int a = 1; a <= 8; a++) lc_check_table(L, a, "a table");
  lua_Integer n = lc_check_int(L, 9);
  if (n < 0 || n > (lua_Integer)1 << 24) return lc_error(L, "ValueError: _adam_steps: n is %lld", (long long)n);
  cell_adam_config base;
  base.beta1 = lc_check_number(L, 10);
  base.beta2 = lc_check_number(L, 11);
  base.eps = lc_check_number(L, 12);
  base.step = (int64_t)lc_check_int(L, 13);
  base.decoupled = lua_toboolean(L, 14);
  base.grad_scale = lc_check_number(L, 15);
  size_t m = (size_t)(n > 0 ? n : 1);
  /* one block, owned by a userdata so that an error below frees it */
  size_t bytes = m * (4 * sizeof(cell_tensor *) + sizeof(cell_adam_config));
  void *block = lua_newuserdatauv(L, bytes, 0);
  cell_tensor **p = block, **g = p + m, **ea = g + m, **es = ea + m;
  cell_adam_config *cfg = (cell_adam_config *)(void *)(es + m);
  for (lua_Integer i = 1; i <= n; i++) {
    size_t k = (size_t)(i - 1);
    cell_tensor **slot[4] = {&p[k], &g[k], &ea[k], &es[k]};
    for (int a = 0; a < 4; a++) {
      lua_rawgeti(L, 1 + a, i);
      *slot[a] = lc_check_tensor(L, -1); /* the tables keep them alive */
      lua_pop(L, 1);
    }
    int isnum_lr, isnum_wd;
    lua_rawgeti(L, 6, i);
    lua_rawget(L, 5);
    cfg[k] = base;
    cfg[k].lr = lua_tonumberx(L, -1, &isnum_lr);
    lua_rawgeti(L, 7, i);
    cfg[k].weight_decay = lua_tonumberx(L, -1, &isnum_wd);
    lua_pop(L, 2);
    if (!isnum_lr || !isnum_wd) {
      lua_rawgeti(L, 8, i);
      return lc_error(L, "TypeError: %s: the %s is not a number", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?",
                      isnum_lr ? "weight decay" : "learning rate");
    }
  }
  int64_t failed = -1;
  if (cell_optim_adam_steps((int64_t)n, p, (const cell_tensor *const *)g, ea, es, cfg, &failed) != CELL_OK) {
    if (failed < 0) return lc_raise(L);
    lua_rawgeti(L, 8, (lua_Integer)failed + 1);
    return step_error(L, lua_gettop(L));
  }
  return 0;
}

/* _optim_step(param, grad, s0 | nil, s1 | nil, s2 | nil, kind, lr,
 *             weight_decay, grad_scale, h1, h2, h3, h4, step, flags [, label]):
 * cell_optim_step (the other optimizers' kernels, by kind). */
static int l_optim_step(lua_State *L) {
  cell_tensor *p = lc_check_tensor(L, 1), *g = lc_check_tensor(L, 2);
  cell_tensor *s[3];
  for (int i = 0; i < 3; i++) s[i] = lua_isnoneornil(L, 3 + i) ? NULL : lc_check_tensor(L, 3 + i);
  cell_optim_config c;
  c.kind = (int)lc_check_int(L, 6);
  c.lr = lc_check_number(L, 7);
  c.weight_decay = lc_check_number(L, 8);
  c.grad_scale = lc_check_number(L, 9);
  for (int i = 0; i < 4; i++) c.h[i] = lc_check_number(L, 10 + i);
  c.step = (int64_t)lc_check_int(L, 14);
  c.flags = (int)lc_check_int(L, 15);
  if (cell_optim_step(p, g, s[0], s[1], s[2], &c) != CELL_OK) return step_error(L, 16);
  return 0;
}

/* _check_grads(params, grads, labels, n): every grads[i] is a Tensor of
 * params[i]'s shape and dtype, else the error names labels[i]. An optimizer
 * checks all of them before it updates any, so a bad list changes nothing. */
static int l_check_grads(lua_State *L) {
  lc_check_table(L, 1, "a table of parameters");
  lc_check_table(L, 2, "a table of gradients");
  lc_check_table(L, 3, "a table of labels");
  lua_Integer n = lc_check_int(L, 4);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    lua_rawgeti(L, 2, i);
    lua_rawgeti(L, 3, i);
    const char *label = lua_tostring(L, -1);
    if (!label) label = "optimizer";
    cell_tensor *p = lc_test_tensor(L, -3), *g = lc_test_tensor(L, -2);
    if (!p) return lc_error(L, "TypeError: %s: the parameter is not a Tensor", label);
    if (!g)
      return lc_error(L, "TypeError: %s: the gradient must be a Tensor, but got %s", label, luaL_typename(L, -2));
    if (!lc_shape_equal(cell_tensor_ndim(g), cell_tensor_shape(g), cell_tensor_ndim(p), cell_tensor_shape(p))) {
      char sg[256], sp[256];
      return lc_error(L, "ValueError: %s: the gradient has shape %s but the parameter has shape %s", label,
                      cell_shape_str(cell_tensor_ndim(g), cell_tensor_shape(g), sg, sizeof sg),
                        cell_shape_str(cell_tensor_ndim(p), cell_tensor_shape(p), sp, sizeof sp));
    }
    if (cell_tensor_dtype(g) != cell_tensor_dtype(p))
      return lc_error(L, "TypeError: %s: the gradient is a %s tensor but the parameter is %s", label,
                      cell_dtype_name(cell_tensor_dtype(g)), cell_dtype_name(cell_tensor_dtype(p)));
    lua_pop(L, 3);
  }
  return 0;
}

static const luaL_Reg optim_funcs[] = {
    {"_sgd_step", l_sgd_step}, {"_adam_step", l_adam_step}, {"_adam_steps", l_adam_steps},
    {"_check_grads", l_check_grads},
    {"_optim_step", l_optim_step}, {NULL, NULL}};

void lc_register_optim(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, optim_funcs); }
