--- cell.nn.RNN, LSTM, GRU and their single-step cells RNNCell, LSTMCell,
-- GRUCell, with MindSpore 2.7's signatures and parameter names
-- (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse; a cell's
-- weight_ih, weight_hh, bias_ih, bias_hh), gate orders as MindSpore and
-- PyTorch (LSTM i, f, g, o; GRU r, z, n) and PyTorch's initialisation
-- U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)). The time loop of each layer
-- and direction is one call of core.nnops.rnn (src/ops/rnn.c), forward and
-- backward through time in C. MindSpore's tuples are Lua tables: an LSTM
-- takes hx = {h0, c0} and returns output, {h_n, c_n}; an LSTMCell takes
-- {h, c} and returns {h', c'}.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local initializer = require "cell.initializer"
local Parameter = require("cell.parameter").Parameter
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"

local nnops = core.nnops
local GATES = { RNN = 1, LSTM = 4, GRU = 3 }

local fail = require("cell.errors").raisef -- raise(fmt:format(...))

local function check_int(cls, what, v, min)
  if not T.is_int(v) then
    fail("TypeError: For '%s', the '%s' must be an int, but got %s.", cls, what, T.type_name(v))
  end
  if v < min then
    fail("ValueError: For '%s', the '%s' must be at least %d, but got %s.", cls, what, min, T.num_str(v))
  end
end

local function check_bool(cls, what, v)
  if type(v) ~= "boolean" then
    fail("TypeError: For '%s', the '%s' must be a bool, but got %s.", cls, what, T.type_name(v))
  end
end

local function mode_of(cls, kind, nonlinearity)
  if kind ~= "RNN" then return kind end
  if nonlinearity == "tanh" then return "RNN_TANH" end
  if nonlinearity == "relu" then return "RNN_RELU" end
  fail("ValueError: For '%s', the 'nonlinearity' must be 'tanh' or 'relu', but got %s.", cls,
    type(nonlinearity) == "string" and ("'" .. nonlinearity .. "'") or T.type_name(nonlinearity))
end

--- A Parameter of the given shape drawn from U(-k, k).
local function uniform_param(shape, k, dtype, name)
  return Parameter(initializer.initializer(initializer.Uniform(k), shape, dtype):init_data(), name)
end

-- --- the multi-layer nets ------------------------------------------------------------------

local RNNBase = Cell:extend("RNNBase")

local NET_OPTIONS = {
  RNN = { "num_layers", "nonlinearity", "has_bias", "batch_first", "dropout", "bidirectional", "dtype" },
  LSTM = { "num_layers", "has_bias", "batch_first", "dropout", "bidirectional", "dtype" },
  GRU = { "num_layers", "has_bias", "batch_first", "dropout", "bidirectional", "dtype" },
}

local function net_init(self, kind, input_size, hidden_size, ...)
  local cls = kind
  local o = { A.args(cls, NET_OPTIONS[kind], select("#", ...), ...) }
  local opt = {}
  for i, k in ipairs(NET_OPTIONS[kind]) do opt[k] = o[i] end
  check_int(cls, "input_size", input_size, 1)
  check_int(cls, "hidden_size", hidden_size, 1)
  local num_layers = opt.num_layers == nil and 1 or opt.num_layers
  check_int(cls, "num_layers", num_layers, 1)
  local has_bias = opt.has_bias
  if has_bias == nil then has_bias = true end
  local batch_first = opt.batch_first
  if batch_first == nil then batch_first = false end
  local bidirectional = opt.bidirectional
  if bidirectional == nil then bidirectional = false end
  check_bool(cls, "has_bias", has_bias)
  check_bool(cls, "batch_first", batch_first)
  check_bool(cls, "bidirectional", bidirectional)
  local dropout = opt.dropout == nil and 0 or opt.dropout
  if type(dropout) ~= "number" then
    fail("TypeError: For '%s', the 'dropout' must be a float, but got %s.", cls, T.type_name(dropout))
  end
  if not (dropout >= 0 and dropout < 1) then
    fail("ValueError: For '%s', the 'dropout' must be a number in range [0, 1), but got %s.", cls, T.num_str(dropout))
  end
  local nonlinearity = opt.nonlinearity == nil and "tanh" or opt.nonlinearity
  self._mode = mode_of(cls, kind, nonlinearity)
  self._kind = kind
  self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
  self.has_bias, self.batch_first, self.bidirectional, self.dropout = has_bias, batch_first, bidirectional, dropout
  if kind == "RNN" then self.nonlinearity = nonlinearity end
  self.num_directions = bidirectional and 2 or 1
  local dtype = opt.dtype or core.float32
  local G, k = GATES[kind], 1 / math.sqrt(hidden_size)
  for l = 0, num_layers - 1 do
    local in_size = l == 0 and input_size or hidden_size * self.num_directions
    for d = 0, self.num_directions - 1 do
      local sfx = "_l" .. l .. (d == 1 and "_reverse" or "")
      self["weight_ih" .. sfx] = uniform_param({ G * hidden_size, in_size }, k, dtype, "weight_ih" .. sfx)
      self["weight_hh" .. sfx] = uniform_param({ G * hidden_size, hidden_size }, k, dtype, "weight_hh" .. sfx)
      if has_bias then
        self["bias_ih" .. sfx] = uniform_param({ G * hidden_size }, k, dtype, "bias_ih" .. sfx)
        self["bias_hh" .. sfx] = uniform_param({ G * hidden_size }, k, dtype, "bias_hh" .. sfx)
      end
    end
  end
