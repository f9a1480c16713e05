/* nn.h - raw kernels for softmax, normalisation, dropout, embedding, losses (internal): they compute and never
 * record; src/autograd/rules_nn.c wraps them for the public API. */
#ifndef CELL_OPS_NN_H
#define CELL_OPS_NN_H
#include "cell.h"

#endif
