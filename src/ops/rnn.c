/* rnn.c - the recurrent time loops (RNN tanh/ReLU, LSTM, GRU) of one
 * layer-direction, forward and backward through time (cell_rnn.h).
 *
 * Forward: one gemm projects the inputs of all steps at once; each step
 * runs one gemm for the hidden projection and one fused pass for the gates
 * and the state update. What the backward needs (activated gates, every
 * h and c, GRU's hidden n-part) goes to one workspace tensor. Backward:
 * per step one fused pass for the gate gradients and one gemm for the
 * gradient of h; then one gemm each for the input gradient and the two
 * weight gradients over all steps. */
#include "nn.h"
#include "kernels.h"
#include "kernel_list.h"
#include "../backend/backend.h"
#include "vmath.h"
#include "../core/alloc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The gate passes run on threads from this many gate values per step (a
 * value costs a few transcendentals: a sixteenth of the engine's grain). */
#define RNN_PARALLEL_MIN (CELL_PARALLEL_GRAIN / 16)

static const char *const mode_names[] = {"RNN_TANH", "RNN_RELU", "LSTM", "GRU"};

static int64_t rnn_gates(int mode) {
  return mode == CELL_RNN_LSTM ? 4 : mode == CELL_RNN_GRU ? 3 : 1;
}

/* C[m,n] = A[m,k] B[k,n], C contiguous. */
static cell_status rnn_gemm(cell_dtype dt, int64_t m, int64_t n, int64_t k, const void *a,
                            int64_t a_rs, int64_t a_cs, const void *b, int64_t b_rs, int64_t b_cs,
                            void *c) {
  cell_gemm g = {dt, m, n, k, (const char *)a, a_rs, a_cs, (const char *)b, b_rs, b_cs,
                 (char *)c, n, 1, 0};
  return cell_gemm_run(&g);
}

/* RVSIG(v, n) and RVTANH(y, v, n): sigmoid in place and tanh over a run
 * of the gates (LSTM, GRU) or of a tanh RNN's states: vmath.h's
 * float32-arithmetic vector code for float32 (within 3 ulp; the
 * double-arithmetic forms took 12% of an LSTM language model's step),
 * libm's for float64. */
#define R float
#define RT CELL_DTYPE_F32
#define SFX _f32
#define REXP expf
#define RTANH tanhf
#define RVSIG(v, n) cell_vm_sigmoid_fast_f32(v, v, n)
#define RVTANH(y, v, n) cell_vm_tanh_fast_f32(y, v, n)
#define RSIMD _Pragma("omp simd")
#include "rnn_impl.h"
#undef R
#undef RT
#undef SFX
#undef REXP
#undef RTANH
#undef RVSIG
#undef RVTANH
#undef RSIMD
#define R double
#define RSIMD
#define RT CELL_DTYPE_F64
#define SFX _f64
#define REXP exp
#define RTANH tanh
#define RVSIG(v, n) sig_run__f64(v, n)
#define RVTANH(y, v, n) tanh_run__f64(y, v, n)
#include "rnn_impl.h"
#undef R
#undef RT
#undef SFX
#undef REXP
#undef RTANH
#undef RVSIG
#undef RVTANH
#undef RSIMD

static cell_status check_shape(const char *what, const cell_tensor *t, int ndim, const int64_t *want,
                               cell_dtype dt) {
  char b1[128], b2[128];
  if (t->dtype != dt)
    return cell_error(CELL_ERR_TYPE, "rnn: %s must have the input's dtype %s, got %s", what,
                      cell_dtype_name(dt), cell_dtype_name(t->dtype));
  if (!cell_shape_equal(t->ndim, t->shape, ndim, want))
    return cell_error(CELL_ERR_VALUE, "rnn: %s must have shape %s, got %s", what,
                      cell_shape_str(ndim, want, b1, sizeof b1),
                      cell_shape_str(t->ndim, t->shape, b2, sizeof b2));
  return CELL_OK;
}

