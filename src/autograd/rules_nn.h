/* rules_nn.h - what the nn rule files (rules_nn.c, rules_nn_loss.c) share:
 * the table of their backward nodes and small recording helpers
 * (internal). */
#ifndef CELL_AUTOGRAD_RULES_NN_H
#define CELL_AUTOGRAD_RULES_NN_H
#include "autograd.h"

/* The backward nodes of the nn family, one row each in nn_node_names
 * (rules_nn.c), which cell_ag_nn_nodes lists. */
typedef enum {
  NN_SOFTMAX = 0,
  NN_LOG_SOFTMAX,
  NN_BATCH_NORM,
  NN_LAYER_NORM,
  NN_DROPOUT,
  NN_EMBEDDING,
  NN_CROSS_ENTROPY,
  NN_NLL_LOSS,
  NN_MSE_LOSS,
  NN_L1_LOSS,
  NN_BCE_WITH_LOGITS,
  NN_NODE_COUNT
} nn_node;

const char *cell_ag_nn_node_name(nn_node k);

/* Save t when it is not NULL (and s is still CELL_OK). */
static inline cell_status nn_save_opt(cell_node *n, cell_status s, const cell_tensor *t) {
  return s == CELL_OK && t ? cell_ag_save(n, t) : s;
}

#endif
