/* cell_sample.h - sampling from distributions (multinomial, bernoulli,
 * normal) and resampling (interpolate, unfold, fold). Included by cell.h.
 *
 * The random ops draw from the calling thread's current generator (cell.h:
 * cell_generator_use), like cell_tensor_rand; they are not differentiable.
 * interpolate, unfold and fold record their backward when an input
 * requires grad. */
#ifndef CELL_SAMPLE_H
#define CELL_SAMPLE_H

/* num_samples category indices per row of probs (1-D {k} or 2-D {n, k},
 * float, weights that need not sum to 1), as int64 {num_samples} or
 * {n, num_samples}, counted from index_base. Without replacement a
 * category is drawn at most once per row. ValueError: probs not 1-D or
 * 2-D, no category, num_samples < 1, num_samples > k without replacement,
 * a negative, NaN or infinite weight, a row summing to 0, too few nonzero
 * weights without replacement; TypeError: probs not float. */
CELL_API cell_status cell_op_multinomial(const cell_tensor *probs, int64_t num_samples,
                                         int replacement, int64_t index_base, cell_tensor **out);
/* 0 or 1 for each element of x, in x's shape and dtype: 1 with
 * probability p (a float tensor broadcast to x's shape) or, when p is NULL,
 * p_scalar. ValueError: a probability outside [0, 1], p not broadcastable
 * to x; TypeError: p not float. */
CELL_API cell_status cell_op_bernoulli(const cell_tensor *x, const cell_tensor *p,
                                       double p_scalar, cell_tensor **out);
/* Normal samples of the broadcast shape of (ndim, shape), mean and std
 * (float tensors, any shape that broadcasts), in their promoted dtype.
 * ValueError: shapes that do not broadcast, a std below 0 or NaN;
 * TypeError: mean or std not float. */
CELL_API cell_status cell_op_normal(int ndim, const int64_t *shape, const cell_tensor *mean,
                                    const cell_tensor *std, cell_tensor **out);

/* Interpolation modes: nearest and linear for 3-D inputs (N, C, L),
 * nearest, bilinear and bicubic for 4-D ones (N, C, H, W). */
typedef enum cell_interp_mode {
  CELL_INTERP_NEAREST = 0,
  CELL_INTERP_LINEAR,
  CELL_INTERP_BILINEAR,
  CELL_INTERP_BICUBIC
} cell_interp_mode;
/* x resized to the spatial sizes size (1 or 2 entries), with PyTorch's
 * coordinate rules: scales (NULL, or one per spatial dim, 0 for none) are
 * the scale factors the sizes came from, used for the source coordinates
 * as PyTorch uses them; align_corners (linear modes only) maps the corner
 * pixels onto each other. Float input. ValueError: a mode that does not fit
 * the rank, a size below 1, an empty spatial input; TypeError: x not float. */
CELL_API cell_status cell_op_interpolate(const cell_tensor *x, const int64_t *size,
                                         const double *scales, cell_interp_mode mode,
                                         int align_corners, cell_tensor **out);
/* im2col: the sliding kernel[0] x kernel[1] blocks of x {N, C, H, W} as
 * the columns of {N, C * kh * kw, L}. dilation, stride (default 1) and
 * padding (default 0, added to both sides) are pairs or NULL. ValueError:
 * x not 4-D, a kernel, dilation or stride below 1, a negative padding, no
 * block; TypeError: x not float. */
CELL_API cell_status cell_op_unfold(const cell_tensor *x, const int64_t *kernel,
                                    const int64_t *dilation, const int64_t *padding,
                                    const int64_t *stride, cell_tensor **out);
/* col2im: the columns of x {N, C * kh * kw, L} summed back into
 * {N, C, output_size[0], output_size[1]}; unfold's adjoint. ValueError: x
 * not 3-D, dimension 2 not divisible by kh * kw, L not the number of
 * blocks, sizes as for unfold; TypeError: x not float. */
CELL_API cell_status cell_op_fold(const cell_tensor *x, const int64_t *output_size,
                                  const int64_t *kernel, const int64_t *dilation,
                                  const int64_t *padding, const int64_t *stride,
                                  cell_tensor **out);

#endif
