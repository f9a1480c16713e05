-- amp_spec.lua - cell.amp: the precision each level gives each cell,
-- mixed-precision training against float32 (stated tolerances), the loss
-- scalers by hand, all_finite, the managers and build_train_network, and
-- bad levels and dtypes.
local H = require "helpers"
local cell = H.cell
local nn, amp = cell.nn, cell.amp

local function err(fn, ...) return H.caller_error("amp_spec%.lua", fn, ...) end

local Net = nn.Cell:extend("AmpSpecNet")
function Net:init()
  self.conv = nn.Conv2d(1, 4, 3)
  self.bn = nn.BatchNorm2d(4)
  self.fc = nn.Dense(4 * 6 * 6, 3)
end
function Net:construct(x) return self.fc(self.bn(self.conv(x)):relu():reshape({ x.shape[1], -1 })) end

local function dtype_seen(c)
  local seen = {}
  c:register_forward_hook(function(_, args, out)
    seen.input, seen.output = args[1].dtype, out.dtype
  end)
  return seen
end

describe("cell.amp.auto_mixed_precision", function()
  local x = cell.randn({ 2, 1, 6, 6 })

  it("O0 changes nothing", function()
    cell.set_seed(1)
    local net = Net()
    local ref = net(x)
    assert.are.equal(net, amp.auto_mixed_precision(net, "O0"))
    assert.are.equal(cell.float32, net(x).dtype)
    H.assert_close(net(x), ref:tolist(), 0)
  end)

  it("O1 computes the white-list cells in the low dtype and hands float32 on", function()
    cell.set_seed(1)
    local net = amp.auto_mixed_precision(Net(), "O1", cell.bfloat16)
    local fc, bn = dtype_seen(net.fc), dtype_seen(net.bn)
    local y = net(x)
    assert.are.equal(cell.float32, y.dtype)
    assert.are.equal(cell.bfloat16, fc.input)
    assert.are.equal(cell.bfloat16, fc.output) -- inside the cell; cast back after
    assert.are.equal(cell.float32, bn.input)
    -- the Dense's value is the bfloat16 computation: the float32 sums of the
    -- bfloat16 operands' products plus the bias, rounded to bfloat16 once
    local h = net.bn(net.conv(x)):relu():reshape({ 2, -1 })
    local bf, f32 = cell.bfloat16, cell.float32
    local want = (h:astype(bf):astype(f32):matmul(net.fc.weight:astype(bf):astype(f32).T)
      + net.fc.bias:astype(bf):astype(f32)):tolist()
    local got = net.fc(h)
    got = got:tolist()
    for i = 1, #want do
      for j = 1, #want[i] do
        local e, g = want[i][j], got[i][j]
        assert.is_true(math.abs(g - e) <= math.abs(e) * 2 ^ -8 + 1e-7,
          ("[%d, %d]: %.9g is not %.9g rounded to bfloat16"):format(i, j, g, e))
      end
    end
    assert.are.equal(cell.float32, net.fc.weight.dtype) -- the master stays float32
  end)

  it("O2 computes in the low dtype but keeps BatchNorm and losses in float32", function()
    cell.set_seed(1)
    local net = amp.auto_mixed_precision(Net(), "O2")
    local conv, bn, fc = dtype_seen(net.conv), dtype_seen(net.bn), dtype_seen(net.fc)
    local y = net(x)
    assert.are.equal(cell.float32, y.dtype) -- the network's own output back in float32 (MindSpore's _OutputTo32)
    assert.are.equal(cell.float16, fc.output) -- computed in float16
    assert.are.equal(cell.float16, conv.output)
    assert.are.equal(cell.float32, bn.input)
    assert.are.equal(cell.float32, bn.output)
    assert.are.equal(cell.float16, net.bn(x:astype(cell.float16):expand({ 2, 4, 6, 6 })).dtype) -- back to float16
    assert.are.equal(cell.float16, fc.input)
    local wl = amp.auto_mixed_precision(nn.WithLossCell(Net(), nn.CrossEntropyLoss()), "O2", cell.bfloat16)
    local loss = wl(x, cell.tensor({ 1, 2 }, cell.int32))
    assert.are.equal(cell.float32, loss.dtype)
  end)

  it("O3 computes everything in the low dtype", function()
    local net = amp.auto_mixed_precision(Net(), "O3", cell.bfloat16)
    local bn, fc = dtype_seen(net.bn), dtype_seen(net.fc)
    assert.are.equal(cell.float32, net(x).dtype) -- the network's own output back in float32 (MindSpore's _OutputTo32)
    assert.are.equal(cell.bfloat16, fc.output)
    assert.are.equal(cell.bfloat16, bn.input)
    assert.are.equal(cell.bfloat16, bn.output)
  end)

  it("names bad levels, dtypes and networks", function()
    assert.are.equal("ValueError: For 'auto_mixed_precision', the 'amp_level' must be one of 'O0', 'O1', 'O2', "
      .. "'O3', but got 'O4'.", err(function() amp.auto_mixed_precision(Net(), "O4") end))
    assert.are.equal("ValueError: For 'auto_mixed_precision', the 'amp_level' must be one of 'O0', 'O1', 'O2', "
      .. "'O3', but got number.", err(function() amp.auto_mixed_precision(Net(), 2) end))
    assert.are.equal("ValueError: For 'auto_mixed_precision', the 'dtype' must be cell.float16 or cell.bfloat16, "
      .. "but got Float32.", err(function() amp.auto_mixed_precision(Net(), "O2", cell.float32) end))
    assert.are.equal("ValueError: For 'auto_mixed_precision', the 'dtype' must be cell.float16 or cell.bfloat16, "
      .. "but got string.", err(function() amp.auto_mixed_precision(Net(), "O2", "bf16") end))
    assert.are.equal("TypeError: For 'auto_mixed_precision', the 'network' must be a Cell, but got table.",
      err(function() amp.auto_mixed_precision({}, "O2") end))
  end)
