/* activation.c - the fused activations of include/cell_act.h, forward and
 * backward, computed through doubles in chunks so that one loop serves
 * every float dtype and layout (PyTorch's formulas, to match its values
 * and gradients at the kinks). */
#include "../core/iter.h"
#include "kernels.h"
#include "kernel_list.h"
#include "cell_act.h"
#include "vmath.h"
#include <math.h>

#define CHUNK 256
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946
#define GELU_C 0.79788456080286535587989211986876 /* sqrt(2/pi) */
#define GELU_K 0.044715

static const char *const act_names[CELL_ACT_COUNT] = {
    "leaky_relu", "elu", "selu", "celu", "softsign", "mish", "hardtanh",
    "hswish", "hsigmoid", "logsigmoid", "tanhshrink", "gelu"};

const char *cell_act_name(cell_act kind) {
  return (int)kind >= 0 && kind < CELL_ACT_COUNT ? act_names[kind] : NULL;
}

typedef struct {
  int kind;
  double p0, p1;
  cell_dtype dt[3];
} act_ctx;

static inline double softplus1(double x) { return x > 20 ? x : log1p(exp(x)); }
static inline double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

static double act_fwd(int kind, double x, double p0, double p1) {
  switch (kind) {
  case CELL_ACT_LEAKY_RELU: return x > 0 ? x : p0 * x;
  case CELL_ACT_ELU: return x > 0 ? x : p0 * expm1(x);
  case CELL_ACT_SELU: return SELU_SCALE * (x > 0 ? x : SELU_ALPHA * expm1(x));
  case CELL_ACT_CELU: return x > 0 ? x : p0 * expm1(x / p0);
  case CELL_ACT_SOFTSIGN: return x / (1.0 + fabs(x));
  case CELL_ACT_MISH: return x * tanh(softplus1(x));
  case CELL_ACT_HARDTANH: return x != x ? x : x < p0 ? p0 : x > p1 ? p1 : x;
  case CELL_ACT_HSWISH: return x <= -3 ? 0.0 : x >= 3 ? x : x * (x + 3) / 6;
  case CELL_ACT_HSIGMOID: return x <= -3 ? 0.0 : x >= 3 ? 1.0 : (x + 3) / 6;
  case CELL_ACT_LOGSIGMOID: return (x < 0 ? x : 0.0) - log1p(exp(-fabs(x)));
  case CELL_ACT_TANHSHRINK: return x - tanh(x);
  default: return 0.5 * x * (1.0 + tanh(GELU_C * (x + GELU_K * x * x * x)));
  }
}

