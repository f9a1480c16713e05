/* fake_dnn.c - the cuDNN calls of src/cuda/gpu_dnn.c on host memory, for
 * tests/cuda/host_gpu.sh: descriptors that keep their sizes, one
 * "algorithm" needing no workspace, and naive NCHW convolutions (forward,
 * backward data, filter and bias; groups, stride, padding, dilation). */
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>
struct cudnnContext { int x; };
struct cudnnTensorStruct { int dbl, n, c, h, w; };
struct cudnnFilterStruct { int dbl, k, c, h, w; };
struct cudnnConvolutionStruct { int ph, pw, u, v, dh, dw, groups; };
cudnnStatus_t cudnnCreate(cudnnHandle_t *h) { *h = calloc(1, sizeof **h); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) { free(h); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) { (void)h; (void)s; return CUDNN_STATUS_SUCCESS; }
const char *cudnnGetErrorString(cudnnStatus_t s) { (void)s; return "emulated cuDNN error"; }
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) { *d = calloc(1, sizeof **d); return 0; }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { free(d); return 0; }
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) { *d = calloc(1, sizeof **d); return 0; }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { free(d); return 0; }
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) { *d = calloc(1, sizeof **d); (*d)->groups = 1; return 0; }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { free(d); return 0; }
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t, int n, int c, int h, int w) {
  (void)f; d->dbl = t == CUDNN_DATA_DOUBLE; d->n = n; d->c = c; d->h = h; d->w = w; return 0;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f, int k, int c, int h, int w) {
  (void)f; d->dbl = t == CUDNN_DATA_DOUBLE; d->k = k; d->c = c; d->h = h; d->w = w; return 0;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u, int v, int dh, int dw,
                                              cudnnConvolutionMode_t m, cudnnDataType_t t) {
  (void)m; (void)t; d->ph = ph; d->pw = pw; d->u = u; d->v = v; d->dh = dh; d->dw = dw; return 0;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int g) { d->groups = g; return 0; }
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) { (void)d; (void)m; return 0; }
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t y, const int req, int *n, cudnnConvolutionFwdAlgoPerf_t *p) {
  (void)h; (void)x; (void)w; (void)c; (void)y; (void)req; memset(p, 0, sizeof *p); p->status = CUDNN_STATUS_SUCCESS; *n = 1; return 0;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t dx, const int req, int *n, cudnnConvolutionBwdDataAlgoPerf_t *p) {
  (void)h; (void)w; (void)dy; (void)c; (void)dx; (void)req; memset(p, 0, sizeof *p); p->status = CUDNN_STATUS_SUCCESS; *n = 1; return 0;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnFilterDescriptor_t dw, const int req, int *n, cudnnConvolutionBwdFilterAlgoPerf_t *p) {
  (void)h; (void)x; (void)dy; (void)c; (void)dw; (void)req; memset(p, 0, sizeof *p); p->status = CUDNN_STATUS_SUCCESS; *n = 1; return 0;
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t a, size_t *s) {
  (void)h; (void)x; (void)w; (void)c; (void)y; (void)a; *s = 0; return 0;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnTensorDescriptor_t dx, cudnnConvolutionBwdDataAlgo_t a, size_t *s) {
  (void)h; (void)w; (void)dy; (void)c; (void)dx; (void)a; *s = 0; return 0;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t c, const cudnnFilterDescriptor_t dw, cudnnConvolutionBwdFilterAlgo_t a, size_t *s) {
  (void)h; (void)x; (void)dy; (void)c; (void)dw; (void)a; *s = 0; return 0;
}
static double ld(int dbl, const void *p, long i) { return dbl ? ((const double *)p)[i] : ((const float *)p)[i]; }
static void st(int dbl, void *p, long i, double v) { if (dbl) ((double *)p)[i] = v; else ((float *)p)[i] = (float)v; }
static double sc(int dbl, const void *p) { return dbl ? *(const double *)p : *(const float *)p; }
/* visit every (n, o, oy, ox, ci, ky, kx) term with input (iy, ix) inside */
#define CONV_LOOP(X, W, Y, C, BODY)                                                                  \
  for (int n = 0; n < X->n; n++)                                                                    \
    for (int o = 0; o < Y->c; o++) {                                                                \
      int g = o / (Y->c / C->groups), cpg = W->c;                                                   \
      for (int oy = 0; oy < Y->h; oy++)                                                             \
        for (int ox = 0; ox < Y->w; ox++)                                                           \
          for (int cc = 0; cc < cpg; cc++)                                                          \
            for (int ky = 0; ky < W->h; ky++)                                                       \
              for (int kx = 0; kx < W->w; kx++) {                                                   \
                int iy = oy * C->u - C->ph + ky * C->dh, ix = ox * C->v - C->pw + kx * C->dw;      \
                if (iy < 0 || iy >= X->h || ix < 0 || ix >= X->w) continue;                         \
                long xi = (((long)n * X->c + g * cpg + cc) * X->h + iy) * X->w + ix;                \
                long wi = (((long)o * cpg + cc) * W->h + ky) * W->w + kx;                           \
                long yi = (((long)n * Y->c + o) * Y->h + oy) * Y->w + ox;                           \
                BODY;                                                                                \
              }                                                                                     \
    }
