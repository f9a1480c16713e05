/* tensor.c - storage lifetime, tensor creation and accessors. */
#include "tensor.h"
#include "alloc.h"
#include <stdio.h>
#include <stdlib.h>

int64_t cell_shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

void cell_contig_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    stride[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
}

bool cell_shape_equal(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

const char *cell_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t pos = 0;
  pos += (size_t)snprintf(buf + pos, n - pos, "[");
  for (int i = 0; i < ndim && pos < n; i++)
    pos += (size_t)snprintf(buf + pos, n - pos, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (pos < n) snprintf(buf + pos, n - pos, "]");
  return buf;
}

cell_status cell_check_shape(const char *op, int ndim, const int64_t *shape) {
  return cell_shape_numel_checked(op, ndim, shape, NULL);
}

cell_status cell_check_dim(const char *op, int dim, int ndim) {
  if (dim < 0 || dim >= (ndim ? ndim : 1))
    return cell_error(CELL_ERR_INDEX, "%s: dimension %d out of range for a %d-D tensor", op, dim,
                      ndim);
  return CELL_OK;
}

cell_status cell_broadcast_shapes(const char *op, int na, const int64_t *a, int nb,
                                  const int64_t *b, int *nout, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      char ba[256], bb[256];
      return cell_error(CELL_ERR_VALUE, "%s: shapes %s and %s cannot be broadcast", op,
                        cell_shape_str(na, a, ba, sizeof ba), cell_shape_str(nb, b, bb, sizeof bb));
    }
    out[i] = sa == 1 ? sb : sa;
  }
  CELL_TRY(cell_shape_numel_checked(op, n, out, NULL));
  *nout = n;
  return CELL_OK;
}

static cell_tensor *header_alloc(void) {
  cell_tensor *t = cell_alloc(sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->refcount = 1;
  return t;
}

static void storage_release(cell_storage *s) {
  if (!s || --s->refcount > 0) return;
  if (s->device > 0) {
    cell_device_free(s->device, s->data, s->nbytes);
  } else if (s->external) {
    if (s->release) s->release(s->release_ctx, s->data);
  } else if (!s->inline_data) {
    cell_dealloc(s->data);
  }
  cell_dealloc(s);
}

_Static_assert(sizeof(cell_storage) <= CELL_STORAGE_HEADER, "storage header");

/* A tensor header over storage s (whose data the caller set), with
 * contiguous geometry; NULL when out of memory. */
static cell_tensor *tensor_over(cell_storage *s, size_t nbytes, cell_dtype dt, int ndim,
                                const int64_t *shape) {
  cell_tensor *t = header_alloc();
  if (!t) return NULL;
  s->refcount = 1;
  s->nbytes = nbytes;
  t->storage = s;
  t->dtype = dt;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  cell_contig_strides(ndim, shape, t->stride);
  return t;
}

cell_status cell_tensor_new_contig(cell_dtype dt, int ndim, const int64_t *shape,
                                   cell_tensor **out) {
  if (!out) return cell_error(CELL_ERR_VALUE, "tensor: NULL output");
  if ((unsigned)dt >= CELL_DTYPE_COUNT)
    return cell_error(CELL_ERR_TYPE, "tensor: unknown dtype %d", (int)dt);
  int64_t numel;
  CELL_TRY(cell_shape_numel_checked("tensor", ndim, shape, &numel));
  /* numel <= CELL_MAX_NUMEL, so the byte count cannot overflow; a count
   * the allocator cannot serve is a MemoryError below. */
  size_t nbytes = (size_t)numel * (size_t)cell_dtype_size(dt);
  int dev = cell_device_current();
  cell_storage *s;
  if (dev > 0) { /* a kernel of another device runs: its memory */
    s = cell_alloc(sizeof *s);
    if (s) {
      memset(s, 0, sizeof *s);
      s->data = cell_device_alloc(dev, nbytes);
      if (s->data) {
        s->device = dev;
      } else {
        cell_dealloc(s);
        s = NULL;
      }
    }
  } else {
    /* One block holds the storage header and the data, 64-byte aligned. */
    s = cell_alloc(CELL_STORAGE_HEADER + nbytes);
    if (s) {
      memset(s, 0, sizeof *s);
      s->data = (char *)s + CELL_STORAGE_HEADER;
      s->inline_data = true;
    }
  }
  cell_tensor *t = s ? tensor_over(s, nbytes, dt, ndim, shape) : NULL;
  if (!t) {
    if (s && s->device > 0) cell_device_free(dev, s->data, nbytes);
    cell_dealloc(s);
    char b[256];
    return cell_error(CELL_ERR_MEMORY, "tensor: out of memory allocating %zu bytes for shape %s",
                      nbytes, cell_shape_str(ndim, shape, b, sizeof b));
  }
  *out = t;
  return CELL_OK;
}

cell_status cell_tensor_new_view(const cell_tensor *src, int ndim, const int64_t *shape,
                                 const int64_t *stride, int64_t offset, cell_tensor **out) {
  CELL_TRY(cell_shape_numel_checked("view", ndim, shape, NULL));
  cell_tensor *t = header_alloc();
  if (!t) return cell_error(CELL_ERR_MEMORY, "tensor: out of memory allocating a view");
  t->dtype = src->dtype;
  t->ndim = ndim;
  t->offset = offset;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->stride[i] = stride[i];
  }
  t->storage = src->storage;
  t->storage->refcount++;
  *out = t;
  return CELL_OK;
}