/* Contiguous copies (or new references) of the n tensors in dtype wd
 * (NULLs kept). */
static cell_status contig_all(int n, const cell_tensor *const *in, cell_dtype wd, cell_tensor **out) {
  for (int i = 0; i < n; i++) out[i] = NULL;
  for (int i = 0; i < n; i++) {
    if (!in[i]) continue;
    cell_status s = in[i]->dtype == wd ? cell_k_contiguous(in[i], &out[i])
                                       : cell_k_astype(in[i], wd, &out[i]);
    if (s != CELL_OK) {
      for (int j = 0; j < i; j++) cell_tensor_release(out[j]);
      return s;
    }
  }
  return CELL_OK;
}

static void release_all(int n, cell_tensor **t) {
  for (int i = 0; i < n; i++) cell_tensor_release(t[i]);
}

/* The lengths as int64 (a contiguous copy), checked to lie in 1..T. */
static cell_status lengths_of(const cell_tensor *lengths, int64_t T, int64_t B, cell_tensor **out) {
  *out = NULL;
  if (!lengths) return CELL_OK;
  char b1[128];
  if (!cell_dtype_is_int(lengths->dtype))
    return cell_error(CELL_ERR_TYPE, "rnn: seq_length must be an integer tensor, got %s",
                      cell_dtype_name(lengths->dtype));
  if (lengths->ndim != 1 || lengths->shape[0] != B)
    return cell_error(CELL_ERR_VALUE, "rnn: seq_length must have shape [%lld] (one length per "
                      "batch entry), got %s", (long long)B,
                      cell_shape_str(lengths->ndim, lengths->shape, b1, sizeof b1));
  CELL_TRY(cell_k_astype(lengths, CELL_DTYPE_I64, out));
  const int64_t *v = (const int64_t *)cell_tensor_base(*out);
  for (int64_t b = 0; b < B; b++)
    if (v[b] < 1 || v[b] > T) {
      cell_tensor_release(*out);
      *out = NULL;
      return cell_error(CELL_ERR_VALUE, "rnn: seq_length values must lie in 1..%lld (the "
                        "sequence length), got %lld at batch entry %lld", (long long)T,
                        (long long)v[b], (long long)(b + 1));
    }
  return CELL_OK;
}

