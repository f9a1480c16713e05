/* data_pipeline.c - cell_data_pipeline (include/cell_data.h): rows of
 * in-memory columns through per-sample transforms into samples or
 * batches, produced by worker threads into a bounded ring of slots and
 * handed out in order. */
#include "cell_data.h"
#include "io.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_COLS 64
#define MAX_OPS 32
#define MAX_WORKERS 64
#define MSG 640

typedef struct slot {
  cell_tensor **t; /* ncols outputs */
  cell_status st;
  char msg[MSG];
  int ready;
} slot;

struct cell_data_pipeline {
  int ncols;
  cell_tensor **cols; /* CPU, contiguous */
  char **names;
  size_t *rowbytes;
  int64_t rows;
  const cell_sample_op **ops; /* ncols * MAX_OPS */
  int *nops;
  /* the epoch */
  int running;
  int64_t *order, n, batch, nout;
  int drop;
  uint64_t seed;
  int nworkers, prefetch;
  pthread_t threads[MAX_WORKERS];
  slot *slots;
  int nslots;
  int64_t claim, emit;
  int stop;
  pthread_mutex_t mu;
  pthread_cond_t ready_cv, space_cv;
  uint64_t wait_ns;
  int64_t waited_outputs;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t op_seed(uint64_t seed, int col, int k) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(col * MAX_OPS + k + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void release_all(cell_tensor **t, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    cell_tensor_release(t[i]);
    t[i] = NULL;
  }
}

/* Sample i of the epoch (0-based position), column c, through its ops. */
static cell_status make_sample(cell_data_pipeline *p, int64_t i, int c, cell_tensor **out, char *msg) {
  const cell_tensor *col = p->cols[c];
  int nd = cell_tensor_ndim(col) - 1;
  cell_tensor *t = NULL;
  cell_status s = cell_tensor_empty(cell_tensor_dtype(col), nd, cell_tensor_shape(col) + 1, &t);
  if (s != CELL_OK) {
    snprintf(msg, MSG, "map: sample %lld column '%s': %s", (long long)(i + 1), p->names[c], cell_last_error());
    return s;
  }
  if (p->rowbytes[c])
    memcpy(cell_tensor_data_ptr(t), (const char *)cell_tensor_data_ptr(col) + (size_t)p->order[i] * p->rowbytes[c],
           p->rowbytes[c]);
  for (int k = 0; k < p->nops[c]; k++) {
    const cell_sample_op *op = p->ops[c * MAX_OPS + k];
    char err[512] = "";
    cell_tensor *o = NULL;
    s = op->apply(op, t, &o, op_seed(p->seed, c, k), (uint64_t)i, err, sizeof err);
    if (s == CELL_OK && !o) {
      s = CELL_ERR_RUNTIME;
      snprintf(err, sizeof err, "%s: gave no tensor", op->name ? op->name : "transform");
    }
    if (s == CELL_OK && (cell_tensor_device(o) != 0 || !cell_tensor_is_contiguous(o))) {
      cell_tensor *h = NULL, *h2 = NULL;
      s = cell_tensor_move_to(o, 0, &h);
      if (s == CELL_OK) s = cell_tensor_contiguous(h, &h2);
      cell_tensor_release(h);
      cell_tensor_release(o);
      o = h2;
      if (s != CELL_OK) snprintf(err, sizeof err, "%s", cell_last_error());
    }
    cell_tensor_release(t);
    t = NULL;
    if (s != CELL_OK) {
      cell_tensor_release(o);
      snprintf(msg, MSG, "map: sample %lld column '%s': %s", (long long)(i + 1), p->names[c],
               err[0] ? err : (op->name ? op->name : "transform"));
      return s;
    }
    t = o;
  }
  *out = t;
  return CELL_OK;
}

/* Whether two samples have one shape and dtype. */
static int same_layout(const cell_tensor *a, const cell_tensor *b) {
  int n = cell_tensor_ndim(a);
  if (n != cell_tensor_ndim(b) || cell_tensor_dtype(a) != cell_tensor_dtype(b)) return 0;
  const int64_t *sa = cell_tensor_shape(a), *sb = cell_tensor_shape(b);
  for (int d = 0; d < n; d++)
    if (sa[d] != sb[d]) return 0;
  return 1;
}

/* Output k into s (its tensors, or a status and message). */
static void produce(cell_data_pipeline *p, int64_t k, slot *s) {
  s->st = CELL_OK;
  s->msg[0] = 0;
  int nc = p->ncols;
  if (p->batch == 0) {
    for (int c = 0; c < nc; c++) {
      s->st = make_sample(p, k, c, &s->t[c], s->msg);
      if (s->st != CELL_OK) {
        release_all(s->t, c);
        return;
      }
    }
    return;
  }
  int64_t first = k * p->batch, count = p->n - first < p->batch ? p->n - first : p->batch;
  cell_tensor **tmp = calloc((size_t)count, sizeof *tmp);
  if (!tmp) {
    s->st = CELL_ERR_MEMORY;
    snprintf(s->msg, MSG, "batch: out of memory");
    return;
  }
  int done_cols = 0;
  for (int c = 0; c < nc && s->st == CELL_OK; c++) {
    int64_t made = 0;
    for (; made < count; made++) {
      s->st = make_sample(p, first + made, c, &tmp[made], s->msg);
      if (s->st != CELL_OK) break;
    }
    if (s->st == CELL_OK) {
      /* The samples must agree. The odd one out is named: the first that
       * differs from sample 1, or sample 1 itself when 2 and 3 agree
       * against it. */
      int64_t ref = 0;
      if (count >= 3 && !same_layout(tmp[0], tmp[1]) && same_layout(tmp[1], tmp[2])) ref = 1;
      for (int64_t j = 0; j < count; j++) {
        if (same_layout(tmp[j], tmp[ref])) continue;
        const cell_tensor *a = tmp[ref], *b = tmp[j];
        if (cell_tensor_dtype(a) != cell_tensor_dtype(b)) {
          snprintf(s->msg, MSG, "batch: sample %lld column '%s' has dtype %s, expected %s", (long long)(first + j + 1),
                   p->names[c], cell_dtype_name(cell_tensor_dtype(b)), cell_dtype_name(cell_tensor_dtype(a)));
        } else {
          char x[200], y[200];
          cell_io_shape_tuple(cell_tensor_ndim(b), cell_tensor_shape(b), x, sizeof x);
          cell_io_shape_tuple(cell_tensor_ndim(a), cell_tensor_shape(a), y, sizeof y);
          snprintf(s->msg, MSG, "batch: sample %lld column '%s' has shape %s, expected %s", (long long)(first + j + 1),
                   p->names[c], x, y);
        }
        s->st = CELL_ERR_VALUE;
        break;
      }
    }
    if (s->st == CELL_OK) {
      int nd = cell_tensor_ndim(tmp[0]);
      int64_t shape[CELL_MAX_DIMS];
      if (nd + 1 > CELL_MAX_DIMS) {
        s->st = CELL_ERR_VALUE;
        snprintf(s->msg, MSG, "batch: column '%s' has %d dimensions, at most %d allowed", p->names[c], nd,
                 CELL_MAX_DIMS - 1);
      } else {
        shape[0] = count;
        memcpy(shape + 1, cell_tensor_shape(tmp[0]), sizeof(int64_t) * (size_t)nd);
        s->st = cell_tensor_empty(cell_tensor_dtype(tmp[0]), nd + 1, shape, &s->t[c]);
        if (s->st != CELL_OK) {
          snprintf(s->msg, MSG, "batch: %s", cell_last_error());
        } else {
          size_t b = cell_tensor_nbytes(tmp[0]);
          char *dst = cell_tensor_data_ptr(s->t[c]);
          for (int64_t j = 0; j < count; j++)
            if (b) memcpy(dst + (size_t)j * b, cell_tensor_data_ptr(tmp[j]), b);
          done_cols = c + 1;
        }
      }
    }
    release_all(tmp, made);
  }
  free(tmp);
  if (s->st != CELL_OK) release_all(s->t, done_cols);
}

static void *worker(void *arg) {
  cell_data_pipeline *p = arg;
  cell_grad_set_enabled(0);
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->claim < p->nout && p->claim - p->emit >= p->nslots) pthread_cond_wait(&p->space_cv, &p->mu);
    if (p->stop || p->claim >= p->nout) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    int64_t k = p->claim++;
    pthread_mutex_unlock(&p->mu);
    slot *s = &p->slots[k % p->nslots];
    produce(p, k, s);
    pthread_mutex_lock(&p->mu);
    s->ready = 1;
    pthread_cond_broadcast(&p->ready_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

static void stop_epoch(cell_data_pipeline *p) {
  if (!p->running) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->space_cv);
  pthread_cond_broadcast(&p->ready_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nworkers; i++) pthread_join(p->threads[i], NULL);
  for (int i = 0; i < p->nslots; i++) {
    if (p->slots[i].ready && p->slots[i].st == CELL_OK) release_all(p->slots[i].t, p->ncols);
    free(p->slots[i].t);
  }
  free(p->slots);
  p->slots = NULL;
  p->nslots = 0;
  free(p->order);
  p->order = NULL;
  p->nworkers = 0;
  p->running = 0;
}

cell_status cell_data_pipeline_new(int ncols, cell_tensor *const *columns, const char *const *names,
                                   cell_data_pipeline **out) {
  if (!columns || !names || !out) return cell_error(CELL_ERR_VALUE, "pipeline: NULL argument");
  if (ncols < 1 || ncols > MAX_COLS)
    return cell_error(CELL_ERR_VALUE, "pipeline: %d columns; between 1 and %d allowed", ncols, MAX_COLS);
  for (int c = 0; c < ncols; c++) {
    if (!columns[c] || !names[c]) return cell_error(CELL_ERR_VALUE, "pipeline: NULL argument");
    if (cell_tensor_ndim(columns[c]) < 1)
      return cell_error(CELL_ERR_VALUE, "pipeline: column '%s' is 0-D; its dimension 1 must index the samples",
                        names[c]);
    if (cell_tensor_dim(columns[c], 0) != cell_tensor_dim(columns[0], 0))
      return cell_error(CELL_ERR_VALUE, "pipeline: column '%s' has %lld rows but column '%s' has %lld", names[c],
                        cell_tensor_dim(columns[c], 0), names[0], cell_tensor_dim(columns[0], 0));
  }
  cell_data_pipeline *p = calloc(1, sizeof *p);
  if (!p) return cell_error(CELL_ERR_MEMORY, "pipeline: out of memory");
  p->ncols = ncols;
  p->rows = cell_tensor_dim(columns[0], 0);
  p->cols = calloc((size_t)ncols, sizeof *p->cols);
  p->names = calloc((size_t)ncols, sizeof *p->names);
  p->rowbytes = calloc((size_t)ncols, sizeof *p->rowbytes);
  p->ops = calloc((size_t)ncols * MAX_OPS, sizeof *p->ops);
  p->nops = calloc((size_t)ncols, sizeof *p->nops);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->ready_cv, NULL);
  pthread_cond_init(&p->space_cv, NULL);
  if (!p->cols || !p->names || !p->rowbytes || !p->ops || !p->nops) {
    cell_data_pipeline_free(p);
    return cell_error(CELL_ERR_MEMORY, "pipeline: out of memory");
  }
  for (int c = 0; c < ncols; c++) {
    cell_tensor *h = NULL;
    cell_status s = cell_tensor_move_to(columns[c], 0, &h);
    if (s == CELL_OK) s = cell_tensor_contiguous(h, &p->cols[c]);
    cell_tensor_release(h);
    p->names[c] = strdup(names[c]);
    if (s == CELL_OK && !p->names[c]) s = cell_error(CELL_ERR_MEMORY, "pipeline: out of memory");
    if (s != CELL_OK) {
      cell_data_pipeline_free(p);
      return s;
    }
    p->rowbytes[c] = p->rows ? cell_tensor_nbytes(p->cols[c]) / (size_t)p->rows : 0;
  }
  *out = p;
  return CELL_OK;
}

