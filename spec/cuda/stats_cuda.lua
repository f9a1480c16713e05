-- cell.cuda's statistics and scans against the CPU's: var / std (ddof,
-- dims, keepdim), the p-norms (1, 2, 3, inf, negative), cumsum and cumprod along
-- every dim (float and integer dtypes, strided inputs) with the gradients
-- of var, norm and cumsum, and arange / linspace made on the GPU. Runs
-- only where cell.cuda.is_available(); elsewhere it prints how many it
-- skipped.
local cell = require "cell"
local cuda = require "cell.cuda"

local C = require "cuda.compare"
local close = C.close

local function G(t) return t:move_to("GPU") end

local cases = {}
local function case(name, f) cases[#cases + 1] = { name = name, f = f } end

local tol = { float32 = 2e-6, float64 = 1e-12, float16 = 1e-3, bfloat16 = 8e-3 }

for _, dt in ipairs { "float32", "float64", "float16", "bfloat16" } do
  for _, strided in ipairs { false, true } do
    case(("var, std and norm %s%s"):format(dt, strided and " strided" or ""), function()
      local a = cell.randn({ 6, 5, 7 }):astype(cell[dt])
      if strided then a = a:transpose(1, 3) end
      local t = tol[dt]
      close(G(a):var(), a:var(), t, t)
      close(G(a):std(2), a:std(2), t, t)
      close(G(a):var({ 1, 3 }, 0, true), a:var({ 1, 3 }, 0, true), t, t)
      close(G(a):std(3, 2), a:std(3, 2), t, t)
      for _, p in ipairs { 1, 2, 3, math.huge } do
        close(G(a):norm(p), a:norm(p), t, t)
        close(G(a):norm(p, 2, true), a:norm(p, 2, true), t, t)
      end
    end)
  end
end

case("var of an integer tensor is float32; ddof past the count gives inf or NaN as on the CPU", function()
  local i = cell.randint(0, 9, { 4, 6 }):astype(cell.int32)
  close(G(i):var(2), i:var(2), 1e-6, 1e-6)
  close(G(i):norm(2, 1), i:norm(2, 1), 1e-6, 1e-6)
  local f = i:astype(cell.float32)
  close(G(f):norm(0), f:norm(0), 0, 0) -- PyTorch's count of non-zeros
  close(G(f):norm(-math.huge, 1), f:norm(-math.huge, 1), 0, 0) -- the smallest magnitude
  local one = cell.randn { 3, 1 }
  close(G(one):var(2), one:var(2), 0, 0)
  close(G(one):var(2, 2), one:var(2, 2), 0, 0)
end)

case("norm of negative order is the CPU's, its empty case the CPU's error; var with a bad dim too", function()
  local a = cell.randn { 3, 4 }
  close(G(a):norm(-1), a:norm(-1), 2e-6, 2e-6)
  close(G(a):norm(-2.5, 2), a:norm(-2.5, 2), 2e-6, 2e-6)
  close(G(cell.tensor({ 0, 2, 4 })):norm(-1), cell.tensor({ 0, 2, 4 }):norm(-1), 0, 0) -- a zero makes it 0
  local e = cell.zeros({ 0, 3 })
  local _, cerr = pcall(function() return e:norm(-1, 1) end)
  local ok, gerr = pcall(function() return G(e):norm(-1, 1) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(gerr):find("ValueError: norm", 1, true), tostring(gerr))
  local function msg(e2) return (tostring(e2):gsub("^.-:%d+: ", "")) end
  assert.are.equal(msg(cerr), msg(gerr))
  ok, gerr = pcall(function() return G(a):var(5) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(gerr):find("IndexError", 1, true), tostring(gerr))
end)

for _, dt in ipairs { "float32", "float64", "float16", "int32", "int64", "uint8", "bool" } do
  case(("cumsum and cumprod %s along every dim, strided"):format(dt), function()
    local a
    if dt == "bool" then
      a = cell.randn({ 4, 5, 6 }):gt(0)
    elseif dt:find "int" then
      a = cell.randint(0, 4, { 4, 5, 6 }):astype(cell[dt])
    else
      a = (cell.rand({ 4, 5, 6 }) + 0.5):astype(cell[dt])
    end
    local t = tol[dt] or 0
    for dim = 1, 3 do
      close(G(a):cumsum(dim), a:cumsum(dim), t, t)
      close(G(a):cumprod(dim), a:cumprod(dim), t * 10, t)
      local s = a:transpose(1, 3)
      close(G(s):cumsum(dim), s:cumsum(dim), t, t)
    end
  end)
end

case("gradients of var, std, norm and cumsum", function()
  local x, r = cell.randn { 5, 6 }, cell.randn { 5, 6 }
  local function loss(a, w)
    return a:var(2):sum() + a:std():sum() + a:norm(2, 1):sum() + a:norm(3):sum() + (a:cumsum(2) * w):sum()
  end
  close(cell.grad(loss, 1)(G(x), G(r)), cell.grad(loss, 1)(x, r), 1e-5, 1e-6)
end)

case("arange and linspace made on the GPU", function()
  cell.set_device("GPU")
  local ok, err = pcall(function()
    local pairs_ = {
      { cell.arange(10), "arange(10)" },
      { cell.arange(1, 4, 0.25), "arange(1, 4, 0.25)" },
      { cell.arange(5, -3, -1.5, cell.float64), "arange(5, -3, -1.5, float64)" },
      { cell.linspace(-1, 1, 9), "linspace(-1, 1, 9)" },
      { cell.linspace(2, 3, 1, cell.int64), "linspace(2, 3, 1, int64)" },
    }
    for _, p in ipairs(pairs_) do assert.are.equal("GPU:0", p[1].device, p[2]) end
    return pairs_
  end)
  cell.set_device("CPU")
  assert(ok, err)
  close(err[1][1], cell.arange(10), 0, 0)
  close(err[2][1], cell.arange(1, 4, 0.25), 0, 0)
  close(err[3][1], cell.arange(5, -3, -1.5, cell.float64), 0, 0)
  close(err[4][1], cell.linspace(-1, 1, 9), 0, 0)
  close(err[5][1], cell.linspace(2, 3, 1, cell.int64), 0, 0)
end)

-- sort, argsort and topk: the CPU's order (ties to the earlier element,
-- NaN above +inf, -0 == +0) and indices, every dim, strided inputs.
for _, dt in ipairs { "float32", "float64", "float16", "int64", "int32", "uint8", "bool" } do
  case(("sort, argsort and topk %s"):format(dt), function()
    local a
    if dt == "bool" then
      a = cell.randn({ 4, 6, 5 }):gt(0)
    elseif dt:find "int" then
      a = cell.randint(0, 5, { 4, 6, 5 }):astype(cell[dt]) -- many ties
    else
      a = cell.randint(-3, 4, { 4, 6, 5 }):astype(cell[dt]) * 0.5 -- ties, -0 and +0
    end
    a = a:transpose(1, 3) -- strided
    for dim = 1, 3 do
      for _, desc in ipairs { false, true } do
        local gv, gi = G(a):sort(dim, desc)
        local cv, ci = a:sort(dim, desc)
        close(gv, cv, 0, 0)
        close(gi, ci, 0, 0)
        close(G(a):argsort(dim, desc), a:argsort(dim, desc), 0, 0)
        local k = math.min(3, a.shape[dim])
        local tv, ti = G(a):topk(k, dim, desc)
        local uv, ui = a:topk(k, dim, desc)
        close(tv, uv, 0, 0)
        close(ti, ui, 0, 0)
      end
    end
  end)
