/* graph.c - grad mode, autograd state of tensors, nodes, and the backward
 * pass (dependency counting, then nodes in reverse topological order). */
#include "autograd.h"
#include "../core/alloc.h"
#include "../core/kernels.h"
#include "../backend/device.h"

static __thread int grad_enabled = 1;
static __thread unsigned pass_counter;

int cell_grad_is_enabled(void) { return grad_enabled; }

int cell_grad_set_enabled(int on) {
  int prev = grad_enabled;
  grad_enabled = on != 0;
  return prev;
}

static cell_ag_meta *meta(const cell_tensor *t) { return (cell_ag_meta *)t->autograd; }

static void hooks_free(cell_ag_hook *h) {
  while (h) {
    cell_ag_hook *next = h->next;
    if (h->release) h->release(h->ud);
    cell_dealloc(h);
    h = next;
  }
}

/* Frees nodes iteratively: a graph can be far deeper than the C stack. */
void cell_node_release(cell_node *n) {
  if (!n || --n->refcount > 0) return;
  n->queue_next = NULL;
  cell_node *todo = n;
  while (todo) {
    cell_node *cur = todo;
    todo = cur->queue_next;
    for (int i = 0; i < cur->n_inputs; i++) {
      cell_node *c = cur->next[i];
      if (c && --c->refcount == 0) {
        c->queue_next = todo;
        todo = c;
      }
    }
    for (int i = 0; i < cur->n_saved; i++) cell_tensor_release(cur->saved[i]);
    cell_tensor_release(cur->grad);
    if (cur->release_extra) cur->release_extra(cur);
    hooks_free(cur->hooks);
    cell_dealloc(cur);
  }
}

static void meta_free(cell_tensor *t) {
  cell_ag_meta *m = meta(t);
  t->autograd = NULL;
  cell_node_release(m->grad_fn);
  if (m->accumulator) {
    m->accumulator->leaf = NULL;
    cell_node_release(m->accumulator);
  }
  cell_dealloc(m);
}

cell_ag_meta *cell_ag_meta_of(cell_tensor *t) {
  if (t->autograd) return meta(t);
  cell_ag_meta *m = cell_alloc_zero(sizeof *m);
  if (!m) return NULL;
  m->free = meta_free;
  t->autograd = m;
  return m;
}

static bool requires(const cell_tensor *t) { return t && t->autograd && meta(t)->requires_grad; }

bool cell_ag_wants(int n, const cell_tensor *const *inputs) {
  if (!grad_enabled) return false;
  for (int i = 0; i < n; i++)
    if (requires(inputs[i])) return true;
  return false;
}

int cell_tensor_requires_grad(const cell_tensor *t) { return requires(t); }
int cell_tensor_is_leaf(const cell_tensor *t) { return !t || !t->autograd || !meta(t)->grad_fn; }
const char *cell_tensor_grad_fn_name(const cell_tensor *t) {
  return t && t->autograd && meta(t)->grad_fn ? meta(t)->grad_fn->name : NULL;
}

cell_status cell_tensor_set_requires_grad(cell_tensor *t, int on) {
  if (!t) return cell_error(CELL_ERR_VALUE, "requires_grad: NULL tensor");
  if (on && !cell_dtype_is_float(t->dtype))
    return cell_error(CELL_ERR_TYPE, "requires_grad: only floating-point tensors can require grad, "
                                     "got %s", cell_dtype_name(t->dtype));
  if (!cell_tensor_is_leaf(t))
    return cell_error(CELL_ERR_RUNTIME, "requires_grad: the flag can only be changed on a leaf "
                                        "tensor; use stop_gradient() to cut a result from the graph");
  if (!on && !t->autograd) return CELL_OK;
  cell_ag_meta *m = cell_ag_meta_of(t);
  if (!m) return cell_error(CELL_ERR_MEMORY, "requires_grad: out of memory");
  m->requires_grad = on != 0;
  return CELL_OK;
}

static cell_node *node_alloc(void) {
  cell_node *n = cell_alloc_zero(sizeof *n);
  if (n) n->refcount = 1;
  return n;
}

/* The node that receives the gradient of t: its producer, or (a leaf) its
 * accumulator, made on first use. */
static cell_node *producer(cell_tensor *t) {
  cell_ag_meta *m = meta(t);
  if (m->grad_fn) return m->grad_fn;
  if (!m->accumulator) {
    cell_node *a = node_alloc();
    if (!a) return NULL;
    a->name = "AccumulateGrad";
    a->leaf = t;
    a->n_inputs = 0;
    m->accumulator = a;
  }
  return m->accumulator;
}

