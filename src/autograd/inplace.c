/* inplace.c - in-place ops while recording, as PyTorch does them: the op
 * is recorded as its out-of-place form and the tensor's history is
 * rebased onto that node; an in-place op on a view rewrites its base's
 * history (CopySlices: the written region's gradient goes through the
 * op's rule, the rest passes through), and the views of a changed storage
 * get their history again from their base (AsStridedBackward).
 *
 * Every in-place write bumps the storage's version; a node checks the
 * versions of what it saved before its rule runs (cell_ag_check_saved). */
#include "autograd.h"
#include "../core/alloc.h"
#include "../ops/kernels.h"
#include "../ops/device.h"
#include <stdio.h>

static cell_ag_meta *meta(const cell_tensor *t) { return (cell_ag_meta *)t->autograd; }

/* --- views remember their base --------------------------------------------------- */

cell_status cell_ag_view(const cell_tensor *t, cell_status s, cell_tensor **out) {
  if (s != CELL_OK || *out == t || (*out)->storage != t->storage) return s;
  cell_tensor *base = t->autograd && meta(t)->base ? meta(t)->base : (cell_tensor *)t;
  cell_ag_meta *m = cell_ag_meta_of(*out);
  if (!m) {
    cell_tensor_release(*out);
    *out = NULL;
    return cell_error(CELL_ERR_MEMORY, "autograd: out of memory recording a view");
  }
  cell_tensor_retain(base);
  cell_tensor_release(m->base);
  m->base = base;
  m->view_version = t->storage->version;
  m->view_no_grad = !cell_grad_is_enabled();
  return CELL_OK;
}

/* The storage's other reference may be the base that t alone keeps. */
size_t cell_tensor_owned_bytes(const cell_tensor *t) {
  if (!t) return 0;
  const cell_tensor *b = t->autograd ? meta(t)->base : NULL;
  int mine = b && b->refcount == 1 && b->storage == t->storage ? 2 : 1;
  return t->storage->refcount == mine ? t->storage->nbytes : 0;
}

bool cell_ag_view_stale(const cell_tensor *t) {
  const cell_ag_meta *m = meta(t);
  return m->base && !m->view_no_grad && m->view_version != t->storage->version &&
         cell_tensor_requires_grad(m->base);
}

/* The geometry of a tensor in its storage. */
typedef struct {
  int ndim;
  int64_t offset;
  int64_t shape[CELL_MAX_DIMS], stride[CELL_MAX_DIMS];
} geom;

