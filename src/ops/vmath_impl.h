/* vmath_impl.h - the body of vmath.h's functions, included once per code
 * path by vmath.c, vmath_avx2.c and vmath_avx512.c, which define VM_ATTR
 * (the target attribute, or nothing) and VM_TABLE (the table's name).
 *
 * Every element is computed in double by straight-line code: each branch
 * of a function is computed and the answer selected, so `omp simd` turns
 * each loop into vector code. Coefficients: Taylor's for exp, log and tanh;
 * erf's from tests/vmath_fit.py. */
#include "vmath.h"
#include <math.h>
/* gcc keeps a branch around an arithmetic select unless told that
 * floating-point operations do not trap (none of these needs the flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>

#define VM_SIMD _Pragma("omp simd")
#define VM_FN static inline VM_ATTR

#define VM_SHIFT 6755399441055744.0 /* 0x1.8p52: adding it rounds to an integer */
#define VM_SHIFT_BITS INT64_C(0x4338000000000000)
#define VM_LN2_HI 6.93147180369123816490e-01
#define VM_LN2_LO 1.90821492927058770002e-10

VM_FN int64_t vm_bits(double d) {
  int64_t i;
  memcpy(&i, &d, sizeof i);
  return i;
}
VM_FN double vm_double(int64_t i) {
  double d;
  memcpy(&d, &i, sizeof d);
  return d;
}

/* 2^k for an integer-valued k in [-1022, 1023]. */
VM_FN double vm_pow2(double k) {
  return vm_double((int64_t)((uint64_t)(vm_bits(k + VM_SHIFT) - VM_SHIFT_BITS + 1023) << 52));
}

/* exp(r) for |r| <= ln2 / 2: its Taylor series to r^11 (Horner). */
VM_FN double vm_exp_taylor(double r) {
  double p = 1.0 / 39916800;
  p = p * r + 1.0 / 3628800;
  p = p * r + 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return p;
}

/* exp: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by Taylor to r^11
 * (relative error below 1e-14), times 2^n in two halves so that results
 * in the subnormal range round once. */
VM_FN double vm_exp(double x) {
  x = x > 709.8 ? 709.8 : x;
  x = x < -746.0 ? -746.0 : x;
  double n = (x * 1.4426950408889634 + VM_SHIFT) - VM_SHIFT;
  double r = x - n * VM_LN2_HI;
  r = r - n * VM_LN2_LO;
  double p = vm_exp_taylor(r);
  double n1 = (n * 0.5 + VM_SHIFT) - VM_SHIFT, n2 = n - n1;
  return p * vm_pow2(n1) * vm_pow2(n2);
}

/* log: x = 2^k m with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s),
 * s = (m - 1) / (m + 1), by Taylor to s^15 (relative error below 1e-13). */
VM_FN double vm_log(double x) {
  int sub = x < 2.2250738585072014e-308;
  double xs = sub ? x * 4503599627370496.0 : x; /* 2^52 */
  uint64_t hx = (uint64_t)vm_bits(xs) + ((UINT64_C(0x3ff00000) - UINT64_C(0x3fe6a09e)) << 32);
  int64_t k = (int64_t)(hx >> 52) - 0x3ff;
  double m = vm_double((int64_t)((hx & UINT64_C(0x000fffffffffffff)) + (UINT64_C(0x3fe6a09e) << 32)));
  double kd = vm_double(VM_SHIFT_BITS + k) - VM_SHIFT;
  kd = sub ? kd - 52 : kd;
  double f = m - 1.0, s = f / (2.0 + f), z = s * s;
  double p = 1.0 / 15;
  p = p * z + 1.0 / 13;
  p = p * z + 1.0 / 11;
  p = p * z + 1.0 / 9;
  p = p * z + 1.0 / 7;
  p = p * z + 1.0 / 5;
  p = p * z + 1.0 / 3;
  p = p * z + 1.0;
  double r = kd * VM_LN2_HI + (2.0 * s * p + kd * VM_LN2_LO);
  r = x == INFINITY ? x : r;
  r = x == 0 ? -INFINITY : r;
  r = x < 0 ? NAN : r;
  return x != x ? x : r;
}

