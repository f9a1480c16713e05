/* optim.c - fused in-place optimizer steps: SGD (momentum, dampening,
 * Nesterov, weight decay) and Adam / AdamW, each one pass over the
 * parameter, its gradient and its state, on the strided iterator (one flat
 * loop when everything is contiguous), allocating nothing. */
#include "optim.h"
#include "../core/iter.h"
#include <math.h>
#include <stdio.h>
#include "kernel_list.h"
#include "device.h"

/* --- SGD ----------------------------------------------------------------------- */

typedef struct {
  double lr, momentum, keep, wd, gs; /* keep = 1 - dampening */
  int nesterov, first, has_buf;
} sgd_ctx;

/* One element; P, G, B are lvalues of type T (B only read when has_buf). */
#define SGD_ELEM(T, P, G, B)                                   \
  do {                                                         \
    T d_ = (G) * gs;                                           \
    if (wd != 0) d_ += wd * (P);                               \
    if (has_buf) {                                             \
      T b_ = first ? d_ : mom * (B) + keep * d_;               \
      (B) = b_;                                                \
      d_ = nesterov ? d_ + mom * b_ : b_;                      \
    }                                                          \
    (P) -= lr * d_;                                            \
  } while (0)

/* Contiguous operands go to vector loops (below); they assume that no two
 * operands partly overlap, which holds unless a caller passes views that
 * share memory at an offset: those take the element loop. The same
 * operand twice (at the same address) is fine, element i reading and
 * writing only element i. */
static int opt_overlap(const char *a, const char *b, int64_t bytes) {
  return a != b && a < b + bytes && b < a + bytes;
}
static int opt_overlap4(char **p, int64_t bytes) {
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      if (opt_overlap(p[i], p[j], bytes)) return 1;
  return 0;
}

/* The vector loops: `omp simd` (the build uses -fopenmp), one loop per
 * setting of the flags so that no branch stays inside, and on x86-64 a
 * second copy for AVX2 (as conv.h's CONV_CLONES). They compute exactly
 * what the element loop computes: the same operations in the same order,
 * without contracting a multiply and an add into one rounding (fp-contract
 * off). The Makefile builds this file with -fno-math-errno: sqrt is then one
 * instruction that vectorizes (its argument is a sum of squares, or NaN). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#define OPT_CLONES CELL_CLONES_V3

#define SGD_VLOOP(T, WD, HB, FIRST, NEST)                                   \
  do {                                                                      \
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                   \
      T d_ = gp[i] * gs;                                                    \
      if (WD) d_ += wd * pp[i];                                             \
      if (HB) {                                                             \
        T b_ = (FIRST) ? d_ : mom * bp[i] + keep * d_;                      \
        bp[i] = b_;                                                         \
        d_ = (NEST) ? d_ + mom * b_ : b_;                                   \
      }                                                                     \
      pp[i] -= lr * d_;                                                     \
    }                                                                       \
  } while (0)
#define SGD_VLOOP_BUF(T, WD)                                                \
  do {                                                                      \
    if (c->first) {                                                         \
      if (c->nesterov) SGD_VLOOP(T, WD, 1, 1, 1);                           \
      else SGD_VLOOP(T, WD, 1, 1, 0);                                       \
    } else {                                                                \
      if (c->nesterov) SGD_VLOOP(T, WD, 1, 0, 1);                           \
      else SGD_VLOOP(T, WD, 1, 0, 0);                                       \
    }                                                                       \
  } while (0)
#define SGD_CONTIG(name, T)                                                                 \
  OPT_CLONES static void name##_contig(const sgd_ctx *c, int64_t n, T *pp, const T *gp,     \
                                       T *bp) {                                             \
    const T lr = (T)c->lr, mom = (T)c->momentum, keep = (T)c->keep, wd = (T)c->wd,           \
            gs = (T)c->gs;                                                                  \
    (void)mom;                                                                              \
    (void)keep;                                                                             \
    if (!c->has_buf) {                                                                      \
      if (wd != 0) SGD_VLOOP(T, 1, 0, 0, 0);                                                \
      else SGD_VLOOP(T, 0, 0, 0, 0);                                                        \
    } else if (wd != 0) {                                                                   \
      SGD_VLOOP_BUF(T, 1);                                                                  \
    } else {                                                                                \
      SGD_VLOOP_BUF(T, 0);                                                                  \
    }                                                                                       \
  }
SGD_CONTIG(sgd_f32, float)
SGD_CONTIG(sgd_f64, double)

#define SGD_LOOP(name, T)                                                                  \
  static void name(void *vctx, int64_t n, char **p, const int64_t *s) {                    \
    const sgd_ctx *c = vctx;                                                               \
    const T lr = (T)c->lr, mom = (T)c->momentum, keep = (T)c->keep, wd = (T)c->wd,          \
            gs = (T)c->gs;                                                                 \
    const int nesterov = c->nesterov, first = c->first, has_buf = c->has_buf;              \
    const int64_t es = sizeof(T);                                                          \
    if (s[0] == es && s[1] == es && (!has_buf || s[2] == es) &&                            \
        !opt_overlap(p[0], p[1], n * es) && (!has_buf || (!opt_overlap(p[2], p[0], n * es) &&   \
                                                          !opt_overlap(p[2], p[1], n * es)))) { \
      name##_contig(c, n, (T *)p[0], (const T *)p[1], has_buf ? (T *)p[2] : NULL);         \
      return;                                                                              \
    }                                                                                      \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T *pe = (T *)(p[0] + i * s[0]);                                                      \
      const T *ge = (const T *)(p[1] + i * s[1]);                                          \
      T unused_ = 0, *be = has_buf ? (T *)(p[2] + i * s[2]) : &unused_;                    \
      SGD_ELEM(T, *pe, *ge, *be);                                                          \
    }                                                                                      \
  }
SGD_LOOP(sgd_f32, float)
SGD_LOOP(sgd_f64, double)

cell_status cell_cpu_sgd_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *buf,
                            const cell_sgd_config *cfg) {
  sgd_ctx c = {cfg->lr, cfg->momentum, 1.0 - cfg->dampening, cfg->weight_decay, cfg->grad_scale,
               cfg->nesterov != 0, cfg->first_step != 0, cfg->momentum != 0};
  cell_iter it;
  cell_iter_init(&it, param->ndim, param->shape);
  cell_iter_add(&it, param);
  cell_iter_add(&it, grad);
  if (c.has_buf) {
    cell_iter_add(&it, buf);
    cell_tensor_bump(buf);
  }
  cell_tensor_bump(param);
  return cell_iter_run(&it, param->dtype == CELL_DTYPE_F32 ? sgd_f32 : sgd_f64, &c);
}

/* --- Adam / AdamW ------------------------------------------------------------------ */

