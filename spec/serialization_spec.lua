-- serialization_spec.lua - cell.save_checkpoint, cell.load_checkpoint and
-- cell.load_param_into_net (lua/cell/serialization.lua) as MindSpore 2.7
-- defines them for safetensors files: what a Cell, a list and a dict save,
-- names and order, the options, loading into a net (shape and dtype rules,
-- the suffix rule, buffers), files from PyTorch, and every error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local OrderedDict = cell.OrderedDict

local function err(fn, ...) return H.caller_error("serialization_spec%.lua", fn, ...) end

local Net = nn.Cell:extend("Net")
function Net:init(hidden)
  self.fc1 = nn.Dense(3, hidden or 4)
  self.fc2 = nn.Dense(hidden or 4, 2)
  self:register_buffer("steps", cell.tensor(7, cell.int64))
  self:register_buffer("scratch", cell.zeros({ 2 }), false)
end
function Net:construct(x) return self.fc2(self.fc1(x)) end

local tmp
before_each(function()
  tmp = os.tmpname()
  os.remove(tmp)
  tmp = tmp .. ".safetensors"
end)
after_each(function()
  os.remove(tmp)
  os.remove(tmp .. ".safetensors")
end)

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

describe("save_checkpoint and load_checkpoint", function()
  it("save a Cell's Parameters by name and its persistent buffers, in state_dict order", function()
    local net = Net()
    cell.save_checkpoint(net, tmp)
    local d = cell.load_checkpoint(tmp)
    assert.is_true(require("cell.class").is_instance(d, OrderedDict))
    assert.are.same({ "steps", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias" }, d:keys())
    for name, p in d:items() do
      assert.is_true(cell.is_parameter(p), name)
      assert.are.equal(name, p.name)
    end
    H.assert_values(d["fc1.weight"], net.fc1.weight:totable())
    H.assert_values(d["fc2.bias"], net.fc2.bias:totable())
    assert.are.equal("int64", d.steps.dtype.name)
    assert.are.equal(7, d.steps:item())
    assert.are.equal("Parameter (name=fc1.weight, shape=(4, 3), dtype=Float32, requires_grad=true)",
      tostring(d["fc1.weight"]))
  end)

  it("use the Parameters' own names, and save a shared Parameter once", function()
    local net = nn.Cell()
    local shared = cell.Parameter(cell.ones({ 2 }), "tied")
    net.a = nn.Cell({ auto_prefix = false })
    net.a.w = shared
    net.b = nn.Cell({ auto_prefix = false })
    net.b.w = shared
    cell.save_checkpoint(net, tmp)
    local keys = cell.load_checkpoint(tmp):keys()
    assert.are.equal(1, #keys)
    assert.are.equal(shared.name, keys[1])
  end)

  it("initialise lazy Parameters before saving them", function()
    local net = nn.Cell()
    net.w = cell.Parameter(cell.initializer("ones", { 2, 2 }), "w")
    assert.is_true(net.w.has_init)
    cell.save_checkpoint(net, tmp)
    H.assert_values(cell.load_checkpoint(tmp).w, { { 1, 1 }, { 1, 1 } })
  end)

  it("save a list of Parameters, a list of {name, data} tables, an OrderedDict and a plain table", function()
    local a, b = cell.Parameter(cell.ones({ 2 }), "a"), cell.Parameter(cell.zeros({ 1 }, cell.int32), "b")
    cell.save_checkpoint({ b, a }, tmp)
    assert.are.same({ "b", "a" }, cell.load_checkpoint(tmp):keys())
    cell.save_checkpoint(cell.ParameterTuple({ a, b }), tmp)
    assert.are.same({ "a", "b" }, cell.load_checkpoint(tmp):keys())
    cell.save_checkpoint({ { name = "x", data = cell.tensor({ 3.5 }) }, { name = "y", data = a } }, tmp)
    local d = cell.load_checkpoint(tmp)
    assert.are.same({ "x", "y" }, d:keys())
    assert.are.equal("y", d.y.name)
    cell.save_checkpoint(d, tmp)
    assert.are.same({ "x", "y" }, cell.load_checkpoint(tmp):keys())
    cell.save_checkpoint({ zeta = a, alpha = b, mid = cell.tensor({ 1 }) }, tmp) -- plain: sorted keys
    assert.are.same({ "alpha", "mid", "zeta" }, cell.load_checkpoint(tmp):keys())
  end)

  it("handle tensor names that shadow OrderedDict's methods", function()
    cell.save_checkpoint({ len = cell.ones({ 1 }), keys = cell.zeros({ 2 }) }, tmp)
    local d = cell.load_checkpoint(tmp)
    assert.are.same({ "keys", "len" }, OrderedDict.keys(d))
    assert.is_true(cell.is_parameter(d.len))
    local net = nn.Cell()
    net.len = cell.Parameter(cell.zeros({ 1 }), "len")
    local a = cell.load_param_into_net(net, d)
    assert.are.same({}, a)
    assert.are.equal(1, net.len[1])
  end)

  it("write an empty list as a file that holds nothing, which load_checkpoint refuses as MindSpore does", function()
    cell.save_checkpoint({}, tmp)
    assert.is_true(exists(tmp))
    assert.are.equal("ValueError: The loaded parameter dict is empty after filter or specify, please check "
      .. "whether 'filter_prefix' or 'specify_prefix' are set correctly.", err(function() cell.load_checkpoint(tmp) end))
  end)

  it("append '.safetensors' to other names, and load_checkpoint finds the file either way", function()
    local base = tmp:sub(1, -13) .. ".ckpt"
    cell.save_checkpoint(Net(), base)
    assert.is_false(exists(base))
    assert.is_true(exists(base .. ".safetensors"))
    assert.are.equal(5, cell.load_checkpoint(base):len())
    assert.are.equal(5, cell.load_checkpoint(base .. ".safetensors"):len())
    os.remove(base .. ".safetensors")
  end)

  it("take choice_func, append_dict and metadata", function()
    local net = Net()
    cell.save_checkpoint(net, tmp, {
      choice_func = function(name) return name:sub(1, 3) == "fc1" end,
      append_dict = { epoch_num = 3, lr = 0.5, done = true, extra = cell.ones({ 2 }) },
      metadata = { note = "hello" },
    })
    local d = cell.load_checkpoint(tmp)
    assert.are.same({ "fc1.weight", "fc1.bias", "done", "epoch_num", "extra", "lr" }, d:keys())
    assert.are.equal("int64", d.epoch_num.dtype.name)
    assert.are.equal(3, d.epoch_num:item())
    assert.are.equal("float32", d.lr.dtype.name)
    assert.are.equal("bool", d.done.dtype.name)
    local _, _, meta = cell.core.safetensors_load(tmp)
    assert.are.same({ note = "hello" }, meta)
  end)

  it("take MindSpore's positional options too", function()
    local net = Net()
    cell.save_checkpoint(net, tmp, true, false, nil, nil, "AES-GCM", function(n) return n == "steps" end)
    assert.are.same({ "steps" }, cell.load_checkpoint(tmp):keys())
    cell.save_checkpoint(net, tmp)
    local net2 = Net()
    local d = cell.load_checkpoint(tmp, net2, false, "fc2")
    assert.are.same({ "steps", "fc1.weight", "fc1.bias" }, d:keys())
    H.assert_values(net2.fc1.weight, net.fc1.weight:totable())
  end)

  it("write no metadata unless asked, so PyTorch's and Hugging Face's loaders take the file", function()
    cell.save_checkpoint(Net(), tmp)
    local _, _, meta = cell.core.safetensors_load(tmp)
    assert.are.same({}, meta)
  end)

  it("filter what load_checkpoint returns: specify_prefix, filter_prefix, choice_func", function()
    cell.save_checkpoint(Net(), tmp)
    assert.are.same({ "fc1.weight", "fc1.bias" }, cell.load_checkpoint(tmp, { specify_prefix = "fc1" }):keys())
    assert.are.same({ "steps", "fc2.weight", "fc2.bias" }, cell.load_checkpoint(tmp, { filter_prefix = { "fc1" } }):keys())
    assert.are.same({ "fc2.bias" }, cell.load_checkpoint(tmp, { choice_func = function(n) return n == "fc2.bias" end }):keys())
    -- a prefix option overrides choice_func, as in MindSpore
    assert.are.same({ "fc1.weight", "fc1.bias" }, cell.load_checkpoint(tmp, {
      specify_prefix = "fc1", choice_func = function() return false end }):keys())
  end)

  it("load into a net given as the net option", function()
    local net, net2 = Net(), Net()
    cell.save_checkpoint(net, tmp)
    cell.load_checkpoint(tmp, { net = net2 })
    H.assert_values(net2.fc2.weight, net.fc2.weight:totable())
  end)

  it("read a file of PyTorch tensors' bytes", function()
    local d = cell.load_checkpoint("spec/fixtures/safetensors/torch_bytes.safetensors")
    assert.are.equal("bfloat16", d.brain.dtype.name)
    assert.is_true(cell.is_parameter(d.mask))
    H.assert_close(d.weight, { { -0.5, -0.5 + 1 / 7, -0.5 + 2 / 7, -0.5 + 3 / 7 },
      { -0.5 + 4 / 7, -0.5 + 5 / 7, -0.5 + 6 / 7, 0.5 }, { -0.5 + 8 / 7, -0.5 + 9 / 7, -0.5 + 10 / 7, -0.5 + 11 / 7 } })
  end)
end)

describe("save_checkpoint errors", function()
  it("checks what it saves and where", function()
    assert.are.equal("TypeError: For 'save_checkpoint', the parameter 'save_obj' must be nn.Cell, list or dict, "
      .. "but got number.", err(function() cell.save_checkpoint(5, tmp) end))
    assert.are.equal("TypeError: For 'save_checkpoint', the parameter nil for checkpoint file name is invalid,"
      .. "'ckpt_file_name' must be string, but got nil.", err(function() cell.save_checkpoint(Net()) end))
    assert.is_truthy(err(function() cell.save_checkpoint({ 5 }, tmp) end):find(
      "TypeError: For save_checkpoint, when save_obj is a list, its items should be Parameters or "
      .. "{name = ..., data = ...} tables, but item 1 is number.", 1, true))
    assert.is_truthy(err(function() cell.save_checkpoint({ w = 5 }, tmp) end):find(
      "the type of key is string and the type of value is number", 1, true))
    assert.is_truthy(err(function() cell.save_checkpoint({ { name = 1, data = cell.ones({ 1 }) } }, tmp) end):find(
      "the name in dict should be string, but got number", 1, true))
  end)

  it("checks its options", function()
    local net = Net()
    assert.are.equal("TypeError: save_checkpoint() got an unexpected keyword argument 'bogus'; the options are integrated_save, "
      .. "async_save, append_dict, enc_key, enc_mode, choice_func, crc_check, format, metadata",
      err(function() cell.save_checkpoint(net, tmp, { bogus = 1 }) end))
    assert.is_truthy(err(function() cell.save_checkpoint(net, tmp, { format = "ckpt" }) end):find(
      "ValueError: For 'save_checkpoint', cell writes safetensors files only", 1, true))
    assert.is_truthy(err(function() cell.save_checkpoint(net, tmp, { enc_key = "k" }) end):find(
      "ValueError: For 'save_checkpoint', when format is 'safetensors', the parameter 'enc_key'", 1, true))
    assert.is_truthy(err(function() cell.save_checkpoint(net, tmp, { crc_check = true }) end):find(
      "NotImplementedError:", 1, true))
    assert.are.equal("TypeError: For 'save_checkpoint', the argument 'integrated_save' must be bool, but got string.",
      err(function() cell.save_checkpoint(net, tmp, { integrated_save = "yes" }) end))
    assert.are.equal("TypeError: For 'save_checkpoint', the argument 'choice_func' must be a function, but got number.",
      err(function() cell.save_checkpoint(net, tmp, { choice_func = 1 }) end))
    assert.is_truthy(err(function() cell.save_checkpoint(net, tmp, { append_dict = { x = "text" } }) end):find(
      "put strings in 'metadata'", 1, true))
    assert.is_truthy(err(function() cell.save_checkpoint(net, tmp, { metadata = { x = 1 } }) end):find(
      "'metadata' maps strings to strings", 1, true))
    cell.save_checkpoint(net, tmp, { async_save = true }) -- saved at once
    assert.is_true(exists(tmp))
  end)

  it("reports the engine's refusals at the caller: duplicate names, unwritable places", function()
    local a = cell.Parameter(cell.ones({ 1 }), "same")
    local b = cell.Parameter(cell.ones({ 1 }), "same")
    assert.is_truthy(err(function() cell.save_checkpoint({ a, b }, tmp) end):find(
      "ValueError: safetensors: " .. tmp .. ": tensor name 'same' appears twice", 1, true))
    assert.is_truthy(err(function() cell.save_checkpoint({ a }, "/no/such/dir/x.safetensors") end):find(
      "RuntimeError: safetensors: /no/such/dir/x.safetensors: cannot create a file in its folder", 1, true))
    H.still_works()
  end)
end)

describe("load_checkpoint errors", function()
  it("names missing and malformed files at the caller", function()
    assert.are.equal("ValueError: safetensors: /no/such.safetensors: cannot open: No such file or directory",
      err(function() cell.load_checkpoint("/no/such.safetensors") end))
    local bad = "spec/fixtures/safetensors/bad_overlap.safetensors"
    assert.is_truthy(err(function() cell.load_checkpoint(bad) end):find("ValueError: safetensors: " .. bad
      .. ": tensors 'a' [0, 16] and 'b' [8, 24] overlap", 1, true))
  end)

  it("checks its arguments", function()
    assert.are.equal("TypeError: For 'load_checkpoint', the argument 'ckpt_file_name' must be string, but got number.",
      err(function() cell.load_checkpoint(1) end))
    assert.is_truthy(err(function() cell.load_checkpoint(tmp, { specify_prefix = 3 }) end):find(
      "TypeError: For 'load_checkpoint', the type of 'specify_prefix' or 'filter_prefix' must be string", 1, true))
    assert.is_truthy(err(function() cell.load_checkpoint(tmp, { filter_prefix = {} }) end):find(
      "can't be empty", 1, true))
    assert.is_truthy(err(function() cell.load_checkpoint(tmp, { filter_prefix = { "" } }) end):find(
      "can't include ''", 1, true))
    assert.are.equal("TypeError: load_checkpoint() got an unexpected keyword argument 'nett'; the options are net, strict_load, "
      .. "filter_prefix, dec_key, dec_mode, specify_prefix, choice_func, crc_check, remove_redundancy, format",
      err(function() cell.load_checkpoint(tmp, { nett = 1 }) end))
    assert.are.equal("TypeError: For 'load_param_into_net', the argument 'net' should be a Cell, but got number.",
      err(function() cell.load_checkpoint(tmp, { net = 5 }) end))
    assert.is_truthy(err(function() cell.load_checkpoint(tmp, { format = "ckpt" }) end):find(
      "cell reads safetensors files only", 1, true))
    assert.is_truthy(err(function() cell.load_checkpoint(tmp, { dec_key = "k" }) end):find("'dec_key'", 1, true))
  end)
end)

describe("load_param_into_net", function()
  it("copies values into the net's own Parameters and reports what was not loaded", function()
    local src, dst = Net(), Net()
    local w = dst.fc1.weight
    local d = src:parameters_dict()
    d["fc2.bias"] = nil
    d.unused = cell.Parameter(cell.ones({ 1 }), "unused")
    local param_not_load, ckpt_not_load = cell.load_param_into_net(dst, d)
    assert.are.same({ "fc2.bias", "steps" }, param_not_load)
    assert.are.same({ "unused" }, ckpt_not_load)
    assert.are.equal(w, dst.fc1.weight) -- the same Parameter, new values
    H.assert_values(dst.fc1.weight, src.fc1.weight:totable())
  end)

  it("loads buffers by their state_dict keys, as save_checkpoint writes them", function()
    local src, dst = Net(), Net()
    src.steps:fill_(42)
    cell.save_checkpoint(src, tmp)
    local a, b = cell.load_param_into_net(dst, cell.load_checkpoint(tmp))
    assert.are.same({}, a)
    assert.are.same({}, b)
    assert.are.equal(42, dst.steps:item())
  end)

  it("takes strict_load and remove_redundancy positionally or as a trailing table", function()
    local dst = nn.Dense(2, 1)
    local d = { weight = cell.tensor({ { 1, 2 } }, cell.float64), bias = cell.tensor({ 5 }) }
    local a = cell.load_param_into_net(dst, d, { strict_load = false, remove_redundancy = false })
    assert.are.same({}, a)
    H.assert_values(dst.weight, { { 1, 2 } })
    assert.are.same({}, (cell.load_param_into_net(dst, d, false, false)))
    H.expect_error(function() cell.load_param_into_net(dst, d, { strict_load = true }) end, "RuntimeError",
      "should have the same type")
    assert.are.equal("TypeError: load_param_into_net() got an unexpected keyword argument 'strict'; the options are "
      .. "strict_load, remove_redundancy", err(function() cell.load_param_into_net(dst, d, { strict = true }) end))
    assert.are.equal("TypeError: For 'load_param_into_net', the argument 'remove_redundancy' must be bool, but got "
      .. "number.", err(function() cell.load_param_into_net(dst, d, { remove_redundancy = 1 }) end))
    assert.are.equal("TypeError: load_param_into_net() takes at most 2 optional arguments, but 3 were given",
      err(function() cell.load_param_into_net(dst, d, false, false, 1) end))
  end)

  it("takes a plain table of Parameters or Tensors", function()
    local dst = nn.Dense(2, 1)
    local a, b = cell.load_param_into_net(dst, { weight = cell.tensor({ { 1, 2 } }), bias = cell.tensor({ 5 }) })
    assert.are.same({}, a)
    assert.are.same({}, b)
    H.assert_values(dst.weight, { { 1, 2 } })
    H.assert_values(dst.bias, { 5 })
  end)

  it("refuses a shape mismatch with a RuntimeError (MindSpore's _update_param) naming the parameter and both shapes", function()
    local dst = nn.Dense(2, 1)
    assert.are.equal("RuntimeError: For 'load_param_into_net', weight in the argument 'net' should have the same "
      .. "shape as weight in the argument 'parameter_dict'. But got its shape (1, 2) in the argument 'net' and "
      .. "shape (2, 2) in the argument 'parameter_dict'.May you need to check whether the checkpoint you loaded is "
      .. "correct or the batch size and so on in the 'net' and 'parameter_dict' are same.",
      err(function() cell.load_param_into_net(dst, { weight = cell.ones({ 2, 2 }) }) end))
    H.assert_values(dst.bias, dst.bias:totable()) -- still usable
  end)

  it("loads (out, in, 1, 1) data into (out, in), as MindSpore's GE special case", function()
    local dst = nn.Dense(2, 3)
    cell.load_param_into_net(dst, { weight = cell.arange(6):reshape({ 3, 2, 1, 1 }):float() })
    H.assert_values(dst.weight, { { 0, 1 }, { 2, 3 }, { 4, 5 } })
  end)

  it("converts between float dtypes and between int dtypes unless strict_load", function()
    local dst = nn.Dense(2, 1)
    cell.load_param_into_net(dst, { weight = cell.tensor({ { 0.5, 1.5 } }, cell.float64) })
    assert.are.equal("float32", dst.weight.dtype.name)
    H.assert_values(dst.weight, { { 0.5, 1.5 } })
    assert.are.equal("RuntimeError: For 'load_param_into_net', weight in the argument 'net' should have the same "
      .. "type as weight in the argument 'parameter_dict'. but got its type Float32 in the argument 'net' and type "
      .. "Float64 in the argument 'parameter_dict'.May you need to check whether the checkpoint you loaded is correct.",
      err(function() cell.load_param_into_net(dst, { weight = cell.ones({ 1, 2 }, cell.float64) }, true) end))
    assert.is_truthy(err(function() cell.load_param_into_net(dst, { weight = cell.ones({ 1, 2 }, cell.int32) }) end)
      :find("RuntimeError: For 'load_param_into_net', weight in the argument 'net' should have the same type", 1, true))
    local net = nn.Cell()
    net.count = cell.Parameter(cell.tensor({ 1 }, cell.int64), "count")
    cell.load_param_into_net(net, { count = cell.tensor({ 9 }, cell.int32) })
    assert.are.equal(9, net.count[1])
    assert.is_truthy(err(function() cell.load_param_into_net(net, { count = cell.tensor({ 9 }, cell.uint8) }) end)
      :find("RuntimeError", 1, true)) -- uint8 is not among MindSpore's int types
  end)

  it("finds names under a prefix when strict_load is false (MindSpore's suffix rule)", function()
    local src = Net()
    cell.save_checkpoint(src, tmp)
    local d = OrderedDict()
    for name, p in cell.load_checkpoint(tmp):items() do d["backbone." .. name] = p end
    local dst = Net()
    local a, b = cell.load_param_into_net(dst, d)
    assert.are.same({}, a)
    assert.are.same({}, b)
    H.assert_values(dst.fc2.weight, src.fc2.weight:totable())
    local strict_a, strict_b = cell.load_param_into_net(Net(), d, true)
    assert.are.same({ "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "steps" }, strict_a)
    assert.are.equal(5, #strict_b)
  end)

  it("checks its arguments", function()
    assert.are.equal("TypeError: For 'load_param_into_net', the argument 'net' should be a Cell, but got table.",
      err(function() cell.load_param_into_net({}, {}) end))
    assert.are.equal("TypeError: For 'load_param_into_net', the argument 'parameter_dict' should be a dict, but got "
      .. "string.", err(function() cell.load_param_into_net(Net(), "d") end))
    assert.are.equal("TypeError: For 'parameter_dict', the element in the argument 'parameter_dict' should be a "
      .. "'str' and 'Parameter' , but got string and number.", err(function() cell.load_param_into_net(Net(), { a = 1 }) end))
    assert.are.equal("TypeError: For 'load_param_into_net', the argument 'strict_load' must be bool, but got number.",
      err(function() cell.load_param_into_net(Net(), {}, 1) end))
  end)
end)
