/* rules_conv.c - the public conv ops (include/cell_conv.h) as recording
 * wrappers over the raw kernels of src/ops/conv.h, and their backward rules. */
#include "autograd.h"

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_conv_nodes(const char **names, int max) {
  (void)names;
  (void)max;
  return 0;
}
