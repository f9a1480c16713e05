#!/bin/sh
# run.sh - every benchmark, then the ratios that compare them. Each line is
# `name value unit`; the lines are also kept in $BUILD/bench.txt. Invoked by
# `make bench` (which builds the module and $BUILD/bench_matmul and sets
# LUA_PATH, LUA_CPATH, BUILD and CELL_LUA); runs standalone from a built tree.
# CELL_BENCH_THREADS (default: all cores) is the thread count of every
# matmul; CELL_BENCH_ITERS (default 1e6) the loop length of the Lua and
# PyTorch small-op benchmarks; CELL_BENCH_PYTHON (default /usr/bin/python3,
# Debian's, where python3-torch installs) the Python for the PyTorch side.
# CELL_BENCH_REPEAT=N (default 1) runs the benchmarks N times, in turn
# (all of them, then all again, so that a slow spell of a shared machine
# falls on every benchmark alike), shows each run on stderr and prints each
# line's median over the N runs (bench/median.awk). CELL_BENCH_ONLY (default
# all) names the benchmarks to run, among: small_ops matmul memory autograd
# cells train ops models torch (models: the model suite, cell and PyTorch
# back to back). bench/compare.sh runs two revisions this way.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
LUA_BIN=${CELL_LUA:-lua5.4}
case "$LUA_BIN" in luajit*) luadir=luajit ;; *) luadir=lua5.4 ;; esac
export LUA_PATH="${LUA_PATH:-lua/?.lua;lua/?/init.lua;;}"
export LUA_CPATH="${LUA_CPATH:-$BUILD/$luadir/?.so;;}"
CELL_BENCH_THREADS=${CELL_BENCH_THREADS:-$(nproc 2>/dev/null || echo 1)}
export CELL_BENCH_THREADS
ITERS=${CELL_BENCH_ITERS:-1000000}
PYTHON=${CELL_BENCH_PYTHON:-/usr/bin/python3}

REPEAT=${CELL_BENCH_REPEAT:-1}
case "$REPEAT" in '' | *[!0-9]* | 0) echo "bench: CELL_BENCH_REPEAT must be a positive integer, got '$REPEAT'" >&2; exit 2 ;; esac
ALL="small_ops matmul memory autograd cells train ops models torch"
ONLY=${CELL_BENCH_ONLY:-$ALL}
for b in $ONLY; do
  case " $ALL " in *" $b "*) ;; *) echo "bench: unknown benchmark '$b' in CELL_BENCH_ONLY (known: $ALL)" >&2; exit 2 ;; esac
done
want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }
# Without PyTorch the reference side and every ratio are missing: said on
# stderr (seen whatever is redirected), once, with the way to install it.
no_torch() {
  if [ -z "${torch_said:-}" ]; then
    echo "bench: $PYTHON cannot import torch: PyTorch's side and the ratios are left out (make bench-deps installs Debian's python3-torch)" >&2
    torch_said=1
  fi
}

results="$BUILD/bench.txt"
mkdir -p "$BUILD"
: >"$results"
tmp=$(mktemp)
runs=$(mktemp -d)
trap 'rm -rf "$tmp" "$runs"' EXIT INT TERM
failed=0
# What a run shows goes to fd 3: stdout for one run, stderr for several
# (stdout then carries the medians).
if [ "$REPEAT" -eq 1 ]; then exec 3>&1; else exec 3>&2; fi