static void geom_of(const cell_tensor *t, geom *g) {
  g->ndim = t->ndim;
  g->offset = t->offset;
  memcpy(g->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
  memcpy(g->stride, t->stride, sizeof(int64_t) * (size_t)t->ndim);
}

/* The arguments of AsStridedBackward and CopySlices: where the view lies
 * in its base's storage, and (CopySlices) the in-place op's node. */
typedef struct {
  geom base, view;
  cell_node *fn;
} strided_args;

/* Zeros laid out as the base is in its storage (flat), the base's and the
 * view's geometry over it (bv, vv), in g's dtype. A dimension of the view
 * listed in squash (stride 0, an expanded one) is size 1 in vv. */
static cell_status strided_buffers(const strided_args *a, cell_dtype dt, const bool *squash,
                                   cell_tensor **flat, cell_tensor **bv, cell_tensor **vv) {
  int64_t rel = a->view.offset - a->base.offset, end = 0, vend = rel, vshape[CELL_MAX_DIMS];
  bool empty = false;
  for (int i = 0; i < a->base.ndim; i++) {
    if (a->base.shape[i] == 0) empty = true;
    end += (a->base.shape[i] - 1) * a->base.stride[i];
  }
  for (int i = 0; i < a->view.ndim; i++) {
    vshape[i] = squash && squash[i] ? 1 : a->view.shape[i];
    if (vshape[i] == 0) empty = true;
    vend += (vshape[i] - 1) * a->view.stride[i];
  }
  if (rel < 0) return cell_error(CELL_ERR_RUNTIME, "autograd: a view lies outside its base");
  int64_t n = empty ? 0 : (vend > end ? vend : end) + 1;
  *flat = *bv = *vv = NULL;
  cell_status s = cell_tensor_full(dt, 1, &n, 0.0, flat);
  if (s == CELL_OK)
    s = cell_tensor_new_view(*flat, a->base.ndim, a->base.shape, a->base.stride, 0, bv);
  if (s == CELL_OK)
    s = cell_tensor_new_view(*flat, a->view.ndim, vshape, a->view.stride, empty ? 0 : rel, vv);
  return s;
}

/* The base's gradient as a contiguous tensor, given to input 0. */
static cell_status give_base(cell_node *n, cell_status s, cell_tensor *bv, cell_tensor **gin) {
  cell_tensor *c = NULL;
  if (s == CELL_OK && n->in[0].next) s = cell_k_contiguous(bv, &c);
  return cell_ag_give(n, 0, s, c, gin);
}

/* g (the view's shape) into zeros of the base's: an expanded dimension's
 * gradient is summed first, as expand's own rule does. */
static cell_status as_strided_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[0].next) return CELL_OK;
  const strided_args *a = CELL_AG_ARGS(n, strided_args);
  bool squash[CELL_MAX_DIMS] = {false};
  int dims[CELL_MAX_DIMS], nd = 0;
  for (int i = 0; i < a->view.ndim; i++)
    if (a->view.stride[i] == 0 && a->view.shape[i] > 1) squash[i] = true, dims[nd++] = i;
  cell_tensor *flat, *bv, *vv, *gs = NULL;
  cell_status s = strided_buffers(a, g->dtype, squash, &flat, &bv, &vv);
  if (s == CELL_OK && nd) s = cell_k_reduce(CELL_RED_SUM, g, nd, dims, 1, &gs);
  if (s == CELL_OK && cell_tensor_numel(vv) > 0) s = cell_k_copy_(vv, gs ? gs : g);
  s = give_base(n, s, bv, gin);
  return cell_release4(s, flat, bv, vv, gs);
}

cell_status cell_ag_view_regen(cell_tensor *t) {
  cell_ag_meta *m = meta(t);
  const cell_tensor *in[1] = {m->base};
  cell_node *n = CELL_AG_NODE("AsStridedBackward", as_strided_backward, 1, in, 0, strided_args);
  if (!n) return cell_error(CELL_ERR_MEMORY, "autograd: out of memory recording a view");
  strided_args *a = CELL_AG_ARGS(n, strided_args);
  geom_of(m->base, &a->base);
  geom_of(t, &a->view);
  cell_node_release(m->grad_fn);
  m->grad_fn = n;
  m->requires_grad = true;
  m->view_version = t->storage->version;
  return CELL_OK;
}

/* --- CopySlices: the base's history after an in-place op on a view --------------- */

static void copy_slices_release(cell_node *n) { cell_node_release(CELL_AG_ARGS(n, strided_args)->fn); }

/* g (the base's shape): the view's region goes through the op's rule (fn),
 * whose gradient for the view's old value is written back in its place;
 * fn's other inputs get theirs. */
static cell_status copy_slices_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  const strided_args *a = CELL_AG_ARGS(n, strided_args);
  cell_node *fn = a->fn;
  CELL_TRY(cell_ag_check_saved(fn));
  cell_tensor *small[4] = {NULL}, **fg = small;
  if (fn->n_inputs > 4) {
    fg = cell_alloc_zero(sizeof *fg * fn->n_inputs);
    if (!fg) return cell_error(CELL_ERR_MEMORY, "grad: out of memory");
  }
  cell_tensor *flat, *bv, *vv, *gv = NULL;
  cell_status s = strided_buffers(a, g->dtype, NULL, &flat, &bv, &vv);
  if (s == CELL_OK && cell_tensor_numel(bv) > 0) s = cell_k_copy_(bv, g);
  if (s == CELL_OK) s = cell_k_clone(vv, &gv);
  if (s == CELL_OK) s = fn->backward(fn, gv, fg);
  if (s == CELL_OK && cell_tensor_numel(vv) > 0)
    s = fg[0] ? cell_k_copy_(vv, fg[0]) : cell_k_fill_(vv, 0.0);
  s = give_base(n, s, bv, gin);
  for (int i = 1; i < fn->n_inputs; i++) {
    if (s == CELL_OK && n->in[i].next) gin[i] = fg[i];
    else cell_tensor_release(fg[i]);
  }
  cell_tensor_release(fg[0]);
  if (fg != small) cell_dealloc(fg);
  return cell_release4(s, flat, bv, vv, gv);
}

