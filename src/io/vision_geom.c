/* vision_geom.c - the geometric vision transforms as per-sample ops:
 * Decode, Resize, RandomCrop, CenterCrop, the random flips,
 * RandomResizedCrop, HWC2CHW, RandomRotation; and the plumbing they share with
 * vision_color.c (geometry, borders, resampling). */
#include "vision.h"
#include "io.h"
#include <stdlib.h>
#include <string.h>

#define VERR(st, ...) (snprintf(err, errlen, __VA_ARGS__), (st))

const char *vx_shape(const cell_tensor *t, char *buf, size_t n) {
  return cell_io_shape_tuple(cell_tensor_ndim(t), cell_tensor_shape(t), buf, n);
}

cell_status vimg_get(const cell_tensor *in, const char *op, vimg *g, char *err, size_t errlen) {
  int nd = cell_tensor_ndim(in);
  char sh[160];
  if (nd != 2 && nd != 3)
    return VERR(CELL_ERR_VALUE, "%s: the image must have shape <H, W> or <H, W, C>, but got %s", op,
                vx_shape(in, sh, sizeof sh));
  g->nd = nd;
  g->h = cell_tensor_dim(in, 0), g->w = cell_tensor_dim(in, 1), g->c = nd == 3 ? cell_tensor_dim(in, 2) : 1;
  if (g->h < 1 || g->w < 1 || g->c < 1)
    return VERR(CELL_ERR_VALUE, "%s: the image is empty: shape %s", op, vx_shape(in, sh, sizeof sh));
  g->dt = cell_tensor_dtype(in);
  g->esz = cell_dtype_size(g->dt);
  return CELL_OK;
}

cell_status vimg_new(const vimg *g, int64_t h, int64_t w, const char *op, cell_tensor **out, char *err,
                     size_t errlen) {
  int64_t shape[3] = {h, w, g->c};
  cell_status s = cell_tensor_empty(g->dt, g->nd, shape, out);
  if (s) snprintf(err, errlen, "%s: %s", op, cell_last_error());
  return s;
}

cell_status vimg_numeric(cell_dtype dt, const char *op, char *err, size_t errlen) {
  switch (dt) {
  case CELL_DTYPE_U8: case CELL_DTYPE_I8: case CELL_DTYPE_I16: case CELL_DTYPE_I32: case CELL_DTYPE_I64:
  case CELL_DTYPE_F32: case CELL_DTYPE_F64: return CELL_OK;
  default:
    return VERR(CELL_ERR_TYPE, "%s: the image's dtype must be uint8, an integer type, Float32 or Float64, but got %s",
                op, cell_dtype_name(dt));
  }
}

int64_t vx_border(int64_t i, int64_t n, cell_vision_border mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
  case CELL_BORDER_EDGE: return i < 0 ? 0 : n - 1;
  case CELL_BORDER_REFLECT: {
    if (n == 1) return 0;
    int64_t p = 2 * (n - 1), m = i % p;
    if (m < 0) m += p;
    return m < n ? m : p - m;
  }
  case CELL_BORDER_SYMMETRIC: {
    int64_t p = 2 * n, m = i % p;
    if (m < 0) m += p;
    return m < n ? m : p - 1 - m;
  }
  default: return -1;
  }
}

static void vx_destroy(cell_sample_op *op) {
  if (!op) return;
  free(op->params);
  free(op);
}

cell_status vx_new_op(const char *name, void *params,
                      cell_status (*apply)(const cell_sample_op *, cell_tensor *, cell_tensor **, uint64_t,
                                           uint64_t, char *, size_t),
                      cell_sample_op **out) {
  cell_sample_op *op = malloc(sizeof *op);
  if (!op) {
    free(params);
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory", name);
  }
  op->name = name, op->apply = apply, op->destroy = vx_destroy, op->params = params;
  *out = op;
  return CELL_OK;
}

/* The params block of an op, zeroed; NULL after a MemoryError. */
static void *params_new(size_t n, const char *name) {
  void *p = calloc(1, n);
  if (!p) cell_error(CELL_ERR_MEMORY, "%s: out of memory", name);
  return p;
}

/* --- resampling --------------------------------------------------------------- */