# Run one benchmark: show its lines and keep them in this run's file; a
# failure is reported and the others still run. A benchmark script this
# tree does not have (an older revision under bench/compare.sh, which runs
# this file in both trees) is skipped: its lines show "-" for that side.
run() {
  case "${2:-}" in
    bench/*)
      if [ ! -e "$2" ]; then
        echo "bench: $2 is not in this tree; skipped" >&2
        return 0
      fi ;;
  esac
  if "$@" >"$tmp"; then
    cat "$tmp" >&3
    cat "$tmp" >>"$round"
  else
    cat "$tmp" >&3
    echo "bench: FAILED: $*" >&2
    failed=1
  fi
}

if want matmul && [ ! -x "$BUILD/bench_matmul" ]; then
  make --no-print-directory BUILD="$BUILD" "$BUILD/bench_matmul" >&2 || failed=1
fi

# One run of every benchmark wanted, its lines into $round.
bench_all() {
  if want small_ops; then
    echo "# small ops ($LUA_BIN, $ITERS iterations)" >&3
    run "$LUA_BIN" bench/small_ops.lua "$ITERS"
  fi
  if want matmul; then
    echo "# matmul ($CELL_BENCH_THREADS threads)" >&3
    run "$BUILD/bench_matmul"
  fi
  if want memory; then
    echo "# memory" >&3
    run "$LUA_BIN" bench/rss_loop.lua 1000000
  fi
  if want autograd; then
    echo "# autograd ($LUA_BIN, MLP 784-256-10 batch 64; 1e5 small value_and_grad steps)" >&3
    run "$LUA_BIN" bench/autograd.lua 100000
  fi
  if want cells; then
    echo "# cells ($LUA_BIN: call overhead; state_dict of 1,000 parameters in 100 sub-cells)" >&3
    run "$LUA_BIN" bench/cell.lua "$ITERS"
  fi
  if want train; then
    echo "# training steps ($LUA_BIN: MLP and LeNet-5 at batch 64, Adam)" >&3
    run "$LUA_BIN" bench/train.lua
    echo "# tiny GPT training step ($LUA_BIN: vocab 40, T 32, d 64, 4 heads, 2 blocks, batch 16, AdamW; 1 and 2 threads)" >&3
    run "$LUA_BIN" bench/gpt.lua
    echo "# mixed precision ($LUA_BIN: CIFAR-size CNN and tiny GPT steps, float32 vs bfloat16 O2, alternating)" >&3
    run "$LUA_BIN" bench/amp.lua
  fi
  if want ops; then
    echo "# ordering ops ($LUA_BIN: sort, topk, logsumexp of 1e6 float32)" >&3
    run "$LUA_BIN" bench/sort_ops.lua
    echo "# einsum ($LUA_BIN: batched contractions, float32)" >&3
    run "$LUA_BIN" bench/einsum.lua
    echo "# interpolate ($LUA_BIN: bilinear 16x3x64x64 -> 128x128, float32)" >&3
    run "$LUA_BIN" bench/interpolate.lua
    echo "# conv3d ($LUA_BIN: 3x3x3, 4x16x16x32x32 -> 32 channels, float32)" >&3
    run "$LUA_BIN" bench/conv3d.lua
  fi
  if want models; then
    echo "# model suite ($LUA_BIN, then PyTorch: MLP, LeNet-5, CIFAR-size CNN, tiny GPT, LSTM LM, batch-1 MLP inference; 1 and 2 threads)" >&3
    run "$LUA_BIN" bench/models.lua
    if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
      run "$PYTHON" bench/torch/models_bench.py
    else
      no_torch
    fi
  fi
  if want torch; then
    echo "# PyTorch" >&3
    if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
      run "$PYTHON" bench/torch/small_ops.py "$ITERS"
      run "$PYTHON" bench/torch/matmul.py
      run "$PYTHON" bench/torch/autograd.py
      run "$PYTHON" bench/torch/cell_state.py 200000
      run "$PYTHON" bench/torch/train.py
      run "$PYTHON" bench/torch/gpt.py
      if want ops; then
        run "$PYTHON" bench/torch/sort_ops.py
        run "$PYTHON" bench/torch/einsum.py
        run "$PYTHON" bench/torch/interpolate.py
        run "$PYTHON" bench/torch/conv3d.py
      fi
      if [ -d /usr/share/datasets/fashion-mnist ]; then run "$PYTHON" bench/torch/fashion_lenet.py 1; fi
    else
      no_torch
    fi
  fi
}

i=1
while [ "$i" -le "$REPEAT" ]; do
  [ "$REPEAT" -gt 1 ] && echo "# run $i of $REPEAT" >&3
  round="$runs/$i.txt"
  : >"$round"
  bench_all
  i=$((i + 1))
done
# Runs in order (1, 2, ..., 10: the first run gives each line's format).
i=1
while [ "$i" -le "$REPEAT" ]; do cat "$runs/$i.txt"; i=$((i + 1)); done | awk -f bench/median.awk >"$results"
if [ "$REPEAT" -gt 1 ]; then
  echo "# medians of $REPEAT runs"
  cat "$results"
fi

# Every ratio is oriented so that above 1 favours cell: times (us/op) are
# other over cell, throughputs (GFLOP/s) cell over other.
echo "# ratios"
awk '
function ratio(name, num, den) {
  if ((num in v) && (den in v) && v[den] > 0)
    printf "%s %.3f x\n", name, v[num] / v[den]
}
NF >= 2 && $2 ~ /^[0-9.eE+-]+$/ { v[$1] = $2 + 0 }
END {
  ratio("ratio_add_small_torch_over_cell", "torch_add_small", "lua_add_small")
  ratio("ratio_add_inplace_torch_over_cell", "torch_add_inplace_small", "lua_add_inplace_small")
  ratio("ratio_matmul_256_cell_over_openblas", "cell_matmul_f32_256", "openblas_sgemm_f32_256")
  ratio("ratio_matmul_1024_cell_over_openblas", "cell_matmul_f32_1024", "openblas_sgemm_f32_1024")
  ratio("ratio_matmul_2048_cell_over_openblas", "cell_matmul_f32_2048", "openblas_sgemm_f32_2048")
  ratio("ratio_matmul_256_cell_over_torch", "cell_matmul_f32_256", "torch_matmul_f32_256")
  ratio("ratio_matmul_1024_cell_over_torch", "cell_matmul_f32_1024", "torch_matmul_f32_1024")
  ratio("ratio_matmul_2048_cell_over_torch", "cell_matmul_f32_2048", "torch_matmul_f32_2048")
  ratio("ratio_mlp_fwd_bwd_torch_over_cell", "torch_mlp_fwd_bwd_ms", "cell_mlp_fwd_bwd_ms")
  ratio("ratio_train_step_mlp_torch_over_cell", "torch_train_step_mlp_ms", "cell_train_step_mlp_ms")
  ratio("ratio_train_step_lenet_torch_over_cell", "torch_train_step_lenet_ms", "cell_train_step_lenet_ms")
  ratio("ratio_train_step_gpt_t1_torch_over_cell", "torch_train_step_gpt_t1_ms", "cell_train_step_gpt_t1_ms")
  ratio("ratio_train_step_gpt_t2_torch_over_cell", "torch_train_step_gpt_t2_ms", "cell_train_step_gpt_t2_ms")
  ratio("ratio_train_step_lstm_lm_torch_over_cell", "torch_train_step_lstm_lm_ms", "cell_train_step_lstm_lm_ms")
  ratio("ratio_lenet_epoch_torch_over_cell", "torch_lenet_epoch_s", "cell_lenet_epoch_s")
  ratio("ratio_interpolate_bilinear_torch_over_cell", "torch_interpolate_bilinear_ms", "cell_interpolate_bilinear_ms")
  ratio("ratio_interpolate_bilinear_fwd_bwd_torch_over_cell", "torch_interpolate_bilinear_fwd_bwd_ms",
    "cell_interpolate_bilinear_fwd_bwd_ms")
  ratio("ratio_conv3d_torch_over_cell", "torch_conv3d_ms", "cell_conv3d_ms")
  ratio("ratio_conv3d_fwd_bwd_torch_over_cell", "torch_conv3d_fwd_bwd_ms", "cell_conv3d_fwd_bwd_ms")
  ratio("ratio_state_dict_torch_over_cell", "torch_state_dict_1000_params_ms", "cell_state_dict_1000_params_ms")
  ratio("ratio_sort_rows_torch_over_cell", "torch_sort_rows_1000x1000", "cell_sort_rows_1000x1000")
  ratio("ratio_sort_1e6_torch_over_cell", "torch_sort_1e6", "cell_sort_1e6")
  ratio("ratio_topk10_rows_torch_over_cell", "torch_topk10_rows_1000x1000", "cell_topk10_rows_1000x1000")
  ratio("ratio_logsumexp_rows_torch_over_cell", "torch_logsumexp_rows_1000x1000", "cell_logsumexp_rows_1000x1000")
  ratio("ratio_einsum_bmm_torch_over_cell", "torch_einsum_bmm_ms", "cell_einsum_bmm_ms")
  ratio("ratio_einsum_attention_torch_over_cell", "torch_einsum_attention_ms", "cell_einsum_attention_ms")
  ratio("ratio_load_state_dict_torch_over_cell", "torch_load_state_dict_1000_params_ms",
    "cell_load_state_dict_1000_params_ms")
  split("mlp lenet cnn gpt lstm", models, " ")
  for (m = 1; m <= 5; m++)
    for (t = 1; t <= 2; t++)
      ratio("ratio_model_" models[m] "_t" t "_torch_over_cell", "torch_model_" models[m] "_t" t "_ms",
        "cell_model_" models[m] "_t" t "_ms")
  ratio("ratio_model_infer_t1_torch_over_cell", "torch_model_infer_t1_us", "cell_model_infer_t1_us")
  ratio("ratio_model_infer_t2_torch_over_cell", "torch_model_infer_t2_us", "cell_model_infer_t2_us")
  ratio("ratio_model_peak_rss_torch_over_cell", "torch_model_peak_rss_mib", "cell_model_peak_rss_mib")
}' "$results" >"$tmp"
cat "$tmp"
cat "$tmp" >>"$results"

exit "$failed"