/* --- rules of the in-place forms that have no out-of-place one ------------------- */

/* copy_(dst, src): src's gradient, reduced to its shape and dtype; the
 * overwritten dst gets none. */
static cell_status copy_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  if (!n->in[1].next) return CELL_OK;
  return cell_ag_grad_for(n, 1, (cell_tensor *)g, &gin[1]);
}

/* fill_, zero_, and an in-place comparison: the values no longer depend
 * on the old ones. */
static cell_status no_backward(cell_node *n, const cell_tensor *g, cell_tensor **gin) {
  (void)n, (void)g, (void)gin;
  return CELL_OK;
}

static const char *const inplace_nodes[] = {"CopySlices", "AsStridedBackward", "CopyBackward",
                                            "FillBackward"};

int cell_ag_inplace_nodes(const char **names, int max) {
  int n = 0;
  for (size_t i = 0; i < sizeof inplace_nodes / sizeof inplace_nodes[0] && n < max; i++)
    names[n++] = inplace_nodes[i];
  return n;
}

/* --- the in-place ops --------------------------------------------------------------- */

typedef enum { IP_BINARY, IP_SCALAR, IP_UNARY, IP_COPY, IP_FILL } ip_kind;

typedef struct {
  ip_kind kind;
  int op;                   /* a cell_binop or cell_unop */
  const cell_tensor *other; /* binary: the operand; copy: the source */
  double v;                 /* scalar: the number; fill: the value */
  int v_is_float;
} ip_op;

static const char *ip_name(const ip_op *o) {
  switch (o->kind) {
  case IP_BINARY:
  case IP_SCALAR: return cell_binop_name((cell_binop)o->op);
  case IP_UNARY: return cell_unop_name((cell_unop)o->op);
  case IP_COPY: return "copy";
  default: return "fill";
  }
}

/* The in-place kernel; a device error in it names the op ("mul_" reads
 * as "mul", the family the out-of-place form names too). */
static cell_status raw(const ip_op *o, cell_tensor *t) {
  /* the name is looked up only when no outer op has named the kernels */
  const char *saved = cell_op_enter(cell_thread_ctx.op_name ? NULL : ip_name(o));
  cell_status s;
  switch (o->kind) {
  case IP_BINARY: s = cell_k_binary_((cell_binop)o->op, t, o->other); break;
  case IP_SCALAR: s = cell_k_binary_scalar_((cell_binop)o->op, t, o->v, o->v_is_float); break;
  case IP_UNARY: s = cell_k_unary_((cell_unop)o->op, t); break;
  case IP_COPY: s = cell_k_copy_(t, o->other); break;
  default: s = cell_k_fill_(t, o->v); break;
  }
  cell_op_leave(saved);
  return s;
}

/* What a tensor is called in the messages: "a Float32 tensor of shape [2, 3]". */
static const char *describe(const cell_tensor *t, char *buf, size_t n) {
  char b[200];
  snprintf(buf, n, "a %s tensor of shape %s", cell_dtype_name(t->dtype),
           cell_shape_str(t->ndim, t->shape, b, sizeof b));
  return buf;
}

/* The op's out-of-place form, recorded: the new value r and its node
 * (NULL: the result does not depend differentiably on anything), with the
 * in-place form's own checks (shape and dtype) on r. */
