#!/bin/sh
# host_gpu.sh - cell.cuda's GPU specs without a GPU: builds the module with
# its host C (the objects of make cuda) and its device code (src/cuda/*.cu)
# compiled for the host by tests/cuda/host_gpu/shim.h (one thread of one
# block per launch), linked against fake CUDA runtime, cuBLAS and cuDNN
# calls on host memory (tests/cuda/host_gpu/fake_*.c), into
# $BUILD/host_gpu/cell/cuda.so; then runs spec/cuda/ops_cuda.lua,
# nn_cuda.lua, index_cuda.lua, stats_cuda.lua and act_cuda.lua (or the spec files
# given) against it, where a "GPU" is now available. This exercises
# the module's host code (argument order of every launch, shapes, dtypes,
# gathers, errors) and the kernels' arithmetic against the CPU; it cannot
# see races, launch bounds or CUDA's own behaviour, which need the GPU run
# (tests/gpu_check.sh). Usage: sh tests/cuda/host_gpu.sh [spec files]
# (after make cuda; LUA=lua5.4, BUILD=build by default).
set -eu
cd "$(dirname "$0")/../.."
LUA=${LUA:-lua5.4}
B=${BUILD:-build}
out=$B/host_gpu
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
mkdir -p "$out/cell"
CC=${CC:-cc}
# A kernel file is compiled again only when its source, a header it may
# include or the command changed: make test-cuda runs this once per Lua
# (5.4, then LuaJIT) and the kernels do not depend on the Lua.
CXX=${CXX:-g++}
CXXCMD='-std=c++17 -O1 -fPIC -w -Itests/cuda/host_gpu -Isrc/cuda'
hdrs=$(cat tests/cuda/host_gpu/*.h src/cuda/*.h src/cuda/*.cuh | cksum)
for f in src/cuda/*.cu; do
  k=$(basename "$f" .cu)
  { echo '#include "shim.h"'
    sed -E -e '/#include <cuda_runtime.h>|#include <cuda_fp16.h>|#include <cuda_bf16.h>/d' -e 's/<<<[^>]*>>>//g' "$f"
  } > "$out/$k.cpp"
  sum="$hdrs $CXX $CXXCMD $CUDA_HOME $(cksum < "$out/$k.cpp")"
  if [ -f "$out/$k.o" ] && [ "$(cat "$out/$k.sum" 2>/dev/null)" = "$sum" ]; then continue; fi
  rm -f "$out/$k.o"
  echo "$sum" > "$out/$k.sum"
  echo "$k"
done > "$out/stale"
# The stale kernel files compile a processor each (xargs fails if any does).
export CXX CXXCMD CUDA_HOME
xargs -P "$(nproc)" -I{} sh -c \
  '$CXX $CXXCMD -I"$CUDA_HOME/include" -c "$1/$2.cpp" -o "$1/$2.o" || { rm -f "$1/$2.sum"; exit 1; }' \
  sh "$out" {} < "$out/stale"
for f in fake_cuda fake_dnn; do
  $CC -std=gnu99 -O1 -fPIC -I"$CUDA_HOME/include" -c "tests/cuda/host_gpu/$f.c" -o "$out/$f.o"
done
host_c=$(ls "$B/$LUA"/src/cuda/gpu_*.o | grep -v '\.cu\.o$')
$CC -shared -o "$out/libcell_cuda.so" -Wl,-soname,libcell_cuda.so -Wl,-z,nodelete $host_c \
  $(ls src/cuda/*.cu | sed "s|^src/cuda/|$out/|; s|\\.cu\$|.o|") \
  "$out/fake_cuda.o" "$out/fake_dnn.o" "$B/libcell.so" -Wl,-rpath,"$PWD/$B" -lstdc++ -lm -lpthread
$CC -shared -o "$out/cell/cuda.so" -Wl,-z,nodelete "$B/$LUA/src/cuda/lcuda.o" "$out/libcell_cuda.so" "$B/libcell.so" \
  -Wl,-rpath,"$PWD/$out:$PWD/$B" -lpthread
LUA_PATH="lua/?.lua;lua/?/init.lua;spec/?.lua;spec/?/init.lua;;" LUA_CPATH="$out/?.so;$B/$LUA/?.so;;" \
  CELL_TEST_DEVICE=1 "$LUA" /usr/bin/busted ${*:-spec/cuda/ops_cuda.lua spec/cuda/nn_cuda.lua spec/cuda/index_cuda.lua spec/cuda/stats_cuda.lua spec/cuda/act_cuda.lua}
