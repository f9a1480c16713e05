#!/bin/sh
# emulate_kernels.sh - checks cell.cuda's pooling, batch norm and attention
# kernels without a GPU: the device code of src/cuda/gpu_cnn.cu and
# gpu_attn.cu (each file's anonymous namespace) is compiled for the host
# with the one-thread emulation of tests/cuda/emulate_kernels.cpp (which
# includes the launch helpers the .cu files share, src/cuda/gpu_grid.cuh) and
# compared in float64 with the CPU engine and its autograd. Index
# arithmetic and formulas only: races, launch bounds and float32 rounding
# need a GPU (tests/gpu_check.sh). Needs $BUILD/libcell.so (make; BUILD
# defaults to build) and a C++ compiler (CXX, default g++). Run by make
# test-cuda.
set -eu
cd "$(dirname "$0")/../.."
b=${BUILD:-build}
out=$b/emulate_kernels
mkdir -p "$out"
for k in gpu_cnn gpu_attn; do
  awk '/^namespace \{/ { p = 1 } p { print } /^\} \/\/ namespace/ { exit }' "src/cuda/$k.cu" |
    sed "1s/^namespace {/namespace k_$k {/" > "$out/$k.inc"
done
${CXX:-g++} -std=c++17 -O1 -Wall -Wno-unused-function -Wno-unused-variable -I"$out" -Isrc/cuda -Iinclude \
  tests/cuda/emulate_kernels.cpp -o "$out/emulate_kernels" -L"$b" -lcell -Wl,-rpath,"$PWD/$b"
"$out/emulate_kernels"
