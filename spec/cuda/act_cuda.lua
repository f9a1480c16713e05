-- cell.cuda's rows beyond the first rounds against the CPU's: every fused
-- activation of cell.ops (forward and gradient), softplus, nan_to_num,
-- the float math unary ops, logsumexp, roll, diag, eye, dot,
-- bce_with_logits, interpolate, unfold /
-- fold, nonzero / masked_select / masked_scatter, conv3d /
-- conv_transpose3d, cumprod's gradient, median, unique, ctc_loss, the
-- random fills (rand, randn, randint, bernoulli, normal, multinomial: the
-- CPU's numbers for one seed) and integer arithmetic on uint8 / int8 /
-- int16 tensors; per dtype and for strided inputs. Runs only where
-- cell.cuda.is_available(); elsewhere it prints how many it skipped.
local cell = require "cell"
local cuda = require "cell.cuda"

local C = require "cuda.compare"
local close = C.close

local function G(t) return t:move_to("GPU") end

local cases = {}
local function case(name, f) cases[#cases + 1] = { name = name, f = f } end

local tol = { float32 = 2e-6, float64 = 1e-12, float16 = 2e-3, bfloat16 = 1.6e-2 }

-- name, the ops function, its options
local acts = {
  { "leaky_relu", function(x) return cell.ops.leaky_relu(x, 0.1) end },
  { "elu", function(x) return cell.ops.elu(x) end },
  { "selu", function(x) return cell.ops.selu(x) end },
  { "celu", function(x) return cell.ops.celu(x, 0.7) end },
  { "softsign", function(x) return cell.ops.softsign(x) end },
  { "mish", function(x) return cell.ops.mish(x) end },
  { "relu6", function(x) return cell.ops.relu6(x) end },
  { "hardswish", function(x) return cell.ops.hardswish(x) end },
  { "hardsigmoid", function(x) return cell.ops.hardsigmoid(x) end },
  { "logsigmoid", function(x) return cell.ops.logsigmoid(x) end },
  { "tanhshrink", function(x) return cell.ops.tanhshrink(x) end },
  { "hardtanh", function(x) return cell.ops.hardtanh(x, -0.5, 1.5) end },
  { "gelu tanh", function(x) return cell.ops.gelu(x, "tanh") end },
  { "softplus", function(x) return cell.ops.softplus(x, 2, 3) end },
}

for _, dt in ipairs { "float32", "float64", "float16", "bfloat16" } do
  for _, strided in ipairs { false, true } do
    case(("activations forward %s%s"):format(dt, strided and " strided" or ""), function()
      local x = (cell.randn({ 5, 7 }) * 3):astype(cell[dt])
      if strided then x = x:transpose(1, 2) end
      local t = tol[dt]
      for _, a in ipairs(acts) do
        local ok, err = pcall(close, a[2](G(x)), a[2](x), t, t)
        assert(ok, a[1] .. ": " .. tostring(err))
      end
    end)
  end
end

for _, dt in ipairs { "float32", "float64" } do
  case(("activation gradients %s, strided"):format(dt), function()
    local x = (cell.randn({ 6, 4 }) * 3):astype(cell[dt]):transpose(1, 2)
    local w = cell.randn({ 4, 6 }):astype(cell[dt])
    local t = dt == "float64" and 1e-12 or 1e-5
    for _, a in ipairs(acts) do
      local f = function(u, v) return (a[2](u) * v):sum() end
      local ok, err = pcall(close, cell.grad(f, 1)(G(x), G(w)), cell.grad(f, 1)(x, w), t, t)
      assert(ok, a[1] .. ": " .. tostring(err))
    end
  end)
end

case("activations refuse integers and bad parameters with the CPU's errors", function()
  local i = cell.tensor({ 1, 2, 3 }):astype(cell.int64)
  local function msg(f, x)
    local ok, e = pcall(f, x)
    assert.is_false(ok)
    return (tostring(e):gsub("^.-:%d+: ", ""))
  end
  assert.are.equal(msg(cell.ops.mish, i), msg(cell.ops.mish, G(i)))
  assert.are.equal(msg(cell.ops.softplus, i), msg(cell.ops.softplus, G(i)))
  local x = cell.randn { 3 }
  local function celu0(u) return cell.ops.celu(u, 0) end
  assert.is_truthy(msg(celu0, G(x)):find("ValueError: celu: alpha must not be 0", 1, true))
  assert.are.equal(msg(celu0, x), msg(celu0, G(x)))
end)

for _, dt in ipairs { "float32", "float64", "float16", "int32" } do
  case(("nan_to_num %s, defaults and given values, strided"):format(dt), function()
    local x
    if dt == "int32" then
      x = cell.randint(-5, 5, { 3, 4 }):astype(cell.int32)
    else
      x = cell.tensor({ { 0 / 0, 1 / 0, -1 / 0, 1.5 }, { -2, 0 / 0, 3, 1 / 0 }, { 4, 5, -1 / 0, 0 } })
        :astype(cell[dt])
    end
    local s = x:transpose(1, 2)
    close(G(x):nan_to_num(), x:nan_to_num(), 0, 0)
    close(G(s):nan_to_num(1, 2, -3), s:nan_to_num(1, 2, -3), 0, 0)
  end)
end

for _, dt in ipairs { "float32", "float64", "float16", "int64" } do
  case(("logsumexp %s over dims, keepdim, strided"):format(dt), function()
    local a = (cell.randn({ 4, 5, 6 }) * 4):astype(cell[dt])
    if dt == "int64" then a = cell.randint(-4, 4, { 4, 5, 6 }) end
    local t = (tol[dt] or 2e-6) * 2
    for _, x in ipairs { a, a:transpose(1, 3) } do
      close(G(x):logsumexp(), x:logsumexp(), t, t)
      close(G(x):logsumexp(2), x:logsumexp(2), t, t)
      close(G(x):logsumexp({ 1, 3 }, true), x:logsumexp({ 1, 3 }, true), t, t)
    end
  end)
end

case("logsumexp of infinities, NaN and an empty dim, and its gradient", function()
  local x = cell.tensor { { 1 / 0, 1 }, { -1 / 0, -1 / 0 }, { 0 / 0, 2 }, { 1000, 1000 } }
  close(G(x):logsumexp(2), x:logsumexp(2), 1e-6, 1e-6)
  local e = cell.zeros { 3, 0 }
  close(G(e):logsumexp(2), e:logsumexp(2), 0, 0)
  local a, w = cell.randn { 4, 6 }, cell.randn { 4 }
  local f = function(u, v) return (u:logsumexp(2) * v):sum() end
  close(cell.grad(f, 1)(G(a), G(w)), cell.grad(f, 1)(a, w), 1e-5, 1e-6)
end)

for _, dt in ipairs { "float32", "float64", "int64", "uint8", "bool", "float16" } do
  case(("roll %s: dims, negative and large shifts, flattened, strided"):format(dt), function()
    local a = cell.randint(0, 9, { 3, 4, 5 }):astype(cell[dt])
    for _, x in ipairs { a, a:transpose(1, 3) } do
      close(G(x):roll(2, 1), x:roll(2, 1), 0, 0)
      close(G(x):roll({ -1, 7 }, { 2, 3 }), x:roll({ -1, 7 }, { 2, 3 }), 0, 0)
      close(G(x):roll(13), x:roll(13), 0, 0)
      close(G(x):roll({ 1, 1 }, { 1, 1 }), x:roll({ 1, 1 }, { 1, 1 }), 0, 0)
    end
  end)
end

case("roll's gradient and its error for a bad dim", function()
  local a, w = cell.randn { 3, 4 }, cell.randn { 3, 4 }
  local f = function(u, v) return (u:roll(1, 2) * v):sum() end
  close(cell.grad(f, 1)(G(a), G(w)), cell.grad(f, 1)(a, w), 0, 0)
  local ok, err = pcall(function() return G(a):roll(1, 5) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("IndexError", 1, true), tostring(err))
end)

for _, dt in ipairs { "float32", "float64", "int32", "bool" } do
  case(("diag %s: vector to matrix and matrix to vector, offsets, strided"):format(dt), function()
    local v = cell.randint(0, 5, { 4 }):astype(cell[dt])
    local m = cell.randint(0, 5, { 4, 6 }):astype(cell[dt])
    for _, k in ipairs { 0, 2, -1, -5, 7 } do
      close(G(v):diag(k), v:diag(k), 0, 0)
      close(G(m):diag(k), m:diag(k), 0, 0)
      close(G(m:transpose(1, 2)):diag(k), m:transpose(1, 2):diag(k), 0, 0)
    end
    local s = cell.randint(0, 5, { 8 }):astype(cell[dt]):narrow(1, 2, 4)
    close(G(s):diag(1), s:diag(1), 0, 0)
  end)
end

case("eye, rand, randn and randint made on the GPU: the CPU's values for one seed", function()
  local specs = {
    function() return cell.eye(3) end,
    function() return cell.eye(2, 5, cell.int64) end,
    function() return cell.eye(4, 3, cell.bool) end,
    function() return cell.eye(0, 3) end,
    function() return cell.rand { 3, 5 } end,
    function() return cell.rand({ 7 }, cell.float64) end,
    function() return cell.rand({ 2, 3 }, cell.float16) end,
    function() return cell.randn { 5, 3 } end,
    function() return cell.randn({ 9 }, cell.float64) end,
    function() return cell.randint(-3, 7, { 4, 5 }) end,
    function() return cell.randint(0, 200, { 11 }, cell.uint8) end,
    function() return cell.randint(-1000, 1000, { 3 }, cell.float32) end,
  }
  for i, f in ipairs(specs) do
    cell.set_seed(7)
    local c = f()
    cell.set_seed(7)
    cell.set_device("GPU")
    local ok, g = pcall(f)
    cell.set_device("CPU")
    assert(ok, g)
    assert.are.equal("GPU:0", g.device, "case " .. i)
    local t = (c.dtype == cell.float32 or c.dtype == cell.float64) and 1e-12 or 0
    if c.dtype == cell.float32 then t = 1e-6 end
    close(g, c, t, t)
  end
end)

case("random fills continue the stream: two draws on the GPU are the CPU's two", function()
  cell.set_seed(3)
  local a1, a2 = cell.rand { 5 }, cell.randn { 3 }
  cell.set_seed(3)
  cell.set_device("GPU")
  local ok, err = pcall(function() return { cell.rand { 5 }, cell.randn { 3 } } end)
  cell.set_device("CPU")
  assert(ok, err)
  close(err[1], a1, 0, 0)
  close(err[2], a2, 1e-6, 1e-6)
end)

for _, dt in ipairs { "float32", "float64" } do
  case(("dot %s, strided, with its gradient"):format(dt), function()
    local a = cell.randn({ 10 }):astype(cell[dt])
    local b = cell.randn({ 20 }):astype(cell[dt]):narrow(1, 1, 10)
    local bs = cell.randn({ 10, 2 }):astype(cell[dt]):select(2, 2)
    local t = dt == "float64" and 1e-12 or 1e-5
    close(G(a):dot(G(b)), a:dot(b), t, t)
    close(G(a):dot(G(bs)), a:dot(bs), t, t)
    local f = function(u, v) return u:dot(v) end
    close(cell.grad(f, 1)(G(a), G(bs)), cell.grad(f, 1)(a, bs), t, t)
  end)
end

case("dot of mismatched lengths is the CPU's ValueError", function()
  local ok, err = pcall(function() return G(cell.randn { 3 }):dot(G(cell.randn { 4 })) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError: dot", 1, true), tostring(err))
end)

for _, dt in ipairs { "uint8", "int8", "int16" } do
  case(("%s with a number and with a tensor: the CPU's wrap-around and dtypes"):format(dt), function()
    local a = cell.randint(0, 100, { 3, 4 }):astype(cell[dt])
    local b = cell.randint(0, 100, { 4 }):astype(cell[dt])
    local s = a:transpose(1, 2)
    for _, x in ipairs { a, s } do
      close(G(x) + 200, x + 200, 0, 0)
      close(G(x) * 3, x * 3, 0, 0)
      close(G(x) - 7, x - 7, 0, 0)
      close(5 - G(x), 5 - x, 0, 0)
      close(G(x) / -3, x / -3, 1e-6, 1e-6)
      close(-3 / (G(x) + 1), -3 / (x + 1), 1e-6, 1e-6)
      close(G(x) * 0.5, x * 0.5, 1e-6, 1e-6)
      close(G(x):maximum(300), x:maximum(300), 0, 0)
    end
    close(G(a) + G(b), a + b, 0, 0)
    close(G(a) * G(b), a * b, 0, 0)
    local c = a:clone()
    local gc = G(a)
    c:add_(250)
    gc:add_(250)
    close(gc, c, 0, 0)
  end)
end

for _, dt in ipairs { "float32", "float64" } do
  case(("bce_with_logits %s: reductions, weight and pos_weight broadcast, strided, gradients"):format(dt), function()
    local x = (cell.randn({ 6, 4 }) * 3):astype(cell[dt]):transpose(1, 2)
    local y = cell.rand({ 4, 6 }):astype(cell[dt])
    local w = cell.rand({ 6 }):astype(cell[dt])
    local pw = (cell.rand({ 4, 1 }) * 3):astype(cell[dt])
    local t = dt == "float64" and 1e-12 or 2e-6
    for _, red in ipairs { "none", "sum", "mean" } do
      for _, o in ipairs { {}, { weight = w }, { pos_weight = pw }, { weight = w, pos_weight = pw } } do
        local go = { reduction = red, weight = o.weight and G(o.weight), pos_weight = o.pos_weight and G(o.pos_weight) }
        local co = { reduction = red, weight = o.weight, pos_weight = o.pos_weight }
        close(cell.ops.bce_with_logits(G(x), G(y), go), cell.ops.bce_with_logits(x, y, co), t, t)
        local f = function(a, b, c, d)
          local l = cell.ops.bce_with_logits(a, b, { reduction = red, weight = c, pos_weight = d })
          if red == "none" then l = (l * l):sum() end
          return l
        end
        local gw, cw = o.weight or w, o.weight or w
        local gpw, cpw = o.pos_weight or pw, o.pos_weight or pw
        local function grads(...)
          local r = { cell.grad(f, { grad_position = { 1, 2, 3, 4 } })(...) }
          if #r == 1 and getmetatable(r[1]) == nil then r = r[1] end
          return r
        end
        local gg, cg = grads(G(x), G(y), G(gw), G(gpw)), grads(x, y, cw, cpw)
        assert.are.equal(4, #cg)
        for i = 1, 4 do close(gg[i], cg[i], t * 10, t * 10) end
      end
    end
  end)
end

case("bce_with_logits with a target of another shape is the CPU's ValueError", function()
  local x, y = cell.randn { 3, 4 }, cell.rand { 4, 3 }
  local _, cerr = pcall(cell.ops.bce_with_logits, x, y)
  local ok, gerr = pcall(cell.ops.bce_with_logits, G(x), G(y))
  assert.is_false(ok)
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  assert.is_truthy(msg(gerr):find("ValueError: bce_with_logits", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
end)

-- interpolate: every mode, sizes and factors (up, down, odd ratios),
-- align_corners, strided inputs, gradients (atomically added on the GPU).
local interp_cases = {
  { { 2, 3, 5, 7 }, { size = { 9, 4 } } },
  { { 2, 3, 5, 7 }, { scale_factor = 2 } },
  { { 2, 3, 5, 7 }, { size = { 3, 11 }, mode = "bilinear" } },
  { { 2, 3, 5, 7 }, { size = { 8, 8 }, mode = "bilinear", align_corners = true } },
  { { 2, 3, 5, 7 }, { scale_factor = 1.7, mode = "bilinear" } },
  { { 1, 2, 4, 6 }, { size = { 7, 5 }, mode = "bicubic" } },
  { { 2, 3, 9 }, { size = 14, mode = "linear" } },
  { { 2, 3, 9 }, { size = 4 } },
}
for _, dt in ipairs { "float32", "float64", "float16" } do
  case(("interpolate %s: nearest, (bi)linear, bicubic, strided, with gradients"):format(dt), function()
    local t = tol[dt] * 4
    for _, c in ipairs(interp_cases) do
      local shape, o = c[1], c[2]
      local x = cell.randn(shape):astype(cell[dt])
      if #shape == 4 then x = cell.randn({ shape[1], shape[2], shape[4], shape[3] }):astype(cell[dt]):transpose(3, 4) end
      local ok, err = pcall(close, cell.ops.interpolate(G(x), o), cell.ops.interpolate(x, o), t, t)
      assert(ok, (o.mode or "nearest") .. ": " .. tostring(err))
      if dt ~= "float16" then
        local y = cell.ops.interpolate(x, o)
        local w = cell.randn(y.shape):astype(cell[dt])
        local f = function(u, v) return (cell.ops.interpolate(u, o) * v):sum() end
        ok, err = pcall(close, cell.grad(f, 1)(G(x), G(w)), cell.grad(f, 1)(x, w), t * 10, t * 10)
        assert(ok, (o.mode or "nearest") .. " gradient: " .. tostring(err))
        local g = function(u) return cell.ops.interpolate(u, o):sum() end
        ok, err = pcall(close, cell.grad(g)(G(x)), cell.grad(g)(x), t * 10, t * 10)
        assert(ok, (o.mode or "nearest") .. " gradient of a sum: " .. tostring(err))
      end
    end
  end)
end

case("interpolate of an integer input is the CPU's TypeError", function()
  local x = cell.randint(0, 5, { 1, 1, 3, 3 })
  local _, cerr = pcall(cell.ops.interpolate, x, { size = 5 })
  local ok, gerr = pcall(cell.ops.interpolate, G(x), { size = 5 })
  assert.is_false(ok)
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  assert.is_truthy(msg(gerr):find("TypeError: interpolate", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
end)

for _, dt in ipairs { "float32", "float64", "bfloat16" } do
  case(("unfold and fold %s: kernel, dilation, padding, stride, strided input, gradients"):format(dt), function()
    local t = tol[dt] * 4
    for _, o in ipairs { {}, { stride = 2 }, { padding = 1, dilation = 2 }, { padding = { 1, 0 }, stride = { 1, 2 } } } do
      local x = cell.randn({ 2, 3, 7, 6 }):astype(cell[dt]):transpose(3, 4):transpose(3, 4)
      local xs = cell.randn({ 2, 6, 7, 3 }):astype(cell[dt]):transpose(2, 4)
      for _, k in ipairs { 2, { 3, 2 } } do
        close(cell.ops.unfold(G(x), k, o), cell.ops.unfold(x, k, o), t, t)
        close(cell.ops.unfold(G(xs), k, o), cell.ops.unfold(xs, k, o), t, t)
        local cols = cell.ops.unfold(x, k, o)
        local c = cell.randn(cols.shape):astype(cell[dt])
        close(cell.ops.fold(G(c), { 7, 6 }, k, o), cell.ops.fold(c, { 7, 6 }, k, o), t, t)
        if dt ~= "bfloat16" then
          local w = cell.randn(cols.shape):astype(cell[dt])
          local f = function(u, v) return (cell.ops.unfold(u, k, o) * v):sum() end
          close(cell.grad(f, 1)(G(xs), G(w)), cell.grad(f, 1)(xs, w), t, t)
          local wx = cell.randn(x.shape):astype(cell[dt])
          local h = function(u, v) return (cell.ops.fold(u, { 7, 6 }, k, o) * v):sum() end
          close(cell.grad(h, 1)(G(c), G(wx)), cell.grad(h, 1)(c, wx), t, t)
        end
      end
    end
  end)
end

case("unfold and fold errors are the CPU's", function()
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  local x = cell.randn { 1, 2, 3, 3 }
  local _, cerr = pcall(cell.ops.unfold, x, 5)
  local ok, gerr = pcall(cell.ops.unfold, G(x), 5)
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: unfold", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
  local c = cell.randn { 1, 8, 4 }
  _, cerr = pcall(cell.ops.fold, c, { 4, 4 }, 3)
  ok, gerr = pcall(cell.ops.fold, G(c), { 4, 4 }, 3)
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: fold", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
end)

for _, dt in ipairs { "float32", "float64", "int64", "uint8", "bool", "float16", "int16" } do
  case(("nonzero, masked_select and masked_scatter %s: broadcast masks, strided inputs"):format(dt), function()
    local a = cell.randint(-1, 2, { 3, 4, 5 }):astype(cell[dt])
    local m = cell.randn({ 4, 5 }):gt(0)
    local src = cell.randint(0, 9, { 70 }):astype(cell[dt])
    for _, x in ipairs { a, a:transpose(1, 3):contiguous():transpose(1, 3) } do
      close(G(x):nonzero(), x:nonzero(), 0, 0)
      close(G(x):masked_select(G(m)), x:masked_select(m), 0, 0)
      close(G(x):masked_scatter(G(m), G(src)), x:masked_scatter(m, src), 0, 0)
    end
    local s = a:transpose(1, 3)
    close(G(s):nonzero(), s:nonzero(), 0, 0)
    local ms = cell.randn({ 5, 4, 3 }):gt(0):transpose(1, 3)
    close(G(a):masked_select(G(ms)), a:masked_select(ms), 0, 0)
    close(G(a[1]):masked_select(G(m[1])), a[1]:masked_select(m[1]), 0, 0)
  end)
end

case("nonzero of NaN, -0, an empty and a 0-D tensor; masked gradients; the CPU's errors", function()
  local x = cell.tensor { 0 / 0, -0.0, 0, 2 }
  close(G(x):nonzero(), x:nonzero(), 0, 0)
  local e = cell.zeros { 0, 3 }
  close(G(e):nonzero(), e:nonzero(), 0, 0)
  local z = cell.tensor(3)
  close(G(z):nonzero(), z:nonzero(), 0, 0)
  local none = cell.zeros { 2, 2 }
  close(G(none):nonzero(), none:nonzero(), 0, 0)
  close(G(none):masked_select(G(none:gt(0))), none:masked_select(none:gt(0)), 0, 0)
  local a, m, src = cell.randn { 4, 5 }, cell.randn({ 5 }):gt(0), cell.randn { 30 }
  local f = function(u, v) return (u:masked_scatter(m, v) * u):sum() + u:masked_select(m):sum() end
  local function gf(u, v) return (u:masked_scatter(G(m), v) * u):sum() + u:masked_select(G(m)):sum() end
  close(cell.grad(gf, 1)(G(a), G(src)), cell.grad(f, 1)(a, src), 1e-6, 1e-6)
  close(cell.grad(gf, 2)(G(a), G(src)), cell.grad(f, 2)(a, src), 1e-6, 1e-6)
  local function msg(e2) return (tostring(e2):gsub("^.-:%d+: ", "")) end
  local _, cerr = pcall(function() return a:masked_scatter(m, cell.randn { 2 }) end)
  local ok, gerr = pcall(function() return G(a):masked_scatter(G(m), G(cell.randn { 2 })) end)
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: masked_scatter", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
  _, cerr = pcall(function() return a:masked_select(cell.randn({ 3 }):gt(0)) end)
  ok, gerr = pcall(function() return G(a):masked_select(G(cell.randn({ 3 }):gt(0))) end)
  assert.is_false(ok)
  assert.are.equal(msg(cerr), msg(gerr))
  _, cerr = pcall(function() return a:masked_select(cell.ones { 5 }) end)
  ok, gerr = pcall(function() return G(a):masked_select(G(cell.ones { 5 })) end)
  assert.is_false(ok)
  assert.are.equal(msg(cerr), msg(gerr))
end)

case("bernoulli and normal on the GPU: the CPU's values for one seed, broadcast, dtypes", function()
  local function both(f)
    cell.set_seed(11)
    local c = f(function(t) return t end)
    cell.set_seed(11)
    local g = f(G)
    assert.are.equal("GPU:0", g.device)
    return g, c
  end
  local p = cell.rand { 4, 5 }
  local g, c = both(function(D) return cell.ops.bernoulli(D(p)) end)
  close(g, c, 0, 0)
  g, c = both(function(D) return cell.ops.bernoulli(D(cell.zeros({ 3, 5 }, cell.int32)), 0.3) end)
  close(g, c, 0, 0)
  g, c = both(function(D) return cell.ops.bernoulli(D(cell.zeros({ 4, 5 }, cell.float64)), D(p:select(1, 2))) end)
  close(g, c, 0, 0)
  local m, sd = cell.randn { 3, 1 }, cell.rand({ 4 }):astype(cell.float64)
  g, c = both(function(D) return cell.ops.normal(D(m), D(sd)) end)
  close(g, c, 1e-12, 1e-12)
  g, c = both(function(D) return cell.ops.normal({ 2, 3, 4 }, D(m), D(sd)) end)
  close(g, c, 1e-12, 1e-12)
  local m32 = cell.randn { 7 }
  g, c = both(function(D) return cell.ops.normal(D(m32), D(cell.ones { 7 })) end)
  close(g, c, 1e-6, 1e-6)
end)

case("bernoulli and normal refuse probabilities outside [0, 1] and negative deviations as the CPU does", function()
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  local p = cell.tensor { 0.5, 1.5, 0.2 }
  local _, cerr = pcall(cell.ops.bernoulli, p)
  local ok, gerr = pcall(cell.ops.bernoulli, G(p))
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: bernoulli", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
  local m, sd = cell.zeros { 3 }, cell.tensor { 1, -2, 0 }
  _, cerr = pcall(cell.ops.normal, m, sd)
  ok, gerr = pcall(cell.ops.normal, G(m), G(sd))
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: normal", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
end)

local conv3d_cases = {
  { { 2, 4, 5, 6, 5 }, { 6, 4, 3, 2, 3 }, {} },
  { { 2, 4, 5, 6, 5 }, { 6, 2, 2, 3, 2 }, { stride = { 2, 1, 2 }, padding = { 1, 0, 2 }, groups = 2 } },
  { { 1, 3, 7, 5, 6 }, { 4, 3, 3, 3, 2 }, { dilation = { 2, 1, 2 }, padding = 1 } },
  { { 1, 2, 5, 4, 6 }, { 3, 2, 2, 3, 3 }, { pad_mode = "same" } },
}
for _, dt in ipairs { "float32", "float64", "float16" } do
  case(("conv3d and conv_transpose3d %s: stride, padding, dilation, groups, bias, strided, gradients"):format(dt),
    function()
      local t = dt == "float64" and 1e-12 or (dt == "float32" and 1e-5 or 4e-3)
      for _, c in ipairs(conv3d_cases) do
        local x = cell.randn(c[1]):astype(cell[dt])
        local w = cell.randn(c[2]):astype(cell[dt])
        local b = cell.randn({ c[2][1] }):astype(cell[dt])
        local xs = x:transpose(3, 5):contiguous():transpose(3, 5)
        local o = c[3]
        close(cell.ops.conv3d(G(xs), G(w), G(b), o), cell.ops.conv3d(xs, w, b, o), t, t)
        close(cell.ops.conv3d(G(x), G(w), o), cell.ops.conv3d(x, w, o), t, t)
        if dt ~= "float16" then
          local y = cell.ops.conv3d(x, w, b, o)
          local r = cell.randn(y.shape):astype(cell[dt])
          local f = function(u, v, bb) return (cell.ops.conv3d(u, v, bb, o) * r):sum() end
          local gf = function(u, v, bb) return (cell.ops.conv3d(u, v, bb, o) * G(r)):sum() end
          local function grads(fn, ...)
            local g = { cell.grad(fn, { grad_position = { 1, 2, 3 } })(...) }
            if #g == 1 and getmetatable(g[1]) == nil then g = g[1] end
            return g
          end
          local gg, cg = grads(gf, G(x), G(w), G(b)), grads(f, x, w, b)
          for i = 1, 3 do close(gg[i], cg[i], t * 10, t * 10) end
        end
        if not o.pad_mode then
          -- the transposed convolution with the same weight read as (in, out / groups, ...)
          local groups = o.groups or 1
          local tw = cell.randn({ c[2][1], c[2][2], c[2][3], c[2][4], c[2][5] }):astype(cell[dt])
          local tb = cell.randn({ c[2][2] * groups }):astype(cell[dt])
          local to = { stride = o.stride, dilation = o.dilation, groups = groups }
          if o.stride then to.output_padding = { 1, 0, 0 } end
          local tx = cell.randn({ 2, c[2][1], 3, 4, 3 }):astype(cell[dt])
          close(cell.ops.conv_transpose3d(G(tx), G(tw), G(tb), to), cell.ops.conv_transpose3d(tx, tw, tb, to), t, t)
          if dt ~= "float16" then
            local y = cell.ops.conv_transpose3d(tx, tw, tb, to)
            local r = cell.randn(y.shape):astype(cell[dt])
            local f = function(u, v, bb) return (cell.ops.conv_transpose3d(u, v, bb, to) * r):sum() end
            local gf = function(u, v, bb) return (cell.ops.conv_transpose3d(u, v, bb, to) * G(r)):sum() end
            local function grads(fn, ...)
              local g = { cell.grad(fn, { grad_position = { 1, 2, 3 } })(...) }
              if #g == 1 and getmetatable(g[1]) == nil then g = g[1] end
              return g
            end
            local gg, cg = grads(gf, G(tx), G(tw), G(tb)), grads(f, tx, tw, tb)
            for i = 1, 3 do close(gg[i], cg[i], t * 10, t * 10) end
          end
        end
      end
    end)
end

case("conv3d errors are the CPU's", function()
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  local x, w = cell.randn { 1, 3, 4, 4, 4 }, cell.randn { 2, 2, 3, 3, 3 }
  local _, cerr = pcall(cell.ops.conv3d, x, w)
  local ok, gerr = pcall(cell.ops.conv3d, G(x), G(w))
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: ", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
  local big = cell.randn { 2, 3, 5, 5, 5 }
  _, cerr = pcall(cell.ops.conv3d, x, big)
  ok, gerr = pcall(cell.ops.conv3d, G(x), G(big))
  assert.is_false(ok)
  assert.are.equal(msg(cerr), msg(gerr))
end)

for _, dt in ipairs { "float32", "float64" } do
  case(("cumprod's gradient %s along every dim, with zeros, strided"):format(dt), function()
    local x = cell.randn({ 4, 5, 6 }):astype(cell[dt])
    x[2][3][4] = 0
    x[3][1][2] = 0
    x[3][1][5] = 0
    x[1][4][1] = 0
    local t = dt == "float64" and 1e-12 or 1e-5
    for _, a in ipairs { x, x:transpose(1, 3) } do
      local w = cell.randn(a.shape):astype(cell[dt])
      for dim = 1, 3 do
        local f = function(u, v) return (u:cumprod(dim) * v):sum() end
        close(cell.grad(f, 1)(G(a), G(w)), cell.grad(f, 1)(a, w), t, t)
      end
    end
  end)
end

for _, dt in ipairs { "float32", "float64", "int64", "uint8", "float16", "int32" } do
  case(("median %s along every dim, keepdim, ties, strided"):format(dt), function()
    local a = cell.randint(0, 4, { 4, 5, 6 }):astype(cell[dt]) -- many ties
    for _, x in ipairs { a, a:transpose(1, 3) } do
      for dim = 1, 3 do
        local gv, gi = G(x):median(dim)
        local cv, ci = x:median(dim)
        close(gv, cv, 0, 0)
        close(gi, ci, 0, 0)
        gv, gi = G(x):median(dim, true)
        cv, ci = x:median(dim, true)
        close(gv, cv, 0, 0)
        close(gi, ci, 0, 0)
      end
    end
  end)
end

case("median of lines with NaN, of a 0-D tensor, its gradient, and the CPU's error for an empty dim", function()
  local x = cell.tensor { { 1, 0 / 0, 3, 0 / 0 }, { 4, 2, 9, 1 }, { 0 / 0, 5, 5, 5 } }
  local gv, gi = G(x):median(2)
  local cv, ci = x:median(2)
  close(gv, cv, 0, 0)
  close(gi, ci, 0, 0)
  local z = cell.tensor(3.5)
  gv, gi = G(z):median(1)
  cv, ci = z:median(1)
  close(gv, cv, 0, 0)
  close(gi, ci, 0, 0)
  local a, w = cell.randn { 4, 7 }, cell.randn { 4 }
  local f = function(u, v) return (u:median(2) * v):sum() end
  close(cell.grad(f, 1)(G(a), G(w)), cell.grad(f, 1)(a, w), 0, 0)
  local e = cell.zeros { 3, 0 }
  local _, cerr = pcall(function() return e:median(2) end)
  local ok, gerr = pcall(function() return G(e):median(2) end)
  assert.is_false(ok)
  local function msg(m) return (tostring(m):gsub("^.-:%d+: ", "")) end
  assert.is_truthy(msg(gerr):find("IndexError: median", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
end)

case("multinomial on the GPU: the CPU's draws for one seed, with and without replacement", function()
  local p = cell.rand({ 5, 9 }):astype(cell.float64)
  p[2][4] = 0
  p[3][1] = 0
  for _, c in ipairs {
    { p, 6, true },
    { p, 7, false },
    { p:select(1, 2), 20, true },
    { p:transpose(1, 2):contiguous():transpose(1, 2):astype(cell.float32), 4, false },
  } do
    cell.set_seed(5)
    local cv = cell.ops.multinomial(c[1], c[2], c[3])
    cell.set_seed(5)
    local gv = cell.ops.multinomial(G(c[1]), c[2], c[3])
    assert.are.equal("GPU:0", gv.device)
    close(gv, cv, 0, 0)
  end
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  local bad = cell.tensor { { 0.2, -1, 0.5 } }
  local _, cerr = pcall(cell.ops.multinomial, bad, 1)
  local ok, gerr = pcall(cell.ops.multinomial, G(bad), 1)
  assert.is_false(ok)
  assert.is_truthy(msg(gerr):find("ValueError: multinomial", 1, true), msg(gerr))
  assert.are.equal(msg(cerr), msg(gerr))
  local few = cell.tensor { { 0.2, 0, 0.5 } }
  _, cerr = pcall(cell.ops.multinomial, few, 3, false)
  ok, gerr = pcall(cell.ops.multinomial, G(few), 3, false)
  assert.is_false(ok)
  assert.are.equal(msg(cerr), msg(gerr))
end)

for _, dt in ipairs { "float32", "float64", "int64", "uint8", "bool", "float16", "int32" } do
  case(("unique %s: values, inverse and counts, strided"):format(dt), function()
    local a = cell.randint(-2, 3, { 4, 5, 3 }):astype(cell[dt])
    for _, x in ipairs { a, a:transpose(1, 3) } do
      local gu, gi, gc = G(x):unique { return_inverse = true, return_counts = true }
      local cu, ci, cc = x:unique { return_inverse = true, return_counts = true }
      close(gu, cu, 0, 0)
      close(gi, ci, 0, 0)
      close(gc, cc, 0, 0)
    end
  end)
end

case("unique of NaN, -0 and +0, big int64, an empty and a 0-D tensor", function()
  for _, x in ipairs {
    cell.tensor { 0 / 0, 1, -0.0, 0, 0 / 0, 1 },
    cell.tensor({ 9007199254740993, 9007199254740992, 9007199254740993 }, cell.int64),
    cell.zeros { 0 },
    cell.tensor(4),
  } do
    local gu, gi, gc = G(x):unique { return_inverse = true, return_counts = true }
    local cu, ci, cc = x:unique { return_inverse = true, return_counts = true }
    close(gu, cu, 0, 0)
    close(gi, ci, 0, 0)
    close(gc, cc, 0, 0)
  end
end)

for _, dt in ipairs { "float32", "float64" } do
  case(("ctc_loss %s: padded and concatenated targets, reductions, zero_infinity, gradients"):format(dt), function()
    local lp = cell.ops.log_softmax(cell.randn({ 7, 3, 5 }):astype(cell[dt]), 3)
    local il = cell.tensor({ 7, 6, 3 }, cell.int64)
    local tp = cell.tensor({ { 2, 3, 3 }, { 4, 2, 1 }, { 2, 2, 2 } }, cell.int64)
    local tlp = cell.tensor({ 3, 2, 3 }, cell.int64) -- the last: too long for 3 steps (inf)
    local tc = cell.tensor({ 2, 3, 3, 4, 2, 5 }, cell.int64)
    local tlc = cell.tensor({ 3, 2, 1 }, cell.int64)
    local t = dt == "float64" and 1e-10 or 1e-5
    for _, c in ipairs { { tp, tlp }, { tc, tlc } } do
      for _, o in ipairs { { reduction = "none" }, { reduction = "sum", zero_infinity = true }, { reduction = "mean", zero_infinity = true } } do
        local cv = cell.ops.ctc_loss(lp, c[1], il, c[2], o)
        local gv = cell.ops.ctc_loss(G(lp), G(c[1]), G(il), G(c[2]), o)
        close(gv, cv, t, t)
        if o.zero_infinity then
          local f = function(x, a, b, d) return cell.ops.ctc_loss(x, a, b, d, o):sum() end
          close(cell.grad(f, 1)(G(lp), G(c[1]), G(il), G(c[2])), cell.grad(f, 1)(lp, c[1], il, c[2]), t, t)
        end
      end
    end
  end)
end

case("ctc_loss with a blank target or a bad length is the CPU's error", function()
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  local lp = cell.ops.log_softmax(cell.randn { 4, 2, 3 }, 3)
  local il = cell.tensor({ 4, 4 }, cell.int64)
  for _, c in ipairs {
    { cell.tensor({ { 1, 2 }, { 2, 2 } }, cell.int64), cell.tensor({ 2, 2 }, cell.int64) },
    { cell.tensor({ { 2, 2 }, { 2, 3 } }, cell.int64), cell.tensor({ 2, 3 }, cell.int64) },
  } do
    local _, cerr = pcall(cell.ops.ctc_loss, lp, c[1], il, c[2])
    local ok, gerr = pcall(cell.ops.ctc_loss, G(lp), G(c[1]), G(il), G(c[2]))
    assert.is_false(ok)
    assert.are.equal(msg(cerr), msg(gerr))
  end
end)

local math_ops = { "log1p", "rsqrt", "sin", "cos", "floor", "ceil", "round", "sign", "erf", "erfc", "tan", "atan",
  "asin", "acos", "sinh", "cosh", "log2", "log10", "exp2", "expm1", "square", "reciprocal" }
for _, dt in ipairs { "float32", "float64", "float16", "bfloat16" } do
  case(("the float math unary ops %s (in double, rounded once), strided"):format(dt), function()
    local x = (cell.rand({ 5, 6 }) * 1.8 - 0.9):astype(cell[dt])
    x[1][1] = 0 / 0
    x[2][2] = 2.5
    x[2][3] = -1.5
    x[3][3] = 0
    local t = (tol[dt] or 2e-6) * 2
    for _, a in ipairs { x, x:transpose(1, 2) } do
      for _, op in ipairs(math_ops) do
        local ok, err = pcall(close, G(a)[op](G(a)), a[op](a), t, t)
        assert(ok, op .. ": " .. tostring(err))
      end
    end
  end)
end

case("the gradients of sin, cos, log1p, rsqrt, square and reciprocal on the GPU; expm1's is declined", function()
  local x, w = cell.rand({ 4, 5 }) + 0.5, cell.randn { 4, 5 }
  for _, op in ipairs { "sin", "cos", "log1p", "rsqrt", "square", "reciprocal" } do
    local f = function(u, v) return (u[op](u) * v):sum() end
    close(cell.grad(f, 1)(G(x), G(w)), cell.grad(f, 1)(x, w), 1e-5, 1e-6)
  end
  -- a gradient formula the GPU does not run yet (ew's): the documented error, never a wrong value
  local f = function(u, v) return (u:expm1() * v):sum() end
  local ok, err = pcall(function() return cell.grad(f, 1)(G(x), G(w)) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("NotImplementedError", 1, true), tostring(err))
end)

describe("cell.cuda activations, logsumexp, roll, diag, eye, dot and random fills on the GPU", function()
  C.run(cases, 99, "specs", it, before_each)
end)
