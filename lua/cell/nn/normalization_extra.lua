--- cell.nn.GroupNorm, InstanceNorm1d/2d/3d and RMSNorm as MindSpore 2.7
-- defines them, on cell.ops.group_norm / instance_norm / rms_norm (the
-- fused layer_norm kernel underneath). GroupNorm and InstanceNorm keep
-- Parameters gamma and beta ({num_channels}); RMSNorm keeps weight
-- ({normalized_shape}) as mint.nn.RMSNorm.
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

local function make_param(cls, init, default, shape, dtype, what)
  if init == nil then init = default end
  if core.is_tensor(init) and not T.same_shape(init.shape, shape) then
    raise(("ValueError: For '%s', the '%s' shape must be %s, but got %s.")
      :format(cls, what, T.shape_str(shape), T.shape_str(init.shape)))
  end
  return initializer.initializer(init, shape, dtype):init_data()
end

local function positive_eps(cls, what, v, default)
  v = A.number(cls, what, v, default, 4)
  if not (v > 0) then
    raise(("ValueError: For '%s', the '%s' must be greater than 0, but got %s."):format(cls, what, T.num_str(v)))
  end
  return v
end

--- GroupNorm(num_groups, num_channels [, eps = 1e-5, affine = true,
-- gamma_init = "ones", beta_init = "zeros", dtype = float32]).
local GroupNorm = Cell:extend("GroupNorm")
M.GroupNorm = GroupNorm
function GroupNorm:init(num_groups, num_channels, ...)
  local eps, affine, gamma_init, beta_init, dtype =
    A.args("GroupNorm", { "eps", "affine", "gamma_init", "beta_init", "dtype" }, select("#", ...), ...)
  self.num_groups = A.positive_int("GroupNorm", "num_groups", num_groups, 3)
  self.num_channels = A.positive_int("GroupNorm", "num_channels", num_channels, 3)
  if num_channels % num_groups ~= 0 then
    raise(("ValueError: For 'GroupNorm', the 'num_channels' (%d) must be divisible by 'num_groups' (%d).")
      :format(num_channels, num_groups))
  end
  self.eps = positive_eps("GroupNorm", "eps", eps, 1e-5)
  self.affine = A.bool("GroupNorm", "affine", affine, true, 3)
  dtype = A.float_dtype("GroupNorm", dtype, 3)
  local shape = { num_channels }
  self.gamma = Parameter(make_param("GroupNorm", gamma_init, "ones", shape, dtype, "gamma_init"), "gamma", self.affine)
  self.beta = Parameter(make_param("GroupNorm", beta_init, "zeros", shape, dtype, "beta_init"), "beta", self.affine)
end
function GroupNorm:construct(x)
  local shape = check_tensor("GroupNorm", "x", x).shape
  if #shape < 2 or shape[2] ~= self.num_channels then
    raise(("ValueError: For 'GroupNorm', the input must be {N, C, *} with C = num_channels (%d), but got %s.")
      :format(self.num_channels, T.shape_str(shape)))
  end
  local g, b = self.gamma, self.beta
  if g.dtype ~= x.dtype then g, b = g:astype(x.dtype), b:astype(x.dtype) end
  return ops.group_norm(x, self.num_groups, g, b, self.eps)
end
function GroupNorm:extend_repr()
  return ("num_groups=%d, num_channels=%d, eps=%s, affine=%s"):format(self.num_groups, self.num_channels,
    T.num_str(self.eps), tostring(self.affine))
end

