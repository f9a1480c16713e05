/* gpu_dnn.c - conv2d forward and backward on the GPU through cuDNN
 * (float32 and float64, NCHW; groups, stride, dilation, symmetric
 * padding). Float32 convolutions run in full float32 (CUDNN_FMA_MATH:
 * no TF32) unless cell.cuda.set_allow_tf32 turned TF32 on for the device.
 * Algorithms come from cuDNN's heuristics (the _v7 queries): the first
 * that succeeds with its workspace, which is allocated from the device's
 * cache like any tensor. Padding that differs between top and bottom, or
 * left and right, is declined (cuDNN pads symmetrically). Each call makes
 * its descriptors and destroys them: a few microseconds of host work. */
#include "gpu.h"
#include "gpu_nn.h"
#include <cudnn.h>
#include <string.h>

static cell_status dnn_error(cudnnStatus_t s, const char *what) {
  return cell_error(CELL_ERR_RUNTIME, "%s: cuDNN: %s", what, cudnnGetErrorString(s));
}

#define DNN(call)                                       \
  do {                                                  \
    cudnnStatus_t st_ = (call);                         \
    if (st_ != CUDNN_STATUS_SUCCESS) {                  \
      s = dnn_error(st_, op);                           \
      goto done;                                        \
    }                                                   \
  } while (0)

static cell_status handle(gpu_ctx *g, cudnnHandle_t *h, const char *op) {
  cudaError_t e = cudaSetDevice(g->ordinal);
  if (e != cudaSuccess) return gpu_cuda_error(e, op);
  if (!g->dnn) {
    cudnnHandle_t nh;
    cudnnStatus_t s = cudnnCreate(&nh);
    if (s != CUDNN_STATUS_SUCCESS) return dnn_error(s, op);
    s = cudnnSetStream(nh, g->stream);
    if (s != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(nh);
      return dnn_error(s, op);
    }
    g->dnn = nh;
  }
  *h = g->dnn;
  return CELL_OK;
}

void gpu_dnn_destroy(gpu_ctx *g) {
  if (g->dnn) cudnnDestroy(g->dnn);
  g->dnn = NULL;
}

typedef struct {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  int pad[2], stride[2], dil[2];
} geom;

static int fits(int64_t v) { return v >= 0 && v <= 2147483647; }

/* The geometry (the CPU's checks, and what cuDNN can take). */
static cell_status geometry(const char *op, const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                            const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                            geom *g) {
  if (x->ndim != 4 || w->ndim != 4)
    return cell_error(CELL_ERR_VALUE, "%s: input and weight must be 4-D, got %d-D and %d-D", op, x->ndim, w->ndim);
  if (x->dtype != w->dtype || (b && b->dtype != x->dtype))
    return cell_error(CELL_ERR_TYPE, "%s: input is %s but weight is %s; they must match", op,
                      cell_dtype_name(x->dtype), cell_dtype_name(w->dtype));
  int64_t st[2] = {stride ? stride[0] : 1, stride ? stride[1] : 1};
  int64_t dl[2] = {dilation ? dilation[0] : 1, dilation ? dilation[1] : 1};
  int64_t pd[4] = {0, 0, 0, 0};
  if (padding) memcpy(pd, padding, sizeof pd);
  for (int i = 0; i < 2; i++)
    if (st[i] < 1 || dl[i] < 1 || !fits(st[i]) || !fits(dl[i]))
      return cell_error(CELL_ERR_VALUE, "%s: stride and dilation must be at least 1", op);
  for (int i = 0; i < 4; i++)
    if (pd[i] < 0 || !fits(pd[i])) return cell_error(CELL_ERR_VALUE, "%s: padding must be non-negative", op);
  if (pd[0] != pd[1] || pd[2] != pd[3])
    return cell_error(CELL_ERR_NOTIMPL,
                      "%s with padding (top %lld, bottom %lld, left %lld, right %lld) is not supported on device GPU "
                      "(cuDNN pads both sides alike)",
                      op, (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3]);
  if (groups < 1 || w->shape[0] % groups || x->shape[1] != w->shape[1] * groups)
    return cell_error(CELL_ERR_VALUE, "%s: input has %lld channels but weight expects %lld (groups %lld)", op,
                      (long long)x->shape[1], (long long)(w->shape[1] * groups), (long long)groups);
  if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
    return cell_error(CELL_ERR_VALUE, "%s: bias must have %lld elements", op, (long long)w->shape[0]);
  g->n = x->shape[0];
  g->c = x->shape[1];
  g->h = x->shape[2];
  g->w = x->shape[3];
  g->o = w->shape[0];
  g->kh = w->shape[2];
  g->kw = w->shape[3];
  g->groups = groups;
  int64_t ekh = dl[0] * (g->kh - 1) + 1, ekw = dl[1] * (g->kw - 1) + 1;
  int64_t ph = g->h + 2 * pd[0], pw = g->w + 2 * pd[2];
  if (g->kh < 1 || g->kw < 1 || ekh > ph || ekw > pw)
    return cell_error(CELL_ERR_VALUE, "%s: the kernel (%lld x %lld) is larger than the padded input (%lld x %lld)", op,
                      (long long)g->kh, (long long)g->kw, (long long)ph, (long long)pw);
  g->oh = (ph - ekh) / st[0] + 1;
  g->ow = (pw - ekw) / st[1] + 1;
  int64_t dims[] = {g->n, g->c, g->h, g->w, g->o, g->kh, g->kw, g->oh, g->ow, groups};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    if (!fits(dims[i])) return cell_error(CELL_ERR_VALUE, "%s: a size over 2^31-1", op);
  g->pad[0] = (int)pd[0];
  g->pad[1] = (int)pd[2];
  g->stride[0] = (int)st[0];
  g->stride[1] = (int)st[1];
  g->dil[0] = (int)dl[0];
  g->dil[1] = (int)dl[1];
  return CELL_OK;
}