end)

-- A small classifier trained by SGD from the same start in float32 and in
-- a low precision: the per-step losses agree within the stated tolerance.
local function train(level, dtype, steps, mgr)
  cell.set_seed(3)
  local net = nn.SequentialCell({ nn.Dense(8, 32), nn.ReLU(), nn.Dense(32, 4) })
  local xs, ys = cell.randn({ 64, 8 }), cell.randint(1, 5, { 64 })
  local step = amp.build_train_network(net, nn.Momentum(net:trainable_params(), 0.05, 0.9), nn.CrossEntropyLoss(),
    level, { cast_model_type = dtype, loss_scale_manager = mgr })
  local losses, skipped = {}, {}
  for i = 1, steps do
    local loss, overflow = step(xs, ys)
    losses[i], skipped[i] = loss:item(), overflow == true
  end
  return losses, net, skipped
end

describe("mixed-precision training against float32", function()
  local f32, net32 = train("O0", nil, 30)

  it("bfloat16 O2: losses within 0.005 of float32's; parameters stay float32", function()
    local bf, net = train("O2", cell.bfloat16, 30)
    assert.are.equal(cell.float32, net[1].weight.dtype)
    assert.is_true(f32[30] < 0.8 * f32[1]) -- it learns
    for i = 1, 30 do
      assert.is_true(math.abs(bf[i] - f32[i]) <= 0.005, ("step %d: %g vs %g"):format(i, bf[i], f32[i]))
    end
    -- weights after 30 steps: within 0.01 of float32's (bfloat16 keeps 8 bits;
    -- the float32 masters take every update unrounded)
    local d = (net[1].weight - net32[1].weight):abs():max():item()
    assert.is_true(d < 0.01, "max weight difference " .. d)
  end)

  it("float16 O2 with a dynamic loss scale: overflowing steps are skipped, then it follows float32", function()
    -- the output gradients are at most 1/64 (mean over 64 rows); times 2^24
    -- they pass float16's largest value (65504): those steps are skipped and
    -- the scale halved until it fits, then the losses are float32's, late
    -- by the skipped steps, within 1e-3 (float16 keeps 11 bits)
    local f16, _, skipped = train("O2", cell.float16, 30, amp.DynamicLossScaleManager(2 ^ 24, 2, 1000))
    local k = 0
    while skipped[k + 1] do k = k + 1 end
    assert.is_true(k >= 3 and k <= 10, k .. " steps skipped")
    for i = k + 1, 30 do assert.is_false(skipped[i], "step " .. i) end
    for i = 1, k do assert.is_true(math.abs(f16[i] - f32[1]) <= 1e-3, ("step %d: %g vs %g"):format(i, f16[i], f32[1])) end
    for i = k + 1, 30 do
      assert.is_true(math.abs(f16[i] - f32[i - k]) <= 1e-3, ("step %d: %g vs %g"):format(i, f16[i], f32[i - k]))
    end
  end)

  it("O1 and O3 train too", function()
    for _, level in ipairs({ "O1", "O3" }) do
      local l = train(level, cell.bfloat16, 30)
      assert.is_true(math.abs(l[30] - f32[30]) <= 0.01, level .. ": " .. l[30] .. " vs " .. f32[30])
    end
  end)
