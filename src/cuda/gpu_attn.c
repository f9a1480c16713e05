/* gpu_attn.c - the GPU table's sdpa rows (scaled dot-product attention,
 * forward and backward; causal or not): q {..., L, E}, k {..., S, E},
 * v {..., S, Ev} of one float dtype (float32, float64), any layout
 * (gathered first). An attn_mask tensor is declined by supports_op and
 * dropout of the weights (p > 0) by the kernel: NotImplementedError. The
 * output and the log-sum-exp of each row (float64 {..., L}) are the CPU's;
 * the backward recomputes the weights from them. Kernels: gpu_attn.cu. */
#include "gpu.h"
#include "gpu_kern.h"
#include "gpu_nn.h"
#include <string.h>

#define OP "scaled_dot_product_attention"

typedef struct {
  int64_t H, L, S, E, Ev;
} attn_geom;

static cell_status attn_check(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                              const cell_tensor *mask, const cell_sdpa_args *a, attn_geom *g) {
  if (!q || !k || !v || !a) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", OP);
  if (mask) return cell_error(CELL_ERR_NOTIMPL, "%s with attn_mask is not supported on device GPU", OP);
  if (!(a->p >= 0 && a->p < 1))
    return cell_error(CELL_ERR_VALUE, "%s: dropout_p must lie in [0, 1), got %g", OP, a->p);
  if (a->p > 0) return cell_error(CELL_ERR_NOTIMPL, "%s with dropout_p > 0 is not supported on device GPU", OP);
  if ((q->dtype != CELL_DTYPE_F32 && q->dtype != CELL_DTYPE_F64) || k->dtype != q->dtype || v->dtype != q->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: query, key and value must share a dtype (float32 or float64 on device GPU), "
                                     "got %s, %s, %s",
                      OP, cell_dtype_name(q->dtype), cell_dtype_name(k->dtype), cell_dtype_name(v->dtype));
  if (q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
    return cell_error(CELL_ERR_VALUE,
                      "%s: query, key and value must have the same number of dimensions, at least 2 ({..., L, E}, "
                      "{..., S, E}, {..., S, Ev}), got %d, %d, %d",
                      OP, q->ndim, k->ndim, v->ndim);
  int nd = q->ndim;
  g->H = 1;
  for (int d = 0; d < nd - 2; d++) {
    if (k->shape[d] != q->shape[d] || v->shape[d] != q->shape[d])
      return cell_error(CELL_ERR_VALUE,
                        "%s: query, key and value must share their leading dimensions; dimension %d is %lld, %lld, %lld",
                        OP, d + 1, (long long)q->shape[d], (long long)k->shape[d], (long long)v->shape[d]);
    g->H *= q->shape[d];
  }
  if (k->shape[nd - 1] != q->shape[nd - 1])
    return cell_error(CELL_ERR_VALUE, "%s: key's last dimension (%lld) must equal query's (%lld)", OP,
                      (long long)k->shape[nd - 1], (long long)q->shape[nd - 1]);
  if (v->shape[nd - 2] != k->shape[nd - 2])
    return cell_error(CELL_ERR_VALUE, "%s: value's sequence length (%lld) must equal key's (%lld)", OP,
                      (long long)v->shape[nd - 2], (long long)k->shape[nd - 2]);
  g->L = q->shape[nd - 2];
  g->S = k->shape[nd - 2];
  g->E = q->shape[nd - 1];
  g->Ev = v->shape[nd - 1];
  return CELL_OK;
}

static void release_all(cell_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i]) cell_tensor_release(ts[i]);
}

/* A float64 scratch tensor of n elements (at least one). */
static cell_status scratch(gpu_ctx *g, int64_t n, cell_tensor **out) {
  if (n < 1) n = 1;
  return gpu_new_tensor(g, CELL_DTYPE_F64, 1, &n, out);
}