typedef struct {
  cudnnTensorDescriptor_t x, y, b;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
} descs;

static void descs_destroy(descs *d) {
  if (d->x) cudnnDestroyTensorDescriptor(d->x);
  if (d->y) cudnnDestroyTensorDescriptor(d->y);
  if (d->b) cudnnDestroyTensorDescriptor(d->b);
  if (d->w) cudnnDestroyFilterDescriptor(d->w);
  if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
}

static cell_status descs_make(const char *op, gpu_ctx *gc, const geom *g, cell_dtype dt, descs *d) {
  cell_status s = CELL_OK;
  cudnnDataType_t t = dt == CELL_DTYPE_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  memset(d, 0, sizeof *d);
  DNN(cudnnCreateTensorDescriptor(&d->x));
  DNN(cudnnCreateTensorDescriptor(&d->y));
  DNN(cudnnCreateTensorDescriptor(&d->b));
  DNN(cudnnCreateFilterDescriptor(&d->w));
  DNN(cudnnCreateConvolutionDescriptor(&d->conv));
  DNN(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, t, (int)g->n, (int)g->c, (int)g->h, (int)g->w));
  DNN(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, t, (int)g->n, (int)g->o, (int)g->oh, (int)g->ow));
  DNN(cudnnSetTensor4dDescriptor(d->b, CUDNN_TENSOR_NCHW, t, 1, (int)g->o, 1, 1));
  DNN(cudnnSetFilter4dDescriptor(d->w, t, CUDNN_TENSOR_NCHW, (int)g->o, (int)(g->c / g->groups), (int)g->kh,
                                 (int)g->kw));
  DNN(cudnnSetConvolution2dDescriptor(d->conv, g->pad[0], g->pad[1], g->stride[0], g->stride[1], g->dil[0],
                                      g->dil[1], CUDNN_CROSS_CORRELATION, t));
  DNN(cudnnSetConvolutionGroupCount(d->conv, (int)g->groups));
  DNN(cudnnSetConvolutionMathType(d->conv, dt == CELL_DTYPE_F32 && gc->allow_tf32 ? CUDNN_TENSOR_OP_MATH
                                                                                    : CUDNN_FMA_MATH));
done:
  if (s != CELL_OK) descs_destroy(d);
  return s;
}

/* A workspace of n bytes (NULL for none) as a uint8 tensor. */
static cell_status workspace(gpu_ctx *g, size_t n, cell_tensor **ws) {
  *ws = NULL;
  if (!n) return CELL_OK;
  int64_t len = (int64_t)n;
  return gpu_new_tensor(g, CELL_DTYPE_U8, 1, &len, ws);
}

#define NALGO 8

