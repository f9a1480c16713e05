-- initializer_spec.lua - cell.initializer and the classes of cell.init
-- (API.md, Parameter and ParameterTuple): the InitTensor recipe, aliases,
-- shapes and dtypes, Tensor and number inits, each class's arguments and
-- defaults, every formula checked statistically against hand-computed
-- bounds and moments on large shapes, fans of 2-D and convolution shapes,
-- seeded reproducibility, and the exact error texts.
local H = require "helpers"
local cell = require "cell"
local init_mod = require "cell.initializer"
local class = require "cell.class"

local I = cell.init

--- The message of the error fn raises (pointing at this spec); the process
-- keeps working afterwards.
local function err(fn)
  local msg = H.caller_error("initializer_spec%.lua", fn)
  H.still_works()
  return msg
end

--- min, max, mean and standard deviation of a tensor (as float64).
local function stats(t)
  t = t:astype(cell.float64)
  return t:min():item(), t:max():item(), t:mean():item(), t:std():item()
end

--- A float32's value for the bound b (what a float32 tensor can hold).
local function f32(b) return cell.tensor(b, cell.float32):item() end

local BIG = { 400, 500 } -- 200,000 draws: the mean is within 0.011 sigma at 5 sd

--- Check uniform draws t on [-b, b]: inside exactly, reaching both ends,
-- centred, with the standard deviation b / sqrt(3).
local function check_uniform(t, b, what)
  local lo, hi, mean, sd = stats(t)
  local edge = t.dtype == cell.float32 and f32(b) or b
  assert.is_true(lo >= -edge and hi <= edge, what .. ": inside [-b, b]")
  assert.is_true(lo < -b * 0.999 and hi > b * 0.999, what .. ": reaches both ends")
  assert.is_true(math.abs(mean) < 0.012 * b, what .. ": mean " .. mean)
  assert.is_true(math.abs(sd / (b / math.sqrt(3)) - 1) < 0.01, what .. ": sd " .. sd)
end

--- Check normal draws t against N(mean, sigma^2).
local function check_normal(t, mean, sigma, what)
  local _, _, m, sd = stats(t)
  assert.is_true(math.abs(m - mean) < 0.012 * sigma, what .. ": mean " .. m)
  assert.is_true(math.abs(sd / sigma - 1) < 0.01, what .. ": sd " .. sd)
end

