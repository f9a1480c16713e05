/* gpu_init.c - finding the CUDA devices and registering one "GPU" device
 * table per device with the engine, once per process; and the device
 * module entry, so that a C host loads the GPU with
 * cell_device_load("cuda") (libcell_cuda.so) without Lua. The Lua module
 * cell.cuda (lcuda.c) calls gpu_init too: both share this library. */
#include "gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gpu_count;
char gpu_unavailable[256];
gpu_ctx gpu_ctxs[GPU_MAX];

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised;
static cell_status init_status = CELL_OK;
static char init_error[512];

/* At exit (after lua_close has freed the tensors into the caches): return
 * the cached blocks, the cuBLAS handles and the streams to CUDA, so that
 * compute-sanitizer's leak check sees nothing left. Registered after CUDA
 * initialised, so it runs before CUDA's own exit handlers. Errors are
 * ignored: the process is ending. */
static void shutdown_devices(void) {
  for (int i = 0; i < gpu_count; i++) {
    gpu_ctx *g = &gpu_ctxs[i];
    gpu_empty_cache(g);
    gpu_blas_destroy(g);
    gpu_dnn_destroy(g);
    cudaStreamDestroy(g->stream);
  }
}

/* Find the devices and register their tables, once per process. */
static void init_devices(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(gpu_unavailable, sizeof gpu_unavailable, "%s", cudaGetErrorString(e));
    return;
  }
  if (n <= 0) {
    snprintf(gpu_unavailable, sizeof gpu_unavailable, "cudaGetDeviceCount found no device");
    return;
  }
  if (n > GPU_MAX) n = GPU_MAX;
  gpu_kernels_init();
  for (int i = 0; i < n; i++) {
    gpu_ctx *g = &gpu_ctxs[i];
    g->ordinal = i;
    g->id = -1;
    pthread_mutex_init(&g->lock, NULL);
    e = cudaSetDevice(i);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      snprintf(init_error, sizeof init_error, "cell.cuda: GPU:%d: %s", i,
               cudaGetErrorString(e));
      init_status = CELL_ERR_RUNTIME;
      return;
    }
    g->table = (cell_device_table){"GPU", i, g, gpu_alloc, gpu_free, gpu_copy_h2d, gpu_copy_d2h,
                                   gpu_copy_d2d, gpu_fill, gpu_supports, &gpu_kernels};
    if (cell_device_register(&g->table, &g->id) != CELL_OK) {
      snprintf(init_error, sizeof init_error, "cell.cuda: %s", cell_last_error());
      init_status = CELL_ERR_RUNTIME;
      return;
    }
    gpu_count = i + 1;
  }
  atexit(shutdown_devices);
}

cell_status gpu_init(void) {
  pthread_mutex_lock(&init_lock);
  if (!initialised) {
    init_devices();
    initialised = 1;
  }
  pthread_mutex_unlock(&init_lock);
  if (init_status != CELL_OK) return cell_error(init_status, "%s", init_error);
  return CELL_OK;
}

/* The entry cell_device_load calls: the devices registered, or a
 * RuntimeError naming why there is none (a host asked for the GPU). */
CELL_API cell_status cell_device_module_init(void);
CELL_API cell_status cell_device_module_init(void) {
  CELL_TRY(gpu_init());
  if (!gpu_count) return cell_error(CELL_ERR_RUNTIME, "no CUDA device: %s", gpu_unavailable);
  return CELL_OK;
}