static cell_status record_value(const ip_op *o, cell_tensor *t, cell_tensor **r, cell_node **fn) {
  const char *name = ip_name(o);
  cell_status s;
  *r = NULL;
  *fn = NULL;
  if (o->kind == IP_BINARY) {
    int nd;
    int64_t shape[CELL_MAX_DIMS];
    CELL_TRY(cell_broadcast_shapes(name, t->ndim, t->shape, o->other->ndim, o->other->shape, &nd,
                                   shape));
    if (!cell_shape_equal(nd, shape, t->ndim, t->shape)) {
      char sa[256], sb[256];
      return cell_error(CELL_ERR_VALUE,
                        "%s_: the shape %s of the operand cannot be broadcast to the shape %s of "
                        "the tensor updated in place",
                        name, cell_shape_str(o->other->ndim, o->other->shape, sb, sizeof sb),
                        cell_shape_str(t->ndim, t->shape, sa, sizeof sa));
    }
    s = cell_op_binary((cell_binop)o->op, t, o->other, r);
  } else if (o->kind == IP_SCALAR) {
    s = cell_op_binary_scalar((cell_binop)o->op, t, o->v, o->v_is_float, 0, r);
  } else {
    s = cell_op_unary((cell_unop)o->op, t, r);
  }
  if (s != CELL_OK) return s;
  if (o->kind == IP_UNARY ? (*r)->dtype != t->dtype : !cell_dtype_can_cast((*r)->dtype, t->dtype)) {
    s = cell_error(CELL_ERR_TYPE, "%s_: result type %s cannot be stored in a %s tensor", name,
                   cell_dtype_name((*r)->dtype), cell_dtype_name(t->dtype));
    cell_tensor_release(*r);
    *r = NULL;
    return s;
  }
  if ((*r)->autograd && meta(*r)->grad_fn) {
    *fn = meta(*r)->grad_fn;
    (*fn)->refcount++;
  }
  return CELL_OK;
}

/* A node over t (and, for copy_, the source) with rule fn and no saved
 * tensors. */
static cell_node *plain_node(const char *name, cell_backward_fn fn, cell_tensor *t,
                             const cell_tensor *other) {
  const cell_tensor *in[2] = {t, other};
  return cell_ag_node_new(name, fn, other ? 2 : 1, in, 0, 0);
}

/* The rule's saved copies of t itself would see its new values: before
 * the write, each gets a copy of its own (PyTorch's original self). Any
 * other saved view of t's storage keeps the version it was saved at, so
 * that backward refuses it as PyTorch does. */
static cell_status keep_originals(cell_node *fn, const cell_tensor *t) {
  for (int i = 0; i < fn->n_saved; i++) {
    cell_tensor *sv = fn->saved[i], *c;
    if (!sv || sv->storage != t->storage || sv->offset != t->offset ||
        !cell_shape_equal(sv->ndim, sv->shape, t->ndim, t->shape) ||
        memcmp(sv->stride, t->stride, sizeof(int64_t) * (size_t)t->ndim) != 0)
      continue;
    CELL_TRY(cell_k_clone(sv, &c));
    fn->saved[i] = c;
    fn->saved_version[i] = c->storage->version;
    cell_tensor_release(sv);
  }
  return CELL_OK;
}

/* After the write, a saved result (r) is t itself, at its new version: a
 * later in-place change of t is then caught, as in PyTorch. */
static void results_are_t(cell_node *fn, const cell_tensor *r, const cell_tensor *t) {
  for (int i = 0; i < fn->n_saved; i++) {
    cell_tensor *sv = fn->saved[i], *alias;
    if (!sv || sv->storage != r->storage || !cell_shape_equal(sv->ndim, sv->shape, t->ndim, t->shape))
      continue;
    if (cell_tensor_new_view(t, t->ndim, t->shape, t->stride, t->offset, &alias) != CELL_OK) continue;
    fn->saved[i] = alias;
    fn->saved_version[i] = t->storage->version;
    cell_tensor_release(sv);
  }
}

