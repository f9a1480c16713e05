/* rules_sample.c - the resampling ops of include/cell_sample.h as recording
 * wrappers over the kernels of src/ops (interpolate.c, fold.c), and their
 * backward rules: interpolate's is its adjoint kernel, unfold's is fold
 * and fold's is unfold. The random ops of cell_sample.h do not record
 * (src/ops/random.c). */
#include "autograd.h"
#include "../ops/kernel_list.h"

/* --- interpolate ------------------------------------------------------------------ */

typedef struct {
  int mode, align_corners, has_scales;
  double scales[2];
} interp_args;

static cell_status interpolate_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const interp_args *a = CELL_AG_ARGS(n, interp_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_interpolate_backward(g, a->mode, a->align_corners, n->in[0].ndim,
                                              n->in[0].shape, a->has_scales ? a->scales : NULL,
                                              n->in[0].dtype, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_interpolate(const cell_tensor *x, const int64_t *size, const double *scales,
                                cell_interp_mode mode, int align_corners, cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !size || !out || !cell_ag_wants(1, in))
    return cell_k_interpolate(x, (int)mode, align_corners, size, scales, out);
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_interpolate(x, (int)mode, align_corners, size, scales, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("InterpolateBackward", interpolate_backward, 1, in, 0, interp_args);
  if (n) {
    interp_args *a = CELL_AG_ARGS(n, interp_args);
    a->mode = (int)mode;
    a->align_corners = align_corners;
    a->has_scales = scales != NULL;
    for (int d = 0; scales && d < x->ndim - 2 && d < 2; d++) a->scales[d] = scales[d];
  }
  return cell_ag_record_end(n, s, r, out);
}

/* --- unfold and fold ---------------------------------------------------------------- */

typedef struct {
  int64_t kernel[2], dilation[2], padding[2], stride[2];
  int64_t size[2]; /* fold: the output size; unfold: the input's (H, W) */
} fold_args;

static void put(fold_args *a, const int64_t *kernel, const int64_t *dilation,
                const int64_t *padding, const int64_t *stride, int64_t h, int64_t w) {
  for (int i = 0; i < 2; i++) {
    a->kernel[i] = kernel[i];
    a->dilation[i] = dilation ? dilation[i] : 1;
    a->padding[i] = padding ? padding[i] : 0;
    a->stride[i] = stride ? stride[i] : 1;
  }
  a->size[0] = h;
  a->size[1] = w;
}

static cell_status unfold_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const fold_args *a = CELL_AG_ARGS(n, fold_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_fold(g, a->size, a->kernel, a->dilation, a->padding, a->stride, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status fold_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const fold_args *a = CELL_AG_ARGS(n, fold_args);
  cell_tensor *t = NULL;
  cell_status s = cell_k_unfold(g, a->kernel, a->dilation, a->padding, a->stride, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

cell_status cell_op_unfold(const cell_tensor *x, const int64_t *kernel, const int64_t *dilation,
                           const int64_t *padding, const int64_t *stride, cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !kernel || !out || !cell_ag_wants(1, in))
    return cell_k_unfold(x, kernel, dilation, padding, stride, out);
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_unfold(x, kernel, dilation, padding, stride, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("UnfoldBackward", unfold_backward, 1, in, 0, fold_args);
  if (n) put(CELL_AG_ARGS(n, fold_args), kernel, dilation, padding, stride, x->shape[2], x->shape[3]);
  return cell_ag_record_end(n, s, r, out);
}

cell_status cell_op_fold(const cell_tensor *x, const int64_t *output_size, const int64_t *kernel,
                         const int64_t *dilation, const int64_t *padding, const int64_t *stride,
                         cell_tensor **out) {
  const cell_tensor *in[1] = {x};
  if (!x || !output_size || !kernel || !out || !cell_ag_wants(1, in))
    return cell_k_fold(x, output_size, kernel, dilation, padding, stride, out);
  cell_tensor *r = NULL;
  cell_status s = CELL_AG_RAW(cell_k_fold(x, output_size, kernel, dilation, padding, stride, &r));
  if (s != CELL_OK) return s;
  cell_node *n = CELL_AG_NODE("FoldBackward", fold_backward, 1, in, 0, fold_args);
  if (n)
    put(CELL_AG_ARGS(n, fold_args), kernel, dilation, padding, stride, output_size[0],
        output_size[1]);
  return cell_ag_record_end(n, s, r, out);
}

/* The names of the backward nodes this file records, for
 * cell_autograd_node_names. */
int cell_ag_sample_nodes(const char **names, int max) {
  static const char *const all[] = {"InterpolateBackward", "UnfoldBackward", "FoldBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}
