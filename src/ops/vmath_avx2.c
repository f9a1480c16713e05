/* vmath_avx2.c - vmath.h's functions built for AVX2 with FMA (chosen at
 * run time by vmath.c; the rest of the library keeps the baseline ISA). */
#include "vmath.h"
#ifdef CELL_VM_X86
#define VM_ATTR __attribute__((target("avx2,fma")))
#define VM_TABLE cell_vm_avx2
#define VM_X86_AVX2 1 /* vmath_impl.h may use AVX2 intrinsics */
#include "vmath_impl.h"
#else
typedef int cell_vm_avx2_unused; /* an empty unit is not ISO C */
#endif
