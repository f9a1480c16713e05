/* vmath_gelu_impl.h - GELU, x Phi(x), and its gradient Phi(x) + x phi(x)
 * on float32 arrays (part of vmath_impl.h, included once per code path).
 *
 * Computed in float32 arithmetic: eight lanes a vector where the float64
 * forms had four, and a third fewer operations (GELU and its gradient were
 * 14% of a tiny GPT's training step). Two forms, each accurate where the
 * other is not:
 *   - the polynomial, for x in (-0.75, 1.4142): Phi = 1/2 + erf(z)/2,
 *     z = x / sqrt 2, by erf's polynomial (vmath_impl.h's, in float); below
 *     -0.75 the sum would cancel (Phi < 0.23);
 *   - the tail, elsewhere: erfc(a) = t exp(-a^2 + P(t)), a = |z|,
 *     t = 1 / (1 + a/2) (the form of Numerical Recipes' erfcc, P refitted
 *     for a in [0.5, 10.6] by tests/vmath_fit.py), with a^2 = x^2 / 2
 *     carried as a float pair (x^2 and its exact remainder) into the exp so
 *     that a large argument loses nothing, and the left tail scaled by 2^64
 *     until the last product so that it stays accurate into the subnormals.
 * Measured against float64 references over every 4099th float (test_vmath):
 * GELU within 2.4 ulp on the polynomial's range, 1 ulp on the right tail,
 * 5.3 ulp on the left (where GELU is smaller than 0.17 in size); the
 * gradient within 3 ulp of the larger of Phi(x) and |x phi(x)| (its two
 * terms cancel near its root, x = -0.7518). PyTorch's float32 form,
 * 0.5 x (1 + erf(x / sqrt 2)), loses most digits of its left tail to
 * cancellation.
 *
 * A block of VM_GELU_BLK elements takes the polynomial throughout; its
 * tail elements (about a third of a network's activations) are gathered
 * into a dense buffer a vector of VM_GELU_RUN at a time, take the tail's
 * form, and are put back. Which form an element takes depends on its value
 * alone, so its result does not depend on its neighbours. */

#define VM_GELU_RUN 8
#define VM_GELU_BLK 256
#define VM_GELU_LO (-0.75f)
#define VM_GELU_HI 1.4142f
#define VM_GELU_BIG 15.0f          /* beyond, GELU is x or -0 in float32 */
#define VM_TWO_M64 5.42101086e-20f /* 2^-64 */

/* The tail's elements of px[0..m) (x outside (LO, HI), NaN included):
 * their indices in idx, their values in xt (and g's in gt when pg is not
 * NULL); the count. idx, xt and gt have room for m + VM_GELU_RUN (the
 * vector form stores whole vectors). */
