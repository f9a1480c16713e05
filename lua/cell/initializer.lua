--- Lazy initializers: MindSpore's `initializer(init, shape, dtype)` and its initializer classes.
--
--     local cell = require "cell"
--     local w = cell.initializer("xavier_uniform", {64, 32})      -- nothing drawn yet
--     local n = cell.initializer(cell.init.Normal{sigma = 0.02}, {10})
--     w.shape, w.dtype                                             --> {64, 32}, cell.float32
--     local t = w:init_data()                                      -- a Tensor
--
-- `cell.initializer` returns an InitTensor: a recipe (an initializer, a
-- shape and a dtype) that `cell.Parameter` accepts and makes lazily. Each
-- `init_data()` draws a fresh Tensor from the engine's seeded generator
-- (`cell.set_seed`), so two Parameters made from one InitTensor do not
-- share storage. Shapes are checked when the recipe is made, so a bad shape
-- (or a fan that cannot be computed) is an error at the call that gave it.
--
-- The classes (`cell.init.Normal{sigma = 0.02}` or `cell.init.Normal(0.02)`)
-- take MindSpore 2.x's arguments, defaults and formulas. Random values are
-- drawn in float32 (float64 for a float64 result) and cast to the dtype.
local raise = require("cell.errors").raise
local core = require "cell.core"
local class = require "cell.class"
local args_util = require "cell.util.args"
local types = require "cell.util.types"

local M = {}

-- Helpers ---------------------------------------------------------------------

local type_name = types.type_name
local shape_list, same_shape = types.shape_list, types.same_shape

local function copy_shape(shape)
  local s = {}
  for i = 1, #shape do s[i] = shape[i] end
  return s
end

--- The dtype random values are drawn in before the cast to `dtype`.
local function work_dtype(dtype)
  if dtype == core.float64 then return core.float64 end
  return core.float32
end

local function numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end

--- MindSpore's fan_in and fan_out: {out, in} for a 2-D shape; {out, in, k...}
-- (a convolution kernel) multiplies both by the receptive field size.
function M.fans(shape, lvl)
  local n = #shape
  if n < 2 then
    raise(("ValueError: 'fan_in' and 'fan_out' can not be computed for tensor with fewer than "
      .. "2 dimensions, but got dimensions %d."):format(n))
  end
  local field = 1
  for i = 3, n do field = field * shape[i] end
  return shape[2] * field, shape[1] * field
end

-- Initializer classes ------------------------------------------------------------

--- The base class. A subclass lists its arguments in `_args` (name, default,
-- kind) and implements `_generate(shape, dtype)` -> Tensor; `_check(shape,
-- lvl)` may reject a shape when a recipe is made.
local Initializer = class("Initializer")
Initializer._args = {}

--- The names of each class's `_args`, for cell.util.args.
local arg_names = setmetatable({}, { __mode = "k" })

