/* ew.c - the elementwise interpreter of gradient formulas (see ew.h): the
 * CPU's kernel ew. */
#include "kernel_list.h"
#include "../core/iter.h"
#include "vmath.h"
#include "ops.h"

#define EW_CHUNK 256

typedef struct {
  ew_op op;
  double k0, k1;
  int pos[3];                    /* iterator operand of a, b, c; 0 when absent */
  cell_dtype dt[CELL_ITER_MAX];  /* dtype of each iterator operand */
} ew_ctx;

/* sign with sign(0) = 0; NaN stays NaN. */
static inline double sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }

static inline double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

#define EW_FOR(EXPR)                                  \
  do {                                                \
    for (int64_t i = 0; i < n; i++) r[i] = (EXPR);    \
  } while (0)

static void ew_apply(const ew_ctx *c, int64_t n, const double *a, const double *b,
                     const double *cc, double *r) {
  const double k0 = c->k0, k1 = c->k1;
  switch (c->op) {
  case EW_ABS: EW_FOR(a[i] * sgn(b[i])); break;
  case EW_NEG: EW_FOR(-a[i]); break;
  case EW_EXP: EW_FOR(a[i] * cc[i]); break;
  case EW_LOG: EW_FOR(a[i] / b[i]); break;
  case EW_LOG1P: EW_FOR(a[i] / (1.0 + b[i])); break;
  case EW_SQRT: EW_FOR(a[i] * 0.5 / cc[i]); break;
  case EW_RSQRT: EW_FOR(-0.5 * a[i] * cc[i] * cc[i] * cc[i]); break;
  case EW_SIN: EW_FOR(a[i] * cos(b[i])); break;
  case EW_COS: EW_FOR(-a[i] * sin(b[i])); break;
  case EW_TANH: EW_FOR(a[i] * (1.0 - cc[i] * cc[i])); break;
  case EW_SIGMOID: EW_FOR(a[i] * cc[i] * (1.0 - cc[i])); break;
  case EW_RELU: EW_FOR(b[i] > 0 ? a[i] : 0.0); break;
  case EW_GELU: /* Phi(x) + x phi(x) */
    if (c->dt[0] != CELL_DTYPE_F64) { /* vector code, float32 accuracy */
      cell_vm_gelu_grad_d(r, a, b, n);
      break;
    }
    EW_FOR(a[i] * (0.5 * erfc(b[i] * -0.70710678118654752440) + /* Phi without erf's cancellation */
                   b[i] * 0.39894228040143267794 * exp(-0.5 * b[i] * b[i])));
    break;
  case EW_SILU:
    if (c->dt[0] != CELL_DTYPE_F64) {
      cell_vm_silu_grad_d(r, a, b, n);
      break;
    }
    for (int64_t i = 0; i < n; i++) {
      double s = sigmoid(b[i]);
      r[i] = a[i] * s * (1.0 + b[i] * (1.0 - s));
    }
    break;
  case EW_CLAMP: EW_FOR(b[i] >= k0 && b[i] <= k1 ? a[i] : 0.0); break;
  case EW_SEL_TRUE: EW_FOR(b[i] != 0 ? a[i] : 0.0); break;
  case EW_SEL_FALSE: EW_FOR(b[i] != 0 ? 0.0 : a[i]); break;
  case EW_SCALE: EW_FOR(a[i] * k0); break;
  case EW_MUL: EW_FOR(a[i] * b[i]); break;
  case EW_DIV: EW_FOR(a[i] / b[i]); break;
  case EW_EQ: EW_FOR(a[i] == b[i] ? 1.0 : 0.0); break;
  case EW_ABS_EQ: EW_FOR(fabs(a[i]) == b[i] ? 1.0 : 0.0); break;
  case EW_IS_ZERO: EW_FOR(a[i] == 0 ? 1.0 : 0.0); break;
  case EW_ZERO_TO_ONE: EW_FOR(a[i] == 0 ? 1.0 : a[i]); break;
  case EW_PROD: /* no zero in the slice: gw / x; one: gw at the zero; more: 0 */
    EW_FOR(cc[i] == 0 ? a[i] / b[i] : (cc[i] == 1 && b[i] == 0) ? a[i] : 0.0);
    break;
  case EW_PICK: EW_FOR(b[i] == cc[i] ? a[i] : 0.0); break;
  case EW_PICK_ABS: EW_FOR(fabs(b[i]) == cc[i] ? a[i] * sgn(b[i]) : 0.0); break;
  case EW_STD_SCALE: EW_FOR(b[i] == 0 ? 0.0 : a[i] / (k0 * b[i])); break;
  case EW_DEV: EW_FOR(a[i] * (b[i] - cc[i])); break;
  case EW_NORM_SCALE:
    if (k0 == 1.0) EW_FOR(b[i] == 0 ? 0.0 : a[i]);
    else if (k0 == 2.0) EW_FOR(b[i] == 0 ? 0.0 : a[i] / b[i]);
    else EW_FOR(b[i] == 0 ? 0.0 : a[i] / pow(b[i], k0 - 1.0));
    break;
  case EW_NORM:
    if (k0 == 1.0) EW_FOR(a[i] * sgn(b[i]));
    else if (k0 == 2.0) EW_FOR(a[i] * b[i]);
    else EW_FOR(b[i] == 0 ? 0.0 : a[i] * sgn(b[i]) * pow(fabs(b[i]), k0 - 1.0));
    break;
  case EW_ERF:
    if (c->dt[0] != CELL_DTYPE_F64) {
      cell_vm_erf_grad_d(r, a, b, n);
      break;
    }
    EW_FOR(a[i] * 1.12837916709551257390 * exp(-b[i] * b[i])); break;
  case EW_ERFC: EW_FOR(-a[i] * 1.12837916709551257390 * exp(-b[i] * b[i])); break;
  case EW_TAN: EW_FOR(a[i] * (1.0 + cc[i] * cc[i])); break;
  case EW_ATAN: EW_FOR(a[i] / (1.0 + b[i] * b[i])); break;
  case EW_ASIN: EW_FOR(a[i] / sqrt(1.0 - b[i] * b[i])); break;
  case EW_ACOS: EW_FOR(-a[i] / sqrt(1.0 - b[i] * b[i])); break;
  case EW_SINH: EW_FOR(a[i] * cosh(b[i])); break;
  case EW_COSH: EW_FOR(a[i] * sinh(b[i])); break;
  case EW_LOG2: EW_FOR(a[i] / (b[i] * 0.69314718055994530942)); break;
  case EW_LOG10: EW_FOR(a[i] / (b[i] * 2.30258509299404568402)); break;
  case EW_EXP2: EW_FOR(a[i] * cc[i] * 0.69314718055994530942); break;
  case EW_EXPM1: EW_FOR(a[i] * (cc[i] + 1.0)); break;
  case EW_SQUARE: EW_FOR(2.0 * b[i] * a[i]); break;
  case EW_RECIPROCAL: EW_FOR(-a[i] * cc[i] * cc[i]); break;
  case EW_SOFTPLUS: EW_FOR(b[i] * k0 > k1 ? a[i] : a[i] * sigmoid(b[i] * k0)); break;
  case EW_FINITE: EW_FOR(isfinite(b[i]) ? a[i] : 0.0); break;
  case EW_ATAN2_A: EW_FOR(a[i] * cc[i] / (b[i] * b[i] + cc[i] * cc[i])); break;
  case EW_ATAN2_B: EW_FOR(-a[i] * b[i] / (b[i] * b[i] + cc[i] * cc[i])); break;
  case EW_REM_B: EW_FOR(-a[i] * cell_floor_div(b[i], cc[i])); break;
  case EW_FMOD_B: EW_FOR(-a[i] * trunc(b[i] / cc[i])); break;
  default: EW_FOR(0.0); break;
  }
}
#undef EW_FOR

