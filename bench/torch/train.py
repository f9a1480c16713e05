"""train.py - PyTorch's side of bench/train.lua: one training step (forward,
backward, Adam) of the MLP 784-256-10 and of the same LeNet-5 at batch 64,
float32, best mean wall time after a warm-up, with CELL_BENCH_THREADS
threads when set; and the LSTM language model's step (vocab 64, hidden
128, T 32, batch 16). Prints `torch_train_step_mlp_ms`,
`torch_train_step_lenet_ms` and `torch_train_step_lstm_lm_ms`. The networks
and the step are models.py's."""
import os

import torch

import timing
from models import CharLM, LeNet5, mlp, train_step

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(1)
REPS, CALLS = 5, 20

mlp_net = mlp()
x = torch.rand(64, 1, 28, 28)
y = torch.randint(0, 10, (64,))


def step_of(net, inputs=x, targets=y):
    return train_step(net, torch.optim.Adam(net.parameters(), 1e-3), inputs, targets)


def bench_ms(fn):
    return timing.bench_ms(fn, REPS, CALLS)


print(f"torch_train_step_mlp_ms {bench_ms(step_of(mlp_net)):.4f} ms")
print(f"torch_train_step_lenet_ms {bench_ms(step_of(LeNet5())):.4f} ms")
ids, next_ids = torch.randint(0, 64, (16, 32)), torch.randint(0, 64, (16 * 32,))
print(f"torch_train_step_lstm_lm_ms {bench_ms(step_of(CharLM(), ids, next_ids)):.4f} ms")
