--- Tensor methods written in Lua on top of the engine's: split, chunk,
-- pad's modes and options, clamp's options, indexing by a Tensor (t[mask],
-- t[indices]), repeat_interleave's per-element repeats and the dtype
-- shorthands. `install` adds them to the C methods table.
local check_tensor = require("cell.errors").check_tensor
local unpack = table.unpack or unpack
local raise = require("cell.errors").raise
local M = {}

local function check_positive(n, what, fname)
  if type(n) ~= "number" or n ~= math.floor(n) or n < 1 then
    raise(("ValueError: %s: %s must be a positive integer, got %s"):format(fname, what, tostring(n)))
  end
end

function M.install(Tensor, core)
  --- Split into pieces of `size` along `dim` (the last may be smaller), or
  -- into pieces of the listed sizes. Returns a Lua sequence of views.
  function Tensor.split(t, size_or_sections, dim)
    check_tensor("split", "self", t)
    dim = dim or 1
    local n = t:size(dim)
    local out = {}
    if type(size_or_sections) == "table" then
      local total = 0
      local sections = size_or_sections
      for i = 1, #sections do -- not ipairs: a table's __index could go on forever
        local s = sections[i]
        if type(s) ~= "number" or s < 0 or s ~= math.floor(s) or s == math.huge then
          raise(("ValueError: split: section sizes must be non-negative integers, got %s"):format(tostring(s)))
        end
        total = total + s
      end
      if total ~= n then
        raise(("ValueError: split: sections sum to %d but dimension %d has size %d"):format(total, dim, n))
      end
      local start = 1
      for i = 1, #sections do
        local s = sections[i]
        out[#out + 1] = t:narrow(dim, start, s)
        start = start + s
      end
      return out
    end
    check_positive(size_or_sections, "split size", "split")
    local start = 1
    while start <= n do
      local len = math.min(size_or_sections, n - start + 1)
      out[#out + 1] = t:narrow(dim, start, len)
      start = start + len
    end
    return out
  end

  --- Split into `chunks` nearly equal pieces along `dim`.
  function Tensor.chunk(t, chunks, dim)
    check_tensor("chunk", "self", t)
    check_positive(chunks, "chunks", "chunk")
    local n = t:size(dim or 1)
    return t:split(math.max(1, math.ceil(n / chunks)), dim)
  end

  local c_pad, c_clamp = Tensor.pad, Tensor.clamp
  local PAD_MODES = { constant = true, reflect = true, replicate = true, circular = true }

  --- The fields of an options table `o` for `fname`, all of them in `known`.
  local function options(fname, o, known)
    for k in pairs(o) do
      if not known[k] then
        raise(("TypeError: %s() got an unexpected keyword argument '%s'"):format(fname, tostring(k)))
      end
    end
    return o
  end

  --- pad(pads [, value]), MindSpore's pad(pads [, mode = "constant" [, value]])
  -- or pad(pads, {mode =, value =}): pads are (before, after) pairs, the
  -- last dimension first; mode "constant" (value, default 0), "reflect",
  -- "replicate" or "circular".
  function Tensor.pad(t, pads, mode, value)
    if type(mode) == "table" and getmetatable(mode) == nil and value == nil then
      local o = options("pad", mode, { mode = true, value = true })
      mode, value = o.mode, o.value
    elseif type(mode) == "number" and value == nil then
      return c_pad(t, pads, mode) -- the short form pad(pads, value)
    end
    if mode == nil then mode = "constant" end
    if type(mode) ~= "string" or not PAD_MODES[mode] then
      raise(("ValueError: pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', but got %s")
        :format(type(mode) == "string" and ("'" .. mode .. "'") or type(mode)))
    end
    if mode == "constant" then return c_pad(t, pads, value) end
    if value ~= nil then
      raise(("ValueError: pad: a value is only used in mode 'constant', but mode is '%s'"):format(mode))
    end
    check_tensor("pad", "self", t)
    if type(pads) ~= "table" or #pads % 2 ~= 0 or #pads == 0 or #pads > 2 * t.ndim then
      raise(("ValueError: pad: pads must be (before, after) pairs for at most the %d dimensions of the input, "
        .. "but got %s"):format(t.ndim, type(pads) == "table" and (#pads .. " numbers") or type(pads)))
    end
    local n, dims = #pads / 2, {}
    for i = 1, n do -- the pairs in dimension order, as conv_ops._pad_mode takes them
      local j = n - i + 1
      for k = 0, 1 do
        local v = pads[2 * j - 1 + k]
        if type(v) ~= "number" or v ~= math.floor(v) then
          raise(("TypeError: pad: pads must be integers, but got %s"):format(tostring(v)))
        end
        dims[2 * i - 1 + k] = v
      end
    end
    return require("cell.conv_ops")._pad_mode("pad", t, n, dims, mode)
  end

  --- gelu([approximate = "none"]) or gelu{approximate =}: the engine's exact
  -- GELU without arguments, else cell.ops.gelu (which checks them).
  local c_gelu, ops_gelu = Tensor.gelu, core.nnops.gelu
  function Tensor.gelu(t, ...)
    if select("#", ...) == 0 then return c_gelu(t) end
    return ops_gelu(t, ...)
  end

  --- clamp([min] [, max]) or clamp{min =, max =}.
  function Tensor.clamp(t, min, max)
    if type(min) == "table" and getmetatable(min) == nil and max == nil then
      local o = options("clamp", min, { min = true, max = true })
      return c_clamp(t, o.min, o.max)
    end
    return c_clamp(t, min, max)
  end

  -- Indexing by a Tensor (the C __index / __newindex call these two) --------

  local INT_INDEX = { [core.int8] = true, [core.uint8] = true, [core.int16] = true, [core.int32] = true,
    [core.int64] = true }

  local function shape_text(shape) return "[" .. table.concat(shape, ", ") .. "]" end

  --- The bool mask `key` checked against t's leading dimensions.
  local function check_mask(t, key)
    local ks, ts = key.shape, t.shape
    local ok = #ks >= 1 and #ks <= #ts
    for i = 1, #ks do
      if ks[i] ~= ts[i] then ok = false end
    end
    if not ok then
      raise(("IndexError: the mask of shape %s does not match the leading dimensions of the indexed tensor of "
        .. "shape %s"):format(shape_text(ks), shape_text(ts)))
    end
  end

  --- Integer indices (1-based; negative ones count from the end) along
  -- dimension 1, as an int64 tensor.
  local function int_index(t, key)
    if t.ndim == 0 then raise("IndexError: a 0-D tensor cannot be indexed by a Tensor") end
    return core.where(key:lt(0), key + (t.shape[1] + 1), key):astype(core.int64)
  end

  local function rest_shape(t, from)
    local out = {}
    for i = from, t.ndim do out[#out + 1] = t.shape[i] end
    return out
  end

  --- t[key]: a bool mask over t's leading dimensions selects those entries
  -- ({count, rest...}); integer indices pick along dimension 1 (shape
  -- key.shape followed by the rest of t's). A copy, as in MindSpore.
  function Tensor._index_tensor(t, key)
    if key.dtype == core.bool then
      check_mask(t, key)
      local rest = rest_shape(t, key.ndim + 1)
      local flat = t:reshape({ key:numel(), unpack(rest) })
      return flat:index_select(1, key:reshape({ -1 }):nonzero():reshape({ -1 }))
    end
    if not INT_INDEX[key.dtype] then
      raise(("IndexError: tensors used as indices must be bool or integer tensors, but got %s"):format(tostring(key.dtype)))
    end
    local idx = int_index(t, key)
    local picked = t:index_select(1, idx:reshape({ -1 }))
    local shape = {}
    for i = 1, key.ndim do shape[i] = key.shape[i] end
    for _, n in ipairs(rest_shape(t, 2)) do shape[#shape + 1] = n end
    return picked:reshape(shape)
  end

  --- t[key] = v: the entries t[key] selects take v (a number, a boolean,
  -- or a Tensor that broadcasts to t[key]'s shape), in place.
  function Tensor._newindex_tensor(t, key, v)
    local is_value = type(v) == "number" or type(v) == "boolean"
    if not is_value and not core.is_tensor(v) then
      raise(("TypeError: can only assign a number, a boolean or a Tensor, got %s"):format(type(v)))
    end
    if key.dtype == core.bool then
      check_mask(t, key)
      local ms = {}
      for i = 1, key.ndim do ms[i] = key.shape[i] end
      for _ = key.ndim + 1, t.ndim do ms[#ms + 1] = 1 end
      local mask = key:reshape(ms):expand(t.shape)
      if is_value then
        t:copy_(t:masked_fill(mask, v))
      else
        local count = key:astype(core.int64):sum():item()
        local target = { count, unpack(rest_shape(t, key.ndim + 1)) }
        local src = v:astype(t.dtype):broadcast_to(target):reshape({ -1 })
        t:copy_(t:masked_scatter(mask, src))
      end
      return
    end
    if not INT_INDEX[key.dtype] then
      raise(("IndexError: tensors used as indices must be bool or integer tensors, but got %s"):format(tostring(key.dtype)))
    end
    local list = int_index(t, key):reshape({ -1 }):totable()
    local n = t.shape[1]
    for _, i in ipairs(list) do
      if i < 1 or i > n then
        raise(("IndexError: index %d is out of range for a dimension of size %d (indices count from 1)"):format(i, n))
      end
    end
    local src
    if not is_value then src = v:broadcast_to({ #list, unpack(rest_shape(t, 2)) }) end
    for k, i in ipairs(list) do
      local row = t:select(1, i)
      if is_value then row:fill_(v) else row:copy_(src:select(1, k)) end
    end
  end

  local shorthands = {
    float = core.float32, double = core.float64, half = core.float16, bfloat16 = core.bfloat16,
    int = core.int32, long = core.int64, bool = core.bool, byte = core.uint8, char = core.int8,
    short = core.int16,
  }
  for name, dt in pairs(shorthands) do
    Tensor[name] = function(t) return check_tensor(name, "self", t):astype(dt) end
  end
  --- clamp with a Tensor bound (MindSpore's ops.clamp takes them) is
  -- clip_by_value; with numbers, the engine's clamp.
  local clamp = Tensor.clamp
  function Tensor.clamp(t, min, max)
    if core.is_tensor(min) or core.is_tensor(max) then
      return require("cell.ops.clip").clip_by_value(check_tensor("clamp", "self", t), min, max)
    end
    return clamp(t, min, max)
  end
  --- gather(dim, index) is PyTorch's (and MindSpore's gather_elements);
  -- gather(indices, axis), a Tensor first, is MindSpore's ops.gather: the
  -- slices of t along axis at the (1-based) indices, of shape
  -- t.shape[1..axis-1] .. indices.shape .. t.shape[axis+1..].
  local gather = Tensor.gather
  function Tensor.gather(t, a, b, ...)
    if not core.is_tensor(a) then return gather(t, a, b, ...) end
    check_tensor("gather", "self", t)
    if b == nil then b = 1 end
    if type(b) ~= "number" or b ~= math.floor(b) then
      raise(("TypeError: gather: axis must be an integer, got %s"):format(tostring(b)))
    end
    local nd = t.ndim
    if b < -nd or b > nd or b == 0 then
      raise(("IndexError: gather: axis %d is out of range for a %d-D tensor"):format(b, nd))
    end
    local axis = b < 0 and nd + 1 + b or b
    local picked = t:index_select(axis, a:reshape({ -1 }))
    local shape = {}
    for i = 1, axis - 1 do shape[#shape + 1] = t.shape[i] end
    for _, s in ipairs(a.shape) do shape[#shape + 1] = s end
    for i = axis + 1, nd do shape[#shape + 1] = t.shape[i] end
    return picked:reshape(shape)
  end
  --- scatter(dim, index, src): src may be a number (PyTorch's value form);
  -- PyTorch's reduce argument is refused rather than ignored.
  local scatter = Tensor.scatter
  function Tensor.scatter(t, dim, index, src, reduce, ...)
    if reduce ~= nil then
      raise(("NotImplementedError: scatter: reduce (%s) is not supported; scatter writes src (the last write wins)")
        :format(tostring(type(reduce) == "table" and reduce.reduce or reduce)))
    end
    if type(src) == "number" and core.is_tensor(t) and core.is_tensor(index) then
      src = core.full(index.shape, src, t.dtype)
    end
    return scatter(t, dim, index, src, ...)
  end
  --- unbind([dim = 1]): the slices along `dim` (views with that dimension
  -- removed), as a Lua sequence (MindSpore's Tensor.unbind, 1-based).
  function Tensor.unbind(t, dim)
    check_tensor("unbind", "self", t)
    if dim == nil then dim = 1 end
    local out = {}
    for i = 1, t:size(dim) do out[i] = t:select(dim, i) end
    return out
  end

  --- repeat_interleave(repeats [, dim]): a number repeats every element
  -- (the engine's); a list or an integer Tensor (0-D or 1-D) gives one count
  -- per element along dim (of the flattened tensor without dim), or one
  -- count for all (MindSpore's repeats: int, tuple, list or Tensor). The
  -- copies are index_select's, so the gradient sums them back (PyTorch's).
  local c_repeat_interleave = Tensor.repeat_interleave
  function Tensor.repeat_interleave(t, repeats, dim, ...)
    if not core.is_tensor(repeats) and type(repeats) ~= "table" then return c_repeat_interleave(t, repeats, dim, ...) end
    check_tensor("repeat_interleave", "self", t)
    local counts = {}
    if core.is_tensor(repeats) then
      if not INT_INDEX[repeats.dtype] then
        raise(("TypeError: repeat_interleave: a Tensor of repeats must have an integer dtype, but got %s")
          :format(tostring(repeats.dtype)))
      end
      if repeats.ndim > 1 then
        raise(("ValueError: repeat_interleave: a Tensor of repeats must be 0-D or 1-D, but got shape %s")
          :format(shape_text(repeats.shape)))
      end
      counts = repeats:reshape({ -1 }):totable()
    else
      for i = 1, #repeats do -- not ipairs: a table's __index could go on forever
        local c = repeats[i]
        if type(c) ~= "number" or c ~= math.floor(c) or c == math.huge then
          raise(("TypeError: repeat_interleave: repeats must hold integers, but got %s at position %d")
            :format(tostring(c), i))
        end
        counts[i] = c
      end
    end
    for i = 1, #counts do
      if counts[i] < 0 then
        raise(("ValueError: repeat_interleave: repeats must be non-negative, got %d at position %d"):format(counts[i], i))
      end
    end
    if dim == nil then t, dim = t:reshape({ -1 }), 1 end
    if #counts == 1 then return c_repeat_interleave(t, counts[1], dim) end
    local n = t:size(dim)
    if #counts ~= n then
      raise(("ValueError: repeat_interleave: repeats has %d counts but dimension %s has size %d "
        .. "(give one count per element, or one for all)"):format(#counts, tostring(dim), n))
    end
    local index = {}
    for i = 1, n do
      for _ = 1, counts[i] do index[#index + 1] = i end
    end
    return t:index_select(dim, core.tensor(index, core.int64))
  end

  -- The named-option form of the methods that take one dimension, as the
  -- reductions have it: t:cumsum{dim = 1, dtype = cell.float64},
  -- t:softmax{axis = -1}, t:split(2, {dim = 2}). `dim` or MindSpore's
  -- `axis` names the dimension; `extra` lists the other options, passed on
  -- in an options table. A sequence in the dimension's place (squeeze's
  -- list of dims) is not options.
  local function is_options(v)
    return type(v) == "table" and not core.is_tensor(v) and getmetatable(v) == nil and v[1] == nil
  end
  local function read_dim(fname, o, extra)
    local rest, dim = nil, nil
    for k, v in pairs(o) do
      if k == "dim" or k == "axis" then
        if dim ~= nil then raise(("TypeError: %s: give the dimension once, as dim or axis"):format(fname)) end
        dim = v
      elseif extra[k] then
        rest = rest or {}
        rest[k] = v
      else
        local names = { "dim or axis" }
        for _, e in ipairs(extra) do names[#names + 1] = e end
        raise(("TypeError: %s: unexpected option '%s' (the options are %s)")
          :format(fname, tostring(k), table.concat(names, ", ")))
      end
    end
    return dim, rest
  end
  local function with_dim_option(name, extra, lead, where)
    where = where or Tensor
    local f = where[name]
    for _, e in ipairs(extra) do extra[e] = true end
    if lead then -- the dimension comes after one argument: split(size, dim), chunk(n, dim)
      where[name] = function(t, a, o, ...)
        if is_options(o) then
          local dim, rest = read_dim(name, o, extra)
          return f(t, a, dim, rest)
        end
        return f(t, a, o, ...)
      end
    else
      where[name] = function(t, o, ...)
        if is_options(o) then
          local dim, rest = read_dim(name, o, extra)
          if rest then return f(t, dim, rest) end
          return f(t, dim)
        end
        return f(t, o, ...)
      end
    end
  end
  with_dim_option("cumsum", { "dtype" })
  with_dim_option("cumprod", { "dtype" })
  with_dim_option("softmax", {})
  with_dim_option("log_softmax", {})
  with_dim_option("squeeze", {})
  with_dim_option("unsqueeze", {})
  with_dim_option("expand_dims", {})
  with_dim_option("split", {}, true)
  with_dim_option("chunk", {}, true)
  with_dim_option("unbind", {})
  with_dim_option("repeat_interleave", {}, true)
  with_dim_option("softmax", {}, false, core.nnops) -- cell.ops.softmax(x, {dim =})
  with_dim_option("log_softmax", {}, false, core.nnops)
  with_dim_option("cat", {}, false, core) -- cell.cat(list, {dim =}), MindSpore's ops.cat(tensors, axis)
  with_dim_option("stack", {}, false, core)
  --- flatten{start_dim =, end_dim =} (MindSpore's keyword arguments).
  local flatten = Tensor.flatten
  function Tensor.flatten(t, o, ...)
    if is_options(o) then
      for k in pairs(o) do
        if k ~= "start_dim" and k ~= "end_dim" then
          raise(("TypeError: flatten: unexpected option '%s' (the options are start_dim, end_dim)"):format(tostring(k)))
        end
      end
      return flatten(t, o.start_dim or 1, o.end_dim or -1)
    end
    return flatten(t, o, ...)
  end
  Tensor.to = Tensor.astype
  Tensor.tolist = Tensor.totable
  Tensor.dim = function(t) return check_tensor("dim", "self", t).ndim end
  Tensor.nelement = Tensor.numel
end

return M
