--- cell.nn Transformer layers: TransformerEncoderLayer,
-- TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and
-- Transformer, as MindSpore 2.7 (and PyTorch) build them, with their
-- sub-cell names (self_attn, multihead_attn, linear1, linear2, norm1..3,
-- dropout1..3; layers.0..; encoder, decoder) so checkpoints map by name.
-- LayerNorm's parameters are MindSpore's gamma / beta (PyTorch's weight /
-- bias). Self-attention runs the fused scaled dot-product attention.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local args_util = require "cell.util.args"
local I = require "cell.nn.internal"
local class = require "cell.class"
local no_grad = require("cell.autograd").no_grad

local M = {}

local LAYER_OPTIONS = { "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first", "norm_first",
  "dtype" }

local function bool_opt(cls, what, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the '%s' must be a boolean, but got %s."):format(cls, what, T.type_name(v)))
  end
  return v
end

-- 'relu', 'gelu', a function or a Cell, as a function of a tensor.
local function activation_fn(cls, act)
  if act == nil or act == "relu" then return function(x) return x:relu() end, "relu" end
  if act == "gelu" then return function(x) return x:gelu() end, "gelu" end
  if type(act) == "function" or I.is_cell(act) then return act, "custom" end
  raise(("ValueError: For '%s', the 'activation' must be 'relu', 'gelu', a function or a Cell, but got %s.")
    :format(cls, type(act) == "string" and ("'" .. act .. "'") or T.type_name(act)))
end

-- The shared arguments of the two layer kinds.
local function layer_init(self, cls, d_model, nhead, ...)
  local dff, dropout, activation, eps, batch_first, norm_first, dtype =
    A.args(cls, LAYER_OPTIONS, select("#", ...), ...)
  d_model = A.positive_int(cls, "d_model", d_model, 4)
  nhead = A.positive_int(cls, "nhead", nhead, 4)
  dff = dff == nil and 2048 or A.positive_int(cls, "dim_feedforward", dff, 4)
  dropout = dropout == nil and 0.1 or dropout
  if type(dropout) ~= "number" or not (dropout >= 0 and dropout < 1) then
    raise(("ValueError: For '%s', the 'dropout' must be a number in range [0, 1), but got %s.")
      :format(cls, type(dropout) == "number" and T.num_str(dropout) or T.type_name(dropout)))
  end
  eps = eps == nil and 1e-5 or eps
  if type(eps) ~= "number" or not (eps > 0) then
    raise(("ValueError: For '%s', the 'layer_norm_eps' must be a positive number, but got %s.")
      :format(cls, type(eps) == "number" and T.num_str(eps) or T.type_name(eps)))
  end
  batch_first = bool_opt(cls, "batch_first", batch_first, false)
  norm_first = bool_opt(cls, "norm_first", norm_first, false)
  local act, act_name = activation_fn(cls, activation)
  local nn = require "cell.nn"
  self._ctor = { d_model, nhead, { dim_feedforward = dff, dropout = dropout, activation = activation,
    layer_norm_eps = eps, batch_first = batch_first, norm_first = norm_first, dtype = dtype } }
  self.d_model, self.nhead, self.dim_feedforward, self.dropout_p = d_model, nhead, dff, dropout
  self.layer_norm_eps, self.batch_first, self.norm_first = eps, batch_first, norm_first
  self._activation, self._activation_name = act, act_name
  self.self_attn = nn.MultiheadAttention(d_model, nhead, { dropout = dropout, batch_first = batch_first, dtype = dtype })
  self.linear1 = nn.Dense(d_model, dff, { dtype = dtype })
  self.dropout = nn.Dropout({ p = dropout })
  self.linear2 = nn.Dense(dff, d_model, { dtype = dtype })
  self.norm1 = nn.LayerNorm({ d_model }, { epsilon = eps, dtype = dtype })
  self.norm2 = nn.LayerNorm({ d_model }, { epsilon = eps, dtype = dtype })
  self.dropout1 = nn.Dropout({ p = dropout })
  self.dropout2 = nn.Dropout({ p = dropout })
  return nn
end

local function ff_block(self, x, drop)
  return drop(self.linear2(self.dropout(self._activation(self.linear1(x)))))
end

local function layer_repr(self)
  return ("d_model=%d, nhead=%d, dim_feedforward=%d, dropout=%s, activation=%s, batch_first=%s, norm_first=%s")
    :format(self.d_model, self.nhead, self.dim_feedforward, T.num_str(self.dropout_p),
      self._activation_name, tostring(self.batch_first),
      tostring(self.norm_first))
end

-- A fresh cell of self's class and arguments, with self's parameter values
-- (PyTorch and MindSpore deep-copy the layer they are given).
local function clone(layer, cls)
  local c = layer._ctor
  local new = layer.__class(c[1], c[2], c[3])
  local src = {}
  for name, p in layer:parameters_and_names() do src[#src + 1] = { name, p } end
  local i = 0
  no_grad(function()
    for _, p in new:parameters_and_names() do
      i = i + 1
      p:copy_(src[i][2])
    end
  end)
  return new
end

-- TransformerEncoderLayer -----------------------------------------------------------

local EncoderLayer = Cell:extend("TransformerEncoderLayer")
M.TransformerEncoderLayer = EncoderLayer

--- TransformerEncoderLayer(d_model, nhead [, dim_feedforward = 2048, dropout = 0.1,
-- activation = 'relu', layer_norm_eps = 1e-5, batch_first = false,
-- norm_first = false, dtype = float32]) or with an options table.
function EncoderLayer:init(d_model, nhead, ...)
  layer_init(self, "TransformerEncoderLayer", d_model, nhead, ...)
end

local ENC_FWD = { "src_mask", "src_key_padding_mask", "is_causal" }

--- forward(src [, {src_mask =, src_key_padding_mask =, is_causal = false}])
function EncoderLayer:construct(src, opts)
  local mask, kpm, causal = args_util.parse("TransformerEncoderLayer", ENC_FWD, 3, opts == nil and 0 or 1, opts)
  check_tensor("TransformerEncoderLayer", "src", src)
  local function sa(x)
    local y = self.self_attn(x, x, x, { attn_mask = mask, key_padding_mask = kpm, need_weights = false,
      is_causal = causal })
    return self.dropout1(y)
  end
  local x = src
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + ff_block(self, self.norm2(x), self.dropout2)
  else
    x = self.norm1(x + sa(x))
    x = self.norm2(x + ff_block(self, x, self.dropout2))
  end
  return x
end

EncoderLayer.extend_repr = layer_repr

-- TransformerDecoderLayer -----------------------------------------------------------

local DecoderLayer = Cell:extend("TransformerDecoderLayer")
M.TransformerDecoderLayer = DecoderLayer

--- TransformerDecoderLayer(d_model, nhead [, ...the encoder layer's options]).
function DecoderLayer:init(d_model, nhead, ...)
  local nn = layer_init(self, "TransformerDecoderLayer", d_model, nhead, ...)
  local o = self._ctor[3]
  self.multihead_attn = nn.MultiheadAttention(self.d_model, self.nhead,
    { dropout = o.dropout, batch_first = o.batch_first, dtype = o.dtype })
  self.norm3 = nn.LayerNorm({ self.d_model }, { epsilon = o.layer_norm_eps, dtype = o.dtype })
  self.dropout3 = nn.Dropout({ p = o.dropout })
end

local DEC_FWD = { "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask", "tgt_is_causal",
  "memory_is_causal" }

--- forward(tgt, memory [, {tgt_mask =, memory_mask =, tgt_key_padding_mask =,
-- memory_key_padding_mask =, tgt_is_causal = false, memory_is_causal = false}])
function DecoderLayer:construct(tgt, memory, opts)
  local tm, mm, tkpm, mkpm, tc, mc = args_util.parse("TransformerDecoderLayer", DEC_FWD, 3, opts == nil and 0 or 1,
    opts)
  check_tensor("TransformerDecoderLayer", "tgt", tgt)
  check_tensor("TransformerDecoderLayer", "memory", memory)
  local function sa(x)
    return self.dropout1(self.self_attn(x, x, x, { attn_mask = tm, key_padding_mask = tkpm, need_weights = false,
      is_causal = tc }))
  end
  local function mha(x)
    return self.dropout2(self.multihead_attn(x, memory, memory, { attn_mask = mm, key_padding_mask = mkpm,
      need_weights = false, is_causal = mc }))
  end
  local x = tgt
  if self.norm_first then
    x = x + sa(self.norm1(x))
    x = x + mha(self.norm2(x))
    x = x + ff_block(self, self.norm3(x), self.dropout3)
  else
    x = self.norm1(x + sa(x))
    x = self.norm2(x + mha(x))
    x = self.norm3(x + ff_block(self, x, self.dropout3))
  end
  return x
end

DecoderLayer.extend_repr = layer_repr

-- TransformerEncoder, TransformerDecoder ----------------------------------------------

local function stack_init(self, cls, layer_cls, layer, num_layers, norm)
  num_layers = A.positive_int(cls, "num_layers", num_layers, 4)
  if not (I.is_cell(layer) and class.is_instance(layer, layer_cls)) then
    raise(("TypeError: For '%s', the '%s' must be a %s, but got %s."):format(cls,
      cls == "TransformerEncoder" and "encoder_layer" or "decoder_layer", layer_cls.name,
      T.type_name(layer)))
  end
  if norm ~= nil and not I.is_cell(norm) then
    raise(("TypeError: For '%s', the 'norm' must be a Cell or nil, but got %s."):format(cls, T.type_name(norm)))
  end
  local list = {}
  for i = 1, num_layers do list[i] = clone(layer, cls) end
  self.layers = require("cell.nn").CellList(list)
  self.num_layers = num_layers
  self.norm = norm
end

local Encoder = Cell:extend("TransformerEncoder")
M.TransformerEncoder = Encoder

--- TransformerEncoder(encoder_layer, num_layers [, norm]): num_layers copies
-- of encoder_layer (each starting from its parameter values), then norm.
function Encoder:init(encoder_layer, num_layers, norm)
  stack_init(self, "TransformerEncoder", EncoderLayer, encoder_layer, num_layers, norm)
end

local ENC_STACK = { "mask", "src_key_padding_mask", "is_causal" }

--- forward(src [, {mask =, src_key_padding_mask =, is_causal = false}])
function Encoder:construct(src, opts)
  local mask, kpm, causal = args_util.parse("TransformerEncoder", ENC_STACK, 3, opts == nil and 0 or 1, opts)
  local x = check_tensor("TransformerEncoder", "src", src)
  for i = 1, self.num_layers do
    x = self.layers[i](x, { src_mask = mask, src_key_padding_mask = kpm, is_causal = causal })
  end
  if self.norm then x = self.norm(x) end
  return x
end

local Decoder = Cell:extend("TransformerDecoder")
M.TransformerDecoder = Decoder

--- TransformerDecoder(decoder_layer, num_layers [, norm])
function Decoder:init(decoder_layer, num_layers, norm)
  stack_init(self, "TransformerDecoder", DecoderLayer, decoder_layer, num_layers, norm)
end

--- forward(tgt, memory [, the decoder layer's options])
function Decoder:construct(tgt, memory, opts)
  local tm, mm, tkpm, mkpm, tc, mc = args_util.parse("TransformerDecoder", DEC_FWD, 3, opts == nil and 0 or 1, opts)
  local x = check_tensor("TransformerDecoder", "tgt", tgt)
  for i = 1, self.num_layers do
    x = self.layers[i](x, memory, { tgt_mask = tm, memory_mask = mm, tgt_key_padding_mask = tkpm,
      memory_key_padding_mask = mkpm, tgt_is_causal = tc, memory_is_causal = mc })
  end
  if self.norm then x = self.norm(x) end
  return x
end

-- Transformer -------------------------------------------------------------------------

local Transformer = Cell:extend("Transformer")
M.Transformer = Transformer

local TF_OPTIONS = { "d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "dropout",
  "activation", "custom_encoder", "custom_decoder", "layer_norm_eps", "batch_first", "norm_first", "dtype" }

--- Transformer([d_model = 512, nhead = 8, num_encoder_layers = 6,
-- num_decoder_layers = 6, dim_feedforward = 2048, dropout = 0.1,
-- activation = 'relu', custom_encoder, custom_decoder, layer_norm_eps = 1e-5,
-- batch_first = false, norm_first = false, dtype]) or an options table.
function Transformer:init(...)
  local d_model, nhead, ne, nd, dff, dropout, activation, cenc, cdec, eps, batch_first, norm_first, dtype =
    A.args("Transformer", TF_OPTIONS, select("#", ...), ...)
  d_model = d_model == nil and 512 or d_model
  nhead = nhead == nil and 8 or nhead
  ne = ne == nil and 6 or ne
  nd = nd == nil and 6 or nd
  local nn = require "cell.nn"
  local lopts = { dim_feedforward = dff, dropout = dropout, activation = activation, layer_norm_eps = eps,
    batch_first = batch_first, norm_first = norm_first, dtype = dtype }
  if cenc ~= nil then
    self.encoder = cenc
  else
    local layer = EncoderLayer(d_model, nhead, lopts)
    self.encoder = Encoder(layer, ne, nn.LayerNorm({ d_model }, { epsilon = layer.layer_norm_eps, dtype = dtype }))
  end
  if cdec ~= nil then
    self.decoder = cdec
  else
    local layer = DecoderLayer(d_model, nhead, lopts)
    self.decoder = Decoder(layer, nd, nn.LayerNorm({ d_model }, { epsilon = layer.layer_norm_eps, dtype = dtype }))
  end
  self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first or false
end

local TF_FWD = { "src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask", "tgt_key_padding_mask",
  "memory_key_padding_mask" }

--- forward(src, tgt [, {src_mask =, tgt_mask =, memory_mask =,
-- src_key_padding_mask =, tgt_key_padding_mask =, memory_key_padding_mask =}])
function Transformer:construct(src, tgt, opts)
  local sm, tm, mm, skpm, tkpm, mkpm = args_util.parse("Transformer", TF_FWD, 3, opts == nil and 0 or 1, opts)
  check_tensor("Transformer", "src", src)
  check_tensor("Transformer", "tgt", tgt)
  local bdim = self.batch_first and 1 or 2
  if #src.shape == 3 and #tgt.shape == 3 and src.shape[bdim] ~= tgt.shape[bdim] then
    raise(("RuntimeError: For 'Transformer', the batch number of src and tgt must be equal, but got %d and %d.")
      :format(src.shape[bdim], tgt.shape[bdim]))
  end
  if src.shape[#src.shape] ~= self.d_model or tgt.shape[#tgt.shape] ~= self.d_model then
    raise(("RuntimeError: For 'Transformer', the feature number of src and tgt must be equal to d_model (%d), "
      .. "but got %s and %s."):format(self.d_model, T.shape_str(src.shape), T.shape_str(tgt.shape)))
  end
  local memory = self.encoder(src, { mask = sm, src_key_padding_mask = skpm })
  return self.decoder(tgt, memory, { tgt_mask = tm, memory_mask = mm, tgt_key_padding_mask = tkpm,
    memory_key_padding_mask = mkpm })
end

--- Transformer.generate_square_subsequent_mask(sz [, dtype]): the float
-- causal mask {sz, sz}, -inf above the diagonal and 0 elsewhere.
function Transformer.generate_square_subsequent_mask(sz, dtype)
  sz = A.positive_int("Transformer", "sz", sz, 3)
  return core.full({ sz, sz }, -math.huge, dtype or core.float32):triu(1)
end

return M