/* OpenCV's cubic convolution constant (INTER_CUBIC; PyTorch's bicubic too). */
#define VX_CUBIC_A (-0.75)

/* The taps of source coordinate f (in pixels, centres at integers) along
 * one axis: the first tap's index in *i0 and the weights in w; returns
 * their count (BILINEAR 2, BICUBIC 4; NEAREST is each caller's own rounding). */
static int vx_taps(double f, cell_vision_inter inter, int64_t *i0, double w[4]) {
  double fl = floor(f), t = f - fl;
  if (inter == CELL_INTER_BICUBIC) {
    const double a = VX_CUBIC_A;
    double u = t + 1, v = 1 - t, z = 2 - t;
    w[0] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * v - (a + 3)) * v * v + 1;
    w[3] = ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
    *i0 = (int64_t)fl - 1;
    return 4;
  }
  w[0] = 1 - t, w[1] = t;
  *i0 = (int64_t)fl;
  return 2;
}

/* One output pixel (its g->c channels at element `at` of dp): the sum over
 * the rows ys[0..ny) and columns xs[0..nx) (element offsets of the row and
 * of the pixel; -1: outside the image, which reads fill[c]) weighted by
 * wy x wx; taps of weight 0 are not read. */
static void vx_sample(const void *ip, const vimg *g, int ny, const int64_t *ys, const double *wy, int nx,
                      const int64_t *xs, const double *wx, const double *fill, void *dp, int64_t at) {
  for (int64_t c = 0; c < g->c; c++) {
    double fv = fill ? fill[c < 3 ? c : 2] : 0, acc = 0;
    for (int ky = 0; ky < ny; ky++) {
      if (wy[ky] == 0) continue;
      double row = 0;
      for (int kx = 0; kx < nx; kx++) {
        if (wx[kx] == 0) continue;
        row += wx[kx] * (ys[ky] < 0 || xs[kx] < 0 ? fv : vx_load(ip, g->dt, ys[ky] + xs[kx] + c));
      }
      acc += wy[ky] * row;
    }
    vx_store(dp, g->dt, at + c, acc);
  }
}

/* The taps of output index x of n_out along an axis of n pixels (scale
 * n / n_out, half-pixel centres) with their indices clamped to the edge
 * (OpenCV's resize; bilinear also moves a coordinate below 0 to 0, as
 * OpenCV does), as element offsets (index * stride). */
static int resize_taps(int64_t x, double scale, int64_t n, int64_t stride, cell_vision_inter inter, int64_t idx[4],
                       double w[4]) {
  double f = (x + 0.5) * scale - 0.5;
  if (inter == CELL_INTER_BILINEAR && f < 0) f = 0;
  int64_t i0;
  int k = vx_taps(f, inter, &i0, w);
  for (int j = 0; j < k; j++) {
    int64_t i = i0 + j;
    idx[j] = (i < 0 ? 0 : i > n - 1 ? n - 1 : i) * stride;
  }
  return k;
}

cell_status vx_resize(const cell_tensor *src, const vimg *g, int64_t oh, int64_t ow, cell_vision_inter inter,
                      const char *op, cell_tensor **out, char *err, size_t errlen) {
  cell_status s = vimg_numeric(g->dt, op, err, errlen);
  if (s) return s;
  cell_tensor *o;
  if ((s = vimg_new(g, oh, ow, op, &o, err, errlen))) return s;
  const void *ip = cell_tensor_data_ptr(src);
  void *op_ = cell_tensor_data_ptr(o);
  int64_t c = g->c, W = g->w, H = g->h;
  double sy_scale = (double)H / (double)oh, sx_scale = (double)W / (double)ow;
  if (inter == CELL_INTER_NEAREST) {
    for (int64_t y = 0; y < oh; y++) {
      int64_t sy = (int64_t)floor(y * sy_scale);
      if (sy > H - 1) sy = H - 1;
      for (int64_t x = 0; x < ow; x++) {
        int64_t sx = (int64_t)floor(x * sx_scale);
        if (sx > W - 1) sx = W - 1;
        memcpy((char *)op_ + ((y * ow + x) * c) * g->esz, (const char *)ip + ((sy * W + sx) * c) * g->esz,
               (size_t)(c * g->esz));
      }
    }
  } else {
    /* Each output column's taps (offsets and weights), computed once. */
    int64_t *xi = malloc(sizeof *xi * (size_t)ow * 4);
    double *xw = malloc(sizeof *xw * (size_t)ow * 4);
    if (!xi || !xw) {
      free(xi), free(xw), cell_tensor_release(o);
      return VERR(CELL_ERR_MEMORY, "%s: out of memory", op);
    }
    int nx = 0;
    for (int64_t x = 0; x < ow; x++) nx = resize_taps(x, sx_scale, W, c, inter, xi + 4 * x, xw + 4 * x);
    for (int64_t y = 0; y < oh; y++) {
      int64_t yi[4];
      double yw[4];
      int ny = resize_taps(y, sy_scale, H, W * c, inter, yi, yw);
      for (int64_t x = 0; x < ow; x++)
        vx_sample(ip, g, ny, yi, yw, nx, xi + 4 * x, xw + 4 * x, NULL, op_, (y * ow + x) * c);
    }
    free(xi), free(xw);
  }
  *out = o;
  return CELL_OK;
}

