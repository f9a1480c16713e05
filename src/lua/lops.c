/* lops.c - tensor methods that call engine ops: elementwise, reductions,
 * linear algebra, indexing ops and in-place forms. */
#include "lcell.h"
#include <math.h>
#include <string.h>

/* --- binary ----------------------------------------------------------------- */

/* t:op(other) where other is a tensor or a number; as a function of
 * cell.ops the number may come first (MindSpore's ops.sub(1, x)). */
/* A value past the two operands (a:add(b, 2)) would be dropped without a
 * word: alpha is a keyword ({alpha = 2}), as in MindSpore and PyTorch. */
static void no_third(lua_State *L, cell_binop op) {
  for (int i = 3; i <= lua_gettop(L); i++) /* lc_argerror names the function */
    if (!lua_isnil(L, i))
      lc_argerror(L, i, "TypeError: expected one operand besides the tensor, but got a %s after it%s",
                  luaL_typename(L, i), op == CELL_OP_ADD || op == CELL_OP_SUB ? " (a scale is {alpha = ...})" : "");
}

static int binary(lua_State *L, cell_binop op) {
  no_third(L, op);
  cell_tensor *a = lc_test_tensor(L, 1), *b = lc_test_tensor(L, 2);
  cell_tensor **out;
  if (!a && b && (lua_type(L, 1) == LUA_TNUMBER || lua_isboolean(L, 1))) {
    double v = lua_isboolean(L, 1) ? lua_toboolean(L, 1) : lua_tonumber(L, 1);
    bool fl = lua_type(L, 1) == LUA_TNUMBER && lc_number_is_float(L, 1);
    out = lc_newtensor(L);
    return lc_finish(L, cell_op_binary_scalar(op, b, v, fl, 1, out));
  }
  a = lc_check_tensor(L, 1);
  if (b) {
    out = lc_newtensor(L);
    return lc_finish(L, cell_op_binary(op, a, b, out));
  }
  if (lua_type(L, 2) != LUA_TNUMBER && !lua_isboolean(L, 2))
    return lc_argerror(L, 2, "TypeError: expected a Tensor or a number, got %s", luaL_typename(L, 2));
  double v = lua_isboolean(L, 2) ? lua_toboolean(L, 2) : lua_tonumber(L, 2);
  bool fl = lua_type(L, 2) == LUA_TNUMBER && lc_number_is_float(L, 2);
  out = lc_newtensor(L);
  return lc_finish(L, cell_op_binary_scalar(op, a, v, fl, 0, out));
}

/* t:op_(other): in place, returns t. */
static int binary_(lua_State *L, cell_binop op) {
  no_third(L, op);
  cell_tensor *a = lc_check_tensor(L, 1), *b = lc_test_tensor(L, 2);
  cell_status s;
  if (b) {
    s = cell_op_binary_(op, a, b);
  } else {
    if (lua_type(L, 2) != LUA_TNUMBER && !lua_isboolean(L, 2))
      return lc_argerror(L, 2, "TypeError: expected a Tensor or a number, got %s",
                         luaL_typename(L, 2));
    double v = lua_isboolean(L, 2) ? lua_toboolean(L, 2) : lua_tonumber(L, 2);
    s = cell_op_binary_scalar_(op, a, v, lua_type(L, 2) == LUA_TNUMBER && lc_number_is_float(L, 2));
  }
  if (s != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

#define BINARY(name, OP)                                              \
  static int tensor_##name(lua_State *L) { return binary(L, OP); }   \
  static int tensor_##name##_(lua_State *L) { return binary_(L, OP); }
/* add / sub with {alpha =} (PyTorch's and MindSpore's mint): t op alpha * other. */
static int add_sub(lua_State *L, cell_binop op) {
  if (!lua_istable(L, 3) || lc_test_tensor(L, 3)) return binary(L, op);
  static const char *const keys[] = {"alpha", NULL};
  int opts = lc_options(L, 3, cell_binop_name(op), keys);
  double alpha = 1;
  bool fl = false;
  if (lc_field(L, opts, "alpha")) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      return lc_argerror(L, 3, "TypeError: %s: alpha must be a number, got %s", cell_binop_name(op),
                         luaL_typename(L, -1));
    alpha = lua_tonumber(L, -1);
    fl = lc_number_is_float(L, lua_gettop(L));
  }
  lua_pop(L, 1);
  lua_settop(L, 2);
  if (alpha == 1) return binary(L, op);
  cell_tensor *a = lc_check_tensor(L, 1), *b = lc_test_tensor(L, 2);
  if (!b) {
    if (lua_type(L, 2) != LUA_TNUMBER)
      return lc_argerror(L, 2, "TypeError: expected a Tensor or a number, got %s", luaL_typename(L, 2));
    lua_pushnumber(L, lua_tonumber(L, 2) * alpha);
    lua_replace(L, 2);
    return binary(L, op);
  }
  cell_tensor **out = lc_newtensor(L);
  cell_tensor *scaled = NULL;
  cell_status s = cell_op_binary_scalar(CELL_OP_MUL, b, alpha, fl, 0, &scaled);
  if (s == CELL_OK) s = cell_op_binary(op, a, scaled, out);
  cell_tensor_release(scaled);
  return lc_finish(L, s);
}
static int tensor_add(lua_State *L) { return add_sub(L, CELL_OP_ADD); }
static int tensor_add_(lua_State *L) { return binary_(L, CELL_OP_ADD); }
static int tensor_sub(lua_State *L) { return add_sub(L, CELL_OP_SUB); }
static int tensor_sub_(lua_State *L) { return binary_(L, CELL_OP_SUB); }
BINARY(mul, CELL_OP_MUL)
static int tensor_div_(lua_State *L) { return binary_(L, CELL_OP_DIV); }
BINARY(pow, CELL_OP_POW)
BINARY(maximum, CELL_OP_MAXIMUM)
BINARY(minimum, CELL_OP_MINIMUM)
BINARY(eq, CELL_OP_EQ)
BINARY(ne, CELL_OP_NE)
BINARY(lt, CELL_OP_LT)
BINARY(le, CELL_OP_LE)
BINARY(gt, CELL_OP_GT)
BINARY(ge, CELL_OP_GE)
BINARY(logical_and, CELL_OP_LOGICAL_AND)
BINARY(logical_or, CELL_OP_LOGICAL_OR)
/* issue 13's elementwise math */
BINARY(atan2, CELL_OP_ATAN2)
BINARY(remainder, CELL_OP_REMAINDER)
BINARY(fmod, CELL_OP_FMOD)
BINARY(floor_divide, CELL_OP_FLOOR_DIVIDE)
BINARY(logical_xor, CELL_OP_LOGICAL_XOR)

/* t:round([decimals = 0] | {decimals =}): halves to even; with decimals,
 * as PyTorch: round(t * 10^d) / 10^d, or for d < 0 round(t / 10^-d) * 10^-d.
 * Integers are returned as they are (a copy). */
static int tensor_round(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  lua_Integer d = 0;
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_getfield(L, 2, "decimals");
    lua_replace(L, 2);
  }
  if (!lua_isnoneornil(L, 2)) d = lc_check_int(L, 2);
  cell_tensor **out = lc_newtensor(L);
  if (d == 0 || !cell_dtype_is_float(cell_tensor_dtype(a)))
    return lc_finish(L, cell_op_unary(CELL_OP_ROUND, a, out));
  double p = pow(10.0, (double)(d < 0 ? -d : d));
  cell_tensor *t = NULL, *u = NULL;
  cell_status s = cell_op_binary_scalar(d > 0 ? CELL_OP_MUL : CELL_OP_DIV, a, p, 1, 0, &t);
  if (s == CELL_OK) s = cell_op_unary(CELL_OP_ROUND, t, &u);
  if (s == CELL_OK) s = cell_op_binary_scalar(d > 0 ? CELL_OP_DIV : CELL_OP_MUL, u, p, 1, 0, out);
  cell_tensor_release(t);
  cell_tensor_release(u);
  return lc_finish(L, s);
}

