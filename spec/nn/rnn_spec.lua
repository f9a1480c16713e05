-- rnn_spec.lua - nn.RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell against
-- PyTorch 1.13 (spec/fixtures/rnn_fixtures.lua, made by gen_rnn.py): the
-- same weights copied by name, outputs, final states and the gradients for
-- the input, the initial states and every weight, in float64 and float32;
-- float64 gradchecks of the layers on tiny sizes; MindSpore's parameter
-- names, shapes and init bounds; one error per misuse.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local fixtures = require "fixtures.rnn_fixtures"
local unpack = table.unpack or unpack

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

local function build(c, dt)
  local o = {}
  for k, v in pairs(c.opts) do o[k] = v end
  o.dtype = dt
  local net = nn[c.kind](c.input_size, c.hidden_size, o)
  for name, v in pairs(c.params) do
    net[name]:set_data(cell.tensor(v, dt))
  end
  return net
end

local function check(c, dt, tol)
  local net = build(c, dt)
  local names = sorted_keys(c.params)
  local weights = {}
  for i, name in ipairs(names) do weights[i] = net[name] end
  local x = cell.tensor(c.x, dt)
  local h0 = c.h0 and cell.tensor(c.h0, dt)
  local c0 = c.c0 and cell.tensor(c.c0, dt)
  local len = c.seq_length and cell.tensor(c.seq_length, cell.int64)
  local lstm = c.c0 ~= nil or c.kind == "LSTM"
  local function run(xx, hh, cc)
    local hx = hh
    if lstm and hh then hx = { hh, cc } end
    if c.cell then
      local r = net(xx, hx)
      if lstm then return nil, r[1], r[2] end
      return nil, r
    end
    local out, st = net(xx, hx, len)
    if lstm then return out, st[1], st[2] end
    return out, st
  end
  local out, hn, cn = run(x, h0, c0)
  if out then H.assert_close(out, c.out, tol, "output") end
  H.assert_close(hn, c.h_n, tol, "h_n")
  if c.c_n then H.assert_close(cn, c.c_n, tol, "c_n") end
  local s_out = c.s_out and cell.tensor(c.s_out, dt)
  local s_h, s_c = cell.tensor(c.s_h, dt), c.s_c and cell.tensor(c.s_c, dt)
  local function loss(xx, hh, cc)
    local o, h, cs = run(xx, hh, cc)
    local l = (h * s_h):sum()
    if o then l = l + (o * s_out):sum() end
    if cs then l = l + (cs * s_c):sum() end
    return l
  end
  local positions = { 1 }
  if h0 then positions[2] = 2 end
  if c0 then positions[3] = 3 end
  local g = cell.grad(loss, positions, weights)(x, h0, c0)
  H.assert_close(g[1][1], c.grads.x, tol, "gradient of x")
  if h0 then H.assert_close(g[1][2], c.grads.h0, tol, "gradient of h0") end
  if c0 then H.assert_close(g[1][3], c.grads.c0, tol, "gradient of c0") end
  for i, name in ipairs(names) do
    H.assert_close(g[2][i], c.grads.params[name], tol, "gradient of " .. name)
  end
end

describe("recurrent layers against PyTorch", function()
  for _, c in ipairs(fixtures) do
    it(c.name .. " (float64)", function() check(c, cell.float64, 1e-10) end)
    it(c.name .. " (float32)", function() check(c, cell.float32, 2e-4) end)
  end
end)