end

--- One initial state ({L * D, B, H}) checked, or zeros.
local function state_of(cls, what, v, want, dtype)
  if v == nil then return core.zeros(want, dtype) end
  check_tensor(cls, what, v)
  if not T.same_shape(v.shape, want) then
    fail("ValueError: For '%s', the '%s' must have shape %s, but got %s.", cls, what, T.shape_str(want),
      T.shape_str(v.shape))
  end
  return v
end

function RNNBase:construct(x, hx, seq_length)
  local cls = self._kind
  check_tensor(cls, "x", x)
  local shape = x.shape
  if #shape ~= 3 then
    fail("ValueError: For '%s', the input 'x' must be 3-D (%s), but got shape %s.", cls,
      self.batch_first and "batch, seq_len, input_size" or "seq_len, batch, input_size", T.shape_str(shape))
  end
  if shape[3] ~= self.input_size then
    fail("ValueError: For '%s', the last dimension of 'x' must be input_size (%d), but got shape %s.", cls,
      self.input_size, T.shape_str(shape))
  end
  if self.batch_first then x = x:transpose(1, 2) end
  local Tn, B, H = x.shape[1], x.shape[2], self.hidden_size
  local L, D = self.num_layers, self.num_directions
  local want = { L * D, B, H }
  local h0, c0
  if self._kind == "LSTM" then
    if hx ~= nil and not (type(hx) == "table" and not core.is_tensor(hx) and hx[1] ~= nil and hx[2] ~= nil) then
      fail("TypeError: For 'LSTM', the 'hx' must be a table {h0, c0} of two Tensors, but got %s.", T.type_name(hx))
    end
    h0 = state_of(cls, "h0", hx and hx[1], want, x.dtype)
    c0 = state_of(cls, "c0", hx and hx[2], want, x.dtype)
  else
    h0 = state_of(cls, "hx", hx, want, x.dtype)
  end
  if seq_length ~= nil then
    if type(seq_length) == "table" and not core.is_tensor(seq_length) then
      seq_length = core.tensor(seq_length, core.int64)
    end
    check_tensor(cls, "seq_length", seq_length)
  end
  local p = self.dropout
  local inp, hs, cs = x, {}, {}
  for l = 0, L - 1 do
    local outs = {}
    for d = 0, D - 1 do
      local sfx = "_l" .. l .. (d == 1 and "_reverse" or "")
      local idx = l * D + d + 1
      local packed = nnops.rnn(self._mode, inp, h0:select(1, idx), c0 and c0:select(1, idx),
        self["weight_ih" .. sfx], self["weight_hh" .. sfx], self["bias_ih" .. sfx], self["bias_hh" .. sfx],
        seq_length, d == 1)
      outs[d + 1] = packed:narrow(1, 1, Tn)
      hs[idx] = packed:select(1, Tn + 1)
      if c0 then cs[idx] = packed:select(1, Tn + 2) end
    end
    inp = D == 2 and core.cat(outs, 3) or outs[1]
    if p > 0 and self.training and l < L - 1 then inp = nnops.dropout(inp, p, true) end
  end
  local out = self.batch_first and inp:transpose(1, 2) or inp
  local h_n = core.stack(hs, 1)
  if c0 then return out, { h_n, core.stack(cs, 1) } end
  return out, h_n
end

function RNNBase:extend_repr()
  local s = ("input_size=%d, hidden_size=%d, num_layers=%d"):format(self.input_size, self.hidden_size,
    self.num_layers)
  if self.nonlinearity and self.nonlinearity ~= "tanh" then s = s .. ", nonlinearity=" .. self.nonlinearity end
  if not self.has_bias then s = s .. ", has_bias=false" end
  if self.batch_first then s = s .. ", batch_first=true" end
  if self.dropout ~= 0 then s = s .. ", dropout=" .. T.num_str(self.dropout) end
  if self.bidirectional then s = s .. ", bidirectional=true" end
  return s
end

local RNN = RNNBase:extend("RNN")
--- RNN(input_size, hidden_size [, num_layers = 1, nonlinearity = "tanh",
-- has_bias = true, batch_first = false, dropout = 0, bidirectional = false,
-- dtype = float32]) or RNN(input_size, hidden_size, {options}).
function RNN:init(input_size, hidden_size, ...) net_init(self, "RNN", input_size, hidden_size, ...) end