cell_status vx_crop(const cell_tensor *src, const vimg *g, int64_t y, int64_t x, int64_t h, int64_t w,
                    cell_vision_border mode, const double *fill, const char *op, cell_tensor **out, char *err,
                    size_t errlen) {
  cell_tensor *o;
  cell_status s = vimg_new(g, h, w, op, &o, err, errlen);
  if (s) return s;
  const char *ip = cell_tensor_data_ptr(src);
  char *dp = cell_tensor_data_ptr(o);
  size_t px = (size_t)(g->c * g->esz);
  /* One pixel of the fill value, in the image's dtype. */
  char fillpx[8 * 64];
  char *fp = px <= sizeof fillpx ? fillpx : malloc(px);
  if (!fp) {
    cell_tensor_release(o);
    return VERR(CELL_ERR_MEMORY, "%s: out of memory", op);
  }
  for (int64_t ch = 0; ch < g->c; ch++) {
    double f = fill ? fill[ch < 3 ? ch : 2] : 0;
    if (g->dt == CELL_DTYPE_BOOL) ((unsigned char *)fp)[ch] = f != 0;
    else if (g->dt == CELL_DTYPE_F16 || g->dt == CELL_DTYPE_BF16) memset(fp + ch * g->esz, 0, (size_t)g->esz);
    else vx_store(fp, g->dt, ch, f);
  }
  for (int64_t r = 0; r < h; r++) {
    int64_t sy = vx_border(y + r, g->h, mode);
    char *drow = dp + (size_t)(r * w) * px;
    if (sy < 0) {
      for (int64_t k = 0; k < w; k++) memcpy(drow + (size_t)k * px, fp, px);
      continue;
    }
    const char *srow = ip + (size_t)(sy * g->w) * px;
    /* the part of the window inside the image in one copy, the rest by pixel */
    int64_t in0 = x < 0 ? -x : 0, in1 = x + w > g->w ? g->w - x : w;
    if (in1 > in0) memcpy(drow + (size_t)in0 * px, srow + (size_t)(x + in0) * px, (size_t)(in1 - in0) * px);
    else in0 = in1 = 0;
    for (int64_t k = 0; k < w; k++) {
      if (k >= in0 && k < in1) continue;
      int64_t sx = vx_border(x + k, g->w, mode);
      memcpy(drow + (size_t)k * px, sx < 0 ? fp : srow + (size_t)sx * px, px);
    }
  }
  if (fp != fillpx) free(fp);
  *out = o;
  return CELL_OK;
}

/* --- Decode ------------------------------------------------------------------- */

static cell_status decode_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                uint64_t index, char *err, size_t errlen) {
  (void)op, (void)seed, (void)index;
  char sh[160];
  if (cell_tensor_ndim(in) != 1 || cell_tensor_dtype(in) != CELL_DTYPE_U8)
    return VERR(CELL_ERR_TYPE, "Decode: the input must be the 1-D uint8 bytes of an image file, but got %s %s",
                cell_dtype_name(cell_tensor_dtype(in)), vx_shape(in, sh, sizeof sh));
  cell_status s = cell_image_decode(cell_tensor_data_ptr(in), (size_t)cell_tensor_numel(in), "<memory>", out);
  if (s) snprintf(err, errlen, "%s", cell_last_error());
  return s;
}

