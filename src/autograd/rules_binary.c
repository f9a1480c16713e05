/* rules_binary.c - recording wrappers and backward rules for the binary
 * elementwise ops and the matrix products. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ew.h"
#include "../ops/device.h"

/* The rules here compute with the recording ops (cell_op_*, the views of
 * rules_shape.c): grad mode is off during an ordinary backward pass, where
 * they run the raw kernels, and on in one that creates a graph, where they
 * record, so every rule here is twice differentiable (cell_ag_twice). */
static cell_status bin(cell_binop op, const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  return cell_op_binary(op, a, b, out);
}

static cell_status add_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_status s = CELL_OK;
  for (int i = 0; i < 2 && s == CELL_OK; i++)
    if (n->in[i].next) s = cell_ag_grad_for(n, i, (cell_tensor *)g, &gin[i]);
  return s;
}

static cell_status sub_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_status s = n->in[0].next ? cell_ag_grad_for(n, 0, (cell_tensor *)g, &gin[0]) : CELL_OK;
  if (s == CELL_OK && n->in[1].next) {
    cell_tensor *neg;
    s = cell_op_unary(CELL_OP_NEG, g, &neg);
    if (s == CELL_OK) s = cell_ag_give(n, 1, s, neg, gin);
  }
  return s;
}

static cell_status mul_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_status s = CELL_OK;
  for (int i = 0; i < 2 && s == CELL_OK; i++) {
    if (!n->in[i].next) continue;
    cell_tensor *t = NULL;
    s = bin(CELL_OP_MUL, g, n->saved[1 - i], &t);
    s = cell_ag_give(n, i, s, t, gin);
  }
  return s;
}

static cell_status div_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *a = n->saved[0], *b = n->saved[1];
  cell_tensor *t = NULL, *u = NULL, *v = NULL;
  cell_status s = CELL_OK;
  if (n->in[0].next) {
    s = bin(CELL_OP_DIV, g, b, &t);
    s = cell_ag_give(n, 0, s, t, gin);
    t = NULL;
  }
  if (s == CELL_OK && n->in[1].next) { /* -g * a / b^2 */
    s = bin(CELL_OP_MUL, g, a, &t);
    if (s == CELL_OK) s = bin(CELL_OP_MUL, b, b, &u);
    if (s == CELL_OK) s = bin(CELL_OP_DIV, t, u, &v);
    cell_tensor_release(t);
    cell_tensor_release(u);
    t = NULL;
    if (s == CELL_OK) s = cell_op_unary(CELL_OP_NEG, v, &t);
    cell_tensor_release(v);
    s = cell_ag_give(n, 1, s, t, gin);
  }
  return s;
}

/* d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log a, taken as 0 where a == 0. */
static cell_status pow_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *a = n->saved[0], *b = n->saved[1], *out = n->saved[2];
  cell_tensor *t = NULL, *u = NULL, *v = NULL;
  cell_status s = CELL_OK;
  if (n->in[0].next) {
    s = cell_op_binary_scalar(CELL_OP_SUB, b, 1.0, 1, 0, &t);
    if (s == CELL_OK) s = bin(CELL_OP_POW, a, t, &u);
    cell_tensor_release(t);
    t = NULL;
    if (s == CELL_OK) s = bin(CELL_OP_MUL, u, b, &v);
    cell_tensor_release(u);
    u = NULL;
    if (s == CELL_OK) s = bin(CELL_OP_MUL, g, v, &t);
    cell_tensor_release(v);
    v = NULL;
    s = cell_ag_give(n, 0, s, t, gin);
    t = NULL;
  }
  if (s == CELL_OK && n->in[1].next) {
    cell_tensor *zero = NULL, *lg = NULL;
    s = cell_op_unary(CELL_OP_LOG, a, &lg);
    if (s == CELL_OK) s = cell_op_binary_scalar(CELL_OP_EQ, a, 0.0, 0, 0, &zero);
    if (s == CELL_OK) s = cell_op_masked_fill(lg, zero, 0.0, &t);
    cell_tensor_release(lg);
    cell_tensor_release(zero);
    if (s == CELL_OK) s = bin(CELL_OP_MUL, t, out, &u);
    cell_tensor_release(t);
    t = NULL;
    if (s == CELL_OK) s = bin(CELL_OP_MUL, g, u, &t);
    cell_tensor_release(u);
    s = cell_ag_give(n, 1, s, t, gin);
  }
  return s;
}