/* ReLU's gradient on contiguous float32, the hot case of a training step:
 * one branch-free pass instead of the chunked double path (a branch per
 * element mispredicts on random signs). Both loads come first, so the
 * select is a vector blend: a load under the condition keeps the loop
 * scalar, with a branch per element. */
static bool relu_f32_fast(const ew_ctx *c, int64_t n, char **p, const int64_t *s) {
  int qa = c->pos[0], qb = c->pos[1];
  if (c->op != EW_RELU || !qa || !qb || c->dt[0] != CELL_DTYPE_F32 || c->dt[qa] != CELL_DTYPE_F32 ||
      c->dt[qb] != CELL_DTYPE_F32 || s[0] != 4 || s[qa] != 4 || s[qb] != 4)
    return false;
  float *r = (float *)p[0];
  const float *g = (const float *)p[qa], *x = (const float *)p[qb];
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i], xi = x[i];
    r[i] = xi > 0.0f ? gi : 0.0f;
  }
  return true;
}

/* The same on contiguous bfloat16/float16 (mixed precision), on the bits:
 * x > 0 when the sign is clear and x is neither zero nor NaN, that is when
 * the bits h lie in [1, inf]: h - 1 < inf in unsigned arithmetic. The mask
 * is made without a comparison the compiler would turn into a branch per
 * element (it left this loop scalar, 10% of a bfloat16 CNN step). */