/* t / other rounded toward zero: for floats ceil or floor of the quotient by
 * its sign; for integers sign(t) sign(other) floor_divide(|t|, |other|),
 * exact and, as floor_divide, a ValueError for a zero divisor. */
static cell_status div_trunc(cell_tensor *a, cell_tensor *b, double v, bool fl, cell_tensor **out) {
  cell_dtype rt = b ? cell_dtype_promote(cell_tensor_dtype(a), cell_tensor_dtype(b))
                    : cell_dtype_promote_scalar(cell_tensor_dtype(a), fl);
  cell_tensor *t = NULL, *u = NULL, *w = NULL, *x = NULL;
  cell_status s;
  if (cell_dtype_is_float(rt)) {
    s = b ? cell_op_binary(CELL_OP_DIV, a, b, &t) : cell_op_binary_scalar(CELL_OP_DIV, a, v, fl, 0, &t);
    if (s == CELL_OK) s = cell_op_binary_scalar(CELL_OP_LT, t, 0, 0, 0, &u);
    if (s == CELL_OK) s = cell_op_unary(CELL_OP_CEIL, t, &w);
    if (s == CELL_OK) s = cell_op_unary(CELL_OP_FLOOR, t, &x);
    if (s == CELL_OK) s = cell_op_where(u, w, x, out);
  } else {
    cell_tensor *sa = NULL, *sb = NULL;
    s = cell_op_unary(CELL_OP_ABS, a, &t);
    if (s == CELL_OK && b) s = cell_op_unary(CELL_OP_ABS, b, &u);
    if (s == CELL_OK)
      s = b ? cell_op_binary(CELL_OP_FLOOR_DIVIDE, t, u, &w)
            : cell_op_binary_scalar(CELL_OP_FLOOR_DIVIDE, t, fabs(v), 0, 0, &w);
    if (s == CELL_OK) s = cell_op_unary(CELL_OP_SIGN, a, &sa);
    if (s == CELL_OK) s = cell_op_binary(CELL_OP_MUL, w, sa, &x);
    if (s == CELL_OK && b) s = cell_op_unary(CELL_OP_SIGN, b, &sb);
    if (s == CELL_OK)
      s = b ? cell_op_binary(CELL_OP_MUL, x, sb, out) : cell_op_binary_scalar(CELL_OP_MUL, x, v < 0 ? -1 : 1, 0, 0, out);
    cell_tensor_release(sa);
    cell_tensor_release(sb);
  }
  cell_tensor_release(t);
  cell_tensor_release(u);
  cell_tensor_release(w);
  cell_tensor_release(x);
  return s;
}

/* t:div(other [, rounding_mode | {rounding_mode =}]): true division; with
 * "floor" floor_divide, with "trunc" rounded toward zero (MindSpore's and
 * PyTorch's rounding_mode; nil is true division). */