/* The arguments of a binary node: its op. */
typedef struct {
  cell_binop op;
} binary_args;

/* maximum/minimum: the gradient goes to the chosen side, halved on ties. */
static cell_status extreme_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *a = n->saved[0], *b = n->saved[1];
  bool is_max = CELL_AG_ARGS(n, binary_args)->op == CELL_OP_MAXIMUM;
  cell_status s = CELL_OK;
  for (int i = 0; i < 2 && s == CELL_OK; i++) {
    if (!n->in[i].next) continue;
    const cell_tensor *x = i ? b : a, *y = i ? a : b;
    cell_tensor *win = NULL, *tie = NULL, *wf = NULL, *tf = NULL, *w = NULL, *t = NULL;
    s = bin(is_max ? CELL_OP_GT : CELL_OP_LT, x, y, &win);
    if (s == CELL_OK) s = bin(CELL_OP_EQ, x, y, &tie);
    if (s == CELL_OK) s = cell_tensor_astype(win, g->dtype, &wf);
    if (s == CELL_OK) s = cell_tensor_astype(tie, g->dtype, &tf);
    if (s == CELL_OK) s = cell_op_binary_scalar(CELL_OP_MUL, tf, 0.5, 1, 0, &t);
    if (s == CELL_OK) s = bin(CELL_OP_ADD, wf, t, &w);
    cell_tensor_release(t);
    t = NULL;
    if (s == CELL_OK) s = bin(CELL_OP_MUL, g, w, &t);
    cell_tensor_release(win);
    cell_tensor_release(tie);
    cell_tensor_release(wf);
    cell_tensor_release(tf);
    cell_tensor_release(w);
    s = cell_ag_give(n, i, s, t, gin);
  }
  return s;
}

/* atan2, remainder, fmod: one elementwise pass per input (cell_ag_ew);
 * the gradient for a of remainder and fmod is g itself. */
static cell_status math_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *a = n->saved[0], *b = n->saved[1];
  cell_binop op = CELL_AG_ARGS(n, binary_args)->op;
  cell_dtype dt = cell_dtype_is_float(g->dtype) ? g->dtype : CELL_DTYPE_F32;
  cell_status s = CELL_OK;
  for (int i = 0; i < 2 && s == CELL_OK; i++) {
    if (!n->in[i].next) continue;
    cell_tensor *t = NULL;
    if (op != CELL_OP_ATAN2 && i == 0) {
      s = cell_ag_grad_for(n, 0, (cell_tensor *)g, &gin[0]);
      continue;
    }
    int rule = op == CELL_OP_ATAN2 ? (i ? EW_ATAN2_B : EW_ATAN2_A)
                                    : op == CELL_OP_REMAINDER ? EW_REM_B : EW_FMOD_B;
    s = cell_ag_ew(rule, 0, 0, dt, g->ndim, g->shape, g, a, b, &t);
    s = cell_ag_give(n, i, s, t, gin);
  }
  return s;
}

/* floor_divide: a step function, a zero gradient (MindSpore's FloorDiv). */
static cell_status zero_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  (void)n, (void)g, (void)gin;
  return CELL_OK;
}

/* One row per binary op: its backward rule, or NULL where the result is
 * not differentiable (comparisons and logic give bool). The compiler
 * checks the table covers the enum. */
static const struct {
  const char *node;
  cell_backward_fn backward;
  int nsaved; /* 2: a and b; 3: a, b and the output */
} rules[] = {
    [CELL_OP_ADD] = {"AddBackward", add_backward, 0},
    [CELL_OP_SUB] = {"SubBackward", sub_backward, 0},
    [CELL_OP_MUL] = {"MulBackward", mul_backward, 2},
    [CELL_OP_DIV] = {"DivBackward", div_backward, 2},
    [CELL_OP_POW] = {"PowBackward", pow_backward, 3},
    [CELL_OP_MAXIMUM] = {"MaximumBackward", extreme_backward, 2},
    [CELL_OP_MINIMUM] = {"MinimumBackward", extreme_backward, 2},
    [CELL_OP_EQ] = {NULL, NULL, 0},
    [CELL_OP_NE] = {NULL, NULL, 0},
    [CELL_OP_LT] = {NULL, NULL, 0},
    [CELL_OP_LE] = {NULL, NULL, 0},
    [CELL_OP_GT] = {NULL, NULL, 0},
    [CELL_OP_GE] = {NULL, NULL, 0},
    [CELL_OP_LOGICAL_AND] = {NULL, NULL, 0},
    [CELL_OP_LOGICAL_OR] = {NULL, NULL, 0},
    [CELL_OP_ATAN2] = {"Atan2Backward", math_backward, 2},
    [CELL_OP_REMAINDER] = {"RemainderBackward", math_backward, 2},
    [CELL_OP_FMOD] = {"FmodBackward", math_backward, 2},
    [CELL_OP_FLOOR_DIVIDE] = {"FloorDivideBackward", zero_backward, 0},
    [CELL_OP_LOGICAL_XOR] = {NULL, NULL, 0},
};
_Static_assert(sizeof rules / sizeof rules[0] == CELL_BINOP_COUNT, "a backward rule per binary op");