static bool relu_half_fast(const ew_ctx *c, int64_t n, char **p, const int64_t *s) {
  int qa = c->pos[0], qb = c->pos[1];
  cell_dtype dt = c->dt[0];
  if (c->op != EW_RELU || !qa || !qb || (dt != CELL_DTYPE_BF16 && dt != CELL_DTYPE_F16) || c->dt[qa] != dt ||
      c->dt[qb] != dt || s[0] != 2 || s[qa] != 2 || s[qb] != 2)
    return false;
  const uint16_t inf = dt == CELL_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
  uint16_t *r = (uint16_t *)p[0];
  const uint16_t *g = (const uint16_t *)p[qa], *x = (const uint16_t *)p[qb];
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    int32_t d = (int32_t)x[i] - 1; /* 0 <= d < inf exactly when 1 <= h <= inf */
    int32_t mask = ((d - (int32_t)inf) >> 31) & ~(d >> 31);
    r[i] = (uint16_t)(g[i] & (uint16_t)mask);
  }
  return true;
}

/* GELU's and SiLU's gradients on float32: the vector code reads and
 * writes contiguous floats in place, and strided ones through float
 * chunks, so that a view gets the values of a contiguous copy (GELU's is
 * computed in float32 arithmetic, which the double path would not
 * reproduce). */
static bool act_grad_f32_fast(const ew_ctx *c, int64_t n, char **p, const int64_t *s) {
  int qa = c->pos[0], qb = c->pos[1];
  if ((c->op != EW_GELU && c->op != EW_SILU) || !qa || !qb || c->dt[0] != CELL_DTYPE_F32 ||
      c->dt[qa] != CELL_DTYPE_F32 || c->dt[qb] != CELL_DTYPE_F32)
    return false;
  void (*fn)(float *, const float *, const float *, int64_t) =
      c->op == EW_GELU ? cell_vm_gelu_grad_f32 : cell_vm_silu_grad_f32;
  if (s[0] == 4 && s[qa] == 4 && s[qb] == 4) {
    fn((float *)p[0], (const float *)p[qa], (const float *)p[qb], n);
    return true;
  }
  float gf[EW_CHUNK], xf[EW_CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += EW_CHUNK) {
    int64_t m = n - i0 < EW_CHUNK ? n - i0 : EW_CHUNK;
    for (int64_t i = 0; i < m; i++) {
      gf[i] = *(const float *)(p[qa] + (i0 + i) * s[qa]);
      xf[i] = *(const float *)(p[qb] + (i0 + i) * s[qb]);
    }
    fn(gf, gf, xf, m);
    for (int64_t i = 0; i < m; i++) *(float *)(p[0] + (i0 + i) * s[0]) = gf[i];
  }
  return true;
}

/* The same on contiguous bfloat16 (mixed precision): chunks widened to
 * float32, the float32 forms, the result rounded once (the double path
 * computed in double what float32 holds to well past bfloat16). */