end)

describe("cell.amp loss scalers", function()
  it("StaticLossScaler scales and unscales tensors and lists; adjust is a no-op", function()
    local s = amp.StaticLossScaler(8)
    H.assert_close(s:scale(cell.tensor({ 1, -2 })), { 8, -16 }, 0)
    local u = s:unscale({ cell.tensor({ 8 }), { cell.tensor({ 4, 2 }) } })
    H.assert_close(u[1], { 1 }, 0)
    H.assert_close(u[2][1], { 0.5, 0.25 }, 0)
    assert.is_false(s:adjust(false))
    H.assert_close(s.scale_value, 8, 0)
    assert.are.equal("StaticLossScaler(scale_value=8)", tostring(s))
  end)

  it("DynamicLossScaler grows after scale_window finite steps and shrinks (not below 1) on overflow", function()
    local s = amp.DynamicLossScaler(1024, 2, 3)
    assert.is_true(s:adjust(true))
    s:adjust(cell.tensor(true))
    H.assert_close(s.scale_value, 1024, 0)
    assert.are.equal(2, s.counter:item())
    s:adjust(true) -- the third in a row
    H.assert_close(s.scale_value, 2048, 0)
    assert.are.equal(0, s.counter:item())
    s:adjust(true)
    s:adjust(false) -- the count starts again
    H.assert_close(s.scale_value, 1024, 0)
    assert.are.equal(0, s.counter:item())
    s:adjust(true); s:adjust(true)
    H.assert_close(s.scale_value, 1024, 0)
    local low = amp.DynamicLossScaler(1.5, { scale_factor = 2, scale_window = 10 })
    low:adjust(false)
    H.assert_close(low.scale_value, 1, 0)
    H.assert_close(low:scale(cell.tensor({ 3 })), { 3 }, 0)
  end)

  it("all_finite sees infinities and NaNs in any tensor of the list", function()
    assert.is_true(amp.all_finite({ cell.ones({ 3 }), cell.zeros({ 2, 2 }, cell.float16) }))
    assert.is_false(amp.all_finite({ cell.ones({ 3 }), cell.tensor({ 1, 0 }) / 0 }))
    assert.is_false(amp.all_finite(cell.tensor({ 1, 0 / 0 })))
    assert.is_false(amp.all_finite({ cell.tensor({ 70000 }):astype(cell.float16) })) -- past float16's range
    assert.is_true(amp.all_finite({ cell.tensor({ 1, 2 }, cell.int32), cell.zeros({ 0 }) }))
    assert.is_true(amp.all_finite({}))
  end)

  it("scaler with value_and_grad: the README loop", function()
    local w = cell.Parameter(cell.tensor({ 1, 2 }), "w")
    local opt = nn.SGD({ w }, 0.5)
    local scaler = amp.DynamicLossScaler(2 ^ 10, 2, 1)
    local f = cell.value_and_grad(function(v) return scaler:scale((w * v):sum()) end, nil, { w })
    local _, grads = f(cell.tensor({ 3, 4 }))
    H.assert_close(grads[1], { 3 * 1024, 4 * 1024 }, 0)
    grads = scaler:unscale(grads)
    local finite = amp.all_finite(grads)
    assert.is_true(finite)
    opt(grads)
    scaler:adjust(finite)
    H.assert_close(w, { 1 - 1.5, 2 - 2 }, 0)
    H.assert_close(scaler.scale_value, 2048, 0)
  end)

  it("names bad arguments", function()
    assert.are.equal("ValueError: For 'StaticLossScaler', the 'scale_value' must be a finite number > 0, but got 0.",
      err(function() amp.StaticLossScaler(0) end))
    assert.are.equal("ValueError: For 'DynamicLossScaler', the 'scale_window' must be an integer >= 1, but got 1.5.",
      err(function() amp.DynamicLossScaler(4, 2, 1.5) end))
    assert.are.equal("ValueError: For 'DynamicLossScaler', the 'scale_factor' must be a finite number >= 1, but "
      .. "got nil.", err(function() amp.DynamicLossScaler(4) end))
    assert.are.equal("TypeError: For 'DynamicLossScaler.adjust', the 'grads_finite' must be a boolean or a "
      .. "one-element Tensor, but got string.", err(function() amp.DynamicLossScaler(4, 2, 2):adjust("yes") end))
    assert.are.equal("TypeError: For 'StaticLossScaler.scale', the 'inputs' must be a Tensor or a list of Tensors, "
      .. "but got number.", err(function() amp.StaticLossScaler(2):scale(3) end))
    assert.are.equal("TypeError: For 'all_finite', inputs[2] must be a Tensor, but got number.",
      err(function() amp.all_finite({ cell.ones({ 1 }), 5 }) end))
    assert.are.equal("TypeError: For 'all_finite', the 'inputs' must be a Tensor or a list of Tensors, but got nil.",
      err(function() amp.all_finite() end))
  end)
end)

