-- cell.cuda's selection and indexing kernels against the CPU's: where and
-- masked_fill (every dtype, promotion, broadcasting, strided inputs,
-- gradients), cat and stack (any dim, mixed dtypes, strided inputs,
-- gradients), index_select, gather and scatter (int32 / int64 indices,
-- strided inputs, the CPU's IndexError for an index out of range) and
-- scatter_add_ through the gradients of gather and index_select (repeated
-- indices add up). Runs only where cell.cuda.is_available(); elsewhere it
-- prints how many it skipped.
local cell = require "cell"
local cuda = require "cell.cuda"

local C = require "cuda.compare"
local close = C.close

local function G(t) return t:move_to("GPU") end

local cases = {}
local function case(name, f) cases[#cases + 1] = { name = name, f = f } end

local dtypes = { "float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool" }

-- A tensor of shape s and dtype dt (small integers for the integer dtypes),
-- or its strided twin: the transpose of the reversed last two dims.
local function input(s, dt, strided)
  local shape = s
  if strided and #s >= 2 then
    shape = {}
    for i = 1, #s do shape[i] = s[i] end
    shape[#s - 1], shape[#s] = s[#s], s[#s - 1]
  end
  local t
  if dt == "bool" then
    t = cell.randn(shape):gt(0)
  elseif dt:find "int" then
    t = cell.randint(0, 9, shape):astype(cell[dt])
  else
    t = cell.randn(shape):astype(cell[dt])
  end
  if strided and #s >= 2 then t = t:transpose(#s - 1, #s) end
  return t
end

-- where and masked_fill.
for _, dt in ipairs(dtypes) do
  for _, strided in ipairs { false, true } do
    case(("where %s%s"):format(dt, strided and " strided" or ""), function()
      local c = input({ 5, 7 }, "bool", strided)
      local a, b = input({ 5, 7 }, dt, strided), input({ 5, 7 }, dt, not strided)
      close(cell.where(G(c), G(a), G(b)), cell.where(c, a, b), 0, 0)
      -- broadcasting: a row condition, a column operand
      local cr, bc = input({ 7 }, "bool"), input({ 5, 1 }, dt)
      close(cell.where(G(cr), G(a), G(bc)), cell.where(cr, a, bc), 0, 0)
    end)
    case(("masked_fill %s%s"):format(dt, strided and " strided" or ""), function()
      local a, m = input({ 6, 9 }, dt, strided), input({ 6, 9 }, "bool", not strided)
      local v = dt == "bool" and 1 or 2.5
      close(G(a):masked_fill(G(m), v), a:masked_fill(m, v), 0, 0)
      local mr = input({ 9 }, "bool")
      close(G(a):masked_fill(G(mr), -3), a:masked_fill(mr, -3), 0, 0)
    end)
  end
end

case("where promotes mixed dtypes as the CPU does", function()
  local c = input({ 4, 6 }, "bool")
  for _, p in ipairs { { "int32", "float32" }, { "float16", "float64" }, { "int8", "int64" }, { "bool", "float32" } } do
    local a, b = input({ 4, 6 }, p[1]), input({ 4, 6 }, p[2])
    close(cell.where(G(c), G(a), G(b)), cell.where(c, a, b), 0, 0)
  end
end)

case("where and masked_fill errors are the CPU's", function()
  local a = cell.randn { 3, 4 }
  local ok, err = pcall(cell.where, G(a), G(a), G(a))
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("TypeError: where: the condition must be a Bool tensor, got Float32", 1, true),
    tostring(err))
  ok, err = pcall(cell.where, G(a:gt(0)), G(a), G(cell.randn { 5 }))
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError: where: shapes [3, 4] and [5] cannot be broadcast", 1, true),
    tostring(err))
  ok, err = pcall(function() return G(a):masked_fill(G(a), 0) end)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("TypeError: masked_fill: the mask must be a Bool tensor", 1, true), tostring(err))
end)

