/* rules_nn_loss.c - the public losses of include/cell_nn.h (cross_entropy,
 * nll_loss, mse_loss, l1_loss, bce_with_logits) as recording wrappers over
 * the raw kernels of src/ops/nn.h, and their backward rules.
 *
 * The nodes keep their inputs as saved aliases (no copies) and what the
 * forward pass computed that the gradient needs: cross_entropy the
 * log-sum-exp of each row and the divisors of its mean. Class weights of
 * cross_entropy and nll_loss are constants (as PyTorch, which does not
 * differentiate them); bce_with_logits differentiates all four operands. */
#include "rules_nn.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/nn.h"
#include "../ops/device.h"

/* --- cross_entropy, nll_loss -------------------------------------------------------------- */

/* The arguments of both nodes: the options (weight, when given, is the
 * last saved tensor, not this pointer, which is kept NULL) and the divisor
 * of the mean. */
typedef struct {
  cell_ce_args ce;
  bool has_weight;
  double den;
} ce_node_args;

static void put_args(cell_node *n, const cell_ce_args *a, double den) {
  ce_node_args *na = CELL_AG_ARGS(n, ce_node_args);
  na->ce = *a;
  na->ce.weight = NULL;
  na->has_weight = a->weight != NULL;
  na->den = den;
}

static cell_ce_args get_args(const cell_node *n, const cell_tensor *weight) {
  cell_ce_args a = CELL_AG_ARGS(n, ce_node_args)->ce;
  a.weight = CELL_AG_ARGS(n, ce_node_args)->has_weight ? weight : NULL;
  return a;
}

/* Inputs: logits, target; saved: logits, target, lse, weight. */
static cell_status cross_entropy_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next && !n->in[1].next) return CELL_OK;
  cell_ce_args a = get_args(n, n->n_saved > 3 ? n->saved[3] : NULL);
  cell_tensor *gx = NULL, *gt = NULL;
  cell_status s = cell_k_cross_entropy_backward(g, n->saved[0], n->saved[2], n->saved[1], &a,
                                                CELL_AG_ARGS(n, ce_node_args)->den,
                                                n->in[0].next ? &gx : NULL,
                                                n->in[1].next ? &gt : NULL);
  s = cell_ag_give(n, 0, s, gx, gin);
  return cell_ag_give(n, 1, s, gt, gin);
}

cell_status cell_op_cross_entropy(const cell_tensor *logits, const cell_tensor *target,
                                  const cell_tensor *weight, int has_ignore, int64_t ignore_index,
                                  double label_smoothing, cell_reduction reduction,
                                  int64_t index_base, cell_tensor **out) {
  cell_ce_args a = {weight, has_ignore, ignore_index, label_smoothing, reduction, index_base};
  const cell_tensor *in[2] = {logits, target};
  if (!logits || !target || !out || !cell_ag_wants(2, in))
    return cell_k_cross_entropy(logits, target, &a, out, NULL, NULL);
  cell_tensor *r, *lse;
  double den;
  cell_status s = CELL_AG_RAW(cell_k_cross_entropy(logits, target, &a, &r, &lse, &den));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE(cell_ag_nn_node_name(NN_CROSS_ENTROPY), cross_entropy_backward, 2,
                              in, 4, ce_node_args);
  if (n) {
    put_args(n, &a, den);
    s = cell_ag_save(n, logits);
    s = nn_save_opt(n, s, target);
    s = nn_save_opt(n, s, lse);
    s = nn_save_opt(n, s, weight);
  }
  cell_tensor_release(lse);
  return cell_ag_record_end(n, s, r, out);
}

/* Input: logp; saved: logp, target, weight. */
static cell_status nll_loss_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_ce_args a = get_args(n, n->n_saved > 2 ? n->saved[2] : NULL);
  cell_tensor *gx = NULL;
  cell_status s = cell_k_nll_loss_backward(g, n->saved[0], n->saved[1], &a,
                                           CELL_AG_ARGS(n, ce_node_args)->den, &gx);
  return cell_ag_give(n, 0, s, gx, gin);
}

cell_status cell_op_nll_loss(const cell_tensor *logp, const cell_tensor *target,
                             const cell_tensor *weight, int has_ignore, int64_t ignore_index,
                             cell_reduction reduction, int64_t index_base, cell_tensor **out) {
  cell_ce_args a = {weight, has_ignore, ignore_index, 0.0, reduction, index_base};
  const cell_tensor *in[1] = {logp};
  if (!logp || !target || !out || !cell_ag_wants(1, in))
    return cell_k_nll_loss(logp, target, &a, out, NULL);
  cell_tensor *r;
  double den = 0;
  cell_status s = CELL_AG_RAW(cell_k_nll_loss(logp, target, &a, &r, &den));
  if (s != CELL_OK) return s;
  cell_node *n =
      CELL_AG_NODE(cell_ag_nn_node_name(NN_NLL_LOSS), nll_loss_backward, 1, in, 3, ce_node_args);
  if (n) {
    put_args(n, &a, den);
    s = cell_ag_save(n, logp);
    s = nn_save_opt(n, s, target);
    s = nn_save_opt(n, s, weight);
  }
  return cell_ag_record_end(n, s, r, out);
}

