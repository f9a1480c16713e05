/* rules_math.c - recording wrappers and backward rules for the unary math
 * ops, clamp / where / masked_fill, the reductions (sum, mean, prod, max,
 * min; max / min along a dimension), var / std, p-norms and cumsum.
 *
 * Most rules are elementwise in the gradient, the saved input and the saved
 * output: they run as one pass of the kernel ew (src/ops/ew.c), which loads its
 * operands as doubles, so every float dtype and stride layout is served and
 * a rule makes one tensor instead of a chain of temporaries. Reductions
 * bring the gradient (and the saved result) back to the input's rank as a
 * "keep" shape (the reduced dimensions of size 1), which then broadcasts
 * over the input in that pass.
 *
 * Only floating results record; ops that give bool or integers never do.
 * An ordinary backward pass runs with grad mode off, and rules call raw
 * kernels. In a pass that creates a graph (higher-order gradients; grad
 * mode on) the rules marked twice compute with recording ops instead
 * (the *_graph functions); prod, cumsum and the inf-norm are not twice
 * differentiable here, gelu only twice. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/device.h"

/* A gradient formula in one pass: the kernel ew (src/ops/ew.c), run by
 * the device of its operands. */
static cell_status ew(ew_op op, double k0, double k1, cell_dtype dt, int ndim,
                      const int64_t *shape, const cell_tensor *a, const cell_tensor *b,
                      const cell_tensor *c, cell_tensor **out) {
  return cell_k_ew(op, k0, k1, dt, ndim, shape, a, b, c, out);
}

cell_status cell_ag_ew(int op, double k0, double k1, cell_dtype dt, int ndim, const int64_t *shape,
                       const cell_tensor *a, const cell_tensor *b, const cell_tensor *c,
                       cell_tensor **out) {
  return ew((ew_op)op, k0, k1, dt, ndim, shape, a, b, c, out);
}

/* --- shared helpers ---------------------------------------------------------------- */

/* The reduced dimensions as a bit set (ndims == 0: all of them). */
static int dims_mask(int ndim, int ndims, const int *dims) {
  if (ndims == 0) return (int)((1u << ndim) - 1u);
  unsigned m = 0;
  for (int k = 0; k < ndims; k++) m |= 1u << dims[k];
  return (int)m;
}

static bool reduced(int mask, int d) { return ((unsigned)mask >> d) & 1u; }

/* The input's shape with the reduced dimensions of size 1. */
static void keep_shape(const cell_node *n, int mask, int64_t *ks) {
  for (int d = 0; d < n->in[0].ndim; d++) ks[d] = reduced(mask, d) ? 1 : n->in[0].shape[d];
}

/* The reduced dimensions as a list, for cell_k_reduce (0 of them on a 0-D
 * input, which reduces that one element). */
static int mask_dims(const cell_node *n, int mask, int *dims) {
  int k = 0;
  for (int d = 0; d < n->in[0].ndim; d++)
    if (reduced(mask, d)) dims[k++] = d;
  return k;
}

/* How many input elements fold into each output element. */
static int64_t mask_count(const cell_node *n, int mask) {
  int64_t c = 1;
  for (int d = 0; d < n->in[0].ndim; d++)
    if (reduced(mask, d)) c *= n->in[0].shape[d];
  return c;
}

/* t (a reduction's result, with or without keepdim) in the keep shape. */
static cell_status to_keep(const cell_node *n, int mask, const cell_tensor *t, cell_tensor **out) {
  int64_t ks[CELL_MAX_DIMS];
  keep_shape(n, mask, ks);
  return cell_tensor_reshape(t, n->in[0].ndim, ks, out); /* records in a graph-making pass */
}

/* --- recording arithmetic for the rules' graph forms ------------------------------------- */

/* Whether rules are to record: grad mode is on only in a backward pass
 * that creates a graph. */
static bool graph_mode(void) { return cell_grad_is_enabled() != 0; }

static cell_status mul(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  return cell_op_binary(CELL_OP_MUL, a, b, out);
}

/* a op k (reversed: k op a). */
static cell_status scal(cell_binop op, const cell_tensor *a, double k, int reversed,
                        cell_tensor **out) {
  return cell_op_binary_scalar(op, a, k, 1, reversed, out);
}

/* *acc = *acc op b, releasing the old *acc (and b when own_b). */
static cell_status step(cell_status s, cell_binop op, cell_tensor **acc, const cell_tensor *b,
                        bool own_b) {
  cell_tensor *r = NULL;
  if (s == CELL_OK) s = cell_op_binary(op, *acc, b, &r);
  cell_tensor_release(*acc);
  *acc = r;
  if (own_b) cell_tensor_release((cell_tensor *)b);
  return s;
}

/* *acc = *acc op k. */
static cell_status step_k(cell_status s, cell_binop op, cell_tensor **acc, double k, int reversed) {
  cell_tensor *r = NULL;
  if (s == CELL_OK) s = scal(op, *acc, k, reversed, &r);
  cell_tensor_release(*acc);
  *acc = r;
  return s;
}

/* *acc = u(*acc). */
static cell_status step_u(cell_status s, cell_unop op, cell_tensor **acc) {
  cell_tensor *r = NULL;
  if (s == CELL_OK) s = cell_op_unary(op, *acc, &r);
  cell_tensor_release(*acc);
  *acc = r;
  return s;
}

/* A new reference to t (as the first value of a chain). */
static cell_tensor *ref(const cell_tensor *t) {
  cell_tensor_retain((cell_tensor *)t);
  return (cell_tensor *)t;
}

/* --- unary ops ------------------------------------------------------------------------ */

typedef enum {
  RULE_MISSING = 0, /* an op added to cell_unop without a row below */
  RULE_EW,          /* gradient from the elementwise rule ew */
  RULE_ZERO,        /* differentiable with a zero gradient (step functions) */
  RULE_NONE         /* not differentiable: no node (logical_not gives bool) */
} rule_kind;

