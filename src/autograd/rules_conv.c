/* rules_conv.c - the public conv ops (include/cell_conv.h) as recording
 * wrappers over the raw kernels of src/ops/conv.h, and their backward rules.
 *
 * Each op records one node whose integer arguments (the validated stride,
 * padding, dilation, groups or kernel) live in iarg, so the backward kernel
 * rebuilds the forward's geometry from them and the saved tensors:
 * - Conv2dBackward saves x and w (w for x's gradient, x for w's); each of
 *   the three gradients is computed only when its input needs it;
 * - MaxPool2dBackward saves the positions of the maxima (int64);
 * - AvgPool2dBackward saves nothing: the input's shape is on the node. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ops.h"
#include "../ops/conv.h"

/* iarg layout shared by the three nodes. */
enum {
  A_SH, A_SW,             /* stride */
  A_PT, A_PB, A_PL, A_PR, /* padding */
  A_DH, A_DW,             /* dilation (conv) */
  A_KH = A_DH, A_KW = A_DW, /* kernel (pools) */
  A_GROUPS,               /* groups (conv), count_include_pad (avg pool) */
  A_COUNT
};
_Static_assert(A_COUNT <= CELL_MAX_DIMS + 4, "the conv arguments fit a node's iarg");

/* Store the geometry's arguments; validation bounds each by 2^30. */
static void put_geom(cell_node *n, const cell_conv_geom *g, int64_t a, int64_t b, int64_t last) {
  n->iarg[A_SH] = (int)g->sh;
  n->iarg[A_SW] = (int)g->sw;
  n->iarg[A_PT] = (int)g->pt;
  n->iarg[A_PB] = (int)g->pb;
  n->iarg[A_PL] = (int)g->pl;
  n->iarg[A_PR] = (int)g->pr;
  n->iarg[A_DH] = (int)a;
  n->iarg[A_DW] = (int)b;
  n->iarg[A_GROUPS] = (int)last;
}

static void get_geom(const cell_node *n, int64_t *stride, int64_t *padding, int64_t *pair) {
  stride[0] = n->iarg[A_SH];
  stride[1] = n->iarg[A_SW];
  for (int i = 0; i < 4; i++) padding[i] = n->iarg[A_PT + i];
  pair[0] = n->iarg[A_DH];
  pair[1] = n->iarg[A_DW];
}

/* --- conv2d ------------------------------------------------------------------------ */

/* inputs (x, w, b); saved (x, w). */
static cell_status conv2d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  int64_t stride[2], padding[4], dilation[2];
  get_geom(n, stride, padding, dilation);
  cell_tensor *gx = NULL, *gw = NULL, *gb = NULL;
  cell_status s = cell_k_conv2d_backward(gy, n->saved[0], n->saved[1], stride, padding, dilation,
                                         n->iarg[A_GROUPS], n->next[0] ? &gx : NULL,
                                         n->next[1] ? &gw : NULL, n->next[2] ? &gb : NULL);
  s = cell_ag_give(n, 0, s, gx, gin);
  s = cell_ag_give(n, 1, s, gw, gin);
  return cell_ag_give(n, 2, s, gb, gin);
}

cell_status cell_op_conv2d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                           const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                           int64_t groups, cell_tensor **out) {
  const cell_tensor *in[3] = {x, w, b};
  if (!x || !w || !out || !cell_ag_wants(3, in))
    return cell_k_conv2d(x, w, b, stride, padding, dilation, groups, out);
  cell_conv_geom g;
  CELL_TRY(cell_k_conv2d_geom(x, w, b, stride, padding, dilation, groups, &g));
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_conv2d(x, w, b, stride, padding, dilation, groups, &r));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_node_new("Conv2dBackward", conv2d_backward, 3, in);
  if (n) {
    put_geom(n, &g, g.dh, g.dw, g.groups);
    s = cell_ag_save(n, x);
    if (s == CELL_OK) s = cell_ag_save(n, w);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

/* --- pools ------------------------------------------------------------------------ */

/* saved[0]: the positions of the maxima. */
static cell_status max_pool2d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  if (!n->next[0]) return CELL_OK;
  cell_tensor *gx = NULL;
  cell_status s =
      cell_k_max_pool2d_backward(gy, n->saved[0], n->in_shape[0], n->in_dtype[0], &gx);
  return cell_ag_give(n, 0, s, gx, gin);
}

cell_status cell_op_max_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !out || !cell_ag_wants(1, in))
    return cell_k_max_pool2d(x, kernel, stride, padding, out, NULL);
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("max_pool2d", x->ndim, x->shape, kernel, stride, padding, &g));
  cell_tensor *r = NULL, *idx = NULL;
  cell_status s = CELL_AG_RAW(cell_k_max_pool2d(x, kernel, stride, padding, &r, &idx));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_node_new("MaxPool2dBackward", max_pool2d_backward, 1, in);
  if (n) {
    put_geom(n, &g, g.kh, g.kw, 0);
    s = cell_ag_save(n, idx);
  }
  cell_tensor_release(idx);
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

static cell_status avg_pool2d_backward(cell_node *n, const cell_tensor *gy, cell_tensor **gin) {
  if (!n->next[0]) return CELL_OK;
  int64_t stride[2], padding[4], kernel[2];
  get_geom(n, stride, padding, kernel);
  cell_tensor *gx = NULL;
  cell_status s = cell_k_avg_pool2d_backward(gy, n->in_shape[0], kernel, stride, padding,
                                             n->iarg[A_GROUPS], n->in_dtype[0], &gx);
  return cell_ag_give(n, 0, s, gx, gin);
}

cell_status cell_op_avg_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, int count_include_pad, cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !out || !cell_ag_wants(1, in))
    return cell_k_avg_pool2d(x, kernel, stride, padding, count_include_pad, out);
  cell_conv_geom g;
  CELL_TRY(cell_k_pool2d_geom("avg_pool2d", x->ndim, x->shape, kernel, stride, padding, &g));
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_avg_pool2d(x, kernel, stride, padding, count_include_pad, &r));
  if (s != CELL_OK) return s;
  cell_node *n = cell_ag_node_new("AvgPool2dBackward", avg_pool2d_backward, 1, in);
  if (n) put_geom(n, &g, g.kh, g.kw, count_include_pad != 0);
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_conv_nodes(const char **names, int max) {
  static const char *const all[] = {"Conv2dBackward", "MaxPool2dBackward", "AvgPool2dBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}