static int tensor_div(lua_State *L) {
  int mode = 0; /* 0 true, 1 floor, 2 trunc */
  if (lua_type(L, 3) == LUA_TTABLE) {
    lua_getfield(L, 3, "rounding_mode");
    lua_replace(L, 3);
  }
  if (!lua_isnoneornil(L, 3)) {
    const char *m = lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : NULL;
    if (m && strcmp(m, "floor") == 0) mode = 1;
    else if (m && strcmp(m, "trunc") == 0) mode = 2;
    else
      return lc_argerror(L, 3, "ValueError: div: rounding_mode must be nil, \"floor\" or \"trunc\", got %s",
                         m ? m : luaL_typename(L, 3));
  }
  lua_settop(L, 2);
  if (mode == 0) return binary(L, CELL_OP_DIV);
  if (mode == 1) return binary(L, CELL_OP_FLOOR_DIVIDE);
  cell_tensor *a = lc_check_tensor(L, 1), *b = lc_test_tensor(L, 2);
  if (!b && lua_type(L, 2) != LUA_TNUMBER)
    return lc_argerror(L, 2, "TypeError: expected a Tensor or a number, got %s", luaL_typename(L, 2));
  double v = b ? 0 : lua_tonumber(L, 2);
  bool fl = !b && lc_number_is_float(L, 2);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, div_trunc(a, b, v, fl, out));
}

/* --- unary ------------------------------------------------------------------- */

static int unary(lua_State *L, cell_unop op) {
  cell_tensor *a = lc_check_tensor(L, 1);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_unary(op, a, out));
}

