"""train.py - PyTorch's side of bench/train.lua: one training step (forward,
backward, Adam) of the MLP 784-256-10 and of the same LeNet-5 at batch 64,
float32, best mean wall time after a warm-up, with CELL_BENCH_THREADS
threads when set; and the LSTM language model's step (vocab 64, hidden
128, T 32, batch 16). Prints `torch_train_step_mlp_ms`,
`torch_train_step_lenet_ms` and `torch_train_step_lstm_lm_ms`."""
import os

import torch
from torch import nn

import timing
from models import LeNet5

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(1)
REPS, CALLS = 5, 20


mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
x = torch.rand(64, 1, 28, 28)
y = torch.randint(0, 10, (64,))
loss_fn = nn.CrossEntropyLoss()


def step_of(net):
    opt = torch.optim.Adam(net.parameters(), 1e-3)

    def step():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def bench_ms(fn):
    return timing.bench_ms(fn, REPS, CALLS)


print(f"torch_train_step_mlp_ms {bench_ms(step_of(mlp)):.4f} ms")
print(f"torch_train_step_lenet_ms {bench_ms(step_of(LeNet5())):.4f} ms")


class CharLM(nn.Module):
    """bench/train.lua's LSTM language model: vocab 64, hidden 128."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 128)
        self.lstm = nn.LSTM(128, 128, batch_first=True)
        self.head = nn.Linear(128, 64)

    def forward(self, ids):
        return self.head(self.lstm(self.embed(ids))[0].reshape(-1, 128))


ids, next_ids = torch.randint(0, 64, (16, 32)), torch.randint(0, 64, (16 * 32,))
lm = CharLM()
lm_opt = torch.optim.Adam(lm.parameters(), 1e-3)


def lm_step():
    lm_opt.zero_grad()
    loss = loss_fn(lm(ids), next_ids)
    loss.backward()
    lm_opt.step()
    return loss


print(f"torch_train_step_lstm_lm_ms {bench_ms(lm_step):.4f} ms")