#ifdef VM_X86_AVX2
#include <immintrin.h>
/* Entry m: the positions of m's set bits, a nibble each from the lowest. */
static const uint32_t vm_compact_lut[256] = {
    0x00000000, 0x00000000, 0x00000001, 0x00000010, 0x00000002, 0x00000020, 0x00000021, 0x00000210,
    0x00000003, 0x00000030, 0x00000031, 0x00000310, 0x00000032, 0x00000320, 0x00000321, 0x00003210,
    0x00000004, 0x00000040, 0x00000041, 0x00000410, 0x00000042, 0x00000420, 0x00000421, 0x00004210,
    0x00000043, 0x00000430, 0x00000431, 0x00004310, 0x00000432, 0x00004320, 0x00004321, 0x00043210,
    0x00000005, 0x00000050, 0x00000051, 0x00000510, 0x00000052, 0x00000520, 0x00000521, 0x00005210,
    0x00000053, 0x00000530, 0x00000531, 0x00005310, 0x00000532, 0x00005320, 0x00005321, 0x00053210,
    0x00000054, 0x00000540, 0x00000541, 0x00005410, 0x00000542, 0x00005420, 0x00005421, 0x00054210,
    0x00000543, 0x00005430, 0x00005431, 0x00054310, 0x00005432, 0x00054320, 0x00054321, 0x00543210,
    0x00000006, 0x00000060, 0x00000061, 0x00000610, 0x00000062, 0x00000620, 0x00000621, 0x00006210,
    0x00000063, 0x00000630, 0x00000631, 0x00006310, 0x00000632, 0x00006320, 0x00006321, 0x00063210,
    0x00000064, 0x00000640, 0x00000641, 0x00006410, 0x00000642, 0x00006420, 0x00006421, 0x00064210,
    0x00000643, 0x00006430, 0x00006431, 0x00064310, 0x00006432, 0x00064320, 0x00064321, 0x00643210,
    0x00000065, 0x00000650, 0x00000651, 0x00006510, 0x00000652, 0x00006520, 0x00006521, 0x00065210,
    0x00000653, 0x00006530, 0x00006531, 0x00065310, 0x00006532, 0x00065320, 0x00065321, 0x00653210,
    0x00000654, 0x00006540, 0x00006541, 0x00065410, 0x00006542, 0x00065420, 0x00065421, 0x00654210,
    0x00006543, 0x00065430, 0x00065431, 0x00654310, 0x00065432, 0x00654320, 0x00654321, 0x06543210,
    0x00000007, 0x00000070, 0x00000071, 0x00000710, 0x00000072, 0x00000720, 0x00000721, 0x00007210,
    0x00000073, 0x00000730, 0x00000731, 0x00007310, 0x00000732, 0x00007320, 0x00007321, 0x00073210,
    0x00000074, 0x00000740, 0x00000741, 0x00007410, 0x00000742, 0x00007420, 0x00007421, 0x00074210,
    0x00000743, 0x00007430, 0x00007431, 0x00074310, 0x00007432, 0x00074320, 0x00074321, 0x00743210,
    0x00000075, 0x00000750, 0x00000751, 0x00007510, 0x00000752, 0x00007520, 0x00007521, 0x00075210,
    0x00000753, 0x00007530, 0x00007531, 0x00075310, 0x00007532, 0x00075320, 0x00075321, 0x00753210,
    0x00000754, 0x00007540, 0x00007541, 0x00075410, 0x00007542, 0x00075420, 0x00075421, 0x00754210,
    0x00007543, 0x00075430, 0x00075431, 0x00754310, 0x00075432, 0x00754320, 0x00754321, 0x07543210,
    0x00000076, 0x00000760, 0x00000761, 0x00007610, 0x00000762, 0x00007620, 0x00007621, 0x00076210,
    0x00000763, 0x00007630, 0x00007631, 0x00076310, 0x00007632, 0x00076320, 0x00076321, 0x00763210,
    0x00000764, 0x00007640, 0x00007641, 0x00076410, 0x00007642, 0x00076420, 0x00076421, 0x00764210,
    0x00007643, 0x00076430, 0x00076431, 0x00764310, 0x00076432, 0x00764320, 0x00764321, 0x07643210,
    0x00000765, 0x00007650, 0x00007651, 0x00076510, 0x00007652, 0x00076520, 0x00076521, 0x00765210,
    0x00007653, 0x00076530, 0x00076531, 0x00765310, 0x00076532, 0x00765320, 0x00765321, 0x07653210,
    0x00007654, 0x00076540, 0x00076541, 0x00765410, 0x00076542, 0x00765420, 0x00765421, 0x07654210,
    0x00076543, 0x00765430, 0x00765431, 0x07654310, 0x00765432, 0x07654320, 0x07654321, 0x76543210,
};
/* A vector at a time, branch-free: the tail lanes' mask, the lanes moved
 * to the front by the table's permutation, all 8 stored, the count
 * advanced by the mask's bits (a loop over the bits mispredicted about
 * once a vector: 1.7 ns an element, more than the polynomial). */