case("where and masked_fill gradients", function()
  local x, y, r = cell.randn { 5, 6 }, cell.randn { 5, 6 }, cell.randn { 5, 6 }
  local c = x:gt(y)
  local function loss(a, b, w, cc) return ((cell.where(cc, a, b) + a:masked_fill(cc, 0)) * w):sum() end
  local gc = cell.grad(loss, { 1, 2 })(x, y, r, c)
  local gg = cell.grad(loss, { 1, 2 })(G(x), G(y), G(r), G(c))
  close(gg[1], gc[1], 1e-6, 1e-6)
  close(gg[2], gc[2], 1e-6, 1e-6)
end)

-- pad (constant; negative pads crop) and the scatter gradient of a source
-- larger than the index (which pads).
for _, dt in ipairs { "float32", "float16", "int64", "bool" } do
  case(("pad %s, strided, cropping"):format(dt), function()
    local a = input({ 3, 4, 5 }, dt, true)
    local v = dt == "bool" and 1 or -1.5
    for _, p in ipairs { { 1, 2 }, { 0, 1, 2, 0 }, { 1, 1, 1, 1, 1, 1 }, { -1, 2, 0, -2 }, {} } do
      close(G(a):pad(p, v), a:pad(p, v), 0, 0)
    end
  end)
end

case("pad errors are the CPU's; pad and scatter gradients", function()
  local a = cell.randn { 2, 3 }
  local _, cerr = pcall(a.pad, a, { -2, -2 })
  local ok, gerr = pcall(a.pad, G(a), { -2, -2 })
  assert.is_false(ok)
  assert.is_truthy(tostring(gerr):find("ValueError: ", 1, true), tostring(gerr))
  local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
  assert.are.equal(msg(cerr), msg(gerr))
  local r = cell.randn { 4, 6 }
  local function loss(x, w) return (x:pad({ 2, 1, 1, 1 }) * w):sum() end
  close(cell.grad(loss, 1)(G(a), G(r)), cell.grad(loss, 1)(a, r), 0, 0)
  local src, idx = cell.randn { 3, 4 }, cell.tensor({ { 2 }, { 1 } }, cell.int64)
  local w = cell.randn { 2, 3 }
  local function sl(x, s, ww, i) return (x:scatter(2, i, s) * ww):sum() end
  local gc = cell.grad(sl, 2)(a, src, w, idx)
  local gg = cell.grad(sl, 2)(G(a), G(src), G(w), G(idx))
  close(gg, gc, 1e-6, 1e-6)
end)

-- flip, tile, repeat_interleave, tril / triu (every dtype, strided inputs)
-- and their gradients.
for _, dt in ipairs { "float32", "float16", "int64", "bool" } do
  case(("flip, tile, repeat_interleave, tril and triu %s, strided"):format(dt), function()
    local a = input({ 3, 4, 5 }, dt, true)
    for _, dims in ipairs { { 1 }, { 3 }, { 1, 2, 3 } } do close(G(a):flip(dims), a:flip(dims), 0, 0) end
    close(G(a):flip(2), a:flip(2), 0, 0)
    close(G(a):tile { 2, 1, 3 }, a:tile { 2, 1, 3 }, 0, 0)
    close(G(a):tile { 2, 1, 1, 2 }, a:tile { 2, 1, 1, 2 }, 0, 0)
    for dim = 1, 3 do close(G(a):repeat_interleave(3, dim), a:repeat_interleave(3, dim), 0, 0) end
    for _, k in ipairs { 0, 1, -2 } do
      close(G(a):tril(k), a:tril(k), 0, 0)
      close(G(a):triu(k), a:triu(k), 0, 0)
    end
  end)
end

case("flip, tile, repeat_interleave and tril gradients", function()
  local x, r = cell.randn { 4, 5 }, cell.randn { 8, 5 }
  local function loss(u, w)
    return (u:flip { 1 }:tile { 2, 1 } * w):sum() + (u:repeat_interleave(2, 1) * w):sum() + (u:tril() * u):sum()
  end
  close(cell.grad(loss, 1)(G(x), G(r)), cell.grad(loss, 1)(x, r), 1e-6, 1e-6)
end)

