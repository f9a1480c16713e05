-- cell.cuda's kernels against the CPU's (a cross-device check in the
-- manner of ggml's test-backend-ops): each case runs once on the CPU and
-- once on the GPU from the same inputs and compares. Runs only where
-- cell.cuda.is_available(); elsewhere it prints how many it skipped and
-- checks the module says why there is no GPU.
local cell = require "cell"
local cuda = require "cell.cuda"

local C = require "cuda.compare"
local close = C.close

local cases = {}
local function case(name, f) cases[#cases + 1] = { name = name, f = f } end

local shapes = { { 7 }, { 33, 65 }, { 3, 4, 1025 } }
for _, op in ipairs { "add", "sub", "mul", "div", "maximum", "minimum" } do
  for _, shape in ipairs(shapes) do
    case(("binary %s %s"):format(op, table.concat(shape, "x")), function()
      local a, b = cell.randn(shape), cell.randn(shape)
      close(a:move_to("GPU")[op](a:move_to("GPU"), b:move_to("GPU")), a[op](a, b), 1e-6, 1e-6)
    end)
  end
  case("in-place " .. op .. "_", function()
    local a, b = cell.randn { 5, 9 }, cell.randn { 5, 9 }
    local g = a:move_to("GPU")
    g[op .. "_"](g, b:move_to("GPU"))
    close(g, a[op](a, b), 1e-6, 1e-6)
  end)
end

-- float16 and bfloat16 arithmetic (computed in float32, rounded once: the
-- CPU's values exactly), with tensors, numbers and in place: the mean of
-- gradients DistributedGradReducer takes (grad:div_(ranks)).
for _, dt in ipairs { "float16", "bfloat16" } do
  for _, op in ipairs { "add", "sub", "mul", "div", "maximum", "minimum" } do
    case(("binary %s %s, with a number, in place"):format(op, dt), function()
      local a, b = cell.randn({ 9, 13 }):astype(cell[dt]), cell.randn({ 13 }):astype(cell[dt])
      local ga, gb = a:move_to("GPU"), b:move_to("GPU")
      close(ga[op](ga, gb), a[op](a, b), 0, 0)
      close(ga:transpose(1, 2)[op](ga:transpose(1, 2), 3), a:transpose(1, 2)[op](a:transpose(1, 2), 3), 0, 0)
      local c = a:clone()
      local gc = c:move_to("GPU")
      gc[op .. "_"](gc, gb)
      c[op .. "_"](c, b)
      close(gc, c, 0, 0)
    end)
  end
  case(("div_ by the number of ranks, %s"):format(dt), function()
    local a = cell.randn({ 1000 }):astype(cell[dt])
    local g = a:move_to("GPU")
    g:div_(3)
    a:div_(3)
    close(g, a, 0, 0)
  end)
  for _, op in ipairs { "abs", "neg", "exp", "sqrt", "tanh", "sigmoid", "relu" } do
    case(("unary %s %s"):format(op, dt), function()
      local a = cell.randn({ 17, 31 }):astype(cell[dt])
      if op == "sqrt" then a = a:abs() end
      -- float32's function rounded to the narrow dtype: within one of its
      -- units of the CPU's
      local ulp = dt == "float16" and 2 ^ -10 or 2 ^ -7
      close(a:move_to("GPU")[op](a:move_to("GPU")), a[op](a), ulp, 1e-6)
    end)
  end
end

case("comparisons with a number: the number in the CPU's scalar dtype", function()
  -- float32(0.1) < 0.1 in float64, but not once 0.1 is rounded to float32
  local x = cell.tensor({ 0.1, 0.5, -2, 3 }, cell.float32)
  local i = cell.tensor({ 1, 2, 3 }, cell.int64)
  local G = function(t) return t:move_to("GPU") end
  for _, op in ipairs { "eq", "ne", "lt", "le", "gt", "ge" } do
    close(G(x)[op](G(x), 0.1), x[op](x, 0.1), 0, 0)
    close(G(i)[op](G(i), 2), i[op](i, 2), 0, 0)
    close(G(i)[op](G(i), 2.5), i[op](i, 2.5), 0, 0)
  end
end)

case("float16 and bfloat16 reductions (in float64, rounded once) and a half-precision gradient", function()
  local G = function(t) return t:move_to("GPU") end
  for _, dt in ipairs { "float16", "bfloat16" } do
    local a = cell.randn({ 6, 7, 5 }):astype(cell[dt])
    local ulp = dt == "float16" and 2 ^ -10 or 2 ^ -7
    for _, f in ipairs { "sum", "mean", "prod", "amax", "amin" } do
      if a[f] then
        close(G(a)[f](G(a)), a[f](a), ulp, ulp)
        close(G(a)[f](G(a), 2), a[f](a, 2), ulp, ulp)
      end
    end
    local x, w = cell.randn({ 4, 5 }):astype(cell[dt]), cell.randn({ 4, 5 }):astype(cell[dt])
    local function loss(u, v) return (u * v + u):sum() end
    close(cell.grad(loss, 1)(G(x), G(w)), cell.grad(loss, 1)(x, w), ulp, ulp)
  end
end)

case("mixed dtypes promote as on the CPU; integer true division gives float32", function()
  local f32, f64 = cell.randn { 4, 5 }, cell.randn({ 4, 5 }):astype(cell.float64)
  local i32, i64 = cell.randint(1, 9, { 4, 5 }):astype(cell.int32), cell.randint(1, 9, { 5 })
  local h = cell.randn({ 4, 5 }):astype(cell.float16)
  local G = function(t) return t:move_to("GPU") end
  for _, p in ipairs { { f32, f64 }, { i32, f32 }, { i32, i64 }, { h, f32 }, { h, i64 } } do
    for _, op in ipairs { "add", "sub", "mul", "div" } do
      close(G(p[1])[op](G(p[1]), G(p[2])), p[1][op](p[1], p[2]), 1e-6, 1e-6)
    end
  end
  close(G(i64) / 2, i64 / 2, 0, 0)
  close(G(i32) * 2.5, i32 * 2.5, 0, 0)
  local a = f32:clone()
  local g = G(a)
  g:add_(G(f64))
  a:add_(f64)
  close(g, a, 1e-6, 1e-6)
  local ok, err = pcall(function() return G(i32):add_(G(f32)) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("TypeError: add_: result type Float32 cannot be stored in a Int32 tensor", 1, true),
    tostring(err))
end)

for _, op in ipairs { "abs", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu" } do
  case("unary " .. op, function()
    local a = cell.randn { 17, 31 }
    if op == "log" or op == "sqrt" then a = a:abs() end
    close(a:move_to("GPU")[op](a:move_to("GPU")), a[op](a), 2e-6, 1e-6)
  end)
end

for _, dims in ipairs { { 1, 1, 1 }, { 64, 64, 64 }, { 127, 33, 65 }, { 5, 0, 3 } } do
  local m, k, n = dims[1], dims[2], dims[3]
  for _, dt in ipairs { "float32", "float64" } do
    case(("mm %dx%dx%d %s"):format(m, k, n, dt), function()
      local a, b = cell.randn({ m, k }):astype(cell[dt]), cell.randn({ k, n }):astype(cell[dt])
      local tol = dt == "float32" and 1e-4 or 1e-12
      close(a:move_to("GPU"):mm(b:move_to("GPU")), a:mm(b), tol, tol)
      close(a:move_to("GPU"):matmul(b:move_to("GPU")), a:matmul(b), tol, tol)
    end)
  end
end

case("bmm 4x(31x17)x(17x9)", function()
  local a, b = cell.randn { 4, 31, 17 }, cell.randn { 4, 17, 9 }
  close(a:move_to("GPU"):bmm(b:move_to("GPU")), a:bmm(b), 1e-4, 1e-4)
  close(a:move_to("GPU"):matmul(b:move_to("GPU")), a:matmul(b), 1e-4, 1e-4)
end)

case("TF32 is off by default and can be turned on", function()
  assert.is_false(cuda.get_allow_tf32())
  -- 1 + 2^-20 is not representable in TF32's 10-bit mantissa.
  local a = cell.full({ 1, 1 }, 1 + 2 ^ -20)
  local one = cell.ones { 1, 1 }
  local r = a:move_to("GPU"):mm(one:move_to("GPU")):item()
  assert.are.equal(a:item(), r)
  cuda.set_allow_tf32(true)
  assert.is_true(cuda.get_allow_tf32())
  cuda.set_allow_tf32(false)
end)

case("zeros, full and fill_ on the GPU", function()
  cell.set_device("GPU")
  local ok, err = pcall(function()
    local z = cell.zeros { 3, 5 }
    assert.are.equal("GPU:0", z.device)
    close(z, cell.zeros({ 3, 5 }):move_to("CPU"), 0, 0)
    local f = cell.full({ 4 }, 2.5)
    close(f, cell.full({ 4 }, 2.5):move_to("CPU"), 0, 0)
  end)
  cell.set_device("CPU")
  assert(ok, err)
  local g = cell.zeros({ 6 }, cell.int64):move_to("GPU")
  g:fill_(7)
  assert.are.same({ 7, 7, 7, 7, 7, 7 }, g:move_to("CPU"):totable())
  for _, dt in ipairs { "float16", "bfloat16" } do -- rounded as the CPU rounds
    local h = cell.zeros({ 5 }, cell[dt])
    local gh = h:move_to("GPU")
    gh:fill_(0.1)
    h:fill_(0.1)
    close(gh, h, 0, 0)
  end
end)

case("clone and contiguous", function()
  local a = cell.randn { 3, 4 }
  local g = a:move_to("GPU")
  close(g:clone(), a, 0, 0)
  close(g:contiguous(), a, 0, 0)
end)

case("copy_ into strided views: a narrowed slice and a transpose, with a cast and broadcasting", function()
  local a, b = cell.zeros { 4, 6 }, cell.randn { 4, 3 }
  local ga = a:move_to("GPU")
  ga:narrow(2, 2, 3):copy_(b:move_to("GPU"))
  a:narrow(2, 2, 3):copy_(b)
  close(ga, a, 0, 0)
  local c = cell.zeros({ 5, 4 }, cell.float64)
  local gc = c:move_to("GPU")
  local row = cell.randn { 5 }
  gc:transpose(1, 2):copy_(row:move_to("GPU"))
  c:transpose(1, 2):copy_(row)
  close(gc, c, 0, 0)
end)

case("declined kernels raise NotImplementedError, no CPU fallback", function()
  local g = cell.randn({ 4, 5 }):move_to("GPU")
  for _, f in ipairs {
    function() return g:atan2(g) end,
    function() return g:remainder(g) end,
    function() return g:pow(g) end,
  } do
    local ok, err = pcall(f)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("NotImplementedError: .* not supported on device GPU"), tostring(err))
  end
end)

case("mixing CPU and GPU tensors is a ValueError naming both", function()
  local ok, err = pcall(function() return cell.ones({ 2 }):move_to("GPU") + cell.ones { 2 } end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError", 1, true), tostring(err))
  assert.is_truthy(tostring(err):find("GPU:0", 1, true), tostring(err))
end)

case("the allocator reaches a steady state: no cudaMalloc per step", function()
  local a, b = cell.randn({ 64, 128 }):move_to("GPU"), cell.randn({ 128, 32 }):move_to("GPU")
  local function step()
    local y = a:mm(b):relu()
    return (y + y):exp()
  end
  for _ = 1, 3 do step() end
  collectgarbage()
  collectgarbage()
  cuda.synchronize()
  local before = cuda.memory_stats()
  for _ = 1, 50 do
    step()
    collectgarbage()
  end
  cuda.synchronize()
  local after = cuda.memory_stats()
  assert.are.equal(before.num_mallocs, after.num_mallocs)
  assert.is_true(after.max_allocated >= after.allocated)
  assert.is_true(after.reserved >= after.allocated)
end)

case("memory_allocated counts tensors and empty_cache returns cached blocks", function()
  collectgarbage()
  collectgarbage()
  cuda.synchronize()
  local base = cuda.memory_allocated()
  local t = cell.ones({ 1024, 1024 }):move_to("GPU") -- 4 MiB: one 4 MiB class block
  assert.are.equal(base + 4 * 1024 * 1024, cuda.memory_allocated())
  assert.is_true(cuda.max_memory_allocated() >= base + 4 * 1024 * 1024)
  t = nil
  collectgarbage()
  collectgarbage()
  assert.are.equal(base, cuda.memory_allocated())
  local held = cuda.memory_reserved()
  cuda.empty_cache()
  assert.is_true(cuda.memory_reserved() < held)
  assert.are.equal(0, cuda.memory_stats().cached)
  cuda.reset_peak_memory_stats()
  assert.are.equal(cuda.memory_allocated(), cuda.max_memory_allocated())
end)

case("an allocation past the device's memory is a MemoryError naming the size and what is in use", function()
  cell.set_device("GPU")
  local ok, err = pcall(cell.zeros, { 2 ^ 40 }, cell.int8) -- 1 TiB, made on the GPU
  cell.set_device("CPU")
  assert.is_false(ok)
  err = tostring(err)
  assert.is_truthy(err:find("MemoryError", 1, true), err)
  assert.is_truthy(err:find("1099511627776 bytes", 1, true), err)
  assert.is_truthy(err:find("in use:", 1, true), err)
  local t = cell.ones({ 4 }):move_to("GPU") -- the device still works after it
  assert.are.same({ 1, 1, 1, 1 }, t:move_to("CPU"):totable())
end)

describe("cell.cuda on the GPU", function()
  C.run(cases, 1234, "specs", it, before_each)
end)