cell_status cell_vision_decode(cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "Decode: NULL argument");
  void *p = params_new(1, "Decode");
  return p ? vx_new_op("Decode", p, decode_apply, out) : CELL_ERR_MEMORY;
}

/* --- Resize ------------------------------------------------------------------- */

typedef struct resize_params {
  int64_t h, w;
  cell_vision_inter inter;
} resize_params;

/* The output size of Resize(h, w) for an H x W image. */
static void resize_size(int64_t h, int64_t w, int64_t H, int64_t W, int64_t *oh, int64_t *ow) {
  if (w > 0) {
    *oh = h, *ow = w;
  } else if (H <= W) {
    *oh = h, *ow = (int64_t)floor((double)W / (double)H * (double)h);
  } else {
    *ow = h, *oh = (int64_t)floor((double)H / (double)W * (double)h);
  }
  if (*oh < 1) *oh = 1;
  if (*ow < 1) *ow = 1;
}

static cell_status resize_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                uint64_t index, char *err, size_t errlen) {
  (void)seed, (void)index;
  const resize_params *p = op->params;
  vimg g;
  cell_status s = vimg_get(in, "Resize", &g, err, errlen);
  if (s) return s;
  int64_t oh, ow;
  resize_size(p->h, p->w, g.h, g.w, &oh, &ow);
  if (oh > ((int64_t)1 << 24) || ow > ((int64_t)1 << 24))
    return VERR(CELL_ERR_VALUE, "Resize: the output %lld x %lld is too large", (long long)oh, (long long)ow);
  return vx_resize(in, &g, oh, ow, p->inter, "Resize", out, err, errlen);
}

static cell_status check_size(const char *name, int64_t h, int64_t w, int w_optional) {
  if (h < 1 || w < 0 || (w == 0 && !w_optional) || h > ((int64_t)1 << 24) || w > ((int64_t)1 << 24))
    return cell_error(CELL_ERR_VALUE, "%s: size must be positive (at most 16777216), but got (%lld, %lld)", name,
                      (long long)h, (long long)w);
  return CELL_OK;
}

static cell_status check_inter(const char *name, cell_vision_inter inter) {
  if ((unsigned)inter >= CELL_INTER_COUNT)
    return cell_error(CELL_ERR_VALUE, "%s: unknown interpolation %d", name, (int)inter);
  return CELL_OK;
}

cell_status cell_vision_resize(int64_t h, int64_t w, cell_vision_inter inter, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "Resize: NULL argument");
  cell_status s = check_size("Resize", h, w, 1);
  if (s || (s = check_inter("Resize", inter))) return s;
  resize_params *p = params_new(sizeof *p, "Resize");
  if (!p) return CELL_ERR_MEMORY;
  p->h = h, p->w = w, p->inter = inter;
  return vx_new_op("Resize", p, resize_apply, out);
}

/* --- RandomCrop --------------------------------------------------------------- */

typedef struct crop_params {
  int64_t h, w, pad[4]; /* left, top, right, bottom */
  int pad_if_needed;
  double fill[3];
  cell_vision_border mode;
} crop_params;

static cell_status crop_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                              uint64_t index, char *err, size_t errlen) {
  const crop_params *p = op->params;
  vimg g;
  cell_status s = vimg_get(in, "RandomCrop", &g, err, errlen);
  if (s) return s;
  int64_t left = p->pad[0], top = p->pad[1];
  int64_t W = g.w + p->pad[0] + p->pad[2], H = g.h + p->pad[1] + p->pad[3];
  if (p->pad_if_needed && W < p->w) left += p->w - W, W += 2 * (p->w - W);
  if (p->pad_if_needed && H < p->h) top += p->h - H, H += 2 * (p->h - H);
  if (H < p->h || W < p->w)
    return VERR(CELL_ERR_VALUE, "RandomCrop: the crop size (%lld, %lld) is larger than the %simage size (%lld, %lld)",
                (long long)p->h, (long long)p->w, p->pad[0] || p->pad[1] || p->pad[2] || p->pad[3] ? "padded " : "",
                (long long)H, (long long)W);
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  int64_t y = cell_data_rng_int(&r, 0, H - p->h), x = cell_data_rng_int(&r, 0, W - p->w);
  return vx_crop(in, &g, y - top, x - left, p->h, p->w, p->mode, p->fill, "RandomCrop", out, err, errlen);
}

