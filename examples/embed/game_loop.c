/* game_loop.c - a C "game" that runs a trained model every frame, with no
 * Lua at all: the pure-C inference path of cell's embedding API.
 *
 * It loads a multilayer perceptron from a safetensors checkpoint (the one
 * `bin/cell examples/mlp.lua` trains and saves in build/demo/mlp.safetensors,
 * or any file of Dense layers: a `X.weight`
 * {out, in} and `X.bias` {out} per layer, chained by their sizes, ReLU
 * between them), wraps the game's own input buffer as a tensor without
 * copying, then runs STEPS frames: the game writes the frame's input
 * (here a moving synthetic 28x28 image) into its buffer, the model runs
 * at batch 1, the game reads the logits. It prints the latency per frame
 * (p50, p99, max) and what the allocator did after warm-up: the target is
 * no allocation reaching the OS.
 *
 *   usage: game_loop CHECKPOINT [STEPS] [THREADS]
 *   build: cc -O2 game_loop.c $(pkg-config --cflags --libs cell) -o game_loop
 *          (`make` builds it in build/embed/, `make embed` runs it)
 *
 * Besides the report it prints `name value unit` lines (bench/embed.sh
 * reads them). Exit status 0 on success, 1 on any error (with the engine's
 * message), 2 for bad usage. */
#include "cell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LAYERS 8
#define WARMUP 200

typedef struct layer {
  const char *name;     /* the checkpoint's prefix: "fc1" for fc1.weight */
  cell_tensor *wt;      /* the weight transposed: {in, out}, a view (no copy) */
  cell_tensor *bias;    /* {out} */
  long long in, out;
} layer;

typedef struct model {
  cell_safetensors *file; /* keeps the names */
  layer layers[MAX_LAYERS];
  int n;
} model;