cell_node *cell_ag_node_new(const char *name, cell_backward_fn fn, int n,
                            const cell_tensor *const *inputs) {
  if (n > CELL_NODE_MAX_IN) return NULL;
  cell_node *node = node_alloc();
  if (!node) return NULL;
  node->name = name;
  node->backward = fn;
  node->n_inputs = n;
  for (int i = 0; i < n; i++) {
    const cell_tensor *t = inputs[i];
    if (!t) continue;
    node->in_ndim[i] = t->ndim;
    memcpy(node->in_shape[i], t->shape, sizeof(int64_t) * (size_t)t->ndim);
    node->in_dtype[i] = t->dtype;
    if (!requires(t)) continue;
    cell_node *p = producer((cell_tensor *)t);
    if (!p) {
      cell_node_release(node);
      return NULL;
    }
    p->refcount++;
    node->next[i] = p;
  }
  return node;
}

cell_status cell_ag_save(cell_node *n, const cell_tensor *t) {
  if (n->n_saved >= CELL_NODE_MAX_SAVED)
    return cell_error(CELL_ERR_RUNTIME, "%s: too many saved tensors", n->name);
  cell_tensor *alias;
  CELL_TRY(cell_tensor_new_view(t, t->ndim, t->shape, t->stride, t->offset, &alias));
  n->saved_version[n->n_saved] = t->storage->version;
  n->saved[n->n_saved++] = alias;
  return CELL_OK;
}

cell_status cell_ag_finish(cell_node *n, cell_status s, cell_tensor **out) {
  if (s == CELL_OK && !n) s = cell_error(CELL_ERR_MEMORY, "autograd: out of memory recording an op");
  cell_ag_meta *m = NULL;
  if (s == CELL_OK) {
    m = cell_ag_meta_of(*out);
    if (!m) s = cell_error(CELL_ERR_MEMORY, "autograd: out of memory recording an op");
  }
  if (s != CELL_OK) {
    cell_node_release(n);
    cell_tensor_release(*out);
    *out = NULL;
    return s;
  }
  cell_node_release(m->grad_fn);
  m->grad_fn = n;
  m->requires_grad = true;
  return CELL_OK;
}

cell_status cell_tensor_detach(const cell_tensor *t, cell_tensor **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "stop_gradient: NULL argument");
  return cell_tensor_new_view(t, t->ndim, t->shape, t->stride, t->offset, out);
}

/* --- helpers for backward rules ------------------------------------------------ */

cell_status cell_ag_sum_to(const cell_tensor *g, int ndim, const int64_t *shape, cell_tensor **out) {
  if (cell_shape_equal(g->ndim, g->shape, ndim, shape)) {
    cell_tensor_retain((cell_tensor *)g);
    *out = (cell_tensor *)g;
    return CELL_OK;
  }
  int dims[CELL_MAX_DIMS], nd = 0, lead = g->ndim - ndim;
  for (int i = 0; i < g->ndim; i++)
    if (i < lead || (shape[i - lead] == 1 && g->shape[i] != 1)) dims[nd++] = i;
  cell_tensor *r;
  if (nd == 0) return cell_k_reshape(g, ndim, shape, out);
  CELL_TRY(cell_k_reduce(CELL_RED_SUM, g, nd, dims, 1, &r));
  cell_status s = cell_k_reshape(r, ndim, shape, out);
  cell_tensor_release(r);
  return s;
}

cell_status cell_ag_grad_for(const cell_node *n, int i, cell_tensor *g, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(cell_ag_sum_to(g, n->in_ndim[i], n->in_shape[i], &r));
  if (r->dtype == n->in_dtype[i]) {
    *out = r;
    return CELL_OK;
  }
  cell_status s = cell_k_astype(r, n->in_dtype[i], out);
  cell_tensor_release(r);
  return s;
}

cell_status cell_ag_give(cell_node *n, int i, cell_status s, cell_tensor *t, cell_tensor **gin) {
  if (s == CELL_OK && t && n->next[i]) s = cell_ag_grad_for(n, i, t, &gin[i]);
  cell_tensor_release(t);
  return s;
}

/* --- hooks ------------------------------------------------------------------------ */

