/* rules_nn.c - the public nn ops (include/cell_nn.h) as recording
 * wrappers over the raw kernels of src/ops/nn.h, and their backward rules:
 * softmax, log_softmax, batch_norm, layer_norm, dropout and embedding (the
 * losses are in rules_nn_loss.c). The table of every nn backward node is
 * here too.
 *
 * A wrapper runs the kernel, and when it records, keeps what the rule needs:
 * softmax its output; the norms their input and the statistics the kernel
 * computed (copies: later in-place changes to running statistics do not
 * matter);
 * dropout the generator position of its mask, which the rule regenerates;
 * embedding the ids. Rules compute with the raw kernels, whose results
 * cell_ag_give converts to each input's dtype. */
#include "rules_nn.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/nn.h"
#include "../ops/device.h"

static const char *const nn_node_names[] = {
    [NN_SOFTMAX] = "SoftmaxBackward",
    [NN_LOG_SOFTMAX] = "LogSoftmaxBackward",
    [NN_BATCH_NORM] = "BatchNormBackward",
    [NN_LAYER_NORM] = "LayerNormBackward",
    [NN_DROPOUT] = "DropoutBackward",
    [NN_EMBEDDING] = "EmbeddingBackward",
    [NN_CROSS_ENTROPY] = "CrossEntropyBackward",
    [NN_NLL_LOSS] = "NLLLossBackward",
    [NN_MSE_LOSS] = "MSELossBackward",
    [NN_L1_LOSS] = "L1LossBackward",
    [NN_BCE_WITH_LOGITS] = "BCEWithLogitsBackward",
};
_Static_assert(sizeof nn_node_names / sizeof nn_node_names[0] == NN_NODE_COUNT,
               "a name per nn backward node");

const char *cell_ag_nn_node_name(nn_node k) { return nn_node_names[k]; }

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_nn_nodes(const char **names, int max) {
  int n = 0;
  for (int k = 0; k < NN_NODE_COUNT && n < max; k++) names[n++] = nn_node_names[k];
  return n;
}

/* --- softmax ---------------------------------------------------------------------- */

/* saved: the output. */
typedef struct {
  int dim, log_;
} softmax_args;

/* In a pass that creates a graph (grad mode on), as recording ops:
 * softmax y (g - sum(g y)); log_softmax g - exp(y) sum(g), the sums
 * along dim. */
static cell_status softmax_graph(const cell_tensor *y, const cell_tensor *g, int dim, int log_,
                                 cell_tensor **out) {
  int d = dim < 0 ? dim + g->ndim : dim;
  int nd = g->ndim == 0 ? 0 : 1; /* a 0-d tensor reduces its one element */
  cell_tensor *a = NULL, *b = NULL;
  cell_status s;
  if (log_) {
    s = cell_op_reduce(CELL_RED_SUM, g, nd, &d, 1, &a);
    if (s == CELL_OK) s = cell_op_unary(CELL_OP_EXP, y, &b);
    cell_tensor *c = NULL;
    if (s == CELL_OK) s = cell_op_binary(CELL_OP_MUL, b, a, &c);
    if (s == CELL_OK) s = cell_op_binary(CELL_OP_SUB, g, c, out);
    cell_tensor_release(c);
  } else {
    s = cell_op_binary(CELL_OP_MUL, g, y, &a);
    if (s == CELL_OK) s = cell_op_reduce(CELL_RED_SUM, a, nd, &d, 1, &b);
    cell_tensor_release(a);
    a = NULL;
    if (s == CELL_OK) s = cell_op_binary(CELL_OP_SUB, g, b, &a);
    if (s == CELL_OK) s = cell_op_binary(CELL_OP_MUL, a, y, out);
  }
  cell_tensor_release(a);
  cell_tensor_release(b);
  return s;
}