cell_status cell_data_pipeline_add_op(cell_data_pipeline *p, int col, const cell_sample_op *op) {
  if (!p || !op || !op->apply) return cell_error(CELL_ERR_VALUE, "pipeline: NULL argument");
  if (col < 0 || col >= p->ncols)
    return cell_error(CELL_ERR_INDEX, "pipeline: column %d out of range for %d columns", col, p->ncols);
  if (p->running) return cell_error(CELL_ERR_RUNTIME, "pipeline: an epoch is running; add transforms before it");
  if (p->nops[col] >= MAX_OPS)
    return cell_error(CELL_ERR_VALUE, "pipeline: column '%s' has %d transforms already, the most allowed",
                      p->names[col], MAX_OPS);
  p->ops[col * MAX_OPS + p->nops[col]++] = op;
  return CELL_OK;
}

cell_status cell_data_pipeline_start(cell_data_pipeline *p, const int64_t *order, int64_t n, int64_t batch_size,
                                     int drop_remainder, uint64_t seed, int num_workers, int prefetch) {
  if (!p || (!order && n > 0)) return cell_error(CELL_ERR_VALUE, "pipeline: NULL argument");
  if (n < 0) return cell_error(CELL_ERR_VALUE, "pipeline: %lld samples", (long long)n);
  if (batch_size < 0) return cell_error(CELL_ERR_VALUE, "pipeline: batch_size must not be negative, but got %lld",
                                        (long long)batch_size);
  if (num_workers < 0 || num_workers > MAX_WORKERS)
    return cell_error(CELL_ERR_VALUE, "pipeline: num_parallel_workers must be in [0, %d], but got %d", MAX_WORKERS,
                      num_workers);
  if (prefetch < 1) return cell_error(CELL_ERR_VALUE, "pipeline: prefetch must be positive, but got %d", prefetch);
  for (int64_t i = 0; i < n; i++)
    if (order[i] < 0 || order[i] >= p->rows)
      return cell_error(CELL_ERR_INDEX, "pipeline: sample %lld is row %lld, out of range for %lld rows",
                        (long long)(i + 1), (long long)order[i], (long long)p->rows);
  stop_epoch(p);
  int64_t *o = malloc(sizeof *o * (size_t)(n ? n : 1));
  int nslots = num_workers ? prefetch : 1;
  slot *slots = calloc((size_t)nslots, sizeof *slots);
  int ok = o && slots;
  for (int i = 0; ok && i < nslots; i++) ok = (slots[i].t = calloc((size_t)p->ncols, sizeof(cell_tensor *))) != NULL;
  if (!ok) {
    if (slots)
      for (int i = 0; i < nslots; i++) free(slots[i].t);
    free(slots);
    free(o);
    return cell_error(CELL_ERR_MEMORY, "pipeline: out of memory");
  }
  if (n) memcpy(o, order, sizeof *o * (size_t)n);
  p->order = o;
  p->n = n;
  p->batch = batch_size;
  p->drop = drop_remainder != 0;
  p->nout = batch_size == 0 ? n : (drop_remainder ? n / batch_size : (n + batch_size - 1) / batch_size);
  p->seed = seed;
  p->slots = slots;
  p->nslots = nslots;
  p->claim = p->emit = 0;
  p->stop = 0;
  p->prefetch = prefetch;
  p->running = 1;
  p->nworkers = 0;
  for (int i = 0; i < num_workers; i++) {
    if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
      stop_epoch(p);
      return cell_error(CELL_ERR_RUNTIME, "pipeline: could not start worker thread %d of %d", i + 1, num_workers);
    }
    p->nworkers = i + 1;
  }
  return CELL_OK;
}