static cell_status binary_op(cell_binop op, const cell_tensor *a, const cell_tensor *b,
                             cell_tensor **out) {
  const cell_tensor *in[2] = {a, b};
  if ((unsigned)op >= CELL_BINOP_COUNT || !rules[op].backward || !a || !b || !cell_ag_wants(2, in))
    return cell_k_binary(op, a, b, out);
  cell_status s = CELL_AG_RAW(cell_k_binary(op, a, b, out));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_twice(
      CELL_AG_NODE(rules[op].node, rules[op].backward, 2, in, rules[op].nsaved, binary_args));
  if (n) {
    CELL_AG_ARGS(n, binary_args)->op = op;
    if (rules[op].nsaved >= 2) {
      /* mul reads a only for b's gradient and b only for a's, div a only
       * for b's: as PyTorch, nothing more is saved (so an in-place change
       * of an operand that needs no saving is no error). */
      bool skip_a = (op == CELL_OP_MUL || op == CELL_OP_DIV) && !cell_tensor_requires_grad(b);
      bool skip_b = op == CELL_OP_MUL && !cell_tensor_requires_grad(a);
      s = cell_ag_save(n, skip_a ? NULL : a);
      if (s == CELL_OK) s = cell_ag_save(n, skip_b ? NULL : b);
    }
    if (s == CELL_OK && rules[op].nsaved == 3) s = cell_ag_save(n, *out);
  }
  return cell_ag_finish(n, s, out);
}

/* bool < integer < float: PyTorch's categories for type promotion. */
static int dtype_category(cell_dtype d) {
  return d == CELL_DTYPE_BOOL ? 0 : cell_dtype_is_float(d) ? 2 : 1;
}

/* PyTorch's rule for a 0-d tensor beside one with dimensions: unless it is
 * of a higher category, the dimensioned tensor's dtype wins (float32 times a
 * float64 0-d tensor is float32, int32 plus an int64 0-d tensor int32), so
 * the 0-d operand is converted first; the conversion records its gradient. */
static cell_status binary_promoting(cell_binop op, const cell_tensor *a, const cell_tensor *b,
                                    cell_tensor **out) {
  if (a && b && a->dtype != b->dtype && (a->ndim == 0) != (b->ndim == 0)) {
    const cell_tensor *z = a->ndim == 0 ? a : b, *d = a->ndim == 0 ? b : a;
    if (dtype_category(z->dtype) <= dtype_category(d->dtype)) {
      cell_tensor *c;
      CELL_TRY(cell_tensor_astype(z, d->dtype, &c));
      cell_status s = z == a ? binary_op(op, c, b, out) : binary_op(op, a, c, out);
      cell_tensor_release(c);
      return s;
    }
  }
  return binary_op(op, a, b, out);
}

cell_status cell_op_binary(cell_binop op, const cell_tensor *a, const cell_tensor *b,
                           cell_tensor **out) {
  CELL_OP_NAMED(cell_binop_name(op), binary_promoting(op, a, b, out));
}

/* With a number on one side: the number becomes a 0-d tensor that needs no
 * gradient, so the tensor-tensor rule serves. */
static cell_status binary_scalar_op(cell_binop op, const cell_tensor *t, double v, int v_is_float,
                                    int reversed, cell_tensor **out) {
  const cell_tensor *in[1] = {t};
  if (!t || !cell_ag_wants(1, in)) return cell_k_binary_scalar(op, t, v, v_is_float, reversed, out);
  cell_tensor *sc;
  CELL_TRY(cell_tensor_full_on(cell_tensor_device(t), cell_dtype_promote_scalar(t->dtype, v_is_float), 0,
                               NULL, v, &sc));
  cell_status s = reversed ? cell_op_binary(op, sc, t, out) : cell_op_binary(op, t, sc, out);
  cell_tensor_release(sc);
  return s;
}