static int unary_(lua_State *L, cell_unop op) {
  if (cell_op_unary_(op, lc_check_tensor(L, 1)) != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

#define UNARY(name, OP)                                              \
  static int tensor_##name(lua_State *L) { return unary(L, OP); }   \
  static int tensor_##name##_(lua_State *L) { return unary_(L, OP); }
UNARY(abs, CELL_OP_ABS)
UNARY(neg, CELL_OP_NEG)
UNARY(exp, CELL_OP_EXP)
UNARY(log, CELL_OP_LOG)
UNARY(log1p, CELL_OP_LOG1P)
UNARY(sqrt, CELL_OP_SQRT)
UNARY(rsqrt, CELL_OP_RSQRT)
UNARY(sin, CELL_OP_SIN)
UNARY(cos, CELL_OP_COS)
UNARY(tanh, CELL_OP_TANH)
UNARY(sigmoid, CELL_OP_SIGMOID)
UNARY(relu, CELL_OP_RELU)
UNARY(gelu, CELL_OP_GELU)
UNARY(silu, CELL_OP_SILU)
UNARY(floor, CELL_OP_FLOOR)
UNARY(ceil, CELL_OP_CEIL)
static int tensor_round_(lua_State *L) { return unary_(L, CELL_OP_ROUND); }
UNARY(sign, CELL_OP_SIGN)
UNARY(logical_not, CELL_OP_LOGICAL_NOT)
/* issue 13's elementwise math */
UNARY(erf, CELL_OP_ERF)
UNARY(erfc, CELL_OP_ERFC)
UNARY(tan, CELL_OP_TAN)
UNARY(atan, CELL_OP_ATAN)
UNARY(asin, CELL_OP_ASIN)
UNARY(acos, CELL_OP_ACOS)
UNARY(sinh, CELL_OP_SINH)
UNARY(cosh, CELL_OP_COSH)
UNARY(log2, CELL_OP_LOG2)
UNARY(log10, CELL_OP_LOG10)
UNARY(exp2, CELL_OP_EXP2)
UNARY(expm1, CELL_OP_EXPM1)
UNARY(square, CELL_OP_SQUARE)
UNARY(reciprocal, CELL_OP_RECIPROCAL)
static int tensor_isnan(lua_State *L) { return unary(L, CELL_OP_ISNAN); }
static int tensor_isinf(lua_State *L) { return unary(L, CELL_OP_ISINF); }
static int tensor_isfinite(lua_State *L) { return unary(L, CELL_OP_ISFINITE); }

/* Replace self's contents with r (a result of self's shape and dtype): the
 * in-place form of an op computed out of place. Pops r. */
static int assign_result(lua_State *L, const char *op, cell_tensor *self, int r_idx) {
  cell_tensor *r = lc_check_tensor(L, r_idx);
  int nd = cell_tensor_ndim(self);
  bool same = cell_tensor_ndim(r) == nd;
  for (int d = 0; same && d < nd; d++) same = cell_tensor_dim(r, d) == cell_tensor_dim(self, d);
  if (!same)
    return luaL_error(L, "ValueError: %s_: the result's shape differs from the shape of the tensor "
                      "updated in place (the other operands must broadcast to it)", op);
  if (cell_tensor_copy_(self, r) != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

/* nan_to_num([nan [, posinf [, neginf]]]) or nan_to_num{nan =, posinf =, neginf =}:
 * nil (or absent) keeps the default, passed to the engine as NaN. */
static void nan_to_num_args(lua_State *L, double v[3]) {
  static const char *const keys[] = {"nan", "posinf", "neginf", NULL};
  for (int k = 0; k < 3; k++) v[k] = NAN;
  if (lua_istable(L, 2) && !lc_test_tensor(L, 2)) {
    int opts = lc_options(L, 2, "nan_to_num", keys);
    for (int k = 0; k < 3; k++) {
      if (lc_field(L, opts, keys[k])) {
        if (lua_type(L, -1) != LUA_TNUMBER)
          lc_argerror(L, 2, "TypeError: nan_to_num: %s must be a number, got %s", keys[k],
                      luaL_typename(L, -1));
        v[k] = lua_tonumber(L, -1);
      }
      lua_pop(L, 1);
    }
    return;
  }
  for (int k = 0; k < 3; k++) {
    if (lua_isnoneornil(L, 2 + k)) continue;
    if (lua_type(L, 2 + k) != LUA_TNUMBER)
      lc_argerror(L, 2 + k, "TypeError: nan_to_num: %s must be a number or nil, got %s", keys[k],
                  luaL_typename(L, 2 + k));
    v[k] = lua_tonumber(L, 2 + k);
  }
}

static int tensor_nan_to_num(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  double v[3];
  nan_to_num_args(L, v);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_nan_to_num(a, v[0], v[1], v[2], out));
}

static int tensor_nan_to_num_(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  double v[3];
  nan_to_num_args(L, v);
  cell_tensor **out = lc_newtensor(L);
  lc_finish(L, cell_op_nan_to_num(a, v[0], v[1], v[2], out));
  return assign_result(L, "nan_to_num", a, lua_gettop(L));
}

/* lerp(end, weight): weight a Tensor or a number. */
static cell_status lerp_call(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1), *e = lc_check_tensor(L, 2), *w = lc_test_tensor(L, 3);
  double wv = 0;
  if (!w) {
    if (lua_type(L, 3) != LUA_TNUMBER)
      return lc_argerror(L, 3, "TypeError: lerp: weight must be a Tensor or a number, got %s",
                         luaL_typename(L, 3));
    wv = lua_tonumber(L, 3);
  }
  cell_tensor **out = lc_newtensor(L);
  return cell_op_lerp(a, e, w, wv, out);
}

static int tensor_lerp(lua_State *L) { return lc_finish(L, lerp_call(L)); }

static int tensor_lerp_(lua_State *L) {
  lc_finish(L, lerp_call(L));
  return assign_result(L, "lerp", lc_check_tensor(L, 1), lua_gettop(L));
}

/* t:softmax([dim = -1]) and t:log_softmax([dim = -1]): cell.ops.softmax's
 * kernels as methods. */
static int softmax_method(lua_State *L, int log_) {
  cell_tensor *x = lc_check_tensor(L, 1);
  int nd = cell_tensor_ndim(x);
  int dim = lua_isnoneornil(L, 2) ? (nd ? nd - 1 : 0) : lc_check_dim(L, 2, nd, 0);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, log_ ? cell_op_log_softmax(x, dim, out) : cell_op_softmax(x, dim, out));
}
static int tensor_softmax(lua_State *L) { return softmax_method(L, 0); }
static int tensor_log_softmax(lua_State *L) { return softmax_method(L, 1); }

static double opt_number(lua_State *L, int i, int *has) {
  *has = !lua_isnoneornil(L, i);
  if (*has && lua_type(L, i) != LUA_TNUMBER)
    lc_argerror(L, i, "TypeError: expected a number or nil, got %s", luaL_typename(L, i));
  return *has ? lua_tonumber(L, i) : 0;
}

static int tensor_clamp(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int has_lo, has_hi;
  double lo = opt_number(L, 2, &has_lo), hi = opt_number(L, 3, &has_hi);
  cell_tensor **out = lc_newtensor(L);
  cell_dtype dt = cell_tensor_dtype(a);
  /* A fractional bound makes an integer tensor's result float32, as a float
   * scalar promotes it in PyTorch. */
  if (dt != CELL_DTYPE_BOOL && !cell_dtype_is_float(dt) &&
      ((has_lo && lc_number_is_float(L, 2)) || (has_hi && lc_number_is_float(L, 3)))) {
    cell_tensor *f = NULL;
    cell_status s = cell_tensor_astype(a, CELL_DTYPE_F32, &f);
    if (s == CELL_OK) s = cell_op_clamp(f, has_lo, lo, has_hi, hi, out);
    cell_tensor_release(f);
    return lc_finish(L, s);
  }
  return lc_finish(L, cell_op_clamp(a, has_lo, lo, has_hi, hi, out));
}

/* masked_fill with a 0-d Tensor value (MindSpore and PyTorch take one): the
 * masked positions of masked_fill(a, m, 0) replaced by the value, converted
 * to a's dtype; the value gets the gradient of the positions it fills. */
static int masked_fill_tensor(lua_State *L, cell_tensor *a, cell_tensor *m, cell_tensor *v) {
  if (cell_tensor_ndim(v) != 0) {
    char sb[96];
    return lc_argerror(L, 3, "ValueError: masked_fill: the value must be a number or a 0-d Tensor, "
                             "got a Tensor of shape %s",
                       cell_shape_str(cell_tensor_ndim(v), cell_tensor_shape(v), sb, sizeof sb));
  }
  cell_tensor **out = lc_newtensor(L);
  cell_tensor *t = NULL, *c = NULL;
  cell_status s = cell_op_masked_fill(a, m, 0.0, &t);
  if (s == CELL_OK) s = cell_tensor_astype(v, cell_tensor_dtype(a), &c);
  if (s == CELL_OK) s = cell_op_where(m, c, t, out);
  cell_tensor_release(t);
  cell_tensor_release(c);
  return lc_finish(L, s);
}

static int tensor_masked_fill(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1), *m = lc_check_tensor(L, 2);
  cell_tensor *vt = lc_test_tensor(L, 3);
  if (vt) return masked_fill_tensor(L, a, m, vt);
  if (lua_type(L, 3) != LUA_TNUMBER && !lua_isboolean(L, 3))
    return lc_argerror(L, 3, "TypeError: expected a number, got %s", luaL_typename(L, 3));
  double v = lua_isboolean(L, 3) ? lua_toboolean(L, 3) : lua_tonumber(L, 3);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_masked_fill(a, m, v, out));
}