cell_status cell_cpu_rnn_forward(int mode, const cell_tensor *x, const cell_tensor *h0,
                                 const cell_tensor *c0, const cell_tensor *w_ih,
                                 const cell_tensor *w_hh, const cell_tensor *b_ih,
                                 const cell_tensor *b_hh, const cell_tensor *lengths, int reverse,
                                 cell_tensor **out, cell_tensor **ws) {
  if (mode < 0 || mode >= CELL_RNN_MODE_COUNT)
    return cell_error(CELL_ERR_VALUE, "rnn: unknown mode %d", mode);
  if (!x || !h0 || !w_ih || !w_hh || !out || !ws)
    return cell_error(CELL_ERR_VALUE, "rnn: NULL argument");
  if ((b_ih == NULL) != (b_hh == NULL))
    return cell_error(CELL_ERR_VALUE, "rnn: b_ih and b_hh must be given both or neither");
  if ((mode == CELL_RNN_LSTM) != (c0 != NULL))
    return cell_error(CELL_ERR_VALUE, "rnn: c0 is %s for %s", c0 ? "not taken" : "required",
                      mode_names[mode]);
  cell_dtype dt = x->dtype;
  if (!cell_dtype_is_float(dt))
    return cell_error(CELL_ERR_TYPE, "rnn: the input must be a float tensor, got %s",
                      cell_dtype_name(dt));
  /* half precision computes in float32 */
  cell_dtype wd = dt == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
  char b1[128];
  if (x->ndim != 3)
    return cell_error(CELL_ERR_VALUE, "rnn: the input must be 3-D {T, B, input_size}, got shape %s",
                      cell_shape_str(x->ndim, x->shape, b1, sizeof b1));
  int64_t T = x->shape[0], B = x->shape[1], I = x->shape[2];
  if (T < 1 || B < 1 || I < 1)
    return cell_error(CELL_ERR_VALUE, "rnn: the input must not be empty, got shape %s",
                      cell_shape_str(x->ndim, x->shape, b1, sizeof b1));
  if (w_hh->ndim != 2)
    return cell_error(CELL_ERR_VALUE, "rnn: w_hh must be 2-D, got shape %s",
                      cell_shape_str(w_hh->ndim, w_hh->shape, b1, sizeof b1));
  int64_t H = w_hh->shape[1], G = rnn_gates(mode);
  int64_t sw_ih[2] = {G * H, I}, sw_hh[2] = {G * H, H}, sb[1] = {G * H}, sh[2] = {B, H};
  if (H < 1) return cell_error(CELL_ERR_VALUE, "rnn: hidden size must be positive");
  CELL_TRY(check_shape("w_ih", w_ih, 2, sw_ih, dt));
  CELL_TRY(check_shape("w_hh", w_hh, 2, sw_hh, dt));
  if (b_ih) CELL_TRY(check_shape("b_ih", b_ih, 1, sb, dt));
  if (b_hh) CELL_TRY(check_shape("b_hh", b_hh, 1, sb, dt));
  CELL_TRY(check_shape("h0", h0, 2, sh, dt));
  if (c0) CELL_TRY(check_shape("c0", c0, 2, sh, dt));
  cell_tensor *len = NULL, *c[7], *y = NULL, *w = NULL;
  CELL_TRY(lengths_of(lengths, T, B, &len));
  const cell_tensor *in[7] = {x, h0, c0, w_ih, w_hh, b_ih, b_hh};
  cell_status s = contig_all(7, in, wd, c);
  if (s != CELL_OK) {
    cell_tensor_release(len);
    return s;
  }
  int64_t ys[3] = {T + 2, B, H};
  int64_t wn[1] = {T * B * G * H + 2 * (T + 1) * B * H + T * B * H};
  s = cell_tensor_new_contig(wd, 3, ys, &y);
  if (s == CELL_OK) s = cell_tensor_new_contig(wd, 1, wn, &w);
  if (s == CELL_OK) {
    const int64_t *lv = len ? (const int64_t *)cell_tensor_base(len) : NULL;
#define P(T_, i) (c[i] ? (const T_ *)cell_tensor_base(c[i]) : NULL)
    if (wd == CELL_DTYPE_F32)
      s = rnn_fwd__f32(mode, T, B, I, H, P(float, 0), P(float, 1), P(float, 2), P(float, 3),
                       P(float, 4), P(float, 5), P(float, 6), lv, reverse,
                       (float *)cell_tensor_base(y), (float *)cell_tensor_base(w));
    else
      s = rnn_fwd__f64(mode, T, B, I, H, P(double, 0), P(double, 1), P(double, 2), P(double, 3),
                       P(double, 4), P(double, 5), P(double, 6), lv, reverse,
                       (double *)cell_tensor_base(y), (double *)cell_tensor_base(w));
#undef P
  }
  release_all(7, c);
  cell_tensor_release(len);
  if (s == CELL_OK && wd != dt) {
    cell_tensor *yd = NULL;
    s = cell_k_astype(y, dt, &yd);
    cell_tensor_release(y);
    y = yd;
  }
  if (s != CELL_OK) {
    cell_tensor_release(y);
    cell_tensor_release(w);
    return s;
  }
  *out = y;
  *ws = w;
  return CELL_OK;
}

