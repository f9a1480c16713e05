/* conv.h - raw kernels for convolution and pooling (internal): they compute and never
 * record; src/autograd/rules_conv.c wraps them for the public API.
 *
 * Arguments are those of include/cell_conv.h (NULL arrays take their
 * defaults). Every kernel validates its arguments itself, so the backward
 * kernels, given the forward's arguments and saved inputs, rebuild the same
 * geometry. */
#ifndef CELL_OPS_CONV_H
#define CELL_OPS_CONV_H
#include "cell.h"
#include "../core/iter.h"
#include <stddef.h>
#include <string.h>

/* The hot loops of conv_direct.c and pool.c use GCC vector types of
 * CELL_VBYTES bytes; on x86-64 they are compiled twice (CELL_CLONES_V3,
 * src/core/iter.h), for AVX2 + FMA and for the baseline. */
#define CONV_CLONES CELL_CLONES_V3
#define VBYTES 32
typedef float vf32 __attribute__((vector_size(VBYTES)));
typedef double vf64 __attribute__((vector_size(VBYTES)));
typedef int32_t vi32 __attribute__((vector_size(VBYTES)));
typedef int64_t vi64 __attribute__((vector_size(VBYTES)));
#define VLOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define VSTORE(p, v) memcpy((p), &(v), sizeof(v))

/* The sizes of one conv2d or pool2d call, validated. */
typedef struct cell_conv_geom {
  int64_t n, c, h, w;     /* input */
  int64_t o, kh, kw;      /* output channels (conv: weight {o, c / groups, kh, kw}) and window */
  int64_t groups;         /* conv only; 1 for pools */
  int64_t sh, sw, dh, dw; /* stride and dilation (pools: dilation 1) */
  int64_t pt, pb, pl, pr; /* padding: top, bottom, left, right */
  int64_t oh, ow;         /* output height and width */
} cell_conv_geom;

/* Validate conv2d's arguments (b may be NULL) and fill *g. */
cell_status cell_k_conv2d_geom(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                               const int64_t *stride, const int64_t *padding,
                               const int64_t *dilation, int64_t groups, cell_conv_geom *g);
cell_status cell_k_conv2d(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                          const int64_t *stride, const int64_t *padding, const int64_t *dilation,
                          int64_t groups, cell_tensor **out);
/* The gradients of conv2d(x, w, b) given gy, the gradient of its output:
 * each of gx {N, C, H, W}, gw (w's shape) and gb {O} is computed only when
 * not NULL, in the compute dtype (float64 for float64 inputs, float32 for
 * the others). On failure none is set. */
cell_status cell_k_conv2d_backward(const cell_tensor *gy, const cell_tensor *x,
                                   const cell_tensor *w, const int64_t *stride,
                                   const int64_t *padding, const int64_t *dilation,
                                   int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                   cell_tensor **gb);

/* How conv2d is lowered: im2col and the gemm backend (conv.c), or the
 * direct kernels of conv_direct.c (stride 1 only; otherwise im2col is used).
 * CELL_CONV_AUTO picks by shape; the others are for tests and benchmarks. */
typedef enum cell_conv_lowering {
  CELL_CONV_AUTO = 0,
  CELL_CONV_IM2COL,
  CELL_CONV_DIRECT
} cell_conv_lowering;
cell_status cell_k_conv2d_lowered(cell_conv_lowering how, const cell_tensor *x,
                                  const cell_tensor *w, const cell_tensor *b,
                                  const int64_t *stride, const int64_t *padding,
                                  const int64_t *dilation, int64_t groups, cell_tensor **out);
cell_status cell_k_conv2d_backward_lowered(cell_conv_lowering how, const cell_tensor *gy,
                                           const cell_tensor *x, const cell_tensor *w,
                                           const int64_t *stride, const int64_t *padding,
                                           const int64_t *dilation, int64_t groups,
                                           cell_tensor **gx, cell_tensor **gw, cell_tensor **gb);

/* conv_direct.c, on contiguous operands of the compute dtype ct. Forward
 * writes y ({N, O, OH, OW}) with the bias b (or none); backward writes gx
 * (when not NULL) and adds into gw (when not NULL, zeroed by the caller). */
int cell_conv_direct_ok(const cell_conv_geom *g);
/* gb[k] = the sum of gy[:, k, :] for gy {n, o, P} (both paths). */
void cell_conv_bias_grad(cell_dtype ct, const void *gy, int64_t n, int64_t o, int64_t P, void *gb);
cell_status cell_conv_direct_forward(const cell_conv_geom *g, cell_dtype ct, const void *x,
                                     const void *w, const void *b, void *y);
cell_status cell_conv_direct_backward(const cell_conv_geom *g, cell_dtype ct, const void *gy,
                                      const void *x, const void *w, void *gx, void *gw);