static int tensor_copy_(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1), *b = lc_check_tensor(L, 2);
  if (cell_tensor_copy_(a, b) != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

static int tensor_fill_(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  if (lua_type(L, 2) != LUA_TNUMBER && !lua_isboolean(L, 2))
    return lc_argerror(L, 2, "TypeError: expected a number, got %s", luaL_typename(L, 2));
  double v = lua_isboolean(L, 2) ? lua_toboolean(L, 2) : lua_tonumber(L, 2);
  if (cell_tensor_fill_(a, v) != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

static int tensor_zero_(lua_State *L) {
  if (cell_tensor_fill_(lc_check_tensor(L, 1), 0) != CELL_OK) return lc_raise(L);
  lua_settop(L, 1);
  return 1;
}

/* --- reductions -------------------------------------------------------------- */

typedef struct {
  int ndims;
  int dims[CELL_MAX_DIMS];
  int keepdim;
  lua_Integer ddof;
  double p;
  int has_dtype; /* dtype: the input is converted to it first (sum, mean, prod) */
  cell_dtype dtype;
  int next; /* first argument after the ones parsed */
} red_args;

/* The options of the reductions: PyTorch's names and MindSpore's. */
static const char *const red_keys[] = {"dim",  "axis", "keepdim",    "keep_dims", "keepdims", "ddof",
                                       "correction", "unbiased", "p", "ord", "dtype", NULL};

/* An options table: a table (not a tensor) with no sequence part and at
 * least one entry; a list {1, 2} is dimensions. */
static bool is_options(lua_State *L, int i) {
  if (!lua_istable(L, i) || lc_test_tensor(L, i) || lua_rawlen(L, i) > 0) return false;
  lua_pushnil(L);
  if (!lua_next(L, i)) return false;
  lua_pop(L, 2);
  return true;
}

/* Every key of the options table at i is one of red_keys, else a TypeError
 * naming it (a misspelt option must not be ignored). */
static void check_option_names(lua_State *L, int i) {
  lua_pushnil(L);
  while (lua_next(L, i)) {
    lua_pop(L, 1);
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (int j = 0; red_keys[j] && !known; j++) known = strcmp(k, red_keys[j]) == 0;
    }
    if (!known) {
      lua_pushvalue(L, -1);
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
      lc_argerror(L, i, "TypeError: unexpected option '%s' (the options are dim or axis, keepdim, keep_dims or "
                  "keepdims, dtype, and for var and std ddof, correction or unbiased, for norm p or ord)", k);
    }
  }
}

static void parse_dims(lua_State *L, int i, int ndim, red_args *r) {
  r->ndims = 0;
  if (lua_isnoneornil(L, i)) return;
  if (lua_type(L, i) == LUA_TNUMBER) {
    r->dims[r->ndims++] = lc_check_dim(L, i, ndim, 0);
    return;
  }
  if (!lua_istable(L, i))
    lc_argerror(L, i, "TypeError: a dimension must be a number or a table of numbers, got %s",
                luaL_typename(L, i));
  int n = (int)lua_rawlen(L, i);
  if (n > CELL_MAX_DIMS) lc_argerror(L, i, "ValueError: too many dimensions");
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, i, k + 1);
    r->dims[r->ndims++] = lc_dim_of(L, i, lc_check_item_int(L, i, -1, k + 1, "dim"), ndim, 0);
    lua_pop(L, 1);
  }
}

/* A norm's order at idx (argument arg): a number, or "fro" (Frobenius:
 * the 2-norm of the elements reduced, PyTorch's norm(p = "fro") and
 * MindSpore's ord = "fro"). */
static double norm_order(lua_State *L, int idx, int arg) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    const char *o = lua_tostring(L, idx);
    if (strcmp(o, "fro") == 0) return 2;
    if (strcmp(o, "nuc") == 0)
      lc_argerror(L, arg, "NotImplementedError: norm: the nuclear norm ('nuc') is not supported; p is a "
                  "number or 'fro'");
    lc_argerror(L, arg, "ValueError: norm: the only string order is 'fro', but got '%s'", o);
  }
  if (lua_type(L, idx) != LUA_TNUMBER)
    lc_argerror(L, arg, "TypeError: norm: the order p must be a number or 'fro', got %s",
                luaL_typename(L, idx));
  return lua_tonumber(L, idx);
}

