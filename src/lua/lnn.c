/* lnn.c - the Lua binding of include/cell_nn.h: functions of the
 * table core.nnops, which cell.ops (lua/cell/ops.lua) exposes.
 *
 *   softmax(x [, dim = -1]), log_softmax(x [, dim = -1])
 *   batch_norm(x, running_mean, running_var, weight, bias
 *              [, {training = false, momentum = 0.1, eps = 1e-5}])
 *     momentum as MindSpore's functional ops.batch_norm: running =
 *     (1 - momentum) * running + momentum * batch (nn.BatchNorm* pass
 *     1 - their own momentum, which weighs the running value)
 *   layer_norm(x, normalized_ndim | normalized_shape [, weight [, bias [, eps = 1e-5]]])
 *   dense(x, weight [, bias]): x W^T + b
 *   dropout(x [, p = 0.5 [, training = true]])
 *   embedding(ids, weight [, {padding_idx =}])
 *   cross_entropy(logits, target [, {reduction =, weight =, ignore_index =, label_smoothing =}])
 *   nll_loss(logp, target [, {reduction =, weight =, ignore_index =}])
 *   mse_loss(x, y [, reduction]), l1_loss(x, y [, reduction])
 *   bce_with_logits(logits, target [, {reduction =, weight =, pos_weight =}])
 *
 * Dimensions, class ids, embedding ids, ignore_index and padding_idx are
 * 1-based (the engine is told index_base = 1). A loss's reduction is
 * "mean" (the default), "sum" or "none", as a string argument or the
 * option `reduction`. The binding checks Lua types and option names; the
 * engine checks values and shapes. */
#include "lcell.h"
#include <math.h>
#include <string.h>

/* The number on the stack top, for option key of op (argument arg). */
static double top_number(lua_State *L, int arg, const char *op, const char *key) {
  if (lua_type(L, -1) != LUA_TNUMBER)
    lc_argerror(L, arg, "TypeError: %s: %s must be a number, got %s", op, key,
                lc_test_tensor(L, -1) ? "Tensor" : luaL_typename(L, -1));
  return lua_tonumber(L, -1);
}

static int64_t top_integer(lua_State *L, int arg, const char *op, const char *key) {
  double v = top_number(L, arg, op, key);
  if (v != floor(v) || fabs(v) > 9007199254740992.0)
    lc_argerror(L, arg, "TypeError: %s: %s must be an integer, got %s", op, key,
                lua_tostring(L, -1));
  return (int64_t)v;
}

static bool top_boolean(lua_State *L, int arg, const char *op, const char *key) {
  if (!lua_isboolean(L, -1))
    lc_argerror(L, arg, "TypeError: %s: %s must be a boolean, got %s", op, key,
                lc_test_tensor(L, -1) ? "Tensor" : luaL_typename(L, -1));
  return lua_toboolean(L, -1);
}

/* A Tensor or nil at stack index i (argument arg). */
static cell_tensor *opt_tensor(lua_State *L, int arg, int i, const char *op, const char *what) {
  if (lua_isnoneornil(L, i)) return NULL;
  cell_tensor *t = lc_test_tensor(L, i);
  if (!t)
    lc_argerror(L, arg, "TypeError: %s: %s must be a Tensor or nil, got %s", op, what,
                luaL_typename(L, i));
  return t;
}

/* "mean" | "sum" | "none" at stack index i. */
static cell_reduction reduction_at(lua_State *L, int arg, int i, const char *op) {
  if (lua_type(L, i) != LUA_TSTRING)
    lc_argerror(L, arg, "TypeError: %s: reduction must be a string ('mean', 'sum' or 'none'), got %s",
                op, lc_test_tensor(L, i) ? "Tensor" : luaL_typename(L, i));
  const char *s = lua_tostring(L, i);
  for (int r = 0; r < CELL_REDUCTION_COUNT; r++)
    if (strcmp(s, cell_reduction_name((cell_reduction)r)) == 0) return (cell_reduction)r;
  lc_argerror(L, arg, "ValueError: %s: reduction must be 'mean', 'sum' or 'none', got '%s'", op, s);
  return CELL_REDUCTION_MEAN;
}

