--- Tensor methods written in Lua on top of the engine's: split, chunk and
-- the dtype shorthands. `install` adds them to the C methods table.
local check_tensor = require("cell.errors").check_tensor
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
  --- pad(pads [, value]) pads with a constant; pad(pads, mode [, value]) or
  -- pad(pads, {mode =, value =}) also takes MindSpore's and PyTorch's modes
  -- "reflect" (mirrored, the edge once), "replicate" (the edge repeated) and
  -- "circular" (wrapped around), each an index_select along every padded
  -- dimension, so differentiable.
  local pad = Tensor.pad
  local MODES = { constant = true, reflect = true, replicate = true, circular = true }
  local function source_index(mode, i, n)
    if mode == "replicate" then return math.min(math.max(i, 0), n - 1) end
    if mode == "circular" then return i % n end
    i = math.abs(i) -- reflect
    if i >= n then i = 2 * (n - 1) - i end
    return i
  end
  function Tensor.pad(t, pads, mode, value)
    if type(mode) == "table" and not core.is_tensor(mode) then
      mode, value = mode.mode, mode.value
    end
    if type(mode) ~= "string" then return pad(t, pads, mode) end
    if not MODES[mode] then
      raise(("ValueError: pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '%s'"):format(mode))
    end
    if mode == "constant" then return pad(t, pads, value) end
    check_tensor("pad", "self", t)
    if value ~= nil then raise(("ValueError: pad: a value is only meaningful with mode 'constant', not '%s'"):format(mode)) end
    if type(pads) ~= "table" or #pads % 2 ~= 0 or #pads / 2 > t.ndim then
      raise(("ValueError: pad: pads must list (before, after) pairs for at most %d dimensions"):format(t.ndim))
    end
    local y = t
    for k = 1, #pads / 2 do
      local dim = t.ndim + 1 - k
      local before, after, n = pads[2 * k - 1], pads[2 * k], t.shape[dim]
      if type(before) ~= "number" or type(after) ~= "number" or before < 0 or after < 0
          or before ~= math.floor(before) or after ~= math.floor(after) then
        raise(("ValueError: pad: mode '%s' takes pads that are integers >= 0, got %s and %s"):format(mode,
          tostring(before), tostring(after)))
      end
      local limit = mode == "reflect" and n - 1 or (mode == "circular" and n or math.huge)
      if n < 1 or before > limit or after > limit then
        raise(("ValueError: pad: mode '%s' cannot pad (%d, %d) a dimension of size %d"):format(mode, before, after, n))
      end
      if before > 0 or after > 0 then
        local idx = {}
        for i = -before, n - 1 + after do idx[#idx + 1] = source_index(mode, i, n) + 1 end
        y = y:index_select(dim, core.tensor(idx, core.int64))
      end
    end
    return y
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
  Tensor.to = Tensor.astype
  Tensor.tolist = Tensor.totable
  Tensor.dim = function(t) return check_tensor("dim", "self", t).ndim end
  Tensor.nelement = Tensor.numel
end

return M
