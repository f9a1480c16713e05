-- cell.cuda's kernels beyond gemm and contiguous elementwise, against the
-- CPU's (the cross-device check of ops_cuda.lua, continued): strided and
-- broadcast elementwise, casts, reductions, max / argmax, softmax and
-- log-softmax with their gradients, layer norm forward and backward,
-- cross-entropy and nll_loss, conv2d (cuDNN) forward and backward,
-- embedding forward and backward, dropout (the CPU's mask: one Philox
-- stream), the fused SGD / Momentum / Adam / AdamW steps, batch norm
-- (training with the running-stats update, inference, gradients), max and
-- average pooling with their gradients, dense, reshape, copy_,
-- comparisons and the sum of bool, GELU / SiLU and autograd's gradient
-- formulas, scaled dot-product attention, and LeNet-5 and TinyGPT
-- training steps against the CPU's; float32 and
-- float64, contiguous and strided inputs. Runs only where
-- cell.cuda.is_available(); elsewhere it prints how many it skipped.
local cell = require "cell"
local cuda = require "cell.cuda"
local ops = cell.ops
local nn = cell.nn
local OI = require "cell.ops_internal"

local C = require "cuda.compare"
local close = C.close

local function G(t) return t:move_to("GPU") end

local cases = {}
local function case(name, f) cases[#cases + 1] = { name = name, f = f } end

local tol = { float32 = 1e-5, float64 = 1e-12 }

-- An input of shape s and dtype dt, contiguous or as a strided view (the
-- transpose of a contiguous tensor of the reversed last two dimensions).
local function input(s, dt, strided, lo, hi)
  local function make(shape)
    local t = cell.randn(shape):astype(cell[dt])
    if lo then t = t:abs() + lo end
    if hi then t = t:clamp(-hi, hi) end
    return t
  end
  if not strided or #s < 2 then return make(s) end
  local r = {}
  for i = 1, #s do r[i] = s[i] end
  r[#s - 1], r[#s] = s[#s], s[#s - 1]
  local t = make(r):transpose(#s - 1, #s)
  assert(not t:is_contiguous())
  return t
end

local shapes = { { 7 }, { 33, 65 }, { 3, 4, 129 } }
local layouts = { { "contiguous", false }, { "strided", true } }

-- Strided and broadcast elementwise (float32).
for _, op in ipairs { "add", "sub", "mul", "div", "maximum", "minimum" } do
  case("binary " .. op .. " strided and broadcast", function()
    local a = input({ 17, 31 }, "float32", true)
    local b = cell.randn { 31 }
    local c = cell.randn { 17, 1 }
    close(G(a)[op](G(a), G(b)), a[op](a, b), 1e-6, 1e-6)
    close(G(c)[op](G(c), G(a)), c[op](c, a), 1e-6, 1e-6)
    local x = cell.randn { 17, 31 }
    local gx = G(x)
    gx[op .. "_"](gx, G(b))
    close(gx, x[op](x, b), 1e-6, 1e-6)
  end)
end
for _, op in ipairs { "exp", "tanh", "sigmoid", "relu", "neg", "abs" } do
  case("unary " .. op .. " strided", function()
    local a = input({ 9, 40 }, "float32", true)
    close(G(a)[op](G(a)), a[op](a), 2e-6, 1e-6)
  end)
end

case("binary with a scalar: both orders, strided, in place", function()
  local a = input({ 9, 40 }, "float32", true)
  local g = G(a)
  close(g * 2.5, a * 2.5, 1e-6, 1e-6)
  close(3 - g, 3 - a, 1e-6, 1e-6)
  close(g / 3, a / 3, 1e-6, 1e-6)
  close(1 / (g:abs() + 1), 1 / (a:abs() + 1), 1e-6, 1e-6)
  local x = cell.randn { 5, 6 }
  local gx = G(x)
  gx:mul_(2)
  gx:add_(1)
  close(gx, x * 2 + 1, 1e-6, 1e-6)
end)

-- Casts and copies, every pair among the float and integer dtypes, both layouts.
local cast_dts = { "float32", "float64", "float16", "bfloat16", "int32", "int64" }
for _, from in ipairs(cast_dts) do
  for _, lay in ipairs(layouts) do
    case(("astype from %s (%s)"):format(from, lay[1]), function()
      local a = (input({ 13, 21 }, "float32", lay[2]) * 50):astype(cell[from])
      local g = G(a)
      close(g:contiguous(), a:contiguous(), 0, 0)
      close(g:clone(), a:clone(), 0, 0)
      for _, to in ipairs(cast_dts) do close(g:astype(cell[to]), a:astype(cell[to]), 0, 0) end
    end)
  end
end

-- Reductions.
for _, dt in ipairs { "float32", "float64" } do
  for _, s in ipairs(shapes) do
    for _, lay in ipairs(layouts) do
      case(("reductions %s %s %s"):format(dt, table.concat(s, "x"), lay[1]), function()
        local a = input(s, dt, lay[2])
        local g = G(a)
        local t = tol[dt] * 10
        for _, op in ipairs { "sum", "mean", "max", "min" } do
          close(g[op](g), a[op](a), t, t)
          close(g[op](g, 1), a[op](a, 1), t, t)
          close(g[op](g, -1, true), a[op](a, -1, true), t, t)
        end
        local p = input(s, dt, lay[2], 0.9, nil):clamp(0.9, 1.1)
        close(G(p):prod(-1), p:prod(-1), t, t)
        if #s >= 2 then close(g:sum { 1, #s }, a:sum { 1, #s }, t, t) end
      end)
      case(("max / min / argmax with indices %s %s %s"):format(dt, table.concat(s, "x"), lay[1]), function()
        local a = input(s, dt, lay[2])
        local g = G(a)
        for _, d in ipairs { 1, -1 } do
          local gv, gi = g:max(d)
          local cv, ci = a:max(d)
          close(gv, cv, 0, 0)
          close(gi, ci, 0, 0)
          gv, gi = g:min(d)
          cv, ci = a:min(d)
          close(gv, cv, 0, 0)
          close(gi, ci, 0, 0)
          close(g:argmax(d), a:argmax(d), 0, 0)
          close(g:argmin(d), a:argmin(d), 0, 0)
        end
        close(g:argmax(), a:argmax(), 0, 0)
        close(g:argmin(), a:argmin(), 0, 0)
      end)
    end
  end
end

case("max of an empty dimension is a ValueError; sum of one is 0", function()
  local e = G(cell.zeros { 3, 0 })
  local ok, err = pcall(function() return e:max(2) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError", 1, true), tostring(err))
  close(e:sum(2), cell.zeros { 3 }, 0, 0)
end)

-- Softmax and log-softmax, and their gradients through autograd.
for _, dt in ipairs { "float32", "float64" } do
  for _, s in ipairs(shapes) do
    for _, lay in ipairs(layouts) do
      case(("softmax / log_softmax %s %s %s"):format(dt, table.concat(s, "x"), lay[1]), function()
        local a = input(s, dt, lay[2]) * 4
        for _, d in ipairs { 1, -1 } do
          close(ops.softmax(G(a), d), ops.softmax(a, d), tol[dt], tol[dt])
          close(ops.log_softmax(G(a), d), ops.log_softmax(a, d), tol[dt], tol[dt])
        end
      end)
    end
  end
end

case("softmax and log_softmax gradients", function()
  local x, w = cell.randn { 6, 11 }, cell.randn { 6, 11 }
  for _, f in ipairs { ops.softmax, ops.log_softmax } do
    local function loss(a, b) return (f(a, -1) * b):sum() end
    local gc = cell.grad(loss, 1)(x, w)
    local gg = cell.grad(loss, 1)(G(x), G(w))
    close(gg, gc, 1e-5, 1e-6)
  end
end)

-- Layer norm.
for _, dt in ipairs { "float32", "float64" } do
  for _, lay in ipairs(layouts) do
    case(("layer_norm %s %s"):format(dt, lay[1]), function()
      local x = input({ 5, 7, 48 }, dt, lay[2]) * 3 + 1
      local w, b = cell.randn({ 48 }):astype(cell[dt]), cell.randn({ 48 }):astype(cell[dt])
      close(ops.layer_norm(G(x), 1, G(w), G(b)), ops.layer_norm(x, 1, w, b), tol[dt] * 10, tol[dt] * 10)
      close(ops.layer_norm(G(x), 2, nil, nil), ops.layer_norm(x, 2, nil, nil), tol[dt] * 10, tol[dt] * 10)
    end)
  end
end

case("layer_norm gradients of the input, weight and bias", function()
  local x, w, b, r = cell.randn { 4, 6, 32 }, cell.randn { 32 }, cell.randn { 32 }, cell.randn { 4, 6, 32 }
  local function loss(a, ww, bb, rr) return (ops.layer_norm(a, 1, ww, bb) * rr):sum() end
  local gc = cell.grad(loss, { 1, 2, 3 })(x, w, b, r)
  local gg = cell.grad(loss, { 1, 2, 3 })(G(x), G(w), G(b), G(r))
  for i = 1, 3 do close(gg[i], gc[i], 1e-4, 1e-5) end
end)

-- Embedding.
for _, idt in ipairs { "int64", "int32" } do
  for _, dt in ipairs { "float32", "float64" } do
    case(("embedding %s ids, %s table"):format(idt, dt), function()
      local w = cell.randn({ 50, 24 }):astype(cell[dt])
      local ids = cell.randint(1, 51, { 7, 9 }):astype(cell[idt])
      close(ops.embedding(G(ids), G(w)), ops.embedding(ids, w), 0, 0)
      local st = cell.randint(1, 51, { 9, 7 }):astype(cell[idt]):transpose(1, 2)
      close(ops.embedding(G(st), G(w)), ops.embedding(st, w), 0, 0)
    end)
  end
end

case("embedding: an id out of range is the CPU's IndexError", function()
  local w = cell.randn { 4, 3 }
  local ids = cell.tensor({ 1, 9, 2 }, cell.int64)
  local _, cerr = pcall(ops.embedding, ids, w)
  local ok, gerr = pcall(ops.embedding, G(ids), G(w))
  assert.is_false(ok)
  assert.is_truthy(tostring(gerr):find("IndexError: embedding: id 9 is out of range for a table of 4 rows (expected 1..4)", 1, true),
    tostring(gerr))
  assert.is_truthy(tostring(cerr):find("id 9 is out of range", 1, true))
  close(ops.embedding(G(cell.tensor({ 4 }, cell.int64)), G(w)), ops.embedding(cell.tensor({ 4 }, cell.int64), w), 0, 0)
end)

case("embedding gradient: repeated ids add up (atomicAdd)", function()
  local w = cell.randn { 10, 16 }
  local ids = cell.tensor({ { 1, 3, 3, 10 }, { 3, 1, 2, 3 } }, cell.int64)
  local r = cell.randn { 2, 4, 16 }
  local function loss(ww, rr) return (ops.embedding(ids:move_to(ww.device), ww) * rr):sum() end
  local gc = cell.grad(loss, 1)(w, r)
  local gg = cell.grad(loss, 1)(G(w), G(r))
  close(gg, gc, 1e-5, 1e-6)
end)

-- Dropout: the CPU's mask for the same seed, at any size.
for _, dt in ipairs { "float32", "float64" } do
  for _, n in ipairs { 1, 5, 4099, 1000003 } do
    case(("dropout %s of %d elements: the CPU's mask"):format(dt, n), function()
      local x = cell.randn({ n }):astype(cell[dt])
      cell.set_seed(77)
      local c = ops.dropout(x, 0.3)
      cell.set_seed(77)
      local g = ops.dropout(G(x), 0.3)
      close(g, c, 0, 0)
    end)
  end
end

case("dropout gradient: the forward's mask again", function()
  local x = cell.randn { 8, 33 }
  local function loss(a)
    cell.set_seed(5)
    return (ops.dropout(a, 0.4) * a):sum()
  end
  close(cell.grad(loss, 1)(G(x)), cell.grad(loss, 1)(x), 1e-5, 1e-6)
end)

-- Cross-entropy and nll_loss: class ids (with weights, ignore_index, label
-- smoothing) and probabilities, every reduction, and their gradients.
local function ce_inputs(shape, dt, probs)
  local x = (cell.randn(shape) * 3):astype(cell[dt])
  local c = #shape == 1 and shape[1] or shape[2]
  if probs then return x, ops.softmax(cell.randn(shape), #shape == 1 and 1 or 2):astype(cell[dt]), c end
  local tshape = {}
  for d = 1, #shape do
    if d ~= (#shape == 1 and 1 or 2) then tshape[#tshape + 1] = shape[d] end
  end
  local t = #tshape == 0 and cell.tensor(2, cell.int64) or cell.randint(1, c + 1, tshape)
  return x, t, c
end

for _, dt in ipairs { "float32", "float64" } do
  for _, shape in ipairs { { 8, 5 }, { 4, 7, 3 }, { 6 } } do
    for _, probs in ipairs { false, true } do
      for _, red in ipairs { "mean", "sum", "none" } do
        case(("cross_entropy %s %s %s %s"):format(dt, table.concat(shape, "x"), probs and "probabilities" or "class ids", red), function()
          local x, t, c = ce_inputs(shape, dt, probs)
          local w = (cell.rand { c } + 0.5):astype(cell[dt])
          for _, o in ipairs {
            { reduction = red },
            { reduction = red, weight = w },
            { reduction = red, weight = w, label_smoothing = 0.2 },
            probs and { reduction = red } or { reduction = red, ignore_index = 2 },
          } do
            local go = {}
            for k, v in pairs(o) do go[k] = v end
            if go.weight then go.weight = G(go.weight) end
            close(ops.cross_entropy(G(x), G(t), go), ops.cross_entropy(x, t, o), tol[dt] * 10, tol[dt] * 10)
            local function loss(a, b, opts) return (ops.cross_entropy(a, b, opts) * 1.5):sum() end
            local pos = probs and { 1, 2 } or 1
            local gc = cell.grad(loss, pos)(x, t, o)
            local gg = cell.grad(loss, pos)(G(x), G(t), go)
            if probs then
              close(gg[1], gc[1], tol[dt] * 10, tol[dt] * 10)
              close(gg[2], gc[2], tol[dt] * 10, tol[dt] * 10)
            else
              close(gg, gc, tol[dt] * 10, tol[dt] * 10)
            end
          end
        end)
      end
    end
    case(("nll_loss %s %s"):format(dt, table.concat(shape, "x")), function()
      local x, t, c = ce_inputs(shape, dt, false)
      local lp = ops.log_softmax(x, #shape == 1 and 1 or 2)
      local w = (cell.rand { c } + 0.5):astype(cell[dt])
      for _, red in ipairs { "mean", "sum", "none" } do
        for _, o in ipairs { { reduction = red }, { reduction = red, weight = w, ignore_index = 1 } } do
          local go = { reduction = o.reduction, ignore_index = o.ignore_index, weight = o.weight and G(o.weight) }
          close(ops.nll_loss(G(lp), G(t), go), ops.nll_loss(lp, t, o), tol[dt] * 10, tol[dt] * 10)
          local function loss(a, b, opts) return (ops.nll_loss(a, b, opts) * 1.5):sum() end
          close(cell.grad(loss, 1)(G(lp), G(t), go), cell.grad(loss, 1)(lp, t, o), tol[dt] * 10, tol[dt] * 10)
        end
      end
    end)
  end
end

case("cross_entropy: a class id out of range is the CPU's IndexError", function()
  local x, t = cell.randn { 3, 4 }, cell.tensor({ 1, 5, 2 }, cell.int64)
  local ok, err = pcall(ops.cross_entropy, G(x), G(t))
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("IndexError: cross_entropy: target 5 is out of range for 4 classes", 1, true),
    tostring(err))
  local _, cerr = pcall(ops.cross_entropy, x, t)
  assert.is_truthy(tostring(cerr):find("target 5 is out of range for 4 classes", 1, true), tostring(cerr))
end)

-- conv2d through cuDNN: forward and the three gradients, per dtype, with
-- stride, symmetric padding, dilation and groups; strided inputs.
for _, dt in ipairs { "float32", "float64" } do
  for _, cfg in ipairs {
    { "3x3", { 2, 3, 9, 11 }, { 4, 3, 3, 3 }, {} },
    { "stride 2, padding 1", { 3, 4, 12, 10 }, { 6, 4, 3, 3 }, { stride = { 2, 2 }, padding = { 1, 1, 1, 1 } } },
    { "dilation 2, groups 2", { 2, 4, 13, 13 }, { 6, 2, 3, 2 }, { dilation = { 2, 1 }, groups = 2, padding = { 2, 2, 0, 0 } } },
    { "1x1", { 5, 8, 4, 4 }, { 3, 8, 1, 1 }, {} },
  } do
    case(("conv2d %s %s"):format(cfg[1], dt), function()
      local x = cell.randn(cfg[2]):astype(cell[dt])
      local w = (cell.randn(cfg[3]) * 0.3):astype(cell[dt])
      local b = cell.randn({ cfg[3][1] }):astype(cell[dt])
      local t = dt == "float32" and 1e-4 or 1e-10
      close(ops.conv2d(G(x), G(w), G(b), cfg[4]), ops.conv2d(x, w, b, cfg[4]), t, t)
      close(ops.conv2d(G(x), G(w), nil, cfg[4]), ops.conv2d(x, w, nil, cfg[4]), t, t)
      local xs = x:transpose(3, 4):contiguous():transpose(3, 4)
      close(ops.conv2d(G(xs), G(w), G(b), cfg[4]), ops.conv2d(x, w, b, cfg[4]), t, t)
      local y = ops.conv2d(x, w, b, cfg[4])
      local r = cell.randn(y.shape):astype(cell[dt])
      local function loss(a, ww, bb, rr) return (ops.conv2d(a, ww, bb, cfg[4]) * rr):sum() end
      local gc = cell.grad(loss, { 1, 2, 3 })(x, w, b, r)
      local gg = cell.grad(loss, { 1, 2, 3 })(G(x), G(w), G(b), G(r))
      for i = 1, 3 do close(gg[i], gc[i], t * 10, t * 10) end
    end)
  end
end

case("conv2d: padding that differs between sides is declined (cuDNN pads both alike)", function()
  local x, w = cell.randn { 1, 2, 6, 6 }, cell.randn { 3, 2, 3, 3 }
  local ok, err = pcall(ops.conv2d, G(x), G(w), nil, { padding = { 1, 0, 0, 1 } })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("NotImplementedError: .*not supported on device GPU"), tostring(err))
end)

-- Fused optimizer steps: three steps on GPU and CPU copies.
for _, dt in ipairs { "float32", "float64" } do
  for _, cfg in ipairs {
    { "sgd", 0, 0, 0, false },
    { "momentum", 0.9, 0, 0.01, false },
    { "nesterov", 0.9, 0, 0, true },
    { "momentum with dampening", 0.8, 0.1, 0, false },
  } do
    case(("%s step %s"):format(cfg[1], dt), function()
      local p = cell.randn({ 37, 5 }):astype(cell[dt])
      local b = cell.zeros({ 37, 5 }):astype(cell[dt])
      local gp, gb = G(p), G(b)
      for step = 1, 3 do
        local g = cell.randn({ 37, 5 }):astype(cell[dt])
        local buf = cfg[2] ~= 0 and b or nil
        local gbuf = cfg[2] ~= 0 and gb or nil
        OI.sgd_step(p, g, buf, 0.1, cfg[2], cfg[3], cfg[4], cfg[5], step == 1, 0.5)
        OI.sgd_step(gp, G(g), gbuf, 0.1, cfg[2], cfg[3], cfg[4], cfg[5], step == 1, 0.5)
      end
      close(gp, p, tol[dt], tol[dt])
      if cfg[2] ~= 0 then close(gb, b, tol[dt], tol[dt]) end
    end)
  end
  for _, decoupled in ipairs { false, true } do
    case(("%s step %s"):format(decoupled and "adamw" or "adam", dt), function()
      local p = cell.randn({ 129 }):astype(cell[dt])
      local m, v = cell.zeros({ 129 }):astype(cell[dt]), cell.zeros({ 129 }):astype(cell[dt])
      local gp, gm, gv = G(p), G(m), G(v)
      for step = 1, 3 do
        local g = cell.randn({ 129 }):astype(cell[dt])
        OI.adam_step(p, g, m, v, 0.01, 0.9, 0.999, 1e-8, 0.1, step, decoupled, 1)
        OI.adam_step(gp, G(g), gm, gv, 0.01, 0.9, 0.999, 1e-8, 0.1, step, decoupled, 1)
      end
      close(gp, p, tol[dt] * 10, tol[dt] * 10)
      close(gm, m, tol[dt] * 10, tol[dt] * 10)
      close(gv, v, tol[dt] * 10, tol[dt] * 10)
    end)
  end
end

-- Batch norm (issue 16's CNN rows): training forward with the running
-- statistics updated on the device, inference, strided inputs, 2-D to 5-D
-- inputs, and the gradients of the input, weight and bias.
for _, dt in ipairs { "float32", "float64" } do
  for _, s in ipairs { { 6, 5 }, { 4, 3, 7 }, { 3, 4, 5, 6 }, { 2, 3, 2, 3, 4 } } do
    for _, lay in ipairs(layouts) do
      case(("batch_norm %s %s %s"):format(dt, table.concat(s, "x"), lay[1]), function()
        local x = input(s, dt, lay[2]) * 2 + 0.5
        local c = s[2]
        local w, b = cell.randn({ c }):astype(cell[dt]), cell.randn({ c }):astype(cell[dt])
        local rm, rv = cell.randn({ c }):astype(cell[dt]), (cell.rand({ c }) + 0.5):astype(cell[dt])
        local grm, grv = G(rm), G(rv)
        local t = tol[dt] * 10
        for _, o in ipairs { { training = true, momentum = 0.1 }, { training = true, momentum = 0.3, eps = 1e-3 } } do
          close(ops.batch_norm(G(x), grm, grv, G(w), G(b), o), ops.batch_norm(x, rm, rv, w, b, o), t, t)
          close(grm, rm, t, t) -- the running statistics moved the same way
          close(grv, rv, t, t)
        end
        close(ops.batch_norm(G(x), grm, grv, G(w), G(b), { training = false }),
          ops.batch_norm(x, rm, rv, w, b, { training = false }), t, t)
        close(ops.batch_norm(G(x), grm, grv, nil, nil, { training = false }),
          ops.batch_norm(x, rm, rv, nil, nil, { training = false }), t, t)
      end)
    end
  end
end

for _, training in ipairs { true, false } do
  case(("batch_norm gradients of the input, weight and bias (%s)"):format(training and "training" or "inference"), function()
    local x, w, b, r = cell.randn { 4, 3, 5, 5 }, cell.randn { 3 }, cell.randn { 3 }, cell.randn { 4, 3, 5, 5 }
    local rm, rv = cell.randn { 3 }, cell.rand { 3 } + 0.5
    local function loss(a, ww, bb, rr, m, v)
      return (ops.batch_norm(a, m, v, ww, bb, { training = training }) * rr):sum()
    end
    local gc = cell.grad(loss, { 1, 2, 3 })(x, w, b, r, rm:clone(), rv:clone())
    local gg = cell.grad(loss, { 1, 2, 3 })(G(x), G(w), G(b), G(r), G(rm), G(rv))
    for i = 1, 3 do close(gg[i], gc[i], 1e-4, 1e-5) end
  end)
end

case("batch_norm: the CPU's errors (one value per channel, channel counts)", function()
  local ok, err = pcall(ops.batch_norm, G(cell.randn { 1, 3 }), G(cell.zeros { 3 }), G(cell.ones { 3 }), nil, nil,
    { training = true })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError: .*more than 1 value per channel"), tostring(err))
  ok, err = pcall(ops.batch_norm, G(cell.randn { 4, 3 }), G(cell.zeros { 2 }), G(cell.ones { 2 }), nil, nil,
    { training = true })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError", 1, true), tostring(err))
end)

case("nn.BatchNorm2d in training moves its running statistics on the GPU as on the CPU", function()
  local bc = nn.BatchNorm2d(4)
  local bg = nn.BatchNorm2d(4):move_to("GPU")
  bc:set_train(true)
  bg:set_train(true)
  local x = cell.randn { 5, 4, 3, 3 } * 3 + 1
  for _ = 1, 3 do
    close(bg(G(x)), bc(x), 1e-5, 1e-5)
  end
  close(bg.moving_mean, bc.moving_mean, 1e-5, 1e-6)
  close(bg.moving_variance, bc.moving_variance, 1e-5, 1e-6)
  assert.are_not.same(cell.zeros({ 4 }):totable(), bg.moving_mean:move_to("CPU"):totable())
end)

-- Pooling: max (with indices, dilation) and average (count_include_pad),
-- padding, ceil_mode, strided inputs, and their gradients.
local pool_cfgs = {
  { "2x2", 2, {} },
  { "3x3 stride 2 padding 1", 3, { stride = 2, padding = 1 } },
  { "3x2 stride 1", { 3, 2 }, { stride = 1 } },
  { "3x3 stride 2 ceil_mode", 3, { stride = 2, ceil_mode = true } },
  { "2x2 stride 2 padding 1 ceil_mode", 2, { stride = 2, padding = 1, ceil_mode = true } },
}
for _, dt in ipairs { "float32", "float64" } do
  for _, cfg in ipairs(pool_cfgs) do
    for _, lay in ipairs(layouts) do
      case(("max_pool2d and avg_pool2d %s %s %s"):format(cfg[1], dt, lay[1]), function()
        local x = input({ 2, 3, 9, 11 }, dt, lay[2])
        local mo = {}
        for k, v in pairs(cfg[3]) do mo[k] = v end
        mo.return_indices = true
        local gv, gi = ops.max_pool2d(G(x), cfg[2], mo)
        local cv, ci = ops.max_pool2d(x, cfg[2], mo)
        close(gv, cv, 0, 0)
        close(gi, ci, 0, 0)
        for _, cip in ipairs { true, false } do
          local ao = {}
          for k, v in pairs(cfg[3]) do ao[k] = v end
          ao.count_include_pad = cip
          close(ops.avg_pool2d(G(x), cfg[2], ao), ops.avg_pool2d(x, cfg[2], ao), tol[dt], tol[dt])
        end
        local r = cell.randn(cv.shape):astype(cell[dt])
        local function mloss(a, rr) return (ops.max_pool2d(a, cfg[2], cfg[3]) * rr):sum() end
        close(cell.grad(mloss, 1)(G(x), G(r)), cell.grad(mloss, 1)(x, r), tol[dt] * 10, tol[dt] * 10)
        for _, cip in ipairs { true, false } do
          local ao = {}
          for k, v in pairs(cfg[3]) do ao[k] = v end
          ao.count_include_pad = cip
          local ra = cell.randn(ops.avg_pool2d(x, cfg[2], ao).shape):astype(cell[dt])
          local function aloss(a, rr) return (ops.avg_pool2d(a, cfg[2], ao) * rr):sum() end
          close(cell.grad(aloss, 1)(G(x), G(ra)), cell.grad(aloss, 1)(x, ra), tol[dt] * 10, tol[dt] * 10)
        end
      end)
    end
  end
end

case("max_pool2d with dilation, and a NaN wins its window", function()
  local x = cell.randn { 1, 2, 10, 10 }
  local o = { stride = 1, dilation = 2, return_indices = true }
  local gv, gi = ops.max_pool2d(G(x), 3, o)
  local cv, ci = ops.max_pool2d(x, 3, o)
  close(gv, cv, 0, 0)
  close(gi, ci, 0, 0)
  local n = cell.tensor({ { { { 1, 0 / 0 }, { 3, 2 } } } })
  close(ops.max_pool2d(G(n), 2), ops.max_pool2d(n, 2), 0, 0)
end)

case("pooling: the CPU's ValueError for padding over half the kernel", function()
  local ok, err = pcall(ops.max_pool2d, G(cell.randn { 1, 1, 6, 6 }), 2, { padding = 2 })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError", 1, true), tostring(err))
end)

-- Dense (the linear row through cuBLAS) and its gradients.
for _, dt in ipairs { "float32", "float64" } do
  for _, s in ipairs { { 7, 13 }, { 3, 5, 13 }, { 2, 13 } } do
    for _, lay in ipairs(layouts) do
      case(("dense %s %s %s"):format(dt, table.concat(s, "x"), lay[1]), function()
        local x = input(s, dt, lay[2])
        local w, b = cell.randn({ 9, 13 }):astype(cell[dt]), cell.randn({ 9 }):astype(cell[dt])
        local wt = cell.randn({ 13, 9 }):astype(cell[dt]):transpose(1, 2) -- a strided weight
        local t = dt == "float32" and 1e-5 or 1e-12
        close(ops.dense(G(x), G(w), G(b)), ops.dense(x, w, b), t, t)
        close(ops.dense(G(x), G(w)), ops.dense(x, w), t, t)
        close(ops.dense(G(x), G(wt), G(b)), ops.dense(x, wt, b), t, t)
        local r = cell.randn(ops.dense(x, w, b).shape):astype(cell[dt])
        local function loss(a, ww, bb, rr) return (ops.dense(a, ww, bb) * rr):sum() end
        local gc = cell.grad(loss, { 1, 2, 3 })(x, w, b, r)
        local gg = cell.grad(loss, { 1, 2, 3 })(G(x), G(w), G(b), G(r))
        for i = 1, 3 do close(gg[i], gc[i], t * 10, t * 10) end
      end)
    end
  end
end

-- reshape: a view sharing the storage when the strides allow one, else a copy.
case("reshape and flatten: views where the CPU makes views, copies where it copies", function()
  local a = cell.randn { 4, 6 }
  local g = G(a)
  local v = g:reshape { 2, 12 }
  close(v, a:reshape { 2, 12 }, 0, 0)
  v:mul_(2) -- a view: the original changes too
  close(g, a * 2, 0, 0)
  local t = G(cell.randn { 3, 5 }):transpose(1, 2)
  local c = t:reshape { 15 }
  close(c, t:move_to("CPU"):reshape { 15 }, 0, 0)
  assert.are.same({ 24 }, G(cell.randn { 2, 3, 4 }):flatten().shape)
  local ok, err = pcall(function() return g:reshape { 5, 5 } end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError: .*cannot reshape"), tostring(err))
end)

case("copy_: broadcast and cast into a contiguous tensor", function()
  local d, s = cell.zeros { 3, 4 }, cell.randn { 4 }:astype(cell.float64)
  local gd = G(d)
  gd:copy_(G(s))
  d:copy_(s)
  close(gd, d, 0, 0)
end)

-- Comparisons to bool (any real dtypes) and the sum of a bool tensor: what
-- the accuracy metric runs.
case("comparisons and the sum of bool", function()
  local a, b = cell.randint(1, 4, { 5, 7 }), cell.randint(1, 4, { 7 })
  for _, op in ipairs { "eq", "ne", "lt", "le", "gt", "ge" } do
    close(G(a)[op](G(a), G(b)), a[op](a, b), 0, 0)
  end
  local x, y = cell.randn { 6, 3 }, cell.randn { 6, 3 }
  close(G(x):lt(G(y)), x:lt(y), 0, 0)
  close(G(a):eq(G(b)):sum(), a:eq(b):sum(), 0, 0)
  close(G(a):eq(G(b)):sum(1), a:eq(b):sum(1), 0, 0)
end)

-- GELU and SiLU, and autograd's gradient formulas (the ew row).
case("gelu and silu forward; the gradients of relu, gelu, silu, sigmoid, tanh, exp, clamp", function()
  local x = input({ 9, 40 }, "float32", true) * 3
  close(G(x):gelu(), x:gelu(), 1e-5, 1e-6)
  close(G(x):silu(), x:silu(), 1e-5, 1e-6)
  for _, f in ipairs {
    function(a) return a:relu() end,
    function(a) return a:gelu() end,
    function(a) return a:silu() end,
    function(a) return a:sigmoid() end,
    function(a) return a:tanh() end,
    function(a) return a:exp() end,
    function(a) return a:clamp(-1, 1) end,
  } do
    local r = cell.randn(x.shape)
    local function loss(a, rr) return (f(a) * rr):sum() end
    close(cell.grad(loss, 1)(G(x), G(r)), cell.grad(loss, 1)(x, r), 1e-5, 1e-5)
  end
end)

-- One LeNet-5 training step (conv, batch norm, ReLU, max pooling, Dense,
-- cross-entropy, Adam), on the GPU and on the CPU from the same weights.
case("a LeNet-5 training step on the GPU is the CPU's", function()
  package.path = "examples/lib/?.lua;" .. package.path
  local LeNet5 = require("models").LeNet5
  local x, y = cell.rand { 16, 1, 28, 28 }, cell.randint(1, 11, { 16 })
  local losses, nets = {}, {}
  for i, dev in ipairs { "CPU", "GPU" } do
    cell.set_seed(9)
    local net = LeNet5(10)
    local step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), nn.Adam(net:trainable_params(), 1e-3))
    step:move_to(dev) -- the network's parameters and buffers and the optimizer's state
    step:set_train(true)
    for _ = 1, 3 do losses[i] = step(x:move_to(dev), y:move_to(dev)) end
    nets[i] = net
  end
  close(losses[2], losses[1], 1e-4, 1e-5)
  close(nets[2].fc3.weight, nets[1].fc3.weight, 1e-4, 1e-5)
  close(nets[2].conv1.weight, nets[1].conv1.weight, 1e-4, 1e-5)
  close(nets[2].bn2.moving_mean, nets[1].bn2.moving_mean, 1e-4, 1e-5)
  assert.are_not.same(cell.zeros({ 16 }):totable(), nets[2].bn2.moving_mean:move_to("CPU"):totable())
end)

-- Scaled dot-product attention (no mask tensor, no dropout): forward and
-- the gradients of q, k and v, causal or not, strided inputs (the heads
-- split out of a {B, T, H, E} tensor, as nn.MultiheadAttention does).
for _, dt in ipairs { "float32", "float64" } do
  for _, causal in ipairs { false, true } do
    case(("scaled_dot_product_attention %s%s"):format(dt, causal and " causal" or ""), function()
      local function heads(s) return cell.randn(s):astype(cell[dt]):transpose(2, 3) end -- {B, H, T, E}, strided
      local q, k, v = heads { 2, 7, 3, 8 }, heads { 2, 9, 3, 8 }, heads { 2, 9, 3, 5 }
      if causal then k, v = heads { 2, 7, 3, 8 }, heads { 2, 7, 3, 5 } end
      local o = { is_causal = causal }
      local t = dt == "float32" and 1e-5 or 1e-12
      local sdpa = ops.scaled_dot_product_attention
      close(sdpa(G(q), G(k), G(v), o), sdpa(q, k, v, o), t, t)
      close(sdpa(G(q), G(k), G(v), { is_causal = causal, scale = 0.3 }), sdpa(q, k, v, { is_causal = causal, scale = 0.3 }), t, t)
      local r = cell.randn(sdpa(q, k, v, o).shape):astype(cell[dt])
      local function loss(a, b, c, rr) return (sdpa(a, b, c, o) * rr):sum() end
      local gc = cell.grad(loss, { 1, 2, 3 })(q, k, v, r)
      local gg = cell.grad(loss, { 1, 2, 3 })(G(q), G(k), G(v), G(r))
      for i = 1, 3 do close(gg[i], gc[i], t * 10, t * 10) end
    end)
  end
end

case("scaled_dot_product_attention: a mask tensor and dropout are declined (NotImplementedError)", function()
  local q = G(cell.randn { 1, 4, 8 })
  local ok, err = pcall(ops.scaled_dot_product_attention, q, q, q, { attn_mask = G(cell.ones({ 4, 4 }):astype(cell.bool)) })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("NotImplementedError: .*not supported on device GPU"), tostring(err))
  ok, err = pcall(ops.scaled_dot_product_attention, q, q, q, { dropout_p = 0.5 })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("NotImplementedError: .*not supported on device GPU"), tostring(err))
end)

-- One step of the benchmarks' tiny GPT (embeddings, pre-norm Transformer
-- blocks with causal attention and GELU, AdamW) on the GPU and the CPU.
case("a TinyGPT training step on the GPU is the CPU's", function()
  package.path = "examples/lib/?.lua;" .. package.path
  local lib = require "models"
  local x, y = cell.randint(1, 41, { 4, 16 }), cell.randint(1, 41, { 4, 16 })
  local losses, nets = {}, {}
  for i, dev in ipairs { "CPU", "GPU" } do
    cell.set_seed(5)
    local net = lib.TinyGPT(40, 16, 32, 4, 2)
    local step = nn.TrainOneStepCell(nn.WithLossCell(net, lib.SeqLoss(40)), nn.AdamW(net:trainable_params(), 1e-3))
    step:move_to(dev)
    step:set_train(true)
    for _ = 1, 2 do losses[i] = step(x:move_to(dev), y:move_to(dev)) end
    nets[i] = net
  end
  close(losses[2], losses[1], 1e-4, 1e-5)
  close(nets[2].head.weight, nets[1].head.weight, 1e-4, 1e-5)
  close(nets[2].tok.embedding_table, nets[1].tok.embedding_table, 1e-4, 1e-5)
end)

-- The fused steps of optim_step: three steps of each optimizer on the GPU
-- leave the parameter and the state where the CPU's do (float32 and
-- float64).
local optimizers = {
  { "RMSProp", function(ps) return nn.RMSProp(ps, 0.01) end },
  { "RMSProp centered, momentum", function(ps) return nn.RMSProp(ps, 0.01, 0.9, 0.5, 1e-8, false, true) end },
  { "Adagrad", function(ps) return nn.Adagrad(ps, 0.1, 0.01) end },
  { "Adadelta", function(ps) return nn.Adadelta(ps, 1.0) end },
  { "AdaMax", function(ps) return nn.AdaMax(ps, 0.01) end },
  { "AdamWeightDecay", function(ps) return nn.AdamWeightDecay(ps, 0.01, 0.9, 0.999, 1e-6, 0.1) end },
  { "FTRL", function(ps) return nn.FTRL(ps) end },
  { "ASGD", function(ps) return nn.ASGD(ps, 0.01) end },
  { "Rprop", function(ps) return nn.Rprop(ps, 0.01) end },
  { "Lion", function(ps) return nn.Lion(ps, 0.01) end },
  { "Adam amsgrad", function(ps) return nn.Adam(ps, 0.01, { use_amsgrad = true }) end },
  { "Adam nesterov", function(ps) return nn.Adam(ps, 0.01, { use_nesterov = true }) end },
}
for _, o in ipairs(optimizers) do
  for _, dt in ipairs { "float32", "float64" } do
    case(("%s step %s: the CPU's parameters"):format(o[1], dt), function()
      local w0 = cell.randn({ 3, 4 }):astype(cell[dt])
      local gs = {}
      for k = 1, 3 do gs[k] = cell.randn({ 3, 4 }):astype(cell[dt]) end
      local function run(dev)
        local w = cell.Parameter(w0:clone():move_to(dev), "w")
        local opt = o[2]({ w })
        opt:move_to(dev)
        for k = 1, 3 do opt({ gs[k]:move_to(dev) }) end
        return w
      end
      local wc = run("CPU")
      assert.is_true((wc - w0):abs():max():item() > 0, "the step moved the parameter")
      close(run("GPU"), wc, tol[dt] * 10, tol[dt] * 10)
    end)
  end
end

-- Lamb's step (it needs the norm of the whole parameter first) declines
-- cleanly: a NotImplementedError, the parameter left as it was.
case("Lamb declines its step (NotImplementedError), parameters unchanged", function()
  local w = cell.Parameter(G(cell.randn { 3, 4 }), "w")
  local opt = nn.Lamb({ w }, 0.01)
  opt:move_to("GPU") -- its state
  local before = w:move_to("CPU"):totable()
  local ok, err = pcall(opt, { G(cell.ones { 3, 4 }) })
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("NotImplementedError: .*not supported on device GPU"), tostring(err))
  assert.are.same(before, w:move_to("CPU"):totable())
end)

describe("cell.cuda's nn kernels on the GPU", function()
  C.run(cases, 4321, "nn specs", it, before_each)
end)
