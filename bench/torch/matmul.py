"""matmul.py - PyTorch float32 matmul throughput, the side-by-side of
bench/matmul.c: best wall-clock time of several repetitions (a fresh
output per call, as cell's), with CELL_BENCH_THREADS threads when set.
Prints `torch_matmul_f32_N X GFLOP/s` for N = 256, 1024, 2048 (or argv)."""
import os
import sys
import time

import torch

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.set_grad_enabled(False)
torch.manual_seed(1)

sizes = [int(s) for s in sys.argv[1:]] or [256, 1024, 2048]
print(f"torch_matmul_threads {torch.get_num_threads()} threads")
for n in sizes:
    a = torch.rand(n, n, dtype=torch.float32)
    b = torch.rand(n, n, dtype=torch.float32)
    flop = 2.0 * n * n * n
    reps = min(200, max(3, int(2e10 / flop)))  # as bench/matmul.c
    best = float("inf")
    for r in range(reps + 1):  # r == 0 warms up
        t0 = time.perf_counter()
        c = torch.matmul(a, b)
        dt = time.perf_counter() - t0
        if r > 0:
            best = min(best, dt)
    del c
    print(f"torch_matmul_f32_{n} {flop / best * 1e-9:.2f} GFLOP/s", flush=True)
