/* vision_color.c - the vision transforms on pixel values as per-sample
 * ops: Normalize, ToTensor, Rescale, ColorJitter (MindSpore's
 * RandomColorAdjust). */
#include "vision.h"
#include <float.h>
#include <stdlib.h>
#include <string.h>

#define VERR(st, ...) (snprintf(err, errlen, __VA_ARGS__), (st))
#define MAX_CH 64

/* --- Normalize ------------------------------------------------------------------ */

typedef struct norm_params {
  int n, hwc;
  double mean[MAX_CH], std[MAX_CH];
} norm_params;

static cell_status norm_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                              uint64_t index, char *err, size_t errlen) {
  (void)seed, (void)index;
  const norm_params *p = op->params;
  int nd = cell_tensor_ndim(in);
  char sh[160];
  cell_status s = vimg_numeric(cell_tensor_dtype(in), "Normalize", err, errlen);
  if (s) return s;
  if (nd != 2 && nd != 3)
    return VERR(CELL_ERR_VALUE, "Normalize: the image must have shape <H, W> or <%s>, but got %s",
                p->hwc ? "H, W, C" : "C, H, W", vx_shape(in, sh, sizeof sh));
  int64_t c = nd == 2 ? 1 : cell_tensor_dim(in, p->hwc ? 2 : 0);
  if (p->n != 1 && c != p->n)
    return VERR(CELL_ERR_VALUE, "Normalize: the image %s has %lld channels (%s), but mean and std have %d", 
                vx_shape(in, sh, sizeof sh), (long long)c, p->hwc ? "is_hwc: the last dimension" : "the first dimension",
                p->n);
  int64_t shape[3];
  for (int i = 0; i < nd; i++) shape[i] = cell_tensor_dim(in, i);
  cell_tensor *o;
  if ((s = cell_tensor_empty(CELL_DTYPE_F32, nd, shape, &o))) return VERR(s, "Normalize: %s", cell_last_error());
  const void *ip = cell_tensor_data_ptr(in);
  float *dp = cell_tensor_data_ptr(o);
  cell_dtype dt = cell_tensor_dtype(in);
  int64_t n = cell_tensor_numel(in), plane = nd == 2 ? n : (p->hwc ? 1 : n / c);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = p->n == 1 ? 0 : (p->hwc ? i % c : i / plane);
    dp[i] = (float)((vx_load(ip, dt, i) - p->mean[k]) / p->std[k]);
  }
  *out = o;
  return CELL_OK;
}

cell_status cell_vision_normalize(int n, const double *mean, const double *std, int is_hwc, cell_sample_op **out) {
  if (!out || (n > 0 && (!mean || !std))) return cell_error(CELL_ERR_VALUE, "Normalize: NULL argument");
  if (n < 1 || n > MAX_CH)
    return cell_error(CELL_ERR_VALUE, "Normalize: mean and std must have 1 to %d values, but got %d", MAX_CH, n);
  for (int i = 0; i < n; i++) {
    if (!isfinite(mean[i]))
      return cell_error(CELL_ERR_VALUE, "Normalize: mean[%d] must be finite, but got %g", i + 1, mean[i]);
    if (!(std[i] > 0 && isfinite(std[i])))
      return cell_error(CELL_ERR_VALUE, "Normalize: std[%d] must be positive, but got %g", i + 1, std[i]);
  }
  norm_params *p = calloc(1, sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "Normalize: out of memory");
  p->n = n, p->hwc = is_hwc != 0;
  memcpy(p->mean, mean, sizeof *mean * (size_t)n), memcpy(p->std, std, sizeof *std * (size_t)n);
  return vx_new_op("Normalize", p, norm_apply, out);
}

/* --- ToTensor ------------------------------------------------------------------- */

typedef struct tt_params {
  cell_dtype dt;
} tt_params;

static cell_status tt_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                            uint64_t index, char *err, size_t errlen) {
  (void)seed, (void)index;
  const tt_params *p = op->params;
  vimg g;
  cell_status s = vimg_get(in, "ToTensor", &g, err, errlen);
  if (s || (s = vimg_numeric(g.dt, "ToTensor", err, errlen))) return s;
  int64_t shape[3] = {g.c, g.h, g.w};
  cell_tensor *o;
  if ((s = cell_tensor_empty(CELL_DTYPE_F64, 3, shape, &o))) return VERR(s, "ToTensor: %s", cell_last_error());
  const void *ip = cell_tensor_data_ptr(in);
  double *dp = cell_tensor_data_ptr(o);
  int64_t plane = g.h * g.w;
  for (int64_t i = 0; i < plane; i++)
    for (int64_t c = 0; c < g.c; c++) dp[c * plane + i] = vx_load(ip, g.dt, i * g.c + c) / 255.0;
  if (p->dt == CELL_DTYPE_F64) {
    *out = o;
    return CELL_OK;
  }
  s = cell_tensor_astype(o, p->dt, out);
  cell_tensor_release(o);
  if (s) snprintf(err, errlen, "ToTensor: %s", cell_last_error());
  return s;
}