cell_status cell_tensor_empty(cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  if (!out || (ndim > 0 && !shape)) return cell_error(CELL_ERR_VALUE, "empty: NULL argument");
  return cell_tensor_new_contig(dt, ndim, shape, out);
}

cell_status cell_tensor_wrap(void *data, cell_dtype dt, int ndim, const int64_t *shape,
                             const int64_t *strides, void (*release)(void *, void *), void *ctx,
                             cell_tensor **out) {
  if (!data || !out || (ndim > 0 && !shape))
    return cell_error(CELL_ERR_VALUE, "wrap: NULL data, shape or output");
  if ((unsigned)dt >= CELL_DTYPE_COUNT)
    return cell_error(CELL_ERR_TYPE, "wrap: unknown dtype %d", (int)dt);
  int64_t span;
  CELL_TRY(cell_shape_numel_checked("wrap", ndim, shape, &span));
  /* With strides, the elements they reach (1 + the sum of (size - 1) *
   * |stride|), checked like an element count; an empty tensor reaches none. */
  if (strides && span > 0) {
    span = 1;
    for (int i = 0; i < ndim; i++) {
      int64_t reach;
      if (strides[i] == INT64_MIN ||
          !cell_size_mul(shape[i] - 1, strides[i] < 0 ? -strides[i] : strides[i], &reach) ||
          !cell_size_add(span, reach, &span)) {
        char b[400], c[400];
        return cell_error(CELL_ERR_VALUE, "wrap: strides %s over shape %s reach too far",
                          cell_shape_str(ndim, strides, c, sizeof c),
                          cell_shape_str(ndim, shape, b, sizeof b));
      }
    }
  }
  cell_storage *s = cell_alloc(sizeof *s);
  if (s) memset(s, 0, sizeof *s);
  cell_tensor *t = s ? tensor_over(s, 0, dt, ndim, shape) : NULL;
  if (!t) {
    cell_dealloc(s);
    return cell_error(CELL_ERR_MEMORY, "wrap: out of memory");
  }
  s->data = data;
  s->external = true;
  s->release = release;
  s->release_ctx = ctx;
  if (strides)
    for (int i = 0; i < ndim; i++) t->stride[i] = strides[i];
  s->nbytes = (size_t)span * (size_t)cell_dtype_size(dt);
  *out = t;
  return CELL_OK;
}

void cell_tensor_retain(cell_tensor *t) {
  if (t) t->refcount++;
}

void cell_tensor_release(cell_tensor *t) {
  if (!t || --t->refcount > 0) return;
  if (t->autograd) (*(void (**)(cell_tensor *))t->autograd)(t);
  storage_release(t->storage);
  cell_dealloc(t);
}

int cell_tensor_ndim(const cell_tensor *t) { return t ? t->ndim : 0; }
long long cell_tensor_dim(const cell_tensor *t, int d) {
  return t && d >= 0 && d < t->ndim ? t->shape[d] : 0;
}
long long cell_tensor_stride_of(const cell_tensor *t, int d) {
  return t && d >= 0 && d < t->ndim ? t->stride[d] : 0;
}
long long cell_tensor_numel(const cell_tensor *t) {
  return t ? cell_shape_numel(t->ndim, t->shape) : 0;
}
cell_dtype cell_tensor_dtype(const cell_tensor *t) { return t ? t->dtype : CELL_DTYPE_COUNT; }
const int64_t *cell_tensor_shape(const cell_tensor *t) { return t ? t->shape : NULL; }
const int64_t *cell_tensor_strides(const cell_tensor *t) { return t ? t->stride : NULL; }
size_t cell_tensor_nbytes(const cell_tensor *t) {
  return t ? (size_t)cell_tensor_numel(t) * (size_t)cell_dtype_size(t->dtype) : 0;
}
void *cell_tensor_data_ptr(const cell_tensor *t) { return t ? cell_tensor_base(t) : NULL; }
unsigned cell_tensor_version(const cell_tensor *t) { return t ? t->storage->version : 0; }

