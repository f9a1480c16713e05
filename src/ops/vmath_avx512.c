/* vmath_avx512.c - vmath.h's functions built for AVX-512 (F and DQ; chosen
 * at run time by vmath.c; the rest of the library keeps the baseline ISA). */
#include "vmath.h"
#ifdef CELL_VM_X86
#ifdef __clang__
#define VM_ATTR __attribute__((target("avx512f,avx512dq,avx2,fma")))
#else /* gcc's generic tuning would keep to 256-bit vectors */
#define VM_ATTR __attribute__((target("avx512f,avx512dq,avx2,fma,prefer-vector-width=512")))
#endif
#define VM_TABLE cell_vm_avx512
#define VM_X86_AVX2 1 /* vmath_impl.h may use AVX2 intrinsics */
#include "vmath_impl.h"
#else
typedef int cell_vm_avx512_unused; /* an empty unit is not ISO C */
#endif