cell_status cell_vision_random_crop(int64_t h, int64_t w, const int64_t *padding, int pad_if_needed,
                                    const double *fill, cell_vision_border mode, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "RandomCrop: NULL argument");
  cell_status s = check_size("RandomCrop", h, w, 0);
  if (s) return s;
  if ((unsigned)mode >= CELL_BORDER_COUNT) return cell_error(CELL_ERR_VALUE, "RandomCrop: unknown padding_mode %d", (int)mode);
  for (int i = 0; padding && i < 4; i++)
    if (padding[i] < 0 || padding[i] > ((int64_t)1 << 24))
      return cell_error(CELL_ERR_VALUE, "RandomCrop: padding must be in [0, 16777216], but got %lld",
                        (long long)padding[i]);
  crop_params *p = params_new(sizeof *p, "RandomCrop");
  if (!p) return CELL_ERR_MEMORY;
  p->h = h, p->w = w, p->pad_if_needed = pad_if_needed != 0, p->mode = mode;
  for (int i = 0; i < 4; i++) p->pad[i] = padding ? padding[i] : 0;
  for (int i = 0; i < 3; i++) p->fill[i] = fill ? fill[i] : 0;
  return vx_new_op("RandomCrop", p, crop_apply, out);
}

/* --- CenterCrop --------------------------------------------------------------- */

typedef struct center_crop_params {
  int64_t h, w;
} center_crop_params;

/* The window's first index along an axis of n pixels for a crop of m: the
 * centre, rounded down; before a smaller image, the (d + 1) / 2 zeros
 * MindSpore pads there (d = m - n). */
static int64_t center_origin(int64_t n, int64_t m) { return m > n ? -((m - n + 1) / 2) : (n - m) / 2; }

static cell_status center_crop_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                     uint64_t index, char *err, size_t errlen) {
  (void)seed, (void)index;
  const center_crop_params *p = op->params;
  vimg g;
  cell_status s = vimg_get(in, "CenterCrop", &g, err, errlen);
  if (s) return s;
  if (p->h - g.h >= 3 * g.h || p->w - g.w >= 3 * g.w)
    return VERR(CELL_ERR_VALUE,
                "CenterCrop: the padding must be less than 3 times the image size, but the crop size (%lld, %lld) "
                "pads the image size (%lld, %lld) by (%lld, %lld)",
                (long long)p->h, (long long)p->w, (long long)g.h, (long long)g.w,
                (long long)(p->h > g.h ? p->h - g.h : 0), (long long)(p->w > g.w ? p->w - g.w : 0));
  return vx_crop(in, &g, center_origin(g.h, p->h), center_origin(g.w, p->w), p->h, p->w, CELL_BORDER_CONSTANT, NULL,
                 "CenterCrop", out, err, errlen);
}

cell_status cell_vision_center_crop(int64_t h, int64_t w, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "CenterCrop: NULL argument");
  cell_status s = check_size("CenterCrop", h, w, 0);
  if (s) return s;
  center_crop_params *p = params_new(sizeof *p, "CenterCrop");
  if (!p) return CELL_ERR_MEMORY;
  p->h = h, p->w = w;
  return vx_new_op("CenterCrop", p, center_crop_apply, out);
}

/* --- flips ------------------------------------------------------------------ */

typedef struct flip_params {
  int vertical;
  double prob;
} flip_params;

