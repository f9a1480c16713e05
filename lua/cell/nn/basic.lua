--- cell.nn.Flatten and cell.nn.Embedding, as MindSpore 2.x defines them,
-- counted from 1: Flatten's start_dim defaults to 2 (MindSpore's 1, the
-- dimension after the batch), and Embedding's ids and padding_idx are
-- 1-based (id 1 is the table's first row).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local initializer = require "cell.initializer"
local Parameter = require("cell.parameter").Parameter
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local ops = require "cell.ops"

local M = {}

-- Flatten --------------------------------------------------------------------

local Flatten = Cell:extend("Flatten")
M.Flatten = Flatten

local function check_dim(what, v, lvl)
  if type(v) ~= "number" or not T.is_int(v) then
    raise(("TypeError: For 'Flatten', the '%s' must be an integer, but got %s.")
      :format(what, type(v) == "number" and T.num_str(v) or T.type_name(v)))
  end
  if v == 0 then
    raise(("ValueError: For 'Flatten', the '%s' is 1-based (or negative, -1 for the last), but got 0."):format(what))
  end
  return v
end

--- Flatten([start_dim = 2, end_dim = -1]) or Flatten{start_dim = , end_dim = }.
function Flatten:init(...)
  local start_dim, end_dim = A.args("Flatten", { "start_dim", "end_dim" }, select("#", ...), ...)
  self.start_dim = check_dim("start_dim", start_dim == nil and 2 or start_dim, 3)
  self.end_dim = check_dim("end_dim", end_dim == nil and -1 or end_dim, 3)
end

function Flatten:construct(x)
  if not core.is_tensor(x) then check_tensor("Flatten", "x", x) end
  local st = rawget(self, I.S)
  local start_dim, end_dim = st.attrs.start_dim, st.attrs.end_dim -- plain attributes live there
  if start_dim == nil then start_dim = self.start_dim end
  if end_dim == nil then end_dim = self.end_dim end
  local shape = x.shape
  local r = #shape
  -- MindSpore's ops.flatten: with the default dimensions (its start_dim = 1,
  -- 2 here, and end_dim = -1) a 0-D or 1-D input is reshaped to 1-D, unchecked
  if r <= 1 and start_dim == 2 and end_dim == -1 then return x:reshape({ -1 }) end
  -- otherwise the dimensions are checked against max(rank, 1) and the result
  -- is 1-D as well (a 0-D input as shape {1})
  if r == 0 then x, shape, r = x:reshape({ 1 }), { 1 }, 1 end
  local s = start_dim < 0 and start_dim + r + 1 or start_dim
  local e = end_dim < 0 and end_dim + r + 1 or end_dim
  if s < 1 or s > r or e < 1 or e > r then
    raise(("ValueError: For 'Flatten', 'start_dim' (%d) and 'end_dim' (%d) must be in range [%d, -1] or [1, %d] for "
      .. "an input of shape %s."):format(start_dim, end_dim, -r, r, T.shape_str(x.shape)))
  end
  if s > e then
    raise(("ValueError: For 'Flatten', 'start_dim' (%d) must come before 'end_dim' (%d), but for an input of shape %s "
      .. "they are dimensions %d and %d."):format(start_dim, end_dim, T.shape_str(shape), s, e))
  end
  if s == e then return x end
  local y = x:flatten(s, e)
  return y
end

-- Embedding ------------------------------------------------------------------

local Embedding = Cell:extend("Embedding")
M.Embedding = Embedding

local EMB_OPTIONS = { "use_one_hot", "embedding_table", "dtype", "padding_idx" }

--- Embedding(vocab_size, embedding_size [, use_one_hot = false,
-- embedding_table = "normal", dtype = int32, padding_idx = nil]), or the two
-- sizes and an options table. `dtype` is the dtype of the ids (MindSpore's
-- meaning); the table is float32. padding_idx (1-based) zeroes that row of
-- the table when it is made, as MindSpore does (its gradient is not masked).
-- use_one_hot selects MindSpore's one-hot matmul formulation, which gives
-- the same values and gradients as the lookup done here.
function Embedding:init(vocab_size, embedding_size, ...)
  local use_one_hot, embedding_table, dtype, padding_idx = A.args("Embedding", EMB_OPTIONS, select("#", ...), ...)
  A.positive_int("Embedding", "vocab_size", vocab_size, 3, true)
  A.positive_int("Embedding", "embedding_size", embedding_size, 3, true)
  use_one_hot = A.bool("Embedding", "use_one_hot", use_one_hot, false, 3)
  if dtype == nil then dtype = core.int32 end
  if not core.is_dtype(dtype) or dtype.is_floating_point or dtype == core.bool then
    raise(("TypeError: For 'Embedding', the 'dtype' (of the ids) must be an integer dtype, but got %s.")
      :format(core.is_dtype(dtype) and tostring(dtype) or T.type_name(dtype)))
  end
  if padding_idx ~= nil then
    if type(padding_idx) ~= "number" or not T.is_int(padding_idx) then
      raise(("TypeError: For 'Embedding', the 'padding_idx' must be an integer, but got %s.")
        :format(type(padding_idx) == "number" and T.num_str(padding_idx) or T.type_name(padding_idx)))
    end
    if padding_idx < 1 or padding_idx > vocab_size then
      raise(("ValueError: For 'Embedding', the 'padding_idx' must be in range [1, %d] (1-based), but got %s.")
        :format(vocab_size, T.num_str(padding_idx)))
    end
  end
  local shape = { vocab_size, embedding_size }
  if embedding_table == nil then embedding_table = "normal" end
  if core.is_tensor(embedding_table) and not T.same_shape(embedding_table.shape, shape) then
    raise(("ValueError: For 'Embedding', the 'embedding_table' shape must be %s, but got %s.")
      :format(T.shape_str(shape), T.shape_str(embedding_table.shape)))
  end
  local data = initializer.initializer(embedding_table, shape, core.float32):init_data()
  if padding_idx ~= nil then data[padding_idx]:zero_() end
  self.vocab_size, self.embedding_size, self.use_one_hot = vocab_size, embedding_size, use_one_hot
  self.dtype, self.padding_idx = dtype, padding_idx
  self.embedding_table = Parameter(data, "embedding_table")
end

function Embedding:construct(ids)
  if not core.is_tensor(ids) or ids.dtype.is_floating_point or ids.dtype == core.bool then
    raise(("TypeError: For 'Embedding', the ids must be an integer Tensor, but got %s.")
      :format(core.is_tensor(ids) and ("a " .. tostring(ids.dtype) .. " Tensor") or T.type_name(ids)))
  end
  local y = ops.embedding(ids, self.embedding_table)
  return y
end

function Embedding:extend_repr()
  return ("vocab_size=%d, embedding_size=%d, use_one_hot=%s, embedding_table=%s, dtype=%s, padding_idx=%s")
    :format(self.vocab_size, self.embedding_size, tostring(self.use_one_hot), tostring(self.embedding_table),
      tostring(self.dtype), A.value_str(self.padding_idx))
end

return M
