#!/bin/sh
# gpu_check.sh - the checks of cell.cuda that need an NVIDIA GPU, in one run:
# build the module, load it from a C host without Lua (cell_device_load
# "cuda", tests/cuda/load_cuda.c: it must register GPU:0), run its specs
# (which must find the GPU: a run where cell.cuda.is_available() is false
# fails here rather than skipping): the cross-device suite of
# spec/cuda/ops_cuda.lua, nn_cuda.lua, index_cuda.lua, stats_cuda.lua and
# act_cuda.lua (activations, logsumexp, roll, diag, eye, dot,
# bce_with_logits, interpolate, unfold / fold, the masked rows, conv3d and
# its transpose, random fills: the CPU's values for one seed) compares every GPU kernel with the CPU's per dtype (float32, float64;
# float16 / bfloat16 arithmetic and casts; the integers) and for strided
# and broadcast inputs, and the gradients of softmax, layer norm,
# embedding, dropout, cross-entropy, nll_loss, conv2d, batch norm,
# pooling, dense, attention, where, cat / stack, gather / index_select /
# scatter, var / norm and cumsum through
# autograd, and LeNet-5 / TinyGPT training steps against the CPU's; then the
# same specs under compute-sanitizer (memcheck with leak checking, then
# racecheck); the Fashion-MNIST LeNet-5 trained on the GPU to the CPU's test
# accuracy (spec/cuda/scripts/lenet_gpu.lua, 2 epochs each, within 1 point;
# a synthetic set when the data set is not installed); the training-step
# figures of LeNet-5, the CIFAR-size CNN and the tiny GPT on GPU and CPU
# (spec/cuda/scripts/steps_gpu.lua); and the gemm figures of cell.cuda
# against cuBLAS called directly (make bench-cuda). Prints a summary line
# per step and exits non-zero if any step failed or could not run.
# Usage: sh tests/gpu_check.sh [LUA=lua5.4|luajit]   (from anywhere)
set -u
cd "$(dirname "$0")/.." || exit 2
LUA=${LUA:-lua5.4}
case "$LUA" in luajit) LUA_BIN=luajit ;; *) LUA_BIN=lua5.4 ;; esac
export LUA_PATH="lua/?.lua;lua/?/init.lua;spec/?.lua;spec/?/init.lua;;"
export LUA_CPATH="build/$LUA/?.so;;"
export CELL_TEST_DEVICE=1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_BIN=$(dirname "$NVCC")
SAN=$(command -v compute-sanitizer || { [ -x "$CUDA_BIN/compute-sanitizer" ] && echo "$CUDA_BIN/compute-sanitizer"; } || true)
summary=""
failed=0
note() { summary="$summary
$1"; }
run() { # name, command...
  name=$1
  shift
  echo "== $name: $*"
  if "$@"; then note "ok      $name"; else note "FAILED  $name (exit $?)"; failed=1; fi
}

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "(nvidia-smi not found)"
"$NVCC" --version | tail -1

run "build (make, make cuda)" sh -c "make -j\"\$(nproc)\" LUA=$LUA >/dev/null && make cuda LUA=$LUA >/dev/null"
run "a GPU is visible to cell.cuda" $LUA_BIN -e '
  local cuda = require "cell.cuda"
  print("cell.cuda: " .. cuda.device_count() .. " device(s)", cuda.unavailable_reason() or "")
  os.exit(cuda.is_available() and 0 or 3)'
run "C host loads the GPU (cell_device_load)" sh -c "make --no-print-directory build/test_load_cuda LUA=$LUA >/dev/null && build/test_load_cuda | tee /dev/stderr | grep -q 'registered as device'"
run "specs (spec/cuda: the cross-device suite)" $LUA_BIN /usr/bin/busted --pattern=_cuda spec/cuda
if [ -n "$SAN" ]; then
  run "compute-sanitizer memcheck" "$SAN" --tool memcheck --leak-check full --error-exitcode 9 \
    $LUA_BIN /usr/bin/busted --pattern=_cuda spec/cuda
  run "compute-sanitizer racecheck" "$SAN" --tool racecheck --error-exitcode 9 \
    $LUA_BIN /usr/bin/busted --pattern=_cuda spec/cuda
else
  note "NOT RUN compute-sanitizer (not found on the PATH nor beside nvcc)"
  failed=1
fi
run "LeNet-5 trains on the GPU to the CPU's accuracy" $LUA_BIN spec/cuda/scripts/lenet_gpu.lua 2
run "training-step figures (LeNet-5, CNN, tiny GPT; GPU and CPU)" $LUA_BIN spec/cuda/scripts/steps_gpu.lua
run "gemm figures (cuBLAS direct, then cell.cuda)" make --no-print-directory bench-cuda LUA=$LUA

echo "== summary$summary"
exit $failed
