/* autograd.h - the tape: nodes, grad mode, recording and the backward pass
 * (internal; the public calls are in cell.h).
 *
 * PyNative style. When grad mode is on and an input of a differentiable op
 * requires grad, the op's output gets a node: the backward rule, what the
 * rule needs (saved tensors with their versions, input shapes, arguments)
 * and one edge per input to the node that produced it (or to the input's
 * leaf accumulator). Nodes are refcounted: a tensor holds its node, a node
 * holds the nodes of its inputs, so a graph lives exactly as long as the
 * outputs that can reach it. */
#ifndef CELL_AUTOGRAD_H
#define CELL_AUTOGRAD_H
#include "../core/tensor.h"

typedef struct cell_node cell_node;

/* grad_in[i] receives a new reference (or NULL: no gradient) for input i;
 * grad_out is the gradient of the node's output (borrowed). */
typedef cell_status (*cell_backward_fn)(cell_node *n, const cell_tensor *grad_out,
                                        cell_tensor **grad_in);

/* What a node keeps of one input: the edge to the node that produced it
 * (or its leaf accumulator; NULL when it needs no gradient), and its shape
 * and dtype, which its gradient must have. */
typedef struct cell_ag_input {
  cell_node *next;
  const int64_t *shape; /* ndim sizes, stored in the node's block */
  int ndim;
  cell_dtype dtype;
} cell_ag_input;

/* A node is one block: this header, then the rule's typed arguments (args,
 * args_size bytes, read with CELL_AG_ARGS), the inputs, the saved tensors
 * and the input shapes, each sized for this node. It holds only what the
 * rule needs: the scratch of a backward pass (pending counts, gradients)
 * lives in that pass's own table (graph.c), so a pass run inside another
 * (a Lua node's backward that calls grad) shares nothing with it. */
struct cell_node {
  int refcount;
  uint16_t n_inputs;
  uint8_t n_saved, max_saved;
  bool released;                      /* saved tensors freed by a backward pass */
  bool twice;                         /* the rule records when grad mode is on (higher order) */
  const char *name;
  cell_backward_fn backward;          /* NULL for a leaf accumulator */
  void (*release)(cell_node *n);      /* frees what args hold; may be NULL */
  cell_ag_input *in;                  /* n_inputs */
  cell_tensor **saved;                /* n_saved of max_saved */
  cell_node **saved_fn;               /* each saved tensor's producer (a reference), the node
                                       * itself (not counted) for its own output, or NULL */
  unsigned *saved_version;
  struct cell_ag_hook *hooks;         /* run on the gradient of the output */
  cell_node *free_next;               /* cell_node_release's work list */
  _Alignas(16) unsigned char args[];  /* the rule's arguments */
};
/* The rule's arguments of node n, as a T (the type given at creation). */
#define CELL_AG_ARGS(n, T) ((T *)(void *)(n)->args)
/* The most inputs and saved tensors a node can have. */
#define CELL_NODE_MAX_INPUTS 65535
#define CELL_NODE_MAX_SAVED 255

/* The autograd state of a tensor (t->autograd). */
typedef struct cell_ag_meta {
  void (*free)(cell_tensor *t);  /* called by cell_tensor_release */
  bool requires_grad;
  cell_node *grad_fn;            /* producer; NULL for leaves */
  cell_node *accumulator;        /* leaves: their node, made on first use */
  /* A view made by a view op (narrow, select, transpose, ...): the tensor
   * whose storage it views (never itself a view), and the storage version
   * its grad_fn was made at. An in-place op bumps the version; a view whose
   * version is behind gets its history again from its base (inplace.c). */
  cell_tensor *base;
  unsigned view_version;
  bool view_no_grad;             /* made under no_grad: never takes its base's history */
} cell_ag_meta;

typedef struct cell_ag_hook {
  int id;
  cell_status (*fn)(void *ud, const cell_tensor *grad, cell_tensor **replacement);
  void (*release)(void *ud);
  void *ud;
  struct cell_ag_hook *next;
} cell_ag_hook;

/* Whether recording is needed for an op on these inputs. */
bool cell_ag_wants(int n, const cell_tensor *const *inputs);
/* A node for an op on n inputs (edges and input shapes filled in), with
 * room for max_saved saved tensors and args_size bytes of zeroed
 * arguments; NULL when out of memory (or n, max_saved out of range). */
cell_node *cell_ag_node_new(const char *name, cell_backward_fn fn, int n,
                            const cell_tensor *const *inputs, int max_saved, size_t args_size);
/* The typed form: args of type T. */
#define CELL_AG_NODE(name, fn, n, inputs, max_saved, T) \
  cell_ag_node_new(name, fn, n, inputs, max_saved, sizeof(T))
/* Keep t for the backward rule (an alias without autograd state, so an
 * output saved by its own node makes no cycle), remembering its version
 * and the node that produced it (a pass that creates a graph gives the
 * rule aliases with that history); at most the max_saved given at
 * creation. t NULL fills a slot the rule will not read (saved[i] stays
 * NULL). */
cell_status cell_ag_save(cell_node *n, const cell_tensor *t);
/* End of a recording wrapper: with s == CELL_OK, make n the producer of
 * *out; otherwise (or if that fails) release n and *out and return the
 * error. n may be NULL (node allocation failed: a MemoryError). */
