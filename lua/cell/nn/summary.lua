--- cell.nn.summary: a table of a network's cells, as Keras's and
-- torchsummary's summaries print: each cell (indented by depth) with its
-- class, the shape of its output on a dummy input (taken by forward hooks),
-- and its own parameters (all and trainable), then the totals.
--
--     print(cell.nn.summary(net, {1, 1, 28, 28}))   -- or net:summary({1, 1, 28, 28})
--
-- The dummy input is zeros of input_shape (one shape, or a list of shapes
-- for a network of several inputs), float32 unless `dtype` says (ones for
-- an integer dtype: class and token ids count from 1), or Tensors given; the
-- network runs once in inference mode with nothing recorded, and each
-- cell's training flag is put back after.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local rethrow = require("cell.errors").rethrow
local core = require "cell.core"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local type_name = T.type_name
local floor = math.floor

local M = {}

--- n with thousands separators: 1234567 -> "1,234,567".
local function grouped(n)
  local s = ("%d"):format(n)
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (out:gsub("^,", ""))
end

--- A shape as Python prints a tuple.
local function shape_text(out)
  if core.is_tensor(out) then return T.shape_str(out.shape) end
  if type(out) == "table" and out[1] ~= nil then
    local parts = {}
    for i = 1, #out do parts[i] = shape_text(out[i]) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return type_name(out)
end

local function is_shape(v)
  if type(v) ~= "table" or core.is_tensor(v) then return false end
  for i = 1, #v do
    local d = v[i]
    if type(d) ~= "number" or d ~= floor(d) or d < 0 or d == math.huge then return false end
  end
  return next(v) == nil or #v > 0
end

--- The dummy inputs for input_shape: a list of tensors.
local function inputs_of(input_shape, dtype)
  local fill = dtype.is_floating_point and core.zeros or core.ones -- ids count from 1
  if core.is_tensor(input_shape) then return { input_shape } end
  if is_shape(input_shape) then return { fill(input_shape, dtype) } end
  if type(input_shape) == "table" and #input_shape > 0 then
    local out = {}
    for i = 1, #input_shape do
      local s = input_shape[i]
      if core.is_tensor(s) then out[i] = s
      elseif is_shape(s) then out[i] = fill(s, dtype)
      else out = nil break end
    end
    if out then return out end
  end
  raise(("ValueError: For 'summary', the 'input_shape' must be a shape (a list of integers >= 0), a list of shapes "
    .. "or Tensors, but got %s."):format(type(input_shape) == "table" and "a table of other values" or type_name(input_shape)))
end

local OPTIONS = { "input_shape", "dtype", "print" }

--- summary(net, input_shape [, dtype = cell.float32, print = true]) (or
-- net, {input_shape =, dtype =, print =}): the table as a string, also
-- printed (io.write) unless print = false.
function M.summary(net, ...)
  if not I.is_cell(net) then
    raise(("TypeError: For 'summary', the 'net' must be a Cell, but got %s."):format(type_name(net)))
  end
  local input_shape, dtype, show = args_util.parse("summary", OPTIONS, 3, select("#", ...), ...)
  if input_shape == nil then
    raise("TypeError: For 'summary', the 'input_shape' is missing: give the shape of one input, such as {1, 3, 32, 32}.")
  end
  if dtype ~= nil and not core.is_dtype(dtype) then
    raise(("TypeError: For 'summary', the 'dtype' must be a dtype, but got %s."):format(type_name(dtype)))
  end
  if show ~= nil and type(show) ~= "boolean" then
    raise(("TypeError: For 'summary', the 'print' must be a boolean, but got %s."):format(type_name(show)))
  end
  local inputs = inputs_of(input_shape, dtype or core.float32)
  local cells, outputs, handles, modes = {}, {}, {}, {}
  for name, c in net:cells_and_names() do
    cells[#cells + 1] = { name, c }
    modes[#modes + 1] = { c, c.training }
    handles[#handles + 1] = c:register_forward_hook(function(cc, _, out)
      if outputs[cc] == nil then outputs[cc] = shape_text(out) end
    end)
  end
  net:set_train(false)
  local ok, err = pcall(function()
    require("cell.autograd").no_grad(function() return net((unpack or table.unpack)(inputs)) end)
  end)
  for _, h in ipairs(handles) do h:remove() end
  for _, m in ipairs(modes) do m[1].training = m[2] end
  if not ok then rethrow(err) end

  local rows, seen = {}, {}
  local total, trainable = 0, 0
  for _, e in ipairs(cells) do
    local name, c = e[1], e[2]
    local depth = name == "" and 0 or select(2, name:gsub("%.", "")) + 1
    local own, own_train = 0, 0
    for _, p in c:parameters_and_names("", false) do
      local n = p:numel()
      own = own + n
      if p.requires_grad then own_train = own_train + n end
      if not seen[p] then
        seen[p] = true
        total = total + n
        if p.requires_grad then trainable = trainable + n end
      end
    end
    local label = (name == "" and "" or (name .. " ")) .. "(" .. T.class_name(c) .. ")"
    rows[#rows + 1] = { string.rep("  ", depth) .. label, outputs[c] or "-", grouped(own), grouped(own_train) }
  end
  local head = { "Layer (type)", "Output Shape", "Param #", "Trainable #" }
  local w = {}
  for i = 1, 4 do
    w[i] = #head[i]
    for _, r in ipairs(rows) do if #r[i] > w[i] then w[i] = #r[i] end end
  end
  local function line(r)
    return ("%-" .. w[1] .. "s  %-" .. w[2] .. "s  %" .. w[3] .. "s  %" .. w[4] .. "s"):format(r[1], r[2], r[3], r[4])
  end
  local width = w[1] + w[2] + w[3] + w[4] + 6
  local out = { string.rep("-", width), line(head), string.rep("=", width) }
  for _, r in ipairs(rows) do out[#out + 1] = line(r) end
  out[#out + 1] = string.rep("=", width)
  out[#out + 1] = "Total params: " .. grouped(total)
  out[#out + 1] = "Trainable params: " .. grouped(trainable)
  out[#out + 1] = "Non-trainable params: " .. grouped(total - trainable)
  out[#out + 1] = string.rep("-", width)
  local text = table.concat(out, "\n") .. "\n"
  if show ~= false then io.write(text) end
  return text
end

return M