cell_status cell_data_pipeline_next(cell_data_pipeline *p, cell_tensor **outs, int *done) {
  if (!p || !outs || !done) return cell_error(CELL_ERR_VALUE, "pipeline: NULL argument");
  if (!p->running) return cell_error(CELL_ERR_RUNTIME, "pipeline: no epoch started");
  if (p->emit >= p->nout) {
    *done = 1;
    return CELL_OK;
  }
  slot *s;
  cell_status st;
  char msg[MSG];
  if (p->nworkers == 0) {
    /* without workers the consumer makes the output: all of it is waiting for data */
    s = &p->slots[0];
    uint64_t t0 = now_ns();
    produce(p, p->emit, s);
    p->wait_ns += now_ns() - t0;
    p->emit++;
    st = s->st;
    if (st != CELL_OK) memcpy(msg, s->msg, MSG);
    else
      for (int c = 0; c < p->ncols; c++) {
        outs[c] = s->t[c];
        s->t[c] = NULL;
      }
  } else {
    pthread_mutex_lock(&p->mu);
    s = &p->slots[p->emit % p->nslots];
    if (!s->ready) {
      uint64_t t0 = now_ns();
      while (!s->ready) pthread_cond_wait(&p->ready_cv, &p->mu);
      p->wait_ns += now_ns() - t0;
    }
    /* take the slot's contents before it is freed for output emit + nslots */
    st = s->st;
    if (st != CELL_OK) memcpy(msg, s->msg, MSG);
    else
      for (int c = 0; c < p->ncols; c++) {
        outs[c] = s->t[c];
        s->t[c] = NULL;
      }
    s->ready = 0;
    p->emit++;
    if (st != CELL_OK) p->nout = p->emit; /* the epoch ends here: the workers stop claiming */
    pthread_cond_broadcast(&p->space_cv);
    pthread_mutex_unlock(&p->mu);
  }
  p->waited_outputs++;
  if (st != CELL_OK) {
    /* the epoch ends here (with workers, already set under the lock they read it under) */
    if (p->nworkers == 0) p->nout = p->emit;
    return cell_error(st, "%s", msg);
  }
  *done = 0;
  return CELL_OK;
}

int64_t cell_data_pipeline_length(const cell_data_pipeline *p) { return p && p->running ? p->nout : 0; }

uint64_t cell_data_pipeline_wait_ns(cell_data_pipeline *p, int reset, int64_t *outputs) {
  if (!p) return 0;
  pthread_mutex_lock(&p->mu);
  uint64_t w = p->wait_ns;
  if (outputs) *outputs = p->waited_outputs;
  if (reset) {
    p->wait_ns = 0;
    p->waited_outputs = 0;
  }
  pthread_mutex_unlock(&p->mu);
  return w;
}

void cell_data_pipeline_free(cell_data_pipeline *p) {
  if (!p) return;
  stop_epoch(p);
  for (int c = 0; c < p->ncols; c++) {
    if (p->cols) cell_tensor_release(p->cols[c]);
    if (p->names) free(p->names[c]);
  }
  free(p->cols);
  free(p->names);
  free(p->rowbytes);
  free(p->ops);
  free(p->nops);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->ready_cv);
  pthread_cond_destroy(&p->space_cv);
  free(p);
}
