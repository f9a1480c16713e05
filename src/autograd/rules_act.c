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
  if (max < 1) return 0;
  names[0] = "ActivationBackward";
  return 1;
}