cell_status cell_vision_to_tensor(cell_dtype dt, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "ToTensor: NULL argument");
  if (!cell_dtype_is_float(dt))
    return cell_error(CELL_ERR_TYPE, "ToTensor: output_type must be a float type, but got %s", cell_dtype_name(dt));
  tt_params *p = calloc(1, sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "ToTensor: out of memory");
  p->dt = dt;
  return vx_new_op("ToTensor", p, tt_apply, out);
}

/* --- Rescale -------------------------------------------------------------------- */

typedef struct rescale_params {
  double rescale, shift;
} rescale_params;

static cell_status rescale_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                 uint64_t index, char *err, size_t errlen) {
  (void)seed, (void)index;
  const rescale_params *p = op->params;
  vimg g;
  cell_status s = vimg_get(in, "Rescale", &g, err, errlen);
  if (s || (s = vimg_numeric(g.dt, "Rescale", err, errlen))) return s;
  int64_t shape[3] = {g.h, g.w, g.c};
  cell_tensor *o;
  if ((s = cell_tensor_empty(CELL_DTYPE_F32, g.nd, shape, &o))) return VERR(s, "Rescale: %s", cell_last_error());
  const void *ip = cell_tensor_data_ptr(in);
  float *dp = cell_tensor_data_ptr(o);
  int64_t n = g.h * g.w * g.c;
  for (int64_t i = 0; i < n; i++) dp[i] = (float)(vx_load(ip, g.dt, i) * p->rescale + p->shift);
  *out = o;
  return CELL_OK;
}

cell_status cell_vision_rescale(double rescale, double shift, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "Rescale: NULL argument");
  if (!(rescale >= -FLT_MAX && rescale <= FLT_MAX))
    return cell_error(CELL_ERR_VALUE, "Rescale: rescale must be a finite float32 value, but got %g", rescale);
  if (!(shift >= -FLT_MAX && shift <= FLT_MAX))
    return cell_error(CELL_ERR_VALUE, "Rescale: shift must be a finite float32 value, but got %g", shift);
  rescale_params *p = calloc(1, sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "Rescale: out of memory");
  p->rescale = rescale, p->shift = shift;
  return vx_new_op("Rescale", p, rescale_apply, out);
}

/* --- ColorJitter ------------------------------------------------------------------ */

typedef struct cj_params {
  double range[4][2]; /* brightness, contrast, saturation, hue */
  int on[4];
} cj_params;

static const double GR = 0.299, GG = 0.587, GB = 0.114;

static double clampd(double v, double hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* torchvision's (and colorsys's) HSV, on [0, 1] values. */
static void rgb2hsv(double r, double g, double b, double *h, double *s, double *v) {
  double mx = fmax(r, fmax(g, b)), mn = fmin(r, fmin(g, b)), d = mx - mn;
  *v = mx;
  *s = mx > 0 ? d / mx : 0;
  if (d == 0) {
    *h = 0;
    return;
  }
  double hh;
  if (mx == r) hh = (g - b) / d;
  else if (mx == g) hh = 2.0 + (b - r) / d;
  else hh = 4.0 + (r - g) / d;
  hh /= 6.0;
  *h = hh - floor(hh);
}

static void hsv2rgb(double h, double s, double v, double *r, double *g, double *b) {
  double hh = h * 6.0;
  int i = (int)floor(hh);
  double f = hh - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (((i % 6) + 6) % 6) {
  case 0: *r = v, *g = t, *b = p; break;
  case 1: *r = q, *g = v, *b = p; break;
  case 2: *r = p, *g = v, *b = t; break;
  case 3: *r = p, *g = q, *b = v; break;
  case 4: *r = t, *g = p, *b = v; break;
  default: *r = v, *g = p, *b = q; break;
  }
}