static void parse_options(lua_State *L, int i, int ndim, red_args *r) {
  check_option_names(L, i);
  lua_getfield(L, i, "dim");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, i, "axis");
  }
  if (!lua_isnil(L, -1)) parse_dims(L, lua_gettop(L), ndim, r);
  lua_pop(L, 1);
  static const char *const keep_keys[] = {"keepdim", "keep_dims", "keepdims"};
  for (int k = 0; k < 3; k++) {
    lua_getfield(L, i, keep_keys[k]);
    if (!lua_isnil(L, -1)) {
      if (!lua_isboolean(L, -1))
        lc_argerror(L, i, "TypeError: %s must be a boolean, got %s", keep_keys[k], luaL_typename(L, -1));
      r->keepdim = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
  }
  /* ddof (MindSpore's: an integer, or a boolean, true meaning 1), or
   * PyTorch's correction (an integer) or unbiased (true: 1, false: 0) */
  static const char *const ddof_keys[] = {"ddof", "correction"};
  for (int k = 0; k < 2; k++) {
    lua_getfield(L, i, ddof_keys[k]);
    if (k == 0 && lua_isboolean(L, -1)) {
      r->ddof = lua_toboolean(L, -1);
    } else if (!lua_isnil(L, -1)) {
      lua_Number dn = lua_tonumber(L, -1);
      if (lua_type(L, -1) != LUA_TNUMBER || dn != floor(dn) || fabs(dn) > 1e15)
        lc_argerror(L, i, "TypeError: %s must be an integer%s, but got %s", ddof_keys[k],
                    k == 0 ? " or a boolean" : "",
                    lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
      r->ddof = (lua_Integer)dn;
    }
    lua_pop(L, 1);
  }
  lua_getfield(L, i, "unbiased");
  if (!lua_isnil(L, -1)) {
    if (!lua_isboolean(L, -1))
      lc_argerror(L, i, "TypeError: unbiased must be a boolean, got %s", luaL_typename(L, -1));
    r->ddof = lua_toboolean(L, -1) ? 1 : 0;
  }
  lua_pop(L, 1);
  lua_getfield(L, i, "p");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_getfield(L, i, "ord");
  }
  if (!lua_isnil(L, -1)) r->p = norm_order(L, lua_gettop(L), i);
  lua_pop(L, 1);
  lua_getfield(L, i, "dtype");
  if (!lua_isnil(L, -1)) {
    r->dtype = lc_check_dtype(L, lua_gettop(L));
    r->has_dtype = 1;
  }
  lua_pop(L, 1);
}

/* (dim | dims | options) [, keepdim | options] starting at argument i. */
static void parse_reduce(lua_State *L, int i, int ndim, red_args *r) {
  r->keepdim = 0;
  if (is_options(L, i)) {
    parse_options(L, i, ndim, r);
    r->next = i + 1;
    return;
  }
  parse_dims(L, i, ndim, r);
  if (lc_is_dtype(L, i + 1)) { /* MindSpore's Tensor.sum(axis, dtype, keepdims) */
    r->dtype = lc_check_dtype(L, i + 1);
    r->has_dtype = 1;
    lua_remove(L, i + 1);
  } else if (lc_is_dtype(L, i + 2)) { /* PyTorch's sum(dim, keepdim, dtype) */
    r->dtype = lc_check_dtype(L, i + 2);
    r->has_dtype = 1;
  }
  if (lua_isboolean(L, i + 1)) r->keepdim = lua_toboolean(L, i + 1);
  else if (is_options(L, i + 1)) parse_options(L, i + 1, ndim, r);
  else if (!lua_isnoneornil(L, i + 1))
    lc_argerror(L, i + 1, "TypeError: keepdim must be a boolean, got %s", luaL_typename(L, i + 1));
  r->next = i + 2;
}

static int reduce(lua_State *L, cell_redop op) {
  cell_tensor *a = lc_check_tensor(L, 1);
  red_args r = {0};
  parse_reduce(L, 2, cell_tensor_ndim(a), &r);
  cell_tensor **out = lc_newtensor(L);
  if (!r.has_dtype) return lc_finish(L, cell_op_reduce(op, a, r.ndims, r.dims, r.keepdim, out));
  /* dtype: as MindSpore and PyTorch, the input is converted first, and the
   * result has that dtype (an int32 sum stays int32) */
  cell_tensor *c = NULL, *v = NULL;
  cell_status s = cell_tensor_astype(a, r.dtype, &c);
  if (s == CELL_OK) s = cell_op_reduce(op, c, r.ndims, r.dims, r.keepdim, &v);
  if (s == CELL_OK) s = cell_tensor_astype(v, r.dtype, out);
  cell_tensor_release(c);
  cell_tensor_release(v);
  return lc_finish(L, s);
}

static int tensor_sum(lua_State *L) { return reduce(L, CELL_RED_SUM); }
static int tensor_mean(lua_State *L) { return reduce(L, CELL_RED_MEAN); }
static int tensor_prod(lua_State *L) { return reduce(L, CELL_RED_PROD); }
static int tensor_all(lua_State *L) { return reduce(L, CELL_RED_ALL); }
static int tensor_any(lua_State *L) { return reduce(L, CELL_RED_ANY); }

/* max()/min() of everything, or (values, indices) along one dimension. */
static int extreme(lua_State *L, int is_min) {
  cell_tensor *a = lc_check_tensor(L, 1);
  red_args r = {0};
  parse_reduce(L, 2, cell_tensor_ndim(a), &r);
  if (r.ndims == 0) {
    cell_tensor **out = lc_newtensor(L);
    return lc_finish(L, cell_op_reduce(is_min ? CELL_RED_MIN : CELL_RED_MAX, a, 0, NULL, r.keepdim, out));
  }
  if (r.ndims != 1)
    return lc_argerror(L, 2, "ValueError: %s along several dimensions is not supported; give one",
                       is_min ? "min" : "max");
  cell_tensor **vals = lc_newtensor(L), **idx = lc_newtensor(L);
  if (cell_op_max_dim(a, r.dims[0], r.keepdim, is_min, 1, vals, idx) != CELL_OK) return lc_raise(L);
  lc_finish(L, CELL_OK);
  return 2;
}
static int tensor_max(lua_State *L) { return extreme(L, 0); }
static int tensor_min(lua_State *L) { return extreme(L, 1); }

static int arg_extreme(lua_State *L, int is_min) {
  cell_tensor *a = lc_check_tensor(L, 1);
  red_args r = {0};
  parse_reduce(L, 2, cell_tensor_ndim(a), &r);
  if (r.ndims > 1) return lc_argerror(L, 2, "ValueError: give one dimension or none");
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_argmax(a, r.ndims ? r.dims[0] : -1, r.keepdim, is_min, 1, out));
}
static int tensor_argmax(lua_State *L) { return arg_extreme(L, 0); }
static int tensor_argmin(lua_State *L) { return arg_extreme(L, 1); }