cell_status gpu_conv2d(cell_conv_lowering how, const cell_tensor *x, const cell_tensor *w, const cell_tensor *b,
                       const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                       cell_tensor **out) {
  (void)how;
  const char *op = "conv2d";
  geom g;
  CELL_TRY(geometry(op, x, w, b, stride, padding, dilation, groups, &g));
  gpu_ctx *gc = gpu_ctx_of(x);
  cudnnHandle_t h;
  CELL_TRY(handle(gc, &h, op));
  descs d;
  CELL_TRY(descs_make(op, gc, &g, x->dtype, &d));
  cell_tensor *xc = NULL, *wc = NULL, *bc = NULL, *y = NULL, *ws = NULL;
  int64_t shape[4] = {g.n, g.o, g.oh, g.ow};
  cell_status s = gpu_contig_as(x, x->dtype, &xc);
  if (s == CELL_OK) s = gpu_contig_as(w, x->dtype, &wc);
  if (s == CELL_OK && b) s = gpu_contig_as(b, x->dtype, &bc);
  if (s == CELL_OK) s = gpu_new_tensor(gc, x->dtype, 4, shape, &y);
  if (s != CELL_OK || !g.n || !g.o || !g.oh || !g.ow) goto done;
  if (!g.c) { /* no input channels: the bias alone, or zeros */
    static const unsigned char zero[8] = {0};
    size_t es = (size_t)cell_dtype_size(x->dtype);
    s = gpu_fill(gc, gpu_data(y), (size_t)(g.n * g.o * g.oh * g.ow) * es, zero, es);
    if (s == CELL_OK && bc) {
      double one = 1.0;
      float onef = 1.0f;
      const void *alpha = x->dtype == CELL_DTYPE_F64 ? (const void *)&one : (const void *)&onef;
      DNN(cudnnAddTensor(h, alpha, d.b, gpu_data(bc), alpha, d.y, gpu_data(y)));
    }
    goto done;
  }
  {
    cudnnConvolutionFwdAlgoPerf_t perf[NALGO];
    int found = 0;
    DNN(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, NALGO, &found, perf));
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    double one = 1.0, zero = 0.0;
    float onef = 1.0f, zerof = 0.0f;
    int f64 = x->dtype == CELL_DTYPE_F64;
    const void *alpha = f64 ? (const void *)&one : (const void *)&onef;
    const void *beta = f64 ? (const void *)&zero : (const void *)&zerof;
    int done_ok = 0;
    for (int i = 0; i < found && !done_ok; i++) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      size_t wsize = 0;
      last = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, perf[i].algo, &wsize);
      if (last != CUDNN_STATUS_SUCCESS) continue;
      if (ws) cell_tensor_release(ws);
      s = workspace(gc, wsize, &ws);
      if (s != CELL_OK) goto done;
      last = cudnnConvolutionForward(h, alpha, d.x, gpu_data(xc), d.w, gpu_data(wc), d.conv, perf[i].algo,
                                     ws ? gpu_data(ws) : NULL, wsize, beta, d.y, gpu_data(y));
      done_ok = last == CUDNN_STATUS_SUCCESS;
    }
    if (!done_ok) {
      s = dnn_error(last, op);
      goto done;
    }
    if (bc) DNN(cudnnAddTensor(h, alpha, d.b, gpu_data(bc), alpha, d.y, gpu_data(y)));
  }
done:
  descs_destroy(&d);
  if (xc) cell_tensor_release(xc);
  if (wc) cell_tensor_release(wc);
  if (bc) cell_tensor_release(bc);
  if (ws) cell_tensor_release(ws);
  if (s != CELL_OK) {
    if (y) cell_tensor_release(y);
    return s;
  }
  *out = y;
  return CELL_OK;
}

