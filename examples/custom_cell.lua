--- custom_cell.lua - a custom Cell with a buffer and hooks: a Dense layer
-- that keeps a running average of its inputs' norm in a buffer (saved in
-- the state_dict), a forward hook that logs, a backward hook that clips the
-- gradient flowing to the layer's input, and a state_dict round trip.
-- Run: bin/cell examples/custom_cell.lua
local cell = require "cell"
local nn = cell.nn

local Tracked = nn.Cell:extend("Tracked")

function Tracked:init(n_in, n_out)
  self.dense = nn.Dense(n_in, n_out)
  self:register_buffer("mean_norm", cell.zeros({}))   -- persistent: in state_dict
  self:register_buffer("calls", cell.zeros({}, cell.int64), false) -- not saved
end

function Tracked:construct(x)
  if self.training then
    cell.no_grad(function()
      local n = x:norm():item()
      self.mean_norm:mul_(0.9):add_(0.1 * n)
      self.calls:add_(1)
    end)
  end
  return self.dense(x):tanh()
end

function Tracked:extend_repr() return "tracks the mean input norm" end

cell.set_seed(7)
local net = Tracked(4, 2)
net:set_train(true)
print(net)

local log = net:register_forward_hook(function(c, args, out)
  print(("forward: input %s -> output %s"):format(table.concat(args[1].shape, "x"), table.concat(out.shape, "x")))
end)
net:register_backward_hook(function(c, grad_input, grad_output)
  local g = grad_input[1]
  if g then return { g:clamp(-0.01, 0.01) } end  -- clip what flows back to the input
end)

local x = cell.randn({ 3, 4 })
local gx = cell.grad(function(a) return net(a):sum() end)(x)
print("clipped input gradient, max |g| =", gx:abs():max():item())
log:remove()
for _ = 1, 5 do net(cell.randn({ 3, 4 })) end

local sd = net:state_dict()
print("state_dict keys:", table.concat(sd:keys(), ", "))
print(("mean_norm = %.4f after %d calls"):format(net.mean_norm:item(), net.calls:item()))

local copy = Tracked(4, 2)
print(copy:load_state_dict(sd))
print(("restored mean_norm = %.4f"):format(copy.mean_norm:item()))
