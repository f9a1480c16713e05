/* format.c - cell_tensor_format: MindSpore's repr, laid out as NumPy does.
 *
 *   Tensor(shape=[2, 2], dtype=Float32, value=
 *   [[1.0000, 2.0000],
 *    [3.0000, 4.0000]])
 *   Tensor(shape=[3], dtype=Int64, value= [4, 5, 6])
 *
 * A newline precedes the values of two or more dimensions, a space those
 * of one or none, as MindSpore's repr does.
 *
 * Floats print with "%.4f" when every finite non-zero |v| lies in
 * [1e-4, 1e8), else with "%.4e"; nan and infinities as "nan", "inf",
 * "-inf". Integers print as %lld, bools as true / false. Entries are
 * right-aligned to one width. Rows of a matrix are separated by ",\n",
 * blocks of higher dimensions by one more newline per dimension, and every
 * line is indented by its bracket depth. Above 1000 elements, dimensions
 * longer than 6 show their first and last 3 entries around "...". */
#include "tensor.h"
#include <stdio.h>
#include <stdlib.h>

#define SUMMARY_THRESHOLD 1000
#define EDGE_ITEMS 3

typedef struct {
  char *p;
  size_t len, cap;
  int failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->len + n + 1 > cap) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_repeat(sbuf *b, char c, int n) {
  char tmp[64];
  while (n > 0) {
    int k = n < (int)sizeof tmp ? n : (int)sizeof tmp;
    memset(tmp, c, (size_t)k);
    sb_put(b, tmp, (size_t)k);
    n -= k;
  }
}

enum { PASS_SCAN, PASS_WIDTH, PASS_EMIT };

typedef struct {
  const cell_tensor *t;
  const char *base;
  int es;
  int kind;        /* 0 float, 1 integer, 2 bool */
  int summarise;
  int use_exp;     /* floats: "%.4e" rather than "%.4f" */
  int width;
  int pass;
  sbuf *out;
} fmt_state;

/* One element, unpadded, into buf. */
static void format_elem(const fmt_state *st, const char *p, char *buf, size_t n) {
  if (st->kind == 2) {
    snprintf(buf, n, "%s", cell_load_i64(st->t->dtype, p) ? "true" : "false");
  } else if (st->kind == 1) {
    snprintf(buf, n, "%lld", (long long)cell_load_i64(st->t->dtype, p));
  } else {
    double v = cell_load_f64(st->t->dtype, p);
    if (isnan(v))
      snprintf(buf, n, "nan");
    else if (isinf(v))
      snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else
      snprintf(buf, n, st->use_exp ? "%.4e" : "%.4f", v);
  }
}

static void visit_elem(fmt_state *st, const char *p) {
  if (st->pass == PASS_SCAN) {
    if (st->kind != 0) return;
    double v = fabs(cell_load_f64(st->t->dtype, p));
    if (isfinite(v) && v != 0 && (v < 1e-4 || v >= 1e8)) st->use_exp = 1;
    return;
  }
  char buf[64];
  format_elem(st, p, buf, sizeof buf);
  int len = (int)strlen(buf);
  if (st->pass == PASS_WIDTH) {
    if (len > st->width) st->width = len;
  } else {
    sb_repeat(st->out, ' ', st->width - len);
    sb_put(st->out, buf, (size_t)len);
  }
}

/* The separator after an entry of dimension d: ", " in the last dimension,
 * else "," then ndim - d - 1 newlines and an indent of d + 1. */
static void emit_sep(fmt_state *st, int d) {
  int nd = st->t->ndim;
  if (d == nd - 1) {
    sb_puts(st->out, ", ");
  } else {
    sb_puts(st->out, ",");
    sb_repeat(st->out, '\n', nd - d - 1);
    sb_repeat(st->out, ' ', d + 1);
  }
}

static void visit(fmt_state *st, int d, int64_t off) {
  const cell_tensor *t = st->t;
  if (d == t->ndim) {
    visit_elem(st, st->base + off * st->es);
    return;
  }
  int64_t n = t->shape[d];
  int cut = st->summarise && n > 2 * EDGE_ITEMS;
  int emit = st->pass == PASS_EMIT;
  if (emit) sb_puts(st->out, "[");
  for (int64_t i = 0; i < n; i++) {
    if (cut && i == EDGE_ITEMS) {
      if (emit) {
        sb_puts(st->out, "...");
        emit_sep(st, d);
      }
      i = n - EDGE_ITEMS;
    }
    visit(st, d + 1, off + i * t->stride[d]);
    if (emit && i + 1 < n) emit_sep(st, d);
  }
  if (emit) sb_puts(st->out, "]");
}

static cell_status format_host(const cell_tensor *t, char **out) {
  sbuf b = {NULL, 0, 0, 0};
  char shape[CELL_MAX_DIMS * 24 + 8];
  char head[sizeof shape + 64];
  snprintf(head, sizeof head, "Tensor(shape=%s, dtype=%s, value=",
           cell_shape_str(t->ndim, t->shape, shape, sizeof shape), cell_dtype_name(t->dtype));
  sb_puts(&b, head);

  int64_t numel = cell_shape_numel(t->ndim, t->shape);
  fmt_state st = {t, cell_tensor_base(t), cell_dtype_size(t->dtype),
                  t->dtype == CELL_DTYPE_BOOL ? 2 : cell_dtype_is_float(t->dtype) ? 0 : 1,
                  numel > SUMMARY_THRESHOLD, 0, 0, PASS_SCAN, &b};
  if (t->ndim == 0) {
    st.pass = PASS_SCAN;
    visit(&st, 0, 0);
    char buf[64];
    format_elem(&st, st.base, buf, sizeof buf);
    sb_puts(&b, " ");
    sb_puts(&b, buf);
  } else if (numel == 0) {
    sb_puts(&b, t->ndim > 1 ? "\n[]" : " []");
  } else {
    for (st.pass = PASS_SCAN; st.pass < PASS_EMIT; st.pass++) visit(&st, 0, 0);
    sb_puts(&b, t->ndim > 1 ? "\n" : " "); /* MindSpore: a newline before a matrix, else a space */
    visit(&st, 0, 0);
  }
  sb_puts(&b, ")");
  if (b.failed) {
    free(b.p);
    return cell_error(CELL_ERR_MEMORY, "format: out of memory formatting a tensor of shape %s",
                      shape);
  }
  *out = b.p;
  return CELL_OK;
}

cell_status cell_tensor_format(const cell_tensor *t, char **out) {
  if (!t || !out) return cell_error(CELL_ERR_VALUE, "format: NULL argument");
  if (t->storage->device == 0) return format_host(t, out);
  cell_tensor *h; /* another device's memory: read through its copy functions */
  CELL_TRY(cell_tensor_move_to(t, 0, &h));
  cell_status s = format_host(h, out);
  cell_tensor_release(h);
  return s;
}
