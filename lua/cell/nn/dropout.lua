--- cell.nn.Dropout: MindSpore 2.x's dropout layer, on cell.ops.dropout.
-- In training mode (set_train) it zeroes each element with probability p
-- (drawn from the engine's seeded generator, cell.set_seed) and scales the
-- kept ones by 1 / (1 - p); in inference it returns its input.
-- Dropout{p = 0.2} is the way to call it: as in MindSpore, the first
-- positional argument is the deprecated keep_prob (the probability to keep),
-- so Dropout(0.8) keeps 80%. With neither, p = 0.5. The third argument,
-- dtype, is MindSpore's deprecated one: it must be a dtype and is otherwise
-- ignored, as MindSpore ignores it (the output has the input's dtype).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"

local Dropout = Cell:extend("Dropout")

local OPTIONS = { "keep_prob", "p", "dtype" }

--- Dropout([keep_prob, p, dtype]) or Dropout{p = , keep_prob = , dtype = }.
function Dropout:init(...)
  local keep_prob, p, dtype = A.args("Dropout", OPTIONS, select("#", ...), ...)
  if dtype ~= nil and not core.is_dtype(dtype) then
    raise(("TypeError: For 'Dropout', the 'dtype' must be a dtype (such as cell.float32), but got %s.")
      :format(T.type_name(dtype)))
  end
  if keep_prob ~= nil and p == nil then
    if type(keep_prob) ~= "number" then
      raise(("TypeError: For 'Dropout', the 'keep_prob' must be a number, but got %s."):format(T.type_name(keep_prob)))
    end
    if not (keep_prob > 0 and keep_prob <= 1) then
      raise(("ValueError: For 'Dropout', the 'keep_prob' must be a number in range (0, 1], but got %s.")
        :format(T.num_str(keep_prob)))
    end
    self.keep_prob, self._p = keep_prob, 1 - keep_prob
  else
    if p == nil then p = 0.5 end
    if type(p) ~= "number" then
      raise(("TypeError: For 'Dropout', the 'p' must be a number, but got %s."):format(T.type_name(p)))
    end
    if not (p >= 0 and p < 1) then
      raise(("ValueError: For 'Dropout', the 'p' must be a number in range [0, 1), but got %s."):format(T.num_str(p)))
    end
    self.p, self._p = p, p
  end
end

function Dropout:construct(x)
  check_tensor("Dropout", "x", x)
  if not self.training or self._p == 0 then return x end
  local y = ops.dropout(x, self._p, true)
  return y
end

function Dropout:extend_repr()
  if self.p == nil then return "keep_prob=" .. T.num_str(self.keep_prob) end
  return "p=" .. T.num_str(self.p)
end

return { Dropout = Dropout }