end

case("sort with NaN and infinities; topk errors; sort and topk gradients", function()
  local a = cell.tensor({ 1, 0 / 0, -1 / 0, 2, 0 / 0, 1 / 0, -0.0, 0.0, 1 }, cell.float32)
  for _, desc in ipairs { false, true } do
    local gv, gi = G(a):sort(1, desc)
    local cv, ci = a:sort(1, desc)
    close(gv, cv, 0, 0)
    close(gi, ci, 0, 0)
  end
  local _, cerr = pcall(function() return a:topk(10) end)
  local ok, gerr = pcall(function() return G(a):topk(10) end)
  assert.is_false(ok)
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  assert.are.equal(msg(cerr), msg(gerr))
  local x, r = cell.randn { 4, 7 }, cell.randn { 4, 7 }
  local function loss(u, w) return (u:sort(2) * w):sum() + (u:topk(3, 2) * w:narrow(2, 1, 3)):sum() end
  close(cell.grad(loss, 1)(G(x), G(r)), cell.grad(loss, 1)(x, r), 1e-6, 1e-6)
end)

-- mse_loss and l1_loss (broadcast target, every reduction) and their
-- gradients of the input and the target.
for _, dt in ipairs { "float32", "float64", "float16" } do
  for _, name in ipairs { "mse_loss", "l1_loss" } do
    case(("%s %s, every reduction, with gradients"):format(name, dt), function()
      local x, y = cell.randn({ 6, 7 }):astype(cell[dt]), cell.randn({ 7 }):astype(cell[dt])
      local t = tol[dt] * 10
      for _, red in ipairs { "mean", "sum", "none" } do
        close(cell.ops[name](G(x), G(y), red), cell.ops[name](x, y, red), t, t)
      end
      local xs = x:transpose(1, 2)
      close(cell.ops[name](G(xs), G(xs) * 2), cell.ops[name](xs, xs * 2), t, t)
      if dt ~= "float16" then
        for _, red in ipairs { "mean", "sum", "none" } do
          local function loss(a, b)
            local l = cell.ops[name](a, b, red)
            return red == "none" and (l * l):sum() or l * 3
          end
          local gc = cell.grad(loss, { 1, 2 })(x, y)
          local gg = cell.grad(loss, { 1, 2 })(G(x), G(y))
          close(gg[1], gc[1], t, t)
          close(gg[2], gc[2], t, t)
        end
      end
    end)
  end