static inline __attribute__((target("avx2,fma,popcnt"))) int vm_gelu_tail(const float *px, const float *pg, int64_t m,
                                                                             int *idx, float *xt, float *gt) {
  const __m256 lo = _mm256_set1_ps(VM_GELU_LO), hi = _mm256_set1_ps(VM_GELU_HI);
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), nib = _mm256_set1_epi32(15);
  int nt = 0;
  int64_t r = 0;
  for (; r + VM_GELU_RUN <= m; r += VM_GELU_RUN) {
    __m256 x = _mm256_loadu_ps(px + r);
    __m256 in = _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GT_OQ), _mm256_cmp_ps(x, hi, _CMP_LT_OQ));
    unsigned msk = ~(unsigned)_mm256_movemask_ps(in) & 0xffu;
    __m256i perm = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)vm_compact_lut[msk]), shifts), nib);
    _mm256_storeu_si256((__m256i *)(idx + nt), _mm256_add_epi32(perm, _mm256_set1_epi32((int)r)));
    _mm256_storeu_ps(xt + nt, _mm256_permutevar8x32_ps(x, perm));
    if (pg) _mm256_storeu_ps(gt + nt, _mm256_permutevar8x32_ps(_mm256_loadu_ps(pg + r), perm));
    nt += __builtin_popcount(msk);
  }
#else
VM_FN int vm_gelu_tail(const float *px, const float *pg, int64_t m, int *idx, float *xt, float *gt) {
  int nt = 0;
  int64_t r = 0;
#endif
  for (; r < m; r++) {
    if (px[r] > VM_GELU_LO && px[r] < VM_GELU_HI) continue;
    idx[nt] = (int)r;
    xt[nt] = px[r];
    if (pg) gt[nt] = pg[r];
    nt++;
  }
  return nt;
}

/* Phi on the polynomial's range (Horner's rule: Estrin's scheme here took
 * the worst error from 2.4 to 2.9 ulp of the bound's 3 for 1-2% of speed). */
VM_FN float vm_phi_poly_f(float x) {
  float z = x * 0.707106781f, q = z * z, p;
  VM_ERF_SMALL_HORNER(p, q, f);
  return 0.5f + 0.5f * (z * p);
}
/* exp(u) for u in [-1, 0]: e^(-1/2) e^(u + 1/2), Taylor to degree 8 by
 * Estrin's scheme: pairs of terms, then pairs of pairs, four multiply-adds
 * deep where Horner's rule is eight. The tail's loops wait on that chain
 * rather than on the multiply-adds' throughput: with this and the same
 * form for P(t) below, GELU's forward and gradient over 131,072 normal
 * samples went from 489 and 716 us to 461 and 665 (one Zen core). */
VM_FN float vm_exp_unit_f(float u) {
  float r = u + 0.5f, r2 = r * r, r4 = r2 * r2;
  float a = 1.0f + r, b = 0.5f + r * (1.0f / 6);
  float c = 1.0f / 24 + r * (1.0f / 120), d = 1.0f / 720 + r * (1.0f / 5040);
  float p = (a + r2 * b) + r4 * ((c + r2 * d) + r4 * (1.0f / 40320));
  return p * 0.606530660f;
}

