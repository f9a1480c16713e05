"""small_ops.py - PyTorch's per-call cost on 4-element float32 tensors, the
side-by-side of bench/small_ops.lua (same ops, same clock: process CPU
time, best of three after a warm-up).
Prints `torch_add_small X us/op` and `torch_add_inplace_small X us/op`."""
import sys
import time

import torch

N = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
REPS = 3

torch.set_grad_enabled(False)  # cell's ops record nothing without requires_grad either
a = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float32)
b = torch.tensor([0.5, 0.25, 0.125, 0.0625], dtype=torch.float32)
x = a.clone()


def add(n):
    c = None
    for _ in range(n):
        c = a + b
    return c


def add_inplace(n):
    for _ in range(n):
        x.add_(b)


def bench(fn):
    fn(max(1, N // 10))
    best = float("inf")
    for _ in range(REPS):
        t0 = time.process_time()
        fn(N)
        best = min(best, time.process_time() - t0)
    return best / N * 1e6


print(f"torch_add_small {bench(add):.3f} us/op")
print(f"torch_add_inplace_small {bench(add_inplace):.3f} us/op")
