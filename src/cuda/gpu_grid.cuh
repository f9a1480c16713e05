// gpu_grid.cuh - the launch helpers every .cu file of the GPU module
// shares: the block size, grids bounded for grid-stride loops, the loop
// itself and the launch's error. Included after <cuda_runtime.h> (the
// host emulations of tests/cuda define the few CUDA names it uses).
#ifndef CELL_CUDA_GPU_GRID_CUH
#define CELL_CUDA_GPU_GRID_CUH
#include <stdint.h>

namespace {

// Threads per block (a power of two: the block reductions halve it).
const int kThreads = 256;

// A grid of n blocks, at least 1 and at most 65535 (grid-stride loops and
// block-per-row loops cover the rest).
inline unsigned grid_of(int64_t n) { return (unsigned)(n > 65535 ? 65535 : (n < 1 ? 1 : n)); }

// Blocks of kThreads for n elements, bounded as grid_of.
inline unsigned blocks_for(int64_t n) { return grid_of((n + kThreads - 1) / kThreads); }

// The last launch's error as int (0: none), what the gpuk_* functions return.
inline int last() { return (int)cudaGetLastError(); }

} // namespace

// for each i in [0, n), spread over every thread of the grid (64-bit i).
#define GRID_STRIDE(i, n)                                                                   \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                 \
       i += (int64_t)gridDim.x * blockDim.x)

#endif