cell_status cell_ag_pow_scalar_check(cell_binop op, const cell_tensor *t, double v, int v_is_float,
                                     int reversed) {
  if (op != CELL_OP_POW || reversed || v_is_float || !(v < 0) || !t || cell_dtype_is_float(t->dtype))
    return CELL_OK;
  return cell_error(CELL_ERR_RUNTIME,
                    "pow: Integers to negative integer powers are not allowed (%s tensor ^ %.17g); "
                    "convert the tensor to a floating-point dtype first",
                    cell_dtype_name(t->dtype), v);
}

cell_status cell_op_binary_scalar(cell_binop op, const cell_tensor *t, double v, int v_is_float,
                                  int reversed, cell_tensor **out) {
  CELL_TRY(cell_ag_pow_scalar_check(op, t, v, v_is_float, reversed));
  CELL_OP_NAMED(cell_binop_name(op), binary_scalar_op(op, t, v, v_is_float, reversed, out));
}

/* --- matrix products ------------------------------------------------------------ */

/* t itself when the gemm backend can read its matrices (and their
 * transposes) through strides: one of the last two dimensions unit-strided
 * (or of size 1); otherwise a contiguous copy. */
static cell_status gemm_ready(const cell_tensor *t, cell_tensor **out) {
  int nd = t->ndim;
  if (nd < 2 || t->stride[nd - 1] == 1 || t->stride[nd - 2] == 1 || t->shape[nd - 1] == 1 ||
      t->shape[nd - 2] == 1) {
    cell_tensor_retain((cell_tensor *)t);
    *out = (cell_tensor *)t;
    return CELL_OK;
  }
  return cell_tensor_contiguous(t, out);
}

/* a @ b with 1-D operands made matrices: gA = g @ b^T, gB = a^T @ g, each
 * summed over broadcast batch dimensions by cell_ag_grad_for. The
 * transposes are views the gemm backend reads through strides (no copy).
 * A 2-D b under a batched a (a Dense-like product) gets gB as one product
 * over all rows, a_rows^T @ g_rows, instead of one per batch summed. */