static cell_status softmax_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const softmax_args *a = CELL_AG_ARGS(n, softmax_args);
  cell_tensor *t = NULL;
  cell_status s = cell_grad_is_enabled() ? softmax_graph(n->saved[0], g, a->dim, a->log_, &t)
                                         : cell_k_softmax_backward(n->saved[0], g, a->dim, a->log_, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status softmax_op(const cell_tensor *x, int dim, int log_, cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !out || !cell_ag_wants(1, in)) return cell_k_softmax(x, dim, log_, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_softmax(x, dim, log_, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE(nn_node_names[log_ ? NN_LOG_SOFTMAX : NN_SOFTMAX], softmax_backward,
                              1, in, 1, softmax_args);
  if (n) {
    n->twice = true;
    *CELL_AG_ARGS(n, softmax_args) = (softmax_args){dim, log_};
    s = cell_ag_save(n, r);
  }
  return cell_ag_record_end(n, s, r, out);
}

cell_status cell_op_softmax(const cell_tensor *x, int dim, cell_tensor **out) {
  CELL_OP_NAMED("softmax", softmax_op(x, dim, 0, out));
}

cell_status cell_op_log_softmax(const cell_tensor *x, int dim, cell_tensor **out) {
  CELL_OP_NAMED("log_softmax", softmax_op(x, dim, 1, out));
}

/* --- batch_norm, layer_norm --------------------------------------------------------------- */

/* Inputs: x, weight, bias; saved: x, the statistics (batch_norm: mean and
 * variance; layer_norm: mean and 1/std of each row), weight. */
typedef struct {
  nn_node kind;   /* NN_BATCH_NORM or NN_LAYER_NORM */
  int k;          /* training (batch_norm) or normalized_ndim (layer_norm) */
  bool has_weight;
  double eps;     /* batch_norm */
} norm_args;

static cell_status norm_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const norm_args *a = CELL_AG_ARGS(n, norm_args);
  bool bn = a->kind == NN_BATCH_NORM;
  const cell_tensor *x = n->saved[0], *s1 = n->saved[1], *s2 = n->saved[2];
  const cell_tensor *w = a->has_weight ? n->saved[3] : NULL;
  cell_tensor *t[3] = {NULL, NULL, NULL};
  cell_tensor **want[3];
  for (int i = 0; i < 3; i++) want[i] = n->in[i].next ? &t[i] : NULL;
  if (!want[0] && !want[1] && !want[2]) return CELL_OK;
  cell_status s = bn ? cell_k_batch_norm_backward(g, x, w, s1, s2, a->eps, a->k, want[0], want[1],
                                                  want[2])
                     : cell_k_layer_norm_backward(g, x, a->k, w, s1, s2, want[0], want[1],
                                                  want[2]);
  for (int i = 0; i < 3; i++) s = cell_ag_give(n, i, s, t[i], gin);
  return s;
}

/* Record a norm's node, saving x, the statistics s1, s2 and weight. */
static cell_status record_norm(nn_node kind, int k, double eps, const cell_tensor *const *in,
                               cell_tensor *r, cell_tensor *s1, cell_tensor *s2,
                               cell_tensor **out) {
  cell_node *n = CELL_AG_NODE(nn_node_names[kind], norm_backward, 3, in, 4, norm_args);
  cell_status s = CELL_OK;
  if (n) {
    *CELL_AG_ARGS(n, norm_args) = (norm_args){kind, k, in[1] != NULL, eps};
    s = cell_ag_save(n, in[0]);
    s = nn_save_opt(n, s, s1);
    s = nn_save_opt(n, s, s2);
    s = nn_save_opt(n, s, in[1]);
  }
  return cell_ag_record_end(n, s, r, out);
}

static cell_status check_running(const char *what, const cell_tensor *t) {
  if (t && cell_grad_is_enabled() && cell_tensor_requires_grad(t))
    return cell_error(CELL_ERR_RUNTIME,
                      "batch_norm: %s requires grad, so it cannot be updated in place while "
                      "gradients are recorded; running statistics are buffers (requires_grad = "
                      "false)",
                      what);
  return CELL_OK;
}

/* The running statistics are updated only once the node is recorded, so a
 * failed call leaves them as they were. */
cell_status cell_op_batch_norm(const cell_tensor *x, cell_tensor *running_mean,
                               cell_tensor *running_var, const cell_tensor *weight,
                               const cell_tensor *bias, int training, double momentum, double eps,
                               cell_tensor **out) {
  if (training) {
    CELL_TRY(check_running("running_mean", running_mean));
    CELL_TRY(check_running("running_var", running_var));
  }
  const cell_tensor *in[3] = {x, weight, bias};
  if (!x || !out || !cell_ag_wants(3, in))
    return cell_k_batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps,
                             1, out, NULL, NULL);
  cell_tensor *r, *mean, *var;
  cell_status s = CELL_AG_RAW(cell_k_batch_norm(x, running_mean, running_var, weight, bias,
                                                training, momentum, eps, 0, &r, &mean, &var));
  if (s != CELL_OK) return s;
  s = record_norm(NN_BATCH_NORM, training != 0, eps, in, r, mean, var, out);
  if (s == CELL_OK && training)
    cell_k_batch_norm_update(running_mean, running_var, mean, var,
                             cell_tensor_numel(x) / x->shape[1], momentum);
  cell_tensor_release(mean);
  cell_tensor_release(var);
  return s;
}