describe("cell.amp.build_train_network", function()
  it("wraps by level: O2 gets a dynamic loss scale, O0 a plain TrainOneStepCell", function()
    local function opt(n) return nn.SGD(n:trainable_params(), 0.1) end
    local n0 = Net()
    local t0 = amp.build_train_network(n0, opt(n0), nn.CrossEntropyLoss())
    assert.are.equal("TrainOneStepCell", t0.cls_name)
    local n2 = Net()
    local t2 = amp.build_train_network(n2, opt(n2), nn.CrossEntropyLoss(), "O2")
    assert.are.equal("TrainOneStepWithLossScaleCell", t2.cls_name)
    H.assert_close(t2.scale_sense, 2 ^ 24, 0)
    local n3 = Net()
    local t3 = amp.build_train_network(n3, opt(n3), nn.CrossEntropyLoss(), "O3", {
      loss_scale_manager = amp.FixedLossScaleManager(64) })
    assert.are.equal("TrainOneStepWithLossScaleCell", t3.cls_name)
    H.assert_close(t3.scale_sense, 64, 0)
    local n4 = Net()
    local t4 = amp.build_train_network(n4, opt(n4), nn.CrossEntropyLoss(), "O2", {
      loss_scale_manager = amp.FixedLossScaleManager(64, false), keep_batchnorm_fp32 = false })
    assert.are.equal("TrainOneStepCell", t4.cls_name)
    assert.are.equal(64, t4.sens)
    local loss = t4(cell.randn({ 2, 1, 6, 6 }), cell.tensor({ 1, 3 }, cell.int32))
    assert.are.equal(cell.float32, loss.dtype)
    local mgr = amp.DynamicLossScaleManager(2 ^ 8, 4, 50)
    assert.are.equal(2 ^ 8, mgr:get_loss_scale())
    assert.are.equal("DynamicLossScaleUpdateCell", mgr:get_update_cell().cls_name)
  end)

  it("names bad arguments", function()
    local n = Net()
    local o = nn.SGD(n:trainable_params(), 0.1)
    assert.are.equal("ValueError: For 'build_train_network', the 'amp_level' must be one of 'O0', 'O1', 'O2', "
      .. "'O3', but got 'auto'.", err(function() amp.build_train_network(n, o, nil, "auto") end))
    assert.are.equal("TypeError: For 'build_train_network', the 'loss_scale_manager' must be a "
      .. "FixedLossScaleManager or a DynamicLossScaleManager, but got number.",
      err(function() amp.build_train_network(n, o, nil, "O2", { loss_scale_manager = 4 }) end))
    assert.are.equal("ValueError: For 'FixedLossScaleManager', the 'loss_scale' must be a finite number >= 1, but "
      .. "got 0.5.", err(function() amp.FixedLossScaleManager(0.5) end))
    assert.are.equal("TypeError: For 'build_train_network', the 'network' must be a Cell, but got nil.",
      err(function() amp.build_train_network(nil, o) end))
  end)
end)
