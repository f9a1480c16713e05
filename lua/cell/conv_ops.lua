--- cell.conv_ops: the N-d convolution, pooling and resizing functions of
-- cell.ops (conv1d, conv3d, conv_transpose1d/2d/3d, max_pool1d/3d,
-- avg_pool1d/3d, adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d/2d,
-- pixel_shuffle, pixel_unshuffle), on the differentiable C kernels (conv2d,
-- conv3d, conv_transpose3d, max_pool2d, avg_pool2d) and shape ops:
--   * 1-d is 2-d with H = 1;
--   * 3-d convolution and transposed convolution are C ops (vol2col / col2vol
--     and the gemm backend, src/ops/conv3d.c);
--   * a transposed convolution in 1-d and 2-d is the adjoint of a
--     convolution: col2im (the columns w^T x, one batched matrix product
--     over the groups, summed into the output by fold);
--   * max and average pooling over a box are separable: 3-d pools H, W then D;
--   * adaptive average pooling is one matrix product per dimension; adaptive
--     max pooling takes the maximum of each bin.
-- Sizes and options are validated here with MindSpore's exception names.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"
local raise = require("cell.errors").raise
local T = require "cell.util.types"

local nn = core.nnops
local M = {}

local function check_x(op, x)
  if not core.is_tensor(x) then
    raise(("TypeError: For '%s', the input must be a Tensor, but got %s."):format(op, T.type_name(x)))
  end
  return x
end

local function is_int(v) return type(v) == "number" and v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 end