-- cat and stack.
for _, dt in ipairs(dtypes) do
  for _, dim in ipairs { 1, 2, 3 } do
    case(("cat and stack %s dim %d"):format(dt, dim), function()
      local a, b, c = input({ 3, 4, 5 }, dt), input({ 3, 4, 5 }, dt, true), input({ 3, 4, 5 }, dt)
      close(cell.cat({ G(a), G(b), G(c) }, dim), cell.cat({ a, b, c }, dim), 0, 0)
      close(cell.stack({ G(a), G(b), G(c) }, dim), cell.stack({ a, b, c }, dim), 0, 0)
    end)
  end
end

case("cat of different sizes along the dim, a last-dim stack and mixed dtypes", function()
  local a, b = cell.randn { 2, 3, 4 }, cell.randn { 2, 5, 4 }
  close(cell.cat({ G(a), G(b) }, 2), cell.cat({ a, b }, 2), 0, 0)
  close(cell.stack({ G(a), G(a) }, 4), cell.stack({ a, a }, 4), 0, 0)
  local i = cell.randint(0, 9, { 2, 3, 4 }):astype(cell.int32)
  local h = cell.randn({ 2, 3, 4 }):astype(cell.float16)
  close(cell.cat({ G(a), G(i), G(h) }, 3), cell.cat({ a, i, h }, 3), 0, 0)
  close(cell.stack({ G(i), G(h) }, 1), cell.stack({ i, h }, 1), 0, 0)
  local e = cell.zeros { 2, 0, 4 }
  close(cell.cat({ G(a), G(e), G(b) }, 2), cell.cat({ a, e, b }, 2), 0, 0)
end)

case("cat and stack errors are the CPU's", function()
  local a, b = cell.randn { 2, 3 }, cell.randn { 3, 3 }
  local ok, err = pcall(cell.stack, { G(a), G(b) }, 1)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError: stack: expects tensors of the same shape, got [2, 3] (element 1) and [3, 3] (element 2)", 1,
    true), tostring(err))
  ok, err = pcall(cell.cat, { G(a), G(cell.randn { 2, 4 }) }, 1)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find("ValueError: cat: tensors must have the same number of dimensions", 1, true),
    tostring(err))
end)

case("cat and stack gradients", function()
  local a, b, r1, r2 = cell.randn { 3, 4 }, cell.randn { 3, 2 }, cell.randn { 3, 6 }, cell.randn { 2, 3, 4 }
  local function loss(x, y, w1, w2) return (cell.cat({ x, y }, 2) * w1):sum() + (cell.stack({ x, x * 2 }, 1) * w2):sum() end
  local gc = cell.grad(loss, { 1, 2 })(a, b, r1, r2)
  local gg = cell.grad(loss, { 1, 2 })(G(a), G(b), G(r1), G(r2))
  close(gg[1], gc[1], 1e-6, 1e-6)
  close(gg[2], gc[2], 1e-6, 1e-6)
end)

case("split and chunk gradients", function()
  local a, r = cell.randn { 6, 5 }, cell.randn { 6, 5 }
  local function loss(x, w)
    local p = x:split(2, 1)
    local q = x:chunk(3, 2)
    return (p[1] * w:narrow(1, 1, 2)):sum() + (p[3] * 2):sum() + (q[2] * q[2]):sum()
  end
  close(cell.grad(loss, 1)(G(a), G(r)), cell.grad(loss, 1)(a, r), 1e-6, 1e-6)
end)

