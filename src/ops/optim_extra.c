/* optim_extra.c - the fused steps of the other optimizers (RMSProp,
 * Adagrad, Adadelta, AdaMax, Lamb, LARS, AdamWeightDecay, FTRL, ASGD,
 * Rprop, Adam's amsgrad and nesterov forms, Lion): one kernel row,
 * optim_step, whose cfg->kind picks the update (include/cell_optim.h lists
 * the formulas). Each walks the parameter, its gradient and up to three
 * state tensors once (Lamb and LARS twice: their norms first), in double,
 * allocating nothing; the public cell_optim_step checks first. */
#include "optim.h"
#include <math.h>
#include <string.h>
#include "kernel_list.h"

#define NOPS 5

typedef struct {
  const cell_optim_config *c;
  double eta, mu, bc1, bc2s; /* ASGD's eta and mu; Adam-style bias corrections */
  double sw, sr;             /* the norms' sums of squares (Lamb, LARS) */
  double ratio;              /* Lamb's trust ratio, LARS's trust */
  int pass;                  /* 0: the norms; 1: the update */
} ectx;

static inline double ld(const char *p, int f32) { return f32 ? (double)*(const float *)p : *(const double *)p; }
static inline void st(char *p, int f32, double v) {
  if (f32)
    *(float *)p = (float)v;
  else
    *(double *)p = v;
}
static inline double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

/* One element: p[0] param, p[1] grad, p[2..4] the states. */
static void elem(ectx *e, char **p, int f32) {
  const cell_optim_config *c = e->c;
  const double lr = c->lr, wd = c->weight_decay, *h = c->h;
  double w = ld(p[0], f32), graw = ld(p[1], f32) * c->grad_scale;
  double g = graw + wd * w; /* L2 decay, for the kinds that use it */
  switch (c->kind) {
  case CELL_OPTIM_RMSPROP: {
    double decay = h[0], ms = ld(p[2], f32), d;
    ms = decay * ms + (1 - decay) * g * g;
    st(p[2], f32, ms);
    d = ms;
    if (c->flags & 1) {
      double mg = decay * ld(p[4], f32) + (1 - decay) * g;
      st(p[4], f32, mg);
      d = ms - mg * mg;
    }
    double mom = h[1] * ld(p[3], f32) + lr * g / sqrt(d + h[2]);
    st(p[3], f32, mom);
    st(p[0], f32, w - mom);
    break;
  }
  case CELL_OPTIM_ADAGRAD: {
    double a = ld(p[2], f32);
    if (c->flags & 1) {
      a += g * g;
      st(p[2], f32, a);
    }
    st(p[0], f32, w - lr * g / sqrt(a));
    break;
  }
  case CELL_OPTIM_ADADELTA: {
    double rho = h[0], eps = h[1];
    double a = rho * ld(p[2], f32) + (1 - rho) * g * g, au = ld(p[3], f32);
    double u = sqrt(au + eps) / sqrt(a + eps) * g;
    st(p[2], f32, a);
    st(p[3], f32, rho * au + (1 - rho) * u * u);
    st(p[0], f32, w - lr * u);
    break;
  }
  case CELL_OPTIM_ADAMAX: {
    double m = h[0] * ld(p[2], f32) + (1 - h[0]) * g, v = fmax(h[1] * ld(p[3], f32), fabs(g));
    st(p[2], f32, m);
    st(p[3], f32, v);
    st(p[0], f32, w - lr / e->bc1 * m / (v + h[2]));
    break;
  }
  case CELL_OPTIM_LAMB: {
    double m, v;
    if (e->pass == 0) {
      m = h[0] * ld(p[2], f32) + (1 - h[0]) * graw;
      v = h[1] * ld(p[3], f32) + (1 - h[1]) * graw * graw;
      st(p[2], f32, m);
      st(p[3], f32, v);
    } else {
      m = ld(p[2], f32);
      v = ld(p[3], f32);
    }
    double r = (m / e->bc1) / (sqrt(v) / e->bc2s + h[2]) + wd * w;
    if (e->pass == 0) {
      e->sw += w * w;
      e->sr += r * r;
    } else {
      st(p[0], f32, w - lr * e->ratio * r);
    }
    break;
  }
  case CELL_OPTIM_LARS: {
    if (e->pass == 0) {
      e->sw += w * w;
      e->sr += graw * graw;
    } else {
      st(p[2], f32, e->ratio * (ld(p[1], f32) + wd / c->grad_scale * w));
    }
    break;
  }
  case CELL_OPTIM_ADAMWD: {
    double m = h[0] * ld(p[2], f32) + (1 - h[0]) * graw;
    double v = h[1] * ld(p[3], f32) + (1 - h[1]) * graw * graw;
    st(p[2], f32, m);
    st(p[3], f32, v);
    st(p[0], f32, w - lr * (m / (sqrt(v) + h[2]) + wd * w));
    break;
  }
  case CELL_OPTIM_FTRL: {
    double l1 = h[0], l2 = h[1], lp = -h[2];
    double a0 = ld(p[2], f32), a = a0 + g * g;
    double lin = ld(p[3], f32) + g - (pow(a, lp) - pow(a0, lp)) / lr * w;
    st(p[2], f32, a);
    st(p[3], f32, lin);
    double q = pow(a, lp) / lr + 2 * l2;
    st(p[0], f32, fabs(lin) > l1 ? (sgn(lin) * l1 - lin) / q : 0.0);
    break;
  }
  case CELL_OPTIM_ASGD: {
    double nw = w * (1 - h[0] * e->eta) - e->eta * g;
    st(p[0], f32, nw);
    if (e->mu != 1) {
      double ax = ld(p[2], f32);
      st(p[2], f32, ax + (nw - ax) * e->mu);
    } else {
      st(p[2], f32, nw);
    }
    break;
  }
  case CELL_OPTIM_RPROP: {
    double prev = ld(p[2], f32), ss = c->step == 1 ? lr : ld(p[3], f32), s = g * prev;
    if (s > 0) {
      ss = fmin(ss * h[1], h[3]);
    } else if (s < 0) {
      ss = fmax(ss * h[0], h[2]);
      g = 0;
    } else {
      ss = fmin(fmax(ss, h[2]), h[3]);
    }
    st(p[3], f32, ss);
    st(p[2], f32, g);
    st(p[0], f32, w - sgn(g) * ss);
    break;
  }
  case CELL_OPTIM_AMSGRAD:
  case CELL_OPTIM_NESTEROV: {
    double b1 = h[0], b2 = h[1];
    if (c->flags & 2) {
      g = graw;
      w *= 1 - lr * wd;
    }
    double m = b1 * ld(p[2], f32) + (1 - b1) * g, v = b2 * ld(p[3], f32) + (1 - b2) * g * g;
    st(p[2], f32, m);
    st(p[3], f32, v);
    double num = m, den = v;
    if (c->kind == CELL_OPTIM_AMSGRAD) {
      den = fmax(ld(p[4], f32), v);
      st(p[4], f32, den);
    } else {
      num = b1 * m + (1 - b1) * g;
    }
    st(p[0], f32, w - lr / e->bc1 * num / (sqrt(den) / e->bc2s + h[2]));
    break;
  }
  case CELL_OPTIM_LION: {
    double m = ld(p[2], f32), cc = h[0] * m + (1 - h[0]) * graw;
    st(p[0], f32, w * (1 - lr * wd) - lr * sgn(cc));
    st(p[2], f32, h[1] * m + (1 - h[1]) * graw);
    break;
  }
  default:
    break;
  }
}