describe("cell.initializer", function()
  before_each(function() cell.set_seed(20240607) end)

  describe("the InitTensor it returns", function()
    it("has shape, dtype (float32 by default), ndim and has_init, and no data until init_data", function()
      local it = cell.initializer("normal", { 2, 3 })
      assert.are.same({ 2, 3 }, it.shape)
      assert.are.equal(cell.float32, it.dtype)
      assert.are.equal(2, it.ndim)
      assert.is_true(it.has_init)
      assert.are.equal(6, it:numel())
      assert.is_false(cell.is_tensor(it))
      assert.are.equal("Tensor(shape=[2, 3], dtype=Float32, value=<uninitialized>)", tostring(it))
      local t = it:init_data()
      assert.is_true(cell.is_tensor(t))
      H.assert_shape(t, { 2, 3 })
      assert.are.equal(cell.float32, t.dtype)
    end)

    it("draws a fresh tensor at every init_data", function()
      local it = cell.initializer("uniform", { 50 })
      local a, b = it:init_data(), it:init_data()
      assert.are_not.equal(a:data_ptr(), b:data_ptr())
      assert.is_false(a:eq(b):all():item())
    end)

    it("keeps its own copy of the shape", function()
      local shape = { 2, 2 }
      local it = cell.initializer("ones", shape)
      shape[1] = 5
      assert.are.same({ 2, 2 }, it.shape)
      H.assert_shape(it:init_data(), { 2, 2 })
    end)

    it("takes a dtype object or its name", function()
      assert.are.equal(cell.float64, cell.initializer("ones", { 2 }, cell.float64).dtype)
      assert.are.equal(cell.int32, cell.initializer("ones", { 2 }, "int32").dtype)
      H.assert_values(cell.initializer("ones", { 2 }, cell.int32):init_data(), { 1, 1 }, "int32")
    end)

    it("is an initializer, as are the class instances; other values are not", function()
      assert.is_true(cell.is_initializer(cell.initializer("zeros", { 1 })))
      assert.is_true(cell.is_initializer(I.Normal()))
      assert.is_true(cell.is_initializer(I.HeUniform()))
      assert.is_false(cell.is_initializer(cell.zeros({ 1 })))
      assert.is_false(cell.is_initializer("normal"))
      assert.is_false(cell.is_initializer(0))
      assert.is_false(cell.is_initializer({}))
      assert.is_false(cell.is_initializer(nil))
    end)
  end)

  describe("init", function()
    it("names an initializer class, in any case", function()
      local expect = {
        zeros = I.Zero, zero = I.Zero, ones = I.One, one = I.One, normal = I.Normal, uniform = I.Uniform,
        truncatednormal = I.TruncatedNormal, truncated_normal = I.TruncatedNormal,
        xavier_uniform = I.XavierUniform, xavieruniform = I.XavierUniform,
        xavier_normal = I.XavierNormal, xaviernormal = I.XavierNormal,
        he_uniform = I.HeUniform, heuniform = I.HeUniform, he_normal = I.HeNormal, henormal = I.HeNormal,
        identity = I.Identity,
      }
      for name, cls in pairs(expect) do
        assert.is_true(class.is_instance(cell.initializer(name, { 2, 2 }).init, cls), name)
        assert.is_true(class.is_instance(cell.initializer(name:upper(), { 2, 2 }).init, cls), name:upper())
      end
      assert.is_true(class.is_instance(cell.initializer("TruncatedNormal", { 2 }).init, I.TruncatedNormal))
    end)

    it("rejects an unknown name, listing the known ones", function()
      assert.are.equal("ValueError: For 'initializer', the class corresponding to 'gaussian' was not found; "
        .. "the known names are 'dirac', 'he_normal', 'he_uniform', 'henormal', 'heuniform', 'identity', "
        .. "'normal', 'one', 'ones', 'orthogonal', 'sparse', 'truncated_normal', 'truncatednormal', 'uniform', "
        .. "'variance_scaling', 'variancescaling', 'xavier_normal', 'xavier_uniform', 'xaviernormal', "
        .. "'xavieruniform', 'zero', 'zeros' (or use a number for a constant).", err(function() local _ = cell.initializer("gaussian", { 2 }) end))
      assert.is_truthy(err(function() local _ = cell.initializer("constant", { 2 }) end)
        :find("'constant' was not found", 1, true))
    end)

    it("is a number: a constant, integers exactly", function()
      H.assert_values(cell.initializer(2.5, { 2, 2 }):init_data(), { { 2.5, 2.5 }, { 2.5, 2.5 } }, "float32")
      H.assert_values(cell.initializer(7, { 3 }, cell.int64):init_data(), { 7, 7, 7 }, "int64")
      H.assert_values(cell.initializer(-3, {}):init_data(), -3, "float32")
      assert.is_true(class.is_instance(cell.initializer(1, { 1 }).init, I.Constant))
    end)

    it("is a Tensor: a copy of its values, of its shape, in its dtype unless one is given", function()
      local src = cell.tensor({ { 1, 2 }, { 3, 4 } })
      local it = cell.initializer(src)
      assert.are.same({ 2, 2 }, it.shape)
      assert.are.equal(cell.float32, it.dtype)
      local t = it:init_data()
      H.assert_values(t, { { 1, 2 }, { 3, 4 } }, "float32")
      assert.are_not.equal(src:data_ptr(), t:data_ptr())
      H.assert_values(cell.initializer(src, { 2, 2 }, cell.int32):init_data(), { { 1, 2 }, { 3, 4 } }, "int32")
      H.assert_values(cell.initializer(cell.tensor({ 5, 6 }, cell.int64), 2):init_data(), { 5, 6 }, "int64")
    end)

    it("is a Tensor whose shape must equal the given one", function()
      assert.are.equal("ValueError: For 'initializer', the shape of the 'init' argument should be same as the "
        .. "argument 'shape', but got the 'init' shape [2, 3] and the 'shape' [3, 2].",
        err(function() local _ = cell.initializer(cell.ones({ 2, 3 }), { 3, 2 }) end))
      assert.are.equal("ValueError: For 'initializer', the shape of the 'init' argument should be same as the "
        .. "argument 'shape', but got the 'init' shape [2] and the 'shape' [3].",
        err(function() local _ = cell.initializer(cell.ones({ 2 }), 3) end))
    end)

    it("is an InitTensor: the same recipe, in the given dtype", function()
      local it = cell.initializer("ones", { 2 })
      assert.are.equal(it, cell.initializer(it))
      local d = cell.initializer(it, { 2 }, cell.float64)
      assert.are.equal(cell.float64, d.dtype)
      assert.are.equal(it.init, d.init)
    end)

    it("is an initializer object", function()
      local it = cell.initializer(I.Constant(4), { 2 }, cell.int32)
      H.assert_values(it:init_data(), { 4, 4 }, "int32")
    end)

    it("must be a Tensor, a number, a string or an initializer", function()
      assert.are.equal("TypeError: For 'initializer', the type of the 'init' argument should be 'Tensor', "
        .. "'number', 'string' or 'initializer', but got function.",
        err(function() local _ = cell.initializer(print, { 2 }) end))
      assert.are.equal("TypeError: For 'initializer', the type of the 'init' argument should be 'Tensor', "
        .. "'number', 'string' or 'initializer', but got table.",
        err(function() local _ = cell.initializer({ 1, 2 }, { 2 }) end))
      assert.are.equal("TypeError: For 'initializer', the type of the 'init' argument should be 'Tensor', "
        .. "'number', 'string' or 'initializer', but got nil.",
        err(function() local _ = cell.initializer(nil, { 2 }) end))
    end)
  end)

  describe("shape", function()
    it("is a table of positive integers, {} for a scalar, or a number for 1-D", function()
      assert.are.same({ 4 }, cell.initializer("zeros", 4).shape)
      assert.are.same({}, cell.initializer("zeros", {}).shape)
      H.assert_values(cell.initializer("ones", {}):init_data(), 1, "float32")
    end)

    it("is always the table in its place; dtype may come in a trailing options table", function()
      local it = cell.initializer("ones", { 2 }, { dtype = cell.float64 })
      assert.are.equal(cell.float64, it.dtype)
      assert.are.same({}, cell.initializer("ones", {}, { dtype = cell.float64 }).shape)
      assert.are.equal("TypeError: initializer() got an unexpected keyword argument 'type'; the options are shape, "
        .. "dtype", err(function() local _ = cell.initializer("ones", { 2 }, { type = cell.float64 }) end))
    end)

    it("rejects sizes that are not positive integers, naming the shape as a tuple", function()
      local pre = "ValueError: For 'initializer', the argument 'shape' is invalid, the value of 'shape' must be "
        .. "positive integer, but got "
      assert.are.equal(pre .. "(2, 0)", err(function() local _ = cell.initializer("ones", { 2, 0 }) end))
      assert.are.equal(pre .. "(-1,)", err(function() local _ = cell.initializer("ones", -1) end))
      assert.are.equal(pre .. "(2, 1.5)", err(function() local _ = cell.initializer("ones", { 2, 1.5 }) end))
      assert.are.equal(pre .. "(2, x)", err(function() local _ = cell.initializer("ones", { 2, "x" }) end))
    end)

    it("is required, and must be a table or a number", function()
      assert.are.equal("ValueError: For 'initializer', the argument 'shape' is required when 'init' is not a "
        .. "Tensor.", err(function() local _ = cell.initializer("ones") end))
      assert.are.equal("ValueError: For 'initializer', the argument 'shape' is invalid, it must be a table of "
        .. "positive integers or a number, but got string.",
        err(function() local _ = cell.initializer("ones", "2x3") end))
      assert.are.equal("ValueError: For 'initializer', the argument 'shape' is invalid, it must be a table of "
        .. "positive integers or a number, but got Tensor.",
        err(function() local _ = cell.initializer("ones", cell.ones({ 2 })) end))
    end)
  end)

  it("rejects a dtype that is not one", function()
    assert.are.equal("TypeError: For 'initializer', the argument 'dtype' must be a cell dtype (such as "
      .. "cell.float32), but got 'float128'.", err(function() local _ = cell.initializer("ones", { 2 }, "float128") end))
    assert.are.equal("TypeError: For 'initializer', the argument 'dtype' must be a cell dtype (such as "
      .. "cell.float32), but got number.", err(function() local _ = cell.initializer("ones", { 2 }, 32) end))
  end)
end)

