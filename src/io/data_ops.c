/* data_ops.c - per-sample random streams and the engine's own per-sample
 * transforms (TypeCast, OneHot) of include/cell_data.h. */
#include "cell_data.h"
#include "cell_device.h"
#include "../core/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: spreads (seed, index, stream) over the key. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void cell_data_rng_init(cell_data_rng *r, uint64_t seed, uint64_t sample_index, uint64_t stream) {
  if (!r) return;
  r->key = mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) + stream * 0x632be59bd9b4e019ull);
  r->counter = sample_index << 20; /* 2^20 blocks per sample before the next one's */
  r->used = 4;
  memset(r->words, 0, sizeof r->words);
}

uint32_t cell_data_rng_u32(cell_data_rng *r) {
  if (r->used >= 4) {
    cell_philox(r->key, r->counter++, r->words);
    r->used = 0;
  }
  return r->words[r->used++];
}

double cell_data_rng_uniform(cell_data_rng *r) {
  uint32_t a = cell_data_rng_u32(r), b = cell_data_rng_u32(r);
  return cell_u01(a, b);
}

int64_t cell_data_rng_int(cell_data_rng *r, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = (uint64_t)(hi - lo) + 1;
  if (span == 0) return lo + (int64_t)(((uint64_t)cell_data_rng_u32(r) << 32) | cell_data_rng_u32(r));
  /* rejection: no modulo bias */
  uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  for (;;) {
    uint64_t v = ((uint64_t)cell_data_rng_u32(r) << 32) | cell_data_rng_u32(r);
    if (v < limit) return lo + (int64_t)(v % span);
  }
}

cell_status cell_sample_op_run(const cell_sample_op *op, cell_tensor *in, uint64_t rng_seed,
                               uint64_t sample_index, cell_tensor **out) {
  if (!op || !op->apply || !in || !out) return cell_error(CELL_ERR_VALUE, "sample op: NULL argument");
  char err[512] = "";
  cell_tensor *o = NULL;
  cell_status s = op->apply(op, in, &o, rng_seed, sample_index, err, sizeof err);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return cell_error(s, "%s", err[0] ? err : (op->name ? op->name : "sample op"));
  }
  if (!o) return cell_error(CELL_ERR_RUNTIME, "%s: gave no tensor", op->name ? op->name : "sample op");
  *out = o;
  return CELL_OK;
}

/* --- TypeCast ---------------------------------------------------------- */
typedef struct cast_params {
  cell_dtype dt;
} cast_params;

static cell_status cast_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out,
                              uint64_t seed, uint64_t index, char *err, size_t errlen) {
  (void)seed;
  (void)index;
  const cast_params *p = op->params;
  if (cell_tensor_dtype(in) == p->dt) {
    cell_tensor_retain(in);
    *out = in;
    return CELL_OK;
  }
  cell_status s = cell_tensor_astype(in, p->dt, out);
  if (s != CELL_OK) snprintf(err, errlen, "TypeCast: %s", cell_last_error());
  return s;
}

static void plain_destroy(cell_sample_op *op) {
  if (!op) return;
  free(op->params);
  free(op);
}

static cell_status new_op(const char *name, void *params,
                          cell_status (*apply)(const cell_sample_op *, cell_tensor *, cell_tensor **,
                                               uint64_t, uint64_t, char *, size_t),
                          cell_sample_op **out) {
  cell_sample_op *op = malloc(sizeof *op);
  if (!op) {
    free(params);
    return cell_error(CELL_ERR_MEMORY, "%s: out of memory", name);
  }
  op->name = name;
  op->apply = apply;
  op->destroy = plain_destroy;
  op->params = params;
  *out = op;
  return CELL_OK;
}

cell_status cell_sample_op_typecast(cell_dtype dt, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "TypeCast: NULL argument");
  if ((unsigned)dt >= CELL_DTYPE_COUNT) return cell_error(CELL_ERR_TYPE, "TypeCast: unknown dtype %d", (int)dt);
  cast_params *p = malloc(sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "TypeCast: out of memory");
  p->dt = dt;
  return new_op("TypeCast", p, cast_apply, out);
}

/* --- OneHot ------------------------------------------------------------- */
typedef struct onehot_params {
  int64_t classes, base;
  double smoothing;
  cell_dtype dt; /* CELL_DTYPE_COUNT: the input's (float32 when smoothing) */
} onehot_params;

