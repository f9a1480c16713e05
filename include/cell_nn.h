/* cell_nn.h - public C API: neural-network ops: softmax, log_softmax, batch_norm, layer_norm, dropout, embedding and the fused losses.
 * Included by cell.h; the conventions at the top of cell.h apply. */
#ifndef CELL_NN_H
#define CELL_NN_H
#include "cell.h"

#endif