/* CopySlices over base: input 0 is the base, inputs 1.. are fn's own. */
static cell_node *copy_slices(cell_tensor *base, const cell_tensor *view, cell_node *fn) {
  const cell_tensor *in[1] = {base};
  int n_in = fn->n_inputs;
  const cell_tensor **ins = cell_alloc_zero(sizeof *ins * (size_t)n_in);
  if (!ins) return NULL;
  ins[0] = in[0];
  cell_node *n = cell_ag_node_new("CopySlices", copy_slices_backward, n_in, ins, 0,
                                  sizeof(strided_args));
  cell_dealloc(ins);
  if (!n) return NULL;
  for (int i = 1; i < n_in; i++) {
    n->in[i] = fn->in[i]; /* the shape lives in fn's block, which n keeps */
    if (n->in[i].next) n->in[i].next->refcount++;
  }
  strided_args *a = CELL_AG_ARGS(n, strided_args);
  geom_of(base, &a->base);
  geom_of(view, &a->view);
  a->fn = fn;
  fn->refcount++;
  n->release = copy_slices_release;
  /* fn runs only inside n: its first input needs a gradient when the base does */
  cell_node_release(fn->in[0].next);
  fn->in[0].next = n->in[0].next;
  if (fn->in[0].next) fn->in[0].next->refcount++;
  return n;
}

static bool overlaps(const cell_tensor *t) {
  for (int i = 0; i < t->ndim; i++)
    if (t->stride[i] <= 0 && t->shape[i] > 1) return true;
  return false;
}

/* Whether an in-place op on t must be recorded, or refused. */
static cell_status check(const ip_op *o, cell_tensor *t, bool *rec) {
  /* The common case first: neither tensor has autograd state, so nothing
   * can require grad (no view base either) and nothing is recorded. */
  if (!t->autograd && (!o->other || !o->other->autograd)) {
    *rec = false;
    return CELL_OK;
  }
  cell_tensor *base = t->autograd ? meta(t)->base : NULL;
  *rec = cell_grad_is_enabled() && cell_dtype_is_float(t->dtype) &&
         (cell_tensor_requires_grad(t) || (o->other && cell_tensor_requires_grad(o->other)) ||
          (base && cell_tensor_requires_grad(base)));
  if (!*rec) return CELL_OK;
  char b[300];
  const char *name = ip_name(o);
  if (!base && cell_tensor_requires_grad(t) && cell_tensor_is_leaf(t))
    return cell_error(CELL_ERR_RUNTIME,
                      "%s_: a leaf Variable that requires grad is being used in an in-place "
                      "operation (%s); change it under no_grad, or change a clone() of it",
                      name, describe(t, b, sizeof b));
  if (base && cell_tensor_requires_grad(base) && cell_tensor_is_leaf(base))
    return cell_error(CELL_ERR_RUNTIME,
                      "%s_: a view of a leaf Variable that requires grad is being used in an "
                      "in-place operation (%s); change it under no_grad, or change a clone() of it",
                      name, describe(t, b, sizeof b));
  if (base && meta(t)->view_no_grad)
    return cell_error(CELL_ERR_RUNTIME,
                      "%s_: %s is a view made under no_grad, and changing it in place while "
                      "gradients are recorded is ambiguous; make the view and the change both "
                      "under no_grad, or both outside it",
                      name, describe(t, b, sizeof b));
  if (overlaps(t)) /* a fill (the other kinds were refused before) */
    return cell_error(CELL_ERR_RUNTIME,
                      "%s_: %s has elements that share memory (an expanded view), so an in-place "
                      "op on it cannot be differentiated; change a clone() of it",
                      name, describe(t, b, sizeof b));
  return CELL_OK;
}