static cell_status flip_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                              uint64_t index, char *err, size_t errlen) {
  const flip_params *p = op->params;
  const char *name = op->name;
  vimg g;
  cell_status s = vimg_get(in, name, &g, err, errlen);
  if (s) return s;
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  if (!(cell_data_rng_uniform(&r) < p->prob)) {
    cell_tensor_retain(in);
    *out = in;
    return CELL_OK;
  }
  cell_tensor *o;
  if ((s = vimg_new(&g, g.h, g.w, name, &o, err, errlen))) return s;
  const char *ip = cell_tensor_data_ptr(in);
  char *dp = cell_tensor_data_ptr(o);
  size_t px = (size_t)(g.c * g.esz), row = px * (size_t)g.w;
  for (int64_t y = 0; y < g.h; y++) {
    if (p->vertical) {
      memcpy(dp + (size_t)y * row, ip + (size_t)(g.h - 1 - y) * row, row);
    } else {
      for (int64_t x = 0; x < g.w; x++)
        memcpy(dp + (size_t)y * row + (size_t)x * px, ip + (size_t)y * row + (size_t)(g.w - 1 - x) * px, px);
    }
  }
  *out = o;
  return CELL_OK;
}

cell_status cell_vision_random_flip(int vertical, double prob, cell_sample_op **out) {
  const char *name = vertical ? "RandomVerticalFlip" : "RandomHorizontalFlip";
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  if (!(prob >= 0 && prob <= 1))
    return cell_error(CELL_ERR_VALUE, "%s: prob must be in [0, 1], but got %g", name, prob);
  flip_params *p = params_new(sizeof *p, name);
  if (!p) return CELL_ERR_MEMORY;
  p->vertical = vertical != 0, p->prob = prob;
  return vx_new_op(name, p, flip_apply, out);
}

/* --- RandomResizedCrop ---------------------------------------------------------- */

typedef struct rrc_params {
  int64_t h, w;
  double scale[2], ratio[2];
  cell_vision_inter inter;
  int attempts;
} rrc_params;

static cell_status rrc_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                             uint64_t index, char *err, size_t errlen) {
  const rrc_params *p = op->params;
  vimg g;
  cell_status s = vimg_get(in, "RandomResizedCrop", &g, err, errlen);
  if (s) return s;
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  double area = (double)g.h * (double)g.w, lr0 = log(p->ratio[0]), lr1 = log(p->ratio[1]);
  int64_t ch = 0, cw = 0, y = 0, x = 0;
  int found = 0;
  for (int k = 0; k < p->attempts && !found; k++) {
    double target = area * (p->scale[0] + (p->scale[1] - p->scale[0]) * cell_data_rng_uniform(&r));
    double aspect = exp(lr0 + (lr1 - lr0) * cell_data_rng_uniform(&r));
    double fw = round(sqrt(target * aspect)), fh = round(sqrt(target / aspect));
    if (fw > 0 && fh > 0 && fw <= (double)g.w && fh <= (double)g.h) {
      cw = (int64_t)fw, ch = (int64_t)fh;
      y = cell_data_rng_int(&r, 0, g.h - ch);
      x = cell_data_rng_int(&r, 0, g.w - cw);
      found = 1;
    }
  }
  if (!found) { /* the centre crop, its ratio clamped into the range */
    double in_ratio = (double)g.w / (double)g.h;
    if (in_ratio < p->ratio[0]) cw = g.w, ch = (int64_t)round((double)g.w / p->ratio[0]);
    else if (in_ratio > p->ratio[1]) ch = g.h, cw = (int64_t)round((double)g.h * p->ratio[1]);
    else cw = g.w, ch = g.h;
    if (ch < 1) ch = 1;
    if (cw < 1) cw = 1;
    if (ch > g.h) ch = g.h;
    if (cw > g.w) cw = g.w;
    y = (g.h - ch) / 2, x = (g.w - cw) / 2;
  }
  cell_tensor *crop;
  if ((s = vx_crop(in, &g, y, x, ch, cw, CELL_BORDER_EDGE, NULL, "RandomResizedCrop", &crop, err, errlen))) return s;
  vimg cg = g;
  cg.h = ch, cg.w = cw;
  s = vx_resize(crop, &cg, p->h, p->w, p->inter, "RandomResizedCrop", out, err, errlen);
  cell_tensor_release(crop);
  return s;
}

