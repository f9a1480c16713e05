/* conv.h - raw kernels for convolution and pooling (internal): they compute and never
 * record; src/autograd/rules_conv.c wraps them for the public API. */
#ifndef CELL_OPS_CONV_H
#define CELL_OPS_CONV_H
#include "cell.h"

#endif
