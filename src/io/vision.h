/* vision.h - what the vision transforms share (internal): an image's
 * geometry, element loads and stores through double, border index
 * mapping, sampling, and the ops' common plumbing. */
#ifndef CELL_IO_VISION_H
#define CELL_IO_VISION_H
#include "cell_vision.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* An image: {H, W} (c = 1, nd 2) or {H, W, C} (nd 3). */
typedef struct vimg {
  int nd;
  int64_t h, w, c;
  cell_dtype dt;
  int esz;
} vimg;

/* in's geometry; ValueError (message into err) when in is not 2-D or
 * 3-D, or is empty. */
cell_status vimg_get(const cell_tensor *in, const char *op, vimg *g, char *err, size_t errlen);
/* A new tensor of g's dtype and layout, h x w pixels of c channels. */
cell_status vimg_new(const vimg *g, int64_t h, int64_t w, const char *op, cell_tensor **out, char *err,
                     size_t errlen);
/* Whether dt is one the arithmetic transforms compute on (uint8, int8,
 * int16, int32, int64, float32, float64); else a TypeError into err. */
cell_status vimg_numeric(cell_dtype dt, const char *op, char *err, size_t errlen);

static inline double vx_load(const void *p, cell_dtype dt, int64_t i) {
  switch (dt) {
  case CELL_DTYPE_U8: return ((const uint8_t *)p)[i];
  case CELL_DTYPE_I8: return ((const int8_t *)p)[i];
  case CELL_DTYPE_I16: return ((const int16_t *)p)[i];
  case CELL_DTYPE_I32: return ((const int32_t *)p)[i];
  case CELL_DTYPE_I64: return (double)((const int64_t *)p)[i];
  case CELL_DTYPE_F32: return ((const float *)p)[i];
  case CELL_DTYPE_F64: return ((const double *)p)[i];
  default: return 0;
  }
}

/* Integers: rounded half away from zero and saturated to the type. */
static inline double vx_sat(double v, double lo, double hi) {
  v = v < 0 ? ceil(v - 0.5) : floor(v + 0.5);
  return v < lo ? lo : v > hi ? hi : v;
}

static inline void vx_store(void *p, cell_dtype dt, int64_t i, double v) {
  if (v != v) v = 0; /* NaN into an integer: 0 */
  switch (dt) {
  case CELL_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)vx_sat(v, 0, 255); break;
  case CELL_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)vx_sat(v, -128, 127); break;
  case CELL_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)vx_sat(v, -32768, 32767); break;
  case CELL_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)vx_sat(v, -2147483648.0, 2147483647.0); break;
  case CELL_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)vx_sat(v, -9.2233720368547748e18, 9.2233720368547748e18); break;
  case CELL_DTYPE_F32: ((float *)p)[i] = (float)v; break;
  case CELL_DTYPE_F64: ((double *)p)[i] = v; break;
  default: break;
  }
}

/* Index i (possibly outside [0, n)) mapped into [0, n) by a border mode;
 * -1 for CONSTANT outside. */
int64_t vx_border(int64_t i, int64_t n, cell_vision_border mode);

/* Resize src (geometry g) to oh x ow into a new tensor. */
cell_status vx_resize(const cell_tensor *src, const vimg *g, int64_t oh, int64_t ow, cell_vision_inter inter,
                      const char *op, cell_tensor **out, char *err, size_t errlen);
/* The window rows [y, y+h), columns [x, x+w) of src (may reach outside:
 * those pixels follow mode and fill) into a new tensor. */
cell_status vx_crop(const cell_tensor *src, const vimg *g, int64_t y, int64_t x, int64_t h, int64_t w,
                    cell_vision_border mode, const double *fill, const char *op, cell_tensor **out, char *err,
                    size_t errlen);

/* A new op over params (freed with it by destroy: free(params)). */
cell_status vx_new_op(const char *name, void *params,
                      cell_status (*apply)(const cell_sample_op *, cell_tensor *, cell_tensor **, uint64_t,
                                           uint64_t, char *, size_t),
                      cell_sample_op **out);

/* The shape text "(2, 3)" of a tensor, into buf. */
const char *vx_shape(const cell_tensor *t, char *buf, size_t n);

/* vision_color.c's constructors' apply functions share nothing else. */
#endif