cell_status cell_ag_finish(cell_node *n, cell_status s, cell_tensor **out);
void cell_node_release(cell_node *n);
cell_ag_meta *cell_ag_meta_of(cell_tensor *t); /* created on demand; NULL if OOM */

/* Sum g over the dimensions broadcast from shape (ndim, shape): the
 * gradient of an input that was broadcast. */
cell_status cell_ag_sum_to(const cell_tensor *g, int ndim, const int64_t *shape,
                           cell_tensor **out);
/* g converted to node input i's dtype and reduced to its shape. */
cell_status cell_ag_grad_for(const cell_node *n, int i, cell_tensor *g, cell_tensor **out);
/* The usual last step of a rule: when s is CELL_OK, t is not NULL and
 * input i needs a gradient, gin[i] = grad_for(n, i, t); t is released in
 * every case, and the status is returned. */
cell_status cell_ag_give(cell_node *n, int i, cell_status s, cell_tensor *t, cell_tensor **gin);

/* cell_ew (src/ops/ew.h) on the device of its operands, for rules that
 * build a gradient in one elementwise pass (rules_math.c). */
cell_status cell_ag_ew(int op, double k0, double k1, cell_dtype dt, int ndim, const int64_t *shape,
                       const cell_tensor *a, const cell_tensor *b, const cell_tensor *c,
                       cell_tensor **out);

/* The node names each rules file records (for the gradcheck table). */
int cell_ag_binary_nodes(const char **names, int max);
int cell_ag_math_nodes(const char **names, int max);
int cell_ag_shape_nodes(const char **names, int max);
int cell_ag_conv_nodes(const char **names, int max);
int cell_ag_nn_nodes(const char **names, int max);
int cell_ag_sort_nodes(const char **names, int max);
int cell_ag_rnn_nodes(const char **names, int max);
int cell_ag_math_param_nodes(const char **names, int max);
int cell_ag_act_nodes(const char **names, int max);
int cell_ag_index_nodes(const char **names, int max);
int cell_ag_sample_nodes(const char **names, int max);
int cell_ag_inplace_nodes(const char **names, int max);
int cell_ag_attention_nodes(const char **names, int max);
int cell_ag_linear_nodes(const char **names, int max);

/* RuntimeError for an integer (or bool) tensor raised to a negative
 * integer number, as PyTorch refuses it (the result would truncate to 0
 * for every |x| > 1); CELL_OK for anything else. s op t when reversed. */
cell_status cell_ag_pow_scalar_check(cell_binop op, const cell_tensor *t, double v, int v_is_float,
                                     int reversed);

/* --- views and in-place ops (inplace.c) --- */
/* End of a view op on t: when s is CELL_OK and *out shares t's storage,
 * *out remembers t's base (t itself when t is no view), so that an
 * in-place op on it rewrites the base's history. On failure *out is
 * released and set to NULL. Returns the status. */
cell_status cell_ag_view(const cell_tensor *t, cell_status s, cell_tensor **out);
/* Whether view t's history is behind its storage (an in-place op changed
 * it since) and its base requires grad. */
bool cell_ag_view_stale(const cell_tensor *t);
/* Give view t its history again: the part of its base's current history
 * it views (AsStridedBackward). */
cell_status cell_ag_view_regen(cell_tensor *t);
/* RuntimeError when a tensor n saved was changed in place since. */
cell_status cell_ag_check_saved(const cell_node *n);
/* rules_shape.c: whether n is a narrow, slice or select; for one, the
 * gradient g added into the part of dst (the input's gradient so far, of
 * the input's shape and g's dtype) the op viewed, instead of the rule's
 * zeros of the input's shape with g copied in. */
bool cell_ag_is_slice(const cell_node *n);
cell_status cell_ag_slice_into(const cell_node *n, const cell_tensor *g, cell_tensor *dst);

/* Higher-order gradients. A pass that creates a graph (create_graph)
 * runs each rule with grad mode on and its saved tensors carrying their
 * history, so a rule that computes with recording ops (cell_op_*,
 * cell_tensor_* views) records its own computation: such rules mark their
 * nodes twice (cell_ag_twice). Any other rule runs with grad mode off, and
 * the gradients it gives, when they would depend on something that
 * requires grad, get a node that raises NotImplementedError naming the
 * rule if a later pass reaches it. */
static inline cell_node *cell_ag_twice(cell_node *n) {
  if (n) n->twice = true;
  return n;
}

/* End of an op wrapper: make n the producer of r (cell_ag_finish) and hand
 * r over; *out is set only on success. */
static inline cell_status cell_ag_record_end(cell_node *n, cell_status s, cell_tensor *r,
                                             cell_tensor **out) {
  s = cell_ag_finish(n, s, &r);
  if (s == CELL_OK) *out = r;
  return s;
}

/* The dtype the gradient g of input i is computed in: the input's own when
 * it is floating, else g's (float32 when g is not floating either). */
static inline cell_dtype cell_ag_grad_dtype(const cell_node *n, int i, const cell_tensor *g) {
  if (cell_dtype_is_float(n->in[i].dtype)) return n->in[i].dtype;
  return cell_dtype_is_float(g->dtype) ? g->dtype : CELL_DTYPE_F32;
}

/* The op-wrapper pattern: run the raw kernel with grad mode off. */
#define CELL_AG_RAW(call)                        \
  ({                                             \
    int prev_ = cell_grad_set_enabled(0);        \
    cell_status s_ = (call);                     \
    cell_grad_set_enabled(prev_);                \
    s_;                                          \
  })

#endif