end

case("nn.MSELoss and nn.L1Loss train a Dense layer on the GPU as on the CPU", function()
  for _, L in ipairs { cell.nn.MSELoss, cell.nn.L1Loss } do
    cell.set_seed(5)
    local function run(dev)
      cell.set_seed(5)
      local net = cell.nn.Dense(4, 3)
      local step = cell.nn.TrainOneStepCell(cell.nn.WithLossCell(net, L()), cell.nn.SGD(net:trainable_params(), 0.1))
      step:move_to(dev)
      local x, y = cell.randn { 8, 4 }, cell.randn { 8, 3 }
      for _ = 1, 3 do step(x:move_to(dev), y:move_to(dev)) end
      return net.weight
    end
    local wc = run("CPU")
    close(run("GPU"), wc, 1e-5, 1e-6)
  end
end)

-- The losses the nn layer composes from elementwise ops, where and
-- reductions (loss_extra.lua) now run every op on the GPU.
case("SmoothL1Loss, HuberLoss, KLDivLoss and BCELoss on the GPU, with gradients", function()
  local x, y = cell.randn { 5, 6 }, cell.randn { 5, 6 }
  local p, q = cell.rand({ 5, 6 }) * 0.9 + 0.05, cell.rand { 5, 6 }
  for _, c in ipairs {
    { cell.nn.SmoothL1Loss { reduction = "mean" }, x, y },
    { cell.nn.HuberLoss(), x * 2, y },
    { cell.nn.KLDivLoss { reduction = "sum" }, x:log_softmax(2), q },
    { cell.nn.BCELoss(), p, q },
  } do
    local loss, a, b = c[1], c[2], c[3]
    close(loss(G(a), G(b)), loss(a, b), 1e-6, 1e-6)
    local function f(u, v) return loss(u, v) end
    close(cell.grad(f, 1)(G(a), G(b)), cell.grad(f, 1)(a, b), 1e-6, 1e-6)
  end
end)

describe("cell.cuda statistics and scans on the GPU", function()
  C.run(cases, 99, "specs", it, before_each)
end)
