/* rules_math_param.c - recording wrappers and backward rules for the
 * elementwise ops with numeric parameters (nan_to_num, softplus) and lerp,
 * which is recorded as the binary ops it is made of. */
#include "autograd.h"
#include "../ops/kernels.h"
#include "../ops/ew.h"
#include "../ops/kernel_list.h"

typedef struct {
  double beta, threshold;
} param_args;

/* nan_to_num: g where x was finite; softplus: g sigmoid(beta x) (g where
 * beta x > threshold). saved[0] = x. */
static cell_status nan_to_num_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  cell_tensor *t = NULL;
  cell_status s = cell_ag_ew(EW_FINITE, 0, 0, n->in[0].dtype, n->in[0].ndim, n->in[0].shape, g,
                             n->saved[0], NULL, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status softplus_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const param_args *a = CELL_AG_ARGS(n, param_args);
  cell_tensor *t = NULL;
  cell_status s = cell_ag_ew(EW_SOFTPLUS, a->beta, a->threshold, n->in[0].dtype, n->in[0].ndim,
                             n->in[0].shape, g, n->saved[0], NULL, &t);
  return cell_ag_give(n, 0, s, t, gin);
}

static cell_status record(const char *name, cell_backward_fn fn, const cell_tensor *a,
                          param_args args, cell_tensor *r, cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  cell_node *n = CELL_AG_NODE(name, fn, 1, in, 1, param_args);
  cell_status s = CELL_OK;
  if (n) {
    *CELL_AG_ARGS(n, param_args) = args;
    s = cell_ag_save(n, a);
  }
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

cell_status cell_op_nan_to_num(const cell_tensor *a, double nan, double posinf, double neginf,
                               cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_dtype_is_float(a->dtype) || !cell_ag_wants(1, in))
    return cell_k_nan_to_num(a, nan, posinf, neginf, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_nan_to_num(a, nan, posinf, neginf, &r));
  if (s != CELL_OK) return s;
  return record("NanToNumBackward", nan_to_num_backward, a, (param_args){0, 0}, r, out);
}

cell_status cell_op_softplus(const cell_tensor *a, double beta, double threshold,
                             cell_tensor **out) {
  const cell_tensor *in[1] = {a};
  if (!a || !out || !cell_ag_wants(1, in)) return cell_k_softplus(a, beta, threshold, out);
  cell_tensor *r;
  cell_status s = CELL_AG_RAW(cell_k_softplus(a, beta, threshold, &r));
  if (s != CELL_OK) return s;
  return record("SoftplusBackward", softplus_backward, a, (param_args){beta, threshold}, r, out);
}

int cell_ag_math_param_nodes(const char **names, int max) {
  const char *all[] = {"NanToNumBackward", "SoftplusBackward"};
  int n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) names[n++] = all[i];
  return n;
}

/* --- lerp ------------------------------------------------------------------------------ */

static cell_status lerp_check(const cell_tensor *start, const cell_tensor *end,
                              const cell_tensor *w) {
  if (!cell_dtype_is_float(start->dtype))
    return cell_error(CELL_ERR_TYPE, "lerp: start must be a float tensor, got %s",
                      cell_dtype_name(start->dtype));
  if (end->dtype != start->dtype)
    return cell_error(CELL_ERR_TYPE, "lerp: expected end of dtype %s (start's), got %s",
                      cell_dtype_name(start->dtype), cell_dtype_name(end->dtype));
  if (w && w->dtype != start->dtype)
    return cell_error(CELL_ERR_TYPE, "lerp: expected weight of dtype %s (start's), got %s",
                      cell_dtype_name(start->dtype), cell_dtype_name(w->dtype));
  int n1, n2;
  int64_t s1[CELL_MAX_DIMS], s2[CELL_MAX_DIMS];
  CELL_TRY(cell_broadcast_shapes("lerp", start->ndim, start->shape, end->ndim, end->shape, &n1, s1));
  if (w) CELL_TRY(cell_broadcast_shapes("lerp", n1, s1, w->ndim, w->shape, &n2, s2));
  return CELL_OK;
}

/* start + w (end - start), each step a recorded binary op. */
cell_status cell_op_lerp(const cell_tensor *start, const cell_tensor *end, const cell_tensor *w,
                         double wv, cell_tensor **out) {
  if (!start || !end || !out) return cell_error(CELL_ERR_VALUE, "lerp: NULL argument");
  CELL_TRY(lerp_check(start, end, w));
  cell_tensor *d = NULL, *m = NULL;
  cell_status s = cell_op_binary(CELL_OP_SUB, end, start, &d);
  if (s == CELL_OK)
    s = w ? cell_op_binary(CELL_OP_MUL, d, w, &m) : cell_op_binary_scalar(CELL_OP_MUL, d, wv, 1, 0, &m);
  if (s == CELL_OK) s = cell_op_binary(CELL_OP_ADD, start, m, out);
  cell_tensor_release(d);
  cell_tensor_release(m);
  return s;
}