/* tanh: 1 - 2 / (exp(2|x|) + 1), and its series near 0 where that
 * cancels; the sign of x. */
VM_FN double vm_tanh(double x) {
  double a = __builtin_fabs(x), ac = a > 20 ? 20 : a;
  double big = 1.0 - 2.0 / (vm_exp(2.0 * ac) + 1.0);
  double z = a * a;
  double small = a * (1.0 + z * (-1.0 / 3 + z * (2.0 / 15 + z * (-17.0 / 315 + z * (62.0 / 2835)))));
  return __builtin_copysign(a < 0.01 ? small : big, x);
}

/* erf on [0, 1]: x P(x^2); erfc on [1, inf): exp(-x^2) t G(t), t = 1/x.
 * P by Horner's rule over z in a variable p of the literals' type: one
 * list of coefficients for this float64 form and GELU's float32 one
 * (vmath_gelu_impl.h), F the literals' suffix (f for float, empty for
 * double; a cast of the double literal would round twice). */
#define VM_LIT_(x, F) x##F
#define VM_ERF_SMALL_HORNER(p, z, F)               \
  p = -VM_LIT_(9.68973845989906154e-06, F);        \
  p = p * z + VM_LIT_(1.12747369623546664e-04, F); \
  p = p * z - VM_LIT_(8.48543877307673879e-04, F); \
  p = p * z + VM_LIT_(5.22113868553001053e-03, F); \
  p = p * z - VM_LIT_(2.68654755108659396e-02, F); \
  p = p * z + VM_LIT_(1.12837834438098375e-01, F); \
  p = p * z - VM_LIT_(3.76126385528226359e-01, F); \
  p = p * z + VM_LIT_(1.12837916708010422e+00, F)
VM_FN double vm_erf_small(double a, double z) {
  double p;
  VM_ERF_SMALL_HORNER(p, z, );
  return a * p;
}
/* t G(t), t = 1/a for a >= 1 (1 below): erfc(a) exp(a^2). */
VM_FN double vm_erfcx_large(double a) {
  double ac = a < 1 ? 1 : a, t = 1.0 / ac;
  double p = 4.17232810993252157e-01;
  p = p * t - 3.89228649138494909e+00;
  p = p * t + 1.66437390259375313e+01;
  p = p * t - 4.31281931886627703e+01;
  p = p * t + 7.53197294315273496e+01;
  p = p * t - 9.30064149346301292e+01;
  p = p * t + 8.23857894950807008e+01;
  p = p * t - 5.13484564310789366e+01;
  p = p * t + 2.07118248820022011e+01;
  p = p * t - 3.87736733124979560e+00;
  p = p * t - 4.40304795109346170e-01;
  p = p * t - 6.76084517422837761e-02;
  p = p * t + 4.28013407184071160e-01;
  p = p * t - 2.13552461531426972e-04;
  p = p * t - 2.82089838091372891e-01;
  p = p * t - 4.57731699499468282e-08;
  p = p * t + 5.64189583618467494e-01;
  return t * p;
}
VM_FN double vm_erfc_large(double a) {
  double ac = a < 1 ? 1 : a;
  return vm_exp(-(ac * ac)) * vm_erfcx_large(a);
}
VM_FN double vm_erf(double x) {
  double a = __builtin_fabs(x);
  double r = a < 1 ? vm_erf_small(a, a * a) : 1.0 - vm_erfc_large(a);
  return __builtin_copysign(r, x);
}

/* sigmoid: with e = exp(-|x|), 1 / (1 + e) or e / (1 + e). */
VM_FN double vm_sigmoid(double x) {
  double e = vm_exp(-__builtin_fabs(x)), s = 1.0 / (1.0 + e);
  return x >= 0 ? s : e * s;
}

#define GELU_C 0.79788456080286535587989211986876 /* sqrt(2/pi) */
#define GELU_K 0.044715

