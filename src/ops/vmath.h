/* vmath.h - transcendentals over arrays for float32 results (internal).
 *
 * exp, log, tanh, erf, sigmoid and the activations and gradients built on
 * them, computed element by element in double precision with branch-free
 * polynomials (no libm call), so that a loop of them vectorises. Each is
 * accurate to about 1e-10 relative (see tests/test_vmath.c), far below a
 * float32 ulp (6e-8), so a float32 result rounds as libm's double would
 * round it, give or take one ulp at a rounding boundary. The exceptions
 * compute in float32 arithmetic, where speed matters more than the last
 * bit: exp_fast (attention's softmax weights), sigmoid_fast and tanh_fast
 * (recurrent layers' gates) and GELU with its gradient (transformers'
 * feed-forward layers), each within a few ulp. They are meant for
 * float32 / float16 / bfloat16 results; float64 results keep libm.
 *
 * Three builds of the same code: portable C (SSE2 on x86-64, whatever the
 * compiler vectorises elsewhere), AVX2+FMA and AVX-512 (vmath_avx2.c,
 * vmath_avx512.c, with gcc/clang target attributes). The best one the CPU
 * has is chosen at run time by cpuid, on first use.
 *
 * _f32 functions read and write float arrays; _d functions read and write
 * double buffers (the chunk buffers of the op loops). Outputs may alias
 * inputs element for element (y == x); n may be 0. NaN propagates, and the
 * infinities and signed zeros give what libm gives. */
#ifndef CELL_OPS_VMATH_H
#define CELL_OPS_VMATH_H
#include <stdint.h>

/* float arrays: y = f(x) */
void cell_vm_exp_f32(float *y, const float *x, int64_t n);
void cell_vm_log_f32(float *y, const float *x, int64_t n);
void cell_vm_tanh_f32(float *y, const float *x, int64_t n);
void cell_vm_erf_f32(float *y, const float *x, int64_t n);
void cell_vm_sigmoid_f32(float *y, const float *x, int64_t n);
void cell_vm_silu_f32(float *y, const float *x, int64_t n);
/* GELU, exact form x Phi(x), in float32 arithmetic: within a few ulp
 * (vmath_gelu_impl.h) */
void cell_vm_gelu_f32(float *y, const float *x, int64_t n);
/* exp in float32 arithmetic: within 2 ulp in the normal range, 0 where
 * exp(x) would be subnormal (softmax weights: attention) */
void cell_vm_exp_fast_f32(float *y, const float *x, int64_t n);
/* sigmoid and tanh in float32 arithmetic: within 3 ulp, sigmoid 0 where it
 * would be subnormal (the recurrent layers' gates) */
void cell_vm_sigmoid_fast_f32(float *y, const float *x, int64_t n);
void cell_vm_tanh_fast_f32(float *y, const float *x, int64_t n);

/* double buffers: y = f(x) */
void cell_vm_exp_d(double *y, const double *x, int64_t n);
void cell_vm_gelu_tanh_d(double *y, const double *x, int64_t n); /* tanh approximation */
/* double buffers: gradients r = g f'(x) */
void cell_vm_gelu_grad_d(double *r, const double *g, const double *x, int64_t n);
void cell_vm_gelu_tanh_grad_d(double *r, const double *g, const double *x, int64_t n);
void cell_vm_silu_grad_d(double *r, const double *g, const double *x, int64_t n);
void cell_vm_erf_grad_d(double *r, const double *g, const double *x, int64_t n);
/* float arrays: the same gradients. SiLU's computed in double and rounded
 * once (the values the double buffers give, stored as float32); GELU's in
 * float32 arithmetic as cell_vm_gelu_f32 (within a few ulp of the larger
 * of its terms Phi(x) and |x phi(x)|) */
void cell_vm_gelu_grad_f32(float *r, const float *g, const float *x, int64_t n);
void cell_vm_silu_grad_f32(float *r, const float *g, const float *x, int64_t n);

/* The code paths: 0 portable, 1 AVX2+FMA, 2 AVX-512. cell_vm_level says
 * which one runs; cell_vm_set_level chooses one (for tests), clamped to
 * what the CPU has, and returns the one chosen; -1 chooses the best. */
int cell_vm_level(void);
int cell_vm_set_level(int level);

/* One table of the functions above per code path (vmath_impl.h). */
typedef struct {
  void (*exp_f32)(float *, const float *, int64_t);
  void (*log_f32)(float *, const float *, int64_t);
  void (*tanh_f32)(float *, const float *, int64_t);
  void (*erf_f32)(float *, const float *, int64_t);
  void (*sigmoid_f32)(float *, const float *, int64_t);
  void (*silu_f32)(float *, const float *, int64_t);
  void (*gelu_f32)(float *, const float *, int64_t);
  void (*exp_d)(double *, const double *, int64_t);
  void (*gelu_tanh_d)(double *, const double *, int64_t);
  void (*gelu_grad_d)(double *, const double *, const double *, int64_t);
  void (*gelu_tanh_grad_d)(double *, const double *, const double *, int64_t);
  void (*silu_grad_d)(double *, const double *, const double *, int64_t);
  void (*erf_grad_d)(double *, const double *, const double *, int64_t);
  void (*gelu_grad_f32)(float *, const float *, const float *, int64_t);
  void (*silu_grad_f32)(float *, const float *, const float *, int64_t);
  void (*exp_fast_f32)(float *, const float *, int64_t);
  void (*sigmoid_fast_f32)(float *, const float *, int64_t);
  void (*tanh_fast_f32)(float *, const float *, int64_t);
} cell_vm_table;

extern const cell_vm_table cell_vm_portable;
#if defined(__x86_64__) || defined(__i386__)
#define CELL_VM_X86 1
extern const cell_vm_table cell_vm_avx2;
extern const cell_vm_table cell_vm_avx512;
#endif

#endif
