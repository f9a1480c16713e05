/* cell_conv.h - public C API: convolution and pooling: conv2d, conv3d,
 * conv_transpose3d, max_pool2d, avg_pool2d.
 * Included by cell.h; the conventions at the top of cell.h apply.
 *
 * Layout is NCHW: inputs are {N, C, H, W}. Padding is explicit zeros (or,
 * for max pooling, positions that never win), given as four sizes
 * {top, bottom, left, right}. Output sizes are
 *   OH = (H + top + bottom - dh * (kh - 1) - 1) / sh + 1   (floor)
 * and likewise for OW; each must come out at least 1 (else a ValueError).
 * The ops take float tensors (float32, float64, float16, bfloat16; the half
 * types compute in float32) and record a backward node when an input
 * requires grad: "Conv2dBackward", "MaxPool2dBackward", "AvgPool2dBackward".
 * Array arguments documented "or NULL" take their default when NULL. */
#ifndef CELL_CONV_H
#define CELL_CONV_H
#include "cell.h"

/* 2-D convolution (cross-correlation, as every framework computes it).
 * x {N, C, H, W}; w {O, C / groups, kh, kw}; b {O} or NULL (no bias);
 * all three of one float dtype (a TypeError otherwise). stride {sh, sw}
 * (>= 1, or NULL: 1), padding {top, bottom, left, right} (>= 0, or NULL: 0),
 * dilation {dh, dw} (>= 1, or NULL: 1); groups >= 1 divides C and O
 * (groups == C == O is a depthwise convolution). *out is {N, O, OH, OW} in
 * x's dtype. Shape mismatches are ValueErrors naming both shapes. */
CELL_API cell_status cell_op_conv2d(const cell_tensor *x, const cell_tensor *w,
                                    const cell_tensor *b, const int64_t *stride,
                                    const int64_t *padding, const int64_t *dilation,
                                    int64_t groups, cell_tensor **out);

/* 3-D convolution (cross-correlation). x {N, C, D, H, W}; w {O, C / groups,
 * kd, kh, kw}; b {O} or NULL; all three of one float dtype (a TypeError
 * otherwise). stride {sd, sh, sw} (>= 1, or NULL: 1), padding {front, back,
 * top, bottom, left, right} (>= 0, or NULL: 0), dilation {dd, dh, dw}
 * (>= 1, or NULL: 1); groups >= 1 divides C and O. *out is {N, O, OD, OH,
 * OW} in x's dtype, OD = (D + front + back - dd * (kd - 1) - 1) / sd + 1
 * (floor), likewise OH and OW. Records "Conv3dBackward". */
CELL_API cell_status cell_op_conv3d(const cell_tensor *x, const cell_tensor *w,
                                    const cell_tensor *b, const int64_t *stride,
                                    const int64_t *padding, const int64_t *dilation,
                                    int64_t groups, cell_tensor **out);

/* 3-D transposed convolution: the adjoint of cell_op_conv3d with the same
 * stride, padding and dilation. x {N, Cin, D, H, W}; w {Cin, Cout / groups,
 * kd, kh, kw}; b {Cout} or NULL; groups divides Cin. output_padding
 * {od, oh, ow} (>= 0 and below the stride, or NULL: 0) adds positions at
 * the end of each dimension. *out is {N, Cout, OD, OH, OW} with
 * OD = (D - 1) * sd - front - back + dd * (kd - 1) + od + 1, likewise OH
 * and OW; each must be at least 1. Records "ConvTranspose3dBackward". */
CELL_API cell_status cell_op_conv_transpose3d(const cell_tensor *x, const cell_tensor *w,
                                              const cell_tensor *b, const int64_t *stride,
                                              const int64_t *padding,
                                              const int64_t *output_padding,
                                              const int64_t *dilation, int64_t groups,
                                              cell_tensor **out);

/* Max pooling over kh x kw windows. x {N, C, H, W}; kernel {kh, kw} >= 1;
 * stride {sh, sw} >= 1 (or NULL: the kernel); padding {top, bottom, left,
 * right} (or NULL: 0), each at most half the kernel along its dimension
 * (top, bottom <= kh / 2; left, right <= kw / 2), as PyTorch requires.
 * Padding never wins a window; a NaN in a window wins it. The gradient goes
 * to the first position holding the maximum. *out is {N, C, OH, OW}. */
CELL_API cell_status cell_op_max_pool2d(const cell_tensor *x, const int64_t *kernel,
                                        const int64_t *stride, const int64_t *padding,
                                        cell_tensor **out);

/* Average pooling, arguments as cell_op_max_pool2d. With count_include_pad
 * every window divides by kh * kw; without it, by the number of its
 * positions that lie inside the input. */
CELL_API cell_status cell_op_avg_pool2d(const cell_tensor *x, const int64_t *kernel,
                                        const int64_t *stride, const int64_t *padding,
                                        int count_include_pad, cell_tensor **out);

/* Max pooling with PyTorch's full options. dilation {dh, dw} >= 1 (or
 * NULL: 1) spaces a window's positions; with ceil_mode the output sizes
 * round up, OH = ceil((H + top + bottom - dh * (kh - 1) - 1) / sh) + 1,
 * less one when the last window would start past the input and its top
 * padding (likewise OW), and windows past the padded input are clipped.
 * indices (or NULL) gets, per output element, the 0-based position
 * h * W + w of its maximum in its input plane (int64 {N, C, OH, OW}; it
 * never requires grad). Other arguments as cell_op_max_pool2d. */
CELL_API cell_status cell_op_max_pool2d_ex(const cell_tensor *x, const int64_t *kernel,
                                           const int64_t *stride, const int64_t *padding,
                                           const int64_t *dilation, int ceil_mode,
                                           cell_tensor **out, cell_tensor **indices);

/* Average pooling with ceil_mode (output sizes as cell_op_max_pool2d_ex
 * with dilation 1). A window that reaches past the padded input divides,
 * with count_include_pad, by its size clipped to the padded input (as
 * PyTorch); without it, by its positions inside the input. */
CELL_API cell_status cell_op_avg_pool2d_ex(const cell_tensor *x, const int64_t *kernel,
                                           const int64_t *stride, const int64_t *padding,
                                           int ceil_mode, int count_include_pad,
                                           cell_tensor **out);

#endif
