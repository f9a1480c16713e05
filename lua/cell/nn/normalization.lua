--- cell.nn.BatchNorm1d, BatchNorm2d and LayerNorm, as MindSpore 2.x
-- defines them, on cell.ops.batch_norm and cell.ops.layer_norm.
--
-- BatchNorm: as MindSpore's _BatchNorm, four Parameters of {C} made in
-- MindSpore's order: moving_mean and moving_variance (requires_grad =
-- false: in get_parameters and the state_dict, not in trainable_params)
-- then gamma and beta (trainable only when `affine`; they exist either
-- way). Checkpoint names are MindSpore's: moving_mean, moving_variance,
-- gamma, beta (under the parent's prefix), the keys that cell's earlier
-- buffers had, so files saved then load unchanged. In training mode
-- (set_train) the batch statistics normalise and the moving statistics are
-- updated in place, running = momentum * running + (1 - momentum) * batch
-- (the unbiased variance for moving_variance); in inference they normalise.
-- use_batch_statistics = true or false forces one behaviour whatever the
-- mode.
--
-- LayerNorm: Parameters gamma and beta of normalized_shape; the input is
-- normalised over its dimensions from begin_norm_axis to the last, and
-- gamma/beta apply to those from begin_params_axis (1-based axes, negative
-- counting from the end: -1 is the last).
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

-- BatchNorm --------------------------------------------------------------------

local BN_OPTIONS = { "eps", "momentum", "affine", "gamma_init", "beta_init", "moving_mean_init", "moving_var_init",
  "use_batch_statistics", "data_format", "dtype" }

--- What the two BatchNorm classes share; `dims` lists the input ranks they
-- take and `layout` names them in messages.
local function batch_norm_class(name, dims, layout)
  local C = Cell:extend(name)

  --- (num_features [, eps = 1e-5, momentum = 0.9, affine = true, gamma_init = "ones",
  -- beta_init = "zeros", moving_mean_init = "zeros", moving_var_init = "ones",
  -- use_batch_statistics = nil, data_format = "NCHW", dtype = float32]),
  -- or num_features and an options table.
  function C:init(num_features, ...)
    local eps, momentum, affine, gamma_init, beta_init, mean_init, var_init, use_batch_statistics, data_format,
    dtype = A.args(name, BN_OPTIONS, select("#", ...), ...)
    if type(num_features) ~= "number" or not T.is_int(num_features) then
      raise(("TypeError: For '%s', the 'num_features' must be an integer, but got %s.")
        :format(name, type(num_features) == "number" and T.num_str(num_features) or T.type_name(num_features)))
    end
    if num_features < 1 then
      raise(("ValueError: For '%s', the 'num_features' must be at least 1, but got %s."):format(name, T.num_str(num_features)))
    end
    eps = A.number(name, "eps", eps, 1e-5, 3)
    if eps <= 0 then
      raise(("ValueError: For '%s', the 'eps' must be greater than 0, but got %s."):format(name, T.num_str(eps)))
    end
    momentum = A.number(name, "momentum", momentum, 0.9, 3)
    if momentum < 0 or momentum > 1 then
      raise(("ValueError: For '%s', the 'momentum' must be a number in range [0, 1], but got %s.")
        :format(name, T.num_str(momentum)))
    end
    affine = A.bool(name, "affine", affine, true, 3)
    if use_batch_statistics ~= nil and type(use_batch_statistics) ~= "boolean" then
      raise(("ValueError: For '%s', the 'use_batch_statistics' must be a boolean value or nil, but got %s.")
        :format(name, T.type_name(use_batch_statistics)))
    end
    A.choice(name, "data_format", data_format == nil and "NCHW" or data_format, { "NCHW" }, 3)
    dtype = A.float_dtype(name, dtype, 3)
    self.num_features, self.eps, self.momentum, self.affine = num_features, eps, momentum, affine
    self.use_batch_statistics, self.format = use_batch_statistics, "NCHW"
    local shape = { num_features }
    local function make(init, default, what)
      if init == nil then init = default end
      if core.is_tensor(init) and not T.same_shape(init.shape, shape) then
        raise(("ValueError: For '%s', the '%s' shape must be %s, but got %s.")
          :format(name, what, T.shape_str(shape), T.shape_str(init.shape)))
      end
      return initializer.initializer(init, shape, dtype):init_data()
    end
    self.moving_mean = Parameter(make(mean_init, "zeros", "moving_mean_init"), "moving_mean", false)
    self.moving_variance = Parameter(make(var_init, "ones", "moving_var_init"), "moving_variance", false)
    self.gamma = Parameter(make(gamma_init, "ones", "gamma_init"), "gamma", affine)
    self.beta = Parameter(make(beta_init, "zeros", "beta_init"), "beta", affine)
  end

  function C:construct(x)
    local shape = check_tensor(name, "x", x).shape
    if not dims[#shape] or shape[2] ~= self.num_features then
      raise(("ValueError: For '%s', the input must be %s with C = num_features (%d), but got %s.")
        :format(name, layout, self.num_features, T.shape_str(shape)))
    end
    local training = self.use_batch_statistics
    if training == nil then training = self.training end
    if training and x:numel() == shape[2] then
      raise(("ValueError: For '%s', expected more than 1 value per channel when training, but got an input of "
        .. "shape %s."):format(name, T.shape_str(shape)))
    end
    local x4 = #shape == 3 and x:unsqueeze(4) or x
    if #shape == 5 then x4 = x:reshape { shape[1], shape[2], shape[3] * shape[4], shape[5] } end -- BatchNorm3d
    -- the moving statistics straight from the registry: under to_float a
    -- Parameter read through the cell is a cast copy, and the update must
    -- reach the Parameter itself
    local params = rawget(self, I.S).params.val
    local y = ops.batch_norm(x4, params.moving_mean, params.moving_variance, self.gamma, self.beta,
      -- the functional op's momentum weighs the batch value (MindSpore's ops.batch_norm)
      { training = training, momentum = 1 - self.momentum, eps = self.eps })
    if #shape == 3 then y = y:squeeze(4) end
    if #shape == 5 then y = y:reshape(shape) end
    return y
  end

  --- MindSpore's text: the four Parameters as they print.
  function C:extend_repr()
    return ("num_features=%d, eps=%s, momentum=%s, gamma=%s, beta=%s, moving_mean=%s, moving_variance=%s")
      :format(self.num_features, T.num_str(self.eps), T.num_str(self.momentum), tostring(self.gamma),
        tostring(self.beta), tostring(self.moving_mean), tostring(self.moving_variance))
  end

  M[name] = C
  return C
end

batch_norm_class("BatchNorm1d", { [2] = true, [3] = true }, "2-D {N, C} or 3-D {N, C, L}")
batch_norm_class("BatchNorm2d", { [4] = true }, "4-D {N, C, H, W}")
batch_norm_class("BatchNorm3d", { [5] = true }, "5-D {N, C, D, H, W}")

-- LayerNorm --------------------------------------------------------------------

local LayerNorm = Cell:extend("LayerNorm")
M.LayerNorm = LayerNorm
-- Kept in float32 by amp's O2 (its output back in the low dtype), it takes
-- the low-precision input as it is: ops.layer_norm reads bfloat16 or
-- float16 rows with the float32 gamma and beta and computes in float32 (or
-- wider), rounding each output once, which saves the casts to float32 and
-- back (and theirs in the backward pass).
LayerNorm.keeps_low_input = true

local LN_OPTIONS = { "begin_norm_axis", "begin_params_axis", "gamma_init", "beta_init", "epsilon", "dtype" }

local function check_axis(what, v, lvl)
  if type(v) ~= "number" or not T.is_int(v) then
    raise(("TypeError: For 'LayerNorm', the '%s' must be an integer, but got %s.")
      :format(what, type(v) == "number" and T.num_str(v) or T.type_name(v)))
  end
  if v == 0 then
    raise(("ValueError: For 'LayerNorm', the '%s' is 1-based (or negative, -1 for the last axis), but got 0.")
      :format(what))
  end
  return v
end

--- LayerNorm(normalized_shape [, begin_norm_axis = -1, begin_params_axis = -1,
-- gamma_init = "ones", beta_init = "zeros", epsilon = 1e-7, dtype = float32]),
-- or normalized_shape and an options table.
function LayerNorm:init(normalized_shape, ...)
  local begin_norm_axis, begin_params_axis, gamma_init, beta_init, epsilon, dtype =
    A.args("LayerNorm", LN_OPTIONS, select("#", ...), ...)
  if type(normalized_shape) == "number" then normalized_shape = { normalized_shape } end
  if not A.is_list(normalized_shape) or #normalized_shape == 0 then
    raise(("TypeError: For 'LayerNorm', the type of 'normalized_shape' must be a list of integers, but got %s.")
      :format(T.type_name(normalized_shape)))
  end
  local shape = {}
  for i = 1, #normalized_shape do shape[i] = A.positive_int("LayerNorm", "normalized_shape", normalized_shape[i], 3) end
  self.normalized_shape = shape
  self.begin_norm_axis = check_axis("begin_norm_axis", begin_norm_axis == nil and -1 or begin_norm_axis, 3)
  self.begin_params_axis = check_axis("begin_params_axis", begin_params_axis == nil and -1 or begin_params_axis, 3)
  self.epsilon = A.number("LayerNorm", "epsilon", epsilon, 1e-7, 3)
  if self.epsilon <= 0 then
    raise(("ValueError: For 'LayerNorm', the 'epsilon' must be greater than 0, but got %s.")
      :format(T.num_str(self.epsilon)))
  end
  dtype = A.float_dtype("LayerNorm", dtype, 3)
  local function make(init, default, what)
    if init == nil then init = default end
    if core.is_tensor(init) and not T.same_shape(init.shape, shape) then
      raise(("ValueError: For 'LayerNorm', the '%s' shape must be %s, but got %s.")
        :format(what, T.shape_str(shape), T.shape_str(init.shape)))
    end
    return initializer.initializer(init, shape, dtype):init_data()
  end
  self.gamma = Parameter(make(gamma_init, "ones", "gamma_init"), "gamma")
  self.beta = Parameter(make(beta_init, "zeros", "beta_init"), "beta")
end

--- A 1-based axis (negative from the end) of a rank-r input, or nil.
local function resolve(axis, r)
  local a = axis < 0 and axis + r + 1 or axis
  if a < 1 or a > r then return nil end
  return a
end

function LayerNorm:construct(x)
  local shape = check_tensor("LayerNorm", "x", x).shape
  local r = #shape
  local bn, bp = resolve(self.begin_norm_axis, r), resolve(self.begin_params_axis, r)
  if r == 0 or not bn or not bp then
    raise(("ValueError: For 'LayerNorm', begin_norm_axis (%d) and begin_params_axis (%d) must be axes of the "
      .. "input, but got an input of shape %s."):format(self.begin_norm_axis, self.begin_params_axis,
        T.shape_str(shape)))
  end
  local trailing = {}
  for i = bp, r do trailing[#trailing + 1] = shape[i] end
  if not T.same_shape(trailing, self.normalized_shape) then
    raise(("ValueError: For 'LayerNorm', the input's dimensions from begin_params_axis (%d) must be "
      .. "normalized_shape %s, but got an input of shape %s."):format(self.begin_params_axis,
        T.shape_str(self.normalized_shape), T.shape_str(shape)))
  end
  local gamma, beta = self.gamma, self.beta
  if gamma.dtype ~= x.dtype then
    local mixed = rawget(self, I.S).mixed
    if mixed == core.float32 and gamma.dtype == mixed and bn == bp then -- a low input kept (keeps_low_input)
      return ops.layer_norm(x, r - bn + 1, gamma, beta, self.epsilon)
    end
    if mixed == core.float32 then x = x:astype(mixed) end
    if gamma.dtype ~= x.dtype then gamma, beta = gamma:astype(x.dtype), beta:astype(x.dtype) end
  end
  if bn == bp then return ops.layer_norm(x, r - bn + 1, gamma, beta, self.epsilon) end
  return ops.layer_norm(x, r - bn + 1, nil, nil, self.epsilon) * gamma + beta
end

--- MindSpore's text (with the '=' after gamma that MindSpore leaves out).
function LayerNorm:extend_repr()
  return ("normalized_shape=%s, begin_norm_axis=%d, begin_params_axis=%d, gamma=%s, beta=%s")
    :format(T.tuple_str(self.normalized_shape), self.begin_norm_axis, self.begin_params_axis, tostring(self.gamma),
      tostring(self.beta))
end

return M
