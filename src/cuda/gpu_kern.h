/* gpu_kern.h - the CUDA kernels of gpu_ew.cu, callable from C (internal).
 * Raw device pointers and counts only: the .cu side sees no engine header.
 * Each launches on stream s and returns the launch's cudaError_t as int. */
#ifndef CELL_CUDA_GPU_KERN_H
#define CELL_CUDA_GPU_KERN_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Binary op codes (the engine's cell_binop values these kernels run). */
enum { GPUK_ADD = 0, GPUK_SUB = 1, GPUK_MUL = 2, GPUK_DIV = 3, GPUK_MAXIMUM = 5, GPUK_MINIMUM = 6 };
/* Unary op codes (cell_unop values). */
enum { GPUK_ABS = 0, GPUK_NEG = 1, GPUK_EXP = 2, GPUK_LOG = 3, GPUK_SQRT = 5, GPUK_TANH = 9,
       GPUK_SIGMOID = 10, GPUK_RELU = 11 };

/* out[i] = a[i] op b[i] (float32, n elements; out may be a). */
int gpuk_binary_f32(void *stream, int op, const float *a, const float *b, float *out, int64_t n);
/* out[i] = op(a[i]) (float32; out may be a). */
int gpuk_unary_f32(void *stream, int op, const float *a, float *out, int64_t n);
/* n bytes at dst: the psize-byte pattern repeated (psize 1, 2, 4 or 8). */
int gpuk_fill(void *stream, void *dst, size_t n, const void *pattern, size_t psize);

#ifdef __cplusplus
}
#endif
#endif