static int variance(lua_State *L, int take_sqrt) {
  cell_tensor *a = lc_check_tensor(L, 1);
  red_args r = {0};
  /* MindSpore's positional form var(axis, ddof, keepdims): a number after
   * the dimensions is ddof, and so is a boolean followed by keepdims (true
   * is 1: MindSpore's bool ddof, PyTorch's var(dim, unbiased, keepdim));
   * the rest parses as (dims, keepdim | options), so var(dim, true) alone
   * keeps its dimension. */
  if (lua_type(L, 3) == LUA_TNUMBER && !is_options(L, 2)) {
    r.ddof = lc_check_int(L, 3);
    lua_remove(L, 3);
  } else if (lua_isboolean(L, 3) && lua_isboolean(L, 4) && !is_options(L, 2)) {
    r.ddof = lua_toboolean(L, 3);
    lua_remove(L, 3);
  }
  parse_reduce(L, 2, cell_tensor_ndim(a), &r);
  if (r.ddof < 0) return lc_argerror(L, 2, "ValueError: ddof must be >= 0, got %lld", (long long)r.ddof);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_var(a, r.ndims, r.dims, (int)r.ddof, r.keepdim, take_sqrt, out));
}
static int tensor_var(lua_State *L) { return variance(L, 0); }
static int tensor_std(lua_State *L) { return variance(L, 1); }

/* PyTorch's two norms that are not p-norms: p = 0 counts the non-zero
 * elements, p = -inf is the smallest |x|; in a's float dtype (float32 for
 * integers), as the other norms. */
static int norm_zero_or_min(lua_State *L, const cell_tensor *a, const red_args *r) {
  cell_tensor **out = lc_newtensor(L);
  cell_dtype rd = cell_dtype_is_float(cell_tensor_dtype(a)) ? cell_tensor_dtype(a) : CELL_DTYPE_F32;
  cell_tensor *t = NULL, *v = NULL;
  cell_status s = r->p == 0 ? cell_op_binary_scalar(CELL_OP_NE, a, 0, 0, 0, &t)
                            : cell_op_unary(CELL_OP_ABS, a, &t);
  if (s == CELL_OK)
    s = cell_op_reduce(r->p == 0 ? CELL_RED_SUM : CELL_RED_MIN, t, r->ndims, r->dims, r->keepdim, &v);
  cell_tensor_release(t);
  if (s == CELL_OK) s = cell_tensor_astype(v, rd, out);
  cell_tensor_release(v);
  return lc_finish(L, s);
}

/* norm([p [, dim [, keepdim]]]) or norm{p =, dim =, keepdim =}. */
static int tensor_norm(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  red_args r = {0};
  r.p = 2;
  if (is_options(L, 2)) {
    parse_reduce(L, 2, cell_tensor_ndim(a), &r);
  } else {
    if (!lua_isnoneornil(L, 2)) r.p = norm_order(L, 2, 2);
    parse_reduce(L, 3, cell_tensor_ndim(a), &r);
  }
  if (r.p == 0 || r.p == -INFINITY) return norm_zero_or_min(L, a, &r);
  if (isnan(r.p)) return lc_argerror(L, 2, "ValueError: norm order p must be a number, got nan");
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_norm(a, r.p, r.ndims, r.dims, r.keepdim, out));
}

/* cumsum([dim] [, dtype | {dtype =}]): with dtype the input is converted first
 * (MindSpore's ops.cumsum(x, axis, dtype) and PyTorch's). Without dim, over
 * the flattened tensor, a 1-D result (MindSpore's Tensor.cumsum(axis=None)). */
static int tensor_cumsum(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int d = 0;
  lua_settop(L, 3);
  if (lua_isnil(L, 2)) {
    cell_tensor *flat = NULL;
    if (cell_tensor_flatten(a, 0, cell_tensor_ndim(a) ? cell_tensor_ndim(a) - 1 : 0, &flat) != CELL_OK)
      return lc_raise(L);
    lc_push_owned(L, flat); /* at 4, above the arguments */
    a = flat;
  } else {
    d = lc_check_dim(L, 2, cell_tensor_ndim(a), 0);
  }
  if (lua_istable(L, 3) && !lc_test_tensor(L, 3)) {
    lua_getfield(L, 3, "dtype");
    lua_replace(L, 3);
  }
  if (lua_isnoneornil(L, 3)) {
    cell_tensor **out = lc_newtensor(L);
    return lc_finish(L, cell_op_cumsum(a, d, out));
  }
  cell_dtype dt = lc_check_dtype(L, 3);
  cell_tensor **out = lc_newtensor(L);
  cell_tensor *c = NULL, *v = NULL;
  cell_status s = cell_tensor_astype(a, dt, &c);
  if (s == CELL_OK) s = cell_op_cumsum(c, d, &v);
  if (s == CELL_OK) s = cell_tensor_astype(v, dt, out);
  cell_tensor_release(c);
  cell_tensor_release(v);
  return lc_finish(L, s);
}

/* --- linear algebra ---------------------------------------------------------- */

#define LINALG(name)                                               \
  static int tensor_##name(lua_State *L) {                         \
    cell_tensor *a = lc_check_tensor(L, 1), *b = lc_check_tensor(L, 2); \
    cell_tensor **out = lc_newtensor(L);                           \
    return lc_finish(L, cell_op_##name(a, b, out));                \
  }
LINALG(matmul)
LINALG(mm)
LINALG(bmm)
LINALG(dot)

