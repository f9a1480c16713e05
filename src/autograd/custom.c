/* custom.c - backward rules a host defines (cell_autograd_custom_node,
 * cell.h): the node's typed arguments keep the host's function and data;
 * the node's inputs keep the shapes the returned gradients are checked
 * against. */
#include "autograd.h"
#include <stdlib.h>

typedef struct {
  cell_custom_backward fn;
  void (*release)(void *ud);
  void *ud;
} custom_rule;

static void custom_release(cell_node *n) {
  custom_rule *r = CELL_AG_ARGS(n, custom_rule);
  if (r->release) r->release(r->ud);
}

static cell_status custom_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  custom_rule *r = CELL_AG_ARGS(n, custom_rule);
  int k = n->n_inputs;
  int *wants = calloc((size_t)(k ? k : 1), sizeof *wants);
  cell_tensor **got = calloc((size_t)(k ? k : 1), sizeof *got);
  if (!wants || !got) {
    free(wants);
    free(got);
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory in backward", n->name);
  }
  for (int i = 0; i < k; i++) wants[i] = n->in[i].next != NULL;
  cell_status s = r->fn(r->ud, g, k, wants, got);
  for (int i = 0; i < k; i++) {
    cell_tensor *t = got[i];
    if (!t) continue;
    if (s == CELL_OK && wants[i]) {
      const cell_ag_input *in = &n->in[i];
      if (!cell_shape_equal(t->ndim, t->shape, in->ndim, in->shape)) {
        char a[256], b[256];
        s = cell_error(CELL_ERR_VALUE, "%s: gradient %d has shape %s but its input has shape %s",
                       n->name, i + 1, cell_shape_str(t->ndim, t->shape, a, sizeof a),
                       cell_shape_str(in->ndim, in->shape, b, sizeof b));
      } else {
        s = cell_ag_grad_for(n, i, t, &gin[i]);
      }
    }
    cell_tensor_release(t);
  }
  free(wants);
  free(got);
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
  if (s != CELL_OK || !cell_ag_wants(n, inputs)) {
    /* an error, or nothing to differentiate */
    if (release) release(ud);
    return s;
  }
  cell_node *node = CELL_AG_NODE(name, custom_backward, n, inputs, 0, custom_rule);
  if (!node) {
    if (release) release(ud);
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory recording a node", name);
  }
  node->twice = true; /* the host's rule records what it computes in a graph-making pass */
  custom_rule *r = CELL_AG_ARGS(node, custom_rule);
  r->fn = backward;
  r->release = release;
  r->ud = ud;
  node->release = custom_release;
  cell_tensor *o = out;
  cell_tensor_retain(o);
  s = cell_ag_finish(node, CELL_OK, &o);
  if (s != CELL_OK) return s; /* finish released the node (and so ud) and o */
  cell_tensor_release(o);
  return CELL_OK;
}
