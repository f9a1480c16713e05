/* vmath.c - the portable build of vmath.h's functions and the dispatch
 * that picks, on first use, the best build the CPU runs (cpuid). */
#define VM_ATTR
#define VM_TABLE cell_vm_portable
#include "vmath_impl.h"

static int vm_detect(void) {
#ifdef CELL_VM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
  return 0;
}

/* -1 until the first use; written with the same value by whichever thread
 * comes first. */
static int vm_chosen = -1;

int cell_vm_level(void) {
  int l = __atomic_load_n(&vm_chosen, __ATOMIC_RELAXED);
  if (l < 0) {
    l = vm_detect();
    __atomic_store_n(&vm_chosen, l, __ATOMIC_RELAXED);
  }
  return l;
}

int cell_vm_set_level(int level) {
  int best = vm_detect();
  int l = level < 0 || level > best ? best : level;
  __atomic_store_n(&vm_chosen, l, __ATOMIC_RELAXED);
  return l;
}

static const cell_vm_table *vm(void) {
#ifdef CELL_VM_X86
  switch (cell_vm_level()) {
  case 2: return &cell_vm_avx512;
  case 1: return &cell_vm_avx2;
  default: break;
  }
#endif
  return &cell_vm_portable;
}

void cell_vm_exp_f32(float *y, const float *x, int64_t n) { vm()->exp_f32(y, x, n); }
void cell_vm_log_f32(float *y, const float *x, int64_t n) { vm()->log_f32(y, x, n); }
void cell_vm_tanh_f32(float *y, const float *x, int64_t n) { vm()->tanh_f32(y, x, n); }
void cell_vm_erf_f32(float *y, const float *x, int64_t n) { vm()->erf_f32(y, x, n); }
void cell_vm_sigmoid_f32(float *y, const float *x, int64_t n) { vm()->sigmoid_f32(y, x, n); }
void cell_vm_silu_f32(float *y, const float *x, int64_t n) { vm()->silu_f32(y, x, n); }
void cell_vm_gelu_f32(float *y, const float *x, int64_t n) { vm()->gelu_f32(y, x, n); }
void cell_vm_exp_d(double *y, const double *x, int64_t n) { vm()->exp_d(y, x, n); }
void cell_vm_gelu_tanh_d(double *y, const double *x, int64_t n) { vm()->gelu_tanh_d(y, x, n); }
void cell_vm_gelu_grad_d(double *r, const double *g, const double *x, int64_t n) {
  vm()->gelu_grad_d(r, g, x, n);
}
void cell_vm_gelu_tanh_grad_d(double *r, const double *g, const double *x, int64_t n) {
  vm()->gelu_tanh_grad_d(r, g, x, n);
}
void cell_vm_silu_grad_d(double *r, const double *g, const double *x, int64_t n) {
  vm()->silu_grad_d(r, g, x, n);
}
void cell_vm_erf_grad_d(double *r, const double *g, const double *x, int64_t n) {
  vm()->erf_grad_d(r, g, x, n);
}
void cell_vm_gelu_grad_f32(float *r, const float *g, const float *x, int64_t n) {
  vm()->gelu_grad_f32(r, g, x, n);
}
void cell_vm_silu_grad_f32(float *r, const float *g, const float *x, int64_t n) {
  vm()->silu_grad_f32(r, g, x, n);
}
void cell_vm_exp_fast_f32(float *y, const float *x, int64_t n) { vm()->exp_fast_f32(y, x, n); }
void cell_vm_sigmoid_fast_f32(float *y, const float *x, int64_t n) { vm()->sigmoid_fast_f32(y, x, n); }
void cell_vm_tanh_fast_f32(float *y, const float *x, int64_t n) { vm()->tanh_fast_f32(y, x, n); }