cell_status cell_vision_random_resized_crop(int64_t h, int64_t w, const double *scale, const double *ratio,
                                            cell_vision_inter inter, int max_attempts, cell_sample_op **out) {
  const char *name = "RandomResizedCrop";
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  cell_status s = check_size(name, h, w, 0);
  if (s || (s = check_inter(name, inter))) return s;
  double sc[2] = {0.08, 1.0}, ra[2] = {3.0 / 4.0, 4.0 / 3.0};
  if (scale) sc[0] = scale[0], sc[1] = scale[1];
  if (ratio) ra[0] = ratio[0], ra[1] = ratio[1];
  if (!(sc[0] >= 0 && sc[0] <= sc[1] && isfinite(sc[1])))
    return cell_error(CELL_ERR_VALUE, "%s: scale must be (min, max) with 0 <= min <= max, but got (%g, %g)", name,
                      sc[0], sc[1]);
  if (!(ra[0] > 0 && ra[0] <= ra[1] && isfinite(ra[1])))
    return cell_error(CELL_ERR_VALUE, "%s: ratio must be (min, max) with 0 < min <= max, but got (%g, %g)", name,
                      ra[0], ra[1]);
  if (max_attempts < 1)
    return cell_error(CELL_ERR_VALUE, "%s: max_attempts must be positive, but got %d", name, max_attempts);
  rrc_params *p = params_new(sizeof *p, name);
  if (!p) return CELL_ERR_MEMORY;
  p->h = h, p->w = w, p->inter = inter, p->attempts = max_attempts;
  memcpy(p->scale, sc, sizeof sc), memcpy(p->ratio, ra, sizeof ra);
  return vx_new_op(name, p, rrc_apply, out);
}

/* --- HWC2CHW ------------------------------------------------------------------ */

static cell_status hwc2chw_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                 uint64_t index, char *err, size_t errlen) {
  (void)op, (void)seed, (void)index;
  vimg g;
  cell_status s = vimg_get(in, "HWC2CHW", &g, err, errlen);
  if (s) return s;
  if (g.nd == 2) {
    cell_tensor_retain(in);
    *out = in;
    return CELL_OK;
  }
  int64_t shape[3] = {g.c, g.h, g.w};
  cell_tensor *o;
  if ((s = cell_tensor_empty(g.dt, 3, shape, &o))) return VERR(s, "HWC2CHW: %s", cell_last_error());
  const char *ip = cell_tensor_data_ptr(in);
  char *dp = cell_tensor_data_ptr(o);
  int64_t plane = g.h * g.w;
  for (int64_t i = 0; i < plane; i++)
    for (int64_t c = 0; c < g.c; c++)
      memcpy(dp + (size_t)(c * plane + i) * g.esz, ip + (size_t)(i * g.c + c) * g.esz, (size_t)g.esz);
  *out = o;
  return CELL_OK;
}

cell_status cell_vision_hwc2chw(cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "HWC2CHW: NULL argument");
  void *p = params_new(1, "HWC2CHW");
  return p ? vx_new_op("HWC2CHW", p, hwc2chw_apply, out) : CELL_ERR_MEMORY;
}

/* --- RandomRotation ------------------------------------------------------------- */

typedef struct rot_params {
  double deg[2], center[2], fill[3];
  int has_center, expand;
  cell_vision_inter inter;
} rot_params;