--- Arguments as an options table (`Normal{sigma = 0.02}`), positionally
-- (`Normal(0.02)`) or both (cell.util.args), checked by kind. Errors point at the constructor's caller
-- (level 3: this function, the class's __call, the caller).
function Initializer:init(...)
  local args = self._args
  local names = arg_names[args]
  if not names then
    names = {}
    for i, a in ipairs(args) do names[i] = a[1] end
    arg_names[args] = names
  end
  local given = args_util.named(self.__class.name, names, 3, select("#", ...), ...)
  for _, a in ipairs(args) do
    local name, default, kind = a[1], a[2], a[3]
    local v = given[name]
    if v == nil then v = default end
    if v == nil then
      raise(("TypeError: %s() missing the required argument '%s'"):format(self.__class.name, name))
    end
    if kind == "number" and type(v) ~= "number" then
      raise(("TypeError: For '%s', the argument '%s' must be a number, but got %s.")
        :format(self.__class.name, name, type_name(v)))
    elseif kind == "string" and type(v) ~= "string" then
      raise(("TypeError: For '%s', the argument '%s' must be a string, but got %s.")
        :format(self.__class.name, name, type_name(v)))
    elseif kind == "value" and type(v) ~= "number" and type(v) ~= "boolean" then
      raise(("TypeError: For '%s', the argument '%s' must be a number or a boolean, but got %s.")
        :format(self.__class.name, name, type_name(v)))
    end
    self[name] = v
  end
  if self._validate then self:_validate(4) end
end

function Initializer:_check() end

--- `tostring(Normal())` is "Normal(sigma=0.01, mean=0)".
function Initializer:__tostring()
  local parts = {}
  for i, a in ipairs(self._args) do
    local v = self[a[1]]
    parts[i] = a[1] .. "=" .. (type(v) == "string" and ("'" .. v .. "'") or tostring(v))
  end
  return self.__class.name .. "(" .. table.concat(parts, ", ") .. ")"
end

--- Draw the initializer's values for `shape` in `dtype` (a fresh Tensor).
function Initializer:__call(shape, dtype)
  local name = self.__class.name
  if type(shape) ~= "table" or getmetatable(shape) ~= nil then
    require("cell.errors").type_error(name, "shape", "a table of sizes", shape)
  end
  for i = 1, #shape do
    local v = shape[i]
    if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v == math.huge then
      raise(("ValueError: For '%s', the shape must hold non-negative integers, but got %s at position %d.")
        :format(name, tostring(v), i))
    end
  end
  if dtype ~= nil and not core.is_dtype(dtype) then
    require("cell.errors").type_error(name, "dtype", "a dtype (such as cell.float32)", dtype)
  end
  self:_check(shape, 3)
  if type(self._generate) ~= "function" then
    raise(("NotImplementedError: %s is the base class of the initializers and draws no values; "
      .. "use one of them (cell.init.Normal, XavierUniform, ...) or define _generate in a subclass"):format(name))
  end
  return self:_generate(shape, dtype or core.float32)
end

local function define(name, args)
  local C = Initializer:extend(name)
  C._args = args
  M[name] = C
  return C
end

local function check_sigma(self, lvl)
  if self.sigma < 0 then
    raise(("ValueError: For '%s', the argument 'sigma' must be non-negative, but got %s.")
      :format(self.__class.name, tostring(self.sigma)))
  end
end

--- Normal values mean + sigma * N(0, 1), drawn in the work dtype.
local function normal(shape, dtype, mean, sigma)
  local x = core.randn(shape, work_dtype(dtype)):mul_(sigma):add_(mean)
  return x.dtype == dtype and x or x:astype(dtype)
end

--- Uniform values on [lo, hi), drawn in the work dtype.
local function uniform(shape, dtype, lo, hi)
  local x = core.rand(shape, work_dtype(dtype)):mul_(hi - lo):add_(lo)
  return x.dtype == dtype and x or x:astype(dtype)
end

--- Zero(): zeros.
local Zero = define("Zero", {})
function Zero._generate(_, shape, dtype) return core.zeros(shape, dtype) end

--- One(): ones.
local One = define("One", {})
function One._generate(_, shape, dtype) return core.ones(shape, dtype) end

--- Constant(value): every element `value` (a number or a boolean).
local Constant = define("Constant", { { "value", nil, "value" } })
function Constant:_generate(shape, dtype) return core.full(shape, self.value, dtype) end

--- Normal{sigma = 0.01, mean = 0}: N(mean, sigma^2).
local Normal = define("Normal", { { "sigma", 0.01, "number" }, { "mean", 0, "number" } })
Normal._validate = check_sigma
function Normal:_generate(shape, dtype) return normal(shape, dtype, self.mean, self.sigma) end

--- Uniform{scale = 0.07}: U(-scale, scale).
local Uniform = define("Uniform", { { "scale", 0.07, "number" } })
function Uniform:_generate(shape, dtype) return uniform(shape, dtype, -self.scale, self.scale) end

--- TruncatedNormal{sigma = 0.01, mean = 0, a = -2, b = 2}: N(mean, sigma^2)
-- restricted to [a, b] (absolute bounds), by drawing again the values that
-- fall outside. After 100 rounds (an interval with almost no mass) what is
-- left outside is clamped to the interval.
local TruncatedNormal = define("TruncatedNormal", {
  { "sigma", 0.01, "number" }, { "mean", 0, "number" }, { "a", -2, "number" }, { "b", 2, "number" } })
function TruncatedNormal:_validate(lvl)
  check_sigma(self, lvl + 1)
  if not (self.a < self.b) then
    raise(("ValueError: For 'TruncatedNormal', the lower bound 'a' must be less than the upper bound 'b', "
      .. "but got a = %s and b = %s."):format(tostring(self.a), tostring(self.b)))
  end
end
function TruncatedNormal:_generate(shape, dtype)
  local w = work_dtype(dtype)
  local x = core.randn(shape, w):mul_(self.sigma):add_(self.mean)
  for _ = 1, 100 do
    local outside = x:lt(self.a):logical_or(x:gt(self.b))
    if not outside:any():item() then break end
    local again = core.randn(shape, w):mul_(self.sigma):add_(self.mean)
    x = core.where(outside, again, x)
  end
  x = x:clamp(self.a, self.b)
  return x.dtype == dtype and x or x:astype(dtype)
end

--- XavierUniform{gain = 1}: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
local XavierUniform = define("XavierUniform", { { "gain", 1, "number" } })
function XavierUniform:_check(shape, lvl) M.fans(shape, lvl + 1) end
function XavierUniform:_generate(shape, dtype)
  local fan_in, fan_out = M.fans(shape, 3)
  local b = self.gain * math.sqrt(6 / (fan_in + fan_out))
  return uniform(shape, dtype, -b, b)
end

--- XavierNormal{gain = 1}: N(0, s^2), s = gain * sqrt(2 / (fan_in + fan_out)).
local XavierNormal = define("XavierNormal", { { "gain", 1, "number" } })
XavierNormal._check = XavierUniform._check
function XavierNormal:_generate(shape, dtype)
  local fan_in, fan_out = M.fans(shape, 3)
  return normal(shape, dtype, 0, self.gain * math.sqrt(2 / (fan_in + fan_out)))
end

local LINEAR = {
  linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
  conv_transpose2d = true, conv_transpose3d = true, sigmoid = true,
}

--- The gain of a nonlinearity (MindSpore's and PyTorch's calculate_gain):
-- 1 for linear, the convolutions and sigmoid; 5/3 for tanh; sqrt(2) for
-- relu; sqrt(2 / (1 + slope^2)) for leaky_relu.
function M.calculate_gain(nonlinearity, slope)
  if LINEAR[nonlinearity] then return 1 end
  if nonlinearity == "tanh" then return 5 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2) end
  if nonlinearity == "leaky_relu" then return math.sqrt(2 / (1 + (slope or 0.01) ^ 2)) end
  return nil
