"""gpt.py - PyTorch's side of bench/gpt.lua: one training step (forward,
backward, AdamW) of the same tiny GPT (vocabulary 40, context 32, width 64,
4 heads, 2 pre-norm blocks with feed-forward 256 and GELU, causal mask,
batch 16, float32; models.GPT) at 1 and 2 threads, best mean wall time
after a warm-up. Prints `torch_train_step_gpt_t1_ms` and
`torch_train_step_gpt_t2_ms`."""
import torch

import timing
from models import gpt_step

REPS, CALLS = 5, 20
torch.manual_seed(1)
step = gpt_step()

for th in (1, 2):
    torch.set_num_threads(th)
    print(f"torch_train_step_gpt_t{th}_ms {timing.bench_ms(step, REPS, CALLS):.4f} ms")