--- InstanceNorm1d/2d/3d(num_features [, eps = 1e-5, momentum = 0.1,
-- affine = true, gamma_init = "ones", beta_init = "zeros", dtype = float32]):
-- inputs {N, C, L} / {N, C, H, W} / {N, C, D, H, W}, each channel of each
-- sample normalised by its own statistics (in training and inference).
-- Parameters moving_mean / moving_variance (requires_grad = false, made
-- before gamma and beta), as MindSpore's, track the statistics in training
-- without entering the output.
local function instance_norm_class(name, rank, layout)
  local C = Cell:extend(name)
  function C:init(num_features, ...)
    local eps, momentum, affine, gamma_init, beta_init, dtype = A.args(name,
      { "eps", "momentum", "affine", "gamma_init", "beta_init", "dtype" }, select("#", ...), ...)
    self.num_features = A.positive_int(name, "num_features", num_features, 3)
    self.eps = positive_eps(name, "eps", eps, 1e-5)
    self.momentum = A.number(name, "momentum", momentum, 0.1, 3)
    if self.momentum < 0 or self.momentum > 1 then
      raise(("ValueError: For '%s', the 'momentum' must be a number in range [0, 1], but got %s.")
        :format(name, T.num_str(self.momentum)))
    end
    self.affine = A.bool(name, "affine", affine, true, 3)
    dtype = A.float_dtype(name, dtype, 3)
    local shape = { num_features }
    self.moving_mean = Parameter(core.zeros(shape, dtype), "moving_mean", false)
    self.moving_variance = Parameter(core.ones(shape, dtype), "moving_variance", false)
    self.gamma = Parameter(make_param(name, gamma_init, "ones", shape, dtype, "gamma_init"), "gamma", self.affine)
    self.beta = Parameter(make_param(name, beta_init, "zeros", shape, dtype, "beta_init"), "beta", self.affine)
  end
  -- MindSpore's running statistics, kept but never used to normalise:
  -- running = momentum * running + (1 - momentum) * observed, observed the
  -- mean over the batch of each instance's mean (and unbiased variance).
  local function track(self, x, shape)
    local n, c = shape[1], shape[2]
    local count = x:numel() / (n * c)
    local m = self.momentum
    -- from the registry: under to_float the cell's read would be a cast copy
    local params = rawget(self, I.S).params.val
    local mean, var = params.moving_mean, params.moving_variance
    local flat = x:detach():reshape({ n, c, count }):astype(mean.dtype)
    mean:mul_(m):add_(flat:mean(3):mean(1) * (1 - m))
    if count > 1 then var:mul_(m):add_(flat:var(3, 1):mean(1) * (1 - m)) end
  end
  function C:construct(x)
    local shape = check_tensor(name, "x", x).shape
    if #shape ~= rank or shape[2] ~= self.num_features then
      raise(("ValueError: For '%s', the input must be %s with C = num_features (%d), but got %s.")
        :format(name, layout, self.num_features, T.shape_str(shape)))
    end
    local g, b = self.gamma, self.beta
    if g.dtype ~= x.dtype then g, b = g:astype(x.dtype), b:astype(x.dtype) end
    if self.training and x:numel() > 0 then track(self, x, shape) end
    return ops.instance_norm(x, g, b, self.eps)
  end
  function C:extend_repr()
    return ("num_features=%d, eps=%s, momentum=%s, affine=%s"):format(self.num_features, T.num_str(self.eps),
      T.num_str(self.momentum), tostring(self.affine))
  end
  M[name] = C
end
instance_norm_class("InstanceNorm1d", 3, "3-D {N, C, L}")
instance_norm_class("InstanceNorm2d", 4, "4-D {N, C, H, W}")
instance_norm_class("InstanceNorm3d", 5, "5-D {N, C, D, H, W}")

--- RMSNorm(normalized_shape [, eps = nil, elementwise_affine = true, dtype =
-- float32]): x / sqrt(mean(x^2) + eps) * weight over the last
-- #normalized_shape dimensions; eps nil is the input dtype's machine epsilon.
local RMSNorm = Cell:extend("RMSNorm")
M.RMSNorm = RMSNorm
local EPS = { float16 = 0.0009765625, bfloat16 = 0.0078125, float32 = 1.1920928955078125e-07,
  float64 = 2.220446049250313e-16 }
function RMSNorm:init(normalized_shape, ...)
  local eps, elementwise_affine, dtype =
    A.args("RMSNorm", { "eps", "elementwise_affine", "dtype" }, select("#", ...), ...)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  if not A.is_list(normalized_shape) or #normalized_shape == 0 then
    raise(("TypeError: For 'RMSNorm', the 'normalized_shape' must be an integer or a list of integers, but got %s.")
      :format(T.type_name(normalized_shape)))
  end
  local shape = {}
  for i = 1, #normalized_shape do shape[i] = A.positive_int("RMSNorm", "normalized_shape", normalized_shape[i], 3) end
  self.normalized_shape = shape
  if eps ~= nil then self.eps = positive_eps("RMSNorm", "eps", eps) end
  self.elementwise_affine = A.bool("RMSNorm", "elementwise_affine", elementwise_affine, true, 3)
  dtype = A.float_dtype("RMSNorm", dtype, 3)
  if self.elementwise_affine then
    self.weight = Parameter(initializer.initializer("ones", shape, dtype):init_data(), "weight")
  end
end
function RMSNorm:construct(x)
  check_tensor("RMSNorm", "x", x)
  local w = self.weight
  if w == nil then
    w = core.ones(self.normalized_shape, x.dtype)
  elseif w.dtype ~= x.dtype then
    w = w:astype(x.dtype)
  end
  local eps = self.eps
  if eps == nil then eps = EPS[tostring(x.dtype):lower()] or EPS.float32 end
  local y = ops.rms_norm(x, w, eps)
  return y
end
function RMSNorm:extend_repr()
  return ("normalized_shape=%s, eps=%s, elementwise_affine=%s"):format(T.tuple_str(self.normalized_shape),
    self.eps and T.num_str(self.eps) or "None", tostring(self.elementwise_affine))
end

return M