/* Float32 convolutions whose groups have a multiple of 16 output channels
 * run on 16-lane kernels where the CPU has AVX-512 (CELL_CONV_ISA=avx2 in
 * the environment keeps them on 8, as on AVX2), with the same bits (GCC
 * builds, which compile the 8-lane AVX2 copies; not under TSan). For
 * tests: turn them on (where the CPU has AVX-512) or off; the previous
 * setting is returned. */
int cell_conv_wide_set(int on);

/* Validate a pool's arguments for input shape (ndim, shape); op names the
 * pool in messages. dilation NULL: 1. ceil_mode: output sizes rounded up,
 * a last window starting inside the input or its top/left padding. */
cell_status cell_k_pool2d_geom(const char *op, int ndim, const int64_t *shape,
                               const int64_t *kernel, const int64_t *stride,
                               const int64_t *padding, const int64_t *dilation, int ceil_mode,
                               cell_conv_geom *g);
/* Max pooling; *indices (when not NULL) gets, per output element, the
 * 0-based position h * W + w of its maximum in its input plane (int64). */
cell_status cell_k_max_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int ceil_mode,
                              cell_tensor **out, cell_tensor **indices);
/* The input gradient of max pooling: gy scattered (added) to the saved
 * positions, into a tensor of dtype dt and shape in_shape {N, C, H, W}. */
cell_status cell_k_max_pool2d_backward(const cell_tensor *gy, const cell_tensor *indices,
                                       const int64_t *in_shape, cell_dtype dt,
                                       cell_tensor **gx);
cell_status cell_k_avg_pool2d(const cell_tensor *x, const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, int ceil_mode, int count_include_pad,
                              cell_tensor **out);
/* The input gradient of average pooling over an input of shape in_shape. */
cell_status cell_k_avg_pool2d_backward(const cell_tensor *gy, const int64_t *in_shape,
                                       const int64_t *kernel, const int64_t *stride,
                                       const int64_t *padding, int ceil_mode,
                                       int count_include_pad, cell_dtype dt, cell_tensor **gx);

/* Helpers shared by conv.c and pool.c. */
/* A shape as "(2, 3, 8, 8)", the way MindSpore's messages print shapes. */
const char *cell_conv_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);
/* float64 computes in float64, every other float dtype in float32. */
cell_dtype cell_conv_compute_dtype(cell_dtype dt);
/* t as a contiguous tensor of dtype ct (t itself, retained, when it is one). */
cell_status cell_conv_operand(const cell_tensor *t, cell_dtype ct, cell_tensor **out);
/* A pair of sizes (v, or {def, def} when v is NULL), each in [lo, 2^30];
 * a ValueError naming op and what otherwise. */
cell_status cell_conv_pair(const char *op, const char *what, const int64_t *v, int64_t def,
                           int64_t lo, int64_t *out);
/* Four paddings (v, or zeros when v is NULL), each in [0, 2^30]. */
cell_status cell_conv_pads(const char *op, const int64_t *v, int64_t *out);
/* Whether a loop over this many elements is worth threads. */
int cell_conv_parallel(int64_t work);
/* The output columns q in [*lo, *hi), of n, whose input column q * s + off
 * lies in [0, w): the taps of one kernel column that fall inside the input
 * (im2col, vol2col and their adjoints, in conv.c, conv3d.c, conv_bf16.c). */
static inline void cell_conv_valid_range(int64_t off, int64_t s, int64_t w, int64_t n, int64_t *lo,
                                         int64_t *hi) {
  int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t b = w - off <= 0 ? 0 : (w - off + s - 1) / s;
  if (a > n) a = n;
  if (b > n) b = n;
  if (b < a) b = a;
  *lo = a;
  *hi = b;
}
/* C = A @ B in the compute dtype ct for row-major operands given by (base,
 * row stride, column stride), through the gemm backend (conv.c; conv3d.c
 * uses it too). */
cell_status cell_conv_gemm(cell_dtype ct, int64_t m, int64_t n, int64_t k, const void *a,
                           int64_t a_rs, int64_t a_cs, const void *b, int64_t b_rs, int64_t b_cs,
                           void *c, int64_t c_rs);
/* Scratch memory for elems elements of es bytes (at least one; NULL when
 * out of memory; cell_dealloc frees it). */
void *cell_conv_scratch(int64_t elems, int es);

/* conv_bf16.c: whether conv2d's forward pass runs in bfloat16 (both
 * operands bfloat16, one group, and the bfloat16 gemm is the CPU's
 * AVX512-BF16 one), and that pass: x and w contiguous bfloat16, b any
 * float dtype or NULL, out contiguous bfloat16 {n, o, oh, ow}. */
