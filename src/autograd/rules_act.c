/* rules_act.c - cell_op_activation (include/cell_act.h): the fused
 * activation kernel, recorded as one node whose backward is one kernel. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/kernel_list.h"
#include "cell_act.h"

typedef struct {
  int kind;
  double p0, p1;
} act_args;

/* saved[0] = x. */
static cell_status act_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const act_args *a = CELL_AG_ARGS(n, act_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_activation_backward(g, n->saved[0], a->kind, a->p0, a->p1, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_activation(const cell_tensor *x, cell_act kind, double p0, double p1,
                               cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !out || !cell_ag_wants(1, in)) return cell_k_activation(x, kind, p0, p1, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_activation(x, kind, p0, p1, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("ActivationBackward", act_backward, 1, in, 1, act_args);
  s = CELL_OK;
  if (n) {
    *CELL_AG_ARGS(n, act_args) = (act_args){(int)kind, p0, p1};
    s = cell_ag_save(n, x);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

int cell_ag_act_nodes(const char **names, int max) {
  const char *all[] = {"ActivationBackward", "CtcLossBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}

/* --- ctc_loss: the kernel gives the gradient of each sample's loss with
 * respect to log_probs; the backward scales it by g (one value a sample). */
static cell_status ctc_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const cell_tensor *gr = n->saved[0];
  int64_t shape[3] = {1, gr->shape[1], 1};
  cell_tensor *g3 = NULL, *t = NULL;
  cell_status s = cell_k_reshape(g, 3, shape, &g3);
  if (s == CELL_OK) s = cell_k_binary(CELL_OP_MUL, gr, g3, &t);
  cell_tensor_release(g3);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_ctc_loss(const cell_tensor *log_probs, const cell_tensor *targets,
                             const cell_tensor *input_lengths, const cell_tensor *target_lengths,
                             int64_t blank, int64_t index_base, int zero_infinity,
                             cell_tensor **loss) {
  if (!log_probs || !targets || !input_lengths || !target_lengths || !loss)
    return cell_error(CELL_ERR_VALUE, "ctc_loss: NULL argument");
  const cell_tensor *in[1] = {log_probs};
  cell_tensor *l = NULL, *gr = NULL;
  int wants = cell_ag_wants(1, in);
  cell_status s = wants ? CELL_AG_RAW(cell_k_ctc_loss(log_probs, targets, input_lengths,
                                                      target_lengths, blank, index_base,
                                                      zero_infinity, &l, &gr))
                        : cell_k_ctc_loss(log_probs, targets, input_lengths, target_lengths,
                                          blank, index_base, zero_infinity, &l, &gr);
  if (s != CELL_OK) return s;
  if (!wants) {
    cell_tensor_release(gr);
    *loss = l;
    return CELL_OK;
  }
  cell_node *n = CELL_AG_NODE("CtcLossBackward", ctc_backward, 1, in, 1, int);
  s = CELL_OK;
  if (n) s = cell_ag_save(n, gr);
  cell_tensor_release(gr);
  s = cell_ag_finish(n, s, &l);
  if (s == CELL_OK) *loss = l;
  return s;
}