typedef struct {
  double b1, b2, omb1, omb2, eps, wd, gs, decay, neg_step_size, bc2_sqrt;
  int decoupled;
} adam_ctx;

#define ADAM_ELEM(T, SQRT, P, G, M, V)                     \
  do {                                                     \
    T g_ = (G) * gs, p_ = (P);                             \
    if (wd != 0) {                                         \
      if (decoupled) p_ *= decay;                          \
      else g_ += wd * p_;                                  \
    }                                                      \
    T m_ = (M) * b1 + omb1 * g_;                           \
    T v_ = (V) * b2 + omb2 * g_ * g_;                      \
    T denom_ = SQRT(v_) / bc2_sqrt + eps;                  \
    (P) = p_ + nss * m_ / denom_;                          \
    (M) = m_;                                              \
    (V) = v_;                                              \
  } while (0)

#define ADAM_VLOOP(T, SQRT, WD, DEC)                                        \
  _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                     \
    T g_ = gp[i] * gs, p_ = pp[i];                                          \
    if (WD) {                                                               \
      if (DEC) p_ *= decay;                                                 \
      else g_ += wd * p_;                                                   \
    }                                                                       \
    T m_ = mp[i] * b1 + omb1 * g_;                                          \
    T v_ = vp[i] * b2 + omb2 * g_ * g_;                                     \
    T denom_ = SQRT(v_) / bc2_sqrt + eps;                                   \
    pp[i] = p_ + nss * m_ / denom_;                                         \
    mp[i] = m_;                                                             \
    vp[i] = v_;                                                             \
  }
#define ADAM_CONTIG(name, T, SQRT)                                                          \
  OPT_CLONES static void name##_contig(const adam_ctx *c, int64_t n, T *pp, const T *gp,    \
                                       T *mp, T *vp) {                                      \
    const T b1 = (T)c->b1, b2 = (T)c->b2, omb1 = (T)c->omb1, omb2 = (T)c->omb2,              \
            eps = (T)c->eps, wd = (T)c->wd, gs = (T)c->gs, decay = (T)c->decay,              \
            nss = (T)c->neg_step_size, bc2_sqrt = (T)c->bc2_sqrt;                           \
    if (wd == 0) ADAM_VLOOP(T, SQRT, 0, 0)                                                  \
    else if (c->decoupled) ADAM_VLOOP(T, SQRT, 1, 1)                                        \
    else ADAM_VLOOP(T, SQRT, 1, 0)                                                          \
  }
