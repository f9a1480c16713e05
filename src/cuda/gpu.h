/* gpu.h - the CUDA device module's shared state (internal to src/cuda).
 *
 * The module registers one "GPU" device table per visible CUDA device
 * (GPU:0, GPU:1, ...) with the engine's device layer when cell.cuda loads.
 * Memory comes from a caching allocator (gpu_mem.c); copies, fills and
 * kernels are queued on the device's one stream; cuBLAS runs gemm and
 * linear (gpu_blas.c) and cuDNN conv2d (gpu_dnn.c); the other kernels are
 * CUDA (gpu_ew.cu, gpu_nn.cu, gpu_loss.cu, gpu_cnn.cu, gpu_grad.cu,
 * gpu_attn.cu, gpu_index.cu, gpu_stats.cu, gpu_sort.cu, gpu_optim.cu, gpu_act.cu,
 * sharing gpu_grid.cuh's launch helpers, reached through gpu_kern.h from
 * gpu_nn.c, gpu_loss.c, gpu_cnn.c, gpu_grad.c, gpu_attn.c, gpu_view.c,
 * gpu_index.c, gpu_shape.c, gpu_stats.c, gpu_sort.c, gpu_pwloss.c and
 * gpu_optim.c, gpu_act.c, gpu_bce.c). Every kernel row
 * the module does not implement is declined by supports_op (gpu_table.c),
 * so the engine raises NotImplementedError rather than running it
 * anywhere else. */
#ifndef CELL_CUDA_GPU_H
#define CELL_CUDA_GPU_H
#include "../ops/device.h"
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>

#define GPU_MAX 16
#define GPU_NCLASSES 64 /* size classes: powers of two from 512 bytes */

typedef struct gpu_block {
  void *p;
  struct gpu_block *next;
} gpu_block;

typedef struct gpu_ctx {
  int ordinal;           /* the CUDA device number */
  cudaStream_t stream;   /* the one stream everything runs on */
  void *blas;            /* cublasHandle_t, made on first use */
  void *dnn;             /* cudnnHandle_t, made on first use */
  int allow_tf32;        /* 0 (default): gemm in full float32 */
  pthread_mutex_t lock;  /* the cache and the counters below */
  gpu_block *cache[GPU_NCLASSES];
  size_t allocated;      /* bytes in blocks handed out (class sizes) */
  size_t max_allocated;
  size_t cached;         /* bytes in blocks kept for reuse */
  size_t reserved;       /* bytes held from cudaMalloc (handed out + cached) */
  unsigned long mallocs; /* cudaMalloc calls made */
  cell_device_table table;
  int id;                /* the engine's id for the table */
} gpu_ctx;

/* Names the Lua module (cell/cuda.so, lcuda.c) reaches in libcell_cuda.so. */
#define GPU_API __attribute__((visibility("default")))

/* Devices found when the module loaded (0 without a GPU) and why none. */
GPU_API extern int gpu_count;
GPU_API extern char gpu_unavailable[256];
GPU_API extern gpu_ctx gpu_ctxs[GPU_MAX];
/* gpu_init.c: find and register the devices, once per process (CELL_OK
 * without a GPU: gpu_count 0); a RuntimeError when CUDA fails on one. */
GPU_API cell_status gpu_init(void);

/* gpu_mem.c: the table's memory functions and the cache. */
void *gpu_alloc(void *ctx, size_t n);
void gpu_free(void *ctx, void *p, size_t n);
cell_status gpu_copy_h2d(void *ctx, void *dst, const void *src, size_t n);
cell_status gpu_copy_d2h(void *ctx, void *dst, const void *src, size_t n);
cell_status gpu_copy_d2d(void *ctx, void *dst, const void *src, size_t n);
cell_status gpu_fill(void *ctx, void *dst, size_t n, const void *pattern, size_t psize);
/* cell_tensor_new_contig on g, a MemoryError also naming what is in use. */
cell_status gpu_new_tensor(gpu_ctx *g, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out);
/* Free every cached block (cudaFree); the blocks handed out stay. */
GPU_API void gpu_empty_cache(gpu_ctx *g);
/* Class of n bytes and its size. */
int gpu_class_of(size_t n);
size_t gpu_class_size(int c);
/* A CUDA error as a status ("RuntimeError: what: <cuda text>"). */
cell_status gpu_cuda_error(cudaError_t e, const char *what);
/* Wait for the stream; an error from an earlier asynchronous launch is
 * raised here as a RuntimeError naming what waited. */
GPU_API cell_status gpu_sync(gpu_ctx *g, const char *what);

/* gpu_blas.c: mm and bmm (float32, float64) through cuBLAS. */
cell_status gpu_mm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
cell_status gpu_bmm(const cell_tensor *a, const cell_tensor *b, cell_tensor **out);
void gpu_blas_destroy(gpu_ctx *g);
/* gpu_dnn.c: the cuDNN handle (conv2d). */
void gpu_dnn_destroy(gpu_ctx *g);

/* gpu_table.c: the kernels table and the capability query. */
extern cell_kernels gpu_kernels;
void gpu_kernels_init(void);
int gpu_supports(void *ctx, cell_kid id, int nt, const cell_tensor *const *ts);
/* The context of the running kernel's device (the tensors' device). */
gpu_ctx *gpu_ctx_of(const cell_tensor *t);
/* The context of the device a kernel with no tensor argument (full,
 * arange) runs on: the running kernel's, else the default device; NULL
 * when that is not a GPU. */
gpu_ctx *gpu_ctx_current(void);
/* Whether t is contiguous (row-major, no gaps). */
int gpu_is_contig(const cell_tensor *t);
/* t's first element on the device. */
void *gpu_data(const cell_tensor *t);
/* The helpers the host files share (gpu_table.c): the number of elements
 * of a shape and of t (the engine's cell_shape_numel is not exported); a
 * launcher's result (gpu_kern.h: a cudaError_t as int, 0 for none) as a
 * status naming op; release the tensors of ts[0..n) that are not NULL. */
int64_t gpu_shape_numel(int ndim, const int64_t *shape);
int64_t gpu_numel(const cell_tensor *t);
cell_status gpu_launch(int err, const char *op);
void gpu_release_all(cell_tensor **ts, int n);

#endif
