/* interp_taps.h - interpolate's argument checks and the input positions and
 * weights of one output position along one axis (PyTorch's coordinate
 * rules), shared by the CPU kernels (interpolate.c) and the GPU module
 * (src/cuda/gpu_interp.c), so both raise the same errors. */
#ifndef CELL_OPS_INTERP_TAPS_H
#define CELL_OPS_INTERP_TAPS_H

#include "cell.h" /* cell_sample.h: the CELL_INTERP_ modes */
#include <math.h>
#include <stdint.h>

/* Taps per output position for mode. */
static inline int cell_interp_taps(int mode) {
  return mode == CELL_INTERP_NEAREST ? 1 : mode == CELL_INTERP_BICUBIC ? 4 : 2;
}

/* PyTorch's area_pixel_compute_scale / compute_scales_value in type T. */
#define CELL_INTERP_SCALE(T, in, out, align, sc)                                           \
  ((align) ? ((out) > 1 ? (T)((in) - 1) / (T)((out) - 1) : (T)0)                           \
           : ((sc) > 0 ? (T)(1.0 / (sc)) : (T)(in) / (T)(out)))

static inline double cell_interp_cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
static inline double cell_interp_cubic2(double x, double a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}
static inline int64_t cell_interp_clamp(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* Output position o of out along an axis of in: cell_interp_taps(mode)
 * input positions into ix and their weights into w; sc is the scale given
 * (0: from the sizes), f32 picks float32 coordinates (a float32 input's). */
static inline void cell_interp_point(int mode, int align, int64_t in, int64_t out, double sc, int f32, int64_t o,
                                     int64_t *ix, double *w) {
  if (mode == CELL_INTERP_NEAREST) {
    int64_t src;
    if (out == in)
      src = o;
    else if (out == 2 * in)
      src = o >> 1;
    else {
      float s = sc > 0 ? (float)(1.0 / sc) : (float)in / (float)out;
      src = (int64_t)floorf((float)o * s);
      if (src > in - 1) src = in - 1;
    }
    ix[0] = src;
    w[0] = 1;
    return;
  }
  double real, lambda;
  int cubic = mode == CELL_INTERP_BICUBIC;
  if (f32) {
    float s = CELL_INTERP_SCALE(float, in, out, align, sc);
    float r = align ? s * (float)o : s * ((float)o + 0.5f) - 0.5f;
    if (!align && !cubic && r < 0) r = 0;
    float fl = cubic ? floorf(r) : (float)(int64_t)r;
    lambda = (double)(r - fl);
    real = fl;
  } else {
    double s = CELL_INTERP_SCALE(double, in, out, align, sc);
    double r = align ? s * (double)o : s * ((double)o + 0.5) - 0.5;
    if (!align && !cubic && r < 0) r = 0;
    double fl = cubic ? floor(r) : (double)(int64_t)r;
    lambda = r - fl;
    real = fl;
  }
  int64_t i0 = (int64_t)real;
  if (!cubic) {
    ix[0] = i0;
    ix[1] = i0 < in - 1 ? i0 + 1 : i0;
    w[0] = 1 - lambda;
    w[1] = lambda;
  } else {
    const double a = -0.75;
    w[0] = cell_interp_cubic2(lambda + 1, a);
    w[1] = cell_interp_cubic1(lambda, a);
    w[2] = cell_interp_cubic1(1 - lambda, a);
    w[3] = cell_interp_cubic2(2 - lambda, a);
    for (int q = 0; q < 4; q++) ix[q] = cell_interp_clamp(i0 - 1 + q, in - 1);
  }
}

/* The name of an interpolation mode, for messages. */
static inline const char *cell_interp_mode_name(int mode) {
  switch (mode) {
  case CELL_INTERP_NEAREST: return "nearest";
  case CELL_INTERP_LINEAR: return "linear";
  case CELL_INTERP_BILINEAR: return "bilinear";
  case CELL_INTERP_BICUBIC: return "bicubic";
  default: return "?";
  }
}

/* interpolate's checks, forward and backward, on the CPU and the GPU: the
 * mode fits the rank, the sizes are positive (or zero only where the
 * input's is). */
static inline cell_status cell_interp_check(int mode, int ndim, const int64_t *in_shape, const int64_t *osz) {
  char sb[96];
  if (mode < CELL_INTERP_NEAREST || mode > CELL_INTERP_BICUBIC)
    return cell_error(CELL_ERR_VALUE, "interpolate: unknown mode %d", mode);
  if (ndim != 3 && ndim != 4)
    return cell_error(CELL_ERR_VALUE,
                      "interpolate: input must be 3-D (N, C, L) or 4-D (N, C, H, W), got shape %s",
                      cell_shape_str(ndim, in_shape, sb, sizeof sb));
  if ((ndim == 3 && (mode == CELL_INTERP_BILINEAR || mode == CELL_INTERP_BICUBIC)) ||
      (ndim == 4 && mode == CELL_INTERP_LINEAR))
    return cell_error(CELL_ERR_VALUE,
                      "interpolate: mode '%s' needs a %s input, got shape %s", cell_interp_mode_name(mode),
                      mode == CELL_INTERP_LINEAR ? "3-D (N, C, L)" : "4-D (N, C, H, W)",
                      cell_shape_str(ndim, in_shape, sb, sizeof sb));
  for (int d = 0; d < ndim - 2; d++) {
    if (osz[d] < 1 || osz[d] > ((int64_t)1 << 31))
      return cell_error(CELL_ERR_VALUE,
                        "interpolate: output sizes must be positive, got %lld for input %s",
                        (long long)osz[d], cell_shape_str(ndim, in_shape, sb, sizeof sb));
    if (in_shape[2 + d] < 1)
      return cell_error(CELL_ERR_VALUE,
                        "interpolate: input sizes must be positive past the channels, got %s",
                        cell_shape_str(ndim, in_shape, sb, sizeof sb));
  }
  return CELL_OK;
}


#endif
