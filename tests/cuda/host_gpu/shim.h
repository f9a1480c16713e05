/* shim.h - cell.cuda's device code (src/cuda/*.cu) compiled for the host:
 * tests/cuda/host_gpu.sh includes this first, drops the .cu files' CUDA
 * includes and strips their launch configurations (<<<...>>>), so each
 * launch becomes a plain call of the kernel by one thread of one block:
 * grid-stride loops visit every element, a block reduction is the
 * thread's own sum, atomics are plain updates. */
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
struct EmuDim { unsigned x; };
static EmuDim threadIdx_e = {0}, blockIdx_e = {0}, blockDim_e = {1}, gridDim_e = {1};
#define threadIdx threadIdx_e
#define blockIdx blockIdx_e
#define blockDim blockDim_e
#define gridDim gridDim_e
#undef __syncthreads
#define __syncthreads() ((void)0)
template <class T> static T atomicAdd(T *p, T v) { T o = *p; *p += v; return o; }
static unsigned long long atomicMin(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; if (v < o) *p = v; return o; }