static cell_status onehot_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out,
                                uint64_t seed, uint64_t index, char *err, size_t errlen) {
  (void)seed;
  (void)index;
  const onehot_params *p = op->params;
  int nd = cell_tensor_ndim(in);
  if (nd + 1 > CELL_MAX_DIMS) {
    snprintf(err, errlen, "OneHot: the label has %d dimensions, at most %d allowed", nd, CELL_MAX_DIMS - 1);
    return CELL_ERR_VALUE;
  }
  cell_dtype idt = cell_tensor_dtype(in);
  cell_dtype odt = p->dt;
  if (odt == CELL_DTYPE_COUNT) odt = p->smoothing > 0 ? CELL_DTYPE_F32 : idt;
  if (idt == CELL_DTYPE_BOOL && p->dt == CELL_DTYPE_COUNT && p->smoothing == 0) odt = CELL_DTYPE_I64;
  cell_tensor *d = NULL;
  if (cell_tensor_astype(in, CELL_DTYPE_F64, &d) != CELL_OK) {
    snprintf(err, errlen, "OneHot: %s", cell_last_error());
    return cell_last_status();
  }
  int64_t shape[CELL_MAX_DIMS];
  const int64_t *ish = cell_tensor_shape(in);
  for (int i = 0; i < nd; i++) shape[i] = ish[i];
  shape[nd] = p->classes;
  double off = p->smoothing / (double)p->classes, on = 1.0 - p->smoothing + off;
  cell_tensor *o = NULL;
  cell_status s = cell_tensor_full_on(0, CELL_DTYPE_F64, nd + 1, shape, off, &o);
  if (s != CELL_OK) {
    cell_tensor_release(d);
    snprintf(err, errlen, "OneHot: %s", cell_last_error());
    return s;
  }
  const double *src = cell_tensor_data_ptr(d);
  double *dst = cell_tensor_data_ptr(o);
  int64_t n = cell_tensor_numel(d);
  for (int64_t i = 0; i < n; i++) {
    double v = src[i];
    if (v != floor(v) || !isfinite(v)) {
      snprintf(err, errlen, "OneHot: a label must be an integer, but got %g", v);
      s = CELL_ERR_TYPE;
      break;
    }
    if (v < (double)p->base || v >= (double)p->base + (double)p->classes) {
      snprintf(err, errlen, "OneHot: label %.0f is out of range [%lld, %lld] for %lld classes", v,
               (long long)p->base, (long long)(p->base + p->classes - 1), (long long)p->classes);
      s = CELL_ERR_VALUE;
      break;
    }
    dst[i * p->classes + (int64_t)v - p->base] = on;
  }
  cell_tensor_release(d);
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  if (odt == CELL_DTYPE_F64) {
    *out = o;
    return CELL_OK;
  }
  s = cell_tensor_astype(o, odt, out);
  cell_tensor_release(o);
  if (s != CELL_OK) snprintf(err, errlen, "OneHot: %s", cell_last_error());
  return s;
}

cell_status cell_sample_op_onehot(int64_t num_classes, int64_t index_base, double smoothing, cell_dtype dt,
                                  cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "OneHot: NULL argument");
  if (num_classes < 1)
    return cell_error(CELL_ERR_VALUE, "OneHot: num_classes must be positive, but got %lld", (long long)num_classes);
  if (!(smoothing >= 0 && smoothing < 1))
    return cell_error(CELL_ERR_VALUE, "OneHot: smoothing_rate must be in [0, 1), but got %g", smoothing);
  if ((unsigned)dt > CELL_DTYPE_COUNT) return cell_error(CELL_ERR_TYPE, "OneHot: unknown dtype %d", (int)dt);
  if (smoothing > 0 && dt != CELL_DTYPE_COUNT && !cell_dtype_is_float(dt))
    return cell_error(CELL_ERR_TYPE, "OneHot: smoothing needs a float dtype, but got %s", cell_dtype_name(dt));
  onehot_params *p = malloc(sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "OneHot: out of memory");
  p->classes = num_classes;
  p->base = index_base;
  p->smoothing = smoothing;
  p->dt = dt;
  return new_op("OneHot", p, onehot_apply, out);
}

