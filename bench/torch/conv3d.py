"""conv3d.py - PyTorch's side of bench/conv3d.lua: F.conv3d, 3x3x3 with
padding 1, x (4, 16, 16, 32, 32), w (32, 16, 3, 3, 3) and a bias, in
float32: the forward under torch.no_grad() and forward + backward of the
output's sum (gradients for x, w and b); best mean wall time of several
repetitions after a warm-up, with CELL_BENCH_THREADS threads when set.
Prints `torch_conv3d_ms` and `torch_conv3d_fwd_bwd_ms`."""
import os

import torch
import torch.nn.functional as F

import timing

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(1)

REPS, CALLS = 5, 2  # as bench/conv3d.lua
x = torch.randn(4, 16, 16, 32, 32)
w = torch.randn(32, 16, 3, 3, 3) * 0.05
b = torch.randn(32)
xg, wg, bg = (t.clone().requires_grad_(True) for t in (x, w, b))


def forward():
    with torch.no_grad():
        return F.conv3d(x, w, b, padding=1)


def fwd_bwd():
    for t in (xg, wg, bg):
        t.grad = None
    F.conv3d(xg, wg, bg, padding=1).sum().backward()
    return xg.grad


print("torch_conv3d_ms %.4f ms" % timing.bench_ms(forward, REPS, CALLS))
print("torch_conv3d_fwd_bwd_ms %.4f ms" % timing.bench_ms(fwd_bwd, REPS, CALLS))