#define SAVE_X 1 /* the rule reads the input */
#define SAVE_Y 2 /* the rule reads the output */

static const struct {
  const char *node;
  rule_kind kind;
  ew_op ew;
  int save;
} unary_rules[] = {
    [CELL_OP_ABS] = {"AbsBackward", RULE_EW, EW_ABS, SAVE_X},
    [CELL_OP_NEG] = {"NegBackward", RULE_EW, EW_NEG, 0},
    [CELL_OP_EXP] = {"ExpBackward", RULE_EW, EW_EXP, SAVE_Y},
    [CELL_OP_LOG] = {"LogBackward", RULE_EW, EW_LOG, SAVE_X},
    [CELL_OP_LOG1P] = {"Log1pBackward", RULE_EW, EW_LOG1P, SAVE_X},
    [CELL_OP_SQRT] = {"SqrtBackward", RULE_EW, EW_SQRT, SAVE_Y},
    [CELL_OP_RSQRT] = {"RsqrtBackward", RULE_EW, EW_RSQRT, SAVE_Y},
    [CELL_OP_SIN] = {"SinBackward", RULE_EW, EW_SIN, SAVE_X},
    [CELL_OP_COS] = {"CosBackward", RULE_EW, EW_COS, SAVE_X},
    [CELL_OP_TANH] = {"TanhBackward", RULE_EW, EW_TANH, SAVE_Y},
    [CELL_OP_SIGMOID] = {"SigmoidBackward", RULE_EW, EW_SIGMOID, SAVE_Y},
    [CELL_OP_RELU] = {"ReluBackward", RULE_EW, EW_RELU, SAVE_X},
    [CELL_OP_GELU] = {"GeluBackward", RULE_EW, EW_GELU, SAVE_X},
    [CELL_OP_SILU] = {"SiluBackward", RULE_EW, EW_SILU, SAVE_X},
    [CELL_OP_FLOOR] = {"FloorBackward", RULE_ZERO, EW_NONE, 0},
    [CELL_OP_CEIL] = {"CeilBackward", RULE_ZERO, EW_NONE, 0},
    [CELL_OP_ROUND] = {"RoundBackward", RULE_ZERO, EW_NONE, 0},
    [CELL_OP_SIGN] = {"SignBackward", RULE_ZERO, EW_NONE, 0},
    [CELL_OP_LOGICAL_NOT] = {NULL, RULE_NONE, EW_NONE, 0},
    [CELL_OP_ERF] = {"ErfBackward", RULE_EW, EW_ERF, SAVE_X},
    [CELL_OP_ERFC] = {"ErfcBackward", RULE_EW, EW_ERFC, SAVE_X},
    [CELL_OP_TAN] = {"TanBackward", RULE_EW, EW_TAN, SAVE_Y},
    [CELL_OP_ATAN] = {"AtanBackward", RULE_EW, EW_ATAN, SAVE_X},
    [CELL_OP_ASIN] = {"AsinBackward", RULE_EW, EW_ASIN, SAVE_X},
    [CELL_OP_ACOS] = {"AcosBackward", RULE_EW, EW_ACOS, SAVE_X},
    [CELL_OP_SINH] = {"SinhBackward", RULE_EW, EW_SINH, SAVE_X},
    [CELL_OP_COSH] = {"CoshBackward", RULE_EW, EW_COSH, SAVE_X},
    [CELL_OP_LOG2] = {"Log2Backward", RULE_EW, EW_LOG2, SAVE_X},
    [CELL_OP_LOG10] = {"Log10Backward", RULE_EW, EW_LOG10, SAVE_X},
    [CELL_OP_EXP2] = {"Exp2Backward", RULE_EW, EW_EXP2, SAVE_Y},
    [CELL_OP_EXPM1] = {"Expm1Backward", RULE_EW, EW_EXPM1, SAVE_Y},
    [CELL_OP_SQUARE] = {"SquareBackward", RULE_EW, EW_SQUARE, SAVE_X},
    [CELL_OP_RECIPROCAL] = {"ReciprocalBackward", RULE_EW, EW_RECIPROCAL, SAVE_Y},
    [CELL_OP_ISNAN] = {NULL, RULE_NONE, EW_NONE, 0},
    [CELL_OP_ISINF] = {NULL, RULE_NONE, EW_NONE, 0},
    [CELL_OP_ISFINITE] = {NULL, RULE_NONE, EW_NONE, 0},
};
_Static_assert(sizeof unary_rules / sizeof unary_rules[0] == CELL_UNOP_COUNT,
               "a backward rule (or RULE_NONE) per unary op");

typedef struct {
  cell_unop op;
} unary_args;

/* The derivative of op as recording ops (without the factor g), for a
 * graph-making pass; NULL (*d) for NEG, whose gradient is -g. */