end

--- The He (Kaiming) arguments: negative_slope, mode ('fan_in' or 'fan_out',
-- any case) and nonlinearity, checked when the initializer is made.
local HE_ARGS = {
  { "negative_slope", 0, "any" }, { "mode", "fan_in", "string" }, { "nonlinearity", "leaky_relu", "string" } }

local function he_validate(self, lvl)
  local name = self.__class.name
  if type(self.negative_slope) ~= "number" then
    raise(("ValueError: For '%s', 'negative_slope' %s is not a valid number. When 'nonlinearity' has been "
      .. "set to 'leaky_relu', 'negative_slope' should be int or float type, but got %s.")
      :format(name, tostring(self.negative_slope), type_name(self.negative_slope)))
  end
  local mode = self.mode:lower()
  if mode ~= "fan_in" and mode ~= "fan_out" then
    raise(("ValueError: For '%s', 'mode' %s not supported, please use one of ['fan_in', 'fan_out']")
      :format(name, self.mode))
  end
  self.mode = mode
  if not M.calculate_gain(self.nonlinearity, self.negative_slope) then
    raise(("ValueError: For '%s', the argument 'nonlinearity' should be one of ['linear', 'conv1d', "
      .. "'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'sigmoid', "
      .. "'tanh', 'relu', 'leaky_relu'], but got %s."):format(name, self.nonlinearity))
  end
end

--- The standard deviation gain / sqrt(fan) of a He initializer.
local function he_std(self, shape)
  local fan_in, fan_out = M.fans(shape, 4)
  local fan = self.mode == "fan_in" and fan_in or fan_out
  return M.calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan)
end