cell_status cell_tensor_register_hook(cell_tensor *t,
                                      cell_status (*fn)(void *, const cell_tensor *, cell_tensor **),
                                      void (*release)(void *), void *ud, int *id) {
  if (!t || !fn) return cell_error(CELL_ERR_VALUE, "register_hook: NULL argument");
  if (!requires(t))
    return cell_error(CELL_ERR_RUNTIME, "register_hook: the tensor does not require grad, so no "
                                        "gradient will reach a hook on it");
  cell_node *p = producer(t);
  cell_ag_hook *h = p ? cell_alloc_zero(sizeof *h) : NULL;
  if (!h) return cell_error(CELL_ERR_MEMORY, "register_hook: out of memory");
  static int next_id;
  h->id = ++next_id;
  h->fn = fn;
  h->release = release;
  h->ud = ud;
  cell_ag_hook **tail = &p->hooks; /* registration order */
  while (*tail) tail = &(*tail)->next;
  *tail = h;
  if (id) *id = h->id;
  return CELL_OK;
}

void cell_tensor_remove_hook(cell_tensor *t, int id) {
  if (!t || !t->autograd) return;
  cell_ag_meta *m = meta(t);
  cell_node *p = m->grad_fn ? m->grad_fn : m->accumulator;
  if (!p) return;
  for (cell_ag_hook **h = &p->hooks; *h; h = &(*h)->next)
    if ((*h)->id == id) {
      cell_ag_hook *dead = *h;
      *h = dead->next;
      dead->next = NULL;
      hooks_free(dead);
      return;
    }
}

/* --- the backward pass --------------------------------------------------------------- */

/* Backward passes running now on this thread, outermost first: a Lua
 * node's backward may run a pass of its own (recomputation does), which
 * can reach nodes the outer pass is using, such as a parameter's
 * accumulator. Such a node's scratch is stashed and put back afterwards. */
#define CELL_MAX_NESTED_PASSES 8
static __thread unsigned active_passes[CELL_MAX_NESTED_PASSES];
static __thread int n_active_passes;

static bool pass_is_active(unsigned pass) {
  for (int i = 0; i < n_active_passes; i++)
    if (active_passes[i] == pass) return true;
  return false;
}

/* Claim node c for `pass`, stashing an active outer pass's scratch. */
static cell_status claim(cell_node *c, unsigned pass) {
  if (c->pass != 0 && pass_is_active(c->pass)) {
    if (c->stashed)
      return cell_error(CELL_ERR_RUNTIME,
                        "grad: backward passes nested more than two deep go through %s", c->name);
    c->stashed = true;
    c->stash_pass = c->pass;
    c->stash_pending = c->pending;
    c->stash_grad = c->grad;
    c->grad = NULL;
  }
  c->pass = pass;
  c->pending = 0;
  return CELL_OK;
}

/* Every node reachable from root, each once, in *nodes (an array the caller
 * frees); pending counts the edges into each node. */
static cell_status collect(cell_node *root, unsigned pass, cell_node ***nodes, size_t *count) {
  size_t cap = 64, n = 0;
  cell_node **arr = cell_alloc(cap * sizeof *arr);
  if (!arr) return cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  cell_status s = claim(root, pass);
  if (s != CELL_OK) {
    cell_dealloc(arr);
    return s;
  }
  arr[n++] = root;
  for (size_t k = 0; k < n && s == CELL_OK; k++) {
    cell_node *cur = arr[k];
    if (cur->released) {
      s = cell_error(CELL_ERR_RUNTIME,
                     "grad: the graph through %s was already used by a backward pass and its "
                     "saved tensors were freed; run the forward computation again",
                     cur->name);
      break;
    }
    for (int i = 0; i < cur->n_inputs; i++) {
      cell_node *c = cur->next[i];
      if (!c) continue;
      if (c->pass != pass) {
        if (n == cap) {
          cell_node **bigger = cell_alloc(2 * cap * sizeof *arr);
          if (!bigger) {
            s = cell_error(CELL_ERR_MEMORY, "grad: out of memory");
            break;
          }
          memcpy(bigger, arr, n * sizeof *arr);
          cell_dealloc(arr);
          arr = bigger;
          cap *= 2;
        }
        s = claim(c, pass);
        if (s != CELL_OK) break;
        arr[n++] = c;
      }
      c->pending++;
    }
  }
  *nodes = arr;
  *count = n;
  return s;
}

static cell_status accumulate(cell_node *n, cell_tensor *g) {
  if (!n->grad) {
    n->grad = g;
    return CELL_OK;
  }
  cell_tensor *sum;
  cell_status s = cell_k_binary(CELL_OP_ADD, n->grad, g, &sum);
  cell_tensor_release(g);
  if (s != CELL_OK) return s;
  cell_tensor_release(n->grad);
  n->grad = sum;
  return CELL_OK;
}