cell_status cell_op_layer_norm(const cell_tensor *x, int normalized_ndim,
                               const cell_tensor *weight, const cell_tensor *bias, double eps,
                               cell_tensor **out) {
  const cell_tensor *in[3] = {x, weight, bias};
  if (!x || !out || !cell_ag_wants(3, in))
    return cell_k_layer_norm(x, normalized_ndim, weight, bias, eps, out, NULL, NULL);
  cell_tensor *r, *mean, *rs;
  cell_status s =
      CELL_AG_RAW(cell_k_layer_norm(x, normalized_ndim, weight, bias, eps, &r, &mean, &rs));
  if (s != CELL_OK) return s;
  s = record_norm(NN_LAYER_NORM, normalized_ndim, eps, in, r, mean, rs, out);
  cell_tensor_release(mean);
  cell_tensor_release(rs);
  return s;
}

/* --- dropout ------------------------------------------------------------------------------ */

/* The mask is regenerated from the stream the forward drew. */
typedef struct {
  uint64_t seed, first; /* the generator's key and first block */
  double p;
} dropout_args;

static cell_status dropout_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const dropout_args *a = CELL_AG_ARGS(n, dropout_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_dropout_apply(g, a->p, a->seed, a->first, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_dropout(const cell_tensor *x, double p, int training, cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "dropout: NULL argument");
  if (!(p >= 0 && p <= 1))
    return cell_error(CELL_ERR_VALUE, "dropout: the probability p must lie in [0, 1], got %g", p);
  if (!training || p == 0) {
    cell_tensor_retain((cell_tensor *)x);
    *out = (cell_tensor *)x;
    return CELL_OK;
  }
  const cell_tensor *in[1] = {x};
  if (!cell_ag_wants(1, in)) return cell_k_dropout(x, p, NULL, NULL, out);
  cell_tensor *r;
  uint64_t seed, first;
  cell_status s = CELL_AG_RAW(cell_k_dropout(x, p, &seed, &first, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE(nn_node_names[NN_DROPOUT], dropout_backward, 1, in, 0, dropout_args);
  if (n) *CELL_AG_ARGS(n, dropout_args) = (dropout_args){seed, first, p};
  return cell_ag_record_end(n, s, r, out);
}

/* --- embedding ---------------------------------------------------------------------------- */

/* Input: weight; saved: the ids. Half-precision tables accumulate in
 * float32. */
typedef struct {
  int has_padding;
  int64_t padding_idx, index_base;
} embedding_args;

static cell_status embedding_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const embedding_args *a = CELL_AG_ARGS(n, embedding_args);
  cell_dtype wd = n->in[0].dtype;
  cell_dtype acc = wd == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
  cell_tensor *t = NULL;
  cell_status s = cell_k_embedding_backward(g, n->saved[0], n->in[0].shape[0], acc, a->has_padding,
                                            a->padding_idx, a->index_base, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_embedding(const cell_tensor *ids, const cell_tensor *weight, int has_padding,
                              int64_t padding_idx, int64_t index_base, cell_tensor **out) {
  if (ids && weight && has_padding && weight->ndim == 2 &&
      (padding_idx < index_base || padding_idx - index_base >= weight->shape[0]))
    return cell_error(CELL_ERR_VALUE,
                      "embedding: padding_idx %lld is out of range for a table of %lld rows",
                      (long long)padding_idx, (long long)weight->shape[0]);
  const cell_tensor *in[1] = {weight};
  if (!ids || !weight || !out || !cell_ag_wants(1, in))
    return cell_k_embedding(ids, weight, index_base, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_embedding(ids, weight, index_base, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE(nn_node_names[NN_EMBEDDING], embedding_backward, 1, in, 1, embedding_args);
  if (n) {
    *CELL_AG_ARGS(n, embedding_args) = (embedding_args){has_padding != 0, padding_idx, index_base};
    s = cell_ag_save(n, ids);
  }
  return cell_ag_record_end(n, s, r, out);
}