ADAM_CONTIG(adam_f32, float, sqrtf)
ADAM_CONTIG(adam_f64, double, sqrt)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#define ADAM_LOOP(name, T, SQRT)                                                           \
  static void name(void *vctx, int64_t n, char **p, const int64_t *s) {                    \
    const adam_ctx *c = vctx;                                                              \
    const T b1 = (T)c->b1, b2 = (T)c->b2, omb1 = (T)c->omb1, omb2 = (T)c->omb2,             \
            eps = (T)c->eps, wd = (T)c->wd, gs = (T)c->gs, decay = (T)c->decay,             \
            nss = (T)c->neg_step_size, bc2_sqrt = (T)c->bc2_sqrt;                          \
    const int decoupled = c->decoupled;                                                    \
    const int64_t es = sizeof(T);                                                          \
    if (s[0] == es && s[1] == es && s[2] == es && s[3] == es && !opt_overlap4(p, n * es)) { \
      name##_contig(c, n, (T *)p[0], (const T *)p[1], (T *)p[2], (T *)p[3]);               \
      return;                                                                              \
    }                                                                                      \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T *pe = (T *)(p[0] + i * s[0]), *me = (T *)(p[2] + i * s[2]),                        \
        *ve = (T *)(p[3] + i * s[3]);                                                      \
      const T *ge = (const T *)(p[1] + i * s[1]);                                          \
      ADAM_ELEM(T, SQRT, *pe, *ge, *me, *ve);                                              \
    }                                                                                      \
  }
ADAM_LOOP(adam_f32, float, sqrtf)
ADAM_LOOP(adam_f64, double, sqrt)

cell_status cell_cpu_adam_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg,
                             cell_tensor *exp_avg_sq, const cell_adam_config *cfg) {
  /* The scalars as PyTorch computes them, in double: 1 - beta^step and
   * lr / (1 - beta1^step), then rounded to the parameter's type. */
  double t = (double)cfg->step;
  double bc1 = 1.0 - pow(cfg->beta1, t), bc2 = 1.0 - pow(cfg->beta2, t);
  adam_ctx c = {cfg->beta1,
                cfg->beta2,
                1.0 - cfg->beta1,
                1.0 - cfg->beta2,
                cfg->eps,
                cfg->weight_decay,
                cfg->grad_scale,
                1.0 - cfg->lr * cfg->weight_decay,
                -(cfg->lr / bc1),
                sqrt(bc2),
                cfg->decoupled != 0};
  cell_iter it;
  cell_iter_init(&it, param->ndim, param->shape);
  cell_iter_add(&it, param);
  cell_iter_add(&it, grad);
  cell_iter_add(&it, exp_avg);
  cell_iter_add(&it, exp_avg_sq);
  cell_tensor_bump(param);
  cell_tensor_bump(exp_avg);
  cell_tensor_bump(exp_avg_sq);
  return cell_iter_run(&it, param->dtype == CELL_DTYPE_F32 ? adam_f32 : adam_f64, &c);
}

/* --- checks ---------------------------------------------------------------------------- */

/* The parameter: float32 or float64, and writable element by element. */
static cell_status check_written(const char *op, const char *what, const cell_tensor *t) {
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] > 1 && t->stride[d] == 0)
      return cell_error(CELL_ERR_VALUE,
                        "%s: the %s is a broadcast view (stride 0 in dimension %d of size %lld): "
                        "its elements share memory and cannot be updated one by one; "
                        "use contiguous() or clone() to give it storage of its own",
                        op, what, d + 1, (long long)t->shape[d]);
  }
  return CELL_OK;
}

static cell_status check_param(const char *op, const cell_tensor *param) {
  if (!param) return cell_error(CELL_ERR_VALUE, "%s: the parameter is NULL", op);
  if (param->dtype != CELL_DTYPE_F32 && param->dtype != CELL_DTYPE_F64)
    return cell_error(CELL_ERR_TYPE,
                      "%s: the parameter is a %s tensor; optimizer steps update float32 and float64 "
                      "parameters",
                      op, cell_dtype_name(param->dtype));
  return check_written(op, "parameter", param);
}

/* A gradient or state tensor of the parameter: same shape and dtype; a
 * state tensor (written) may share no storage with the parameter. */