#define VM_MAP(name, T, EXPR)                                   \
  static VM_ATTR void name(T *y, const T *px, int64_t n) {      \
    VM_SIMD for (int64_t i = 0; i < n; i++) {                   \
      double x = px[i];                                         \
      y[i] = (T)(EXPR);                                         \
    }                                                           \
  }
#define VM_GRAD(name, EXPR)                                                      \
  static VM_ATTR void name(double *r, const double *pg, const double *px, int64_t n) { \
    VM_SIMD for (int64_t i = 0; i < n; i++) {                                    \
      double g = pg[i], x = px[i];                                               \
      r[i] = (EXPR);                                                             \
    }                                                                            \
  }

VM_MAP(exp_f32, float, vm_exp(x))

/* exp in float32 arithmetic (twice the lanes of the double form): x = n
 * ln2 + r, exp(r) by Taylor to r^7 (relative error below 1e-8), 2^n from
 * the bits; within 2 ulp (measured 1) of the correctly rounded value. The
 * normal range only: 0 below -87.33 (where the value would be
 * subnormal), inf above 88.72, NaN stays NaN. For softmax weights
 * (attention), whose sums are at least 1. */
/* exp(r) for |r| <= ln2 / 2 in float32: Taylor to r^7 (Horner). */
VM_FN float vm_expf_taylor(float r) {
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}
VM_FN float vm_expf_fast(float x) {
  float xc = x > 88.7228391f ? 88.7228391f : x;
  /* below the range (the result is 0) and NaN (the result is x): a finite
   * stand-in whose value is normal. Clamped to -87.34 instead, the product
   * below came out subnormal, and AMD's cores take a slow path for those:
   * attention's masked keys (-inf, half of a causal block) took 3.6 ns an
   * element against 2.4 for the others. */
  xc = xc < -87.3365479f ? 0.0f : xc;
  xc = x != x ? 0.0f : xc;
  float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* 0x1.8p23: rounds to an integer */
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = vm_expf_taylor(r);
  /* n in [-126, 128]: 2^n as 2^(n - h) 2^h, h = 1 for n > 0, each normal */
  float h = n > 0 ? 1.0f : 0.0f;
  int32_t bits = (int32_t)((uint32_t)((int32_t)(n - h) + 127) << 23);
  float two_n;
  memcpy(&two_n, &bits, sizeof two_n);
  float y = p * two_n * (1.0f + h);
  y = x > 88.7228391f ? INFINITY : y;
  y = x < -87.3365479f ? 0.0f : y;
  return x != x ? x : y;
}
static VM_ATTR void exp_fast_f32(float *y, const float *px, int64_t n) {
  VM_SIMD for (int64_t i = 0; i < n; i++) y[i] = vm_expf_fast(px[i]);
}
/* sigmoid and tanh in float32 arithmetic (twice the lanes of the double
 * forms, a third of the operations), for the recurrent layers' gates:
 * sigmoid from e = exp(-|x|) as 1 / (1 + e) or e / (1 + e) (0 where the
 * result would be subnormal, x < -87.3); tanh as 1 - 2 / (exp(2|x|) + 1)
 * from |x| = 0.55 (where that no longer cancels) and |x| (1 + x^2 Q(x^2))
 * below (Q fitted by tests/vmath_fit.py), the sign of x. Within 3 ulp
 * (measured 2.3 for sigmoid, 1.5 for tanh: tests/test_vmath.c). */
