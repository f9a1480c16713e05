--- Ops written in Lua on top of the engine's: addmm and outer (Tensor
-- methods and cell.ops functions), einsum, meshgrid and one_hot (cell.ops
-- functions). Each is a composition of differentiable engine ops, so
-- gradients come from their rules. `install` adds the methods to the C
-- methods table; `functions` lists what cell.ops adds.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local errors = require "cell.errors"
local check_tensor = errors.check_tensor
local raise = errors.raise
local core = require "cell.core"

local M = {}

local types = require "cell.util.types"
local shape_str = types.shape_list -- "[2, 3]", as the engine's messages print shapes
local is_int = types.is_int

--- addmm(input, mat1, mat2 [, {beta = 1, alpha = 1}]) or
-- addmm(input, mat1, mat2, beta, alpha): beta * input + alpha * (mat1 @ mat2).
-- input broadcasts to the product's shape; with beta == 0 it is ignored
-- (NaN in it does not spread), as in PyTorch and MindSpore.
function M.addmm(input, mat1, mat2, beta, alpha)
  check_tensor("addmm", "input", input)
  check_tensor("addmm", "mat1", mat1)
  check_tensor("addmm", "mat2", mat2)
  if type(beta) == "table" then
    local opts = beta
    for k in pairs(opts) do
      if k ~= "beta" and k ~= "alpha" then
        raise(("TypeError: addmm: unknown option '%s' (the options are beta, alpha)"):format(tostring(k)))
      end
    end
    beta, alpha = opts.beta, opts.alpha
  end
  if beta == nil then beta = 1 end
  if alpha == nil then alpha = 1 end
  if type(beta) ~= "number" then raise(("TypeError: addmm: beta must be a number, got %s"):format(type(beta))) end
  if type(alpha) ~= "number" then raise(("TypeError: addmm: alpha must be a number, got %s"):format(type(alpha))) end
  if mat1.ndim ~= 2 or mat2.ndim ~= 2 then
    raise(("ValueError: addmm: mat1 and mat2 must be 2-D, got shapes %s and %s")
      :format(shape_str(mat1.shape), shape_str(mat2.shape)))
  end
  local s1, s2 = mat1.shape, mat2.shape
  if s1[2] ~= s2[1] then
    raise(("ValueError: addmm: shapes %s and %s cannot be multiplied"):format(shape_str(s1), shape_str(s2)))
  end
  local out_shape = { s1[1], s2[2] }
  local ish = input.shape
  local fits = #ish <= 2
  for i = 1, #ish do
    local want = out_shape[2 - #ish + i]
    if ish[i] ~= 1 and ish[i] ~= want then fits = false end
  end
  if not fits then
    raise(("ValueError: addmm: input of shape %s does not broadcast to the product's shape %s")
      :format(shape_str(ish), shape_str(out_shape)))
  end
  local prod = mat1:mm(mat2)
  if alpha ~= 1 then prod = prod * alpha end
  if beta == 0 then return prod end -- input only fixes the shape, which already fits
  if beta == 1 then return input + prod end
  return input * beta + prod
end

--- outer(x, y): the outer product of two 1-D tensors, {#x, #y}.
function M.outer(x, y)
  check_tensor("outer", "input", x)
  check_tensor("outer", "vec2", y)
  if x.ndim ~= 1 or y.ndim ~= 1 then
    raise(("ValueError: outer: both tensors must be 1-D, got shapes %s and %s")
      :format(shape_str(x.shape), shape_str(y.shape)))
  end
  return x:reshape({ x.shape[1], 1 }) * y:reshape({ 1, y.shape[1] })
end

--- meshgrid(x, y, ... [, {indexing = "xy"}]) or meshgrid({x, y, ...} [, opts]):
-- coordinate grids from 0-D or 1-D tensors, one N-D tensor per input (a
-- Lua list). indexing "xy" (the default, as MindSpore's) swaps the first
-- two output dimensions; "ij" keeps the inputs' order. The grids are
-- expanded views.
function M.meshgrid(...)
  local args = { ... }
  local n = select("#", ...)
  local opts
  if n > 0 and type(args[n]) == "table" and not core.is_tensor(args[n]) and args[n][1] == nil then
    opts = args[n]
    n = n - 1
  end
  local inputs = {}
  if n == 1 and type(args[1]) == "table" and not core.is_tensor(args[1]) then
    inputs = args[1]
  else
    for i = 1, n do inputs[i] = args[i] end
  end
  local indexing = "xy"
  if opts then
    for k in pairs(opts) do
      if k ~= "indexing" then
        raise(("TypeError: meshgrid: unknown option '%s' (the options are indexing)"):format(tostring(k)))
      end
    end
    if opts.indexing ~= nil then indexing = opts.indexing end
  end
  if type(indexing) ~= "string" then
    raise(("TypeError: meshgrid: indexing must be a string, got %s"):format(type(indexing)))
  end
  if indexing ~= "xy" and indexing ~= "ij" then
    raise(("ValueError: meshgrid: indexing must be 'xy' or 'ij', got '%s'"):format(indexing))
  end
  local count = #inputs
  if count == 0 then raise("ValueError: meshgrid: expected at least one tensor") end
  local sizes = {}
  for i = 1, count do
    local t = check_tensor("meshgrid", ("input %d"):format(i), inputs[i])
    if t.ndim > 1 then
      raise(("ValueError: meshgrid: input %d must be 0-D or 1-D, got shape %s"):format(i, shape_str(t.shape)))
    end
    sizes[i] = t:numel()
  end
  local swap = indexing == "xy" and count >= 2
  local shape = {}
  for i = 1, count do shape[i] = sizes[i] end
  if swap then shape[1], shape[2] = shape[2], shape[1] end
  local out = {}
  for i = 1, count do
    local pos = i
    if swap and i <= 2 then pos = 3 - i end
    local view = {}
    for j = 1, count do view[j] = 1 end
    view[pos] = sizes[i]
    out[i] = inputs[i]:reshape(view):expand(shape)
  end
  return out
end

--- one_hot(indices, depth [, on_value = 1 [, off_value = 0 [, axis = -1]]]):
-- a new dimension of size depth at axis holding on_value at each index's
-- class and off_value elsewhere. Indices are 1-based class ids (1 to
-- depth), as cell's losses and embeddings count them; one outside that
-- range is an IndexError. on_value and off_value are numbers (the result
-- is int64 when both are integers, float32 otherwise) or 0-D tensors (the
-- result has their promoted dtype, and gradients reach them).
function M.one_hot(indices, depth, on_value, off_value, axis)
  check_tensor("one_hot", "indices", indices)
  local dt = indices.dtype
  if dt ~= core.int64 and dt ~= core.int32 and dt ~= core.uint8 and dt ~= core.int8 then
    raise(("TypeError: one_hot: indices must be an integer tensor, got %s"):format(tostring(dt)))
  end
  if not is_int(depth) then
    raise(("TypeError: one_hot: depth must be an integer, got %s"):format(tostring(depth)))
  end
  if depth < 0 then raise(("ValueError: one_hot: depth must be >= 0, got %d"):format(depth)) end
  if on_value == nil then on_value = 1 end
  if off_value == nil then off_value = 0 end
  for _, v in ipairs { { "on_value", on_value }, { "off_value", off_value } } do
    local x = v[2]
    if core.is_tensor(x) then
      if x.ndim ~= 0 then
        raise(("ValueError: one_hot: %s must be a number or a 0-D tensor, got shape %s"):format(v[1],
          shape_str(x.shape)))
      end
    elseif type(x) ~= "number" then
      raise(("TypeError: one_hot: %s must be a number or a 0-D tensor, got %s"):format(v[1], type(x)))
    end
  end
  local nd = indices.ndim
  if axis == nil then axis = -1 end
  if not is_int(axis) then raise(("TypeError: one_hot: axis must be an integer, got %s"):format(tostring(axis))) end
  if axis < -(nd + 1) or axis > nd + 1 or axis == 0 then
    raise(("ValueError: one_hot: axis must be in [%d, %d] and not 0 for a %d-D input, got %d")
      :format(-(nd + 1), nd + 1, nd, axis))
  end
  local pos = axis < 0 and nd + 2 + axis or axis -- 1-based position of the new dim
  if indices:numel() > 0 then
    local lo, hi = indices:min():item(), indices:max():item()
    if lo < 1 or hi > depth then
      local bad = lo < 1 and lo or hi
      raise(("IndexError: one_hot: class id %d is out of range 1 to %d (class ids are 1-based)"):format(bad, depth))
    end
  end
  local classes
  if depth > 0 then classes = core.arange(1, depth + 1, core.int64) else classes = core.zeros({ 0 }, core.int64) end
  local view = {}
  for j = 1, nd + 1 do view[j] = 1 end
  view[pos] = depth
  local hit = indices:unsqueeze(pos):astype(core.int64):eq(classes:reshape(view))
  local function value(x, like)
    if core.is_tensor(x) then return x end
    return core.full({}, x, like)
  end
  local odt
  if core.is_tensor(on_value) or core.is_tensor(off_value) then
    local a = core.is_tensor(on_value) and on_value or nil
    local b = core.is_tensor(off_value) and off_value or nil
    odt = (a and b) and (a + b).dtype or (a or b).dtype
  else
    odt = (is_int(on_value) and is_int(off_value)) and core.int64 or core.float32
  end
  local on, off = value(on_value, odt), value(off_value, odt)
  if on.dtype ~= odt then on = on:astype(odt) end
  if off.dtype ~= odt then off = off:astype(odt) end
  return core.where(hit, on, off)
end

--- einsum lives in cell.einsum, loaded on first use.
function M.einsum(...)
  return require("cell.einsum").einsum(...)
end

--- The cell.ops functions of this module.
M.functions = { "addmm", "outer", "einsum", "meshgrid", "one_hot" }

function M.install(Tensor)
  Tensor.addmm = M.addmm
  Tensor.outer = M.outer
end

return M
