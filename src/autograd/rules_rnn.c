/* rules_rnn.c - cell_op_rnn (include/cell_rnn.h) as a recording wrapper
 * over the rnn_forward kernel, and its backward rule: one node per
 * layer-direction ("RNNBackward") that keeps the input, the weights, the
 * lengths and the kernel's workspace (gates and states of every step), and
 * runs the whole backward through time in one rnn_backward kernel. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/kernel_list.h"

static const char *const rnn_node_name = "RNNBackward";

int cell_ag_rnn_nodes(const char **names, int max) {
  if (max < 1) return 0;
  names[0] = rnn_node_name;
  return 1;
}

/* Inputs: x, h0, c0, w_ih, w_hh, b_ih, b_hh (c0, biases may be NULL);
 * saved: x, w_ih, w_hh, the workspace, the lengths (may be NULL). */
typedef struct {
  int mode, reverse, has_bias;
} rnn_args;

static cell_status rnn_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const rnn_args *a = CELL_AG_ARGS(n, rnn_args);
  cell_tensor *r[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  cell_status s = cell_k_rnn_backward(a->mode, n->saved[0], n->saved[1], n->saved[2], n->saved[3],
                                      n->saved[4], a->reverse, a->has_bias, g, &r[0], &r[1],
                                      a->mode == CELL_RNN_LSTM ? &r[2] : NULL, &r[3], &r[4],
                                      a->has_bias ? &r[5] : NULL, a->has_bias ? &r[6] : NULL);
  for (int i = 0; i < 7; i++) {
    if (s == CELL_OK && r[i] && n->in[i].next)
      s = cell_ag_give(n, i, s, r[i], gin);
    else
      cell_tensor_release(r[i]);
  }
  return s;
}

cell_status cell_op_rnn(cell_rnn_mode mode, const cell_tensor *x, const cell_tensor *h0,
                        const cell_tensor *c0, const cell_tensor *w_ih, const cell_tensor *w_hh,
                        const cell_tensor *b_ih, const cell_tensor *b_hh, const cell_tensor *lengths,
                        int reverse, cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "rnn: NULL argument");
  const cell_tensor *in[7] = {x, h0, c0, w_ih, w_hh, b_ih, b_hh};
  cell_tensor *r = NULL, *ws = NULL;
  if (!cell_ag_wants(7, in)) {
    cell_status s = cell_k_rnn_forward((int)mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths,
                                       reverse != 0, &r, &ws);
    cell_tensor_release(ws);
    if (s == CELL_OK) *out = r;
    return s;
  }
  cell_status s = CELL_AG_RAW(cell_k_rnn_forward((int)mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh,
                                                 lengths, reverse != 0, &r, &ws));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE(rnn_node_name, rnn_backward, 7, in, 5, rnn_args);
  if (n) {
    *CELL_AG_ARGS(n, rnn_args) = (rnn_args){(int)mode, reverse != 0, b_ih != NULL};
    s = cell_ag_save(n, x);
    if (s == CELL_OK) s = cell_ag_save(n, w_ih);
    if (s == CELL_OK) s = cell_ag_save(n, w_hh);
    if (s == CELL_OK) s = cell_ag_save(n, ws);
    if (s == CELL_OK) s = cell_ag_save(n, lengths);
  }
  cell_tensor_release(ws);
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}