/* --- Fill --------------------------------------------------------------- */
typedef struct fill_params {
  double value;
} fill_params;

static cell_status fill_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                              uint64_t index, char *err, size_t errlen) {
  (void)seed;
  (void)index;
  const fill_params *p = op->params;
  cell_status s = cell_tensor_full_on(0, cell_tensor_dtype(in), cell_tensor_ndim(in), cell_tensor_shape(in), p->value, out);
  if (s != CELL_OK) snprintf(err, errlen, "Fill: %s", cell_last_error());
  return s;
}

cell_status cell_sample_op_fill(double value, cell_sample_op **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "Fill: NULL argument");
  fill_params *p = malloc(sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "Fill: out of memory");
  p->value = value;
  return new_op("Fill", p, fill_apply, out);
}

/* --- RandomApply, RandomChoice ---------------------------------------- */
#define MAX_CHILD_OPS 64
typedef struct random_params {
  int n;
  double prob; /* RandomApply's; < 0 for RandomChoice */
  const cell_sample_op *ops[MAX_CHILD_OPS];
} random_params;

/* Child op k of a composite: its own seed, so its draws differ from the
 * composite's and from its siblings'. */
static uint64_t child_seed(uint64_t seed, int k) {
  return (seed ^ 0xd1b54a32d192ed03ull) * 0x9e3779b97f4a7c15ull + (uint64_t)k + 1;
}

static cell_status run_child(const cell_sample_op *child, int k, cell_tensor **cur, uint64_t seed, uint64_t index,
                             char *err, size_t errlen) {
  cell_tensor *o = NULL;
  cell_status s = child->apply(child, *cur, &o, child_seed(seed, k), index, err, errlen);
  if (s == CELL_OK && !o) {
    snprintf(err, errlen, "%s: gave no tensor", child->name ? child->name : "transform");
    s = CELL_ERR_RUNTIME;
  }
  if (s != CELL_OK) {
    cell_tensor_release(o);
    return s;
  }
  cell_tensor_release(*cur);
  *cur = o;
  return CELL_OK;
}

static cell_status random_apply(const cell_sample_op *op, cell_tensor *in, cell_tensor **out, uint64_t seed,
                                uint64_t index, char *err, size_t errlen) {
  const random_params *p = op->params;
  cell_data_rng r;
  cell_data_rng_init(&r, seed, index, 0);
  cell_tensor_retain(in);
  cell_tensor *cur = in;
  int first = 0, last = p->n;
  if (p->prob >= 0) {
    if (!(cell_data_rng_uniform(&r) < p->prob)) last = 0;
  } else {
    first = (int)cell_data_rng_int(&r, 0, p->n - 1);
    last = first + 1;
  }
  for (int k = first; k < last; k++) {
    cell_status s = run_child(p->ops[k], k, &cur, seed, index, err, errlen);
    if (s != CELL_OK) {
      cell_tensor_release(cur);
      return s;
    }
  }
  *out = cur;
  return CELL_OK;
}

static cell_status new_random(const char *name, int n, const cell_sample_op *const *ops, double prob,
                              cell_sample_op **out) {
  if (!out || !ops) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  if (n < 1 || n > MAX_CHILD_OPS)
    return cell_error(CELL_ERR_VALUE, "%s: %d transforms; between 1 and %d allowed", name, n, MAX_CHILD_OPS);
  for (int k = 0; k < n; k++)
    if (!ops[k] || !ops[k]->apply) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", name);
  random_params *p = malloc(sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "%s: out of memory", name);
  p->n = n;
  p->prob = prob;
  for (int k = 0; k < n; k++) p->ops[k] = ops[k];
  return new_op(name, p, random_apply, out);
}

cell_status cell_sample_op_random_apply(int n, const cell_sample_op *const *ops, double prob, cell_sample_op **out) {
  if (!(prob >= 0 && prob <= 1))
    return cell_error(CELL_ERR_VALUE, "RandomApply: prob must be in [0, 1], but got %g", prob);
  return new_random("RandomApply", n, ops, prob, out);
}

cell_status cell_sample_op_random_choice(int n, const cell_sample_op *const *ops, cell_sample_op **out) {
  return new_random("RandomChoice", n, ops, -1, out);
}