static cell_status check_like(const char *op, const char *what, const cell_tensor *t,
                              const cell_tensor *param, int written) {
  if (!t) return cell_error(CELL_ERR_VALUE, "%s: the %s is NULL", op, what);
  if (!cell_shape_equal(t->ndim, t->shape, param->ndim, param->shape)) {
    char st[256], sp[256];
    return cell_error(CELL_ERR_VALUE, "%s: the %s has shape %s but the parameter has shape %s", op,
                      what, cell_shape_str(t->ndim, t->shape, st, sizeof st),
                      cell_shape_str(param->ndim, param->shape, sp, sizeof sp));
  }
  if (t->dtype != param->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: the %s is a %s tensor but the parameter is %s", op, what,
                      cell_dtype_name(t->dtype), cell_dtype_name(param->dtype));
  if (written) {
    CELL_TRY(check_written(op, what, t));
    if (t->storage == param->storage)
      return cell_error(CELL_ERR_VALUE, "%s: the %s shares storage with the parameter", op, what);
  }
  return CELL_OK;
}

static cell_status check_number(const char *op, const char *what, double v, double lo) {
  if (!isfinite(v) || v < lo)
    return cell_error(CELL_ERR_VALUE, "%s: %s must be a finite number >= %g, got %g", op, what, lo, v);
  return CELL_OK;
}

static cell_status check_beta(const char *op, const char *what, double v) {
  if (!(v >= 0 && v < 1))
    return cell_error(CELL_ERR_VALUE, "%s: %s must be in [0, 1), got %g", op, what, v);
  return CELL_OK;
}

cell_status cell_optim_sgd_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *buf,
                                const cell_sgd_config *cfg) {
  static const char op[] = "sgd_step";
  if (!cfg) return cell_error(CELL_ERR_VALUE, "%s: the configuration is NULL", op);
  CELL_TRY(check_number(op, "lr", cfg->lr, 0));
  CELL_TRY(check_number(op, "momentum", cfg->momentum, 0));
  CELL_TRY(check_number(op, "dampening", cfg->dampening, 0));
  CELL_TRY(check_number(op, "weight_decay", cfg->weight_decay, 0));
  CELL_TRY(check_number(op, "grad_scale", cfg->grad_scale, -INFINITY));
  if (cfg->nesterov && (cfg->momentum <= 0 || cfg->dampening != 0))
    return cell_error(CELL_ERR_VALUE,
                      "%s: nesterov needs momentum > 0 and dampening == 0, got momentum %g and "
                      "dampening %g",
                      op, cfg->momentum, cfg->dampening);
  CELL_TRY(check_param(op, param));
  CELL_TRY(check_like(op, "gradient", grad, param, 0));
  if (cfg->momentum != 0) {
    if (!buf)
      return cell_error(CELL_ERR_VALUE, "%s: momentum %g needs a momentum buffer, got NULL", op,
                        cfg->momentum);
    CELL_TRY(check_like(op, "momentum buffer", buf, param, 1));
  }
  CELL_OP_NAMED(op, cell_k_sgd_step(param, grad, buf, cfg));
}

const char *cell_adam_op(const cell_adam_config *cfg) { return cfg && cfg->decoupled ? "adamw_step" : "adam_step"; }

cell_status cell_adam_check(const cell_tensor *param, const cell_tensor *grad, const cell_tensor *exp_avg,
                            const cell_tensor *exp_avg_sq, const cell_adam_config *cfg) {
  const char *op = cell_adam_op(cfg);
  if (!cfg) return cell_error(CELL_ERR_VALUE, "%s: the configuration is NULL", op);
  CELL_TRY(check_number(op, "lr", cfg->lr, 0));
  CELL_TRY(check_beta(op, "beta1", cfg->beta1));
  CELL_TRY(check_beta(op, "beta2", cfg->beta2));
  CELL_TRY(check_number(op, "eps", cfg->eps, 0));
  CELL_TRY(check_number(op, "weight_decay", cfg->weight_decay, 0));
  CELL_TRY(check_number(op, "grad_scale", cfg->grad_scale, -INFINITY));
  if (cfg->step < 1)
    return cell_error(CELL_ERR_VALUE, "%s: step must be >= 1 (1 for the first step), got %lld", op,
                      (long long)cfg->step);
  CELL_TRY(check_param(op, param));
  CELL_TRY(check_like(op, "gradient", grad, param, 0));
  CELL_TRY(check_like(op, "exp_avg", exp_avg, param, 1));
  CELL_TRY(check_like(op, "exp_avg_sq", exp_avg_sq, param, 1));
  if (exp_avg->storage == exp_avg_sq->storage)
    return cell_error(CELL_ERR_VALUE, "%s: exp_avg and exp_avg_sq share storage", op);
  return CELL_OK;
}