static bool act_grad_bf16_fast(const ew_ctx *c, int64_t n, char **p, const int64_t *s) {
  int qa = c->pos[0], qb = c->pos[1];
  if ((c->op != EW_GELU && c->op != EW_SILU) || !qa || !qb || c->dt[0] != CELL_DTYPE_BF16 ||
      c->dt[qa] != CELL_DTYPE_BF16 || c->dt[qb] != CELL_DTYPE_BF16 || s[0] != 2 || s[qa] != 2 || s[qb] != 2)
    return false;
  uint16_t *r = (uint16_t *)p[0];
  const uint16_t *g = (const uint16_t *)p[qa], *x = (const uint16_t *)p[qb];
  float gf[EW_CHUNK], xf[EW_CHUNK], rf[EW_CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += EW_CHUNK) {
    int64_t m = n - i0 < EW_CHUNK ? n - i0 : EW_CHUNK;
#pragma omp simd
    for (int64_t i = 0; i < m; i++) {
      gf[i] = cell_bf16_to_float(g[i0 + i]);
      xf[i] = cell_bf16_to_float(x[i0 + i]);
    }
    if (c->op == EW_GELU) cell_vm_gelu_grad_f32(rf, gf, xf, m);
    else cell_vm_silu_grad_f32(rf, gf, xf, m);
#pragma omp simd
    for (int64_t i = 0; i < m; i++) r[i0 + i] = cell_float_to_bf16(rf[i]);
  }
  return true;
}

static void ew_loop(void *vctx, int64_t n, char **p, const int64_t *s) {
  const ew_ctx *c = vctx;
  if (relu_f32_fast(c, n, p, s) || relu_half_fast(c, n, p, s) || act_grad_f32_fast(c, n, p, s) ||
      act_grad_bf16_fast(c, n, p, s))
    return;
  double buf[3][EW_CHUNK], res[EW_CHUNK];
  for (int64_t i0 = 0; i0 < n; i0 += EW_CHUNK) {
    int64_t m = n - i0 < EW_CHUNK ? n - i0 : EW_CHUNK;
    for (int k = 0; k < 3; k++) {
      int q = c->pos[k];
      if (q) cell_load_run(c->dt[q], p[q] + i0 * s[q], s[q], m, buf[k]);
    }
    ew_apply(c, m, buf[0], buf[1], buf[2], res);
    cell_store_run(c->dt[0], p[0] + i0 * s[0], s[0], m, res);
  }
}

cell_status cell_cpu_ew(ew_op op, double k0, double k1, cell_dtype dt, int ndim,
                        const int64_t *shape, const cell_tensor *a, const cell_tensor *b,
                        const cell_tensor *c, cell_tensor **out) {
  const cell_tensor *opd[3] = {a, b, c};
  for (int k = 0; k < 3; k++) {
    const cell_tensor *t = opd[k];
    if (!t) continue;
    bool ok = t->ndim <= ndim;
    for (int i = 0; ok && i < t->ndim; i++) {
      int64_t e = t->shape[i], want = shape[ndim - t->ndim + i];
      ok = e == want || e == 1;
    }
    if (!ok) {
      char b1[256], b2[256];
      return cell_error(CELL_ERR_RUNTIME,
                        "autograd: a tensor of shape %s does not broadcast to the shape %s of "
                        "the gradient being computed",
                        cell_shape_str(t->ndim, t->shape, b1, sizeof b1),
                        cell_shape_str(ndim, shape, b2, sizeof b2));
    }
  }
  cell_tensor *r;
  CELL_TRY(cell_tensor_new_contig(dt, ndim, shape, &r));
  ew_ctx x;
  memset(&x, 0, sizeof x);
  x.op = op;
  x.k0 = k0;
  x.k1 = k1;
  x.dt[0] = dt;
  cell_iter it;
  cell_iter_init(&it, ndim, shape);
  if (op == EW_GELU) it.cost = CELL_ITER_COST_VM_HEAVY;
  else if (op == EW_SILU || op == EW_ERF) it.cost = CELL_ITER_COST_VM;
  cell_iter_add(&it, r);
  for (int k = 0; k < 3; k++) {
    if (!opd[k]) continue;
    x.pos[k] = it.nops;
    x.dt[it.nops] = opd[k]->dtype;
    cell_iter_add(&it, opd[k]);
  }
  cell_status s = cell_iter_run(&it, ew_loop, &x);
  if (s != CELL_OK) {
    cell_tensor_release(r);
    return s;
  }
  *out = r;
  return CELL_OK;
}