--- HeUniform{negative_slope = 0, mode = "fan_in", nonlinearity = "leaky_relu"}:
-- U(-b, b), b = sqrt(3) * gain / sqrt(fan).
local HeUniform = define("HeUniform", HE_ARGS)
HeUniform._validate = he_validate
HeUniform._check = XavierUniform._check
function HeUniform:_generate(shape, dtype)
  local b = math.sqrt(3) * he_std(self, shape)
  return uniform(shape, dtype, -b, b)
end

--- HeNormal{negative_slope = 0, mode = "fan_in", nonlinearity = "leaky_relu"}:
-- N(0, s^2), s = gain / sqrt(fan).
local HeNormal = define("HeNormal", HE_ARGS)
HeNormal._validate = he_validate
HeNormal._check = XavierUniform._check
function HeNormal:_generate(shape, dtype) return normal(shape, dtype, 0, he_std(self, shape)) end

--- Identity(): a 2-D identity matrix (ones on the main diagonal).
local Identity = define("Identity", {})
function Identity:_check(shape, lvl)
  if #shape ~= 2 then
    raise(("ValueError: For Identity initializer, the dimension of the initialized tensor should be 2, "
      .. "but got %d."):format(#shape))
  end
end
function Identity:_generate(shape, dtype) return core.eye(shape[1], shape[2], dtype) end

--- The product of the sizes of `shape` from position `from` on.
local function prod_from(shape, from)
  local n = 1
  for i = from, #shape do n = n * shape[i] end
  return n
end

local function check_int(self, what, v, min)
  if v ~= math.floor(v) or v < min or v == math.huge then
    raise(("ValueError: For '%s', the argument '%s' must be an integer not less than %d, but got %s.")
      :format(self.__class.name, what, min, tostring(v)))
  end
end

--- Orthogonal{gain = 1}: a (semi-)orthogonal matrix times gain, as
-- MindSpore's: the shape is read as {rows, cols} with cols the product of
-- the other sizes; a normal {rows, cols} draw is orthonormalised (its rows
-- when rows <= cols, else its columns) as QR with R's diagonal made
-- positive, so W W^T = gain^2 I (rows <= cols) or W^T W = gain^2 I.
local Orthogonal = define("Orthogonal", { { "gain", 1, "number" } })
function Orthogonal:_check(shape, lvl)
  if #shape < 2 then
    raise(("ValueError: For Orthogonal initializer, the dimension of the initialized tensor should be no less "
      .. "than 2, but got %d."):format(#shape))
  end
end
function Orthogonal:_generate(shape, dtype)
  local rows, cols = shape[1], prod_from(shape, 2)
  if rows == 0 or cols == 0 then return core.zeros(shape, dtype) end
  local a = core.randn({ rows, cols }, core.float64)
  local tall = rows > cols
  local b = tall and a:transpose(1, 2):contiguous() or a -- n vectors of length m as rows, n <= m
  local n = b.shape[1]
  local q = core.zeros(b.shape, core.float64)
  -- classical Gram-Schmidt applied twice (as stable as Householder here);
  -- its R has a positive diagonal, which is numpy's q * sign(diag(r))
  for j = 1, n do
    local v = b:narrow(1, j, 1)
    if j > 1 then
      local prev = q:narrow(1, 1, j - 1)
      for _ = 1, 2 do v = v - v:matmul(prev:transpose(1, 2)):matmul(prev) end
    end
    q:narrow(1, j, 1):copy_(v / v:norm():item())
  end
  if tall then q = q:transpose(1, 2):contiguous() end
  q = (q * self.gain):reshape(shape)
  return q.dtype == dtype and q or q:astype(dtype)
end

--- Dirac{groups = 1}: the kernel of a convolution that passes its input
-- through: for a 3-, 4- or 5-D {out, in, k...} shape, out is split into
-- `groups` blocks and the d-th output channel of each block (d up to the
-- smaller of out / groups and in) is 1 at input channel d and the centre
-- position (size // 2, 0-based, in each spatial dimension), 0 elsewhere.
local Dirac = define("Dirac", { { "groups", 1, "number" } })
function Dirac:_validate(lvl) check_int(self, "groups", self.groups, 1) end
function Dirac:_check(shape, lvl)
  local n = #shape
  if n < 3 or n > 5 then
    raise(("ValueError: For Dirac initializer, only support to initialize tensor with dimension of 3, 4 or 5, "
      .. "but got %d."):format(n))
  end
  if shape[1] % self.groups ~= 0 then
    raise(("ValueError: For Dirac initializer, the first dimension of the initialized tensor must be divisible "
      .. "by groups, but got first dimension %d, groups %d."):format(shape[1], self.groups))
  end
end
function Dirac:_generate(shape, dtype)
  self:_check(shape, 3)
  local out, inp, k = shape[1], shape[2], prod_from(shape, 3)
  local per = math.floor(out / self.groups)
  local centre = 0 -- the 0-based flat index of the centre of the kernel
  for i = 3, #shape do centre = centre * shape[i] + math.floor(shape[i] / 2) end
  local w = core.zeros({ out, inp, k }, dtype)
  if per > 0 and inp > 0 and k > 0 then
    local block = core.eye(per, inp, dtype)
    local plane = w:select(3, centre + 1)
    for g = 1, self.groups do plane:narrow(1, (g - 1) * per + 1, per):copy_(block) end
  end
  return w:reshape(shape)
end

--- Sparse{sparsity, sigma = 0.01}: a 2-D N(0, sigma^2) matrix in which each
-- column has ceil(sparsity * rows) zeros at rows drawn at random.
local Sparse = define("Sparse", { { "sparsity", nil, "number" }, { "sigma", 0.01, "number" } })
function Sparse:_validate(lvl)
  if not (self.sparsity >= 0 and self.sparsity <= 1) then
    raise(("ValueError: For 'Sparse', the argument 'sparsity' must be in [0, 1], but got %s.")
      :format(tostring(self.sparsity)))
  end
  check_sigma(self, lvl + 1)
end
function Sparse:_check(shape, lvl)
  if #shape ~= 2 then
    raise(("ValueError: For Sparse initializer, the dimension of the initialized tensor should be 2, "
      .. "but got %d."):format(#shape))
  end
end
function Sparse:_generate(shape, dtype)
  local rows = shape[1]
  local zeros = math.ceil(self.sparsity * rows)
  local x = core.randn(shape, work_dtype(dtype)):mul_(self.sigma)
  if zeros > 0 and x:numel() > 0 then
    -- each column's rows ranked by a uniform draw: the first `zeros` go
    local rank = core.rand(shape, core.float32):argsort(1):argsort(1)
    x = x:masked_fill(rank:le(zeros), 0)
  end
  return x.dtype == dtype and x or x:astype(dtype)
end

--- VarianceScaling{scale = 1, mode = "fan_in", distribution =
-- "truncated_normal"}: values whose variance is scale / n, n being fan_in,
-- fan_out or their mean ("fan_avg") (at least 1): "truncated_normal" is
-- N(0, s^2) cut at 2 s, s = sqrt(scale / n) / 0.87962566103423978 (the
-- cut's correction); "untruncated_normal" is N(0, scale / n); "uniform" is
-- U(-b, b), b = sqrt(3 scale / n).
local VarianceScaling = define("VarianceScaling", {
  { "scale", 1, "number" }, { "mode", "fan_in", "string" }, { "distribution", "truncated_normal", "string" } })
local VS_MODES = { fan_in = true, fan_out = true, fan_avg = true }
local VS_DISTRIBUTIONS = { uniform = true, truncated_normal = true, untruncated_normal = true }
function VarianceScaling:_validate(lvl)
  if not (self.scale > 0) then
    raise(("ValueError: For VarianceScaling initializer, scale must be greater than 0, but got %s.")
      :format(tostring(self.scale)))
  end
  if not VS_MODES[self.mode] then
    raise(("ValueError: For VarianceScaling initializer, mode must be fan_in, fan_out or fan_avg, but got %s.")
      :format(self.mode))
  end
  if not VS_DISTRIBUTIONS[self.distribution] then
    raise(("ValueError: For VarianceScaling initializer, distribution must be uniform, truncated_normal or "
      .. "untruncated_normal, but got %s."):format(self.distribution))
  end
end
VarianceScaling._check = XavierUniform._check
function VarianceScaling:_generate(shape, dtype)
  local fan_in, fan_out = M.fans(shape, 3)
  local n = self.mode == "fan_in" and fan_in or self.mode == "fan_out" and fan_out or (fan_in + fan_out) / 2
  local scale = self.scale / math.max(1, n)
  if self.distribution == "uniform" then
    local b = math.sqrt(3 * scale)
    return uniform(shape, dtype, -b, b)
  elseif self.distribution == "untruncated_normal" then
    return normal(shape, dtype, 0, math.sqrt(scale))
  end
  local s = math.sqrt(scale) / 0.87962566103423978
  return TruncatedNormal({ sigma = s, mean = 0, a = -2 * s, b = 2 * s }):_generate(shape, dtype)
end

--- The values of a Tensor (what `initializer(tensor)` makes), copied and
-- cast to the recipe's dtype.
local TensorValues = Initializer:extend("TensorValues")
function TensorValues:init(t) self.tensor = t end
function TensorValues:__tostring() return "TensorValues" end
function TensorValues:_generate(_, dtype) return core.Tensor.astype(self.tensor, dtype) end

M.Initializer = Initializer

--- The names `initializer` knows (any case): MindSpore's aliases and
-- lower-cased class names, and truncated_normal.
local ALIASES = {
  zeros = M.Zero, zero = M.Zero, ones = M.One, one = M.One, normal = M.Normal, uniform = M.Uniform,
  truncatednormal = M.TruncatedNormal, truncated_normal = M.TruncatedNormal,
  xavier_uniform = M.XavierUniform, xavieruniform = M.XavierUniform,
  xavier_normal = M.XavierNormal, xaviernormal = M.XavierNormal,
  he_uniform = M.HeUniform, heuniform = M.HeUniform, he_normal = M.HeNormal, henormal = M.HeNormal,
  identity = M.Identity, orthogonal = M.Orthogonal, dirac = M.Dirac, sparse = M.Sparse,
  variancescaling = M.VarianceScaling, variance_scaling = M.VarianceScaling,
}
local alias_list = {}
for k in pairs(ALIASES) do alias_list[#alias_list + 1] = "'" .. k .. "'" end
table.sort(alias_list)
local ALIAS_TEXT = table.concat(alias_list, ", ")

-- InitTensor: the recipe -----------------------------------------------------

--- What `cell.initializer` returns: `init` (an Initializer), `shape` (a
-- table), `dtype`, `ndim`, `has_init` (true); `init_data()` draws a Tensor.
local InitTensor = class("InitTensor")
M.InitTensor = InitTensor

function InitTensor:init(init, shape, dtype)
  self.init = init
  self.shape = copy_shape(shape)
  self.dtype = dtype
  self.ndim = #shape
  self.has_init = true
end

--- A fresh Tensor of the recipe's shape and dtype, drawn now.
function InitTensor:init_data()
  local t = self.init:_generate(copy_shape(self.shape), self.dtype)
  if not same_shape(t.shape, self.shape) then -- a TensorValues recipe stays its tensor's shape
    raise(("ValueError: init_data: the initializer made shape %s, expected %s")
      :format(shape_list(t.shape), shape_list(self.shape)))
  end
  return t
end

function InitTensor:numel() return numel(self.shape) end

--- MindSpore's text for a tensor whose data is not made yet.
function InitTensor:__tostring()
  return ("Tensor(shape=%s, dtype=%s, value=<uninitialized>)"):format(shape_list(self.shape), tostring(self.dtype))
end

--- Whether x is an InitTensor (what `cell.initializer` returns).
function M.is_init_tensor(x) return class.is_instance(x, InitTensor) end

--- Whether x is an initializer: an InitTensor or an instance of a class
-- from `cell.init`.
function M.is_initializer(x) return class.is_instance(x, InitTensor) or class.is_instance(x, Initializer) end

--- The recipe `it` with another dtype (the same initializer and shape).
function M.retype(it, dtype)
  if it.dtype == dtype then return it end
  return InitTensor(it.init, it.shape, dtype)
end

-- initializer(init, shape, dtype) ------------------------------------------------

local function check_dtype(dtype, lvl)
  if dtype == nil then return core.float32 end
  if core.is_dtype(dtype) then return dtype end
  if type(dtype) == "string" and core.is_dtype(core[dtype]) then return core[dtype] end
  raise(("TypeError: For 'initializer', the argument 'dtype' must be a cell dtype (such as cell.float32), "
    .. "but got %s."):format(type(dtype) == "string" and ("'" .. dtype .. "'") or type_name(dtype)))
end

local function check_shape(shape, lvl)
  if type(shape) == "number" then shape = { shape } end
  if shape == nil then
    raise("ValueError: For 'initializer', the argument 'shape' is required when 'init' is not a Tensor.")
  end
  if type(shape) ~= "table" or getmetatable(shape) ~= nil then
    raise(("ValueError: For 'initializer', the argument 'shape' is invalid, it must be a table of positive "
      .. "integers or a number, but got %s."):format(type_name(shape)))
  end
  for i = 1, #shape do
    local v = shape[i]
    if type(v) ~= "number" or v ~= math.floor(v) or v <= 0 or v == math.huge then
      raise(("ValueError: For 'initializer', the argument 'shape' is invalid, the value of 'shape' must be "
        .. "positive integer, but got %s"):format(types.shape_str(shape)))
    end
  end
  return copy_shape(shape)
end

--- initializer(init, shape, dtype), raising at level `lvl` of this frame
-- (for the functions that pass a user's arguments on: Parameter:clone).
-- Throughout these modules a function given `lvl` raises at that level and
-- passes lvl + 1 to the helpers it calls.
function M.make(init, shape, dtype, lvl)
  if core.is_tensor(init) or class.is_instance(init, InitTensor) then
    local ishape = init.shape
    if shape ~= nil then
      local want = type(shape) == "number" and { shape } or shape
      if type(want) ~= "table" or not same_shape(ishape, want) then
        raise(("ValueError: For 'initializer', the shape of the 'init' argument should be same as the "
          .. "argument 'shape', but got the 'init' shape %s and the 'shape' %s.")
          :format(shape_list(ishape), type(want) == "table" and shape_list(want) or tostring(want)))
      end
    end
    dtype = dtype == nil and init.dtype or check_dtype(dtype, lvl + 1)
    if class.is_instance(init, InitTensor) then return M.retype(init, dtype) end
    return InitTensor(TensorValues(init), ishape, dtype)
  end
  local kind = type(init)
  if kind ~= "string" and kind ~= "number" and kind ~= "boolean" and not class.is_instance(init, Initializer) then
    raise(("TypeError: For 'initializer', the type of the 'init' argument should be 'Tensor', 'number', "
      .. "'string' or 'initializer', but got %s."):format(type_name(init)))
  end
  shape = check_shape(shape, lvl + 1)
  dtype = check_dtype(dtype, lvl + 1)
  if kind == "string" then
    local cls = ALIASES[init:lower()]
    if not cls then
      raise(("ValueError: For 'initializer', the class corresponding to '%s' was not found; the known names "
        .. "are %s (or use a number for a constant)."):format(init, ALIAS_TEXT))
    end
    init = cls()
  elseif kind ~= "table" then
    init = M.Constant(init)
  end
  init:_check(shape, lvl + 1)
  return InitTensor(init, shape, dtype)
end

local INITIALIZER_ARGS = { "shape", "dtype", values = { "shape" } }

--- cell.initializer(init, shape [, dtype = cell.float32]) -> InitTensor.
-- `init`: an alias string ("normal", "xavier_uniform", ...), a number (a
-- constant), a Tensor (its values; `shape`, when given, must equal its
-- shape, and `dtype` defaults to its dtype) or an initializer object.
-- `shape`: a table of positive integers, or a number for 1-D. dtype may
-- also come in a trailing table: cell.initializer("ones", {2}, {dtype = ...})
-- (a table in shape's place is always the shape: {} is 0-D).
function M.initializer(init, ...)
  local shape, dtype = args_util.parse("initializer", INITIALIZER_ARGS, 2, select("#", ...), ...)
  local it = M.make(init, shape, dtype, 3)
  return it
end

return M