/* --- indexing ops ----------------------------------------------------------- */

static int tensor_gather(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int d = lc_check_dim(L, 2, cell_tensor_ndim(a), 0);
  cell_tensor *idx = lc_check_tensor(L, 3);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_gather(a, d, idx, 1, out));
}

static int tensor_scatter(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int d = lc_check_dim(L, 2, cell_tensor_ndim(a), 0);
  cell_tensor *idx = lc_check_tensor(L, 3), *src = lc_check_tensor(L, 4);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_scatter(a, d, idx, src, 1, out));
}

static int tensor_index_select(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int d = lc_check_dim(L, 2, cell_tensor_ndim(a), 0);
  cell_tensor *idx = lc_check_tensor(L, 3);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_index_select(a, d, idx, 1, out));
}

static int int_list(lua_State *L, int i, int64_t *v, const char *what) {
  int n = 0;
  if (lua_istable(L, i)) {
    n = (int)lua_rawlen(L, i);
    if (n > 2 * CELL_MAX_DIMS) return lc_argerror(L, i, "ValueError: too many %s", what);
    for (int k = 0; k < n; k++) {
      lua_rawgeti(L, i, k + 1);
      v[k] = (int64_t)lc_check_item_int(L, i, -1, k + 1, what);
      lua_pop(L, 1);
    }
    return n;
  }
  for (; !lua_isnoneornil(L, i + n); n++) {
    if (n >= CELL_MAX_DIMS) return lc_argerror(L, i + n, "ValueError: too many %s", what);
    v[n] = (int64_t)lc_check_int(L, i + n);
  }
  return n;
}

static int tensor_tile(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  int64_t reps[2 * CELL_MAX_DIMS];
  int n = int_list(L, 2, reps, "repetitions");
  if (n > CELL_MAX_DIMS) return lc_argerror(L, 2, "ValueError: too many repetitions");
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_tile(a, n, reps, out));
}

static int tensor_repeat_interleave(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  lua_Integer reps = lc_check_int(L, 2);
  cell_tensor *flat = NULL;
  int d;
  if (lua_isnoneornil(L, 3)) { /* no dim: over the flattened tensor */
    if (cell_tensor_flatten(a, 0, cell_tensor_ndim(a) ? cell_tensor_ndim(a) - 1 : 0, &flat) != CELL_OK) return lc_raise(L);
    lc_push_owned(L, flat);
    a = flat;
    d = 0;
  } else {
    d = lc_check_dim(L, 3, cell_tensor_ndim(a), 0);
  }
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_repeat_interleave(a, (int64_t)reps, d, out));
}

static int tensor_pad(lua_State *L) {
  cell_tensor *a = lc_check_tensor(L, 1);
  lc_check_table(L, 2, "a table of pads");
  int64_t pads[2 * CELL_MAX_DIMS];
  int n = int_list(L, 2, pads, "pads");
  if (n % 2) return lc_argerror(L, 2, "ValueError: pads come in (before, after) pairs, got %d numbers", n);
  double v = lua_isnoneornil(L, 3) ? 0 : lc_check_number(L, 3);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_pad(a, n / 2, pads, v, out));
}

static const luaL_Reg op_methods[] = {
#define B(name) {#name, tensor_##name}, {#name "_", tensor_##name##_},
    B(add) B(sub) B(mul) B(div) B(pow) B(maximum) B(minimum) B(eq) B(ne) B(lt) B(le) B(gt)
    B(ge) B(logical_and) B(logical_or)
    B(abs) B(neg) B(exp) B(log) B(log1p) B(sqrt) B(rsqrt) B(sin) B(cos) B(tanh) B(sigmoid)
    B(relu) B(gelu) B(silu) B(floor) B(ceil) B(round) B(sign) B(logical_not)
    /* issue 13's elementwise math */
    B(erf) B(erfc) B(tan) B(atan) B(asin) B(acos) B(sinh) B(cosh) B(log2) B(log10) B(exp2)
    B(expm1) B(square) B(reciprocal) B(atan2) B(remainder) B(fmod) B(floor_divide)
    B(logical_xor) B(nan_to_num) B(lerp)
    {"isnan", tensor_isnan}, {"isinf", tensor_isinf}, {"isfinite", tensor_isfinite},
    {"softmax", tensor_softmax}, {"log_softmax", tensor_log_softmax},
#undef B
    {"clamp", tensor_clamp},
    {"masked_fill", tensor_masked_fill},
    {"copy_", tensor_copy_},
    {"fill_", tensor_fill_},
    {"zero_", tensor_zero_},
    {"sum", tensor_sum},
    {"mean", tensor_mean},
    {"prod", tensor_prod},
    {"max", tensor_max},
    {"min", tensor_min},
    {"argmax", tensor_argmax},
    {"argmin", tensor_argmin},
    {"var", tensor_var},
    {"std", tensor_std},
    {"norm", tensor_norm},
    {"all", tensor_all},
    {"any", tensor_any},
    {"cumsum", tensor_cumsum},
    {"matmul", tensor_matmul},
    {"mm", tensor_mm},
    {"bmm", tensor_bmm},
    {"dot", tensor_dot},
    {"gather", tensor_gather},
    {"scatter", tensor_scatter},
    {"index_select", tensor_index_select},
    {"tile", tensor_tile},
    {"repeat_interleave", tensor_repeat_interleave},
    {"pad", tensor_pad},
    {NULL, NULL}};

void lc_register_ops(lua_State *L, int base) { lc_setfuncs(L, base + 1, base, op_methods); }