int cell_tensor_is_contiguous(const cell_tensor *t) {
  if (!t) return 0;
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] == 1) continue;
    if (t->stride[i] != s) return 0;
    s *= t->shape[i];
  }
  return 1;
}

static cell_status element_ptr(const cell_tensor *t, const int64_t *idx, char **p) {
  if (!t || (t->ndim && !idx)) return cell_error(CELL_ERR_VALUE, "get: NULL argument");
  int64_t off = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (idx[i] < 0 || idx[i] >= t->shape[i])
      return cell_error(CELL_ERR_INDEX,
                        "index %lld is out of bounds for dimension %d with size %lld",
                        (long long)idx[i], i, (long long)t->shape[i]);
    off += idx[i] * t->stride[i];
  }
  *p = cell_tensor_base(t) + off * cell_dtype_size(t->dtype);
  return CELL_OK;
}

cell_status cell_tensor_get(const cell_tensor *t, const int64_t *idx, double *out) {
  char *p;
  if (!out) return cell_error(CELL_ERR_VALUE, "get: NULL argument");
  CELL_TRY(element_ptr(t, idx, &p));
  if (t->storage->device > 0) {
    char buf[16];
    CELL_TRY(cell_device_read(t, p, buf, (size_t)cell_dtype_size(t->dtype)));
    p = buf;
    *out = cell_load_f64(t->dtype, p);
    return CELL_OK;
  }
  *out = cell_load_f64(t->dtype, p);
  return CELL_OK;
}

cell_status cell_tensor_set(cell_tensor *t, const int64_t *idx, double v) {
  char *p;
  CELL_TRY(element_ptr(t, idx, &p));
  if (t->storage->device > 0) {
    char buf[16];
    cell_store_f64(t->dtype, buf, v);
    CELL_TRY(cell_device_write(t, p, buf, (size_t)cell_dtype_size(t->dtype)));
  } else {
    cell_store_f64(t->dtype, p, v);
  }
  cell_tensor_bump(t);
  return CELL_OK;
}

static cell_status single(const cell_tensor *t, char **p) {
  if (!t) return cell_error(CELL_ERR_VALUE, "item: NULL tensor");
  if (cell_tensor_numel(t) != 1) {
    char b[256];
    return cell_error(CELL_ERR_VALUE,
                      "item: only a tensor with one element can be converted to a number, "
                      "got shape %s",
                      cell_shape_str(t->ndim, t->shape, b, sizeof b));
  }
  *p = cell_tensor_base(t);
  return CELL_OK;
}

cell_status cell_tensor_item(const cell_tensor *t, double *out) {
  char *p;
  if (!out) return cell_error(CELL_ERR_VALUE, "item: NULL argument");
  CELL_TRY(single(t, &p));
  char buf[16];
  if (t->storage->device > 0) {
    CELL_TRY(cell_device_read(t, p, buf, (size_t)cell_dtype_size(t->dtype)));
    p = buf;
  }
  *out = cell_load_f64(t->dtype, p);
  return CELL_OK;
}

cell_status cell_tensor_item_i64(const cell_tensor *t, int64_t *out) {
  char *p;
  if (!out) return cell_error(CELL_ERR_VALUE, "item: NULL argument");
  CELL_TRY(single(t, &p));
  char buf[16];
  if (t->storage->device > 0) {
    CELL_TRY(cell_device_read(t, p, buf, (size_t)cell_dtype_size(t->dtype)));
    p = buf;
  }
  *out = cell_load_i64(t->dtype, p);
  return CELL_OK;
}

cell_status cell_release4(cell_status s, cell_tensor *a, cell_tensor *b, cell_tensor *c,
                          cell_tensor *d) {
  cell_tensor_release(a);
  cell_tensor_release(b);
  cell_tensor_release(c);
  cell_tensor_release(d);
  return s;
}

/* cell_tensor_owned_bytes is in src/autograd/inplace.c: a view holds its
 * base, which the count must know. */