-- index_select, gather, scatter.
for _, dt in ipairs { "float32", "float64", "float16", "int64", "int8", "bool" } do
  for _, idt in ipairs { "int64", "int32" } do
    case(("index_select, gather and scatter %s, %s indices"):format(dt, idt), function()
      local a = input({ 4, 6, 5 }, dt, true)
      for dim = 1, 3 do
        local size = a.shape[dim]
        local ix = cell.randint(1, size + 1, { 7 }):astype(cell[idt])
        close(G(a):index_select(dim, G(ix)), a:index_select(dim, ix), 0, 0)
        local shape = { 3, 4, 2 }
        shape[dim] = 5
        local gi = cell.randint(1, size + 1, shape):astype(cell[idt])
        close(G(a):gather(dim, G(gi)), a:gather(dim, gi), 0, 0)
      end
      -- scatter along dim 2: each (i, ., k) a cyclic shift of 1..6 (no
      -- target written twice), from a larger source
      local rows = {}
      for i = 1, 2 do
        rows[i] = {}
        for j = 1, 6 do
          rows[i][j] = {}
          for k = 1, 3 do rows[i][j][k] = (j - 1 + i + k) % 6 + 1 end
        end
      end
      local idx = cell.tensor(rows, cell[idt])
      local src = input({ 3, 6, 4 }, dt)
      close(G(a):scatter(2, G(idx), G(src)), a:scatter(2, idx, src), 0, 0)
    end)
  end
end

case("an index out of range is the CPU's IndexError and leaves the device working", function()
  local a = cell.randn { 4, 3 }
  local bad = cell.tensor({ 1, 9, 2 }, cell.int64)
  for _, f in ipairs {
    function(t, i) return t:index_select(1, i) end,
    function(t, i) return t:gather(1, i:reshape { 3, 1 }) end,
    function(t, i) return t:scatter(1, i:reshape { 3, 1 }, t) end,
  } do
    local _, cerr = pcall(f, a, bad)
    local ok, gerr = pcall(f, G(a), G(bad))
    assert.is_false(ok)
    assert.is_truthy(tostring(gerr):find("IndexError: ", 1, true), tostring(gerr))
    assert.is_truthy(tostring(gerr):find("index 9 is out of range for a dimension of size 4", 1, true), tostring(gerr))
    local function msg(e) return (tostring(e):gsub("^.-:%d+: ", "")) end
    assert.are.equal(msg(cerr), msg(gerr))
  end
  close(G(a):index_select(1, G(cell.tensor({ 4, 1 }, cell.int64))), a:index_select(1, cell.tensor({ 4, 1 }, cell.int64)),
    0, 0)
end)

case("gather and index_select gradients: repeated indices add up (scatter_add_)", function()
  for _, dt in ipairs { "float32", "float64" } do
    local a = cell.randn({ 5, 6 }):astype(cell[dt])
    local gi = cell.tensor({ { 1, 1, 2 }, { 6, 6, 6 }, { 3, 2, 1 }, { 1, 1, 1 } }, cell.int64)
    local si = cell.tensor({ 2, 2, 5, 1, 2 }, cell.int32)
    local r1, r2 = cell.randn({ 4, 3 }):astype(cell[dt]), cell.randn({ 5, 5 }):astype(cell[dt])
    local function loss(x, w1, w2, i1, i2) return (x:gather(2, i1) * w1):sum() + (x:index_select(2, i2) * w2):sum() end
    local gc = cell.grad(loss, 1)(a, r1, r2, gi, si)
    local gg = cell.grad(loss, 1)(G(a), G(r1), G(r2), G(gi), G(si))
    close(gg, gc, 1e-6, 1e-12)
  end
end)

case("scatter gradient of the input and the source", function()
  local a, src, r = cell.randn { 3, 4 }, cell.randn { 3, 2 }, cell.randn { 3, 4 }
  local idx = cell.tensor({ { 2, 4 }, { 1, 3 }, { 4, 1 } }, cell.int64)
  local function loss(x, s, w, i) return (x:scatter(2, i, s) * w):sum() end
  local gc = cell.grad(loss, { 1, 2 })(a, src, r, idx)
  local gg = cell.grad(loss, { 1, 2 })(G(a), G(src), G(r), G(idx))
  close(gg[1], gc[1], 1e-6, 1e-6)
  close(gg[2], gc[2], 1e-6, 1e-6)
end)

describe("cell.cuda selection and indexing on the GPU", function()
  C.run(cases, 4321, "specs", it, before_each)
end)