int cell_conv_bf16_ok(const cell_conv_geom *g, cell_dtype xdt, cell_dtype wdt);
cell_status cell_conv_bf16_forward(const cell_conv_geom *g, const cell_tensor *x, const cell_tensor *w,
                                   const cell_tensor *b, cell_tensor *out);
/* Its backward pass (when cell_conv_bf16_ok and gy is bfloat16): gx and
 * gw bfloat16, gb float32, each made only when its pointer is not NULL. */
cell_status cell_conv_bf16_backward(const cell_conv_geom *g, const cell_tensor *gy, const cell_tensor *x,
                                    const cell_tensor *w, cell_tensor **gx, cell_tensor **gw, cell_tensor **gb);
/* im2col and col2im in the compute dtype ct (contiguous operands): the
 * rows r = (c * kh + i) * kw + j of cols hold, at n * P + p for the nb
 * samples from n0 (P = oh * ow), the input under tap (i, j) of block p;
 * col2im adds such columns back into gx. With nb = 1 a sample's cols are
 * its unfold (fold.c). */
void cell_conv_im2col(cell_dtype ct, const cell_conv_geom *g, const void *x, int64_t n0,
                      int64_t nb, void *cols);
void cell_conv_col2im(cell_dtype ct, const cell_conv_geom *g, const void *cols, int64_t n0,
                      int64_t nb, void *gx);
/* The layout moves of the im2col (conv2d) and vol2col (conv3d) paths, in
 * the compute dtype ct, over a spatial size P (oh * ow, or od * oh * ow):
 * to_ncp writes out[n0 + n][o][p] = m[o][n * P + p] + bias[o] (bias may be
 * NULL) for the chunk's nb samples, from the gemm's layout; from_ncp is the
 * inverse move (no bias) for elements of es bytes, any dtype; add_bias adds
 * bias[k] to out[n][k][p] for the samples [n0, n0 + nb); add_to adds n
 * elements of src into dst. */
void cell_conv_to_ncp(cell_dtype ct, const void *m, const void *bias, int64_t o, int64_t P,
                      int64_t n0, int64_t nb, void *out);
void cell_conv_from_ncp(size_t es, const void *y, int64_t o, int64_t P, int64_t n0, int64_t nb,
                        void *m);
void cell_conv_add_bias(cell_dtype ct, void *out, const void *bias, int64_t o, int64_t P,
                        int64_t n0, int64_t nb);
void cell_conv_add_to(cell_dtype ct, void *dst, const void *src, int64_t n);

/* --- conv3d.c ------------------------------------------------------------------ */

/* The sizes of one conv3d call, validated; for conv_transpose3d those of
 * the convolution it is the adjoint of (its input is that convolution's
 * output {n, o, od, oh, ow}, its output that convolution's input
 * {n, c, d, h, w}). */
typedef struct cell_conv3d_geom {
  int64_t n, c, d, h, w;  /* input */
  int64_t o, kd, kh, kw;  /* output channels and kernel (weight {o, c / groups, kd, kh, kw}) */
  int64_t groups;
  int64_t s[3], dl[3];    /* stride and dilation: depth, height, width */
  int64_t pd[6];          /* padding: front, back, top, bottom, left, right */
  int64_t od, oh, ow;     /* output */
} cell_conv3d_geom;

/* Validate conv3d's arguments (b may be NULL) and fill *g. */
cell_status cell_k_conv3d_geom(const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                               const int64_t *stride, const int64_t *padding,
                               const int64_t *dilation, int64_t groups, cell_conv3d_geom *g);
/* Validate conv_transpose3d's arguments (x {N, Cin, D, H, W}, w {Cin,
 * Cout / groups, kd, kh, kw}) and fill *g with the adjoint convolution's. */
cell_status cell_k_conv_transpose3d_geom(const cell_tensor *x, const cell_tensor *w,
                                         const cell_tensor *b, const int64_t *stride,
                                         const int64_t *padding, const int64_t *output_padding,
                                         const int64_t *dilation, int64_t groups,
                                         cell_conv3d_geom *g);
/* vol2col and col2vol in the compute dtype ct (contiguous operands): row
 * r = ((c * kd + a) * kh + i) * kw + j of cols holds, at n * P + p for the
 * nb samples from n0 (P = od * oh * ow), the input under tap (a, i, j) of
 * output position p; col2vol adds such columns back into gx. */
void cell_conv_vol2col(cell_dtype ct, const cell_conv3d_geom *g, const void *x, int64_t n0,
                       int64_t nb, void *cols);
void cell_conv_col2vol(cell_dtype ct, const cell_conv3d_geom *g, const void *cols, int64_t n0,
                       int64_t nb, void *gx);

#endif
