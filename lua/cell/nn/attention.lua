--- cell.nn.MultiheadAttention: MindSpore's (and PyTorch's) multi-head
-- attention, with their parameter names (in_proj_weight {3E, E},
-- in_proj_bias {3E}, out_proj.weight / out_proj.bias; q_proj_weight,
-- k_proj_weight, v_proj_weight when kdim or vdim differ from embed_dim;
-- bias_k, bias_v with add_bias_kv), so checkpoints map by name.
-- Without need_weights the attention runs as one fused op
-- (cell.ops.scaled_dot_product_attention); with it, the weights are
-- computed explicitly and returned.
-- Masks follow MindSpore/PyTorch's MultiheadAttention: a bool
-- key_padding_mask {N, S} or attn_mask {L, S} / {N * num_heads, L, S} is
-- true where attention is NOT allowed; float masks are added to the scores.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local check_tensor = require("cell.errors").check_tensor
local raise = require("cell.errors").raise
local Cell = require "cell.nn.cell"
local core = require "cell.core"
local ops = require "cell.ops"
local dense = core.nnops.dense
local initializer = require "cell.initializer"
local Parameter = require("cell.parameter").Parameter
local T = require "cell.util.types"
local A = require "cell.nn.layer_args"
local args_util = require "cell.util.args"

local MHA = Cell:extend("MultiheadAttention")
local NAME = "MultiheadAttention"

local OPTIONS = { "dropout", "has_bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first", "dtype" }

local function bool_opt(what, v, default)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the '%s' must be a boolean, but got %s."):format(NAME, what, T.type_name(v)))
  end
  return v
end

--- MultiheadAttention(embed_dim, num_heads [, dropout = 0, has_bias = true,
-- add_bias_kv = false, add_zero_attn = false, kdim = embed_dim,
-- vdim = embed_dim, batch_first = false, dtype = float32]) or with an
-- options table.
function MHA:init(embed_dim, num_heads, ...)
  local dropout, has_bias, add_bias_kv, add_zero_attn, kdim, vdim, batch_first, dtype =
    A.args(NAME, OPTIONS, select("#", ...), ...)
  embed_dim = A.positive_int(NAME, "embed_dim", embed_dim, 3)
  num_heads = A.positive_int(NAME, "num_heads", num_heads, 3)
  if embed_dim % num_heads ~= 0 then
    raise(("ValueError: For '%s', the 'embed_dim' (%d) must be divisible by 'num_heads' (%d).")
      :format(NAME, embed_dim, num_heads))
  end
  dropout = dropout == nil and 0 or dropout
  if type(dropout) ~= "number" then
    raise(("TypeError: For '%s', the 'dropout' must be a number, but got %s."):format(NAME, T.type_name(dropout)))
  end
  if not (dropout >= 0 and dropout < 1) then
    raise(("ValueError: For '%s', the 'dropout' must be in range [0, 1), but got %s."):format(NAME, T.num_str(dropout)))
  end
  has_bias = bool_opt("has_bias", has_bias, true)
  add_bias_kv = bool_opt("add_bias_kv", add_bias_kv, false)
  add_zero_attn = bool_opt("add_zero_attn", add_zero_attn, false)
  batch_first = bool_opt("batch_first", batch_first, false)
  kdim = kdim == nil and embed_dim or A.positive_int(NAME, "kdim", kdim, 3)
  vdim = vdim == nil and embed_dim or A.positive_int(NAME, "vdim", vdim, 3)
  dtype = A.float_dtype(NAME, dtype, 3)
  self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim / num_heads
  self.dropout, self.has_bias, self.batch_first = dropout, has_bias, batch_first
  self.add_bias_kv, self.add_zero_attn, self.kdim, self.vdim = add_bias_kv, add_zero_attn, kdim, vdim
  self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
  local function p(shape, init, name)
    return Parameter(initializer.initializer(init, shape, dtype):init_data(), name)
  end
  if self._qkv_same_embed_dim then
    self.in_proj_weight = p({ 3 * embed_dim, embed_dim }, initializer.XavierUniform(), "in_proj_weight")
  else
    self.q_proj_weight = p({ embed_dim, embed_dim }, initializer.XavierUniform(), "q_proj_weight")
    self.k_proj_weight = p({ embed_dim, kdim }, initializer.XavierUniform(), "k_proj_weight")
    self.v_proj_weight = p({ embed_dim, vdim }, initializer.XavierUniform(), "v_proj_weight")
  end
  if has_bias then self.in_proj_bias = p({ 3 * embed_dim }, "zeros", "in_proj_bias") end
  local Dense = require("cell.nn.dense").Dense
  self.out_proj = Dense(embed_dim, embed_dim, { has_bias = has_bias, bias_init = "zeros", dtype = dtype })
  if add_bias_kv then
    self.bias_k = p({ 1, 1, embed_dim }, initializer.XavierNormal(), "bias_k")
    self.bias_v = p({ 1, 1, embed_dim }, initializer.XavierNormal(), "bias_v")
  end
