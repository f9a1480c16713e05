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
 * Backward runs with grad mode off, and rules call raw kernels only. */
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

/* --- shared helpers ---------------------------------------------------------------- */

/* The dtype a gradient for input i is computed in: the input's own. */
static cell_dtype grad_dtype(const cell_node *n, int i, const cell_tensor *g) {
  if (cell_dtype_is_float(n->in[i].dtype)) return n->in[i].dtype;
  return cell_dtype_is_float(g->dtype) ? g->dtype : CELL_DTYPE_F32;
}

/* End of a wrapper: make n the producer of r and hand r over. *out is set
 * only on success. */
static cell_status record_end(cell_node *n, cell_status s, cell_tensor *r, cell_tensor **out) {
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

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
  return cell_k_reshape(t, n->in[0].ndim, ks, out);
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
};
_Static_assert(sizeof unary_rules / sizeof unary_rules[0] == CELL_UNOP_COUNT,
               "a backward rule (or RULE_NONE) per unary op");

typedef struct {
  cell_unop op;
} unary_args;

static cell_status unary_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_unop op = CELL_AG_ARGS(n, unary_args)->op;
  if (unary_rules[op].kind != RULE_EW || !n->in[0].next) return CELL_OK; /* zero: no gradient */
  const cell_tensor *x = NULL, *y = NULL;
  int k = 0;
  if (unary_rules[op].save & SAVE_X) x = n->saved[k++];
  if (unary_rules[op].save & SAVE_Y) y = n->saved[k++];
  cell_tensor *t = NULL;
  cell_status s = ew(unary_rules[op].ew, 0, 0, grad_dtype(n, 0, g), n->in[0].ndim,
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
  if (n) {
    CELL_AG_ARGS(n, unary_args)->op = op;
    if (unary_rules[op].save & SAVE_X) s = cell_ag_save(n, a);
    if (s == CELL_OK && (unary_rules[op].save & SAVE_Y)) s = cell_ag_save(n, r);
  }
  return record_end(n, s, r, out);
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
  cell_status s = ew(EW_CLAMP, a->lo, a->hi, grad_dtype(n, 0, g), n->in[0].ndim,
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
  cell_node *n = CELL_AG_NODE("ClampBackward", clamp_backward, 1, in, 1, clamp_args);
  if (n) {
    *CELL_AG_ARGS(n, clamp_args) = (clamp_args){has_lo ? lo : -INFINITY, has_hi ? hi : INFINITY};
    s = cell_ag_save(n, a);
  }
  return record_end(n, s, r, out);
}

/* saved[0] = cond; inputs (cond, a, b). */
static cell_status where_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_status s = CELL_OK;
  for (int i = 1; i <= 2 && s == CELL_OK; i++) {
    if (!n->in[i].next) continue;
    cell_tensor *t = NULL;
    s = ew(i == 1 ? EW_SEL_TRUE : EW_SEL_FALSE, 0, 0, grad_dtype(n, i, g), g->ndim, g->shape, g,
           n->saved[0], NULL, &t);
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
  cell_node *n = cell_ag_node_new("WhereBackward", where_backward, 3, in, 1, 0);
  if (n) s = cell_ag_save(n, cond);
  return record_end(n, s, r, out);
}

/* saved[0] = mask: the gradient reaches a where the mask is false. */
static cell_status masked_fill_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *t = NULL;
  cell_status s = ew(EW_SEL_FALSE, 0, 0, grad_dtype(n, 0, g), g->ndim, g->shape, g, n->saved[0],
                     NULL, &t);
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
  cell_node *n = cell_ag_node_new("MaskedFillBackward", masked_fill_backward, 1, in, 1, 0);
  if (n) s = cell_ag_save(n, mask);
  return record_end(n, s, r, out);
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

static cell_status reduce_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_redop op = CELL_AG_ARGS(n, reduce_args)->op;
  int mask = CELL_AG_ARGS(n, reduce_args)->mask, nd = n->in[0].ndim;
  const int64_t *shape = n->in[0].shape;
  cell_dtype dt = grad_dtype(n, 0, g);
  cell_tensor *gk = NULL, *yk = NULL, *t = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK) {
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
  if (n) {
    /* dims were checked by the kernel */
    *CELL_AG_ARGS(n, reduce_args) = (reduce_args){op, dims_mask(a->ndim, ndims, dims)};
    if (reduce_rules[op].save & SAVE_X) s = cell_ag_save(n, a);
    if (s == CELL_OK && (reduce_rules[op].save & SAVE_Y)) s = cell_ag_save(n, r);
  }
  return record_end(n, s, r, out);
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
  cell_dtype dt = grad_dtype(n, 0, g);
  cell_tensor *t = NULL;
  if (nd == 0) { /* one element, which is the extreme */
    cell_status s = ew(EW_SCALE, 1.0, 0, dt, 0, shape, g, NULL, NULL, &t);
    return cell_ag_give(n, 0, s, t, gin);
  }
  int mask = 1 << dim;
  cell_tensor *gk = NULL, *ik = NULL, *z = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK) s = to_keep(n, mask, n->saved[0], &ik);
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
    cell_node *n = CELL_AG_NODE(is_min ? "MinDimBackward" : "MaxDimBackward", max_dim_backward,
                                1, in, 1, max_dim_args);
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
  cell_dtype dt = grad_dtype(n, 0, g);
  const cell_tensor *x = n->saved[0];
  cell_tensor *gk = NULL, *yk = NULL, *mean = NULL, *gs = NULL, *t = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK) s = cell_k_reduce(CELL_RED_MEAN, x, ndims, dims, 1, &mean);
  if (s == CELL_OK && take_sqrt) {
    s = to_keep(n, mask, n->saved[1], &yk);
    if (s == CELL_OK) s = ew(EW_STD_SCALE, dof, 0, CELL_DTYPE_F64, nd, ks, gk, yk, NULL, &gs);
  } else if (s == CELL_OK) {
    s = ew(EW_SCALE, 2.0 / dof, 0, CELL_DTYPE_F64, nd, ks, gk, NULL, NULL, &gs);
  }
  if (s == CELL_OK) s = ew(EW_DEV, 0, 0, dt, nd, shape, gs, x, mean, &t);
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
  cell_node *n = CELL_AG_NODE(take_sqrt ? "StdBackward" : "VarBackward", var_backward, 1, in, 2, var_args);
  if (n) {
    *CELL_AG_ARGS(n, var_args) = (var_args){ddof, dims_mask(a->ndim, ndims, dims), take_sqrt != 0};
    s = cell_ag_save(n, a);
    if (s == CELL_OK && take_sqrt) s = cell_ag_save(n, r);
  }
  return record_end(n, s, r, out);
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
  cell_dtype dt = grad_dtype(n, 0, g);
  const cell_tensor *x = n->saved[0];
  cell_tensor *gk = NULL, *yk = NULL, *gs = NULL, *t = NULL;
  cell_status s = to_keep(n, mask, g, &gk);
  if (s == CELL_OK) s = to_keep(n, mask, n->saved[1], &yk);
  if (s == CELL_OK && isinf(p)) {
    s = extreme_grad(n, mask, gk, x, yk, 1, dt, &t);
  } else if (s == CELL_OK) {
    s = ew(EW_NORM_SCALE, p, 0, CELL_DTYPE_F64, nd, ks, gk, yk, NULL, &gs);
    if (s == CELL_OK) s = ew(EW_NORM, p, 0, dt, nd, shape, gs, x, NULL, &t);
  }
  cell_release4(CELL_OK, gk, yk, gs, NULL);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_norm(const cell_tensor *a, double p, int ndims, const int *dims, int keepdim,
                         cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_norm(a, p, ndims, dims, keepdim, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_norm(a, p, ndims, dims, keepdim, &r));
  if (s != CELL_OK) return s;
  if (!cell_dtype_is_float(a->dtype)) {
    *out = r;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE("NormBackward", norm_backward, 1, in, 2, pnorm_args);
  if (n) {
    *CELL_AG_ARGS(n, pnorm_args) = (pnorm_args){dims_mask(a->ndim, ndims, dims), p};
    s = cell_ag_save(n, a);
    if (s == CELL_OK) s = cell_ag_save(n, r);
  }
  return record_end(n, s, r, out);
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
  return record_end(n, s, r, out);
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
