/* rules_conv.c - the public conv ops (include/cell_conv.h) as recording
 * wrappers over the raw kernels of src/ops/conv.h, and their backward rules.
 *
 * Each op records one node whose arguments (the validated stride, padding,
 * dilation, groups or kernel) live in its geom_args, so the backward kernel
 * rebuilds the forward's geometry from them and the saved tensors:
 * - Conv2dBackward saves x and w (w for x's gradient, x for w's); each of
 *   the three gradients is computed only when its input needs it;
 * - MaxPool2dBackward saves the positions of the maxima (int64);
 * - AvgPool2dBackward saves nothing: the input's shape is on the node;
 * - Conv3dBackward and ConvTranspose3dBackward save x and w as Conv2dBackward. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/conv.h"
#include "../ops/device.h"

/* The arguments of the three nodes: the forward's geometry. */
typedef struct {
  int64_t stride[2], padding[4]; /* padding: top, bottom, left, right */
  int64_t pair[2];               /* dilation (conv) or kernel (pools) */
  int64_t last;                  /* groups (conv), count_include_pad (avg pool) */
  int64_t ceil;                  /* ceil_mode (avg pool) */
} geom_args;

static void put_geom(cell_node *n, const cell_conv_geom *g, int64_t a, int64_t b, int64_t last) {
  geom_args *ga = CELL_AG_ARGS(n, geom_args);
  ga->stride[0] = g->sh;
  ga->stride[1] = g->sw;
  ga->padding[0] = g->pt;
  ga->padding[1] = g->pb;
  ga->padding[2] = g->pl;
  ga->padding[3] = g->pr;
  ga->pair[0] = a;
  ga->pair[1] = b;
  ga->last = last;
}

/* --- conv2d ------------------------------------------------------------------------ */

/* inputs (x, w, b); saved (x, w). */
static cell_status conv2d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  const geom_args *ga = CELL_AG_ARGS(n, geom_args);
  cell_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  cell_status s = cell_k_conv2d_backward(gy, n->saved[0], n->saved[1], ga->stride, ga->padding,
                                         ga->pair, ga->last, n->in[0].next ? &gx : NULL,
                                         n->in[1].next ? &gw : NULL, n->in[2].next ? &gb : NULL);
  s = cell_ag_give(n, 0, s, gx, gin);
  s = cell_ag_give(n, 1, s, gw, gin);
  return cell_ag_give(n, 2, s, gb, gin);
}

