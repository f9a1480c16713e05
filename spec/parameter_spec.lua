-- parameter_spec.lua - cell.Parameter and cell.ParameterTuple (API.md,
-- Parameter and ParameterTuple): construction from tensors, numbers, tables
-- and initializers; names and requires_grad; a Parameter as a Tensor in ops,
-- in cell.grad and in place under no_grad; set_data (identity, storage,
-- shapes, MindSpore's implicit dtype conversions); lazy parameters;
-- clone/copy/value; printing; ParameterTuple's rules and clone; and the
-- exact error texts, each leaving the process working.
local H = require "helpers"
local cell = require "cell"
local class = require "cell.class"

local Parameter, ParameterTuple = cell.Parameter, cell.ParameterTuple

--- The message of the error fn raises (pointing at this spec); the process
-- keeps working afterwards.
local function err(fn)
  local msg = H.caller_error("parameter_spec%.lua", fn)
  H.still_works()
  return msg
end

local function m23() return cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end

describe("cell.Parameter", function()
  describe("construction", function()
    it("takes the whole call as one options table: Parameter{data =, name =, requires_grad =}", function()
      local p = Parameter { data = cell.tensor({ 1, 2 }), name = "o", requires_grad = false }
      assert.are.equal("o", p.name)
      assert.is_false(p.requires_grad)
      H.assert_values(p, { 1, 2 }, "float32")
      local q = Parameter { default_input = 3, name = "k" } -- MindSpore's name for the data
      assert.are.equal("k", q.name)
      assert.are.equal(3, q:item())
      assert.is_truthy(err(function() Parameter { data = 1, default_input = 2 } end):find("TypeError", 1, true))
      assert.is_truthy(err(function() Parameter { data = 1, nme = "x" } end):find("unexpected keyword argument 'nme'",
        1, true))
    end)

    it("from a Tensor holds a copy of its values (as MindSpore's) and is a leaf of its own", function()
      local t = m23()
      local p = Parameter(t, "w")
      assert.is_true(cell.is_tensor(p))
      assert.is_true(cell.is_parameter(p))
      assert.is_false(cell.is_parameter(t))
      assert.is_false(rawequal(p, t))
      assert.are_not.equal(t:data_ptr(), p:data_ptr())
      assert.is_true(p.requires_grad)
      assert.is_false(t.requires_grad)
      assert.is_true(p:is_leaf())
      H.assert_values(p, { { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
      cell.no_grad(function() p:fill_(9) end)
      H.assert_values(t, { { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
      t:fill_(0)
      H.assert_values(p, { { 9, 9, 9 }, { 9, 9, 9 } }, "float32")
      -- a view's values, in the view's dtype
      local v = Parameter(cell.arange(1, 7, 1, cell.float64):reshape({ 2, 3 }):transpose(1, 2))
      H.assert_values(v, { { 1, 4 }, { 2, 5 }, { 3, 6 } }, "float64")
    end)

    it("has the default name 'Parameter' and requires grad", function()
      local p = Parameter(cell.ones({ 2 }))
      assert.are.equal("Parameter", p.name)
      assert.is_true(p.requires_grad)
      assert.is_false(p.has_init)
    end)

    it("takes name and requires_grad positionally or as options", function()
      local a = Parameter(cell.ones({ 2 }), "a", false)
      assert.are.same({ "a", false }, { a.name, a.requires_grad })
      local b = Parameter(cell.ones({ 2 }), { name = "b", requires_grad = false })
      assert.are.same({ "b", false }, { b.name, b.requires_grad })
      local c = Parameter(cell.ones({ 2 }), { requires_grad = true })
      assert.are.same({ "Parameter", true }, { c.name, c.requires_grad })
      assert.are.equal("TypeError: Parameter() got an unexpected keyword argument 'trainable'; the options are name, requires_grad, layerwise_parallel, parallel_optimizer",
        err(function() local _ = Parameter(cell.ones({ 2 }), { trainable = false }) end))
    end)

    it("from a number: int64 0-D when integral, float32 0-D when fractional", function()
      local i, f = Parameter(3), Parameter(0.5)
      assert.are.same({ "int64", {} }, { i.dtype.name, i.shape })
      assert.are.same({ "float32", {} }, { f.dtype.name, f.shape })
      assert.are.equal(3, i:item())
      assert.are.equal(0.5, f:item())
      assert.are.equal("int64", Parameter(3.0).dtype.name) -- the project's number rule
      assert.are.equal("float32", Parameter(1 / 0).dtype.name)
    end)

    it("from a nested table, through cell.tensor", function()
      local p = Parameter({ { 1, 2 }, { 3, 4 } }, "m")
      H.assert_values(p, { { 1, 2 }, { 3, 4 } }, "float32")
      assert.are.equal("bool", Parameter({ true, false }).dtype.name)
      assert.is_truthy(err(function() local _ = Parameter({ { 1, 2 }, { 3 } }) end):find("ValueError:", 1, true))
    end)

    it("from a Parameter: a new Parameter with a copy of its values", function()
      local p = Parameter(cell.ones({ 2 }), "p")
      local q = Parameter(p)
      assert.is_true(cell.is_parameter(q))
      assert.is_false(rawequal(p, q))
      assert.are_not.equal(p:data_ptr(), q:data_ptr())
      H.assert_values(q, { 1, 1 }, "float32")
      assert.are.equal("Parameter", q.name)
    end)

    it("rejects a boolean, as MindSpore does", function()
      assert.are.equal("ValueError: Parameter data can not be a boolean",
        err(function() local _ = Parameter(true) end))
      assert.are.equal("ValueError: Parameter data can not be a boolean",
        err(function() local _ = Parameter(false, "b") end))
    end)

    it("rejects other types, naming them", function()
      local pre = "TypeError: The type of the argument 'data' must be in ['Tensor', 'number', 'table', "
        .. "'initializer'], but got "
      assert.are.equal(pre .. "string.", err(function() local _ = Parameter("1.0") end))
      assert.are.equal(pre .. "nil.", err(function() local _ = Parameter() end))
      assert.are.equal(pre .. "function.", err(function() local _ = Parameter(print) end))
      assert.are.equal(pre .. "dtype.", err(function() local _ = Parameter(cell.float32) end))
      assert.are.equal(pre .. "Normal.", err(function() local _ = Parameter(cell.init.Normal()) end))
      assert.are.equal(pre .. "ParameterTuple.", err(function() local _ = Parameter(ParameterTuple {}) end))
    end)

    it("is_parameter is false for everything else", function()
      for _, v in ipairs { 1, "p", {}, cell.ones({ 1 }), cell.float32, cell.initializer("ones", { 1 }) } do
        assert.is_false(cell.is_parameter(v))
      end
      assert.is_false(cell.is_parameter(nil))
    end)
  end)

  describe("name", function()
    it("is stripped; nil, empty or blank gives 'Parameter'", function()
      local p = Parameter(cell.ones({ 1 }), " \t w1 \n")
      assert.are.equal("w1", p.name)
      p.name = "  dense.weight "
      assert.are.equal("dense.weight", p.name)
      p.name = ""
      assert.are.equal("Parameter", p.name)
      p.name = "x"
      p.name = nil
      assert.are.equal("Parameter", p.name)
      assert.are.equal("Parameter", Parameter(cell.ones({ 1 }), "   ").name)
    end)

    it("may be 1024 characters long, not longer", function()
      local ok = string.rep("a", 1024)
      assert.are.equal(ok, Parameter(cell.ones({ 1 }), ok).name)
      local long = string.rep("b", 1025)
      assert.are.equal("ValueError: The length of the '" .. long .. "' name should be less than 1024.",
        err(function() local _ = Parameter(cell.ones({ 1 }), long) end))
      local p = Parameter(cell.ones({ 1 }), "kept")
      assert.are.equal("ValueError: The length of the '" .. long .. "' name should be less than 1024.",
        err(function() p.name = "  " .. long .. "  " end))
      assert.are.equal("kept", p.name)
    end)

    it("must be a string or nil", function()
      local pre = "ValueError: The type of the Parameter's name should be 'string' or 'nil', but got "
      assert.are.equal(pre .. "number.", err(function() local _ = Parameter(cell.ones({ 1 }), 5) end))
      local p = Parameter(cell.ones({ 1 }), "w")
      assert.are.equal(pre .. "boolean.", err(function() p.name = true end))
      assert.are.equal(pre .. "Tensor.", err(function() p.name = cell.ones({ 1 }) end))
      assert.are.equal("w", p.name)
    end)
  end)

  describe("requires_grad", function()
    it("is the engine's flag", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      p.requires_grad = false
      assert.is_false(p.requires_grad)
      local y = p * 2
      assert.is_false(y.requires_grad)
      p.requires_grad = true
      assert.is_true((p * 2).requires_grad)
      assert.are.equal(p, p:requires_grad_(false))
      assert.is_false(p.requires_grad)
      p:requires_grad_()
      assert.is_true(p.requires_grad)
    end)

    it("accepts booleans only", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      assert.are.equal("TypeError: The argument 'requires_grad' must be bool type, got number",
        err(function() p.requires_grad = 1 end))
      assert.are.equal("TypeError: The argument 'requires_grad' must be bool type, got nil",
        err(function() p.requires_grad = nil end))
      assert.are.equal("TypeError: The argument 'requires_grad' must be bool type, got string",
        err(function() p:requires_grad_("yes") end))
      assert.are.equal("TypeError: The argument 'requires_grad' must be bool type, got string",
        err(function() local _ = Parameter(cell.ones({ 1 }), "w", "true") end))
      assert.are.equal("TypeError: The argument 'requires_grad' must be bool type, got number",
        err(function() local _ = Parameter(cell.ones({ 1 }), { requires_grad = 0 }) end))
      assert.is_true(p.requires_grad)
    end)

    it("of an integer or bool Parameter is kept as MindSpore's flag", function()
      local p = Parameter(5)
      assert.is_true(p.requires_grad)
      p.requires_grad = false
      assert.is_false(p.requires_grad)
      assert.are.equal(p, p:requires_grad_(true))
      assert.is_true(p.requires_grad)
      assert.is_false(Parameter({ 1, 2 }, "i", false):astype(cell.int32).requires_grad)
      assert.is_false(Parameter({ true }, "b", false).requires_grad)
    end)
  end)

  describe("fields", function()
    it("data is the Parameter itself; has_init is false for one with data", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      assert.is_true(rawequal(p, p.data))
      assert.is_false(p.has_init)
      assert.is_nil(p.init_mode)
    end)

    it("other fields are the object's own", function()
      local p, q = Parameter(cell.ones({ 1 }), "p"), Parameter(cell.ones({ 1 }), "q")
      p.layerwise_parallel = true
      p.note = { 1 }
      assert.is_true(p.layerwise_parallel)
      assert.are.same({ 1 }, p.note)
      assert.is_false(q.layerwise_parallel)
      assert.is_nil(q.note)
    end)

    it("has MindSpore's parallel-training fields with their defaults, checked, cloned", function()
      local p = Parameter(cell.ones({ 2 }), "p")
      assert.are.same({ false, true, false, false, true, false, 1 },
        { p.layerwise_parallel, p.parallel_optimizer, p.sliced, p.is_init, p.requires_aggr, p.cache_enable,
          p.comm_fusion })
      local q = Parameter(cell.ones({ 2 }), "q", true, true, false)
      assert.are.same({ true, false }, { q.layerwise_parallel, q.parallel_optimizer })
      local r = Parameter(cell.ones({ 2 }), { name = "r", parallel_optimizer = false })
      assert.is_false(r.parallel_optimizer)
      assert.is_false(r:clone().parallel_optimizer)
      p.comm_fusion = 3
      assert.are.equal(3, p:clone().comm_fusion)
      assert.are.equal("TypeError: The argument `layerwise_parallel` must be bool type, but got number.",
        err(function() local _ = Parameter(cell.ones({ 2 }), "x", true, 1) end))
      assert.are.equal("TypeError: The argument `parallel_optimizer` must be bool type, but got string.",
        err(function() p.parallel_optimizer = "yes" end))
      assert.are.equal("ValueError: The 'comm_fusion' must be a non-negative integer, but got -1.",
        err(function() p.comm_fusion = -1 end))
    end)

    it("the tensor's own properties are read-only", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      for _, key in ipairs { "shape", "dtype", "ndim", "data", "has_init", "init_mode", "T", "grad_fn" } do
        assert.are.equal("AttributeError: the attribute '" .. key .. "' of a Parameter is read-only",
          err(function() p[key] = 1 end))
      end
      assert.are.same({ 2 }, p.shape)
    end)

    it("a Parameter is collected, though p.data refers to itself", function()
      collectgarbage()
      collectgarbage()
      local base = cell.memory_stats().in_use
      for _ = 1, 50 do
        local p = Parameter(cell.ones({ 1000, 100 }), "w")
        p.self = p
        Parameter(cell.initializer("ones", { 1000, 100 }), "lazy"):init_data()
      end
      collectgarbage()
      collectgarbage()
      assert.is_true(cell.memory_stats().in_use - base < 1024 * 1024)
    end)

    it("a plain tensor still refuses fields", function()
      local t = cell.ones({ 2 })
      local ok, msg = pcall(function() t.name = "w" end)
      assert.is_false(ok)
      assert.is_truthy(msg:find("TypeError: cannot set field 'name' of a Tensor", 1, true))
      assert.is_nil(t.name)
      assert.is_nil(cell.core._attrs(t))
    end)
  end)

  describe("tostring", function()
    it("is MindSpore's text, shapes printed as tuples", function()
      assert.are.equal("Parameter (name=w, shape=(2, 3), dtype=Float32, requires_grad=true)",
        tostring(Parameter(m23(), "w")))
      assert.are.equal("Parameter (name=b, shape=(3,), dtype=Float64, requires_grad=false)",
        tostring(Parameter(cell.ones({ 3 }, cell.float64), "b", false)))
      assert.are.equal("Parameter (name=Parameter, shape=(), dtype=Int64, requires_grad=true)", tostring(Parameter(7)))
      assert.are.equal("Parameter (name=k, shape=(4, 1, 2, 2), dtype=Float32, requires_grad=true)",
        tostring(Parameter(cell.initializer("he_uniform", { 4, 1, 2, 2 }), "k")))
    end)
  end)

  describe("is a Tensor in every op", function()
    it("gives plain tensors", function()
      local p = Parameter(m23(), "w")
      local y = p + 1
      assert.is_false(cell.is_parameter(y))
      H.assert_values(y, { { 2, 3, 4 }, { 5, 6, 7 } }, "float32")
      H.assert_values(1 - p, { { 0, -1, -2 }, { -3, -4, -5 } }, "float32")
      H.assert_values(p:matmul(cell.ones({ 3, 1 })), { { 6 }, { 15 } }, "float32")
      H.assert_values(cell.ones({ 1, 2 }):matmul(p), { { 5, 7, 9 } }, "float32")
      H.assert_values(cell.cat({ p, p }, 1):sum(), 42, "float32")
      H.assert_values(p:sum(2), { 6, 15 }, "float32")
      H.assert_values(p[2], { 4, 5, 6 }, "float32")
      H.assert_values(p.T, { { 1, 4 }, { 2, 5 }, { 3, 6 } }, "float32")
      H.assert_values(p:reshape({ 3, 2 }):relu(), { { 1, 2 }, { 3, 4 }, { 5, 6 } }, "float32")
      H.assert_values(cell.where(p:gt(3), p, 0), { { 0, 0, 0 }, { 4, 5, 6 } }, "float32")
      assert.are.equal(2, #p)
      assert.are.equal(6, p:numel())
      assert.is_false(cell.is_parameter(cell.ops.clone(p)))
    end)

    it("is differentiated by cell.grad as a weight and as an argument", function()
      local p = Parameter(cell.tensor({ 1, -2, 3 }), "w")
      local g = cell.grad(function(x) return (x * p * p):sum() end, nil, { p })(cell.ones({ 3 }))
      H.assert_close(g[1], { 2, -4, 6 })
      local gx = cell.grad(function(x) return (x * x):sum() end)(p)
      H.assert_close(gx, { 2, -4, 6 })
      local v, gw = cell.value_and_grad(function() return (p * p):sum() end, nil, p)()
      H.assert_close(v, 14)
      H.assert_close(gw, { 2, -4, 6 })
    end)

    it("changes in place under no_grad, and only there", function()
      local p = Parameter(cell.tensor({ 1, 2 }), "w")
      cell.no_grad(function()
        p:add_(1)
        p:mul_(2)
        p[1] = 10
      end)
      H.assert_values(p, { 10, 6 }, "float32")
      assert.is_truthy(err(function() p:add_(1) end):find("RuntimeError:", 1, true))
    end)
  end)

  describe("set_data", function()
    it("copies into the Parameter's storage: identity and storage stay", function()
      local t = m23()
      local p = Parameter(t, "w")
      local ptr = p:data_ptr()
      local r = p:set_data(cell.full({ 2, 3 }, 7))
      assert.is_true(rawequal(r, p))
      assert.are.equal(ptr, p:data_ptr())
      H.assert_values(p, { { 7, 7, 7 }, { 7, 7, 7 } }, "float32")
      H.assert_values(t, { { 1, 2, 3 }, { 4, 5, 6 } }, "float32") -- p took a copy of t
      assert.is_true(p.requires_grad)
      assert.are.equal("w", p.name)
      local g = cell.grad(function() return (p * p):sum() end, nil, { p })()
      H.assert_close(g[1], { { 14, 14, 14 }, { 14, 14, 14 } })
    end)

    it("takes a Parameter, and overlapping views of its own storage", function()
      local p = Parameter(cell.tensor({ { 1, 2 }, { 3, 4 } }), "w")
      p:set_data(p:transpose(1, 2))
      H.assert_values(p, { { 1, 3 }, { 2, 4 } }, "float32")
      p:set_data(Parameter(cell.zeros({ 2, 2 }), "src"))
      H.assert_values(p, { { 0, 0 }, { 0, 0 } }, "float32")
    end)

    it("takes a number for a 0-D Parameter; a fractional one not for an integer Parameter", function()
      local f = Parameter(0.5, "f")
      f:set_data(2)
      assert.are.equal(2, f:item())
      local i = Parameter(1, "i")
      i:set_data(-4)
      assert.are.equal(-4, i:item())
      assert.are.equal("TypeError: Incoming Parameter dtype can not be converted to current dtype implicitly. "
        .. "Current dtype is Int64, and incoming is Float32.", err(function() i:set_data(2.5) end))
      assert.are.equal(-4, i:item())
      local b = Parameter(cell.tensor(false), "b")
      b:set_data(true)
      assert.is_true(b:item())
    end)

    it("keeps the shape", function()
      local p = Parameter(m23(), "w")
      local pre = "ValueError: Can not change the shape of Parameter which has been initialized. "
      assert.are.equal(pre .. "Current shape is (2, 3), and incoming is (3, 2).",
        err(function() p:set_data(cell.ones({ 3, 2 })) end))
      assert.are.equal(pre .. "Current shape is (2, 3), and incoming is ().", err(function() p:set_data(1) end))
      assert.are.equal(pre .. "Current shape is (2,), and incoming is (3,).",
        err(function() Parameter(cell.ones({ 2 })):set_data(cell.ones({ 3 })) end))
      assert.are.equal(pre .. "Current shape is (), and incoming is (1,).",
        err(function() Parameter(1.5):set_data(cell.ones({ 1 })) end))
      H.assert_values(p, { { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
    end)

    it("converts dtypes along MindSpore's implicit conversion order, and refuses the rest", function()
      local order = { "bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64", "bfloat16" }
      for ci, cur in ipairs(order) do
        for ii, inc in ipairs(order) do
          local p = Parameter(cell.zeros({ 2 }, cell[cur]), "p")
          local src = cell.tensor({ 1, 0 }, cell[inc])
          if ii <= ci then
            p:set_data(src)
            H.assert_values(p, cur == "bool" and { true, false } or { 1, 0 }, cur, cur .. " <- " .. inc)
          else
            assert.are.equal(("TypeError: Incoming Parameter dtype can not be converted to current dtype "
              .. "implicitly. Current dtype is %s, and incoming is %s."):format(tostring(cell[cur]),
                tostring(cell[inc])), err(function() p:set_data(src) end))
          end
        end
      end
    end)

    it("refuses data that is not a Tensor, a number or an initializer", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      assert.are.equal("TypeError: Parameter data must be a Tensor or a number, but got string.",
        err(function() p:set_data("1") end))
      assert.are.equal("TypeError: Parameter data must be a Tensor or a number, but got table.",
        err(function() p:set_data({ 1, 2 }) end))
      assert.are.equal("TypeError: Parameter.set_data: expected a Parameter (call it as p:set_data(...)), "
        .. "got Tensor", err(function() p.set_data(cell.ones({ 2 })) end))
    end)

    it("takes an initializer: drawn now for a Parameter with data", function()
      local p = Parameter(cell.zeros({ 2, 2 }), "w")
      local ptr = p:data_ptr()
      p:set_data(cell.initializer("ones", { 2, 2 }))
      H.assert_values(p, { { 1, 1 }, { 1, 1 } }, "float32")
      assert.are.equal(ptr, p:data_ptr())
      assert.is_false(p.has_init)
      assert.is_truthy(err(function() p:set_data(cell.initializer("ones", { 2 })) end)
        :find("Current shape is (2, 2), and incoming is (2,).", 1, true))
    end)
  end)

  describe("lazy (from an initializer)", function()
    it("has shape and dtype but no data until init_data", function()
      local before = cell.memory_stats().in_use
      local p = Parameter(cell.initializer("normal", { 1000, 1000 }, cell.float64), "big")
      assert.is_true(cell.memory_stats().in_use - before < 4096)
      assert.is_true(p.has_init)
      assert.are.same({ 1000, 1000 }, p.shape)
      assert.are.equal(cell.float64, p.dtype)
      assert.are.equal(1000000, p:numel())
      assert.are.same({ 0, 0 }, p:stride())
      assert.is_true(cell.is_initializer(p.init_mode))
      assert.is_true(p.requires_grad)
      assert.are.equal("Parameter (name=big, shape=(1000, 1000), dtype=Float64, requires_grad=true)", tostring(p))
    end)

    it("init_data draws the values into the same object and returns it", function()
      cell.set_seed(11)
      local p = Parameter(cell.initializer(cell.init.Normal { sigma = 2, mean = 1 }, { 200, 100 }), "w")
      local r = p:init_data()
      assert.is_true(rawequal(r, p))
      assert.is_false(p.has_init)
      assert.is_nil(p.init_mode)
      assert.are.same({ 100, 1 }, p:stride())
      assert.are.equal("w", p.name)
      assert.is_true(p.requires_grad)
      assert.is_true(math.abs(p:mean():item() - 1) < 0.05)
      assert.is_true(math.abs(p:std():item() - 2) < 0.05)
      local ptr = p:data_ptr()
      assert.is_true(rawequal(p:init_data(), p)) -- a no-op now
      assert.are.equal(ptr, p:data_ptr())
      local g = cell.grad(function() return (p * p):sum() end, nil, { p })()
      H.assert_close(g[1], (p * 2):totable())
    end)

    it("keeps requires_grad = false through init_data", function()
      local p = Parameter(cell.initializer("ones", { 3 }), "b", false)
      p:init_data()
      assert.is_false(p.requires_grad)
      H.assert_values(p, { 1, 1, 1 }, "float32")
    end)

    it("init_data of a Parameter with data does nothing", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      local ptr = p:data_ptr()
      assert.is_true(rawequal(p:init_data(), p))
      assert.are.equal(ptr, p:data_ptr())
    end)

    it("two Parameters of one initializer draw their own data", function()
      local it = cell.initializer("uniform", { 64 })
      local a, b = Parameter(it, "a"):init_data(), Parameter(it, "b"):init_data()
      assert.are_not.equal(a:data_ptr(), b:data_ptr())
      assert.is_false(a:eq(b):all():item())
    end)

    it("set_data of a Tensor or a number is a TypeError, as in MindSpore; an initializer replaces the recipe", function()
      local p = Parameter(cell.initializer("normal", { 2 }), "w")
      local lazy_msg = "TypeError: For 'set_data', the Parameter 'w' is not initialized yet (its data is an "
        .. "initializer), but the argument 'data' is an initialized Tensor. Call init_data() on the Parameter "
        .. "first, or pass an initializer to replace its recipe."
      assert.are.equal(lazy_msg, err(function() p:set_data(cell.tensor({ 3, 4 })) end))
      assert.are.equal(lazy_msg, err(function() p:set_data(1.5) end))
      assert.is_true(p.has_init)
      -- after init_data, it takes the values into its own storage
      local src = cell.tensor({ 3, 4 })
      p:init_data():set_data(src)
      H.assert_values(p, { 3, 4 }, "float32")
      assert.are_not.equal(src:data_ptr(), p:data_ptr())
      local r = Parameter(cell.initializer("zeros", { 2 }), "r")
      r:set_data(cell.initializer(5, { 2 }, cell.int32))
      assert.is_true(r.has_init)
      assert.are.equal(cell.float32, r.init_mode.dtype)
      r:init_data()
      H.assert_values(r, { 5, 5 }, "float32")
      -- a lazy Parameter as data gives its recipe
      local q = Parameter(cell.initializer("zeros", { 2 }), "q")
      q:set_data(Parameter(cell.initializer("ones", { 2 }), "o"))
      assert.is_true(q.has_init)
      H.assert_values(q:init_data(), { 1, 1 }, "float32")
      assert.is_truthy(err(function() Parameter(cell.initializer("zeros", { 2 })):set_data(cell.initializer("ones",
        { 2 }, cell.float64)) end):find("Current dtype is Float32, and incoming is Float64.", 1, true))
    end)

    it("load_param_into_net fills a lazy Parameter from a checkpoint (MindSpore's from_ckpt)", function()
      local net = cell.nn.Cell()
      net.w = Parameter(cell.initializer("normal", { 2 }), "w")
      local not_loaded = cell.load_param_into_net(net, { w = Parameter(cell.tensor({ 7, 8 }), "w") })
      assert.are.same({}, not_loaded)
      assert.is_false(net.w.has_init)
      H.assert_values(net.w, { 7, 8 }, "float32")
    end)

    it("set_data and init_data take their MindSpore options, positionally or in a table", function()
      local p = Parameter(cell.zeros({ 2 }), "p")
      p:set_data(cell.ones({ 2 }), false)
      p:set_data(cell.ones({ 2 }) * 2, { slice_shape = false })
      H.assert_values(p, { 2, 2 }, "float32")
      -- slice_shape = true skips the shape check (MindSpore's parallel slice): p takes the new shape
      p:set_data(cell.tensor({ 1, 2, 3 }), { slice_shape = true })
      assert.are.same({ 3 }, p.shape)
      assert.is_true(p.sliced)
      H.assert_values(p, { 1, 2, 3 }, "float32")
      p:set_data(cell.tensor({ 4, 5, 6 }), false)
      assert.is_false(p.sliced)
      assert.are.equal("TypeError: Parameter.set_data: slice_shape must be a boolean, but got number",
        err(function() p:set_data(cell.ones({ 3 }), 1) end))
      local lazy = Parameter(cell.initializer("ones", { 2 }), "lazy")
      lazy:set_data(cell.initializer("zeros", { 4 }), true)
      assert.are.same({ 4 }, lazy.shape)
      assert.is_true(lazy.has_init)
      H.assert_values(lazy:init_data(), { 0, 0, 0, 0 }, "float32")
      p = Parameter(cell.zeros({ 2 }), "p")
      assert.are.equal("TypeError: Parameter.set_data() got an unexpected keyword argument 'slice'; the options are "
        .. "slice_shape", err(function() p:set_data(cell.ones({ 2 }), { slice = true }) end))
      local q = Parameter(cell.initializer("ones", { 2 }), "q")
      q:init_data({ set_sliced = false })
      H.assert_values(q, { 1, 1 }, "float32")
      assert.are.equal("NotImplementedError: Parameter.init_data: layout (parallel slices) is not supported",
        err(function() Parameter(cell.initializer("ones", { 2 })):init_data({ layout = { 1 } }) end))
      assert.are.equal("TypeError: Parameter.init_data() takes at most 2 optional arguments, but 3 were given",
        err(function() q:init_data(nil, false, 1) end))
      local c = p:clone({ init = "zeros" })
      H.assert_values(c, { 0, 0 }, "float32")
      assert.are.equal("TypeError: Parameter.clone() got an unexpected keyword argument 'prefix'; the options are "
        .. "init", err(function() p:clone({ prefix = "x" }) end))
      assert.is_false(p:requires_grad_({ requires_grad = false }).requires_grad)
      local by_options = cell.ParameterTuple({ p }):clone({ prefix = "n", init = "zeros" })
      assert.are.equal("n." .. p.name, by_options[1].name)
      H.assert_values(by_options[1], cell.zeros(p.shape):totable(), "float32")
      local pt = cell.ParameterTuple({ p }):clone("m", { init = "ones" })
      assert.are.equal("m.p", pt[1].name)
      H.assert_values(pt[1], { 1, 1 }, "float32")
    end)

    it("a Parameter made from a lazy one is lazy too", function()
      local p = Parameter(cell.initializer("ones", { 2 }), "p")
      local q = Parameter(p, "q")
      assert.is_true(q.has_init)
      q:init_data()
      H.assert_values(q, { 1, 1 }, "float32")
      assert.is_true(p.has_init)
    end)
  end)

  describe("clone, copy and value", function()
    it("clone() copies the data, name, requires_grad and fields into new storage", function()
      local p = Parameter(m23(), "w", false)
      p.tag = "t"
      local c = p:clone()
      assert.is_true(cell.is_parameter(c))
      assert.is_false(rawequal(c, p))
      assert.are_not.equal(p:data_ptr(), c:data_ptr())
      assert.are.same({ "w", false, "t" }, { c.name, c.requires_grad, c.tag })
      assert.is_true(rawequal(c.data, c))
      H.assert_values(c, { { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
      cell.no_grad(function() c:fill_(0) end)
      H.assert_values(p, { { 1, 2, 3 }, { 4, 5, 6 } }, "float32")
      assert.is_true(p:clone("same"):eq(p):all():item())
      local d = Parameter(cell.ones({ 2 }), "d"):copy()
      assert.are.equal("d", d.name)
      H.assert_values(d, { 1, 1 }, "float32")
    end)

    it("clone(init) fills p's shape and dtype from an initializer name, a number, a Tensor or an object", function()
      local p = Parameter(cell.ones({ 2, 2 }, cell.float64), "w")
      local z = p:clone("zeros")
      H.assert_values(z, { { 0, 0 }, { 0, 0 } }, "float64")
      assert.are.equal("w", z.name)
      H.assert_values(p:clone(3), { { 3, 3 }, { 3, 3 } }, "float64")
      H.assert_values(p:clone(cell.tensor({ { 1, 2 }, { 3, 4 } })), { { 1, 2 }, { 3, 4 } }, "float64")
      H.assert_values(p:clone(cell.init.Constant(-1)), { { -1, -1 }, { -1, -1 } }, "float64")
      assert.are.equal(cell.float64, p:clone("normal").dtype)
      H.assert_values(p, { { 1, 1 }, { 1, 1 } }, "float64")
    end)

    it("clone(init) reports a bad init at the caller", function()
      local p = Parameter(cell.ones({ 2 }), "w")
      assert.is_truthy(err(function() local _ = p:clone("gaussian") end):find("'gaussian' was not found", 1, true))
      assert.is_truthy(err(function() local _ = p:clone(cell.ones({ 3 })) end)
        :find("'init' shape [3] and the 'shape' [2]", 1, true))
      assert.are.equal("TypeError: Incoming Parameter dtype can not be converted to current dtype implicitly. "
        .. "Current dtype is Float32, and incoming is Float64.",
        err(function() local _ = p:clone(cell.ones({ 2 }, cell.float64)) end))
      assert.is_truthy(err(function() local _ = Parameter(cell.ones({ 2 })):clone("xavier_uniform") end)
        :find("fewer than 2 dimensions", 1, true))
    end)

    it("clone of a lazy Parameter is lazy, with the same recipe or the given one", function()
      local p = Parameter(cell.initializer("ones", { 3 }), "w")
      local c = p:clone()
      assert.is_true(c.has_init)
      assert.are.equal(p.init_mode, c.init_mode)
      local z = p:clone("zeros")
      assert.is_true(z.has_init)
      H.assert_values(z:init_data(), { 0, 0, 0 }, "float32")
      H.assert_values(c:init_data(), { 1, 1, 1 }, "float32")
      assert.is_true(p.has_init)
    end)

    it("value() is a plain Tensor view, differentiable with respect to p", function()
      local p = Parameter(cell.tensor({ 1, 2, 3 }), "w")
      local v = p:value()
      assert.is_true(cell.is_tensor(v))
      assert.is_false(cell.is_parameter(v))
      assert.are.equal(p:data_ptr(), v:data_ptr())
      H.assert_values(v, { 1, 2, 3 }, "float32")
      local g = cell.grad(function() return (p:value() * 3):sum() end, nil, { p })()
      H.assert_close(g[1], { 3, 3, 3 })
      H.assert_values(Parameter(2):value(), 2, "int64")
    end)

    it("methods called with a dot say so", function()
      assert.are.equal("TypeError: Parameter.clone: expected a Parameter (call it as p:clone(...)), got nil",
        err(function() local _ = Parameter(cell.ones({ 1 })).clone() end))
      assert.are.equal("TypeError: Parameter.init_data: expected a Parameter (call it as p:init_data(...)), "
        .. "got number", err(function() local _ = Parameter(cell.ones({ 1 })).init_data(3) end))
    end)
  end)
end)

describe("cell.ParameterTuple", function()
  local function params()
    return Parameter(cell.ones({ 2 }), "a"), Parameter(cell.zeros({ 3 }), "b")
  end

  it("is a sequence of Parameters", function()
    local a, b = params()
    local pt = ParameterTuple { a, b }
    assert.are.equal(2, #pt)
    assert.is_true(rawequal(pt[1], a))
    assert.is_true(rawequal(pt[2], b))
    local names = {}
    for i, p in ipairs(pt) do names[i] = p.name end
    assert.are.same({ "a", "b" }, names)
    assert.is_true(cell.is_parameter_tuple(pt))
    assert.is_true(class.is_instance(pt, ParameterTuple))
    assert.is_false(cell.is_parameter_tuple({ a, b }))
    assert.are.equal(0, #ParameterTuple {})
  end)

  it("takes another ParameterTuple or an iterator", function()
    local a, b = params()
    local pt = ParameterTuple(ParameterTuple { a, b })
    assert.are.equal(2, #pt)
    local function each(list)
      local i = 0
      return function()
        i = i + 1
        return list[i]
      end
    end
    local it = ParameterTuple(each { b, a })
    assert.are.same({ "b", "a" }, { it[1].name, it[2].name })
  end)

  it("accepts the same Parameter twice", function()
    local a = params()
    local pt = ParameterTuple { a, a }
    assert.are.equal(2, #pt)
    assert.is_true(rawequal(pt[1], pt[2]))
  end)

  it("rejects two Parameters with one name", function()
    local a = params()
    local other = Parameter(cell.ones({ 1 }), "a")
    assert.are.equal("ValueError: The value Parameter (name=a, shape=(1,), dtype=Float32, requires_grad=true) , "
      .. "its name 'a' already exists. Please set a unique name for the parameter.",
      err(function() local _ = ParameterTuple { a, other } end))
  end)

  it("rejects members that are not Parameters, and inputs that are not collections", function()
    local a = params()
    local pre = "TypeError: For ParameterTuple initialization, ParameterTuple input should be 'Parameter' "
      .. "collection, but got a "
    assert.are.equal(pre .. "Tensor.", err(function() local _ = ParameterTuple { a, cell.ones({ 1 }) } end))
    assert.are.equal(pre .. "number.", err(function() local _ = ParameterTuple { 3 } end))
    assert.are.equal(pre .. "string.", err(function() local _ = ParameterTuple { a, "b" } end))
    assert.are.equal(pre .. "number.", err(function() local _ = ParameterTuple(3) end))
    assert.are.equal(pre .. "nil.", err(function() local _ = ParameterTuple() end))
    assert.are.equal(pre .. "Parameter.", err(function() local _ = ParameterTuple(a) end))
  end)

  it("takes no new entries", function()
    local a, b = params()
    local pt = ParameterTuple { a }
    assert.are.equal("TypeError: 'ParameterTuple' object does not support item assignment (key 2)",
      err(function() pt[2] = b end))
    assert.are.equal(1, #pt)
  end)

  it("prints as a tuple", function()
    local a, b = params()
    assert.are.equal("(Parameter (name=a, shape=(2,), dtype=Float32, requires_grad=true), Parameter (name=b, "
      .. "shape=(3,), dtype=Float32, requires_grad=true))", tostring(ParameterTuple { a, b }))
    assert.are.equal("(Parameter (name=a, shape=(2,), dtype=Float32, requires_grad=true),)",
      tostring(ParameterTuple { a }))
    assert.are.equal("()", tostring(ParameterTuple {}))
  end)

  describe("clone", function()
    it("clones each member, named prefix .. '.' .. name", function()
      local a, b = params()
      b.requires_grad = false
      local pt = ParameterTuple { a, b }
      local c = pt:clone("new")
      assert.is_true(cell.is_parameter_tuple(c))
      assert.are.equal(2, #c)
      assert.are.same({ "new.a", "new.b" }, { c[1].name, c[2].name })
      assert.are.same({ true, false }, { c[1].requires_grad, c[2].requires_grad })
      assert.are_not.equal(a:data_ptr(), c[1]:data_ptr())
      H.assert_values(c[1], { 1, 1 }, "float32")
      assert.are.same({ "a", "b" }, { a.name, b.name })
      local z = pt:clone("m/x.y-z_1", "ones")
      assert.are.equal("m/x.y-z_1.b", z[2].name)
      H.assert_values(z[2], { 1, 1, 1 }, "float32")
    end)

    it("clones a repeated member once", function()
      local a = params()
      local c = ParameterTuple({ a, a }):clone("p")
      assert.are.equal(2, #c)
      assert.is_true(rawequal(c[1], c[2]))
      assert.are.equal("p.a", c[1].name)
    end)

    it("checks the prefix as MindSpore's check_str_by_regular", function()
      local pt = ParameterTuple { (params()) }
      local re = "'^\\w+[0-9a-zA-Z_./-]*$'."
      assert.are.equal("ValueError: The prefix 'a b' is illegal, it must match the regular expression " .. re,
        err(function() local _ = pt:clone("a b") end))
      assert.are.equal("ValueError: The prefix '' is illegal, it must match the regular expression " .. re,
        err(function() local _ = pt:clone("") end))
      assert.are.equal("ValueError: The prefix '.x' is illegal, it must match the regular expression " .. re,
        err(function() local _ = pt:clone(".x") end))
      assert.are.equal("ValueError: The prefix of type nil is illegal, it must match the regular expression " .. re,
        err(function() local _ = pt:clone() end))
      assert.are.equal("ValueError: The prefix of type number is illegal, it must match the regular expression "
        .. re, err(function() local _ = pt:clone(1) end))
    end)

    it("reports a bad init and a too long name at the caller", function()
      local pt = ParameterTuple { (params()) }
      assert.is_truthy(err(function() local _ = pt:clone("p", "gaussian") end):find("'gaussian' was not found", 1, true))
      assert.is_truthy(err(function() local _ = pt:clone(string.rep("x", 1023)) end)
        :find("name should be less than 1024.", 1, true))
    end)
  end)
end)