cell_status cell_cpu_rnn_backward(int mode, const cell_tensor *x, const cell_tensor *w_ih,
                                  const cell_tensor *w_hh, const cell_tensor *ws,
                                  const cell_tensor *lengths, int reverse, int has_bias,
                                  const cell_tensor *gout, cell_tensor **gx, cell_tensor **gh0,
                                  cell_tensor **gc0, cell_tensor **gw_ih, cell_tensor **gw_hh,
                                  cell_tensor **gb_ih, cell_tensor **gb_hh) {
  if (mode < 0 || mode >= CELL_RNN_MODE_COUNT || !x || !w_ih || !w_hh || !ws || !gout || !gx ||
      !gh0 || !gw_ih || !gw_hh)
    return cell_error(CELL_ERR_VALUE, "rnn backward: bad argument");
  cell_dtype dt = x->dtype == CELL_DTYPE_F64 ? CELL_DTYPE_F64 : CELL_DTYPE_F32;
  int64_t T = x->shape[0], B = x->shape[1], I = x->shape[2], H = w_hh->shape[1],
          G = rnn_gates(mode);
  int64_t sy[3] = {T + 2, B, H};
  if (!cell_shape_equal(gout->ndim, gout->shape, 3, sy))
    return cell_error(CELL_ERR_RUNTIME, "rnn backward: gradient of the wrong shape");
  cell_tensor *len = NULL, *c[5], *r[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  CELL_TRY(lengths_of(lengths, T, B, &len));
  const cell_tensor *in[5] = {x, w_ih, w_hh, ws, gout};
  cell_status s = contig_all(5, in, dt, c);
  if (s != CELL_OK) {
    cell_tensor_release(len);
    return s;
  }
  int64_t sx[3] = {T, B, I}, sh[2] = {B, H}, swi[2] = {G * H, I}, swh[2] = {G * H, H},
          sb[1] = {G * H};
  s = cell_tensor_new_contig(dt, 3, sx, &r[0]);
  if (s == CELL_OK) s = cell_tensor_new_contig(dt, 2, sh, &r[1]);
  if (s == CELL_OK && mode == CELL_RNN_LSTM) s = cell_tensor_new_contig(dt, 2, sh, &r[2]);
  if (s == CELL_OK) s = cell_tensor_new_contig(dt, 2, swi, &r[3]);
  if (s == CELL_OK) s = cell_tensor_new_contig(dt, 2, swh, &r[4]);
  if (s == CELL_OK && has_bias) s = cell_tensor_new_contig(dt, 1, sb, &r[5]);
  if (s == CELL_OK && has_bias) s = cell_tensor_new_contig(dt, 1, sb, &r[6]);
  if (s == CELL_OK) {
    const int64_t *lv = len ? (const int64_t *)cell_tensor_base(len) : NULL;
#define P(T_, t) ((t) ? (T_ *)cell_tensor_base(t) : NULL)
    if (dt == CELL_DTYPE_F32)
      s = rnn_bwd__f32(mode, T, B, I, H, P(float, c[0]), P(float, c[1]), P(float, c[2]),
                       P(float, c[3]), lv, reverse, P(float, c[4]), P(float, r[0]), P(float, r[1]),
                       P(float, r[2]), P(float, r[3]), P(float, r[4]), P(float, r[5]),
                       P(float, r[6]));
    else
      s = rnn_bwd__f64(mode, T, B, I, H, P(double, c[0]), P(double, c[1]), P(double, c[2]),
                       P(double, c[3]), lv, reverse, P(double, c[4]), P(double, r[0]),
                       P(double, r[1]), P(double, r[2]), P(double, r[3]), P(double, r[4]),
                       P(double, r[5]), P(double, r[6]));
#undef P
  }
  release_all(5, c);
  cell_tensor_release(len);
  if (s != CELL_OK) {
    release_all(7, r);
    return s;
  }
  *gx = r[0];
  *gh0 = r[1];
  if (gc0) *gc0 = r[2]; else cell_tensor_release(r[2]);
  *gw_ih = r[3];
  *gw_hh = r[4];
  if (gb_ih) *gb_ih = r[5]; else cell_tensor_release(r[5]);
  if (gb_hh) *gb_hh = r[6]; else cell_tensor_release(r[6]);
  return CELL_OK;
}
