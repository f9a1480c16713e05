/* gpu_mem.c - device memory for the GPU table: a caching allocator and the
 * copies and fills, all on the device's one stream.
 *
 * Blocks come in power-of-two size classes from 512 bytes; a freed block
 * goes to its class's list and the next request of that class reuses it,
 * so cudaMalloc runs only on a cache miss and a training loop in steady
 * state makes none. Reuse is stream-ordered: everything runs on one
 * stream, so work queued on a freed block finishes before work queued by
 * its next owner starts. Out of memory empties the cache and retries once;
 * a second failure returns NULL (the engine's MemoryError names the size)
 * after recording what is in use for gpu_unavailable-style messages. */
#include "gpu.h"
#include "gpu_kern.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CLASS_SHIFT 9

int gpu_class_of(size_t n) {
  int c = 0;
  while (c < GPU_NCLASSES - 1 && ((size_t)1 << (c + MIN_CLASS_SHIFT)) < n) c++;
  return c;
}

size_t gpu_class_size(int c) { return (size_t)1 << (c + MIN_CLASS_SHIFT); }

cell_status gpu_cuda_error(cudaError_t e, const char *what) {
  return cell_error(CELL_ERR_RUNTIME, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

cell_status gpu_sync(gpu_ctx *g, const char *what) {
  cudaError_t e = cudaSetDevice(g->ordinal);
  if (e == cudaSuccess) e = cudaStreamSynchronize(g->stream);
  return e == cudaSuccess ? CELL_OK : gpu_cuda_error(e, what);
}

/* Free the cached blocks (lock held). */
static void empty_locked(gpu_ctx *g) {
  for (int c = 0; c < GPU_NCLASSES; c++) {
    while (g->cache[c]) {
      gpu_block *b = g->cache[c];
      g->cache[c] = b->next;
      cudaFree(b->p);
      g->cached -= gpu_class_size(c);
      g->reserved -= gpu_class_size(c);
      free(b);
    }
  }
}

void gpu_empty_cache(gpu_ctx *g) {
  cudaSetDevice(g->ordinal);
  cudaStreamSynchronize(g->stream); /* no queued work still uses a cached block */
  pthread_mutex_lock(&g->lock);
  empty_locked(g);
  pthread_mutex_unlock(&g->lock);
}

void *gpu_alloc(void *ctx, size_t n) {
  gpu_ctx *g = ctx;
  int c = gpu_class_of(n ? n : 1);
  size_t size = gpu_class_size(c);
  if (size < n) return NULL; /* past the largest class */
  void *p = NULL;
  pthread_mutex_lock(&g->lock);
  if (g->cache[c]) {
    gpu_block *b = g->cache[c];
    g->cache[c] = b->next;
    p = b->p;
    free(b);
    g->cached -= size;
  } else {
    cudaSetDevice(g->ordinal);
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError(); /* clear it */
      cudaStreamSynchronize(g->stream);
      empty_locked(g);
      e = cudaMalloc(&p, size);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      p = NULL;
    } else {
      g->reserved += size;
      g->mallocs++;
    }
  }
  if (p) {
    g->allocated += size;
    if (g->allocated > g->max_allocated) g->max_allocated = g->allocated;
  }
  pthread_mutex_unlock(&g->lock);
  return p;
}

void gpu_free(void *ctx, void *p, size_t n) {
  gpu_ctx *g = ctx;
  if (!p) return;
  int c = gpu_class_of(n ? n : 1);
  gpu_block *b = malloc(sizeof *b);
  pthread_mutex_lock(&g->lock);
  g->allocated -= gpu_class_size(c);
  if (b) {
    b->p = p;
    b->next = g->cache[c];
    g->cache[c] = b;
    g->cached += gpu_class_size(c);
  } else { /* no host memory for the list entry: give the block back */
    cudaSetDevice(g->ordinal);
    cudaStreamSynchronize(g->stream);
    cudaFree(p);
    g->reserved -= gpu_class_size(c);
  }
  pthread_mutex_unlock(&g->lock);
}

/* Host reads and writes wait for the stream: a host buffer may be
 * pageable, and the caller reads it right after. */
static cell_status copy(gpu_ctx *g, void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                        const char *what) {
  if (!n) return CELL_OK;
  cudaError_t e = cudaSetDevice(g->ordinal);
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, n, kind, g->stream);
  if (e == cudaSuccess && kind != cudaMemcpyDefault) e = cudaStreamSynchronize(g->stream);
  return e == cudaSuccess ? CELL_OK : gpu_cuda_error(e, what);
}

cell_status gpu_copy_h2d(void *ctx, void *dst, const void *src, size_t n) {
  return copy(ctx, dst, src, n, cudaMemcpyHostToDevice, "copy to GPU");
}
cell_status gpu_copy_d2h(void *ctx, void *dst, const void *src, size_t n) {
  return copy(ctx, dst, src, n, cudaMemcpyDeviceToHost, "copy from GPU");
}
cell_status gpu_copy_d2d(void *ctx, void *dst, const void *src, size_t n) {
  return copy(ctx, dst, src, n, cudaMemcpyDefault, "copy on GPU"); /* UVA: across GPUs too */
}

cell_status gpu_fill(void *ctx, void *dst, size_t n, const void *pattern, size_t psize) {
  gpu_ctx *g = ctx;
  if (!n) return CELL_OK;
  if (psize != 1 && psize != 2 && psize != 4 && psize != 8)
    return cell_error(CELL_ERR_VALUE, "fill on GPU: pattern of %zu bytes (1, 2, 4 or 8)", psize);
  cudaError_t e = cudaSetDevice(g->ordinal);
  if (e == cudaSuccess) {
    const unsigned char *b = pattern;
    int same = 1;
    for (size_t i = 1; i < psize; i++) same &= b[i] == b[0];
    if (same)
      e = cudaMemsetAsync(dst, b[0], n, g->stream);
    else
      e = (cudaError_t)gpuk_fill(g->stream, dst, n, pattern, psize);
  }
  return e == cudaSuccess ? CELL_OK : gpu_cuda_error(e, "fill on GPU");
}

cell_status gpu_new_tensor(gpu_ctx *g, cell_dtype dt, int ndim, const int64_t *shape, cell_tensor **out) {
  cell_status s = cell_tensor_new_contig(dt, ndim, shape, out);
  if (s != CELL_ERR_MEMORY || !g) return s;
  char why[384];
  snprintf(why, sizeof why, "%s", cell_last_error());
  pthread_mutex_lock(&g->lock);
  size_t used = g->allocated, held = g->reserved;
  pthread_mutex_unlock(&g->lock);
  return cell_error(CELL_ERR_MEMORY, "%s on GPU:%d (in use: %zu bytes in tensors, %zu bytes reserved; the cache was emptied and the allocation retried)",
                    why, g->ordinal, used, held);
}