/* --- mse_loss, l1_loss ---------------------------------------------------------------------- */

/* Inputs: x, y; saved: x, y. The gradient of y is that of x with the
 * operands swapped. */
typedef struct {
  cell_loss_kind kind;
  cell_reduction reduction;
} pointwise_args;

static cell_status pointwise_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  cell_loss_kind kind = CELL_AG_ARGS(n, pointwise_args)->kind;
  cell_reduction red = CELL_AG_ARGS(n, pointwise_args)->reduction;
  const cell_tensor *x = n->saved[0], *y = n->saved[1];
  cell_tensor *gx = NULL, *gy = NULL;
  cell_status s = CELL_OK;
  if (n->in[0].next) s = cell_k_pointwise_loss_backward(kind, g, x, y, red, &gx);
  s = cell_ag_give(n, 0, s, gx, gin);
  if (s == CELL_OK && n->in[1].next) s = cell_k_pointwise_loss_backward(kind, g, y, x, red, &gy);
  return cell_ag_give(n, 1, s, gy, gin);
}

static cell_status pointwise_op(cell_loss_kind kind, const cell_tensor *x, const cell_tensor *y,
                                cell_reduction reduction, cell_tensor **out) {
  const cell_tensor *in[2] = {x, y};
  if (!x || !y || !out || !cell_ag_wants(2, in))
    return cell_k_pointwise_loss(kind, x, y, reduction, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_pointwise_loss(kind, x, y, reduction, &r));
  if (s != CELL_OK) return s;
  nn_node k = kind == CELL_LOSS_MSE ? NN_MSE_LOSS : NN_L1_LOSS;
  cell_node *n = CELL_AG_NODE(cell_ag_nn_node_name(k), pointwise_backward, 2, in, 2, pointwise_args);
  if (n) {
    *CELL_AG_ARGS(n, pointwise_args) = (pointwise_args){kind, reduction};
    s = cell_ag_save(n, x);
    s = nn_save_opt(n, s, y);
  }
  return cell_ag_record_end(n, s, r, out);
}

cell_status cell_op_mse_loss(const cell_tensor *x, const cell_tensor *y, cell_reduction reduction,
                             cell_tensor **out) {
  CELL_OP_NAMED("mse_loss", pointwise_op(CELL_LOSS_MSE, x, y, reduction, out));
}

cell_status cell_op_l1_loss(const cell_tensor *x, const cell_tensor *y, cell_reduction reduction,
                            cell_tensor **out) {
  CELL_OP_NAMED("l1_loss", pointwise_op(CELL_LOSS_L1, x, y, reduction, out));
}

/* --- bce_with_logits ---------------------------------------------------------------------------- */

/* Inputs: x, y, weight, pos_weight; saved: x, y, then weight and
 * pos_weight when given. */
typedef struct {
  cell_reduction reduction;
  bool has_weight, has_pos_weight;
} bce_args;

static cell_status bce_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const bce_args *a = CELL_AG_ARGS(n, bce_args);
  const cell_tensor *w = a->has_weight ? n->saved[2] : NULL;
  const cell_tensor *pw = a->has_pos_weight ? n->saved[2 + a->has_weight] : NULL;
  cell_tensor *t[4] = {NULL, NULL, NULL, NULL};
  cell_tensor **want[4];
  bool any = false;
  for (int i = 0; i < 4; i++) {
    want[i] = n->in[i].next ? &t[i] : NULL;
    any = any || want[i];
  }
  if (!any) return CELL_OK;
  cell_status s = cell_k_bce_with_logits_backward(g, n->saved[0], n->saved[1], w, pw,
                                                  a->reduction, want[0], want[1],
                                                  want[2], want[3]);
  for (int i = 0; i < 4; i++) s = cell_ag_give(n, i, s, t[i], gin);
  return s;
}

cell_status cell_op_bce_with_logits(const cell_tensor *logits, const cell_tensor *target,
                                    const cell_tensor *weight, const cell_tensor *pos_weight,
                                    cell_reduction reduction, cell_tensor **out) {
  const cell_tensor *in[4] = {logits, target, weight, pos_weight};
  if (!logits || !target || !out || !cell_ag_wants(4, in))
    return cell_k_bce_with_logits(logits, target, weight, pos_weight, reduction, out);
  cell_tensor *r;
  cell_status s =
      CELL_AG_RAW(cell_k_bce_with_logits(logits, target, weight, pos_weight, reduction, &r));
  if (s != CELL_OK) return s;
  cell_node *n =
      CELL_AG_NODE(cell_ag_nn_node_name(NN_BCE_WITH_LOGITS), bce_backward, 4, in, 4, bce_args);
  if (n) {
    *CELL_AG_ARGS(n, bce_args) = (bce_args){reduction, weight != NULL, pos_weight != NULL};
    s = cell_ag_save(n, logits);
    s = nn_save_opt(n, s, target);
    s = nn_save_opt(n, s, weight);
    s = nn_save_opt(n, s, pos_weight);
  }
  return cell_ag_record_end(n, s, r, out);
}