static cell_status unary_deriv_graph(cell_unop op, const cell_tensor *x, const cell_tensor *y,
                                     cell_tensor **d) {
  cell_status s = CELL_OK;
  cell_tensor *a = NULL;
  *d = NULL;
  switch (op) {
  case CELL_OP_ABS: return cell_op_unary(CELL_OP_SIGN, x, d);
  case CELL_OP_NEG: return CELL_OK;
  case CELL_OP_EXP: *d = ref(y); return CELL_OK;
  case CELL_OP_LOG: return scal(CELL_OP_DIV, x, 1.0, 1, d);             /* 1 / x */
  case CELL_OP_LOG1P:                                                   /* 1 / (1 + x) */
    *d = ref(x);
    s = step_k(s, CELL_OP_ADD, d, 1.0, 0);
    return step_k(s, CELL_OP_DIV, d, 1.0, 1);
  case CELL_OP_SQRT: *d = ref(y); return step_k(s, CELL_OP_DIV, d, 0.5, 1); /* 0.5 / y */
  case CELL_OP_RSQRT:                                                   /* -0.5 y^3 */
    *d = ref(y);
    s = step(s, CELL_OP_MUL, d, y, false);
    s = step(s, CELL_OP_MUL, d, y, false);
    return step_k(s, CELL_OP_MUL, d, -0.5, 0);
  case CELL_OP_SIN: return cell_op_unary(CELL_OP_COS, x, d);
  case CELL_OP_COS:
    *d = ref(x);
    s = step_u(s, CELL_OP_SIN, d);
    return step_u(s, CELL_OP_NEG, d);
  case CELL_OP_TANH:                                                    /* 1 - y^2 */
    *d = ref(y);
    s = step(s, CELL_OP_MUL, d, y, false);
    return step_k(s, CELL_OP_SUB, d, 1.0, 1);
  case CELL_OP_SIGMOID:                                                 /* y (1 - y) */
    *d = ref(y);
    s = step_k(s, CELL_OP_SUB, d, 1.0, 1);
    return step(s, CELL_OP_MUL, d, y, false);
  case CELL_OP_SILU:                                                    /* s (1 + x (1 - s)) */
    s = cell_op_unary(CELL_OP_SIGMOID, x, &a);
    if (s != CELL_OK) return s;
    *d = ref(a);
    s = step_k(s, CELL_OP_SUB, d, 1.0, 1);
    s = step(s, CELL_OP_MUL, d, x, false);
    s = step_k(s, CELL_OP_ADD, d, 1.0, 0);
    return step(s, CELL_OP_MUL, d, a, true);
  default:
    return cell_error(CELL_ERR_NOTIMPL, "the gradient of %s is not differentiable (higher-order "
                      "gradient)", unary_rules[op].node);
  }
}

/* gelu's gradient g gelu'(x) as a node over (g, x) (gelu' needs erf,
 * which no recording op computes): its rule gives gg gelu'(x) for g and
 * gg g gelu''(x) = gg g phi(x) (2 - x^2) for x, with raw kernels, so gelu
 * is twice differentiable but not three times. saved: g, x. */
static cell_status gelu2_backward(cell_node *n, const cell_tensor *gg, cell_tensor **gin) {
  const cell_tensor *g = n->saved[0], *x = n->saved[1];
  cell_tensor *t = NULL, *x2 = NULL, *phi = NULL, *q = NULL;
  cell_status s = CELL_OK;
  if (n->in[0].next) {
    s = ew(EW_GELU, 0, 0, cell_ag_grad_dtype(n, 0, gg), n->in[0].ndim, n->in[0].shape, gg, x, NULL, &t);
    s = cell_ag_give(n, 0, s, t, gin);
    t = NULL;
  }
  if (s != CELL_OK || !n->in[1].next) return s;
  s = cell_k_binary(CELL_OP_MUL, x, x, &x2);
  if (s == CELL_OK) s = cell_k_binary_scalar(CELL_OP_MUL, x2, -0.5, 1, 0, &t);
  if (s == CELL_OK) s = cell_k_unary(CELL_OP_EXP, t, &phi);
  cell_tensor_release(t);
  t = NULL;
  if (s == CELL_OK) s = cell_k_binary_scalar(CELL_OP_SUB, x2, 2.0, 1, 1, &q); /* 2 - x^2 */
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_MUL, phi, q, &t);
  cell_release4(CELL_OK, x2, phi, q, NULL);
  x2 = phi = q = NULL;
  if (s == CELL_OK) s = cell_k_binary_scalar(CELL_OP_MUL, t, 0.39894228040143267794, 1, 0, &q);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_MUL, q, g, &x2);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_MUL, x2, gg, &phi);
  cell_release4(CELL_OK, t, q, x2, NULL);
  return cell_ag_give(n, 1, s, phi, gin);
}

static cell_status gelu_graph(const cell_node *n, const cell_tensor *g, const cell_tensor *x,
                              cell_tensor **out) {
  cell_tensor *t = NULL;
  cell_status s = ew(EW_GELU, 0, 0, cell_ag_grad_dtype(n, 0, g), n->in[0].ndim, n->in[0].shape, g, x,
                     NULL, &t);
  const cell_tensor *in[2] = {g, x};
  if (s != CELL_OK || !cell_ag_wants(2, in)) {
    *out = t;
    return s;
  }
  cell_node *m = cell_ag_node_new("GeluBackwardBackward", gelu2_backward, 2, in, 2, 0);
  if (m) {
    s = cell_ag_save(m, g);
    if (s == CELL_OK) s = cell_ag_save(m, x);
  }
  s = cell_ag_finish(m, s, &t);
  *out = t;
  return s;
}