describe("recurrent layers", function()
  it("name their parameters as MindSpore, with U(-1/sqrt(H), 1/sqrt(H)) values", function()
    cell.set_seed(1)
    local net = nn.LSTM(3, 16, 2, true, false, 0, true)
    local names = {}
    for name, p in net:parameters_and_names() do
      names[#names + 1] = name
      assert.is_true(p:abs():max():item() <= 0.25)
    end
    assert.are.same({ "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
      "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1",
      "bias_ih_l1", "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
      "bias_hh_l1_reverse" }, names)
    assert.are.same({ 64, 3 }, net.weight_ih_l0.shape)
    assert.are.same({ 64, 32 }, net.weight_ih_l1.shape)
    assert.are.same({ 48, 16 }, nn.GRU(5, 16).weight_hh_l0.shape)
    assert.are.same({ 16 }, nn.RNN(5, 16).bias_ih_l0.shape)
    assert.is_nil(nn.GRU(5, 16, { has_bias = false }).bias_ih_l0)
    assert.are.same({ 12, 2 }, nn.LSTMCell(2, 3).weight_ih.shape)
    assert.are.equal("LSTM(input_size=3, hidden_size=16, num_layers=2, bidirectional=true)", tostring(net))
  end)

  it("take zero states by default and return MindSpore's tuples as tables", function()
    local lstm = nn.LSTM(2, 3, { dtype = cell.float64 })
    local x = cell.randn({ 4, 2, 2 }, cell.float64)
    local out, st = lstm(x)
    local z = cell.zeros({ 1, 2, 3 }, cell.float64)
    local out2, st2 = lstm(x, { z, z })
    H.assert_close(out, out2:totable(), 0)
    H.assert_close(st[1], st2[1]:totable(), 0)
    H.assert_close(st[2], st2[2]:totable(), 0)
    -- the last output is the final state
    H.assert_close(out:select(1, 4), st[1]:select(1, 1):totable(), 0)
    local gru = nn.GRUCell(2, 3)
    assert.are.same({ 3 }, gru(cell.ones({ 2 })).shape)
  end)

  it("apply dropout between layers only when training", function()
    cell.set_seed(5)
    local net = nn.GRU(3, 4, { num_layers = 2, dropout = 0.5, dtype = cell.float64 })
    local x = cell.randn({ 3, 2, 3 }, cell.float64)
    net:set_train(false)
    local a = net(x)
    local b = net(x)
    H.assert_close(a, b:totable(), 0)
    net:set_train(true)
    local c = net(x)
    assert.is_true((c - a):abs():max():item() > 1e-6)
  end)

  it("pass float64 gradchecks on tiny sizes", function()
    for _, kind in ipairs({ "RNN", "LSTM", "GRU" }) do
      local net = nn[kind](2, 2, { num_layers = 2, bidirectional = true, dtype = cell.float64 })
      local vals = {}
      for k = 1, 12 do vals[k] = math.sin(k * 1.3) end
      local function mk(v) return cell.tensor(v, cell.float64):reshape({ 3, 2, 2 }) end
      local len = cell.tensor({ 3, 2 }, cell.int64)
      local function f(xx) return (net(xx, nil, len) * cell.arange(1, 5, cell.float64)):sum() end
      local g = cell.grad(f)(mk(vals)):reshape({ -1 }):totable()
      local eps = 1e-6
      for k = 1, 12 do
        local vp, vm = {}, {}
        for i = 1, 12 do vp[i], vm[i] = vals[i], vals[i] end
        vp[k], vm[k] = vals[k] + eps, vals[k] - eps
        local num = (f(mk(vp)):item() - f(mk(vm)):item()) / (2 * eps)
        local got = g[k]
        assert.is_true(math.abs(num - got) < 1e-6, kind .. " element " .. k .. ": " .. num .. " vs " .. got)
      end
    end
  end)
end)

describe("recurrent layer misuse", function()
  it("rejects bad options", function()
    H.expect_error(function() nn.LSTM(0, 3) end, "ValueError", "input_size")
    H.expect_error(function() nn.LSTM(2, 1.5) end, "TypeError", "hidden_size")
    H.expect_error(function() nn.GRU(2, 3, { num_layers = 0 }) end, "ValueError", "num_layers")
    H.expect_error(function() nn.GRU(2, 3, { dropout = 1 }) end, "ValueError", "dropout")
    H.expect_error(function() nn.GRU(2, 3, { dropout = "x" }) end, "TypeError", "dropout")
    H.expect_error(function() nn.RNN(2, 3, { nonlinearity = "gelu" }) end, "ValueError", "nonlinearity", "gelu")
    H.expect_error(function() nn.RNN(2, 3, { batch_first = 1 }) end, "TypeError", "batch_first")
    H.expect_error(function() nn.LSTM(2, 3, { bidirectional = "yes" }) end, "TypeError", "bidirectional")
    H.expect_error(function() nn.LSTM(2, 3, { has_bias = 0 }) end, "TypeError", "has_bias")
    H.expect_error(function() nn.LSTM(2, 3, { hidden = 3 }) end, "TypeError", "hidden")
    H.expect_error(function() nn.RNNCell(2, 3, { nonlinearity = "sigmoid" }) end, "ValueError", "nonlinearity")
  end)

  it("rejects inputs of the wrong rank or size", function()
    local lstm = nn.LSTM(2, 3)
    H.expect_error(function() lstm(cell.ones({ 4, 2 })) end, "ValueError", "3-D", "(4, 2)")
    H.expect_error(function() lstm(cell.ones({ 4, 2, 5 })) end, "ValueError", "input_size (2)", "(4, 2, 5)")
    H.expect_error(function() lstm("x") end, "TypeError", "x")
    H.expect_error(function() lstm(cell.ones({ 4, 2, 2 }, cell.int64)) end, "TypeError", "float")
    H.expect_error(function() nn.GRUCell(2, 3)(cell.ones({ 4, 3 })) end, "ValueError", "GRUCell", "(4, 3)")
  end)

  it("rejects initial states of the wrong shape or kind", function()
    local lstm = nn.LSTM(2, 3, { num_layers = 2 })
    local x = cell.ones({ 4, 5, 2 })
    H.expect_error(function() lstm(x, { cell.zeros({ 1, 5, 3 }), cell.zeros({ 2, 5, 3 }) }) end, "ValueError",
      "h0", "(2, 5, 3)", "(1, 5, 3)")
    H.expect_error(function() lstm(x, { cell.zeros({ 2, 5, 3 }), cell.zeros({ 2, 4, 3 }) }) end, "ValueError", "c0")
    H.expect_error(function() lstm(x, cell.zeros({ 2, 5, 3 })) end, "TypeError", "{h0, c0}")
    H.expect_error(function() nn.GRU(2, 3)(x, cell.zeros({ 1, 5, 4 })) end, "ValueError", "hx", "(1, 5, 4)")
    H.expect_error(function() nn.GRU(2, 3)(x, cell.zeros({ 1, 5, 3 }, cell.float64)) end, "TypeError", "dtype")
    H.expect_error(function() nn.LSTMCell(2, 3)(cell.ones({ 5, 2 }), cell.zeros({ 5, 3 })) end, "TypeError", "{h, c}")
  end)

  it("rejects bad seq_length values", function()
    local gru = nn.GRU(2, 3)
    local x = cell.ones({ 4, 3, 2 })
    H.expect_error(function() gru(x, nil, cell.tensor({ 1, 5, 2 }, cell.int64)) end, "ValueError", "seq_length",
      "1..4", "5")
    H.expect_error(function() gru(x, nil, cell.tensor({ 0, 1, 2 }, cell.int64)) end, "ValueError", "seq_length", "0")
    H.expect_error(function() gru(x, nil, cell.tensor({ 1, 2 }, cell.int64)) end, "ValueError", "seq_length", "[3]")
    H.expect_error(function() gru(x, nil, cell.tensor({ 1.0, 2.0, 3.0 })) end, "TypeError", "seq_length", "integer")
    H.expect_error(function() gru(x, nil, "x") end, "TypeError", "seq_length")
  end)

  it("rejects a bad mode or argument in the functional op", function()
    local x, h = cell.ones({ 2, 1, 2 }), cell.zeros({ 1, 3 })
    H.expect_error(function() cell.core.nnops.rnn("ELMAN", x, h, nil, cell.ones({ 3, 2 }), cell.ones({ 3, 3 })) end,
      "ValueError", "mode", "ELMAN")
    H.expect_error(function() cell.core.nnops.rnn({}, x, h) end, "TypeError", "mode must be a string")
    H.expect_error(function() cell.core.nnops.rnn("LSTM", x, h, nil, cell.ones({ 12, 2 }), cell.ones({ 12, 3 })) end,
      "ValueError", "c0 is required")
    H.expect_error(function() cell.core.nnops.rnn("GRU", x, h, nil, cell.ones({ 9, 2 }), cell.ones({ 9, 3 }),
      cell.ones({ 9 })) end, "ValueError", "both or neither")
    H.expect_error(function() cell.core.nnops.rnn("GRU", x, h, nil, cell.ones({ 8, 2 }), cell.ones({ 9, 3 })) end,
      "ValueError", "w_ih", "[9, 2]")
  end)
end)