static cell_status run_hooks(cell_node *n) {
  for (cell_ag_hook *h = n->hooks; h; h = h->next) {
    cell_tensor *rep = NULL;
    CELL_TRY(h->fn(h->ud, n->grad, &rep));
    if (rep) {
      cell_tensor_release(n->grad);
      n->grad = rep;
    }
  }
  return CELL_OK;
}

static cell_status check_versions(const cell_node *n) {
  for (int i = 0; i < n->n_saved; i++)
    if (n->saved[i]->storage->version != n->saved_version[i])
      return cell_error(CELL_ERR_RUNTIME,
                        "grad: a tensor saved by %s for the backward pass was modified in place "
                        "afterwards (version %u, now %u); compute it again or use clone() before "
                        "changing it",
                        n->name, n->saved_version[i], n->saved[i]->storage->version);
  return CELL_OK;
}

/* Process nodes in an order where each runs after all its consumers. */
static cell_status propagate(cell_node *root) {
  cell_node *ready = root;
  root->queue_next = NULL;
  while (ready) {
    cell_node *n = ready;
    ready = n->queue_next;
    CELL_TRY(run_hooks(n));
    if (!n->backward) continue; /* an accumulator: its grad is the result */
    CELL_TRY(check_versions(n));
    cell_tensor *gin[CELL_NODE_MAX_IN] = {NULL};
    /* The rule makes its tensors on the gradient's device. */
    int dev_saved = n->grad ? cell_device_enter(cell_tensor_device(n->grad)) : 0;
    cell_status s = n->grad ? n->backward(n, n->grad, gin) : CELL_OK;
    if (n->grad) cell_device_leave(dev_saved);
    cell_tensor_release(n->grad);
    n->grad = NULL;
    for (int i = 0; i < n->n_inputs; i++) {
      cell_node *c = n->next[i];
      if (!c) {
        cell_tensor_release(gin[i]);
        continue;
      }
      if (s == CELL_OK && gin[i]) s = accumulate(c, gin[i]);
      else cell_tensor_release(gin[i]);
      if (--c->pending == 0) {
        c->queue_next = ready;
        ready = c;
      }
    }
    if (s != CELL_OK) return s;
  }
  return CELL_OK;
}

