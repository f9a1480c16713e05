--- cell.nn.layer_args: what the layer and loss cells share for their
-- arguments: options tables or positional arguments, MindSpore's checks of
-- integers, pairs and booleans with "For 'Layer', ..." messages, and the
-- Python-style text of numbers and tuples their extend_repr prints.
-- Every checker raises at level `lvl` of its caller's frame (the caller
-- passes the level that points at the user's line).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local I = require "cell.nn.internal"
local T = require "cell.util.types"
local args_util = require "cell.util.args"

local A = {}

local type_name = T.type_name

--- Whether `t` is an options table: a plain table with no sequence part
-- (so a stride pair {1, 2} is a value, and {stride = 2} is options).
A.is_options = args_util.is_options

--- The arguments after a layer's required ones: positional (`...`), a
-- trailing options table whose keys must be among `names`, or both
-- (cell.util.args). Returns the values in the order of `names`; errors
-- point at the line that made the layer (A.args <- init <- __call <- it).
function A.args(cls, names, n, ...)
  local v = { args_util.parse(cls, names, 4, n, ...) } -- not a tail call: the levels count this frame
  return I.unpack(v, 1, #names)
end

local is_int = T.is_int

--- An int or a list of ints, as Python prints the argument: 0, (1, 1, 2, 2).
function A.int_or_tuple_str(v)
  if type(v) == "table" then return T.tuple_str(v) end
  return T.num_str(v)
end

--- A value in extend_repr text: strings bare, numbers as Python, nil/true/false as Lua.
function A.value_str(v)
  if type(v) == "number" then return T.num_str(v) end
  if type(v) == "string" then return v end
  return tostring(v)
end

--- The extend_repr of a pooling layer: kernel_size=2, stride=(1, 2), pad_mode=VALID.
function A.pool_repr(self)
  return ("kernel_size=%s, stride=%s, pad_mode=%s"):format(A.int_or_tuple_str(self.kernel_size),
    A.int_or_tuple_str(self.stride), self.pad_mode)
end

--- An initializer in extend_repr text: a Tensor by its shape and dtype,
-- a name or an Initializer as A.value_str writes it.
function A.init_str(v)
  if core.is_tensor(v) then return ("Tensor(shape=%s, dtype=%s)"):format(T.shape_str(v.shape), tostring(v.dtype)) end
  return A.value_str(v)
end

--- Check a positive integer: a non-number is a TypeError, a number that is
-- not a positive integer a ValueError; with `int_only`, a number that is not
-- an integer (2.5, inf, nan) is a TypeError too, as MindSpore's
-- Validator.check_positive_int types it (Python's float is not int) before
-- it compares it (ValueError only for an integer below 1).
function A.positive_int(cls, what, v, lvl, int_only)
  if type(v) ~= "number" or (int_only and not is_int(v)) then
    raise(("TypeError: For '%s', the '%s' must be an integer, but got %s.")
      :format(cls, what, type(v) == "number" and T.num_str(v) or type_name(v)))
  end
  if not is_int(v) or v < 1 then
    raise(("ValueError: For '%s', the '%s' must be a positive integer, but got %s."):format(cls, what, T.num_str(v)))
  end
  return v
end

--- Check a non-negative integer.
function A.nonneg_int(cls, what, v, lvl)
  if type(v) ~= "number" then
    raise(("TypeError: For '%s', the '%s' must be an integer, but got %s."):format(cls, what, type_name(v)))
  end
  if not is_int(v) or v < 0 then
    raise(("ValueError: For '%s', the '%s' must be a non-negative integer, but got %s.")
      :format(cls, what, T.num_str(v)))
  end
  return v
end

--- A plain list of numbers?
local function is_list(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n == #v
end
A.is_list = is_list

--- An int or a list of `n` (or, when `allow_one`, one) positive ints, as a
-- list of n values (MindSpore's twice()).
function A.int_tuple(cls, what, v, n, lvl, allow_one, nonneg)
  local check = nonneg and A.nonneg_int or A.positive_int
  if type(v) == "number" then
    check(cls, what, v, lvl + 1)
    local out = {}
    for i = 1, n do out[i] = v end
    return out
  end
  if not is_list(v) then
    raise(("TypeError: For '%s', the '%s' must be an integer or a list of %d integers, but got %s.")
      :format(cls, what, n, type_name(v)))
  end
  if #v ~= n and not (allow_one and #v == 1) then
    raise(("ValueError: For '%s', the '%s' must be an integer or a list of %d integers, but got %d values.")
      :format(cls, what, n, #v))
  end
  local out = {}
  for i = 1, n do
    out[i] = check(cls, what, v[#v == 1 and 1 or i], lvl + 1)
  end
  return out
end

--- A boolean, or `default` for nil.
function A.bool(cls, what, v, default, lvl)
  if v == nil then return default end
  if type(v) ~= "boolean" then
    raise(("TypeError: For '%s', the '%s' must be a boolean, but got %s."):format(cls, what, type_name(v)))
  end
  return v
end

--- A number, or `default` for nil.
function A.number(cls, what, v, default, lvl)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v then
    raise(("TypeError: For '%s', the '%s' must be a number, but got %s."):format(cls, what, type_name(v)))
  end
  return v
end

--- One of the strings in `choices` (compared in lower case when
-- `nocase`); returns the string as given.
function A.choice(cls, what, v, choices, lvl, nocase)
  if type(v) ~= "string" then
    raise(("TypeError: For '%s', the '%s' must be a string, but got %s."):format(cls, what, type_name(v)))
  end
  local key = nocase and v:lower() or v
  for i = 1, #choices do
    if choices[i] == key then return v end
  end
  raise(("ValueError: For '%s', the '%s' must be one of %s, but got '%s'.")
    :format(cls, what, T.str_list(choices), v))
end

--- The dtype option of a layer (float32 by default).
function A.float_dtype(cls, dtype, lvl)
  if dtype == nil then return core.float32 end
  if not core.is_dtype(dtype) or not dtype.is_floating_point then
    raise(("TypeError: For '%s', the 'dtype' must be a floating-point dtype (such as cell.float32), but got %s.")
      :format(cls, core.is_dtype(dtype) and tostring(dtype) or type_name(dtype)))
  end
  return dtype
end

--- A Tensor argument (or nil when `optional`).
function A.tensor(cls, what, v, lvl, optional)
  if v == nil and optional then return nil end
  if not core.is_tensor(v) then
    raise(("TypeError: For '%s', the '%s' must be a Tensor, but got %s."):format(cls, what, type_name(v)))
  end
  return v
end

--- The reduction of a loss: "mean" (default), "sum" or "none".
function A.reduction(cls, v, lvl, default)
  if v == nil then return default or "mean" end
  if v ~= "mean" and v ~= "sum" and v ~= "none" then
    raise(("ValueError: For '%s', the 'reduction' must be in ['mean', 'sum', 'none'], but got %s.")
      :format(cls, type(v) == "string" and ("'" .. v .. "'") or type_name(v)))
  end
  return v
end

--- Broadcast two shapes as NumPy does (nil when they do not broadcast).
function A.broadcast_shape(a, b)
  local n = math.max(#a, #b)
  local out = {}
  for i = 1, n do
    local sa = a[#a - n + i] or 1
    local sb = b[#b - n + i] or 1
    if sa ~= sb and sa ~= 1 and sb ~= 1 then return nil end
    out[i] = sa == 1 and sb or sa
  end
  return out
end

return A