static cell_status cj_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                            uint64_t index, char *err, size_t errlen) {
  const cj_params *p = op->params;
  const char *name = op->name;
  vimg g;
  char sh[160];
  cell_status s = vimg_get(in, name, &g, err, errlen);
  if (s || (s = vimg_numeric(g.dt, name, err, errlen))) return s;
  if (g.nd != 3 || g.c != 3)
    return VERR(CELL_ERR_VALUE, "%s: the image must be RGB with shape <H, W, 3>, but got %s", name,
                vx_shape(in, sh, sizeof sh));
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  double f[4];
  for (int k = 0; k < 4; k++) /* four draws always, so each factor has its fixed place in the stream */
    f[k] = p->range[k][0] + (p->range[k][1] - p->range[k][0]) * cell_data_rng_uniform(&r);
  int64_t n = g.h * g.w;
  double hi = g.dt == CELL_DTYPE_F32 || g.dt == CELL_DTYPE_F64 ? 1.0 : 255.0;
  double *v = malloc(sizeof *v * (size_t)(n * 3));
  if (!v) return VERR(CELL_ERR_MEMORY, "%s: out of memory", name);
  const void *ip = cell_tensor_data_ptr(in);
  for (int64_t i = 0; i < 3 * n; i++) v[i] = vx_load(ip, g.dt, i);
  if (p->on[0]) /* brightness: blend with black */
    for (int64_t i = 0; i < 3 * n; i++) v[i] = clampd(v[i] * f[0], hi);
  if (p->on[1]) { /* contrast: blend with the mean grey level */
    double m = 0;
    for (int64_t i = 0; i < n; i++) m += GR * v[3 * i] + GG * v[3 * i + 1] + GB * v[3 * i + 2];
    m /= (double)n;
    for (int64_t i = 0; i < 3 * n; i++) v[i] = clampd(f[1] * v[i] + (1 - f[1]) * m, hi);
  }
  if (p->on[2]) /* saturation: blend with each pixel's grey */
    for (int64_t i = 0; i < n; i++) {
      double gr = GR * v[3 * i] + GG * v[3 * i + 1] + GB * v[3 * i + 2];
      for (int c = 0; c < 3; c++) v[3 * i + c] = clampd(f[2] * v[3 * i + c] + (1 - f[2]) * gr, hi);
    }
  if (p->on[3]) /* hue: a turn of the HSV circle */
    for (int64_t i = 0; i < n; i++) {
      double h, sa, va, *px = v + 3 * i;
      rgb2hsv(px[0] / hi, px[1] / hi, px[2] / hi, &h, &sa, &va);
      h += f[3];
      h -= floor(h);
      hsv2rgb(h, sa, va, &px[0], &px[1], &px[2]);
      for (int c = 0; c < 3; c++) px[c] = clampd(px[c] * hi, hi);
    }
  cell_tensor *o;
  if ((s = vimg_new(&g, g.h, g.w, name, &o, err, errlen))) {
    free(v);
    return s;
  }
  void *dp = cell_tensor_data_ptr(o);
  for (int64_t i = 0; i < 3 * n; i++) vx_store(dp, g.dt, i, v[i]);
  free(v);
  *out = o;
  return CELL_OK;
}

cell_status cell_vision_color_jitter(const double *brightness, const double *contrast, const double *saturation,
                                     const double *hue, cell_sample_op **out) {
  const char *name = "ColorJitter";
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  cj_params *p = calloc(1, sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "%s: out of memory", name);
  const double *rg[4] = {brightness, contrast, saturation, hue};
  static const char *const what[4] = {"brightness", "contrast", "saturation", "hue"};
  for (int k = 0; k < 4; k++) {
    double lo = k == 3 ? 0 : 1, hi = lo;
    if (rg[k]) lo = rg[k][0], hi = rg[k][1];
    int ok = isfinite(lo) && isfinite(hi) && lo <= hi && (k == 3 ? lo >= -0.5 && hi <= 0.5 : lo >= 0);
    if (!ok) {
      free(p);
      return cell_error(CELL_ERR_VALUE, "%s: %s must be (min, max) with %s, but got (%g, %g)", name, what[k],
                        k == 3 ? "-0.5 <= min <= max <= 0.5" : "0 <= min <= max", lo, hi);
    }
    p->range[k][0] = lo, p->range[k][1] = hi;
    p->on[k] = k == 3 ? !(lo == 0 && hi == 0) : !(lo == 1 && hi == 1);
  }
  return vx_new_op(name, p, cj_apply, out);
}