cell_status cell_optim_adam_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *exp_avg,
                                 cell_tensor *exp_avg_sq, const cell_adam_config *cfg) {
  CELL_TRY(cell_adam_check(param, grad, exp_avg, exp_avg_sq, cfg));
  CELL_OP_NAMED(cell_adam_op(cfg), cell_k_adam_step(param, grad, exp_avg, exp_avg_sq, cfg));
}

/* The state tensors each kind of cell_optim_step uses (s0, s1, s2). */
static int optim_nstates(const cell_optim_config *c) {
  switch (c->kind) {
  case CELL_OPTIM_RMSPROP: return (c->flags & 1) ? 3 : 2;
  case CELL_OPTIM_ADAGRAD: case CELL_OPTIM_ASGD: case CELL_OPTIM_LION: case CELL_OPTIM_LARS: return 1;
  case CELL_OPTIM_AMSGRAD: return 3;
  default: return 2;
  }
}

static const char *optim_names[] = {"?",         "rmsprop_step", "adagrad_step", "adadelta_step", "adamax_step",
                                    "lamb_step", "lars_step",    "adamwd_step",  "ftrl_step",     "asgd_step",
                                    "rprop_step", "amsgrad_step", "nesterov_step", "lion_step"};

cell_status cell_optim_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *s0, cell_tensor *s1,
                            cell_tensor *s2, const cell_optim_config *cfg) {
  if (!cfg) return cell_error(CELL_ERR_VALUE, "optim_step: the configuration is NULL");
  if (cfg->kind < CELL_OPTIM_RMSPROP || cfg->kind > CELL_OPTIM_LION)
    return cell_error(CELL_ERR_VALUE, "optim_step: unknown kind %d (expected %d to %d)", cfg->kind,
                      CELL_OPTIM_RMSPROP, CELL_OPTIM_LION);
  const char *op = optim_names[cfg->kind];
  CELL_TRY(check_number(op, "lr", cfg->lr, 0));
  if (cfg->kind == CELL_OPTIM_FTRL && !(cfg->lr > 0))
    return cell_error(CELL_ERR_VALUE, "%s: lr must be > 0, got %g", op, cfg->lr);
  CELL_TRY(check_number(op, "weight_decay", cfg->weight_decay, 0));
  CELL_TRY(check_number(op, "grad_scale", cfg->grad_scale, -INFINITY));
  if (cfg->kind == CELL_OPTIM_LARS && cfg->grad_scale == 0)
    return cell_error(CELL_ERR_VALUE, "%s: grad_scale must not be 0", op);
  for (int i = 0; i < 4; i++) CELL_TRY(check_number(op, "h[i]", cfg->h[i], -INFINITY));
  switch (cfg->kind) {
  case CELL_OPTIM_ADAMAX: case CELL_OPTIM_LAMB: case CELL_OPTIM_ADAMWD: case CELL_OPTIM_AMSGRAD:
  case CELL_OPTIM_NESTEROV: case CELL_OPTIM_LION:
    CELL_TRY(check_beta(op, "beta1", cfg->h[0]));
    CELL_TRY(check_beta(op, "beta2", cfg->h[1]));
    break;
  case CELL_OPTIM_FTRL:
    if (cfg->h[2] > 0) return cell_error(CELL_ERR_VALUE, "%s: lr_power must be <= 0, got %g", op, cfg->h[2]);
    break;
  default: break;
  }
  if (cfg->step < 1)
    return cell_error(CELL_ERR_VALUE, "%s: step must be >= 1 (1 for the first step), got %lld", op,
                      (long long)cfg->step);
  CELL_TRY(check_param(op, param));
  CELL_TRY(check_like(op, "gradient", grad, param, 0));
  cell_tensor *s[3] = {s0, s1, s2};
  int ns = optim_nstates(cfg);
  for (int i = 0; i < ns; i++) {
    char what[32];
    snprintf(what, sizeof what, "state s%d", i);
    CELL_TRY(check_like(op, what, s[i], param, 1));
    for (int j = 0; j < i; j++)
      if (s[j]->storage == s[i]->storage)
        return cell_error(CELL_ERR_VALUE, "%s: states s%d and s%d share storage", op, j, i);
  }
  for (int i = ns; i < 3; i++) s[i] = NULL;
  return cell_k_optim_step(param, grad, s[0], s[1], s[2], cfg);
}
