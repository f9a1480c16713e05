/* custom.c - backward rules a host defines (cell_autograd_custom_node,
 * cell.h): the node keeps the host's function and data, and the shapes of
 * its inputs to check the gradients the host returns. */
#include "autograd.h"
#include <stdlib.h>

typedef struct {
  cell_custom_backward fn;
  void (*release)(void *ud);
  void *ud;
  int n;
  int wants[CELL_CUSTOM_MAX_INPUTS];
  int ndim[CELL_CUSTOM_MAX_INPUTS];
  int64_t shape[CELL_CUSTOM_MAX_INPUTS][CELL_MAX_DIMS];
} custom_rule;

static void custom_release(cell_node *n) {
  custom_rule *r = n->extra;
  if (r->release) r->release(r->ud);
  free(r);
}

static cell_status custom_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  custom_rule *r = n->extra;
  cell_tensor *got[CELL_CUSTOM_MAX_INPUTS] = {NULL};
  cell_status s = r->fn(r->ud, g, r->n, r->wants, got);
  for (int i = 0; i < r->n; i++) {
    cell_tensor *t = got[i];
    if (!t) continue;
    got[i] = NULL;
    if (s == CELL_OK && r->wants[i]) {
      if (!cell_shape_equal(t->ndim, t->shape, r->ndim[i], r->shape[i])) {
        char a[256], b[256];
        s = cell_error(CELL_ERR_VALUE, "%s: gradient %d has shape %s but its input has shape %s",
                       n->name, i + 1, cell_shape_str(t->ndim, t->shape, a, sizeof a),
                       cell_shape_str(r->ndim[i], r->shape[i], b, sizeof b));
      } else {
        s = cell_ag_grad_for(n, i, t, &gin[i]);
      }
    }
    cell_tensor_release(t);
  }
  return s;
}

cell_status cell_autograd_custom_node(cell_tensor *out, int n, const cell_tensor *const *inputs,
                                      const char *name, cell_custom_backward backward,
                                      void (*release)(void *ud), void *ud) {
  cell_status s = CELL_OK;
  if (!out || !backward || !name || (n > 0 && !inputs) || n < 0)
    s = cell_error(CELL_ERR_VALUE, "custom node: NULL argument");
  else if (n > CELL_CUSTOM_MAX_INPUTS)
    s = cell_error(CELL_ERR_VALUE, "%s: a custom backward node takes at most %d inputs, got %d",
                   name, CELL_CUSTOM_MAX_INPUTS, n);
  else if (!cell_tensor_is_leaf(out) || cell_tensor_requires_grad(out))
    s = cell_error(CELL_ERR_RUNTIME, "%s: the output already belongs to a graph", name);
  for (int i = 0; s == CELL_OK && i < n; i++)
    if (!inputs[i]) s = cell_error(CELL_ERR_VALUE, "%s: input %d is NULL", name, i + 1);
  if (s != CELL_OK || !cell_ag_wants(n, inputs)) { /* an error, or nothing to differentiate */
    if (release) release(ud);
    return s;
  }
  custom_rule *r = calloc(1, sizeof *r);
  cell_node *node = r ? cell_ag_node_new(name, custom_backward, n, inputs) : NULL;
  if (!node) {
    free(r);
    if (release) release(ud);
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory recording a node", name);
  }
  r->fn = backward;
  r->release = release;
  r->ud = ud;
  r->n = n;
  for (int i = 0; i < n; i++) {
    r->wants[i] = cell_tensor_requires_grad(inputs[i]);
    r->ndim[i] = inputs[i]->ndim;
    for (int d = 0; d < inputs[i]->ndim; d++) r->shape[i][d] = inputs[i]->shape[d];
  }
  node->extra = r;
  node->release_extra = custom_release;
  cell_tensor *o = out;
  cell_tensor_retain(o);
  s = cell_ag_finish(node, CELL_OK, &o);
  if (s != CELL_OK) return s; /* finish released the node (and so ud) and o */
  cell_tensor_release(o);
  return CELL_OK;
}