/* A loss's options at arg: a reduction string, or a table of keys. Pushes
 * nothing; returns the table's index (0: none) and sets *red. */
static int loss_options(lua_State *L, int arg, const char *op, const char *const *keys,
                        cell_reduction *red) {
  *red = CELL_REDUCTION_MEAN;
  if (lua_type(L, arg) == LUA_TSTRING) {
    *red = reduction_at(L, arg, arg, op);
    return 0;
  }
  int opts = lc_options(L, arg, op, keys);
  if (lc_field(L, opts, "reduction")) *red = reduction_at(L, arg, lua_gettop(L), op);
  lua_pop(L, 1);
  return opts;
}

/* --- softmax -------------------------------------------------------------------------- */

static int softmax_fn(lua_State *L, int log_) {
  cell_tensor *x = lc_check_tensor(L, 1);
  int dim = lua_isnoneornil(L, 2) ? (cell_tensor_ndim(x) ? cell_tensor_ndim(x) - 1 : 0) : lc_check_dim(L, 2, cell_tensor_ndim(x), 0);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, log_ ? cell_op_log_softmax(x, dim, out) : cell_op_softmax(x, dim, out));
}

/* softplus(x [, beta [, threshold]]) or softplus(x, {beta = 1, threshold = 20}). */
static int nn_softplus(lua_State *L) {
  static const char *const keys[] = {"beta", "threshold", NULL};
  cell_tensor *x = lc_check_tensor(L, 1);
  double beta = 1, threshold = 20;
  if (lua_istable(L, 2)) {
    int opts = lc_options(L, 2, "softplus", keys);
    if (lc_field(L, opts, "beta")) beta = top_number(L, 2, "softplus", "beta");
    lua_pop(L, 1);
    if (lc_field(L, opts, "threshold")) threshold = top_number(L, 2, "softplus", "threshold");
    lua_pop(L, 1);
  } else {
    if (!lua_isnoneornil(L, 2)) beta = lc_check_number(L, 2);
    if (!lua_isnoneornil(L, 3)) threshold = lc_check_number(L, 3);
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_softplus(x, beta, threshold, out));
}

static int nn_softmax(lua_State *L) { return softmax_fn(L, 0); }
static int nn_log_softmax(lua_State *L) { return softmax_fn(L, 1); }

/* --- normalisation ---------------------------------------------------------------------- */

static int nn_batch_norm(lua_State *L) {
  static const char *const keys[] = {"training", "momentum", "eps", NULL};
  const char *op = "batch_norm";
  cell_tensor *x = lc_check_tensor(L, 1);
  cell_tensor *rm = opt_tensor(L, 2, 2, op, "running_mean");
  cell_tensor *rv = opt_tensor(L, 3, 3, op, "running_var");
  cell_tensor *w = opt_tensor(L, 4, 4, op, "weight");
  cell_tensor *b = opt_tensor(L, 5, 5, op, "bias");
  int opts = lc_options(L, 6, op, keys);
  int training = 0;
  double momentum = 0.1, eps = 1e-5;
  if (lc_field(L, opts, "training")) training = top_boolean(L, 6, op, "training");
  lua_pop(L, 1);
  if (lc_field(L, opts, "momentum")) momentum = top_number(L, 6, op, "momentum");
  lua_pop(L, 1);
  if (!(momentum >= 0 && momentum <= 1))
    return lc_argerror(L, 6, "ValueError: batch_norm: momentum must lie in [0, 1], got %g", momentum);
  if (lc_field(L, opts, "eps")) eps = top_number(L, 6, op, "eps");
  lua_pop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  /* the engine's momentum weighs the running value (cell_nn.h) */
  return lc_finish(L, cell_op_batch_norm(x, rm, rv, w, b, training, 1.0 - momentum, eps, out));
}

