--- opdiff_runner.lua - runs one case of spec/fixtures/opdiff_fixtures.lua
-- (written by spec/fixtures/gen_opdiff.py) on cell and says how it differs
-- from PyTorch's result: nil when it agrees, else a sentence.
--   local run = require "helpers.opdiff_runner"
--   local why = run(case)
local cell = require "cell"
local H = require "helpers"

local unpack = table.unpack or unpack

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

--- The Lua value of a fixture argument: tensors in their layout, lists,
-- nil, dtypes and option tables.
local function build(a)
  if type(a) ~= "table" then return a end
  if a.__nil then return nil end
  if a.__dtype then return cell[a.__dtype] end
  if a.__t then
    local dt, shape = cell[a.dtype], a.shape
    if H.numel(shape) == 0 then return cell.zeros(shape, dt) end
    if a.layout == "T" then
      local n, base = #shape, copy(shape)
      base[n - 1], base[n] = shape[n], shape[n - 1]
      return cell.tensor(a.data, dt):reshape(base):transpose(-1, -2)
    elseif a.layout == "E" then
      local base = copy(shape)
      base[1] = 1
      return cell.tensor(a.data, dt):reshape(base):expand(shape)
    end
    return cell.tensor(a.data, dt):reshape(shape)
  end
  if a.__list then
    local out = {}
    for i, x in ipairs(a.items) do out[i] = build(x) end
    return out
  end
  local out = {}
  for k, v in pairs(a) do out[k] = build(v) end
  return out
end

local OPERATORS = {
  __add = function(a, b) return a + b end,
  __sub = function(a, b) return a - b end,
  __mul = function(a, b) return a * b end,
  __div = function(a, b) return a / b end,
  __pow = function(a, b) return a ^ b end,
  __unm = function(a) return -a end,
}

--- Every result of the call, as a list (a single plain-table result, such as
-- split's list of views, is that list).
local function call(c, args)
  local fn = OPERATORS[c.op] or cell.ops[c.op] or cell.Tensor[c.op] or cell[c.op]
  if not fn then error("no cell.ops." .. c.op) end
  local res = table.pack(fn(unpack(args, 1, c.n)))
  if res.n == 1 and type(res[1]) == "table" and not cell.is_tensor(res[1]) then return res[1] end
  res.n = nil
  return res
end

local function close(g, e, tol)
  if e ~= e then return g ~= g end
  if e == math.huge or e == -math.huge then return g == e end
  if type(g) ~= "number" or g ~= g then return false end
  return math.abs(g - e) <= tol.atol + tol.rtol * math.abs(e)
end

local TOLS = {
  -- float32: sums of a few dozen products (conv, matmul) cancel to values
  -- near zero whose last bits depend on the order of the sum (the ASan
  -- build's differs), hence an absolute 1e-5
  float32 = { atol = 1e-5, rtol = 1e-5 },
  float64 = { atol = 1e-12, rtol = 1e-10 },
  float16 = { atol = 1e-3, rtol = 1e-3 },   -- one rounding of float16 (2^-11)
  bfloat16 = { atol = 1e-2, rtol = 8e-3 },  -- one rounding of bfloat16 (2^-8)
}

local function shape_str(s) return "[" .. table.concat(s, ",") .. "]" end

local function num_str(v)
  if type(v) == "number" then return ("%.9g"):format(v) end
  return tostring(v)
end

--- nil when tensor `got` is the fixture tensor `e`, else what differs.
local function compare(got, e, ctol)
  if not cell.is_tensor(got) then
    if type(e) == "table" then return "a " .. type(got) .. " where PyTorch gives a tensor" end
    if got == e or (type(got) == "number" and close(got, e, TOLS.float64)) then return nil end
    return ("%s where PyTorch gives %s"):format(num_str(got), num_str(e))
  end
  if type(e) ~= "table" then return "a tensor where PyTorch gives " .. num_str(e) end
  local gdt = got.dtype.name
  if gdt ~= e.dtype then return ("dtype %s where PyTorch gives %s"):format(gdt, e.dtype) end
  if not H.same_shape(got.shape, e.shape) then
    return ("shape %s where PyTorch gives %s"):format(shape_str(got.shape), shape_str(e.shape))
  end
  local flat = H.flatten(got:totable())
  local tol = TOLS[e.dtype] or { atol = 0, rtol = 0 }
  if ctol then tol = { atol = ctol, rtol = ctol } end
  for k = 1, #e.data do
    local g, x = flat[k], e.data[k]
    if type(x) == "boolean" then
      if g ~= x then return ("element %d is %s where PyTorch gives %s"):format(k, tostring(g), tostring(x)) end
    elseif not close(g, x, tol) then
      return ("element %d is %s where PyTorch gives %s"):format(k, num_str(g), num_str(x))
    end
  end
  return nil
end

local function compare_out(res, out, ctol)
  if type(out) == "table" and out.__list then
    if #res < #out.items then
      return ("%d results where PyTorch gives %d"):format(#res, #out.items)
    end
    for i, e in ipairs(out.items) do
      local why = compare(res[i], e, ctol)
      if why then return "result " .. i .. ": " .. why end
    end
    return nil
  end
  return compare(res[1], out, ctol)
end

local function check_grad(c, args)
  local gr = c.grad
  local w = cell.tensor(gr.w, cell.float64):reshape(gr.wshape)
  local function f(...)
    local a, v = copy(args), { ... }
    for i, p in ipairs(gr.pos) do a[p] = v[i] end
    local res = call(c, a)
    return (res[1] * w):sum()
  end
  local which = {}
  local inputs = {}
  for i, p in ipairs(gr.pos) do
    which[i] = i
    inputs[i] = args[p]
  end
  local ok, g = pcall(cell.grad(f, #which == 1 and 1 or which), unpack(inputs))
  if not ok then return "gradient raised " .. tostring(g) end
  if cell.is_tensor(g) then g = { g } end
  for i, p in ipairs(gr.pos) do
    local e = { dtype = "float64", shape = args[p].shape, data = gr.g[i] }
    local why = compare(g[i], e, c.tol)
    if why then return "gradient of argument " .. p .. ": " .. why end
  end
  return nil
end

return function(c)
  local ok, args = pcall(function()
    local a = {}
    for i = 1, c.n do a[i] = build(c.args[i]) end
    return a
  end)
  if not ok then return "building the inputs raised " .. tostring(args) end
  local res
  ok, res = pcall(call, c, args)
  if c.error then
    if ok then return "no error where PyTorch raises " .. c.error end
    return nil
  end
  if not ok then return "raised " .. tostring(res) end
  local why = compare_out(res, c.out, c.tol)
  if why then return why end
  if c.grad then return check_grad(c, args) end
  return nil
end