VM_FN float vm_f32_from_bits(int32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
/* exp(h + l) 2^64 for h + l in [-115, 0], h = -x^2 / 2 (a multiple of
 * 2^-17 or finer) and l smaller: n from the sum, r = (h - n ln2_hi) + l -
 * n ln2_lo (the first difference exact), exp(r) by Taylor to r^7. */
VM_FN float vm_exp_pair_scaled_f(float h, float l) {
  float n = ((h + l) * 1.44269504f + 12582912.0f) - 12582912.0f; /* 0x1.8p23: rounds to an integer */
  float r = (h - n * 0.693359375f) + l;
  r = r + n * 2.12194440e-4f;
  return vm_expf_taylor(r) * vm_f32_from_bits((int32_t)((uint32_t)((int32_t)n + 64 + 127) << 23));
}
/* x^2 / 2 as h + l: -h - l exactly (x^2 has 48 bits). */
VM_FN float vm_half_square_lo(float x, float h) {
#ifdef VM_X86_AVX2
  return -0.5f * __builtin_fmaf(x, x, 2.0f * h);
#else /* no FMA instruction: the product is exact in double */
  return (float)(-0.5 * ((double)x * x) - h);
#endif
}
/* P(t) of erfc(a) = t exp(-a^2 + P(t)) (coefficients: tests/vmath_fit.py),
 * by Estrin's scheme (as vm_exp_unit_f). */
VM_FN float vm_erfc_exponent_f(float t) {
  float t2 = t * t, t4 = t2 * t2;
  float a = -1.265436530e+00f + t * 9.981932640e-01f;
  float b = 3.929170668e-01f + t * -1.208519936e-02f;
  float c = 2.061239779e-01f + t * -6.388432980e-01f;
  float d = 2.602377534e-01f + t * 1.568981856e-01f;
  return (a + t2 * b) + t4 * ((c + t2 * d) + t4 * -9.823396802e-02f);
}
/* Phi(-ax) 2^64 for ax in [0.75, VM_GELU_BIG]: erfc(ax / sqrt 2) 2^63. */
VM_FN float vm_phi_left_scaled_f(float ax) {
  float t = 1.0f / (1.0f + 0.5f * (ax * 0.707106781f));
  float h = -0.5f * (ax * ax);
  return 0.5f * t * vm_exp_pair_scaled_f(h, vm_erfc_exponent_f(t) + vm_half_square_lo(ax, h));
}
VM_FN float vm_gelu_tail_f(float x) {
  float ax = __builtin_fabsf(x), axc = ax <= VM_GELU_BIG ? ax : VM_GELU_BIG; /* NaN: a finite stand-in */
  float m = vm_phi_left_scaled_f(axc);
  float v = x > 0 ? x * (1.0f - m * VM_TWO_M64) : (x * m) * VM_TWO_M64;
  return ax <= VM_GELU_BIG ? v : (x > 0 ? x : x * 0.0f); /* -inf and NaN: NaN */
}
VM_FN float vm_gelu_grad_tail_f(float x) {
  float ax = __builtin_fabsf(x), axc = ax <= VM_GELU_BIG ? ax : VM_GELU_BIG;
  float m = vm_phi_left_scaled_f(axc), h = -0.5f * (axc * axc);
  float d = 0.398942280f * vm_exp_pair_scaled_f(h, vm_half_square_lo(axc, h)); /* phi(x) 2^64 */
  float v = x > 0 ? (1.0f - m * VM_TWO_M64) + (x * d) * VM_TWO_M64 : (m + x * d) * VM_TWO_M64;
  return ax <= VM_GELU_BIG ? v : (x > 0 ? 1.0f + x * 0.0f : x * 0.0f); /* infinities and NaN: NaN */
}

static VM_ATTR void gelu_f32(float *y, const float *px, int64_t n) {
  int idx[VM_GELU_BLK + VM_GELU_RUN];
  float xt[VM_GELU_BLK + VM_GELU_RUN];
  for (int64_t i0 = 0; i0 < n; i0 += VM_GELU_BLK) {
    int64_t m = n - i0 < VM_GELU_BLK ? n - i0 : VM_GELU_BLK;
    const float *xs = px + i0;
    float *ys = y + i0;
    int nt = vm_gelu_tail(xs, NULL, m, idx, xt, NULL); /* before y, which may be px, is written */
    VM_SIMD for (int64_t i = 0; i < m; i++) {
      float x = xs[i];
      ys[i] = x * vm_phi_poly_f(x);
    }
    VM_SIMD for (int k = 0; k < nt; k++) xt[k] = vm_gelu_tail_f(xt[k]);
    for (int k = 0; k < nt; k++) ys[idx[k]] = xt[k];
  }
}
static VM_ATTR void gelu_grad_f32(float *r, const float *pg, const float *px, int64_t n) {
  int idx[VM_GELU_BLK + VM_GELU_RUN];
  float xt[VM_GELU_BLK + VM_GELU_RUN], gt[VM_GELU_BLK + VM_GELU_RUN];
  for (int64_t i0 = 0; i0 < n; i0 += VM_GELU_BLK) {
    int64_t m = n - i0 < VM_GELU_BLK ? n - i0 : VM_GELU_BLK;
    const float *xs = px + i0, *gs = pg + i0;
    float *rs = r + i0;
    int nt = vm_gelu_tail(xs, gs, m, idx, xt, gt);
    VM_SIMD for (int64_t i = 0; i < m; i++) {
      float x = xs[i];
      rs[i] = gs[i] * (vm_phi_poly_f(x) + x * (0.398942280f * vm_exp_unit_f(-0.5f * (x * x))));
    }
    VM_SIMD for (int k = 0; k < nt; k++) xt[k] = gt[k] * vm_gelu_grad_tail_f(xt[k]);
    for (int k = 0; k < nt; k++) rs[idx[k]] = xt[k];
  }
}