static cell_status matmul_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const cell_tensor *a = n->saved[0], *b = n->saved[1];
  cell_tensor *a2 = NULL, *b2 = NULL, *g2 = NULL, *t = NULL, *u = NULL;
  cell_status s = a->ndim == 1 ? cell_tensor_unsqueeze(a, 0, &a2) : gemm_ready(a, &a2);
  if (s == CELL_OK) s = b->ndim == 1 ? cell_tensor_unsqueeze(b, 1, &b2) : gemm_ready(b, &b2);
  if (s == CELL_OK) { /* g with the dimensions the 1-D operands dropped */
    cell_tensor *tmp = NULL;
    s = a->ndim == 1 ? cell_tensor_unsqueeze(g, g->ndim - (b->ndim == 1 ? 0 : 1), &tmp)
                     : gemm_ready(g, &tmp);
    if (s == CELL_OK) s = b->ndim == 1 ? cell_tensor_unsqueeze(tmp, tmp->ndim, &g2) : gemm_ready(tmp, &g2);
    cell_tensor_release(tmp);
  }
  if (s == CELL_OK && n->in[1].next && b2->ndim == 2 && a2->ndim > 2) {
    /* fold a's batch into its rows: [-1, k] and g's into [-1, n] */
    cell_tensor *ar = NULL, *gr = NULL;
    int64_t as[2] = {-1, a2->shape[a2->ndim - 1]}, gs[2] = {-1, g2->shape[g2->ndim - 1]};
    s = cell_tensor_reshape(a2, 2, as, &ar);
    if (s == CELL_OK) s = cell_tensor_reshape(g2, 2, gs, &gr);
    if (s == CELL_OK) {
      cell_tensor_release(a2);
      cell_tensor_release(g2);
      a2 = ar;
      g2 = gr;
      ar = gr = NULL;
    }
    cell_tensor_release(ar);
    cell_tensor_release(gr);
    if (s == CELL_OK && n->in[0].next) { /* gA from the folded rows, back in a's shape */
      s = cell_tensor_transpose(b2, 0, 1, &t);
      if (s == CELL_OK) s = cell_op_matmul(g2, t, &u);
      cell_tensor_release(t);
      t = NULL;
      if (s == CELL_OK) {
        s = cell_tensor_reshape(u, n->in[0].ndim, n->in[0].shape, &t);
        cell_tensor_release(u);
        u = t;
        t = NULL;
      }
      s = cell_ag_give(n, 0, s, u, gin);
      u = NULL;
    }
    if (s == CELL_OK) {
      s = cell_tensor_transpose(a2, 0, 1, &t);
      if (s == CELL_OK) s = cell_op_matmul(t, g2, &u);
      cell_tensor_release(t);
      t = NULL;
      if (s == CELL_OK && b->ndim == 1) { /* [k, 1] -> [k] */
        s = cell_tensor_squeeze(u, 1, &t);
        cell_tensor_release(u);
        u = t;
        t = NULL;
      }
      s = cell_ag_give(n, 1, s, u, gin);
    }
    cell_tensor_release(a2);
    cell_tensor_release(b2);
    cell_tensor_release(g2);
    return s;
  }
  if (s == CELL_OK && n->in[0].next) {
    s = cell_tensor_transpose(b2, b2->ndim - 2, b2->ndim - 1, &t);
    if (s == CELL_OK) s = cell_op_matmul(g2, t, &u);
    cell_tensor_release(t);
    t = NULL;
    s = cell_ag_give(n, 0, s, u, gin);
    u = NULL;
  }
  if (s == CELL_OK && n->in[1].next) {
    s = cell_tensor_transpose(a2, a2->ndim - 2, a2->ndim - 1, &t);
    if (s == CELL_OK) s = cell_op_matmul(t, g2, &u);
    cell_tensor_release(t);
    t = NULL;
    if (s == CELL_OK && b->ndim == 1) { /* [..., k, 1] -> [..., k] */
      s = cell_tensor_squeeze(u, u->ndim - 1, &t);
      cell_tensor_release(u);
      u = t;
      t = NULL;
    }
    s = cell_ag_give(n, 1, s, u, gin);
  }
  cell_tensor_release(a2);
  cell_tensor_release(b2);
  cell_tensor_release(g2);
  return s;
}

static cell_status dot_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_status s = CELL_OK;
  for (int i = 0; i < 2 && s == CELL_OK; i++) {
    if (!n->in[i].next) continue;
    cell_tensor *t = NULL;
    s = bin(CELL_OP_MUL, n->saved[1 - i], g, &t);
    s = cell_ag_give(n, i, s, t, gin);
  }
  return s;
}

typedef cell_status (*product_fn)(const cell_tensor *, const cell_tensor *, cell_tensor **);

static cell_status product(product_fn raw, const char *name, cell_backward_fn rule,
                           const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  const cell_tensor *in[2] = {a, b};
  if (!a || !b || !cell_ag_wants(2, in)) return raw(a, b, out);
  cell_status s = CELL_AG_RAW(raw(a, b, out));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_twice(cell_ag_node_new(name, rule, 2, in, 2, 0));
  if (n) {
    s = cell_ag_save(n, a);
    if (s == CELL_OK) s = cell_ag_save(n, b);
  }
  return cell_ag_finish(n, s, out);
}

cell_status cell_op_matmul(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  if (a && b && a->ndim == 1 && b->ndim == 1) return cell_op_dot(a, b, out);
  return product(cell_k_matmul, "MatMulBackward", matmul_backward, a, b, out);
}
cell_status cell_op_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  return product(cell_k_mm, "MatMulBackward", matmul_backward, a, b, out);
}
cell_status cell_op_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  return product(cell_k_bmm, "BatchMatMulBackward", matmul_backward, a, b, out);
}
cell_status cell_op_dot(const cell_tensor *a, const cell_tensor *b, cell_tensor **out) {
  return product(cell_k_dot, "DotBackward", dot_backward, a, b, out);
}

int cell_ag_binary_nodes(const char **names, int max) {
  int n = 0;
  for (int op = 0; op < CELL_BINOP_COUNT; op++)
    if (rules[op].node && n < max) names[n++] = rules[op].node;
  const char *more[] = {"MatMulBackward", "BatchMatMulBackward", "DotBackward"};
  for (size_t i = 0; i < sizeof more / sizeof more[0] && n < max; i++) names[n++] = more[i];
  return n;
}