static int nn_layer_norm(lua_State *L) {
  const char *op = "layer_norm";
  cell_tensor *x = lc_check_tensor(L, 1);
  int k;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    k = (int)lc_check_int(L, 2);
  } else if (lua_istable(L, 2) && !lc_test_tensor(L, 2)) {
    /* a normalized_shape: the trailing dimensions of x */
    int64_t shape[CELL_MAX_DIMS];
    k = lc_check_shape(L, 2, shape, NULL);
    if (k > cell_tensor_ndim(x) || !lc_shape_equal(k, shape, k, cell_tensor_shape(x) + cell_tensor_ndim(x) - k)) {
      char b1[256], b2[256];
      return lc_argerror(L, 2,
                         "ValueError: layer_norm: normalized_shape %s does not match the last "
                         "dimensions of the input of shape %s",
                         cell_shape_str(k, shape, b1, sizeof b1),
                         cell_shape_str(cell_tensor_ndim(x), cell_tensor_shape(x), b2, sizeof b2));
    }
  } else {
    return lc_argerror(L, 2,
                       "TypeError: layer_norm: expected the number of normalized dimensions or "
                       "the normalized shape, got %s",
                       lc_test_tensor(L, 2) ? "Tensor" : luaL_typename(L, 2));
  }
  cell_tensor *w = opt_tensor(L, 3, 3, op, "weight");
  cell_tensor *b = opt_tensor(L, 4, 4, op, "bias");
  double eps = 1e-5;
  if (!lua_isnoneornil(L, 5)) {
    lua_pushvalue(L, 5);
    eps = top_number(L, 5, op, "eps");
    lua_pop(L, 1);
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_layer_norm(x, k, w, b, eps, out));
}

static int nn_dense(lua_State *L) {
  cell_tensor *x = lc_check_tensor(L, 1), *w = lc_check_tensor(L, 2);
  cell_tensor *b = opt_tensor(L, 3, 3, "dense", "bias");
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_dense(x, w, b, out));
}

/* --- dropout, embedding ------------------------------------------------------------------- */

/* Identity (not training, or p == 0) returns x itself. */
static int nn_dropout(lua_State *L) {
  const char *op = "dropout";
  cell_tensor *x = lc_check_tensor(L, 1);
  double p = 0.5;
  int training = 1;
  if (!lua_isnoneornil(L, 2)) {
    lua_pushvalue(L, 2);
    p = top_number(L, 2, op, "p");
    lua_pop(L, 1);
  }
  if (!lua_isnoneornil(L, 3)) {
    lua_pushvalue(L, 3);
    training = top_boolean(L, 3, op, "training");
    lua_pop(L, 1);
  }
  cell_tensor **out = lc_newtensor(L);
  cell_generator *prev = lc_gen_enter(L);
  cell_status s = cell_op_dropout(x, p, training, out);
  lc_gen_leave(prev);
  if (s != CELL_OK) return lc_raise(L);
  if (*out == x) {
    cell_tensor_release(x);
    *out = NULL;
    lua_pushvalue(L, 1);
    return 1;
  }
  return lc_finish(L, CELL_OK);
}

static int nn_embedding(lua_State *L) {
  static const char *const keys[] = {"padding_idx", NULL};
  cell_tensor *ids = lc_check_tensor(L, 1), *w = lc_check_tensor(L, 2);
  int opts = lc_options(L, 3, "embedding", keys);
  int has_padding = lc_field(L, opts, "padding_idx");
  int64_t padding = has_padding ? top_integer(L, 3, "embedding", "padding_idx") : 0;
  lua_pop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_embedding(ids, w, has_padding, padding, 1, out));
}

/* --- losses ---------------------------------------------------------------------------------- */

/* weight and ignore_index of cross_entropy / nll_loss; ignore_index
 * defaults to -100, as MindSpore and PyTorch (never a class id 1..C). */