static cell_status conv2d_op(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                             const int64_t *stride, const int64_t *padding,
                             const int64_t *dilation, int64_t groups, cell_tensor **out) {
  const cell_tensor *in[3] = {x, w, b};
  if (!x || !w || !out || !cell_ag_wants(3, in))
    return cell_k_conv2d(x, w, b, stride, padding, dilation, groups, out);
  cell_conv_geom g;
  CELL_TRY(cell_k_conv2d_geom(x, w, b, stride, padding, dilation, groups, &g));
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_conv2d(x, w, b, stride, padding, dilation, groups, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("Conv2dBackward", conv2d_backward, 3, in, 2, geom_args);
  if (n) {
    put_geom(n, &g, g.dh, g.dw, g.groups);
    s = cell_ag_save(n, x);
    if (s == CELL_OK) s = cell_ag_save(n, w);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

cell_status cell_op_conv2d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                           const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                           int64_t groups, cell_tensor **out) {
  CELL_OP_NAMED("conv2d", conv2d_op(x, w, b, stride, padding, dilation, groups, out));
}

/* --- conv3d and conv_transpose3d -------------------------------------------------------- */

/* The arguments of both nodes; inputs (x, w, b), saved (x, w). */
typedef struct {
  int64_t stride[3], padding[6], dilation[3], output_padding[3];
  int64_t groups;
} geom3_args;

static void put_geom3(cell_node *n, const cell_conv3d_geom *g, const int64_t *output_padding) {
  geom3_args *ga = CELL_AG_ARGS(n, geom3_args);
  for (int i = 0; i < 3; i++) {
    ga->stride[i] = g->s[i];
    ga->dilation[i] = g->dl[i];
    ga->output_padding[i] = output_padding ? output_padding[i] : 0;
  }
  for (int i = 0; i < 6; i++) ga->padding[i] = g->pd[i];
  ga->groups = g->groups;
}

static cell_status conv3d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  const geom3_args *ga = CELL_AG_ARGS(n, geom3_args);
  cell_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  cell_status s = cell_k_conv3d_backward(gy, n->saved[0], n->saved[1], ga->stride, ga->padding,
                                         ga->dilation, ga->groups, n->in[0].next ? &gx : NULL,
                                         n->in[1].next ? &gw : NULL, n->in[2].next ? &gb : NULL);
  s = cell_ag_give(n, 0, s, gx, gin);
  s = cell_ag_give(n, 1, s, gw, gin);
  return cell_ag_give(n, 2, s, gb, gin);
}

static cell_status conv_transpose3d_backward(cell_node *n, const cell_tensor *gy,
                                             cell_tensor **gin) {
  const geom3_args *ga = CELL_AG_ARGS(n, geom3_args);
  cell_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  cell_status s = cell_k_conv_transpose3d_backward(
      gy, n->saved[0], n->saved[1], ga->stride, ga->padding, ga->output_padding, ga->dilation,
      ga->groups, n->in[0].next ? &gx : NULL, n->in[1].next ? &gw : NULL,
      n->in[2].next ? &gb : NULL);
  s = cell_ag_give(n, 0, s, gx, gin);
  s = cell_ag_give(n, 1, s, gw, gin);
  return cell_ag_give(n, 2, s, gb, gin);
}

static cell_status conv3d_op(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                             const int64_t *stride, const int64_t *padding,
                             const int64_t *dilation, int64_t groups, cell_tensor **out) {
  const cell_tensor *in[3] = {x, w, b};
  if (!x || !w || !out || !cell_ag_wants(3, in))
    return cell_k_conv3d(x, w, b, stride, padding, dilation, groups, out);
  cell_conv3d_geom g;
  CELL_TRY(cell_k_conv3d_geom(x, w, b, stride, padding, dilation, groups, &g));
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_conv3d(x, w, b, stride, padding, dilation, groups, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("Conv3dBackward", conv3d_backward, 3, in, 2, geom3_args);
  if (n) {
    put_geom3(n, &g, NULL);
    s = cell_ag_save(n, x);
    if (s == CELL_OK) s = cell_ag_save(n, w);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

cell_status cell_op_conv3d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                           const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                           int64_t groups, cell_tensor **out) {
  CELL_OP_NAMED("conv3d", conv3d_op(x, w, b, stride, padding, dilation, groups, out));
}

static cell_status conv_transpose3d_op(const cell_tensor *x, const cell_tensor *w,
                                       const cell_tensor *b, const int64_t *stride,
                                       const int64_t *padding, const int64_t *output_padding,
                                       const int64_t *dilation, int64_t groups,
                                       cell_tensor **out) {
  const cell_tensor *in[3] = {x, w, b};
  if (!x || !w || !out || !cell_ag_wants(3, in))
    return cell_k_conv_transpose3d(x, w, b, stride, padding, output_padding, dilation, groups,
                                   out);
  cell_conv3d_geom g;
  CELL_TRY(cell_k_conv_transpose3d_geom(x, w, b, stride, padding, output_padding, dilation,
                                        groups, &g));
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_conv_transpose3d(x, w, b, stride, padding, output_padding,
                                                      dilation, groups, &r));
  if (s != CELL_OK) return s;
  cell_node *n =
      CELL_AG_NODE("ConvTranspose3dBackward", conv_transpose3d_backward, 3, in, 2, geom3_args);
  if (n) {
    put_geom3(n, &g, output_padding);
    s = cell_ag_save(n, x);
    if (s == CELL_OK) s = cell_ag_save(n, w);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

cell_status cell_op_conv_transpose3d(const cell_tensor *x, const cell_tensor *w,
                                     const cell_tensor *b, const int64_t *stride,
                                     const int64_t *padding, const int64_t *output_padding,
                                     const int64_t *dilation, int64_t groups, cell_tensor **out) {
  CELL_OP_NAMED("conv_transpose3d", conv_transpose3d_op(x, w, b, stride, padding, output_padding,
                                                        dilation, groups, out));
}

/* --- pools ------------------------------------------------------------------------ */

/* saved[0]: the positions of the maxima. */
static cell_status max_pool2d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *gx = NULL;
  cell_status s =
      cell_k_max_pool2d_backward(gy, n->saved[0], n->in[0].shape, n->in[0].dtype, &gx);
  return cell_ag_give(n, 0, s, gx, gin);
}

cell_status cell_op_max_pool2d_ex(const cell_tensor *x, const int64_t *kernel,
                                  const int64_t *stride, const int64_t *padding,
                                  const int64_t *dilation, int ceil_mode, cell_tensor **out,
                                  cell_tensor **indices) {
  const cell_tensor *in[1] = {x};
  if (!x || !out || !cell_ag_wants(1, in))
    return cell_k_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out, indices);
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("max_pool2d", x->ndim, x->shape, kernel, stride, padding, dilation,
                              ceil_mode, &g));
  cell_tensor *r = NULL, *idx = NULL;
  cell_status s = CELL_AG_RAW(
      cell_k_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, &r, &idx));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("MaxPool2dBackward", max_pool2d_backward, 1, in, 1, geom_args);
  if (n) {
    put_geom(n, &g, g.kh, g.kw, 0);
    s = cell_ag_save(n, idx);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) {
    *out = r;
    if (indices) *indices = idx;
    else cell_tensor_release(idx);
  } else {
    cell_tensor_release(idx);
  }
  return s;
}