static cell_status inplace(const ip_op *o, cell_tensor *t) {
  if (!t || ((o->kind == IP_BINARY || o->kind == IP_COPY) && !o->other))
    return cell_error(CELL_ERR_VALUE, "%s_: NULL tensor", ip_name(o));
  bool rec = false;
  /* An element shared by several positions (an expanded view) would be
   * changed once per position: refused whatever the grad mode, as PyTorch
   * does; a fill writes one value, which is well defined. */
  if (o->kind != IP_FILL && overlaps(t)) {
    char b[300];
    return cell_error(CELL_ERR_RUNTIME,
                      "%s_: more than one element of %s refers to the same memory (an expanded view), so "
                      "an in-place op would change it once per element; change a clone() of it",
                      ip_name(o), describe(t, b, sizeof b));
  }
  /* tensors without autograd state record nothing (check's first case):
   * straight to the kernel, the cost of a plain in-place op */
  if (t->autograd || (o->other && o->other->autograd)) CELL_TRY(check(o, t, &rec));
  if (!rec) return raw(o, t);
  cell_tensor *base = t->autograd ? meta(t)->base : NULL;
  cell_tensor *r = NULL;
  cell_node *fn = NULL, *cs = NULL;
  cell_status s = CELL_OK;
  if (o->kind == IP_COPY || o->kind == IP_FILL) {
    fn = o->kind == IP_COPY ? plain_node("CopyBackward", copy_backward, t, o->other)
                            : plain_node("FillBackward", no_backward, t, NULL);
  } else {
    s = record_value(o, t, &r, &fn);
    if (s == CELL_OK && !fn) fn = plain_node("FillBackward", no_backward, t, NULL);
  }
  if (s == CELL_OK && !fn) s = cell_error(CELL_ERR_MEMORY, "%s_: out of memory", ip_name(o));
  if (s == CELL_OK) s = keep_originals(fn, t);
  if (s == CELL_OK && base) {
    cs = copy_slices(base, t, fn);
    if (!cs) s = cell_error(CELL_ERR_MEMORY, "%s_: out of memory", ip_name(o));
  }
  cell_ag_meta *m = s == CELL_OK ? cell_ag_meta_of(base ? base : t) : NULL;
  if (s == CELL_OK && !m) s = cell_error(CELL_ERR_MEMORY, "%s_: out of memory", ip_name(o));
  /* the write: nothing above has changed t */
  if (s == CELL_OK) s = r ? cell_k_copy_(t, r) : raw(o, t);
  if (s != CELL_OK) {
    cell_node_release(cs);
    cell_node_release(fn);
    cell_tensor_release(r);
    return s;
  }
  if (r) results_are_t(fn, r, t);
  cell_tensor_release(r);
  cell_node_release(m->grad_fn);
  m->requires_grad = true;
  if (base) {
    m->grad_fn = cs; /* t's own history follows from its base's (cell_ag_view_regen) */
    cell_node_release(fn);
  } else {
    m->grad_fn = fn;
  }
  return CELL_OK;
}

cell_status cell_op_binary_(cell_binop op, cell_tensor *a, const cell_tensor *b) {
  ip_op o = {IP_BINARY, (int)op, b, 0, 0};
  return inplace(&o, a);
}

cell_status cell_op_binary_scalar_(cell_binop op, cell_tensor *t, double s, int s_is_float) {
  CELL_TRY(cell_ag_pow_scalar_check(op, t, s, s_is_float, 0));
  ip_op o = {IP_SCALAR, (int)op, NULL, s, s_is_float};
  return inplace(&o, t);
}

cell_status cell_op_unary_(cell_unop op, cell_tensor *a) {
  ip_op o = {IP_UNARY, (int)op, NULL, 0, 0};
  return inplace(&o, a);
}

cell_status cell_tensor_copy_(cell_tensor *dst, const cell_tensor *src) {
  ip_op o = {IP_COPY, 0, src, 0, 0};
  return inplace(&o, dst);
}

cell_status cell_tensor_fill_(cell_tensor *t, double v) {
  ip_op o = {IP_FILL, 0, NULL, v, 0};
  return inplace(&o, t);
}