/* d act / dx at x. */
static double act_grad(int kind, double x, double p0, double p1) {
  switch (kind) {
  case CELL_ACT_LEAKY_RELU: return x > 0 ? 1.0 : p0;
  case CELL_ACT_ELU: return x > 0 ? 1.0 : p0 * exp(x);
  case CELL_ACT_SELU: return SELU_SCALE * (x > 0 ? 1.0 : SELU_ALPHA * exp(x));
  case CELL_ACT_CELU: return x > 0 ? 1.0 : exp(x / p0);
  case CELL_ACT_SOFTSIGN: {
    double d = 1.0 + fabs(x);
    return 1.0 / (d * d);
  }
  case CELL_ACT_MISH: {
    double t = tanh(softplus1(x));
    return t + x * sigmoid(x) * (1.0 - t * t);
  }
  case CELL_ACT_HARDTANH: return x <= p0 || x >= p1 ? 0.0 : 1.0;
  case CELL_ACT_HSWISH: return x < -3 ? 0.0 : x <= 3 ? x / 3 + 0.5 : 1.0;
  case CELL_ACT_HSIGMOID: return x > -3 && x < 3 ? 1.0 / 6 : 0.0;
  case CELL_ACT_LOGSIGMOID: return sigmoid(-x);
  case CELL_ACT_TANHSHRINK: {
    double t = tanh(x);
    return t * t;
  }
  default: {
    double x2 = x * x, t = tanh(GELU_C * (x + GELU_K * x2 * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_K * x2);
  }
  }
}

static void fwd_loop(void *vctx, int64_t n, char **p, const int64_t *s) {
  const act_ctx *c = vctx;
  double buf[CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
    int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
    cell_load_run(c->dt[1], p[1] + i0 * s[1], s[1], m, buf);
    if (c->kind == CELL_ACT_GELU_TANH && c->dt[0] != CELL_DTYPE_F64) /* vector code, float32 accuracy */
      cell_vm_gelu_tanh_d(buf, buf, m);
    else
      for (int64_t i = 0; i < m; i++) buf[i] = act_fwd(c->kind, buf[i], c->p0, c->p1);
    cell_store_run(c->dt[0], p[0] + i0 * s[0], s[0], m, buf);
  }
}

static void bwd_loop(void *vctx, int64_t n, char **p, const int64_t *s) {
  const act_ctx *c = vctx;
  double g[CHUNK], x[CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
    int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
    cell_load_run(c->dt[1], p[1] + i0 * s[1], s[1], m, g);
    cell_load_run(c->dt[2], p[2] + i0 * s[2], s[2], m, x);
    if (c->kind == CELL_ACT_GELU_TANH && c->dt[0] != CELL_DTYPE_F64)
      cell_vm_gelu_tanh_grad_d(g, g, x, m);
    else
      for (int64_t i = 0; i < m; i++) g[i] *= act_grad(c->kind, x[i], c->p0, c->p1);
    cell_store_run(c->dt[0], p[0] + i0 * s[0], s[0], m, g);
  }
}

static cell_status act_check(const cell_tensor *x, int kind, double p0, double p1) {
  if (kind < 0 || kind >= CELL_ACT_COUNT)
    return cell_error(CELL_ERR_VALUE, "activation: unknown kind %d", kind);
  const char *nm = act_names[kind];
  if (!cell_dtype_is_float(x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: not supported for %s tensors (a float dtype is needed)",
                      nm, cell_dtype_name(x->dtype));
  if (p0 != p0 || p1 != p1)
    return cell_error(CELL_ERR_VALUE, "%s: parameters must be numbers, got %g, %g", nm, p0, p1);
  if (kind == CELL_ACT_CELU && p0 == 0)
    return cell_error(CELL_ERR_VALUE, "celu: alpha must not be 0");
  if (kind == CELL_ACT_HARDTANH && p0 > p1)
    return cell_error(CELL_ERR_VALUE, "hardtanh: min_val (%g) must not exceed max_val (%g)", p0, p1);
  return CELL_OK;
}

cell_status cell_cpu_activation(const cell_tensor *x, int kind, double p0, double p1,
                                cell_tensor **out) {
  if (!x || !out) return cell_error(CELL_ERR_VALUE, "activation: NULL argument");
  CELL_TRY(act_check(x, kind, p0, p1));
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &r));
  act_ctx c = {kind, p0, p1, {x->dtype, x->dtype, x->dtype}};
  cell_iter it;
  cell_iter_init(&it, x->ndim, x->shape);
  cell_iter_add(&it, r);
  cell_iter_add(&it, x);
  cell_status s = cell_iter_run(&it, fwd_loop, &c);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}

/* gx = g * act'(x); g has x's shape. */
cell_status cell_cpu_activation_backward(const cell_tensor *g, const cell_tensor *x, int kind,
                                         double p0, double p1, cell_tensor **gx) {
  if (!g || !x || !gx) return cell_error(CELL_ERR_VALUE, "activation_backward: NULL argument");
  CELL_TRY(act_check(x, kind, p0, p1));
  if (g->ndim != x->ndim) return cell_error(CELL_ERR_VALUE, "activation_backward: shape mismatch");
  for (int d = 0; d < x->ndim; d++)
    if (g->shape[d] != x->shape[d])
      return cell_error(CELL_ERR_VALUE, "activation_backward: shape mismatch");
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(x->dtype, x->ndim, x->shape, &r));
  act_ctx c = {kind, p0, p1, {x->dtype, g->dtype, x->dtype}};
  cell_iter it;
  cell_iter_init(&it, x->ndim, x->shape);
  cell_iter_add(&it, r);
  cell_iter_add(&it, g);
  cell_iter_add(&it, x);
  cell_status s = cell_iter_run(&it, bwd_loop, &c);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *gx = r;
  return CELL_OK;
}