cell_status gpu_sdpa(const cell_tensor *q, const cell_tensor *k, const cell_tensor *v, const cell_tensor *mask,
                     cell_sdpa_args *a, cell_tensor **out, cell_tensor **lse) {
  if (!out) return cell_error(CELL_ERR_VALUE, "%s: NULL argument", OP);
  attn_geom ge;
  CELL_TRY(attn_check(q, k, v, mask, a, &ge));
  gpu_ctx *g = gpu_ctx_of(q);
  int nd = q->ndim;
  int64_t oshape[CELL_MAX_DIMS];
  memcpy(oshape, q->shape, sizeof(int64_t) * (size_t)nd);
  oshape[nd - 1] = ge.Ev;
  cell_tensor *t[6] = {NULL}; /* q, k, v, P; out, lse */
  cell_status s = gpu_contig_as(q, q->dtype, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(k, q->dtype, &t[1]);
  if (s == CELL_OK) s = gpu_contig_as(v, q->dtype, &t[2]);
  if (s == CELL_OK) s = scratch(g, ge.H * ge.L * ge.S, &t[3]);
  if (s == CELL_OK) s = gpu_new_tensor(g, q->dtype, nd, oshape, &t[4]);
  if (s == CELL_OK) s = gpu_new_tensor(g, CELL_DTYPE_F64, nd - 1, q->shape, &t[5]);
  if (s == CELL_OK) {
    int e = gpuk_sdpa(g->stream, (int)q->dtype, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2]), gpu_data(t[4]),
                      gpu_data(t[5]), gpu_data(t[3]), ge.H, ge.L, ge.S, ge.E, ge.Ev, a->scale, a->causal != 0);
    if (e) s = gpu_cuda_error((cudaError_t)e, OP);
  }
  if (s != CELL_OK) {
    release_all(t, 6);
    return s;
  }
  release_all(t, 4);
  *out = t[4];
  if (lse) *lse = t[5];
  else cell_tensor_release(t[5]);
  return CELL_OK;
}

cell_status gpu_sdpa_backward(const cell_tensor *gy, const cell_tensor *q, const cell_tensor *k, const cell_tensor *v,
                              const cell_tensor *mask, const cell_tensor *o, const cell_tensor *lse,
                              const cell_sdpa_args *a, cell_tensor **gq, cell_tensor **gk, cell_tensor **gv,
                              cell_tensor **gm) {
  attn_geom ge;
  CELL_TRY(attn_check(q, k, v, mask, a, &ge));
  if (!gy || !o || !lse) return cell_error(CELL_ERR_VALUE, "%s backward: NULL argument", OP);
  int64_t rows = ge.H * ge.L, n = 1, m = 1;
  for (int d = 0; d < gy->ndim; d++) n *= gy->shape[d];
  for (int d = 0; d < lse->ndim; d++) m *= lse->shape[d];
  if (n != rows * ge.Ev || m != rows)
    return cell_error(CELL_ERR_RUNTIME, "%s backward: the gradient or the saved statistics do not match the inputs", OP);
  if (gm) *gm = NULL; /* no mask, no mask gradient */
  gpu_ctx *g = gpu_ctx_of(q);
  cell_tensor *t[12] = {NULL}; /* g, q, k, v, o, lse, D, P, dS; gq, gk, gv */
  cell_dtype dt = q->dtype;
  cell_status s = gpu_contig_as(gy, dt, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(q, dt, &t[1]);
  if (s == CELL_OK) s = gpu_contig_as(k, dt, &t[2]);
  if (s == CELL_OK) s = gpu_contig_as(v, dt, &t[3]);
  if (s == CELL_OK) s = gpu_contig_as(o, dt, &t[4]);
  if (s == CELL_OK) s = gpu_contig_as(lse, CELL_DTYPE_F64, &t[5]);
  if (s == CELL_OK) s = scratch(g, rows, &t[6]);
  if (s == CELL_OK) s = scratch(g, rows * ge.S, &t[7]);
  if (s == CELL_OK) s = scratch(g, rows * ge.S, &t[8]);
  if (s == CELL_OK && gq) s = gpu_new_tensor(g, dt, q->ndim, q->shape, &t[9]);
  if (s == CELL_OK && gk) s = gpu_new_tensor(g, dt, k->ndim, k->shape, &t[10]);
  if (s == CELL_OK && gv) s = gpu_new_tensor(g, dt, v->ndim, v->shape, &t[11]);
  if (s == CELL_OK) {
    int e = gpuk_sdpa_backward(g->stream, (int)dt, gpu_data(t[0]), gpu_data(t[1]), gpu_data(t[2]), gpu_data(t[3]),
                               gpu_data(t[4]), gpu_data(t[5]), gpu_data(t[6]), gpu_data(t[7]), gpu_data(t[8]),
                               t[9] ? gpu_data(t[9]) : NULL, t[10] ? gpu_data(t[10]) : NULL,
                               t[11] ? gpu_data(t[11]) : NULL, ge.H, ge.L, ge.S, ge.E, ge.Ev, a->scale, a->causal != 0);
    if (e) s = gpu_cuda_error((cudaError_t)e, OP " backward");
  }
  if (s != CELL_OK) {
    release_all(t, 12);
    return s;
  }
  release_all(t, 9);
  if (gq) *gq = t[9];
  if (gk) *gk = t[10];
  if (gv) *gv = t[11];
  return CELL_OK;
}
