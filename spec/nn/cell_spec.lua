-- cell_spec.lua - cell.nn.Cell: construction, attribute routing (every rule
-- of API.md's list and its error), insert_param_to_cell and
-- insert_child_to_cell checks, buffers, naming with and without
-- auto_prefix, traversal, modes and flags, to_float, printing.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("cell_spec%.lua", fn, ...) end
local function P(shape, name, rg) return cell.Parameter(cell.ones(shape), name, rg) end

local function keys_of(iter)
  local out = {}
  for k in iter do out[#out + 1] = k end
  return out
end

describe("nn.Cell", function()
  describe("classes and construction", function()
    it("extend makes a named subclass whose instances are callable and printable", function()
      local Net = nn.Cell:extend("Net")
      function Net:init(k) self.k = k end
      function Net:construct(x) return x * self.k end
      local net = Net(3)
      assert.are.equal(nn.Cell, Net.super)
      assert.are.equal(6, net(cell.tensor(2)):item())
      assert.are.equal("Net()", tostring(net))
      local Sub = Net:extend("Sub")
      assert.are.equal("Sub()", tostring(Sub(1)))
      assert.are.equal(4, Sub(2)(cell.tensor(2)):item())
    end)

    it("has its state before init runs, in inference mode", function()
      local seen
      local Net = nn.Cell:extend("Net")
      function Net:init() seen = self.training; self.w = P({ 2 }) end
      local net = Net()
      assert.is_false(seen)
      assert.is_false(net.training)
      assert.is_false(net.requires_grad)
      assert.are.equal("w", net.w.name)
    end)

    it("takes auto_prefix and flags in init, as a table or positionally", function()
      local Net = nn.Cell:extend("Net")
      function Net:init() nn.Cell.init(self, { auto_prefix = false, flags = { fp = 1 } }) end
      local net = Net()
      assert.are.same({ fp = 1 }, net:get_flags())
      assert.are.equal(1, net.fp)
      local Net2 = nn.Cell:extend("Net2")
      function Net2:init() nn.Cell.init(self, false) end
      local outer = nn.Cell()
      outer.inner = Net2()
      outer.inner.w = P({ 1 })
      assert.are.equal("w", outer.inner.w.name)
      assert.are.equal("TypeError: Cell: auto_prefix must be a boolean, but got string",
        err(function() nn.Cell.init(nn.Cell(), "yes") end))
    end)

    it("initialises its lazy parameters when called, as MindSpore's _init_check does", function()
      local Lazy = nn.Cell:extend("Lazy")
      function Lazy:init() self.w = cell.Parameter(cell.initializer("ones", { 2 }), "w") end
      function Lazy:construct(x) return x * self.w end
      local net = Lazy()
      assert.is_true(net.w.has_init)
      assert.are.equal(net.w.data, net.w)
      local v = (net.w + 0):totable() -- an op taking it as an argument reads the placeholder
      assert.is_true(v[1] ~= v[1], "a lazy parameter reads as nan, not as zeros")
      assert.is_true(net.w.has_init)
      H.assert_close(net(cell.tensor({ 3, 4 })), { 3, 4 })
      assert.is_false(net.w.has_init)
      -- a Tensor method that reads values draws the data first (MindSpore's _init_check)
      local other = Lazy()
      assert.are.same({ 2 }, other.w.shape)
      assert.are.equal(2, other.w:numel())
      assert.is_true(other.w.has_init) -- shape and size read no values
      assert.are.same({ 1, 1 }, other.w:totable())
      assert.is_false(other.w.has_init)
      local third = Lazy()
      H.assert_close(third.w:value(), { 1, 1 })
      assert.is_false(third.w.has_init)
    end)

    it("init_parameters_data initialises every lazy parameter below it", function()
      local net = nn.Cell()
      net.sub = nn.Cell()
      net.sub.w = cell.Parameter(cell.initializer("ones", { 2 }), "w")
      net.v = cell.Parameter(cell.initializer("zeros", { 1 }), "v")
      local map = net:init_parameters_data()
      assert.are.equal(net.sub.w, map[net.sub.w])
      assert.is_false(net.sub.w.has_init)
      assert.are.same({ 1, 1 }, net.sub.w:totable())
      assert.are.same({ 0 }, net.v:totable())
    end)

    it("raises NotImplementedError when called without construct", function()
      local Empty = nn.Cell:extend("Empty")
      local e = Empty()
      H.expect_error(function() e(1) end, "NotImplementedError", "Empty has no construct method")
    end)
  end)

  describe("attribute routing", function()
    local net
    before_each(function() net = nn.Cell() end)

    it("1. a Parameter is registered; a default name becomes the attribute name", function()
      local p = P({ 2 })
      net.w = p
      assert.are.equal(p, net.w)
      assert.are.equal("w", p.name)
      local q = P({ 2 }, "explicit")
      net.v = q
      assert.are.equal("explicit", q.name)
      local names = {}
      for _, x in net:parameters_and_names() do names[#names + 1] = x.name end
      assert.are.same({ "w", "explicit" }, names)
      assert.are.same({ "w", "v" }, keys_of(net:parameters_and_names()))
    end)

    it("1. a Parameter replaces a plain attribute of the same name", function()
      net.x = 5
      net.x = P({ 1 })
      assert.is_true(cell.is_parameter(net.x))
      assert.are.equal(1, net:state_dict():len())
    end)

    it("1. two different Parameters with one explicit name are a ValueError", function()
      net.a = P({ 1 }, "same")
      local msg = err(function() net.b = P({ 1 }, "same") end)
      assert.are.equal("ValueError: The value Parameter (name=same, shape=(1,), dtype=Float32, "
        .. "requires_grad=true) , its name 'same' already exists. Please set a unique name for the parameter.", msg)
      local p = P({ 1 })
      net.c = p
      net.d = p -- the same object twice is fine
      assert.are.equal(net.c, net.d)
    end)

    it("2. a ParameterTuple registers its members under their own names", function()
      local a, b = P({ 1 }, "ta"), P({ 1 })
      net.pt = cell.ParameterTuple { a, b }
      assert.is_true(cell.is_parameter_tuple(net.pt))
      assert.are.equal(a, net.ta)
      assert.are.equal("Parameter$1", b.name)
      assert.are.same({ "ta", "Parameter$1" }, net:state_dict():keys())
    end)

    it("2. a list of Parameters is a plain attribute whose names are checked", function()
      local a, b = P({ 1 }), P({ 1 })
      net.list = { a, b }
      assert.are.same({ a, b }, net.list)
      assert.are.equal("Parameter$1", a.name)
      assert.are.equal("Parameter$2", b.name)
      assert.are.equal(0, net:state_dict():len())
      local msg = err(function() net.other = { P({ 1 }, "Parameter$1") } end)
      assert.is_truthy(msg:find("^ValueError: The value .* its name 'Parameter%$1' already exists"))
      net.again = { a } -- the same objects again are fine
    end)

    it("3. a Cell becomes a sub-cell; with auto_prefix its parameters are renamed", function()
      local sub = nn.Cell()
      sub.weight = P({ 2 })
      net.dense = sub
      assert.are.equal(sub, net.dense)
      assert.are.equal("dense.weight", sub.weight.name)
      local top = nn.Cell()
      top.net = net
      assert.are.equal("net.dense.weight", sub.weight.name)
      assert.are.same({ "net.dense.weight" }, top:state_dict():keys())
    end)

    it("3. without auto_prefix the names stay", function()
      local NoPrefix = nn.Cell:extend("NoPrefix")
      function NoPrefix:init(inner)
        nn.Cell.init(self, { auto_prefix = false })
        self.net = inner
      end
      local inner = nn.Cell()
      inner.weight = P({ 2 })
      local outer = NoPrefix(inner)
      assert.are.equal("weight", inner.weight.name)
      assert.are.same({ "net.weight" }, outer:state_dict():keys())
    end)

    it("4. a Tensor assigned to a parameter name sets its data; to a buffer name replaces it", function()
      local p = P({ 2 })
      net.w = p
      net.w = cell.tensor({ 5, 6 })
      assert.are.equal(p, net.w)
      assert.are.same({ 5, 6 }, p:totable())
      net:register_buffer("buf", cell.zeros({ 2 }))
      local t = cell.ones({ 3 })
      net.buf = t
      assert.are.equal(t, net.buf)
      H.expect_error(function() net.w = cell.ones({ 3 }) end, "ValueError", "(2,)", "(3,)")
    end)

    it("5. nil keeps a registered name with no value; other values are a TypeError", function()
      net.w = P({ 2 })
      net.sub = nn.Cell()
      net:register_buffer("buf", cell.zeros({ 1 }))
      net.w, net.sub, net.buf = nil, nil, nil
      assert.is_nil(net.w)
      assert.is_nil(net.sub)
      assert.is_nil(net.buf)
      assert.is_true(net:hasattr("w"))
      assert.are.equal(0, net:state_dict():len())
      net.w = P({ 2 })
      assert.are.same({ "w" }, net:state_dict():keys())
      assert.are.equal("TypeError: Parameter 'w' already exists in network, can not assign this type: "
        .. "'number' as a parameter.", err(function() net.w = 1 end))
      assert.are.equal("TypeError: Sub cell 'sub' already exists in network, can not assign this type: "
        .. "'Tensor' as a cell.", err(function() net.sub = cell.ones({ 1 }) end))
      assert.are.equal("TypeError: Buffer 'buf' already exists in network, can not assign this type: "
        .. "'string' as a buffer.", err(function() net.buf = "x" end))
    end)

    it("6. anything else is a plain attribute", function()
      net.n = 3
      net.t = cell.ones({ 2 })
      net.f = function() return 1 end
      assert.are.equal(3, net.n)
      assert.are.equal(1, net.f())
      assert.are.equal(0, net:state_dict():len())
      net.n = nil
      assert.is_nil(net.n)
    end)

    it("a Parameter on a sub-cell's name, or a Cell on a parameter's name, is a KeyError", function()
      net.sub = nn.Cell()
      net.w = P({ 1 })
      assert.are.equal("KeyError: For 'insert_param_to_cell', the sub parameter already exists in the network. "
        .. "Cannot insert another parameter with the same name.", err(function() net.sub = P({ 1 }) end))
      assert.are.equal("KeyError: For 'insert_child_to_cell', the w child cell already exists in the network. "
        .. "Cannot insert another Cell with the same name.", err(function() net.w = nn.Cell() end))
      net:register_buffer("buf", cell.zeros({ 1 }))
      H.expect_error(function() net.buf = P({ 1 }) end, "KeyError", "buf parameter already exists")
      H.expect_error(function() net.construct = nn.Cell() end, "KeyError", "construct child cell already exists")
    end)

    it("reads find parameters, buffers, sub-cells, attributes, then the class; unknown names read nil", function()
      assert.is_nil(net.nothing)
      assert.are.equal("function", type(net.state_dict))
      net.x = 1
      assert.are.equal(1, net.x)
    end)

    it("delattr removes a member and re-adding puts it last", function()
      net.a = P({ 1 })
      net.b = P({ 1 })
      net:delattr("a")
      assert.is_nil(net.a)
      assert.is_false(net:hasattr("a"))
      net.a = P({ 1 })
      assert.are.same({ "b", "a" }, net:state_dict():keys())
      H.expect_error(function() net:delattr("zzz") end, "AttributeError", "'Cell' object has no attribute 'zzz'")
    end)

    it("rejects non-string attribute names and read-only properties", function()
      assert.are.equal("TypeError: a cell's attribute name must be a string, but got number",
        err(function() net[1] = 2 end))
      assert.are.equal("AttributeError: Cell.param_prefix is read-only", err(function() net.param_prefix = "x" end))
      assert.are.equal("TypeError: Cell.training must be a boolean, but got number", err(function() net.training = 1 end))
    end)
  end)

  describe("insert_param_to_cell and insert_child_to_cell", function()
    it("check names and types as MindSpore does", function()
      local net = nn.Cell()
      assert.are.equal("KeyError: For 'insert_param_to_cell', the argument 'param_name' should not be None.",
        err(function() net:insert_param_to_cell("", P({ 1 })) end))
      assert.are.equal("KeyError: For 'insert_param_to_cell', the argument 'param_name' should not contain '.', "
        .. "but got 'a.b'.", err(function() net:insert_param_to_cell("a.b", P({ 1 })) end))
      assert.are.equal("TypeError: For 'insert_param_to_cell', the argument 'param_name' must be a string, but got "
        .. "number.", err(function() net:insert_param_to_cell(3, P({ 1 })) end))
      assert.are.equal("TypeError: For 'insert_param_to_cell', the argument 'param' must be 'Parameter' if not None, "
        .. "but got Tensor.", err(function() net:insert_param_to_cell("p", cell.ones({ 1 })) end))
      net:insert_param_to_cell("a.b", P({ 1 }), false)
      assert.are.same({ "a.b" }, net:state_dict():keys())
      assert.are.equal("TypeError: For 'insert_child_to_cell', the type of parameter 'child_name' must be str, "
        .. "but got number.", err(function() net:insert_child_to_cell(1, nn.Cell()) end))
      assert.are.equal("KeyError: For 'insert_child_to_cell', the parameter 'child_name' can not be None and can "
        .. "not contain '.', but got 'x.y'.", err(function() net:insert_child_to_cell("x.y", nn.Cell()) end))
      assert.are.equal("TypeError: For 'insert_child_to_cell', the argument 'child_cell' must be 'Cell' if not None, "
        .. "but got number.", err(function() net:insert_child_to_cell("c", 5) end))
      local child = nn.Cell()
      net:insert_child_to_cell("c", child)
      assert.are.equal(child, net.c)
      net:insert_child_to_cell("c", nil)
      assert.is_nil(net.c)
    end)
  end)

  describe("buffers", function()
    it("register, read, list and persist as MindSpore does", function()
      local Net = nn.Cell:extend("Net")
      function Net:init()
        self:register_buffer("buffer_a", cell.tensor({ 4, 5, 6 }, cell.int64))
        self:register_buffer("tmp", cell.zeros({ 2 }), false)
        self.sub = nn.Cell()
        self.sub:register_buffer("buffer_b", cell.tensor({ 1, 2, 3 }, cell.int64))
      end
      local net = Net()
      assert.are.same({ 4, 5, 6 }, net.buffer_a:totable())
      assert.are.same({ "buffer_a", "tmp", "sub.buffer_b" }, keys_of(net:named_buffers()))
      assert.are.same({ "m.buffer_a", "m.tmp" }, keys_of(net:named_buffers { prefix = "m", recurse = false }))
      local n = 0
      for b in net:buffers() do n = n + 1; assert.is_true(cell.is_tensor(b)) end
      assert.are.equal(3, n)
      assert.are.same({ "buffer_a", "sub.buffer_b" }, net:state_dict():keys())
      assert.are.same({ 1, 2, 3 }, net:get_buffer("sub.buffer_b"):totable())
      net:register_buffer("tmp", cell.ones({ 2 }), { persistent = true })
      assert.are.same({ "buffer_a", "tmp", "sub.buffer_b" }, net:state_dict():keys())
    end)

    it("a nil buffer is kept out of the state_dict; a shared buffer is listed once", function()
      local net = nn.Cell()
      local t = cell.ones({ 1 })
      net:register_buffer("a", t)
      net:register_buffer("b", t)
      net:register_buffer("c", nil)
      assert.are.same({ "a" }, keys_of(net:named_buffers()))
      assert.are.same({ "a", "b" }, keys_of(net:named_buffers { remove_duplicate = false }))
      assert.are.same({ "a", "b" }, net:state_dict():keys())
    end)

    it("reject bad names and values with MindSpore's errors", function()
      local net = nn.Cell()
      net.x = 1
      assert.are.equal('KeyError: buffer name can\'t contain "."', err(function() net:register_buffer("a.b", cell.ones({ 1 })) end))
      assert.are.equal('KeyError: buffer name can\'t be empty string ""', err(function() net:register_buffer("", cell.ones({ 1 })) end))
      assert.are.equal("TypeError: buffer name should be a string. But got this type: number",
        err(function() net:register_buffer(1, cell.ones({ 1 })) end))
      assert.are.equal("KeyError: attribute 'x' already exists", err(function() net:register_buffer("x", cell.ones({ 1 })) end))
      assert.are.equal("TypeError: cannot assign 'number' object to buffer 'b' (cell Tensor or nil required)",
        err(function() net:register_buffer("b", 3) end))
    end)

    it("get_buffer and get_sub_cell name what is missing", function()
      local net = nn.Cell()
      net.a = nn.Cell()
      net.a.x = 1
      net.a:register_buffer("buf", cell.ones({ 1 }))
      assert.are.equal(net.a, net:get_sub_cell("a"))
      assert.are.equal(net, net:get_sub_cell(""))
      assert.are.equal("AttributeError: Cell has no attribute `zz`", err(function() net:get_sub_cell("a.zz") end))
      assert.are.equal("AttributeError: `x` is not an nn.Cell", err(function() net:get_sub_cell("a.x") end))
      assert.are.equal("AttributeError: `x` is not a buffer", err(function() net:get_buffer("a.x") end))
      assert.are.equal("AttributeError: Cell has no attribute `q`", err(function() net:get_buffer("a.q") end))
      assert.are.equal("AttributeError: Cell has no attribute `b`", err(function() net:get_buffer("b.buf") end))
    end)

    it("global registration hooks see every register_buffer and may replace the tensor", function()
      local seen = {}
      local h = nn.register_cell_buffer_registration_hook(function(c, name, t)
        seen[#seen + 1] = name
        if name == "double" then return t * 2 end
      end)
      local net = nn.Cell()
      net:register_buffer("plain", cell.ones({ 1 }))
      net:register_buffer("double", cell.ones({ 1 }))
      h:remove()
      net:register_buffer("after", cell.ones({ 1 }))
      assert.are.same({ "plain", "double" }, seen)
      assert.are.same({ 2 }, net.double:totable())
      assert.are.equal("TypeError: register_cell_buffer_registration_hook: the hook must be a function, but got number",
        err(function() nn.register_cell_buffer_registration_hook(1) end))
    end)
  end)

  describe("traversal", function()
    local net, shared
    before_each(function()
      shared = P({ 2 }, "shared")
      net = nn.Cell()
      net.w = P({ 1 })
      net.a = nn.Cell()
      net.a.p = P({ 3 })
      net.a.q = P({ 3 }, nil, false)
      net.b = nn.Cell()
      net.b.s = shared
      net.b.c = nn.Cell()
      net.b.c.t = P({ 4 })
      net.a.s2 = shared
    end)

    it("cells_and_names walks depth first with prefixes", function()
      assert.are.same({ "", "a", "b", "b.c" }, keys_of(net:cells_and_names()))
      assert.are.same({ "m", "m.a", "m.b", "m.b.c" }, keys_of(net:cells_and_names("m")))
      assert.are.same({ "m", "m.a", "m.b", "m.b.c" }, keys_of(net:cells_and_names { name_prefix = "m" }))
    end)

    it("cells_and_names takes MindSpore's positional (cells, name_prefix): cells already seen are skipped", function()
      assert.are.same({ "m", "m.a", "m.b", "m.b.c" }, keys_of(net:cells_and_names(nil, "m")))
      assert.are.same({ "m", "m.a" }, keys_of(net:cells_and_names({ [net.b] = true }, "m")))
      assert.are.same({ "", "b", "b.c" }, keys_of(net:cells_and_names({ net.a })))
      assert.are.same({}, keys_of(net:cells_and_names({ [net] = true }, "m")))
      assert.are.same({ "p", "p.a" }, keys_of(net:cells_and_names { cells = { net.b }, name_prefix = "p" }))
      assert.are.equal("TypeError: cells_and_names: cells must be a set or a list of Cells, but got number",
        H.caller_error("cell_spec%.lua", function() net:cells_and_names(5, "m") end))
      assert.are.equal("TypeError: cells_and_names: cells must be a set or a list of Cells, but it holds number",
        H.caller_error("cell_spec%.lua", function() net:cells_and_names({ 1 }, "m") end))
    end)

    it("parameters_and_names yields each Parameter once, with expand and prefix", function()
      assert.are.same({ "w", "a.p", "a.q", "a.s2", "b.c.t" }, keys_of(net:parameters_and_names()))
      assert.are.same({ "x.w" }, keys_of(net:parameters_and_names("x", false)))
      assert.are.same({ "x.w" }, keys_of(net:parameters_and_names { name_prefix = "x", expand = false }))
      local n = 0
      for _ in net:get_parameters() do n = n + 1 end
      assert.are.equal(5, n)
      n = 0
      for _ in net:get_parameters(false) do n = n + 1 end
      assert.are.equal(1, n)
    end)

    it("trainable_params and untrainable_params are lists by requires_grad", function()
      local tr = net:trainable_params()
      assert.are.equal(4, #tr)
      assert.are.equal(net.w, tr[1])
      local un = net:untrainable_params()
      assert.are.same({ net.a.q }, un)
      assert.are.same({ net.w }, net:trainable_params(false))
    end)

    it("parameters_dict maps names to Parameters", function()
      local d = net:parameters_dict()
      -- keys are the Parameters' names; those added after attaching keep theirs
      assert.are.same({ "w", "p", "q", "shared", "t" }, d:keys())
      assert.are.equal(shared, d.shared)
      assert.are.same({ "w" }, net:parameters_dict(false):keys())
    end)

    it("name_cells and cells list the direct sub-cells", function()
      assert.are.same({ "a", "b" }, net:name_cells():keys())
      local list = {}
      for c in net:cells() do list[#list + 1] = c end
      assert.are.same({ net.a, net.b }, list)
    end)

    it("update_parameters_name renames by path; update_cell_prefix sets param_prefix", function()
      net:update_parameters_name("top.")
      assert.are.equal("top.b.c.t", net.b.c.t.name)
      assert.are.equal("top.a.s2", shared.name)
      net:update_parameters_name("", false)
      assert.are.equal("w", net.w.name)
      assert.are.equal("top.a.p", net.a.p.name)
      net:update_cell_prefix()
      assert.are.equal("b.c", net.b.c.param_prefix)
      H.expect_error(function() net:update_parameters_name("bad prefix") end, "ValueError", "bad prefix")
    end)

    it("argument types are checked", function()
      H.expect_error(function() net:parameters_and_names(1) end, "TypeError", "name_prefix must be a string")
      H.expect_error(function() net:trainable_params("x") end, "TypeError", "recurse must be a boolean")
    end)
  end)

  describe("modes and flags", function()
    it("set_train is recursive and returns the cell; set_grad sets the flag", function()
      local net = nn.Cell()
      net.a = nn.Cell()
      net.a.b = nn.Cell()
      assert.are.equal(net, net:set_train())
      assert.is_true(net.a.b.training)
      net:set_train(false)
      assert.is_false(net.a.b.training)
      assert.are.equal(net, net:set_grad())
      assert.is_true(net.requires_grad)
      assert.is_false(net.a.requires_grad)
      H.expect_error(function() net:set_train(1) end, "TypeError", "mode must be a boolean")
    end)

    it("apply visits sub-cells first, then the cell", function()
      local net = nn.Cell:extend("Top")()
      net.a = nn.Cell:extend("A")()
      net.a.b = nn.Cell:extend("B")()
      local order = {}
      assert.are.equal(net, net:apply(function(c) order[#order + 1] = c.cls_name end))
      assert.are.same({ "B", "A", "Top" }, order)
    end)

    it("add_flags and add_flags_recursive", function()
      local net = nn.Cell()
      net.a = nn.Cell()
      net:add_flags { x = 1 }
      net:add_flags_recursive { y = true }
      assert.are.same({ x = 1, y = true }, net:get_flags())
      assert.are.same({ y = true }, net.a:get_flags())
      assert.is_true(net.a.y)
      H.expect_error(function() net:add_flags(3) end, "TypeError", "flags must be a table")
    end)

    it("to_float casts floating-point inputs of the cell and its sub-cells", function()
      local Net = nn.Cell:extend("Net")
      function Net:construct(x, i) return x.dtype, i.dtype end
      local net = Net()
      net.sub = Net()
      assert.are.equal(net, net:to_float(cell.float16))
      local a, b = net(cell.ones({ 1 }), cell.ones({ 1 }, cell.int32))
      assert.are.equal(cell.float16, a)
      assert.are.equal(cell.int32, b)
      assert.are.equal(cell.float16, (net.sub(cell.ones({ 1 }, cell.float64), cell.ones({ 1 }))))
      assert.is_true(net.sub:get_flags().fp16)
      net:to_float(cell.bfloat16)
      assert.are.equal(cell.bfloat16, (net(cell.ones({ 1 }), cell.ones({ 1 }))))
      assert.are.equal("ValueError: For 'to_float', the argument 'dst_type' must be float32, float16 or bfloat16, "
        .. "but got Float64.", err(function() net:to_float(cell.float64) end))
      H.expect_error(function() net:to_float("float16") end, "ValueError", "but got string")
    end)

    it("cast_inputs casts a nested sequence", function()
      local net = nn.Cell()
      local out = net:cast_inputs({ cell.ones({ 1 }), { cell.ones({ 1 }, cell.int32) }, 3 }, cell.float64)
      assert.are.equal(cell.float64, out[1].dtype)
      assert.are.equal(cell.float64, out[2][1].dtype)
      assert.are.equal(3, out[3])
      H.expect_error(function() net:cast_inputs(cell.ones({ 1 }), cell.float64) end, "TypeError", "sequence")
    end)
  end)

  describe("tostring", function()
    it("follows MindSpore 2.6's layout with nested indentation", function()
      local Leaf = nn.Cell:extend("Leaf")
      function Leaf:init(n) self.n = n end
      function Leaf:extend_repr() return "n=" .. self.n end
      local Multi = nn.Cell:extend("Multi")
      function Multi:extend_repr() return "line1\nline2" end
      local Net = nn.Cell:extend("Net")
      function Net:init()
        self.a = Leaf(1)
        self.inner = nn.Cell:extend("Inner")()
        self.inner.b = Leaf(2)
        self.inner.m = Multi()
      end
      assert.are.equal("Leaf(n=1)", tostring(Leaf(1)))
      assert.are.equal("Multi(\n  line1\n  line2\n)", tostring(Multi()))
      assert.are.equal(table.concat({
        "Net(",
        "  (a): Leaf(n=1)",
        "  (inner): Inner(",
        "    (b): Leaf(n=2)",
        "    (m): Multi(",
        "      line1",
        "      line2",
        "    )",
        "  )",
        ")",
      }, "\n"), tostring(Net()))
    end)
  end)
end)
