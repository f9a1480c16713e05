/* graph.c - grad mode, autograd state of tensors, nodes, and the backward
 * pass (dependency counting, then nodes in reverse topological order). */
#include "autograd.h"
#include "../core/alloc.h"
#include "../ops/kernels.h"
#include "../ops/device.h"

int cell_grad_is_enabled(void) { return cell_tctx()->grad_enabled; }

int cell_grad_set_enabled(int on) {
  cell_thread_context *tc = cell_tctx();
  int prev = tc->grad_enabled;
  tc->grad_enabled = on != 0;
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
  n->free_next = NULL;
  cell_node *todo = n;
  while (todo) {
    cell_node *cur = todo;
    todo = cur->free_next;
    for (int i = 0; i < cur->n_inputs; i++) {
      cell_node *c = cur->in[i].next;
      if (c && --c->refcount == 0) {
        c->free_next = todo;
        todo = c;
      }
    }
    for (int i = 0; i < cur->n_saved; i++) {
      cell_tensor_release(cur->saved[i]);
      cell_node *c = cur->saved_fn[i];
      if (c && c != cur && --c->refcount == 0) {
        c->free_next = todo;
        todo = c;
      }
    }
    if (cur->release) cur->release(cur);
    hooks_free(cur->hooks);
    cell_dealloc(cur);
  }
}

/* An accumulator's argument: its leaf (weak; NULL once the leaf is gone). */
typedef struct {
  cell_tensor *leaf;
} acc_args;