static void scale_out(int dbl, void *p, long n, double beta) { for (long i = 0; i < n; i++) st(dbl, p, i, beta == 0 ? 0 : beta * ld(dbl, p, i)); }
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t a,
    void *ws, size_t wss, const void *beta, const cudnnTensorDescriptor_t yd, void *y) {
  (void)h; (void)a; (void)ws; (void)wss; int dbl = xd->dbl; double al = sc(dbl, alpha);
  scale_out(dbl, y, (long)yd->n * yd->c * yd->h * yd->w, sc(dbl, beta));
  CONV_LOOP(xd, wd, yd, cd, st(dbl, y, yi, ld(dbl, y, yi) + al * ld(dbl, x, xi) * ld(dbl, w, wi)))
  return 0;
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, const cudnnFilterDescriptor_t wd, const void *w,
    const cudnnTensorDescriptor_t yd, const void *dy, const cudnnConvolutionDescriptor_t cd, cudnnConvolutionBwdDataAlgo_t a,
    void *ws, size_t wss, const void *beta, const cudnnTensorDescriptor_t xd, void *dx) {
  (void)h; (void)a; (void)ws; (void)wss; int dbl = xd->dbl; double al = sc(dbl, alpha);
  scale_out(dbl, dx, (long)xd->n * xd->c * xd->h * xd->w, sc(dbl, beta));
  CONV_LOOP(xd, wd, yd, cd, st(dbl, dx, xi, ld(dbl, dx, xi) + al * ld(dbl, dy, yi) * ld(dbl, w, wi)))
  return 0;
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnTensorDescriptor_t yd, const void *dy, const cudnnConvolutionDescriptor_t cd, cudnnConvolutionBwdFilterAlgo_t a,
    void *ws, size_t wss, const void *beta, const cudnnFilterDescriptor_t wd, void *dw) {
  (void)h; (void)a; (void)ws; (void)wss; int dbl = xd->dbl; double al = sc(dbl, alpha);
  scale_out(dbl, dw, (long)wd->k * wd->c * wd->h * wd->w, sc(dbl, beta));
  CONV_LOOP(xd, wd, yd, cd, st(dbl, dw, wi, ld(dbl, dw, wi) + al * ld(dbl, dy, yi) * ld(dbl, x, xi)))
  return 0;
}
cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t yd, const void *dy,
    const void *beta, const cudnnTensorDescriptor_t bd, void *db) {
  (void)h; int dbl = yd->dbl; double al = sc(dbl, alpha), be = sc(dbl, beta);
  for (int o = 0; o < yd->c; o++) {
    double s = 0;
    for (int n = 0; n < yd->n; n++)
      for (long i = 0; i < (long)yd->h * yd->w; i++) s += ld(dbl, dy, ((long)n * yd->c + o) * yd->h * yd->w + i);
    st(dbl, db, o, al * s + (be == 0 ? 0 : be * ld(dbl, db, o)));
  }
  (void)bd;
  return 0;
}
cudnnStatus_t cudnnAddTensor(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t ad, const void *A, const void *beta,
    const cudnnTensorDescriptor_t cd, void *C) {
  (void)h; (void)ad; int dbl = cd->dbl; double al = sc(dbl, alpha), be = sc(dbl, beta);
  for (int n = 0; n < cd->n; n++)
    for (int c = 0; c < cd->c; c++)
      for (long i = 0; i < (long)cd->h * cd->w; i++) {
        long ci = ((long)n * cd->c + c) * cd->h * cd->w + i;
        st(dbl, C, ci, al * ld(dbl, A, c) + be * ld(dbl, C, ci));
      }
  return 0;
}