cell_status cell_autograd_grad(const cell_tensor *root, const cell_tensor *sens, int n,
                               cell_tensor *const *inputs, cell_tensor **grads) {
  if (!root || (n > 0 && (!inputs || !grads))) return cell_error(CELL_ERR_VALUE, "grad: NULL argument");
  if (n < 0) return cell_error(CELL_ERR_VALUE, "grad: the number of inputs must be >= 0, got %d", n);
  for (int i = 0; i < n; i++) {
    if (!inputs[i]) return cell_error(CELL_ERR_VALUE, "grad: input %d is NULL", i + 1);
    if (!cell_tensor_is_leaf(inputs[i]))
      return cell_error(CELL_ERR_RUNTIME, "grad: input %d is not a leaf tensor", i + 1);
  }
  if (!requires(root))
    return cell_error(CELL_ERR_RUNTIME,
                      "grad: the output does not require grad: it does not depend on an input "
                      "being differentiated, or it was computed under no_grad");
  char b1[256], b2[256];
  if (!sens && cell_tensor_numel(root) != 1)
    return cell_error(CELL_ERR_RUNTIME,
                      "grad: the output has shape %s; a non-scalar output needs sens, the "
                      "gradient to start from, of that shape",
                      cell_shape_str(root->ndim, root->shape, b1, sizeof b1));
  if (sens && !cell_shape_equal(sens->ndim, sens->shape, root->ndim, root->shape))
    return cell_error(CELL_ERR_VALUE, "grad: sens has shape %s but the output has shape %s",
                      cell_shape_str(sens->ndim, sens->shape, b1, sizeof b1),
                      cell_shape_str(root->ndim, root->shape, b2, sizeof b2));
  int prev = cell_grad_set_enabled(0);
  cell_node *top = producer((cell_tensor *)root);
  cell_status s = top ? CELL_OK : cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  cell_node **nodes = NULL;
  size_t count = 0;
  unsigned pass = ++pass_counter;
  if (pass == 0) pass = ++pass_counter; /* 0 marks a node no pass has used */
  if (s == CELL_OK && n_active_passes == CELL_MAX_NESTED_PASSES)
    s = cell_error(CELL_ERR_RUNTIME, "grad: more than %d backward passes nested", CELL_MAX_NESTED_PASSES);
  bool pushed = s == CELL_OK;
  if (pushed) active_passes[n_active_passes++] = pass;
  if (s == CELL_OK) s = collect(top, pass, &nodes, &count);
  if (s == CELL_OK) {
    cell_tensor *g0;
    s = sens ? cell_k_astype(sens, root->dtype, &g0)
             : cell_tensor_full_on(cell_tensor_device(root), root->dtype, root->ndim, root->shape, 1.0, &g0);
    if (s == CELL_OK) {
      cell_tensor_release(top->grad);
      top->grad = g0;
      s = propagate(top);
    }
  }
  /* Results: each input's accumulator, or zeros where it was not reached. */
  for (int i = 0; i < n; i++) grads[i] = NULL;
  for (int i = 0; i < n && s == CELL_OK; i++) {
    cell_ag_meta *m = inputs[i]->autograd ? meta(inputs[i]) : NULL;
    cell_node *acc = m ? m->accumulator : NULL;
    if (acc && acc->pass == pass && acc->grad) {
      s = cell_k_astype(acc->grad, inputs[i]->dtype, &grads[i]);
    } else {
      s = cell_tensor_full_on(cell_tensor_device(inputs[i]), inputs[i]->dtype, inputs[i]->ndim,
                              inputs[i]->shape, 0, &grads[i]);
    }
  }
  /* Scratch gradients go, and so do the saved tensors: one backward pass
   * per graph, so a training loop's memory does not wait for the outputs. */
  for (size_t k = 0; k < count; k++) {
    cell_node *c = nodes[k];
    cell_tensor_release(c->grad);
    c->grad = NULL;
    c->pending = 0;
    if (c->stashed) { /* the outer pass still needs it as it was */
      c->stashed = false;
      c->pass = c->stash_pass;
      c->pending = c->stash_pending;
      c->grad = c->stash_grad;
      c->stash_grad = NULL;
      continue;
    }
    if (!c->backward) continue;
    for (int i = 0; i < c->n_saved; i++) {
      cell_tensor_release(c->saved[i]);
      c->saved[i] = NULL;
    }
    c->n_saved = 0;
    c->released = true;
  }
  cell_dealloc(nodes);
  if (pushed) n_active_passes--;
  cell_grad_set_enabled(prev);
  if (s != CELL_OK) {
    for (int i = 0; i < n; i++) {
      cell_tensor_release(grads[i]);
      grads[i] = NULL;
    }
  }
  return s;
}

int cell_autograd_node_names(const char **names, int max) {
  int n = cell_ag_binary_nodes(names, max);
  n += cell_ag_math_nodes(names + n, max - n);
  n += cell_ag_shape_nodes(names + n, max - n);
  n += cell_ag_conv_nodes(names + n, max - n);
  n += cell_ag_nn_nodes(names + n, max - n);
  return n;
}

/* --- in-place ops ---------------------------------------------------------------- */

/* In-place changes are not recorded, so on a tensor that requires grad
 * (while recording) they would make gradients silently wrong: refuse. */
static cell_status inplace_check(const char *op, const cell_tensor *t) {
  if (t && grad_enabled && requires(t))
    return cell_error(CELL_ERR_RUNTIME,
                      "%s: a tensor that requires grad cannot be changed in place while "
                      "gradients are recorded; use the out-of-place form, or run it under no_grad",
                      op);
  return CELL_OK;
}

cell_status cell_op_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b) {
  CELL_TRY(inplace_check(cell_binop_name(op), a));
  return cell_k_binary_(op, a, b);
}

cell_status cell_op_binary_scalar_(cell_binop op, cell_tensor *t, double s, int s_is_float) {
  CELL_TRY(inplace_check(cell_binop_name(op), t));
  return cell_k_binary_scalar_(op, t, s, s_is_float);
}

cell_status cell_op_unary_(cell_unop op, cell_tensor *a) {
  CELL_TRY(inplace_check(cell_unop_name(op), a));
  return cell_k_unary_(op, a);
}

cell_status cell_tensor_copy_(cell_tensor *dst, const cell_tensor *src) {
  CELL_TRY(inplace_check("copy_", dst));
  return cell_k_copy_(dst, src);
}

cell_status cell_tensor_fill_(cell_tensor *t, double v) {
  CELL_TRY(inplace_check("fill_", t));
  return cell_k_fill_(t, v);
}
