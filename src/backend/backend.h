/* backend.h - device backends as tables of function pointers (internal).
 *
 * A backend answers a capability query before it is handed work, so the
 * BLAS backend can decline small or oddly strided matmuls and the portable
 * CPU backend takes them. Backends are tried in registry order. */
#ifndef CELL_BACKEND_H
#define CELL_BACKEND_H
#include "../core/tensor.h"

/* C[m,n] = A[m,k] @ B[k,n]; strides in elements; C is written, not added to. */
typedef struct cell_gemm {
  cell_dtype dtype;
  int64_t m, n, k;
  const char *a;
  int64_t a_rs, a_cs;
  const char *b;
  int64_t b_rs, b_cs;
  char *c;
  int64_t c_rs, c_cs;
  int part; /* a part of a split product (cell_gemm_split_part): computed as it is */
} cell_gemm;

typedef struct cell_backend {
  const char *name;
  cell_device device;
  int (*supports_gemm)(const cell_gemm *g);
  cell_status (*gemm)(const cell_gemm *g);
} cell_backend;

extern const cell_backend cell_backend_cpu;
extern const cell_backend cell_backend_blas;
extern const cell_backend cell_backend_small; /* small.c: float32 products below BLAS's economy */
extern const cell_backend cell_backend_bf16; /* lowp.c: bfloat16 on AVX512-BF16 */
extern const cell_backend cell_backend_lowp; /* lowp.c: float16/bfloat16 through float32 */
/* lowp.c: bfloat16 A, B on the AVX512-BF16 kernel with a float32 C (c; g->c
 * unused, strides in floats); a RuntimeError where that kernel is not used. */
cell_status cell_bf16_gemm_f32(const cell_gemm *g, float *c);
/* Whether the AVX512-BF16 kernel runs here (cpuid, CELL_BF16_ISA). */
int cell_bf16_gemm_native(void);
/* The same kernel with a bfloat16 C and an epilogue: row_bias (NULL: none)
 * is added to row i of C, col_bias (NULL: none) to column j, before the
 * rounding; with col_split > 0 (a
 * multiple of 32), column j of C lies at (j / col_split) * split_stride +
 * (j % col_split) * c_cs (conv2d's NCHW output written straight from the
 * tiles). */
typedef struct cell_bf16_epilogue {
  const float *row_bias;
  int64_t col_split, split_stride;
  const float *col_bias;
} cell_bf16_epilogue;
cell_status cell_bf16_gemm_epilogue(const cell_gemm *g, const cell_bf16_epilogue *ep);
/* Two independent products with bfloat16 C (a linear layer's input and
 * weight gradients) in one fork: each thread takes its share of the first,
 * then of the second, with no barrier between (a product too small to
 * split goes whole to one thread). Each through cell_gemm_run where the
 * AVX512-BF16 kernel does not take it. */
cell_status cell_bf16_gemm_pair(const cell_gemm *g1, const cell_gemm *g2);

/* C += A B, C's values kept (BLAS's beta = 1), for a product the BLAS
 * backend takes as one gemm call (cell_blas_gemm_acc_ok: float32/float64,
 * at least 2 rows and 2 columns, not split over threads); the fused linear
 * layer's bias, written into C first, then costs no pass of its own. */
int cell_blas_gemm_acc_ok(const cell_gemm *g);
void cell_blas_gemm_acc(const cell_gemm *g);

/* sgemm.c: cell's own float32 kernel, used by the BLAS backend where
 * OpenBLAS's core is a fallback without vector kernels. cell_sgemm_isa: 0
 * (OpenBLAS's gemm), 1 (AVX2 + FMA) or 2 (AVX-512), decided once (cpuid,
 * openblas_get_corename, CELL_SGEMM). cell_sgemm_acc: C += A B on the
 * calling thread, 1; 0 where it is not used (or its workspace cannot be
 * had) and nothing was done. */
int cell_sgemm_isa(void);
/* blas.c: whether OpenBLAS's core is one of its cores with AVX2 or AVX-512
 * float32 kernels (Haswell, Zen, SkylakeX, Cooperlake, SapphireRapids,
 * Excavator); elsewhere it fell back to an older core for this CPU. */
int cell_blas_vector_core(void);
int cell_sgemm_acc(const cell_gemm *g);
/* The rows of C the kernel computes at a time (12 on AVX-512, 6 on AVX2; 0
 * where cell_sgemm_isa is 0). */
int cell_sgemm_tile_rows(void);
/* The same with the kernel named (1 AVX2, 2 AVX-512; for tests): 0 where
 * the CPU lacks it. */
int cell_sgemm_acc_with(const cell_gemm *g, int isa);

/* The first registered backend that accepts g (the CPU one accepts all). */
const cell_backend *cell_backend_for_gemm(const cell_gemm *g);
cell_status cell_gemm_run(const cell_gemm *g);

/* How the BLAS backend splits a medium product over nt threads: the number
 * of parts (1: one call, not split; always 1 inside a parallel region or
 * when another backend takes g), and part q of parts as a product of its
 * own (*h: rows lo .. lo + len - 1 of C; len may be 0; blas.c says where
 * the cuts fall, and why only there). Ops that fork once for
 * several products run the parts themselves (cell_gemm_run on a part runs
 * on the calling thread). */
int64_t cell_gemm_split_parts(const cell_gemm *g, int64_t nt);
void cell_gemm_split_part(const cell_gemm *g, int64_t parts, int64_t q, cell_gemm *h, int64_t *lo, int64_t *len);

#endif