static int fail(const char *what) {
  fprintf(stderr, "game_loop: %s: %s: %s\n", what, cell_status_name(cell_last_status()),
          cell_last_error());
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The tensor named prefix + suffix, or NULL. */
static cell_tensor *find(const cell_safetensors *st, const char *prefix, size_t plen,
                         const char *suffix) {
  for (int i = 0; i < st->count; i++)
    if (strncmp(st->names[i], prefix, plen) == 0 && strcmp(st->names[i] + plen, suffix) == 0)
      return st->tensors[i];
  return NULL;
}

/* Dense layers from the file, chained from the one taking `in_features`. */
static cell_status load_model(const char *path, long long in_features, model *m) {
  memset(m, 0, sizeof *m);
  cell_status s = cell_safetensors_load(path, &m->file);
  if (s != CELL_OK) return s;
  const cell_safetensors *st = m->file;
  layer found[MAX_LAYERS];
  int nfound = 0;
  for (int i = 0; i < st->count; i++) {
    const char *name = st->names[i];
    if (!ends_with(name, "weight") || cell_tensor_ndim(st->tensors[i]) != 2) continue;
    size_t plen = strlen(name) - strlen("weight");
    cell_tensor *w = st->tensors[i], *b = find(st, name, plen, "bias");
    if (nfound == MAX_LAYERS)
      return cell_error(CELL_ERR_VALUE, "model: %s: more than %d layers", path, MAX_LAYERS);
    if (cell_tensor_dtype(w) != CELL_DTYPE_F32)
      return cell_error(CELL_ERR_TYPE, "model: %s: %s is %s, not Float32", path, name,
                        cell_dtype_name(cell_tensor_dtype(w)));
    if (!b || cell_tensor_ndim(b) != 1 || cell_tensor_dim(b, 0) != cell_tensor_dim(w, 0))
      return cell_error(CELL_ERR_VALUE, "model: %s: %s has no bias of %lld values", path, name,
                        cell_tensor_dim(w, 0));
    layer *l = &found[nfound++];
    l->name = name;
    l->bias = b;
    l->out = cell_tensor_dim(w, 0);
    l->in = cell_tensor_dim(w, 1);
    /* x @ W^T: a transposed view, made once; matmul hands it to BLAS as a
     * transposed operand, so nothing is copied, now or per frame. */
    s = cell_tensor_transpose(w, 0, 1, &l->wt);
    if (s != CELL_OK) {
      for (int k = 0; k < nfound - 1; k++) cell_tensor_release(found[k].wt);
      return s;
    }
  }
  /* Chain them: each layer's input size is the previous one's output. */
  long long want = in_features;
  while (m->n < nfound) {
    int next = -1;
    for (int k = 0; k < nfound; k++)
      if (found[k].wt && found[k].in == want) next = k;
    if (next < 0) break;
    m->layers[m->n++] = found[next];
    found[next].wt = NULL;
    want = m->layers[m->n - 1].out;
  }
  for (int k = 0; k < nfound; k++) cell_tensor_release(found[k].wt); /* unchained */
  if (m->n == 0)
    return cell_error(CELL_ERR_VALUE, "model: %s: no Dense layer takes %lld inputs", path,
                      in_features);
  return CELL_OK;
}

static void free_model(model *m) {
  for (int i = 0; i < m->n; i++) cell_tensor_release(m->layers[i].wt);
  cell_safetensors_free(m->file);
}

/* One frame: logits = the model at x. Every intermediate is released as
 * soon as it is used, so its block goes back to the allocator's cache and
 * the next frame reuses it. *out gets the logits (a new reference). */
static cell_status forward(const model *m, const cell_tensor *x, cell_tensor **out) {
  cell_tensor *h = NULL;
  const cell_tensor *cur = x;
  for (int i = 0; i < m->n; i++) {
    cell_tensor *y = NULL;
    cell_status s = cell_op_matmul(cur, m->layers[i].wt, &y);
    cell_tensor_release(h);
    if (s != CELL_OK) return s;
    s = cell_op_binary_(CELL_OP_ADD, y, m->layers[i].bias); /* in place: no new tensor */
    if (s == CELL_OK && i + 1 < m->n) s = cell_op_unary_(CELL_OP_RELU, y);
    if (s != CELL_OK) {
      cell_tensor_release(y);
      return s;
    }
    h = y;
    cur = y;
  }
  *out = h;
  return CELL_OK;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The machine's own noise, for reading p99: the share of `tries` busy
 * waits of `us` microseconds that took over twice as long (the thread was
 * preempted, or an interrupt ran). No engine call, no memory traffic. */
static double spin_overruns(double us, long tries) {
  long over = 0;
  for (long i = 0; i < tries; i++) {
    double t0 = now_us(), t;
    do t = now_us(); while (t - t0 < us);
    if (t - t0 > 2 * us) over++;
  }
  return 100.0 * (double)over / (double)tries;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The game's frame input: a bright bar sweeping across a 28 x 28 image. */
static void draw_frame(float *pixels, long long n, long frame) {
  for (long long i = 0; i < n; i++) {
    long long col = i % 28;
    pixels[i] = (float)(0.5 + 0.5 * sin(0.2 * (double)(col + frame)));
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: game_loop CHECKPOINT [STEPS] [THREADS]\n");
    return 2;
  }
  long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 10000;
  int threads = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 1;
  if (steps < 1) {
    fprintf(stderr, "game_loop: STEPS must be a positive number, got '%s'\n", argv[2]);
    return 2;
  }
  /* Batch 1 in a frame loop: one thread, so OpenBLAS's workers do not spin
   * between frames; and no autograd bookkeeping. */
  cell_set_num_threads(threads);
  cell_grad_set_enabled(0);

  const long long in_features = 784;
  model m;
  if (load_model(argv[1], in_features, &m) != CELL_OK) {
    int rc = fail("loading the model");
    free_model(&m);
    return rc;
  }
  printf("model: %s:", argv[1]);
  for (int i = 0; i < m.n; i++)
    printf(" %.*s [%lld -> %lld]", (int)(strlen(m.layers[i].name) - strlen(".weight")), m.layers[i].name,
           m.layers[i].in, m.layers[i].out);
  printf("\n");

  /* The game owns its input buffer; the tensor is a window on it. */
  float *pixels = malloc((size_t)in_features * sizeof *pixels);
  cell_tensor *x = NULL;
  int64_t xshape[2] = {1, in_features};
  if (!pixels || cell_tensor_wrap(pixels, CELL_DTYPE_F32, 2, xshape, NULL, NULL, NULL, &x) != CELL_OK) {
    free(pixels);
    free_model(&m);
    return fail("wrapping the input");
  }

  double *lat = malloc((size_t)steps * sizeof *lat);
  int last = -1;
  cell_alloc_stats before, after;
  int rc = 0;
  long long n_out = m.layers[m.n - 1].out;
  for (long f = -WARMUP; f < steps && lat; f++) {
    if (f == 0) cell_alloc_get_stats(&before);
    draw_frame(pixels, in_features, f);
    double t0 = now_us();
    cell_tensor *logits = NULL;
    if (forward(&m, x, &logits) != CELL_OK) {
      rc = fail("forward");
      break;
    }
    double t1 = now_us();
    /* The game reads the result in place: the class with the top logit. */
    const float *z = cell_tensor_data_ptr(logits);
    int best = 0;
    for (int k = 1; k < n_out; k++)
      if (z[k] > z[best]) best = k;
    last = best;
    if (f == steps - 1) {
      printf("logits at the last step:");
      for (int k = 0; k < n_out; k++) printf(" %.9g", z[k]);
      printf("\n");
    }
    cell_tensor_release(logits);
    if (f >= 0) lat[f] = t1 - t0;
  }
  cell_alloc_get_stats(&after);
  if (rc == 0 && lat) {
    qsort(lat, (size_t)steps, sizeof *lat, by_value);
    double p50 = lat[steps / 2], p99 = lat[(steps * 99) / 100], mx = lat[steps - 1];
    unsigned long long os = after.n_os - before.n_os, hits = after.n_alloc - before.n_alloc;
    printf("steps: %ld at batch 1, %d thread%s, after %d warm-up steps\n", steps, threads,
           threads == 1 ? "" : "s", WARMUP);
    printf("latency per step: p50 %.2f us, p99 %.2f us, max %.2f us\n", p50, p99, mx);
    printf("allocations after warm-up: %llu reached the OS, %llu served from the cache "
           "(%.1f per step); %lld bytes more in use at the end\n",
           os, hits, (double)hits / (double)steps,
           (long long)after.in_use - (long long)before.in_use);
    printf("prediction at the last step: class %d of %lld\n", last + 1, n_out);
    double noise = spin_overruns(p50, steps);
    printf("machine noise: %.2f%% of %ld busy waits of %.2f us took over twice as long "
           "(above 1%%, p99 measures the machine, not the model)\n", noise, steps, p50);
    printf("embed_c_p50 %.3f us\nembed_c_p99 %.3f us\nembed_c_os_allocs_per_step %.4f count\n",
           p50, p99, (double)os / (double)steps);
    printf("embed_spin_overrun_pct %.3f pct\n", noise);
  } else if (!lat) {
    fprintf(stderr, "game_loop: out of memory for %ld latencies\n", steps);
    rc = 1;
  }
  free(lat);
  cell_tensor_release(x);
  free(pixels); /* after the last tensor over it is released */
  free_model(&m);
  return rc;
}