static cell_status rot_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                             uint64_t index, char *err, size_t errlen) {
  const rot_params *p = op->params;
  const char *name = "RandomRotation";
  vimg g;
  cell_status s = vimg_get(in, name, &g, err, errlen);
  if (s || (s = vimg_numeric(g.dt, name, err, errlen))) return s;
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  double deg = p->deg[0] + (p->deg[1] - p->deg[0]) * cell_data_rng_uniform(&r);
  double th = deg * (3.14159265358979323846 / 180.0), cs = cos(th), sn = sin(th);
  /* exact quarter turns: no 1e-17 residue that would move a pixel */
  if (fmod(fabs(deg), 90.0) == 0) cs = round(cs), sn = round(sn);
  double icx = p->has_center ? p->center[0] : (g.w - 1) * 0.5, icy = p->has_center ? p->center[1] : (g.h - 1) * 0.5;
  int64_t oh = g.h, ow = g.w;
  double ocx = icx, ocy = icy;
  if (p->expand) {
    /* the rotated corners' extent (pixel edges at -0.5 and n - 0.5) */
    double xs[2] = {-0.5 - icx, g.w - 0.5 - icx}, ys[2] = {-0.5 - icy, g.h - 0.5 - icy};
    double minx = 1e300, maxx = -1e300, miny = 1e300, maxy = -1e300;
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        double X = cs * xs[a] + sn * ys[b], Y = -sn * xs[a] + cs * ys[b];
        minx = fmin(minx, X), maxx = fmax(maxx, X), miny = fmin(miny, Y), maxy = fmax(maxy, Y);
      }
    ow = (int64_t)ceil(maxx - minx - 1e-6), oh = (int64_t)ceil(maxy - miny - 1e-6);
    if (ow < 1) ow = 1;
    if (oh < 1) oh = 1;
    if (ow > ((int64_t)1 << 24) || oh > ((int64_t)1 << 24))
      return VERR(CELL_ERR_VALUE, "%s: the expanded output %lld x %lld is too large", name, (long long)oh,
                  (long long)ow);
    /* the rotated image's box centred in the output */
    ocx = (ow - 1) * 0.5 - (minx + maxx) * 0.5;
    ocy = (oh - 1) * 0.5 - (miny + maxy) * 0.5;
  }
  cell_tensor *o;
  if ((s = vimg_new(&g, oh, ow, name, &o, err, errlen))) return s;
  const void *ip = cell_tensor_data_ptr(in);
  void *dp = cell_tensor_data_ptr(o);
  int64_t C = g.c;
  for (int64_t y = 0; y < oh; y++)
    for (int64_t x = 0; x < ow; x++) {
      double dx = x - ocx, dy = y - ocy;
      double sx = icx + cs * dx - sn * dy, sy = icy + sn * dx + cs * dy;
      int64_t at = (y * ow + x) * C;
      if (p->inter == CELL_INTER_NEAREST) {
        double rx = floor(sx + 0.5), ry = floor(sy + 0.5);
        int inside = rx >= 0 && rx < g.w && ry >= 0 && ry < g.h;
        int64_t from = inside ? ((int64_t)ry * g.w + (int64_t)rx) * C : 0;
        for (int64_t c = 0; c < C; c++) vx_store(dp, g.dt, at + c, inside ? vx_load(ip, g.dt, from + c) : p->fill[c < 3 ? c : 2]);
        continue;
      }
      /* the taps along each axis; those outside the image read the fill */
      int64_t y0, x0, yi[4], xi[4];
      double yw[4], xw[4];
      int ny = vx_taps(sy, p->inter, &y0, yw), nx = vx_taps(sx, p->inter, &x0, xw);
      for (int k = 0; k < ny; k++) yi[k] = y0 + k >= 0 && y0 + k < g.h ? (y0 + k) * g.w * C : -1;
      for (int k = 0; k < nx; k++) xi[k] = x0 + k >= 0 && x0 + k < g.w ? (x0 + k) * C : -1;
      vx_sample(ip, &g, ny, yi, yw, nx, xi, xw, p->fill, dp, at);
    }
  *out = o;
  return CELL_OK;
}

cell_status cell_vision_random_rotation(double deg_min, double deg_max, cell_vision_inter inter, int expand,
                                        const double *center, const double *fill, cell_sample_op **out) {
  const char *name = "RandomRotation";
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  if (!(deg_min <= deg_max && isfinite(deg_min) && isfinite(deg_max)))
    return cell_error(CELL_ERR_VALUE, "%s: degrees must be (min, max) with min <= max, but got (%g, %g)", name,
                      deg_min, deg_max);
  cell_status s = check_inter(name, inter);
  if (s) return s;
  if (center && !(isfinite(center[0]) && isfinite(center[1])))
    return cell_error(CELL_ERR_VALUE, "%s: center must be finite, but got (%g, %g)", name, center[0], center[1]);
  rot_params *p = params_new(sizeof *p, name);
  if (!p) return CELL_ERR_MEMORY;
  p->deg[0] = deg_min, p->deg[1] = deg_max, p->inter = inter, p->expand = expand != 0;
  if (center) p->has_center = 1, p->center[0] = center[0], p->center[1] = center[1];
  for (int i = 0; i < 3; i++) p->fill[i] = fill ? fill[i] : 0;
  return vx_new_op(name, p, rot_apply, out);
}