static cell_status unary_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_unop op = CELL_AG_ARGS(n, unary_args)->op;
  if (unary_rules[op].kind != RULE_EW || !n->in[0].next) return CELL_OK; /* zero: no gradient */
  const cell_tensor *x = NULL, *y = NULL;
  int k = 0;
  if (unary_rules[op].save & SAVE_X) x = n->saved[k++];
  if (unary_rules[op].save & SAVE_Y) y = n->saved[k++];
  cell_tensor *t = NULL;
  if (graph_mode()) {
    cell_status s;
    if (op == CELL_OP_NEG) {
      s = cell_op_unary(CELL_OP_NEG, g, &t);
    } else if (op == CELL_OP_GELU) {
      s = gelu_graph(n, g, x, &t);
    } else if (op == CELL_OP_RELU) { /* g where x > 0 */
      cell_tensor *m = NULL;
      s = cell_k_binary_scalar(CELL_OP_LE, x, 0.0, 1, 0, &m);
      if (s == CELL_OK) s = cell_op_masked_fill(g, m, 0.0, &t);
      cell_tensor_release(m);
    } else {
      cell_tensor *d = NULL;
      s = unary_deriv_graph(op, x, y, &d);
      if (s == CELL_OK) s = mul(g, d, &t);
      cell_tensor_release(d);
    }
    return cell_ag_give(n, 0, s, t, gin);
  }
  cell_status s = ew(unary_rules[op].ew, 0, 0, cell_ag_grad_dtype(n, 0, g), n->in[0].ndim,
                          n->in[0].shape, g, x, y, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status unary_op(cell_unop op, const cell_tensor *a, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if ((unsigned)op >= CELL_UNOP_COUNT || !a || !out || unary_rules[op].kind == RULE_NONE ||
      !cell_ag_wants(1, in))
    return cell_k_unary(op, a, out);
  if (unary_rules[op].kind == RULE_MISSING)
    return cell_error(CELL_ERR_NOTIMPL, "%s: no backward rule is defined for this op",
                      cell_unop_name(op));
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_unary(op, a, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE(unary_rules[op].node, unary_backward, 1, in, 2, unary_args);
  if (n) n->twice = true;
  if (n) {
    CELL_AG_ARGS(n, unary_args)->op = op;
    if (unary_rules[op].save & SAVE_X) s = cell_ag_save(n, a);
    if (s == CELL_OK && (unary_rules[op].save & SAVE_Y)) s = cell_ag_save(n, r);
  }
  return cell_ag_record_end(n, s, r, out);
}

cell_status cell_op_unary(cell_unop op, const cell_tensor *a, cell_tensor **out) {
  CELL_OP_NAMED(cell_unop_name(op), unary_op(op, a, out));
}

/* --- clamp, where, masked_fill ---------------------------------------------------------- */

/* The gradient passes where lo <= x <= hi (bounds included, as torch). */
typedef struct {
  double lo, hi; /* -inf / inf where absent */
} clamp_args;

static cell_status clamp_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const clamp_args *a = CELL_AG_ARGS(n, clamp_args);
  cell_tensor *t = NULL;
  if (graph_mode()) { /* g, zero where x < lo or x > hi */
    cell_tensor *lo = NULL, *hi = NULL, *out = NULL;
    cell_status s = cell_k_binary_scalar(CELL_OP_LT, n->saved[0], a->lo, 1, 0, &lo);
    if (s == CELL_OK) s = cell_k_binary_scalar(CELL_OP_GT, n->saved[0], a->hi, 1, 0, &hi);
    if (s == CELL_OK) s = cell_k_binary(CELL_OP_LOGICAL_OR, lo, hi, &out);
    if (s == CELL_OK) s = cell_op_masked_fill(g, out, 0.0, &t);
    cell_release4(CELL_OK, lo, hi, out, NULL);
    return cell_ag_give(n, 0, s, t, gin);
  }
  cell_status s = ew(EW_CLAMP, a->lo, a->hi, cell_ag_grad_dtype(n, 0, g), n->in[0].ndim,
                          n->in[0].shape, g, n->saved[0], NULL, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_clamp(const cell_tensor *a, int has_lo, double lo, int has_hi, double hi,
                          cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_clamp(a, has_lo, lo, has_hi, hi, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_clamp(a, has_lo, lo, has_hi, hi, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = cell_ag_twice(CELL_AG_NODE("ClampBackward", clamp_backward, 1, in, 1, clamp_args));
  if (n) {
    *CELL_AG_ARGS(n, clamp_args) = (clamp_args){has_lo ? lo : -INFINITY, has_hi ? hi : INFINITY};
    s = cell_ag_save(n, a);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* saved[0] = cond; inputs (cond, a, b). */
static cell_status where_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_status s = CELL_OK;
  for (int i = 1; i <= 2 && s == CELL_OK; i++) {
    if (!n->in[i].next) continue;
    cell_tensor *t = NULL, *nc = NULL;
    if (graph_mode() && i == 1) { /* g where cond */
      s = cell_k_unary(CELL_OP_LOGICAL_NOT, n->saved[0], &nc);
      if (s == CELL_OK) s = cell_op_masked_fill(g, nc, 0.0, &t);
      cell_tensor_release(nc);
    } else if (graph_mode()) { /* g where not cond */
      s = cell_op_masked_fill(g, n->saved[0], 0.0, &t);
    } else {
      s = ew(i == 1 ? EW_SEL_TRUE : EW_SEL_FALSE, 0, 0, cell_ag_grad_dtype(n, i, g), g->ndim, g->shape, g,
             n->saved[0], NULL, &t);
    }
    s = cell_ag_give(n, i, s, t, gin);
  }
  return s;
}

cell_status cell_op_where(const cell_tensor *cond, const cell_tensor *a, const cell_tensor *b,
                          cell_tensor **out) {
  const cell_tensor *in[3] = {cond, a, b};
  if (!cond || !a || !b || !out || !cell_ag_wants(3, in)) return cell_k_where(cond, a, b, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_where(cond, a, b, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = cell_ag_twice(cell_ag_node_new("WhereBackward", where_backward, 3, in, 1, 0));
  if (n) s = cell_ag_save(n, cond);
  return cell_ag_record_end(n, s, r, out);
}

/* saved[0] = mask: the gradient reaches a where the mask is false. */
static cell_status masked_fill_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *t = NULL;
  cell_status s = graph_mode() ? cell_op_masked_fill(g, n->saved[0], 0.0, &t)
                               : ew(EW_SEL_FALSE, 0, 0, cell_ag_grad_dtype(n, 0, g), g->ndim, g->shape,
                                    g, n->saved[0], NULL, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_masked_fill(const cell_tensor *a, const cell_tensor *mask, double value,
                                cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !mask || !out || !cell_ag_wants(1, in)) return cell_k_masked_fill(a, mask, value, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_masked_fill(a, mask, value, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n =
      cell_ag_twice(cell_ag_node_new("MaskedFillBackward", masked_fill_backward, 1, in, 1, 0));
  if (n) s = cell_ag_save(n, mask);
  return cell_ag_record_end(n, s, r, out);
}

/* --- reductions ---------------------------------------------------------------------------- */

/* The gradient of an extreme (max / min, or the inf-norm when use_abs) over
 * the masked dims, split evenly among the elements that attain it (x == y,
 * or |x| == y), as torch's amax / amin. gk and y are in the keep shape. */
static cell_status extreme_grad(const cell_node *n, int mask, const cell_tensor *gk,
                                const cell_tensor *x, const cell_tensor *yk, int use_abs,
                                cell_dtype dt, cell_tensor **out) {
  int nd = n->in[0].ndim, dims[CELL_MAX_DIMS], ndims = mask_dims(n, mask, dims);
  const int64_t *shape = n->in[0].shape;
  int64_t ks[CELL_MAX_DIMS];
  keep_shape(n, mask, ks);
  cell_tensor *eq = NULL, *cnt = NULL, *gc = NULL;
  cell_status s =
      ew(use_abs ? EW_ABS_EQ : EW_EQ, 0, 0, CELL_DTYPE_F64, nd, shape, x, yk, NULL, &eq);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_SUM, eq, ndims, dims, 1, &cnt);
  if (s == CELL_OK) s = ew(EW_DIV, 0, 0, CELL_DTYPE_F64, nd, ks, gk, cnt, NULL, &gc);
  if (s == CELL_OK) s = ew(use_abs ? EW_PICK_ABS : EW_PICK, 0, 0, dt, nd, shape, gc, x, yk, out);
  return cell_release4(s, eq, cnt, gc, NULL);
}

/* d prod / d x_i = the product of the others: gw / x_i when the slice has no
 * zero; at its zero (the product of the nonzero others) when it has one;
 * 0 everywhere when it has more. */
static cell_status prod_grad(const cell_node *n, int mask, const cell_tensor *gk,
                             const cell_tensor *x, cell_dtype dt, cell_tensor **out) {
  int nd = n->in[0].ndim, dims[CELL_MAX_DIMS], ndims = mask_dims(n, mask, dims);
  const int64_t *shape = n->in[0].shape;
  int64_t ks[CELL_MAX_DIMS];
  keep_shape(n, mask, ks);
  cell_tensor *t = NULL, *zc = NULL, *nzp = NULL, *gw = NULL;
  cell_status s = ew(EW_IS_ZERO, 0, 0, CELL_DTYPE_F64, nd, shape, x, NULL, NULL, &t);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_SUM, t, ndims, dims, 1, &zc);
  cell_tensor_release(t);
  t = NULL;
  if (s == CELL_OK) s = ew(EW_ZERO_TO_ONE, 0, 0, CELL_DTYPE_F64, nd, shape, x, NULL, NULL, &t);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_PROD, t, ndims, dims, 1, &nzp);
  cell_tensor_release(t);
  if (s == CELL_OK) s = ew(EW_MUL, 0, 0, CELL_DTYPE_F64, nd, ks, gk, nzp, NULL, &gw);
  if (s == CELL_OK) s = ew(EW_PROD, 0, 0, dt, nd, shape, gw, x, zc, out);
  return cell_release4(s, zc, nzp, gw, NULL);
}

/* saved: x (prod, max, min), y (max, min). */
typedef struct {
  cell_redop op;
  int mask; /* the reduced dims */
} reduce_args;

/* g (in the keep shape) spread over the input's shape, as recording ops. */
static cell_status spread_graph(const cell_node *n, const cell_tensor *gk, cell_tensor **out) {
  cell_tensor *e = NULL;
  cell_status s = cell_tensor_expand(gk, n->in[0].ndim, n->in[0].shape, &e);
  if (s == CELL_OK) s = cell_tensor_contiguous(e, out);
  cell_tensor_release(e);
  return s;
}

/* The weights of max / min (or the inf-norm, use_abs) as a constant: 1 /
 * the count of the elements attaining the extreme, 0 elsewhere. */
static cell_status extreme_weights(const cell_node *n, int mask, const cell_tensor *x,
                                   const cell_tensor *yk, int use_abs, cell_dtype dt,
                                   cell_tensor **out) {
  int dims[CELL_MAX_DIMS], ndims = mask_dims(n, mask, dims);
  cell_tensor *ax = NULL, *eq = NULL, *ef = NULL, *cnt = NULL;
  cell_status s = use_abs ? cell_k_unary(CELL_OP_ABS, x, &ax) : CELL_OK;
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_EQ, use_abs ? ax : x, yk, &eq);
  if (s == CELL_OK) s = cell_k_astype(eq, dt, &ef);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_SUM, ef, ndims, dims, 1, &cnt);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_DIV, ef, cnt, out);
  return cell_release4(s, ax, eq, ef, cnt);
}

/* sum, mean, max, min as recording ops (prod is not twice). */
static cell_status reduce_graph(cell_node *n, cell_redop op, int mask, const cell_tensor *gk,
                                cell_dtype dt, cell_tensor **out) {
  cell_status s = CELL_OK;
  cell_tensor *yk = NULL, *w = NULL;
  switch (op) {
  case CELL_RED_SUM: return spread_graph(n, gk, out);
  case CELL_RED_MEAN:
    s = spread_graph(n, gk, out);
    return step_k(s, CELL_OP_MUL, out, 1.0 / (double)mask_count(n, mask), 0);
  case CELL_RED_MAX:
  case CELL_RED_MIN:
    s = to_keep(n, mask, n->saved[1], &yk);
    if (s == CELL_OK) s = extreme_weights(n, mask, n->saved[0], yk, 0, dt, &w);
    if (s == CELL_OK) s = mul(gk, w, out);
    return cell_release4(s, yk, w, NULL, NULL);
  default: return cell_error(CELL_ERR_RUNTIME, "%s: no backward rule", n->name);
  }
}

static cell_status reduce_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_redop op = CELL_AG_ARGS(n, reduce_args)->op;
  int mask = CELL_AG_ARGS(n, reduce_args)->mask, nd = n->in[0].ndim;
  const int64_t *shape = n->in[0].shape;
  cell_dtype dt = cell_ag_grad_dtype(n, 0, g);
  cell_tensor *gk = NULL, *yk = NULL, *t = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK && graph_mode()) {
    s = reduce_graph(n, op, mask, gk, dt, &t);
  } else if (s == CELL_OK) {
    switch (op) {
    case CELL_RED_SUM: s = ew(EW_SCALE, 1.0, 0, dt, nd, shape, gk, NULL, NULL, &t); break;
    case CELL_RED_MEAN:
      s = ew(EW_SCALE, 1.0 / (double)mask_count(n, mask), 0, dt, nd, shape, gk, NULL, NULL, &t);
      break;
    case CELL_RED_PROD: s = prod_grad(n, mask, gk, n->saved[0], dt, &t); break;
    case CELL_RED_MAX:
    case CELL_RED_MIN:
      s = to_keep(n, mask, n->saved[1], &yk);
      if (s == CELL_OK) s = extreme_grad(n, mask, gk, n->saved[0], yk, 0, dt, &t);
      break;
    default: s = cell_error(CELL_ERR_RUNTIME, "%s: no backward rule", n->name); break;
    }
  }
  cell_tensor_release(gk);
  cell_tensor_release(yk);
  return cell_ag_give(n, 0, s, t, gin);
}

static const struct {
  const char *node; /* NULL: not differentiable (the result is bool) */
  int save;         /* SAVE_X, SAVE_Y */
} reduce_rules[] = {
    [CELL_RED_SUM] = {"SumBackward", 0},
    [CELL_RED_MEAN] = {"MeanBackward", 0},
    [CELL_RED_PROD] = {"ProdBackward", SAVE_X},
    [CELL_RED_MAX] = {"MaxBackward", SAVE_X | SAVE_Y},
    [CELL_RED_MIN] = {"MinBackward", SAVE_X | SAVE_Y},
    [CELL_RED_ALL] = {NULL, 0},
    [CELL_RED_ANY] = {NULL, 0},
};
_Static_assert(sizeof reduce_rules / sizeof reduce_rules[0] == CELL_REDOP_COUNT,
               "a backward rule (or NULL) per reduction");

cell_status cell_op_reduce(cell_redop op, const cell_tensor *a, int ndims, const int *dims,
                           int keepdim, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if ((unsigned)op >= CELL_REDOP_COUNT || !reduce_rules[op].node || !a || !out ||
      !cell_ag_wants(1, in))
    return cell_k_reduce(op, a, ndims, dims, keepdim, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_reduce(op, a, ndims, dims, keepdim, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE(reduce_rules[op].node, reduce_backward, 1, in, 2, reduce_args);
  if (n && op != CELL_RED_PROD) n->twice = true;
  if (n) {
    /* dims were checked by the kernel */
    *CELL_AG_ARGS(n, reduce_args) = (reduce_args){op, dims_mask(a->ndim, ndims, dims)};
    if (reduce_rules[op].save & SAVE_X) s = cell_ag_save(n, a);
    if (s == CELL_OK && (reduce_rules[op].save & SAVE_Y)) s = cell_ag_save(n, r);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* saved: the indices. The gradient goes to the chosen position of each
 * slice. */
typedef struct {
  int dim;
  int64_t index_base;
} max_dim_args;

static cell_status max_dim_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int dim = CELL_AG_ARGS(n, max_dim_args)->dim, nd = n->in[0].ndim;
  const int64_t *shape = n->in[0].shape;
  cell_dtype dt = cell_ag_grad_dtype(n, 0, g);
  cell_tensor *t = NULL;
  if (nd == 0 && graph_mode()) return cell_ag_grad_for(n, 0, (cell_tensor *)g, &gin[0]);
  if (nd == 0) { /* one element, which is the extreme */
    cell_status s = ew(EW_SCALE, 1.0, 0, dt, 0, shape, g, NULL, NULL, &t);
    return cell_ag_give(n, 0, s, t, gin);
  }
  int mask = 1 << dim;
  cell_tensor *gk = NULL, *ik = NULL, *z = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK) s = to_keep(n, mask, n->saved[0], &ik);
  if (s == CELL_OK && graph_mode()) { /* g times a constant one-hot of the positions */
    cell_tensor *one = NULL, *hot = NULL;
    s = cell_tensor_full_on(cell_tensor_device(g), dt, nd, shape, 0.0, &z);
    if (s == CELL_OK) s = cell_tensor_full_on(cell_tensor_device(g), dt, nd, ik->shape, 1.0, &one);
    if (s == CELL_OK)
      s = cell_k_scatter(z, dim, ik, one, CELL_AG_ARGS(n, max_dim_args)->index_base, &hot);
    if (s == CELL_OK) s = mul(gk, hot, &t);
    cell_release4(CELL_OK, gk, ik, z, one);
    cell_tensor_release(hot);
    return cell_ag_give(n, 0, s, t, gin);
  }
  if (s == CELL_OK) s = cell_tensor_full(dt, nd, shape, 0.0, &z);
  if (s == CELL_OK) s = cell_k_scatter(z, dim, ik, gk, CELL_AG_ARGS(n, max_dim_args)->index_base, &t);
  cell_release4(CELL_OK, gk, ik, z, NULL);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_max_dim(const cell_tensor *a, int dim, int keepdim, int is_min,
                            int64_t index_base, cell_tensor **values, cell_tensor **indices) {
  const cell_tensor *in[1] = {a};
  if (!a || !values || !cell_ag_wants(1, in))
    return cell_k_max_dim(a, dim, keepdim, is_min, index_base, values, indices);
  cell_tensor *v, *ix;
  cell_status s = CELL_AG_RAW(cell_k_max_dim(a, dim, keepdim, is_min, index_base, &v, &ix));
  if (s != CELL_OK) return s;
  if (cell_dtype_is_float(v->dtype)) {
    cell_node *n = cell_ag_twice(CELL_AG_NODE(is_min ? "MinDimBackward" : "MaxDimBackward",
                                              max_dim_backward, 1, in, 1, max_dim_args));
    if (n) {
      *CELL_AG_ARGS(n, max_dim_args) = (max_dim_args){dim, index_base};
      s = cell_ag_save(n, ix);
    }
    s = cell_ag_finish(n, s, &v);
    if (s != CELL_OK) {
      cell_tensor_release(ix);
      return s;
    }
  }
  *values = v;
  if (indices) *indices = ix;
  else cell_tensor_release(ix);
  return CELL_OK;
}

/* d var / dx = 2 (x - mean) / (N - ddof); d std / dx = (x - mean) / ((N - ddof) std),
 * taken as 0 where std == 0 (as torch). saved: x, and the std for
 * take_sqrt. */
typedef struct {
  int ddof, mask;
  bool take_sqrt;
} var_args;

static cell_status var_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const var_args *va = CELL_AG_ARGS(n, var_args);
  int mask = va->mask, take_sqrt = va->take_sqrt, nd = n->in[0].ndim;
  int dims[CELL_MAX_DIMS], ndims = mask_dims(n, mask, dims);
  const int64_t *shape = n->in[0].shape;
  int64_t ks[CELL_MAX_DIMS];
  keep_shape(n, mask, ks);
  double dof = (double)mask_count(n, mask) - (double)va->ddof;
  if (!(dof > 0)) dof = 0; /* as the forward: the result is inf / NaN */
  cell_dtype dt = cell_ag_grad_dtype(n, 0, g);
  const cell_tensor *x = n->saved[0];
  cell_tensor *gk = NULL, *yk = NULL, *mean = NULL, *gs = NULL, *t = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK && graph_mode()) {
    /* var: g (x - mean) 2 / dof; std: g (x - mean) / (dof std), 0 where std == 0 */
    cell_tensor *zero = NULL;
    s = cell_op_reduce(CELL_RED_MEAN, x, ndims, dims, 1, &mean);
    if (s == CELL_OK) s = cell_op_binary(CELL_OP_SUB, x, mean, &t);
    s = step(s, CELL_OP_MUL, &t, gk, false);
    if (take_sqrt) {
      if (s == CELL_OK) s = to_keep(n, mask, n->saved[1], &yk);
      s = step(s, CELL_OP_DIV, &t, yk, false);
      s = step_k(s, CELL_OP_MUL, &t, 1.0 / dof, 0);
      if (s == CELL_OK) s = cell_k_binary_scalar(CELL_OP_EQ, yk, 0.0, 1, 0, &zero);
      if (s == CELL_OK) s = cell_op_masked_fill(t, zero, 0.0, &gs);
      cell_tensor_release(t);
      cell_tensor_release(zero);
      t = gs;
      gs = NULL;
    } else {
      s = step_k(s, CELL_OP_MUL, &t, 2.0 / dof, 0);
    }
  } else if (s == CELL_OK) {
    s = cell_k_reduce(CELL_RED_MEAN, x, ndims, dims, 1, &mean);
  }
  if (s == CELL_OK && graph_mode()) {
    /* done above */
  } else if (s == CELL_OK && take_sqrt) {
    s = to_keep(n, mask, n->saved[1], &yk);
    if (s == CELL_OK) s = ew(EW_STD_SCALE, dof, 0, CELL_DTYPE_F64, nd, ks, gk, yk, NULL, &gs);
  } else if (s == CELL_OK) {
    s = ew(EW_SCALE, 2.0 / dof, 0, CELL_DTYPE_F64, nd, ks, gk, NULL, NULL, &gs);
  }
  if (s == CELL_OK && !graph_mode()) s = ew(EW_DEV, 0, 0, dt, nd, shape, gs, x, mean, &t);
  cell_release4(CELL_OK, gk, yk, mean, gs);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_var(const cell_tensor *a, int ndims, const int *dims, int ddof, int keepdim,
                        int take_sqrt, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in))
    return cell_k_var(a, ndims, dims, ddof, keepdim, take_sqrt, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_var(a, ndims, dims, ddof, keepdim, take_sqrt, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(a->dtype)) { /* integer input: no gradient to carry */
    *out = r;
    return CELL_OK;
  }
  cell_node *n = cell_ag_twice(
      CELL_AG_NODE(take_sqrt ? "StdBackward" : "VarBackward", var_backward, 1, in, 2, var_args));
  if (n) {
    *CELL_AG_ARGS(n, var_args) = (var_args){ddof, dims_mask(a->ndim, ndims, dims), take_sqrt != 0};
    s = cell_ag_save(n, a);
    if (s == CELL_OK && take_sqrt) s = cell_ag_save(n, r);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* p-norm: g sign(x) |x|^(p-1) / norm^(p-1), 0 where norm == 0 (or x == 0);
 * inf-norm: g sign(x) split among the elements with |x| == norm.
 * saved: x, norm. */
typedef struct {
  int mask;
  double p;
} pnorm_args;

static cell_status norm_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int mask = CELL_AG_ARGS(n, pnorm_args)->mask, nd = n->in[0].ndim;
  double p = CELL_AG_ARGS(n, pnorm_args)->p;
  const int64_t *shape = n->in[0].shape;
  int64_t ks[CELL_MAX_DIMS];
  keep_shape(n, mask, ks);
  cell_dtype dt = cell_ag_grad_dtype(n, 0, g);
  const cell_tensor *x = n->saved[0];
  cell_tensor *gk = NULL, *yk = NULL, *gs = NULL, *t = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK) s = to_keep(n, mask, n->saved[1], &yk);
  if (s == CELL_OK && graph_mode()) {
    /* g sign(x) |x|^(p-1) / norm^(p-1), 0 where norm == 0 (p finite) */
    cell_tensor *zero = NULL;
    if (p == 1) {
      s = cell_op_unary(CELL_OP_SIGN, x, &t);
    } else if (p == 2) {
      s = cell_op_binary(CELL_OP_DIV, x, yk, &t);
    } else {
      s = cell_op_unary(CELL_OP_ABS, x, &t);
      s = step_k(s, CELL_OP_POW, &t, p - 1, 0);
      if (s == CELL_OK) s = cell_op_unary(CELL_OP_SIGN, x, &gs);
      s = step(s, CELL_OP_MUL, &t, gs, true);
      gs = NULL;
      if (s == CELL_OK) s = scal(CELL_OP_POW, yk, p - 1, 0, &gs);
      s = step(s, CELL_OP_DIV, &t, gs, true);
      gs = NULL;
    }
    s = step(s, CELL_OP_MUL, &t, gk, false);
    if (s == CELL_OK && p != 1) {
      s = cell_k_binary_scalar(CELL_OP_EQ, yk, 0.0, 1, 0, &zero);
      if (s == CELL_OK) s = cell_op_masked_fill(t, zero, 0.0, &gs);
      cell_tensor_release(t);
      cell_tensor_release(zero);
      t = gs;
      gs = NULL;
    }
  } else if (s == CELL_OK && isinf(p)) {
    s = extreme_grad(n, mask, gk, x, yk, 1, dt, &t);
  } else if (s == CELL_OK) {
    s = ew(EW_NORM_SCALE, p, 0, CELL_DTYPE_F64, nd, ks, gk, yk, NULL, &gs);
    if (s == CELL_OK) s = ew(EW_NORM, p, 0, dt, nd, shape, gs, x, NULL, &t);
  }
  cell_release4(CELL_OK, gk, yk, gs, NULL);
  return cell_ag_give(n, 0, s, t, gin);
}

/* A norm of negative order over zero elements: (sum of none)^(1/p) would be
 * +inf, as if the minimum of nothing; like PyTorch's linalg.vector_norm and
 * the -inf norm (min), that has no identity: ValueError. Any device. */
static cell_status negative_norm_of_empty(const cell_tensor *a, double p, int ndims, const int *dims) {
  if (!(p < 0) || !a) return CELL_OK;
  bool empty = false;
  for (int i = 0; i < (ndims ? ndims : a->ndim); i++) {
    int d = ndims ? dims[i] : i;
    if (d >= 0 && d < a->ndim && a->shape[d] == 0) empty = true;
  }
  if (!empty) return CELL_OK;
  char b[256];
  return cell_error(CELL_ERR_VALUE,
                    "norm: cannot compute the %g norm over zero elements (input of shape %s): the "
                    "operation has no identity",
                    p, cell_shape_str(a->ndim, a->shape, b, sizeof b));
}

cell_status cell_op_norm(const cell_tensor *a, double p, int ndims, const int *dims, int keepdim,
                         cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  CELL_TRY(negative_norm_of_empty(a, p, ndims, dims));
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_norm(a, p, ndims, dims, keepdim, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_norm(a, p, ndims, dims, keepdim, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(a->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE("NormBackward", norm_backward, 1, in, 2, pnorm_args);
  if (n && !isinf(p)) n->twice = true;
  if (n) {
    *CELL_AG_ARGS(n, pnorm_args) = (pnorm_args){dims_mask(a->ndim, ndims, dims), p};
    s = cell_ag_save(n, a);
    if (s == CELL_OK) s = cell_ag_save(n, r);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* --- cumsum ------------------------------------------------------------------------------------ */

/* The gradient is the reverse cumulative sum of g along dim (the kernel
 * cumsum_reverse, which accumulates in double). */
static cell_status cumsum_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  int dim = *CELL_AG_ARGS(n, int), nd = n->in[0].ndim; /* args: the dim */
  const int64_t *shape = n->in[0].shape;
  if (!cell_shape_equal(g->ndim, g->shape, nd, shape)) {
    char b1[256], b2[256];
    return cell_error(CELL_ERR_RUNTIME, "%s: gradient of shape %s for an output of shape %s",
                      n->name, cell_shape_str(g->ndim, g->shape, b1, sizeof b1),
                      cell_shape_str(nd, shape, b2, sizeof b2));
  }
  cell_tensor *w = NULL;
  cell_status s = cell_k_cumsum_reverse(g, dim, &w);
  return cell_ag_give(n, 0, s, w, gin);
}

cell_status cell_op_cumsum(const cell_tensor *a, int dim, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_cumsum(a, dim, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_cumsum(a, dim, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(r->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE("CumsumBackward", cumsum_backward, 1, in, 0, int);
  if (n) *CELL_AG_ARGS(n, int) = dim;
  return cell_ag_record_end(n, s, r, out);
}

int cell_ag_math_nodes(const char **names, int max) {
  int n = 0;
  for (int op = 0; op < CELL_UNOP_COUNT; op++)
    if (unary_rules[op].node && n < max) names[n++] = unary_rules[op].node;
  for (int op = 0; op < CELL_REDOP_COUNT; op++)
    if (reduce_rules[op].node && n < max) names[n++] = reduce_rules[op].node;
  const char *more[] = {"ClampBackward", "WhereBackward", "MaskedFillBackward", "MaxDimBackward",
                        "VarBackward", "NormBackward", "CumsumBackward"};
  for (size_t i = 0; i < sizeof more / sizeof more[0] && n < max; i++) names[n++] = more[i];
  return n;
}
