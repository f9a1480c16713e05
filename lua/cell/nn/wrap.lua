--- cell.nn.WithLossCell and cell.nn.TrainOneStepCell: MindSpore's training
-- wrappers.
--
--     local net_with_loss = nn.WithLossCell(net, nn.MSELoss())
--     local train_net = nn.TrainOneStepCell(net_with_loss, nn.SGD(net:trainable_params()))
--     for x, y in batches do local loss = train_net(x, y) end
--
-- Both are made with auto_prefix = false, as in MindSpore, so the wrapped
-- cells' parameter names stay as they are.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local autograd = require "cell.autograd"
local Cell = require "cell.nn.cell"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args = require "cell.util.args"
local OrderedDict = require "cell.ordered_dict"

local type_name = T.type_name

local M = {}

local is_callable = T.is_callable

-- (required when used: the optimizers load after the wrappers)
local function is_optimizer(v) return require("cell.nn.optim.optimizer").is_optimizer(v) end

-- WithLossCell ----------------------------------------------------------------------

local WithLossCell = Cell:extend("WithLossCell")
M.WithLossCell = WithLossCell

--- WithLossCell(backbone, loss_fn): construct(data, label) is
-- loss_fn(backbone(data), label). loss_fn is a Cell or a function.
function WithLossCell:init(backbone, loss_fn)
  Cell.init(self, { auto_prefix = false })
  if not I.is_cell(backbone) then
    raise(("TypeError: For 'WithLossCell', the 'backbone' must be a Cell, but got %s."):format(type_name(backbone)))
  end
  if not is_callable(loss_fn) then
    raise(("TypeError: For 'WithLossCell', the 'loss_fn' must be a Cell or a function, but got %s.")
      :format(type_name(loss_fn)))
  end
  self._backbone = backbone
  self._loss_fn = loss_fn
end

function WithLossCell:construct(data, label)
  local out = self._backbone(data)
  return self._loss_fn(out, label)
end

--- The wrapped network (MindSpore's backbone_network property).
function WithLossCell:backbone_network() return self._backbone end

-- TrainOneStepCell ------------------------------------------------------------------

local TrainOneStepCell = Cell:extend("TrainOneStepCell")
M.TrainOneStepCell = TrainOneStepCell

local TRAIN_ARGS = { "sens", "return_grad" }

--- TrainOneStepCell(network, optimizer [, sens = 1, return_grad = false])
-- (or {sens = , return_grad = }): construct(...) runs network(...) (which
-- returns the loss), takes the gradients of the loss with respect to the
-- optimizer's parameters, scaled by sens (a non-scalar loss is
-- differentiated as its sum, i.e. a sens of ones), applies the optimizer
-- and returns the loss; with return_grad, the loss and a cell.OrderedDict
-- of parameter name -> gradient in the optimizer's parameter order
-- (MindSpore 2.x's dict of the gradients the optimizer was given). The
-- network (and the optimizer) are put in training mode.
function TrainOneStepCell:init(network, optimizer, ...)
  local sens, return_grad = args.parse("TrainOneStepCell", TRAIN_ARGS, 3, select("#", ...), ...)
  Cell.init(self, { auto_prefix = false })
  if not I.is_cell(network) then
    raise(("TypeError: For 'TrainOneStepCell', the 'network' must be a Cell, but got %s."):format(type_name(network)))
  end
  if not is_optimizer(optimizer) then
    raise(("TypeError: For 'TrainOneStepCell', the 'optimizer' must be an optimizer (nn.Optimizer), but got %s.")
      :format(type_name(optimizer)))
  end
  if sens == nil then sens = 1 end
  if type(sens) ~= "number" or sens ~= sens or sens == math.huge or sens == -math.huge then
    raise(("TypeError: For 'TrainOneStepCell', the 'sens' must be a finite number, but got %s.")
      :format(type(sens) == "number" and tostring(sens) or type_name(sens)))
  end
  if return_grad == nil then return_grad = false end
  if type(return_grad) ~= "boolean" then
    raise(("TypeError: For 'TrainOneStepCell', the 'return_grad' must be a boolean, but got %s.")
      :format(type_name(return_grad)))
  end
  self.network = network
  self.optimizer = optimizer
  self.sens = sens
  self.return_grad = return_grad
  local weights = {}
  local params = optimizer.parameters
  for i = 1, #params do weights[i] = params[i] end
  self.weights = weights -- a plain list: an attribute, not registered again
  network:set_grad()
  self:set_train(true)
  -- The forward pass keeps the loss it returned, so the cell can return it
  -- whatever the differentiated value was.
  local held = {}
  self._held = held
  local function forward(...)
    local loss = network(...)
    if not core.is_tensor(loss) then
      error(("TypeError: For 'TrainOneStepCell', the network must return the loss as a Tensor, but got %s.")
        :format(type_name(loss)), 0)
    end
    held.loss = loss
    if loss:numel() ~= 1 then return loss:sum() end
    return loss
  end
  self._grad_fn = autograd.value_and_grad(forward, nil, weights)
  -- Data-parallel training (cell.set_auto_parallel_context): the gradients
  -- are all-reduced across ranks before the optimizer's step.
  self.grad_reducer = require("cell.nn.distributed")._reducer_for(weights)
end

local mul_ = core.Tensor.mul_

function TrainOneStepCell:construct(...)
  local held = self._held
  -- armed: the reducer's hooks start each bucket's all-reduce during backward
  if self.grad_reducer then self.grad_reducer:_arm() end
  local _, grads = self._grad_fn(...)
  local loss = held.loss
  held.loss = nil
  if self.grad_reducer then grads = self.grad_reducer(grads) end
  local sens = self.sens
  if sens ~= 1 then
    for i = 1, #grads do mul_(grads[i], sens) end
  end
  self.optimizer(grads)
  if self.return_grad then
    -- named as the parameters are named now (MindSpore reads the names when
    -- it is made; they only differ if a parameter was renamed since)
    local weights = self.weights
    local named = OrderedDict()
    for i = 1, #weights do named[weights[i].name] = grads[i] end
    return loss, named
  end
  return loss
end

return M
