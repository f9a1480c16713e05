--- pipeline_parallel.lua - a model split across 2 processes (a 2-stage
-- pipeline) trained with send and recv: rank 0 holds the first stage
-- (Dense 8 -> 16 and ReLU) and sends its activations to rank 1, which holds
-- the second (Dense 16 -> 3) and the loss. In the backward pass rank 1's
-- recv sends the activations' gradient back, and rank 0's send receives it
-- and carries it on into the first stage's weights (MindSpore's Send and
-- Receive rules). Each rank then checks its stage against one process
-- training the whole model on the same batches, started from the same
-- weights: they agree to float32 rounding.
-- Run: mpirun -np 2 bin/cell examples/pipeline_parallel.lua [steps]
-- (as root add --allow-run-as-root; with fewer cores than ranks add --oversubscribe).
local cell = require "cell"
local nn, comm = cell.nn, cell.communication

local steps = tonumber(arg and arg[1]) or 10
local BATCH, IN, HIDDEN, CLASSES = 32, 8, 16, 3

comm.init()
local rank, size = comm.get_rank(), comm.get_group_size()
assert(size == 2, "run with mpirun -np 2: one rank per stage")

--- The whole model, both stages made on every rank from one seed, so each
-- rank can also train it alone as the reference.
local function make_stages()
  cell.set_seed(1)
  return nn.SequentialCell { nn.Dense(IN, HIDDEN), nn.ReLU() }, nn.Dense(HIDDEN, CLASSES)
end

-- the same batches on both ranks (rank 1 only reads the labels): the
-- class of a sample is the largest of 3 fixed linear scores (1-based)
cell.set_seed(2)
local xs = cell.randn({ steps, BATCH, IN })
local ys = xs:matmul(cell.randn({ IN, CLASSES })):argmax(3)
local loss_fn = nn.CrossEntropyLoss()

local function momentum(params) return nn.Momentum(params, 0.1, 0.9) end

-- the pipeline: this rank's stage only
local stage1, stage2 = make_stages()
local mine = rank == 0 and stage1 or stage2
local opt = momentum(mine:trainable_params())
local losses = {}
local step
if rank == 0 then
  -- the stage's "loss" is send's placeholder: its backward brings the gradient back from rank 1
  step = cell.value_and_grad(function(x) return comm.send(stage1(x), 1) end, nil, opt.parameters)
else
  -- the template gives recv the shape and dtype; requiring grad makes recv record its backward
  local template = cell.zeros({ BATCH, HIDDEN }):requires_grad_()
  local f = cell.value_and_grad(function(t, y) return loss_fn(stage2(comm.recv(t, 0)), y) end, nil,
    opt.parameters)
  step = function(_, y) return f(template, y) end
end
for s = 1, steps do
  local loss, grads = step(xs[s], ys[s])
  opt(grads)
  losses[s] = loss:item()
end

-- the reference: one process, the whole model, the same batches
local ref1, ref2 = make_stages()
local ref_params = {}
for _, p in ipairs(ref1:trainable_params()) do ref_params[#ref_params + 1] = p end
for _, p in ipairs(ref2:trainable_params()) do ref_params[#ref_params + 1] = p end
local ref_opt = momentum(ref_params)
local ref_step = cell.value_and_grad(function(x, y) return loss_fn(ref2(ref1(x)), y) end, nil, ref_params)
local ref_losses = {}
for s = 1, steps do
  local loss, grads = ref_step(xs[s], ys[s])
  ref_opt(grads)
  ref_losses[s] = loss:item()
end

local ref = rank == 0 and ref1 or ref2
local diff = 0
local theirs = ref:trainable_params()
for i, p in ipairs(mine:trainable_params()) do
  diff = math.max(diff, (p - theirs[i]):abs():max():item())
end
if rank == 1 then
  for s = 1, steps do diff = math.max(diff, math.abs(losses[s] - ref_losses[s])) end
  print(("rank 1: loss %.4f after step 1, %.4f after step %d (one process: %.4f, %.4f)"):format(losses[1],
    losses[steps], steps, ref_losses[1], ref_losses[steps]))
end
-- rank 0 prints after rank 1, so the lines come in rank order
comm.barrier()
print(("rank %d: stage %d after %d steps: largest difference from one process %.3g (%s)"):format(rank, rank + 1,
  steps, diff, diff <= 1e-5 and "same weights" or "DIFFERENT"))
if diff > 1e-5 then os.exit(1) end