cell_status cell_op_max_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, cell_tensor **out) {
  return cell_op_max_pool2d_ex(x, kernel, stride, padding, NULL, 0, out, NULL);
}

static cell_status avg_pool2d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const geom_args *ga = CELL_AG_ARGS(n, geom_args);
  cell_tensor *gx = NULL;
  cell_status s =
      cell_k_avg_pool2d_backward(gy, n->in[0].shape, ga->pair, ga->stride, ga->padding,
                                 (int)ga->ceil, (int)ga->last, n->in[0].dtype, &gx);
  return cell_ag_give(n, 0, s, gx, gin);
}

cell_status cell_op_avg_pool2d_ex(const cell_tensor *x, const int64_t *kernel,
                                  const int64_t *stride, const int64_t *padding, int ceil_mode,
                                  int count_include_pad, cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !out || !cell_ag_wants(1, in))
    return cell_k_avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, out);
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("avg_pool2d", x->ndim, x->shape, kernel, stride, padding, NULL,
                              ceil_mode, &g));
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(
      cell_k_avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("AvgPool2dBackward", avg_pool2d_backward, 1, in, 0, geom_args);
  if (n) {
    put_geom(n, &g, g.kh, g.kw, count_include_pad != 0);
    CELL_AG_ARGS(n, geom_args)->ceil = ceil_mode != 0;
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

cell_status cell_op_avg_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, int count_include_pad, cell_tensor **out) {
  return cell_op_avg_pool2d_ex(x, kernel, stride, padding, 0, count_include_pad, out);
}

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_conv_nodes(const char **names, int max) {
  static const char *const all[] = {"Conv2dBackward", "Conv3dBackward", "ConvTranspose3dBackward",
                                    "MaxPool2dBackward", "AvgPool2dBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}