static void meta_free(cell_tensor *t) {
  cell_ag_meta *m = meta(t);
  t->autograd = NULL;
  cell_node_release(m->grad_fn);
  if (m->accumulator) {
    CELL_AG_ARGS(m->accumulator, acc_args)->leaf = NULL;
    cell_node_release(m->accumulator);
  }
  cell_tensor_release(m->base);
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

static bool requires(const cell_tensor *t) {
  return t && t->autograd && (meta(t)->requires_grad || cell_ag_view_stale(t));
}

bool cell_ag_wants(int n, const cell_tensor *const *inputs) {
  if (!cell_tctx()->grad_enabled) return false;
  for (int i = 0; i < n; i++)
    if (requires(inputs[i])) return true;
  return false;
}

int cell_tensor_requires_grad(const cell_tensor *t) { return requires(t); }
int cell_tensor_is_leaf(const cell_tensor *t) {
  return !t || !t->autograd || (!meta(t)->grad_fn && !cell_ag_view_stale(t));
}
const char *cell_tensor_grad_fn_name(const cell_tensor *t) {
  if (t && t->autograd && cell_ag_view_stale(t)) return "AsStridedBackward";
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
  if (on && m->base) { /* a leaf of its own now: its base's history is no longer its */
    cell_tensor_release(m->base);
    m->base = NULL;
  }
  return CELL_OK;
}

#define ALIGN16(x) (((x) + 15u) & ~(size_t)15u)

/* One block: header, args, inputs, saved tensors, their producers and
 * versions, shapes. */
static cell_node *node_alloc(int n_inputs, int max_saved, size_t args_size, int dims) {
  size_t off_in = sizeof(cell_node) + ALIGN16(args_size);
  size_t off_saved = off_in + (size_t)n_inputs * sizeof(cell_ag_input);
  size_t off_fn = off_saved + (size_t)max_saved * sizeof(cell_tensor *);
  size_t off_ver = off_fn + (size_t)max_saved * sizeof(cell_node *);
  size_t off_shape = ALIGN16(off_ver + (size_t)max_saved * sizeof(unsigned));
  cell_node *n = cell_alloc_zero(off_shape + (size_t)dims * sizeof(int64_t));
  if (!n) return NULL;
  n->refcount = 1;
  n->n_inputs = (uint16_t)n_inputs;
  n->max_saved = (uint8_t)max_saved;
  n->in = (cell_ag_input *)(void *)((char *)n + off_in);
  n->saved = (cell_tensor **)(void *)((char *)n + off_saved);
  n->saved_fn = (cell_node **)(void *)((char *)n + off_fn);
  n->saved_version = (unsigned *)(void *)((char *)n + off_ver);
  return n;
}

/* The node that receives the gradient of t: its producer, or (a leaf) its
 * accumulator, made on first use. */
static cell_node *producer(cell_tensor *t) {
  cell_ag_meta *m = meta(t);
  if (cell_ag_view_stale(t) && cell_ag_view_regen(t) != CELL_OK) return NULL;
  if (m->grad_fn) return m->grad_fn;
  if (!m->accumulator) {
    cell_node *a = node_alloc(0, 0, sizeof(acc_args), 0);
    if (!a) return NULL;
    a->name = "AccumulateGrad";
    CELL_AG_ARGS(a, acc_args)->leaf = t;
    m->accumulator = a;
  }
  return m->accumulator;
}

cell_node *cell_ag_node_new(const char *name, cell_backward_fn fn, int n,
                            const cell_tensor *const *inputs, int max_saved, size_t args_size) {
  if (n < 0 || n > CELL_NODE_MAX_INPUTS || max_saved < 0 || max_saved > CELL_NODE_MAX_SAVED)
    return NULL;
  int dims = 0;
  for (int i = 0; i < n; i++)
    if (inputs[i]) dims += inputs[i]->ndim;
  cell_node *node = node_alloc(n, max_saved, args_size, dims);
  if (!node) return NULL;
  node->name = name;
  node->backward = fn;
  /* the shapes start 16-aligned after the versions, as node_alloc counted */
  int64_t *shapes = (int64_t *)(void *)((char *)node +
                               ALIGN16((size_t)((char *)node->saved_version - (char *)node) +
                                       (size_t)max_saved * sizeof(unsigned)));
  for (int i = 0; i < n; i++) {
    const cell_tensor *t = inputs[i];
    if (!t) continue;
    cell_ag_input *in = &node->in[i];
    in->ndim = t->ndim;
    in->dtype = t->dtype;
    in->shape = shapes;
    memcpy(shapes, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    shapes += t->ndim;
    if (!requires(t)) continue;
    cell_node *p = producer((cell_tensor *)t);
    if (!p) {
      cell_node_release(node);
      return NULL;
    }
    p->refcount++;
    in->next = p;
  }
  return node;
}

cell_status cell_ag_save(cell_node *n, const cell_tensor *t) {
  if (n->n_saved >= n->max_saved)
    return cell_error(CELL_ERR_RUNTIME, "%s: too many saved tensors", n->name);
  if (!t) { /* a slot the rule will not read */
    n->saved_fn[n->n_saved] = NULL;
    n->saved[n->n_saved++] = NULL;
    return CELL_OK;
  }
  cell_node *p = NULL;
  if (requires(t) && !(p = producer((cell_tensor *)t)))
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory saving a tensor", n->name);
  cell_tensor *alias;
  CELL_TRY(cell_tensor_new_view(t, t->ndim, t->shape, t->stride, t->offset, &alias));
  if (p) p->refcount++;
  n->saved_version[n->n_saved] = t->storage->version;
  n->saved_fn[n->n_saved] = p;
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
  /* The output saved by its own node: its history is the node (a weak
   * link, so no cycle). */
  const cell_tensor *o = *out;
  for (int i = 0; i < n->n_saved; i++) {
    const cell_tensor *t = n->saved[i];
    if (t && !n->saved_fn[i] && t->storage == o->storage && t->offset == o->offset &&
        t->dtype == o->dtype && cell_shape_equal(t->ndim, t->shape, o->ndim, o->shape) &&
        !memcmp(t->stride, o->stride, sizeof(int64_t) * (size_t)t->ndim))
      n->saved_fn[i] = n;
  }
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
  /* recording ops: in a pass that creates a graph, this step records too */
  cell_tensor *r;
  if (nd == 0) return cell_tensor_reshape(g, ndim, shape, out);
  CELL_TRY(cell_op_reduce(CELL_RED_SUM, g, nd, dims, 1, &r));
  cell_status s = cell_tensor_reshape(r, ndim, shape, out);
  cell_tensor_release(r);
  return s;
}

cell_status cell_ag_grad_for(const cell_node *n, int i, cell_tensor *g, cell_tensor **out) {
  cell_tensor *r;
  CELL_TRY(cell_ag_sum_to(g, n->in[i].ndim, n->in[i].shape, &r));
  if (r->dtype == n->in[i].dtype) {
    *out = r;
    return CELL_OK;
  }
  cell_status s = cell_tensor_astype(r, n->in[i].dtype, out);
  cell_tensor_release(r);
  return s;
}

cell_status cell_ag_give(cell_node *n, int i, cell_status s, cell_tensor *t, cell_tensor **gin) {
  if (s == CELL_OK && t && n->in[i].next) s = cell_ag_grad_for(n, i, t, &gin[i]);
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
  h->id = __atomic_add_fetch(&cell_ctx()->hook_ids, 1, __ATOMIC_RELAXED);
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

/* The scratch of one backward pass: an entry per node it reaches (pending
 * edges from consumers, the gradient accumulated so far), numbered in the
 * order collect() finds them, and an open-addressing map from node to
 * number. Nothing of it is stored in the nodes, so a pass run while
 * another is inside a Lua node's backward (recomputation, a custom bprop,
 * a hook that calls grad) can reach the same nodes without disturbing it,
 * however deep the nesting. The passes running on a thread are linked,
 * innermost first, from its context. */
typedef struct {
  cell_node *node;
  int pending;
  bool stop; /* the producer of an input that is not a leaf: not run */
  cell_tensor *grad;
} pass_entry;

struct cell_ag_pass {
  struct cell_ag_pass *outer;
  bool create;          /* rules record (create_graph) */
  int n_stop;           /* the producers of inputs that are not leaves */
  cell_node *const *stops;
  pass_entry *ent; /* one block: cap entries, then the slots, then ready */
  size_t count, cap;
  uint32_t *slot;  /* entry number + 1, or 0: empty */
  size_t mask;     /* slots - 1 (a power of two, at least twice count) */
  size_t *ready;   /* propagate's stack (cap) */
};

static size_t hash_node(const cell_node *n) {
  uint64_t h = (uint64_t)(uintptr_t)n * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 29);
}

/* The entry number of n in pass p, or -1. */
static long pass_find(const struct cell_ag_pass *p, const cell_node *n) {
  for (size_t i = hash_node(n) & p->mask;; i = (i + 1) & p->mask) {
    uint32_t k = p->slot[i];
    if (!k) return -1;
    if (p->ent[k - 1].node == n) return (long)(k - 1);
  }
}

static cell_status pass_grow(struct cell_ag_pass *p) {
  size_t cap = p->cap ? 2 * p->cap : 64, nslots = 2 * cap;
  if (cap > UINT32_MAX / 2) return cell_error(CELL_ERR_MEMORY, "grad: the graph is too large");
  size_t ent_bytes = cap * sizeof(pass_entry), slot_bytes = nslots * sizeof(uint32_t);
  char *block = cell_alloc(ent_bytes + slot_bytes + cap * sizeof(size_t));
  if (!block) return cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  pass_entry *ent = (pass_entry *)(void *)block;
  uint32_t *slot = (uint32_t *)(void *)(block + ent_bytes);
  memset(slot, 0, slot_bytes);
  if (p->count) memcpy(ent, p->ent, p->count * sizeof *ent);
  cell_dealloc(p->ent);
  p->ent = ent;
  p->slot = slot;
  p->ready = (size_t *)(void *)(block + ent_bytes + slot_bytes);
  p->cap = cap;
  p->mask = nslots - 1;
  for (size_t k = 0; k < p->count; k++) {
    size_t i = hash_node(ent[k].node) & p->mask;
    while (slot[i]) i = (i + 1) & p->mask;
    slot[i] = (uint32_t)(k + 1);
  }
  return CELL_OK;
}

/* n's entry number in p, adding it (pending 0, no gradient) if new. */
static cell_status pass_add(struct cell_ag_pass *p, cell_node *n, size_t *k) {
  long found = p->cap ? pass_find(p, n) : -1;
  if (found >= 0) {
    *k = (size_t)found;
    return CELL_OK;
  }
  if (p->count == p->cap) CELL_TRY(pass_grow(p));
  size_t i = hash_node(n) & p->mask;
  while (p->slot[i]) i = (i + 1) & p->mask;
  p->slot[i] = (uint32_t)(p->count + 1);
  *k = p->count++;
  p->ent[*k] = (pass_entry){n, 0, false, NULL};
  for (int j = 0; j < p->n_stop; j++)
    if (p->stops[j] == n) p->ent[*k].stop = true;
  return CELL_OK;
}

/* Every node reachable from root, each once, in p's entries (root is entry
 * 0); pending counts the edges into each node. */
static cell_status collect(struct cell_ag_pass *p, cell_node *root) {
  size_t k0;
  CELL_TRY(pass_add(p, root, &k0));
  for (size_t k = 0; k < p->count; k++) {
    cell_node *cur = p->ent[k].node;
    if (p->ent[k].stop) continue; /* an input's producer: the pass ends there */
    if (cur->released)
      return cell_error(CELL_ERR_RUNTIME,
                        "grad: the graph through %s was already used by a backward pass and its "
                        "saved tensors were freed; run the forward computation again",
                        cur->name);
    for (int i = 0; i < cur->n_inputs; i++) {
      cell_node *c = cur->in[i].next;
      if (!c) continue;
      size_t kc;
      CELL_TRY(pass_add(p, c, &kc));
      p->ent[kc].pending++;
    }
  }
  return CELL_OK;
}

/* Whether a pass entry's gradient a is seen by nothing else: the only
 * reference to its tensor and its storage (no view, saved tensor, caller's
 * tensor or other entry sees it), without history, dense (no element
 * twice), with like's shape and dtype. */
static bool unshared_as(const cell_tensor *a, cell_dtype dt, int ndim, const int64_t *shape) {
  return a->refcount == 1 && a->storage->refcount == 1 && !a->storage->external && !a->autograd &&
         a->dtype == dt && cell_shape_equal(a->ndim, a->shape, ndim, shape) && cell_tensor_is_contiguous(a);
}

static bool unshared(const cell_tensor *a, const cell_tensor *like) {
  return unshared_as(a, like->dtype, like->ndim, like->shape);
}

/* Whether the gradient summed so far, a, can take the next one, b, in
 * place: a pass that records nothing, and a unshared. */
static bool add_in_place(bool create, const cell_tensor *a, const cell_tensor *b) {
  return !create && unshared(a, b);
}

/* A tensor's gradient reached along one more edge: kept, or added to the
 * sum so far (in place where nothing else sees the sum: a tiny GPT's
 * residual stream sums 32K floats a dozen times a step, each into a fresh
 * tensor before). */
static cell_status accumulate(bool create, pass_entry *e, cell_tensor *g) {
  if (!e->grad) {
    e->grad = g;
    return CELL_OK;
  }
  if (add_in_place(create, e->grad, g)) {
    cell_status s = cell_k_binary_(CELL_OP_ADD, e->grad, g);
    cell_tensor_release(g);
    return s;
  }
  cell_tensor *sum; /* records in a pass that creates a graph */
  cell_status s = cell_op_binary(CELL_OP_ADD, e->grad, g, &sum);
  cell_tensor_release(g);
  if (s != CELL_OK) return s;
  cell_tensor_release(e->grad);
  e->grad = sum;
  return CELL_OK;
}

static cell_status run_hooks(const cell_node *n, pass_entry *e) {
  for (cell_ag_hook *h = n->hooks; h; h = h->next) {
    cell_tensor *rep = NULL;
    CELL_TRY(h->fn(h->ud, e->grad, &rep));
    if (rep && e->grad && !cell_shape_equal(rep->ndim, rep->shape, e->grad->ndim, e->grad->shape)) {
      /* PyTorch's "hook has changed the size of value": said here, not as
       * a reshape or broadcast error from the rule that would take it */
      char b1[256], b2[256];
      cell_status s = cell_error(CELL_ERR_RUNTIME,
                                 "a tensor hook returned a gradient of shape %s for a tensor of shape %s; "
                                 "a hook may change the gradient's values, not its shape",
                                 cell_shape_str(rep->ndim, rep->shape, b1, sizeof b1),
                                 cell_shape_str(e->grad->ndim, e->grad->shape, b2, sizeof b2));
      cell_tensor_release(rep);
      return s;
    }
    if (rep) {
      cell_tensor_release(e->grad);
      e->grad = rep;
    }
  }
  return CELL_OK;
}

/* The tensor, the node that saved it and both versions, as PyTorch's
 * message has them. */
cell_status cell_ag_check_saved(const cell_node *n) {
  for (int i = 0; i < n->n_saved; i++) {
    const cell_tensor *t = n->saved[i];
    if (!t || t->storage->version == n->saved_version[i]) continue;
    char b[256];
    return cell_error(CELL_ERR_RUNTIME,
                      "grad: a %s tensor of shape %s that %s saved for the backward pass was "
                      "modified in place afterwards: it is at version %u, %s saved it at version "
                      "%u; compute it again, or change a clone() of it instead",
                      cell_dtype_name(t->dtype), cell_shape_str(t->ndim, t->shape, b, sizeof b),
                      n->name, t->storage->version, n->name, n->saved_version[i]);
  }
  return CELL_OK;
}

/* --- higher order: rules run in a pass that creates a graph --- */

/* Saved tensor i of n as a tensor with its history (the node that made it,
 * or the node itself for its output). */
static cell_status unpack_saved(cell_node *n, int i, cell_tensor **out) {
  const cell_tensor *t = n->saved[i];
  if (!t) { /* a slot the rule does not read (cell_ag_save(n, NULL)) */
    *out = NULL;
    return CELL_OK;
  }
  CELL_TRY(cell_tensor_new_view(t, t->ndim, t->shape, t->stride, t->offset, out));
  cell_node *p = n->saved_fn[i];
  if (!p) return CELL_OK;
  cell_ag_meta *m = cell_ag_meta_of(*out);
  if (!m) {
    cell_tensor_release(*out);
    *out = NULL;
    return cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  }
  p->refcount++;
  m->grad_fn = p;
  m->requires_grad = true;
  return CELL_OK;
}

/* The rule of a node whose gradient is not differentiable. */
typedef struct {
  const char *rule;
} opaque_args;

static cell_status opaque_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  (void)g;
  (void)gin;
  return cell_error(CELL_ERR_NOTIMPL,
                    "the gradient of %s is not differentiable (higher-order gradient); "
                    "differentiate a function without it, or only once",
                    CELL_AG_ARGS(n, opaque_args)->rule);
}

/* After a rule that does not record ran in a pass that creates a graph:
 * when its result depends on something that requires grad (g, a saved
 * tensor), each gradient it gave gets a node that raises when reached. */
static cell_status mark_opaque(cell_node *n, int k, const cell_tensor *const *deps,
                               cell_tensor **gin) {
  if (!cell_ag_wants(k, deps)) return CELL_OK;
  for (int i = 0; i < n->n_inputs; i++) {
    if (!gin[i]) continue;
    cell_tensor *v;
    CELL_TRY(cell_tensor_new_view(gin[i], gin[i]->ndim, gin[i]->shape, gin[i]->stride,
                                  gin[i]->offset, &v));
    cell_node *o = cell_ag_node_new("NotDifferentiableBackward", opaque_backward, k, deps, 0,
                                    sizeof(opaque_args));
    if (o) CELL_AG_ARGS(o, opaque_args)->rule = n->name;
    CELL_TRY(cell_ag_finish(o, CELL_OK, &v));
    cell_tensor_release(gin[i]);
    gin[i] = v;
  }
  return CELL_OK;
}

/* n's rule in a pass that creates a graph: its saved tensors with their
 * history for the call; a rule marked twice records (grad mode is on), any
 * other runs raw and its gradients are marked opaque. */
static cell_status backward_creating(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  int ns = n->n_saved;
  cell_tensor *kept[CELL_NODE_MAX_SAVED];
  const cell_tensor *deps[CELL_NODE_MAX_SAVED + 1];
  cell_status s = CELL_OK;
  int done = 0;
  for (; done < ns && s == CELL_OK; done++) {
    kept[done] = n->saved[done];
    s = unpack_saved(n, done, &n->saved[done]);
    if (s != CELL_OK) n->saved[done] = kept[done];
  }
  if (s == CELL_OK) {
    if (n->twice) {
      s = n->backward(n, g, gin);
    } else {
      int prev = cell_grad_set_enabled(0);
      s = n->backward(n, g, gin);
      cell_grad_set_enabled(prev);
      deps[0] = g;
      for (int i = 0; i < ns; i++) deps[i + 1] = n->saved[i];
      if (s == CELL_OK) s = mark_opaque(n, ns + 1, deps, gin);
    }
  }
  for (int i = 0; i < done; i++) {
    if (n->saved[i] != kept[i]) cell_tensor_release(n->saved[i]);
    n->saved[i] = kept[i];
  }
  return s;
}

/* Process nodes in an order where each runs after all its consumers: a
 * stack of the entries whose pending count reached 0 (each enters once). */
static cell_status propagate(struct cell_ag_pass *p) {
  size_t *ready = p->ready, top = 0;
  cell_tensor *gin_small[8], **gin = gin_small;
  int gin_cap = 8;
  cell_status s = CELL_OK;
  ready[top++] = 0;
  while (top && s == CELL_OK) {
    size_t k = ready[--top];
    cell_node *n = p->ent[k].node;
    s = run_hooks(n, &p->ent[k]);
    /* an accumulator, or an input's producer: its grad is the result */
    if (s != CELL_OK || !n->backward || p->ent[k].stop) continue;
    s = cell_ag_check_saved(n);
    if (s != CELL_OK) break;
    if (n->n_inputs > gin_cap) {
      if (gin != gin_small) cell_dealloc(gin);
      gin = cell_alloc((size_t)n->n_inputs * sizeof *gin);
      gin_cap = gin ? n->n_inputs : 0;
      if (!gin) {
        gin = gin_small;
        gin_cap = 8;
        s = cell_error(CELL_ERR_MEMORY, "grad: out of memory");
        break;
      }
    }
    for (int i = 0; i < n->n_inputs; i++) gin[i] = NULL;
    cell_tensor *g = p->ent[k].grad;
    p->ent[k].grad = NULL;
    /* The rule makes its tensors on the gradient's device; a device error
     * in it names the node. */
    int dev_saved = g ? cell_device_enter(cell_tensor_device(g)) : 0;
    const char *op_saved = cell_op_enter(n->name);
    pass_entry *into = NULL; /* a slice's input whose gradient so far takes g in place */
    if (g && !p->create && n->n_inputs == 1 && n->in[0].next && cell_ag_is_slice(n)) {
      pass_entry *t = &p->ent[pass_find(p, n->in[0].next)];
      if (t->grad && g->dtype == n->in[0].dtype && unshared_as(t->grad, n->in[0].dtype, n->in[0].ndim, n->in[0].shape))
        into = t;
    }
    /* (a packed projection's weight read in three slices: two of the three
     * zero-filled whole-weight gradients and their sums went) */
    s = !g ? CELL_OK
        : into ? cell_ag_slice_into(n, g, into->grad)
        : p->create ? backward_creating(n, g, gin)
                    : n->backward(n, g, gin);
    cell_op_leave(op_saved);
    if (g) cell_device_leave(dev_saved);
    cell_tensor_release(g);
    for (int i = 0; i < n->n_inputs; i++) {
      cell_node *c = n->in[i].next;
      if (!c) {
        cell_tensor_release(gin[i]);
        continue;
      }
      long kc = pass_find(p, c);
      if (s == CELL_OK && gin[i]) s = accumulate(p->create, &p->ent[kc], gin[i]);
      else cell_tensor_release(gin[i]);
      if (--p->ent[kc].pending == 0) ready[top++] = (size_t)kc;
    }
  }
  if (gin != gin_small) cell_dealloc(gin);
  return s;
}

/* Whether a pass enclosing p (on this thread) still needs node n. */
static bool outer_uses(const struct cell_ag_pass *p, const cell_node *n) {
  for (const struct cell_ag_pass *o = p->outer; o; o = o->outer)
    if (pass_find(o, n) >= 0) return true;
  return false;
}

/* The node whose pass entry holds the gradient of input t, or NULL. */
static cell_node *grad_node(const cell_tensor *t) {
  cell_ag_meta *m = t->autograd ? meta(t) : NULL;
  return !m ? NULL : m->grad_fn ? m->grad_fn : m->accumulator;
}

static cell_status grad_pass(const cell_tensor *root, const cell_tensor *sens, int n,
                             cell_tensor *const *inputs, cell_tensor **grads, bool create,
                             bool leaves_only) {
  if (!root || (n > 0 && (!inputs || !grads))) return cell_error(CELL_ERR_VALUE, "grad: NULL argument");
  if (n < 0) return cell_error(CELL_ERR_VALUE, "grad: the number of inputs must be >= 0, got %d", n);
  int n_stop = 0;
  for (int i = 0; i < n; i++) {
    if (!inputs[i]) return cell_error(CELL_ERR_VALUE, "grad: input %d is NULL", i + 1);
    if (!cell_tensor_is_leaf(inputs[i])) {
      if (leaves_only) return cell_error(CELL_ERR_RUNTIME, "grad: input %d is not a leaf tensor", i + 1);
      n_stop++;
    }
  }
  if (!requires(root))
    return cell_error(CELL_ERR_RUNTIME,
                      "grad: the output does not require grad: it does not depend on an input "
                      "being differentiated, or it was computed under no_grad");
  char b1[256], b2[256];
  if (sens && !cell_shape_equal(sens->ndim, sens->shape, root->ndim, root->shape))
    return cell_error(CELL_ERR_VALUE, "grad: sens has shape %s but the output has shape %s",
                      cell_shape_str(sens->ndim, sens->shape, b1, sizeof b1),
                      cell_shape_str(root->ndim, root->shape, b2, sizeof b2));
  cell_node *stop_small[8], **stops = stop_small;
  if (n_stop > 8 && !(stops = cell_alloc(sizeof *stops * (size_t)n_stop)))
    return cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  n_stop = 0;
  for (int i = 0; i < n; i++)
    if (!cell_tensor_is_leaf(inputs[i])) stops[n_stop++] = meta(inputs[i])->grad_fn;
  int prev = cell_grad_set_enabled(create);
  cell_thread_context *tc = cell_tctx();
  struct cell_ag_pass pass = {tc->pass, create, n_stop, stops, NULL, 0, 0, NULL, 0, NULL};
  tc->pass = &pass;
  cell_node *top = producer((cell_tensor *)root);
  cell_status s = top ? CELL_OK : cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  if (s == CELL_OK) s = collect(&pass, top);
  if (s == CELL_OK) {
    cell_tensor *g0;
    if (create && sens && sens->dtype == root->dtype) { /* sens keeps its history */
      cell_tensor_retain((cell_tensor *)sens);
      g0 = (cell_tensor *)sens;
    } else {
      s = sens ? cell_tensor_astype(sens, root->dtype, &g0)
               : cell_tensor_full_on(cell_tensor_device(root), root->dtype, root->ndim, root->shape,
                                     1.0, &g0);
    }
    if (s == CELL_OK) {
      pass.ent[0].grad = g0;
      s = propagate(&pass);
    }
  }
  /* Results: each input's accumulator, or zeros where it was not reached. */
  for (int i = 0; i < n; i++) grads[i] = NULL;
  for (int i = 0; i < n && s == CELL_OK; i++) {
    cell_node *gn = grad_node(inputs[i]);
    long k = gn && pass.cap ? pass_find(&pass, gn) : -1;
    cell_tensor *gk = k >= 0 ? pass.ent[k].grad : NULL;
    if (gk && create && gk->dtype == inputs[i]->dtype) { /* with its history */
      cell_tensor_retain(gk);
      grads[i] = gk;
    } else if (gk && !create && unshared(gk, inputs[i])) {
      /* the pass's own sum, seen by nothing else: handed over instead of
       * copied (a tiny GPT's 30 parameter gradients were copied at the end
       * of every backward pass, 39 us a step) */
      cell_tensor_retain(gk);
      grads[i] = gk;
    } else if (gk) {
      s = cell_tensor_astype(gk, inputs[i]->dtype, &grads[i]);
    } else {
      s = cell_tensor_full_on(cell_tensor_device(inputs[i]), inputs[i]->dtype, inputs[i]->ndim,
                              inputs[i]->shape, 0, &grads[i]);
    }
  }
  /* Scratch gradients go, and so do the saved tensors: one backward pass
   * per graph, so a training loop's memory does not wait for the outputs
   * (but a node an enclosing pass has still to run keeps them, and a pass
   * that creates a graph keeps them all: the graph it made may run them
   * again). */
  for (size_t k = 0; k < pass.count; k++) {
    cell_node *c = pass.ent[k].node;
    cell_tensor_release(pass.ent[k].grad);
    if (create || !c->backward || pass.ent[k].stop || (pass.outer && outer_uses(&pass, c)))
      continue;
    for (int i = 0; i < c->n_saved; i++) {
      cell_tensor_release(c->saved[i]);
      c->saved[i] = NULL;
      if (c->saved_fn[i] != c) cell_node_release(c->saved_fn[i]);
      c->saved_fn[i] = NULL;
    }
    c->n_saved = 0;
    c->released = true;
  }
  cell_dealloc(pass.ent); /* the whole table */
  if (stops != stop_small) cell_dealloc(stops);
  tc->pass = pass.outer;
  cell_grad_set_enabled(prev);
  if (s != CELL_OK) {
    for (int i = 0; i < n; i++) {
      cell_tensor_release(grads[i]);
      grads[i] = NULL;
    }
  }
  return s;
}

cell_status cell_autograd_grad(const cell_tensor *root, const cell_tensor *sens, int n,
                               cell_tensor *const *inputs, cell_tensor **grads) {
  return grad_pass(root, sens, n, inputs, grads, false, true);
}

cell_status cell_autograd_grad_ex(const cell_tensor *root, const cell_tensor *sens, int n,
                                  cell_tensor *const *inputs, cell_tensor **grads,
                                  int create_graph) {
  return grad_pass(root, sens, n, inputs, grads, create_graph != 0, false);
}

int cell_autograd_node_names(const char **names, int max) {
  int n = cell_ag_binary_nodes(names, max);
  n += cell_ag_math_nodes(names + n, max - n);
  n += cell_ag_shape_nodes(names + n, max - n);
  n += cell_ag_conv_nodes(names + n, max - n);
  n += cell_ag_nn_nodes(names + n, max - n);
  n += cell_ag_sort_nodes(names + n, max - n);
  n += cell_ag_rnn_nodes(names + n, max - n);
  n += cell_ag_math_param_nodes(names + n, max - n);
  n += cell_ag_index_nodes(names + n, max - n);
  n += cell_ag_sample_nodes(names + n, max - n);
  n += cell_ag_inplace_nodes(names + n, max - n);
  n += cell_ag_attention_nodes(names + n, max - n);
  n += cell_ag_linear_nodes(names + n, max - n);
  n += cell_ag_act_nodes(names + n, max - n);
  return n;
}