VM_FN float vm_sigmoid_fast(float x) {
  float e = vm_expf_fast(-__builtin_fabsf(x)), s = 1.0f / (1.0f + e);
  return x >= 0 ? s : e * s;
}
static VM_ATTR void sigmoid_fast_f32(float *y, const float *px, int64_t n) {
  VM_SIMD for (int64_t i = 0; i < n; i++) y[i] = vm_sigmoid_fast(px[i]);
}
VM_FN float vm_tanh_fast(float x) {
  float a = __builtin_fabsf(x), ac = a < 9.1f ? a : 9.1f; /* tanh(9.1) rounds to 1; NaN: 9.1 */
  float big = 1.0f - 2.0f / (vm_expf_fast(2.0f * ac) + 1.0f);
  float z = a * a;
  float q = -6.536851637e-03f;
  q = q * z + 2.126915194e-02f;
  q = q * z - 5.390263349e-02f;
  q = q * z + 1.333307773e-01f;
  q = q * z - 3.333333135e-01f;
  float r = a < 0.55f ? a + a * (z * q) : big;
  return x != x ? x : __builtin_copysignf(r, x);
}
static VM_ATTR void tanh_fast_f32(float *y, const float *px, int64_t n) {
  VM_SIMD for (int64_t i = 0; i < n; i++) y[i] = vm_tanh_fast(px[i]);
}
VM_MAP(log_f32, float, vm_log(x))
VM_MAP(tanh_f32, float, vm_tanh(x))
VM_MAP(erf_f32, float, vm_erf(x))
VM_MAP(sigmoid_f32, float, vm_sigmoid(x))
VM_MAP(silu_f32, float, x * vm_sigmoid(x))
VM_MAP(exp_d, double, vm_exp(x))
/* 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = C (x + K x^3) */
VM_MAP(gelu_tanh_d, double, x * vm_sigmoid(2.0 * GELU_C * (x + GELU_K * x * x * x)))

/* Phi(x) + x phi(x): one exp, exp(-x^2 / 2), serves the density and
 * Phi's tails (erfc(|z|) with z = x / sqrt 2). */
VM_FN double vm_gelu_grad(double x) {
  double z = x * 0.70710678118654752440, a = __builtin_fabs(z);
  double e = vm_exp(-0.5 * (x * x));
  double c = 0.5 * e * vm_erfcx_large(a);
  double big = z > 0 ? 1.0 - c : c;
  double small = 0.5 + 0.5 * __builtin_copysign(vm_erf_small(a, a * a), z);
  return (a < 1 ? small : big) + x * 0.39894228040143267794 * e;
}
VM_GRAD(gelu_grad_d, g * vm_gelu_grad(x))
/* 0.5 (1 + t) + 0.5 x (1 - t^2) C (1 + 3 K x^2), t = tanh(u), with
 * 1 + t = 2 s and 1 - t^2 = 4 s (1 - s), s = sigmoid(2u) */
VM_FN double vm_gelu_tanh_grad(double x) {
  double x2 = x * x, s = vm_sigmoid(2.0 * GELU_C * (x + GELU_K * x2 * x));
  return s + 2.0 * x * s * (1.0 - s) * GELU_C * (1.0 + 3.0 * GELU_K * x2);
}
VM_GRAD(gelu_tanh_grad_d, g * vm_gelu_tanh_grad(x))
VM_FN double vm_silu_grad(double x) {
  double s = vm_sigmoid(x);
  return s * (1.0 + x * (1.0 - s));
}
VM_GRAD(silu_grad_d, g * vm_silu_grad(x))
VM_GRAD(erf_grad_d, g * 1.12837916709551257390 * vm_exp(-(x * x)))
#define VM_GRAD_F32(name, EXPR)                                                  \
  static VM_ATTR void name(float *r, const float *pg, const float *px, int64_t n) { \
    VM_SIMD for (int64_t i = 0; i < n; i++) {                                    \
      double g = pg[i], x = px[i];                                               \
      r[i] = (float)(EXPR);                                                      \
    }                                                                            \
  }
VM_GRAD_F32(silu_grad_f32, g * vm_silu_grad(x))

#include "vmath_gelu_impl.h"

const cell_vm_table VM_TABLE = {exp_f32,     log_f32,     tanh_f32,         erf_f32,
                                sigmoid_f32, silu_f32,    gelu_f32,         exp_d,
                                gelu_tanh_d, gelu_grad_d, gelu_tanh_grad_d, silu_grad_d,
                                erf_grad_d,  gelu_grad_f32, silu_grad_f32,    exp_fast_f32,
                                sigmoid_fast_f32, tanh_fast_f32};