--- n integers from an integer or a list of n (or 1); each >= lo.
local function ints(op, what, v, n, lo)
  local out = {}
  if type(v) == "number" then
    for i = 1, n do out[i] = v end
  elseif type(v) == "table" and not core.is_tensor(v) and (#v == n or #v == 1) then
    for i = 1, n do out[i] = v[#v == 1 and 1 or i] end
  elseif type(v) == "table" and not core.is_tensor(v) then
    raise(("ValueError: For '%s', the '%s' must be an integer or a list of %d integers, but got %d values.")
      :format(op, what, n, #v))
  else
    raise(("TypeError: For '%s', the '%s' must be an integer or a list of %d integers, but got %s.")
      :format(op, what, n, T.type_name(v)))
  end
  for i = 1, n do
    if not is_int(out[i]) then
      raise(("TypeError: For '%s', the '%s' must hold integers, but got %s."):format(op, what, tostring(out[i])))
    end
    if out[i] < lo then
      raise(("ValueError: For '%s', the '%s' must be >= %d, but got %s."):format(op, what, lo,
        T.tuple_str(out)))
    end
  end
  return out
end
M._ints = ints

--- The options table of a functional op (nil for none), its booleans checked.
local function options(op, o, bools)
  if o == nil then return {} end
  if type(o) ~= "table" or core.is_tensor(o) then
    raise(("TypeError: For '%s', the options must be a table, but got %s."):format(op, T.type_name(o)))
  end
  for _, k in ipairs(bools) do
    if o[k] ~= nil and type(o[k]) ~= "boolean" then
      raise(("TypeError: For '%s', the '%s' must be a boolean, but got %s."):format(op, k, T.type_name(o[k])))
    end
  end
  return o
end

--- Padding as {before_1, after_1, ..., before_n, after_n} from an integer,
-- a list of n (symmetric) or a list of 2n (before/after per dimension).
local function pads_of(op, v, n)
  if v == nil then v = 0 end
  local out = {}
  if type(v) == "table" and not core.is_tensor(v) and #v == 2 * n and n > 1 then
    local p = ints(op, "padding", { v[1] }, 1, 0)
    for i = 1, 2 * n do out[i] = ints(op, "padding", v[i], 1, 0)[1] end
    return out, p
  end
  if type(v) == "table" and not core.is_tensor(v) and #v == 2 and n == 1 then
    return { ints(op, "padding", v[1], 1, 0)[1], ints(op, "padding", v[2], 1, 0)[1] }
  end
  local p = ints(op, "padding", v, n, 0)
  for i = 1, n do out[2 * i - 1], out[2 * i] = p[i], p[i] end
  return out
end
M._pads_of = pads_of

--- "same" padding of one dimension (output ceil(n / s); the odd element after).
local function same_pad(n, k, s, d)
  local out = math.ceil(n / s)
  local total = math.max((out - 1) * s + (k - 1) * d + 1 - n, 0)
  local before = math.floor(total / 2)
  return before, total - before
end
M._same_pad = same_pad

--- Pad (or crop, where negative) the last n dimensions; pads in dimension
-- order {b1, a1, ..., bn, an}.
local function pad_spatial(x, n, pads)
  local list, any = {}, false
  for i = n, 1, -1 do
    list[#list + 1] = pads[2 * i - 1]
    list[#list + 1] = pads[2 * i]
    if pads[2 * i - 1] ~= 0 or pads[2 * i] ~= 0 then any = true end
  end
  if not any then return x end
  return x:pad(list)
end
M._pad_spatial = pad_spatial

--- 1-based positions for padding a dimension of size L by b before and a
-- after in mode "reflect", "replicate" or "circular" (an int64 tensor).
local function pad_index(L, b, a, mode)
  local idx = {}
  for j = -b, L - 1 + a do
    local k
    if mode == "reflect" then
      k = j
      if k < 0 then k = -k end
      if k > L - 1 then k = 2 * (L - 1) - k end
    elseif mode == "replicate" then
      k = math.min(math.max(j, 0), L - 1)
    else
      k = j % L
    end
    idx[#idx + 1] = k + 1
  end
  return core.tensor(idx, core.int64)
end

--- Pad the last n dimensions in mode "constant" (value), "reflect",
-- "replicate" or "circular"; pads {b1, a1, ..., bn, an} in dimension order.
function M._pad_mode(op, x, n, pads, mode, value)
  if mode == "constant" or mode == "zeros" then
    local list = {}
    for i = n, 1, -1 do
      list[#list + 1] = pads[2 * i - 1]
      list[#list + 1] = pads[2 * i]
    end
    return x:pad(list, value or 0)
  end
  local shape, r = x.shape, #x.shape
  for i = 1, n do
    local dim = r - n + i
    local L, b, a = shape[dim], pads[2 * i - 1], pads[2 * i]
    if b < 0 or a < 0 then
      raise(("ValueError: For '%s', the padding must be non-negative in mode '%s', but got %s.")
        :format(op, mode, T.tuple_str(pads)))
    end
    if mode == "reflect" and (b >= L or a >= L) then
      raise(("ValueError: For '%s', the reflection padding (%s, %s) must be less than the input size %d of "
        .. "dimension %d; the input has shape %s."):format(op, T.num_str(b), T.num_str(a), L, dim,
          T.shape_str(shape)))
    end
    if (mode == "circular" and (b > L or a > L)) or L == 0 then
      raise(("ValueError: For '%s', the circular padding (%s, %s) must be at most the input size %d of "
        .. "dimension %d; the input has shape %s."):format(op, T.num_str(b), T.num_str(a), L, dim,
          T.shape_str(shape)))
    end
    if b > 0 or a > 0 then x = x:index_select(dim, pad_index(L, b, a, mode)) end
  end
  return x
end

-- Convolution -------------------------------------------------------------------------

local function check_conv(op, x, w, b, nd, groups)
  check_x(op, x)
  if not core.is_tensor(w) then
    raise(("TypeError: For '%s', the weight must be a Tensor, but got %s."):format(op, T.type_name(w)))
  end
  local xs, ws = x.shape, w.shape
  if #xs ~= nd + 2 then
    raise(("ValueError: For '%s', the input must be %d-D (N, C, %s), but got %s."):format(op, nd + 2,
      nd == 1 and "L" or (nd == 2 and "H, W" or "D, H, W"), T.shape_str(xs)))
  end
  if #ws ~= nd + 2 then
    raise(("ValueError: For '%s', the weight must be %d-D, but got %s."):format(op, nd + 2, T.shape_str(ws)))
  end
  if b ~= nil and not core.is_tensor(b) then
    raise(("TypeError: For '%s', the bias must be a Tensor or nil, but got %s."):format(op, T.type_name(b)))
  end
  if not is_int(groups) or groups < 1 then
    raise(("ValueError: For '%s', the 'groups' must be a positive integer, but got %s."):format(op, tostring(groups)))
  end
end

--- The convolution of x {N, C, spatial(nd)} with w {O, C/groups, k(nd)};
-- stride, dilation: nd lists; pads {b1, a1, ...}.
local function conv_nd(op, x, w, b, nd, stride, pads, dil, groups)
  local xs, ws = x.shape, w.shape
  if xs[2] ~= ws[2] * groups or ws[1] % groups ~= 0 then
    raise(("ValueError: For '%s', the input channels %d must equal weight.shape[2] (%d) * groups (%d), and "
      .. "weight.shape[1] (%d) must be divisible by groups; input %s, weight %s."):format(op, xs[2], ws[2], groups,
        ws[1], T.shape_str(xs), T.shape_str(ws)))
  end
  if b ~= nil and (#b.shape ~= 1 or b.shape[1] ~= ws[1]) then
    raise(("ValueError: For '%s', the bias must be {%d}, but got %s."):format(op, ws[1], T.shape_str(b.shape)))
  end
  for i = 1, nd do
    local padded = xs[i + 2] + pads[2 * i - 1] + pads[2 * i]
    local ek = dil[i] * (ws[i + 2] - 1) + 1
    if padded < ek then
      raise(("ValueError: For '%s', the padded input size %d of spatial dimension %d is smaller than the "
        .. "dilated kernel size %d; input %s, weight %s."):format(op, padded, i, ek, T.shape_str(xs),
          T.shape_str(ws)))
    end
  end
  if nd == 2 then
    return nn.conv2d(x, w, b, { stride = stride, padding = pads, dilation = dil, groups = groups })
  elseif nd == 1 then
    local y = nn.conv2d(x:unsqueeze(3), w:unsqueeze(3), b, { stride = { 1, stride[1] },
      padding = { 0, 0, pads[1], pads[2] }, dilation = { 1, dil[1] }, groups = groups })
    return y:squeeze(3)
  end
  -- 3-d: the C kernel (vol2col and a gemm per group)
  return nn.conv3d(x, w, b, { stride = stride, padding = pads, dilation = dil, groups = groups })
end
M._conv_nd = conv_nd

--- The options of a functional convolution: stride, padding (or pad_mode),
-- dilation, groups.
local function conv_opts(op, x, w, nd, o)
  o = o or {}
  if type(o) ~= "table" or core.is_tensor(o) then
    raise(("TypeError: For '%s', the options must be a table, but got %s."):format(op, T.type_name(o)))
  end
  local stride = ints(op, "stride", o.stride == nil and 1 or o.stride, nd, 1)
  local dil = ints(op, "dilation", o.dilation == nil and 1 or o.dilation, nd, 1)
  local groups = o.groups == nil and 1 or o.groups
  check_conv(op, x, w, nil, nd, groups)
  local mode = o.pad_mode == nil and "pad" or o.pad_mode
  local pads
  if mode == "same" then
    pads = {}
    for i = 1, nd do pads[2 * i - 1], pads[2 * i] = same_pad(x.shape[i + 2], w.shape[i + 2], stride[i], dil[i]) end
  elseif mode == "valid" then
    pads = {}
    for i = 1, 2 * nd do pads[i] = 0 end
  elseif mode == "pad" then
    pads = pads_of(op, o.padding, nd)
  else
    raise(("ValueError: For '%s', the 'pad_mode' must be one of ['same', 'valid', 'pad'], but got '%s'.")
      :format(op, tostring(mode)))
  end
  return stride, pads, dil, groups
end

local function functional_conv(op, nd)
  return function(x, w, b, o)
    if type(b) == "table" and not core.is_tensor(b) and o == nil then b, o = nil, b end
    check_conv(op, x, w, b, nd, 1)
    local stride, pads, dil, groups = conv_opts(op, x, w, nd, o)
    return conv_nd(op, x, w, b, nd, stride, pads, dil, groups)
  end
end

--- conv1d(x {N, C, L}, w {O, C/groups, k} [, b], {stride =, padding =, dilation =, groups =, pad_mode =})
M.conv1d = functional_conv("conv1d", 1)
--- conv3d(x {N, C, D, H, W}, w {O, C/groups, kd, kh, kw} [, b], {...})
M.conv3d = functional_conv("conv3d", 3)

--- The transposed convolution (the adjoint of conv_nd with the same
-- stride, pads and dilation) of x {N, Cin, spatial} with w {Cin, O/groups, k};
-- out_pad: extra elements after each spatial dimension.
local function conv_transpose_nd(op, x, w, b, nd, stride, pads, out_pad, dil, groups)
  local xs, ws = x.shape, w.shape
  if xs[2] ~= ws[1] or ws[1] % groups ~= 0 then
    raise(("ValueError: For '%s', the input channels %d must equal weight.shape[1] (%d), which must be divisible by "
      .. "groups (%d); input %s, weight %s."):format(op, xs[2], ws[1], groups, T.shape_str(xs), T.shape_str(ws)))
  end
  local cout = ws[2] * groups
  if b ~= nil and (#b.shape ~= 1 or b.shape[1] ~= cout) then
    raise(("ValueError: For '%s', the bias must be {%d}, but got %s."):format(op, cout, T.shape_str(b.shape)))
  end
  for i = 1, nd do
    if out_pad[i] >= stride[i] then
      raise(("ValueError: For '%s', the output_padding %s must be smaller than the stride %s.")
        :format(op, T.tuple_str(out_pad), T.tuple_str(stride)))
    end
    local n = (xs[i + 2] - 1) * stride[i] - pads[2 * i - 1] - pads[2 * i] + dil[i] * (ws[i + 2] - 1) + out_pad[i] + 1
    if n <= 0 then
      raise(("ValueError: For '%s', the output size %d of spatial dimension %d is not positive; input %s, weight "
        .. "%s, padding %s."):format(op, n, i, T.shape_str(xs), T.shape_str(ws), T.tuple_str(pads)))
    end
  end
  if nd <= 2 then
    -- col2im: the columns w^T x (one batched matrix product over the groups)
    -- summed into the full output by fold, then cropped / extended
    local x4, w4 = x, w
    local s2, d2, pp, op2 = stride, dil, pads, out_pad
    if nd == 1 then
      x4, w4 = x:unsqueeze(3), w:unsqueeze(3)
      s2, d2, pp, op2 = { 1, stride[1] }, { 1, dil[1] }, { 0, 0, pads[1], pads[2] }, { 0, out_pad[1] }
    end
    local N, H, W = xs[1], x4.shape[3], x4.shape[4]
    local kh, kw = w4.shape[3], w4.shape[4]
    local cin_g2, cout_g = ws[1] / groups, ws[2]
    local wm = w4:reshape({ 1, groups, cin_g2, cout_g * kh * kw }):transpose(3, 4)
    local cols = wm:matmul(x4:reshape({ N, groups, cin_g2, H * W })):reshape({ N, cout * kh * kw, H * W })
    local fh = (H - 1) * s2[1] + d2[1] * (kh - 1) + 1 + op2[1]
    local fw = (W - 1) * s2[2] + d2[2] * (kw - 1) + 1 + op2[2]
    local y = nn.fold(cols, { fh, fw }, { kh, kw }, { dilation = d2, padding = 0, stride = s2 })
    y = pad_spatial(y, 2, { -pp[1], -pp[2], -pp[3], -pp[4] })
    if b ~= nil then y = y + b:reshape({ 1, cout, 1, 1 }) end
    if nd == 1 then y = y:squeeze(3) end
    return y
  end
  -- 3-d: the C kernel (col2vol of the columns w^T x)
  return nn.conv_transpose3d(x, w, b, { stride = stride, padding = pads, output_padding = out_pad,
    dilation = dil, groups = groups })
end
M._conv_transpose_nd = conv_transpose_nd

local function functional_conv_t(op, nd)
  return function(x, w, b, o)
    if type(b) == "table" and not core.is_tensor(b) and o == nil then b, o = nil, b end
    check_conv(op, x, w, b, nd, 1)
    o = options(op, o, {})
    local stride = ints(op, "stride", o.stride == nil and 1 or o.stride, nd, 1)
    local dil = ints(op, "dilation", o.dilation == nil and 1 or o.dilation, nd, 1)
    local op_ = ints(op, "output_padding", o.output_padding == nil and 0 or o.output_padding, nd, 0)
    local groups = o.groups == nil and 1 or o.groups
    check_conv(op, x, w, b, nd, groups)
    return conv_transpose_nd(op, x, w, b, nd, stride, pads_of(op, o.padding, nd), op_, dil, groups)
  end
end

--- conv_transpose{1,2,3}d(x, w {Cin, O/groups, k...} [, b], {stride =, padding =,
-- output_padding =, dilation =, groups =})
M.conv_transpose1d = functional_conv_t("conv_transpose1d", 1)
M.conv_transpose2d = functional_conv_t("conv_transpose2d", 2)
M.conv_transpose3d = functional_conv_t("conv_transpose3d", 3)

-- Pooling -----------------------------------------------------------------------------

--- x with a batch dimension (rank nd + 2) and whether one was added.
local function batched(op, x, nd)
  check_x(op, x)
  local r = #x.shape
  if r == nd + 1 then return x:unsqueeze(1), true end
  if r ~= nd + 2 then
    raise(("ValueError: For '%s', the input must be %d-D or %d-D, but got %s."):format(op, nd + 1, nd + 2,
      T.shape_str(x.shape)))
  end
  return x, false
end
M._batched = batched

local function pool_check(op, x, nd, k, pads, dil)
  for i = 1, nd do
    local n = x.shape[i + 2] + pads[2 * i - 1] + pads[2 * i]
    local ek = (dil and dil[i] or 1) * (k[i] - 1) + 1
    if n < ek then
      raise(("ValueError: For '%s', the padded input size %d of spatial dimension %d is smaller than the kernel "
        .. "size %d; the input has shape %s."):format(op, n, i, ek, T.shape_str(x.shape)))
    end
    if 2 * math.max(pads[2 * i - 1], pads[2 * i]) > (dil and dil[i] or 1) * (k[i] - 1) + 1 then
      raise(("ValueError: For '%s', the padding %s must be at most half the kernel_size %s.")
        :format(op, T.tuple_str(pads), T.tuple_str(k)))
    end
  end
end

--- Max pooling of the last nd (1 or 3) dimensions of x4 (rank nd + 2):
-- k, s, dil lists; pads {b1, a1, ...}. Returns values and, when asked,
-- 1-based flat indices into each input plane/volume.
function M._max_pool_nd(op, x, nd, k, s, pads, dil, ceil, want_idx)
  pool_check(op, x, nd, k, pads, dil)
  if nd == 1 then
    local y, idx = nn.max_pool2d(x:unsqueeze(3), { 1, k[1] }, { stride = { 1, s[1] },
      padding = { 0, 0, pads[1], pads[2] }, dilation = { 1, dil[1] }, ceil_mode = ceil, return_indices = want_idx })
    return y:squeeze(3), idx and idx:squeeze(3)
  end
  local N, C, D, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4], x.shape[5]
  local y1, i1 = nn.max_pool2d(x:reshape({ N, C * D, H, W }), { k[2], k[3] }, { stride = { s[2], s[3] },
    padding = { pads[3], pads[4], pads[5], pads[6] }, dilation = { dil[2], dil[3] }, ceil_mode = ceil,
    return_indices = want_idx })
  local Ho, Wo = y1.shape[3], y1.shape[4]
  local t = y1:reshape({ N, C, D, Ho * Wo }):transpose(3, 4):reshape({ N, C * Ho * Wo, 1, D })
  local y2, i2 = nn.max_pool2d(t, { 1, k[1] }, { stride = { 1, s[1] }, padding = { 0, 0, pads[1], pads[2] },
    dilation = { 1, dil[1] }, ceil_mode = ceil, return_indices = want_idx })
  local Do = y2.shape[4]
  local y = y2:reshape({ N, C, Ho * Wo, Do }):transpose(3, 4):reshape({ N, C, Do, Ho, Wo })
  if not want_idx then return y end
  -- i2: depth (1-based) per (n, c, plane position); i1: plane index per depth
  local dsel = i2:reshape({ N, C, Ho * Wo, Do })
  local planes = i1:reshape({ N, C, D, Ho * Wo }):transpose(3, 4):contiguous()
  local picked = planes:gather(4, dsel)
  local idx = picked + (dsel - 1) * (H * W)
  return y, idx:transpose(3, 4):reshape({ N, C, Do, Ho, Wo })
end

--- The window sizes of one dimension clipped to the padded input.
local function window_sizes(n, k, s, pb, pa, outn)
  local sizes = {}
  for o = 0, outn - 1 do
    local hs = o * s - pb
    sizes[o + 1] = math.min(hs + k, n + pa) - hs
  end
  return sizes
end
M._window_sizes = window_sizes -- nn.AvgPool2d's divisor_override too

--- Average pooling of the last nd (1 or 3) dimensions (see _max_pool_nd).
function M._avg_pool_nd(op, x, nd, k, s, pads, ceil, cip, divisor)
  pool_check(op, x, nd, k, pads)
  local c = divisor ~= nil or cip
  local y
  if nd == 1 then
    y = nn.avg_pool2d(x:unsqueeze(3), { 1, k[1] }, { stride = { 1, s[1] }, padding = { 0, 0, pads[1], pads[2] },
      ceil_mode = ceil, count_include_pad = c }):squeeze(3)
  else
    local N, C, D, H, W = x.shape[1], x.shape[2], x.shape[3], x.shape[4], x.shape[5]
    local y1 = nn.avg_pool2d(x:reshape({ N, C * D, H, W }), { k[2], k[3] }, { stride = { s[2], s[3] },
      padding = { pads[3], pads[4], pads[5], pads[6] }, ceil_mode = ceil, count_include_pad = c })
    local Ho, Wo = y1.shape[3], y1.shape[4]
    local t = y1:reshape({ N, C, D, Ho * Wo }):transpose(3, 4):reshape({ N, C * Ho * Wo, 1, D })
    local y2 = nn.avg_pool2d(t, { 1, k[1] }, { stride = { 1, s[1] }, padding = { 0, 0, pads[1], pads[2] },
      ceil_mode = ceil, count_include_pad = c })
    local Do = y2.shape[4]
    y = y2:reshape({ N, C, Ho * Wo, Do }):transpose(3, 4):reshape({ N, C, Do, Ho, Wo })
  end
  if divisor ~= nil then
    local full
    for i = 1, nd do
      local ws = window_sizes(x.shape[i + 2], k[i], s[i], pads[2 * i - 1], pads[2 * i], y.shape[i + 2])
      local shape = {}
      for j = 1, nd do shape[j] = 1 end
      shape[i] = #ws
      local t = core.tensor(ws, y.dtype):reshape(shape)
      full = full and full * t or t
    end
    y = y * (full / divisor)
  end
  return y
end

local function pool_fn(op, nd, kind)
  return function(x, kernel, o)
    local xb, added = batched(op, x, nd)
    o = options(op, o, { "ceil_mode", "return_indices", "count_include_pad" })
    if o.divisor_override ~= nil then ints(op, "divisor_override", o.divisor_override, 1, 1) end
    local k = ints(op, "kernel_size", kernel, nd, 1)
    local s = ints(op, "stride", o.stride == nil and kernel or o.stride, nd, 1)
    local pads = pads_of(op, o.padding, nd)
    local y, idx
    if kind == "max" then
      local dil = ints(op, "dilation", o.dilation == nil and 1 or o.dilation, nd, 1)
      y, idx = M._max_pool_nd(op, xb, nd, k, s, pads, dil, o.ceil_mode == true, o.return_indices == true)
    else
      y = M._avg_pool_nd(op, xb, nd, k, s, pads, o.ceil_mode == true, o.count_include_pad ~= false,
        o.divisor_override)
    end
    if added then
      y = y:squeeze(1)
      if idx then idx = idx:squeeze(1) end
    end
    if o.return_indices then return y, idx end
    return y
  end
end

--- max_pool{1,3}d(x, kernel, {stride = kernel, padding = 0, dilation = 1, ceil_mode, return_indices})
M.max_pool1d = pool_fn("max_pool1d", 1, "max")
M.max_pool3d = pool_fn("max_pool3d", 3, "max")
--- avg_pool{1,3}d(x, kernel, {stride = kernel, padding = 0, ceil_mode, count_include_pad = true, divisor_override})
M.avg_pool1d = pool_fn("avg_pool1d", 1, "avg")
M.avg_pool3d = pool_fn("avg_pool3d", 3, "avg")

-- Adaptive pooling --------------------------------------------------------------------

local function bin(i, L, out) -- 0-based bin i: start, length
  local a = math.floor(i * L / out)
  local e = math.ceil((i + 1) * L / out)
  return a, e - a
end

local function out_sizes(op, x, nd, output_size)
  local out = {}
  if type(output_size) == "table" and not core.is_tensor(output_size) and #output_size == nd then
    for i = 1, nd do
      local v = output_size[i]
      if v == false then v = x.shape[#x.shape - nd + i] end -- false keeps the input size (MindSpore's None)
      out[i] = v
    end
  else
    out = output_size
  end
  out = ints(op, "output_size", out, nd, 1)
  local total = 1
  for i = 1, nd do total = total * out[i] * x.shape[#x.shape - nd + i] end
  if total > 2 ^ 31 then
    raise(("ValueError: For '%s', the output_size %s is too large for an input of shape %s.")
      :format(op, T.tuple_str(out), T.shape_str(x.shape)))
  end
  return out
end

--- adaptive_avg_pool{1,2,3}d(x, output_size): one averaging matrix per dimension.
local function adaptive_avg(op, nd)
  return function(x, output_size)
    local xb, added = batched(op, x, nd)
    local o = out_sizes(op, xb, nd, output_size)
    local y = xb
    for i = 1, nd do
      local dim = i + 2
      local L = xb.shape[dim]
      if L < 1 then
        raise(("ValueError: For '%s', the input has an empty spatial dimension: %s."):format(op,
          T.shape_str(x.shape)))
      end
      local m = {}
      for r = 0, L - 1 do
        local row = {}
        for c = 0, o[i] - 1 do
          local a, len = bin(c, L, o[i])
          row[c + 1] = (r >= a and r < a + len) and 1 / len or 0
        end
        m[r + 1] = row
      end
      local A = core.tensor(m, y.dtype)
      local r = #y.shape
      y = y:transpose(dim, r):matmul(A):transpose(dim, r)
    end
    y = y:contiguous()
    if added then y = y:squeeze(1) end
    return y
  end
end
M.adaptive_avg_pool1d = adaptive_avg("adaptive_avg_pool1d", 1)
M.adaptive_avg_pool2d = adaptive_avg("adaptive_avg_pool2d", 2)
M.adaptive_avg_pool3d = adaptive_avg("adaptive_avg_pool3d", 3)

--- adaptive_max_pool{1,2}d(x, output_size [, return_indices]): the maximum
-- of each bin; indices 1-based into each input plane (h * W + w + 1).
local function adaptive_max(op, nd)
  return function(x, output_size, return_indices)
    local xb, added = batched(op, x, nd)
    if return_indices ~= nil and type(return_indices) ~= "boolean" then
      raise(("TypeError: For '%s', the 'return_indices' must be a boolean, but got %s."):format(op,
        T.type_name(return_indices)))
    end
    local o = out_sizes(op, xb, nd, output_size)
    local N, C = xb.shape[1], xb.shape[2]
    local H = nd == 2 and xb.shape[3] or 1
    local W = xb.shape[nd + 2]
    if H < 1 or W < 1 then
      raise(("ValueError: For '%s', the input has an empty spatial dimension: %s."):format(op, T.shape_str(x.shape)))
    end
    local x4 = nd == 2 and xb or xb:unsqueeze(3)
    local oh, ow = nd == 2 and o[1] or 1, o[nd]
    local vals, idxs = {}, {}
    for i = 0, oh - 1 do
      local hs, hl = bin(i, H, oh)
      for j = 0, ow - 1 do
        local ws, wl = bin(j, W, ow)
        local win = x4:narrow(3, hs + 1, hl):narrow(4, ws + 1, wl):reshape({ N, C, hl * wl })
        local v, li = win:max(3)
        vals[#vals + 1] = v
        if return_indices then
          local map = {}
          for a = 0, hl - 1 do
            for b = 0, wl - 1 do map[#map + 1] = (hs + a) * W + ws + b + 1 end
          end
          idxs[#idxs + 1] = core.tensor(map, core.int64):index_select(1, li:reshape({ N * C })):reshape({ N, C })
        end
      end
    end
    local shape = nd == 2 and { N, C, oh, ow } or { N, C, ow }
    local y = core.stack(vals, 3):reshape(shape)
    local idx = return_indices and core.stack(idxs, 3):reshape(shape) or nil
    if added then
      y = y:squeeze(1)
      if idx then idx = idx:squeeze(1) end
    end
    if return_indices then return y, idx end
    return y
  end
end
M.adaptive_max_pool1d = adaptive_max("adaptive_max_pool1d", 1)
M.adaptive_max_pool2d = adaptive_max("adaptive_max_pool2d", 2)

-- Pixel shuffle -----------------------------------------------------------------------

local function lead_of(op, x, what, r)
  check_x(op, x)
  if not is_int(r) or r < 1 then
    raise(("ValueError: For '%s', the '%s' must be a positive integer, but got %s."):format(op, what, tostring(r)))
  end
  local s = x.shape
  if #s < 3 then
    raise(("ValueError: For '%s', the input must have at least 3 dimensions, but got %s."):format(op,
      T.shape_str(s)))
  end
  local lead, B = {}, 1
  for i = 1, #s - 3 do
    lead[i] = s[i]
    B = B * s[i]
  end
  return s, lead, B
end

--- pixel_shuffle(x {*, C * r^2, H, W}, r) -> {*, C, H * r, W * r}
function M.pixel_shuffle(x, r)
  local s, lead, B = lead_of("pixel_shuffle", x, "upscale_factor", r)
  local c, h, w = s[#s - 2], s[#s - 1], s[#s]
  if c % (r * r) ~= 0 then
    raise(("ValueError: For 'pixel_shuffle', the channels %d must be divisible by upscale_factor^2 (%d); the input "
      .. "has shape %s."):format(c, r * r, T.shape_str(s)))
  end
  local oc = c / (r * r)
  local y = x:reshape({ B, oc, r, r, h, w }):permute({ 1, 2, 5, 3, 6, 4 })
  local out = {}
  for i = 1, #lead do out[i] = lead[i] end
  out[#out + 1], out[#out + 2], out[#out + 3] = oc, h * r, w * r
  return y:reshape(out)
end

--- pixel_unshuffle(x {*, C, H * r, W * r}, r) -> {*, C * r^2, H, W}
function M.pixel_unshuffle(x, r)
  local s, lead, B = lead_of("pixel_unshuffle", x, "downscale_factor", r)
  local c, h, w = s[#s - 2], s[#s - 1], s[#s]
  if h % r ~= 0 or w % r ~= 0 then
    raise(("ValueError: For 'pixel_unshuffle', the height %d and width %d must be divisible by downscale_factor "
      .. "(%d); the input has shape %s."):format(h, w, r, T.shape_str(s)))
  end
  local y = x:reshape({ B, c, h / r, r, w / r, r }):permute({ 1, 2, 4, 6, 3, 5 })
  local out = {}
  for i = 1, #lead do out[i] = lead[i] end
  out[#out + 1], out[#out + 2], out[#out + 3] = c * r * r, h / r, w / r
  return y:reshape(out)
end

--- interpolate(x, opts): the engine's resizing, plus mode "area" (MindSpore's
-- and PyTorch's): adaptive average pooling to the output size, for 3-D, 4-D
-- and 5-D inputs; the size is `size`, or floor(input size * scale_factor).
local AREA_KEYS = { size = true, scale_factor = true, mode = true, recompute_scale_factor = true }
function M.interpolate(x, opts)
  if type(opts) ~= "table" or opts.mode ~= "area" then return nn.interpolate(x, opts) end
  local op = "interpolate"
  check_x(op, x)
  for k in pairs(opts) do
    if not AREA_KEYS[k] then
      raise(("%s: interpolate: option '%s' is not meaningful with mode 'area'"):format(
        k == "align_corners" and "ValueError" or "TypeError", tostring(k)))
    end
  end
  local sp = #x.shape - 2
  if sp < 1 or sp > 3 then
    raise(("ValueError: interpolate: mode 'area' wants a 3-D, 4-D or 5-D input, got shape [%s]"):format(
      table.concat(x.shape, ", ")))
  end
  if (opts.size == nil) == (opts.scale_factor == nil) then
    raise(opts.size == nil and "ValueError: interpolate: either size or scale_factor must be given"
      or "ValueError: interpolate: only one of size and scale_factor may be given")
  end
  local size
  if opts.size ~= nil then
    size = ints(op, "size", opts.size, sp, 1)
  else
    local f = opts.scale_factor
    size = {}
    for i = 1, sp do
      local fi = type(f) == "table" and f[#f == 1 and 1 or i] or f
      if type(fi) ~= "number" or not (fi > 0) or fi == math.huge then
        raise(("ValueError: interpolate: scale_factor must be positive and finite, got %s"):format(tostring(fi)))
      end
      size[i] = math.floor(x.shape[i + 2] * fi)
      if size[i] < 1 then
        raise(("ValueError: interpolate: output sizes must be positive, got %d for input [%s]"):format(size[i],
          table.concat(x.shape, ", ")))
      end
    end
  end
  return M["adaptive_avg_pool" .. sp .. "d"](x, size)
end

--- The names this module adds to cell.ops.
M.functions = { "conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d",
  "max_pool3d", "avg_pool1d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
  "adaptive_max_pool1d", "adaptive_max_pool2d", "pixel_shuffle", "pixel_unshuffle", "interpolate" }

return M