/* Every element of the operands (NULL ones skipped), in order. */
static void walk(ectx *e, cell_tensor **t) {
  const cell_tensor *p = t[0];
  int ndim = p->ndim, f32 = p->dtype == CELL_DTYPE_F32;
  int64_t es = f32 ? 4 : 8, idx[CELL_MAX_DIMS], st_[NOPS][CELL_MAX_DIMS];
  char *ptr[NOPS], *base[NOPS];
  int64_t total = 1;
  for (int d = 0; d < ndim; d++) total *= p->shape[d];
  if (total == 0) return;
  static char dummy[16];
  for (int k = 0; k < NOPS; k++) {
    base[k] = t[k] ? cell_tensor_base(t[k]) : dummy;
    for (int d = 0; d < ndim; d++) st_[k][d] = t[k] ? t[k]->stride[d] * es : 0;
  }
  memset(idx, 0, sizeof idx);
  for (int64_t i = 0; i < total; i++) {
    for (int k = 0; k < NOPS; k++) {
      ptr[k] = base[k];
      for (int d = 0; d < ndim; d++) ptr[k] += idx[d] * st_[k][d];
    }
    elem(e, ptr, f32);
    for (int d = ndim - 1; d >= 0; d--) {
      if (++idx[d] < p->shape[d]) break;
      idx[d] = 0;
    }
  }
}

cell_status cell_cpu_optim_step(cell_tensor *param, const cell_tensor *grad, cell_tensor *s0, cell_tensor *s1,
                                cell_tensor *s2, const cell_optim_config *cfg) {
  ectx e;
  memset(&e, 0, sizeof e);
  e.c = cfg;
  double t = (double)cfg->step;
  e.bc1 = 1.0 - pow(cfg->h[0], t);
  e.bc2s = sqrt(1.0 - pow(cfg->h[1], t));
  if (cfg->kind == CELL_OPTIM_ASGD && (cfg->flags & 1)) {
    e.eta = cfg->h[1]; /* the caller's state */
    e.mu = cfg->h[2];
  } else if (cfg->kind == CELL_OPTIM_ASGD) {
    e.eta = cfg->step == 1 ? cfg->lr : cfg->lr / pow(1 + cfg->h[0] * cfg->lr * (t - 1), cfg->h[1]);
    e.mu = cfg->step == 1 ? 1.0 : 1.0 / fmax(1.0, t - 1 - cfg->h[2]);
  }
  cell_tensor *ops[NOPS] = {param, (cell_tensor *)grad, s0, s1, s2};
  if (cfg->kind == CELL_OPTIM_LAMB || cfg->kind == CELL_OPTIM_LARS) {
    walk(&e, ops);
    double wn = sqrt(e.sw), rn = sqrt(e.sr);
    if (cfg->kind == CELL_OPTIM_LAMB)
      e.ratio = wn > 0 && rn > 0 ? wn / rn : 1.0;
    else
      e.ratio = wn > 0 && rn > 0 ? cfg->h[0] * wn / (rn + cfg->weight_decay * wn + cfg->h[1]) : 1.0;
    if (cfg->kind == CELL_OPTIM_LARS && (cfg->flags & 1)) /* use_clip: min(trust / lr, 1) */
      e.ratio = cfg->lr > 0 ? fmin(e.ratio / cfg->lr, 1.0) : 1.0;
    e.pass = 1;
  }
  walk(&e, ops);
  if (cfg->kind != CELL_OPTIM_LARS) cell_tensor_bump(param);
  for (int k = 2; k < NOPS; k++)
    if (ops[k]) cell_tensor_bump(ops[k]);
  return CELL_OK;
}
