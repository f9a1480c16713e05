-- cell_options_spec.lua - every nn.Cell method with MindSpore keyword
-- defaults takes them positionally or as a trailing options table (both
-- parsed by cell.util.args), and names an unknown option; set_train records
-- `training` in the flags as MindSpore's add_flags_recursive does;
-- load_state_dict's result prints as MindSpore's _IncompatibleKeys.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("cell_options_spec%.lua", fn, ...) end

local function Net()
  local Two = nn.Cell:extend("Two")
  function Two:init()
    self.a = nn.Dense(2, 2)
    self.b = nn.Dense(2, 1, { has_bias = false })
    self:register_buffer("s", cell.zeros({ 1 }))
  end
  function Two:construct(x) return self.b(self.a(x)) end
  return Two()
end

local function names(iter)
  local out = {}
  for k in iter do out[#out + 1] = k end
  return out
end

describe("nn.Cell options", function()
  it("register_forward_pre_hook and register_forward_hook take with_kwargs as a boolean or {with_kwargs = }", function()
    local net, seen = Net(), {}
    net:register_forward_pre_hook(function(_, args, kwargs)
      seen[#seen + 1] = "pre:" .. tostring(kwargs.scale)
      return args, kwargs
    end, { with_kwargs = true })
    net:register_forward_hook(function(_, _, kwargs, out)
      seen[#seen + 1] = "fwd:" .. tostring(kwargs.scale)
      return out
    end, { with_kwargs = true })
    net:register_forward_hook(function(_, _, out) seen[#seen + 1] = "plain" return out end, { with_kwargs = false })
    net:register_forward_hook(function(_, _, out) seen[#seen + 1] = "positional" return out end, false)
    function net:construct(x) return self.b(self.a(x)) end
    local Net2 = nn.Cell:extend("Net2")
    function Net2:construct(x, kw) return x * kw.scale end
    local n2 = Net2()
    n2:register_forward_pre_hook(function(_, _, kwargs) seen[#seen + 1] = "n2:" .. kwargs.scale end, { with_kwargs = true })
    assert.are.equal(6, n2(cell.tensor(3), cell.kwargs { scale = 2 }):item())
    net(cell.ones({ 1, 2 }))
    assert.are.same({ "n2:2", "pre:nil", "fwd:nil", "plain", "positional" }, seen)
  end)

  it("name an unknown hook option, not with_kwargs", function()
    local net = Net()
    local fn = function() end
    assert.are.equal("TypeError: Cell.register_forward_hook() got an unexpected keyword argument 'prepend'; the "
      .. "options are with_kwargs", err(function() net:register_forward_hook(fn, { prepend = true }) end))
    assert.are.equal("TypeError: Cell.register_forward_pre_hook() got an unexpected keyword argument 'prepend'; the "
      .. "options are with_kwargs", err(function() net:register_forward_pre_hook(fn, { prepend = true }) end))
    assert.are.equal("TypeError: register_forward_hook: with_kwargs must be a boolean, but got number",
      err(function() net:register_forward_hook(fn, { with_kwargs = 1 }) end))
    assert.are.equal("TypeError: Cell.register_backward_hook() got an unexpected keyword argument 'prepend'; it "
      .. "takes no options", err(function() net:register_backward_hook(fn, { prepend = true }) end))
    assert.are.equal("TypeError: Cell.register_backward_pre_hook() takes no optional arguments, but 1 was given",
      err(function() net:register_backward_pre_hook(fn, true) end))
    assert.are.equal("TypeError: Cell.register_state_dict_pre_hook() got an unexpected keyword argument 'prepend'; "
      .. "it takes no options", err(function() net:register_state_dict_pre_hook(fn, { prepend = true }) end))
  end)

  it("insert_param_to_cell takes check_name_contain_dot as a boolean or {check_name_contain_dot = }", function()
    local c = nn.Cell()
    c:insert_param_to_cell("a.b", cell.Parameter(cell.ones({ 1 })), { check_name_contain_dot = false })
    c:insert_param_to_cell("a.c", cell.Parameter(cell.ones({ 1 }), "ac"), false)
    assert.are.same({ "a.b", "a.c" }, names(c:parameters_and_names()))
    assert.are.equal("KeyError: For 'insert_param_to_cell', the argument 'param_name' should not contain '.', but "
      .. "got 'x.y'.", err(function()
        c:insert_param_to_cell("x.y", cell.Parameter(cell.ones({ 1 }), "xy"), { check_name_contain_dot = true })
      end))
    assert.are.equal("TypeError: insert_param_to_cell: check_name_contain_dot must be a boolean, but got string",
      err(function() c:insert_param_to_cell("z", cell.Parameter(cell.ones({ 1 }), "z"), "no") end))
    assert.are.equal("TypeError: Cell.insert_param_to_cell() got an unexpected keyword argument 'check_dot'; the "
      .. "options are check_name_contain_dot", err(function()
        c:insert_param_to_cell("z", cell.Parameter(cell.ones({ 1 }), "z"), { check_dot = false })
      end))
  end)

  it("every traversal method takes its options either way and names unknown ones", function()
    local net = Net()
    local function same(a, b) assert.are.same(names(a), names(b)) end
    same(net:parameters_and_names("m", false), net:parameters_and_names { name_prefix = "m", expand = false })
    same(net:parameters_and_names("m", false), net:parameters_and_names("m", { expand = false }))
    assert.are.same({ "m.a.weight", "m.a.bias", "m.b.weight" }, names(net:parameters_and_names { name_prefix = "m" }))
    assert.are.same({ "", "a", "b" }, names(net:cells_and_names()))
    assert.are.same({ "x", "x.a", "x.b" }, names(net:cells_and_names { name_prefix = "x" }))
    assert.are.equal(3, #names(net:get_parameters { expand = true }))
    assert.are.equal(0, #names(net:get_parameters { expand = false }))
    assert.are.equal(0, #net:trainable_params { recurse = false })
    assert.are.equal(3, #net:trainable_params(true))
    assert.are.equal(0, #net:untrainable_params { recurse = true })
    assert.are.equal(0, net:parameters_dict { recurse = false }:len())
    assert.are.same({ "p.s" }, names(net:named_buffers { prefix = "p", recurse = false, remove_duplicate = true }))
    assert.are.same({ "p.s" }, names(net:named_buffers("p", { recurse = false })))
    assert.are.equal(1, #names(net:buffers { recurse = false }))
    net:update_parameters_name { prefix = "n." }
    local pnames = {}
    for p in net:get_parameters() do pnames[#pnames + 1] = p.name end
    assert.are.same({ "n.a.weight", "n.a.bias", "n.b.weight" }, pnames)
    net:update_parameters_name("q.", { recurse = false })
    local cases = {
      { function() net:parameters_and_names { prefix = "m" } end, "Cell.parameters_and_names", "prefix",
        "name_prefix, expand" },
      { function() net:cells_and_names { prefix = "m" } end, "Cell.cells_and_names", "prefix", "cells, name_prefix" },
      { function() net:get_parameters { recurse = true } end, "Cell.get_parameters", "recurse", "expand" },
      { function() net:trainable_params { expand = true } end, "Cell.trainable_params", "expand", "recurse" },
      { function() net:untrainable_params { expand = true } end, "Cell.untrainable_params", "expand", "recurse" },
      { function() net:parameters_dict { expand = true } end, "Cell.parameters_dict", "expand", "recurse" },
      { function() net:named_buffers { name_prefix = "m" } end, "Cell.named_buffers", "name_prefix",
        "prefix, recurse, remove_duplicate" },
      { function() net:buffers { prefix = "m" } end, "Cell.buffers", "prefix", "recurse" },
      { function() net:update_parameters_name { name_prefix = "m" } end, "Cell.update_parameters_name", "name_prefix",
        "prefix, recurse" },
      { function() net:set_train { training = true } end, "Cell.set_train", "training", "mode" },
      { function() net:set_grad { mode = true } end, "Cell.set_grad", "mode", "requires_grad" },
      { function() net:init_parameters_data { parallel = true } end, "Cell.init_parameters_data", "parallel",
        "auto_parallel_mode" },
      { function() net:register_buffer("t", cell.ones({ 1 }), { persistant = false }) end, "Cell.register_buffer",
        "persistant", "persistent" },
      { function() net:state_dict { keepvars = true } end, "Cell.state_dict", "keepvars",
        "destination, prefix, keep_vars" },
      { function() net:load_state_dict({}, { strict = false, assign = true }) end, "Cell.load_state_dict", "assign",
        "strict" },
      { function() nn.Cell.init(net, { prefix = true }) end, "Cell.init", "prefix", "auto_prefix, flags" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(("TypeError: %s() got an unexpected keyword argument '%s'; the options are %s")
        :format(c[2], c[3], c[4]), err(c[1]))
    end
    assert.are.equal("TypeError: Cell.parameters_and_names() got multiple values for argument 'name_prefix'",
      err(function() net:parameters_and_names("m", { name_prefix = "x" }) end))
    assert.are.equal("TypeError: Cell.set_train() takes at most 1 optional argument, but 2 were given",
      err(function() net:set_train(true, false) end))
  end)

  it("the mode, buffer, state and init methods take their options either way", function()
    local net = Net()
    net:set_train { mode = true }
    assert.is_true(net.training)
    net:set_train(false)
    assert.is_false(net.a.training)
    net:set_grad { requires_grad = true }
    assert.is_true(net.requires_grad)
    net:set_grad(false)
    assert.is_false(net.requires_grad)
    net:register_buffer("t", cell.ones({ 1 }), { persistent = false })
    net:register_buffer("u", cell.ones({ 1 }), false)
    assert.are.same({ "s", "a.weight", "a.bias", "b.weight" }, net:state_dict():keys())
    assert.are.same({ "m.s", "m.a.weight", "m.a.bias", "m.b.weight" }, net:state_dict { prefix = "m." }:keys())
    assert.are.same({ "m.s", "m.a.weight", "m.a.bias", "m.b.weight" }, net:state_dict(nil, { prefix = "m." }):keys())
    local r = net:load_state_dict({ s = cell.ones({ 1 }) }, { strict = false })
    assert.are.same({ "a.weight", "a.bias", "b.weight" }, r.missing_keys)
    r = net:load_state_dict({ s = cell.ones({ 1 }) }, false)
    assert.are.same({}, r.unexpected_keys)
    H.expect_error(function() net:load_state_dict({ s = cell.ones({ 1 }) }, { strict = true }) end, "RuntimeError",
      'Missing key(s) in state_dict: "a.weight"')
    net:init_parameters_data { auto_parallel_mode = false }
    net:init_parameters_data(false)
    net:recompute { mp_comm_recompute = true }
    assert.are.equal("TypeError: Cell.recompute: mp_comm_recompute must be a boolean, but got number",
      err(function() net:recompute { mp_comm_recompute = 1 } end))
    assert.are.equal("ValueError: For 'recompute', keyword 'foo' is not recognized! the key kwargs must be "
      .. "'mp_comm_recompute', 'parallel_optimizer_comm_recompute', 'recompute_slice_activation'",
      err(function() net:recompute { foo = true } end))
    local Sub = nn.Cell:extend("Sub")
    function Sub:init() nn.Cell.init(self, { auto_prefix = false, flags = { f = 1 } }) end
    local s = Sub()
    assert.are.same({ f = 1 }, s:get_flags())
    local Sub2 = nn.Cell:extend("Sub2")
    function Sub2:init() nn.Cell.init(self, true, { g = 2 }) end
    assert.are.same({ g = 2 }, Sub2():get_flags())
  end)

  it("set_train records training in the flags of the cell and every cell below it, as MindSpore does", function()
    local net = Net()
    assert.are.same({}, net:get_flags())
    net:set_train()
    assert.is_true(net:get_flags().training)
    assert.is_true(net.a:get_flags().training)
    net:set_train(false)
    assert.are.same({ training = false }, net:get_flags())
    assert.are.same({ training = false }, net.b:get_flags())
    -- and the flag sets the mode (MindSpore's add_flags updates the attribute)
    net:add_flags_recursive { training = true }
    assert.is_true(net.training)
    assert.is_true(net.b.training)
    assert.are.equal("TypeError: Cell.training must be a boolean, but got number",
      err(function() net:add_flags { training = 1 } end))
    net:add_flags { cls_name = "X" }
    assert.are.equal("Two", net.cls_name)
    assert.are.equal("X", net:get_flags().cls_name)
  end)

  it("load_state_dict's result prints as MindSpore's _IncompatibleKeys", function()
    local net = Net()
    local r = net:load_state_dict({ ["a.weight"] = net.a.weight:clone(), extra = cell.ones({ 1 }),
      ["it's"] = cell.ones({ 1 }) }, false)
    assert.are.equal("_IncompatibleKeys(missing_keys=['s', 'a.bias', 'b.weight'], unexpected_keys=['extra', "
      .. "\"it's\"])", tostring(r))
    r = net:load_state_dict(net:state_dict())
    assert.are.equal("<All keys matched successfully>", tostring(r))
  end)
end)
