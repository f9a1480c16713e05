"""gpt.py - PyTorch's side of bench/gpt.lua: one training step (forward,
backward, AdamW) of the same tiny GPT (vocabulary 40, context 32, width 64,
4 heads, 2 pre-norm blocks with feed-forward 256 and GELU, causal mask,
batch 16, float32) at 1 and 2 threads, best mean wall time after a warm-up.
Prints `torch_train_step_gpt_t1_ms` and `torch_train_step_gpt_t2_ms`."""
import torch
from torch import nn

import timing

V, T, D, H, L, B = 40, 32, 64, 4, 2, 16
REPS, CALLS = 5, 20
torch.manual_seed(1)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        block = nn.TransformerEncoderLayer(D, H, 4 * D, 0.0, activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, L, nn.LayerNorm(D), enable_nested_tensor=False)
        self.head = nn.Linear(D, V)
        self.register_buffer("positions", torch.arange(T))
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, x):
        return self.head(self.blocks(self.tok(x) + self.pos(self.positions), mask=self.mask))


net = GPT()
opt = torch.optim.AdamW(net.parameters(), 1e-3)
x = torch.randint(0, V, (B, T))
y = torch.randint(0, V, (B, T))
loss_fn = nn.CrossEntropyLoss()


def step():
    opt.zero_grad()
    loss = loss_fn(net(x).reshape(-1, V), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss


for th in (1, 2):
    torch.set_num_threads(th)
    print(f"torch_train_step_gpt_t{th}_ms {timing.bench_ms(step, REPS, CALLS):.4f} ms")