cell_status gpu_conv2d_backward(cell_conv_lowering how, const cell_tensor *gy, const cell_tensor *x,
                                const cell_tensor *w, const int64_t *stride, const int64_t *padding,
                                const int64_t *dilation, int64_t groups, cell_tensor **gx, cell_tensor **gw,
                                cell_tensor **gb) {
  (void)how;
  const char *op = "conv2d backward";
  geom g;
  CELL_TRY(geometry(op, x, w, NULL, stride, padding, dilation, groups, &g));
  if (gy->ndim != 4 || gy->shape[0] != g.n || gy->shape[1] != g.o || gy->shape[2] != g.oh || gy->shape[3] != g.ow)
    return cell_error(CELL_ERR_VALUE, "%s: the output gradient does not have the output's shape", op);
  if (gy->dtype != x->dtype)
    return cell_error(CELL_ERR_TYPE, "%s: the output gradient is %s, the input %s", op, cell_dtype_name(gy->dtype),
                      cell_dtype_name(x->dtype));
  gpu_ctx *gc = gpu_ctx_of(x);
  cudnnHandle_t h;
  CELL_TRY(handle(gc, &h, op));
  descs d;
  CELL_TRY(descs_make(op, gc, &g, x->dtype, &d));
  cell_tensor *t[3] = {NULL}, *r[3] = {NULL}, *ws = NULL; /* gy, x, w; gx, gw, gb */
  int f64 = x->dtype == CELL_DTYPE_F64;
  double one = 1.0, zero = 0.0;
  float onef = 1.0f, zerof = 0.0f;
  const void *alpha = f64 ? (const void *)&one : (const void *)&onef;
  const void *beta = f64 ? (const void *)&zero : (const void *)&zerof;
  size_t es = (size_t)cell_dtype_size(x->dtype);
  static const unsigned char zbytes[8] = {0};
  int empty = !g.n || !g.o || !g.oh || !g.ow || !g.c;
  cell_status s = gpu_contig_as(gy, x->dtype, &t[0]);
  if (s == CELL_OK) s = gpu_contig_as(x, x->dtype, &t[1]);
  if (s == CELL_OK) s = gpu_contig_as(w, x->dtype, &t[2]);
  if (s == CELL_OK && gx) s = gpu_new_tensor(gc, x->dtype, 4, x->shape, &r[0]);
  if (s == CELL_OK && gw) s = gpu_new_tensor(gc, x->dtype, 4, w->shape, &r[1]);
  if (s == CELL_OK && gb) s = gpu_new_tensor(gc, x->dtype, 1, &g.o, &r[2]);
  for (int i = 0; i < 3 && s == CELL_OK; i++) /* zeros first: the empty cases stay so */
    if (r[i] && empty) {
      int64_t n = 1;
      for (int k = 0; k < r[i]->ndim; k++) n *= r[i]->shape[k];
      s = gpu_fill(gc, gpu_data(r[i]), (size_t)n * es, zbytes, es);
    }
  if (s != CELL_OK) goto done;
  if (r[2] && !empty) DNN(cudnnConvolutionBackwardBias(h, alpha, d.y, gpu_data(t[0]), beta, d.b, gpu_data(r[2])));
  if (r[2] && empty && g.n && g.oh && g.ow && g.o) /* no input channels: the bias still has a gradient */
    DNN(cudnnConvolutionBackwardBias(h, alpha, d.y, gpu_data(t[0]), beta, d.b, gpu_data(r[2])));
  if (r[0] && !empty) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[NALGO];
    int found = 0, ok = 0;
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, NALGO, &found, perf));
    for (int i = 0; i < found && !ok; i++) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      size_t wsize = 0;
      last = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, perf[i].algo, &wsize);
      if (last != CUDNN_STATUS_SUCCESS) continue;
      if (ws) cell_tensor_release(ws);
      s = workspace(gc, wsize, &ws);
      if (s != CELL_OK) goto done;
      last = cudnnConvolutionBackwardData(h, alpha, d.w, gpu_data(t[2]), d.y, gpu_data(t[0]), d.conv, perf[i].algo,
                                          ws ? gpu_data(ws) : NULL, wsize, beta, d.x, gpu_data(r[0]));
      ok = last == CUDNN_STATUS_SUCCESS;
    }
    if (!ok) {
      s = dnn_error(last, op);
      goto done;
    }
  }
  if (r[1] && !empty) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[NALGO];
    int found = 0, ok = 0;
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, NALGO, &found, perf));
    for (int i = 0; i < found && !ok; i++) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      size_t wsize = 0;
      last = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, perf[i].algo, &wsize);
      if (last != CUDNN_STATUS_SUCCESS) continue;
      if (ws) cell_tensor_release(ws);
      s = workspace(gc, wsize, &ws);
      if (s != CELL_OK) goto done;
      last = cudnnConvolutionBackwardFilter(h, alpha, d.x, gpu_data(t[1]), d.y, gpu_data(t[0]), d.conv,
                                            perf[i].algo, ws ? gpu_data(ws) : NULL, wsize, beta, d.w,
                                            gpu_data(r[1]));
      ok = last == CUDNN_STATUS_SUCCESS;
    }
    if (!ok) {
      s = dnn_error(last, op);
      goto done;
    }
  }
done:
  descs_destroy(&d);
  for (int i = 0; i < 3; i++)
    if (t[i]) cell_tensor_release(t[i]);
  if (ws) cell_tensor_release(ws);
  if (s != CELL_OK) {
    for (int i = 0; i < 3; i++)
      if (r[i]) cell_tensor_release(r[i]);
    return s;
  }
  if (gx) *gx = r[0];
  if (gw) *gw = r[1];
  if (gb) *gb = r[2];
  return CELL_OK;
}