static void class_options(lua_State *L, int opts, const char *op, cell_tensor **weight,
                          int *has_ignore, int64_t *ignore) {
  *weight = NULL;
  if (lc_field(L, opts, "weight")) *weight = opt_tensor(L, opts, lua_gettop(L), op, "weight");
  lua_pop(L, 1);
  *has_ignore = 1;
  *ignore = lc_field(L, opts, "ignore_index") ? top_integer(L, opts, op, "ignore_index") : -100;
  lua_pop(L, 1);
}

static int nn_cross_entropy(lua_State *L) {
  static const char *const keys[] = {"reduction", "weight", "ignore_index", "label_smoothing",
                                     NULL};
  const char *op = "cross_entropy";
  cell_tensor *x = lc_check_tensor(L, 1), *t = lc_check_tensor(L, 2), *weight;
  cell_reduction red;
  int opts = loss_options(L, 3, op, keys, &red), has_ignore;
  int64_t ignore;
  class_options(L, opts, op, &weight, &has_ignore, &ignore);
  double ls = 0;
  if (lc_field(L, opts, "label_smoothing")) ls = top_number(L, opts, op, "label_smoothing");
  lua_pop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_cross_entropy(x, t, weight, has_ignore, ignore, ls, red, 1, out));
}

static int nn_nll_loss(lua_State *L) {
  static const char *const keys[] = {"reduction", "weight", "ignore_index", NULL};
  const char *op = "nll_loss";
  cell_tensor *x = lc_check_tensor(L, 1), *t = lc_check_tensor(L, 2), *weight;
  cell_reduction red;
  int opts = loss_options(L, 3, op, keys, &red), has_ignore;
  int64_t ignore;
  class_options(L, opts, op, &weight, &has_ignore, &ignore);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_nll_loss(x, t, weight, has_ignore, ignore, red, 1, out));
}

static int pointwise(lua_State *L, int l1) {
  static const char *const keys[] = {"reduction", NULL};
  cell_tensor *x = lc_check_tensor(L, 1), *y = lc_check_tensor(L, 2);
  cell_reduction red;
  loss_options(L, 3, l1 ? "l1_loss" : "mse_loss", keys, &red);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, l1 ? cell_op_l1_loss(x, y, red, out) : cell_op_mse_loss(x, y, red, out));
}

static int nn_mse_loss(lua_State *L) { return pointwise(L, 0); }
static int nn_l1_loss(lua_State *L) { return pointwise(L, 1); }

static int nn_bce_with_logits(lua_State *L) {
  static const char *const keys[] = {"reduction", "weight", "pos_weight", NULL};
  const char *op = "bce_with_logits";
  cell_tensor *x = lc_check_tensor(L, 1), *t = lc_check_tensor(L, 2), *w = NULL, *pw = NULL;
  cell_reduction red;
  int opts = loss_options(L, 3, op, keys, &red);
  if (lc_field(L, opts, "weight")) w = opt_tensor(L, opts, lua_gettop(L), op, "weight");
  lua_pop(L, 1);
  if (lc_field(L, opts, "pos_weight")) pw = opt_tensor(L, opts, lua_gettop(L), op, "pos_weight");
  lua_pop(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_bce_with_logits(x, t, w, pw, red, out));
}

static const luaL_Reg nn_funcs[] = {{"softplus", nn_softplus}, {"softmax", nn_softmax},
                                    {"log_softmax", nn_log_softmax},
                                    {"batch_norm", nn_batch_norm},
                                    {"layer_norm", nn_layer_norm},
                                    {"dense", nn_dense},
                                    {"dropout", nn_dropout},
                                    {"embedding", nn_embedding},
                                    {"cross_entropy", nn_cross_entropy},
                                    {"nll_loss", nn_nll_loss},
                                    {"mse_loss", nn_mse_loss},
                                    {"l1_loss", nn_l1_loss},
                                    {"bce_with_logits", nn_bce_with_logits},
                                    {NULL, NULL}};

void lc_register_nn(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, nn_funcs); }
