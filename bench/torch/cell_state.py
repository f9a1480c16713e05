"""cell_state.py - PyTorch's side of bench/cell.lua: module call overhead
against forward directly, and state_dict / load_state_dict of 100 sub-modules
holding 1,000 parameters of 16 floats. Prints `name value unit` lines."""
import sys
import time

import torch

torch.set_num_threads(1)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
REPS = 5


def best_of(fn, n):
    fn(max(1, n // 10))
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - t0)
    return best


class Add(torch.nn.Module):
    def forward(self, x):
        return x + x


net = Add()
x = torch.tensor([1.0, 2, 3, 4])


def direct(n):
    for _ in range(n):
        net.forward(x)


def called(n):
    for _ in range(n):
        net(x)


d = best_of(direct, N) / N * 1e6
c = best_of(called, N) / N * 1e6
net.register_forward_hook(lambda m, i, o: None)
h = best_of(called, N) / N * 1e6
print(f"torch_module_call_overhead_no_hooks {c - d:.3f} us")
print(f"torch_module_call_overhead_one_hook {h - d:.3f} us")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(10):
            setattr(self, f"p{i + 1}", torch.nn.Parameter(torch.zeros(16)))


class Tree(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(100):
            setattr(self, f"b{i + 1}", Block())


tree = Tree()
sd = tree.state_dict()
assert len(sd) == 1000
K = 50


def save(n):
    for _ in range(n):
        tree.state_dict()


def load(n):
    for _ in range(n):
        tree.load_state_dict(sd)


print(f"torch_state_dict_1000_params_ms {best_of(save, K) / K * 1e3:.3f} ms")
print(f"torch_load_state_dict_1000_params_ms {best_of(load, K) / K * 1e3:.3f} ms")
