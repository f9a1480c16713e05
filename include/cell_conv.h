/* cell_conv.h - public C API: convolution and pooling: conv2d, max_pool2d, avg_pool2d.
 * Included by cell.h; the conventions at the top of cell.h apply. */
#ifndef CELL_CONV_H
#define CELL_CONV_H
#include "cell.h"

#endif
