"""autograd.py - PyTorch's side of bench/autograd.lua: the same 784-256-10
MLP at batch 64 in float32 (relu, mean softmax cross-entropy written out as
x - max - log(sum(exp(x - max))) and gather), forward alone under
torch.no_grad() and forward + loss.backward(); best mean wall time of
several repetitions after a warm-up, with CELL_BENCH_THREADS threads when set.
Prints `torch_mlp_forward_ms X ms`, `torch_mlp_fwd_bwd_ms X ms` and
`torch_mlp_backward_over_forward X x` (= (fwd_bwd - fwd) / fwd)."""
import math
import os

import torch

import timing

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(1)

REPS, CALLS = 7, 20  # as bench/autograd.lua
B, D, H, K = 64, 784, 256, 10
W1 = (torch.randn(D, H) / math.sqrt(D)).requires_grad_(True)
b1 = torch.zeros(H).requires_grad_(True)
W2 = (torch.randn(H, K) / math.sqrt(H)).requires_grad_(True)
b2 = torch.zeros(K).requires_grad_(True)
x = torch.randn(B, D)
labels = torch.randint(0, K, (B, 1))
params = (W1, b1, W2, b2)


def loss_fn(inp, y):
    logits = torch.relu(inp @ W1 + b1) @ W2 + b2
    m = logits.max(dim=1, keepdim=True).values
    shifted = logits - m
    logp = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
    return -logp.gather(1, y).mean()


def forward():
    with torch.no_grad():
        return loss_fn(x, labels)


def fwd_bwd():
    # fresh gradients each step, as cell.value_and_grad returns them
    for p in params:
        p.grad = None
    loss = loss_fn(x, labels)
    loss.backward()
    return loss


def bench_ms(fn):
    return timing.bench_ms(fn, REPS, CALLS)


fwd = bench_ms(forward)
fb = bench_ms(fwd_bwd)
print(f"torch_mlp_forward_ms {fwd:.4f} ms")
print(f"torch_mlp_fwd_bwd_ms {fb:.4f} ms")
print(f"torch_mlp_backward_over_forward {(fb - fwd) / fwd:.3f} x")
