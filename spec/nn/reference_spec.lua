-- reference_spec.lua - the examples of MindSpore's nn.Cell reference page
-- (../shared/seeds/nn.Cell-reference.txt and the docstrings of cell.py 2.6)
-- written in Lua, with their printed output. Python's True/False/None print
-- as true/false/nil; MindSpore's print(tensor) (NumPy layout) is checked
-- through the values.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function Conv2dParams(cin, cout, k)
  return nn.Conv2d(cin, cout, k, { has_bias = false, weight_init = "normal" })
end

local function list_str(list)
  local parts = {}
  for i, v in ipairs(list) do parts[i] = tostring(v) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

describe("the nn.Cell reference examples", function()
  it("the class example: auto_prefix=false keeps the inner names", function()
    local MyCell = nn.Cell:extend("MyCell")
    function MyCell:init(forward_net)
      nn.Cell.init(self, { auto_prefix = false })
      self.net = forward_net
      self.relu = nn.ReLU()
    end
    function MyCell:construct(x) return self.relu(self.net(x)) end
    local my_net = MyCell(Conv2dParams(120, 240, 4))
    assert.are.equal("[Parameter (name=weight, shape=(240, 120, 4, 4), dtype=Float32, requires_grad=true)]",
      list_str(my_net:trainable_params()))
    -- with auto_prefix (the default) the name would be net.weight
    local Prefixed = nn.Cell:extend("Prefixed")
    function Prefixed:init(f) self.net = f end
    assert.are.equal("net.weight", Prefixed(Conv2dParams(120, 240, 4)):trainable_params()[1].name)
  end)

  it("cells_and_names", function()
    local Net = nn.Cell:extend("Net")
    function Net:init() self.conv = Conv2dParams(3, 64, 3) end
    local names = {}
    for name in Net():cells_and_names() do
      if name ~= "" then names[#names + 1] = name end
    end
    assert.are.same({ "conv" }, names)
  end)

  it("get_parameters and parameters_and_names of nn.Dense(3, 4)", function()
    local net = nn.Dense(3, 4)
    local parameters = {}
    for p in net:get_parameters() do parameters[#parameters + 1] = p end
    assert.are.equal(2, #parameters)
    local names = {}
    for name in net:parameters_and_names() do names[#names + 1] = name end
    assert.are.same({ "weight", "bias" }, names)
  end)

  it("insert_child_to_cell", function()
    local net1 = nn.ReLU()
    local net2 = nn.Dense(2, 2)
    net1:insert_child_to_cell("child", net2)
    assert.are.equal("ReLU(\n  (child): Dense(input_channels=2, output_channels=2, has_bias=true)\n)", tostring(net1))
  end)

  it("cells and name_cells", function()
    local Net = nn.Cell:extend("Net")
    function Net:init() self.dense = nn.Dense(2, 2) end
    local net = Net()
    local cells = {}
    for c in net:cells() do cells[#cells + 1] = c end
    assert.are.equal("[Dense(input_channels=2, output_channels=2, has_bias=true)]", list_str(cells))
    assert.are.equal("OrderedDict({dense = Dense(input_channels=2, output_channels=2, has_bias=true)})",
      tostring(net:name_cells()))
  end)

  it("apply sets every Dense weight to ones", function()
    local Seq = nn.Cell:extend("SequentialCell")
    function Seq:init() self["a"] = nn.Dense(2, 2); self["b"] = nn.Dense(2, 2) end
    local net = Seq()
    local function func(c)
      if require("cell.class").is_instance(c, nn.Dense) then
        c.weight:set_data(cell.initializer(cell.init.One(), c.weight.shape, c.weight.dtype))
      end
    end
    assert.are.equal(net, net:apply(func))
    assert.are.same({ { 1, 1 }, { 1, 1 } }, net.a.weight:totable())
    assert.are.equal(table.concat({
      "SequentialCell(",
      "  (a): Dense(input_channels=2, output_channels=2, has_bias=true)",
      "  (b): Dense(input_channels=2, output_channels=2, has_bias=true)",
      ")" }, "\n"), tostring(net))
  end)

  it("register_backward_hook: relu(x + x) at x = 1", function()
    local printed = {}
    local function backward_hook_fn(_, grad_input, grad_output)
      printed[#printed + 1] = "backward input: " .. tostring(grad_input[1])
      printed[#printed + 1] = "backward output: " .. tostring(grad_output[1])
    end
    local Net = nn.Cell:extend("Net")
    function Net:init()
      self.relu = nn.ReLU()
      self.handle = self.relu:register_backward_hook(backward_hook_fn)
    end
    function Net:construct(x) return self.relu(x + x) end
    local grad = cell.ops.GradOperation { get_all = true }
    local output = grad(Net())(cell.ones({ 1 }))
    local one = "Tensor(shape=[1], dtype=Float32, value= [1.0000])"
    assert.are.same({ "backward input: " .. one, "backward output: " .. one }, printed)
    assert.are.same({ 2 }, output[1]:totable())
  end)

  it("register_forward_hook and register_forward_pre_hook: a MatMul of x + x and y", function()
    local MatMul = nn.Cell:extend("MatMul")
    function MatMul:construct(a, b) return a:matmul(b) end
    for _, kind in ipairs { "forward", "pre" } do
      local seen = {}
      local Net = nn.Cell:extend("Net")
      function Net:init()
        self.mul = MatMul()
        if kind == "forward" then
          self.handle = self.mul:register_forward_hook(function(_, inputs, output)
            seen.inputs, seen.output = inputs, output
          end)
        else
          self.handle = self.mul:register_forward_pre_hook(function(_, inputs) seen.inputs = inputs end)
        end
      end
      function Net:construct(x, y) return self.mul(x + x, y) end
      local grad = cell.ops.GradOperation { get_all = true }
      local output = grad(Net())(cell.ones({ 1 }), cell.ones({ 1 }))
      assert.are.same({ 2 }, seen.inputs[1]:totable())
      assert.are.same({ 1 }, seen.inputs[2]:totable())
      if kind == "forward" then assert.are.equal(2, seen.output:item()) end
      assert.are.same({ 2 }, output[1]:totable())
      assert.are.same({ 2 }, output[2]:totable())
    end
  end)

  it("to_float returns the cell", function()
    local net = nn.Conv2d(120, 240, 4, { has_bias = false, weight_init = "normal" })
    assert.are.equal(net, net:to_float(cell.float16))
    assert.are.equal("Conv2d(input_channels=120, output_channels=240, kernel_size=(4, 4), stride=(1, 1), "
      .. "pad_mode=same, padding=0, dilation=(1, 1), group=1, has_bias=false, weight_init=normal, bias_init=nil, "
      .. "format=NCHW)", tostring(net))
  end)

  it("register_buffer, then reading it", function()
    local Net = nn.Cell:extend("Net")
    function Net:init() self:register_buffer("buffer0", cell.tensor({ 1, 2, 3 }, cell.int64)) end
    function Net:construct(x) return x + self.buffer0 end
    local net = Net()
    net:register_buffer("buffer0", cell.tensor({ 4, 5, 6 }, cell.int64))
    assert.are.same({ 4, 5, 6 }, net.buffer0:totable())
  end)

  local NetC = nn.Cell:extend("NetC")
  function NetC:init() self:register_buffer("buffer_c", cell.tensor({ 0, 0, 0 }, cell.int64)) end
  local NetB = nn.Cell:extend("NetB")
  function NetB:init(net_c)
    if net_c then self.net_c = net_c end
    self:register_buffer("buffer_b", cell.tensor({ 1, 2, 3 }, cell.int64))
  end
  local NetA = nn.Cell:extend("NetA")
  function NetA:init(net_b)
    self.net_b = net_b
    self:register_buffer("buffer_a", cell.tensor({ 4, 5, 6 }, cell.int64))
  end

  it("get_buffer", function()
    local net_a = NetA(NetB(NetC()))
    assert.are.same({ 0, 0, 0 }, net_a:get_buffer("net_b.net_c.buffer_c"):totable())
  end)

  it("named_buffers and buffers", function()
    local net_a = NetA(NetB())
    local printed = {}
    for name, buffer in net_a:named_buffers() do
      printed[#printed + 1] = ("buffer name is %s, buffer is %s"):format(name, table.concat(buffer:totable(), " "))
    end
    assert.are.same({ "buffer name is buffer_a, buffer is 4 5 6", "buffer name is net_b.buffer_b, buffer is 1 2 3" },
      printed)
    printed = {}
    for buffer in net_a:buffers() do printed[#printed + 1] = table.concat(buffer:totable(), " ") end
    assert.are.same({ "4 5 6", "1 2 3" }, printed)
  end)

  it("get_sub_cell", function()
    local NetC2 = nn.Cell:extend("NetC")
    function NetC2:init() self.dense_c = nn.Dense(5, 3) end
    local NetB2 = nn.Cell:extend("NetB")
    function NetB2:init(c) self.net_c = c; self.dense_b = nn.Dense(3, 5) end
    local NetA2 = nn.Cell:extend("NetA")
    function NetA2:init(b) self.net_b = b; self.dense_a = nn.Dense(3, 3) end
    local net_a = NetA2(NetB2(NetC2()))
    assert.are.equal("NetC(\n  (dense_c): Dense(input_channels=5, output_channels=3, has_bias=true)\n)",
      tostring(net_a:get_sub_cell("net_b.net_c")))
  end)

  it("state_dict and load_state_dict", function()
    local Net = nn.Cell:extend("Net")
    function Net:init()
      self.param_a = cell.Parameter(cell.tensor({ 1, 2, 3 }, cell.int64), "param_a")
      self:register_buffer("buffer_a", cell.tensor({ 4, 5, 6 }, cell.int64))
    end
    local net = Net()
    local sd = net:state_dict()
    assert.are.equal("OrderedDict({param_a = Parameter (name=param_a, shape=(3,), dtype=Int64, requires_grad=true), "
      .. "buffer_a = " .. tostring(net.buffer_a) .. "})", tostring(sd))
    local new_net = Net()
    assert.are.equal("<All keys matched successfully>", tostring(new_net:load_state_dict(sd)))
    assert.are.same({ 1, 2, 3 }, new_net.param_a:totable())
  end)
end)