local LSTM = RNNBase:extend("LSTM")
function LSTM:init(input_size, hidden_size, ...) net_init(self, "LSTM", input_size, hidden_size, ...) end

local GRU = RNNBase:extend("GRU")
function GRU:init(input_size, hidden_size, ...) net_init(self, "GRU", input_size, hidden_size, ...) end

-- --- the single-step cells ---------------------------------------------------------------------

local CellBase = Cell:extend("RNNCellBase")

local CELL_OPTIONS = {
  RNNCell = { "has_bias", "nonlinearity", "dtype" },
  LSTMCell = { "has_bias", "dtype" },
  GRUCell = { "has_bias", "dtype" },
}
local CELL_KIND = { RNNCell = "RNN", LSTMCell = "LSTM", GRUCell = "GRU" }

local function cell_init(self, cls, input_size, hidden_size, ...)
  local o = { A.args(cls, CELL_OPTIONS[cls], select("#", ...), ...) }
  local opt = {}
  for i, k in ipairs(CELL_OPTIONS[cls]) do opt[k] = o[i] end
  check_int(cls, "input_size", input_size, 1)
  check_int(cls, "hidden_size", hidden_size, 1)
  local has_bias = opt.has_bias
  if has_bias == nil then has_bias = true end
  check_bool(cls, "has_bias", has_bias)
  local kind = CELL_KIND[cls]
  local nonlinearity = opt.nonlinearity == nil and "tanh" or opt.nonlinearity
  self._mode, self._cls = mode_of(cls, kind, nonlinearity), cls
  self.input_size, self.hidden_size, self.has_bias = input_size, hidden_size, has_bias
  if kind == "RNN" then self.nonlinearity = nonlinearity end
  local dtype = opt.dtype or core.float32
  local G, k = GATES[kind], 1 / math.sqrt(hidden_size)
  self.weight_ih = uniform_param({ G * hidden_size, input_size }, k, dtype, "weight_ih")
  self.weight_hh = uniform_param({ G * hidden_size, hidden_size }, k, dtype, "weight_hh")
  if has_bias then
    self.bias_ih = uniform_param({ G * hidden_size }, k, dtype, "bias_ih")
    self.bias_hh = uniform_param({ G * hidden_size }, k, dtype, "bias_hh")
  end
end

function CellBase:construct(x, hx)
  local cls = self._cls
  check_tensor(cls, "x", x)
  local shape, n = x.shape, #x.shape
  if (n ~= 1 and n ~= 2) or shape[n] ~= self.input_size then
    fail("ValueError: For '%s', the input 'x' must have shape (batch, %d) or (%d), but got %s.", cls,
      self.input_size, self.input_size, T.shape_str(shape))
  end
  local B = n == 2 and shape[1] or 1
  local want = n == 2 and { B, self.hidden_size } or { self.hidden_size }
  local h0, c0
  if self._mode == "LSTM" then
    if hx ~= nil and not (type(hx) == "table" and not core.is_tensor(hx) and hx[1] ~= nil and hx[2] ~= nil) then
      fail("TypeError: For 'LSTMCell', the 'hx' must be a table {h, c} of two Tensors, but got %s.", T.type_name(hx))
    end
    h0 = state_of(cls, "h", hx and hx[1], want, x.dtype)
    c0 = state_of(cls, "c", hx and hx[2], want, x.dtype)
  else
    h0 = state_of(cls, "hx", hx, want, x.dtype)
  end
  local H = self.hidden_size
  local flat = { B, H }
  local packed = nnops.rnn(self._mode, x:reshape({ 1, B, self.input_size }), h0:reshape(flat),
    c0 and c0:reshape(flat), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, nil, false)
  local h = packed:select(1, 2)
  if n == 1 then h = h:reshape({ H }) end
  if not c0 then return h end
  local c = packed:select(1, 3)
  if n == 1 then c = c:reshape({ H }) end
  return { h, c }
end

function CellBase:extend_repr()
  local s = ("input_size=%d, hidden_size=%d"):format(self.input_size, self.hidden_size)
  if not self.has_bias then s = s .. ", has_bias=false" end
  if self.nonlinearity and self.nonlinearity ~= "tanh" then s = s .. ", nonlinearity=" .. self.nonlinearity end
  return s
end

local RNNCell = CellBase:extend("RNNCell")
function RNNCell:init(input_size, hidden_size, ...) cell_init(self, "RNNCell", input_size, hidden_size, ...) end
local LSTMCell = CellBase:extend("LSTMCell")
function LSTMCell:init(input_size, hidden_size, ...) cell_init(self, "LSTMCell", input_size, hidden_size, ...) end
local GRUCell = CellBase:extend("GRUCell")
function GRUCell:init(input_size, hidden_size, ...) cell_init(self, "GRUCell", input_size, hidden_size, ...) end

return { RNN = RNN, LSTM = LSTM, GRU = GRU, RNNCell = RNNCell, LSTMCell = LSTMCell, GRUCell = GRUCell }