describe("cell.init classes", function()
  before_each(function() cell.set_seed(7) end)

  describe("arguments", function()
    it("have MindSpore's defaults", function()
      assert.are.equal(0.01, I.Normal().sigma)
      assert.are.equal(0, I.Normal().mean)
      assert.are.equal(0.07, I.Uniform().scale)
      local tn = I.TruncatedNormal()
      assert.are.same({ 0.01, 0, -2, 2 }, { tn.sigma, tn.mean, tn.a, tn.b })
      assert.are.equal(1, I.XavierUniform().gain)
      assert.are.equal(1, I.XavierNormal().gain)
      for _, C in ipairs { I.HeUniform, I.HeNormal } do
        local he = C()
        assert.are.same({ 0, "fan_in", "leaky_relu" }, { he.negative_slope, he.mode, he.nonlinearity })
      end
    end)

    it("are given as an options table or positionally, in MindSpore's order", function()
      local a, b = I.TruncatedNormal { sigma = 0.5, b = 1 }, I.TruncatedNormal(0.5, 0.1, -1, 1)
      assert.are.same({ 0.5, 0, -2, 1 }, { a.sigma, a.mean, a.a, a.b })
      assert.are.same({ 0.5, 0.1, -1, 1 }, { b.sigma, b.mean, b.a, b.b })
      local he = I.HeNormal(0.2, "FAN_OUT", "relu")
      assert.are.same({ 0.2, "fan_out", "relu" }, { he.negative_slope, he.mode, he.nonlinearity })
      assert.are.equal(3, I.Constant(3).value)
      assert.are.equal(3, I.Constant { value = 3 }.value)
    end)

    it("print with their values", function()
      assert.are.equal("Normal(sigma=0.01, mean=0)", tostring(I.Normal()))
      assert.are.equal("HeUniform(negative_slope=0, mode='fan_in', nonlinearity='leaky_relu')", tostring(I.HeUniform()))
      assert.are.equal("Zero()", tostring(I.Zero()))
    end)

    it("reject unknown, missing, surplus and mistyped ones", function()
      assert.are.equal("TypeError: Normal() got an unexpected keyword argument 'std'; the options are sigma, mean",
        err(function() local _ = I.Normal { std = 1 } end))
      assert.are.equal("TypeError: Constant() missing the required argument 'value'",
        err(function() local _ = I.Constant() end))
      assert.are.equal("TypeError: Uniform() takes at most 1 optional argument, but 2 were given",
        err(function() local _ = I.Uniform(1, 2) end))
      assert.are.equal("TypeError: For 'Normal', the argument 'sigma' must be a number, but got string.",
        err(function() local _ = I.Normal("big") end))
      assert.are.equal("TypeError: For 'HeUniform', the argument 'mode' must be a string, but got number.",
        err(function() local _ = I.HeUniform { mode = 1 } end))
      assert.are.equal("TypeError: For 'Constant', the argument 'value' must be a number or a boolean, but got "
        .. "Tensor.", err(function() local _ = I.Constant(cell.ones({ 1 })) end))
    end)

    it("reject out-of-range values as MindSpore does", function()
      assert.are.equal("ValueError: For 'Normal', the argument 'sigma' must be non-negative, but got -1.",
        err(function() local _ = I.Normal(-1) end))
      assert.are.equal("ValueError: For 'TruncatedNormal', the argument 'sigma' must be non-negative, but got -0.5.",
        err(function() local _ = I.TruncatedNormal { sigma = -0.5 } end))
      assert.are.equal("ValueError: For 'TruncatedNormal', the lower bound 'a' must be less than the upper bound "
        .. "'b', but got a = 1 and b = 1.", err(function() local _ = I.TruncatedNormal { a = 1, b = 1 } end))
      assert.are.equal("ValueError: For 'HeUniform', 'mode' fan_avg not supported, please use one of "
        .. "['fan_in', 'fan_out']", err(function() local _ = I.HeUniform { mode = "fan_avg" } end))
      assert.are.equal("ValueError: For 'HeNormal', the argument 'nonlinearity' should be one of ['linear', "
        .. "'conv1d', 'conv2d', 'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', "
        .. "'sigmoid', 'tanh', 'relu', 'leaky_relu'], but got gelu.",
        err(function() local _ = I.HeNormal { nonlinearity = "gelu" } end))
      assert.are.equal("ValueError: For 'HeUniform', 'negative_slope' true is not a valid number. When "
        .. "'nonlinearity' has been set to 'leaky_relu', 'negative_slope' should be int or float type, but "
        .. "got boolean.", err(function() local _ = I.HeUniform { negative_slope = true } end))
    end)
  end)

  describe("constants", function()
    it("Zero, One and Constant fill exactly, in any dtype", function()
      H.assert_values(cell.initializer(I.Zero(), { 2, 2 }, cell.int8):init_data(), { { 0, 0 }, { 0, 0 } }, "int8")
      H.assert_values(cell.initializer("ones", { 3 }, cell.float16):init_data(), { 1, 1, 1 }, "float16")
      H.assert_values(cell.initializer(I.Constant(-0.25), { 2 }, cell.float64):init_data(), { -0.25, -0.25 },
        "float64")
      H.assert_values(cell.initializer(I.Constant(true), { 2 }, cell.bool):init_data(), { true, true }, "bool")
    end)

    it("Identity is the 2-D identity, and only 2-D", function()
      H.assert_values(cell.initializer("identity", { 2, 3 }):init_data(), { { 1, 0, 0 }, { 0, 1, 0 } }, "float32")
      assert.are.equal("ValueError: For Identity initializer, the dimension of the initialized tensor should be "
        .. "2, but got 3.", err(function() local _ = cell.initializer("identity", { 2, 2, 2 }) end))
    end)
  end)

  describe("random draws", function()
    it("Uniform: U(-scale, scale), default scale 0.07", function()
      check_uniform(cell.initializer("uniform", BIG):init_data(), 0.07, "uniform")
      check_uniform(cell.initializer(I.Uniform(0.3), BIG, cell.float64):init_data(), 0.3, "Uniform(0.3) float64")
    end)

    it("Normal: N(mean, sigma^2), default N(0, 0.01^2)", function()
      check_normal(cell.initializer("normal", BIG):init_data(), 0, 0.01, "normal")
      check_normal(cell.initializer(I.Normal { sigma = 2, mean = 3 }, BIG, cell.float64):init_data(), 3, 2,
        "Normal(2, 3)")
    end)

    it("TruncatedNormal: inside [a, b] (absolute bounds), with the truncated moments", function()
      local a, b = -1, 1.5
      local t = cell.initializer(I.TruncatedNormal { sigma = 1, mean = 0, a = a, b = b }, BIG):init_data()
      local lo, hi, mean, sd = stats(t)
      assert.is_true(lo >= a and hi <= b, "inside [a, b]")
      assert.is_true(lo < a + 0.01 and hi > b - 0.01, "reaches both ends")
      -- the truncated standard normal's moments, by numerical integration
      local z, m1, m2, n = 0, 0, 0, 20000
      for i = 0, n do
        local x = a + (b - a) * i / n
        local w = math.exp(-x * x / 2) * ((i == 0 or i == n) and 0.5 or 1)
        z, m1, m2 = z + w, m1 + w * x, m2 + w * x * x
      end
      local emean, esd = m1 / z, math.sqrt(m2 / z - (m1 / z) ^ 2)
      assert.is_true(math.abs(mean - emean) < 0.012 * esd, "mean " .. mean .. " vs " .. emean)
      assert.is_true(math.abs(sd / esd - 1) < 0.01, "sd " .. sd .. " vs " .. esd)
    end)

    it("TruncatedNormal: the default is N(0, 0.01^2) inside [-2, 2]", function()
      local t = cell.initializer("truncated_normal", BIG):init_data()
      local lo, hi = stats(t)
      assert.is_true(lo >= -2 and hi <= 2)
      check_normal(t, 0, 0.01, "truncated default")
    end)

    it("TruncatedNormal: a shifted mean, tightly truncated", function()
      local t = cell.initializer(I.TruncatedNormal(2, 5, 4.5, 5.5), { 1000 }, cell.float64):init_data()
      local lo, hi = stats(t)
      assert.is_true(lo >= 4.5 and hi <= 5.5)
    end)

    it("XavierUniform: bound gain * sqrt(6 / (fan_in + fan_out)) on {out, in}", function()
      local t = cell.initializer("xavier_uniform", { 300, 200 }):init_data()
      check_uniform(t, math.sqrt(6 / 500), "xavier_uniform")
      check_uniform(cell.initializer(I.XavierUniform(2), { 300, 200 }, cell.float64):init_data(),
        2 * math.sqrt(6 / 500), "XavierUniform(2)")
    end)

    it("XavierNormal: sd gain * sqrt(2 / (fan_in + fan_out))", function()
      check_normal(cell.initializer("xavier_normal", { 300, 200 }):init_data(), 0, math.sqrt(2 / 500), "xavier_normal")
      check_normal(cell.initializer(I.XavierNormal { gain = 0.5 }, { 300, 200 }):init_data(), 0,
        0.5 * math.sqrt(2 / 500), "XavierNormal(0.5)")
    end)

    it("a convolution kernel {out, in, kh, kw} multiplies both fans by kh * kw", function()
      local shape = { 64, 32, 3, 3 } -- fan_in 288, fan_out 576; 18,432 draws
      local fan_in, fan_out = init_mod.fans(shape)
      assert.are.same({ 288, 576 }, { fan_in, fan_out })
      local t = cell.initializer("xavier_uniform", shape):init_data()
      local lo, hi = stats(t)
      local b = math.sqrt(6 / 864)
      assert.is_true(lo >= -f32(b) and hi <= f32(b) and hi > 0.99 * b)
    end)

    it("HeUniform: bound sqrt(3) * gain / sqrt(fan); the default gain is leaky_relu's with slope 0", function()
      local shape = { 256, 784 }
      check_uniform(cell.initializer("he_uniform", shape):init_data(), math.sqrt(3) * math.sqrt(2) / math.sqrt(784),
        "he_uniform")
      check_uniform(cell.initializer(I.HeUniform { mode = "fan_out", nonlinearity = "tanh" }, shape):init_data(),
        math.sqrt(3) * (5 / 3) / math.sqrt(256), "HeUniform fan_out tanh")
      check_uniform(cell.initializer(I.HeUniform { negative_slope = 0.2 }, shape):init_data(),
        math.sqrt(3) * math.sqrt(2 / 1.04) / math.sqrt(784), "HeUniform slope 0.2")
    end)

    it("HeNormal: sd gain / sqrt(fan)", function()
      local shape = { 256, 784 }
      check_normal(cell.initializer("he_normal", shape):init_data(), 0, math.sqrt(2) / math.sqrt(784), "he_normal")
      check_normal(cell.initializer(I.HeNormal { mode = "fan_out", nonlinearity = "relu" }, shape):init_data(), 0,
        math.sqrt(2) / math.sqrt(256), "HeNormal fan_out relu")
      check_normal(cell.initializer(I.HeNormal { nonlinearity = "linear" }, shape):init_data(), 0,
        1 / math.sqrt(784), "HeNormal linear")
    end)

    it("the gains of MindSpore's calculate_gain", function()
      local gain = init_mod.calculate_gain
      for _, name in ipairs { "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "sigmoid" } do
        assert.are.equal(1, gain(name))
      end
      assert.are.equal(5 / 3, gain("tanh"))
      assert.are.equal(math.sqrt(2), gain("relu"))
      assert.are.equal(math.sqrt(2 / (1 + 0.01 ^ 2)), gain("leaky_relu"))
      assert.are.equal(math.sqrt(2 / 1.25), gain("leaky_relu", 0.5))
      assert.is_nil(gain("selu"))
    end)

    it("xavier and he need at least 2 dimensions", function()
      for _, name in ipairs { "xavier_uniform", "xavier_normal", "he_uniform", "he_normal" } do
        assert.are.equal("ValueError: 'fan_in' and 'fan_out' can not be computed for tensor with fewer than 2 "
          .. "dimensions, but got dimensions 1.", err(function() local _ = cell.initializer(name, { 5 }) end))
        assert.are.equal("ValueError: 'fan_in' and 'fan_out' can not be computed for tensor with fewer than 2 "
          .. "dimensions, but got dimensions 0.", err(function() local _ = cell.initializer(name, {}) end))
      end
      assert.is_truthy(err(function() local _ = cell.initializer(I.HeNormal(), 3) end)
        :find("fewer than 2 dimensions", 1, true))
    end)

    it("come out in the recipe's dtype", function()
      for _, dt in ipairs { "float16", "bfloat16", "float32", "float64", "int32" } do
        local t = cell.initializer("normal", { 4, 4 }, cell[dt]):init_data()
        assert.are.equal(dt, t.dtype.name)
      end
    end)

    it("are reproducible under cell.set_seed", function()
      for _, name in ipairs { "normal", "uniform", "truncated_normal", "xavier_uniform", "he_normal" } do
        local it = cell.initializer(name, { 8, 8 })
        cell.set_seed(99)
        local a = it:init_data():totable()
        cell.set_seed(99)
        local b = it:init_data():totable()
        assert.are.same(a, b, name)
        local c = it:init_data():totable()
        assert.are_not.same(a, c, name)
      end
    end)
  end)

  it("an initializer object is callable on a shape and dtype", function()
    local t = I.Constant(2)({ 2 }, cell.int64)
    H.assert_values(t, { 2, 2 }, "int64")
    H.assert_shape(I.Normal()({ 3, 1 }), { 3, 1 })
    assert.is_truthy(err(function() local _ = I.XavierUniform()({ 3 }) end):find("fewer than 2", 1, true))
  end)

  it("the base Initializer, called, is a NotImplementedError (found by the misuse fuzzer, seed 21)", function()
    local ok, msg = pcall(function() return I.Initializer()({ 2 }) end)
    assert.is_false(ok)
    assert.truthy(tostring(msg):find("NotImplementedError: Initializer is the base class of the initializers", 1, true), msg)
  end)
end)