end

-- x {N, T, D} @ w^T + b: one fused linear op (the weight read through its
-- transpose's strides, the bias added in the same pass)
local function project(x, w, b)
  return dense(x, w, b)
end

-- A mask as an additive float mask of dtype dt (bool: true -> -inf).
local function additive(m, dt)
  if m.dtype == core.bool then
    return core.zeros(m.shape, dt):masked_fill(m, -math.huge)
  end
  return m:astype(dt)
end

-- Append a column of zeros (float) or false (bool) on the last dimension.
local function pad_last(m)
  local n = #m.shape
  local pads = {}
  for i = 1, 2 * n do pads[i] = 0 end
  pads[2] = 1 -- the last dimension's right side (pads list the last dimension first)
  if m.dtype == core.bool then return ops.pad(m:astype(core.uint8), pads, 0):astype(core.bool) end
  return ops.pad(m, pads, 0)
end

local FWD = { "key_padding_mask", "attn_mask", "need_weights", "average_attn_weights", "is_causal" }

--- forward(query, key, value [, {key_padding_mask =, attn_mask =,
-- need_weights = true, average_attn_weights = true, is_causal = false}]):
-- attn_output, attn_weights (nil without need_weights).
function MHA:construct(query, key, value, opts)
  local kpm, attn_mask, need_weights, average, is_causal = args_util.parse(NAME, FWD, 3, opts == nil and 0 or 1, opts)
  check_tensor(NAME, "query", query)
  check_tensor(NAME, "key", key)
  check_tensor(NAME, "value", value)
  need_weights = need_weights == nil and true or need_weights
  average = average == nil and true or average
  local E, H, hd = self.embed_dim, self.num_heads, self.head_dim
  local qn = #query.shape
  if qn ~= 2 and qn ~= 3 then
    raise(("ValueError: For '%s', query must be 2-D (unbatched) or 3-D, but got shape %s.")
      :format(NAME, T.shape_str(query.shape)))
  end
  if #key.shape ~= qn or #value.shape ~= qn then
    raise(("ValueError: For '%s', query, key and value must have the same number of dimensions, but got %s, %s, %s.")
      :format(NAME, T.shape_str(query.shape), T.shape_str(key.shape), T.shape_str(value.shape)))
  end
  if query.shape[qn] ~= E or key.shape[qn] ~= self.kdim or value.shape[qn] ~= self.vdim then
    raise(("ValueError: For '%s', the last dimensions of query, key and value must be embed_dim, kdim, vdim "
      .. "(%d, %d, %d), but got %s, %s, %s."):format(NAME, E, self.kdim, self.vdim, T.shape_str(query.shape),
      T.shape_str(key.shape), T.shape_str(value.shape)))
  end
  local batched = qn == 3
  if not batched then
    query, key, value = query:unsqueeze(1), key:unsqueeze(1), value:unsqueeze(1)
    if kpm then kpm = kpm:unsqueeze(1) end
  elseif not self.batch_first then
    query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2)
  end
  -- now {N, L, E}, {N, S, kdim}, {N, S, vdim}
  local N, L, S = query.shape[1], query.shape[2], key.shape[2]
  if key.shape[1] ~= N or value.shape[1] ~= N or value.shape[2] ~= S then
    raise(("ValueError: For '%s', key and value must have the batch size of query and one sequence length, "
      .. "but got query %s, key %s, value %s."):format(NAME, T.shape_str(query.shape), T.shape_str(key.shape),
      T.shape_str(value.shape)))
  end
  local dt = query.dtype
  if kpm then
    check_tensor(NAME, "key_padding_mask", kpm)
    if #kpm.shape ~= 2 or kpm.shape[1] ~= N or kpm.shape[2] ~= S then
      raise(("ValueError: For '%s', key_padding_mask must have shape %s, but got %s.")
        :format(NAME, T.shape_str({ N, S }), T.shape_str(kpm.shape)))
    end
  end
  if attn_mask then
    check_tensor(NAME, "attn_mask", attn_mask)
    local ok = (#attn_mask.shape == 2 and attn_mask.shape[1] == L and attn_mask.shape[2] == S)
      or (#attn_mask.shape == 3 and attn_mask.shape[1] == N * H and attn_mask.shape[2] == L and attn_mask.shape[3] == S)
    if not ok then
      raise(("ValueError: For '%s', attn_mask must have shape %s or %s, but got %s.")
        :format(NAME, T.shape_str({ L, S }), T.shape_str({ N * H, L, S }), T.shape_str(attn_mask.shape)))
    end
  end
  local wq, wk, wv
  if self._qkv_same_embed_dim then
    local w = self.in_proj_weight
    wq, wk, wv = w:narrow(1, 1, E), w:narrow(1, E + 1, E), w:narrow(1, 2 * E + 1, E)
  else
    wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
  end
  local bq, bk, bv
  if self.has_bias then
    local b = self.in_proj_bias
    bq, bk, bv = b:narrow(1, 1, E), b:narrow(1, E + 1, E), b:narrow(1, 2 * E + 1, E)
  end
  local q, k, v = project(query, wq, bq), project(key, wk, bk), project(value, wv, bv)
  if self.add_bias_kv then
    k = core.cat({ k, self.bias_k:expand({ N, 1, E }) }, 2)
    v = core.cat({ v, self.bias_v:expand({ N, 1, E }) }, 2)
    if attn_mask then attn_mask = pad_last(attn_mask) end
    if kpm then kpm = pad_last(kpm) end
    S = S + 1
  end
  -- heads: {N, T, E} -> {N, H, T, hd}
  q = q:reshape({ N, L, H, hd }):transpose(2, 3)
  k = k:reshape({ N, S, H, hd }):transpose(2, 3)
  v = v:reshape({ N, S, H, hd }):transpose(2, 3)
  if self.add_zero_attn then
    k = core.cat({ k, core.zeros({ N, H, 1, hd }, k.dtype) }, 3)
    v = core.cat({ v, core.zeros({ N, H, 1, hd }, v.dtype) }, 3)
    if attn_mask then attn_mask = pad_last(attn_mask) end
    if kpm then kpm = pad_last(kpm) end
    S = S + 1
  end
  -- one additive mask broadcasting to {N, H, L, S}
  local mask
  if attn_mask then
    mask = additive(attn_mask, dt)
    if #mask.shape == 3 then mask = mask:reshape({ N, H, L, S }) end
  end
  if kpm then
    local km = additive(kpm, dt):reshape({ N, 1, 1, S })
    mask = mask and (mask + km) or km
  end
  local p = self.training and self.dropout or 0
  local out, weights
  if not need_weights then
    out = ops.scaled_dot_product_attention(q, k, v, { attn_mask = mask, dropout_p = p, is_causal = is_causal or false })
  else
    local s = q:matmul(k:transpose(3, 4)) * (1 / math.sqrt(hd))
    if mask then s = s + mask end
    if is_causal then s = s + core.full({ L, S }, -math.huge, dt):triu(1) end
    weights = ops.softmax(s, -1)
    if p > 0 then weights = ops.dropout(weights, p, true) end
    out = weights:matmul(v)
    if average then weights = weights:mean(2) end
    if not batched then weights = weights:squeeze(1) end
  end
  out = out:transpose(2, 3):reshape({ N, L, E })
  out = self.out_proj(out)
  if not batched then
    out = out:squeeze(1)
  elseif not self.batch_first then
    out = out:transpose(1, 2)
  end
  return out, weights
end

function MHA:extend_repr()
  return ("embed_dim=%d, num_heads=%d, dropout=%s, batch_first=%s"):format(self.embed_dim, self.num_heads,
    T.num_str(self.dropout), tostring(self.batch_first))
end

return { MultiheadAttention = MHA }
