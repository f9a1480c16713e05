/* rules_nn.c - the public nn ops (include/cell_nn.h) as recording
 * wrappers over the raw kernels of src/ops/nn.h, and their backward rules. */
#include "autograd.h"

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_nn_nodes(const char **names, int max) {
  (void)names;
  (void)max;
  return 0;
}
